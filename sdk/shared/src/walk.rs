//! The directory walk under every search (feature `walk`): ripgrep's
//! `ignore` walker, configured once here. The host runs it to serve the
//! `files.walk` import, because reading directories through WASI costs
//! several host calls per entry; native runs of the search tools call it
//! directly.

use std::path::Path;

/// What a walk lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkOptions {
    /// Skip what `.gitignore`, `.ignore` and `.git/info/exclude` exclude, in
    /// the walked directory and below it (whether or not it is a git
    /// repository). Ignore files above the walked directory are not read.
    pub respect_ignore: bool,
    /// Include dot-files and dot-directories.
    pub hidden: bool,
    /// How deep: 1 lists the directory's own entries; `None` is no limit.
    pub max_depth: Option<usize>,
    /// Fill in sizes and modification times (a system call per entry).
    pub metadata: bool,
}

/// What a walked entry is. Symlinks are never followed, so a symlink is
/// [`EntryKind::Symlink`] whatever it points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// A FIFO, socket or device: never opened by a search (opening a FIFO
    /// blocks until a writer comes).
    Other,
}

impl EntryKind {
    fn of(kind: std::fs::FileType) -> Self {
        if kind.is_symlink() {
            Self::Symlink
        } else if kind.is_dir() {
            Self::Directory
        } else if kind.is_file() {
            Self::File
        } else {
            Self::Other
        }
    }
}

/// One entry of a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    /// Relative to the walked directory, `/`-separated.
    pub path: String,
    /// What it is (a symlink is never described by its target).
    pub kind: EntryKind,
    /// Size in bytes of a regular file (0 for anything else, or without
    /// `metadata`).
    pub size: u64,
    /// Last modification of the entry itself in nanoseconds since the Unix
    /// epoch (0 if unknown, or without `metadata`).
    pub modified_ns: u64,
}

/// Walk the directory `root` on the local filesystem: `.git` is never
/// entered, symlinks are neither followed nor stat'ed through, ignore files
/// are read in `root` and below it but not above it, entries come sorted by
/// path, and unreadable entries are skipped. The host uses this to serve
/// `files.walk`; the search tools reach it through that import.
///
/// ```
/// use toolhost_shared::walk::{EntryKind, WalkOptions, walk_native};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a.txt"), "x").unwrap();
/// let options = WalkOptions { respect_ignore: true, hidden: false, max_depth: None, metadata: true };
/// let entries = walk_native(dir.path(), &options).unwrap();
/// assert_eq!((entries[0].path.as_str(), entries[0].kind, entries[0].size), ("a.txt", EntryKind::File, 1));
/// ```
pub fn walk_native(root: &Path, options: &WalkOptions) -> std::io::Result<Vec<WalkEntry>> {
    walk_native_except(root, options, &|_: &Path| false)
}

/// [`walk_native`] without the entries `leave_out` picks (given each
/// entry's full path, `root` joined to it), judged on the walk's own
/// threads; nothing beneath a directory left out is listed or walked (the
/// walker has read its entries by then, but never visits them).
///
/// ```
/// use toolhost_shared::walk::{WalkOptions, walk_native_except};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("keys")).unwrap();
/// std::fs::write(dir.path().join("keys/id"), "x").unwrap();
/// std::fs::write(dir.path().join("a.txt"), "x").unwrap();
/// let options = WalkOptions { respect_ignore: true, hidden: false, max_depth: None, metadata: false };
/// let entries = walk_native_except(dir.path(), &options, &|p| p.ends_with("keys")).unwrap();
/// let paths: Vec<_> = entries.iter().map(|e| e.path.as_str()).collect();
/// assert_eq!(paths, ["a.txt"]);
/// ```
pub fn walk_native_except(
    root: &Path,
    options: &WalkOptions,
    leave_out: &(dyn Fn(&Path) -> bool + Sync),
) -> std::io::Result<Vec<WalkEntry>> {
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
        // The walked directory is the boundary: ignore files above it (and
        // the user's global gitignore) belong to the host, not to the tool.
        .parents(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(options.max_depth)
        .filter_entry(|e| e.file_name() != ".git");
    let found = std::sync::Mutex::new(Vec::new());
    let visit = |entry: Result<ignore::DirEntry, ignore::Error>| {
        if let Ok(entry) = &entry
            && entry.depth() > 0
            && leave_out(entry.path())
        {
            // Not listed; a directory is not entered either.
            return ignore::WalkState::Skip;
        }
        if let Ok(entry) = entry
            && let Some(e) = describe(root, &entry, options)
        {
            found
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(e);
        }
        ignore::WalkState::Continue
    };
    if options.max_depth.is_some_and(|depth| depth <= 1) {
        // One directory: read on this thread (starting walkers for it
        // cost more than reading it). Nothing below it is entered anyway.
        for entry in walker.build() {
            visit(entry);
        }
    } else {
        // Directories are read on every core: walking is mostly system calls.
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        walker
            .threads(threads)
            .build_parallel()
            .run(|| Box::new(visit));
    }
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
    let kind = EntryKind::of(entry.file_type()?);
    let (mut size, mut modified_ns) = (0, 0);
    // Without following links, `DirEntry::metadata` is an lstat: a symlink
    // is described as itself, never by what it points at (which may be
    // outside the walked directory).
    if options.metadata
        && let Ok(m) = entry.metadata()
    {
        size = if kind == EntryKind::File { m.len() } else { 0 };
        modified_ns = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }
    let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
    Some(WalkEntry {
        path: rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        kind,
        size,
        modified_ns,
    })
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    fn options(respect_ignore: bool) -> WalkOptions {
        WalkOptions {
            respect_ignore,
            hidden: true,
            max_depth: None,
            metadata: true,
        }
    }

    fn listed(root: &Path, respect_ignore: bool) -> Vec<(String, EntryKind, u64)> {
        walk_native(root, &options(respect_ignore))
            .unwrap()
            .into_iter()
            .map(|e| (e.path, e.kind, e.size))
            .collect()
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// One directory is read on the calling thread: what is left out goes
    /// alone (its siblings stay, a directory is not entered), the same as
    /// the walk on every core gives at that depth.
    #[test]
    fn one_directory_leaves_out_only_what_it_is_told() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..20 {
            write(&dir.path().join(format!("f{i:02}.txt")), "x");
        }
        write(&dir.path().join("keys/id"), "x");
        write(&dir.path().join("src/main.rs"), "x");
        let leave_out = |p: &Path| p.ends_with("f07.txt") || p.ends_with("keys");
        let walk = |max_depth| {
            let options = WalkOptions {
                max_depth,
                ..options(false)
            };
            walk_native_except(dir.path(), &options, &leave_out)
                .unwrap()
                .into_iter()
                .map(|e| e.path)
                .collect::<Vec<_>>()
        };
        let one = walk(Some(1));
        assert_eq!(one.len(), 20, "{one:?}");
        assert!(
            !one.iter().any(|p| p == "f07.txt" || p == "keys"),
            "{one:?}"
        );
        assert!(one.contains(&"src".to_owned()) && one.contains(&"f19.txt".to_owned()));
        let all = walk(Some(2));
        let at_one: Vec<_> = all.iter().filter(|p| !p.contains('/')).cloned().collect();
        assert_eq!(one, at_one, "the same as the walk on every core");
        assert!(
            all.contains(&"src/main.rs".to_owned()) && !all.iter().any(|p| p.starts_with("keys"))
        );
    }

    // Regression: symlinks were stat'ed through (std::fs::metadata), which
    // told a tool the kind, size and time of whatever they point at on the host.
    #[test]
    fn symlinks_are_described_as_themselves_never_by_their_target() {
        let outside = tempfile::tempdir().unwrap();
        write(&outside.path().join("secret.txt"), "0123456789");
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("dir-link")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            root.path().join("file-link"),
        )
        .unwrap();
        let entries = walk_native(root.path(), &options(false)).unwrap();
        assert_eq!(
            entries
                .iter()
                .map(|e| (e.path.as_str(), e.kind, e.size))
                .collect::<Vec<_>>(),
            [
                ("dir-link", EntryKind::Symlink, 0),
                ("file-link", EntryKind::Symlink, 0)
            ]
        );
        // The times are the links' own.
        let own = std::fs::symlink_metadata(root.path().join("file-link"))
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        assert_eq!(u128::from(entries[1].modified_ns), own);
    }

    // Regression: `.parents(true)` read ignore files above the walked
    // directory, outside what the tool was granted.
    #[test]
    fn ignore_files_count_in_the_root_and_below_but_not_above_it() {
        let outer = tempfile::tempdir().unwrap();
        write(&outer.path().join(".gitignore"), "*.txt\n");
        write(&outer.path().join(".ignore"), "*.md\n");
        let root = outer.path().join("granted");
        for f in [
            "a.txt",
            "b.md",
            "g.log",
            "i.log",
            "e.log",
            "sub/s.log",
            "sub/keep.rs",
        ] {
            write(&root.join(f), "x");
        }
        write(&root.join(".gitignore"), "g.log\n");
        write(&root.join(".ignore"), "i.log\n");
        write(&root.join(".git/info/exclude"), "e.log\n");
        write(&root.join("sub/.gitignore"), "s.log\n");
        let file = |p: &str| (p.to_owned(), EntryKind::File, 1);
        let dotfile = |p: &str, n: u64| (p.to_owned(), EntryKind::File, n);
        assert_eq!(
            listed(&root, true),
            [
                dotfile(".gitignore", 6),
                dotfile(".ignore", 6),
                file("a.txt"),
                file("b.md"),
                ("sub".to_owned(), EntryKind::Directory, 0),
                dotfile("sub/.gitignore", 6),
                file("sub/keep.rs"),
            ]
        );
        assert_eq!(listed(&root, false).len(), 11, "{:?}", listed(&root, false));
    }

    // Regression: a FIFO was listed as a file, and searching it hung.
    #[test]
    fn fifos_are_other() {
        let root = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(root.path().join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(
            listed(root.path(), true),
            [("pipe".to_owned(), EntryKind::Other, 0)]
        );
    }
}
