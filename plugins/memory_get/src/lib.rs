//! The `memory_get` tool (as in the TypeScript bot framework): lines of one memory file.

use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::memory;
use toolhost_sdk::export_tool;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};

/// Arguments of `memory_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file, relative to the memory directory (e.g. `2026-11-22.md`).
    pub path: String,
    /// The first line to return, 1-based (default 1), as read_file's `offset`.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<usize>,
    /// How many lines (default 50, at most 1000), as read_file's `limit`.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// What `memory_get` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The file, relative to the memory directory.
    pub path: String,
    /// Lines in the file.
    pub total_lines: usize,
    /// First line shown (1-based); 0 when none is.
    pub start_line: usize,
    /// Last line shown; 0 when none is.
    pub end_line: usize,
    /// True if lines after `end_line` exist and were not shown.
    pub truncated: bool,
}

/// The `memory_get` tool.
pub struct MemoryGet;

impl Tool for MemoryGet {
    type Args = Args;
    const NAME: &'static str = "memory_get";
    const TITLE: Option<&'static str> = Some("Read a memory file");
    const DESCRIPTION: &'static str = "Read lines of a memory file (a path memory_search \
        returned, relative to the memory directory), numbered: `offset` (first line, 1-based, default 1) \
        and `limit` (how many lines, default 50), as in read_file.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: contract::dir::MEMORY.to_owned(),
            writable: false,
        }]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
        get(&args, Path::new(memory::DIR))
    }
}

export_tool!(MemoryGet);

/// Read from the memory directory `root`.
pub fn get(args: &Args, root: &Path) -> Result<Output, ToolError> {
    let rel = memory::relative(&args.path)?;
    let from = args.offset.unwrap_or(1);
    let count = args.limit.unwrap_or(50);
    ToolError::check_range("offset", from, 1..=usize::MAX, "lines are numbered from 1")?;
    ToolError::check_range("limit", count, 1..=1000, "read less at a time")?;
    let path = memory::dir(root)?.join(&rel);
    let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::retry(format!(
            "`{}` is not in memory; memory_search finds the files that are",
            args.path
        )),
        _ => ToolError::failed(format!("cannot read `{}`: {e}", args.path)),
    })?;
    let total = text.lines().count();
    let shown = total.saturating_sub(from - 1).min(count);
    let report = Report {
        path: rel.to_string_lossy().into_owned(),
        total_lines: total,
        start_line: if shown > 0 { from } else { 0 },
        end_line: if shown > 0 { from - 1 + shown } else { 0 },
        truncated: from - 1 + count < total,
    };
    let mut out: String = text
        .lines()
        .enumerate()
        .skip(from - 1)
        .take(count)
        .map(|(n, l)| format!("{:>6}\t{l}\n", n + 1))
        .collect();
    if out.is_empty() {
        out = format!(
            "`{}` has {total} lines; `offset` {from} is past the end.\n",
            args.path
        );
    } else if from - 1 + count < total {
        out.push_str(&format!(
            "[{} more lines; continue with offset={}]\n",
            total - (from - 1 + count),
            from + count
        ));
    }
    Ok(Output::text(out).with_structured(report))
}
