//! `toolhost.lock`: the digest each `oci://` source is pinned to.

use super::{OciError, io};
use std::path::Path;

/// One source and the manifest digest it is pinned to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pinned {
    /// `oci://REGISTRY/REPOSITORY:TAG`, as written.
    pub source: String,
    /// `sha256:…` of its manifest.
    pub digest: String,
}

/// The pins, in the order they were made.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Lock {
    #[serde(default, rename = "component")]
    pinned: Vec<Pinned>,
}

const HEADER: &str = "# toolhost.lock: the digest each oci:// component source is pinned to.\n\
# toolhost writes it on a source's first pull; commit it. `toolhost plugin\n\
# update SOURCE` re-pins a source whose tag moved.\n\n";

impl Lock {
    /// The lock at `path` (empty if there is none).
    pub fn read(path: &Path) -> Result<Self, OciError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(io(path)(e)),
        };
        toml::from_str(&text).map_err(|e| {
            OciError::Integrity(format!(
                "{} is not a toolhost.lock ({e}); fix it, or remove it and pull again",
                path.display()
            ))
        })
    }

    /// Write it to `path`, whole (a temporary file renamed into place).
    pub fn write(&self, path: &Path) -> Result<(), OciError> {
        use std::io::Write as _;
        let text = format!("{HEADER}{}", toml::to_string(self).unwrap_or_default());
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        // A new file of a name no one could guess, beside the lock:
        // nothing planted there is followed, and writers never share one.
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut temp = tempfile::Builder::new()
            .prefix(".toolhost.lock.")
            .tempfile_in(dir)
            .map_err(io(dir))?;
        temp.write_all(text.as_bytes()).map_err(io(temp.path()))?;
        temp.persist(path).map_err(|e| io(path)(e.error))?;
        Ok(())
    }

    /// `source`'s pin.
    pub fn get(&self, source: &str) -> Option<&Pinned> {
        self.pinned.iter().find(|p| p.source == source)
    }

    /// Every pin.
    pub fn pins(&self) -> &[Pinned] {
        &self.pinned
    }

    /// Pin `pinned.source` to `pinned.digest`, replacing its pin.
    pub fn pin(&mut self, pinned: Pinned) {
        match self.pinned.iter_mut().find(|p| p.source == pinned.source) {
            Some(old) => *old = pinned,
            None => self.pinned.push(pinned),
        }
    }

    /// Drop `source`'s pin; true if it had one.
    pub fn remove(&mut self, source: &str) -> bool {
        let before = self.pinned.len();
        self.pinned.retain(|p| p.source != source);
        self.pinned.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_round_trip_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        let mut lock = Lock::read(&path).unwrap();
        lock.pin(Pinned {
            source: "oci://127.0.0.1:5000/a:1".into(),
            digest: "sha256:aa".into(),
        });
        lock.pin(Pinned {
            source: "oci://127.0.0.1:5000/a:1".into(),
            digest: "sha256:bb".into(),
        });
        lock.write(&path).unwrap();
        let read = Lock::read(&path).unwrap();
        assert_eq!(read.pins().len(), 1);
        assert_eq!(
            read.get("oci://127.0.0.1:5000/a:1").unwrap().digest,
            "sha256:bb"
        );
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .starts_with("# toolhost.lock")
        );
    }

    // Writers racing each other never write into one temporary file, and
    // leave none behind: the lock is always one writer's whole text.
    #[test]
    fn concurrent_writes_leave_a_whole_lock_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.lock");
        std::thread::scope(|scope| {
            for writer in 0..4 {
                let path = &path;
                scope.spawn(move || {
                    for n in 0..25 {
                        let mut lock = Lock::default();
                        lock.pin(Pinned {
                            source: format!("oci://127.0.0.1:5000/w{writer}:{n}"),
                            digest: format!("sha256:{}", "ab".repeat(32)),
                        });
                        lock.write(path).unwrap();
                        assert_eq!(Lock::read(path).unwrap().pins().len(), 1);
                    }
                });
            }
        });
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["toolhost.lock"]);
    }
}
