//! The `apply_patch` tool: apply a unified diff to one or many files, all or
//! nothing. Every hunk of every file is placed in memory first (parse.rs,
//! apply.rs); only then are files written, and if a write fails the files
//! already written are restored.

mod apply;
mod parse;

use apply::Placed;
use std::collections::BTreeMap;
use toolhost_sdk::fs::WorkspacePath;
use toolhost_sdk::text::{TextFile, content_hash};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// A unified diff (as `diff -u` or `git diff` print it): `--- a/PATH` and `+++ b/PATH` headers (`/dev/null` to create or delete a file), then `@@` hunks. Several files may follow each other.
    pub patch: String,
    /// The file to patch when the diff has no `---`/`+++` headers, or to override the path of a single-file diff.
    #[serde(default)]
    pub path: Option<String>,
}

/// What happened to one file.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileReport {
    /// The path, relative to the workspace.
    pub path: String,
    /// `modified`, `created` or `deleted`.
    pub action: String,
    /// Where each hunk applied.
    pub hunks: Vec<Placed>,
    /// The new content hash (absent for a deleted file).
    pub hash: Option<String>,
}

/// What `apply_patch` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// Every file the patch changed.
    pub files: Vec<FileReport>,
}

/// The `apply_patch` tool.
pub struct ApplyPatch;

impl Tool for ApplyPatch {
    type Args = Args;
    const NAME: &'static str = "apply_patch";
    const DESCRIPTION: &'static str = "Apply a unified diff to one or many files, all or \
        nothing: every hunk of every file is checked first, and the files are written only if \
        all apply (a failed write restores the files already written). A hunk is placed exactly \
        at its stated line, else exactly elsewhere (nearest first), else ignoring trailing \
        whitespace, else ignoring leading and trailing whitespace; the result says where each \
        hunk applied and how. `/dev/null` headers create or delete files (deleting needs \
        allow_delete). A hunk that does not apply is shown with the closest region of the file. \
        Files keep their BOM and line endings.";
    const SENSITIVE: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceWrite]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        let files =
            parse::parse(&args.patch).map_err(|e| ToolError::invalid_input(e.to_string()))?;
        let plan = plan(&files, args.path.as_deref(), ctx)?;
        write_all(&plan)?;
        let text: String = plan.iter().map(Change::summary).collect();
        let changed: Vec<String> = plan.iter().map(|c| c.shown.clone()).collect();
        let report = Report {
            files: plan.into_iter().map(Change::into_report).collect(),
        };
        Ok(changed
            .into_iter()
            .fold(Output::text(text).with_structured(&report), Output::changed))
    }
}

export_tool!(ApplyPatch);

/// One file's planned change: its bytes before and after.
struct Change {
    path: WorkspacePath,
    shown: String,
    before: Option<Vec<u8>>,
    after: Option<Vec<u8>>,
    hunks: Vec<Placed>,
}

impl Change {
    fn action(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "created",
            (Some(_), None) => "deleted",
            (Some(_), Some(_)) => "modified",
        }
    }

    fn summary(&self) -> String {
        let mut s = format!("{} `{}`\n", self.action(), self.shown);
        for p in &self.hunks {
            s.push_str(&format!(
                "  hunk {} applied at line {} ({})\n",
                p.hunk,
                p.line,
                p.fuzz.describe()
            ));
        }
        s
    }

    fn into_report(self) -> FileReport {
        FileReport {
            action: self.action().to_owned(),
            hash: self.after.as_deref().map(content_hash),
            path: self.shown,
            hunks: self.hunks,
        }
    }
}

/// Work out every file's new content, in memory. Nothing is written.
fn plan(
    files: &[parse::FilePatch],
    path: Option<&str>,
    ctx: &Context,
) -> Result<Vec<Change>, ToolError> {
    if path.is_some() && files.len() > 1 {
        return Err(ToolError::invalid_input(
            "`path` can only be given for a patch of one file; this one changes several (their headers name them)",
        ));
    }
    // Several sections may patch one file; they apply in turn.
    let mut changes: BTreeMap<String, Change> = BTreeMap::new();
    let mut order = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let target = path
            .or(file.new_path.as_deref())
            .or(file.old_path.as_deref())
            .ok_or_else(|| ToolError::invalid_input("the patch has no `---`/`+++` headers; give `path` to say which file it changes"))?;
        let resolved = fs::resolve(target, ctx)?;
        let shown = resolved.shown().to_owned();
        let change = match changes.get_mut(&shown) {
            Some(change) => change,
            None => {
                let before = fs::read_if_exists(&resolved)?;
                order.push(shown.clone());
                changes.entry(shown.clone()).or_insert(Change {
                    path: resolved,
                    shown: shown.clone(),
                    after: before.clone(),
                    before,
                    hunks: Vec::new(),
                })
            }
        };
        let context = |e: ToolError| {
            e.context(&format!(
                "file {} of {} (`{shown}`), nothing was changed",
                i + 1,
                files.len()
            ))
        };
        let creating = file.old_path.is_none() && path.is_none();
        let deleting = file.new_path.is_none() && path.is_none();
        let (format, text) = match (&change.after, creating) {
            (Some(_), true) => {
                return Err(context(ToolError::retry(format!(
                    "the patch creates `{shown}`, but it already exists"
                ))));
            }
            (None, false) => {
                return Err(context(ToolError::retry(format!(
                    "`{shown}` does not exist; check the path in the patch header"
                ))));
            }
            (None, true) => (
                TextFile {
                    text: String::new(),
                    bom: false,
                    crlf: false,
                },
                String::new(),
            ),
            (Some(bytes), false) => {
                let f = TextFile::decode(bytes, &shown).map_err(context)?;
                let t = f.text.clone();
                (f, t)
            }
        };
        let (new_text, placed) =
            apply::apply(&text, &file.hunks).map_err(|m| context(ToolError::retry(m)))?;
        if deleting {
            if !new_text.is_empty() {
                return Err(context(ToolError::retry(format!(
                    "the patch deletes `{shown}`, but the file has lines the patch does not remove"
                ))));
            }
            if !ctx.setting::<bool>("allow_delete").unwrap_or(false) {
                return Err(context(ToolError::denied(format!(
                    "the patch deletes `{shown}`, and deleting files is disabled; a person can \
                     enable it with `allow_delete = true` in toolhost.toml or `--allow-delete`"
                ))));
            }
            change.after = None;
        } else {
            change.after = Some(format.encode(&new_text));
        }
        let numbered = change.hunks.len();
        change.hunks.extend(placed.into_iter().map(|p| Placed {
            hunk: numbered + p.hunk,
            ..p
        }));
    }
    Ok(order
        .into_iter()
        .filter_map(|k| changes.remove(&k))
        .collect())
}

/// Write every change; if one fails, put back the ones already written.
fn write_all(plan: &[Change]) -> Result<(), ToolError> {
    for (i, change) in plan.iter().enumerate() {
        if let Err(err) = put(&change.path, change.after.as_deref()) {
            let mut unrestored = Vec::new();
            for done in plan[..i].iter().rev() {
                if put(&done.path, done.before.as_deref()).is_err() {
                    unrestored.push(done.shown.clone());
                }
            }
            let restored = if unrestored.is_empty() {
                format!("the {i} files written before it were restored")
            } else {
                format!("restoring {} failed too: check them", unrestored.join(", "))
            };
            return Err(err.context(&format!("writing `{}` failed; {restored}", change.shown)));
        }
    }
    Ok(())
}

/// Make the file hold `bytes`, or not exist.
fn put(path: &WorkspacePath, bytes: Option<&[u8]>) -> Result<(), ToolError> {
    match bytes {
        Some(bytes) => fs::write_atomic(path, bytes),
        None => match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(fs::write_error(e, path.shown())),
        },
    }
}
