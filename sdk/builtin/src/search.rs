//! Walking and searching the workspace for search tools (feature `search`),
//! on ripgrep's own crates: `ignore` walks (honouring `.gitignore`/`.ignore`
//! and hiding dot-files when asked), `globset` filters, `grep-searcher` and
//! `grep-regex` search with SIMD literal scanning, binary detection and
//! context lines.
//!
//! - [`Scope`] says which files a search covers; [`Scope::files`] lists them
//!   sorted by path, and [`Scope::left_out`] the ones it skipped because of
//!   ignore rules, hiding or both, so a tool can say "0 matches; 12 exist in
//!   ignored files" ([`explain_none`], [`explain_no_files`]).
//! - [`Glob`] matches a file name (`*.rs`) or a path (`src/**/*.md`).
//! - [`Query`] is a literal or regex search; [`Query::search`] returns a
//!   file's [`FileMatches`], skipping binary files.
//! - [`search_all`] searches a scope's files, fanned out over the host's
//!   cores ([`search_share`] runs one share), and returns what [`Keep`]
//!   asks for as [`Found`]; [`describe_lines`] and [`Report`] turn that
//!   into the text and the structured result of a content search.
//! - [`walk_native`] is the directory walk itself; the host serves it to
//!   plugins as `files.walk`.

mod engine;
mod glob;
mod scope;
mod walk;

pub use engine::{FileMatches, Line, Query};
pub use glob::Glob;
pub use scope::{FileEntry, LeftOut, Scope};
pub use walk::{EntryKind, WalkEntry, WalkOptions, walk_native};

use toolhost_sdk::fs::{WorkspacePath, resolve};
use toolhost_sdk::{Context, Output, ToolError, parallel};

/// Below this many files a search runs in one instance: fanning out costs
/// more than it saves.
const FAN_OUT_MIN_FILES: usize = 64;

/// Most left-out files, and bytes of them, [`explain_none`] searches. It
/// runs only when nothing matched, but a tree with a big ignored `target/`
/// or `node_modules/` must still get its answer quickly.
const EXPLAIN_MAX_FILES: usize = 2_000;
const EXPLAIN_MAX_BYTES: u64 = 64 << 20;

/// What a search keeps of its results. Every match is counted either way
/// (see [`Found`]), so the results a share sends back, and the structured
/// result, stay as small as the limit however much matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The first `n` matching lines across files (by path, then line), with
    /// their context; a file with no kept line is left out.
    Lines(usize),
    /// The first `n` matching files (by path), without their lines.
    Files(usize),
}

/// What a search found across files.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Found {
    /// What was kept (see [`Keep`]), sorted by path.
    pub files: Vec<FileMatches>,
    /// Matching lines in all, kept or not.
    pub total: usize,
    /// Files with at least one match, kept or not.
    pub files_with_matches: usize,
}

/// Search every file of `scope` under `base`: what [`search_all`] found,
/// and when nothing matched, [`explain_none`]'s note on what the scope
/// left out.
pub fn search_scope(
    query: &Query,
    scope: &Scope,
    base: &WorkspacePath,
    keep: Keep,
) -> Result<(Found, Option<String>), ToolError> {
    let found = search_all(query, scope.files(base)?, keep)?;
    let why_none = if found.total == 0 {
        explain_none(query, scope, base)?
    } else {
        None
    };
    Ok((found, why_none))
}

/// Search `files` (sorted by path), keeping what `keep` says and counting
/// every match. Big searches fan out over the host's cores: the tool must
/// call [`search_share`] first thing in its `call`.
pub fn search_all(query: &Query, files: Vec<FileEntry>, keep: Keep) -> Result<Found, ToolError> {
    let files: Vec<WorkspacePath> = files.into_iter().map(|f| f.path).collect();
    let width = parallel::width();
    if width < 2 || files.len() < FAN_OUT_MIN_FILES {
        return Ok(search_local(query, &files, keep));
    }
    let shares = parallel::deal(files.iter().map(|f| f.shown().to_owned()).collect(), width);
    let parts: Vec<Found> = parallel::fan_out(&shares)?;
    // Each share kept its own first `keep`; the overall first are among them.
    let mut all = Found::default();
    for part in parts {
        all.total += part.total;
        all.files_with_matches += part.files_with_matches;
        all.files.extend(part.files);
    }
    all.files.sort_by(|a, b| a.path.cmp(&b.path));
    all.files = limit(all.files, keep, query.context());
    Ok(all)
}

/// In a run started by [`search_all`]'s fan-out, search this run's share and
/// return the output to hand back; `None` in an ordinary call.
pub fn search_share(query: &Query, ctx: &Context, keep: Keep) -> Option<Result<Output, ToolError>> {
    let share = parallel::share::<Vec<String>>(ctx)?;
    Some(share.and_then(|paths| {
        let files = paths
            .iter()
            .map(|p| resolve(p, ctx))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Output::text("").with_structured(search_local(query, &files, keep)))
    }))
}

fn search_local(query: &Query, files: &[WorkspacePath], keep: Keep) -> Found {
    let mut found = Found::default();
    let mut kept_lines = 0;
    for path in files {
        let room = match keep {
            Keep::Lines(n) => n.saturating_sub(kept_lines),
            Keep::Files(_) => 0,
        };
        let Some(mut f) = query.search(path, room) else {
            continue;
        };
        found.total += f.matches;
        found.files_with_matches += 1;
        let kept = f.lines.iter().filter(|l| l.is_match).count();
        kept_lines += kept;
        match keep {
            Keep::Lines(_) if kept > 0 => found.files.push(f),
            Keep::Files(n) if found.files.len() < n => {
                f.lines.clear();
                found.files.push(f);
            }
            _ => {}
        }
    }
    found.files = limit(found.files, keep, query.context());
    found
}

/// Apply `keep` to files sorted by path: the first files, or the first
/// matching lines across files with their context (`context` lines after
/// the last one kept, none before a dropped one), dropping files left
/// with no kept line.
fn limit(mut files: Vec<FileMatches>, keep: Keep, context: usize) -> Vec<FileMatches> {
    let n = match keep {
        Keep::Files(n) => {
            files.truncate(n);
            return files;
        }
        Keep::Lines(n) => n,
    };
    let mut left = n;
    files
        .into_iter()
        .filter_map(|mut f| {
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
            (shown > 0).then_some(f)
        })
        .collect()
}

/// Lines as `path:N:text` (matches) and `path-N-text` (context). With
/// `context` above 0, `--` separates groups that are not adjacent, as
/// `grep -C` prints them, whether or not any context line exists.
pub fn format_lines(found: &Found, context: usize) -> String {
    let mut out = String::new();
    let mut last: Option<(&str, u64)> = None;
    for file in &found.files {
        for line in &file.lines {
            if context > 0
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

/// How many matches, in how many files, one reason for leaving files out
/// hid, and whether the count stopped at the budget.
#[derive(Debug, Default)]
struct Tally {
    matches: usize,
    files: usize,
    unchecked: usize,
}

/// Why a content search found nothing, when files it skipped would have
/// matched: "12 matches exist in 3 ignored files — set respect_ignore=false
/// to search them". It searches at most 2,000 skipped files and 64 MiB of
/// them; past that the counts are "at least".
pub fn explain_none(
    query: &Query,
    scope: &Scope,
    base: &WorkspacePath,
) -> Result<Option<String>, ToolError> {
    // Sizes, for the byte budget.
    let scope = Scope {
        metadata: true,
        ..scope.clone()
    };
    let left = scope.left_out(base)?;
    let (mut files_left, mut bytes_left) = (EXPLAIN_MAX_FILES, EXPLAIN_MAX_BYTES);
    Ok(note(&left, "search", |files| {
        let mut tally = Tally::default();
        for (i, f) in files.iter().enumerate() {
            if files_left == 0 || f.size > bytes_left {
                tally.unchecked = files.len() - i;
                break;
            }
            files_left -= 1;
            bytes_left -= f.size;
            let n = query.count(&f.path);
            if n > 0 {
                tally.matches += n;
                tally.files += 1;
            }
        }
        tally
    }))
}

/// Why a search for files by name found none, when files it skipped match:
/// "2 matches exist in 2 ignored files — set respect_ignore=false to
/// include them".
pub fn explain_no_files(scope: &Scope, base: &WorkspacePath) -> Result<Option<String>, ToolError> {
    let left = scope.left_out(base)?;
    Ok(note(&left, "include", |files| Tally {
        matches: files.len(),
        files: files.len(),
        unchecked: 0,
    }))
}

/// The note for every reason that hid matches, counted by `count`.
fn note(
    left: &LeftOut,
    verb: &str,
    mut count: impl FnMut(&[FileEntry]) -> Tally,
) -> Option<String> {
    let plural = |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let mut parts = Vec::new();
    for (files, what, fix) in [
        (&left.ignored, "ignored", "respect_ignore=false"),
        (&left.hidden, "hidden", "hidden=true"),
        (
            &left.hidden_and_ignored,
            "hidden and ignored",
            "both respect_ignore=false and hidden=true",
        ),
    ] {
        let t = count(files);
        let at_least = if t.unchecked > 0 { "at least " } else { "" };
        if t.matches > 0 {
            parts.push(format!(
                "{at_least}{} {} in {at_least}{} {what} {} — set {fix} to {verb} them",
                t.matches,
                plural(t.matches, "match exists", "matches exist"),
                t.files,
                plural(t.files, "file", "files")
            ));
        } else if t.unchecked > 0 {
            parts.push(format!(
                "{} {what} {} not checked (too many to search here) — set {fix} to {verb} them",
                t.unchecked,
                plural(t.unchecked, "file was", "files were")
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The text for a content search: the lines ([`format_lines`], with the
/// query's context) and a note when `max_results` cut them, or "0 matches"
/// with `why_none` (see [`explain_none`]).
pub fn describe_lines(
    query: &Query,
    pattern: &str,
    found: &Found,
    max_results: usize,
    why_none: Option<String>,
) -> String {
    if found.total == 0 {
        return none_found(pattern, why_none);
    }
    let mut text = format_lines(found, query.context());
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
        found.total, found.files_with_matches
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
    /// The results by file, sorted by path then line: at most `max_results`
    /// matching lines (with their context), or `max_results` files without
    /// lines when the tool lists files.
    pub results: Vec<FileMatches>,
}

impl Report {
    /// The report for `found`, which was kept as `keep` says.
    pub fn new(found: Found, keep: Keep) -> Self {
        let (truncated, results) = match keep {
            Keep::Files(n) => (
                found.files_with_matches > n,
                found.files.into_iter().take(n).collect(),
            ),
            Keep::Lines(n) => (found.total > n, found.files),
        };
        Self {
            total_matches: found.total,
            files_with_matches: found.files_with_matches,
            truncated,
            results,
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use toolhost_sdk::Context;

    fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, Context) {
        let ws = tempfile::tempdir().unwrap();
        for (f, text) in files {
            let p = ws.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let ctx = Context::for_workspace(ws.path().display().to_string());
        (ws, ctx)
    }

    fn scope() -> Scope {
        Scope {
            respect_ignore: true,
            hidden: false,
            glob: None,
            recursive: true,
            metadata: false,
        }
    }

    fn search(ctx: &Context, query: &Query, keep: Keep) -> Found {
        let base = resolve(".", ctx).unwrap();
        search_all(query, scope().files(&base).unwrap(), keep).unwrap()
    }

    // Regression: every matching file stayed in `Found::files` (with no
    // lines) after the limit, so each share sent them all back.
    #[test]
    fn only_kept_files_are_returned_and_every_match_is_counted() {
        let files: Vec<(String, &str)> = (0..10)
            .map(|i| (format!("f{i}.txt"), "needle\nneedle\n"))
            .collect();
        let files: Vec<(&str, &str)> = files.iter().map(|(f, t)| (f.as_str(), *t)).collect();
        let (_ws, ctx) = workspace(&files);
        let query = Query::literal("needle", true).unwrap();
        let found = search(&ctx, &query, Keep::Lines(3));
        assert_eq!((found.total, found.files_with_matches), (20, 10));
        assert_eq!(
            found
                .files
                .iter()
                .map(|f| (f.path.as_str(), f.lines.len()))
                .collect::<Vec<_>>(),
            [("f0.txt", 2), ("f1.txt", 1)]
        );
        let found = search(&ctx, &query, Keep::Files(4));
        assert_eq!((found.total, found.files_with_matches), (20, 10));
        assert_eq!(found.files.len(), 4);
        assert!(
            found
                .files
                .iter()
                .all(|f| f.lines.is_empty() && f.matches == 2)
        );
        let report = Report::new(found, Keep::Files(4));
        assert!(report.truncated);
        assert_eq!(report.results.len(), 4);
    }

    // Regression: `--` was printed only when some context line existed.
    #[test]
    fn group_separators_follow_the_context_setting() {
        let (_ws, ctx) = workspace(&[("a.txt", "needle\n"), ("b.txt", "needle\n")]);
        let with_context = Query::literal("needle", true).unwrap().with_context(1);
        let found = search(&ctx, &with_context, Keep::Lines(10));
        assert_eq!(
            format_lines(&found, with_context.context()),
            "a.txt:1:needle\n--\nb.txt:1:needle\n"
        );
        assert_eq!(format_lines(&found, 0), "a.txt:1:needle\nb.txt:1:needle\n");
    }

    #[test]
    fn nothing_found_names_ignored_hidden_and_both() {
        let (_ws, ctx) = workspace(&[
            (".gitignore", ".venv/\nbuild/\n"),
            ("src/a.rs", "nothing"),
            ("build/out.rs", "needle needle\nneedle\n"),
            (".env", "needle\n"),
            (".venv/lib.py", "needle\n"),
        ]);
        let base = resolve(".", &ctx).unwrap();
        let query = Query::literal("needle", true).unwrap();
        assert_eq!(
            explain_none(&query, &scope(), &base).unwrap().unwrap(),
            "2 matches exist in 1 ignored file — set respect_ignore=false to search them; \
             1 match exists in 1 hidden file — set hidden=true to search them; \
             1 match exists in 1 hidden and ignored file — set both respect_ignore=false and \
             hidden=true to search them"
        );
        let by_name = Scope {
            glob: Some(Glob::new("*.py").unwrap()),
            ..scope()
        };
        assert_eq!(
            explain_no_files(&by_name, &base).unwrap().unwrap(),
            "1 match exists in 1 hidden and ignored file — set both respect_ignore=false and \
             hidden=true to include them"
        );
    }

    // Regression: explaining "0 matches" searched every ignored file, with
    // no bound.
    #[test]
    fn explaining_stops_at_its_budget() {
        let names: Vec<String> = (0..EXPLAIN_MAX_FILES + 5)
            .map(|i| format!("build/f{i:05}.txt"))
            .collect();
        let mut files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "needle\n")).collect();
        files.push((".gitignore", "build/\n"));
        let (_ws, ctx) = workspace(&files);
        let base = resolve(".", &ctx).unwrap();
        let query = Query::literal("needle", true).unwrap();
        let with_hidden = Scope {
            hidden: true,
            ..scope()
        };
        assert_eq!(
            explain_none(&query, &with_hidden, &base).unwrap().unwrap(),
            "at least 2000 matches exist in at least 2000 ignored files — set \
             respect_ignore=false to search them"
        );
    }
}
