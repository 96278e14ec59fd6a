//! Secret and protected paths beneath the directories a call was granted,
//! for every way a guest reaches files: the WASI filesystem
//! (imports/filesystem.rs) and the `files` import (imports/files.rs).
//!
//! A path is judged where it really is: the directory a descriptor holds
//! as the kernel names it (`/proc/self/fd`), symlinks on the way resolved
//! (`openat2` with `O_PATH`), taken relative to the granted root it lies
//! under and matched against the one list in types/paths.rs. A name that
//! is a symlink to a secret is a secret; a secret is never found by a read
//! or a listing, and never created, replaced, renamed or linked; a
//! protected path is never written. Each refusal leaves a note saying why
//! and how a person can allow it, which the call's error carries.

use crate::types::paths::{Guard, PathRules};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// What a guest wants to do at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// See it: open, stat, read a link, list. Refused for secrets.
    Read,
    /// Create, replace, change, rename, link or remove it. Refused for
    /// secrets and protected paths.
    Write,
}

/// The most notes one call keeps (a search may be refused many files).
const MAX_NOTES: usize = 3;

/// One call's judge of paths beneath its granted directories.
#[derive(Debug)]
pub(crate) struct PathGuard {
    rules: Arc<PathRules>,
    /// The granted host directories, as given.
    roots: Vec<PathBuf>,
    /// The same, canonical; made at the first judgement.
    canonical: Option<Vec<PathBuf>>,
    /// Secret entries left out of listings so far (each once, however
    /// often it was listed).
    hidden: HashSet<PathBuf>,
    /// Why something was refused, for the call's error.
    notes: Vec<String>,
    /// Open directory listings (by resource) and the directory each lists.
    listings: HashMap<u32, PathBuf>,
}

impl PathGuard {
    pub(crate) fn new(rules: Arc<PathRules>, roots: Vec<PathBuf>) -> Self {
        Self {
            rules,
            roots,
            canonical: None,
            hidden: HashSet::new(),
            notes: Vec::new(),
            listings: HashMap::new(),
        }
    }

    /// The granted roots, canonical.
    fn canonical_roots(&mut self) -> &[PathBuf] {
        self.canonical.get_or_insert_with(|| {
            self.roots
                .iter()
                .map(|r| r.canonicalize().unwrap_or_else(|_| r.clone()))
                .collect()
        })
    }

    /// What the rules say about the canonical host path `host`, with the
    /// path relative to its root.
    fn judge(&mut self, host: &Path, need: Need) -> Option<(Guard, PathBuf)> {
        self.canonical_roots();
        judge(
            self.canonical.as_deref().unwrap_or_default(),
            &self.rules,
            host,
            need,
        )
    }

    /// Refuse `need` at the canonical host path `host` if the rules say
    /// so; the message says why and how a person can allow it.
    pub(crate) fn check(&mut self, host: &Path, need: Need) -> Result<(), String> {
        let refusal = match self.judge(host, need) {
            Some((Guard::Secret, rel)) => secret_message(&rel),
            Some((Guard::Protected, rel)) => protected_message(&rel),
            _ => return Ok(()),
        };
        Err(self.refused(refusal))
    }

    /// [`Self::check`] for `rel` beneath the granted root `root` (as it was
    /// granted), by name alone: no system call. What it really is must be
    /// judged too, once open ([`Self::check_fd`]), unless it was opened
    /// with no symlink on the way (`dirs::open_regular_direct`).
    pub(crate) fn check_named(
        &mut self,
        root: &Path,
        rel: &Path,
        need: Need,
    ) -> Result<(), String> {
        let Some(rel) = normal(rel) else {
            return Ok(());
        };
        let at = self.roots.iter().position(|r| r == root);
        let base = match at {
            Some(i) => self.canonical_roots()[i].clone(),
            None => return Err(unknown()),
        };
        self.check(&base.join(rel), need)
    }

    /// [`Self::check`] for what the open descriptor `fd` is.
    pub(crate) fn check_fd(&mut self, fd: BorrowedFd<'_>, need: Need) -> Result<(), String> {
        match fd_path(fd) {
            Some(host) => self.check(&host, need),
            None => Err(unknown()),
        }
    }

    /// [`Self::check`] for `path` beneath the directory `dir`; `follow`
    /// if the operation follows a symlink in the last component.
    pub(crate) fn check_at(
        &mut self,
        dir: BorrowedFd<'_>,
        path: &str,
        follow: bool,
        need: Need,
    ) -> Result<(), String> {
        let Some(lexical) = normal(Path::new(path)) else {
            // Absolute or empty: the WASI layer refuses it on its own.
            return Ok(());
        };
        let Some(base) = fd_path(dir) else {
            return Err(unknown());
        };
        // The name as given counts too: a dangling `.env` symlink is still
        // a secret's name.
        self.check(&base.join(&lexical), need)?;
        if !follow && one_name(&lexical) {
            // The entry itself, in the directory whose real place `base`
            // is: what was just judged (no symlink on the way, and the last
            // not followed). A listing's stats of its entries end here.
            return Ok(());
        }
        match locate(dir, &lexical, follow) {
            Some(host) => self.check(&host, need),
            None => Ok(()),
        }
    }

    /// Refuse reading `rel` beneath `root`, a directory the call holds no
    /// grant of (create_tool's workspace), when it is secret: by the name
    /// given, whether or not it exists, and by what it leads to.
    pub(crate) fn check_read_beneath(&mut self, root: &Path, rel: &Path) -> Result<(), String> {
        let lexical = normal(rel).unwrap_or_else(|| rel.to_owned());
        let real = root
            .canonicalize()
            .ok()
            .zip(root.join(rel).canonicalize().ok())
            .and_then(|(root, real)| real.strip_prefix(root).ok().map(Path::to_owned));
        for rel in std::iter::once(lexical).chain(real) {
            if self.rules.is_secret(&rel) {
                return Err(self.refused(secret_message(&rel)));
            }
        }
        Ok(())
    }

    /// `refusal`, noted for the call's error (once, up to [`MAX_NOTES`]).
    fn refused(&mut self, refusal: String) -> String {
        if self.notes.len() < MAX_NOTES && !self.notes.contains(&refusal) {
            self.notes.push(refusal.clone());
        }
        refusal
    }

    /// Refuse moving `path` beneath the directory `dir` when it is a
    /// directory the lists reach beneath ([`PathRules::shelters`]): a
    /// rename of it, or to its place, would take guarded paths out of the
    /// lists or put plain ones in.
    pub(crate) fn check_move(&mut self, dir: BorrowedFd<'_>, path: &str) -> Result<(), String> {
        let Some(lexical) = normal(Path::new(path)) else {
            return Ok(());
        };
        // Where it really is: directories on the way resolved, the last
        // part (what moves) not followed.
        let Some(host) = locate(dir, &lexical, false) else {
            return Err(unknown());
        };
        self.canonical_roots();
        let roots = self.canonical.as_deref().unwrap_or_default();
        let Some(rel) = beneath(roots, &host) else {
            return Ok(());
        };
        if !self.rules.shelters(rel) {
            return Ok(());
        }
        let refusal = format!(
            "`{}` is a directory toolhost guards paths beneath (secret or protected files live \
             under it): tools may not rename it or give another directory its place. A person \
             can change the lists under [paths] in a trusted toolhost.toml",
            rel.display()
        );
        Err(self.refused(refusal))
    }

    /// A test of canonical host paths for a walk's threads: `Some` with
    /// the path relative to its root for a secret. Record what the walk
    /// left out with [`Self::left_out`].
    pub(crate) fn secret_test(&mut self) -> impl Fn(&Path) -> Option<PathBuf> + Sync + '_ {
        self.canonical_roots();
        let roots = self.canonical.as_deref().unwrap_or_default();
        let rules = &*self.rules;
        move |host| match judge(roots, rules, host, Need::Read) {
            Some((Guard::Secret, rel)) => Some(rel),
            _ => None,
        }
    }

    /// Secrets (relative to their roots) a walk left out, counted in
    /// [`Self::hidden`] once each.
    pub(crate) fn left_out(&mut self, rels: Vec<PathBuf>) {
        self.hidden.extend(rels);
    }

    /// A listing of the directory at canonical `dir` was opened as `id`
    /// (an empty `dir`: where it is is unknown, so it lists nothing).
    pub(crate) fn listing_opened(&mut self, id: u32, dir: PathBuf) {
        self.listings.insert(id, dir);
    }

    /// Whether listing `id` leaves out its entry `name`.
    pub(crate) fn listing_hides(&mut self, id: u32, name: &str) -> bool {
        self.canonical_roots();
        let roots = self.canonical.as_deref().unwrap_or_default();
        match self.listings.get(&id) {
            Some(dir) if dir.as_os_str().is_empty() => true,
            Some(dir) => hides(roots, &self.rules, &mut self.hidden, dir, name),
            None => false,
        }
    }

    /// Listing `id` was closed.
    pub(crate) fn listing_closed(&mut self, id: u32) {
        self.listings.remove(&id);
    }

    /// Secret entries left out of listings so far.
    pub(crate) fn hidden(&self) -> usize {
        self.hidden.len()
    }

    /// Why paths were refused in this call, for its error.
    pub(crate) fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// What `rules` say about the canonical host path `host`, relative to the
/// deepest of the canonical `roots` holding it (nothing outside them), as
/// far as `need` cares: whether it is protected only counts for a write
/// (and a one-shot read does not compile the protected list).
fn judge(
    roots: &[PathBuf],
    rules: &PathRules,
    host: &Path,
    need: Need,
) -> Option<(Guard, PathBuf)> {
    let rel = beneath(roots, host)?;
    if rel.as_os_str().is_empty() {
        return None;
    }
    let guard = match need {
        Need::Read => rules.is_secret(rel).then_some(Guard::Secret),
        // Where a pinned root belongs (`.git`, `.cargo`) only its
        // directory may be: a `.git` file would point the person's git at
        // another repository.
        Need::Write => rules
            .guard(rel)
            .or_else(|| (rules.pins(rel) && !host.is_dir()).then_some(Guard::Protected)),
    };
    guard.map(|g| (g, rel.to_owned()))
}

/// The canonical host path `host` relative to the deepest of the canonical
/// `roots` holding it (`None` outside them all).
fn beneath<'a>(roots: &[PathBuf], host: &'a Path) -> Option<&'a Path> {
    roots
        .iter()
        .filter_map(|root| host.strip_prefix(root).ok())
        .min_by_key(|rest| rest.components().count())
}

/// Whether the entry `name` of the canonical `dir` is a secret; each one
/// left out is counted once in `hidden`.
fn hides(
    roots: &[PathBuf],
    rules: &PathRules,
    hidden: &mut HashSet<PathBuf>,
    dir: &Path,
    name: &str,
) -> bool {
    match judge(roots, rules, &dir.join(name), Need::Read) {
        Some((Guard::Secret, rel)) => {
            hidden.insert(rel);
            true
        }
        _ => false,
    }
}

/// The refusal when a path's place cannot be found out.
fn unknown() -> String {
    "toolhost cannot tell where this path is (is /proc mounted?), so it refuses it rather than \
     risk showing a secret"
        .to_owned()
}

fn secret_message(rel: &Path) -> String {
    let shown = rel.display();
    format!(
        "`{shown}` is a protected secret path: toolhost hides it from every tool and command. A \
         person who wants tools to see it can add `not_secret = [\"{shown}\"]` under [paths] in \
         a trusted toolhost.toml"
    )
}

fn protected_message(rel: &Path) -> String {
    let shown = rel.display();
    format!(
        "`{shown}` is a protected path (git, editors, shells or agents run what it holds): tools \
         and commands may read it but never write it. A person who wants it writable can add \
         `writable = [\"{shown}\"]` under [paths] in a trusted toolhost.toml"
    )
}

/// `path` without `.` and with `..` taken lexically; `None` if it is
/// absolute or empty.
fn normal(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Whether `path` is one name (no `/`, not `..`).
fn one_name(path: &Path) -> bool {
    let mut parts = path.components();
    matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(_)), None)
    )
}

/// The canonical host path of what `fd` holds.
pub(crate) fn fd_path(fd: BorrowedFd<'_>) -> Option<PathBuf> {
    let path = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
    path.is_absolute().then_some(path)
}

/// The canonical host path `rel` names beneath `dir`: symlinks on the way
/// resolved, and the last one too if `follow`. For a path that does not
/// exist yet, its nearest existing parent's real place and the rest.
fn locate(dir: BorrowedFd<'_>, rel: &Path, follow: bool) -> Option<PathBuf> {
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    match rustix::fs::openat2(dir, rel, flags, Mode::empty(), ResolveFlags::NO_MAGICLINKS) {
        Ok(fd) => {
            use std::os::fd::AsFd;
            fd_path(fd.as_fd())
        }
        Err(_) => {
            let (parent, name) = (rel.parent()?, rel.file_name()?);
            let base = if parent.as_os_str().is_empty() {
                fd_path(dir)?
            } else {
                locate(dir, parent, true)?
            };
            Some(base.join(name))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn guard(root: &Path) -> PathGuard {
        PathGuard::new(Arc::new(PathRules::default()), vec![root.to_owned()])
    }

    #[test]
    fn secrets_are_judged_where_they_really_are() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join(".env"), "TOKEN=1").unwrap();
        std::fs::create_dir(ws.path().join(".ssh")).unwrap();
        std::fs::write(ws.path().join(".ssh/id_ed25519"), "key").unwrap();
        std::os::unix::fs::symlink(".env", ws.path().join("innocent")).unwrap();
        std::os::unix::fs::symlink(".ssh", ws.path().join("keys")).unwrap();
        std::fs::write(ws.path().join("main.rs"), "").unwrap();
        let dir = std::fs::File::open(ws.path()).unwrap();
        let mut g = guard(ws.path());
        let at = |g: &mut PathGuard, p: &str, follow: bool, need: Need| {
            g.check_at(dir.as_fd(), p, follow, need)
        };
        assert!(at(&mut g, ".env", true, Need::Read).is_err());
        assert!(at(&mut g, "src/../.env", true, Need::Read).is_err());
        assert!(
            at(&mut g, "innocent", true, Need::Read).is_err(),
            "a symlink to a secret"
        );
        assert!(
            at(&mut g, "innocent", false, Need::Write).is_ok(),
            "the link itself"
        );
        assert!(at(&mut g, "keys/id_ed25519", true, Need::Read).is_err());
        // One name, not followed (a listing's stats): judged where the
        // directory really is, so a directory opened through a symlink
        // still holds secrets, and `..` is not one name.
        assert!(at(&mut g, ".env", false, Need::Read).is_err());
        let keys = std::fs::File::open(ws.path().join("keys")).unwrap();
        assert!(
            g.check_at(keys.as_fd(), "id_ed25519", false, Need::Read)
                .is_err(),
            "in a secret directory reached through a symlink"
        );
        let ssh = std::fs::File::open(ws.path().join(".ssh")).unwrap();
        assert!(
            g.check_at(ssh.as_fd(), "../.env", false, Need::Read)
                .is_err()
        );
        assert!(
            at(&mut g, "keys/new", true, Need::Write).is_err(),
            "creating in a secret dir"
        );
        assert!(at(&mut g, "main.rs", true, Need::Write).is_ok());
        assert!(at(&mut g, "new/deeper/file", true, Need::Write).is_ok());
        assert!(at(&mut g, ".git/hooks/pre-commit", true, Need::Read).is_ok());
        let err = at(&mut g, ".git/hooks/pre-commit", true, Need::Write).unwrap_err();
        assert!(
            err.contains("protected path") && err.contains("writable"),
            "{err}"
        );
        let err = at(&mut g, ".env", true, Need::Read).unwrap_err();
        assert!(err.contains("not_secret = [\".env\"]"), "{err}");
        let secret = std::fs::File::open(ws.path().join("innocent")).unwrap();
        assert!(
            g.check_fd(secret.as_fd(), Need::Read).is_err(),
            "an open secret"
        );
        assert!(!g.notes().is_empty() && g.notes().len() <= MAX_NOTES);
    }

    #[test]
    fn directories_the_lists_reach_beneath_do_not_move() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("conf/app")).unwrap();
        std::fs::create_dir(ws.path().join("src")).unwrap();
        std::os::unix::fs::symlink(".", ws.path().join("here")).unwrap();
        std::os::unix::fs::symlink("conf", ws.path().join("link")).unwrap();
        let config = crate::types::paths::PathRulesConfig {
            protected: vec!["/conf/app/settings.toml".into()],
            ..Default::default()
        };
        let rules = Arc::new(PathRules::new(&config).unwrap());
        let mut g = PathGuard::new(rules, vec![ws.path().to_owned()]);
        let dir = std::fs::File::open(ws.path()).unwrap();
        let mut moves = |path: &str| g.check_move(dir.as_fd(), path).is_ok();
        for held in ["conf", "conf/app", ".git", "src/.docker", "CONF"] {
            assert!(!moves(held), "{held}");
        }
        // Where it really is counts: through a symlinked directory too.
        assert!(!moves("here/conf"));
        // A symlink moves itself, not what it points at; plain paths move.
        for plain in ["link", "src", "conf/other", "src/conf"] {
            assert!(moves(plain), "{plain}");
        }
    }

    #[test]
    fn listings_leave_out_secrets_and_count_them() {
        let ws = tempfile::tempdir().unwrap();
        let mut g = guard(ws.path());
        let root = ws.path().canonicalize().unwrap();
        let test = g.secret_test();
        assert_eq!(test(&root.join(".env")), Some(PathBuf::from(".env")));
        let key = PathBuf::from("deploy/id_rsa");
        assert_eq!(test(&root.join(&key)), Some(key.clone()));
        assert_eq!(test(&root.join("README.md")), None);
        assert_eq!(test(&root.join(".gitignore")), None);
        // Outside every root nothing is judged.
        assert_eq!(test(Path::new("/elsewhere/.env")), None);
        drop(test);
        g.left_out(vec![PathBuf::from(".env"), key]);
        assert_eq!(g.hidden(), 2);
        // A WASI listing of the root leaves `.env` out, counted once.
        g.listing_opened(7, root.clone());
        assert!(g.listing_hides(7, ".env"));
        assert!(!g.listing_hides(7, "README.md"));
        assert_eq!(g.hidden(), 2, "each counted once");
        g.listing_closed(7);
        assert!(
            !g.listing_hides(7, ".env"),
            "a closed listing hides nothing"
        );
    }
}
