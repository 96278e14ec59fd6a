//! Parse unified diffs (`diff -u`, `git diff`): `---`/`+++` headers,
//! `/dev/null` for created and deleted files, `@@` hunks, and
//! `\ No newline at end of file` markers.
//!
//! A CR before a line's LF is part of the line (a file with mixed endings
//! keeps them), unless every line of the patch has one: then the patch
//! itself travelled with CRLF endings and they are dropped. The caller
//! drops them for a file whose every line ends in CRLF
//! ([`Hunk::without_cr`]).

/// The changes to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// True when `---`/`+++` headers came first (false for bare hunks).
    pub headers: bool,
    /// The old path (`None` for `/dev/null`: the file is created).
    pub old_path: Option<String>,
    /// The new path (`None` for `/dev/null`: the file is deleted).
    pub new_path: Option<String>,
    /// The hunks, in order.
    pub hunks: Vec<Hunk>,
}

/// One `@@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@ ... @@` line, for messages.
    pub header: String,
    /// 1-based first old line (0 when the old side is empty).
    pub old_start: usize,
    /// The body.
    pub lines: Vec<Line>,
    /// The old side's last line had no newline.
    pub old_no_newline: bool,
    /// The new side's last line has no newline.
    pub new_no_newline: bool,
}

/// A body line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Unchanged.
    Context(String),
    /// Removed.
    Remove(String),
    /// Added.
    Add(String),
}

impl Hunk {
    /// The lines the file must contain: context and removed lines.
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(t) | Line::Remove(t) => Some(t.as_str()),
                Line::Add(_) => None,
            })
            .collect()
    }

    /// The hunk with one CR dropped from the end of every line, for a file
    /// whose text was decoded from all-CRLF to LF.
    pub fn without_cr(&self) -> Self {
        let strip = |t: &String| t.strip_suffix('\r').unwrap_or(t).to_owned();
        Self {
            lines: self
                .lines
                .iter()
                .map(|l| match l {
                    Line::Context(t) => Line::Context(strip(t)),
                    Line::Remove(t) => Line::Remove(strip(t)),
                    Line::Add(t) => Line::Add(strip(t)),
                })
                .collect(),
            ..self.clone()
        }
    }

    /// The lines that replace them: context and added lines.
    #[cfg(test)]
    pub fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(t) | Line::Add(t) => Some(t.as_str()),
                Line::Remove(_) => None,
            })
            .collect()
    }
}

/// Why a patch could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line of the patch.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "patch line {}: {}", self.line, self.message)
    }
}

/// Parse `patch`. Text before the first header (a commit message, `diff
/// --git` and `index` lines) is skipped. Hunks without any `---`/`+++`
/// header form one file patch with no paths, for the caller to place.
pub fn parse(patch: &str) -> Result<Vec<FilePatch>, ParseError> {
    // The newline ending the last line does not start another (blank) one.
    let body = patch.strip_suffix('\n').unwrap_or(patch);
    let mut lines: Vec<&str> = body.split('\n').collect();
    if lines.iter().all(|l| l.ends_with('\r')) {
        for l in &mut lines {
            *l = &l[..l.len() - 1];
        }
    }
    let mut files: Vec<FilePatch> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(old) = line.strip_prefix("--- ")
            && let Some(new) = lines.get(i + 1).and_then(|l| l.strip_prefix("+++ "))
        {
            files.push(FilePatch {
                headers: true,
                old_path: header_path(old, "a/"),
                new_path: header_path(new, "b/"),
                hunks: Vec::new(),
            });
            i += 2;
        } else if line.starts_with("@@ ") {
            if files.is_empty() {
                files.push(FilePatch {
                    headers: false,
                    old_path: None,
                    new_path: None,
                    hunks: Vec::new(),
                });
            }
            let (hunk, next) = parse_hunk(&lines, i)?;
            files.last_mut().expect("pushed above").hunks.push(hunk);
            i = next;
        } else {
            i += 1;
        }
    }
    if files.is_empty() {
        return Err(ParseError {
            line: 1,
            message: "no `--- a/PATH` / `+++ b/PATH` header and no `@@` hunk found; give a \
                      unified diff such as `diff -u` or `git diff` prints"
                .to_owned(),
        });
    }
    if let Some(f) = files.iter().find(|f| f.hunks.is_empty()) {
        let name = f
            .new_path
            .as_ref()
            .or(f.old_path.as_ref())
            .map_or("?", String::as_str);
        return Err(ParseError {
            line: 1,
            message: format!("the patch for `{name}` has no `@@` hunk"),
        });
    }
    Ok(files)
}

/// The path of a `---`/`+++` line: a timestamp after a tab dropped, `a/` or
/// `b/` removed, `/dev/null` as `None`.
fn header_path(text: &str, prefix: &str) -> Option<String> {
    let path = text.split('\t').next().unwrap_or(text).trim_end();
    let path = path
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(path);
    if path == "/dev/null" {
        return None;
    }
    Some(path.strip_prefix(prefix).unwrap_or(path).to_owned())
}

/// `-l,s +l,s` of a hunk header; a missing count is 1.
fn ranges(header: &str) -> Option<(usize, usize, usize)> {
    let inner = header.strip_prefix("@@ -")?;
    let (old, rest) = inner.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let parse = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old_start, old_len) = parse(old)?;
    let (_, new_len) = parse(new)?;
    Some((old_start, old_len, new_len))
}

/// Parse the hunk whose header is at `lines[at]`; returns it and the index
/// of the line after it.
fn parse_hunk(lines: &[&str], at: usize) -> Result<(Hunk, usize), ParseError> {
    let header = lines[at].trim_end_matches('\r');
    let (old_start, old_len, new_len) = ranges(header).ok_or_else(|| ParseError {
        line: at + 1,
        message: format!("`{header}` is not a hunk header like `@@ -12,7 +12,8 @@`"),
    })?;
    let mut hunk = Hunk {
        header: header.to_owned(),
        old_start,
        lines: Vec::new(),
        old_no_newline: false,
        new_no_newline: false,
    };
    let (mut old_seen, mut new_seen) = (0, 0);
    let mut i = at + 1;
    while old_seen < old_len || new_seen < new_len {
        let Some(&line) = lines.get(i) else {
            return Err(ParseError {
                line: at + 1,
                message: format!(
                    "hunk `{header}` ends early: it announces {old_len} old and {new_len} new \
                     lines but has {old_seen} and {new_seen}"
                ),
            });
        };
        // The first character, whole: a line may start with any one.
        let (kind, text) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
        let parsed = match kind {
            " " | "" => Line::Context(text.to_owned()),
            // A blank context line whose space was trimmed, before its CR.
            "\r" if text.is_empty() => Line::Context(line.to_owned()),
            "-" => Line::Remove(text.to_owned()),
            "+" => Line::Add(text.to_owned()),
            "\\" => {
                mark_no_newline(&mut hunk);
                i += 1;
                continue;
            }
            _ => {
                return Err(ParseError {
                    line: i + 1,
                    message: format!(
                        "hunk `{header}` has {old_seen} of {old_len} old and {new_seen} of \
                         {new_len} new lines, then `{line}`, which is not a body line (they \
                         start with ' ', '-' or '+')"
                    ),
                });
            }
        };
        match parsed {
            Line::Context(_) => {
                old_seen += 1;
                new_seen += 1;
            }
            Line::Remove(_) => old_seen += 1,
            Line::Add(_) => new_seen += 1,
        }
        hunk.lines.push(parsed);
        i += 1;
    }
    if old_seen != old_len || new_seen != new_len {
        return Err(ParseError {
            line: at + 1,
            message: format!(
                "hunk `{header}` announces {old_len} old and {new_len} new lines but has \
                 {old_seen} and {new_seen}"
            ),
        });
    }
    // A marker right after the last body line.
    while lines.get(i).is_some_and(|l| l.starts_with('\\')) {
        mark_no_newline(&mut hunk);
        i += 1;
    }
    Ok((hunk, i))
}

/// `\ No newline at end of file` applies to the line before it.
fn mark_no_newline(hunk: &mut Hunk) {
    match hunk.lines.last() {
        Some(Line::Remove(_)) => hunk.old_no_newline = true,
        Some(Line::Add(_)) => hunk.new_no_newline = true,
        Some(Line::Context(_)) => {
            hunk.old_no_newline = true;
            hunk.new_no_newline = true;
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_line_starting_with_a_wide_character_is_refused_not_a_panic() {
        // Found by the fuzz target apply_patch: the first byte was cut off
        // a two-byte character.
        let e = parse("@@ -1,3 +1,3 @@\n a\n-b\n\u{7bd}\n c\n").unwrap_err();
        assert!(e.message.contains("not a body line"), "{e}");
    }

    #[test]
    fn parses_headers_hunks_and_markers() {
        let patch = "diff --git a/src/x.rs b/src/x.rs\nindex 1..2 100644\n--- a/src/x.rs\t2024-01-01\n+++ b/src/x.rs\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n";
        let files = parse(patch).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].old_path.as_deref(), Some("src/x.rs"));
        let h = &files[0].hunks[0];
        assert_eq!(h.old_lines(), vec!["a", "b"]);
        assert_eq!(h.new_lines(), vec!["a", "c"]);
        assert!(h.old_no_newline && h.new_no_newline);
        assert_eq!(files[1].old_path, None);
        assert_eq!(files[1].new_path.as_deref(), Some("new.txt"));
        assert_eq!(files[1].hunks[0].new_lines(), vec!["hello"]);
    }

    #[test]
    fn headerless_hunks_and_blank_context() {
        let files = parse("@@ -3,3 +3,3 @@\n x\n\n-y\n+z\n").unwrap();
        assert_eq!(files[0].old_path, None);
        assert_eq!(files[0].hunks[0].old_lines(), vec!["x", "", "y"]);
    }

    // Regression: every line lost its CR, so lines added to a file with
    // mixed endings lost theirs.
    #[test]
    fn a_cr_is_part_of_the_line_unless_the_whole_patch_has_them() {
        let files = parse("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\r\n-b\n+c\r\n").unwrap();
        let h = &files[0].hunks[0];
        assert_eq!(h.old_lines(), vec!["a\r", "b"]);
        assert_eq!(h.new_lines(), vec!["a\r", "c\r"]);
        assert_eq!(h.without_cr().new_lines(), vec!["a", "c"]);
        let files = parse("--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n").unwrap();
        assert_eq!(files[0].new_path.as_deref(), Some("x"));
        assert_eq!(files[0].hunks[0].new_lines(), vec!["b"]);
        let files = parse("@@ -1 +1 @@\r\n-a\n+b\n").unwrap();
        assert!(!files[0].headers);
        assert_eq!(files[0].hunks[0].header, "@@ -1 +1 @@");
    }

    #[test]
    fn malformed_patches_say_where() {
        let err = parse("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n").unwrap_err();
        assert!(err.message.contains("ends early"), "{err}");
        let err = parse("--- a/x\n+++ b/x\n@@ -1 +1 @@\n*junk\n").unwrap_err();
        assert_eq!(err.line, 4);
        assert!(parse("just words").is_err());
        assert!(
            parse("--- a/x\n+++ b/x\n")
                .unwrap_err()
                .message
                .contains("no `@@` hunk")
        );
    }
}
