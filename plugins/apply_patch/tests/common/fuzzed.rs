//! The property the fuzz target `apply_patch` checks (fuzz/fuzz_targets/
//! includes this file) and `fuzz_corpus.rs` replays on the corpus.

/// The first byte picks what the rest is:
/// - even: a file's text and a patch, NUL-separated. Applying must not
///   panic, and a patch that applies must apply the same way twice.
/// - odd: two texts, NUL-separated. The unified diff between them (as
///   `diff -u` writes it, from `similar`'s edit script) applied to the
///   first must give the second exactly: every hunk, the context,
///   `\ No newline at end of file`.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let (first, second) = rest.split_once('\0').unwrap_or((rest, ""));
    if mode & 1 == 0 {
        let once = apply_patch::apply_text(first, second);
        assert_eq!(
            once,
            apply_patch::apply_text(first, second),
            "not deterministic"
        );
        return;
    }
    // A CR is part of a line, except in a patch whose every line has one
    // (a patch sent with CRLF endings): keep the texts free of CRs so the
    // diff is read as written.
    let (old, new) = (first.replace('\r', ""), second.replace('\r', ""));
    if old == new {
        return;
    }
    let Some(diff) = unified_diff(&old, &new) else {
        return;
    };
    match apply_patch::apply_text(&old, &diff) {
        Ok(text) => assert_eq!(
            text, new,
            "the diff\n{diff}\ndid not turn {old:?} into {new:?}"
        ),
        Err(e) => panic!("the diff\n{diff}\nof {old:?} to {new:?} does not apply: {e}"),
    }
}

/// The unified diff of `old` to `new` with two lines of context, its hunks
/// written here from `similar`'s grouped edit script: similar 2.7's own
/// writer can head a hunk with a wrong range (`@@ -1,5 +20,4 @@` for a
/// first hunk that adds 22 lines). None when the edit script itself is
/// not in order (not a patch to test the applier with).
fn unified_diff(old: &str, new: &str) -> Option<String> {
    use std::fmt::Write as _;
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = String::from("--- a/f\n+++ b/f\n");
    for group in diff.grouped_ops(2) {
        let in_order = group.windows(2).all(|w| {
            w[0].old_range().end == w[1].old_range().start
                && w[0].new_range().end == w[1].new_range().start
        });
        if !in_order {
            return None;
        }
        let (first, last) = (group.first()?, group.last()?);
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (o_len, n_len) = (last.old_range().end - o, last.new_range().end - n);
        // An empty side is numbered from the line before it.
        let start = |at: usize, len: usize| if len == 0 { at } else { at + 1 };
        let _ = writeln!(
            out,
            "@@ -{},{o_len} +{},{n_len} @@",
            start(o, o_len),
            start(n, n_len)
        );
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                let line = change.value();
                out.push(sign);
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    Some(out)
}
