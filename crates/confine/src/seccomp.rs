//! The seccomp filters of every command: no process leaves its session or
//! process group (so nothing escapes the kill), none types into a terminal
//! (`TIOCSTI`), io_uring (which bypasses these filters), the keyrings,
//! `userfaultfd` and new user namespaces fail, vsock (which no network
//! namespace holds) fails, and, where sockets must be restricted (no
//! network grant and no network namespace), `socket()` for anything but
//! `AF_UNIX` fails. Denied calls fail with `EACCES`; `clone3`, whose flags
//! a filter cannot read, answers `ENOSYS`, so the C library falls back to
//! `clone`, whose flags the first filter checks.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// `TIOCSTI` on the architectures seccompiler supports (x86_64, aarch64,
/// riscv64); libc's type for it differs between them.
const TIOCSTI: u64 = 0x5412;

/// The two programs a command gets, applied in order: the main filter
/// and the one that answers `clone3`.
pub type Filters = [BpfProgram; 2];

/// The filters, with `AF_UNIX`-only sockets when `restrict_sockets`.
pub(super) fn filters(restrict_sockets: bool) -> Result<Filters, crate::Error> {
    let fail = |e: seccompiler::BackendError| crate::Error::Seccomp(e.to_string());
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| crate::Error::Seccomp("unknown architecture".to_owned()))?;
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(fail)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_setsid, Vec::new());
    rules.insert(libc::SYS_setpgid, Vec::new());
    rules.insert(libc::SYS_ioctl, vec![arg(1, SeccompCmpOp::Eq, TIOCSTI)?]);
    // A user namespace of its own would give a command every capability
    // over what it creates there, and the kernel attack surface with them.
    let new_user = libc::CLONE_NEWUSER as u64;
    for call in [libc::SYS_unshare, libc::SYS_clone] {
        rules.insert(
            call,
            vec![arg(0, SeccompCmpOp::MaskedEq(new_user), new_user)?],
        );
    }
    // The kernel keyrings: a command has no use for them, and without a
    // user namespace of its own (a root host) the user and persistent
    // keyrings it would reach are the host root's (Kerberos tickets...).
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_userfaultfd,
    ] {
        rules.insert(call, Vec::new());
    }
    let sockets = if restrict_sockets {
        arg(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?
    } else {
        arg(0, SeccompCmpOp::Eq, libc::AF_VSOCK as u64)?
    };
    rules.insert(libc::SYS_socket, vec![sockets]);
    let compile = |rules, errno: i32| -> Result<BpfProgram, crate::Error> {
        SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(fail)?
        .try_into()
        .map_err(fail)
    };
    let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    Ok([
        compile(rules, libc::EACCES)?,
        compile(clone3, libc::ENOSYS)?,
    ])
}
