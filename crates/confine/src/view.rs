//! The file system a namespaced command sees. Its fixed part is a
//! *skeleton*: a directory on the host, made once per layout by the parent
//! ([`Skeletons`]), holding the mount points (`usr/`, `etc/`, `proc/`,
//! `dev/null`, ...) and the symlinks of the view's root. Each command's
//! child binds it as its root and mounts onto it (`Op`, spawn.rs):
//!
//! - system directories (`/usr`, `/bin`, `/lib*`, `/etc`, `/opt`, ...)
//!   read-only, with [`SYSTEM_SECRETS`] masked;
//! - a private `/proc` (the command's PID namespace), a minimal `/dev`
//!   (null, zero, full, random, urandom, and `/dev/shm` as a tmpfs), a
//!   private `/tmp`, and the home directory as an empty tmpfs: nothing of
//!   the person's home is there but the configured read list;
//! - the read list read-only, the configured writable directories and the
//!   workspace read-write;
//! - secret paths masked by an empty, unreadable file or directory, and
//!   protected paths read-only, wherever they are in the view;
//! - the root itself read-only.
//!
//! Mount points inside a command's own tmpfs (`/tmp`, the home directory)
//! cannot be in the skeleton: the child makes those. Operations name host
//! paths as sources and view paths under the skeleton's root as targets.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
mod skeleton;
pub use skeleton::*;

/// One step of building the view, applied in order by the child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// Create a directory (an existing one is fine).
    Dir(CString),
    /// Create an empty file to bind a file over.
    File(CString),
    /// Bind `src` with everything mounted beneath it at `dst`, `nosuid`,
    /// `nodev`, and read-only unless `writable`.
    Bind {
        src: CString,
        dst: CString,
        writable: bool,
    },
    /// Bind one device node.
    Device { src: CString, dst: CString },
    /// A fresh tmpfs.
    Tmpfs { dst: CString, options: CString },
    /// A procfs of the command's PID namespace.
    Proc(CString),
    /// A symbolic link (beneath one of the command's own tmpfs mounts).
    Symlink { target: CString, link: CString },
    /// Cover a secret with the empty mask (no symlink followed).
    Mask(CString),
    /// Cover a secret of the host's system directories, which no command
    /// can change, with the file or directory mask.
    MaskHost { dst: CString, dir: bool },
    /// Make a protected path read-only (no symlink followed).
    ReadOnly(CString),
    /// Cover the file at `dst` (no symlink followed) with the host file
    /// `src`, read-only: a redacted copy.
    Cover { src: CString, dst: CString },
    /// Pin a directory protected paths lie beneath: mount it on itself,
    /// writable (no symlink followed), so it cannot be renamed or
    /// removed.
    Pin(CString),
    /// Fail unless what is at this path (no symlink followed), if
    /// anything, is still covered by a mount: a system secret masked in a
    /// view made ahead, which the host may have replaced since (a
    /// replaced file takes its mounts with it).
    Covered(CString),
    /// The root of the view read-only, once everything is mounted.
    RootReadOnly(CString),
}

/// What a skeleton holds, by path in the view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Entry {
    Dir(PathBuf),
    File(PathBuf),
    Symlink { target: PathBuf, link: PathBuf },
}

/// Top-level directories of the host a command may read (those present).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
];

/// Device nodes every command gets.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// What the view holds besides the fixed parts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    /// The workspace (canonical), read-write.
    pub(crate) workspace: PathBuf,
    /// The home directory, an empty tmpfs in the view.
    pub(crate) home: Option<PathBuf>,
    /// Extra directories or files readable (canonical).
    pub(crate) read: Vec<PathBuf>,
    /// Extra directories writable (canonical).
    pub(crate) writable: Vec<PathBuf>,
    /// Secret paths to mask (absolute).
    pub(crate) masked: Vec<PathBuf>,
    /// Protected paths to make read-only (absolute).
    pub(crate) read_only: Vec<PathBuf>,
    /// Directories to pin (absolute), parents first.
    pub(crate) pinned: Vec<PathBuf>,
    /// Files to cover with a copy: (the copy, the file), absolute.
    pub(crate) redacted: Vec<(PathBuf, PathBuf)>,
    /// Size of `/tmp`, in MiB (`/dev/shm` gets a quarter).
    pub(crate) tmp_mib: u64,
    /// The command may use the network (so it needs the resolver).
    pub(crate) network: bool,
}

/// A layout turned into a skeleton's entries and the child's operations,
/// whose targets are view paths until [`View::rooted`] puts them under a
/// skeleton's root.
#[derive(Debug, Default)]
pub(crate) struct View {
    pub(crate) entries: Vec<Entry>,
    pub(crate) ops: Vec<Op>,
    /// The command's own tmpfs mounts so far: what lies beneath them the
    /// child must make.
    fresh: Vec<PathBuf>,
    /// The first path that could not be put in the view.
    error: Option<crate::Error>,
}

/// `path` as a C string; the error names a path holding a NUL byte,
/// which the file system never has but a configuration could.
fn host(path: &Path) -> Result<CString, crate::Error> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| crate::Error::NulInPath(path.to_owned()))
}

impl View {
    /// `path` as a C string; a path that cannot be one is remembered, and
    /// the view is refused ([`Layout::view`]).
    fn c(&mut self, path: &Path) -> CString {
        host(path).unwrap_or_else(|e| {
            self.error.get_or_insert(e);
            CString::default()
        })
    }

    /// Make `path` exist in the view as a directory (or a file): in the
    /// skeleton, or, beneath one of the command's own tmpfs mounts, by the
    /// child, with what leads there.
    fn mount_point(&mut self, path: &Path, dir: bool) {
        let fresh = self
            .fresh
            .iter()
            .filter(|t| path.starts_with(t) && path != t.as_path())
            .max_by_key(|t| t.as_os_str().len())
            .cloned();
        let Some(base) = fresh else {
            let mut at = PathBuf::from("/");
            for part in path.components().skip(1) {
                at.push(part);
                let entry = if at == path && !dir {
                    Entry::File(at.clone())
                } else {
                    Entry::Dir(at.clone())
                };
                if !self.entries.contains(&entry) {
                    self.entries.push(entry);
                }
            }
            return;
        };
        let mut at = base.clone();
        for part in path.strip_prefix(&base).unwrap_or(path).components() {
            at.push(part);
            let name = self.c(&at);
            let op = if at == path && !dir {
                Op::File(name)
            } else {
                Op::Dir(name)
            };
            let made = self.ops.iter().any(|o| match (o, &op) {
                (Op::Dir(a), Op::Dir(b)) | (Op::File(a), Op::File(b)) => a == b,
                _ => false,
            });
            if !made {
                self.ops.push(op);
            }
        }
    }

    /// A symlink at `link`: in the skeleton, or by the child beneath one
    /// of the command's own tmpfs mounts.
    fn symlink(&mut self, target: &Path, link: &Path) {
        if self.fresh.iter().any(|t| link.starts_with(t)) {
            if let Some(parent) = link.parent() {
                self.mount_point(parent, true);
            }
            let (target, link) = (self.c(target), self.c(link));
            self.ops.push(Op::Symlink { target, link });
        } else {
            self.entries.push(Entry::Symlink {
                target: target.to_owned(),
                link: link.to_owned(),
            });
        }
    }

    /// A fresh tmpfs at `path`, which the child fills.
    fn tmpfs(&mut self, path: &Path, options: String) {
        self.mount_point(path, true);
        let dst = self.c(path);
        let options = self.c(Path::new(&options));
        self.ops.push(Op::Tmpfs { dst, options });
        self.fresh.push(path.to_owned());
    }

    /// Bind `path` at the same place in the view. The source is where it
    /// leads now (links of the person's own, such as `TMPDIR`, resolved
    /// here); the child opens it with no link followed, so a link put on
    /// the way since points nowhere.
    fn bind(&mut self, path: &Path, writable: bool) {
        let (Ok(meta), Ok(real)) = (fs::metadata(path), fs::canonicalize(path)) else {
            return;
        };
        self.mount_point(path, meta.is_dir());
        let src = self.c(&real);
        let dst = self.c(path);
        self.ops.push(Op::Bind { src, dst, writable });
    }

    /// The operations with their targets under `root` (a skeleton's).
    pub(crate) fn rooted(self, root: &Path) -> Vec<Op> {
        let root = root.as_os_str().as_bytes();
        self.ops.into_iter().map(|op| op.under(root)).collect()
    }

    /// The operations split in two: those a mount namespace made ahead of
    /// the command can hold (spawn/ahead.rs), with their targets under
    /// `root`: everything but the command's `/proc`, which belongs to its
    /// PID namespace, and the masks and read-only covers of what the scan
    /// found at its start; and those, with view paths, which the child
    /// applies once it is in that namespace. `None` when something lies
    /// beneath `/proc` (a read list naming a path there): the child then
    /// builds the whole view. Moving `/proc` after the rest keeps every
    /// mount where the full order puts it, as nothing else lies beneath
    /// it, and the masks and covers come last in both.
    pub(crate) fn split(&self, root: &Path) -> Option<(Vec<Op>, Vec<Op>)> {
        let root = root.as_os_str().as_bytes();
        let mut proc: Option<&CString> = None;
        let (mut fixed, mut per_command) = (Vec::new(), Vec::new());
        for op in &self.ops {
            let target = match op {
                Op::Dir(t)
                | Op::File(t)
                | Op::Proc(t)
                | Op::Mask(t)
                | Op::ReadOnly(t)
                | Op::Pin(t)
                | Op::Covered(t) => t,
                Op::Bind { dst, .. }
                | Op::Cover { dst, .. }
                | Op::Device { dst, .. }
                | Op::Tmpfs { dst, .. }
                | Op::MaskHost { dst, .. } => dst,
                Op::Symlink { link, .. } => link,
                Op::RootReadOnly(_) => {
                    fixed.push(op.clone().under(root));
                    continue;
                }
            };
            match op {
                Op::Proc(dst) => {
                    proc = Some(dst);
                    per_command.push(op.clone());
                }
                Op::Mask(_) | Op::ReadOnly(_) | Op::Pin(_) | Op::Cover { .. } => {
                    per_command.push(op.clone());
                }
                _ if proc.is_some_and(|p| beneath(target, p)) => return None,
                Op::MaskHost { dst, .. } => {
                    per_command.push(Op::Covered(dst.clone()));
                    fixed.push(op.clone().under(root));
                }
                _ => fixed.push(op.clone().under(root)),
            }
        }
        Some((fixed, per_command))
    }
}

/// `path` is `dir` or lies beneath it.
fn beneath(path: &CString, dir: &CString) -> bool {
    let (path, dir) = (path.as_bytes(), dir.as_bytes());
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
}

impl Op {
    /// The operation with its target under `root`.
    fn under(self, root: &[u8]) -> Self {
        let under = |c: CString| {
            let mut bytes = root.to_vec();
            bytes.extend_from_slice(c.as_bytes());
            CString::new(bytes)
                .expect("a skeleton's root (checked when made) and a C string hold no NUL")
        };
        match self {
            Op::Dir(d) => Op::Dir(under(d)),
            Op::File(d) => Op::File(under(d)),
            Op::Bind { src, dst, writable } => Op::Bind {
                src,
                dst: under(dst),
                writable,
            },
            Op::Device { src, dst } => Op::Device {
                src,
                dst: under(dst),
            },
            Op::Tmpfs { dst, options } => Op::Tmpfs {
                dst: under(dst),
                options,
            },
            Op::Proc(d) => Op::Proc(under(d)),
            Op::Symlink { target, link } => Op::Symlink {
                target,
                link: under(link),
            },
            Op::Mask(d) => Op::Mask(under(d)),
            Op::MaskHost { dst, dir } => Op::MaskHost {
                dst: under(dst),
                dir,
            },
            Op::ReadOnly(d) => Op::ReadOnly(under(d)),
            Op::Pin(d) => Op::Pin(under(d)),
            Op::Cover { src, dst } => Op::Cover {
                src,
                dst: under(dst),
            },
            Op::Covered(d) => Op::Covered(under(d)),
            Op::RootReadOnly(_) => Op::RootReadOnly(
                CString::new(root).expect("a skeleton's root is checked for NUL when made"),
            ),
        }
    }
}

impl Layout {
    /// The skeleton entries and operations that build this view.
    pub(crate) fn view(&self) -> Result<View, crate::Error> {
        let mut view = View::default();
        // Parents before children, so a nested bind lands on top.
        let mut binds: Vec<(&Path, bool)> = self
            .read
            .iter()
            .map(|p| (p.as_path(), false))
            .chain(self.writable.iter().map(|p| (p.as_path(), true)))
            .chain(std::iter::once((self.workspace.as_path(), true)))
            .collect();
        binds.sort_by(|a, b| a.0.cmp(b.0));
        // A bind that holds one of the command's private mounts (`/`,
        // `/home` around the home directory...) goes first, so those land
        // on top of it and are never hidden by the host's.
        let private: Vec<&Path> = [Path::new("/proc"), Path::new("/dev"), Path::new("/tmp")]
            .into_iter()
            .chain(self.home.as_deref())
            .collect();
        let (early, late): (Vec<_>, Vec<_>) = binds
            .into_iter()
            .partition(|(path, _)| private.iter().any(|p| p.starts_with(path)));
        // `/dev` is a skeleton directory of a few nodes: beneath such a
        // bind it needs a tmpfs of its own to hide the host's.
        let dev_covered = early.iter().any(|(p, _)| Path::new("/dev").starts_with(p));
        for (path, writable) in early {
            view.bind(path, writable);
        }
        for dir in SYSTEM_DIRS {
            let path = Path::new(dir);
            match fs::read_link(path) {
                Ok(target) => view.entries.push(Entry::Symlink {
                    target,
                    link: path.to_owned(),
                }),
                Err(_) if path.is_dir() => view.bind(path, false),
                Err(_) => {}
            }
        }
        let proc = Path::new("/proc");
        view.mount_point(proc, true);
        let proc_dst = view.c(proc);
        view.ops.push(Op::Proc(proc_dst));
        self.devices(&mut view, dev_covered);
        view.tmpfs(
            Path::new("/tmp"),
            format!("mode=1777,size={}m", self.tmp_mib.max(1)),
        );
        if self.network {
            let resolver = Path::new("/run/systemd/resolve");
            if resolver.is_dir() {
                view.bind(resolver, false);
            }
        }
        if let Some(home) = &self.home {
            view.tmpfs(home, "mode=0755,size=16m".to_owned());
        }
        for (path, writable) in late {
            view.bind(path, writable);
        }
        for p in self.etc_secrets() {
            let dst = view.c(&p);
            view.ops.push(Op::MaskHost {
                dir: p.is_dir(),
                dst,
            });
        }
        // Pins first: the masks and covers beneath them land on top.
        for p in &self.pinned {
            let dst = view.c(p);
            view.ops.push(Op::Pin(dst));
        }
        for p in &self.masked {
            let dst = view.c(p);
            view.ops.push(Op::Mask(dst));
        }
        for p in &self.read_only {
            let dst = view.c(p);
            view.ops.push(Op::ReadOnly(dst));
        }
        for (copy, p) in &self.redacted {
            let (src, dst) = (view.c(copy), view.c(p));
            view.ops.push(Op::Cover { src, dst });
        }
        view.ops.push(Op::RootReadOnly(CString::default()));
        match view.error.take() {
            Some(error) => Err(error),
            None => Ok(view),
        }
    }

    fn devices(&self, view: &mut View, own_tmpfs: bool) {
        let dev = Path::new("/dev");
        if own_tmpfs {
            view.tmpfs(dev, "mode=0755,size=64k".to_owned());
        }
        for name in DEVICES {
            let node = dev.join(name);
            if node.exists() {
                view.mount_point(&node, false);
                let src = view.c(&node);
                view.ops.push(Op::Device {
                    dst: src.clone(),
                    src,
                });
            }
        }
        for (link, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            view.symlink(Path::new(target), &dev.join(link));
        }
        view.tmpfs(
            &dev.join("shm"),
            format!("mode=1777,size={}m", (self.tmp_mib / 4).max(1)),
        );
    }

    /// The [`SYSTEM_SECRETS`] present on this host.
    fn etc_secrets(&self) -> impl Iterator<Item = PathBuf> {
        /// Each pattern with a wildcard, compiled once.
        static GLOBS: LazyLock<Vec<(&'static Path, globset::GlobMatcher)>> = LazyLock::new(|| {
            SYSTEM_SECRETS
                .iter()
                .filter(|p| p.contains('*'))
                .filter_map(|p| {
                    let glob = globset::Glob::new(p).ok()?.compile_matcher();
                    Some((Path::new(p).parent()?, glob))
                })
                .collect()
        });
        let literal = SYSTEM_SECRETS
            .iter()
            .filter(|p| !p.contains('*'))
            .map(Path::new)
            .filter(|p| p.exists())
            .map(Path::to_owned);
        let matched = GLOBS.iter().flat_map(|(dir, glob)| {
            fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| glob.is_match(p))
        });
        literal.chain(matched)
    }
}

/// Files under `/etc` that commands never see, whatever the read list says
/// (absolute paths; a trailing `*` matches any suffix of the name).
pub const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/security/opasswd",
    "/etc/ssl/private",
    "/etc/ssh/ssh_host_*key",
    "/etc/NetworkManager/system-connections",
    "/etc/wireguard",
    "/etc/docker/key.json",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(ops: &[Op]) -> Vec<String> {
        ops.iter().map(|op| format!("{op:?}")).collect()
    }

    #[test]
    fn the_workspace_is_bound_after_its_parents_and_before_its_masks() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let layout = Layout {
            workspace: ws.clone(),
            masked: vec![ws.join(".env")],
            read_only: vec![ws.join(".git/config")],
            pinned: vec![ws.join(".git")],
            tmp_mib: 64,
            ..Layout::default()
        };
        let view = layout.view().unwrap();
        let ops = shown(&view.rooted(Path::new("/sk")));
        let at = |needle: &str| {
            ops.iter()
                .position(|o| o.contains(needle))
                .unwrap_or_else(|| panic!("{needle} not in {ops:#?}"))
        };
        let bind = at(&format!("Bind {{ src: \"{}\"", ws.display()));
        assert!(at("Tmpfs { dst: \"/sk/tmp\"") < bind);
        assert!(bind < at("Pin(\"/sk"));
        assert!(at("Pin(\"/sk") < at("Mask(\"/sk"));
        assert!(at("Mask(\"/sk") < at("ReadOnly("));
        assert_eq!(ops.last().unwrap(), "RootReadOnly(\"/sk\")");
        if Path::new("/etc/shadow").exists() {
            assert!(
                ops.iter()
                    .any(|o| o.starts_with("MaskHost { dst: \"/sk/etc/shadow\"")),
                "{ops:#?}"
            );
        }
    }

    // Regression: a path with a NUL byte became an empty C string, and an
    // empty path in a mount operation.
    #[test]
    fn a_path_with_a_nul_byte_refuses_the_view_and_names_the_path() {
        use std::os::unix::ffi::OsStrExt as _;
        let ws = tempfile::tempdir().unwrap();
        let bad = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/evil\0name"));
        let layout = Layout {
            workspace: ws.path().canonicalize().unwrap(),
            masked: vec![bad],
            tmp_mib: 64,
            ..Layout::default()
        };
        let err = layout.view().expect_err("refused");
        let err = err.to_string();
        assert!(err.contains("NUL") && err.contains("/tmp/evil"), "{err}");
    }

    #[test]
    fn mount_points_beneath_a_fresh_tmpfs_are_made_by_the_child_the_rest_by_the_skeleton() {
        let layout = Layout {
            workspace: PathBuf::from("/tmp/a/ws"),
            home: Some(PathBuf::from("/home/me")),
            tmp_mib: 64,
            ..Layout::default()
        };
        let mut view = layout.view().unwrap();
        // Beneath the command's /tmp: made in the child, after the tmpfs.
        view.bind(Path::new("/tmp"), true);
        let entries = format!("{:?}", view.entries);
        assert!(entries.contains("Dir(\"/proc\")"), "{entries}");
        assert!(entries.contains("File(\"/dev/null\")"), "{entries}");
        assert!(entries.contains("Dir(\"/home/me\")"), "{entries}");
        assert!(!entries.contains("/tmp/"), "{entries}");
        let ops = shown(&view.rooted(Path::new("/sk")));
        let tmpfs = ops
            .iter()
            .position(|o| o.starts_with("Tmpfs { dst: \"/sk/tmp\""))
            .unwrap();
        let dir = ops.iter().position(|o| o == "Dir(\"/sk/tmp/a\")");
        assert!(dir.is_none_or(|d| d > tmpfs), "{ops:#?}");
    }

    #[test]
    fn a_bind_around_a_private_mount_goes_first_so_the_private_one_lands_on_top() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let layout = Layout {
            workspace: ws.clone(),
            home: Some(PathBuf::from("/home/me")),
            read: vec![PathBuf::from("/"), PathBuf::from("/home")],
            tmp_mib: 64,
            ..Layout::default()
        };
        let ops = shown(&layout.view().unwrap().rooted(Path::new("/sk")));
        let at = |needle: &str| {
            ops.iter()
                .position(|o| o.starts_with(needle))
                .unwrap_or_else(|| panic!("{needle} not in {ops:#?}"))
        };
        let root = at("Bind { src: \"/\"");
        let home = at("Bind { src: \"/home\"");
        for private in [
            "Proc(\"/sk/proc\")",
            "Tmpfs { dst: \"/sk/tmp\"",
            "Tmpfs { dst: \"/sk/dev/shm\"",
            "Tmpfs { dst: \"/sk/dev\"",
            "Symlink { target: \"/proc/self/fd\", link: \"/sk/dev/fd\"",
            "Tmpfs { dst: \"/sk/home/me\"",
        ] {
            assert!(
                root < at(private) && home < at(private),
                "{private}: {ops:#?}"
            );
        }
        // The workspace still comes after the private mounts.
        let bind = format!("Bind {{ src: \"{}\"", ws.display());
        assert!(at("Tmpfs { dst: \"/sk/home/me\"") < at(&bind));
    }

    #[test]
    fn a_skeleton_holds_its_entries_and_is_made_again_when_cleaned_up() {
        let skeletons = Skeletons::new().unwrap();
        let entries = vec![
            Entry::Dir(PathBuf::from("/usr")),
            Entry::File(PathBuf::from("/dev/null")),
            Entry::Symlink {
                target: PathBuf::from("usr/bin"),
                link: PathBuf::from("/bin"),
            },
        ];
        assert_eq!(skeletons.base(), skeletons.base().canonicalize().unwrap());
        let first = skeletons.get(&entries).unwrap();
        assert!(first.root.join("usr").is_dir());
        assert!(first.root.join("dev/null").is_file());
        assert_eq!(
            fs::read_link(first.root.join("bin")).unwrap(),
            Path::new("usr/bin")
        );
        let mask = Path::new(std::ffi::OsStr::from_bytes(first.mask_file.as_bytes()));
        assert_eq!(mask.metadata().unwrap().permissions().mode() & 0o777, 0);
        assert!(Arc::ptr_eq(&first, &skeletons.get(&entries).unwrap()));
        fs::remove_file(&first.ready).unwrap();
        let again = skeletons.get(&entries).unwrap();
        assert!(!Arc::ptr_eq(&first, &again));
        assert!(again.root.join("usr").is_dir());
    }
}
