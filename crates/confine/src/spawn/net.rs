//! Network namespaces for commands without network, where the host may
//! make them itself (root). Making one and tearing it down are most of
//! what a namespaced command costs, so neither happens while a caller
//! waits:
//!
//! - a thread of low priority (nice 19) makes fresh ones ahead ([`SpareNetwork`]);
//! - once a command has ended (its PID namespace with it, so no process
//!   of it is left; a socket it handed to another command of the same
//!   owner may be), its namespace goes back to a pool of its owner (the
//!   session whose call ran it) and serves that owner's next command
//!   ([`NetPool`]), where Landlock keeps commands from changing
//!   `/proc/sys/net`; another owner never gets it;
//! - the ones let go of are held and dropped together, so the kernel tears
//!   them down in one batch (one RCU grace period and one pass of every
//!   network subsystem for the lot) instead of one per command.
//!
//! A thread may enter a network namespace of its own; the host's other
//! threads stay where they are.

use super::Launch;
use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

/// How many used network namespaces are let go of together.
const RETIRE_BATCH: usize = 32;
/// How many ended commands' namespaces wait for their owners' next
/// commands, all owners together (the oldest go first).
const POOLED: usize = 8;

/// Namespaces of ended commands, by owner, and those let go of.
#[derive(Debug, Default)]
pub struct NetPool {
    state: Mutex<PoolState>,
    /// Namespaces serve their owner's next command (only where Landlock
    /// keeps commands from writing `/proc/sys/net`, whose settings would
    /// otherwise carry over).
    reuse: bool,
}

#[derive(Debug, Default)]
struct PoolState {
    /// Oldest first.
    idle: VecDeque<(Arc<str>, OwnedFd)>,
    retired: Vec<OwnedFd>,
}

impl NetPool {
    /// An empty pool; with `reuse` (only where Landlock keeps commands from
    /// writing `/proc/sys/net`), a namespace an owner's command ended in
    /// serves that owner's next command.
    pub fn new(reuse: bool) -> Self {
        Self {
            state: Mutex::default(),
            reuse,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A namespace a command of `owner` used, if one is waiting.
    fn take(&self, owner: &str) -> Option<OwnedFd> {
        let mut state = self.lock();
        let at = state.idle.iter().rposition(|(o, _)| &**o == owner)?;
        state.idle.remove(at).map(|(_, ns)| ns)
    }

    /// `owner`'s command that used `ns` has ended.
    fn give_back(&self, owner: Arc<str>, ns: OwnedFd) {
        if !self.reuse {
            self.retire_one(ns);
            return;
        }
        let gone = {
            let mut state = self.lock();
            state.idle.push_back((owner, ns));
            let over = state.idle.len().saturating_sub(POOLED);
            let old: Vec<OwnedFd> = state.idle.drain(..over).map(|(_, ns)| ns).collect();
            state.retire(old)
        };
        drop(gone);
    }

    /// `owner` is gone: its namespaces serve nobody.
    pub fn forget(&self, owner: &str) {
        let gone = {
            let mut state = self.lock();
            let (theirs, rest): (VecDeque<_>, VecDeque<_>) =
                state.idle.drain(..).partition(|(o, _)| &**o == owner);
            state.idle = rest;
            state.retire(theirs.into_iter().map(|(_, ns)| ns).collect())
        };
        drop(gone);
    }

    /// Let go of `ns`.
    fn retire_one(&self, ns: OwnedFd) {
        let gone = self.lock().retire(vec![ns]);
        drop(gone);
    }
}

impl PoolState {
    /// Hold `more`; a full batch is returned, for the caller to drop
    /// outside the lock.
    fn retire(&mut self, more: Vec<OwnedFd>) -> Vec<OwnedFd> {
        self.retired.extend(more);
        if self.retired.len() >= RETIRE_BATCH {
            mem::take(&mut self.retired)
        } else {
            Vec::new()
        }
    }
}

/// The network namespace a command was born in. Dropped once the command
/// has ended (with its view, see `Held`): back to its owner's pool.
#[derive(Debug)]
pub struct NetLease {
    ns: Option<OwnedFd>,
    owner: Arc<str>,
    pool: Arc<NetPool>,
}

impl Drop for NetLease {
    fn drop(&mut self) {
        if let Some(ns) = self.ns.take() {
            self.pool.give_back(Arc::clone(&self.owner), ns);
        }
    }
}

/// The spawner thread's network namespaces: spares made ahead, the pool,
/// and which one the thread is in.
pub struct SpareNetwork {
    /// The host's network namespace, for commands granted the network (and
    /// those of the fallback); `None` where spares are not made.
    host: Option<OwnedFd>,
    /// Fresh namespaces from the maker thread (one waits at a time).
    made: Option<mpsc::Receiver<OwnedFd>>,
    /// The spawner thread is in the namespace of the last command, which
    /// no other may share.
    in_used: bool,
    pool: Arc<NetPool>,
}

impl SpareNetwork {
    /// Call on the spawner thread.
    pub fn new(pool: Arc<NetPool>) -> Self {
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
            pool,
        }
    }

    /// Put the spawner thread where `launch` must be born: in a namespace
    /// of its owner's pool or a fresh one if it wants a private network
    /// (it then needs no `CLONE_NEWNET`, and takes the namespace along in
    /// `launch.net`), else in the host's.
    pub fn fit(&mut self, launch: &mut Launch) -> io::Result<()> {
        let Some(host) = &self.host else {
            return Ok(());
        };
        let private = launch
            .namespaces
            .as_ref()
            .is_some_and(|n| n.flags & libc::CLONE_NEWNET != 0);
        if private {
            let ns = self
                .pool
                .take(&launch.owner)
                .or_else(|| self.made.as_ref().and_then(|m| m.try_recv().ok()));
            if let Some(ns) = ns {
                if enter(&ns).is_ok() {
                    if let Some(n) = &mut launch.namespaces {
                        n.flags &= !libc::CLONE_NEWNET;
                        n.loopback = false;
                    }
                    self.in_used = true;
                    launch.net = Some(NetLease {
                        ns: Some(ns),
                        owner: Arc::clone(&launch.owner),
                        pool: Arc::clone(&self.pool),
                    });
                    return Ok(());
                }
                self.pool.retire_one(ns);
            }
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

/// Run the calling thread at the lowest priority that still gets a share
/// of a busy machine (nice 19): work made ahead never takes a core from a
/// caller or a command, and a thread that holds a kernel lock (the
/// namespace or network locks) is never starved while holding it, as
/// `SCHED_IDLE` could be.
pub(super) fn low_priority() {
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    #[expect(unsafe_code, reason = "setpriority of this thread")]
    // SAFETY: a system call on this thread only (Linux applies a tid's
    // nice value to that thread).
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, tid.unsigned_abs(), 19);
    }
}

/// The maker thread: at low priority, make a namespace with its loopback
/// up and hand it over, again and again until the spawner is gone.
fn make_spares(to: &mpsc::SyncSender<OwnedFd>) {
    low_priority();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ns() -> OwnedFd {
        File::open("/dev/null").unwrap().into()
    }

    #[test]
    fn a_namespace_serves_only_its_owner_and_only_where_reuse_is_safe() {
        let pool = NetPool::new(true);
        pool.give_back(Arc::from("a"), ns());
        assert!(pool.take("b").is_none(), "another owner never gets it");
        assert!(pool.take("a").is_some());
        assert!(
            pool.take("a").is_none(),
            "one namespace serves one command at a time"
        );
        for _ in 0..POOLED + 3 {
            pool.give_back(Arc::from("a"), ns());
        }
        assert_eq!(pool.lock().idle.len(), POOLED, "the oldest are let go of");
        pool.forget("a");
        assert!(pool.take("a").is_none(), "a session that ended keeps none");

        // Without Landlock, /proc/sys/net settings could carry over.
        let unsafe_here = NetPool::new(false);
        unsafe_here.give_back(Arc::from("a"), ns());
        assert!(unsafe_here.take("a").is_none());
    }
}
