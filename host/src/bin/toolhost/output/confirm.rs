//! The terminal's confirmation question.
#![expect(clippy::print_stderr, reason = "a question asked on the terminal")]

use super::{printable, printable_lines};
use serde_json::Value;
use std::io::{BufRead as _, IsTerminal as _};
use toolhost::{ConfirmRequest, Confirmer, Decision};

/// Asks on the terminal: `y` runs the call, `n` skips it, `a` aborts everything.
/// Without a terminal on both stdin and stderr, nobody can be asked. One
/// question at a time, even when calls run concurrently.
pub struct TtyConfirmer;

impl Confirmer for TtyConfirmer {
    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision {
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return Decision::Unavailable;
        }
        let _turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // JSON escapes control characters in the arguments; the reason
        // quotes a command, so escape it too: nothing printed can move the
        // cursor or redraw the prompt.
        let (args, shown) = shown(request.args);
        let reason = printable(request.reason);
        let tool = printable(request.tool);
        loop {
            eprint!("Run `{tool}` with {args}?\n{shown}({reason}) [y]es / [n]o / [a]bort all: ");
            if !stdin_ready() {
                eprintln!();
                return Decision::AbortAll;
            }
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
                return Decision::Deny;
            }
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Decision::Allow,
                "n" | "no" => return Decision::Deny,
                "a" | "abort" => return Decision::AbortAll,
                _ => eprintln!("please answer y, n or a"),
            }
        }
    }
}

/// Most lines of one text shown in a question.
const MOST_LINES: usize = 40;

/// The arguments as a person reads them: short values in one JSON line,
/// and below it, for an edit (`old_str` → `new_str`, as edit_file and each
/// of multi_edit's `edits` name them), the diff; for other long or
/// multi-line text (a `diff`, a file's `content`) the text itself; each
/// cut at [`MOST_LINES`] lines, control characters escaped, keys too. A
/// value is shown in the line whenever nothing is shown for it below.
fn shown(args: &Value) -> (String, String) {
    let Some(fields) = args.as_object() else {
        return (
            serde_json::to_string(args).unwrap_or_default(),
            String::new(),
        );
    };
    let long = |v: &Value| v.as_str().is_some_and(|s| s.len() > 80 || s.contains('\n'));
    let mut short = serde_json::Map::new();
    let mut below = String::new();
    let edits: Vec<&Value> = match fields.get("edits").and_then(Value::as_array) {
        Some(edits) => edits.iter().collect(),
        None if fields.contains_key("old_str") => vec![args],
        None => Vec::new(),
    };
    let diffs: String = edits.iter().map(|edit| capped(&edit_diff(edit))).collect();
    let diffed = !diffs.trim().is_empty();
    below.push_str(&diffs);
    for (key, value) in fields {
        let shown_key = printable(key);
        if diffed && matches!(key.as_str(), "old_str" | "new_str" | "edits") {
            short.insert(shown_key, Value::String("[diff below]".to_owned()));
        } else if long(value) {
            short.insert(
                shown_key.clone(),
                Value::String(format!("[{shown_key} below]")),
            );
            below.push_str(&format!("{shown_key}:\n"));
            below.push_str(&capped(value.as_str().unwrap_or_default()));
        } else {
            short.insert(shown_key, value.clone());
        }
    }
    (Value::Object(short).to_string(), below)
}

/// One edit's `old_str` → `new_str` as a unified diff of lines.
fn edit_diff(edit: &Value) -> String {
    let text = |k: &str| edit.get(k).and_then(Value::as_str).unwrap_or_default();
    let (old, new) = (text("old_str"), text("new_str"));
    // Whole lines, so a change inside a line shows as that line changed.
    let line = |t: &str| {
        if t.ends_with('\n') {
            t.to_owned()
        } else {
            format!("{t}\n")
        }
    };
    similar::TextDiff::from_lines(&line(old), &line(new))
        .unified_diff()
        .context_radius(2)
        .to_string()
}

/// `text`, control characters escaped, at most [`MOST_LINES`] lines, each
/// indented, ending in a newline.
fn capped(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines
        .iter()
        .take(MOST_LINES)
        .map(|l| format!("  {}\n", printable_lines(l).replace('\t', "    ")))
        .collect();
    if lines.len() > MOST_LINES {
        out.push_str(&format!("  … {} more lines\n", lines.len() - MOST_LINES));
    }
    out
}

/// Wait until the terminal has an answer to read; false when Ctrl-C came
/// first (which answers "abort all").
fn stdin_ready() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = std::io::stdin();
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    loop {
        if crate::agent::interrupted() {
            return false;
        }
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&tick)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => {}
            _ => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_show_as_diffs_and_long_text_as_a_capped_preview() {
        let (line, below) = shown(&json!({"path": "a.rs", "old_str": "let x = 1;",
            "new_str": "let x = 2;"}));
        assert!(
            line.contains("\"path\":\"a.rs\"") && line.contains("[diff below]"),
            "{line}"
        );
        assert!(
            below.contains("-let x = 1;") && below.contains("+let x = 2;"),
            "{below}"
        );
        let content: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let (line, below) = shown(&json!({"path": "b.txt", "content": content}));
        assert!(line.contains("[content below]"), "{line}");
        assert!(
            below.contains("  line 39\n") && !below.contains("line 40\n"),
            "{below}"
        );
        assert!(below.contains("60 more lines"), "{below}");
        let (_, below) = shown(&json!({"content": "a\u{1b}[2Jb\nc"}));
        assert!(
            !below.contains('\u{1b}'),
            "no escape reaches the terminal: {below}"
        );
        // multi_edit, as the tool names its fields.
        let (line, below) = shown(&json!({"path": "m.rs", "edits": [
            {"old_str": "fn main(){", "new_str": "fn main(){ evil();"},
            {"old_str": "a", "new_str": "b"}]}));
        assert!(line.contains("[diff below]"), "{line}");
        assert!(
            below.contains("+fn main(){ evil();") && below.contains("+b"),
            "{below}"
        );
        // Nothing to diff: the value stays in the line.
        let (line, _) = shown(&json!({"edits": "not a list"}));
        assert!(line.contains("not a list"), "{line}");
        // A key cannot carry an escape sequence to the terminal.
        let (line, below) = shown(&json!({"\u{1b}[2Akey": "x".repeat(100)}));
        assert!(
            !line.contains('\u{1b}') && !below.contains('\u{1b}'),
            "{line} {below}"
        );
    }
}
