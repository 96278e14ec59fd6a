//! Exact text replacement for edit tools, with failures a model can act on:
//! no match shows the closest region of the file and what differs (indentation,
//! whitespace, quotes); several matches list their line numbers. Also the
//! unified diff edit tools return.
//!
//! ```
//! use toolhost_builtin::edit::{replace, EditError};
//! let text = "fn a() {}\nfn b() {}\n";
//! let done = replace(text, "fn b() {}", "fn b() { todo() }", false).unwrap();
//! assert_eq!(done.text, "fn a() {}\nfn b() { todo() }\n");
//! assert_eq!(done.lines, vec![2]);
//! assert!(matches!(replace(text, "fn c", "x", false), Err(EditError::NotFound { .. })));
//! ```

mod closest;

pub use closest::{Closest, closest_region};

use crate::text::{TextFile, check_expected_hash, content_hash};
use toolhost_sdk::ToolError;
use toolhost_sdk::fs::{self, WorkspacePath};

/// What [`edit_file`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    /// The unified diff of the change.
    pub diff: String,
    /// The new content hash (what `read_file` would now report).
    pub hash: String,
}

/// Edit the text file at `path`: read it, check `expected_hash`, decode it ([`TextFile`]), let
/// `change` turn its text into the new text, and write the result back
/// atomically in the file's own format (BOM, line endings). If `change`
/// fails, nothing is written.
pub fn edit_file(
    path: &WorkspacePath,
    expected_hash: Option<&str>,
    change: impl FnOnce(&str) -> Result<String, ToolError>,
) -> Result<FileEdit, ToolError> {
    let bytes = fs::read_regular(path)?;
    check_expected_hash(&bytes, expected_hash, path.shown())?;
    let file = TextFile::decode(&bytes, path.shown())?;
    let after = change(&file.text)?;
    let out = file.encode(&after);
    fs::write_atomic(path, &out)?;
    Ok(FileEdit {
        diff: unified_diff(&file.text, &after, path.shown()),
        hash: content_hash(&out),
    })
}

/// A successful replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The new text.
    pub text: String,
    /// 1-based line numbers (in the old text) where the replaced matches start.
    pub lines: Vec<usize>,
}

/// Why a replacement could not be made.
#[derive(Debug, Clone, PartialEq)]
pub enum EditError {
    /// `old_str` is empty.
    EmptyOld,
    /// `old_str` and `new_str` are the same.
    NoChange,
    /// `old_str` does not occur; the closest region, if any looks alike.
    NotFound {
        /// The best candidate.
        closest: Option<Closest>,
    },
    /// `old_str` occurs more than once and `replace_all` is off.
    NotUnique {
        /// 1-based line numbers of every occurrence.
        lines: Vec<usize>,
    },
}

impl EditError {
    /// The message for the model, naming `path`.
    pub fn explain(&self, path: &str) -> String {
        match self {
            Self::EmptyOld => "old_str is empty; give the exact text to replace (to create or \
                rewrite a whole file, use write_file)"
                .to_owned(),
            Self::NoChange => "old_str and new_str are the same; nothing would change".to_owned(),
            Self::NotUnique { lines } => format!(
                "old_str appears {} times in `{path}` (lines {}); add surrounding lines to make it \
                 unique, or set replace_all to replace every occurrence",
                lines.len(),
                join(lines)
            ),
            Self::NotFound { closest: None } => format!(
                "old_str was not found in `{path}`, and no region looks like it; read the file \
                 and copy the text exactly"
            ),
            Self::NotFound { closest: Some(c) } => format!(
                "old_str was not found in `{path}`. The closest region is lines {}-{} ({}):\n{}\
                 Copy old_str exactly from the file, including whitespace.",
                c.start_line,
                c.end_line(),
                c.summary(),
                c.numbered()
            ),
        }
    }

    /// The matching [`ToolError`]: `invalid_input` for bad arguments, `retry`
    /// for a text the model can correct.
    pub fn into_tool_error(self, path: &str) -> ToolError {
        match self {
            Self::EmptyOld | Self::NoChange => ToolError::invalid_input(self.explain(path)),
            Self::NotFound { .. } | Self::NotUnique { .. } => ToolError::retry(self.explain(path)),
        }
    }
}

fn join(lines: &[usize]) -> String {
    lines
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Replace `old` with `new` in `text`: exactly one occurrence, or every one
/// with `replace_all`.
///
/// Line endings in `old`/`new` are matched to the text's: `\r\n` from the
/// model matches `\n` in the text and the other way round (for a file with
/// CRLF endings), so a model's choice of endings never makes a match fail.
pub fn replace(text: &str, old: &str, new: &str, replace_all: bool) -> Result<Replaced, EditError> {
    if old.is_empty() {
        return Err(EditError::EmptyOld);
    }
    let variants = ending_variants(text, old, new);
    // Compared as they will be applied: with `\r\n` made `\n`, "a\r\n"
    // and "a\n" are the same text.
    if variants[0].0 == variants[0].1 {
        return Err(EditError::NoChange);
    }
    for (old, new) in variants {
        let starts: Vec<usize> = text.match_indices(old.as_str()).map(|(i, _)| i).collect();
        if starts.is_empty() {
            continue;
        }
        let lines = line_numbers(text, &starts);
        if starts.len() > 1 && !replace_all {
            return Err(EditError::NotUnique { lines });
        }
        return Ok(Replaced {
            text: text.replace(old.as_str(), &new),
            lines,
        });
    }
    Err(EditError::NotFound {
        closest: closest_region(text, old),
    })
}

/// `old`/`new` as given with LF endings, then with CRLF endings if the text
/// has any.
fn ending_variants(text: &str, old: &str, new: &str) -> Vec<(String, String)> {
    let lf = (old.replace("\r\n", "\n"), new.replace("\r\n", "\n"));
    let mut out = vec![lf.clone()];
    if text.contains("\r\n") && lf.0.contains('\n') {
        out.push((lf.0.replace('\n', "\r\n"), lf.1.replace('\n', "\r\n")));
    }
    out
}

/// 1-based line numbers of byte offsets (sorted ascending).
fn line_numbers(text: &str, offsets: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(offsets.len());
    let (mut line, mut pos) = (1, 0);
    for &offset in offsets {
        line += memchr::memchr_iter(b'\n', &text.as_bytes()[pos..offset]).count();
        pos = offset;
        out.push(line);
    }
    out
}

/// A unified diff of `before` → `after` with 3 lines of context and
/// `a/PATH`/`b/PATH` headers; empty when nothing changed.
///
/// ```
/// let d = toolhost_builtin::edit::unified_diff("a\nb\n", "a\nc\n", "x.txt");
/// assert!(d.starts_with("--- a/x.txt\n+++ b/x.txt\n@@ -1,2 +1,2 @@\n"));
/// assert!(d.contains("-b\n+c\n"));
/// ```
pub fn unified_diff(before: &str, after: &str, path: &str) -> String {
    if before == after {
        return String::new();
    }
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_match_is_required_unless_replace_all() {
        let text = "x = 1\ny = 2\nx = 1\n";
        assert_eq!(
            replace(text, "x = 1", "x = 3", false),
            Err(EditError::NotUnique { lines: vec![1, 3] })
        );
        let done = replace(text, "x = 1", "x = 3", true).unwrap();
        assert_eq!(done.text, "x = 3\ny = 2\nx = 3\n");
        assert_eq!(done.lines, vec![1, 3]);
    }

    #[test]
    fn empty_and_identical_are_invalid_input() {
        assert_eq!(replace("a", "", "b", false), Err(EditError::EmptyOld));
        assert_eq!(replace("a", "a", "a", false), Err(EditError::NoChange));
        assert!(matches!(
            EditError::EmptyOld.into_tool_error("f"),
            ToolError::InvalidInput(_)
        ));
    }

    // Regression: old="a\r\n", new="a\n" passed the check before the
    // endings were matched, then replaced `a\n` with itself: "1
    // replacement" with an empty diff.
    #[test]
    fn arguments_differing_only_in_line_endings_are_no_change() {
        assert_eq!(
            replace("a\nb\n", "a\r\n", "a\n", false),
            Err(EditError::NoChange)
        );
        assert_eq!(
            replace("a\r\nb\r\n", "a\n", "a\r\n", false),
            Err(EditError::NoChange)
        );
    }

    #[test]
    fn line_endings_in_the_arguments_adapt_to_the_text() {
        // Mixed file: the CRLF part matches an LF old_str.
        let text = "a\r\nb\r\nc\nd\n";
        let done = replace(text, "a\nb", "A\nB", false).unwrap();
        assert_eq!(done.text, "A\r\nB\r\nc\nd\n");
        // A CRLF old_str matches LF text.
        let done = replace("a\nb\n", "a\r\nb", "x", false).unwrap();
        assert_eq!(done.text, "x\n");
    }

    #[test]
    fn not_unique_message_lists_lines() {
        let msg = EditError::NotUnique {
            lines: vec![12, 40, 77],
        }
        .explain("f.rs");
        assert!(
            msg.contains("appears 3 times")
                && msg.contains("lines 12, 40, 77")
                && msg.contains("replace_all"),
            "{msg}"
        );
    }
}
