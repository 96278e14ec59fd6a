//! The `grep` tool: find literal text in the workspace's files, at ripgrep
//! speed (ripgrep's own crates, fanned out over the host's cores).

use toolhost_builtin::search::{self, Found, Glob, Keep, Query, Scope};
use toolhost_sdk::{Capability, Context, Deserialize, JsonSchema, Output, Tool, ToolError};
use toolhost_sdk::{export_tool, fs};

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The text to find, taken literally (not a regular expression).
    pub pattern: String,
    /// File or directory to search, relative to the workspace root.
    #[serde(default = "toolhost_builtin::defaults::dot")]
    pub path: String,
    /// Only files matching this glob: `*.rs` matches file names, `src/**/*.ts` paths.
    #[serde(default = "toolhost_builtin::defaults::star")]
    pub file_pattern: String,
    /// Match case exactly (default true).
    #[serde(default = "toolhost_builtin::defaults::yes")]
    pub case_sensitive: bool,
    /// `content` (matching lines as `path:line:text`, the default), `files` (paths of matching files) or `count` (matches per file).
    #[serde(default)]
    pub output: OutputMode,
    /// Lines of context to show before and after each match (content output).
    #[serde(default)]
    pub context: usize,
    /// Most matching lines (content) or files (files, count) to return (default 100).
    #[serde(default = "toolhost_builtin::defaults::count::<100>")]
    pub max_results: usize,
    /// Skip files excluded by .gitignore/.ignore (default true).
    #[serde(default = "toolhost_builtin::defaults::yes")]
    pub respect_ignore: bool,
    /// Also search hidden files and directories (default false).
    #[serde(default)]
    pub hidden: bool,
    /// Search subdirectories too (default true); false searches only the
    /// files directly in `path`.
    #[serde(default = "toolhost_builtin::defaults::yes")]
    pub recursive: bool,
}

/// What to return.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    /// Matching lines.
    #[default]
    Content,
    /// Paths of matching files.
    Files,
    /// Matching lines per file.
    Count,
}

/// The `grep` tool.
pub struct Grep;

impl Tool for Grep {
    type Args = Args;
    const NAME: &'static str = "grep";
    const TITLE: Option<&'static str> = Some("Search file contents");
    const DESCRIPTION: &'static str = "Search files for literal text (for regular expressions \
        use search_code): matching lines as `path:line:text`, the matching `files`, or a \
        `count` per file; sorted by path then line, at most `max_results`. Skips binary, \
        ignored and hidden files unless `respect_ignore: false` / `hidden: true`, and says \
        when skipped files would have matched.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceRead]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<search::Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        let query =
            Query::literal(&args.pattern, args.case_sensitive)?.with_context(match args.output {
                OutputMode::Content => args.context,
                _ => 0,
            });
        let keep = match args.output {
            OutputMode::Content => Keep::Lines(args.max_results),
            _ => Keep::Files(args.max_results),
        };
        if let Some(share) = search::search_share(&query, ctx, keep) {
            return share;
        }
        ToolError::check_range("max_results", args.max_results, 1..=usize::MAX, "")?;
        let base = fs::resolve(&args.path, ctx)?;
        let scope = Scope {
            respect_ignore: args.respect_ignore,
            hidden: args.hidden,
            glob: (args.file_pattern != "*")
                .then(|| Glob::new(&args.file_pattern))
                .transpose()?,
            recursive: args.recursive,
            metadata: false,
        };
        let (found, why_none) = search::search_scope(&query, &scope, &base, keep)?;
        let text = render(&args, &query, &found, why_none);
        let report = search::Report::new(found, keep);
        Ok(Output::text(text).with_structured(&report))
    }
}

export_tool!(Grep);

/// The text for the model, in the requested output mode, with notes.
fn render(args: &Args, query: &Query, found: &Found, why_none: Option<String>) -> String {
    let list = |line: &dyn Fn(&search::FileMatches) -> String| -> String {
        let mut text: String = found.files.iter().map(line).collect();
        if found.files_with_matches > found.files.len() {
            text.push_str(&search::cut_note(
                found.files.len(),
                found.files_with_matches,
                "files",
                found,
            ));
        }
        text
    };
    match args.output {
        _ if found.total == 0 => search::none_found(&args.pattern, why_none),
        OutputMode::Content => {
            search::describe_lines(query, &args.pattern, found, args.max_results, why_none)
        }
        OutputMode::Files => list(&|f| format!("{}\n", f.path)),
        OutputMode::Count => list(&|f| format!("{}:{}\n", f.path, f.matches)),
    }
}
