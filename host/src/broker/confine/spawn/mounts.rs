//! The view's mount operations, in the child (see view.rs for what they
//! build): binds, tmpfs, proc, masks and read-only covers placed on file
//! descriptors opened without following symlinks.

use super::Namespaces;
use super::child::{Report, errno, fail};
use crate::broker::confine::view::Op;
use std::ffi::CStr;
use std::mem;
use std::os::fd::RawFd;
use std::ptr;

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

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
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
#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn open_no_symlinks(path: &CStr, report: &Report) -> Option<RawFd> {
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
            libc::ENOENT | libc::ELOOP | libc::ENOTDIR => None,
            _ => fail(report, 6),
        }
    } else {
        Some(fd as RawFd)
    }
}

/// Mount `tree` (an open_tree fd) over `target`, made read-only first
/// unless it already is.
#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn cover(tree: libc::c_long, target: RawFd, make_read_only: bool, report: &Report) {
    if tree < 0 {
        fail(report, 6);
    }
    let tree = tree as RawFd;
    if make_read_only {
        let flags = libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE;
        let set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        check!(report, 6, set_attributes(tree, c"", flags, set) as i32);
    }
    // SAFETY: a system call on fds this function owns.
    unsafe {
        let moved = libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            target,
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        );
        libc::close(tree);
        check!(report, 6, moved as i32);
    }
}

/// One operation of the view (see view.rs).
#[expect(unsafe_code, reason = "the child of clone: system calls only")]
pub(super) fn apply_op(op: &Op, ns: &Namespaces, report: &Report) {
    let none = ptr::null::<libc::c_char>();
    let exists = || errno() == libc::EEXIST;
    // SAFETY: system calls on prepared data.
    unsafe {
        match op {
            Op::Dir(path) => {
                if libc::mkdir(path.as_ptr(), 0o755) < 0 && !exists() {
                    fail(report, 6);
                }
            }
            Op::File(path) => {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_RDONLY | libc::O_CREAT | libc::O_CLOEXEC,
                    0o644,
                );
                check!(report, 6, fd);
                libc::close(fd);
            }
            Op::Bind { src, dst, writable } => {
                check!(
                    report,
                    6,
                    libc::mount(
                        src.as_ptr(),
                        dst.as_ptr(),
                        none,
                        libc::MS_BIND | libc::MS_REC,
                        ptr::null()
                    )
                );
                let mut set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
                if !writable {
                    set |= MOUNT_ATTR_RDONLY;
                }
                check!(
                    report,
                    6,
                    set_attributes(libc::AT_FDCWD, dst, AT_RECURSIVE, set) as i32
                );
            }
            Op::Device { src, dst } => {
                check!(
                    report,
                    6,
                    libc::mount(src.as_ptr(), dst.as_ptr(), none, libc::MS_BIND, ptr::null())
                );
            }
            Op::Tmpfs { dst, options } => {
                check!(
                    report,
                    6,
                    libc::mount(
                        c"tmpfs".as_ptr(),
                        dst.as_ptr(),
                        c"tmpfs".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV,
                        options.as_ptr().cast()
                    )
                );
            }
            Op::Proc(dst) => {
                check!(
                    report,
                    6,
                    libc::mount(
                        c"proc".as_ptr(),
                        dst.as_ptr(),
                        c"proc".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        ptr::null()
                    )
                );
            }
            Op::Symlink { target, link } => {
                if libc::symlink(target.as_ptr(), link.as_ptr()) < 0 && !exists() {
                    fail(report, 6);
                }
            }
            Op::MaskHost { dst, dir } => {
                let mask = if *dir { &ns.mask_dir } else { &ns.mask_file };
                check!(
                    report,
                    6,
                    libc::mount(
                        mask.as_ptr(),
                        dst.as_ptr(),
                        none,
                        libc::MS_BIND,
                        ptr::null()
                    )
                );
            }
            Op::Mask(dst) => {
                if let Some(target) = open_no_symlinks(dst, report) {
                    let mut stat: libc::stat = mem::zeroed();
                    check!(report, 6, libc::fstat(target, &mut stat));
                    let mask = if stat.st_mode & libc::S_IFMT == libc::S_IFDIR {
                        &ns.mask_dir
                    } else {
                        &ns.mask_file
                    };
                    let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint;
                    let tree =
                        libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, mask.as_ptr(), flags);
                    cover(tree, target, false, report);
                    libc::close(target);
                }
            }
            Op::ReadOnly(dst) => {
                if let Some(target) = open_no_symlinks(dst, report) {
                    let flags = OPEN_TREE_CLONE
                        | libc::O_CLOEXEC as libc::c_uint
                        | libc::AT_EMPTY_PATH as libc::c_uint
                        | AT_RECURSIVE;
                    let tree = libc::syscall(libc::SYS_open_tree, target, c"".as_ptr(), flags);
                    cover(tree, target, true, report);
                    libc::close(target);
                }
            }
            Op::RootReadOnly(root) => {
                check!(
                    report,
                    6,
                    set_attributes(libc::AT_FDCWD, root, 0, MOUNT_ATTR_RDONLY) as i32
                );
            }
        }
    }
}

/// The empty file and directory that mask secrets (mode 000), each made
/// a read-only mount of its own, so every mask cloned from them is.
#[expect(unsafe_code, reason = "the child of clone: system calls only")]
pub(super) fn mask_sources(ns: &Namespaces, report: &Report) {
    let none = ptr::null::<libc::c_char>();
    // SAFETY: system calls on prepared paths.
    unsafe {
        for mask in [&ns.mask_file, &ns.mask_dir] {
            check!(
                report,
                5,
                libc::mount(
                    mask.as_ptr(),
                    mask.as_ptr(),
                    none,
                    libc::MS_BIND,
                    ptr::null()
                )
            );
            let set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
            check!(
                report,
                5,
                set_attributes(libc::AT_FDCWD, mask, 0, set) as i32
            );
        }
    }
}
