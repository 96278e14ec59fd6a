//! The `write_file` tool: create a file, replace it, or append to it —
//! atomically, keeping an existing file's permissions.

use toolhost_builtin::text::{check_expected_hash, content_hash};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file, relative to the workspace root. Missing parent directories are created.
    pub path: String,
    /// The text to write.
    pub content: String,
    /// `overwrite` (the default) replaces the whole file; `append` adds `content` at its end.
    #[serde(default)]
    pub mode: Mode,
    /// The file's content hash as you last saw it; if it changed since, nothing is written.
    #[serde(default)]
    pub expected_hash: Option<String>,
}

/// How to write.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Replace the file.
    #[default]
    Overwrite,
    /// Add to its end.
    Append,
}

/// What `write_file` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The path written, relative to the workspace.
    pub path: String,
    /// True if the file did not exist before.
    pub created: bool,
    /// Bytes of `content` written.
    pub bytes_written: u64,
    /// Size of the file now.
    pub size: u64,
    /// The new content hash (pass it as `expected_hash` next time).
    pub hash: String,
}

/// The `write_file` tool.
pub struct WriteFile;

impl Tool for WriteFile {
    type Args = Args;
    const NAME: &'static str = "write_file";
    const TITLE: Option<&'static str> = Some("Write a file");
    const IDEMPOTENT: bool = true;
    const DESCRIPTION: &'static str = "Create a file, replace it whole, or append to it \
        (`mode: append`). The write is atomic: readers and crashes see the old content or the \
        new, never a mix, and an existing file keeps its permissions. Missing parent directories \
        are created. For changes to part of a file, prefer edit_file.";
    const SENSITIVE: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceWrite]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        write(&args, ctx)
    }
}

export_tool!(WriteFile);

/// The body of [`WriteFile::call`].
pub fn write(args: &Args, ctx: &Context) -> Result<Output, ToolError> {
    let path = fs::resolve(&args.path, ctx)?;
    let shown = path.shown().to_owned();
    let existing = fs::read_if_exists(&path)?;
    match (&existing, args.expected_hash.as_deref()) {
        (None, Some(_)) => {
            return Err(ToolError::retry(format!(
                "`{shown}` does not exist, but expected_hash was given: it was deleted or moved \
                 since it was read; check with list_files"
            )));
        }
        (Some(old), expected) => check_expected_hash(old, expected, &shown)?,
        (None, None) => {}
    }
    let new: Vec<u8> = match (args.mode, &existing) {
        (Mode::Append, Some(old)) => [old.as_slice(), args.content.as_bytes()].concat(),
        _ => args.content.as_bytes().to_vec(),
    };
    fs::write_atomic(&path, &new)?;
    let report = Report {
        path: shown.clone(),
        created: existing.is_none(),
        bytes_written: args.content.len() as u64,
        size: new.len() as u64,
        hash: content_hash(&new),
    };
    let text = match (existing.is_none(), args.mode) {
        (true, _) => format!("Created `{shown}` ({} bytes).", report.size),
        (false, Mode::Overwrite) => format!("Replaced `{shown}` ({} bytes).", report.size),
        (false, Mode::Append) => format!(
            "Appended {} bytes to `{shown}` (now {} bytes).",
            report.bytes_written, report.size
        ),
    };
    Ok(Output::text(text).with_structured(&report).changed(shown))
}

/// Natively only: they run the tool on a temporary directory.
#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests;
