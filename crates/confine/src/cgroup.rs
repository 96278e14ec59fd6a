//! A pids cgroup per command, where the host may create one: the precise
//! process limit. (`RLIMIT_NPROC` counts every process of the uid, and not
//! at all for root; the broker falls back to it inside a user namespace,
//! where it counts only the command's own processes.)
//!
//! Each command gets `toolhost-<pid>-<n>` beneath the host's own pids
//! cgroup (cgroup v1's pids hierarchy, or cgroup v2 where `pids` is already
//! enabled for the host's cgroup's children), removed once the command's
//! processes are gone.

use std::io::{self, Write as _};
use std::mem;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Where commands' cgroups are made: the host's own pids cgroup.
#[derive(Debug)]
pub struct Pids {
    parent: PathBuf,
    /// cgroup v1, where a thread can join a cgroup alone (`tasks`).
    threads: bool,
    /// Empty cgroups of ended commands, made the next commands' instead of
    /// a `mkdir` and an `rmdir` each (a pids cgroup keeps nothing of the
    /// tasks it held but counters no command can read: `/sys` is not in
    /// its view). `None` once the host let go of them.
    free: Free,
}

/// How many empty cgroups wait for a command.
const FREE: usize = 8;

type Free = Arc<Mutex<Option<Vec<PathBuf>>>>;

/// One command's cgroup; removed on drop (once it is empty).
#[derive(Debug)]
pub struct CommandCgroup {
    dir: PathBuf,
    /// Cleared while the spawner thread is still inside (see [`Ahead`]).
    released: Arc<AtomicBool>,
    /// Where it goes once empty ([`Pids::free`]).
    free: Free,
}

/// A cgroup the spawner thread has joined ahead of the next command, so
/// the command is born in it instead of joining it while a caller waits
/// (cgroup v1 only, where a thread may sit in a cgroup of its own).
#[derive(Debug)]
pub struct Ahead {
    cgroup: CommandCgroup,
    max: u32,
}

impl Ahead {
    /// The limit it was made for.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// The command's cgroup, once the command is in it; [`Left::done`]
    /// must be called after the spawner thread has joined another.
    pub fn used(self) -> (CommandCgroup, Left) {
        let left = Left {
            dir: self.cgroup.dir.clone(),
            released: Arc::clone(&self.cgroup.released),
            max: self.max,
        };
        (self.cgroup, left)
    }
}

/// What the spawner thread does once it has left a command's cgroup.
#[derive(Debug)]
pub struct Left {
    dir: PathBuf,
    released: Arc<AtomicBool>,
    max: u32,
}

impl Left {
    /// The spawner thread is out: the limit is the command's alone, and
    /// the cgroup may be removed.
    pub fn done(self) {
        let _ = std::fs::write(self.dir.join("pids.max"), self.max.to_string());
        self.released.store(true, Ordering::Release);
    }
}

impl Pids {
    /// Where commands' cgroups go, if this host can make them.
    pub fn new() -> Option<Self> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let candidates = own.lines().filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let path = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "pids") {
                Some(Path::new("/sys/fs/cgroup/pids").join(path))
            } else if controllers.is_empty() {
                ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                    .iter()
                    .map(|root| Path::new(root).join(path))
                    .find(|dir| {
                        std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                            .is_ok_and(|s| s.split_whitespace().any(|c| c == "pids"))
                    })
            } else {
                None
            }
        });
        for parent in candidates {
            let threads = parent.join("tasks").exists();
            let pids = Self {
                parent,
                threads,
                free: Arc::new(Mutex::new(Some(Vec::new()))),
            };
            pids.remove_stale();
            // One made and removed: the host may write here.
            if pids.create(1).is_ok() {
                return Some(pids);
            }
        }
        None
    }

    /// A cgroup for one command, limited to `max` tasks (processes and
    /// threads), and the file the child writes `0` to, to join it: cgroup
    /// v1's `tasks`, which moves one thread (the child has one) without
    /// the global lock that `cgroup.procs` takes (measured here: 0.3 ms
    /// against 17 ms when the machine is idle); v2's `cgroup.procs`.
    pub fn create(&self, max: u32) -> io::Result<(CommandCgroup, OwnedFd)> {
        let cgroup = self.make(max)?;
        let tasks = cgroup.dir.join("tasks");
        let join = if tasks.exists() {
            tasks
        } else {
            cgroup.dir.join("cgroup.procs")
        };
        let procs = std::fs::OpenOptions::new().write(true).open(join)?;
        Ok((cgroup, procs.into()))
    }

    /// A cgroup for the next command, limited to `max` tasks, with the
    /// calling thread in it (counted as one more). `None` on cgroup v2,
    /// where a thread cannot leave its process's cgroup.
    pub fn ahead(&self, max: u32) -> Option<Ahead> {
        if !self.threads {
            return None;
        }
        let cgroup = self.make(max.saturating_add(1)).ok()?;
        let tasks = cgroup.dir.join("tasks");
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        cgroup.released.store(false, Ordering::Release);
        match std::fs::write(&tasks, tid.to_string()) {
            Ok(()) => Some(Ahead { cgroup, max }),
            Err(_) => {
                cgroup.released.store(true, Ordering::Release);
                None
            }
        }
    }

    /// Remove empty command cgroups left by toolhost processes that ended
    /// without cleaning up (a minute old: a live one is never empty that
    /// long).
    fn remove_stale(&self) {
        let Ok(entries) = std::fs::read_dir(&self.parent) else {
            return;
        };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(60)));
            if old && entry.file_name().to_string_lossy().starts_with("toolhost-") {
                // Fails, harmlessly, if anything is inside.
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }

    /// Put the calling thread back in the host's own cgroup.
    pub fn leave(&self) {
        if self.threads {
            let tid = rustix::thread::gettid().as_raw_nonzero().get();
            let _ = std::fs::write(self.parent.join("tasks"), tid.to_string());
        }
    }

    fn make(&self, max: u32) -> io::Result<CommandCgroup> {
        let reused = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .and_then(Vec::pop);
        // Touched, so no host's cleanup takes it for a stale one; one gone
        // (such a cleanup) or unusable is made anew.
        if let Some(dir) = reused {
            let touched = std::fs::File::open(&dir)
                .and_then(|d| d.set_modified(std::time::SystemTime::now()))
                .is_ok();
            if touched && std::fs::write(dir.join("pids.max"), max.to_string()).is_ok() {
                return Ok(CommandCgroup {
                    dir,
                    released: Arc::new(AtomicBool::new(true)),
                    free: Arc::clone(&self.free),
                });
            }
            let _ = std::fs::remove_dir(&dir);
        }
        // Unique names, also across processes that share a pid in
        // different PID namespaces.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = self
                .parent
                .join(format!("toolhost-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        };
        let cgroup = CommandCgroup {
            dir,
            released: Arc::new(AtomicBool::new(true)),
            free: Arc::clone(&self.free),
        };
        std::fs::write(cgroup.dir.join("pids.max"), max.to_string())?;
        Ok(cgroup)
    }
}

impl CommandCgroup {
    /// Kill what is left in the cgroup (a process that escaped the group
    /// or namespace kill cannot escape this).
    pub fn kill_all(&self) {
        // cgroup v2 has cgroup.kill; v1 needs each pid.
        if let Ok(mut kill) = std::fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.kill"))
        {
            let _ = kill.write_all(b"1");
            return;
        }
        let own = rustix::process::getpid().as_raw_nonzero().get();
        if let Ok(pids) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            // Never the host itself, whose spawner thread may sit here.
            let others = pids.lines().filter_map(|l| l.trim().parse::<i32>().ok());
            for pid in others.filter(|p| *p != own) {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        }
    }
}

impl CommandCgroup {
    /// Nothing is in it or counted in it any more (`pids.current` counts
    /// tasks still exiting, which `cgroup.procs` no longer lists).
    fn is_empty(&self) -> bool {
        std::fs::read_to_string(self.dir.join("pids.current")).is_ok_and(|n| n.trim() == "0")
    }
}

impl Drop for Pids {
    fn drop(&mut self) {
        // Closed: a command's cgroup dropped after this is removed.
        let free = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        for dir in free.into_iter().flatten() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        // The spawner thread leaves right after the spawn.
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.released.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        if self.released.load(Ordering::Acquire) && self.is_empty() {
            let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(free) = free.as_mut().filter(|f| f.len() < FREE) {
                free.push(mem::take(&mut self.dir));
                return;
            }
        }
        // The kernel may still be tearing the last task down.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            self.kill_all();
            std::thread::sleep(Duration::from_millis(2));
        }
        tracing::debug!(
            "cgroup {} is not empty yet; left behind",
            self.dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs a pids cgroup the host can make (root, or a delegated cgroup); .ci/run runs it"]
    fn an_empty_cgroup_serves_the_next_command_with_its_new_limit() {
        let pids = Pids::new().expect(
            "no pids cgroup can be made here: run as root or in a delegated cgroup, \
             or run without --include-ignored",
        );
        let (first, _) = pids.create(5).unwrap();
        let dir = first.dir.clone();
        drop(first);
        let (next, _) = pids.create(7).unwrap();
        assert_eq!(next.dir, dir, "the empty one is used again");
        let max = std::fs::read_to_string(dir.join("pids.max")).unwrap();
        assert_eq!(max.trim(), "7");
        drop(next);
        drop(pids);
        assert!(
            !dir.exists(),
            "the host removes its free cgroups when it goes"
        );
    }
}
