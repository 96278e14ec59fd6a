//! The executor's remote MCP servers (remote.rs): their tools in the
//! registry, kept in step with what the servers list, and the command
//! runner their stdio servers start through.

use super::Executor;
use crate::broker::BrokerCall;
use crate::plugin::Origin;
use crate::registry::{LoadProblem, Registry};
use crate::remote::{Launcher, RemoteServers};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};

impl Executor {
    /// Offer the tools of the remote MCP `servers` (`[mcp_servers]`) as
    /// `mcp_{server}_{tool}`. Nothing connects until
    /// [`Executor::start_remote_servers`], or, for a server set to connect
    /// on first use, until the tools are first listed or looked up. Each
    /// change of a server's list is a change of the visible tools
    /// ([`Executor::changes`]).
    pub fn with_remote_servers(mut self, servers: RemoteServers) -> Self {
        if servers.is_empty() {
            return self;
        }
        let mut listed = servers.changes();
        let changes = Arc::clone(&self.catalog.changes);
        servers.spawn(async move {
            while listed.changed().await.is_ok() {
                changes.send_modify(|n| *n += 1);
            }
        });
        self.catalog.remote = Some(Arc::new(servers));
        self
    }

    /// Whether `tool` names a tool of a configured remote server, listed
    /// yet or not (configuration may name one before it is listed).
    pub fn is_remote_tool(&self, tool: &str) -> bool {
        self.catalog.remote.as_ref().is_some_and(|s| s.claims(tool))
    }

    /// Why `tool`, not found, may be a tool of a remote server that cannot
    /// be reached (see [`RemoteServers::unreachable`]).
    pub(super) fn unreachable_remote(&self, tool: &str) -> Option<String> {
        self.catalog.remote.as_ref()?.unreachable(tool)
    }

    /// The remote MCP servers, if any are configured.
    pub fn remote_servers(&self) -> Option<&RemoteServers> {
        self.catalog.remote.as_deref()
    }

    /// Connect the remote servers set to connect at start, in the
    /// background: start-up never waits for them, and their tools appear
    /// (with a change on [`Executor::changes`]) once listed. A server
    /// front end calls it once it is ready; calling it again does nothing
    /// more than connect what is not connected.
    pub fn start_remote_servers(&self) {
        if let Some(servers) = &self.catalog.remote {
            servers.set_launcher(self.remote_launcher());
            servers.connect_at_start();
        }
    }

    /// [`Executor::start_remote_servers`], then wait until each has been
    /// tried once (each at most its connect timeout): for a command that
    /// lists or calls tools once and exits.
    pub fn connect_remote_servers(&self) {
        if let Some(servers) = &self.catalog.remote {
            self.start_remote_servers();
            servers.wait_for_start();
        }
    }

    /// The first listing or lookup: servers set to connect on first use
    /// connect now (each waited for at most its connect timeout).
    pub(super) fn remote_first_use(&self) {
        if let Some(servers) = &self.catalog.remote {
            servers.first_use(|| self.remote_launcher());
        }
    }

    /// The workspace was set or replaced: stdio servers start again in
    /// it (see [`RemoteServers::workspace_changed`]).
    pub(super) fn workspace_changed(&self) {
        if let Some(servers) = &self.catalog.remote {
            servers.set_launcher(self.remote_launcher());
            servers.workspace_changed();
        }
    }

    /// How stdio servers are started: through the broker as configured
    /// commands (a person wrote them: that is the approval, as for hooks),
    /// outside any session, with the workspace current at each start.
    fn remote_launcher(&self) -> Launcher {
        Launcher {
            call: BrokerCall {
                broker: Arc::clone(&self.broker),
                tool: Arc::from("mcp_servers"),
                owner: Arc::from(""),
                background_refused: None,
                keeps_outputs: true,
                progress: None,
                workspace: None,
                network: false,
                mode: self.policy.mode,
                confirmer: Arc::new(crate::types::confirm::Configured),
                // A person's "abort all" stops calls, not the servers.
                aborted: Arc::new(AtomicBool::new(false)),
                dry_run: false,
                log: Arc::default(),
                until: None,
            },
            workspace: Arc::clone(&self.workspace),
        }
    }

    /// Add the servers' tools as last listed to `registry`; what cannot be
    /// registered is logged and returned.
    pub(super) fn add_remote_tools(&self, registry: &mut Registry) -> Vec<LoadProblem> {
        let Some(servers) = &self.catalog.remote else {
            return Vec::new();
        };
        self.catalog
            .remote_seen
            .store(servers.generation(), Ordering::Release);
        let (plugins, refused) = servers.plugins();
        let mut problems: Vec<LoadProblem> = refused
            .into_iter()
            .map(|(at, reason)| LoadProblem {
                path: at.into(),
                reason,
            })
            .collect();
        for plugin in plugins {
            let at = format!("[mcp_servers] {}", plugin.name());
            if let Err(err) = registry.register(plugin, false) {
                problems.push(LoadProblem {
                    path: at.into(),
                    reason: err.to_string(),
                });
            }
        }
        for problem in &problems {
            tracing::warn!(at = %problem.path.display(), reason = %problem.reason, "a remote MCP tool is not offered");
        }
        problems.clone_into(
            &mut self
                .catalog
                .remote_problems
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        problems
    }

    /// Held while the registry's remote tools are made and swapped in
    /// (by a refresh or a reload), so neither swaps in an older set.
    pub(super) fn remote_lock(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        self.catalog.remote.as_ref()?;
        Some(
            self.catalog
                .remote_refresh
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Bring the registry's remote tools in step with what the servers
    /// list, if a list changed since (the change was announced when it
    /// happened; this only makes the registry show it).
    pub(super) fn refresh_remote_tools(&self) {
        let Some(servers) = &self.catalog.remote else {
            return;
        };
        let stale = || self.catalog.remote_seen.load(Ordering::Acquire) != servers.generation();
        if !stale() {
            return;
        }
        let _one = self.remote_lock();
        if !stale() {
            return;
        }
        let mut registry = self
            .snapshot()
            .retained(|p| !matches!(p.origin(), Origin::Remote(_)));
        self.add_remote_tools(&mut registry);
        self.swap_registry(registry, false);
    }
}
