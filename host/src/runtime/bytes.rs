//! A component's bytes as the host keeps them: as they are (read from a
//! file, given by a caller), or packed with zstd (the built-ins and
//! runners embedded in the binary, by host/build.rs: each but one packed
//! against that one, [`Base`], whose code they share, to a ninth of their
//! size). Packed bytes are unpacked only to compile or pre-initialise the
//! component, never on a compile-cache hit, and not kept after. And how
//! the runtime links a component ([`Linking`]).

use std::borrow::Cow;

/// A component's bytes, plain or packed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WasmBytes<'a> {
    /// As they are.
    Plain(&'a [u8]),
    /// Packed with zstd; `len` bytes once unpacked; with `base`, packed
    /// against that component's bytes (a zstd raw-content dictionary).
    Packed {
        packed: &'a [u8],
        len: usize,
        base: Option<Base<'a>>,
    },
    /// In the file `path`, not read yet: `len` bytes whose BLAKE3 is
    /// `hash` when the plugin was loaded (read, and checked, to compile).
    File {
        path: &'a std::path::Path,
        hash: &'a str,
        len: usize,
    },
}

/// The embedded component the others are packed against, itself packed
/// alone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Base<'a> {
    /// Its bytes, packed with zstd.
    pub(crate) packed: &'a [u8],
    /// Its size, unpacked.
    pub(crate) len: usize,
}

impl<'a> WasmBytes<'a> {
    /// The component's size, unpacked.
    pub(crate) fn len(self) -> usize {
        match self {
            Self::Plain(bytes) => bytes.len(),
            Self::Packed { len, .. } | Self::File { len, .. } => len,
        }
    }

    /// The component's bytes (unpacked now, if packed).
    pub(crate) fn unpacked(self) -> Result<Cow<'a, [u8]>, String> {
        match self {
            Self::Plain(bytes) => Ok(Cow::Borrowed(bytes)),
            Self::File { path, hash, .. } => {
                let bytes = std::fs::read(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                if blake3::hash(&bytes).to_hex().as_str() != hash {
                    return Err(format!(
                        "{} changed since toolhost loaded it; reload the plugins (or start \
                         toolhost again) to use the file as it is now",
                        path.display()
                    ));
                }
                Ok(Cow::Owned(bytes))
            }
            Self::Packed { packed, len, base } => {
                let cannot =
                    |e: std::io::Error| format!("cannot unpack the embedded component: {e}");
                let bytes = match base {
                    None => zstd::bulk::decompress(packed, len).map_err(cannot)?,
                    Some(base) => {
                        let dictionary = WasmBytes::Packed {
                            packed: base.packed,
                            len: base.len,
                            base: None,
                        }
                        .unpacked()?;
                        zstd::bulk::Decompressor::with_dictionary(&dictionary)
                            .and_then(|mut d| d.decompress(packed, len))
                            .map_err(cannot)?
                    }
                };
                if bytes.len() == len {
                    Ok(Cow::Owned(bytes))
                } else {
                    Err(format!(
                        "the embedded component unpacks to {} bytes, not {len}",
                        bytes.len()
                    ))
                }
            }
        }
    }
}

/// How [`super::Runtime::link`] treats a component's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Linking<'a> {
    /// Loaded from a file or given by a caller: linked on each load.
    Owned,
    /// Embedded in the binary: linked once per runtime.
    Embedded,
    /// Embedded, and pre-initialised by its `wizer-initialize` export
    /// before it is compiled (see [`super::preinit`]).
    Preinitialised,
    /// Pre-initialised, then this script (a `javascript` tool's source)
    /// prepared in it: a snapshot per script, built only as work ahead of
    /// use; until one is cached, calls run in the `Preinitialised` one.
    Prepared(&'a str),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_since_it_was_hashed_is_not_compiled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tool.wasm");
        std::fs::write(&path, b"\0asm one").unwrap();
        let hash = blake3::hash(b"\0asm one").to_hex();
        let bytes = WasmBytes::File {
            path: &path,
            hash: &hash,
            len: 8,
        };
        assert_eq!(bytes.unpacked().unwrap().as_ref(), b"\0asm one");
        std::fs::write(&path, b"\0asm two").unwrap();
        let err = bytes.unpacked().unwrap_err();
        assert!(
            err.contains("changed since toolhost loaded it; reload"),
            "{err}"
        );
        std::fs::remove_file(&path).unwrap();
        assert!(bytes.unpacked().unwrap_err().contains("cannot read"));
    }

    #[test]
    fn packed_bytes_unpack_to_what_was_packed_or_say_why_not() {
        let wasm = b"\0asm\x0d\0\x01\0 a component, more or less".repeat(100);
        let packed = zstd::bulk::compress(&wasm, 12).unwrap();
        assert!(packed.len() < wasm.len() / 4);
        let bytes = WasmBytes::Packed {
            packed: &packed,
            len: wasm.len(),
            base: None,
        };
        assert_eq!(bytes.len(), wasm.len());
        assert_eq!(bytes.unpacked().unwrap().as_ref(), wasm.as_slice());
        let short = WasmBytes::Packed {
            packed: &packed,
            len: wasm.len() + 1,
            base: None,
        };
        assert!(short.unpacked().unwrap_err().contains("not"));
        let broken = WasmBytes::Packed {
            packed: &packed[..packed.len() / 2],
            len: wasm.len(),
            base: None,
        };
        assert!(broken.unpacked().unwrap_err().contains("cannot unpack"));
        // Packed against a base: unpacked with it, and not without it.
        let other = b"\0asm\x0d\0\x01\0 another component, sharing code".repeat(100);
        let mut compressor = zstd::bulk::Compressor::with_dictionary(12, &wasm).unwrap();
        let against = compressor.compress(&other).unwrap();
        assert!(against.len() < zstd::bulk::compress(&other, 12).unwrap().len());
        let base = Base {
            packed: &packed,
            len: wasm.len(),
        };
        let based = WasmBytes::Packed {
            packed: &against,
            len: other.len(),
            base: Some(base),
        };
        assert_eq!(based.unpacked().unwrap().as_ref(), other.as_slice());
        let alone = WasmBytes::Packed {
            packed: &against,
            len: other.len(),
            base: None,
        };
        assert!(alone.unpacked().is_err(), "it needs its base");
        assert!(matches!(
            WasmBytes::Plain(&wasm).unpacked().unwrap(),
            Cow::Borrowed(_)
        ));
    }
}
