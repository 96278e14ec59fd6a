//! Processes: starting them so they cannot outlive the host, collecting
//! their output, and killing whole process groups.
//!
//! Every command is the leader of its own process group. Three layers make
//! sure none survives the host:
//! - dropping the broker kills every group it started;
//! - each leader gets `SIGKILL` as its parent-death signal. The signal
//!   follows the *thread* that forked, so all spawns happen on one
//!   long-lived [`Spawner`] thread;
//! - in the namespace sandbox the leader is the init of its own PID
//!   namespace: when it dies, the kernel kills every process in it;
//! - in the fallback, a small `sh` [`Watchdog`] learns each group id and
//!   kills the groups still registered when its stdin closes, which is when
//!   the host exits, even by `SIGKILL`. That reaches children the leader
//!   left behind, which the parent-death signal does not.
//!
//! A foreground command is run to its end on the caller's thread
//! ([`run_to_end`]: one `poll` over a pidfd and the output pipes); a
//! background one gets output reader threads and a reaper thread.

mod foreground;

pub(crate) use foreground::{run_to_end, settle_cleanup};

use super::confine::Support;
use super::confine::cgroup::{Ahead, CommandCgroup, Pids};
use super::confine::spawn::{self, CgroupJoin, Launch, Spawned};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, WaitOptions};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt as _;
use std::process::{ChildStdin, Command, Stdio};

use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

/// Send `SIGKILL` to every process of group `pgid`.
pub(crate) fn kill_group(pgid: u32) {
    if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        // ESRCH (the group is gone) is the expected outcome when it ended.
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
}

type SpawnJob = (Launch, bool, mpsc::Sender<io::Result<Spawned>>);

/// The one thread that starts commands (see the module docs).
#[derive(Debug)]
pub(crate) struct Spawner {
    jobs: Mutex<Option<mpsc::Sender<SpawnJob>>>,
    /// How many commands entered a view made ahead (spawn/ahead.rs).
    made_ahead: Arc<std::sync::atomic::AtomicU64>,
    /// Network namespaces of ended commands, by owner (spawn/net.rs).
    net_pool: Arc<spawn::NetPool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Spawner {
    /// The spawner thread; with `pids`, each command gets a cgroup limited
    /// to `max` tasks (usually prepared ahead, see [`Ahead`]); with
    /// `views_ahead`, views are made ahead where the host can.
    pub(crate) fn new(pids: Option<Arc<Pids>>, max: u32, views_ahead: bool) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel::<SpawnJob>();
        let made_ahead = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let net_pool = Arc::new(spawn::NetPool::new(Support::get().landlock_abi >= 1));
        let pool = Arc::clone(&net_pool);
        let counted = Arc::clone(&made_ahead);
        let thread = thread::Builder::new()
            .name("toolhost-spawner".to_owned())
            .spawn(move || {
                let mut spare = spawn::SpareNetwork::new(pool);
                let mut views =
                    spawn::SpareViews::new(views_ahead && Support::get().own_mounts, counted);
                // Made after the first command: a host that runs none
                // makes no cgroup.
                let mut ahead: Option<Ahead> = None;
                for (mut launch, stdin, reply) in rx {
                    if let Err(e) = spare.fit(&mut launch) {
                        let _ = reply.send(Err(e));
                        continue;
                    }
                    views.fit(&mut launch);
                    let (result, left) =
                        spawn_in_cgroup(&mut launch, stdin, pids.as_deref(), &mut ahead);
                    let _ = reply.send(result);
                    let limited = matches!(launch.cgroup, CgroupJoin::Limit(_) | CgroupJoin::Fd(_));
                    if ahead.is_none() && limited {
                        // Into the next command's cgroup, out of this one.
                        ahead = pids.as_ref().and_then(|p| p.ahead(max));
                        if ahead.is_none()
                            && let Some(p) = &pids
                        {
                            p.leave();
                        }
                    }
                    if let Some(left) = left {
                        left.done();
                    }
                }
                // Out of the cgroup made for a command that never came.
                if let Some(a) = ahead {
                    if let Some(p) = &pids {
                        p.leave();
                    }
                    a.used().1.done();
                }
            })?;
        Ok(Self {
            made_ahead,
            net_pool,
            jobs: Mutex::new(Some(tx)),
            thread: Some(thread),
        })
    }

    /// `owner` is gone: no command of it needs its network namespaces.
    pub(crate) fn forget(&self, owner: &str) {
        self.net_pool.forget(owner);
    }

    /// How many commands entered a view made ahead.
    pub(crate) fn views_made_ahead(&self) -> u64 {
        self.made_ahead.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Start `launch` on the spawner thread, with a piped stdin if `stdin`.
    pub(crate) fn spawn(&self, launch: Launch, stdin: bool) -> io::Result<Spawned> {
        let (tx, rx) = mpsc::channel();
        let sent = self
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|jobs| jobs.send((launch, stdin, tx)).is_ok());
        if sent != Some(true) {
            return Err(io::Error::other("the command runner has shut down"));
        }
        rx.recv()
            .unwrap_or_else(|_| Err(io::Error::other("the command runner stopped")))
    }
}

/// Spawn `launch` in the cgroup it asks for: the one the thread joined
/// ahead (the child is born in it), else a new one the child joins. The
/// second value, if any, must be told when the thread has left the cgroup.
fn spawn_in_cgroup(
    launch: &mut Launch,
    stdin: bool,
    pids: Option<&Pids>,
    ahead: &mut Option<Ahead>,
) -> (io::Result<Spawned>, Option<super::confine::cgroup::Left>) {
    let CgroupJoin::Limit(max) = launch.cgroup else {
        return (spawn::spawn(launch, stdin), None);
    };
    if let Some(a) = ahead.take_if(|a| a.max() == max) {
        return match spawn::spawn(launch, stdin) {
            Ok(mut spawned) => {
                let (cgroup, left) = a.used();
                spawned.cgroup = Some(cgroup);
                (Ok(spawned), Some(left))
            }
            Err(e) => {
                // Nothing was born in it: keep it for the next command.
                *ahead = Some(a);
                (Err(e), None)
            }
        };
    }
    let Some(pids) = pids else {
        let e = io::Error::other("no pids cgroup to limit the command's processes");
        return (Err(e), None);
    };
    match pids.create(max) {
        Ok((cgroup, fd)) => {
            launch.cgroup = CgroupJoin::Fd(fd);
            let result = spawn::spawn(launch, stdin).map(|mut spawned| {
                spawned.cgroup = Some(cgroup);
                spawned
            });
            (result, None)
        }
        Err(e) => (
            Err(io::Error::new(
                e.kind(),
                format!("cannot make the command's pids cgroup: {e}"),
            )),
            None,
        ),
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // The thread ends with its queue, after leaving its cgroup.
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Kills registered process groups when the host goes away.
#[derive(Debug)]
pub(crate) struct Watchdog {
    stdin: Mutex<Option<ChildStdin>>,
}

const WATCHDOG: &str = r#"trap '' INT TERM HUP PIPE
live=""
while read -r line; do
  case "$line" in
    +*) live="$live ${line#+}" ;;
    -*) keep=""; for g in $live; do [ "$g" = "${line#-}" ] || keep="$keep $g"; done; live="$keep" ;;
  esac
done
for g in $live; do kill -s KILL -- "-$g" 2>/dev/null; done"#;

impl Watchdog {
    /// Start the watchdog; `None` (with a warning) if `sh` cannot start.
    pub(crate) fn start() -> Option<Self> {
        let started = Command::new("/bin/sh")
            .args(["-c", WATCHDOG])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .env_clear()
            .spawn();
        match started {
            Ok(mut child) => Some(Self {
                stdin: Mutex::new(child.stdin.take()),
            }),
            Err(e) => {
                tracing::warn!(
                    "cannot start the process watchdog ({e}); commands left running will not be killed if the host is killed"
                );
                None
            }
        }
    }

    fn send(&self, line: &str) {
        let mut stdin = self.stdin.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(pipe) = stdin.as_mut()
            && pipe.write_all(line.as_bytes()).is_err()
        {
            *stdin = None;
        }
    }

    /// Watch group `pgid`.
    pub(crate) fn watch(&self, pgid: u32) {
        self.send(&format!("+{pgid}\n"));
    }

    /// Stop watching group `pgid` (it is gone).
    pub(crate) fn forget(&self, pgid: u32) {
        self.send(&format!("-{pgid}\n"));
    }
}

/// Output collected from a process: the first `head_cap` bytes and the
/// last `tail_cap` bytes, with the count of everything written.
#[derive(Debug, Default)]
pub(crate) struct Buffer {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
}

impl Buffer {
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head_cap,
            tail_cap,
            ..Self::default()
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        let to_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..to_head]);
        bytes = &bytes[to_head..];
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let over = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..over);
            self.tail.extend(bytes);
        }
    }

    /// Bytes written so far, kept or not.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The last line with something on it among the bytes written after
    /// byte `from` (at most 200 characters of its end, from what is kept).
    pub(crate) fn last_line_after(&self, from: u64) -> Option<String> {
        let start = from.max(self.total.saturating_sub(4096));
        let mut end = Vec::new();
        if let Some(head) = usize::try_from(start).ok().and_then(|s| self.head.get(s..)) {
            end.extend_from_slice(head);
        }
        let tail_start = self.total - self.tail.len() as u64;
        let skip = usize::try_from(start.saturating_sub(tail_start)).unwrap_or(usize::MAX);
        end.extend(self.tail.iter().skip(skip));
        let text = String::from_utf8_lossy(&end);
        let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
        let chars = line.chars().count();
        Some(line.chars().skip(chars.saturating_sub(200)).collect())
    }

    /// Everything kept, as text, with a note where bytes were dropped.
    pub(crate) fn text(&self) -> String {
        let dropped = self.total - (self.head.len() + self.tail.len()) as u64;
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if dropped > 0 {
            out.push_str(&format!(
                "\n[... {dropped} bytes not kept: output over {} MiB ...]\n",
                (self.head_cap + self.tail_cap) >> 20
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }

    /// Text written after byte `cursor` that is still kept (tail only),
    /// how many bytes since `cursor` were dropped, and the new cursor. An
    /// incomplete UTF-8 character at the end waits for the next call.
    pub(crate) fn since(&self, cursor: u64) -> (String, u64, u64) {
        let kept_from = self.total - self.tail.len() as u64;
        let missed = kept_from.saturating_sub(cursor);
        let skip = usize::try_from(cursor.saturating_sub(kept_from)).unwrap_or(usize::MAX);
        let bytes: Vec<u8> = self.tail.iter().skip(skip).copied().collect();
        let valid = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => bytes.len(),
        };
        let text = String::from_utf8_lossy(&bytes[..valid]).into_owned();
        (text, missed, cursor.max(kept_from) + valid as u64)
    }
}

pub(crate) type Shared = Arc<Mutex<Buffer>>;

/// Copy the child's stdout into `stdout` and its stderr into `stderr` (the
/// same buffer interleaves them) on threads of their own. Returns a channel
/// that receives one message per stream at its end, and how many streams.
pub(crate) fn pump_output(
    pipes: (File, File),
    stdout: Shared,
    stderr: Shared,
) -> (mpsc::Receiver<()>, usize) {
    let (done, ended) = mpsc::channel();
    pump(pipes.0, stdout, done.clone());
    pump(pipes.1, stderr, done);
    (ended, 2)
}

/// Copy `reader` into `sink` until end of file; signals `done` at the end.
fn pump(mut reader: impl Read + Send + 'static, sink: Shared, done: mpsc::Sender<()>) {
    let spawned = thread::Builder::new()
        .name("toolhost-output".to_owned())
        .spawn(move || {
            let mut chunk = vec![0u8; 64 << 10];
            loop {
                match reader.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => sink
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(&chunk[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = done.send(());
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start an output reader thread: {e}");
    }
}

/// How a process ended: its exit code, or `None` if a signal killed it.
pub(crate) type Exit = Option<i32>;

/// The leader `pid` has ended (a zombie still holding its group id): kill
/// what is left of its group and cgroup, then reap it. In a PID namespace
/// nothing is left: the kernel ended every other process before the
/// leader, its init, could end.
fn end_leader(pid: Pid, pid_namespace: bool, cgroup: Option<&CommandCgroup>) -> Exit {
    if !pid_namespace {
        kill_group(pid.as_raw_nonzero().get().unsigned_abs());
        if let Some(c) = cgroup {
            c.kill_all();
        }
    }
    loop {
        match rustix::process::waitpid(Some(pid), WaitOptions::empty()) {
            Err(rustix::io::Errno::INTR) => {}
            Ok(Some((_, status))) => break status.exit_status(),
            _ => break None,
        }
    }
}

/// Wait for the group leader `pgid` to exit without reaping it, kill what
/// is left of its group while the zombie leader still holds the group id
/// (and what is left in its cgroup), then reap it and run `after`. Runs on
/// its own thread
/// (inline, after killing the group, if no thread can start); the exit
/// arrives on the returned channel.
pub(crate) fn reap(
    pgid: u32,
    watchdog: Option<Arc<Watchdog>>,
    held: (Option<CommandCgroup>, spawn::Held),
    after: Option<Box<dyn FnOnce() + Send>>,
) -> mpsc::Receiver<Exit> {
    type Held = (Option<CommandCgroup>, spawn::Held);
    let (tx, rx) = mpsc::channel();
    let late_watchdog = watchdog.clone();
    // What the command leaves goes to the thread only once it runs: a
    // thread that cannot start must not drop it (a network namespace would
    // go back to its pool) before the command is dead.
    let finish = move |tx: mpsc::Sender<Exit>, (cgroup, view): Held| {
        let exit = Pid::from_raw(i32::try_from(pgid).unwrap_or(0)).and_then(|pid| {
            let exited = || {
                rustix::process::waitid(
                    WaitId::Pid(pid),
                    WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
                )
            };
            while let Err(rustix::io::Errno::INTR) = exited() {}
            end_leader(pid, false, cgroup.as_ref())
        });
        if let Some(w) = &watchdog {
            w.forget(pgid);
        }
        if let Some(after) = after {
            after();
        }
        let _ = tx.send(exit);
        // The view is torn down and the emptied cgroup removed once the
        // caller has its answer.
        drop(view);
        drop(cgroup);
    };
    let (job_tx, job_rx) = mpsc::channel::<(mpsc::Sender<Exit>, Held)>();
    let spawned = thread::Builder::new()
        .name("toolhost-reaper".to_owned())
        .spawn(move || {
            if let Ok((tx, held)) = job_rx.recv() {
                finish(tx, held);
            }
        });
    match spawned {
        Ok(_) => {
            let _ = job_tx.send((tx, held));
        }
        Err(e) => {
            tracing::warn!("cannot start a reaper thread ({e}); killing the command");
            kill_group(pgid);
            // The closure went with the failed thread: reap here, and let
            // go of what the command held only once it is dead.
            let (cgroup, view) = held;
            if let Some(pid) = Pid::from_raw(i32::try_from(pgid).unwrap_or(0)) {
                let _ = tx.send(end_leader(pid, false, cgroup.as_ref()));
            }
            if let Some(w) = &late_watchdog {
                w.forget(pgid);
            }
            drop((view, cgroup));
        }
    }
    rx
}

/// How a command run to completion ended.
#[derive(Debug)]
pub(crate) struct Ended {
    pub exit_code: Exit,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
    /// Output streams still open when the command ended (held by a process
    /// that left the group); reading them stopped.
    pub abandoned_streams: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_keeps_head_and_tail() {
        let mut b = Buffer::new(4, 4);
        b.push(b"abcdefgh");
        b.push(b"ijkl");
        assert_eq!(b.total(), 12);
        let text = b.text();
        assert!(text.starts_with("abcd"), "{text}");
        assert!(text.ends_with("ijkl"), "{text}");
        assert!(text.contains("[... 4 bytes not kept"), "{text}");
    }

    #[test]
    fn since_returns_new_text_and_what_was_missed() {
        let mut b = Buffer::new(0, 8);
        b.push(b"hello ");
        let (text, missed, cursor) = b.since(0);
        assert_eq!((text.as_str(), missed, cursor), ("hello ", 0, 6));
        b.push(b"world, again");
        let (text, missed, cursor) = b.since(cursor);
        assert_eq!((text.as_str(), missed, cursor), ("d, again", 4, 18));
        let (text, _, same) = b.since(cursor);
        assert_eq!((text.as_str(), same), ("", 18));
    }

    #[test]
    fn since_holds_back_a_split_character() {
        let mut b = Buffer::new(0, 64);
        let e = "é".as_bytes();
        b.push(&[b'a', e[0]]);
        let (text, _, cursor) = b.since(0);
        assert_eq!((text.as_str(), cursor), ("a", 1));
        b.push(&e[1..]);
        let (text, _, cursor) = b.since(cursor);
        assert_eq!((text.as_str(), cursor), ("é", 3));
    }
}
