//! What runs in the child of `clone`, between it and `execve`: every
//! function only makes system calls on data the parent prepared, never
//! allocates, locks or unwinds (see spawn.rs). A failure is written to the
//! [`Report`] and the child exits.

use super::CgroupJoin;
use super::mounts::{Masks, Tree, apply_op, build_view, mask_tree};
use super::{Landlock, Launch, Namespaces};
use std::ffi::CStr;
use std::mem;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// Where the child writes why it could not start.
#[derive(Default)]
pub(super) struct Report {
    pub(super) step: AtomicUsize,
    pub(super) errno: AtomicI32,
}

/// The steps of the child, each named in the error when it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub(super) enum Step {
    /// "set the parent-death signal"
    ParentDeath = 1,
    /// "start a session"
    Session = 2,
    /// "join the pids cgroup"
    Cgroup = 3,
    /// "map the user ids"
    UserIds = 4,
    /// "make the mounts private"
    PrivateMounts = 5,
    /// "build the view"
    View = 6,
    /// "bring up the loopback interface"
    Loopback = 7,
    /// "enter the view"
    EnterView = 8,
    /// "enter the working directory"
    WorkDir = 9,
    /// "set a resource limit"
    Rlimit = 10,
    /// "connect stdin, stdout and stderr"
    Stdio = 11,
    /// "drop capabilities"
    Capabilities = 12,
    /// "set no_new_privs"
    NoNewPrivs = 13,
    /// "apply Landlock"
    Landlock = 14,
    /// "apply the seccomp filter"
    Seccomp = 15,
    /// "run the program"
    Exec = 16,
    /// "set the host name"
    HostName = 17,
    /// "close the host's other descriptors"
    Descriptors = 18,
    /// "limit the tasks of the PID namespace"
    PidMax = 19,
}

impl Step {
    /// Every step, in the order of their numbers (from 1).
    const ALL: [Self; 19] = [
        Self::ParentDeath,
        Self::Session,
        Self::Cgroup,
        Self::UserIds,
        Self::PrivateMounts,
        Self::View,
        Self::Loopback,
        Self::EnterView,
        Self::WorkDir,
        Self::Rlimit,
        Self::Stdio,
        Self::Capabilities,
        Self::NoNewPrivs,
        Self::Landlock,
        Self::Seccomp,
        Self::Exec,
        Self::HostName,
        Self::Descriptors,
        Self::PidMax,
    ];

    /// The step a [`Report`] holds (0: none).
    pub(super) fn from_report(n: usize) -> Option<Self> {
        Self::ALL.get(n.checked_sub(1)?).copied()
    }

    /// What the sandbox could not do, for the error message.
    pub(super) fn what(self) -> &'static str {
        match self {
            Self::ParentDeath => "set the parent-death signal",
            Self::Session => "start a session",
            Self::Cgroup => "join the pids cgroup",
            Self::UserIds => "map the user ids",
            Self::PrivateMounts => "make the mounts private",
            Self::View => "build the view",
            Self::Loopback => "bring up the loopback interface",
            Self::EnterView => "enter the view",
            Self::WorkDir => "enter the working directory",
            Self::Rlimit => "set a resource limit",
            Self::Stdio => "connect stdin, stdout and stderr",
            Self::Capabilities => "drop capabilities",
            Self::NoNewPrivs => "set no_new_privs",
            Self::Landlock => "apply Landlock",
            Self::Seccomp => "apply the seccomp filter",
            Self::Exec => "run the program",
            Self::HostName => "set the host name",
            Self::Descriptors => "close the host's other descriptors",
            Self::PidMax => "limit the tasks of the PID namespace",
        }
    }
}

/// Everything the child reads, on the parent's stack.
pub(super) struct ChildArgs<'a> {
    pub(super) launch: &'a Launch,
    pub(super) argv: &'a [*const libc::c_char],
    pub(super) envp: &'a [*const libc::c_char],
    /// stdin, stdout, stderr for the command.
    pub(super) stdio: [RawFd; 3],
    pub(super) mask: &'a libc::sigset_t,
    /// The highest capability number this kernel knows.
    pub(super) last_cap: libc::c_ulong,
    pub(super) report: &'a Report,
}

#[expect(unsafe_code, reason = "reads the parent's prepared data")]
pub(super) fn errno() -> i32 {
    // SAFETY: errno is thread-local to the child, which uses the parent
    // thread's TLS; nothing else runs on that thread meanwhile.
    unsafe { *libc::__errno_location() }
}

/// Fail step `step` with the current errno.
#[expect(unsafe_code, reason = "_exit in the child")]
pub(super) fn fail(report: &Report, step: Step) -> ! {
    report.errno.store(errno(), Ordering::Release);
    report.step.store(step as usize, Ordering::Release);
    // SAFETY: ends the child without running any destructor.
    unsafe { libc::_exit(127) }
}

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
pub(super) extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `ChildArgs`, alive while the parent
    // waits in clone.
    let args = unsafe { &*arg.cast::<ChildArgs<'_>>() };
    let (launch, report) = (args.launch, args.report);
    // SAFETY: system calls on prepared data (see the module docs).
    unsafe {
        check!(
            report,
            Step::ParentDeath,
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL)
        );
        // Handlers of the host must never run here: default every signal.
        for sig in 1..=libc::SIGRTMAX() {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        check!(report, Step::Session, libc::setsid());
        if let CgroupJoin::Fd(fd) = &launch.cgroup {
            check!(
                report,
                Step::Cgroup,
                libc::write(fd.as_raw_fd(), c"0".as_ptr().cast(), 1) as i32
            );
        }
        if let Some(ns) = &launch.namespaces {
            match &ns.made {
                Some(made) => enter_made(ns, made.as_raw_fd(), report),
                None => enter_namespaces(ns, report),
            }
        }
        check!(report, Step::WorkDir, libc::chdir(launch.cwd.as_ptr()));
        for (resource, value) in &launch.rlimits {
            let limit = libc::rlimit {
                rlim_cur: *value,
                rlim_max: *value,
            };
            check!(report, Step::Rlimit, libc::setrlimit(*resource, &limit));
        }
        connect_stdio(args.stdio, report);
        if launch.drop_capabilities {
            drop_capabilities(args.last_cap, report);
        }
        check!(
            report,
            Step::NoNewPrivs,
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        );
        if let Some(landlock) = &launch.landlock {
            apply_landlock(landlock, report);
        }
        // The last descriptor the child needs (the Landlock ruleset) is
        // used: nothing else the host holds reaches the program.
        close_beyond_stdio(report);
        for filter in launch.seccomp.iter().flat_map(|f| f.iter()) {
            if seccompiler::apply_filter(filter).is_err() {
                fail(report, Step::Seccomp);
            }
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
        fail(report, Step::Exec)
    }
}

/// Mark every descriptor past stdio close-on-exec, whoever opened it
/// without `O_CLOEXEC` (toolhost's own parent included): `close_range`,
/// or one `fcntl` each up to the descriptor limit on kernels before 5.11.
#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn close_beyond_stdio(report: &Report) {
    // SAFETY: system calls on plain integers and a local struct.
    unsafe {
        let all = libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
        if all == 0 {
            return;
        }
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        check!(
            report,
            Step::Descriptors,
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit)
        );
        let most = limit.rlim_cur.min(1 << 20) as libc::c_int;
        for fd in 3..most {
            if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) < 0 && errno() != libc::EBADF {
                fail(report, Step::Descriptors);
            }
        }
    }
}

fn enter_namespaces(ns: &Namespaces, report: &Report) {
    if ns.flags & libc::CLONE_NEWUSER != 0 {
        write_file(c"/proc/self/setgroups", c"deny", report, Step::UserIds);
        write_file(c"/proc/self/uid_map", &ns.uid_map, report, Step::UserIds);
        write_file(c"/proc/self/gid_map", &ns.gid_map, report, Step::UserIds);
    }
    // The skeleton becomes a mount of its own, the view's root, and
    // everything is mounted onto it from the host's tree.
    if let Err(step) = build_view(&ns.root, &ns.mask_file, &ns.mask_dir, &ns.ops) {
        fail(report, step);
    }
    finish_namespaces(ns, report);
}

/// Enter `made`, a mount namespace made ahead with the fixed part of the
/// view in place and its root the view's (ahead.rs), and add the
/// command's own mounts. Masks come from trees cloned here first: the
/// namespace's own mask sources went with the host's tree.
#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn enter_made(ns: &Namespaces, made: RawFd, report: &Report) {
    let masked = ns
        .per_command
        .iter()
        .any(|op| matches!(op, super::Op::Mask(_)));
    let tree = |path| match mask_tree(path) {
        Ok(tree) => tree,
        Err(step) => fail(report, step),
    };
    let none = || Tree {
        fd: -1,
        placed: false,
    };
    let mut masks = if masked {
        Masks::Trees {
            file: tree(&ns.mask_file),
            dir: tree(&ns.mask_dir),
        }
    } else {
        Masks::Trees {
            file: none(),
            dir: none(),
        }
    };
    // SAFETY: system calls on prepared data; setns also moves this
    // process's root and working directory to the namespace's root.
    unsafe {
        check!(
            report,
            Step::EnterView,
            libc::setns(made, libc::CLONE_NEWNS)
        );
        for op in &ns.per_command {
            if let Err(step) = apply_op(op, &mut masks) {
                fail(report, step);
            }
        }
        if let Masks::Trees { file, dir } = &masks {
            for fd in [file.fd, dir.fd] {
                if fd >= 0 {
                    libc::close(fd);
                }
            }
        }
    }
    finish_namespaces(ns, report);
}

/// The host name, the loopback interface and the tasks limit, once the
/// view is built.
#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn finish_namespaces(ns: &Namespaces, report: &Report) {
    // SAFETY: system calls on prepared data.
    unsafe {
        if ns.flags & libc::CLONE_NEWUTS != 0 {
            let name = c"toolhost";
            check!(
                report,
                Step::HostName,
                libc::sethostname(name.as_ptr(), name.count_bytes())
            );
        }
    }
    if ns.loopback {
        loopback_up(report);
    }
    // The sysctl belongs to the writer's own PID namespace: this one's.
    if let Some(most) = &ns.pid_max {
        write_file(c"/proc/sys/kernel/pid_max", most, report, Step::PidMax);
    }
}

#[expect(unsafe_code, reason = "the child of clone: system calls only")]
fn write_file(path: &CStr, data: &CStr, report: &Report, step: Step) {
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
        check!(report, Step::Loopback, sock);
        let mut request: libc::ifreq = mem::zeroed();
        request.ifr_name[0] = b'l' as libc::c_char;
        request.ifr_name[1] = b'o' as libc::c_char;
        check!(
            report,
            Step::Loopback,
            libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut request)
        );
        request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        check!(
            report,
            Step::Loopback,
            libc::ioctl(sock, libc::SIOCSIFFLAGS, &request)
        );
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
            check!(report, Step::Stdio, high[i]);
        }
        for (i, fd) in high.iter().enumerate() {
            check!(report, Step::Stdio, libc::dup2(*fd, i as RawFd));
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
fn drop_capabilities(last_cap: libc::c_ulong, report: &Report) {
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
            Step::Capabilities,
            libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS)
        );
        for cap in 0..=last_cap {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap) < 0 && errno() != libc::EINVAL {
                fail(report, Step::Capabilities);
            }
        }
        let clear = libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong;
        check!(
            report,
            Step::Capabilities,
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
            Step::Capabilities,
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
            check!(report, Step::Landlock, libc::fstat(fd, &mut stat));
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
            check!(report, Step::Landlock, added as i32);
        }
        check!(
            report,
            Step::Landlock,
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                landlock.ruleset.as_raw_fd(),
                0
            ) as i32
        );
    }
}
