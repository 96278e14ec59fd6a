//! A command run to its end on the caller's thread: one `poll` over the
//! process (a pidfd) and its two output pipes, with no thread of its own,
//! so a short command costs no thread start-ups or hand-offs between them.

use super::{Buffer, Ended, Exit, Watchdog, end_leader, kill_group, reap};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, PidfdFlags, WaitId, WaitIdOptions};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Condvar, LazyLock, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant};
use toolhost_confine::spawn::Spawned;

/// How long output may stay open after the command's process ended (held
/// by a process that left its group) before reading stops.
const GRACE: Duration = Duration::from_millis(500);
/// How long to wait for a killed command's process to end before leaving
/// it to a reaper thread.
const KILL_WAIT: Duration = Duration::from_secs(10);
/// How often cancellation is checked.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// How often the end of the process is checked without a pidfd.
const NO_PIDFD_POLL: Duration = Duration::from_millis(2);

/// Run `child` to its end: read its output into `out` and `err` until it
/// exits, `timeout` passes or `tick` (called every few milliseconds with
/// the output so far) returns true (then its group is killed), and a
/// little longer for output still in flight.
pub(crate) fn run_to_end(
    child: Spawned,
    watchdog: Option<Arc<Watchdog>>,
    (out, err): (&mut Buffer, &mut Buffer),
    timeout: Duration,
    tick: &mut dyn FnMut(&Buffer, &Buffer) -> bool,
) -> Ended {
    let started = Instant::now();
    let deadline = started + timeout;
    let Spawned {
        pid,
        stdout,
        stderr,
        cgroup,
        held,
        pid_namespace,
        ..
    } = child;
    let (raw, pidfd) = leader(pid);
    let mut streams: [(Option<File>, &mut Buffer); 2] = [(Some(stdout), out), (Some(stderr), err)];
    let mut chunk = vec![0u8; 64 << 10];
    let (mut timed_out, mut is_cancelled) = (false, false);
    let mut killed_at: Option<Instant> = None;
    let mut exit: Option<(Exit, Duration)> = None;
    loop {
        let now = Instant::now();
        let open = streams.iter().filter(|(f, _)| f.is_some()).count();
        let wait = if let Some((_, duration)) = exit {
            let grace_end = started + duration + GRACE;
            if open == 0 || now >= grace_end {
                break;
            }
            grace_end - now
        } else if let Some(at) = killed_at {
            if now >= at + KILL_WAIT {
                // Stuck in the kernel: a thread reaps it whenever it ends.
                drop(reap(pid, watchdog.clone(), (cgroup, held), None));
                return Ended::stuck(timed_out, is_cancelled, started, open);
            }
            at + KILL_WAIT - now
        } else {
            if now >= deadline {
                timed_out = true;
            } else if tick(&*streams[0].1, &*streams[1].1) {
                is_cancelled = true;
            }
            if timed_out || is_cancelled {
                kill_group(pid);
                if let Some(c) = &cgroup {
                    c.kill_all();
                }
                killed_at = Some(now);
                continue;
            }
            // (Without a pidfd, capped below to NO_PIDFD_POLL.)
            (deadline - now).min(CANCEL_POLL)
        };
        // Without a pidfd only a look at the process tells that it ended.
        let wait = if exit.is_none() && pidfd.is_none() {
            wait.min(NO_PIDFD_POLL)
        } else {
            wait
        };
        let watched = pidfd.as_ref().filter(|_| exit.is_none());
        let mut ready = match ready_within(watched, &streams, wait) {
            Ok(ready) => ready,
            Err(e) => {
                tracing::warn!("poll of a command failed ({e}); killing it");
                kill_group(pid);
                killed_at.get_or_insert(now);
                Vec::new()
            }
        };
        if exit.is_none() && pidfd.is_none() && raw.is_none_or(has_ended) {
            ready.push(None);
        }
        for w in ready {
            match w {
                None => {
                    let code = raw.and_then(|p| end_leader(p, pid_namespace, cgroup.as_ref()));
                    watchdog.as_ref().inspect(|w| w.forget(pid));
                    exit = Some((code, started.elapsed()));
                }
                Some(i) => read_some(&mut streams[i], &mut chunk),
            }
        }
    }
    let (exit_code, duration) = exit.unwrap_or((None, started.elapsed()));
    // The view is torn down and the emptied cgroup removed once the
    // caller has its answer.
    drop_later((held, cgroup));
    Ended {
        exit_code,
        timed_out,
        cancelled: is_cancelled,
        duration,
        abandoned_streams: streams.iter().filter(|(f, _)| f.is_some()).count(),
    }
}

/// The leader `pid`, and a pidfd that is readable when it has ended;
/// without one (old kernels) the loop looks every few milliseconds.
fn leader(pid: u32) -> (Option<Pid>, Option<OwnedFd>) {
    let raw = Pid::from_raw(i32::try_from(pid).unwrap_or(0));
    let pidfd = raw.and_then(|p| rustix::process::pidfd_open(p, PidfdFlags::empty()).ok());
    (raw, pidfd)
}

impl Ended {
    /// A command killed that has not ended after [`KILL_WAIT`]: left to
    /// a thread that reaps it whenever it does, with `open` streams
    /// abandoned.
    fn stuck(timed_out: bool, cancelled: bool, started: Instant, open: usize) -> Self {
        Self {
            exit_code: None,
            timed_out,
            cancelled,
            duration: started.elapsed(),
            abandoned_streams: open,
        }
    }
}

/// Read what `stream` has into its buffer; at its end or on an error, it
/// is closed.
fn read_some((file, sink): &mut (Option<File>, &mut Buffer), chunk: &mut [u8]) {
    if let Some(f) = file {
        match f.read(chunk) {
            Ok(0) => *file = None,
            Ok(n) => sink.push(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => *file = None,
        }
    }
}

/// Wait up to `wait` until the leader's `pidfd` (if given) or an open
/// stream is ready; which are (`None`: the leader). An interrupted wait
/// is an empty answer.
fn ready_within(
    pidfd: Option<&OwnedFd>,
    streams: &[(Option<File>, &mut Buffer); 2],
    wait: Duration,
) -> Result<Vec<Option<usize>>, rustix::io::Errno> {
    let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(3);
    let mut which: Vec<Option<usize>> = Vec::with_capacity(3);
    if let Some(fd) = pidfd {
        fds.push(PollFd::from_borrowed_fd(fd.as_fd(), PollFlags::IN));
        which.push(None);
    }
    for (i, (file, _)) in streams.iter().enumerate() {
        if let Some(f) = file {
            fds.push(PollFd::new(f, PollFlags::IN));
            which.push(Some(i));
        }
    }
    let timeout = Timespec::try_from(wait).unwrap_or(Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    });
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(_) => {}
        Err(rustix::io::Errno::INTR) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    }
    Ok(fds
        .iter()
        .zip(&which)
        .filter(|(fd, _)| !fd.revents().is_empty())
        .map(|(_, w)| *w)
        .collect())
}

/// Whether `pid` has ended, without reaping it (for kernels without
/// pidfds, before 5.3).
fn has_ended(pid: Pid) -> bool {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
    loop {
        match rustix::process::waitid(WaitId::Pid(pid), options) {
            Err(rustix::io::Errno::INTR) => {}
            Ok(status) => return status.is_some(),
            // Not our child any more: nothing to wait for.
            Err(_) => return true,
        }
    }
}

/// Drop `held` on a thread of its own: tearing a view down (RCU grace
/// periods) and removing a cgroup take time no caller should wait for.
fn drop_later<T: Send + 'static>(held: T) {
    type Job = Box<dyn Send>;
    static JANITOR: LazyLock<Mutex<Option<mpsc::Sender<Job>>>> = LazyLock::new(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = thread::Builder::new()
            .name("toolhost-janitor".to_owned())
            .spawn(move || {
                rx.into_iter().for_each(|job| {
                    drop(job);
                    pending(-1);
                });
            });
        Mutex::new(started.ok().map(|_| tx))
    });
    let job: Job = Box::new(held);
    let janitor = JANITOR.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(tx) = janitor.as_ref() {
        pending(1);
        // A failed send hands the job back, dropped here.
        if tx.send(job).is_err() {
            pending(-1);
        }
    }
}

/// Jobs handed to the janitor and not yet done, and a signal when one is.
static PENDING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

fn pending(change: isize) {
    let mut count = PENDING.0.lock().unwrap_or_else(PoisonError::into_inner);
    *count = count.saturating_add_signed(change);
    PENDING.1.notify_all();
}

/// Wait, at most `within`, until the views and cgroups of every command
/// that ended are torn down (the janitor does it after the caller has its
/// answer). A process about to exit calls it, or a cgroup directory the
/// janitor had not reached yet would outlive the process. True when
/// nothing is left.
pub(crate) fn settle_cleanup(within: Duration) -> bool {
    let count = PENDING.0.lock().unwrap_or_else(PoisonError::into_inner);
    let (count, _) = PENDING
        .1
        .wait_timeout_while(count, within, |count| *count > 0)
        .unwrap_or_else(PoisonError::into_inner);
    *count == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Sets its flag when dropped, after `takes`.
    struct Slow {
        takes: Duration,
        done: Arc<AtomicBool>,
    }

    impl Drop for Slow {
        fn drop(&mut self) {
            thread::sleep(self.takes);
            self.done.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn settling_waits_for_what_the_janitor_holds() {
        let done = Arc::new(AtomicBool::new(false));
        drop_later(Slow {
            takes: Duration::from_millis(300),
            done: Arc::clone(&done),
        });
        // Still held: a short wait gives up and says so.
        assert!(!settle_cleanup(Duration::from_millis(10)));
        assert!(!done.load(Ordering::SeqCst));
        // A long enough one returns once it is dropped.
        assert!(settle_cleanup(Duration::from_secs(10)));
        assert!(done.load(Ordering::SeqCst));
    }
}
