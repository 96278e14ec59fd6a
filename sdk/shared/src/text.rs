//! The content hash that read tools report and edit tools accept as
//! `expected_hash` (the host computes it too, for `files.scan`), and binary
//! detection.

/// How many leading bytes [`looks_binary`] inspects, as git and ripgrep do.
pub const BINARY_SNIFF_LEN: usize = 8192;

/// Incremental content hash; feed the whole file, then [`ContentHasher::finish`].
///
/// The text form is `xxh3:<32 hex digits>` (XXH3, 128 bits). It detects
/// that a file changed since it was read; it is not a cryptographic hash,
/// and nothing relies on it being one. XXH3 was chosen because it runs at
/// nearly the same speed in wasm (SIMD128) as natively, so hashing a whole
/// file stays cheap inside the sandbox. Any tool that reports a hash and any
/// tool that checks `expected_hash` use this type, so they agree.
///
/// ```
/// use toolhost_shared::text::{ContentHasher, content_hash};
/// let mut h = ContentHasher::new();
/// h.update(b"hello ");
/// h.update(b"world");
/// assert_eq!(h.finish(), content_hash(b"hello world"));
/// ```
#[derive(Clone)]
pub struct ContentHasher(xxhash_rust::xxh3::Xxh3);

impl Default for ContentHasher {
    fn default() -> Self {
        Self(xxhash_rust::xxh3::Xxh3::new())
    }
}

impl ContentHasher {
    /// A hasher with nothing fed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next bytes of the content.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The hash of everything fed, as `xxh3:<32 hex digits>`.
    pub fn finish(&self) -> String {
        format!("xxh3:{:032x}", self.0.digest128())
    }
}

/// The hash of a whole content, as `xxh3:<32 hex digits>`.
///
/// ```
/// let h = toolhost_shared::text::content_hash(b"");
/// assert!(h.starts_with("xxh3:") && h.len() == 5 + 32);
/// ```
pub fn content_hash(bytes: &[u8]) -> String {
    let mut h = ContentHasher::new();
    h.update(bytes);
    h.finish()
}

/// True if the content looks binary: a NUL byte in its first
/// [`BINARY_SNIFF_LEN`] bytes.
///
/// ```
/// use toolhost_shared::text::looks_binary;
/// assert!(looks_binary(b"\x7fELF\x02\x01\x01\x00"));
/// assert!(!looks_binary("héllo\r\n".as_bytes()));
/// ```
pub fn looks_binary(prefix: &[u8]) -> bool {
    let end = prefix.len().min(BINARY_SNIFF_LEN);
    prefix[..end].contains(&0)
}
