//! The host side of the `files` interface: file operations WASI 0.2 cannot
//! express (an atomic replace that keeps permissions), done with cap-std
//! inside the directories the calling tool was granted, so no path, `..` or
//! symlink leads outside them.

use crate::bindings::files::{self, FileError};
use crate::grant::{Access, Effective};
use crate::sandbox::CallState;
use cap_std::fs::{Dir, OpenOptions};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a tool may write: its granted directories, by guest name.
#[derive(Debug, Clone, Default)]
pub(crate) struct WritableDirs {
    /// The workspace (guest `.`), if granted read-write.
    workspace: Option<PathBuf>,
    /// Named directories (guest `/<name>`) granted read-write.
    named: Vec<(String, PathBuf)>,
}

impl WritableDirs {
    pub(crate) fn new(grant: &Effective, workspace: Option<&Path>) -> Self {
        Self {
            workspace: workspace
                .filter(|_| grant.workspace == Some(Access::Write))
                .map(Path::to_owned),
            named: grant
                .directories
                .iter()
                .filter(|d| d.access == Access::Write)
                .map(|d| (d.name.clone(), d.host_path.clone()))
                .collect(),
        }
    }

    /// The granted host directory and the relative path inside it.
    fn resolve(&self, path: &str) -> Result<(&Path, PathBuf), FileError> {
        let (base, rest) = match path.strip_prefix('/') {
            Some(named) => {
                let (name, rest) = named.split_once('/').unwrap_or((named, ""));
                let dir = self.named.iter().find(|(n, _)| n == name).ok_or_else(|| {
                    FileError::Denied(format!(
                        "`{path}` is not in a directory this tool may write (no write grant for `/{name}`)"
                    ))
                })?;
                (dir.1.as_path(), rest)
            }
            None => {
                let ws = self.workspace.as_deref().ok_or_else(|| {
                    FileError::Denied(
                        "this tool may not write to the workspace (its grant is read-only or absent)".to_owned(),
                    )
                })?;
                (ws, path)
            }
        };
        let mut rel = PathBuf::new();
        for c in Path::new(rest).components() {
            match c {
                Component::Normal(part) => rel.push(part),
                Component::CurDir => {}
                _ => {
                    return Err(FileError::Denied(format!(
                        "`{path}` leads outside the granted directory; give a path inside it"
                    )));
                }
            }
        }
        if rel.as_os_str().is_empty() {
            return Err(FileError::Invalid(format!(
                "`{path}` names a directory, not a file"
            )));
        }
        Ok((base, rel))
    }
}

impl files::Host for CallState {
    fn write_atomic(&mut self, path: String, data: Vec<u8>) -> Result<(), FileError> {
        let (base, rel) = self.writable.resolve(&path)?;
        let dir = Dir::open_ambient_dir(base, cap_std::ambient_authority())
            .map_err(|e| FileError::Failed(format!("cannot open the granted directory: {e}")))?;
        write_atomic(&dir, &rel, &data).map_err(|e| to_file_error(e, &path))
    }
}

/// Temp file, write, sync, keep permissions, rename over the target, sync
/// the directory. A symlink (inside `dir`) is written through.
fn write_atomic(dir: &Dir, rel: &Path, data: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let target = match dir.symlink_metadata(rel) {
        Ok(meta) if meta.is_symlink() => dir.canonicalize(rel)?,
        _ => rel.to_owned(),
    };
    let old = dir.metadata(&target).ok();
    if old.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    let parent = target.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        dir.create_dir_all(parent)?;
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = target.with_file_name(format!(
        ".{name}.toolhost-{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = dir.open_with(&temp, OpenOptions::new().write(true).create_new(true))?;
        file.write_all(data)?;
        if let Some(old) = &old {
            file.set_permissions(old.permissions())?;
        }
        file.sync_all()?;
        drop(file);
        dir.rename(&temp, dir, &target)?;
        // Make the rename itself durable.
        dir.open(parent.unwrap_or(Path::new(".")))?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = dir.remove_file(&temp);
    }
    result
}

fn to_file_error(err: std::io::Error, path: &str) -> FileError {
    use std::io::ErrorKind as K;
    match err.kind() {
        K::NotFound | K::NotADirectory => FileError::NotFound(format!("`{path}`: {err}")),
        K::PermissionDenied | K::ReadOnlyFilesystem => FileError::Denied(format!(
            "writing `{path}` was refused: {err} (the path may lead outside the granted directory through a symlink)"
        )),
        K::IsADirectory => FileError::Invalid(format!("`{path}` is a directory, not a file")),
        _ => FileError::Failed(format!("cannot write `{path}`: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::DirGrant;
    use std::os::unix::fs::PermissionsExt;

    fn dirs(ws: &Path) -> WritableDirs {
        let grant = Effective {
            workspace: Some(Access::Write),
            ..Effective::default()
        };
        WritableDirs::new(&grant, Some(ws))
    }

    #[test]
    fn writes_atomically_and_keeps_permissions() {
        let ws = tempfile::tempdir().unwrap();
        let script = ws.path().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
        let d = dirs(ws.path());
        let (base, rel) = d.resolve("run.sh").unwrap();
        let dir = Dir::open_ambient_dir(base, cap_std::ambient_authority()).unwrap();
        write_atomic(&dir, &rel, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "new");
        let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);
        let leftovers: Vec<_> = std::fs::read_dir(ws.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file left behind");
        // Parents are created.
        let (_, rel) = d.resolve("a/b/c.txt").unwrap();
        write_atomic(&dir, &rel, b"x").unwrap();
        assert_eq!(
            std::fs::read_to_string(ws.path().join("a/b/c.txt")).unwrap(),
            "x"
        );
    }

    #[test]
    fn refuses_escapes_and_missing_grants() {
        let ws = tempfile::tempdir().unwrap();
        let d = dirs(ws.path());
        for bad in ["../x", "a/../../x", "/etc/passwd", "/state/x"] {
            assert!(matches!(d.resolve(bad), Err(FileError::Denied(_))), "{bad}");
        }
        assert!(matches!(d.resolve("."), Err(FileError::Invalid(_))));
        let read_only = WritableDirs::new(
            &Effective {
                workspace: Some(Access::Read),
                ..Effective::default()
            },
            Some(ws.path()),
        );
        assert!(matches!(
            read_only.resolve("a.txt"),
            Err(FileError::Denied(_))
        ));
    }

    #[test]
    fn a_symlink_out_of_the_directory_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "keep").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
        let dir = Dir::open_ambient_dir(ws.path(), cap_std::ambient_authority()).unwrap();
        assert!(write_atomic(&dir, Path::new("link"), b"pwned").is_err());
        assert!(write_atomic(&dir, Path::new("out/new"), b"pwned").is_err());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "keep"
        );
        assert!(!outside.path().join("new").exists());
    }

    #[test]
    fn named_directories_need_a_write_grant() {
        let state = tempfile::tempdir().unwrap();
        let grant = Effective {
            directories: vec![DirGrant {
                name: "state".into(),
                host_path: state.path().into(),
                access: Access::Write,
            }],
            ..Effective::default()
        };
        let d = WritableDirs::new(&grant, None);
        let (base, rel) = d.resolve("/state/plan.json").unwrap();
        assert_eq!(base, state.path());
        assert_eq!(rel, Path::new("plan.json"));
        assert!(matches!(d.resolve("plan.json"), Err(FileError::Denied(_))));
    }
}
