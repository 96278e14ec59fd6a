//! List a directory tree inside the workspace, for the list and search tools.
//!
//! In the sandbox the host walks the tree in one `files.walk` call (reading
//! a directory through WASI costs several host calls per entry); natively
//! [`list`] reads it with `std::fs`. Both leave `.git` out and never follow
//! a symlink; [`walk`] then adds the `.git` entries and describes symlinks
//! by what they point at, the same way for both.

use super::WorkspacePath;
use crate::ToolError;
use std::io;
use std::path::Path;

/// One entry found by [`walk`].
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
/// std::fs::create_dir(dir.path().join("src")).unwrap();
/// std::fs::write(dir.path().join("src/lib.rs"), "x").unwrap();
/// let root = toolhost_sdk::fs::resolve(".", &ctx).unwrap();
/// let entries = toolhost_sdk::fs::walk(&root, 2).unwrap();
/// let found: Vec<_> = entries.iter().map(|e| (e.path.shown(), e.depth, e.is_dir)).collect();
/// assert_eq!(found, [("src", 1, true), ("src/lib.rs", 2, false)]);
/// assert_eq!(entries[1].size, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Where it is.
    pub path: WorkspacePath,
    /// How deep below the starting directory (1 for its direct children).
    pub depth: usize,
    /// A directory (symlinks to directories count, but are not entered).
    pub is_dir: bool,
    /// The size in bytes, for files.
    pub size: u64,
}

/// Every file and directory under `base` down to `max_depth` levels, each
/// level in name order. Symlinks are followed for what they point at but
/// never entered (no loops, no leaving the workspace); `.git` is listed but
/// not entered; entries the sandbox refuses are skipped. An error reading
/// `base` itself is the error, for the model: `base` being a file is a
/// `retry` that says to read it instead.
///
/// ```no_run
/// # fn f(ctx: &toolhost_sdk::Context) -> Result<(), toolhost_sdk::ToolError> {
/// let src = toolhost_sdk::fs::resolve("src", ctx)?;
/// for entry in toolhost_sdk::fs::walk(&src, 2)? {
///     let _ = (entry.path.shown(), entry.size);
/// }
/// # Ok(()) }
/// ```
pub fn walk(base: &WorkspacePath, max_depth: usize) -> Result<Vec<Entry>, ToolError> {
    let found = list(base, max_depth).map_err(|e| {
        let is_file = std::fs::metadata(base).is_ok_and(|m| !m.is_dir());
        if is_file || e.kind() == io::ErrorKind::NotADirectory {
            ToolError::retry(format!(
                "`{base}` is a file, not a directory; read it with read_file"
            ))
        } else {
            super::io_error(e, base.shown())
        }
    })?;
    let mut out = Vec::with_capacity(found.len() + 1);
    if max_depth >= 1 {
        git_beside(base, 1, &mut out);
    }
    for item in found {
        let depth = item.rel.split('/').count();
        let path = base.join(&item.rel);
        let (is_dir, size) = match item.kind {
            Kind::File => (false, item.size),
            Kind::Dir => (true, 0),
            Kind::Symlink => match std::fs::metadata(&path) {
                Ok(meta) => (meta.is_dir(), if meta.is_dir() { 0 } else { meta.len() }),
                Err(_) => continue,
            },
        };
        if item.kind == Kind::Dir && depth < max_depth {
            git_beside(&path, depth + 1, &mut out);
        }
        out.push(Entry {
            path,
            depth,
            is_dir,
            size,
        });
    }
    // `Path` orders by components: each directory's entries right after it.
    out.sort_by(|a, b| Path::new(a.path.shown()).cmp(Path::new(b.path.shown())));
    Ok(out)
}

/// The `.git` inside `dir`, if there is one, listed as an entry `depth`
/// deep: a directory, a file (a worktree's), or a symlink described by what
/// it points at.
fn git_beside(dir: &WorkspacePath, depth: usize, out: &mut Vec<Entry>) {
    let path = dir.join(".git");
    let Ok(meta) = std::fs::metadata(&path) else {
        return;
    };
    out.push(Entry {
        path,
        depth,
        is_dir: meta.is_dir(),
        size: if meta.is_dir() { 0 } else { meta.len() },
    });
}

/// What a file-system entry is, as [`list`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Symlink,
}

/// One entry [`list`] found.
struct Found {
    /// Relative to the listed directory, `/`-separated.
    rel: String,
    kind: Kind,
    /// For files.
    size: u64,
}

/// Everything under `base` to `max_depth` levels but `.git` (at any level)
/// and what is neither a file, a directory nor a symlink, without following
/// symlinks, in no particular order: one host call in the sandbox.
#[cfg(target_arch = "wasm32")]
fn list(base: &WorkspacePath, max_depth: usize) -> io::Result<Vec<Found>> {
    use crate::__private::bindings::toolhost::plugin::files::{self, EntryKind, WalkOptions};
    let options = WalkOptions {
        respect_ignore: false,
        hidden: true,
        max_depth: (max_depth != usize::MAX).then(|| u32::try_from(max_depth).unwrap_or(u32::MAX)),
        metadata: true,
    };
    let entries = files::walk(base.shown(), options).map_err(super::file_error)?;
    Ok(entries
        .into_iter()
        .filter_map(|e| {
            let kind = match e.kind {
                EntryKind::File => Kind::File,
                EntryKind::Directory => Kind::Dir,
                EntryKind::Symlink => Kind::Symlink,
                EntryKind::Other => return None,
            };
            Some(Found {
                rel: e.path,
                kind,
                size: e.size,
            })
        })
        .collect())
}

/// Everything under `base` to `max_depth` levels but `.git` (at any level)
/// and what is neither a file, a directory nor a symlink, without following
/// symlinks, in no particular order.
#[cfg(not(target_arch = "wasm32"))]
fn list(base: &WorkspacePath, max_depth: usize) -> io::Result<Vec<Found>> {
    fn read(
        dir: &Path,
        rel: &str,
        depth: usize,
        max: usize,
        out: &mut Vec<Found>,
    ) -> io::Result<()> {
        for entry in std::fs::read_dir(dir)?.filter_map(Result::ok) {
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if name == ".git" {
                continue;
            }
            let name = name.to_string_lossy();
            let child = if rel.is_empty() {
                name.into_owned()
            } else {
                format!("{rel}/{name}")
            };
            let kind = if kind.is_symlink() {
                Kind::Symlink
            } else if kind.is_dir() {
                Kind::Dir
            } else if kind.is_file() {
                Kind::File
            } else {
                continue;
            };
            let size = match kind {
                Kind::File => entry.metadata().map_or(0, |m| m.len()),
                _ => 0,
            };
            if kind == Kind::Dir && depth < max {
                // Only the starting directory's errors matter to the caller.
                let _ = read(&entry.path(), &child, depth + 1, max, out);
            }
            out.push(Found {
                rel: child,
                kind,
                size,
            });
        }
        Ok(())
    }
    let mut out = Vec::new();
    if max_depth >= 1 {
        read(base.io(), "", 1, max_depth, &mut out)?;
    } else {
        std::fs::read_dir(base.io())?;
    }
    Ok(out)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use crate::{Context, fs::resolve};

    #[test]
    fn walks_sorted_to_the_depth_without_entering_git_or_symlinks() {
        let ws = tempfile::tempdir().unwrap();
        for d in ["a/b/c", ".git/objects", "z"] {
            std::fs::create_dir_all(ws.path().join(d)).unwrap();
        }
        std::fs::write(ws.path().join("a/f.txt"), "12345").unwrap();
        // A worktree's `.git` is a file: listed where the walk reaches it.
        std::fs::write(ws.path().join("a/b/.git"), "gitdir: /x").unwrap();
        std::os::unix::fs::symlink(ws.path().join("a"), ws.path().join("loop")).unwrap();
        let ctx = Context::for_workspace(ws.path().display().to_string());
        let root = resolve(".", &ctx).unwrap();
        let list = |depth| -> Vec<String> {
            walk(&root, depth)
                .unwrap()
                .iter()
                .map(|e| format!("{}:{}:{}", e.path, e.depth, e.is_dir))
                .collect()
        };
        assert_eq!(
            list(1),
            [".git:1:true", "a:1:true", "loop:1:true", "z:1:true"]
        );
        assert!(!list(2).contains(&"a/b/.git:3:false".to_owned()));
        // Each directory's entries right after it, in name order.
        assert_eq!(
            list(3),
            [
                ".git:1:true",
                "a:1:true",
                "a/b:2:true",
                "a/b/.git:3:false",
                "a/b/c:3:true",
                "a/f.txt:2:false",
                "loop:1:true",
                "z:1:true"
            ]
        );
        assert_eq!(list(usize::MAX), list(3));
        let file = walk(&root, 3)
            .unwrap()
            .into_iter()
            .find(|e| e.path.shown() == "a/f.txt")
            .unwrap();
        assert_eq!(file.size, 5);
        let err = walk(&resolve("a/f.txt", &ctx).unwrap(), 1).unwrap_err();
        assert!(
            matches!(&err, ToolError::Retry(m) if m.contains("is a file")),
            "{err}"
        );
    }
}
