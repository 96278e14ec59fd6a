//! The view's mount operations (see view.rs for what they build): binds,
//! tmpfs, proc, masks and read-only covers placed on file descriptors
//! opened without following symlinks. Applied by a command's child, or by
//! the thread that makes views ahead (ahead.rs): each only makes system
//! calls and, on a failure, returns the child's step with `errno` set.

use super::child::{Step, errno};
use crate::view::Op;
use std::ffi::CStr;
use std::ffi::CString;
use std::mem;
use std::os::fd::RawFd;
use std::ptr;

/// Return `Err(step)` when `$call` is negative (errno tells why).
macro_rules! sys {
    ($step:expr, $call:expr) => {
        if $call < 0 {
            return Err($step);
        }
    };
}

/// `statx`'s attribute of a mount's root (linux/stat.h, Linux 5.8).
const STATX_ATTR_MOUNT_ROOT: u64 = 0x2000;

/// The step of the child that builds the view.
const VIEW: Step = Step::View;

/// Where masks come from.
pub(super) enum Masks<'a> {
    /// The mask file and directory by path, read-only mounts of this
    /// namespace ([`mask_sources`]).
    Paths { file: &'a CString, dir: &'a CString },
    /// Read-only detached trees of each, cloned before entering a
    /// namespace made ahead (whose own masks were detached with the
    /// host's tree): the first mask of a kind moves the tree itself, later
    /// ones clone it from where it went.
    Trees { file: Tree, dir: Tree },
}

/// A detached mask tree; `fd` < 0 when there is none.
pub(super) struct Tree {
    pub(super) fd: RawFd,
    pub(super) placed: bool,
}

/// `mount_setattr` flags and attributes (linux/mount.h).
const AT_RECURSIVE: libc::c_uint = 0x8000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x04;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

#[expect(unsafe_code, reason = "system calls only")]
fn set_attributes(dirfd: RawFd, path: &CStr, flags: libc::c_uint, set: u64) -> libc::c_long {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a system call on local data.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            &attr,
            size_of::<MountAttr>(),
        )
    }
}

/// Open `path` as an `O_PATH` fd without following any symlink on the
/// way; `None` if it is gone or a symlink now (nothing to cover there).
#[expect(unsafe_code, reason = "system calls only")]
fn open_no_symlinks(path: &CStr) -> Result<Option<RawFd>, Step> {
    // SAFETY: a plain C struct, all zeroes is valid; then system calls on
    // local data.
    let fd = unsafe {
        let mut how: libc::open_how = mem::zeroed();
        how.flags = (libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
        how.resolve = libc::RESOLVE_NO_SYMLINKS;
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &how,
            size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        match errno() {
            libc::ENOENT | libc::ELOOP | libc::ENOTDIR => Ok(None),
            _ => Err(VIEW),
        }
    } else {
        Ok(Some(fd as RawFd))
    }
}

/// Mount `tree` (an open_tree fd, closed here) over `target`, made
/// read-only first unless it already is.
#[expect(unsafe_code, reason = "system calls only")]
fn cover(tree: libc::c_long, target: RawFd, make_read_only: bool) -> Result<(), Step> {
    sys!(VIEW, tree);
    let tree = tree as RawFd;
    let moved = place(tree, target, make_read_only);
    // SAFETY: closing the fd this function owns.
    unsafe { libc::close(tree) };
    moved
}

/// Mount the detached tree `tree` over `target`, made read-only first if
/// `make_read_only`; `tree` stays open (it names the mount now placed).
#[expect(unsafe_code, reason = "system calls only")]
fn place(tree: RawFd, target: RawFd, make_read_only: bool) -> Result<(), Step> {
    if make_read_only {
        read_only_tree(tree)?;
    }
    // SAFETY: a system call on fds the caller owns.
    let moved = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            target,
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    sys!(VIEW, moved);
    Ok(())
}

/// Bind `src` with everything mounted beneath it at `dst`, `nosuid`,
/// `nodev`, read-only unless `writable`. The source by descriptor, opened
/// with no symlink anywhere on its path: a command that swapped a part of
/// it for a link since cannot point the bind elsewhere.
#[expect(unsafe_code, reason = "system calls only")]
fn bind(src: &CStr, dst: &CStr, writable: bool) -> Result<(), Step> {
    let Some(source) = open_no_symlinks(src)? else {
        return Err(VIEW);
    };
    // SAFETY: system calls on an fd this function owns and C strings.
    let tree = unsafe {
        let tree = libc::syscall(libc::SYS_open_tree, source, c"".as_ptr(), TREE_FLAGS);
        libc::close(source);
        tree
    };
    sys!(VIEW, tree);
    let tree = tree as RawFd;
    let mut set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if !writable {
        set |= MOUNT_ATTR_RDONLY;
    }
    let flags = libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE;
    let placed = if set_attributes(tree, c"", flags, set) < 0 {
        Err(VIEW)
    } else {
        place_at(tree, dst)
    };
    // SAFETY: closing the fd this function owns.
    unsafe { libc::close(tree) };
    placed
}

/// Cover the file at `dst` (no symlink followed), if there is one, with
/// the host file `src`, read-only.
#[expect(unsafe_code, reason = "system calls only")]
fn cover_with(src: &CStr, dst: &CStr) -> Result<(), Step> {
    let Some(target) = open_no_symlinks(dst)? else {
        return Ok(());
    };
    let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint;
    // SAFETY: system calls on a C string and an fd this function owns.
    unsafe {
        let tree = libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, src.as_ptr(), flags);
        let covered = cover(tree, target, true);
        libc::close(target);
        covered
    }
}

/// `open_tree` flags for a detached copy of the mounts at an fd.
const TREE_FLAGS: libc::c_uint = OPEN_TREE_CLONE
    | libc::O_CLOEXEC as libc::c_uint
    | libc::AT_EMPTY_PATH as libc::c_uint
    | AT_RECURSIVE;

/// Mount the detached tree `tree` at `dst`, a mount point of the view
/// (the skeleton's, or one the child made), named by path.
#[expect(unsafe_code, reason = "system calls only")]
fn place_at(tree: RawFd, dst: &CStr) -> Result<(), Step> {
    // SAFETY: a system call on an fd the caller owns and a C string.
    let moved = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            libc::AT_FDCWD,
            dst.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    sys!(VIEW, moved);
    Ok(())
}

/// Make the detached tree `tree` read-only, `nosuid` and `nodev`.
fn read_only_tree(tree: RawFd) -> Result<(), Step> {
    let flags = libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE;
    let set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    sys!(VIEW, set_attributes(tree, c"", flags, set));
    Ok(())
}

/// A read-only detached copy of the mount at `path` (a mask source), for
/// [`Masks::Trees`].
#[expect(unsafe_code, reason = "system calls only")]
pub(super) fn mask_tree(path: &CStr) -> Result<Tree, Step> {
    let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint;
    // SAFETY: a system call on a prepared path.
    let tree = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) };
    sys!(VIEW, tree);
    let tree = tree as RawFd;
    if let Err(step) = read_only_tree(tree) {
        // SAFETY: closing the fd this function owns.
        unsafe { libc::close(tree) };
        return Err(step);
    }
    Ok(Tree {
        fd: tree,
        placed: false,
    })
}

/// Cover the open `target` with the mask of its kind.
#[expect(unsafe_code, reason = "system calls only")]
fn mask(target: RawFd, masks: &mut Masks<'_>) -> Result<(), Step> {
    // SAFETY: a plain C struct, then system calls on fds and paths the
    // caller holds.
    unsafe {
        let mut stat: libc::stat = mem::zeroed();
        sys!(VIEW, libc::fstat(target, &mut stat));
        let dir = stat.st_mode & libc::S_IFMT == libc::S_IFDIR;
        let clone = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint;
        match masks {
            Masks::Paths { file, dir: d } => {
                let source = if dir { d } else { file };
                let tree =
                    libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, source.as_ptr(), clone);
                cover(tree, target, false)
            }
            Masks::Trees { file, dir: d } => {
                let tree = if dir { d } else { file };
                if tree.fd < 0 {
                    *libc::__errno_location() = libc::EBADF;
                    return Err(VIEW);
                }
                if tree.placed {
                    let flags = clone | libc::AT_EMPTY_PATH as libc::c_uint;
                    let copy = libc::syscall(libc::SYS_open_tree, tree.fd, c"".as_ptr(), flags);
                    cover(copy, target, false)
                } else {
                    place(tree.fd, target, false)?;
                    tree.placed = true;
                    Ok(())
                }
            }
        }
    }
}

/// One operation of the view (see view.rs).
#[expect(unsafe_code, reason = "system calls only")]
pub(super) fn apply_op(op: &Op, masks: &mut Masks<'_>) -> Result<(), Step> {
    let none = ptr::null::<libc::c_char>();
    let exists = || errno() == libc::EEXIST;
    // SAFETY: system calls on prepared data.
    unsafe {
        match op {
            Op::Dir(path) => {
                if libc::mkdir(path.as_ptr(), 0o755) < 0 && !exists() {
                    return Err(VIEW);
                }
            }
            Op::File(path) => {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_RDONLY | libc::O_CREAT | libc::O_CLOEXEC,
                    0o644,
                );
                sys!(VIEW, fd);
                libc::close(fd);
            }
            Op::Bind { src, dst, writable } => bind(src, dst, *writable)?,
            Op::Device { src, dst } => {
                sys!(
                    VIEW,
                    libc::mount(src.as_ptr(), dst.as_ptr(), none, libc::MS_BIND, ptr::null())
                );
            }
            Op::Tmpfs { dst, options } => {
                let flags = libc::MS_NOSUID | libc::MS_NODEV;
                mount_new(c"tmpfs", dst, flags, options.as_ptr().cast())?;
            }
            Op::Proc(dst) => {
                let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                mount_new(c"proc", dst, flags, ptr::null())?;
            }
            Op::Symlink { target, link } => {
                if libc::symlink(target.as_ptr(), link.as_ptr()) < 0 && !exists() {
                    return Err(VIEW);
                }
            }
            // A system secret, with the sources by path (the host's
            // directories, which no command can change); otherwise, as
            // any mask, placed on what the path is now.
            Op::MaskHost { dst, dir } if matches!(masks, Masks::Paths { .. }) => {
                let Masks::Paths { file, dir: d } = masks else {
                    return Err(VIEW);
                };
                let mask = if *dir { d } else { file };
                sys!(
                    VIEW,
                    libc::mount(
                        mask.as_ptr(),
                        dst.as_ptr(),
                        none,
                        libc::MS_BIND,
                        ptr::null()
                    )
                );
            }
            Op::Mask(dst) | Op::MaskHost { dst, .. } => {
                if let Some(target) = open_no_symlinks(dst)? {
                    let masked = mask(target, masks);
                    libc::close(target);
                    masked?;
                }
            }
            Op::Cover { src, dst } => cover_with(src, dst)?,
            // A read-only copy of what is there, or (a pin) a writable
            // one: either way a mount point, which no rename moves.
            Op::ReadOnly(dst) | Op::Pin(dst) => {
                if let Some(target) = open_no_symlinks(dst)? {
                    let tree = libc::syscall(libc::SYS_open_tree, target, c"".as_ptr(), TREE_FLAGS);
                    let covered = cover(tree, target, matches!(op, Op::ReadOnly(_)));
                    libc::close(target);
                    covered?;
                }
            }
            Op::Covered(dst) => still_covered(dst)?,
            Op::RootReadOnly(root) => {
                sys!(
                    VIEW,
                    set_attributes(libc::AT_FDCWD, root, 0, MOUNT_ATTR_RDONLY)
                );
            }
        }
    }
    Ok(())
}

/// A new file system of type `fs` (its name is also the source) on
/// `dst`, with `flags` and `data`.
#[expect(unsafe_code, reason = "a system call on prepared data")]
fn mount_new(
    fs: &CStr,
    dst: &CStr,
    flags: libc::c_ulong,
    data: *const libc::c_void,
) -> Result<(), Step> {
    // SAFETY: every pointer is a NUL-terminated string the caller holds,
    // or `data`, which is one or null.
    unsafe {
        sys!(
            VIEW,
            libc::mount(fs.as_ptr(), dst.as_ptr(), fs.as_ptr(), flags, data)
        );
    }
    Ok(())
}

/// `dst` (no symlink followed) is absent or still covered by a mount: a
/// system secret masked in a view made ahead, which the host may have
/// replaced since (a replaced file takes its mounts with it), fails with
/// ESTALE.
#[expect(unsafe_code, reason = "system calls on prepared data")]
fn still_covered(dst: &CStr) -> Result<(), Step> {
    // SAFETY: `dst` is a NUL-terminated string; `stx` is a zeroed struct
    // the kernel fills; errno is this thread's.
    unsafe {
        let mut stx: libc::statx = mem::zeroed();
        let looked = libc::statx(
            libc::AT_FDCWD,
            dst.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_TYPE,
            &mut stx,
        );
        if looked < 0 {
            if errno() != libc::ENOENT {
                return Err(VIEW);
            }
        } else if stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT != 0
            && stx.stx_attributes & STATX_ATTR_MOUNT_ROOT == 0
        {
            *libc::__errno_location() = libc::ESTALE;
            return Err(VIEW);
        }
    }
    Ok(())
}

/// The whole view in this process's (or thread's) fresh mount namespace:
/// nothing propagates back to the host, the skeleton at `root` becomes a
/// mount of its own, the masks' sources read-only, every operation of
/// `ops` applied, then `root` is the root and the host's tree is detached.
/// Used by a command's child and by the thread that makes views ahead.
#[expect(unsafe_code, reason = "system calls only")]
pub(super) fn build_view(
    root: &CStr,
    mask_file: &CString,
    mask_dir: &CString,
    ops: &[Op],
) -> Result<(), Step> {
    let none = ptr::null::<libc::c_char>();
    // SAFETY: system calls on prepared paths.
    unsafe {
        let slave = libc::MS_REC | libc::MS_SLAVE;
        sys!(
            Step::PrivateMounts,
            libc::mount(none, c"/".as_ptr(), none, slave, ptr::null())
        );
        let root = root.as_ptr();
        sys!(
            Step::PrivateMounts,
            libc::mount(root, root, none, libc::MS_BIND, ptr::null())
        );
        mask_sources(mask_file, mask_dir)?;
        let mut masks = Masks::Paths {
            file: mask_file,
            dir: mask_dir,
        };
        for op in ops {
            apply_op(op, &mut masks)?;
        }
        sys!(Step::EnterView, libc::chdir(root));
        let pivot = libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr());
        sys!(Step::EnterView, pivot);
        sys!(
            Step::EnterView,
            libc::umount2(c".".as_ptr(), libc::MNT_DETACH)
        );
        sys!(Step::EnterView, libc::chdir(c"/".as_ptr()));
    }
    Ok(())
}

/// The empty file and directory that mask secrets (mode 000), each made
/// a read-only mount of its own, so every mask cloned from them is (step
/// 5 of the child).
#[expect(unsafe_code, reason = "system calls only")]
fn mask_sources(file: &CStr, dir: &CStr) -> Result<(), Step> {
    let none = ptr::null::<libc::c_char>();
    // SAFETY: system calls on prepared paths.
    unsafe {
        for mask in [file, dir] {
            sys!(
                Step::PrivateMounts,
                libc::mount(
                    mask.as_ptr(),
                    mask.as_ptr(),
                    none,
                    libc::MS_BIND,
                    ptr::null()
                )
            );
            let set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
            sys!(
                Step::PrivateMounts,
                set_attributes(libc::AT_FDCWD, mask, 0, set)
            );
        }
    }
    Ok(())
}
