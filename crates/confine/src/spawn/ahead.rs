//! Views made ahead. Where the host may make mount namespaces itself (as
//! root), a thread of low priority (nice 19) makes the next command's mount
//! namespace before the command comes: the skeleton bound as the root,
//! every operation that is the same for each command of the layout
//! (system directories, devices, the workspace and read list, the masks of
//! system secrets, the root read-only), then `pivot_root` into it and the
//! host's tree detached. The command's child enters it with one `setns`
//! and adds only its own part: its `/proc`, tmpfs mounts, and the masks
//! and read-only covers of what the scan found at its start. A namespace
//! serves one command, never two (its `/tmp` and `/dev/shm` are that
//! command's); when none is ready, or it was made for another layout, the
//! child builds the whole view itself, as where user namespaces are used.

use super::mounts::build_view;
use crate::view::Op;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, mpsc};

/// The part of a view every command of a layout shares.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Fixed {
    /// The skeleton's root, which becomes the namespace's root.
    pub(crate) root: CString,
    pub(crate) mask_file: CString,
    pub(crate) mask_dir: CString,
    /// The operations, targets under `root`.
    pub ops: Vec<Op>,
    /// The device and inode of each bind's source and of each system
    /// secret masked, when asked for: a directory removed and made again
    /// at the same path is another one, and a view bound to the old one
    /// (or whose mask went with a replaced secret) must not serve.
    sources: Vec<Option<(u64, u64)>>,
}

impl Fixed {
    pub(crate) fn new(root: &Path, mask_file: &CString, mask_dir: &CString, ops: Vec<Op>) -> Self {
        let root_bytes = root.as_os_str().as_bytes();
        let identity = |path: &[u8], follow: bool| {
            let path = Path::new(std::ffi::OsStr::from_bytes(path));
            let meta = if follow {
                std::fs::metadata(path)
            } else {
                std::fs::symlink_metadata(path)
            };
            meta.ok().map(|m| (m.dev(), m.ino()))
        };
        // Bind sources, and the system secrets masked (a replaced one
        // loses its mask in a view already made).
        let sources = ops
            .iter()
            .filter_map(|op| match op {
                Op::Bind { src, .. } => Some(identity(src.as_bytes(), true)),
                Op::MaskHost { dst, .. } => dst
                    .as_bytes()
                    .strip_prefix(root_bytes)
                    .map(|host| identity(host, false)),
                _ => None,
            })
            .collect();
        Self {
            root: CString::new(root.as_os_str().as_bytes())
                .expect("a skeleton's root is checked for NUL when made"),
            mask_file: mask_file.clone(),
            mask_dir: mask_dir.clone(),
            ops,
            sources,
        }
    }
}

/// Whether this process may make mount namespaces without a user
/// namespace: a thread makes one and returns to the host's.
pub fn own_mount_namespaces() -> bool {
    std::thread::Builder::new()
        .name("toolhost-probe".to_owned())
        .spawn(|| {
            let Ok(host) = File::open("/proc/thread-self/ns/mnt") else {
                return false;
            };
            #[expect(unsafe_code, reason = "unshare and setns of this thread only")]
            // SAFETY: both affect only the calling thread, which ends here.
            unsafe {
                libc::unshare(libc::CLONE_NEWNS) == 0
                    && libc::setns(host.as_raw_fd(), libc::CLONE_NEWNS) == 0
            }
        })
        .ok()
        .and_then(|t| t.join().ok())
        .unwrap_or(false)
}

/// What the maker is asked for.
#[derive(Default)]
struct Asked {
    /// The layout to make views of: the last one a command asked for.
    fixed: Option<Arc<Fixed>>,
    /// The spawner is gone.
    stopped: bool,
}

type Want = (Mutex<Asked>, Condvar);

/// The spawner thread's end of the maker.
pub struct SpareViews {
    want: Arc<Want>,
    made: Option<mpsc::Receiver<(Arc<Fixed>, OwnedFd)>>,
    /// How many commands were given a view made ahead.
    used: Arc<AtomicU64>,
}

impl SpareViews {
    /// Start the maker where the host may make mount namespaces itself.
    pub fn new(own_mounts: bool, used: Arc<AtomicU64>) -> Self {
        let want: Arc<Want> = Arc::default();
        let made = own_mounts
            .then(|| {
                let (tx, rx) = mpsc::sync_channel(0);
                let asked = Arc::clone(&want);
                std::thread::Builder::new()
                    .name("toolhost-views".to_owned())
                    .spawn(move || make(&asked, &tx))
                    .ok()
                    .map(|_| rx)
            })
            .flatten();
        Self { want, made, used }
    }

    /// Give `launch` a view made ahead if one is ready for its layout, and
    /// ask for the next one like it.
    pub fn fit(&mut self, launch: &mut super::Launch) {
        let Some(ns) = launch.namespaces.as_mut() else {
            return;
        };
        let (Some(fixed), Some(made)) = (&ns.fixed, &self.made) else {
            return;
        };
        let mut stale = None;
        if let Ok((made_for, view)) = made.try_recv() {
            if made_for == *fixed {
                ns.made = Some(view);
                ns.flags &= !libc::CLONE_NEWNS;
                self.used.fetch_add(1, Ordering::Relaxed);
            } else {
                stale = Some(view);
            }
        }
        {
            let (asked, wake) = &*self.want;
            let mut asked = asked.lock().unwrap_or_else(PoisonError::into_inner);
            if asked.fixed.as_ref() != Some(fixed) {
                asked.fixed = Some(Arc::clone(fixed));
                wake.notify_one();
            }
        }
        // Torn down with the command's own view, after its answer, not on
        // this thread.
        launch.stale_view = stale;
    }
}

impl Drop for SpareViews {
    fn drop(&mut self) {
        // The maker sees the channel closed when it next hands one over;
        // one waiting for its first request is woken to see it.
        self.made = None;
        let (asked, wake) = &*self.want;
        asked.lock().unwrap_or_else(PoisonError::into_inner).stopped = true;
        wake.notify_one();
    }
}

/// The maker thread: at low priority, make a view of the layout asked
/// for and hand it over, again and again until the spawner is gone.
fn make(want: &Arc<Want>, to: &mpsc::SyncSender<(Arc<Fixed>, OwnedFd)>) {
    super::net::low_priority();
    let (Ok(host), Ok(proc)) = (File::open("/proc/thread-self/ns/mnt"), File::open("/proc")) else {
        return;
    };
    loop {
        let fixed = {
            let (asked, wake) = &**want;
            let mut asked = asked.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if asked.stopped {
                    return;
                }
                match &asked.fixed {
                    Some(f) => break Arc::clone(f),
                    None => asked = wake.wait(asked).unwrap_or_else(PoisonError::into_inner),
                }
            }
        };
        match build(&fixed, &host, &proc) {
            Ok(view) => {
                if to.send((fixed, view)).is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(
                    "cannot make command views ahead ({e}); each command builds its own"
                );
                return;
            }
        }
    }
}

/// A mount namespace holding `fixed`, its root the view's; the thread is
/// back in the host's namespace (`host`) afterwards.
fn build(fixed: &Fixed, host: &File, proc: &File) -> io::Result<OwnedFd> {
    #[expect(unsafe_code, reason = "unshare of this thread's mount namespace")]
    // SAFETY: affects only the calling thread (the maker).
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let made = fill(fixed, proc);
    #[expect(unsafe_code, reason = "setns of this thread's mount namespace")]
    // SAFETY: affects only the calling thread (the maker).
    if unsafe { libc::setns(host.as_raw_fd(), libc::CLONE_NEWNS) } != 0 {
        // Stuck in a view: it must make no more.
        return Err(io::Error::last_os_error());
    }
    made
}

/// In a fresh mount namespace: build the fixed part of the view, enter
/// it, and return the namespace.
fn fill(fixed: &Fixed, proc: &File) -> io::Result<OwnedFd> {
    build_view(&fixed.root, &fixed.mask_file, &fixed.mask_dir, &fixed.ops).map_err(|step| {
        let e = io::Error::last_os_error();
        io::Error::new(e.kind(), format!("cannot {} ahead: {e}", step.what()))
    })?;
    let ns = rustix::fs::openat(
        proc,
        c"thread-self/ns/mnt",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    Ok(ns)
}

#[cfg(test)]
mod tests {
    use super::super::mounts::{Masks, Tree, apply_op};
    use super::*;

    fn path(p: &Path) -> CString {
        CString::new(p.as_os_str().as_bytes()).unwrap()
    }

    #[test]
    fn a_replaced_secret_makes_another_layout() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let secret = dir.path().join("shadow");
        std::fs::write(&secret, "a").unwrap();
        let mask = path(&dir.path().join("mask"));
        // The target is the secret's path under the root.
        let ops = || {
            let mut bytes = root.as_os_str().as_bytes().to_vec();
            bytes.extend_from_slice(secret.as_os_str().as_bytes());
            vec![Op::MaskHost {
                dst: CString::new(bytes).unwrap(),
                dir: false,
            }]
        };
        let before = Fixed::new(&root, &mask, &mask, ops());
        assert_eq!(before, Fixed::new(&root, &mask, &mask, ops()));
        // Replaced as `passwd` does: a new file renamed over the old.
        let new = dir.path().join("shadow+");
        std::fs::write(&new, "b").unwrap();
        std::fs::rename(&new, &secret).unwrap();
        assert_ne!(before, Fixed::new(&root, &mask, &mask, ops()));
    }

    #[test]
    fn covered_fails_where_no_mount_covers_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let none = || Tree {
            fd: -1,
            placed: false,
        };
        let mut masks = Masks::Trees {
            file: none(),
            dir: none(),
        };
        // A plain file is no mount's root: the mask that was there is gone.
        assert!(apply_op(&Op::Covered(path(&file)), &mut masks).is_err());
        // Nothing there: nothing to hide.
        let gone = dir.path().join("gone");
        assert!(apply_op(&Op::Covered(path(&gone)), &mut masks).is_ok());
        // A mount's root passes.
        assert!(apply_op(&Op::Covered(c"/proc".to_owned()), &mut masks).is_ok());
    }
}
