//! The workspace an executor grants: set at start, from a client's roots, or refused with what to give instead.

use super::*;

impl Executor {
    /// Set the workspace directory (it must exist; it is canonicalised).
    pub fn with_workspace(self, dir: &Path) -> std::io::Result<Self> {
        *self
            .workspace
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::from(checked_dir(dir)?));
        Ok(self)
    }

    /// Set the workspace if none is set yet (e.g. from an MCP client's
    /// first root). Returns false, changing nothing, when one was set.
    pub fn set_workspace_if_unset(&self, dir: &Path) -> std::io::Result<bool> {
        let dir = checked_dir(dir)?;
        let mut slot = self
            .workspace
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return Ok(false);
        }
        *slot = Some(Arc::from(dir));
        drop(slot);
        self.workspace_changed();
        Ok(true)
    }

    /// Replace the workspace (an MCP client changed its roots), under the
    /// same rules as [`Executor::with_workspace`]. Calls already running
    /// keep the one they started with; later calls use `dir`. A refused
    /// directory changes nothing.
    pub fn replace_workspace(&self, dir: &Path) -> std::io::Result<()> {
        let dir = checked_dir(dir)?;
        *self
            .workspace
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::from(dir));
        self.workspace_problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.workspace_changed();
        Ok(())
    }

    /// The workspace, if set.
    pub fn workspace(&self) -> Option<Arc<Path>> {
        self.workspace
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Record why no workspace could be set (e.g. the current directory is
    /// the home directory): a call that needs the workspace gets this
    /// instead of running without it.
    pub fn set_workspace_problem(&self, why: impl Into<String>) {
        *self
            .workspace_problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(why.into());
    }

    /// Why no workspace is set, if one was refused.
    pub fn workspace_problem(&self) -> Option<String> {
        self.workspace_problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// `dir` canonicalised, if it is a directory.
/// `dir`, canonical, if it exists, is a directory and is safe to grant
/// (see [`crate::types::paths::unsafe_workspace`]); the error says what
/// to give instead.
pub(super) fn checked_dir(dir: &Path) -> std::io::Result<PathBuf> {
    let shown = dir.display();
    let dir = dir.canonicalize().map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("{shown} cannot be the workspace: {e}; give an existing project directory"),
        )
    })?;
    if !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!(
                "{} cannot be the workspace: it is a file, not a directory; give the project \
                 directory that holds it",
                dir.display()
            ),
        ));
    }
    if let Some(why) = crate::types::paths::unsafe_workspace(&dir) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} cannot be the workspace: it {why}, and tools would be granted everything \
                 beneath it; give a project directory instead (e.g. `--workspace \
                 ~/code/myproject`, or start toolhost from inside one)",
                dir.display()
            ),
        ));
    }
    Ok(dir)
}
