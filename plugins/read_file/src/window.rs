//! The window of lines read_file shows: lines arrive in chunks, at most
//! [`MAX_LINE_BYTES`] of each is kept, and showing stops at the line limit
//! or the output byte limit.

use crate::{MAX_LINE_CHARS, MAX_OUTPUT_BYTES};

/// The lines being shown and why showing stopped. Lines arrive in pieces
/// (chunks end mid-line); at most [`MAX_LINE_BYTES`] of each is kept, so a
/// single enormous line costs no memory.
pub(crate) struct Window {
    first: u64,
    limit: u64,
    pub(crate) text: String,
    pub(crate) shown: u64,
    pub(crate) last: u64,
    pub(crate) lossy: bool,
    /// Stopped by the byte guard rather than `limit`.
    pub(crate) byte_capped: bool,
    pub(crate) done: bool,
    /// Lines completed so far.
    line_no: u64,
    /// The start of the line being read (only for lines in the window).
    line: Vec<u8>,
    /// The full length in bytes of the line being read.
    line_len: u64,
}

/// Most bytes kept of one line: [`MAX_LINE_CHARS`] characters of up to four
/// bytes, plus room for a trailing `\r`.
pub(crate) const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4 + 1;

impl Window {
    pub(crate) fn new(first: u64, limit: u64) -> Self {
        Self {
            first,
            limit,
            text: String::new(),
            shown: 0,
            last: 0,
            lossy: false,
            byte_capped: false,
            done: false,
            line_no: 0,
            line: Vec::new(),
            line_len: 0,
        }
    }

    /// A window fed from the start of line `first` rather than of the file.
    pub(crate) fn starting_at(first: u64, limit: u64) -> Self {
        Self {
            line_no: first.saturating_sub(1),
            ..Self::new(first, limit)
        }
    }

    /// Take the next bytes of the file.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while !self.done && !bytes.is_empty() {
            match memchr::memchr(b'\n', bytes) {
                Some(i) => {
                    self.extend(&bytes[..i]);
                    self.end_line();
                    bytes = &bytes[i + 1..];
                }
                None => {
                    self.extend(bytes);
                    bytes = &[];
                }
            }
        }
    }

    /// The file ended: a last line without a final newline still counts.
    pub(crate) fn finish(&mut self) {
        if !self.done && (self.line_len > 0 || !self.line.is_empty()) {
            self.end_line();
        }
    }

    fn extend(&mut self, part: &[u8]) {
        self.line_len += part.len() as u64;
        if self.line_no + 1 >= self.first {
            let room = MAX_LINE_BYTES.saturating_sub(self.line.len());
            self.line.extend_from_slice(&part[..room.min(part.len())]);
        }
    }

    fn end_line(&mut self) {
        self.line_no += 1;
        let (no, len) = (self.line_no, self.line_len);
        let line = std::mem::take(&mut self.line);
        self.line_len = 0;
        if no >= self.first {
            self.offer(no, &line, len);
        }
        self.line = line;
        self.line.clear();
    }

    /// Show line `no`: its first bytes `kept` (terminator excluded) of `len`.
    fn offer(&mut self, no: u64, kept: &[u8], len: u64) {
        let cut = (kept.len() as u64) < len;
        let body = if cut {
            kept
        } else {
            kept.strip_suffix(b"\r").unwrap_or(kept)
        };
        let decoded = String::from_utf8_lossy(body);
        // A multi-byte character split by the cut is not a decoding problem.
        self.lossy |= matches!(decoded, std::borrow::Cow::Owned(_)) && !cut;
        let numbered = format!("{no:>6}\t{}\n", clip(&decoded, cut.then_some(len)));
        if self.shown > 0 && self.text.len() + numbered.len() > MAX_OUTPUT_BYTES {
            self.byte_capped = true;
            self.done = true;
            return;
        }
        self.text.push_str(&numbered);
        self.shown += 1;
        self.last = no;
        self.done = self.shown >= self.limit;
    }
}

/// Cut a line longer than [`MAX_LINE_CHARS`] characters, with a marker;
/// `total_bytes` is set when only the start of the line was kept.
pub(crate) fn clip(line: &str, total_bytes: Option<u64>) -> std::borrow::Cow<'_, str> {
    let cut = line.char_indices().nth(MAX_LINE_CHARS).map(|(i, _)| i);
    match (cut, total_bytes) {
        (None, None) => line.into(),
        (Some(i), None) => format!(
            "{}… [line cut: {MAX_LINE_CHARS} of {} characters shown]",
            &line[..i],
            line.chars().count()
        )
        .into(),
        (cut, Some(total)) => format!(
            "{}… [line cut: first {MAX_LINE_CHARS} characters of a {total}-byte line shown]",
            &line[..cut.unwrap_or(line.len())]
        )
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CHUNK;

    fn window_over(pieces: &[&[u8]], first: u64, limit: u64) -> Window {
        let mut w = Window::new(first, limit);
        for piece in pieces {
            w.feed(piece);
        }
        w.finish();
        w
    }

    #[test]
    fn clip_marks_long_lines() {
        let long = "é".repeat(MAX_LINE_CHARS + 5);
        let clipped = clip(&long, None);
        assert!(clipped.starts_with(&"é".repeat(MAX_LINE_CHARS)));
        assert!(clipped.ends_with(&format!(
            "[line cut: {MAX_LINE_CHARS} of {} characters shown]",
            MAX_LINE_CHARS + 5
        )));
        assert_eq!(clip("short", None), "short");
    }

    #[test]
    fn window_respects_offset_and_limit_across_chunk_boundaries() {
        let w = window_over(
            &[b"line 1\r\nli", b"ne 2\r\nline 3\r", b"\nline 4\nline 5"],
            2,
            2,
        );
        assert_eq!(w.text, "     2\tline 2\n     3\tline 3\n");
        assert_eq!(w.last, 3);
        assert!(w.done);
    }

    #[test]
    fn last_line_without_newline_is_shown() {
        let w = window_over(&[b"a\nb"], 1, 10);
        assert_eq!(w.text, "     1\ta\n     2\tb\n");
        let w = window_over(&[b"a\n"], 1, 10);
        assert_eq!(w.text, "     1\ta\n");
    }

    #[test]
    fn a_huge_line_keeps_only_its_start() {
        let huge = vec![b'x'; 3 * CHUNK];
        let w = window_over(
            &[b"short\n", &huge[..CHUNK], &huge[CHUNK..], b"\nafter\n"],
            1,
            10,
        );
        assert!(
            w.line.capacity() <= 2 * MAX_LINE_BYTES,
            "{}",
            w.line.capacity()
        );
        let lines: Vec<&str> = w.text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].ends_with(&format!(
            "[line cut: first {MAX_LINE_CHARS} characters of a {}-byte line shown]",
            3 * CHUNK
        )));
        assert_eq!(lines[2], "     3\tafter");
    }
}
