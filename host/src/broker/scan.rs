//! Finding the secret and protected paths beneath a directory (the
//! workspace), so each command's view can cover them: one walk at the first
//! command, then kept current with inotify, so a spawn pays microseconds,
//! not a walk of the tree.
//!
//! The walk follows no symlink and records nothing that is one: a link is
//! resolved at its target, which is covered where it lies if it is secret.
//! A secret directory is recorded whole and not entered. Where inotify is
//! out of watches, every command walks the tree again (correct, slower;
//! logged once).

use crate::types::paths::{Guard, PathRules};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use std::collections::{BTreeMap, HashMap};
use std::fs::FileType;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

pub(crate) use toolhost_confine::Found;

/// The guarded paths beneath one root, kept current.
pub(crate) struct Scanner {
    root: PathBuf,
    rules: Arc<PathRules>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// `None` until the first scan, and where inotify cannot watch the tree.
    inotify: Option<OwnedFd>,
    watches: HashMap<i32, PathBuf>,
    found: BTreeMap<PathBuf, Kept>,
    /// Set when the tree must be walked again.
    stale: bool,
}

/// What the view does with a path the scan found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kept {
    /// Masked.
    Secret,
    /// Read-only.
    Protected,
    /// A directory protected paths lie beneath, pinned in place
    /// ([`PathRules::pins`]).
    Pinned,
}

const WATCHED: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::DONT_FOLLOW)
    .union(WatchFlags::EXCL_UNLINK);

impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Scanner {
    pub(crate) fn new(root: PathBuf, rules: Arc<PathRules>) -> Self {
        Self {
            root,
            rules,
            state: Mutex::new(State {
                stale: true,
                ..State::default()
            }),
        }
    }

    /// The secret and protected paths as they are now.
    pub(crate) fn current(&self) -> Found {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !state.stale {
            self.drain(&mut state);
        }
        if state.stale {
            self.rescan(&mut state);
        }
        let mut found = Found::default();
        for (rel, guard) in &state.found {
            let list = match guard {
                Kept::Secret => &mut found.secret,
                Kept::Protected => &mut found.protected,
                Kept::Pinned => &mut found.pinned,
            };
            list.push(self.root.join(rel));
        }
        found
    }

    fn rescan(&self, state: &mut State) {
        state.found.clear();
        state.watches.clear();
        state.inotify = match inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK) {
            Ok(fd) => Some(fd),
            Err(e) => {
                tracing::warn!("inotify is unavailable ({e}); every command walks the workspace");
                None
            }
        };
        state.stale = false;
        self.walk(state, PathBuf::new());
        if state.inotify.is_none() {
            // Nothing will tell what changed: walk again next time.
            state.stale = true;
        }
    }

    /// Record what lies beneath `rel` (a directory) and watch it.
    fn walk(&self, state: &mut State, rel: PathBuf) {
        let mut pending = vec![rel];
        while let Some(dir) = pending.pop() {
            let abs = self.root.join(&dir);
            if let Some(fd) = &state.inotify {
                match inotify::add_watch(fd, &abs, WATCHED) {
                    Ok(wd) => {
                        state.watches.insert(wd, dir.clone());
                    }
                    Err(e) if e == rustix::io::Errno::NOENT || e == rustix::io::Errno::NOTDIR => {
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(
                            "cannot watch {} ({e}); every command walks the workspace instead",
                            abs.display()
                        );
                        state.inotify = None;
                        state.watches.clear();
                    }
                }
            }
            let Ok(entries) = std::fs::read_dir(&abs) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let rel = dir.join(entry.file_name());
                if self.record(state, &rel, kind) && kind.is_dir() {
                    pending.push(rel);
                }
            }
        }
    }

    /// Record `rel` if it is guarded; whether to look inside it.
    fn record(&self, state: &mut State, rel: &Path, kind: FileType) -> bool {
        if kind.is_symlink() {
            return false;
        }
        if self.rules.pins(rel) {
            if kind.is_dir() {
                state.found.insert(rel.to_owned(), Kept::Pinned);
            } else {
                // A `.git` file names the repository git is to use: as
                // protected as that repository's `config`.
                state.found.insert(rel.to_owned(), Kept::Protected);
                return false;
            }
        }
        match self.rules.guard(rel) {
            Some(Guard::Secret) => {
                state.found.insert(rel.to_owned(), Kept::Secret);
                false
            }
            Some(Guard::Protected) => {
                // One read-only mount covers what is beneath.
                let covered = rel
                    .ancestors()
                    .skip(1)
                    .any(|a| state.found.get(a) == Some(&Kept::Protected));
                if !covered {
                    state.found.insert(rel.to_owned(), Kept::Protected);
                }
                true
            }
            None => true,
        }
    }

    /// Apply the events inotify queued since the last look.
    fn drain(&self, state: &mut State) {
        let Some(fd) = state.inotify.take() else {
            state.stale = true;
            return;
        };
        let mut buffer = [MaybeUninit::<u8>::uninit(); 16 << 10];
        let mut reader = inotify::Reader::new(&fd, &mut buffer);
        let mut events = Vec::new();
        loop {
            match reader.next() {
                Ok(event) => events.push((
                    event.wd(),
                    event.events(),
                    event
                        .file_name()
                        .map(|n| PathBuf::from(n.to_string_lossy().into_owned())),
                )),
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => break,
            }
        }
        state.inotify = Some(fd);
        for (wd, flags, name) in events {
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                state.stale = true;
                return;
            }
            if flags.contains(ReadFlags::IGNORED) {
                state.watches.remove(&wd);
                continue;
            }
            let Some(dir) = state.watches.get(&wd).cloned() else {
                continue;
            };
            if flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF)
                && dir.as_os_str().is_empty()
            {
                state.stale = true;
                return;
            }
            let Some(name) = name else {
                continue;
            };
            let rel = dir.join(name);
            if flags.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM) {
                self.forget(state, &rel);
            }
            if flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO)
                && let Ok(meta) = std::fs::symlink_metadata(self.root.join(&rel))
                && self.record(state, &rel, meta.file_type())
                && meta.is_dir()
            {
                self.walk(state, rel);
            }
        }
    }

    /// Drop what was recorded at or beneath `rel`, and its watches.
    fn forget(&self, state: &mut State, rel: &Path) {
        state.found.retain(|p, _| !p.starts_with(rel));
        let gone: Vec<i32> = state
            .watches
            .iter()
            .filter(|(_, dir)| dir.starts_with(rel))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in gone {
            state.watches.remove(&wd);
            if let Some(fd) = &state.inotify {
                // Already gone when the directory was deleted.
                let _ = inotify::remove_watch(fd, wd);
            }
        }
    }
}

/// The secret paths at most `depth` levels beneath each of `roots` (the
/// read list: toolchains whose credentials sit near the top, such as
/// `~/.cargo/credentials.toml`), matched on their absolute paths.
pub(crate) fn shallow_secrets(roots: &[PathBuf], rules: &PathRules, depth: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending: Vec<(PathBuf, usize)> = roots.iter().map(|r| (r.clone(), 0)).collect();
    while let Some((path, level)) = pending.pop() {
        let rel = path.strip_prefix("/").unwrap_or(&path);
        if rules.is_secret(rel) {
            found.push(path);
            continue;
        }
        if level >= depth {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| !t.is_symlink()) {
                pending.push((entry.path(), level + 1));
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn names(root: &Path, paths: &[PathBuf]) -> Vec<String> {
        paths
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn finds_guarded_paths_and_follows_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join(".git/hooks")).unwrap();
        fs::write(root.join(".git/config"), "").unwrap();
        fs::write(root.join(".env"), "KEY=1").unwrap();
        fs::create_dir_all(root.join("app/.ssh")).unwrap();
        fs::write(root.join("app/.ssh/id_rsa"), "k").unwrap();
        std::os::unix::fs::symlink(".env", root.join("link.pem")).unwrap();
        let scanner = Scanner::new(root.to_owned(), Arc::new(PathRules::default()));
        let found = scanner.current();
        assert_eq!(names(root, &found.secret), [".env", "app/.ssh"]);
        assert_eq!(names(root, &found.protected), [".git/config", ".git/hooks"]);

        // Created, moved in and removed after the first scan.
        fs::create_dir_all(root.join("deep/er")).unwrap();
        fs::write(root.join("deep/er/server.key"), "k").unwrap();
        fs::remove_file(root.join(".env")).unwrap();
        fs::create_dir_all(root.join("elsewhere/.aws")).unwrap();
        fs::rename(root.join("elsewhere"), root.join("moved")).unwrap();
        fs::rename(root.join("app"), root.join("app2")).unwrap();
        let found = scanner.current();
        assert_eq!(
            names(root, &found.secret),
            ["app2/.ssh", "deep/er/server.key", "moved/.aws"]
        );
    }

    #[test]
    fn toolchain_credentials_are_found_near_the_top() {
        let dir = tempfile::tempdir().unwrap();
        let cargo = dir.path().join(".cargo");
        fs::create_dir_all(cargo.join("registry/a/b/c")).unwrap();
        fs::write(cargo.join("credentials.toml"), "token").unwrap();
        fs::write(cargo.join("registry/a/b/c/deep.pem"), "k").unwrap();
        let found = shallow_secrets(std::slice::from_ref(&cargo), &PathRules::default(), 3);
        assert_eq!(found, [cargo.join("credentials.toml")]);
    }
}
