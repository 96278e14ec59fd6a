//! Background sessions: commands started with `spawn` that keep running
//! between calls. Capped in number; finished ones are kept for a while so
//! their last output and exit status can still be read. No operation
//! blocks while holding the table's lock.

use super::process::{self, Exit, Shared};
use crate::bindings::commands::SessionStatus as Status;
use std::collections::BTreeMap;
use std::io::{ErrorKind, Write};
use std::process::ChildStdin;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long a write to a session's full stdin, or a kill, waits.
const PATIENCE: Duration = Duration::from_secs(5);

/// A started background command.
pub(crate) struct Session {
    pub command: String,
    pub pgid: u32,
    pub started: Instant,
    pub output: Shared,
    /// Non-blocking.
    pub stdin: Option<ChildStdin>,
    pub exited: mpsc::Receiver<Exit>,
}

struct Entry {
    session: Session,
    cursor: u64,
    /// Set once finished: the exit code (`None` inside: killed by a
    /// signal) and when.
    finished: Option<(Exit, Instant)>,
}

impl Entry {
    fn refresh(&mut self) {
        if self.finished.is_none() {
            match self.session.exited.try_recv() {
                Ok(exit) => self.finish(exit),
                Err(mpsc::TryRecvError::Disconnected) => self.finish(None),
                Err(mpsc::TryRecvError::Empty) => {}
            }
        }
    }

    fn finish(&mut self, exit: Exit) {
        self.finished = Some((exit, Instant::now()));
        self.session.stdin = None;
    }

    fn status(&mut self, id: &str, consume: bool) -> Status {
        self.refresh();
        let new_output = if consume {
            let (text, missed, cursor) = self
                .session
                .output
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .since(self.cursor);
            self.cursor = cursor;
            if missed > 0 {
                format!("[... {missed} bytes of output dropped: poll more often ...]\n{text}")
            } else {
                text
            }
        } else {
            String::new()
        };
        let end = self.finished.map_or_else(Instant::now, |(_, at)| at);
        let elapsed = end.saturating_duration_since(self.session.started);
        Status {
            id: id.to_owned(),
            command: self.session.command.clone(),
            running: self.finished.is_none(),
            exit_code: self.finished.and_then(|(code, _)| code),
            new_output,
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// Every background session of one broker.
pub(crate) struct Sessions {
    inner: Mutex<Inner>,
    max_running: usize,
    ttl: Duration,
}

#[derive(Default)]
struct Inner {
    next: u64,
    entries: BTreeMap<u64, Entry>,
}

impl Inner {
    fn expire(&mut self, ttl: Duration) {
        for e in self.entries.values_mut() {
            e.refresh();
        }
        self.entries
            .retain(|_, e| e.finished.is_none_or(|(_, at)| at.elapsed() < ttl));
    }

    fn entry(&mut self, id: &str) -> Result<&mut Entry, String> {
        let n = parse_id(id).ok_or_else(|| unknown(id))?;
        self.entries.get_mut(&n).ok_or_else(|| unknown(id))
    }

    fn running(&self) -> usize {
        self.entries
            .values()
            .filter(|e| e.finished.is_none())
            .count()
    }
}

fn parse_id(id: &str) -> Option<u64> {
    id.strip_prefix("s-")?.parse().ok()
}

fn unknown(id: &str) -> String {
    format!(
        "there is no session `{id}` (it may have finished and expired); list the sessions to see their ids"
    )
}

impl Sessions {
    pub(crate) fn new(max_running: usize, ttl: Duration) -> Self {
        Self {
            inner: Mutex::default(),
            max_running,
            ttl,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.expire(self.ttl);
        inner
    }

    fn full(&self, running: usize) -> String {
        format!(
            "{running} background sessions are running, the most allowed; kill one you no longer need first"
        )
    }

    /// Whether another session may start (checked again when it is added).
    pub(crate) fn check_room(&self) -> Result<(), String> {
        let running = self.lock().running();
        if running >= self.max_running {
            Err(self.full(running))
        } else {
            Ok(())
        }
    }

    /// Register a started session; returns its id. Over the cap (another
    /// session started meanwhile), the new one is killed.
    pub(crate) fn add(&self, session: Session) -> Result<String, String> {
        let mut inner = self.lock();
        let running = inner.running();
        if running >= self.max_running {
            process::kill_group(session.pgid);
            return Err(self.full(running));
        }
        inner.next += 1;
        let n = inner.next;
        inner.entries.insert(
            n,
            Entry {
                session,
                cursor: 0,
                finished: None,
            },
        );
        Ok(format!("s-{n}"))
    }

    /// Status with the output since the previous poll.
    pub(crate) fn poll(&self, id: &str) -> Result<Status, String> {
        self.lock().entry(id).map(|e| e.status(id, true))
    }

    /// Every session, without consuming output.
    pub(crate) fn list(&self) -> Vec<Status> {
        let mut inner = self.lock();
        inner
            .entries
            .iter_mut()
            .map(|(n, e)| e.status(&format!("s-{n}"), false))
            .collect()
    }

    /// Write to a running session's stdin. A full pipe is retried, with
    /// the lock released in between, for a few seconds.
    pub(crate) fn write(&self, id: &str, mut data: &[u8]) -> Result<(), String> {
        let total = data.len();
        let deadline = Instant::now() + PATIENCE;
        while !data.is_empty() {
            {
                let mut inner = self.lock();
                let entry = inner.entry(id)?;
                let Some(stdin) = entry.session.stdin.as_mut() else {
                    return Err(format!("session `{id}` has finished; its input is closed"));
                };
                match stdin.write(data) {
                    Ok(n) => data = &data[n..],
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(format!("cannot write to session `{id}`: {e}")),
                }
            }
            if !data.is_empty() {
                if Instant::now() >= deadline {
                    return Err(format!(
                        "session `{id}` is not reading its input: {} of {total} bytes were written",
                        total - data.len()
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(())
    }

    /// Kill a session's whole process group and wait briefly for it.
    pub(crate) fn kill(&self, id: &str) -> Result<Status, String> {
        {
            let mut inner = self.lock();
            let entry = inner.entry(id)?;
            if entry.finished.is_none() {
                process::kill_group(entry.session.pgid);
            }
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let mut inner = self.lock();
            let entry = inner.entry(id)?;
            entry.refresh();
            if entry.finished.is_some() || Instant::now() >= deadline {
                return Ok(entry.status(id, true));
            }
            drop(inner);
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Forget finished sessions; returns how many.
    pub(crate) fn clear(&self) -> u32 {
        let mut inner = self.lock();
        let before = inner.entries.len();
        inner.entries.retain(|_, e| e.finished.is_none());
        u32::try_from(before - inner.entries.len()).unwrap_or(u32::MAX)
    }

    /// Kill every running session (the broker is going away).
    pub(crate) fn kill_all(&self) {
        let inner = self.lock();
        for e in inner.entries.values() {
            if e.finished.is_none() {
                process::kill_group(e.session.pgid);
            }
        }
    }
}
