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
//! written to a `Report` the parent reads once the child has exec'd or
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

mod ahead;
mod child;
mod mounts;
mod net;

use super::view::Op;
pub(crate) use ahead::Fixed;
pub use ahead::{SpareViews, own_mount_namespaces};
use child::{ChildArgs, Report, Step, child};
pub use net::{NetLease, NetPool, SpareNetwork};
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock};

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
pub struct Launch {
    /// The namespaces and the view built in them; `None` in the fallback.
    pub namespaces: Option<Namespaces>,
    /// The working directory (in the view).
    pub(crate) cwd: CString,
    /// Resource limits set before `execve`.
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    /// The command's pids cgroup: joined by the child through an fd, or
    /// provided by the spawner thread (toolhost's broker, its `Spawner`).
    pub cgroup: CgroupJoin,
    /// Drop every capability (always inside a user namespace; outside one,
    /// when the host runs as root).
    pub(crate) drop_capabilities: bool,
    /// A Landlock ruleset created in the parent, with rules for paths the
    /// child adds once its view exists.
    pub(crate) landlock: Option<Landlock>,
    /// The seccomp programs, applied in order.
    pub(crate) seccomp: Option<Arc<crate::seccomp::Filters>>,
    /// Paths to try for the program, in order (a PATH search).
    pub(crate) program: Vec<CString>,
    /// The session whose call runs it (network namespaces are reused
    /// only for the same owner, see net.rs).
    pub owner: Arc<str>,
    /// The network namespace it is born in, when the spawner thread
    /// entered one for it (net.rs).
    pub(crate) net: Option<NetLease>,
    /// A view made ahead for another layout, let go of with this
    /// command's own (ahead.rs).
    pub(crate) stale_view: Option<OwnedFd>,
    pub(crate) argv: Vec<CString>,
    pub(crate) envp: Vec<CString>,
}

/// How a command gets into its pids cgroup.
#[derive(Debug, Default)]
pub enum CgroupJoin {
    /// No cgroup.
    #[default]
    None,
    /// A cgroup limited to this many tasks, which the spawner provides.
    Limit(u32),
    /// The child writes `0` to this file (set by the spawner).
    Fd(OwnedFd),
}

/// The namespaces of one command and the view inside them.
pub struct Namespaces {
    /// `CLONE_NEW*` flags.
    pub(crate) flags: libc::c_int,
    /// `/proc/self/uid_map` and `gid_map` lines.
    pub(crate) uid_map: CString,
    pub(crate) gid_map: CString,
    /// The view's root on the host (a skeleton, see view.rs).
    pub(crate) root: CString,
    /// The empty file and directory that mask secrets (mode 000).
    pub(crate) mask_file: CString,
    pub(crate) mask_dir: CString,
    /// The mount operations, in order (targets under `root`).
    pub(crate) ops: Vec<Op>,
    /// A network namespace whose loopback is brought up.
    pub(crate) loopback: bool,
    /// Where the host may make mount namespaces itself (no user namespace
    /// in `flags`): the part of the view every command of this layout
    /// shares, which a namespace made ahead holds (ahead.rs)...
    pub(crate) fixed: Option<Arc<Fixed>>,
    /// ...and the rest, with view paths, which the child adds in it.
    pub(crate) per_command: Vec<Op>,
    /// A namespace made ahead for `fixed`, which the child enters instead
    /// of building the view (set by [`SpareViews::fit`]).
    pub(crate) made: Option<OwnedFd>,
    /// The namespace's `pid_max`, written by its PID 1 (the child) while
    /// it still holds its capabilities: the most tasks it holds, plus one.
    pub(crate) pid_max: Option<CString>,
}

/// A ruleset fd and the rules the child adds to it.
pub struct Landlock {
    pub(crate) ruleset: OwnedFd,
    /// Paths (in the view) and the access allowed beneath each.
    pub(crate) rules: Vec<(CString, u64)>,
    /// The rights that apply to a file (a rule on a file may hold no
    /// other).
    pub(crate) file_rights: u64,
}

/// What the parent gets: the child's pid and the ends of its pipes.
#[derive(Debug)]
pub struct Spawned {
    /// The command's process id (in the host's PID namespace).
    pub pid: u32,
    /// Its stdin, when one was asked for (else it reads `/dev/null`).
    pub stdin: Option<File>,
    /// The read end of its stdout.
    pub stdout: File,
    /// The read end of its stderr.
    pub stderr: File,
    /// The command's pids cgroup, removed when dropped.
    pub cgroup: Option<super::cgroup::CommandCgroup>,
    /// What its namespaces leave to tear down once it has ended.
    pub held: Held,
    /// The command is the init of a PID namespace of its own: when it
    /// ends, the kernel has ended every other process of it.
    pub pid_namespace: bool,
}

/// What a command's namespaces leave behind, held until the command has
/// ended and the caller has its answer, then dropped on a thread of its
/// own.
#[derive(Debug, Default)]
#[expect(dead_code, reason = "held only for what dropping them does")]
pub struct Held {
    /// The command's mount namespace, held open so that tearing its view
    /// down (an RCU grace period per unmount batch) happens when the
    /// holder lets go, and not in the command's exit.
    pub(crate) view: Option<File>,
    /// The network namespace it was born in: back to its owner's pool
    /// when dropped, so drop it only once the command has ended.
    pub(crate) net: Option<NetLease>,
    /// A view made ahead that served nobody.
    pub(crate) stale_view: Option<OwnedFd>,
}

/// Start `launch` with piped stdout and stderr and, if `stdin`, a piped
/// stdin (else `/dev/null`). Call from the spawner thread only: the child's
/// parent-death signal follows the thread that clones.
pub fn spawn(launch: &mut Launch, stdin: bool) -> io::Result<Spawned> {
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
        let what = Step::from_report(step).map_or("start", Step::what);
        return Err(io::Error::new(
            errno.kind(),
            format!("the sandbox could not {what}: {errno}"),
        ));
    }
    let view = match &launch.namespaces {
        Some(ns) => match &ns.made {
            Some(made) => made.try_clone().ok().map(File::from),
            None => mount_namespace(pid),
        },
        None => None,
    };
    Ok(Spawned {
        pid: u32::try_from(pid).unwrap_or(0),
        cgroup: None,
        held: Held {
            view,
            net: launch.net.take(),
            stale_view: launch.stale_view.take(),
        },
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
