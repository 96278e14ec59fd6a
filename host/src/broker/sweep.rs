//! Protected paths a command created: a read-only mount can only cover
//! what exists, so the broker notes which protected paths of the
//! workspace's root (`.vscode/`, `.cargo/config.toml`, `.git/hooks/`, ...)
//! are absent before a command and moves any it created out of the
//! workspace once the command has ended, into toolhost's state directory,
//! where a person can look at it. Nothing is deleted.

use crate::types::paths::PathRules;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Protected paths absent when a command started.
#[derive(Debug, Default)]
pub(crate) struct Absent {
    workspace: PathBuf,
    paths: Vec<PathBuf>,
    /// Where created ones go.
    into: PathBuf,
}

/// Where swept paths go by default: `<state dir>/toolhost/swept`.
pub(crate) fn default_dir() -> PathBuf {
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .unwrap_or_else(std::env::temp_dir)
        .join("toolhost/swept")
}

impl Absent {
    /// The protected paths without wildcards missing from `workspace`.
    pub(crate) fn before(workspace: Option<&Path>, rules: &PathRules, into: &Path) -> Self {
        let Some(workspace) = workspace else {
            return Self::default();
        };
        let paths = rules
            .protected_literals()
            .map(|(rel, _)| PathBuf::from(rel))
            .filter(|rel| {
                // Beneath a missing directory only its top needs watching.
                std::fs::symlink_metadata(workspace.join(rel)).is_err()
            })
            .collect();
        Self {
            workspace: workspace.to_owned(),
            paths,
            into: into.to_owned(),
        }
    }

    /// Move aside what was created since; a note for each.
    pub(crate) fn sweep(self) -> Vec<String> {
        let mut notes = Vec::new();
        let mut moved: Vec<&Path> = Vec::new();
        for rel in &self.paths {
            if moved.iter().any(|m| rel.starts_with(m)) {
                continue;
            }
            let path = self.workspace.join(rel);
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            match quarantine(&path, rel, &self.into) {
                Ok(to) => notes.push(format!(
                    "moved `{}`, which this command created, to {}: it is a protected path that a person's tools run code from, so commands may not create it",
                    rel.display(),
                    to.display()
                )),
                Err(e) => notes.push(format!(
                    "this command created the protected path `{}` and it could not be moved aside ({e}); check it before running git, an editor or a build in this workspace",
                    rel.display()
                )),
            }
            moved.push(rel);
        }
        notes
    }
}

/// Move `path` to `<base>/<stamp>/<rel>`.
fn quarantine(path: &Path, rel: &Path, base: &Path) -> io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let to = base
        .join(format!(
            "{stamp}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
        .join(rel);
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::rename(path, &to) {
        Ok(()) => Ok(to),
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
            copy_all(path, &to)?;
            remove_all(path)?;
            Ok(to)
        }
        Err(e) => Err(e),
    }
}

fn copy_all(from: &Path, to: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_all(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
    } else {
        std::fs::copy(from, to).map(drop)
    }
}

fn remove_all(path: &Path) -> io::Result<()> {
    if std::fs::symlink_metadata(path)?.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_protected_paths_are_moved_aside() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join(".git")).unwrap();
        std::fs::write(ws.path().join(".envrc"), "old").unwrap();
        let absent = Absent::before(Some(ws.path()), &PathRules::default(), state.path());
        assert!(absent.paths.contains(&PathBuf::from(".vscode")));
        assert!(absent.paths.contains(&PathBuf::from(".git/hooks")));
        assert!(!absent.paths.contains(&PathBuf::from(".envrc")));
        std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
        std::fs::write(ws.path().join(".git/hooks/pre-commit"), "evil").unwrap();
        std::fs::create_dir_all(ws.path().join(".cargo")).unwrap();
        std::fs::write(ws.path().join(".cargo/config.toml"), "evil").unwrap();
        let notes = absent.sweep();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(!ws.path().join(".git/hooks").exists());
        assert!(!ws.path().join(".cargo/config.toml").exists());
        assert!(
            ws.path().join(".cargo").exists(),
            "only the protected file moved"
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join(".envrc")).unwrap(),
            "old"
        );
        assert!(notes.iter().all(|n| n.contains("moved")), "{notes:?}");
        let kept = walk(state.path());
        assert!(
            kept.iter().any(|p| p.ends_with(".git/hooks/pre-commit")),
            "{kept:?}"
        );
        assert!(
            kept.iter().any(|p| p.ends_with(".cargo/config.toml")),
            "{kept:?}"
        );
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
