//! The `list_files` tool: the files of a directory (optionally recursive and
//! filtered by a glob), sorted, with sizes.

use toolhost_builtin::search::Glob;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// The most entries one call returns (the schema's maximum for `limit`).
pub const MAX_LIMIT: usize = 10_000;

/// Arguments of `list_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Directory to list, relative to the workspace root.
    #[serde(default = "toolhost_builtin::defaults::dot")]
    pub path: String,
    /// A glob: `*.rs` matches file names, `src/**/*.md` paths below `path`
    /// (a `/` or `**` implies recursive).
    #[serde(default)]
    pub pattern: Option<String>,
    /// Also list files in subdirectories (`.git` is never entered).
    #[serde(default)]
    pub recursive: bool,
    /// Most files to return (default 200).
    #[serde(default = "toolhost_builtin::defaults::count::<200>")]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: usize,
}

/// One file.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileEntry {
    /// Path relative to the workspace root.
    pub path: String,
    /// File name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
}

/// What `list_files` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The files, sorted by path.
    pub files: Vec<FileEntry>,
    /// How many files matched in all.
    pub total: usize,
    /// True if `limit` cut the list.
    pub truncated: bool,
}

/// The `list_files` tool.
pub struct ListFiles;

impl Tool for ListFiles {
    type Args = Args;
    const NAME: &'static str = "list_files";
    const TITLE: Option<&'static str> = Some("List files");
    const DESCRIPTION: &'static str = "List the files (not directories) of a workspace \
        directory with their sizes, sorted; recursive if `recursive` is set or the glob \
        `pattern` has `/` or `**`. At most `limit`, with a note when more exist. For \
        directories use list_dirs; to search the tree by name, find_files.";

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

export_tool!(ListFiles);

/// The body of [`ListFiles::call`].
pub fn list(args: &Args, ctx: &Context) -> Result<Output, ToolError> {
    ToolError::check_range(
        "limit",
        args.limit,
        1..=MAX_LIMIT,
        "for more files, list a subdirectory at a time",
    )?;
    let base = fs::resolve(&args.path, ctx)?;
    let shown = base.shown().to_owned();
    let filter = args.pattern.as_deref().map(Glob::new).transpose()?;
    let recursive = args.recursive || filter.as_ref().is_some_and(Glob::on_paths);
    let entries = fs::walk(&base, if recursive { usize::MAX } else { 1 })?;
    let mut files: Vec<FileEntry> = entries
        .into_iter()
        .filter(|e| !e.is_dir)
        .filter(|e| filter.as_ref().is_none_or(|f| f.matches(&base, &e.path)))
        .map(|e| FileEntry {
            name: std::path::Path::new(e.path.shown())
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path: e.path.shown().to_owned(),
            size: e.size,
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let total = files.len();
    files.truncate(args.limit);
    let report = Report {
        truncated: total > files.len(),
        total,
        files,
    };
    let mut text: String = report
        .files
        .iter()
        .map(|f| format!("{} ({} bytes)\n", f.path, f.size))
        .collect();
    if report.files.is_empty() {
        text = format!(
            "No files in `{shown}`{}.\n",
            if args.pattern.is_some() {
                " match the pattern"
            } else {
                ""
            }
        );
    }
    if report.truncated {
        text.push_str(&format!(
            "[{} of {total} files shown; narrow the path or pattern, or raise limit]\n",
            report.files.len()
        ));
    }
    Ok(Output::text(text).with_structured(&report))
}

/// Natively only: they run the tool on a temporary directory.
#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests;
