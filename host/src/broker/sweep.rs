//! What a command left where a person's tools look for code. A read-only
//! mount can only cover what exists, and a pin (a directory mounted on
//! itself) only what is there, so before a command the broker notes
//! - which protected paths of the workspace's root (`.vscode/`,
//!   `.cargo/config.toml`, `.git/commondir`, ...) and which pinned roots
//!   (`.git`, `.cargo`) are absent;
//! - which directories are pinned (`.git`, `nested/.git`, `.cargo`), with
//!   their identity and their entries;
//!
//! and once the command has ended it moves out of the workspace, into
//! toolhost's state directory where a person can look at it, each
//! protected path the command created, anything but a directory where a
//! pinned root belongs (a `gitdir:` file, a symlink), and a pinned root
//! put in place of the original (which goes back where it was if it is
//! still beside it). Nothing is deleted, and every move is reported in the
//! call's result.
//!
//! The sweep runs outside any sandbox, so it never follows a link a
//! command planted: every path is opened relative to a descriptor of the
//! workspace opened before the command, with `RESOLVE_BENEATH` and
//! `RESOLVE_NO_SYMLINKS`, and an entry is moved by `renameat` from the
//! descriptor of its parent.

use crate::types::paths::{Guard, PathRules};
use rustix::fs::{self as rfs, AtFlags, Mode, OFlags, ResolveFlags};
use std::collections::HashSet;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
mod saved;

/// Entries looked at beneath one directory a command created inside a
/// pinned root before the sweep gives up on it and says so.
const WALK_BUDGET: usize = 20_000;

/// What the workspace held before a command.
#[derive(Debug, Default)]
pub(crate) struct Absent {
    /// The workspace, opened once; `None` without one.
    root: Option<OwnedFd>,
    rules: Option<Arc<PathRules>>,
    /// Protected paths and pinned roots absent, relative to the root.
    paths: Vec<PathBuf>,
    /// Pinned directories present.
    pins: Vec<Pinned>,
    /// The protected paths' contents, where no mount keeps them
    /// read-only (the fallback).
    saved: saved::Saved,
    /// Where created ones go.
    into: PathBuf,
    /// The same for each writable directory besides the workspace.
    also: Vec<Absent>,
}

/// A pinned directory as it was before the command.
#[derive(Debug)]
struct Pinned {
    rel: PathBuf,
    id: (u64, u64),
    names: HashSet<OsString>,
}

/// What a person's tools run from in the directories commands may be
/// given to write besides the workspace (`~/.cargo`, `~/.npm`, `~/.m2`):
/// their programs, settings and credentials, by name directly inside.
/// Read-only in a command's view where they exist; swept when a command
/// creates one.
pub(crate) const WRITABLE_GUARDED: &[&str] = &[
    "bin",
    "config",
    "config.toml",
    "credentials",
    "credentials.toml",
    "env",
    "hooks",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    "settings.xml",
    "init.gradle",
    "init.d",
    "gradle.properties",
];

/// Where swept paths go by default: `<state dir>/toolhost/swept`.
pub(crate) fn default_dir() -> PathBuf {
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .unwrap_or_else(std::env::temp_dir)
        .join("toolhost/swept")
}

impl Absent {
    /// Note what `workspace` holds now: the protected paths and pinned
    /// roots without wildcards it lacks, the pinned directories `pinned`
    /// (absolute, parents first, from the scan), and the contents of the
    /// protected paths `unmounted` (absolute: those no mount keeps
    /// read-only, as in the fallback).
    pub(crate) fn before(
        workspace: Option<&Path>,
        rules: &Arc<PathRules>,
        found: (&[PathBuf], &[PathBuf]),
        into: &Path,
    ) -> Self {
        let (pinned, unmounted) = found;
        let Some(workspace) = workspace else {
            return Self::default();
        };
        let root = match rfs::open(
            workspace,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) => {
                tracing::warn!("cannot open {} to sweep it: {e}", workspace.display());
                return Self::default();
            }
        };
        let paths = rules
            .protected_literals()
            .map(|(rel, _)| rel.to_owned())
            .chain(rules.pin_literals())
            .map(PathBuf::from)
            .filter(|rel| lstat(root.as_fd(), rel).is_none())
            .collect();
        let pins = pinned
            .iter()
            .filter_map(|abs| abs.strip_prefix(workspace).ok())
            .filter_map(|rel| {
                let dir = open_dir(root.as_fd(), rel).ok()?;
                let stat = rfs::fstat(&dir).ok()?;
                Some(Pinned {
                    rel: rel.to_owned(),
                    id: (stat.st_dev, stat.st_ino),
                    names: names(&dir).ok()?,
                })
            })
            .collect();
        let unmounted: Vec<PathBuf> = unmounted
            .iter()
            .filter_map(|abs| abs.strip_prefix(workspace).ok())
            .map(Path::to_owned)
            .collect();
        Self {
            saved: saved::Saved::take(root.as_fd(), &unmounted),
            root: Some(root),
            rules: Some(Arc::clone(rules)),
            paths,
            pins,
            into: into.to_owned(),
            also: Vec::new(),
        }
    }

    /// Also note which of [`WRITABLE_GUARDED`] each of the writable
    /// directories `writable` lacks, to sweep them too.
    pub(crate) fn with_writable(mut self, writable: &[PathBuf], rules: &Arc<PathRules>) -> Self {
        for dir in writable {
            let Ok(root) = rfs::open(
                dir,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            ) else {
                continue;
            };
            let paths = WRITABLE_GUARDED
                .iter()
                .map(PathBuf::from)
                .filter(|rel| lstat(root.as_fd(), rel).is_none())
                .collect();
            self.also.push(Self {
                root: Some(root),
                rules: Some(Arc::clone(rules)),
                paths,
                into: self.into.join(dir.file_name().unwrap_or_default()),
                ..Self::default()
            });
        }
        self
    }

    /// Move aside what the command created or replaced; a note for each.
    pub(crate) fn sweep(self) -> Vec<String> {
        let mut notes: Vec<String> = self.also.into_iter().flat_map(Self::sweep).collect();
        let (Some(root), Some(rules)) = (&self.root, &self.rules) else {
            return notes;
        };
        let mut sweep = Sweep {
            root: root.as_fd(),
            rules,
            into: &self.into,
            moved: Vec::new(),
            notes: Vec::new(),
        };
        for pin in &self.pins {
            if !sweep.covered(&pin.rel) {
                sweep.pinned(pin);
            }
        }
        let restored = self.saved.restore(sweep.root, sweep.into);
        sweep.notes.extend(restored);
        for rel in &self.paths {
            if sweep.covered(rel) {
                continue;
            }
            let Some(stat) = lstat(sweep.root, rel) else {
                continue;
            };
            if rules.pins(rel) && is_dir(&stat) {
                // A new `.git` or `.cargo` directory may stay; what it
                // holds that is protected may not.
                sweep.beneath(rel);
            } else {
                sweep.created(rel);
            }
        }
        notes.append(&mut sweep.notes);
        notes
    }
}

/// One sweep under way.
struct Sweep<'a> {
    root: BorrowedFd<'a>,
    rules: &'a PathRules,
    into: &'a Path,
    /// What was moved (or found replaced): nothing beneath is looked at.
    moved: Vec<PathBuf>,
    notes: Vec<String>,
}

impl Sweep<'_> {
    /// Whether `rel`, which the command created, goes: a protected path,
    /// or anything but a directory where a pinned root belongs.
    fn moves(&self, rel: &Path, dir: bool) -> bool {
        self.rules.guard(rel) == Some(Guard::Protected) || (self.rules.pins(rel) && !dir)
    }

    fn covered(&self, rel: &Path) -> bool {
        self.moved.iter().any(|m| rel.starts_with(m))
    }

    /// A pinned directory: still the one it was, with nothing new in it
    /// that is protected.
    fn pinned(&mut self, pin: &Pinned) {
        let same = open_dir(self.root, &pin.rel)
            .ok()
            .and_then(|dir| Some((rfs::fstat(&dir).ok()?, dir)))
            .filter(|(stat, _)| (stat.st_dev, stat.st_ino) == pin.id);
        let Some((_, dir)) = same else {
            self.replaced(pin);
            return;
        };
        let Ok(now) = names(&dir) else {
            return;
        };
        let mut new: Vec<_> = now.difference(&pin.names).collect();
        new.sort();
        for name in new {
            let rel = pin.rel.join(name);
            let dir = lstat(self.root, &rel).is_some_and(|s| is_dir(&s));
            if self.moves(&rel, dir) {
                self.created(&rel);
            } else if dir {
                self.beneath(&rel);
            }
        }
    }

    /// A pinned root that is not the directory it was: move aside what is
    /// there now, and put the original back if the command only renamed
    /// it within its parent.
    fn replaced(&mut self, pin: &Pinned) {
        let rel = &pin.rel;
        if lstat(self.root, rel).is_some() {
            self.created(rel);
        }
        self.moved.push(rel.clone());
        let (parent, name) = split(rel);
        let restored = open_dir(self.root, parent).ok().and_then(|dir| {
            let found = rfs::Dir::read_from(&dir).ok()?.flatten().find(|e| {
                let entry = Path::new(std::ffi::OsStr::from_bytes(e.file_name().to_bytes()));
                !matches!(entry.as_os_str().as_bytes(), b"." | b"..")
                    && rfs::statat(&dir, entry, AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|s| (s.st_dev, s.st_ino) == pin.id)
            })?;
            let from = OsString::from(std::ffi::OsStr::from_bytes(found.file_name().to_bytes()));
            rfs::renameat(&dir, from.as_os_str(), &dir, name)
                .ok()
                .map(|()| from)
        });
        self.notes.push(match restored {
            Some(from) => format!(
                "the command moved `{}` to `{}`; toolhost put it back",
                rel.display(),
                parent.join(from).display()
            ),
            None => format!(
                "the command moved `{}` away and toolhost could not find it beside where it was; \
                 look for it before running git or a build in this workspace",
                rel.display()
            ),
        });
    }

    /// The protected paths beneath the directory `rel`, which the command
    /// created, moved aside (symlinks not followed).
    fn beneath(&mut self, rel: &Path) {
        let mut pending = vec![rel.to_owned()];
        let mut seen = 0usize;
        while let Some(dir_rel) = pending.pop() {
            let Ok(dir) = open_dir(self.root, &dir_rel) else {
                continue;
            };
            let Ok(entries) = names(&dir) else {
                continue;
            };
            for name in entries {
                seen += 1;
                if seen > WALK_BUDGET {
                    self.notes.push(format!(
                        "`{}`, which this command created, holds more than {WALK_BUDGET} \
                         entries, so toolhost did not check all of it for protected paths; \
                         check it before running git or a build in this workspace",
                        rel.display()
                    ));
                    return;
                }
                let child = dir_rel.join(&name);
                let is_a_dir = rfs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|s| is_dir(&s));
                if self.moves(&child, is_a_dir) {
                    self.created(&child);
                } else if is_a_dir {
                    pending.push(child);
                }
            }
        }
    }

    /// Move `rel`, which the command created, into the sweep's directory.
    fn created(&mut self, rel: &Path) {
        let note = match quarantine(self.root, rel, self.into) {
            Ok(to) => format!(
                "moved `{}`, which this command created, to {}: it is a protected path that a \
                 person's tools run code from, so commands may not create it",
                rel.display(),
                to.display()
            ),
            Err(e) => format!(
                "this command created the protected path `{}` and it could not be moved aside \
                 ({e}); check it before running git, an editor or a build in this workspace",
                rel.display()
            ),
        };
        self.notes.push(note);
        self.moved.push(rel.to_owned());
    }
}

/// `rel`'s parent (`""` for the root) and last part.
fn split(rel: &Path) -> (&Path, &std::ffi::OsStr) {
    (
        rel.parent().unwrap_or(Path::new("")),
        rel.file_name().unwrap_or_default(),
    )
}

/// `dir` as a path `openat2` takes: `.` for the root itself.
fn dot(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// The directory `rel` beneath `root`, no symlink followed on the way.
fn open_dir(root: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    Ok(rfs::openat2(
        root,
        dot(rel),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )?)
}

/// What is at `rel` beneath `root`, not following it or any link on the
/// way; `None` if nothing is (or a parent is a symlink now).
fn lstat(root: BorrowedFd<'_>, rel: &Path) -> Option<rfs::Stat> {
    let (parent, name) = split(rel);
    let dir = open_dir(root, parent).ok()?;
    rfs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()
}

fn is_dir(stat: &rfs::Stat) -> bool {
    rfs::FileType::from_raw_mode(stat.st_mode) == rfs::FileType::Directory
}

/// The names in the directory `dir`.
fn names(dir: &OwnedFd) -> io::Result<HashSet<OsString>> {
    let mut out = HashSet::new();
    for entry in rfs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.insert(std::ffi::OsStr::from_bytes(name).to_owned());
        }
    }
    Ok(out)
}

/// Move `rel` (beneath `root`) to `<base>/<stamp>-<unique>/<rel>`.
fn quarantine(root: BorrowedFd<'_>, rel: &Path, base: &Path) -> io::Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    std::fs::create_dir_all(base)?;
    // A directory of its own for each move: two processes (or PID
    // namespaces) never share one.
    let batch = tempfile::Builder::new()
        .prefix(&format!("{stamp}-"))
        .tempdir_in(base)?
        .keep();
    let to = batch.join(rel);
    let (parent, name) = split(rel);
    let from = open_dir(root, parent)?;
    let into = to.parent().unwrap_or(&batch);
    std::fs::create_dir_all(into)?;
    let into = std::fs::File::open(into)?;
    match rfs::renameat(&from, name, &into, name) {
        Ok(()) => Ok(to),
        Err(rustix::io::Errno::XDEV) => {
            copy_at(from.as_fd(), name, into.as_fd())?;
            remove_at(from.as_fd(), name)?;
            Ok(to)
        }
        Err(e) => Err(e.into()),
    }
}

/// Copy `name` of the directory `from` into the directory `into`, links
/// copied as links.
fn copy_at(from: BorrowedFd<'_>, name: &std::ffi::OsStr, into: BorrowedFd<'_>) -> io::Result<()> {
    let stat = rfs::statat(from, name, AtFlags::SYMLINK_NOFOLLOW)?;
    match rfs::FileType::from_raw_mode(stat.st_mode) {
        rfs::FileType::Directory => {
            rfs::mkdirat(into, name, Mode::from_raw_mode(0o700))?;
            let src = open_dir(from, Path::new(name))?;
            let dst = open_dir(into, Path::new(name))?;
            for child in names(&src)? {
                copy_at(src.as_fd(), &child, dst.as_fd())?;
            }
            Ok(())
        }
        rfs::FileType::Symlink => {
            let target = rfs::readlinkat(from, name, Vec::new())?;
            Ok(rfs::symlinkat(target.as_c_str(), into, name)?)
        }
        rfs::FileType::RegularFile => {
            let src = rfs::openat(
                from,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let dst = rfs::openat(
                into,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            io::copy(&mut std::fs::File::from(src), &mut std::fs::File::from(dst)).map(drop)
        }
        // A fifo, socket or device: nothing to keep but its name.
        _ => Ok(()),
    }
}

/// Remove `name` of the directory `from` and all beneath it.
fn remove_at(from: BorrowedFd<'_>, name: &std::ffi::OsStr) -> io::Result<()> {
    let stat = rfs::statat(from, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if is_dir(&stat) {
        let dir = open_dir(from, Path::new(name))?;
        for child in names(&dir)? {
            remove_at(dir.as_fd(), &child)?;
        }
        Ok(rfs::unlinkat(from, name, AtFlags::REMOVEDIR)?)
    } else {
        Ok(rfs::unlinkat(from, name, AtFlags::empty())?)
    }
}

#[cfg(test)]
mod tests;
