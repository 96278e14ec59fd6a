//! The `apply_patch` tool: apply a unified diff to one or many files, all or
//! nothing. Every hunk of every file is placed in memory first (parse.rs,
//! apply.rs); only then are files written, and if a write fails the files
//! already written are put back (write.rs).

mod apply;
mod parse;
mod write;

use apply::Placed;
use std::collections::BTreeMap;
use toolhost_builtin::text::{TextFile, content_hash};
use toolhost_sdk::fs::WorkspacePath;
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
    const TITLE: Option<&'static str> = Some("Apply a patch");
    const DESCRIPTION: &'static str = "Apply a unified diff to one or many files, all or \
        nothing: every hunk is checked before any file is written. A hunk goes at its stated \
        line, else at the nearest exact match, else ignoring whitespace; the result says where \
        each applied. `/dev/null` headers create or delete files (deleting needs \
        `allow_delete`). A hunk that does not apply is shown beside the closest region of the \
        file. Files keep their BOM and line endings.";
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
        write::write_all(&plan)?;
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

/// A patch applied in memory to `text` (LF line endings) as `apply_patch`
/// applies it to a file holding that text, every file section of it in
/// turn: the new text, or why it does not apply. For the fuzz target
/// `apply_patch` and its regression tests; not part of the tool.
#[doc(hidden)]
pub fn apply_text(text: &str, patch: &str) -> Result<String, String> {
    let files = parse::parse(patch).map_err(|e| e.to_string())?;
    let mut text = text.to_owned();
    for file in &files {
        text = apply::apply(&text, &file.hunks)?.0;
    }
    Ok(text)
}

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
        let resolved = target(file, path, ctx, &changes)?;
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
        // `/dev/null` in a header creates or deletes, whichever file `path`
        // points the patch at.
        let creating = file.headers && file.old_path.is_none();
        let deleting = file.headers && file.new_path.is_none();
        let format = match (&change.after, creating) {
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
            (None, true) => TextFile {
                text: String::new(),
                bom: false,
                crlf: false,
            },
            (Some(bytes), false) => TextFile::decode(bytes, &shown).map_err(context)?,
        };
        // A file decoded as all-CRLF has LF text, so the patch's lines lose
        // their CR too; anywhere else a CR is part of the line.
        let hunks = if format.crlf {
            file.hunks.iter().map(parse::Hunk::without_cr).collect()
        } else {
            file.hunks.clone()
        };
        let (new_text, placed) =
            apply::apply(&format.text, &hunks).map_err(|m| context(ToolError::retry(m)))?;
        if deleting {
            if !new_text.is_empty() {
                return Err(context(ToolError::retry(format!(
                    "the patch deletes `{shown}`, but the file has lines the patch does not remove"
                ))));
            }
            fs::deletion_allowed(ctx, &format!("`{shown}` was not deleted")).map_err(context)?;
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

/// The file a section of the patch changes: `path` when given; else the
/// header's path. When `---` and `+++` name different files, like
/// `diff -u f f.new`, the new one if it exists and else, as GNU patch
/// does, the old one if that exists.
fn target(
    file: &parse::FilePatch,
    path: Option<&str>,
    ctx: &Context,
    planned: &BTreeMap<String, Change>,
) -> Result<WorkspacePath, ToolError> {
    if let Some(path) = path {
        return fs::resolve(path, ctx);
    }
    let exists = |p: &WorkspacePath| match planned.get(p.shown()) {
        Some(change) => change.after.is_some(),
        None => std::fs::symlink_metadata(p).is_ok(),
    };
    match (&file.old_path, &file.new_path) {
        (Some(old), Some(new)) if old != new => {
            let new = fs::resolve(new, ctx)?;
            if !exists(&new) {
                let old = fs::resolve(old, ctx)?;
                if exists(&old) {
                    return Ok(old);
                }
            }
            Ok(new)
        }
        (_, Some(p)) | (Some(p), None) => fs::resolve(p, ctx),
        (None, None) => Err(ToolError::invalid_input(
            "the patch has no `---`/`+++` headers; give `path` to say which file it changes",
        )),
    }
}
