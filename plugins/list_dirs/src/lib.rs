//! The `list_dirs` tool: the directories under a directory, to a depth of 3.

use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// The deepest listing allowed.
pub const MAX_DEPTH: usize = 3;

/// The most entries one call returns (the schema's maximum for `limit`).
pub const MAX_LIMIT: usize = 10_000;

/// Arguments of `list_dirs`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Directory to start from, relative to the workspace root.
    #[serde(default = "toolhost_builtin::defaults::dot")]
    pub path: String,
    /// How many levels down to list: 1 (direct children, the default) to 3.
    #[serde(default = "toolhost_builtin::defaults::count::<1>")]
    #[schemars(range(min = 1, max = 3))]
    pub depth: usize,
    /// Most directories to return (default 200).
    #[serde(default = "toolhost_builtin::defaults::count::<200>")]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: usize,
}

/// One directory.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DirEntry {
    /// Path relative to the workspace root.
    pub path: String,
    /// Levels below the starting directory (1 for its children).
    pub depth: usize,
}

/// What `list_dirs` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The directories, sorted by path.
    pub dirs: Vec<DirEntry>,
    /// How many were found in all.
    pub total: usize,
    /// True if `limit` cut the list.
    pub truncated: bool,
}

/// The `list_dirs` tool.
pub struct ListDirs;

impl Tool for ListDirs {
    type Args = Args;
    const NAME: &'static str = "list_dirs";
    const TITLE: Option<&'static str> = Some("List directories");
    const DESCRIPTION: &'static str = "List the directories under a workspace directory, down \
        to `depth` levels (1 to 3), sorted. `.git` is listed but not entered. At most `limit`, \
        with a note when more exist. Use it to learn a project's layout.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceRead]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        list(&args, ctx)
    }
}

export_tool!(ListDirs);

/// The body of [`ListDirs::call`].
pub fn list(args: &Args, ctx: &Context) -> Result<Output, ToolError> {
    ToolError::check_range(
        "depth",
        args.depth,
        1..=MAX_DEPTH,
        "list deeper levels by calling list_dirs again on a subdirectory",
    )?;
    ToolError::check_range(
        "limit",
        args.limit,
        1..=MAX_LIMIT,
        "for more directories, list a subdirectory at a time",
    )?;
    let base = fs::resolve(&args.path, ctx)?;
    let shown = base.shown().to_owned();
    let entries = fs::walk(&base, args.depth)?;
    let mut dirs: Vec<DirEntry> = entries
        .into_iter()
        .filter(|e| e.is_dir)
        .map(|e| DirEntry {
            path: e.path.shown().to_owned(),
            depth: e.depth,
        })
        .collect();
    dirs.sort_by(|a, b| a.path.cmp(&b.path));
    let total = dirs.len();
    dirs.truncate(args.limit);
    let report = Report {
        truncated: total > dirs.len(),
        total,
        dirs,
    };
    let mut text: String = report
        .dirs
        .iter()
        .map(|d| format!("{}/\n", d.path))
        .collect();
    if report.dirs.is_empty() {
        text = format!("`{shown}` has no subdirectories.\n");
    }
    if report.truncated {
        text.push_str(&format!(
            "[{} of {total} directories shown; start from a subdirectory, lower depth, or raise limit]\n",
            report.dirs.len()
        ));
    }
    Ok(Output::text(text).with_structured(&report))
}

/// Natively only: they run the tool on a temporary directory.
#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests;
