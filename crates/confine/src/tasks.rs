//! The process limit a command gets: a pids cgroup where the host has
//! one; else, as root (whom `RLIMIT_NPROC` never binds) in namespaces on
//! Linux 6.14 and later, its PID namespace's own `pid_max`; else
//! `RLIMIT_NPROC`, inside the user namespace or over the user's tasks.

use crate::spawn::Namespaces;
use crate::{Plan, Support};
use std::ffi::CString;

/// The PIDs below which a namespace's numbers do not wrap
/// (`RESERVED_PIDS`): once they have wrapped, a namespace whose `pid_max`
/// is `P` has `P - 300` numbers, before that `P - 1`.
const RESERVED_PIDS: u32 = 300;

/// The largest `pid_max` a 64-bit kernel accepts (`PID_MAX_LIMIT`).
const PID_MAX_LIMIT: u32 = 1 << 22;

/// Whether kernel `release` (`uname -r`, e.g. `6.18.44-generic`) is 6.14
/// or later, where `pid_max` is per PID namespace.
pub(crate) fn pid_max_per_namespace(release: &str) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    version >= (6, 14)
}

/// Choose how `plan`'s process limit holds: a `cgroup` (its limit, when
/// the host has one), the namespaces' `pid_max`, or an entry added to
/// `rlimits`; `enforced` says which. Root without any gets none.
pub(crate) fn limit(
    plan: &Plan<'_>,
    support: &Support,
    cgroup: Option<u32>,
    namespaces: Option<&mut Namespaces>,
    rlimits: &mut Vec<(libc::__rlimit_resource_t, u64)>,
    enforced: &mut Vec<String>,
) {
    let root = rustix::process::geteuid().is_root();
    let processes = plan.limits.processes;
    let in_namespaces = namespaces.is_some();
    if cgroup.is_some() {
        enforced.push(format!("process-limit {processes} (cgroup)"));
    } else if let Some(ns) = namespaces.filter(|_| root && support.pid_max_per_namespace) {
        // The namespace's pid_max holds every task in it, threads
        // included (its PID 1 writes it before it drops its
        // capabilities). Numbers below 300 are not used again once they
        // wrap, so the limit holds at least `processes` tasks and at most
        // 299 more.
        let pid_max = processes.saturating_add(RESERVED_PIDS).min(PID_MAX_LIMIT);
        ns.pid_max = Some(CString::new(pid_max.to_string()).expect("digits hold no NUL byte"));
        enforced.push(format!(
            "process-limit {processes} (pid namespace, up to {})",
            pid_max - 1
        ));
    } else if in_namespaces && !root {
        // Inside a user namespace it counts the namespace's own tasks.
        rlimits.push((libc::RLIMIT_NPROC, u64::from(processes)));
        enforced.push(format!("process-limit {processes} (rlimit)"));
    } else if !root {
        let info = rustix::system::sysinfo();
        // Outside one it counts every task of the person's user: the
        // limit is the command's share on top of all the system's tasks
        // now (one system call; at least the command's share for it,
        // whatever the user runs beside it).
        let tasks = u64::from(info.procs) + u64::from(processes);
        rlimits.push((libc::RLIMIT_NPROC, tasks));
        enforced.push(format!(
            "process-limit {processes} (rlimit over the user's tasks)"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::pid_max_per_namespace;

    #[test]
    fn pid_max_is_per_namespace_from_linux_6_14() {
        for (release, per_ns) in [
            ("6.18.44-fc-v669", true),
            ("6.14.0", true),
            ("7.0.1-arch1", true),
            ("6.13.12-generic", false),
            ("5.15.0-91-generic", false),
            ("garbage", false),
        ] {
            assert_eq!(pid_max_per_namespace(release), per_ns, "{release}");
        }
    }
}
