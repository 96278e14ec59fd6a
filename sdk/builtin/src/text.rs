//! Text helpers shared by every file tool: the content hash that read tools
//! report and edit tools accept as `expected_hash`, binary detection, and
//! [`TextFile`], which keeps a file's BOM and line endings through an edit.

use toolhost_sdk::ToolError;

pub use toolhost_shared::text::{BINARY_SNIFF_LEN, ContentHasher, content_hash, looks_binary};

/// A text file decoded for editing, remembering what must survive the edit
/// byte for byte: a UTF-8 byte-order mark, and CRLF line endings.
///
/// When every line ends in CRLF, [`TextFile::text`] has LF endings and
/// [`TextFile::encode`] turns them back into CRLF, so lines the edit did not
/// touch come back unchanged. A file with mixed endings is kept as it is.
/// A missing final newline stays missing: nothing is added or removed.
///
/// ```
/// use toolhost_builtin::text::TextFile;
/// let file = TextFile::decode(b"\xef\xbb\xbfa\r\nb\r\nc", "f.txt").unwrap();
/// assert_eq!(file.text, "a\nb\nc");
/// let edited = file.text.replace('b', "B");
/// assert_eq!(file.encode(&edited), b"\xef\xbb\xbfa\r\nB\r\nc");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// The content, without the BOM, with LF endings if the file was all CRLF.
    pub text: String,
    /// The file started with a UTF-8 byte-order mark.
    pub bom: bool,
    /// Every line ending in the file was CRLF (and there was at least one).
    pub crlf: bool,
}

const BOM: &[u8] = b"\xef\xbb\xbf";

impl TextFile {
    /// Decode `bytes` (the content of `path`, for messages). Binary and
    /// non-UTF-8 content is refused, so it is never corrupted by an edit.
    pub fn decode(bytes: &[u8], path: &str) -> Result<Self, ToolError> {
        if looks_binary(bytes) {
            return Err(ToolError::retry(format!(
                "`{path}` is a binary file; only text files can be edited"
            )));
        }
        let (bom, body) = match bytes.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, bytes),
        };
        let text = std::str::from_utf8(body).map_err(|e| {
            ToolError::failed(format!(
                "`{path}` is not valid UTF-8 (first bad byte at offset {}); editing it could \
                 corrupt it, so nothing was changed",
                e.valid_up_to() + if bom { BOM.len() } else { 0 }
            ))
            .with_hint("convert the file to UTF-8 first, or rewrite it whole with write_file")
        })?;
        let newlines = memchr::memchr_iter(b'\n', body).count();
        let crlfs = memchr::memmem::find_iter(body, b"\r\n").count();
        let crlf = newlines > 0 && newlines == crlfs;
        let text = if crlf {
            text.replace("\r\n", "\n")
        } else {
            text.to_owned()
        };
        Ok(Self { text, bom, crlf })
    }

    /// Bytes for `text` in this file's format: the BOM again if it had one,
    /// CRLF endings again if it had them (each LF gets its CR back; a CR
    /// already in the text, as in a `\r\r\n` line, stays).
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let body = if self.crlf {
            text.replace('\n', "\r\n")
        } else {
            text.to_owned()
        };
        let mut out = Vec::with_capacity(body.len() + BOM.len());
        if self.bom {
            out.extend_from_slice(BOM);
        }
        out.extend_from_slice(body.as_bytes());
        out
    }
}

/// Check an optional `expected_hash` against the current content.
///
/// ```
/// use toolhost_builtin::text::{check_expected_hash, content_hash};
/// let h = content_hash(b"v1");
/// assert!(check_expected_hash(b"v1", Some(&h), "a.txt").is_ok());
/// assert!(check_expected_hash(b"v2", Some(&h), "a.txt").is_err());
/// assert!(check_expected_hash(b"v2", None, "a.txt").is_ok());
/// ```
pub fn check_expected_hash(
    current: &[u8],
    expected: Option<&str>,
    path: &str,
) -> Result<(), ToolError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let actual = content_hash(current);
    if actual == expected.trim() {
        Ok(())
    } else {
        Err(ToolError::retry(format!(
            "`{path}` changed since it was read (expected hash {expected}, it is now {actual}); \
             read it again and redo the change against the current content"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_round_trip_byte_for_byte() {
        for bytes in [
            &b"a\nb\n"[..],
            b"a\r\nb\r\n",
            b"a\r\nb",
            b"\xef\xbb\xbfx\r\ny",
            b"mixed\r\nlf\nend",
            b"a\r\r\nb\r\n",
            b"",
            b"no newline",
        ] {
            let f = TextFile::decode(bytes, "f").unwrap();
            assert_eq!(
                f.encode(&f.text),
                bytes,
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    // Regression: encoding replaced `\r\n` with `\n` first, so an
    // untouched `\r\r\n` line of a CRLF file lost a CR.
    #[test]
    fn an_edit_keeps_a_cr_inside_a_crlf_line() {
        let f = TextFile::decode(b"a\r\r\nb\r\n", "f").unwrap();
        assert!(f.crlf);
        let edited = f.text.replace('b', "B");
        assert_eq!(f.encode(&edited), b"a\r\r\nB\r\n");
    }

    #[test]
    fn crlf_is_only_normalised_when_uniform() {
        assert!(TextFile::decode(b"a\r\nb\r\n", "f").unwrap().crlf);
        let mixed = TextFile::decode(b"a\r\nb\n", "f").unwrap();
        assert!(!mixed.crlf);
        assert_eq!(mixed.text, "a\r\nb\n");
    }

    #[test]
    fn non_utf8_and_binary_are_refused() {
        let err = TextFile::decode(b"caf\xe9\n", "f").unwrap_err();
        assert!(err.to_string().contains("not valid UTF-8"), "{err}");
        assert!(TextFile::decode(b"a\x00b", "f").is_err());
    }
}
