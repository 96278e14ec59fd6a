//! Command output for the model: capped to a head and a tail, with the full
//! text kept under an id, because a model shown a cut output tends to invent
//! the missing middle.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

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

/// Full outputs of cut commands, by owner (the MCP session that ran them)
/// and id, oldest dropped first. Each owner has its own budget; when all
/// together pass the total, the owner keeping the most gives up its oldest.
#[derive(Debug)]
pub(crate) struct Kept {
    inner: Mutex<HashMap<Arc<str>, Shelf>>,
    max_entries: usize,
    max_bytes: usize,
    max_total_bytes: usize,
    /// What ids end with (see [`super::background::Background::set_suffix`]).
    pub(crate) suffix: std::sync::OnceLock<String>,
}

/// One owner's kept outputs; ids count up per owner.
#[derive(Debug, Default)]
struct Shelf {
    next: u64,
    bytes: usize,
    entries: VecDeque<(String, String)>,
}

impl Shelf {
    fn drop_oldest(&mut self) {
        if let Some((_, old)) = self.entries.pop_front() {
            self.bytes -= old.len();
        }
    }
}

impl Kept {
    /// `max_entries` and `max_bytes` per owner, `max_total_bytes` in all.
    pub(crate) fn new(max_entries: usize, max_bytes: usize, max_total_bytes: usize) -> Self {
        Self {
            inner: Mutex::default(),
            max_entries: max_entries.max(1),
            max_bytes,
            max_total_bytes: max_total_bytes.max(max_bytes),
            suffix: std::sync::OnceLock::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, Shelf>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keep `text` for `owner`; returns its id.
    pub(crate) fn keep(&self, owner: &str, text: String) -> String {
        let mut shelves = self.lock();
        let shelf = shelves.entry(Arc::from(owner)).or_default();
        shelf.next += 1;
        let id = format!(
            "out-{}{}",
            shelf.next,
            self.suffix.get().map_or("", String::as_str)
        );
        shelf.bytes += text.len();
        shelf.entries.push_back((id.clone(), text));
        while shelf.entries.len() > self.max_entries
            || (shelf.bytes > self.max_bytes && shelf.entries.len() > 1)
        {
            shelf.drop_oldest();
        }
        // Over the total: the largest shelf gives up its oldest, never the
        // output just kept.
        while shelves.values().map(|s| s.bytes).sum::<usize>() > self.max_total_bytes {
            let largest = shelves
                .iter_mut()
                .filter(|(who, s)| s.entries.len() > usize::from(&***who == owner))
                .max_by_key(|(_, s)| s.bytes);
            match largest {
                Some((_, shelf)) => shelf.drop_oldest(),
                None => break,
            }
        }
        id
    }

    /// The text `owner` kept under `id`, if it is still kept.
    pub(crate) fn get(&self, owner: &str, id: &str) -> Option<String> {
        self.lock()
            .get(owner)?
            .entries
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, t)| t.clone())
    }

    /// The ids and sizes (bytes) of what `owner` keeps, oldest first.
    pub(crate) fn list(&self, owner: &str) -> Vec<(String, usize)> {
        self.lock().get(owner).map_or_else(Vec::new, |shelf| {
            shelf
                .entries
                .iter()
                .map(|(id, text)| (id.clone(), text.len()))
                .collect()
        })
    }

    /// `owner` is gone: forget its outputs.
    pub(crate) fn release(&self, owner: &str) {
        self.lock().remove(owner);
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
        let kept = Kept::new(2, 1 << 20, 1 << 20);
        let a = kept.keep("", "a".into());
        let b = kept.keep("", "b".into());
        let c = kept.keep("", "c".into());
        assert_eq!(kept.get("", &a), None);
        assert_eq!(kept.get("", &b).as_deref(), Some("b"));
        assert_eq!(kept.get("", &c).as_deref(), Some("c"));
        let small = Kept::new(10, 3, 3);
        let x = small.keep("", "xx".into());
        small.keep("", "yy".into());
        assert_eq!(small.get("", &x), None, "over the byte budget");
    }

    #[test]
    fn kept_outputs_belong_to_their_owner() {
        let kept = Kept::new(10, 100, 100);
        let a = kept.keep("a", "secret of a".into());
        assert_eq!(kept.get("b", &a), None, "b cannot read a's output");
        let b = kept.keep("b", "of b".into());
        assert_eq!(kept.list("b"), [(b.clone(), 4)], "b lists only its own");
        assert_eq!(a, b, "ids count per owner and tell nothing of others");
        assert_eq!(kept.get("b", &b).as_deref(), Some("of b"));
        kept.release("a");
        assert_eq!(kept.get("a", &a), None, "released with its owner");
        assert_eq!(kept.get("b", &b).as_deref(), Some("of b"));
    }

    #[test]
    fn one_owner_filling_the_total_loses_its_own_oldest_first() {
        let kept = Kept::new(100, 60, 100);
        let quiet = kept.keep("quiet", "q".repeat(30));
        for _ in 0..20 {
            kept.keep("loud", "l".repeat(20));
        }
        assert!(
            kept.get("quiet", &quiet).is_some(),
            "a flood by one client does not evict another's output"
        );
        let total: usize = kept.lock().values().map(|s| s.bytes).sum();
        assert!(total <= 100, "{total}");
    }
}
