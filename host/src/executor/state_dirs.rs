//! The executor's state directories (`memory`, `todo`, `web_cache`, ...):
//! named by `dir:NAME` grants, created on first use.

use super::Executor;
use crate::types::grant::{DirGrant, Grant};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A `dir:NAME` grant item for a directory the executor does not keep.
#[derive(Debug, thiserror::Error)]
#[error(
    "`dir:{name}` names no directory this host keeps (it has {known}); a tool's own directory is granted in [grants.TOOL] directories of the configuration"
)]
pub struct UnknownStateDir {
    /// The name given.
    pub name: String,
    /// The state directories there are, comma-separated.
    pub known: String,
}

impl Executor {
    /// The host directory of the state directory `name`, if it keeps one.
    pub(crate) fn state_dir(&self, name: &str) -> Option<&Path> {
        self.state_dirs.get(name).map(|(path, _)| path.as_path())
    }

    /// The confirmation mode.
    pub fn mode(&self) -> crate::types::confirm::Mode {
        self.policy.mode
    }

    /// Give built-in tools that declare the directory `name` the host
    /// directory `path` (created on first use): e.g. `todo` for the plan,
    /// `memory` for the memory tools, `schemas` for validate_output.
    pub fn with_state_dir(mut self, name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        self.state_dirs
            .insert(name.into(), (path.into(), OnceLock::new()));
        self
    }

    /// Turn `grant`'s `dir:NAME:ACCESS` items ([`Grant::state_dirs`]) into
    /// directories: this executor's state directory of that name. Every
    /// name it has is resolved; the first it lacks is the error.
    pub fn resolve_state_dirs(&self, grant: &mut Grant) -> Result<(), UnknownStateDir> {
        let mut unknown = None;
        for (name, access) in std::mem::take(&mut grant.state_dirs) {
            let Some((path, _)) = self.state_dirs.get(&name) else {
                unknown.get_or_insert(name);
                continue;
            };
            grant.directories.retain(|d| d.name != name);
            grant.directories.push(DirGrant {
                name,
                host_path: path.clone(),
                access,
            });
        }
        match unknown {
            None => Ok(()),
            Some(name) => {
                let mut known: Vec<&str> = self.state_dirs.keys().map(String::as_str).collect();
                known.sort_unstable();
                Err(UnknownStateDir {
                    name,
                    known: known.join(", "),
                })
            }
        }
    }

    pub(super) fn is_state_dir(&self, path: &Path) -> bool {
        self.state_dirs.values().any(|(s, _)| s == path)
    }

    /// Create `path` the first time a call needs it, if it is one of the
    /// executor's state directories (once per directory, not per call).
    pub(super) fn ensure_state_dir(&self, path: &Path) -> std::io::Result<()> {
        let made = self.state_dirs.values().find(|(s, _)| s == path);
        if let Some((dir, made)) = made
            && made.get().is_none()
        {
            std::fs::create_dir_all(dir)?;
            let _ = made.set(());
        }
        Ok(())
    }
}
