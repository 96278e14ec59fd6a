//! The `delete_file` tool: delete one file, only when deletion is enabled.

use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// Arguments of `delete_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file to delete, relative to the workspace root.
    pub path: String,
}

/// What `delete_file` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The path deleted.
    pub path: String,
    /// Its size in bytes before deletion.
    pub size: u64,
    /// True if it was a symbolic link (the link was removed, not its target).
    pub symlink: bool,
}

/// The `delete_file` tool.
pub struct DeleteFile;

impl Tool for DeleteFile {
    type Args = Args;
    const NAME: &'static str = "delete_file";
    const TITLE: Option<&'static str> = Some("Delete a file");
    const IDEMPOTENT: bool = true;
    const DESCRIPTION: &'static str = "Delete one file in the workspace (never a directory; a \
        symbolic link itself, not its target). Off unless a person enables it (`allow_delete`, \
        `--allow-delete`); when off, the call is refused and nothing is deleted.";
    const SENSITIVE: bool = true;

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceWrite]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        delete(&args, ctx)
    }
}

export_tool!(DeleteFile);

/// The body of [`DeleteFile::call`].
pub fn delete(args: &Args, ctx: &Context) -> Result<Output, ToolError> {
    let path = fs::resolve(&args.path, ctx)?;
    let shown = path.shown().to_owned();
    fs::deletion_allowed(ctx, &format!("`{shown}` was not deleted"))?;
    if path.is_root() {
        return Err(ToolError::invalid_input(
            "give the path of a file to delete, not the workspace root",
        ));
    }
    let meta = std::fs::symlink_metadata(&path).map_err(|e| fs::io_error(e, &shown))?;
    if meta.is_dir() {
        return Err(ToolError::retry(format!(
            "`{shown}` is a directory; delete_file only deletes files, never directories"
        )));
    }
    std::fs::remove_file(&path).map_err(|e| fs::write_error(e, &shown))?;
    let report = Report {
        path: shown.clone(),
        size: meta.len(),
        symlink: meta.is_symlink(),
    };
    let text = if report.symlink {
        format!("Deleted the symbolic link `{shown}` (its target is untouched).")
    } else {
        format!("Deleted `{shown}` ({} bytes).", report.size)
    };
    Ok(Output::text(text).with_structured(&report).changed(shown))
}

/// Natively only: they run the tool on a temporary directory.
#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests;
