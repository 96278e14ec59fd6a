//! The on-disk compile cache: each component is compiled by Cranelift once,
//! serialised, and afterwards loaded with an mmap'd deserialise.
//!
//! Entries are keyed by the component's content hash together with the
//! engine's `precompile_compatibility_hash`, so a different wasmtime version
//! or engine setting never loads an incompatible artifact. Beside each
//! `<key>.cwasm` sits `<key>.info.json`, the plugin's cached `describe()`
//! answer, so listing tools needs no instantiation at all.
//!
//! Deserialising trusts the file's contents, as wasmtime documents, so the
//! cache directory must be private: it is created 0700, and an existing
//! directory that is not owned by this user, or that others can write to, is
//! not used (the cache is disabled with a warning).

use crate::types::tool_info::ToolInfo;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The compile cache; with no directory it compiles in memory every time.
#[derive(Debug)]
pub(crate) struct CompileCache {
    dir: Option<PathBuf>,
    compat: u64,
}

impl CompileCache {
    /// A cache in `dir`, created if missing. If it cannot be created the
    /// cache is disabled with a warning: slower, never broken.
    pub(crate) fn new(dir: Option<PathBuf>, engine: &Engine) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let dir =
            dir.and_then(
                |dir| match create_private_dir(&dir).and_then(|()| check_private(&dir)) {
                    Ok(()) => Some(dir),
                    Err(err) => {
                        tracing::warn!(dir = %dir.display(), %err, "compile cache disabled");
                        None
                    }
                },
            );
        Self {
            dir,
            compat: hasher.finish(),
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
            return compile();
        };
        if path.is_file() {
            match deserialize(engine, &path) {
                Ok(component) => return Ok(component),
                Err(err) => {
                    tracing::warn!(path = %path.display(), %err, "recompiling: cached component unusable");
                }
            }
        }
        let compiled = compiling();
        let component = compile()?;
        drop(compiled);
        match component.serialize() {
            Ok(bytes) => write_atomic(&path, &bytes),
            Err(err) => tracing::warn!(%err, "cannot serialise a compiled component"),
        }
        Ok(component)
    }
}

#[expect(
    unsafe_code,
    reason = "wasmtime requires unsafe to load precompiled code"
)]
fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: the file was written by `CompileCache::component` into a
    // private directory, under a key that binds it to this component's bytes
    // and this engine's configuration. wasmtime checks the header and the
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
    let Some(dir) = path.parent() else { return };
    let result = tempfile::NamedTempFile::new_in(dir).and_then(|mut tmp| {
        tmp.write_all(bytes)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    });
    if let Err(err) = result {
        tracing::warn!(path = %path.display(), %err, "cannot write to the compile cache");
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
        assert!(CompileCache::new(Some(cache), &engine).dir.is_none());
    }
}
