//! The `find_files` tool: files whose name or path matches a glob, newest
//! first.

use toolhost_builtin::search::{self, Glob, Scope};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};
use toolhost_sdk::{export_tool, fs};

/// Arguments of `find_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// A glob: `*.yaml` matches file names, `src/**/*.md` paths below `path`.
    pub pattern: String,
    /// Directory to search, relative to the workspace root.
    #[serde(default = "toolhost_builtin::defaults::dot")]
    pub path: String,
    /// Search subdirectories too (default true).
    #[serde(default = "toolhost_builtin::defaults::yes")]
    pub recursive: bool,
    /// Most files to return (default 200).
    #[serde(default = "toolhost_builtin::defaults::count::<200>")]
    pub limit: usize,
    /// Skip files excluded by .gitignore/.ignore (default true).
    #[serde(default = "toolhost_builtin::defaults::yes")]
    pub respect_ignore: bool,
    /// Also find hidden files and files in hidden directories (default false).
    #[serde(default)]
    pub hidden: bool,
}

/// One file found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Found {
    /// Workspace-relative path.
    pub path: String,
    /// Last modification, in seconds since the Unix epoch (0 if unknown).
    pub modified: u64,
    /// Size in bytes.
    pub size: u64,
}

/// What `find_files` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The files, newest first (then by path).
    pub files: Vec<Found>,
    /// How many matched in all.
    pub total: usize,
    /// True if `limit` cut the list.
    pub truncated: bool,
}

/// The `find_files` tool.
pub struct FindFiles;

impl Tool for FindFiles {
    type Args = Args;
    const NAME: &'static str = "find_files";
    const TITLE: Option<&'static str> = Some("Find files by name");
    const DESCRIPTION: &'static str = "Find files by name or path with a glob (`*.yaml`, \
        `src/**/*.md`), in subdirectories too, newest first, at most `limit`. Skips ignored \
        and hidden files unless `respect_ignore: false` / `hidden: true`, and says when \
        skipped files would have matched.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceRead]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        ToolError::check_range("limit", args.limit, 1..=usize::MAX, "")?;
        let base = fs::resolve(&args.path, ctx)?;
        let glob = Glob::new(&args.pattern)?;
        let scope = Scope {
            respect_ignore: args.respect_ignore,
            hidden: args.hidden,
            recursive: args.recursive || glob.on_paths(),
            metadata: true,
            glob: Some(glob),
        };
        let mut entries = scope.files(&base)?;
        entries.sort_by(|a, b| {
            b.modified_ns
                .cmp(&a.modified_ns)
                .then_with(|| a.path.shown().cmp(b.path.shown()))
        });
        let mut files: Vec<Found> = entries
            .into_iter()
            .map(|f| Found {
                modified: f.modified_ns / 1_000_000_000,
                size: f.size,
                path: f.path.shown().to_owned(),
            })
            .collect();
        let total = files.len();
        files.truncate(args.limit);
        let mut text: String = files.iter().map(|f| format!("{}\n", f.path)).collect();
        if total == 0 {
            let why = search::explain_no_files(&scope, &base)?
                .map(|w| format!("; {w}"))
                .unwrap_or_default();
            text = format!("0 files match `{}`{why}.\n", args.pattern);
        } else if total > files.len() {
            text.push_str(&format!("[{} of {total} files shown, newest first; narrow the pattern or path, or raise limit]\n", files.len()));
        }
        let report = Report {
            truncated: total > files.len(),
            total,
            files,
        };
        Ok(Output::text(text).with_structured(&report))
    }
}

export_tool!(FindFiles);
