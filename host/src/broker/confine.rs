//! OS confinement of a command, applied in the child between `fork` and
//! `exec`, so it holds for the command and everything it starts:
//!
//! - a session of its own (`setsid`): no controlling terminal, and one
//!   process group to kill;
//! - `no_new_privs`: setuid programs (sudo, su) gain nothing;
//! - Landlock: read and execute anywhere, write only in the workspace, the
//!   broker's private temp dir, `/dev/shm`, a few harmless devices and
//!   configured directories; no TCP bind or connect (ABI 4+); no signals
//!   to, or abstract sockets of, processes outside the sandbox (ABI 6+);
//! - seccomp: `setsid`, `setpgid` and the `TIOCSTI` ioctl fail, so no
//!   process leaves the group or types into a terminal; without a network
//!   grant, `socket()` for anything but `AF_UNIX`, and io_uring, fail
//!   with `EACCES`;
//! - the parent-death signal, so the command dies with the host.
//!
//! Everything that can fail or allocate is prepared in the parent; the
//! child only makes system calls. What is enforced is known before the
//! spawn, and a child that cannot apply a planned part fails to start, so
//! the report never claims more than holds.

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use rustix::process::{Pid, Signal};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// The newest Landlock ABI whose rights toolhost asks for.
const ABI_USED: ABI = ABI::V6;

/// What the host kernel offers, probed once, with the seccomp programs
/// compiled once (they depend only on whether the network is granted).
#[derive(Debug, Clone)]
pub(crate) struct Support {
    /// The kernel's Landlock ABI version (0 if none).
    pub landlock_abi: i32,
    /// The seccomp programs without and with network, if seccomp filters
    /// can be installed here.
    filters: Option<[Arc<BpfProgram>; 2]>,
}

impl Support {
    /// What this kernel offers: probed on first use, then shared by every
    /// broker of the process (the kernel does not change under it).
    pub(crate) fn get() -> Self {
        static SUPPORT: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
        SUPPORT.get_or_init(Self::probe).clone()
    }

    fn probe() -> Self {
        // The newest ABI whose every right the kernel accepts, as a hard
        // requirement, is the one it offers (up to the one toolhost uses).
        let abis = [ABI::V6, ABI::V5, ABI::V4, ABI::V3, ABI::V2, ABI::V1];
        let landlock_abi = abis
            .into_iter()
            .find(|&abi| kernel_accepts(abi))
            .map_or(0, |abi| abi as i32);
        // The kernel lists a Seccomp field for tasks when it supports it.
        let seccomp = std::fs::read_to_string("/proc/self/status")
            .is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")));
        let filters = seccomp
            .then(|| Ok::<_, String>([Arc::new(filter(false)?), Arc::new(filter(true)?)]))
            .transpose()
            .unwrap_or_else(|e| {
                tracing::warn!("commands will run without a seccomp filter: {e}");
                None
            });
        Self {
            landlock_abi,
            filters,
        }
    }

    /// The seccomp program for a command with or without the network.
    fn filter(&self, network: bool) -> Option<Arc<BpfProgram>> {
        self.filters
            .as_ref()
            .map(|f| Arc::clone(&f[usize::from(network)]))
    }
}

/// Whether the kernel can create a ruleset with every right of `abi`.
fn kernel_accepts(abi: ABI) -> bool {
    let build = || -> Result<RulesetCreated, landlock::RulesetError> {
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))?;
        if abi >= ABI::V4 {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
        }
        if abi >= ABI::V6 {
            ruleset = ruleset.scope(Scope::from_all(abi))?;
        }
        ruleset.create()
    };
    build().is_ok()
}

fn target_arch() -> Option<TargetArch> {
    TargetArch::try_from(std::env::consts::ARCH).ok()
}

/// What to confine a command to.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Directories the command may write in (workspace, temp dir, extras).
    pub writable: Vec<PathBuf>,
    /// Whether the command may use the network.
    pub network: bool,
}

/// Confinement ready to apply in a child, and what it will enforce.
pub(crate) struct Prepared {
    ruleset: Option<RulesetCreated>,
    filter: Option<Arc<BpfProgram>>,
    parent: Option<Pid>,
    /// Names of what is enforced, for the report.
    pub enforced: Vec<String>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("enforced", &self.enforced)
            .finish_non_exhaustive()
    }
}

/// Device files every command may write (`> /dev/null`), and shared
/// memory (Python's multiprocessing needs `/dev/shm`). Not `/dev/tty`: a
/// command could type into the host's terminal.
const WRITABLE_DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/shm"];

impl Prepared {
    /// Prepare `plan` on a kernel offering `support`.
    pub(crate) fn new(plan: &Plan, support: &Support) -> Result<Self, String> {
        let mut enforced = vec!["no-new-privs".to_owned(), "own-session".to_owned()];
        let ruleset = if support.landlock_abi >= 1 {
            let r = landlock_ruleset(plan, support)
                .map_err(|e| format!("cannot prepare Landlock: {e}"))?;
            enforced.push(format!("landlock-fs (abi {})", support.landlock_abi));
            if !plan.network && support.landlock_abi >= 4 {
                enforced.push("landlock-net".to_owned());
            }
            if support.landlock_abi >= 6 {
                enforced.push("landlock-scope".to_owned());
            }
            Some(r)
        } else {
            None
        };
        let filter = support.filter(plan.network);
        if filter.is_some() {
            enforced.push("seccomp-session".to_owned());
            if !plan.network {
                enforced.push("seccomp-net".to_owned());
            }
        }
        Ok(Self {
            ruleset,
            filter,
            parent: Some(rustix::process::getpid()),
            enforced,
        })
    }

    /// Whether file-system confinement (Landlock) is part of the plan.
    pub(crate) fn confines_files(&self) -> bool {
        self.ruleset.is_some()
    }

    /// Whether the seccomp filter (network, process group) is part of the plan.
    pub(crate) fn confines_calls(&self) -> bool {
        self.filter.is_some()
    }

    /// Apply in the child after `fork`, before `exec`. Only system calls.
    pub(crate) fn apply(&mut self) -> io::Result<()> {
        // A session of its own: no controlling terminal to type into, and a
        // process group (the session id) that the timeout, `kill` and the
        // watchdog kill whole.
        rustix::process::setsid()?;
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        // The host may have died before the line above.
        if rustix::process::getppid() != self.parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        rustix::thread::set_no_new_privs(true)?;
        if let Some(ruleset) = self.ruleset.take() {
            match ruleset.restrict_self() {
                Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {}
                Ok(_) => return Err(io::Error::from_raw_os_error(libc::ENOSYS)),
                Err(_) => return Err(io::Error::from_raw_os_error(libc::EPERM)),
            }
        }
        if let Some(filter) = &self.filter {
            seccompiler::apply_filter(filter)
                .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
        }
        Ok(())
    }
}

fn landlock_ruleset(
    plan: &Plan,
    support: &Support,
) -> Result<RulesetCreated, landlock::RulesetError> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_USED))?;
    if !plan.network && support.landlock_abi >= 4 {
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI_USED))?;
    }
    if support.landlock_abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(ABI_USED))?;
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_USED)))?
        .add_rules(path_beneath_rules(
            &plan.writable,
            AccessFs::from_all(ABI_USED),
        ))?
        .add_rules(path_beneath_rules(
            WRITABLE_DEVICES,
            AccessFs::from_all(ABI_USED),
        ))
}

/// `TIOCSTI` on the architectures seccompiler supports (x86_64, aarch64,
/// riscv64); libc's type for it differs between them.
const TIOCSTI: u64 = 0x5412;

/// The seccomp filter: processes cannot leave their session or process
/// group (so nothing escapes the kill) nor push input into a terminal; and,
/// without a network grant, sockets other than `AF_UNIX` and io_uring fail.
fn filter(network: bool) -> Result<BpfProgram, String> {
    let fail = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
    let arch = target_arch().ok_or("seccomp: unknown architecture")?;
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(fail)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_setsid, Vec::new());
    rules.insert(libc::SYS_setpgid, Vec::new());
    rules.insert(libc::SYS_ioctl, vec![arg(1, SeccompCmpOp::Eq, TIOCSTI)?]);
    if !network {
        rules.insert(
            libc::SYS_socket,
            vec![arg(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?],
        );
        for call in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            rules.insert(call, Vec::new());
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(fail)?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("cannot compile the seccomp filter: {e}"))
}
