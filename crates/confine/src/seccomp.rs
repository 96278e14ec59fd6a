//! The seccomp filter of every command: no process leaves its session or
//! process group (so nothing escapes the kill), none types into a terminal
//! (`TIOCSTI`), io_uring (which bypasses these filters) fails, and, where
//! sockets must be restricted (no network grant and no network namespace),
//! `socket()` for anything but `AF_UNIX` fails. Denied calls fail with
//! `EACCES`.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// `TIOCSTI` on the architectures seccompiler supports (x86_64, aarch64,
/// riscv64); libc's type for it differs between them.
const TIOCSTI: u64 = 0x5412;

/// The filter, with `AF_UNIX`-only sockets when `restrict_sockets`.
pub(super) fn filter(restrict_sockets: bool) -> Result<BpfProgram, String> {
    let fail = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| "seccomp: unknown architecture".to_owned())?;
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(fail)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_setsid, Vec::new());
    rules.insert(libc::SYS_setpgid, Vec::new());
    rules.insert(libc::SYS_ioctl, vec![arg(1, SeccompCmpOp::Eq, TIOCSTI)?]);
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
    ] {
        rules.insert(call, Vec::new());
    }
    if restrict_sockets {
        rules.insert(
            libc::SYS_socket,
            vec![arg(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?],
        );
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
