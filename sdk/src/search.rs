//! Walking and searching the workspace for search tools (feature `search`),
//! on ripgrep's own crates: `ignore` walks (honouring `.gitignore`/`.ignore`
//! and hiding dot-files when asked), `globset` filters, `grep-searcher` and
//! `grep-regex` search with SIMD literal scanning, binary detection and
//! context lines.
//!
//! - [`Scope`] says which files a search covers; [`Scope::files`] lists them
//!   sorted by path, and [`Scope::left_out`] the ones it skipped because of
//!   ignore rules or hiding, so a tool can say "0 matches; 12 exist in
//!   ignored files".
//! - [`Glob`] matches a file name (`*.rs`) or a path (`src/**/*.md`).
//! - [`Query`] is a literal or regex search; [`Query::search`] returns a
//!   file's [`FileMatches`], skipping binary files.

mod engine;
mod glob;
mod scope;
mod walk;

pub use engine::{FileMatches, Line, Query};
pub use glob::Glob;
pub use scope::{FileEntry, LeftOut, Scope};
pub use walk::{EntryKind, WalkEntry, WalkOptions, walk_native};

use crate::fs::{WorkspacePath, resolve};
use crate::{Context, Output, ToolError, parallel};

/// Below this many files a search runs in one instance: fanning out costs
/// more than it saves.
const FAN_OUT_MIN_FILES: usize = 64;

/// What a search found across files.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Found {
    /// Files with matches, sorted by path; lines beyond the limit dropped.
    pub files: Vec<FileMatches>,
    /// Matching lines in all.
    pub total: usize,
}

/// Search `files` (sorted by path), keeping at most `keep` matching lines in
/// all (every match is counted). Big searches fan out over the host's cores:
/// the tool must call [`search_share`] first thing in its `call`.
pub fn search_all(query: &Query, files: Vec<FileEntry>, keep: usize) -> Result<Found, ToolError> {
    let files: Vec<WorkspacePath> = files.into_iter().map(|f| f.path).collect();
    let width = parallel::width();
    if width < 2 || files.len() < FAN_OUT_MIN_FILES {
        return Ok(search_local(query, &files, keep));
    }
    let shares = parallel::deal(files.iter().map(|f| f.shown().to_owned()).collect(), width);
    let parts: Vec<Found> = parallel::fan_out(&shares)?;
    let mut all: Vec<FileMatches> = parts.into_iter().flat_map(|p| p.files).collect();
    all.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(limit(all, keep, query.context()))
}

/// In a run started by [`search_all`]'s fan-out, search this run's share and
/// return the output to hand back; `None` in an ordinary call.
pub fn search_share(
    query: &Query,
    ctx: &Context,
    keep: usize,
) -> Option<Result<Output, ToolError>> {
    let share = parallel::share::<Vec<String>>(ctx)?;
    Some(share.and_then(|paths| {
        let files = paths
            .iter()
            .map(|p| resolve(p, ctx))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Output::text("").with_structured(search_local(query, &files, keep)))
    }))
}

fn search_local(query: &Query, files: &[WorkspacePath], keep: usize) -> Found {
    let mut kept = 0;
    let mut found = Vec::new();
    for path in files {
        if let Some(f) = query.search(path, keep.saturating_sub(kept)) {
            kept += f.lines.iter().filter(|l| l.is_match).count();
            found.push(f);
        }
    }
    limit(found, keep, query.context())
}

/// Keep the first `keep` matching lines across files, with their context
/// (`context` lines after the last one kept, none before a dropped one).
fn limit(files: Vec<FileMatches>, keep: usize, context: usize) -> Found {
    let total = files.iter().map(|f| f.matches).sum();
    let mut left = keep;
    let files = files
        .into_iter()
        .map(|mut f| {
            let mut shown = 0;
            let mut last_kept = None;
            let mut cut = f.lines.len();
            for (i, line) in f.lines.iter().enumerate() {
                if line.is_match {
                    if shown == left {
                        cut = i;
                        break;
                    }
                    shown += 1;
                    last_kept = Some(line.number);
                }
            }
            f.lines.truncate(cut);
            let reach = last_kept.map_or(0, |n| n + context as u64);
            while f
                .lines
                .last()
                .is_some_and(|l| !l.is_match && l.number > reach)
            {
                f.lines.pop();
            }
            left -= shown;
            f
        })
        .collect();
    Found { files, total }
}

/// Lines as `path:N:text` (matches) and `path-N-text` (context), with `--`
/// between groups that are not adjacent.
pub fn format_lines(found: &Found) -> String {
    let with_context = found
        .files
        .iter()
        .any(|f| f.lines.iter().any(|l| !l.is_match));
    let mut out = String::new();
    let mut last: Option<(&str, u64)> = None;
    for file in &found.files {
        for line in &file.lines {
            if with_context
                && let Some((path, n)) = last
                && (path != file.path || line.number != n + 1)
            {
                out.push_str("--\n");
            }
            let sep = if line.is_match { ':' } else { '-' };
            out.push_str(&format!(
                "{}{sep}{}{sep}{}\n",
                file.path, line.number, line.text
            ));
            last = Some((&file.path, line.number));
        }
    }
    out
}

/// Why a search found nothing, when files it skipped would have matched:
/// "12 matches exist in 3 ignored files — set respect_ignore=false".
pub fn explain_none(
    query: &Query,
    scope: &Scope,
    base: &WorkspacePath,
) -> Result<Option<String>, ToolError> {
    let left = scope.left_out(base)?;
    let count = |files: &[WorkspacePath]| -> (usize, usize) {
        files
            .iter()
            .map(|f| query.count(f))
            .filter(|&n| n > 0)
            .fold((0, 0), |(m, f), n| (m + n, f + 1))
    };
    let mut parts = Vec::new();
    for (files, what, fix) in [
        (&left.ignored, "ignored", "respect_ignore=false"),
        (&left.hidden, "hidden", "hidden=true"),
    ] {
        let (m, f) = count(files);
        if m > 0 {
            parts.push(format!(
                "{m} {} in {f} {what} {} — set {fix} to search them",
                if m == 1 {
                    "match exists"
                } else {
                    "matches exist"
                },
                if f == 1 { "file" } else { "files" }
            ));
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("; ")))
}

/// The text for a content search: the lines ([`format_lines`]) and a note
/// when `max_results` cut them, or "0 matches" with `why_none` (see
/// [`explain_none`]).
pub fn describe_lines(
    pattern: &str,
    found: &Found,
    max_results: usize,
    why_none: Option<String>,
) -> String {
    if found.total == 0 {
        return none_found(pattern, why_none);
    }
    let mut text = format_lines(found);
    if found.total > max_results {
        text.push_str(&cut_note(max_results, found.total, "matching lines", found));
    }
    text
}

/// "0 matches for `pattern`", with the reason if there is one.
pub fn none_found(pattern: &str, why_none: Option<String>) -> String {
    let why = why_none.map(|w| format!("; {w}")).unwrap_or_default();
    format!("0 matches for `{pattern}`{why}.\n")
}

/// The note appended when a limit cut the results.
pub fn cut_note(shown: usize, of: usize, what: &str, found: &Found) -> String {
    format!(
        "[{shown} of {of} {what} shown ({} matches in {} files); narrow the path or file \
         pattern, or raise max_results]\n",
        found.total,
        found.files.len()
    )
}

/// The structured result of a content search (grep, search_code).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Report {
    /// Matching lines in all.
    pub total_matches: usize,
    /// Files with at least one match.
    pub files_with_matches: usize,
    /// True if the limit cut the results.
    pub truncated: bool,
    /// The results by file, sorted by path then line.
    pub results: Vec<FileMatches>,
}

impl Report {
    /// The report for `found`, limited to `max_results` matching lines
    /// (`per_file`: false) or files (`per_file`: true).
    pub fn new(found: Found, max_results: usize, per_file: bool) -> Self {
        let files_with_matches = found.files.len();
        let (truncated, results) = if per_file {
            (
                files_with_matches > max_results,
                found.files.into_iter().take(max_results).collect(),
            )
        } else {
            (found.total > max_results, found.files)
        };
        Self {
            total_matches: found.total,
            files_with_matches,
            truncated,
            results,
        }
    }
}
