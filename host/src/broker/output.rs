//! Command output for the model: capped to a head and a tail, with the full
//! text kept under an id, because a model shown a cut output tends to invent
//! the missing middle.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Keep the first and last parts of `text` within `max_chars` characters,
/// cutting at line ends where possible, with `[... N lines omitted ...]` in
/// between. Returns the text and whether it was cut.
pub(crate) fn head_and_tail(text: &str, max_chars: usize) -> (String, bool) {
    let total = text.chars().count();
    if total <= max_chars {
        return (text.to_owned(), false);
    }
    let half = max_chars / 2;
    let head_end = byte_at_char(text, half);
    // Prefer to end the head at a line end, if one is in its second half.
    let head_end = match text[..head_end].rfind('\n') {
        Some(nl) if text[..nl].chars().count() >= half / 2 => nl + 1,
        _ => head_end,
    };
    let tail_start = byte_at_char(text, total - half);
    let tail_start = match text[tail_start..].find('\n') {
        Some(nl) if text[tail_start + nl + 1..].chars().count() >= half / 2 => tail_start + nl + 1,
        _ => tail_start,
    };
    let middle = &text[head_end..tail_start.max(head_end)];
    let lines = middle.matches('\n').count();
    let note = if lines > 0 {
        let whole = lines + usize::from(!middle.ends_with('\n'));
        format!("[... {whole} lines omitted ...]")
    } else {
        format!("[... {} characters omitted ...]", middle.chars().count())
    };
    let mut out = String::with_capacity(head_end + note.len() + text.len() - tail_start + 2);
    out.push_str(&text[..head_end]);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&note);
    out.push('\n');
    out.push_str(&text[tail_start.max(head_end)..]);
    (out, true)
}

fn byte_at_char(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

/// Full outputs of cut commands, by id, oldest dropped first.
#[derive(Debug)]
pub(crate) struct Kept {
    inner: Mutex<KeptInner>,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct KeptInner {
    next: u64,
    bytes: usize,
    entries: VecDeque<(String, String)>,
}

impl Kept {
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            inner: Mutex::default(),
            max_entries: max_entries.max(1),
            max_bytes,
        }
    }

    /// Keep `text`; returns its id.
    pub(crate) fn keep(&self, text: String) -> String {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.next += 1;
        let id = format!("out-{}", inner.next);
        inner.bytes += text.len();
        inner.entries.push_back((id.clone(), text));
        while inner.entries.len() > self.max_entries
            || (inner.bytes > self.max_bytes && inner.entries.len() > 1)
        {
            if let Some((_, old)) = inner.entries.pop_front() {
                inner.bytes -= old.len();
            }
        }
        id
    }

    /// The text kept under `id`, if it is still kept.
    pub(crate) fn get(&self, id: &str) -> Option<String> {
        let inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner
            .entries
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, t)| t.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(head_and_tail("a\nb\n", 10), ("a\nb\n".to_owned(), false));
    }

    #[test]
    fn long_text_keeps_whole_lines_at_both_ends() {
        let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let (out, cut) = head_and_tail(&text, 200);
        assert!(cut);
        assert!(out.starts_with("line 1\nline 2\n"), "{out}");
        assert!(out.ends_with("line 999\nline 1000\n"), "{out}");
        let note = out.lines().find(|l| l.starts_with("[...")).unwrap();
        let kept = out.lines().filter(|l| l.starts_with("line ")).count();
        let omitted: usize = note.split(' ').nth(1).unwrap().parse().unwrap();
        assert_eq!(kept + omitted, 1000, "{note}");
        assert!(out.chars().count() < 260);
    }

    #[test]
    fn one_long_line_is_cut_by_characters() {
        let text = "é".repeat(1000);
        let (out, cut) = head_and_tail(&text, 100);
        assert!(cut);
        assert!(out.contains("[... 900 characters omitted ...]"), "{out}");
    }

    #[test]
    fn kept_outputs_are_bounded_oldest_first() {
        let kept = Kept::new(2, 1 << 20);
        let a = kept.keep("a".into());
        let b = kept.keep("b".into());
        let c = kept.keep("c".into());
        assert_eq!(kept.get(&a), None);
        assert_eq!(kept.get(&b).as_deref(), Some("b"));
        assert_eq!(kept.get(&c).as_deref(), Some("c"));
        let small = Kept::new(10, 3);
        let x = small.keep("xx".into());
        small.keep("yy".into());
        assert_eq!(small.get(&x), None, "over the byte budget");
    }
}
