//! Apply a file's hunks to its text, in memory. Each hunk is placed by
//! trying, in order: exact at its stated line, exact anywhere (nearest the
//! stated line), ignoring trailing whitespace, then ignoring leading and
//! trailing whitespace. Hunks keep their order and never overlap.

use crate::parse::Hunk;
use toolhost_builtin::edit::closest_region;
use toolhost_sdk::{JsonSchema, Serialize};

/// How loosely a hunk had to match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fuzz {
    /// Exactly, at the stated line.
    Exact,
    /// Exactly, at another line.
    Offset,
    /// Ignoring trailing whitespace.
    TrailingWhitespace,
    /// Ignoring leading and trailing whitespace.
    Whitespace,
}

impl Fuzz {
    fn same(self, file: &str, hunk: &str) -> bool {
        match self {
            Self::Exact | Self::Offset => file == hunk,
            Self::TrailingWhitespace => file.trim_end() == hunk.trim_end(),
            Self::Whitespace => file.trim() == hunk.trim(),
        }
    }

    /// For reports.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Offset => "exact, at another line",
            Self::TrailingWhitespace => "ignoring trailing whitespace",
            Self::Whitespace => "ignoring leading and trailing whitespace",
        }
    }
}

/// Where a hunk went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Placed {
    /// 1-based hunk number within its file.
    pub hunk: usize,
    /// 1-based line of the original file where it applied.
    pub line: usize,
    /// Lines away from where the hunk said (positive: later).
    pub offset: i64,
    /// How loosely it matched.
    pub fuzz: Fuzz,
}

/// Apply `hunks` to `text` (LF line endings). Returns the new text and
/// where each hunk went, or a message naming the hunk that does not apply.
pub fn apply(text: &str, hunks: &[Hunk]) -> Result<(String, Vec<Placed>), String> {
    let ends_with_newline = text.is_empty() || text.ends_with('\n');
    let lines: Vec<&str> = if text.is_empty() {
        Vec::new()
    } else {
        text.strip_suffix('\n')
            .unwrap_or(text)
            .split('\n')
            .collect()
    };
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut placed = Vec::with_capacity(hunks.len());
    let (mut next, mut shift, mut final_newline) = (0usize, 0i64, ends_with_newline);
    for (n, hunk) in hunks.iter().enumerate() {
        let old = hunk.old_lines();
        // A hunk with no old lines inserts after line `old_start`.
        let stated = if old.is_empty() {
            hunk.old_start
        } else {
            hunk.old_start.saturating_sub(1)
        };
        let expected = (stated as i64 + shift).max(0) as usize;
        let Some((at, fuzz)) = find(&lines, &old, next, expected) else {
            return Err(not_applied(text, hunk, n + 1, hunks.len()));
        };
        let fuzz = if fuzz == Fuzz::Exact && at != expected {
            Fuzz::Offset
        } else {
            fuzz
        };
        shift += at as i64 - expected as i64;
        out.extend_from_slice(&lines[next..at]);
        // Context lines keep the file's own text (its whitespace).
        let mut file_line = at;
        for line in &hunk.lines {
            match line {
                crate::parse::Line::Context(_) => {
                    out.push(lines[file_line]);
                    file_line += 1;
                }
                crate::parse::Line::Remove(_) => file_line += 1,
                crate::parse::Line::Add(t) => out.push(t),
            }
        }
        next = at + old.len();
        if next == lines.len() && (hunk.new_no_newline || hunk.old_no_newline || !ends_with_newline)
        {
            final_newline = !hunk.new_no_newline;
        }
        placed.push(Placed {
            hunk: n + 1,
            line: at + 1,
            offset: at as i64 - expected as i64,
            fuzz,
        });
    }
    out.extend_from_slice(&lines[next..]);
    let mut result = out.join("\n");
    if final_newline && !out.is_empty() {
        result.push('\n');
    }
    Ok((result, placed))
}

/// The start of the nearest match of `old` at or after `from`, trying each
/// matching rule in turn.
fn find(lines: &[&str], old: &[&str], from: usize, expected: usize) -> Option<(usize, Fuzz)> {
    if old.is_empty() {
        return (expected >= from && expected <= lines.len()).then_some((expected, Fuzz::Exact));
    }
    let last = lines.len().checked_sub(old.len())?;
    if from > last {
        return None;
    }
    let fits = |at: usize, fuzz: Fuzz| old.iter().zip(&lines[at..]).all(|(h, f)| fuzz.same(f, h));
    if (from..=last).contains(&expected) && fits(expected, Fuzz::Exact) {
        return Some((expected, Fuzz::Exact));
    }
    let expected = expected.clamp(from, last);
    for fuzz in [Fuzz::Exact, Fuzz::TrailingWhitespace, Fuzz::Whitespace] {
        let span = (expected - from).max(last - expected);
        for d in 0..=span {
            let candidates = [
                expected.checked_sub(d),
                expected.checked_add(d).filter(|_| d > 0),
            ];
            for at in candidates
                .into_iter()
                .flatten()
                .filter(|a| (from..=last).contains(a))
            {
                if fits(at, fuzz) {
                    return Some((at, fuzz));
                }
            }
        }
    }
    None
}

/// The message for a hunk that matches nowhere: the hunk's expected lines
/// and the closest region of the file.
fn not_applied(text: &str, hunk: &Hunk, n: usize, total: usize) -> String {
    let old = hunk.old_lines();
    let expected: String = old.iter().map(|l| format!("  {l}\n")).collect();
    let mut msg = format!(
        "hunk {n} of {total} ({}) does not apply: its {} context/removed lines were not found \
         in order after the previous hunk, even ignoring whitespace. It expects:\n{expected}",
        hunk.header,
        old.len()
    );
    match closest_region(text, &old.join("\n")) {
        Some(c) => msg.push_str(&format!(
            "The closest region is lines {}-{} ({}):\n{}",
            c.start_line,
            c.end_line(),
            c.summary(),
            c.numbered()
        )),
        None => msg.push_str(
            "No region of the file looks like it; read the file and regenerate the patch.\n",
        ),
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn run(text: &str, patch: &str) -> Result<(String, Vec<Placed>), String> {
        apply(text, &parse(patch).unwrap()[0].hunks)
    }

    #[test]
    fn exact_then_offset_then_whitespace() {
        let text = "a\nb\nc\nd\ne\n";
        let (out, p) = run(text, "@@ -2,2 +2,2 @@\n b\n-c\n+C\n").unwrap();
        assert_eq!(out, "a\nb\nC\nd\ne\n");
        assert_eq!((p[0].line, p[0].fuzz), (2, Fuzz::Exact));
        let (_, p) = run(text, "@@ -1,2 +1,2 @@\n d\n-e\n+E\n").unwrap();
        assert_eq!((p[0].line, p[0].offset, p[0].fuzz), (4, 3, Fuzz::Offset));
        let (out, p) = run("x  \ny\n", "@@ -1,2 +1,2 @@\n x\n-y\n+z\n").unwrap();
        assert_eq!(out, "x  \nz\n");
        assert_eq!(p[0].fuzz, Fuzz::TrailingWhitespace);
        let (_, p) = run("    x\ny\n", "@@ -1,2 +1,2 @@\n x\n-y\n+z\n").unwrap();
        assert_eq!(p[0].fuzz, Fuzz::Whitespace);
    }

    #[test]
    fn final_newline_follows_the_markers() {
        let (out, _) = run(
            "a\nb",
            "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n",
        )
        .unwrap();
        assert_eq!(out, "a\nc\n");
        let (out, _) = run(
            "a\nb\n",
            "@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n",
        )
        .unwrap();
        assert_eq!(out, "a\nc");
        let (out, _) = run("a\nb", "@@ -1,1 +1,1 @@\n-a\n+A\n").unwrap();
        assert_eq!(out, "A\nb", "untouched end keeps its missing newline");
    }

    #[test]
    fn pure_insertions_and_failures() {
        let (out, _) = run("a\nb\n", "@@ -1,0 +2,1 @@\n+x\n").unwrap();
        assert_eq!(out, "a\nx\nb\n");
        let err = run("a\nb\nc\n", "@@ -1,2 +1,2 @@\n a\n-zzz\n+y\n").unwrap_err();
        assert!(
            err.contains("hunk 1 of 1") && err.contains("closest region is lines 1-"),
            "{err}"
        );
    }
}
