//! Trust for configuration files found in the workspace.
//!
//! A workspace can be a freshly cloned repository, and its files can be
//! written by the tools themselves; a `toolhost.toml` there could turn on
//! yolo mode, allow every command or grant `/`. So a workspace file is used
//! only once a person has trusted its exact content with
//! `toolhost config trust`: the content's blake3 is recorded, per path, in
//! the user's data directory (`$XDG_DATA_HOME/toolhost/trusted`). Any
//! change makes it untrusted again, and toolhost refuses to start rather
//! than silently ignore it.

use std::path::{Path, PathBuf};

/// The trust store: one line per file, `<blake3 hex> <canonical path>`.
fn store() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("toolhost").join("trusted"))
}

fn hash(content: &[u8]) -> String {
    blake3::hash(content).to_hex().to_string()
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

/// Whether `content` of `path` was trusted as it is now.
pub(crate) fn is_trusted(path: &Path, content: &[u8]) -> bool {
    let Some(store) = store() else {
        return false;
    };
    let Ok(text) = std::fs::read_to_string(store) else {
        return false;
    };
    let wanted = format!("{} {}", hash(content), canonical(path).display());
    text.lines().any(|line| line == wanted)
}

/// Record `content` as the trusted content of `path` (replacing what was
/// recorded for it); a dynamic tool's approval is recorded this way.
/// Returns the content hash.
pub(crate) fn trust_content(path: &Path, content: &[u8]) -> std::io::Result<String> {
    update(path, Some(&hash(content)))
}

/// Forget what was trusted for `path` (a rejected dynamic tool), and the
/// copies kept of it.
pub(crate) fn forget(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = copies(path) {
        match std::fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    update(path, None).map(|_| ())
}

/// Where the copies of what was approved at `path` are kept, beside the
/// trust store (no plugin is granted it).
fn copies(path: &Path) -> Option<PathBuf> {
    let store = store()?;
    let key = hash(canonical(path).as_os_str().as_encoded_bytes());
    Some(store.with_file_name("approved").join(key))
}

/// Keep `content` as the copy `name` of what was approved at `path` (a
/// dynamic tool's record and source, to show what changed since).
pub(crate) fn keep_copy(path: &Path, name: &str, content: &[u8]) -> std::io::Result<()> {
    let dir = copies(path).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no user data directory")
    })?;
    std::fs::create_dir_all(&dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    std::io::Write::write_all(&mut tmp, content)?;
    tmp.persist(dir.join(name)).map_err(|e| e.error)?;
    Ok(())
}

/// The copy `name` kept of what was approved at `path`, if there is one.
pub(crate) fn kept_copy(path: &Path, name: &str) -> Option<Vec<u8>> {
    std::fs::read(copies(path)?.join(name)).ok()
}

/// Replace the line for `path` with `digest`, or remove it.
fn update(path: &Path, digest: Option<&str>) -> std::io::Result<String> {
    let store = store().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no user data directory to keep the trust record in (set XDG_DATA_HOME)",
        )
    })?;
    let path = canonical(path);
    let suffix = format!(" {}", path.display());
    let dir = store.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir)?;
    // Several toolhost processes may trust files at once: one at a time,
    // and each replaces the store whole.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("trusted.lock"))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)?;
    let old = std::fs::read_to_string(&store).unwrap_or_default();
    let mut lines: Vec<String> = old
        .lines()
        .filter(|l| !l.ends_with(&suffix))
        .map(str::to_owned)
        .collect();
    if let Some(digest) = digest {
        lines.push(format!("{digest}{suffix}"));
    }
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, (lines.join("\n") + "\n").as_bytes())?;
    tmp.persist(&store).map_err(|e| e.error)?;
    Ok(digest.unwrap_or_default().to_owned())
}
