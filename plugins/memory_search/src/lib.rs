//! The `memory_search` tool (as in the TypeScript bot framework): BM25 over every line of every
//! memory file; path, line and snippet of the best.

use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::memory::{self, Hit};
use toolhost_sdk::export_tool;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};

/// Arguments of `memory_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to look for, in words.
    pub query: String,
    /// Most results (1 to 50, default 5).
    #[serde(default = "five", rename = "maxResults")]
    #[schemars(range(min = 1, max = 50))]
    pub max_results: usize,
    /// The lowest BM25 score returned (default 0.1).
    #[serde(default = "tenth", rename = "minScore")]
    pub min_score: f64,
}

fn five() -> usize {
    5
}

fn tenth() -> f64 {
    0.1
}

/// The results.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Found {
    /// Best first.
    pub results: Vec<Hit>,
    /// How many memory files were searched.
    pub files: usize,
}

/// The `memory_search` tool.
pub struct MemorySearch;

impl Tool for MemorySearch {
    type Args = Args;
    const NAME: &'static str = "memory_search";
    const TITLE: Option<&'static str> = Some("Search memory");
    const DESCRIPTION: &'static str = "Search what was remembered with save_memory, past \
        sessions' tasks and answers (sessions/DATE.md) and any other .md file in the memory \
        directory: the best-matching lines by BM25, each with its file, line number and text. \
        Use words likely to appear in the fact. Read around a hit with memory_get.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: contract::dir::MEMORY.to_owned(),
            writable: false,
        }]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Found>())
    }

    fn call(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
        search(&args, Path::new(memory::DIR))
    }
}

export_tool!(MemorySearch);

/// Search the memory directory `root`.
pub fn search(args: &Args, root: &Path) -> Result<Output, ToolError> {
    ToolError::check_range(
        "maxResults",
        args.max_results,
        1..=50,
        "ask for fewer results",
    )?;
    if args.query.trim().is_empty() {
        return Err(ToolError::invalid_input(
            "`query` is empty; give words to look for",
        ));
    }
    let files = memory::files(memory::dir(root)?)?;
    let results = memory::search(&files, &args.query, args.max_results, args.min_score);
    let mut text = String::new();
    if results.is_empty() {
        text.push_str(&format!(
            "Nothing in memory matches `{}` ({} files searched).\n",
            args.query,
            files.len()
        ));
    }
    for hit in &results {
        text.push_str(&format!(
            "{}:{}: {} (score {})\n",
            hit.path, hit.line, hit.snippet, hit.score
        ));
    }
    Ok(Output::text(text).with_structured(&Found {
        results,
        files: files.len(),
    }))
}
