//! Literal and regex search of one file, with context lines, skipping
//! binary files.

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use toolhost_sdk::ToolError;
use toolhost_sdk::fs::WorkspacePath;

/// Longest line text kept; longer lines are cut around the match.
const MAX_LINE_CHARS: usize = 300;
/// Files up to this size are read whole (one host call) and searched in
/// memory; bigger ones are streamed, which keeps the instance's memory small.
const WHOLE_FILE_MAX: u64 = 1 << 20;

/// A compiled search.
#[derive(Debug, Clone)]
pub struct Query {
    matcher: RegexMatcher,
    context: usize,
    multiline: bool,
    /// The searcher, made at the first search and kept for the next: each
    /// one allocates (and zeroes) a 64 KiB buffer, too much per file.
    searcher: RefCell<Option<Searcher>>,
}

/// One line of a result: a matching line or a context line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Line {
    /// 1-based line number.
    pub number: u64,
    /// The text, without its line ending; cut around the match with `…`
    /// when longer than 300 characters.
    pub text: String,
    /// True for a matching line, false for context.
    pub is_match: bool,
}

/// What a search found in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileMatches {
    /// Workspace-relative path.
    pub path: String,
    /// How many lines matched in all.
    pub matches: usize,
    /// The lines kept (up to the limit given to [`Query::search`]), with
    /// their context, in order.
    pub lines: Vec<Line>,
}

impl Query {
    /// Search for `pattern` as literal text.
    pub fn literal(pattern: &str, case_sensitive: bool) -> Result<Self, ToolError> {
        if pattern.is_empty() {
            return Err(ToolError::invalid_input(
                "the pattern is empty; give the text to search for",
            ));
        }
        Self::build(pattern, case_sensitive, false, true)
    }

    /// Search for the regular expression `pattern` (Rust `regex` syntax). With
    /// `multiline`, `.` also matches newlines and matches may span lines.
    pub fn regex(pattern: &str, case_sensitive: bool, multiline: bool) -> Result<Self, ToolError> {
        Self::build(pattern, case_sensitive, multiline, false)
    }

    fn build(
        pattern: &str,
        case_sensitive: bool,
        multiline: bool,
        literal: bool,
    ) -> Result<Self, ToolError> {
        if !literal {
            // Parse first: the matcher's own error quotes its rewritten pattern.
            regex_syntax::Parser::new().parse(pattern).map_err(|e| {
                ToolError::invalid_input(format!("invalid regular expression `{pattern}`:\n{e}"))
            })?;
        }
        let mut builder = RegexMatcherBuilder::new();
        builder
            .case_insensitive(!case_sensitive)
            .fixed_strings(literal)
            .multi_line(true)
            .dot_matches_new_line(multiline);
        if !multiline {
            // Line by line: `$` also matches before `\r\n`, so CRLF files
            // behave; `\n` never matches, which lets the searcher go fast.
            builder.crlf(true).line_terminator(Some(b'\n'));
        }
        let matcher = builder.build(pattern).map_err(|e| {
            ToolError::invalid_input(format!("invalid regular expression `{pattern}`: {e}"))
        })?;
        Ok(Self {
            matcher,
            context: 0,
            multiline,
            searcher: RefCell::new(None),
        })
    }

    /// Keep `lines` lines of context before and after each match.
    pub fn with_context(mut self, lines: usize) -> Self {
        self.context = lines;
        self.searcher = RefCell::new(None);
        self
    }

    /// Lines of context kept around each match.
    pub fn context(&self) -> usize {
        self.context
    }

    /// Search one file, keeping at most `keep` matching lines (all are
    /// counted). `None` when nothing matched, or the file is binary (it has a
    /// NUL byte), unreadable or not a regular file (a FIFO is never opened).
    pub fn search(&self, path: &WorkspacePath, keep: usize) -> Option<FileMatches> {
        let mut kept = self.searcher.borrow_mut();
        let searcher = kept.get_or_insert_with(|| {
            SearcherBuilder::new()
                .line_number(true)
                .before_context(self.context)
                .after_context(self.context)
                .binary_detection(BinaryDetection::quit(b'\0'))
                .multi_line(self.multiline)
                .build()
        });
        let mut sink = Collect {
            matcher: &self.matcher,
            keep,
            found: FileMatches {
                path: path.shown().to_owned(),
                matches: 0,
                lines: Vec::new(),
            },
            binary: false,
        };
        // Small files in one read (one host call in the sandbox), searched
        // in memory; larger ones streamed.
        match toolhost_sdk::fs::read_up_to(path, WHOLE_FILE_MAX).ok()? {
            Some(bytes) if memchr::memchr(0, &bytes).is_some() => return None,
            Some(bytes) => searcher
                .search_slice(&self.matcher, &bytes, &mut sink)
                .ok()?,
            None => searcher.search_path(&self.matcher, path, &mut sink).ok()?,
        }
        (!sink.binary && sink.found.matches > 0).then_some(sink.found)
    }

    /// How many lines of `path` match (0 for binary or unreadable files).
    pub fn count(&self, path: &WorkspacePath) -> usize {
        self.search(path, 0).map_or(0, |f| f.matches)
    }
}

/// Collects matching and context lines.
struct Collect<'m> {
    matcher: &'m RegexMatcher,
    keep: usize,
    found: FileMatches,
    binary: bool,
}

impl Collect<'_> {
    fn full(&self) -> bool {
        self.found.matches > self.keep
    }

    fn push(&mut self, number: u64, bytes: &[u8], is_match: bool) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let at = if is_match {
            self.matcher
                .find(bytes)
                .ok()
                .flatten()
                .map_or(0, |m| m.start())
        } else {
            0
        };
        self.found.lines.push(Line {
            number,
            text: clip(text, at),
            is_match,
        });
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            self.found.matches += 1;
            if !self.full() {
                self.push(first + i as u64, line, true);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        // Context after the last kept match is still wanted; before a match
        // that will not be kept, it is not.
        let after_kept = matches!(ctx.kind(), grep_searcher::SinkContextKind::After)
            && self.found.matches <= self.keep;
        if !self.full() || after_kept {
            self.push(ctx.line_number().unwrap_or(0), ctx.bytes(), false);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Cut a long line to about [`MAX_LINE_CHARS`] characters around byte `at`.
fn clip(text: &str, at: usize) -> String {
    let chars = text.chars().count();
    if chars <= MAX_LINE_CHARS {
        return text.to_owned();
    }
    let at_char = text[..text.floor_char_boundary(at.min(text.len()))]
        .chars()
        .count();
    let start = at_char.saturating_sub(MAX_LINE_CHARS / 3);
    let end = (start + MAX_LINE_CHARS).min(chars);
    let start = end.saturating_sub(MAX_LINE_CHARS);
    let body: String = text.chars().skip(start).take(end - start).collect();
    format!(
        "{}{body}{}",
        if start > 0 { "…" } else { "" },
        if end < chars { "…" } else { "" }
    )
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use toolhost_sdk::{Context, fs::resolve};

    fn file(text: &[u8]) -> (tempfile::TempDir, WorkspacePath) {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("f.txt"), text).unwrap();
        let ctx = Context::for_workspace(ws.path().display().to_string());
        let path = resolve("f.txt", &ctx).unwrap();
        (ws, path)
    }

    #[test]
    fn literal_search_with_context_and_limits() {
        let (_ws, path) = file(b"a\nneedle one\nb\nc\nd\nneedle two\r\ne\n");
        let q = Query::literal("needle", true).unwrap().with_context(1);
        let found = q.search(&path, 10).unwrap();
        assert_eq!(found.matches, 2);
        let lines: Vec<(u64, &str, bool)> = found
            .lines
            .iter()
            .map(|l| (l.number, l.text.as_str(), l.is_match))
            .collect();
        assert_eq!(
            lines,
            [
                (1, "a", false),
                (2, "needle one", true),
                (3, "b", false),
                (5, "d", false),
                (6, "needle two", true),
                (7, "e", false)
            ]
        );
        let first_only = q.search(&path, 1).unwrap();
        assert_eq!(first_only.matches, 2);
        assert_eq!(first_only.lines.iter().filter(|l| l.is_match).count(), 1);
        assert!(
            Query::literal("NEEDLE", true)
                .unwrap()
                .search(&path, 10)
                .is_none()
        );
        assert_eq!(Query::literal("NEEDLE", false).unwrap().count(&path), 2);
        assert_eq!(
            Query::literal("a.b", true).unwrap().count(&path),
            0,
            "literal, not regex"
        );
    }

    #[test]
    fn regex_search_multiline_and_errors() {
        let (_ws, path) = file(b"fn main() {\n    body();\n}\n");
        assert_eq!(
            Query::regex(r"fn \w+\(", true, false).unwrap().count(&path),
            1
        );
        let found = Query::regex(r"\{\n\s+body", true, true)
            .unwrap()
            .search(&path, 10)
            .unwrap();
        assert_eq!(
            found.lines.iter().map(|l| l.number).collect::<Vec<_>>(),
            [1, 2]
        );
        let err = Query::regex("(unclosed", true, false).unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidInput(m) if m.contains("invalid regular expression")),
            "{err:?}"
        );
    }

    #[test]
    fn binary_files_are_skipped_and_long_lines_cut() {
        let (_ws, path) = file(b"needle\n\0binary\n");
        assert!(
            Query::literal("needle", true)
                .unwrap()
                .search(&path, 10)
                .is_none()
        );
        let long = format!("{}needle{}\n", "x".repeat(1000), "y".repeat(1000));
        let (_ws, path) = file(long.as_bytes());
        let line = &Query::literal("needle", true)
            .unwrap()
            .search(&path, 10)
            .unwrap()
            .lines[0];
        assert!(
            line.text.starts_with('…') && line.text.ends_with('…') && line.text.contains("needle"),
            "{}",
            line.text
        );
        assert!(line.text.chars().count() <= MAX_LINE_CHARS + 2);
    }
}
