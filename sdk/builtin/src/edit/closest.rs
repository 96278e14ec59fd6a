//! Find the region of a text that most resembles a snippet that was not
//! found in it, and say how the two differ.
//!
//! Lines are compared after normalising whitespace and quotes, so a
//! re-indented or re-quoted snippet still finds its region. Windows are
//! scored by how many of their lines equal the snippet's (found through an
//! index of normalised lines, so large files stay fast); when no line is
//! equal, the line sharing the most words with the snippet's first line
//! anchors the region.

use std::collections::HashMap;

/// The region of a text closest to a snippet.
#[derive(Debug, Clone, PartialEq)]
pub struct Closest {
    /// 1-based first line of the region.
    pub start_line: usize,
    /// The region's lines, as they are in the text.
    pub lines: Vec<String>,
    /// How alike they are, in words (e.g. "3 of 4 lines match apart from whitespace").
    pub likeness: String,
    /// What differs (e.g. "indentation: the file indents with tabs").
    pub differences: Vec<String>,
}

impl Closest {
    /// 1-based last line of the region.
    pub fn end_line(&self) -> usize {
        self.start_line + self.lines.len().saturating_sub(1)
    }

    /// How alike, and what differs, in one phrase.
    pub fn summary(&self) -> String {
        if self.differences.is_empty() {
            self.likeness.clone()
        } else {
            format!(
                "{}; it differs in {}",
                self.likeness,
                self.differences.join("; ")
            )
        }
    }

    /// The region numbered like `read_file` shows it.
    pub fn numbered(&self) -> String {
        self.lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{:>6}\t{l}\n", self.start_line + i))
            .collect()
    }
}

/// The region of `text` most like `snippet`, if any line resembles it.
pub fn closest_region(text: &str, snippet: &str) -> Option<Closest> {
    let lines: Vec<&str> = text.lines().collect();
    let wanted: Vec<&str> = snippet.trim_end_matches(['\n', '\r']).lines().collect();
    if lines.is_empty() || wanted.is_empty() {
        return None;
    }
    let k = wanted.len().min(lines.len());
    let (start, equal) = best_window(&lines, &wanted, k).or_else(|| anchor(&lines, &wanted))?;
    let region = &lines[start..(start + k).min(lines.len())];
    // `lines()` drops the CR of a CRLF ending; these keep it, to tell
    // endings apart.
    let raw_region: Vec<&str> = text.split('\n').skip(start).take(region.len()).collect();
    let raw_wanted: Vec<&str> = snippet.split('\n').collect();
    Some(Closest {
        start_line: start + 1,
        lines: region
            .iter()
            .map(|l| l.trim_end_matches('\r').to_owned())
            .collect(),
        likeness: if equal > 0 {
            format!(
                "{equal} of {} lines match apart from whitespace and quotes",
                wanted.len()
            )
        } else {
            "no line matches exactly; this is the most similar place".to_owned()
        },
        differences: differences(region, &wanted, &raw_region, &raw_wanted),
    })
}

/// Whitespace collapsed, ends trimmed, every kind of quote made `"`.
fn normalise(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for word in line.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().map(|c| match c {
            '\'' | '`' | '‘' | '’' | '“' | '”' => '"',
            c => c,
        }));
    }
    out
}

/// The window start with the most lines equal (after normalising) to the
/// snippet's, and that count; none if no line is equal.
fn best_window(lines: &[&str], wanted: &[&str], k: usize) -> Option<(usize, usize)> {
    let mut index: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        let n = normalise(line);
        if !n.is_empty() {
            index.entry(n).or_default().push(i);
        }
    }
    let windows = lines.len() - k + 1;
    let mut score = vec![0usize; windows];
    for (j, w) in wanted.iter().take(k).enumerate() {
        for &i in index.get(&normalise(w)).map_or(&[][..], Vec::as_slice) {
            if i >= j && i - j < windows {
                score[i - j] += 1;
            }
        }
    }
    let (start, best) = score
        .iter()
        .enumerate()
        .max_by_key(|&(i, s)| (*s, std::cmp::Reverse(i)))?;
    (*best > 0).then_some((start, *best))
}

/// When no line is equal: the line sharing the most words with the
/// snippet's first non-blank line.
fn anchor(lines: &[&str], wanted: &[&str]) -> Option<(usize, usize)> {
    let first = wanted.iter().find(|l| !l.trim().is_empty())?;
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| w.len() > 1)
            .map(str::to_lowercase)
            .collect()
    };
    let target = words(first);
    if target.is_empty() {
        return None;
    }
    let (best, shared) = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let have = words(l);
            (i, target.iter().filter(|w| have.contains(w)).count())
        })
        .max_by_key(|&(i, n)| (n, std::cmp::Reverse(i)))?;
    let offset = wanted.iter().position(|l| l == first).unwrap_or(0);
    // Only worth showing when at least half the words are shared.
    (shared * 2 >= target.len()).then(|| {
        (
            best.saturating_sub(offset)
                .min(lines.len().saturating_sub(wanted.len())),
            0,
        )
    })
}

/// Name the kinds of difference between a region and the snippet (`raw_*`:
/// the same lines with their CRs).
fn differences(
    region: &[&str],
    wanted: &[&str],
    raw_region: &[&str],
    raw_wanted: &[&str],
) -> Vec<String> {
    let mut out = Vec::new();
    if region.len() != wanted.len() {
        out.push(format!(
            "length (the given text has {} lines but the file only has {} from here)",
            wanted.len(),
            region.len()
        ));
    }
    let pairs: Vec<(&str, &str)> = region
        .iter()
        .map(|l| l.trim_end_matches('\r'))
        .zip(wanted.iter().map(|l| l.trim_end_matches('\r')))
        .collect();
    let all = |f: &dyn Fn(&str, &str) -> bool| pairs.iter().all(|(a, b)| f(a, b));
    if all(&|a, b| a == b) {
        // Only the line endings can differ: the text was not found as given.
        if region.len() == wanted.len() {
            out.push(endings(raw_region, raw_wanted));
        }
        return out;
    }
    if all(&|a, b| a.trim_end() == b.trim_end()) {
        out.push("trailing whitespace".to_owned());
    } else if all(&|a, b| a.trim() == b.trim()) {
        out.push(format!("indentation ({})", indent_style(region)));
    } else if all(&|a, b| normalise(a) == normalise(b)) {
        let quotes = |s: &str| {
            s.chars()
                .filter(|c| "'\"`‘’“”".contains(*c))
                .collect::<String>()
        };
        if all(&|a, b| quotes(a) == quotes(b)) {
            out.push("whitespace inside lines".to_owned());
        } else {
            out.push("quotes (' vs \" vs `, or typographic quotes)".to_owned());
        }
    } else if let Some((i, (a, b))) = pairs
        .iter()
        .enumerate()
        .find(|(_, (a, b))| normalise(a) != normalise(b))
    {
        out.push(format!(
            "the text itself, first at line {}: the file has `{}`, the given text has `{}`",
            i + 1,
            a.trim(),
            b.trim()
        ));
    }
    out
}

/// Which line endings the region and the snippet use, for the message.
fn endings(raw_region: &[&str], raw_wanted: &[&str]) -> String {
    // The snippet's last line has no ending of its own.
    let wanted = &raw_wanted[..raw_wanted.len().saturating_sub(1)];
    let style = |lines: &[&str]| {
        let crlf = lines.iter().filter(|l| l.ends_with('\r')).count();
        match crlf {
            0 => "LF",
            n if n == lines.len() => "CRLF",
            _ => "mixed CRLF and LF",
        }
    };
    let (file, given) = (style(raw_region), style(wanted));
    if file == given {
        "line endings (both mix CRLF and LF, on different lines)".to_owned()
    } else {
        format!("line endings (the file has {file} here, the given text {given})")
    }
}

/// How the region indents, for the message.
fn indent_style(region: &[&str]) -> String {
    let indented = region.iter().find(|l| l.starts_with([' ', '\t']));
    match indented {
        Some(l) if l.starts_with('\t') => "the file indents with tabs".to_owned(),
        Some(l) => format!(
            "the file's first indented line starts with {} spaces",
            l.len() - l.trim_start_matches(' ').len()
        ),
        None => "the file's lines here are not indented".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "use std::io;\n\nfn main() {\n    let x = 'a';\n    println!(\"{x}\");\n}\n";

    #[test]
    fn reindented_snippet_finds_its_region_and_names_indentation() {
        let c =
            closest_region(FILE, "fn main() {\n  let x = 'a';\n  println!(\"{x}\");\n}").unwrap();
        assert_eq!((c.start_line, c.end_line()), (3, 6));
        assert!(c.likeness.starts_with("4 of 4"), "{}", c.likeness);
        assert_eq!(
            c.differences,
            vec!["indentation (the file's first indented line starts with 4 spaces)"]
        );
        assert!(c.numbered().starts_with("     3\tfn main() {\n"));
    }

    #[test]
    fn quotes_and_trailing_whitespace_are_named() {
        let c = closest_region(FILE, "    let x = \"a\";").unwrap();
        assert_eq!(c.start_line, 4);
        assert!(
            c.differences[0].starts_with("quotes"),
            "{:?}",
            c.differences
        );
        let c = closest_region(FILE, "    let x = 'a';   ").unwrap();
        assert_eq!(c.differences, vec!["trailing whitespace"]);
    }

    // Regression: when only CRs differed, no difference was named at all.
    #[test]
    fn line_endings_are_named_when_only_they_differ() {
        let c = closest_region("x\r\ny\nz\n", "x\ny\r\nz").unwrap();
        assert_eq!((c.start_line, c.end_line()), (1, 3));
        assert_eq!(
            c.differences,
            vec!["line endings (both mix CRLF and LF, on different lines)"]
        );
        let c = closest_region("a\r\nb\r\nc\r\n", "a\nb").unwrap();
        assert_eq!(
            c.differences,
            vec!["line endings (the file has CRLF here, the given text LF)"]
        );
    }

    #[test]
    fn different_text_is_anchored_on_shared_words() {
        let c = closest_region(FILE, "    let x = 'b';").unwrap();
        assert_eq!(c.start_line, 4);
        assert!(
            c.differences[0].contains("first at line 1"),
            "{:?}",
            c.differences
        );
        assert!(closest_region(FILE, "completely unrelated words").is_none());
    }
}
