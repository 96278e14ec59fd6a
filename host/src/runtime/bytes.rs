//! A component's bytes as the host keeps them: as they are (read from a
//! file, given by a caller), or packed with zstd (the built-ins and
//! runners embedded in the binary, by host/build.rs: a quarter of their
//! size). Packed bytes are unpacked only to compile or pre-initialise the
//! component, never on a compile-cache hit, and not kept after. And how
//! the runtime links a component ([`Linking`]).

use std::borrow::Cow;

/// A component's bytes, plain or packed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WasmBytes<'a> {
    /// As they are.
    Plain(&'a [u8]),
    /// Packed with zstd; `len` bytes once unpacked.
    Packed { packed: &'a [u8], len: usize },
}

impl<'a> WasmBytes<'a> {
    /// The component's size, unpacked.
    pub(crate) fn len(self) -> usize {
        match self {
            Self::Plain(bytes) => bytes.len(),
            Self::Packed { len, .. } => len,
        }
    }

    /// The component's bytes (unpacked now, if packed).
    pub(crate) fn unpacked(self) -> Result<Cow<'a, [u8]>, String> {
        match self {
            Self::Plain(bytes) => Ok(Cow::Borrowed(bytes)),
            Self::Packed { packed, len } => {
                let bytes = zstd::bulk::decompress(packed, len)
                    .map_err(|e| format!("cannot unpack the embedded component: {e}"))?;
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
    fn packed_bytes_unpack_to_what_was_packed_or_say_why_not() {
        let wasm = b"\0asm\x0d\0\x01\0 a component, more or less".repeat(100);
        let packed = zstd::bulk::compress(&wasm, 12).unwrap();
        assert!(packed.len() < wasm.len() / 4);
        let bytes = WasmBytes::Packed {
            packed: &packed,
            len: wasm.len(),
        };
        assert_eq!(bytes.len(), wasm.len());
        assert_eq!(bytes.unpacked().unwrap().as_ref(), wasm.as_slice());
        let short = WasmBytes::Packed {
            packed: &packed,
            len: wasm.len() + 1,
        };
        assert!(short.unpacked().unwrap_err().contains("not"));
        let broken = WasmBytes::Packed {
            packed: &packed[..packed.len() / 2],
            len: wasm.len(),
        };
        assert!(broken.unpacked().unwrap_err().contains("cannot unpack"));
        assert!(matches!(
            WasmBytes::Plain(&wasm).unpacked().unwrap(),
            Cow::Borrowed(_)
        ));
    }
}
