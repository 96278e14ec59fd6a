//! The directory walk under every search: ripgrep's `ignore` walker,
//! configured once here. Natively it runs directly; in the sandbox the host
//! runs this same code (its `files.walk` import), because reading
//! directories through WASI costs several host calls per entry.

use std::path::Path;

/// What a walk lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkOptions {
    /// Skip what `.gitignore`, `.ignore` and `.git/info/exclude` exclude (in
    /// any directory, whether or not it is a git repository).
    pub respect_ignore: bool,
    /// Include dot-files and dot-directories.
    pub hidden: bool,
    /// How deep: 1 lists the directory's own entries; `None` is no limit.
    pub max_depth: Option<usize>,
    /// Fill in sizes and modification times (a system call per entry).
    pub metadata: bool,
}

/// One entry of a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    /// Relative to the walked directory, `/`-separated.
    pub path: String,
    /// A directory (or a symlink to one).
    pub is_dir: bool,
    /// A symbolic link (reported, never followed).
    pub is_symlink: bool,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Last modification in nanoseconds since the Unix epoch (0 if unknown).
    pub modified_ns: u64,
}

/// Walk the directory `root` on the local filesystem: `.git` is never
/// entered, symlinks are never followed, entries come sorted by path, and
/// unreadable entries are skipped. The host uses this to serve `files.walk`;
/// plugins call [`Scope`](super::Scope) instead.
pub fn walk_native(root: &Path, options: &WalkOptions) -> std::io::Result<Vec<WalkEntry>> {
    if !std::fs::metadata(root)?.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory",
        ));
    }
    let mut walker = ignore::WalkBuilder::new(root);
    walker
        .standard_filters(false)
        .hidden(!options.hidden)
        .ignore(options.respect_ignore)
        .git_ignore(options.respect_ignore)
        .git_exclude(options.respect_ignore)
        .parents(options.respect_ignore)
        .require_git(false)
        .follow_links(false)
        .max_depth(options.max_depth)
        .filter_entry(|e| e.file_name() != ".git");
    // Directories are read on every core: walking is mostly system calls.
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let found = std::sync::Mutex::new(Vec::new());
    walker.threads(threads).build_parallel().run(|| {
        let found = &found;
        Box::new(move |entry| {
            if let Ok(entry) = entry
                && let Some(e) = describe(root, &entry, options)
            {
                found
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(e);
            }
            ignore::WalkState::Continue
        })
    });
    let mut out = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// One walked entry as a [`WalkEntry`]; `None` for the root itself.
fn describe(root: &Path, entry: &ignore::DirEntry, options: &WalkOptions) -> Option<WalkEntry> {
    if entry.depth() == 0 {
        return None;
    }
    let kind = entry.file_type()?;
    let (mut is_dir, mut size, mut modified_ns) = (kind.is_dir(), 0, 0);
    // A symlink is described by what it points at, when that exists.
    if (options.metadata || kind.is_symlink())
        && let Ok(m) = std::fs::metadata(entry.path())
    {
        is_dir = m.is_dir();
        if options.metadata {
            size = if is_dir { 0 } else { m.len() };
            modified_ns = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        }
    }
    let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
    Some(WalkEntry {
        path: rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        is_dir,
        is_symlink: kind.is_symlink(),
        size,
        modified_ns,
    })
}

/// Walk `base` in the sandbox (through the host) or natively.
pub(super) fn walk(
    base: &crate::fs::WorkspacePath,
    options: &WalkOptions,
) -> std::io::Result<Vec<WalkEntry>> {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::__private::bindings::toolhost::plugin::files::{
            self, FileError, WalkOptions as Wit,
        };
        let wit = Wit {
            respect_ignore: options.respect_ignore,
            hidden: options.hidden,
            max_depth: options
                .max_depth
                .map(|d| u32::try_from(d).unwrap_or(u32::MAX)),
            metadata: options.metadata,
        };
        files::walk(base.shown(), wit)
            .map(|entries| {
                entries
                    .into_iter()
                    .map(|e| WalkEntry {
                        path: e.path,
                        is_dir: e.is_dir,
                        is_symlink: e.is_symlink,
                        size: e.size,
                        modified_ns: e.modified_ns,
                    })
                    .collect()
            })
            .map_err(|e| {
                use std::io::{Error, ErrorKind};
                match e {
                    FileError::NotFound(m) => Error::new(ErrorKind::NotFound, m),
                    FileError::Denied(m) => Error::new(ErrorKind::PermissionDenied, m),
                    FileError::Invalid(m) => Error::new(ErrorKind::NotADirectory, m),
                    FileError::Failed(m) => Error::other(m),
                }
            })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        walk_native(base.io(), options)
    }
}
