//! Conformance of every built-in plugin (the async Python tools' contract checks), and
//! crash safety of writes.

use crate::support::{call, executor, registry, workspace};
use std::collections::HashSet;
use toolhost::{Capability, ErrorKind, Origin, is_snake_case};

#[test]
fn every_builtin_conforms() {
    let reg = registry();
    let builtins: Vec<_> = reg
        .list()
        .filter(|p| *p.origin() == Origin::Builtin)
        .collect();
    assert_eq!(
        builtins.len(),
        toolhost::builtins().len(),
        "every embedded plugin is registered"
    );
    let mut names = HashSet::new();
    let ws = workspace();
    let ex = with_search_provider(executor(ws.path()));
    for plugin in builtins {
        let info = plugin.info();
        let name = info.name.as_str();
        // The stricter checks for built-ins (`toolhost check` of each is
        // below).
        assert!(is_snake_case(name), "{name}: not snake_case");
        assert!(names.insert(name.to_owned()), "{name}: duplicate");
        assert!(
            info.description.len() >= 40,
            "{name}: description too short to be useful"
        );
        assert_eq!(
            info.input_schema["type"], "object",
            "{name}: input schema is not an object schema"
        );
        // Writing tools say they are sensitive; tools that only run
        // commands do not, since the broker confirms each command by class.
        let writes = info.capabilities.contains(&Capability::WorkspaceWrite);
        assert_eq!(
            writes, info.sensitive,
            "{name}: write capability and sensitivity must go together"
        );
        // Bad arguments are the model's to fix, never a crash.
        for bad in [
            r#"{"zz_not_an_argument": 1}"#,
            r#"{"path": 42, "pattern": [], "patch": {}}"#,
        ] {
            let r = call(&ex, name, bad);
            assert_eq!(
                r.error_kind(),
                Some(ErrorKind::InvalidInput),
                "{name} with {bad}: {r:?}"
            );
        }
    }
}

/// Kill the host with SIGKILL while it writes a large file, many times: the
/// file is always the old content or the new, never a mix.
#[test]
fn a_killed_write_leaves_the_old_file_or_the_new() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let ws = workspace();
    let target = ws.path().join("big.txt");
    let old = "o".repeat(4 << 20);
    let new = "n".repeat(4 << 20);
    std::fs::write(&target, &old).unwrap();
    let args = serde_json::json!({"path": "big.txt", "content": new}).to_string();
    let start = |args: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["call", "write_file", "-", "--mode", "yolo"])
            .current_dir(ws.path())
            .env("TOOLHOST_CACHE_DIR", crate::support::cache_dir())
            .env(
                "TOOLHOST_CACHE_KEY",
                crate::support::cache_key().expect("a key file"),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(args.as_bytes())
            .unwrap();
        child
    };
    // How long one write takes, to spread the kills over it.
    crate::support::toolhost(ws.path(), &["tools"]);
    let t = std::time::Instant::now();
    assert!(start(&args).wait().unwrap().success());
    let full = t.elapsed();
    let mut rng = fastrand::Rng::with_seed(9);
    let mut saw_old = 0;
    for round in 0..40 {
        std::fs::write(&target, &old).unwrap();
        let mut child = start(&args);
        std::thread::sleep(full.mul_f64(rng.f64() * 1.2));
        let _ = child.kill();
        let _ = child.wait();
        let now = std::fs::read(&target).unwrap();
        assert!(
            now == old.as_bytes() || now == new.as_bytes(),
            "round {round}: the file is a mix ({} bytes)",
            now.len()
        );
        saw_old += usize::from(now == old.as_bytes());
    }
    assert!(
        saw_old > 0,
        "no kill landed before the write finished; the test proves nothing"
    );
}

/// What MCP clients are shown travels: every input and output schema is
/// draft 2020-12 that a strict validator accepts (no unknown formats), no
/// optional property is typed `[T, "null"]`, and every tool has a title
/// and all four annotations.
#[test]
fn every_listed_schema_is_strict_and_every_tool_is_annotated() {
    let ws = workspace();
    let ex = with_search_provider(executor(ws.path()));
    let builtins: Vec<String> = registry()
        .list()
        .filter(|p| *p.origin() == Origin::Builtin)
        .map(|p| p.name().to_owned())
        .collect();
    let plain = ex
        .schemas(Some(&builtins), toolhost::schema::SchemaFormat::Mcp)
        .unwrap();
    assert!(
        plain.iter().all(|t| t.get("outputSchema").is_none()),
        "by default a result is its text alone: no output schemas"
    );
    let listed = ex
        .schemas(
            Some(&builtins),
            toolhost::schema::SchemaFormat::McpStructured,
        )
        .unwrap();
    assert_eq!(listed.len(), toolhost::builtins().len());
    for tool in &listed {
        let name = tool["name"].as_str().unwrap();
        assert!(
            tool["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{name}: no title"
        );
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(tool["annotations"][hint].is_boolean(), "{name}: no {hint}");
        }
        let mut schemas = vec![("input", &tool["inputSchema"])];
        if let Some(out) = tool.get("outputSchema") {
            assert_eq!(
                out["type"], "object",
                "{name}: MCP output schemas are objects"
            );
            assert_eq!(
                out["properties"]["text"]["type"], "string",
                "{name}: structuredContent carries the text"
            );
            schemas.push(("output", out));
        }
        for (which, schema) in schemas {
            assert!(
                jsonschema::meta::is_valid(schema),
                "{name}: {which} schema is not JSON Schema"
            );
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .should_ignore_unknown_formats(false)
                .build(schema)
                .unwrap_or_else(|e| panic!("{name}: {which} schema fails a strict validator: {e}"));
            no_optional_nulls(name, which, schema);
        }
    }
    // The two tools that had none now describe their structured output.
    for name in ["process", "memory_get"] {
        let tool = listed.iter().find(|t| t["name"] == name).unwrap();
        assert!(
            tool.get("outputSchema").is_some(),
            "{name}: no outputSchema"
        );
    }
    let open: Vec<&str> = listed
        .iter()
        .filter(|t| t["annotations"]["openWorldHint"] == true)
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        open,
        ["web_fetch", "web_search"],
        "only web_fetch and web_search reach the network"
    );
}

/// No property outside `required` may be typed `[T, "null"]`, at any depth.
fn no_optional_nulls(name: &str, which: &str, schema: &serde_json::Value) {
    if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|n| n.as_str()).collect())
            .unwrap_or_default();
        for (prop, sub) in props {
            let nullable = sub["type"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t == "null"));
            assert!(
                !nullable || required.contains(&prop.as_str()),
                "{name}: {which} property `{prop}` is optional and typed with null"
            );
        }
    }
    match schema {
        serde_json::Value::Object(members) => {
            for (key, sub) in members {
                if !["default", "enum", "const", "examples"].contains(&key.as_str()) {
                    no_optional_nulls(name, which, sub);
                }
            }
        }
        serde_json::Value::Array(items) => {
            for sub in items {
                no_optional_nulls(name, which, sub);
            }
        }
        _ => {}
    }
}

/// Every built-in passes `toolhost check` with no error and no warning,
/// but web_fetch's and web_search's: reaching the host a grant allows is
/// what they are for (web_search is granted only its provider's).
#[test]
fn every_builtin_passes_check_without_a_warning() {
    let runtime = crate::support::runtime();
    for builtin in toolhost::builtins() {
        let wasm = builtin.wasm().unwrap();
        assert_eq!(
            blake3::hash(&wasm).to_hex().as_str(),
            builtin.hash,
            "{} unpacks to what was built",
            builtin.crate_name
        );
        let report = runtime.check_report(&wasm);
        let unexpected: Vec<_> = report
            .problems
            .iter()
            .filter(|p| !(WEB_TOOLS.contains(&builtin.crate_name) && p.field == "capabilities"))
            .collect();
        assert!(
            report.conforms() && unexpected.is_empty(),
            "{}: {unexpected:?}",
            builtin.crate_name
        );
        // Checked again (now from the compile cache's record of its
        // answer, not a second `describe`), it finds the same.
        let again = runtime.check_report(&wasm);
        assert_eq!(again.problems, report.problems, "{}", builtin.crate_name);
        if WEB_TOOLS.contains(&builtin.crate_name) {
            assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        }
    }
}

/// `toolhost check` reports every problem of a component in one run, each
/// with what to fix; warnings alone do not fail it; `--json` says the same
/// for scripts.
#[test]
fn check_reports_every_problem_at_once_and_warnings_do_not_fail() {
    use crate::support::{fixtures_dir, stderr, stdout, toolhost};
    let ws = workspace();
    let bad = fixtures_dir().join("refused/fixture_nonconforming.wasm");
    let echo = fixtures_dir().join("fixture_echo.wasm");
    let (bad, echo) = (bad.to_str().unwrap(), echo.to_str().unwrap());

    let out = toolhost(ws.path(), &["check", bad]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("does not conform (6 errors)"), "{err}");
    for (field, says) in [
        ("name", "name it `count_words`"),
        ("description", "too short"),
        ("input_schema", "not valid JSON"),
        ("output_schema", "not valid JSON Schema"),
        ("version", "the version is empty"),
        ("capabilities", "every host"),
        (
            "environment",
            "`NOT-A-NAME` is not an environment variable's name",
        ),
    ] {
        assert!(
            err.lines().any(|l| l.contains(&format!("{field}: "))) && err.contains(says),
            "{field} / {says} not in:\n{err}"
        );
    }
    assert_eq!(err.matches("fix: ").count(), 7, "{err}");

    // The echo fixture has no output schema: a warning, and it conforms.
    let out = toolhost(ws.path(), &["check", echo]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("ok: "), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("warning: output_schema"),
        "{}",
        stderr(&out)
    );

    let out = toolhost(ws.path(), &["check", "--json", bad, echo, "missing.wasm"]);
    assert_eq!(out.status.code(), Some(1));
    let all: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let all = all.as_array().expect("an array");
    assert_eq!(all.len(), 3);
    assert_eq!(all[0]["conforms"], false);
    assert!(all[0]["tool"].is_null(), "{}", all[0]);
    let errors = all[0]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["severity"] == "error")
        .count();
    assert_eq!(errors, 6, "{}", all[0]);
    assert_eq!(all[1]["conforms"], true);
    assert_eq!(all[1]["tool"]["name"], "echo");
    assert_eq!(all[1]["problems"][0]["severity"], "warning");
    assert_eq!(all[2]["conforms"], false);
    assert!(
        all[2]["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot read it"),
        "{}",
        all[2]
    );
}

/// The built-ins that declare any host: a grant names the real ones.
const WEB_TOOLS: [&str; 2] = ["web_fetch", "web_search"];

/// `executor` with a web_search provider configured, so web_search is
/// offered (it is not without one).
fn with_search_provider(executor: toolhost::Executor) -> toolhost::Executor {
    let settings =
        serde_json::json!({"provider": "searxng", "endpoint": "http://127.0.0.1:9/search"});
    executor.with_tool_settings(
        "web_search",
        settings.as_object().cloned().unwrap_or_default(),
    )
}
