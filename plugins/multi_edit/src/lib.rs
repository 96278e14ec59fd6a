//! The `multi_edit` tool: several exact replacements in one file, applied in
//! order, all or nothing.

use toolhost_builtin::edit::{self, FileEdit};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// Arguments of `multi_edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file, relative to the workspace root.
    pub path: String,
    /// The edits, applied in order; each sees the result of the previous ones.
    pub edits: Vec<Edit>,
    /// The file's content hash as you last saw it; if it changed since, nothing is changed.
    #[serde(default)]
    pub expected_hash: Option<String>,
}

/// One replacement.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// The exact text to replace; it must occur exactly once unless `replace_all` is set.
    pub old_str: String,
    /// The replacement text.
    pub new_str: String,
    /// Replace every occurrence.
    #[serde(default)]
    pub replace_all: bool,
}

/// What `multi_edit` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The path edited.
    pub path: String,
    /// How many edits were applied (all of them).
    pub edits: usize,
    /// Occurrences replaced by each edit, in order.
    pub replacements: Vec<usize>,
    /// The unified diff of the whole change.
    pub diff: String,
    /// The new content hash.
    pub hash: String,
}

/// The `multi_edit` tool.
pub struct MultiEdit;

impl Tool for MultiEdit {
    type Args = Args;
    const NAME: &'static str = "multi_edit";
    const TITLE: Option<&'static str> = Some("Edit a file in several places");
    const DESCRIPTION: &'static str = "Make several exact replacements in one file, in order \
        (each to the result of the previous one), all or nothing: if any edit fails, the file \
        is untouched and the error says which and why. Each follows edit_file's rules. Returns \
        one unified diff.";
    const SENSITIVE: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceWrite]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        if args.edits.is_empty() {
            return Err(ToolError::invalid_input(
                "`edits` is empty; give at least one edit",
            ));
        }
        let path = fs::resolve(&args.path, ctx)?;
        let shown = path.shown().to_owned();
        let total = args.edits.len();
        let mut replacements = Vec::with_capacity(total);
        let FileEdit { diff, hash } = edit::edit_file(
            &path,
            args.expected_hash.as_deref(),
            |text| {
                let mut text = text.to_owned();
                for (i, e) in args.edits.iter().enumerate() {
                    let done = edit::replace(&text, &e.old_str, &e.new_str, e.replace_all).map_err(|err| {
                    err.into_tool_error(&shown).context(&format!(
                        "edit {} of {total} failed, so no edit was applied and `{shown}` is unchanged",
                        i + 1
                    ))
                })?;
                    replacements.push(done.lines.len());
                    text = done.text;
                }
                Ok(text)
            },
        )?;
        let report = Report {
            path: shown.clone(),
            edits: total,
            replacements,
            diff,
            hash,
        };
        let text = format!(
            "Edited `{shown}`: {total} edits applied.\n\n{}",
            report.diff
        );
        Ok(Output::text(text).with_structured(&report).changed(shown))
    }
}

export_tool!(MultiEdit);

/// Natively only: they run the tool on a temporary directory.
#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests;
