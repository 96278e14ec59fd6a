//! The protected paths as they were before a command, for the fallback:
//! without namespaces nothing mounts them read-only, so the sweep puts
//! back any the command changed (the changed version goes where swept
//! paths go). Kept in memory, up to [`BUDGET`] bytes; no link followed.

use super::{lstat, names, open_dir, quarantine, split};
use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use std::io::{self, Write as _};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

/// Most bytes of protected files kept for one command.
const BUDGET: usize = 16 << 20;

/// One entry as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Dir {
        mode: u32,
    },
    File {
        mode: u32,
        bytes: Vec<u8>,
    },
    Link(Vec<u8>),
    /// A fifo, socket or device: only that it was there.
    Other,
}

/// Each protected path with what was at and beneath it.
#[derive(Debug, Default)]
pub(super) struct Saved {
    trees: Vec<(PathBuf, Vec<(PathBuf, Entry)>)>,
    /// Paths too large to keep, said in the notes.
    skipped: Vec<PathBuf>,
}

impl Saved {
    /// What the protected paths `rels` (relative to `root`) hold now.
    pub(super) fn take(root: BorrowedFd<'_>, rels: &[PathBuf]) -> Self {
        let mut saved = Self::default();
        let mut left = BUDGET;
        for rel in rels {
            match read_tree(root, rel, &mut left) {
                Some(tree) => saved.trees.push((rel.clone(), tree)),
                None => saved.skipped.push(rel.clone()),
            }
        }
        saved
    }

    /// Put back each protected path the command changed; a note for each.
    pub(super) fn restore(&self, root: BorrowedFd<'_>, into: &Path) -> Vec<String> {
        let mut notes: Vec<String> = self
            .skipped
            .iter()
            .map(|rel| {
                format!(
                    "`{}` is protected but too large for toolhost to keep a copy of without \
                     namespaces; check it before running git, an editor or a build here",
                    rel.display()
                )
            })
            .collect();
        for (rel, was) in &self.trees {
            let mut unlimited = usize::MAX;
            if read_tree(root, rel, &mut unlimited).as_ref() == Some(was) {
                continue;
            }
            let moved = match lstat(root, rel) {
                Some(_) => quarantine(root, rel, into).map(Some),
                None => Ok(None),
            };
            let note = match moved.and_then(|m| write_tree(root, was).map(|()| m)) {
                Ok(Some(to)) => format!(
                    "this command changed the protected path `{}`; toolhost put back what was \
                     there (the command's version is at {})",
                    rel.display(),
                    to.display()
                ),
                Ok(None) => format!(
                    "this command removed the protected path `{}`; toolhost put it back",
                    rel.display()
                ),
                Err(e) => format!(
                    "this command changed the protected path `{}` and toolhost could not put it \
                     back ({e}); check it before running git, an editor or a build here",
                    rel.display()
                ),
            };
            notes.push(note);
        }
        notes
    }
}

/// `rel` and what lies beneath it, spending `left` bytes; `None` when it
/// does not fit.
fn read_tree(root: BorrowedFd<'_>, rel: &Path, left: &mut usize) -> Option<Vec<(PathBuf, Entry)>> {
    let mut out = Vec::new();
    let mut pending = vec![rel.to_owned()];
    while let Some(at) = pending.pop() {
        let (parent, name) = split(&at);
        let Ok(dir) = open_dir(root, parent) else {
            continue;
        };
        let Ok(stat) = rfs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let mode = stat.st_mode & 0o7777;
        let entry = match rfs::FileType::from_raw_mode(stat.st_mode) {
            rfs::FileType::Directory => {
                let inner = open_dir(root, &at).ok()?;
                let mut children: Vec<_> = names(&inner).ok()?.into_iter().collect();
                children.sort();
                pending.extend(children.into_iter().map(|c| at.join(c)));
                Entry::Dir { mode }
            }
            rfs::FileType::RegularFile => {
                let size = usize::try_from(stat.st_size).unwrap_or(usize::MAX);
                *left = left.checked_sub(size)?;
                let fd = rfs::openat(
                    &dir,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()?;
                let mut bytes = Vec::with_capacity(size);
                io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes).ok()?;
                Entry::File { mode, bytes }
            }
            rfs::FileType::Symlink => {
                Entry::Link(rfs::readlinkat(&dir, name, Vec::new()).ok()?.into_bytes())
            }
            _ => Entry::Other,
        };
        out.push((at, entry));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

/// Make `tree` (parents first) beneath `root`, where nothing is now.
fn write_tree(root: BorrowedFd<'_>, tree: &[(PathBuf, Entry)]) -> io::Result<()> {
    for (rel, entry) in tree {
        let (parent, name) = split(rel);
        let dir = open_dir(root, parent)?;
        match entry {
            Entry::Dir { mode } => rfs::mkdirat(&dir, name, Mode::from_raw_mode(*mode))?,
            Entry::File { mode, bytes } => {
                let fd = rfs::openat(
                    &dir,
                    name,
                    OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                    Mode::from_raw_mode(*mode),
                )?;
                rfs::fchmod(fd.as_fd(), Mode::from_raw_mode(*mode))?;
                std::fs::File::from(fd).write_all(bytes)?;
            }
            Entry::Link(target) => rfs::symlinkat(target.as_slice(), &dir, name)?,
            Entry::Other => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::is_dir;
    use super::*;

    #[test]
    fn changed_and_removed_protected_paths_are_put_back() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
        std::fs::write(ws.path().join(".git/config"), "mine").unwrap();
        std::fs::write(ws.path().join(".git/hooks/pre-commit"), "ok").unwrap();
        let root = std::fs::File::open(ws.path()).unwrap();
        let rels = [PathBuf::from(".git/config"), PathBuf::from(".git/hooks")];
        let saved = Saved::take(root.as_fd(), &rels);
        assert!(saved.restore(root.as_fd(), state.path()).is_empty());
        std::fs::write(ws.path().join(".git/config"), "[core]\nfsmonitor = x").unwrap();
        std::fs::remove_dir_all(ws.path().join(".git/hooks")).unwrap();
        let notes = saved.restore(root.as_fd(), state.path());
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(
            std::fs::read_to_string(ws.path().join(".git/config")).unwrap(),
            "mine"
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join(".git/hooks/pre-commit")).unwrap(),
            "ok"
        );
        assert!(is_dir(
            &lstat(root.as_fd(), Path::new(".git/hooks")).unwrap()
        ));
    }
}
