//! What the memory tools share (as in the TypeScript bot framework): facts appended to a daily log
//! `YYYY-MM-DD.md` in the memory directory, searched with BM25 over every
//! line of every memory file, read back by path and line range.
//!
//! The directory is the host's to grant (`/memory` inside the sandbox):
//! read-write for save_memory, read-only for memory_search and memory_get.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use toolhost_sdk::ToolError;

/// Where the memory directory is mounted in the sandbox.
pub const DIR: &str = crate::contract::path::MEMORY;

/// The longest fact accepted, in characters.
pub const MAX_FACT_CHARS: usize = 2_000;

/// The memory directory, or a clear failure when the host granted none.
pub fn dir(root: &Path) -> Result<&Path, ToolError> {
    toolhost_sdk::fs::granted_dir(root, "the memory tools")
}

/// Why `text` looks like a credential, if it does: an API key, a token, a
/// private key or a password assignment. Such text is never saved. The
/// one detector the host's redaction uses too
/// ([`toolhost_shared::credentials`]).
pub fn credential_kind(text: &str) -> Option<&'static str> {
    toolhost_shared::credentials::kind(text)
}

/// Whether `text` holds a phone number, which memory never keeps.
pub fn has_phone_number(text: &str) -> bool {
    toolhost_shared::credentials::phone_number(text)
}

/// A memory-relative path, checked: relative, no `..`, no empty parts.
pub fn relative(path: &str) -> Result<PathBuf, ToolError> {
    let p = Path::new(path);
    if path.trim().is_empty() {
        return Err(ToolError::invalid_input(
            "`path` is empty; give a memory file such as 2026-11-22.md (memory_search lists them)",
        ));
    }
    if p.is_absolute() {
        return Err(ToolError::invalid_input(format!(
            "`{path}` is absolute; memory paths are relative to the memory directory, like 2026-11-22.md"
        )));
    }
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(ToolError::invalid_input(format!(
            "`{path}` leaves the memory directory (`..`); give a path inside it, like 2026-11-22.md"
        )));
    }
    Ok(p.to_owned())
}

/// Every `.md` file under `root`, as (relative path, text), sorted.
pub fn files(root: &Path) -> Result<Vec<(String, String)>, ToolError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| ToolError::failed(format!("cannot list the memory directory: {e}")))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "md") {
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let rel = path.strip_prefix(root).unwrap_or(&path);
                out.push((rel.to_string_lossy().into_owned(), text));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Hit {
    /// The memory file, relative to the memory directory.
    pub path: String,
    /// Its 1-based line number.
    pub line: usize,
    /// The line (cut to 300 characters).
    pub snippet: String,
    /// The BM25 score (higher is better).
    pub score: f64,
}

fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The lines of `files` that best match `query`, by BM25 (k1 = 1.2,
/// b = 0.75, each non-empty line a document), best first; at most `max`,
/// none below `min_score`.
pub fn search(files: &[(String, String)], query: &str, max: usize, min_score: f64) -> Vec<Hit> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let terms = tokens(query);
    let docs: Vec<(&str, usize, &str, Vec<String>)> = files
        .iter()
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(move |(n, l)| (path.as_str(), n + 1, l, tokens(l)))
        })
        .collect();
    if docs.is_empty() || terms.is_empty() {
        return Vec::new();
    }
    let n = docs.len() as f64;
    let avg = docs.iter().map(|d| d.3.len()).sum::<usize>() as f64 / n;
    let mut df: HashMap<&str, f64> = HashMap::new();
    for term in &terms {
        let count = docs.iter().filter(|d| d.3.contains(term)).count() as f64;
        df.insert(term.as_str(), count);
    }
    let mut hits: Vec<Hit> = docs
        .iter()
        .filter_map(|(path, line, text, toks)| {
            let len = toks.len() as f64;
            let score: f64 = terms
                .iter()
                .map(|t| {
                    let tf = toks.iter().filter(|x| *x == t).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let d = df[t.as_str()];
                    let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg.max(1.0)))
                })
                .sum();
            (score > 0.0 && score >= min_score).then(|| Hit {
                path: (*path).to_owned(),
                line: *line,
                snippet: text.chars().take(300).collect(),
                score: (score * 1000.0).round() / 1000.0,
            })
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.path.cmp(&b.path))
            .then(a.line.cmp(&b.line))
    });
    hits.truncate(max);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_recognised() {
        for text in [
            "my key is sk-proj-abcdefghijklmnopqrstuvwxyz012345",
            "AKIAIOSFODNN7EXAMPLE is the key",
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
            "password: hunter2hunter2",
            "db api_key=abcdef123456",
            "DB_PASSWORD=correcthorse",
            "GITHUB_TOKEN=abcdef123456",
            "AWS_SECRET_ACCESS_KEY=abcdefghij",
            "use github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "postgres://app:s3cretpw@db:5432/app",
            "Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
        ] {
            assert!(credential_kind(text).is_some(), "{text}");
        }
        for text in [
            "The user prefers tabs over spaces",
            "The token budget is 4k",
            "password reset flow lives in auth.rs",
        ] {
            assert_eq!(credential_kind(text), None, "{text}");
        }
    }

    #[test]
    fn paths_stay_inside() {
        assert!(relative("2026-11-22.md").is_ok());
        assert!(relative("notes/a.md").is_ok());
        for bad in ["/etc/passwd", "../x.md", "a/../../b.md", ""] {
            assert!(relative(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bm25_ranks_the_matching_line_first() {
        let files = vec![
            (
                "2026-11-21.md".to_owned(),
                "- 10:00 The user prefers tabs\n- 10:05 Deploys happen on Fridays\n".to_owned(),
            ),
            (
                "2026-11-22.md".to_owned(),
                "- 09:00 Staging database is postgres 16\n\n- 09:10 The user likes short answers\n"
                    .to_owned(),
            ),
        ];
        let hits = search(&files, "which database does staging use", 5, 0.1);
        assert_eq!(hits[0].path, "2026-11-22.md");
        assert_eq!(hits[0].line, 1);
        assert!(hits[0].snippet.contains("postgres"));
        assert!(search(&files, "kubernetes", 5, 0.1).is_empty());
        assert_eq!(search(&files, "the user", 1, 0.0).len(), 1);
    }
}
