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

/// Fail step `$step` with the current errno when `$call` is negative (in
/// the child only: it exits).
macro_rules! check {
    ($report:expr, $step:expr, $call:expr) => {
        if $call < 0 {
            fail($report, $step)
        }
    };
}

mod child;
mod mounts;

use super::view::Op;
use child::{ChildArgs, Report, STEPS, child};
use seccompiler::BpfProgram;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock, mpsc};

/// The highest capability number of this kernel (every one up to it is
/// dropped from the bounding set); 63 if it cannot be read.
static LAST_CAP: LazyLock<libc::c_ulong> = LazyLock::new(|| {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
});

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
    /// The view's root on the host (a skeleton, see view.rs).
    pub root: CString,
    /// The empty file and directory that mask secrets (mode 000).
    pub mask_file: CString,
    pub mask_dir: CString,
    /// The mount operations, in order (targets under `root`).
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
    /// The command is the init of a PID namespace of its own: when it
    /// ends, the kernel has ended every other process of it.
    pub pid_namespace: bool,
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
            last_cap: *LAST_CAP,
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
        .then(|| mount_namespace(pid))
        .flatten();
    Ok(Spawned {
        pid: u32::try_from(pid).unwrap_or(0),
        cgroup: None,
        view,
        pid_namespace: launch.namespaces.is_some(),
        stdin: in_w,
        stdout: File::from(OwnedFd::from(out_r)),
        stderr: File::from(OwnedFd::from(err_r)),
    })
}

/// `PIDFD_GET_MNT_NAMESPACE` (linux/pidfd.h, Linux 6.11).
const PIDFD_GET_MNT_NAMESPACE: libc::c_ulong = 0xFF03;

/// The mount namespace of `pid`, through its pidfd: opening
/// `/proc/PID/ns/mnt` waits while the process is in `execve`.
fn mount_namespace(pid: libc::pid_t) -> Option<File> {
    let pidfd = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(pid)?,
        rustix::process::PidfdFlags::empty(),
    )
    .ok()?;
    #[expect(unsafe_code, reason = "an ioctl on a pidfd we own")]
    // SAFETY: the ioctl takes no argument and returns a new fd or -1.
    let fd = unsafe { libc::ioctl(pidfd.as_raw_fd(), PIDFD_GET_MNT_NAMESPACE, 0) };
    if fd < 0 {
        return None;
    }
    #[expect(unsafe_code, reason = "taking ownership of the fd the ioctl returned")]
    // SAFETY: a fresh fd nobody else owns.
    Some(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Fresh network namespaces made ahead of time, so a command without
/// network joins one by inheritance instead of making its own while a
/// caller waits (setting one up is most of the cost of a namespaced
/// spawn). A thread of idle priority makes them, so the work never takes a
/// core from a caller or a command; the spawner thread enters one just
/// before the clone. Only where the host may make network namespaces
/// itself (root): elsewhere each command makes its own in its user
/// namespace. A thread may enter a network namespace of its own; the
/// host's other threads stay where they are.
pub(crate) struct SpareNetwork {
    /// The host's network namespace, for commands granted the network (and
    /// those of the fallback); `None` where spares are not made.
    host: Option<OwnedFd>,
    /// Fresh namespaces from the maker thread (one waits at a time).
    made: Option<mpsc::Receiver<OwnedFd>>,
    /// The spawner thread is in the namespace of the last command, which
    /// no other may share.
    in_used: bool,
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
        let made = host.as_ref().and_then(|_| {
            let (tx, rx) = mpsc::sync_channel::<OwnedFd>(0);
            std::thread::Builder::new()
                .name("toolhost-netns".to_owned())
                .spawn(move || make_spares(&tx))
                .ok()
                .map(|_| rx)
        });
        Self {
            host,
            made,
            in_used: false,
        }
    }

    /// Put the spawner thread where `launch` must be born: in a fresh
    /// namespace if it wants a private network and one is ready (it then
    /// needs no `CLONE_NEWNET`), else in the host's.
    pub(crate) fn fit(&mut self, launch: &mut Launch) -> io::Result<()> {
        let Some(host) = &self.host else {
            return Ok(());
        };
        let private = launch
            .namespaces
            .as_ref()
            .is_some_and(|n| n.flags & libc::CLONE_NEWNET != 0);
        if private
            && let Some(fresh) = self.made.as_ref().and_then(|m| m.try_recv().ok())
            && enter(&fresh).is_ok()
        {
            if let Some(ns) = &mut launch.namespaces {
                ns.flags &= !libc::CLONE_NEWNET;
                ns.loopback = false;
            }
            self.in_used = true;
            return Ok(());
        }
        // Never share a used namespace: back to the host's (a private
        // command then makes its own with `CLONE_NEWNET`).
        if self.in_used {
            enter(host).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot return to the host's network namespace: {e}"),
                )
            })?;
            self.in_used = false;
        }
        Ok(())
    }
}

/// The maker thread: at idle priority, make a namespace with its loopback
/// up and hand it over, again and again until the spawner is gone.
fn make_spares(to: &mpsc::SyncSender<OwnedFd>) {
    #[expect(unsafe_code, reason = "sched_setscheduler of this thread")]
    // SAFETY: a plain C struct, then a system call on this thread only.
    unsafe {
        let param: libc::sched_param = mem::zeroed();
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
    loop {
        #[expect(unsafe_code, reason = "unshare of this thread's network namespace")]
        // SAFETY: affects only the calling thread (the maker).
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return;
        }
        let Ok(fd) = File::open("/proc/thread-self/ns/net") else {
            return;
        };
        if loopback().is_err() || to.send(OwnedFd::from(fd)).is_err() {
            return;
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
