//! One call at a time over a state directory: a lock file created
//! exclusively, removed when dropped, broken when a dead call left it.
//!
//! Built-ins that read, change and write back a file in their directory
//! (save_memory, update_identity, manage_goals) take it around the whole
//! read-modify-write, so concurrent calls never lose an update.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toolhost_sdk::ToolError;

/// How long a call waits for another to finish.
pub const WAIT: Duration = Duration::from_secs(5);
/// A lock older than this was left by a call that died: it is broken.
pub const STALE: Duration = Duration::from_secs(30);

/// A taken lock; let go when dropped.
#[derive(Debug)]
pub struct DirLock(PathBuf);

impl DirLock {
    /// Take `dir/.NAME.lock`, waiting up to [`WAIT`] for the call holding
    /// it; `busy` says what is going on in the `retry` error when the wait
    /// runs out ("another save_memory call is still writing the memory log").
    pub fn take(dir: &Path, name: &str, busy: &str) -> Result<Self, ToolError> {
        let path = dir.join(format!(".{name}.lock"));
        let started = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(Self(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|m| m.elapsed().ok())
                        .is_some_and(|age| age > STALE);
                    if stale {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    if started.elapsed() > WAIT {
                        return Err(ToolError::retry(format!("{busy}; try again")));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => {
                    return Err(ToolError::failed(format!(
                        "cannot lock {}: {e}",
                        dir.display()
                    )));
                }
            }
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::take(dir.path(), "t", "busy").unwrap();
        let released = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let _second = DirLock::take(dir.path(), "t", "busy").unwrap();
                assert!(released.load(std::sync::atomic::Ordering::SeqCst));
            });
            std::thread::sleep(Duration::from_millis(50));
            released.store(true, std::sync::atomic::Ordering::SeqCst);
            drop(first);
            waiter.join().unwrap();
        });
        assert!(!dir.path().join(".t.lock").exists());
    }

    #[test]
    fn a_stale_lock_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(".t.lock");
        std::fs::write(&lock, "").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&lock)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        assert!(DirLock::take(dir.path(), "t", "busy").is_ok());
    }
}
