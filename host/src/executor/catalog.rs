//! The executor's tools: a registry snapshot that a reload swaps whole,
//! description overrides that survive reloads, the active profile's view
//! (lookup, listing, schemas), and change notifications.

use super::Executor;
use crate::dynamic::Store;
use crate::plugin::Plugin;
use crate::registry::{LoadProblem, Registry, RegistryError};
use crate::runtime::RuntimeError;
use crate::schema::{SchemaFormat, tool_schema};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use toolhost_shared::dynamic::STORE_DIR_NAME;

/// What tools there are: the registry and where it is loaded from (again
/// on every reload), the remote servers' tools, and who hears of changes.
pub(super) struct Catalog {
    /// Swapped whole when plugins are reloaded; a call keeps the snapshot
    /// it started with.
    pub(super) registry: RwLock<Arc<Registry>>,
    /// Where third-party plugins are loaded from (again on reload).
    pub(super) plugin_dirs: Vec<PathBuf>,
    /// Where approved dynamic tools are loaded from (again on reload).
    pub(super) dynamic_store: Option<Store>,
    /// Where `load_component` fetches `oci://` components from.
    pub(super) registries: Option<crate::dynamic::Registries>,
    /// Plugin files [`Executor::load_known_plugins`] left for
    /// [`Executor::load_deferred_plugins`]: they must be compiled first.
    pub(super) deferred: Mutex<Vec<PathBuf>>,
    /// Description overrides, applied again to a reloaded registry.
    pub(super) descriptions: HashMap<String, String>,
    /// Bumped each time the visible tool set changes.
    pub(super) changes: Arc<tokio::sync::watch::Sender<u64>>,
    /// The remote MCP servers whose tools are offered (`[mcp_servers]`).
    #[cfg(feature = "mcp")]
    pub(super) remote: Option<Arc<crate::remote::RemoteServers>>,
    /// The servers' generation of tools the registry holds.
    #[cfg(feature = "mcp")]
    pub(super) remote_seen: std::sync::atomic::AtomicU64,
    /// Held while the registry's remote tools are brought in step.
    #[cfg(feature = "mcp")]
    pub(super) remote_refresh: Mutex<()>,
    /// The remote tools that could not be offered when they were last
    /// brought in (names that collide, that are too long), each saying
    /// which and why.
    pub(super) remote_problems: Mutex<Vec<LoadProblem>>,
}

impl Executor {
    /// Replace the description `tool` shows (a prompt override).
    pub fn with_description(
        mut self,
        tool: &str,
        description: impl Into<String>,
    ) -> Result<Self, RegistryError> {
        let description = description.into();
        let remote = self.is_remote_tool(tool);
        let registry = self
            .catalog
            .registry
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        match Arc::get_mut(registry) {
            // A remote server's tool not listed yet gets it once listed.
            Some(registry) if remote && !registry.contains(tool) => {}
            Some(registry) => registry.set_description(tool, description.clone())?,
            None => {
                return Err(RegistryError::InUse {
                    name: tool.to_owned(),
                });
            }
        }
        self.catalog
            .descriptions
            .insert(tool.to_owned(), description);
        Ok(self)
    }

    /// Remember the third-party plugin directories, so
    /// [`Executor::reload_plugins`] loads them again.
    pub fn with_plugin_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.catalog.plugin_dirs = dirs;
        self
    }

    /// A snapshot of the registered tools (a reload replaces it; calls
    /// already running keep theirs).
    pub fn registry(&self) -> Arc<Registry> {
        self.refresh_remote_tools();
        self.snapshot()
    }

    /// The registry as it is, remote tools not brought in step.
    pub(super) fn snapshot(&self) -> Arc<Registry> {
        Arc::clone(
            &self
                .catalog
                .registry
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Replace the registered tools (the configured descriptions are applied
    /// to it). Returns true, and notifies [`Executor::changes`], when what
    /// callers can see changed: names, descriptions, schemas or versions.
    pub fn replace_registry(&self, registry: Registry) -> bool {
        self.swap_registry(registry, true)
    }

    /// [`Executor::replace_registry`]; without `notify`, a change is not
    /// announced (it was already).
    pub(super) fn swap_registry(&self, mut registry: Registry, notify: bool) -> bool {
        for (tool, text) in &self.catalog.descriptions {
            // A tool that went away keeps no override; nothing to do.
            let _ = registry.set_description(tool, text.clone());
        }
        // Any agent's view counts: a client that does not see the change
        // gets one needless notification.
        let shown = |p: &&Arc<Plugin>| {
            self.policy
                .profile
                .as_ref()
                .is_none_or(|pr| pr.shows(p.name()))
        };
        let visible = |r: &Registry| -> Vec<serde_json::Value> {
            r.list()
                .filter(shown)
                .map(|p| tool_schema(p.info(), self.effects(p), SchemaFormat::McpStructured))
                .collect()
        };
        let mut slot = self
            .catalog
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        // The first registry (nothing was visible) changes what is visible
        // if it shows a tool; no schema needs building to tell.
        let changed = if slot.count() == 0 {
            registry.list().any(|p| shown(&p))
        } else {
            visible(&slot) != visible(&registry)
        };
        *slot = Arc::new(registry);
        drop(slot);
        if changed && notify {
            self.catalog.changes.send_modify(|n| *n += 1);
        }
        changed
    }

    /// Load the built-ins and the plugin directories again and swap them in
    /// (see [`Executor::replace_registry`]). Returns whether the visible
    /// tools changed and the files that were skipped.
    pub fn reload_plugins(&self) -> Result<(bool, Vec<LoadProblem>), RuntimeError> {
        self.load_plugins(true)
    }

    /// [`Executor::reload_plugins`] without waiting for Cranelift: the
    /// built-ins (described by what was recorded at build time) and the
    /// plugin files the compile cache describes are loaded now; files it
    /// does not know yet are left for [`Executor::load_deferred_plugins`]. Returns
    /// how many were left.
    pub fn load_known_plugins(&self) -> Result<(usize, Vec<LoadProblem>), RuntimeError> {
        let (_, problems) = self.load_plugins(false)?;
        let deferred = self
            .catalog
            .deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok((deferred.len(), problems))
    }

    fn load_plugins(&self, compile: bool) -> Result<(bool, Vec<LoadProblem>), RuntimeError> {
        let mut registry = Registry::new();
        registry.load_builtins(&self.runtime)?;
        let mut problems = Vec::new();
        let mut deferred = Vec::new();
        for dir in &self.catalog.plugin_dirs {
            let (skipped, later) = if compile {
                (registry.load_dir(&self.runtime, dir), Vec::new())
            } else {
                registry.load_dir_known(&self.runtime, dir)
            };
            problems.extend(skipped);
            deferred.extend(later);
        }
        if let Some(store) = &self.catalog.dynamic_store {
            let loader =
                crate::dynamic::load_component(store.clone(), self.catalog.registries.clone());
            let unloader = crate::dynamic::unload_component(store.clone());
            for host_tool in [loader, unloader] {
                if let Err(err) = registry.register(host_tool, false) {
                    tracing::warn!(%err, "a tool of the dynamic-tool store is not offered");
                }
            }
            problems.extend(store.load_into(&self.runtime, &mut registry));
        }
        // Services the embedder offers as tools of their own.
        for service in self.services.iter().flat_map(|s| s.iter()) {
            if let Some(tool) = super::service_tools::tool_of(service)
                && let Err(err) = registry.register(tool, false)
            {
                tracing::warn!(%err, "a service is not offered as a tool");
            }
        }
        // With the remote tools as they are now, swapped in before a
        // refresh of them can swap in an older registry.
        let _remote = self.remote_lock();
        problems.extend(self.add_remote_tools(&mut registry));
        *self
            .catalog
            .deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = deferred;
        Ok((self.replace_registry(registry), problems))
    }

    /// Load the plugin files [`Executor::load_known_plugins`] left,
    /// compiling them (a server does it in the background). The visible
    /// tools change, and [`Executor::changes`] says so, when they are
    /// added. Returns the files that could not be loaded.
    pub fn load_deferred_plugins(&self) -> Result<Vec<LoadProblem>, RuntimeError> {
        let deferred = std::mem::take(
            &mut *self
                .catalog
                .deferred
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        if deferred.is_empty() {
            return Ok(Vec::new());
        }
        self.load_plugins(true).map(|(_, problems)| problems)
    }

    /// Compile the next tool some agent may call (one made for a single
    /// agent included) that is not compiled yet, as work ahead of use:
    /// first those a call has loaded with the baseline compiler's code
    /// (slower, and larger: each holds megabytes mapped until it is
    /// replaced), then the smallest (`Plugin::compile_ahead`: into the compile cache, not
    /// loaded): it waits while a call is compiling one, so a first call is
    /// never held back for long, and later first calls find their tool
    /// ready. Returns false when every tool is compiled.
    pub fn warm_up_next(&self) -> bool {
        let registry = self.registry();
        let Some(plugin) = registry
            .list()
            .filter(|p| self.shows_some_agent(p))
            .filter(|p| !p.compiled_ahead(&self.runtime) && !p.warm_up_failed())
            .min_by_key(|p| (!p.loaded_quick(&self.runtime), p.wasm_len()))
        else {
            return false;
        };
        self.runtime.wait_for_foreground_compiles();
        if let Err(err) = plugin.compile_ahead(&self.runtime) {
            tracing::debug!(%err, tool = plugin.name(), "cannot compile ahead of use");
        }
        true
    }

    /// Let go of every loaded tool's component (its compiled code stays in
    /// the compile cache; calls in progress keep theirs) and give the
    /// memory freed back to the system. The next call of a tool loads it
    /// again. Returns how many were let go.
    pub fn unload_idle(&self) -> usize {
        // Every plugin, not only those visible to no agent in particular.
        let n = self
            .snapshot()
            .list()
            .filter(|p| p.unload(&self.runtime))
            .count();
        self.runtime.forget_linked_held();
        self.runtime.spares.let_go();
        crate::runtime::release_freed_memory();
        n
    }

    /// A count that changes whenever a call starts, and whether none is
    /// running: two equal readings some time apart, each with none running,
    /// mean nothing ran between.
    pub fn activity(&self) -> (u64, bool) {
        self.runtime.activity()
    }

    /// Load the approved tools of the dynamic-tool `store` on every
    /// [`Executor::reload_plugins`] (call it once after building), and give
    /// `create_tool` the store as its `dynamic` directory.
    pub fn with_dynamic_store(mut self, store: Store) -> Self {
        self = self.with_state_dir(STORE_DIR_NAME, store.dir());
        self.catalog.dynamic_store = Some(store);
        self
    }

    /// Let `load_component` fetch `oci://` components through
    /// `registries` (the person's credentials, lock and signature keys).
    pub fn with_registries(mut self, registries: crate::dynamic::Registries) -> Self {
        self.catalog.registries = Some(registries);
        self
    }

    /// Where `load_component` fetches `oci://` components from, if set.
    pub fn registries(&self) -> Option<&crate::dynamic::Registries> {
        self.catalog.registries.as_ref()
    }

    /// The dynamic-tool store, if one is set.
    pub fn dynamic_store(&self) -> Option<&Store> {
        self.catalog.dynamic_store.as_ref()
    }

    /// The plugin directories given to [`Executor::with_plugin_dirs`].
    pub fn plugin_dirs(&self) -> &[PathBuf] {
        &self.catalog.plugin_dirs
    }

    /// A receiver that sees a new value each time the visible tools change.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.catalog.changes.subscribe()
    }

    /// The tool `name` if the active profile shows it (and, for a tool an
    /// agent created for one agent only, `agent` is that agent); the error
    /// lists near names.
    pub fn lookup_as(&self, agent: Option<&str>, name: &str) -> Result<Arc<Plugin>, RegistryError> {
        self.remote_first_use();
        self.lookup_in(&self.registry(), agent, name)
    }

    /// [`Executor::lookup_as`] with no agent.
    pub fn lookup(&self, name: &str) -> Result<Arc<Plugin>, RegistryError> {
        self.lookup_as(None, name)
    }

    pub(super) fn lookup_in(
        &self,
        registry: &Registry,
        agent: Option<&str>,
        name: &str,
    ) -> Result<Arc<Plugin>, RegistryError> {
        match registry.get(name) {
            Ok(plugin) if self.shows(plugin, agent) => Ok(Arc::clone(plugin)),
            _ => Err(RegistryError::NotFound {
                name: name.to_owned(),
                near: registry
                    .near(name)
                    .into_iter()
                    .filter(|n| registry.get(n).is_ok_and(|p| self.shows(p, agent)))
                    .collect(),
            }),
        }
    }

    /// Whether the active profile (if any) shows `tool`, and its scope
    /// includes `agent` (a dynamic tool made for one agent: that agent, or
    /// the profile of that name).
    pub(super) fn shows(&self, tool: &Plugin, agent: Option<&str>) -> bool {
        self.shows_some_agent(tool)
            && tool.dynamic().is_none_or(|d| {
                d.meta
                    .visible_to(agent, self.policy.profile.as_ref().map(|p| p.name.as_str()))
            })
    }

    /// Whether some agent may see `tool`: the active profile (if any) and
    /// the prompt mode show it and it works under this configuration,
    /// whatever its scope.
    fn shows_some_agent(&self, tool: &Plugin) -> bool {
        self.policy
            .profile
            .as_ref()
            .is_none_or(|p| p.shows(tool.name()))
            && self.prompt_mode.offers(tool.name())
            && self.unavailable_here(tool).is_none()
    }

    /// Why a built-in cannot work under this configuration, if it cannot:
    /// one that works through the embedder's services (message, spawn)
    /// where one it declares is not offered, or one that runs commands
    /// (run_command, process) where commands are disabled, or web_search
    /// without a configured provider. Such a tool is not shown: it could
    /// only refuse.
    pub(super) fn unavailable_here(&self, tool: &Plugin) -> Option<String> {
        use toolhost_shared::contract::{search, tool::WEB_SEARCH};
        if *tool.origin() != crate::plugin::Origin::Builtin {
            return None;
        }
        let configured = |name: &str, key: &str| {
            self.policy
                .tool_settings
                .get(name)
                .is_some_and(|s| s.contains_key(key))
        };
        if tool.name() == WEB_SEARCH && !configured(WEB_SEARCH, search::PROVIDER) {
            return Some(
                "`web_search` needs a search provider, and none is configured: add a \
                 [web_search] section (provider = \"brave\" or \"searxng\"; docs/configuration.md)"
                    .to_owned(),
            );
        }
        tool.info().capabilities.iter().find_map(|c| match c {
            crate::types::tool_info::Capability::Service(name)
                if !self.services.as_ref().is_some_and(|s| s.offers(name)) =>
            {
                Some(format!(
                    "`{}` works through the service `{name}`, which the application running toolhost does not offer",
                    tool.name()
                ))
            }
            crate::types::tool_info::Capability::Commands if !self.broker.config().enabled => {
                Some(format!(
                    "`{}` runs commands, and commands are disabled in this toolhost (--no-commands, or `[commands] enabled = false`)",
                    tool.name()
                ))
            }
            _ => None,
        })
    }

    /// The tools the active profile shows to `agent`, sorted by name.
    pub fn tools_for(&self, agent: Option<&str>) -> Vec<Arc<Plugin>> {
        self.remote_first_use();
        self.registry()
            .list()
            .filter(|p| self.shows(p, agent))
            .cloned()
            .collect()
    }

    /// The remote MCP tools that could not be offered when the servers'
    /// tools were last brought in, each with where and why (two names the
    /// same once normalised, a name too long): for `toolhost tools` and
    /// `config check` to say by name.
    pub fn remote_problems(&self) -> Vec<LoadProblem> {
        self.catalog
            .remote_problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// [`Executor::tools_for`] with no agent.
    pub fn tools(&self) -> Vec<Arc<Plugin>> {
        self.tools_for(None)
    }

    /// [`Executor::schemas_for`] with no agent.
    pub fn schemas<S: AsRef<str>>(
        &self,
        allowed: Option<&[S]>,
        format: SchemaFormat,
    ) -> Result<Vec<serde_json::Value>, RegistryError> {
        self.schemas_for(None, allowed, format)
    }

    /// Schemas in `format` for the tools `agent` sees named in `allowed`,
    /// or for every tool it sees; an unknown or hidden name is an error.
    pub fn schemas_for<S: AsRef<str>>(
        &self,
        agent: Option<&str>,
        allowed: Option<&[S]>,
        format: SchemaFormat,
    ) -> Result<Vec<serde_json::Value>, RegistryError> {
        let plugins = match allowed {
            Some(names) => names
                .iter()
                .map(|n| self.lookup_as(agent, n.as_ref()))
                .collect::<Result<Vec<_>, _>>()?,
            None => self.tools_for(agent),
        };
        Ok(plugins
            .iter()
            .map(|p| tool_schema(p.info(), self.effects(p), format))
            .collect())
    }
}

/// Without the MCP client there are no remote servers.
#[cfg(not(feature = "mcp"))]
impl Executor {
    /// Whether `tool` names a remote server's tool: never, without them.
    pub fn is_remote_tool(&self, _tool: &str) -> bool {
        false
    }
    pub(super) fn remote_first_use(&self) {}
    pub(super) fn unreachable_remote(&self, _tool: &str) -> Option<String> {
        None
    }
    pub(super) fn workspace_changed(&self) {}
    pub(super) fn remote_lock(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        None
    }
    pub(super) fn refresh_remote_tools(&self) {}
    pub(super) fn add_remote_tools(&self, _registry: &mut Registry) -> Vec<LoadProblem> {
        Vec::new()
    }
}
