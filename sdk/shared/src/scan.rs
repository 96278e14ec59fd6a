//! One pass over a file: its content hash, size and line count, and the
//! bytes of a window of lines. The host runs it natively for large files
//! (`files.scan`), where reading every byte through WASI costs more than
//! the tool's own work; natively, tools call the same code directly.

use crate::text::{BINARY_SNIFF_LEN, ContentHasher, looks_binary};
use std::io::{self, Read};

/// What [`scan_reader`] learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// The content hash ([`crate::text::content_hash`] of every byte).
    pub hash: String,
    /// Size in bytes.
    pub size: u64,
    /// Number of `\n` bytes.
    pub newlines: u64,
    /// The last byte, if any.
    pub last_byte: Option<u8>,
    /// Whether the first bytes look binary ([`looks_binary`]).
    pub binary: bool,
    /// Lines `first_line` to `first_line + max_lines - 1` (fewer at the
    /// end), with their line ends, at most `max_window` bytes.
    pub window: Vec<u8>,
    /// True if `window` holds all of those lines (it was not cut).
    pub window_complete: bool,
}

/// Read `reader` to its end once, hashing and counting every byte and
/// keeping up to `max_lines` lines from line `first_line` (1-based), at
/// most `max_window` bytes of them.
///
/// ```
/// let s = toolhost_shared::scan::scan_reader(&b"a\nb\nc\nd"[..], 2, 2, 100).unwrap();
/// assert_eq!((s.newlines, s.size, s.last_byte), (3, 7, Some(b'd')));
/// assert_eq!((s.window.as_slice(), s.window_complete), (&b"b\nc\n"[..], true));
/// assert_eq!(s.hash, toolhost_shared::text::content_hash(b"a\nb\nc\nd"));
/// ```
pub fn scan_reader(
    mut reader: impl Read,
    first_line: u64,
    max_lines: u64,
    max_window: usize,
) -> io::Result<Scan> {
    let mut hasher = ContentHasher::new();
    let mut chunk = vec![0u8; 256 << 10];
    let mut scan = Scan {
        hash: String::new(),
        size: 0,
        newlines: 0,
        last_byte: None,
        binary: false,
        window: Vec::new(),
        window_complete: true,
    };
    let mut sniffed = Vec::new();
    // Lines still to skip before the window starts, and to take in it.
    let mut skip = first_line.saturating_sub(1);
    let mut take = max_lines;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let bytes = &chunk[..n];
        if sniffed.len() < BINARY_SNIFF_LEN {
            let take = (BINARY_SNIFF_LEN - sniffed.len()).min(n);
            sniffed.extend_from_slice(&bytes[..take]);
        }
        scan.size += n as u64;
        scan.last_byte = Some(bytes[n - 1]);
        // In pieces that stay in L1 while each is hashed and counted.
        for part in bytes.chunks(16 << 10) {
            hasher.update(part);
            let mut rest = part;
            if skip > 0 {
                // Count up to the start of the window line by line, then
                // the rest of the piece at once.
                for nl in memchr::memchr_iter(b'\n', part) {
                    scan.newlines += 1;
                    skip -= 1;
                    if skip == 0 {
                        rest = &part[nl + 1..];
                        break;
                    }
                }
                if skip > 0 {
                    continue;
                }
            }
            scan.newlines += memchr::memchr_iter(b'\n', rest).count() as u64;
            if take > 0 && scan.window_complete {
                // The window's part of this piece: up to its last line's end.
                let mut end = rest.len();
                for nl in memchr::memchr_iter(b'\n', rest) {
                    take -= 1;
                    if take == 0 {
                        end = nl + 1;
                        break;
                    }
                }
                let part = &rest[..end];
                let room = max_window - scan.window.len();
                if part.len() > room {
                    scan.window.extend_from_slice(&part[..room]);
                    scan.window_complete = false;
                } else {
                    scan.window.extend_from_slice(part);
                }
            }
        }
    }
    scan.binary = looks_binary(&sniffed);
    scan.hash = hasher.finish();
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_start_at_their_line_and_are_cut_at_the_limit() {
        let text = b"one\ntwo\nthree\nfour";
        let s = scan_reader(&text[..], 3, 10, 6).unwrap();
        assert_eq!(
            (s.window.as_slice(), s.window_complete),
            (&b"three\n"[..], false)
        );
        let s = scan_reader(&text[..], 3, 10, 100).unwrap();
        assert_eq!(
            (s.window.as_slice(), s.window_complete),
            (&b"three\nfour"[..], true)
        );
        let s = scan_reader(&text[..], 1, 2, 100).unwrap();
        assert_eq!(
            (s.window.as_slice(), s.window_complete),
            (&b"one\ntwo\n"[..], true)
        );
        let s = scan_reader(&text[..], 9, 10, 100).unwrap();
        assert_eq!(
            (s.window.len(), s.window_complete),
            (0, true),
            "past the end: empty"
        );
        assert_eq!((s.newlines, s.last_byte), (3, Some(b'r')));
        let empty = scan_reader(&b""[..], 1, 10, 10).unwrap();
        assert_eq!(
            (empty.size, empty.last_byte, empty.hash),
            (0, None, crate::text::content_hash(b""))
        );
    }

    #[test]
    fn lines_split_across_reads_are_found() {
        // A reader that hands out one byte at a time.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let Some((&b, rest)) = self.0.split_first() else {
                    return Ok(0);
                };
                buf[0] = b;
                self.0 = rest;
                Ok(1)
            }
        }
        let s = scan_reader(Trickle(b"a\nb\nc\nd\n"), 3, 5, 100).unwrap();
        assert_eq!(s.window, b"c\nd\n");
        assert_eq!(s.newlines, 4);
    }

    #[test]
    fn binary_is_judged_by_the_first_bytes() {
        let mut late_nul = vec![b'x'; BINARY_SNIFF_LEN + 10];
        *late_nul.last_mut().unwrap() = 0;
        assert!(!scan_reader(&late_nul[..], 1, 0, 0).unwrap().binary);
        assert!(scan_reader(&b"ab\0c"[..], 1, 0, 0).unwrap().binary);
    }
}
