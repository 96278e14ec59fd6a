//! Test a built component in the real host: each [`Case`] runs the
//! component through the whole pipeline (grant, WIT round trip, error
//! mapping, output checks) in a fresh workspace holding the files the case
//! names, and the result is compared with what the case expects.
//! `toolhost test FILE.wasm CASES.json` is the same for any language's
//! test runner.
//!
//! ```no_run
//! use toolhost::harness::{Case, Harness};
//! let runtime = std::sync::Arc::new(toolhost::Runtime::new(Default::default()).unwrap());
//! let harness = Harness::new(runtime, "target/wasm32-wasip2/release/count_words.wasm".as_ref())
//!     .unwrap();
//! let case: Case = serde_json::from_str(r#"{
//!     "args": {"path": "a.txt"}, "grant": "workspace:read",
//!     "files": {"a.txt": "one two"},
//!     "expect": {"success": true, "structured": {"words": 2}}
//! }"#).unwrap();
//! assert!(harness.run(&case, 0).passed());
//! ```

use crate::executor::{CallOptions, Executor};
use crate::plugin::{Plugin, PluginSource};
use crate::registry::Registry;
use crate::runtime::Runtime;
use crate::types::confirm::Mode;
use crate::types::grant::Grant;
use crate::types::result::ToolResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path};
use std::sync::Arc;

/// One call of the component and what its result must be.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A name for the report (default: `case N`).
    #[serde(default)]
    pub name: Option<String>,
    /// The arguments (a JSON object; default `{}`).
    #[serde(default)]
    pub args: Option<Value>,
    /// The grant, as `--grant TOOL=CAPS` takes its CAPS
    /// (`workspace:read,commands`); default: nothing, as a third-party
    /// tool gets until a person grants it.
    #[serde(default)]
    pub grant: Option<String>,
    /// Files to create in the workspace first: relative path → content.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// What the result must be.
    #[serde(default)]
    pub expect: Expect,
}

/// What a [`Case`]'s result must be; what is left out is not checked.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Whether the call succeeds.
    #[serde(default)]
    pub success: Option<bool>,
    /// The whole text content.
    #[serde(default)]
    pub content: Option<String>,
    /// Text the content must hold.
    #[serde(default)]
    pub content_contains: Option<String>,
    /// Members the structured result must have, with these values (nested
    /// objects are compared member by member, the rest exactly).
    #[serde(default)]
    pub structured: Option<Value>,
    /// The error kind (`invalid_input`, `retry`, `denied`, `failed`, ...);
    /// implies the call fails.
    #[serde(default)]
    pub error_kind: Option<String>,
    /// Files the workspace must hold afterwards: relative path → content.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

/// How a case went.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The case's name.
    pub name: String,
    /// What did not match; empty when it passed.
    pub failures: Vec<String>,
    /// The call's result.
    pub result: ToolResult,
}

impl Outcome {
    /// Everything matched.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// A built component, loaded once, and the runtime its cases run in.
pub struct Harness {
    runtime: Arc<Runtime>,
    wasm: Arc<[u8]>,
    path: std::path::PathBuf,
    name: String,
}

impl Harness {
    /// Load the component at `path`; an error lists every problem
    /// `toolhost check` finds in it.
    pub fn new(runtime: Arc<Runtime>, path: &Path) -> Result<Self, String> {
        let wasm: Arc<[u8]> = std::fs::read(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .into();
        let report = runtime.check_report(&wasm);
        let Some(info) = report.info.clone().filter(|_| report.conforms()) else {
            let problems: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
            return Err(format!(
                "{} does not load:\n  {}",
                path.display(),
                problems.join("\n  ")
            ));
        };
        Ok(Self {
            runtime,
            wasm,
            path: path.to_owned(),
            name: info.name,
        })
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.name
    }

    /// Run `case` (the `index`th, for its default name).
    pub fn run(&self, case: &Case, index: usize) -> Outcome {
        let name = case
            .name
            .clone()
            .unwrap_or_else(|| format!("case {}", index + 1));
        match self.call(case) {
            Ok((result, workspace)) => {
                let failures = compare(&case.expect, &result, workspace.path());
                Outcome {
                    name,
                    failures,
                    result,
                }
            }
            Err(why) => Outcome {
                name,
                failures: vec![why.clone()],
                result: ToolResult::failure(
                    &self.name,
                    crate::types::result::CallError::new(
                        crate::types::result::ErrorKind::InvalidInput,
                        why,
                    ),
                ),
            },
        }
    }

    /// The call of `case` in a fresh workspace, and the workspace.
    fn call(&self, case: &Case) -> Result<(ToolResult, tempfile::TempDir), String> {
        let workspace = tempfile::Builder::new()
            .prefix("toolhost-test-")
            .tempdir()
            .map_err(|e| format!("cannot make a workspace: {e}"))?;
        for (file, content) in &case.files {
            let path = inside(workspace.path(), file)?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("files.{file}: {e}"))?;
            }
            std::fs::write(&path, content).map_err(|e| format!("files.{file}: {e}"))?;
        }
        let grant = match &case.grant {
            Some(caps) => Grant::parse_caps(caps).map_err(|e| format!("grant `{caps}`: {e}"))?,
            None => Grant::none(),
        };
        let source = PluginSource::Bytes(Arc::clone(&self.wasm), self.path.clone());
        let plugin = Plugin::load(&self.runtime, source).map_err(|e| e.to_string())?;
        let mut registry = Registry::new();
        registry
            .register(plugin, false)
            .map_err(|e| e.to_string())?;
        let executor = Executor::new(Arc::clone(&self.runtime), registry)
            .with_workspace(workspace.path())
            .map_err(|e| format!("the workspace: {e}"))?
            .with_mode(Mode::Yolo)
            .with_grant(self.name.clone(), grant);
        let args = case
            .args
            .clone()
            .unwrap_or_else(|| Value::Object(serde_json::Map::new()))
            .to_string();
        let result = executor.call(&self.name, &args, &CallOptions::default());
        Ok((result, workspace))
    }
}

/// `file` (relative, no `..`) beneath `root`.
fn inside(root: &Path, file: &str) -> Result<std::path::PathBuf, String> {
    let relative = Path::new(file);
    if file.is_empty()
        || !relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "files: `{file}` must be a relative path inside the workspace"
        ));
    }
    Ok(root.join(relative))
}

/// What in `result` (and the workspace at `root`) differs from `expect`.
fn compare(expect: &Expect, result: &ToolResult, root: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    let kind = result.error.as_ref().map(|e| e.kind.to_string());
    let success = expect
        .success
        .or_else(|| expect.error_kind.as_ref().map(|_| false));
    if let Some(want) = success
        && result.success != want
    {
        failures.push(format!(
            "expected {}, got {}: {}",
            if want { "success" } else { "an error" },
            kind.as_deref()
                .map_or("success".to_owned(), |k| format!("error ({k})")),
            result.content
        ));
    }
    if let Some(want) = &expect.error_kind
        && kind.as_deref() != Some(want.as_str())
    {
        failures.push(format!(
            "expected error kind `{want}`, got {}",
            kind.map_or("none".to_owned(), |k| format!("`{k}`"))
        ));
    }
    if let Some(want) = &expect.content
        && &result.content != want
    {
        failures.push(format!(
            "content: expected {want:?}, got {:?}",
            result.content
        ));
    }
    if let Some(want) = &expect.content_contains
        && !result.content.contains(want.as_str())
    {
        failures.push(format!(
            "content: {:?} does not contain {want:?}",
            result.content
        ));
    }
    if let Some(want) = &expect.structured {
        match &result.structured {
            None => failures.push("structured: expected a structured result, got none".to_owned()),
            Some(got) => differences("structured", want, got, &mut failures),
        }
    }
    for (file, want) in &expect.files {
        match inside(root, file).and_then(|p| {
            std::fs::read_to_string(p).map_err(|e| format!("expect.files.{file}: {e}"))
        }) {
            Ok(got) if &got == want => {}
            Ok(got) => failures.push(format!(
                "expect.files.{file}: expected {want:?}, got {got:?}"
            )),
            Err(e) => failures.push(e),
        }
    }
    failures
}

/// Where `got` differs from `want`, each at its JSON pointer below `at`:
/// objects member by member (`got` may have more), arrays item by item,
/// numbers by value (`35` and `35.0` are equal: languages write them
/// differently), everything else exactly.
fn differences(at: &str, want: &Value, got: &Value, failures: &mut Vec<String>) {
    differences_at(at, "", want, got, failures);
}

fn differences_at(what: &str, at: &str, want: &Value, got: &Value, failures: &mut Vec<String>) {
    let place = || {
        if at.is_empty() {
            what.to_owned()
        } else {
            format!("{what} at `{at}`")
        }
    };
    match (want, got) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, w) in want {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                match got.get(key) {
                    Some(g) => differences_at(what, &here, w, g, failures),
                    None => failures.push(format!("{what} at `{here}`: missing (expected {w})")),
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (w, g)) in w.iter().zip(g).enumerate() {
                differences_at(what, &format!("{at}/{i}"), w, g, failures);
            }
        }
        (Value::Array(w), Value::Array(g)) => failures.push(format!(
            "{}: expected {} items, got {} (expected {}, got {})",
            place(),
            w.len(),
            g.len(),
            Value::Array(w.clone()),
            Value::Array(g.clone())
        )),
        (Value::Number(w), Value::Number(g)) if same_number(w, g) => {}
        _ if want != got => failures.push(format!("{}: expected {want}, got {got}", place())),
        _ => {}
    }
}

/// Equal by value: as integers when both are, else as floating point.
fn same_number(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return a == b;
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return a == b;
    }
    a.as_f64().is_some_and(|a| b.as_f64() == Some(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_results_are_compared_member_by_member() {
        let mut failures = Vec::new();
        let got = serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1]});
        differences(
            "s",
            &serde_json::json!({"b": {"c": 2}}),
            &got,
            &mut failures,
        );
        assert!(failures.is_empty(), "{failures:?}");
        differences(
            "s",
            &serde_json::json!({"a": 2, "b": {"x": 1}, "e": [1, 2]}),
            &got,
            &mut failures,
        );
        assert_eq!(failures.len(), 3, "{failures:?}");
        assert!(failures[0].starts_with("s at `/a`: expected 2, got 1"));
        assert!(failures[1].starts_with("s at `/b/x`: missing"));
        assert!(failures[2].starts_with("s at `/e`: expected 2 items, got 1"));
    }

    #[test]
    fn numbers_are_compared_by_value_wherever_they_are() {
        let mut failures = Vec::new();
        let got = serde_json::json!({"mean": 35, "min": 1.5, "rows": [1.0, 2], "big": 18446744073709551615u64});
        let want = serde_json::json!({"mean": 35.0, "min": 1.50, "rows": [1, 2.0], "big": 18446744073709551615u64});
        differences("s", &want, &got, &mut failures);
        assert!(failures.is_empty(), "{failures:?}");
        let want =
            serde_json::json!({"mean": 35.5, "rows": [1, 3], "big": 18446744073709551614u64});
        differences("s", &want, &got, &mut failures);
        assert_eq!(
            failures,
            [
                "s at `/big`: expected 18446744073709551614, got 18446744073709551615",
                "s at `/mean`: expected 35.5, got 35",
                "s at `/rows/1`: expected 3, got 2",
            ]
        );
        failures.clear();
        differences(
            "s",
            &serde_json::json!(35),
            &serde_json::json!("35"),
            &mut failures,
        );
        assert_eq!(failures, [r#"s: expected 35, got "35""#]);
    }

    #[test]
    fn case_files_stay_inside_the_workspace() {
        let root = Path::new("/ws");
        assert_eq!(inside(root, "a/b.txt").unwrap(), Path::new("/ws/a/b.txt"));
        for bad in ["", "../x", "/etc/passwd", "a/../../x"] {
            assert!(inside(root, bad).is_err(), "{bad}");
        }
    }
}
