//! Files beneath the directories a call was granted, for the `files` and
//! `dynamic` imports: [`GrantedDirs`] resolves a guest path to a granted
//! host directory, and reads and atomic replaces go through cap-std beneath
//! it, so no path, `..` or symlink leads outside. The `walk` import checks
//! that its start resolves inside the grant, then walks with the SDK's
//! `walk_native` on the host's filesystem, never following a symlink; what
//! that leaves open is in docs/security.md.

use crate::types::grant::{Access, Effective};
use cap_std::fs::{Dir, OpenOptions};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a file operation beneath the granted directories failed; the
/// `files` import (imports/files.rs) turns it into the guest's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FileError {
    /// The path or a parent does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The grant does not allow it, or the path leads outside the granted
    /// directories.
    #[error("{0}")]
    Denied(String),
    /// The request does not fit what is there (an empty path, a directory
    /// or special file where a regular file is expected).
    #[error("{0}")]
    Invalid(String),
    /// The file is larger than the limit.
    #[error("{0}")]
    TooLarge(String),
    /// The host could not do it (disk full, I/O error).
    #[error("{0}")]
    Failed(String),
}

/// The directories a tool was granted, by guest name, with their access.
#[derive(Debug, Clone, Default)]
pub(crate) struct GrantedDirs {
    /// The workspace (guest `.`).
    workspace: Option<(PathBuf, Access)>,
    /// Named directories (guest `/<name>`).
    named: Vec<(String, PathBuf, Access)>,
    /// Directories opened so far in this call, to open files beneath.
    opened: Vec<(PathBuf, Arc<Dir>)>,
}

impl GrantedDirs {
    pub(crate) fn new(grant: &Effective, workspace: Option<&Path>) -> Self {
        Self {
            workspace: workspace
                .zip(grant.workspace)
                .map(|(p, a)| (p.to_owned(), a)),
            named: grant
                .directories
                .iter()
                .map(|d| (d.name.clone(), d.host_path.clone(), d.access))
                .collect(),
            opened: Vec::new(),
        }
    }

    /// Every granted host directory, the workspace first.
    pub(crate) fn roots(&self) -> Vec<PathBuf> {
        self.workspace
            .iter()
            .map(|(p, _)| p.clone())
            .chain(self.named.iter().map(|(_, p, _)| p.clone()))
            .collect()
    }

    /// Whether the named directory `name` is granted writable.
    pub(crate) fn may_write(&self, name: &str) -> bool {
        self.named
            .iter()
            .any(|(n, _, access)| n == name && *access == Access::Write)
    }

    /// `base` opened as a capability directory, once per call.
    pub(crate) fn open(&mut self, base: &Path) -> Result<Arc<Dir>, FileError> {
        if let Some((_, dir)) = self.opened.iter().find(|(p, _)| p == base) {
            return Ok(Arc::clone(dir));
        }
        let dir = Dir::open_ambient_dir(base, cap_std::ambient_authority())
            .map_err(|e| FileError::Failed(format!("cannot open the granted directory: {e}")))?;
        let dir = Arc::new(dir);
        self.opened.push((base.to_owned(), Arc::clone(&dir)));
        Ok(dir)
    }

    /// The granted host directory holding `path` (if the grant allows
    /// `need` there) and the relative path inside it (empty for the
    /// directory itself). `..` and absolute paths are refused.
    pub(crate) fn resolve(&self, path: &str, need: Access) -> Result<(&Path, PathBuf), FileError> {
        let verb = if need == Access::Write {
            "write"
        } else {
            "read"
        };
        let (base, rest) = match path.strip_prefix('/') {
            Some(named) => {
                let (name, rest) = named.split_once('/').unwrap_or((named, ""));
                let dir = self
                    .named
                    .iter()
                    .find(|(n, _, access)| n == name && *access >= need)
                    .ok_or_else(|| {
                        FileError::Denied(format!("`{path}` is not in a directory this tool may {verb} (no grant for `/{name}`)"))
                    })?;
                (dir.1.as_path(), rest)
            }
            None => {
                let ws = self
                    .workspace
                    .as_ref()
                    .filter(|(_, access)| *access >= need)
                    .ok_or_else(|| {
                        FileError::Denied(format!(
                            "this tool may not {verb} the workspace (its grant does not allow it)"
                        ))
                    })?;
                (ws.0.as_path(), path)
            }
        };
        let mut rel = PathBuf::new();
        for c in Path::new(rest).components() {
            match c {
                Component::Normal(part) => rel.push(part),
                Component::CurDir => {}
                _ => {
                    return Err(FileError::Denied(format!(
                        "`{path}` leads outside the granted directory; give a path inside it"
                    )));
                }
            }
        }
        Ok((base, rel))
    }
}

/// The whole regular file `rel` in `dir`, at most `limit` bytes. It is
/// opened non-blocking, so a FIFO cannot hang the call in `open`, and
/// anything but a regular file is refused before a byte is read.
pub(crate) fn read_whole(
    dir: &Dir,
    rel: &Path,
    path: &str,
    limit: u64,
) -> Result<Vec<u8>, FileError> {
    let (file, size) = open_regular(dir, rel, path)?;
    read_sized(file, size, limit, path)
}

/// Open the regular file `rel` in `dir` non-blocking (a FIFO cannot hang
/// the open); anything but a regular file is refused. Returns its size.
pub(crate) fn open_regular(
    dir: &Dir,
    rel: &Path,
    path: &str,
) -> Result<(cap_std::fs::File, u64), FileError> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    cap_std::fs::OpenOptionsExt::custom_flags(
        &mut options,
        i32::try_from(rustix::fs::OFlags::NONBLOCK.bits()).unwrap_or(0),
    );
    let file = dir
        .open_with(rel, &options)
        .map_err(|e| to_file_error(e, path, Op::Read))?;
    regular(file, path)
}

/// [`open_regular`] when no symlink lies anywhere on the way to `rel`
/// (`openat2` with `RESOLVE_NO_SYMLINKS` beneath `dir`): what is opened is
/// then exactly `dir`/`rel`, so judging that name judged the file.
/// `Ok(None)` when a symlink is on the way (or the kernel has no
/// `openat2`): open it with [`open_regular`] and judge what was opened.
pub(crate) fn open_regular_direct(
    dir: &Dir,
    rel: &Path,
    path: &str,
) -> Result<Option<(cap_std::fs::File, u64)>, FileError> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;
    use std::os::fd::AsFd;
    if rel.as_os_str().is_empty() {
        return Ok(None);
    }
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir.as_fd(), rel, flags, Mode::empty(), resolve) {
        Ok(fd) => {
            let file = cap_std::fs::File::from_std(std::fs::File::from(fd));
            regular(file, path).map(Some)
        }
        // A symlink on the way, a way out, or no openat2 (before Linux 5.6).
        Err(Errno::LOOP | Errno::XDEV | Errno::NOSYS | Errno::AGAIN | Errno::PERM) => Ok(None),
        Err(e) => Err(to_file_error(e.into(), path, Op::Read)),
    }
}

/// `file` and its size if it is a regular file.
fn regular(file: cap_std::fs::File, path: &str) -> Result<(cap_std::fs::File, u64), FileError> {
    let meta = file
        .metadata()
        .map_err(|e| to_file_error(e, path, Op::Read))?;
    if !meta.is_file() {
        return Err(FileError::Invalid(format!(
            "`{path}` is not a regular file (a directory, FIFO, socket or device)"
        )));
    }
    Ok((file, meta.len()))
}

/// Read `reader` to its end, expecting `expected` bytes (its size when it
/// was stat'ed) and refusing more than `limit`: a file that grew past the
/// limit since then is `too-large`, never silently cut.
pub(crate) fn read_sized(
    mut reader: impl std::io::Read,
    expected: u64,
    limit: u64,
    path: &str,
) -> Result<Vec<u8>, FileError> {
    let too_large = || {
        FileError::TooLarge(format!(
            "`{path}` is larger than {limit} bytes; stream it instead"
        ))
    };
    if expected > limit {
        return Err(too_large());
    }
    // Sized from the metadata already read (`read_to_end` would stat and
    // seek again), with one byte more so the read that reports the end
    // needs no bigger buffer; and never more than one byte past the limit,
    // which is how growth past it shows.
    let most = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    let size = usize::try_from(expected).unwrap_or(usize::MAX);
    let mut data = vec![0; size.saturating_add(1).min(most)];
    let mut filled = 0;
    loop {
        if filled == data.len() {
            if data.len() >= most {
                return Err(too_large());
            }
            // The file grew since the stat: make room, within the limit.
            data.resize(data.len().saturating_mul(2).max(4096).min(most), 0);
        }
        match reader.read(&mut data[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(to_file_error(e, path, Op::Read)),
        }
    }
    data.truncate(filled);
    Ok(data)
}

/// Temp file, write, sync, keep permissions, rename over the target, then
/// `sync_dir` on the directory. A symlink (inside `dir`) is written through.
pub(crate) fn write_atomic(
    dir: &Dir,
    rel: &Path,
    data: &[u8],
    sync_dir: impl FnOnce(&Dir, &Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let target = match dir.symlink_metadata(rel) {
        Ok(meta) if meta.is_symlink() => dir.canonicalize(rel)?,
        _ => rel.to_owned(),
    };
    let old = dir.metadata(&target).ok();
    if old.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    let parent = target.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        dir.create_dir_all(parent)?;
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = target.with_file_name(format!(
        ".{name}.toolhost-{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = dir.open_with(&temp, OpenOptions::new().write(true).create_new(true))?;
        file.write_all(data)?;
        if let Some(old) = &old {
            file.set_permissions(old.permissions())?;
        }
        file.sync_all()?;
        drop(file);
        dir.rename(&temp, dir, &target)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&temp);
        return result;
    }
    // The file is replaced; syncing the directory only makes the rename
    // survive a crash. Failing that is no reason to report the write as
    // failed (a caller would then "restore" a file it did replace).
    let parent = parent.unwrap_or(Path::new("."));
    if let Err(err) = sync_dir(dir, parent) {
        tracing::warn!(path = %target.display(), %err, "the file was replaced, but syncing its directory failed");
    }
    Ok(())
}

/// Make a rename in `parent` durable.
pub(crate) fn sync_dir(dir: &Dir, parent: &Path) -> std::io::Result<()> {
    dir.open(parent)?.sync_all()
}

/// What a host file operation was doing, for its error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Read,
    Write,
    Walk,
}

impl Op {
    fn gerund(self) -> &'static str {
        match self {
            Self::Read => "reading",
            Self::Write => "writing",
            Self::Walk => "walking",
        }
    }
}

pub(crate) fn to_file_error(err: std::io::Error, path: &str, op: Op) -> FileError {
    use std::io::ErrorKind as K;
    let doing = op.gerund();
    match err.kind() {
        K::NotFound | K::NotADirectory => FileError::NotFound(format!("`{path}`: {err}")),
        K::PermissionDenied | K::ReadOnlyFilesystem => FileError::Denied(format!(
            "{doing} `{path}` was refused: {err} (the path may lead outside the granted directory through a symlink)"
        )),
        K::IsADirectory => FileError::Invalid(format!("`{path}` is a directory, not a file")),
        _ => FileError::Failed(format!("{doing} `{path}` failed: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::grant::DirGrant;
    use std::os::unix::fs::PermissionsExt;

    fn dirs(ws: &Path) -> GrantedDirs {
        let grant = Effective {
            workspace: Some(Access::Write),
            ..Effective::default()
        };
        GrantedDirs::new(&grant, Some(ws))
    }

    #[test]
    fn opens_directly_only_where_no_symlink_lies_on_the_way() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("real")).unwrap();
        std::fs::write(ws.path().join("real/a.txt"), "abc").unwrap();
        std::os::unix::fs::symlink("real", ws.path().join("via")).unwrap();
        std::os::unix::fs::symlink("real/a.txt", ws.path().join("link.txt")).unwrap();
        let dir = Dir::open_ambient_dir(ws.path(), cap_std::ambient_authority()).unwrap();
        let direct = |rel: &str| open_regular_direct(&dir, Path::new(rel), rel);
        let (_, size) = direct("real/a.txt").unwrap().expect("a plain path opens");
        assert_eq!(size, 3);
        // A symlink last or on the way: left to the general open, which
        // judges what it opened.
        assert!(direct("link.txt").unwrap().is_none());
        assert!(direct("via/a.txt").unwrap().is_none());
        assert!(open_regular(&dir, Path::new("via/a.txt"), "via/a.txt").is_ok());
        // Errors are the general open's.
        assert!(matches!(
            direct("real/none.txt"),
            Err(FileError::NotFound(_))
        ));
        assert!(matches!(direct("real"), Err(FileError::Invalid(_))));
        assert!(direct("").unwrap().is_none());
    }

    #[test]
    fn writes_atomically_and_keeps_permissions() {
        let ws = tempfile::tempdir().unwrap();
        let script = ws.path().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
        let d = dirs(ws.path());
        let (base, rel) = d.resolve("run.sh", Access::Write).unwrap();
        let dir = Dir::open_ambient_dir(base, cap_std::ambient_authority()).unwrap();
        write_atomic(&dir, &rel, b"new", sync_dir).unwrap();
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "new");
        let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);
        let leftovers: Vec<_> = std::fs::read_dir(ws.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file left behind");
        // Parents are created.
        let (_, rel) = d.resolve("a/b/c.txt", Access::Write).unwrap();
        write_atomic(&dir, &rel, b"x", sync_dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(ws.path().join("a/b/c.txt")).unwrap(),
            "x"
        );
    }

    #[test]
    fn refuses_escapes_and_missing_grants() {
        let ws = tempfile::tempdir().unwrap();
        let d = dirs(ws.path());
        for bad in ["../x", "a/../../x", "/etc/passwd", "/state/x"] {
            assert!(
                matches!(d.resolve(bad, Access::Write), Err(FileError::Denied(_))),
                "{bad}"
            );
        }
        assert_eq!(d.resolve(".", Access::Read).unwrap().1, Path::new(""));
        let read_only = GrantedDirs::new(
            &Effective {
                workspace: Some(Access::Read),
                ..Effective::default()
            },
            Some(ws.path()),
        );
        assert!(matches!(
            read_only.resolve("a.txt", Access::Write),
            Err(FileError::Denied(_))
        ));
        assert!(read_only.resolve("a.txt", Access::Read).is_ok());
    }

    #[test]
    fn a_symlink_out_of_the_directory_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "keep").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
        let dir = Dir::open_ambient_dir(ws.path(), cap_std::ambient_authority()).unwrap();
        assert!(write_atomic(&dir, Path::new("link"), b"pwned", sync_dir).is_err());
        assert!(write_atomic(&dir, Path::new("out/new"), b"pwned", sync_dir).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "keep"
        );
        assert!(!outside.path().join("new").exists());
    }

    #[test]
    fn named_directories_need_a_write_grant() {
        let state = tempfile::tempdir().unwrap();
        let grant = Effective {
            directories: vec![DirGrant {
                name: "state".into(),
                host_path: state.path().into(),
                access: Access::Write,
            }],
            ..Effective::default()
        };
        let d = GrantedDirs::new(&grant, None);
        let (base, rel) = d.resolve("/state/plan.json", Access::Write).unwrap();
        assert_eq!(base, state.path());
        assert_eq!(rel, Path::new("plan.json"));
        assert!(matches!(
            d.resolve("plan.json", Access::Read),
            Err(FileError::Denied(_))
        ));
    }

    // Regression: a file that grew after its stat made `clamp(4096, limit)`
    // panic for a limit under 4096, and growth past the limit was cut silently.
    #[test]
    fn a_file_that_grew_is_read_within_the_limit_or_refused() {
        let grown = vec![7u8; 150];
        // Stat'ed at 10 bytes, now 150: within a limit of 200, all of it.
        assert_eq!(read_sized(&grown[..], 10, 200, "f").unwrap(), grown);
        // Past a limit of 100: refused, never 100 bytes of it.
        assert!(matches!(
            read_sized(&grown[..], 10, 100, "f"),
            Err(FileError::TooLarge(_))
        ));
        assert!(matches!(
            read_sized(&grown[..], 150, 149, "f"),
            Err(FileError::TooLarge(_))
        ));
        assert_eq!(read_sized(&grown[..], 150, 150, "f").unwrap().len(), 150);
        assert_eq!(read_sized(&b""[..], 0, 0, "f").unwrap(), b"");
    }

    // Regression: a FIFO or a directory was "invalid" like a file too large,
    // so the guest streamed it through WASI and hung on the FIFO.
    #[test]
    fn only_regular_files_are_read_and_size_is_its_own_error() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a.txt"), "hello").unwrap();
        std::fs::create_dir(ws.path().join("d")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            ws.path().join("pipe"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let dir = Dir::open_ambient_dir(ws.path(), cap_std::ambient_authority()).unwrap();
        let read = |rel: &str, limit| read_whole(&dir, Path::new(rel), rel, limit);
        assert_eq!(read("a.txt", 5).unwrap(), b"hello");
        assert!(matches!(read("a.txt", 4), Err(FileError::TooLarge(_))));
        for special in ["pipe", "d"] {
            assert!(
                matches!(read(special, 1 << 20), Err(FileError::Invalid(m)) if m.contains("not a regular file")),
                "{special}"
            );
        }
        assert!(matches!(read("missing", 10), Err(FileError::NotFound(_))));
    }

    // Regression: a failed directory sync after a successful rename was
    // reported as a failed write, so apply_patch "restored" a written file.
    #[test]
    fn a_failed_directory_sync_after_the_rename_is_not_a_failed_write() {
        let ws = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(ws.path(), cap_std::ambient_authority()).unwrap();
        let failing = |_: &Dir, _: &Path| Err(std::io::Error::other("sync failed"));
        write_atomic(&dir, Path::new("a.txt"), b"new", failing).unwrap();
        assert_eq!(std::fs::read(ws.path().join("a.txt")).unwrap(), b"new");
    }

    #[test]
    fn errors_name_the_operation() {
        let denied = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let other = || std::io::Error::other("disk on fire");
        assert!(
            matches!(to_file_error(denied(), "a", Op::Read), FileError::Denied(m) if m.starts_with("reading `a` was refused"))
        );
        assert!(
            matches!(to_file_error(other(), "a", Op::Walk), FileError::Failed(m) if m.starts_with("walking `a` failed"))
        );
        assert!(
            matches!(to_file_error(other(), "a", Op::Write), FileError::Failed(m) if m.starts_with("writing `a` failed"))
        );
    }
}
