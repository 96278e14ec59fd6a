//! The on-disk compile cache: each component is compiled by Cranelift once,
//! serialised, and afterwards loaded with an mmap'd deserialise.
//!
//! Entries are keyed by the component's content hash together with the
//! engine's `precompile_compatibility_hash`, so a different wasmtime version
//! or engine setting never loads an incompatible artifact. Beside each
//! `<key>.cwasm` sits `<key>.info.json`, the plugin's cached `describe()`
//! answer, so listing tools needs no instantiation at all.
//!
//! The directory is kept under a size budget (`[limits] cache_max_mb`,
//! 1 GiB by default): each toolhost build and each changed plugin adds
//! entries under new keys, and nothing else would ever remove the old ones.
//! A load touches its entry; storing a new one evicts the entries used
//! longest ago until the directory fits, never one used in the last
//! [`RECENTLY_USED`] (a process loading its plugins keeps what it just
//! loaded, whatever the budget). Half-written files a crashed process left
//! are removed after an hour.
//!
//! Deserialising trusts the file's contents, as wasmtime documents, so the
//! cache directory must be private: it is created 0700, and an existing
//! directory that is not owned by this user, or that others can write to, is
//! not used (the cache is disabled with a warning). No command can write it
//! either: the namespace sandbox hides it, and the fallback refuses a
//! writable path holding it. And each compiled file is loaded only when it
//! matches `<key>.mac`, a keyed BLAKE3 of the entry's key and its bytes
//! made when it was written, under a key kept in toolhost's data directory
//! (`compile-cache.key`, which no command ever reaches): a file swapped for
//! another entry's, or altered, is compiled again, with a warning. The
//! bytes are read in full for that once; afterwards the file's signed
//! stamp (its inode, size and change time, see [`stamp`]) vouches for
//! them, and `<name>.file` does the same for a plugin file's content hash,
//! so a one-shot `toolhost call` reads neither its plugins nor their
//! compiled code in full.

mod stamp;

use super::Linking;
use crate::types::tool_info::ToolInfo;
use prometheus_client::metrics::counter::Counter;
use stamp::Stamp;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The compile cache's default size budget.
pub(crate) const DEFAULT_CACHE_MAX_BYTES: u64 = 1 << 30;

/// An entry used this recently is never evicted.
const RECENTLY_USED: Duration = Duration::from_secs(10 * 60);

/// A temporary file older than this was left by a process that died
/// while writing it.
const ABANDONED: Duration = Duration::from_secs(60 * 60);

/// A file's content hash ([`CompileCache::file_hash`]).
#[derive(Debug)]
pub(crate) struct FileHash {
    /// BLAKE3, hex.
    pub(crate) hash: String,
    /// Its size in bytes.
    pub(crate) len: u64,
    /// Its bytes, if they were read to hash them.
    pub(crate) bytes: Option<Arc<[u8]>>,
}

/// The compile cache; with no directory it compiles in memory every time.
#[derive(Debug)]
pub(crate) struct CompileCache {
    dir: Option<PathBuf>,
    /// What the entries are signed with ([`mac_key`]), and the file it
    /// was read from if not the default.
    mac_key: [u8; 32],
    pub(super) key_file: Option<PathBuf>,
    /// The engine's compatibility, part of every key.
    pub(super) compat: u64,
    /// Most bytes the directory keeps (see the module docs).
    pub(super) max_bytes: u64,
    /// Components loaded from the cache, and compiled (for `/metrics`).
    pub(crate) hits: Counter,
    pub(crate) compiles: Counter,
    /// How long a file is left alone before its hash is remembered
    /// ([`stamp::SETTLED`]).
    settle: Duration,
}

impl CompileCache {
    /// A cache in `dir`, created if missing. If it cannot be created the
    /// cache is disabled with a warning: slower, never broken.
    pub(crate) fn new(
        dir: Option<PathBuf>,
        key_file: Option<PathBuf>,
        engine: &Engine,
        max_bytes: u64,
    ) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let usable = |dir: &Path| {
            create_private_dir(dir)?;
            check_private(dir)?;
            mac_key(&key_file.clone().map_or_else(default_key_file, Ok)?)
        };
        let (dir, mac_key) = match dir.map(|dir| (usable(&dir), dir)) {
            Some((Ok(key), dir)) => (Some(dir), key),
            Some((Err(err), dir)) => {
                tracing::warn!(dir = %dir.display(), %err, "compile cache disabled");
                (None, [0; 32])
            }
            None => (None, [0; 32]),
        };
        Self {
            dir,
            mac_key,
            key_file: key_file.or_else(|| default_key_file().ok()),
            compat: hasher.finish(),
            max_bytes,
            hits: Counter::default(),
            compiles: Counter::default(),
            settle: stamp::SETTLED,
        }
    }

    /// The default location: `$XDG_CACHE_HOME/toolhost` (or the platform's equivalent).
    pub(crate) fn default_dir() -> Option<PathBuf> {
        dirs::cache_dir().map(|d| d.join("toolhost"))
    }

    /// The entry key for a component with this content hash. The toolhost
    /// version is part of it, so a new host re-checks every `describe()`.
    pub(crate) fn key(&self, content_hash: &str) -> String {
        let mut h = blake3::Hasher::new();
        h.update(content_hash.as_bytes());
        h.update(&self.compat.to_le_bytes());
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.finalize().to_hex()[..32].to_owned()
    }

    /// The directory entries are kept in, if any.
    pub(super) fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Whether compiled components are kept on disk at all.
    pub(crate) fn is_kept(&self) -> bool {
        self.dir.is_some()
    }

    /// Whether a compiled component is kept for `key` (it may still turn
    /// out unusable when loaded, and is then compiled again).
    pub(crate) fn holds(&self, key: &str) -> bool {
        self.path(key, "cwasm").is_some_and(|p| p.is_file())
    }

    fn path(&self, key: &str, ext: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{key}.{ext}")))
    }

    /// The cached `describe()` answer, if present and readable.
    pub(crate) fn load_info(&self, key: &str) -> Option<ToolInfo> {
        let text = std::fs::read(self.path(key, "info.json")?).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Remember a `describe()` answer; failures only cost speed.
    pub(crate) fn store_info(&self, key: &str, info: &ToolInfo) {
        if let (Some(path), Ok(bytes)) = (self.path(key, "info.json"), serde_json::to_vec(info)) {
            write_atomic(&path, &bytes);
        }
    }

    /// The compiled component if the cache holds a usable one (marked used);
    /// never compiles. Its bytes are checked against the entry's `.mac`
    /// once; afterwards the file's signed stamp vouches for them (see
    /// [`stamp`]), so a load does not read the whole file again.
    pub(crate) fn load(&self, engine: &Engine, key: &str) -> Option<Component> {
        let path = self.path(key, "cwasm")?;
        let mac_path = self.path(key, "mac")?;
        let mut file = std::fs::File::open(&path).ok()?;
        let meta = file.metadata().ok().filter(std::fs::Metadata::is_file)?;
        let recorded = std::fs::read_to_string(&mac_path).unwrap_or_default();
        let mut lines = recorded.lines().map(str::trim);
        let (content, seen) = (lines.next().unwrap_or_default(), lines.next());
        let what = format!("seen {key} {content}");
        if seen.is_none() || seen != self.signed_stamp(&what, &meta).as_deref() {
            let actual = self.mac(key, &mut file).ok()?;
            if content != actual {
                tracing::warn!(
                    path = %path.display(),
                    "a cached compiled component does not match what toolhost recorded when \
                     it wrote it (it was changed or replaced since); it is not loaded, and is \
                     compiled again"
                );
                return None;
            }
            if let Some(seen) = self.settled_signature(&what, &meta, file.metadata().ok()) {
                remember(&mac_path, &format!("{content}\n{seen}\n"));
            }
        }
        match deserialize(engine, &path) {
            Ok(component) => {
                // The signature marks it used: the compiled file keeps its
                // change time, which its stamp holds.
                touch(&mac_path);
                Some(component)
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), %err, "cached component unusable; it is compiled again when needed");
                None
            }
        }
    }

    /// The content hash (BLAKE3, hex) of the file `path`, and its bytes
    /// if they had to be read: a file hashed before and unchanged since
    /// (its signed stamp, see [`stamp`]) is not read at all.
    pub(crate) fn file_hash(&self, path: &Path) -> std::io::Result<FileHash> {
        let meta = std::fs::metadata(path)?;
        let memo = self.file_memo(path);
        let what = |hash: &str| format!("file {} {hash}", path.display());
        if let Some(text) = memo.as_ref().and_then(|m| std::fs::read_to_string(m).ok())
            && let Some((hash, seen)) = text.trim().split_once('\n')
            && self.signed_stamp(&what(hash), &meta).as_deref() == Some(seen)
        {
            return Ok(FileHash {
                hash: hash.to_owned(),
                len: meta.len(),
                bytes: None,
            });
        }
        let bytes: Arc<[u8]> = std::fs::read(path)?.into();
        let hash = blake3::hash(&bytes).to_hex().to_string();
        let after = std::fs::metadata(path).ok();
        if let (Some(memo), Some(seen)) = (memo, self.settled_signature(&what(&hash), &meta, after))
        {
            remember(&memo, &format!("{hash}\n{seen}\n"));
        }
        Ok(FileHash {
            hash,
            len: bytes.len() as u64,
            bytes: Some(bytes),
        })
    }

    /// Where the hash of the file `path` is remembered.
    fn file_memo(&self, path: &Path) -> Option<PathBuf> {
        let name = blake3::hash(path.as_os_str().as_encoded_bytes()).to_hex();
        self.path(&name[..32], "file")
    }

    /// The compiled component: deserialised from the cache on a hit; on a
    /// miss made by `compile` (and stored). `compiling` is called when
    /// Cranelift has to run; what it returns is dropped when compiling ends.
    pub(crate) fn component<T>(
        &self,
        engine: &Engine,
        key: &str,
        compiling: impl FnOnce() -> T,
        compile: impl FnOnce() -> wasmtime::Result<Component>,
    ) -> wasmtime::Result<Component> {
        let Some(path) = self.path(key, "cwasm") else {
            let _compiling = compiling();
            self.compiles.inc();
            return compile();
        };
        if let Some(component) = self.load(engine, key) {
            self.hits.inc();
            return Ok(component);
        }
        self.compiles.inc();
        let compiled = compiling();
        let component = compile()?;
        drop(compiled);
        match component.serialize() {
            Ok(bytes) => {
                if let (Some(mac), Ok(signed)) =
                    (self.path(key, "mac"), self.mac(key, &mut bytes.as_slice()))
                {
                    write_atomic(&mac, signed.as_bytes());
                }
                write_atomic(&path, &bytes);
                if let Some(dir) = &self.dir {
                    prune(dir, self.max_bytes, SystemTime::now());
                }
            }
            Err(err) => tracing::warn!(%err, "cannot serialise a compiled component"),
        }
        Ok(component)
    }
}

impl CompileCache {
    /// The signature of the stamp of the file `meta` describes, vouching
    /// for `what`; `None` if it has not settled (see [`stamp`]).
    fn signed_stamp(&self, what: &str, meta: &std::fs::Metadata) -> Option<String> {
        let stamp = Stamp::settled(meta, SystemTime::now(), self.settle)?;
        self.mac(what, &mut stamp.as_bytes()).ok()
    }

    /// [`Self::signed_stamp`] of a file just read, if it was not changed
    /// while it was read (`before` and `after` it): what to remember.
    fn settled_signature(
        &self,
        what: &str,
        before: &std::fs::Metadata,
        after: Option<std::fs::Metadata>,
    ) -> Option<String> {
        let seen = self.signed_stamp(what, before)?;
        (after.and_then(|after| self.signed_stamp(what, &after)) == Some(seen.clone()))
            .then_some(seen)
    }

    /// The keyed hash of entry `key` whose compiled bytes `read` gives.
    fn mac(&self, key: &str, read: &mut impl std::io::Read) -> std::io::Result<String> {
        let mut hasher = blake3::Hasher::new_keyed(&self.mac_key);
        hasher.update(key.as_bytes());
        hasher.update_reader(read)?;
        Ok(hasher.finalize().to_hex().to_string())
    }
}

/// Where the key signing cache entries is kept: toolhost's data directory,
/// which no command reaches.
fn default_key_file() -> std::io::Result<PathBuf> {
    dirs::data_dir()
        .map(|d| d.join("toolhost/compile-cache.key"))
        .ok_or_else(|| {
            std::io::Error::other(
                "there is no data directory (set HOME or XDG_DATA_HOME) to keep the key that \
                 signs compiled components",
            )
        })
}

/// The key in `path`, made (random, 0600) if there is none.
fn mac_key(path: &Path) -> std::io::Result<[u8; 32]> {
    use std::os::unix::fs::OpenOptionsExt as _;
    for _ in 0..2 {
        match std::fs::read(path) {
            Ok(bytes) => {
                return bytes.try_into().map_err(|_| {
                    std::io::Error::other(format!(
                        "{} is not a key toolhost made (32 bytes); delete it and toolhost makes \
                         a new one",
                        path.display()
                    ))
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        let mut key = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut key))?;
        let made = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .and_then(|mut f| f.write_all(&key));
        match made {
            Ok(()) => return Ok(key),
            // Another process made it first: read theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "cannot read or make {}",
        path.display()
    )))
}

/// Mark an entry used now (what eviction goes by); failing only makes it
/// look older.
fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Evict entries, least recently used first, until `dir` holds at most
/// `max_bytes`, sparing those used within [`RECENTLY_USED`] of `now`; and
/// remove temporary files abandoned for [`ABANDONED`]. Files another
/// process removes meanwhile are skipped; one that has an entry mapped
/// keeps its mapping (the file goes when it is unmapped).
fn prune(dir: &Path, max_bytes: u64, now: SystemTime) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let age = |t: SystemTime| now.duration_since(t).unwrap_or_default();
    // Per key: its files' bytes and when it was last used.
    let mut entries: HashMap<String, (u64, SystemTime)> = HashMap::new();
    for file in listing.flatten() {
        let (Ok(meta), Some(name)) = (
            file.metadata(),
            file.file_name().to_str().map(str::to_owned),
        ) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let modified = meta.modified().unwrap_or(now);
        if name.starts_with(".tmp") {
            if age(modified) > ABANDONED {
                let _ = std::fs::remove_file(file.path());
            }
            continue;
        }
        let Some(key) = name
            .strip_suffix(".cwasm")
            .or_else(|| name.strip_suffix(".info.json"))
            .or_else(|| name.strip_suffix(".mac"))
            .or_else(|| name.strip_suffix(".file"))
        else {
            continue;
        };
        let entry = entries.entry(key.to_owned()).or_insert((0, modified));
        entry.0 += meta.len();
        entry.1 = entry.1.max(modified);
    }
    let mut total: u64 = entries.values().map(|(bytes, _)| bytes).sum();
    if total <= max_bytes {
        return;
    }
    let mut old: Vec<(String, u64, SystemTime)> = entries
        .into_iter()
        .filter(|(_, (_, used))| age(*used) >= RECENTLY_USED)
        .map(|(key, (bytes, used))| (key, bytes, used))
        .collect();
    old.sort_by_key(|(_, _, used)| *used);
    for (key, bytes, _) in old {
        if total <= max_bytes {
            break;
        }
        for ext in ["cwasm", "info.json", "mac", "file"] {
            let _ = std::fs::remove_file(dir.join(format!("{key}.{ext}")));
        }
        total = total.saturating_sub(bytes);
        tracing::debug!(%key, bytes, "compile cache: evicted the entry used longest ago");
    }
}

#[expect(
    unsafe_code,
    reason = "wasmtime requires unsafe to load precompiled code"
)]
pub(super) fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: the file was written by `CompileCache::component` into a
    // private directory, under a key that binds it to this component's bytes
    // and this engine's configuration, or by a helper process of this
    // binary into a new private file there (`helper.rs`), or is the
    // descriptor the runtime kept of such a file once it had unlinked it
    // (`quick.rs`). wasmtime checks the header and the
    // compatibility of the artifact before using it.
    unsafe { Component::deserialize_file(engine, path) }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Refuse a cache directory someone else could plant compiled code in.
#[cfg(unix)]
fn check_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir)?;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(std::io::Error::other(format!(
            "{} is owned by uid {}, not by this user (uid {me})",
            dir.display(),
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "{} can be written by other users (mode {:o}); run `chmod go-w` on it",
            dir.display(),
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

/// Write through a temporary file and a rename, so a reader never sees half a file.
fn write_atomic(path: &Path, bytes: &[u8]) {
    if let Err(err) = try_write_atomic(path, bytes) {
        tracing::warn!(path = %path.display(), %err, "cannot write to the compile cache");
    }
}

/// [`write_atomic`] of what only spares work later (a stamp's record): a
/// cache it cannot be written to is only slower, and no warning on every
/// load.
fn remember(path: &Path, text: &str) {
    if let Err(err) = try_write_atomic(path, text.as_bytes()) {
        tracing::debug!(path = %path.display(), %err, "cannot remember a hash in the compile cache");
    }
}

fn try_write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no directory"))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// What the runtime asks of its compile cache.
impl super::Runtime {
    /// Whether the compile cache holds the component keyed `key`, compiled
    /// as `linking` says (a prepared script: or the shared snapshot its
    /// calls fall back to): letting go of it loaded then costs only a load.
    pub(crate) fn holds_compiled(&self, key: &str, linking: Linking) -> bool {
        self.cache.holds(&super::stored_key(key, linking))
            || matches!(linking, Linking::Prepared(_))
                && self.holds_compiled(key, Linking::Preinitialised)
    }

    /// Whether the compile cache holds the snapshot of the component keyed
    /// `key` with `script` prepared.
    pub(crate) fn holds_prepared(&self, key: &str, script: &str) -> bool {
        self.cache
            .holds(&super::stored_key(key, Linking::Prepared(script)))
    }

    /// Components loaded from the compile cache, and compiled, so far
    /// (shared counters, for `/metrics`).
    pub(crate) fn cache_counters(&self) -> (Counter, Counter) {
        (self.cache.hits.clone(), self.cache.compiles.clone())
    }

    /// The cache key of a component whose content hash is `hash`.
    pub(crate) fn cache_key(&self, hash: &str) -> String {
        self.cache.key(hash)
    }

    /// The content hash of the file `path` (see
    /// [`CompileCache::file_hash`]): read and hashed only if it changed
    /// since it last was.
    pub(crate) fn file_hash(&self, path: &Path) -> std::io::Result<FileHash> {
        self.cache.file_hash(path)
    }

    /// The tool-info cached for `key`, if `describe()` ran before.
    pub(crate) fn cached_info(&self, key: &str) -> Option<ToolInfo> {
        self.cache.load_info(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_cache_others_can_write_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("c");
        create_private_dir(&cache).unwrap();
        assert!(check_private(&cache).is_ok());
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = check_private(&cache).unwrap_err();
        assert!(err.to_string().contains("chmod go-w"), "{err}");
        let engine = Engine::default();
        assert!(
            CompileCache::new(Some(cache), None, &engine, DEFAULT_CACHE_MAX_BYTES)
                .dir
                .is_none()
        );
    }

    /// A file of `bytes` (sparse: it takes no disk) last used `ago`.
    fn plant(dir: &Path, name: &str, bytes: u64, ago: Duration) {
        let file = std::fs::File::create(dir.join(name)).unwrap();
        file.set_len(bytes).unwrap();
        file.set_modified(SystemTime::now() - ago).unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    const MB: u64 = 1 << 20;
    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn an_oversized_cache_evicts_what_was_used_longest_ago_until_it_fits() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        plant(d, "a.cwasm", 6 * MB, 3 * HOUR);
        plant(d, "a.info.json", MB, 3 * HOUR);
        plant(d, "b.cwasm", 6 * MB, 2 * HOUR);
        // Its description was written long ago, its code used lately: the
        // entry counts as used when either file was.
        plant(d, "c.info.json", MB, 5 * HOUR);
        plant(d, "c.cwasm", 6 * MB, HOUR);
        plant(d, "recent.cwasm", 6 * MB, Duration::from_secs(60));
        plant(d, ".tmpabandoned", MB, 2 * HOUR);
        plant(d, ".tmpwriting", MB, Duration::ZERO);
        plant(d, "unrelated.txt", 50 * MB, 9 * HOUR);
        // 26 MB of entries; a 14 MB budget: `a` (7) and `b` (6) go, `c` stays.
        prune(d, 14 * MB, SystemTime::now());
        assert_eq!(
            names(d),
            [
                ".tmpwriting",
                "c.cwasm",
                "c.info.json",
                "recent.cwasm",
                "unrelated.txt"
            ]
        );
    }

    #[test]
    fn entries_used_lately_stay_whatever_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        plant(d, "old.cwasm", 4 * MB, RECENTLY_USED + HOUR);
        plant(d, "loading.cwasm", 40 * MB, RECENTLY_USED / 2);
        plant(d, "loaded.cwasm", 40 * MB, Duration::ZERO);
        prune(d, MB, SystemTime::now());
        assert_eq!(names(d), ["loaded.cwasm", "loading.cwasm"]);
        // Within budget nothing goes, however old.
        plant(d, "old.cwasm", 4 * MB, 100 * HOUR);
        prune(d, 100 * MB, SystemTime::now());
        assert_eq!(names(d), ["loaded.cwasm", "loading.cwasm", "old.cwasm"]);
    }

    // A link planted under an entry's name (the directory is private, so
    // only this user could) is not followed: what it points at stays,
    // however old and large, and the link is left alone.
    #[cfg(unix)]
    #[test]
    fn eviction_follows_no_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        plant(outside.path(), "precious.cwasm", 64 * MB, 100 * HOUR);
        let target = outside.path().join("precious.cwasm");
        std::os::unix::fs::symlink(&target, dir.path().join("link.cwasm")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("dir.cwasm")).unwrap();
        plant(dir.path(), "old.cwasm", 4 * MB, 100 * HOUR);
        prune(dir.path(), MB, SystemTime::now());
        assert_eq!(names(dir.path()), ["dir.cwasm", "link.cwasm"]);
        assert_eq!(std::fs::metadata(&target).unwrap().len(), 64 * MB);
        assert_eq!(names(outside.path()), ["precious.cwasm"]);
    }

    #[test]
    fn a_load_marks_its_entry_used() {
        let dir = tempfile::tempdir().unwrap();
        plant(dir.path(), "k.cwasm", MB, 30 * HOUR);
        let path = dir.path().join("k.cwasm");
        touch(&path);
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert!(SystemTime::now().duration_since(modified).unwrap() < HOUR);
    }
}
