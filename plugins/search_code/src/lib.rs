//! The `search_code` tool: regular-expression search with context lines,
//! at ripgrep speed (ripgrep's own crates, fanned out over the host's cores).

use toolhost_builtin::search::{self, Glob, Keep, Query, Scope};
use toolhost_sdk::{Capability, Context, Deserialize, JsonSchema, Output, Tool, ToolError};
use toolhost_sdk::{export_tool, fs};

/// Arguments of `search_code`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// A regular expression (Rust regex syntax, like ripgrep's), e.g. `fn \w+_test\(`.
    pub pattern: String,
    /// File or directory to search, relative to the workspace root.
    #[serde(default = "toolhost_builtin::defaults::dot")]
    pub path: String,
    /// Only files matching this glob: `*.py` matches file names, `src/**/*.ts` paths.
    #[serde(default)]
    pub file_pattern: Option<String>,
    /// Lines of context before and after each match (default 2).
    #[serde(default = "toolhost_builtin::defaults::count::<2>")]
    pub context_lines: usize,
    /// Most matching lines to return (default 50).
    #[serde(default = "toolhost_builtin::defaults::count::<50>")]
    pub max_results: usize,
    /// Match case exactly (default true).
    #[serde(default = "toolhost_builtin::defaults::yes")]
    pub case_sensitive: bool,
    /// Let matches span lines (`.` then also matches a newline).
    #[serde(default)]
    pub multiline: bool,
    /// Skip files excluded by .gitignore/.ignore (default true).
    #[serde(default = "toolhost_builtin::defaults::yes")]
    pub respect_ignore: bool,
    /// Also search hidden files and directories (default false).
    #[serde(default)]
    pub hidden: bool,
}

/// The `search_code` tool.
pub struct SearchCode;

impl Tool for SearchCode {
    type Args = Args;
    const NAME: &'static str = "search_code";
    const TITLE: Option<&'static str> = Some("Search code");
    const DESCRIPTION: &'static str = "Search files with a regular expression (Rust regex \
        syntax): matching lines as `path:line:text`, context as `path-line-text`, `--` between \
        groups, sorted by path then line, at most `max_results`. `multiline: true` lets a \
        match span lines. Skips binary, ignored and hidden files unless told otherwise, and \
        says when skipped files would have matched. For plain text use grep.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceRead]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<search::Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        let query = Query::regex(&args.pattern, args.case_sensitive, args.multiline)?
            .with_context(args.context_lines);
        let keep = Keep::Lines(args.max_results);
        if let Some(share) = search::search_share(&query, ctx, keep) {
            return share;
        }
        ToolError::check_range("max_results", args.max_results, 1..=usize::MAX, "")?;
        let base = fs::resolve(&args.path, ctx)?;
        let scope = Scope {
            respect_ignore: args.respect_ignore,
            hidden: args.hidden,
            glob: args.file_pattern.as_deref().map(Glob::new).transpose()?,
            recursive: true,
            metadata: false,
        };
        let (found, why_none) = search::search_scope(&query, &scope, &base, keep)?;
        let text =
            search::describe_lines(&query, &args.pattern, &found, args.max_results, why_none);
        let report = search::Report::new(found, keep);
        Ok(Output::text(text).with_structured(&report))
    }
}

export_tool!(SearchCode);
