//! Starting a confined command: one `clone(CLONE_VM | CLONE_VFORK)` from
//! the host, so a spawn costs about what `posix_spawn` costs however large
//! the host is (a `fork` copies its page tables: milliseconds), then, in
//! the child, the namespaces' view, the limits and the Landlock and
//! seccomp layers, and `execve`.
//!
//! The child shares the host's memory until it calls `execve`, while the
//! cloning thread waits. It therefore only reads data the parent prepared
//! ([`Launch`], C strings and pointer arrays) and makes system calls: it
//! never allocates, locks or unwinds. All signals are blocked around the
//! `clone`, and the child resets every handler before unblocking them, so
//! no host signal handler can run on the shared memory. A failure is
//! written to a [`Report`] the parent reads once the child has exec'd or
//! exited.

use super::view::{MASK_DIR, MASK_FILE, Op};
use seccompiler::BpfProgram;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// Bytes of stack for the child; it needs little.
const STACK: usize = 128 << 10;

/// What one command needs to start, prepared in the parent.
pub(crate) struct Launch {
    /// The namespaces and the view built in them; `None` in the fallback.
    pub namespaces: Option<Namespaces>,
    /// The working directory (in the view).
    pub cwd: CString,
    /// Resource limits set before `execve`.
    pub rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    /// The command's pids cgroup: joined by the child through an fd, or
    /// provided by the spawner thread (see [`Spawner`](super::super::process)).
    pub cgroup: CgroupJoin,
    /// Drop every capability (always inside a user namespace; outside one,
    /// when the host runs as root).
    pub drop_capabilities: bool,
    /// A Landlock ruleset created in the parent, with rules for paths the
    /// child adds once its view exists.
    pub landlock: Option<Landlock>,
    /// The seccomp program.
    pub seccomp: Option<Arc<BpfProgram>>,
    /// Paths to try for the program, in order (a PATH search).
    pub program: Vec<CString>,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
}

/// How a command gets into its pids cgroup.
#[derive(Debug, Default)]
pub(crate) enum CgroupJoin {
    /// No cgroup.
    #[default]
    None,
    /// A cgroup limited to this many tasks, which the spawner provides.
    Limit(u32),
    /// The child writes `0` to this file (set by the spawner).
    Fd(OwnedFd),
}

/// The namespaces of one command and the view inside them.
pub(crate) struct Namespaces {
    /// `CLONE_NEW*` flags.
    pub flags: libc::c_int,
    /// `/proc/self/uid_map` and `gid_map` lines.
    pub uid_map: CString,
    pub gid_map: CString,
    /// The mount operations, in order (paths under `/newroot` and
    /// `/oldroot`, see view.rs).
    pub ops: Vec<Op>,
    /// A network namespace whose loopback is brought up.
    pub loopback: bool,
}

/// A ruleset fd and the rules the child adds to it.
pub(crate) struct Landlock {
    pub ruleset: OwnedFd,
    /// Paths (in the view) and the access allowed beneath each.
    pub rules: Vec<(CString, u64)>,
    /// The rights that apply to a file (a rule on a file may hold no
    /// other).
    pub file_rights: u64,
}

/// What the parent gets: the child's pid and the ends of its pipes.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub pid: u32,
    pub stdin: Option<File>,
    pub stdout: File,
    pub stderr: File,
    /// The command's pids cgroup, removed when dropped.
    pub cgroup: Option<super::cgroup::CommandCgroup>,
    /// The command's mount namespace, held open so that tearing its view
    /// down (an RCU grace period per unmount batch) happens when the
    /// holder lets go, after the caller has its answer, and not in the
    /// command's exit.
    pub view: Option<File>,
}

/// Where the child writes why it could not start.
#[derive(Default)]
struct Report {
    step: AtomicUsize,
    errno: AtomicI32,
}

/// The steps of the child, for the error message.
const STEPS: &[&str] = &[
    "",
    "set the parent-death signal",
    "start a session",
    "join the pids cgroup",
    "map the user ids",
    "make the mounts private",
    "build the view",
    "bring up the loopback interface",
    "enter the view",
    "enter the working directory",
    "set a resource limit",
    "connect stdin, stdout and stderr",
    "drop capabilities",
    "set no_new_privs",
    "apply Landlock",
    "apply the seccomp filter",
    "run the program",
    "set the host name",
];

/// Everything the child reads, on the parent's stack.
struct ChildArgs<'a> {
    launch: &'a Launch,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    /// stdin, stdout, stderr for the command.
    stdio: [RawFd; 3],
    mask: &'a libc::sigset_t,
    report: &'a Report,
}

/// Start `launch` with piped stdout and stderr and, if `stdin`, a piped
/// stdin (else `/dev/null`). Call from the spawner thread only: the child's
/// parent-death signal follows the thread that clones.
pub(crate) fn spawn(launch: &Launch, stdin: bool) -> io::Result<Spawned> {
    let (out_r, out_w) = io::pipe()?;
    let (err_r, err_w) = io::pipe()?;
    let (in_r, in_w): (OwnedFd, Option<File>) = if stdin {
        let (r, w) = io::pipe()?;
        (r.into(), Some(File::from(OwnedFd::from(w))))
    } else {
        (File::open("/dev/null")?.into(), None)
    };
    let ptrs = |v: &[CString]| -> Vec<*const libc::c_char> {
        v.iter()
            .map(|s| s.as_ptr())
            .chain(std::iter::once(ptr::null()))
            .collect()
    };
    let (argv, envp) = (ptrs(&launch.argv), ptrs(&launch.envp));
    let report = Report::default();
    let mut stack = vec![0u8; STACK];
    let flags = libc::CLONE_VM
        | libc::CLONE_VFORK
        | libc::SIGCHLD
        | launch.namespaces.as_ref().map_or(0, |n| n.flags);
    #[expect(
        unsafe_code,
        reason = "clone(CLONE_VM | CLONE_VFORK) and the signal mask around it"
    )]
    // SAFETY: the child runs `child` on its own stack with every signal
    // blocked, reads only `args` (alive until clone returns: the parent
    // waits for the child's execve or exit) and makes only system calls.
    let pid = unsafe {
        let mut all: libc::sigset_t = mem::zeroed();
        let mut old: libc::sigset_t = mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let args = ChildArgs {
            launch,
            argv: &argv,
            envp: &envp,
            stdio: [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
            mask: &old,
            report: &report,
        };
        let top = stack.as_mut_ptr().add(STACK);
        let top = top.sub(top as usize % 16).cast::<libc::c_void>();
        let pid = libc::clone(
            child,
            top,
            flags,
            ptr::from_ref(&args).cast_mut().cast::<libc::c_void>(),
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, ptr::null_mut());
        if pid < 0 {
            return Err(clone_error);
        }
        pid
    };
    drop((in_r, out_w, err_w));
    let step = report.step.load(Ordering::Acquire);
    if step != 0 {
        // The child exited; reap it so no zombie stays.
        let mut status = 0;
        #[expect(unsafe_code, reason = "waitpid of our own child")]
        // SAFETY: plain system call on a pid we created.
        unsafe {
            libc::waitpid(pid, &mut status, 0);
        }
        let errno = io::Error::from_raw_os_error(report.errno.load(Ordering::Acquire));
        let what = STEPS.get(step).copied().unwrap_or("start");
        return Err(io::Error::new(
            errno.kind(),
            format!("the sandbox could not {what}: {errno}"),
        ));
    }
    let view = launch
        .namespaces
        .is_some()
        .then(|| File::open(format!("/proc/{pid}/ns/mnt")).ok())
        .flatten();
    Ok(Spawned {
        pid: u32::try_from(pid).unwrap_or(0),
        cgroup: None,
        view,
        stdin: in_w,
        stdout: File::from(OwnedFd::from(out_r)),
        stderr: File::from(OwnedFd::from(err_r)),
    })
}

/// A fresh network namespace made ahead of time on the spawner thread, so
/// the next command without network joins it by inheritance instead of
/// making one while a caller waits (its setup is most of the cost of a
/// namespaced spawn). Only where the host may make network namespaces
/// itself (root): elsewhere each command makes its own in its user
/// namespace. A thread may enter a network namespace of its own; the
/// host's other threads stay where they are.
pub(crate) struct SpareNetwork {
    /// The host's network namespace, to return to for commands granted the
    /// network (and those of the fallback).
    host: Option<OwnedFd>,
    /// The thread is in a fresh namespace no command has used.
    fresh: bool,
}

impl SpareNetwork {
    /// Call on the spawner thread.
    pub(crate) fn new() -> Self {
        let host = rustix::process::geteuid()
            .is_root()
            .then(|| {
                File::open("/proc/thread-self/ns/net")
                    .ok()
                    .map(OwnedFd::from)
            })
            .flatten();
        let mut spare = Self { host, fresh: false };
        spare.prepare();
        spare
    }

    /// Make `launch` use the spare namespace if it wants a private network
    /// (it then needs no `CLONE_NEWNET`), or put the thread back in the
    /// host's namespace if it wants that one.
    pub(crate) fn fit(&mut self, launch: &mut Launch) {
        let Some(host) = &self.host else { return };
        let private = launch
            .namespaces
            .as_ref()
            .is_some_and(|n| n.flags & libc::CLONE_NEWNET != 0);
        if private && self.fresh {
            if let Some(ns) = &mut launch.namespaces {
                ns.flags &= !libc::CLONE_NEWNET;
                ns.loopback = false;
            }
            self.fresh = false;
        } else if !private || self.fresh {
            // Only an unused spare or the host's namespace may be shared.
            if enter(host).is_ok() {
                self.fresh = false;
            }
        }
    }

    /// After a spawn: a fresh namespace for the next command.
    pub(crate) fn prepare(&mut self) {
        if self.host.is_none() || self.fresh {
            return;
        }
        #[expect(unsafe_code, reason = "unshare of this thread's network namespace")]
        // SAFETY: affects only the calling thread (the spawner).
        let made = unsafe { libc::unshare(libc::CLONE_NEWNET) } == 0;
        self.fresh = made && loopback().is_ok();
        if made
            && !self.fresh
            && let Some(host) = &self.host
        {
            let _ = enter(host);
        }
    }
}

fn enter(ns: &OwnedFd) -> io::Result<()> {
    #[expect(unsafe_code, reason = "setns of this thread's network namespace")]
    // SAFETY: affects only the calling thread (the spawner).
    let entered = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    if entered == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Bring up `lo` in the calling thread's network namespace.
fn loopback() -> io::Result<()> {
    // Any AF_INET socket serves for the ioctls; the wildcard address
    // binds while `lo` is still down.
    let sock = std::net::UdpSocket::bind("0.0.0.0:0")?;
    #[expect(unsafe_code, reason = "the SIOCGIFFLAGS and SIOCSIFFLAGS ioctls")]
    // SAFETY: ioctls on a socket we own with a zeroed, named ifreq.
    unsafe {
        let mut request: libc::ifreq = mem::zeroed();
        request.ifr_name[0] = b'l' as libc::c_char;
        request.ifr_name[1] = b'o' as libc::c_char;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) < 0 {
            return Err(io::Error::last_os_error());
        }
        request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &request) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

// What follows runs in the child. Every function only makes system calls
// on data prepared by the parent.

#[expect(unsafe_code, reason = "reads the parent's prepared data")]
fn errno() -> i32 {
    // SAFETY: errno is thread-local to the child, which uses the parent
    // thread's TLS; nothing else runs on that thread meanwhile.
    unsafe { *libc::__errno_location() }
}

/// Fail step `step` with the current errno.
#[expect(unsafe_code, reason = "_exit in the child")]
fn fail(report: &Report, step: usize) -> ! {
    report.errno.store(errno(), Ordering::Release);
    report.step.store(step, Ordering::Release);
    // SAFETY: ends the child without running any destructor.
    unsafe { libc::_exit(127) }
}

macro_rules! check {
    ($report:expr, $step:expr, $call:expr) => {
        if $call < 0 {
            fail($report, $step)
        }
    };
}

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `ChildArgs`, alive while the parent
    // waits in clone.
    let args = unsafe { &*arg.cast::<ChildArgs<'_>>() };
    let (launch, report) = (args.launch, args.report);
    // SAFETY: system calls on prepared data (see the module docs).
    unsafe {
        check!(
            report,
            1,
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL)
        );
        // Handlers of the host must never run here: default every signal.
        for sig in 1..libc::SIGRTMAX() {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        check!(report, 2, libc::setsid());
        if let CgroupJoin::Fd(fd) = &launch.cgroup {
            check!(
                report,
                3,
                libc::write(fd.as_raw_fd(), c"0".as_ptr().cast(), 1) as i32
            );
        }
        if let Some(ns) = &launch.namespaces {
            enter_namespaces(ns, report);
        }
        check!(report, 9, libc::chdir(launch.cwd.as_ptr()));
        for (resource, value) in &launch.rlimits {
            let limit = libc::rlimit {
                rlim_cur: *value,
                rlim_max: *value,
            };
            check!(report, 10, libc::setrlimit(*resource, &limit));
        }
        connect_stdio(args.stdio, report);
        if launch.drop_capabilities {
            drop_capabilities(report);
        }
        check!(
            report,
            13,
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        );
        if let Some(landlock) = &launch.landlock {
            apply_landlock(landlock, report);
        }
        if let Some(filter) = &launch.seccomp
            && seccompiler::apply_filter(filter).is_err()
        {
            fail(report, 15);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, args.mask, ptr::null_mut());
        let mut last = libc::ENOENT;
        for program in &launch.program {
            libc::execve(program.as_ptr(), args.argv.as_ptr(), args.envp.as_ptr());
            // Keep looking past a missing file; report a real failure.
            if errno() != libc::ENOENT || last == libc::ENOENT {
                last = errno();
            }
        }
        *libc::__errno_location() = last;
        fail(report, 16)
    }
}

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn enter_namespaces(ns: &Namespaces, report: &Report) {
    // SAFETY: system calls on prepared data.
    unsafe {
        write_file(c"/proc/self/setgroups", c"deny", report, 4);
        write_file(c"/proc/self/uid_map", &ns.uid_map, report, 4);
        write_file(c"/proc/self/gid_map", &ns.gid_map, report, 4);
        let none = ptr::null::<libc::c_char>();
        check!(
            report,
            5,
            libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_SLAVE,
                ptr::null()
            )
        );
        // A tmpfs becomes the root for a while, with the host's tree
        // beneath it at /oldroot: the view is built at /newroot from
        // /oldroot paths, whatever the old /tmp hid.
        check!(
            report,
            5,
            libc::mount(
                c"tmpfs".as_ptr(),
                c"/tmp".as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                c"mode=0755,size=1m".as_ptr().cast()
            )
        );
        check!(report, 5, libc::chdir(c"/tmp".as_ptr()));
        check!(report, 5, libc::mkdir(c"oldroot".as_ptr(), 0o755));
        check!(
            report,
            5,
            libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c"oldroot".as_ptr()) as i32
        );
        check!(report, 5, libc::chdir(c"/".as_ptr()));
        // What masks a secret: an empty file and directory nobody may open.
        let fd = libc::open(
            MASK_FILE.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
            0,
        );
        check!(report, 5, fd);
        libc::close(fd);
        check!(report, 5, libc::mkdir(MASK_DIR.as_ptr(), 0));
        // Read-only mounts of their own, so every mask cloned from them is.
        for mask in [MASK_FILE, MASK_DIR] {
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
        check!(report, 5, libc::mkdir(c"/newroot".as_ptr(), 0o755));
        check!(
            report,
            5,
            libc::mount(
                c"/newroot".as_ptr(),
                c"/newroot".as_ptr(),
                none,
                libc::MS_BIND | libc::MS_REC,
                ptr::null()
            )
        );
        for op in &ns.ops {
            apply_op(op, report);
        }
        if ns.flags & libc::CLONE_NEWUTS != 0 {
            let name = c"toolhost";
            check!(
                report,
                17,
                libc::sethostname(name.as_ptr(), name.count_bytes())
            );
        }
        if ns.loopback {
            loopback_up(report);
        }
        check!(report, 8, libc::chdir(c"/newroot".as_ptr()));
        check!(
            report,
            8,
            libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) as i32
        );
        check!(report, 8, libc::umount2(c".".as_ptr(), libc::MNT_DETACH));
        check!(report, 8, libc::chdir(c"/".as_ptr()));
    }
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
fn apply_op(op: &Op, report: &Report) {
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
                let mask = if *dir { MASK_DIR } else { MASK_FILE };
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
                        MASK_DIR
                    } else {
                        MASK_FILE
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
            Op::RootReadOnly => {
                check!(
                    report,
                    6,
                    set_attributes(libc::AT_FDCWD, c"/newroot", 0, MOUNT_ATTR_RDONLY) as i32
                );
            }
        }
    }
}

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn write_file(path: &CStr, data: &CStr, report: &Report, step: usize) {
    // SAFETY: system calls on prepared data.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check!(report, step, fd);
        let written = libc::write(fd, data.as_ptr().cast(), data.count_bytes());
        libc::close(fd);
        if written < 0 {
            fail(report, step);
        }
    }
}

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn loopback_up(report: &Report) {
    // SAFETY: system calls on local data.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        check!(report, 7, sock);
        let mut request: libc::ifreq = mem::zeroed();
        request.ifr_name[0] = b'l' as libc::c_char;
        request.ifr_name[1] = b'o' as libc::c_char;
        check!(
            report,
            7,
            libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut request)
        );
        request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        check!(report, 7, libc::ioctl(sock, libc::SIOCSIFFLAGS, &request));
        libc::close(sock);
    }
}

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn connect_stdio(stdio: [RawFd; 3], report: &Report) {
    // SAFETY: system calls on fds the parent opened.
    unsafe {
        // Move each above 2 first, so no dup2 overwrites one not yet moved.
        let mut high = [0; 3];
        for (i, fd) in stdio.iter().enumerate() {
            high[i] = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 3);
            check!(report, 11, high[i]);
        }
        for (i, fd) in high.iter().enumerate() {
            check!(report, 11, libc::dup2(*fd, i as RawFd));
        }
    }
}

/// Linux capability sets' header version 3.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP and SECBIT_NO_CAP_AMBIENT_RAISE,
/// each locked, and SECBIT_KEEP_CAPS locked off: root gains nothing on exec
/// and no program can raise a capability again.
const SECURE_BITS: libc::c_ulong = (1 << 0) // NOROOT
    | (1 << 1) // NOROOT_LOCKED
    | (1 << 2) // NO_SETUID_FIXUP
    | (1 << 3) // NO_SETUID_FIXUP_LOCKED
    | (1 << 5) // KEEP_CAPS_LOCKED
    | (1 << 6) // NO_CAP_AMBIENT_RAISE
    | (1 << 7); // NO_CAP_AMBIENT_RAISE_LOCKED

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn drop_capabilities(report: &Report) {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: system calls on local data.
    unsafe {
        check!(
            report,
            12,
            libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS)
        );
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap) < 0 && errno() != libc::EINVAL {
                fail(report, 12);
            }
        }
        let clear = libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong;
        check!(
            report,
            12,
            libc::prctl(libc::PR_CAP_AMBIENT, clear, 0, 0, 0)
        );
        let header = Header {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let none = [
            Data {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
            Data {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
        ];
        check!(
            report,
            12,
            libc::syscall(libc::SYS_capset, &header, none.as_ptr()) as i32
        );
    }
}

#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn apply_landlock(landlock: &Landlock, report: &Report) {
    // SAFETY: system calls on prepared data.
    unsafe {
        for (path, access) in &landlock.rules {
            let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if fd < 0 {
                // A path missing from this view has nothing to allow.
                continue;
            }
            let mut stat: libc::stat = mem::zeroed();
            check!(report, 14, libc::fstat(fd, &mut stat));
            let allowed_access = if stat.st_mode & libc::S_IFMT == libc::S_IFDIR {
                *access
            } else {
                *access & landlock.file_rights
            };
            let rule = PathBeneath {
                allowed_access,
                parent_fd: fd,
            };
            let added = libc::syscall(
                libc::SYS_landlock_add_rule,
                landlock.ruleset.as_raw_fd(),
                1, // LANDLOCK_RULE_PATH_BENEATH
                &rule,
                0,
            );
            libc::close(fd);
            check!(report, 14, added as i32);
        }
        check!(
            report,
            14,
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                landlock.ruleset.as_raw_fd(),
                0
            ) as i32
        );
    }
}
