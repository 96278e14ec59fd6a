//! Background commands: commands started with `spawn` that keep running
//! between calls. Capped in number; finished ones are kept for a while so
//! their last output and exit status can still be read. No operation
//! blocks while holding the table's lock.

use super::process::{self, Exit, Shared};
use crate::bindings::commands::BackgroundStatus as Status;
use std::collections::BTreeMap;
use std::io::{ErrorKind, Write};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long a write to a background command's full stdin, or a kill, waits.
const PATIENCE: Duration = Duration::from_secs(5);

/// A started background command.
pub(crate) struct BackgroundCommand {
    pub command: String,
    pub pgid: u32,
    pub started: Instant,
    pub output: Shared,
    /// Non-blocking.
    pub stdin: Option<std::fs::File>,
    pub exited: mpsc::Receiver<Exit>,
}

struct Entry {
    command: BackgroundCommand,
    cursor: u64,
    /// Set once finished: the exit code (`None` inside: killed by a
    /// signal) and when.
    finished: Option<(Exit, Instant)>,
}

impl Entry {
    fn refresh(&mut self) {
        if self.finished.is_none() {
            match self.command.exited.try_recv() {
                Ok(exit) => self.finish(exit),
                Err(mpsc::TryRecvError::Disconnected) => self.finish(None),
                Err(mpsc::TryRecvError::Empty) => {}
            }
        }
    }

    fn finish(&mut self, exit: Exit) {
        self.finished = Some((exit, Instant::now()));
        self.command.stdin = None;
    }

    fn status(&mut self, id: &str, consume: bool) -> Status {
        self.refresh();
        let new_output = if consume {
            let (text, missed, cursor) = self
                .command
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
        let elapsed = end.saturating_duration_since(self.command.started);
        Status {
            id: id.to_owned(),
            command: self.command.command.clone(),
            running: self.finished.is_none(),
            exit_code: self.finished.and_then(|(code, _)| code),
            new_output,
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// Every background command of one broker.
pub(crate) struct Background {
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
        "there is no background command `{id}` (it may have finished and expired); list the background commands to see their ids"
    )
}

impl Background {
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
            "{running} background commands are running, the most allowed; kill one you no longer need first"
        )
    }

    /// Whether another background command may start (checked again when it is added).
    pub(crate) fn check_room(&self) -> Result<(), String> {
        let running = self.lock().running();
        if running >= self.max_running {
            Err(self.full(running))
        } else {
            Ok(())
        }
    }

    /// Register a started background command; returns its id. Over the cap (another
    /// command started meanwhile), the new one is killed.
    pub(crate) fn add(&self, command: BackgroundCommand) -> Result<String, String> {
        let mut inner = self.lock();
        let running = inner.running();
        if running >= self.max_running {
            process::kill_group(command.pgid);
            return Err(self.full(running));
        }
        inner.next += 1;
        let n = inner.next;
        inner.entries.insert(
            n,
            Entry {
                command,
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

    /// Every background command, without consuming output.
    pub(crate) fn list(&self) -> Vec<Status> {
        let mut inner = self.lock();
        inner
            .entries
            .iter_mut()
            .map(|(n, e)| e.status(&format!("s-{n}"), false))
            .collect()
    }

    /// Write to a running background command's stdin. A full pipe is retried, with
    /// the lock released in between, for a few seconds.
    pub(crate) fn write(&self, id: &str, mut data: &[u8]) -> Result<(), String> {
        let total = data.len();
        let deadline = Instant::now() + PATIENCE;
        while !data.is_empty() {
            {
                let mut inner = self.lock();
                let entry = inner.entry(id)?;
                let Some(stdin) = entry.command.stdin.as_mut() else {
                    return Err(format!(
                        "background command `{id}` has finished; its input is closed"
                    ));
                };
                match stdin.write(data) {
                    Ok(n) => data = &data[n..],
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(format!("cannot write to background command `{id}`: {e}"));
                    }
                }
            }
            if !data.is_empty() {
                if Instant::now() >= deadline {
                    return Err(format!(
                        "background command `{id}` is not reading its input: {} of {total} bytes were written",
                        total - data.len()
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(())
    }

    /// Kill a background command's whole process group and wait briefly for it.
    pub(crate) fn kill(&self, id: &str) -> Result<Status, String> {
        {
            let mut inner = self.lock();
            let entry = inner.entry(id)?;
            if entry.finished.is_none() {
                process::kill_group(entry.command.pgid);
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

    /// Forget finished background commands; returns how many.
    pub(crate) fn clear(&self) -> u32 {
        let mut inner = self.lock();
        let before = inner.entries.len();
        inner.entries.retain(|_, e| e.finished.is_none());
        u32::try_from(before - inner.entries.len()).unwrap_or(u32::MAX)
    }

    /// Kill every running background command (the broker is going away).
    pub(crate) fn kill_all(&self) {
        let inner = self.lock();
        for e in inner.entries.values() {
            if e.finished.is_none() {
                process::kill_group(e.command.pgid);
            }
        }
    }
}
