//! The `edit_file` tool: replace an exact, unique piece of text in a file,
//! keeping its encoding and line endings byte for byte.

use toolhost_builtin::edit::{self, FileEdit};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file, relative to the workspace root.
    pub path: String,
    /// The exact text to replace, including whitespace and indentation. It must occur exactly once unless `replace_all` is set.
    pub old_str: String,
    /// The replacement text.
    pub new_str: String,
    /// Replace every occurrence of `old_str` instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
    /// The file's content hash as you last saw it; if it changed since, nothing is changed.
    #[serde(default)]
    pub expected_hash: Option<String>,
}

/// What `edit_file` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The path edited.
    pub path: String,
    /// How many occurrences were replaced.
    pub replacements: usize,
    /// Line numbers (before the edit) where they started.
    pub lines: Vec<usize>,
    /// The unified diff of the change.
    pub diff: String,
    /// The new content hash (pass it as `expected_hash` for the next edit).
    pub hash: String,
}

/// The `edit_file` tool.
pub struct EditFile;

impl Tool for EditFile {
    type Args = Args;
    const NAME: &'static str = "edit_file";
    const TITLE: Option<&'static str> = Some("Edit a file");
    const DESCRIPTION: &'static str = "Replace an exact piece of text in a file: `old_str` \
        must appear exactly once (copy it from read_file without the line-number prefix) \
        unless `replace_all` is set. A miss shows the closest region and what differs. Returns \
        a unified diff. Encoding, BOM and line endings are kept. For several changes to one \
        file use multi_edit; for a new file, write_file.";
    const SENSITIVE: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceWrite]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        let path = fs::resolve(&args.path, ctx)?;
        let shown = path.shown().to_owned();
        let mut lines = Vec::new();
        let FileEdit { diff, hash } =
            edit::edit_file(&path, args.expected_hash.as_deref(), |text| {
                let done = edit::replace(text, &args.old_str, &args.new_str, args.replace_all)
                    .map_err(|e| e.into_tool_error(&shown))?;
                lines = done.lines;
                Ok(done.text)
            })?;
        let report = Report {
            path: shown.clone(),
            replacements: lines.len(),
            lines,
            diff,
            hash,
        };
        let text = format!(
            "Edited `{shown}`: {} replacement{}.\n\n{}",
            report.replacements,
            if report.replacements == 1 { "" } else { "s" },
            report.diff
        );
        Ok(Output::text(text).with_structured(&report).changed(shown))
    }
}

export_tool!(EditFile);

/// Natively only: they run the tool on a temporary directory.
#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests;
