//! The executor: the pipeline every call goes through, from any front end.
//!
//! 1. `lookup_step`: the tool in the [`Registry`] (only the tools the active
//!    [`Profile`] shows);
//! 2. `validate`: the arguments against the tool's JSON Schema (compiled
//!    once per tool);
//! 3. `confirm`: per [`Mode`] and the tool's [`Sensitivity`], asked of a
//!    [`Confirmer`] (commands a tool runs are confirmed one by one by the
//!    [`Broker`], by class);
//! 4. `dry_run`: describe, run nothing (a tool that runs commands is called
//!    with a read-only workspace, and the broker describes each command);
//! 5. `run`: in the sandbox under the tool's effective grant;
//! 6. `post_edit_hooks`: for the files the call changed;
//! 7. `record`: structured log (tracing) and an audit record;
//! 8. `result`: the [`ToolResult`].
//!
//! The steps are in executor/pipeline.rs; this file holds the executor's
//! configuration and the rules steps share (grants, sensitivity, settings).
//!
//! Nothing escapes as a panic or an `Err`: an internal failure anywhere is a
//! `failed` result.

pub mod audit;
mod catalog;
mod history;
pub mod hooks;
mod metrics;
mod service_tools;
pub use history::Exchange;
pub(crate) mod persona;
mod pipeline;
#[cfg(feature = "mcp")]
mod remote;
mod state_dirs;
mod upkeep;
mod workspace;

use crate::types::confirm::{Confirmer, Mode, NoConfirmer};
use catalog::Catalog;
pub use metrics::Serving;

pub use state_dirs::UnknownStateDir;
pub use upkeep::Upkeep;

use crate::broker::{Broker, BrokerError, CommandConfig};
use crate::executor::audit::AuditLog;
use crate::executor::hooks::{HookError, Hooks, PostEditHook};
use crate::plugin::{Origin, Plugin};
use crate::registry::{Registry, RegistryError};
use crate::runtime::Runtime;
use crate::types::context::{CallContext, CancelToken};
use crate::types::grant::{Access, DirGrant, Effective, Grant};
use crate::types::sensitivity::Sensitivity;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

/// Per-call options.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Who calls, and whether this is a dry run.
    pub context: CallContext,
    /// Overrides the default timeout.
    pub timeout: Option<Duration>,
    /// Cancels the call.
    pub cancel: Option<CancelToken>,
    /// Who confirms this call and its commands, instead of the executor's
    /// confirmer (e.g. the MCP client that sent it, through elicitation).
    pub confirmer: Option<Arc<dyn Confirmer>>,
    /// Where the call reports how it is going (a command's latest output
    /// line, fan-out shares done), for a caller that shows progress.
    pub progress: Option<crate::types::context::Progress>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("context", &self.context)
            .field("timeout", &self.timeout)
            .field("cancel", &self.cancel)
            .field("confirmer", &self.confirmer.as_ref().map(|_| "custom"))
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// A named set of visible tools (the configuration's `[profiles.NAME]`;
/// its mode and grants are applied with [`Executor::with_mode`] and
/// [`Executor::with_grant`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// The profile's name, for messages.
    pub name: String,
    /// Only these tools, if set.
    pub tools: Option<Vec<String>>,
    /// Never these tools.
    pub disabled: Vec<String>,
}

impl Profile {
    fn shows(&self, tool: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool))
            && !self.disabled.iter().any(|t| t == tool)
    }
}

/// Runs calls through the pipeline. `Send + Sync`; calls may run concurrently.
pub struct Executor {
    runtime: Arc<Runtime>,
    /// The workspace: set at start, or from a client's roots, which may
    /// replace it later (each call uses the one set when it started).
    workspace: Arc<RwLock<Option<Arc<Path>>>>,
    /// Why no workspace is set, when one was refused (a root that cannot
    /// be granted): what calls needing one are told.
    workspace_problem: Mutex<Option<String>>,
    broker: Arc<Broker>,
    /// Host directories for built-ins' named directories (`todo`, `memory`),
    /// each set once it has been created.
    state_dirs: HashMap<String, (PathBuf, OnceLock<()>)>,
    /// The guidance's mode and the group texts the configuration replaced.
    prompt_mode: crate::guidance::PromptMode,
    group_texts: std::collections::BTreeMap<String, String>,
    /// The embedder's services (`None`: none offered).
    services: Option<Arc<crate::services::Services>>,
    /// Secrets people stored for tools (`None`: none are read).
    secrets: Option<crate::secrets::Secrets>,
    /// What tools there are, and where they are loaded from.
    catalog: Catalog,
    /// How each call is decided and recorded.
    policy: CallPolicy,
}

/// How a call is decided and recorded: the mode, grants and settings, who
/// is asked, the hooks and the audit log, the profile, and "abort all".
struct CallPolicy {
    mode: Mode,
    grants: HashMap<String, Grant>,
    /// Settings every tool receives (e.g. `allow_delete`).
    global_settings: serde_json::Map<String, serde_json::Value>,
    /// Settings for one tool, over the global ones.
    tool_settings: HashMap<String, serde_json::Map<String, serde_json::Value>>,
    confirmer: Arc<dyn Confirmer>,
    /// "Abort all", by the session that chose it (calls with no session,
    /// a CLI's, share the empty name): only that session's later calls
    /// and commands are refused.
    aborted: Mutex<HashMap<Arc<str>, Arc<AtomicBool>>>,
    profile: Option<Profile>,
    hooks: Hooks,
    audit: Option<Arc<AuditLog>>,
    /// Why background commands are refused here, if they are (a process
    /// that exits after one call, like `toolhost call`).
    background_refused: Option<Arc<str>>,
    /// The process ends with its one call: cut outputs are not kept.
    one_call: bool,
    /// Every finished call, counted for `/metrics`.
    metrics: metrics::CallMetrics,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("tools", &self.registry().count())
            .field("workspace", &self.workspace)
            .field("mode", &self.policy.mode)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor over `registry` with no workspace, `confirm-sensitive`
    /// mode, default grants (built-ins: what they declare; others: nothing),
    /// the default command policy and nobody to confirm.
    pub fn new(runtime: Arc<Runtime>, registry: Registry) -> Self {
        let broker = Broker::new(CommandConfig::default())
            .expect("the default command configuration has no patterns to reject");
        Self {
            runtime,
            workspace: Arc::new(RwLock::new(None)),
            workspace_problem: Mutex::new(None),
            prompt_mode: crate::guidance::PromptMode::default(),
            group_texts: std::collections::BTreeMap::new(),
            broker: Arc::new(broker),
            state_dirs: HashMap::new(),
            services: None,
            secrets: None,
            catalog: Catalog {
                registry: RwLock::new(Arc::new(registry)),
                plugin_dirs: Vec::new(),
                dynamic_store: None,
                registries: None,
                deferred: Mutex::new(Vec::new()),
                descriptions: HashMap::new(),
                changes: Arc::new(tokio::sync::watch::Sender::new(0)),
                #[cfg(feature = "mcp")]
                remote: None,
                #[cfg(feature = "mcp")]
                remote_seen: std::sync::atomic::AtomicU64::new(0),
                #[cfg(feature = "mcp")]
                remote_refresh: Mutex::new(()),
                remote_problems: Mutex::new(Vec::new()),
            },
            policy: CallPolicy {
                background_refused: None,
                one_call: false,
                mode: Mode::default(),
                grants: HashMap::new(),
                global_settings: serde_json::Map::new(),
                tool_settings: HashMap::new(),
                confirmer: Arc::new(NoConfirmer),
                aborted: Mutex::new(HashMap::new()),
                profile: None,
                hooks: Hooks::default(),
                audit: None,
                metrics: metrics::CallMetrics::default(),
            },
        }
    }

    /// Give tools the secrets stored in `secrets` for the variables they
    /// declare and are granted ([`crate::secrets`]).
    pub fn with_secrets(mut self, secrets: crate::secrets::Secrets) -> Self {
        self.secrets = Some(secrets);
        self
    }

    /// Offer the embedder's `services` to the tools granted them
    /// (`service:NAME`, or everything a built-in declares).
    pub fn with_services(mut self, services: crate::services::Services) -> Self {
        self.services = (!services.is_empty()).then(|| Arc::new(services));
        self
    }

    /// The embedder's services, if any are offered.
    pub fn services(&self) -> Option<&crate::services::Services> {
        self.services.as_deref()
    }

    /// Show only the tools `profile` allows; the error names a tool it
    /// lists that does not exist.
    pub fn with_profile(mut self, profile: Profile) -> Result<Self, RegistryError> {
        let named = profile.tools.iter().flatten().chain(&profile.disabled);
        let registry = self.registry();
        for tool in named.filter(|t| !self.is_remote_tool(t)) {
            registry.get(tool)?;
        }
        self.policy.profile = Some(profile);
        Ok(self)
    }

    /// The active profile, if any.
    pub fn profile(&self) -> Option<&Profile> {
        self.policy.profile.as_ref()
    }

    /// Run `hooks` after calls that change files; the error names a hook
    /// with a bad pattern or timeout. Call it after
    /// [`Executor::with_commands`]: hook timeouts are checked against the
    /// broker's `max_timeout`.
    pub fn with_hooks(mut self, hooks: Vec<PostEditHook>) -> Result<Self, HookError> {
        self.policy.hooks = Hooks::new(hooks, self.broker.config().max_timeout)?;
        Ok(self)
    }

    /// Append one JSON line per call to `log`.
    pub fn with_audit(mut self, log: AuditLog) -> Self {
        self.policy.audit = Some(Arc::new(log));
        self
    }

    /// Put a decision about a dynamic tool in the audit log, when one is
    /// kept (it is kept beside the tool as well: `Store::history`).
    pub fn record_decision(&self, decision: &crate::dynamic::Decision) {
        self.audit(decision);
    }

    /// Put another record in the audit log, when one is kept (the end of
    /// an agent run).
    pub(crate) fn audit(&self, record: &impl serde::Serialize) {
        if let Some(audit) = &self.policy.audit {
            audit.write(record);
        }
    }

    /// The audit log's file, when one is kept.
    pub fn audit_path(&self) -> Option<&Path> {
        self.policy.audit.as_deref().map(AuditLog::path)
    }

    /// Set how commands run (policy, timeouts, confinement); the error
    /// names a bad allow or deny pattern.
    pub fn with_commands(mut self, config: CommandConfig) -> Result<Self, BrokerError> {
        let rules = Arc::clone(self.broker.path_rules());
        self.broker = Arc::new(Broker::new(config)?.with_path_rules(rules));
        Ok(self)
    }

    /// Use these secret and protected paths (the defaults changed by
    /// `config`) for every tool and every command.
    pub fn with_path_rules(
        mut self,
        config: &crate::types::paths::PathRulesConfig,
    ) -> Result<Self, crate::types::paths::PathPatternError> {
        let rules = crate::types::paths::PathRules::shared(config)?;
        let commands = self.broker.config().clone();
        self.broker = Arc::new(
            Broker::new(commands)
                .expect("a broker's own configuration builds it again")
                .with_path_rules(rules),
        );
        Ok(self)
    }

    /// The command broker.
    pub fn broker(&self) -> &Broker {
        &self.broker
    }

    /// Refuse background commands, saying `why` (e.g. this process exits
    /// after one call, which would kill them at once).
    pub fn refuse_background(&mut self, why: impl Into<String>) {
        self.policy.background_refused = Some(Arc::from(why.into()));
    }

    /// This process makes one call and ends (`toolhost call`): a command's
    /// cut output is not kept, since no later call could read it, and the
    /// result says so.
    pub fn ends_after_one_call(&mut self) {
        self.policy.one_call = true;
    }

    /// A client (an MCP session, named as in [`CallContext::session`]) is
    /// gone: kill the background commands it started and forget its kept
    /// outputs. Returns how many of its commands were still running.
    ///
    /// [`CallContext::session`]: crate::CallContext::session
    pub fn end_session(&self, session: &str) -> usize {
        self.policy
            .aborted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session);
        self.broker.end_session(session)
    }

    /// How many commands so far entered a view made ahead of them (where
    /// the host may make mount namespaces itself, a thread of idle
    /// priority builds the next command's file system view before it
    /// comes): a diagnostic for benchmarks and tests.
    pub fn commands_in_views_made_ahead(&self) -> u64 {
        self.broker.views_made_ahead()
    }

    /// The full outputs of cut commands that `session` still keeps (what
    /// `process {action: "output"}` reads): ids and sizes in bytes, oldest
    /// first. Only that session's own.
    pub fn kept_outputs(&self, session: &str) -> Vec<(String, usize)> {
        self.broker.kept_outputs(session)
    }

    /// The full output `session` keeps under `id` (`out-N`).
    pub fn kept_output(&self, session: &str, id: &str) -> Option<String> {
        self.broker.kept_output(session, id)
    }

    /// Set the guidance's prompt mode and the group texts that replace the
    /// built-in ones (group name → text).
    pub fn with_guidance(
        mut self,
        mode: crate::guidance::PromptMode,
        group_texts: std::collections::BTreeMap<String, String>,
    ) -> Self {
        self.prompt_mode = mode;
        self.group_texts = group_texts;
        self
    }

    /// The guidance for the model about the tools `agent` sees
    /// ([`crate::guidance::instructions`]).
    pub fn instructions(&self, agent: Option<&str>) -> String {
        let tools = self.tools_for(agent);
        let names: Vec<&str> = tools.iter().map(|p| p.name()).collect();
        self.instructions_in(&names, self.prompt_mode)
    }

    /// The guidance about the tools `names` in `mode`, with the
    /// configured group texts.
    pub fn instructions_in(&self, names: &[&str], mode: crate::guidance::PromptMode) -> String {
        crate::guidance::instructions(names, mode, &self.group_texts)
    }

    /// The prompt mode of this executor's guidance and tools.
    pub fn prompt_mode(&self) -> crate::guidance::PromptMode {
        self.prompt_mode
    }

    /// Set the confirmation mode.
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.policy.mode = mode;
        self
    }

    /// Replace the grant of one tool (a built-in's default is everything it
    /// declares; any other plugin's default is nothing).
    pub fn with_grant(mut self, tool: impl Into<String>, grant: Grant) -> Self {
        self.policy.grants.insert(tool.into(), grant);
        self
    }

    /// Give every tool the setting `key` (in its call context's settings),
    /// e.g. `allow_delete`, which delete_file and apply_patch obey.
    pub fn with_setting(
        mut self,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        self.policy.global_settings.insert(key.into(), value.into());
        self
    }

    /// Add settings for one tool, over the global ones (the configuration's
    /// `[tools.NAME]` section).
    pub fn with_tool_settings(
        mut self,
        tool: impl Into<String>,
        settings: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        self.policy
            .tool_settings
            .entry(tool.into())
            .or_default()
            .extend(settings);
        self
    }

    /// The settings `tool` receives, as JSON object text: the global ones,
    /// its configured ones, and (for a dynamic tool) its script or template.
    /// Made on the tool's first call and kept with it (a registry, and so
    /// its plugins, belongs to one executor).
    fn settings_for(&self, tool: &Plugin) -> Arc<str> {
        tool.settings_text(|| self.merge_settings(tool))
    }

    fn merge_settings(&self, tool: &Plugin) -> String {
        let mut merged = self.policy.global_settings.clone();
        if let Some(own) = self.policy.tool_settings.get(tool.name()) {
            merged.extend(own.clone());
        }
        if let Some(binding) = tool.dynamic() {
            merged.extend(binding.settings.clone());
        }
        serde_json::Value::Object(merged).to_string()
    }

    /// Who confirms calls when a call names nobody else.
    pub(crate) fn confirmer(&self) -> Arc<dyn Confirmer> {
        Arc::clone(&self.policy.confirmer)
    }

    /// Set who confirms sensitive calls.
    pub fn with_confirmer(mut self, confirmer: Box<dyn Confirmer>) -> Self {
        self.policy.confirmer = Arc::from(confirmer);
        self
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// End this executor in a process that exits next (`toolhost call`).
    /// Everything with effects outside the process ends here as it would
    /// when dropped: the broker (commands' processes, temporary files,
    /// cgroups and views), the audit log, hooks, remote MCP servers. The
    /// runtime and the loaded tools, which hold only memory and mappings,
    /// are left for the exit to free at once: unmapping and freeing them
    /// piece by piece took a tenth of a one-shot call (with an idle
    /// epoch thread to keep in step on every unmap). With remote servers
    /// configured everything is dropped, since their tools hold them.
    /// The views and cgroups of the commands that ran are torn down on a
    /// thread of their own; this waits for it (at most 5 s).
    pub fn end_at_exit(self) {
        #[cfg(feature = "mcp")]
        let remote = self.catalog.remote.is_some();
        #[cfg(not(feature = "mcp"))]
        let remote = false;
        if !remote {
            std::mem::forget(self.snapshot());
            std::mem::forget(Arc::clone(&self.runtime));
        }
        drop(self);
        if !crate::broker::settle_cleanup(Duration::from_secs(5)) {
            tracing::warn!("commands' views or cgroups were still being removed at exit");
        }
    }

    /// True once a person answered "abort everything" to a call with no
    /// session (the CLI's).
    pub fn aborted(&self) -> bool {
        self.aborted_in(None)
    }

    /// True once a person answered "abort everything" to a call of
    /// `session` (`None`: calls with no session).
    pub fn aborted_in(&self, session: Option<&str>) -> bool {
        self.policy
            .aborted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session.unwrap_or(""))
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }

    /// The "abort all" flag of `session`, made on first use.
    pub(crate) fn abort_flag(&self, session: Option<&str>) -> Arc<AtomicBool> {
        let mut flags = self
            .policy
            .aborted
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = session.unwrap_or("");
        if let Some(flag) = flags.get(key) {
            return Arc::clone(flag);
        }
        let flag = Arc::new(AtomicBool::new(false));
        flags.insert(Arc::from(key), Arc::clone(&flag));
        flag
    }

    /// What `tool` really gets: its declaration intersected with its grant.
    /// A built-in with its default grant gets the executor's state
    /// directories it declares ([`Executor::with_state_dir`]).
    pub fn effective_grant(&self, plugin: &Plugin) -> Effective {
        // A tool an agent created gets what a person approved, nothing else.
        let mut grant = match (plugin.dynamic(), self.policy.grants.get(plugin.name())) {
            (Some(binding), _) => binding.grant.clone(),
            (None, Some(grant)) => grant.clone(),
            (None, None) if *plugin.origin() == Origin::Builtin => Grant::all(),
            (None, None) => Grant::none(),
        };
        // A `dir:` item this executor has no directory for grants nothing.
        let _ = self.resolve_state_dirs(&mut grant);
        if grant.all_declared {
            for (name, (path, _)) in &self.state_dirs {
                if !grant.directories.iter().any(|d| &d.name == name) {
                    grant.directories.push(DirGrant {
                        name: name.clone(),
                        host_path: path.clone(),
                        access: Access::Write,
                    });
                }
            }
        }
        let mut effective = grant.effective(&plugin.info().capabilities);
        // A built-in is the host's own code: the configuration that grants
        // it a variable (web_search's key) names it for it.
        if *plugin.origin() == Origin::Builtin {
            effective.env.clone_from(&grant.env);
        }
        effective
    }

    /// What calls of `plugin` can change, with the grant it gets here: the
    /// one rule behind listings, `describe`, the dry run, MCP annotations
    /// and step 3's confirmation.
    pub fn sensitivity(&self, plugin: &Plugin) -> Sensitivity {
        self.sensitivity_with(plugin, &self.effective_grant(plugin))
    }

    /// What calls of `plugin` can change and reach, with the grant it gets
    /// here: the source of the MCP annotations.
    pub fn effects(&self, plugin: &Plugin) -> crate::schema::Effects {
        let grant = self.effective_grant(plugin);
        crate::schema::Effects {
            sensitivity: self.sensitivity_with(plugin, &grant),
            open_world: !grant.network.is_empty()
                || grant.command_network
                || plugin
                    .info()
                    .capabilities
                    .iter()
                    .any(|c| matches!(c, crate::types::tool_info::Capability::Network(_))),
        }
    }

    fn sensitivity_with(&self, plugin: &Plugin, grant: &Effective) -> Sensitivity {
        Sensitivity::of(plugin.info().sensitive, grant, |p| self.is_state_dir(p))
    }
}
