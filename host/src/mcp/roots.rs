//! The client's roots as the workspace: listing them, and following their changes.

use super::*;

/// The local directories among the client's roots, in its order.
#[expect(
    deprecated,
    reason = "roots are deprecated only in the newest protocol, which toolhost does not negotiate"
)]
pub(super) async fn root_dirs(peer: &Peer<RoleServer>) -> Vec<PathBuf> {
    match tokio::time::timeout(ROOTS_TIMEOUT, peer.list_roots()).await {
        Ok(Ok(listed)) => listed
            .roots
            .iter()
            .filter_map(|root| file_uri_path(&root.uri))
            .collect(),
        _ => Vec::new(),
    }
}

/// The current directory `dir` as the workspace, when no roots gave one:
/// refused, and the reason kept for calls, if it cannot be granted (the
/// home directory, `/`).
pub(crate) fn set_cwd_workspace(executor: &Executor, dir: &Path) {
    match executor.set_workspace_if_unset(dir) {
        Ok(true) => {
            tracing::info!(workspace = %dir.display(), "no roots; the current directory is the workspace");
        }
        Ok(false) => {}
        Err(e) => {
            let why = format!(
                "no workspace: the client offered no roots, and the current directory {e}; \
                 start the server from a project directory or with --workspace DIR"
            );
            tracing::warn!("{why}");
            executor.set_workspace_problem(why);
        }
    }
}

/// `file:///home/me/proj` → `/home/me/proj`.
pub(super) fn file_uri_path(uri: &str) -> Option<PathBuf> {
    url::Url::parse(uri)
        .ok()
        .filter(|u| u.scheme() == "file")
        .and_then(|u| u.to_file_path().ok())
}

impl McpServer {
    /// With no workspace yet: the client's first root that is a local
    /// directory, else the current directory.
    pub(super) async fn ensure_workspace(&self, peer: &Peer<RoleServer>) {
        if self.executor().workspace().is_some() {
            return;
        }
        let _one = self.shared.workspace.lock().await;
        if self.executor().workspace().is_some() {
            return;
        }
        let offers_roots = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some());
        if offers_roots {
            let mut refused = Vec::new();
            for dir in root_dirs(peer).await {
                match self.executor().set_workspace_if_unset(&dir) {
                    Ok(true) => {
                        tracing::info!(workspace = %dir.display(), "workspace set from the client's roots");
                        return;
                    }
                    Ok(false) => return,
                    Err(e) => refused.push(e.to_string()),
                }
            }
            // Roots were given and none can be granted: no silent fallback.
            if !refused.is_empty() {
                let why = format!(
                    "no workspace: the client's roots cannot be granted ({}); open a project \
                     directory in the client, or start the server with --workspace DIR",
                    refused.join("; ")
                );
                tracing::warn!("{why}");
                self.executor().set_workspace_problem(why);
                return;
            }
        }
        if let Ok(dir) = std::env::current_dir() {
            set_cwd_workspace(self.executor(), &dir);
        }
    }

    /// The client changed its roots: its first root that can be granted
    /// becomes the workspace for calls started from now on (unless the
    /// workspace was fixed at start).
    pub(super) async fn follow_roots(&self, peer: &Peer<RoleServer>) {
        if self.shared.workspace_fixed {
            tracing::info!("the client's roots changed; the workspace stays the one set at start");
            return;
        }
        let _one = self.shared.workspace.lock().await;
        let mut refused = Vec::new();
        for dir in root_dirs(peer).await {
            if self.executor().workspace().as_deref() == Some(dir.as_path()) {
                return;
            }
            match self.executor().replace_workspace(&dir) {
                Ok(()) => {
                    tracing::info!(workspace = %dir.display(), "workspace changed to follow the client's roots");
                    return;
                }
                Err(e) => refused.push(format!("{}: {e}", dir.display())),
            }
        }
        if !refused.is_empty() {
            tracing::warn!(
                "the client's new roots cannot be granted ({}); the workspace is unchanged",
                refused.join("; ")
            );
        }
    }
}
