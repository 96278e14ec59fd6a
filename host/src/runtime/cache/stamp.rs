//! Hashes the compile cache need not compute again: a plugin file's
//! content hash, and the check of a compiled entry's bytes, remembered
//! with the file's stamp (device, inode, size, modification and change
//! times).
//!
//! Any write to a file, a rename onto its name or a `touch` changes its
//! change time, which no process can set back: a file whose stamp is the
//! one remembered holds the bytes that were hashed. A stamp is only
//! remembered once the file has been left alone for [`SETTLED`], so a
//! write in the same clock tick as the hashing cannot go unseen (git's
//! index has the same rule). What is remembered is signed with the cache's
//! key like the entries themselves: a planted record is not believed.

use std::fs::Metadata;
use std::time::{Duration, SystemTime};

/// A file changed this recently has its hash computed again each time.
pub(super) const SETTLED: Duration = Duration::from_secs(2);

/// A version of a file, as bytes to sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp([u8; 56]);

impl Stamp {
    /// The stamp of the file `meta` describes, if it has been left alone
    /// for `settle` ([`SETTLED`]) by `now` (else `None`: its hash is not
    /// remembered).
    #[cfg(unix)]
    pub(crate) fn settled(meta: &Metadata, now: SystemTime, settle: Duration) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let changed = SystemTime::UNIX_EPOCH
            + Duration::new(
                u64::try_from(meta.ctime()).ok()?,
                u32::try_from(meta.ctime_nsec()).ok()?,
            );
        if now.duration_since(changed).ok()? < settle {
            return None;
        }
        let mut bytes = [0u8; 56];
        let fields = [
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime().cast_unsigned(),
            meta.mtime_nsec().cast_unsigned(),
            meta.ctime().cast_unsigned(),
            meta.ctime_nsec().cast_unsigned(),
        ];
        for (chunk, field) in bytes.chunks_exact_mut(8).zip(fields) {
            chunk.copy_from_slice(&field.to_le_bytes());
        }
        Some(Self(bytes))
    }

    /// Without change times to go by, nothing is remembered.
    #[cfg(not(unix))]
    pub(crate) fn settled(_meta: &Metadata, _now: SystemTime, _settle: Duration) -> Option<Self> {
        None
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::super::CompileCache;
    use super::*;
    use wasmtime::Engine;
    use wasmtime::component::Component;

    /// A cache in `dir` that remembers a hash at once (not after
    /// [`SETTLED`]); each test waits a clock tick before it writes.
    fn cache(dir: &std::path::Path, engine: &Engine) -> CompileCache {
        let mut cache = CompileCache::new(
            Some(dir.join("cache")),
            Some(dir.join("key")),
            engine,
            super::super::DEFAULT_CACHE_MAX_BYTES,
        );
        cache.settle = Duration::ZERO;
        cache
    }

    fn tick() {
        std::thread::sleep(Duration::from_millis(50));
    }

    #[test]
    fn a_compiled_entry_swapped_after_its_check_is_refused_whatever_its_record_says() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let cache = cache(dir.path(), &engine);
        let empty = b"\0asm\x0d\0\x01\0".to_vec();
        // Another valid component: one that imports an instance.
        let other = {
            use wasm_encoder::{ComponentImportSection, ComponentTypeRef, ComponentTypeSection};
            let mut types = ComponentTypeSection::new();
            types.instance(&wasm_encoder::InstanceType::new());
            let mut imports = ComponentImportSection::new();
            imports.import("a:b/c", ComponentTypeRef::Instance(0));
            let mut component = wasm_encoder::Component::new();
            component.section(&types).section(&imports);
            component.finish()
        };
        for (key, wasm) in [("a", &empty), ("b", &other)] {
            cache
                .component(&engine, key, || (), || Component::new(&engine, wasm))
                .unwrap();
        }
        let entry = |key: &str, ext: &str| dir.path().join(format!("cache/{key}.{ext}"));
        assert!(cache.load(&engine, "a").is_some());
        let record = std::fs::read_to_string(entry("a", "mac")).unwrap();
        assert_eq!(record.lines().count(), 2, "its stamp is signed: {record}");
        assert!(cache.load(&engine, "a").is_some(), "loaded on its stamp");
        // b's compiled code in a's file: it would load, but is not a's.
        tick();
        std::fs::copy(entry("b", "cwasm"), entry("a", "cwasm")).unwrap();
        assert!(cache.load(&engine, "a").is_none());
        // Nor with a's record as it was when its stamp was good.
        std::fs::write(entry("a", "mac"), &record).unwrap();
        assert!(cache.load(&engine, "a").is_none());
        assert!(cache.load(&engine, "b").is_some());
    }

    #[test]
    fn a_plugin_files_hash_is_remembered_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(dir.path(), &Engine::default());
        let path = dir.path().join("tool.wasm");
        let hash = |bytes: &[u8]| blake3::hash(bytes).to_hex().to_string();
        std::fs::write(&path, b"one").unwrap();
        let first = cache.file_hash(&path).unwrap();
        assert_eq!((first.hash.as_str(), first.len), (hash(b"one").as_str(), 3));
        assert_eq!(first.bytes.as_deref(), Some(&b"one"[..]));
        let again = cache.file_hash(&path).unwrap();
        assert_eq!(again.hash, first.hash);
        assert!(again.bytes.is_none(), "remembered, not read");
        // The same length, its modification time set back: read again.
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        tick();
        std::fs::write(&path, b"two").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(modified).unwrap();
        let changed = cache.file_hash(&path).unwrap();
        assert_eq!(changed.hash, hash(b"two"));
        assert_eq!(changed.bytes.as_deref(), Some(&b"two"[..]));
        // A record someone planted, naming another hash, is not believed.
        let memo = cache.file_memo(&path).unwrap();
        let text = std::fs::read_to_string(&memo).unwrap();
        let planted = text.replace(&hash(b"two"), &hash(b"one"));
        std::fs::write(&memo, planted).unwrap();
        assert_eq!(cache.file_hash(&path).unwrap().hash, hash(b"two"));
    }

    #[test]
    fn a_stamp_is_kept_only_once_the_file_has_settled_and_any_write_changes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tool.wasm");
        std::fs::write(&path, b"one").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let now = SystemTime::now();
        assert_eq!(Stamp::settled(&meta, now, SETTLED), None, "just written");
        let first = Stamp::settled(&meta, now + SETTLED, SETTLED).expect("settled");
        // The same length, the modification time set back: still a change
        // (a clock tick later, as any write after a stamp was taken is).
        let modified = meta.modified().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(&path, b"two").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.modified().unwrap(), modified);
        let second = Stamp::settled(&meta, now + 2 * SETTLED, SETTLED).expect("settled");
        assert_ne!(first, second);
    }
}
