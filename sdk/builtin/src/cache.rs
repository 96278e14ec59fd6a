//! A time-limited cache in a state directory (the TypeScript bot framework's TtlCache): one
//! JSON file per key, holding what was asked (compared on read, so a hash
//! collision is a miss) and when. Best effort: without the directory, or
//! when it cannot be written, nothing is kept and the next call only costs
//! a fetch. Entries older than their TTL are removed when a new one is put.

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Serialize, Deserialize)]
struct Entry<T> {
    at: u64,
    asked: String,
    value: T,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn file(dir: &Path, asked: &str) -> PathBuf {
    dir.join(format!(
        "{:032x}.json",
        xxhash_rust::xxh3::xxh3_128(asked.as_bytes())
    ))
}

/// The value stored for `asked` in `dir` less than `ttl` seconds ago.
pub fn get<T: DeserializeOwned>(dir: &Path, asked: &str, ttl: u64) -> Option<T> {
    let bytes = std::fs::read(file(dir, asked)).ok()?;
    let entry: Entry<T> = serde_json::from_slice(&bytes).ok()?;
    (entry.asked == asked && now().saturating_sub(entry.at) < ttl).then_some(entry.value)
}

/// Keep `value` for `asked` in `dir` (nothing when `ttl` is 0), removing
/// entries older than `ttl` on the way.
pub fn put<T: Serialize>(dir: &Path, asked: &str, value: &T, ttl: u64) {
    if ttl == 0 || !dir.is_dir() {
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        let limit = std::time::Duration::from_secs(ttl);
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > limit);
            if old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    let entry = Entry {
        at: now(),
        asked: asked.to_owned(),
        value,
    };
    if let Ok(bytes) = serde_json::to_vec(&entry) {
        let _ = toolhost_sdk::fs::write_atomic_in_dir(&file(dir, asked), &bytes);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_come_back_until_they_expire() {
        let dir = tempfile::tempdir().unwrap();
        super::put(dir.path(), "q=rust", &vec![1, 2], 60);
        assert_eq!(
            super::get::<Vec<i32>>(dir.path(), "q=rust", 60),
            Some(vec![1, 2])
        );
        assert_eq!(super::get::<Vec<i32>>(dir.path(), "q=go", 60), None);
        assert_eq!(super::get::<Vec<i32>>(dir.path(), "q=rust", 0), None);
        super::put(dir.path(), "q=none", &1, 0);
        assert_eq!(super::get::<i32>(dir.path(), "q=none", 60), None);
        super::put(Path::new("/no/such/dir"), "x", &1, 60);
    }
    use std::path::Path;
}
