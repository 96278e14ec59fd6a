//! Background commands: commands started with `spawn` that keep running
//! between calls. Each belongs to the client (MCP session) that started it:
//! another client does not see it, and gets the same answer for its id as
//! for one that never existed. Capped per client and in all; finished ones
//! are kept for a while so their last output and exit status can still be
//! read; a client's are killed when it goes ([`Background::release`]). No
//! operation blocks while holding the table's lock.

use super::process::{self, Exit, Shared};
use super::request::{BackgroundStatus as Status, CommandError};
use std::collections::{BTreeMap, HashMap};
use std::io::{ErrorKind, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
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

/// Every background command of one broker, by owner.
pub(crate) struct Background {
    inner: Mutex<HashMap<Arc<str>, Table>>,
    /// Running at once, per owner.
    max_running: usize,
    /// Running at once, all owners together.
    max_total: usize,
    ttl: Duration,
    /// What ids end with: this replica's name among several (see
    /// [`Background::set_suffix`]); none alone.
    suffix: OnceLock<String>,
}

/// One owner's background commands; ids count up per owner, so they tell
/// nothing about other owners.
#[derive(Default)]
struct Table {
    next: u64,
    entries: BTreeMap<u64, Entry>,
}

impl Table {
    fn expire(&mut self, ttl: Duration) {
        for e in self.entries.values_mut() {
            e.refresh();
        }
        self.entries
            .retain(|_, e| e.finished.is_none_or(|(_, at)| at.elapsed() < ttl));
    }

    fn entry(&mut self, id: &str) -> Result<&mut Entry, CommandError> {
        let n = parse_id(id).ok_or_else(|| unknown(id))?;
        self.entries.get_mut(&n).ok_or_else(|| unknown(id))
    }

    fn running(&self) -> usize {
        self.entries
            .values()
            .filter(|e| e.finished.is_none())
            .count()
    }

    fn kill_running(&self) {
        for e in self.entries.values() {
            if e.finished.is_none() {
                process::kill_group(e.command.pgid);
            }
        }
    }
}

/// The broker's table, locked and expired, and the ids' suffix.
struct Locked<'a>(MutexGuard<'a, HashMap<Arc<str>, Table>>, &'a str);

impl Locked<'_> {
    /// `owner`'s commands (an empty table for an owner with none).
    fn table(&mut self, owner: &str) -> &mut Table {
        self.0.entry(Arc::from(owner)).or_default()
    }

    fn entry(&mut self, owner: &str, id: &str) -> Result<&mut Entry, CommandError> {
        // This replica's handle (`s-3@host:port~mac`), or a plain id.
        let local = id.strip_suffix(self.1).filter(|_| !self.1.is_empty());
        match self.0.get_mut(owner) {
            Some(table) => table.entry(local.unwrap_or(id)).map_err(|_| unknown(id)),
            None => Err(unknown(id)),
        }
    }

    fn running(&self, owner: &str) -> usize {
        self.0.get(owner).map_or(0, Table::running)
    }

    fn total(&self) -> usize {
        self.0.values().map(Table::running).sum()
    }
}

fn parse_id(id: &str) -> Option<u64> {
    id.strip_prefix("s-")?.parse().ok()
}

fn unknown(id: &str) -> CommandError {
    CommandError::Invalid(format!(
        "there is no background command `{id}` (it may have finished and expired); list the background commands to see their ids"
    ))
}

impl Background {
    /// `max_running` per owner, `max_total` in all (at least `max_running`).
    pub(crate) fn new(max_running: usize, max_total: usize, ttl: Duration) -> Self {
        Self {
            inner: Mutex::default(),
            max_running,
            max_total: max_total.max(max_running),
            ttl,
            suffix: OnceLock::new(),
        }
    }

    /// End every id given from now on with `suffix` (once; among
    /// replicas, the one that holds the command, signed).
    pub(crate) fn set_suffix(&self, suffix: &str) {
        let _ = self.suffix.set(suffix.to_owned());
    }

    fn suffix(&self) -> &str {
        self.suffix.get().map_or("", String::as_str)
    }

    fn lock(&self) -> Locked<'_> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for table in inner.values_mut() {
            table.expire(self.ttl);
        }
        Locked(inner, self.suffix())
    }

    /// Why `owner` may not start another command now, if it may not.
    fn no_room(&self, locked: &Locked<'_>, owner: &str) -> Option<String> {
        let running = locked.running(owner);
        if running >= self.max_running {
            return Some(format!(
                "{running} background commands of yours are running, the most allowed; \
                 kill one you no longer need first"
            ));
        }
        let total = locked.total();
        (total >= self.max_total).then(|| {
            format!(
                "{total} background commands are running for all clients of this toolhost, \
                 the most allowed; kill one of yours, or try again when others have finished"
            )
        })
    }

    /// Background commands running now, of every owner.
    pub(crate) fn running_total(&self) -> usize {
        self.lock().total()
    }

    /// Whether `owner` may start another background command (checked again
    /// when it is added).
    pub(crate) fn check_room(&self, owner: &str) -> Result<(), CommandError> {
        match self.no_room(&self.lock(), owner) {
            Some(full) => Err(CommandError::Failed(full)),
            None => Ok(()),
        }
    }

    /// Register a started background command of `owner`; returns its id.
    /// Over a cap (another command started meanwhile), the new one is
    /// killed.
    pub(crate) fn add(
        &self,
        owner: &str,
        command: BackgroundCommand,
    ) -> Result<String, CommandError> {
        let mut locked = self.lock();
        if let Some(full) = self.no_room(&locked, owner) {
            process::kill_group(command.pgid);
            return Err(CommandError::Failed(full));
        }
        let table = locked.table(owner);
        table.next += 1;
        let n = table.next;
        table.entries.insert(
            n,
            Entry {
                command,
                cursor: 0,
                finished: None,
            },
        );
        Ok(format!("s-{n}{}", self.suffix()))
    }

    /// Status with the output since the previous poll.
    pub(crate) fn poll(&self, owner: &str, id: &str) -> Result<Status, CommandError> {
        self.lock().entry(owner, id).map(|e| e.status(id, true))
    }

    /// Every background command of `owner`, without consuming output.
    pub(crate) fn list(&self, owner: &str) -> Vec<Status> {
        let mut locked = self.lock();
        let Some(table) = locked.0.get_mut(owner) else {
            return Vec::new();
        };
        table
            .entries
            .iter_mut()
            .map(|(n, e)| e.status(&format!("s-{n}{}", self.suffix()), false))
            .collect()
    }

    /// Write to a running background command's stdin. A full pipe is retried, with
    /// the lock released in between, for a few seconds.
    pub(crate) fn write(&self, owner: &str, id: &str, mut data: &[u8]) -> Result<(), CommandError> {
        let total = data.len();
        let deadline = Instant::now() + PATIENCE;
        while !data.is_empty() {
            {
                let mut locked = self.lock();
                let entry = locked.entry(owner, id)?;
                let Some(stdin) = entry.command.stdin.as_mut() else {
                    return Err(CommandError::Invalid(format!(
                        "background command `{id}` has finished; its input is closed"
                    )));
                };
                match stdin.write(data) {
                    Ok(n) => data = &data[n..],
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(CommandError::Invalid(format!(
                            "cannot write to background command `{id}`: {e}"
                        )));
                    }
                }
            }
            if !data.is_empty() {
                if Instant::now() >= deadline {
                    return Err(CommandError::Invalid(format!(
                        "background command `{id}` is not reading its input: {} of {total} bytes were written",
                        total - data.len()
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(())
    }

    /// Kill a background command's whole process group and wait briefly for it.
    pub(crate) fn kill(&self, owner: &str, id: &str) -> Result<Status, CommandError> {
        {
            let mut locked = self.lock();
            let entry = locked.entry(owner, id)?;
            if entry.finished.is_none() {
                process::kill_group(entry.command.pgid);
            }
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let mut locked = self.lock();
            let entry = locked.entry(owner, id)?;
            entry.refresh();
            if entry.finished.is_some() || Instant::now() >= deadline {
                return Ok(entry.status(id, true));
            }
            drop(locked);
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Forget `owner`'s finished background commands; returns how many.
    pub(crate) fn clear(&self, owner: &str) -> u32 {
        let mut locked = self.lock();
        let Some(table) = locked.0.get_mut(owner) else {
            return 0;
        };
        let before = table.entries.len();
        table.entries.retain(|_, e| e.finished.is_none());
        u32::try_from(before - table.entries.len()).unwrap_or(u32::MAX)
    }

    /// `owner` is gone (its MCP session ended): kill its running commands
    /// and forget all of them. Returns how many were still running.
    pub(crate) fn release(&self, owner: &str) -> usize {
        let table = self.lock().0.remove(owner);
        table.map_or(0, |table| {
            table.kill_running();
            table.running()
        })
    }

    /// Kill every running background command (the broker is going away).
    pub(crate) fn kill_all(&self) {
        for table in self.lock().0.values() {
            table.kill_running();
        }
    }
}
