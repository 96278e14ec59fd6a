//! The file system a namespaced command sees, as a list of mount
//! operations the child applies ([`Op`], spawn.rs) before it enters the
//! view:
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
//! Operations name paths under `/newroot` (the view being built) and
//! `/oldroot` (the host's tree): see spawn.rs.

use crate::types::paths::SYSTEM_SECRETS;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The empty file and directory that cover a secret (mode 000).
pub(crate) const MASK_FILE: &CStr = c"/.mask-file";
pub(crate) const MASK_DIR: &CStr = c"/.mask-dir";

/// One step of building the view, applied in order by the child.
#[derive(Debug)]
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
    /// A symbolic link.
    Symlink { target: CString, link: CString },
    /// Cover a secret with the empty mask (no symlink followed).
    Mask(CString),
    /// Cover a secret of the host's system directories, which no command
    /// can change, with the file or directory mask.
    MaskHost { dst: CString, dir: bool },
    /// Make a protected path read-only (no symlink followed).
    ReadOnly(CString),
    /// The root of the view read-only, once everything is mounted.
    RootReadOnly,
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
    pub workspace: PathBuf,
    /// The home directory, an empty tmpfs in the view.
    pub home: Option<PathBuf>,
    /// Extra directories or files readable (canonical).
    pub read: Vec<PathBuf>,
    /// Extra directories writable (canonical).
    pub writable: Vec<PathBuf>,
    /// Secret paths to mask (absolute).
    pub masked: Vec<PathBuf>,
    /// Protected paths to make read-only (absolute).
    pub read_only: Vec<PathBuf>,
    /// Size of `/tmp`, in MiB (`/dev/shm` gets a quarter).
    pub tmp_mib: u64,
    /// The command may use the network (so it needs the resolver).
    pub network: bool,
}

fn c_path(prefix: &str, path: &Path) -> CString {
    let mut bytes = prefix.as_bytes().to_vec();
    bytes.extend_from_slice(path.as_os_str().as_bytes());
    // Paths come from the file system and configuration: no NUL inside.
    CString::new(bytes).unwrap_or_default()
}

fn new_root(path: &Path) -> CString {
    c_path("/newroot", path)
}

fn old_root(path: &Path) -> CString {
    c_path("/oldroot", path)
}

fn text(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

impl Layout {
    /// The operations that build this view.
    pub(crate) fn ops(&self) -> Vec<Op> {
        let mut ops = Vec::with_capacity(64);
        for dir in SYSTEM_DIRS {
            let path = Path::new(dir);
            match std::fs::read_link(path) {
                Ok(target) => ops.push(Op::Symlink {
                    target: c_path("", &target),
                    link: new_root(path),
                }),
                Err(_) if path.is_dir() => {
                    ops.push(Op::Dir(new_root(path)));
                    ops.push(Op::Bind {
                        src: old_root(path),
                        dst: new_root(path),
                        writable: false,
                    });
                }
                Err(_) => {}
            }
        }
        ops.push(Op::Dir(new_root(Path::new("/proc"))));
        ops.push(Op::Proc(new_root(Path::new("/proc"))));
        self.devices(&mut ops);
        ops.push(Op::Dir(new_root(Path::new("/tmp"))));
        ops.push(Op::Tmpfs {
            dst: new_root(Path::new("/tmp")),
            options: text(&format!("mode=1777,size={}m", self.tmp_mib.max(1))),
        });
        if self.network {
            let resolver = Path::new("/run/systemd/resolve");
            if resolver.is_dir() {
                self.bind(&mut ops, resolver, false);
            }
        }
        if let Some(home) = &self.home {
            dirs_to(&mut ops, home);
            ops.push(Op::Tmpfs {
                dst: new_root(home),
                options: text("mode=0755,size=16m"),
            });
        }
        // Parents before children, so a nested bind lands on top.
        let mut binds: Vec<(&Path, bool)> = self
            .read
            .iter()
            .map(|p| (p.as_path(), false))
            .chain(self.writable.iter().map(|p| (p.as_path(), true)))
            .chain(std::iter::once((self.workspace.as_path(), true)))
            .collect();
        binds.sort_by(|a, b| a.0.cmp(b.0));
        for (path, writable) in binds {
            self.bind(&mut ops, path, writable);
        }
        ops.extend(self.etc_secrets().map(|p| Op::MaskHost {
            dir: p.is_dir(),
            dst: new_root(&p),
        }));
        ops.extend(self.masked.iter().map(|p| Op::Mask(new_root(p))));
        ops.extend(self.read_only.iter().map(|p| Op::ReadOnly(new_root(p))));
        ops.push(Op::RootReadOnly);
        ops
    }

    fn devices(&self, ops: &mut Vec<Op>) {
        let dev = Path::new("/dev");
        ops.push(Op::Dir(new_root(dev)));
        ops.push(Op::Tmpfs {
            dst: new_root(dev),
            options: text("mode=0755,size=64k"),
        });
        for name in DEVICES {
            let node = dev.join(name);
            if node.exists() {
                ops.push(Op::File(new_root(&node)));
                ops.push(Op::Device {
                    src: old_root(&node),
                    dst: new_root(&node),
                });
            }
        }
        for (link, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            ops.push(Op::Symlink {
                target: text(target),
                link: new_root(&dev.join(link)),
            });
        }
        let shm = dev.join("shm");
        ops.push(Op::Dir(new_root(&shm)));
        ops.push(Op::Tmpfs {
            dst: new_root(&shm),
            options: text(&format!("mode=1777,size={}m", (self.tmp_mib / 4).max(1))),
        });
    }

    /// Bind `path` at the same place in the view, creating what leads there.
    fn bind(&self, ops: &mut Vec<Op>, path: &Path, writable: bool) {
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if let Some(parent) = path.parent() {
            dirs_to(ops, parent);
        }
        ops.push(if meta.is_dir() {
            Op::Dir(new_root(path))
        } else {
            Op::File(new_root(path))
        });
        ops.push(Op::Bind {
            src: old_root(path),
            dst: new_root(path),
            writable,
        });
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
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| glob.is_match(p))
        });
        literal.chain(matched)
    }
}

/// `Dir` operations for `path` and each of its ancestors, root first,
/// but those already made.
fn dirs_to(ops: &mut Vec<Op>, path: &Path) {
    let mut at = PathBuf::from("/");
    for part in path.components().skip(1) {
        at.push(part);
        let dir = new_root(&at);
        if !ops.iter().any(|op| matches!(op, Op::Dir(d) if *d == dir)) {
            ops.push(Op::Dir(dir));
        }
    }
}

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
            tmp_mib: 64,
            ..Layout::default()
        };
        let ops = shown(&layout.ops());
        let at = |needle: &str| {
            ops.iter()
                .position(|o| o.contains(needle))
                .unwrap_or_else(|| panic!("{needle} not in {ops:#?}"))
        };
        let bind = at(&format!("Bind {{ src: \"/oldroot{}\"", ws.display()));
        assert!(at("Tmpfs { dst: \"/newroot/tmp\"") < bind);
        assert!(bind < at("Mask(\"/newroot"));
        assert!(at("Mask(\"/newroot") < at("ReadOnly("));
        assert!(ops.last().unwrap().contains("RootReadOnly"));
        if Path::new("/etc/shadow").exists() {
            assert!(
                ops.iter()
                    .any(|o| o.starts_with("MaskHost { dst: \"/newroot/etc/shadow\"")),
                "{ops:#?}"
            );
        }
    }
}
