//! The executor: the pipeline every call goes through, from any front end.
//!
//! 1. lookup in the [`Registry`] (only the tools the active [`Profile`] shows);
//! 2. validate the arguments against the tool's JSON Schema (compiled once
//!    per tool);
//! 3. confirmation per [`Mode`] and the tool's sensitivity, asked of a [`Confirmer`]
//!    (commands a tool runs are confirmed one by one by the [`Broker`], by class);
//! 4. dry run: describe, run nothing (a tool that runs commands is called with
//!    a read-only workspace, and the broker describes each command instead);
//! 5. run in the sandbox under the tool's effective grant;
//! 6. post-edit hooks for the files the call changed;
//! 7. structured log (tracing) and an audit record;
//! 8. return a [`ToolResult`].
//!
//! Nothing escapes as a panic or an `Err`: an internal failure anywhere is a
//! `failed` result.

use crate::audit::{AuditLog, AuditRecord};
use crate::broker::{Broker, BrokerCall, CommandConfig, CommandRecord};
use crate::grant::{Access, Effective, Grant};
use crate::hooks::{HookRecord, Hooks, PostEditHook};
use crate::names::ParseError;
use crate::plugin::{Origin, Plugin};
use crate::registry::{LoadProblem, Registry, RegistryError};
use crate::result::{CallError, ErrorKind, ToolResult};
use crate::runtime::{Runtime, RuntimeError};
use crate::sandbox::{CallContext, CallRequest, CancelToken};
use crate::schema::{SchemaFormat, schemas_of, tool_schema};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// When calls need a person's confirmation.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// No tool call asks; only `dangerous` commands do.
    Yolo,
    /// Sensitive tools (those that write) ask first, and so do `dev` and
    /// `dangerous` commands.
    #[default]
    ConfirmSensitive,
    /// Every call and every command asks first.
    ConfirmAll,
}

impl Mode {
    /// The name used by `--mode` and the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Yolo => "yolo",
            Self::ConfirmSensitive => "confirm-sensitive",
            Self::ConfirmAll => "confirm-all",
        }
    }

    /// Whether a call of a tool with this sensitivity needs confirmation.
    pub fn needs_confirmation(self, sensitive: bool) -> bool {
        match self {
            Self::Yolo => false,
            Self::ConfirmSensitive => sensitive,
            Self::ConfirmAll => true,
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "yolo" => Ok(Self::Yolo),
            "confirm-sensitive" => Ok(Self::ConfirmSensitive),
            "confirm-all" => Ok(Self::ConfirmAll),
            _ => Err(ParseError::new(
                "mode",
                s,
                "yolo, confirm-sensitive or confirm-all",
            )),
        }
    }
}

/// What a [`Confirmer`] is asked to approve.
#[derive(Debug, Clone, Copy)]
pub struct ConfirmRequest<'a> {
    /// The tool.
    pub tool: &'a str,
    /// Its arguments.
    pub args: &'a serde_json::Value,
    /// Why confirmation is needed (e.g. "write_file is sensitive").
    pub reason: &'a str,
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Do not run this call.
    Deny,
    /// Do not run this call or any later one.
    AbortAll,
    /// Nobody can be asked (no TTY, no client support).
    Unavailable,
}

/// Asks a person to approve a call. Front ends supply their own (a TTY
/// prompt, MCP elicitation); the default, [`NoConfirmer`], can ask no one.
pub trait Confirmer: Send + Sync {
    /// Ask; must not panic.
    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision;
}

/// A confirmer with nobody to ask: every confirmation is unavailable.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoConfirmer;

impl Confirmer for NoConfirmer {
    fn confirm(&self, _request: &ConfirmRequest<'_>) -> Decision {
        Decision::Unavailable
    }
}

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
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("context", &self.context)
            .field("timeout", &self.timeout)
            .field("cancel", &self.cancel)
            .field("confirmer", &self.confirmer.as_ref().map(|_| "custom"))
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

/// What one call did besides its result, for the audit record.
#[derive(Debug, Default)]
struct Trace {
    args: Option<serde_json::Value>,
    capabilities: Vec<String>,
    commands: Arc<Mutex<Vec<CommandRecord>>>,
    hooks: Vec<HookRecord>,
}

/// Runs calls through the pipeline. `Send + Sync`; calls may run concurrently.
pub struct Executor {
    runtime: Arc<Runtime>,
    /// Swapped whole when plugins are reloaded; a call keeps the snapshot
    /// it started with.
    registry: RwLock<Arc<Registry>>,
    /// Where third-party plugins are loaded from (again on reload).
    plugin_dirs: Vec<PathBuf>,
    /// Description overrides, applied again to a reloaded registry.
    descriptions: HashMap<String, String>,
    /// Bumped each time the visible tool set changes.
    changes: tokio::sync::watch::Sender<u64>,
    /// Set at build time, or once later (e.g. from an MCP client's roots).
    workspace: OnceLock<PathBuf>,
    mode: Mode,
    grants: HashMap<String, Grant>,
    /// Settings every tool receives (e.g. `allow_delete`).
    global_settings: serde_json::Map<String, serde_json::Value>,
    /// Settings for one tool, over the global ones.
    tool_settings: HashMap<String, serde_json::Map<String, serde_json::Value>>,
    confirmer: Arc<dyn Confirmer>,
    broker: Arc<Broker>,
    aborted: Arc<AtomicBool>,
    profile: Option<Profile>,
    hooks: Hooks,
    audit: Option<Arc<AuditLog>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("tools", &self.registry().count())
            .field("workspace", &self.workspace)
            .field("mode", &self.mode)
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
            registry: RwLock::new(Arc::new(registry)),
            plugin_dirs: Vec::new(),
            descriptions: HashMap::new(),
            changes: tokio::sync::watch::Sender::new(0),
            workspace: OnceLock::new(),
            mode: Mode::default(),
            grants: HashMap::new(),
            global_settings: serde_json::Map::new(),
            tool_settings: HashMap::new(),
            confirmer: Arc::new(NoConfirmer),
            broker: Arc::new(broker),
            aborted: Arc::new(AtomicBool::new(false)),
            profile: None,
            hooks: Hooks::default(),
            audit: None,
        }
    }

    /// Show only the tools `profile` allows; the error names a tool it
    /// lists that does not exist.
    pub fn with_profile(mut self, profile: Profile) -> Result<Self, RegistryError> {
        let named = profile.tools.iter().flatten().chain(&profile.disabled);
        let registry = self.registry();
        for tool in named {
            registry.get(tool)?;
        }
        self.profile = Some(profile);
        Ok(self)
    }

    /// The active profile, if any.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }

    /// Run `hooks` after calls that change files; the error names a hook
    /// with a bad pattern.
    pub fn with_hooks(mut self, hooks: Vec<PostEditHook>) -> Result<Self, String> {
        self.hooks = Hooks::new(hooks)?;
        Ok(self)
    }

    /// Append one JSON line per call to `log`.
    pub fn with_audit(mut self, log: AuditLog) -> Self {
        self.audit = Some(Arc::new(log));
        self
    }

    /// Replace the description `tool` shows (a prompt override).
    pub fn with_description(
        mut self,
        tool: &str,
        description: impl Into<String>,
    ) -> Result<Self, RegistryError> {
        let description = description.into();
        let registry = self
            .registry
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        match Arc::get_mut(registry) {
            Some(registry) => registry.set_description(tool, description.clone())?,
            None => {
                return Err(RegistryError::InUse {
                    name: tool.to_owned(),
                });
            }
        }
        self.descriptions.insert(tool.to_owned(), description);
        Ok(self)
    }

    /// Remember the third-party plugin directories, so
    /// [`Executor::reload_plugins`] loads them again.
    pub fn with_plugin_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.plugin_dirs = dirs;
        self
    }

    /// A snapshot of the registered tools (a reload replaces it; calls
    /// already running keep theirs).
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Replace the registered tools (the configured descriptions are applied
    /// to it). Returns true, and notifies [`Executor::changes`], when what
    /// callers can see changed: names, descriptions, schemas or versions.
    pub fn replace_registry(&self, mut registry: Registry) -> bool {
        for (tool, text) in &self.descriptions {
            // A tool that went away keeps no override; nothing to do.
            let _ = registry.set_description(tool, text.clone());
        }
        let visible = |r: &Registry| -> Vec<serde_json::Value> {
            r.list()
                .filter(|p| self.shows(p.name()))
                .map(|p| tool_schema(p.info(), SchemaFormat::Mcp))
                .collect()
        };
        let mut slot = self
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let changed = visible(&slot) != visible(&registry);
        *slot = Arc::new(registry);
        drop(slot);
        if changed {
            self.changes.send_modify(|n| *n += 1);
        }
        changed
    }

    /// Load the built-ins and the plugin directories again and swap them in
    /// (see [`Executor::replace_registry`]). Returns whether the visible
    /// tools changed and the files that were skipped.
    pub fn reload_plugins(&self) -> Result<(bool, Vec<LoadProblem>), RuntimeError> {
        let mut registry = Registry::new();
        registry.load_builtins(&self.runtime)?;
        let mut problems = Vec::new();
        for dir in &self.plugin_dirs {
            problems.extend(registry.load_dir(&self.runtime, dir));
        }
        Ok((self.replace_registry(registry), problems))
    }

    /// The plugin directories given to [`Executor::with_plugin_dirs`].
    pub fn plugin_dirs(&self) -> &[PathBuf] {
        &self.plugin_dirs
    }

    /// A receiver that sees a new value each time the visible tools change.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The tool `name` if the active profile shows it; the error lists
    /// near names.
    pub fn lookup(&self, name: &str) -> Result<Arc<Plugin>, RegistryError> {
        self.lookup_in(&self.registry(), name)
    }

    fn lookup_in(&self, registry: &Registry, name: &str) -> Result<Arc<Plugin>, RegistryError> {
        match registry.get(name) {
            Ok(plugin) if self.shows(name) => Ok(Arc::clone(plugin)),
            _ => Err(RegistryError::NotFound {
                name: name.to_owned(),
                near: registry
                    .near(name)
                    .into_iter()
                    .filter(|n| self.shows(n))
                    .collect(),
            }),
        }
    }

    /// Whether the active profile (if any) shows `tool`.
    fn shows(&self, tool: &str) -> bool {
        self.profile.as_ref().is_none_or(|p| p.shows(tool))
    }

    /// The tools the active profile shows, sorted by name.
    pub fn tools(&self) -> Vec<Arc<Plugin>> {
        self.registry()
            .list()
            .filter(|p| self.shows(p.name()))
            .cloned()
            .collect()
    }

    /// Schemas in `format` for the visible tools named in `allowed`, or for
    /// every visible tool; an unknown or hidden name is an error.
    pub fn schemas<S: AsRef<str>>(
        &self,
        allowed: Option<&[S]>,
        format: SchemaFormat,
    ) -> Result<Vec<serde_json::Value>, RegistryError> {
        let plugins = match allowed {
            Some(names) => names
                .iter()
                .map(|n| self.lookup(n.as_ref()))
                .collect::<Result<Vec<_>, _>>()?,
            None => self.tools(),
        };
        Ok(schemas_of(&plugins, format))
    }

    /// Set how commands run (policy, timeouts, confinement); the error
    /// names a bad allow or deny pattern.
    pub fn with_commands(mut self, config: CommandConfig) -> Result<Self, String> {
        self.broker = Arc::new(Broker::new(config)?);
        Ok(self)
    }

    /// The command broker.
    pub fn broker(&self) -> &Broker {
        &self.broker
    }

    /// Set the workspace directory (it must exist; it is canonicalised).
    pub fn with_workspace(mut self, dir: &Path) -> std::io::Result<Self> {
        self.workspace = OnceLock::from(checked_dir(dir)?);
        Ok(self)
    }

    /// Set the workspace if none is set yet (e.g. from an MCP client's
    /// first root). Returns false, changing nothing, when one was set.
    pub fn set_workspace_if_unset(&self, dir: &Path) -> std::io::Result<bool> {
        let dir = checked_dir(dir)?;
        Ok(self.workspace.set(dir).is_ok())
    }

    /// Set the confirmation mode.
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Replace the grant of one tool (a built-in's default is everything it
    /// declares; any other plugin's default is nothing).
    pub fn with_grant(mut self, tool: impl Into<String>, grant: Grant) -> Self {
        self.grants.insert(tool.into(), grant);
        self
    }

    /// Give every tool the setting `key` (in its call context's settings),
    /// e.g. `allow_delete`, which delete_file and apply_patch obey.
    pub fn with_setting(
        mut self,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        self.global_settings.insert(key.into(), value.into());
        self
    }

    /// Add settings for one tool, over the global ones (the configuration's
    /// `[tools.NAME]` section).
    pub fn with_tool_settings(
        mut self,
        tool: impl Into<String>,
        settings: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        self.tool_settings
            .entry(tool.into())
            .or_default()
            .extend(settings);
        self
    }

    /// The settings `tool` receives, as JSON object text.
    fn settings_for(&self, tool: &str) -> String {
        let mut merged = self.global_settings.clone();
        if let Some(own) = self.tool_settings.get(tool) {
            merged.extend(own.clone());
        }
        serde_json::Value::Object(merged).to_string()
    }

    /// Set who confirms sensitive calls.
    pub fn with_confirmer(mut self, confirmer: Box<dyn Confirmer>) -> Self {
        self.confirmer = Arc::from(confirmer);
        self
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The workspace, if set.
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.get().map(PathBuf::as_path)
    }

    /// True once a person answered "abort everything".
    pub fn aborted(&self) -> bool {
        self.aborted.load(Ordering::Relaxed)
    }

    /// What `tool` really gets: its declaration intersected with its grant.
    pub fn effective_grant(&self, plugin: &Plugin) -> Effective {
        let grant = match (self.grants.get(plugin.name()), plugin.origin()) {
            (Some(grant), _) => grant.clone(),
            (None, Origin::Builtin) => Grant::all(),
            (None, Origin::File(_)) => Grant::none(),
        };
        grant.effective(&plugin.info().capabilities)
    }

    /// Run one call through the whole pipeline. Never panics.
    pub fn call(&self, tool: &str, args: &str, options: &CallOptions) -> ToolResult {
        let started = Instant::now();
        let mut trace = Trace::default();
        let mut result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.pipeline(tool, args, options, &mut trace)
        }))
        .unwrap_or_else(|_| {
            ToolResult::failure(
                tool,
                CallError::new(
                    ErrorKind::Failed,
                    "internal error in the host while running this call",
                )
                .with_hint("this is a toolhost bug; the next call is not affected"),
            )
        });
        result.duration = started.elapsed();
        let outcome = result.error_kind().map_or("success", ErrorKind::as_str);
        tracing::info!(
            tool,
            call = %options.context.call_id,
            agent = options.context.agent.as_deref().unwrap_or(""),
            outcome,
            duration_ms = result.duration.as_secs_f64() * 1e3,
            "call finished"
        );
        if let Some(audit) = &self.audit {
            let context = &options.context;
            let commands = std::mem::take(
                &mut *trace
                    .commands
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            );
            audit.write(&AuditRecord {
                time: crate::audit::now(),
                call_id: context.call_id.as_str(),
                tool,
                agent: context.agent.as_deref(),
                session: context.session.as_deref(),
                channel: context.channel.as_deref(),
                dry_run: context.dry_run,
                // Arguments that are not a JSON object are not logged: a
                // secret in them could not be found to redact.
                args: trace.args.as_ref().map_or_else(
                    || format!("[not a JSON object: {} bytes]", args.len()).into(),
                    crate::audit::redact,
                ),
                duration_ms: result.duration.as_secs_f64() * 1e3,
                outcome,
                capabilities: trace.capabilities,
                commands,
                hooks: trace.hooks,
            });
        }
        result
    }

    fn pipeline(
        &self,
        name: &str,
        args: &str,
        options: &CallOptions,
        trace: &mut Trace,
    ) -> ToolResult {
        let fail = |e: CallError| ToolResult::failure(name, e);
        // 1. lookup
        let registry = self.registry();
        let plugin = match self.lookup_in(&registry, name) {
            Ok(plugin) => plugin,
            Err(err) => return fail(CallError::new(ErrorKind::NotFound, err.to_string())),
        };
        // 2. arguments: a JSON object valid under the tool's schema. Empty
        // text means `{}`, and the plugin gets that rather than the raw text.
        let parsed = match parse_args(args) {
            Ok(value) => value,
            Err(err) => return fail(err),
        };
        let auditing = self.audit.is_some();
        if auditing {
            trace.args = Some(parsed.clone());
        }
        match registry.args_schema(name) {
            Some(Ok(schema)) => {
                if let Err(err) = schema.check(name, &parsed) {
                    return fail(err);
                }
            }
            Some(Err(why)) => {
                return fail(CallError::new(
                    ErrorKind::Failed,
                    format!("`{name}` declares an input schema that is not valid JSON Schema ({why}); nothing was run"),
                ).with_hint("this is a bug in the plugin; report it to its author"));
            }
            None => {}
        }
        let args = if args.trim().is_empty() { "{}" } else { args };
        // 3. confirmation
        if self.aborted() {
            return fail(CallError::new(
                ErrorKind::Denied,
                "a person chose to abort all calls earlier in this session; nothing was run",
            ));
        }
        let info = plugin.info();
        let sensitive = info.is_sensitive();
        let mut grant = self.effective_grant(&plugin);
        let confirmer = options
            .confirmer
            .clone()
            .unwrap_or_else(|| Arc::clone(&self.confirmer));
        if auditing {
            trace.capabilities = grant
                .capabilities()
                .iter()
                .map(ToString::to_string)
                .collect();
        }
        // A tool whose only state-changing power is running commands is not
        // asked about here: the broker asks about each command it runs.
        let broker_confirms = grant.commands && !sensitive;
        if self.mode.needs_confirmation(sensitive) && !options.context.dry_run && !broker_confirms {
            let reason = if sensitive {
                format!(
                    "it is sensitive (it can change files or run commands) and the mode is {}",
                    self.mode.as_str()
                )
            } else {
                format!("the mode is {}", self.mode.as_str())
            };
            let request = ConfirmRequest {
                tool: name,
                args: &parsed,
                reason: &reason,
            };
            match confirmer.confirm(&request) {
                Decision::Allow => {}
                Decision::Deny => {
                    return fail(CallError::new(
                        ErrorKind::Denied,
                        format!("a person declined to run `{name}`"),
                    ));
                }
                Decision::AbortAll => {
                    self.aborted.store(true, Ordering::Relaxed);
                    return fail(CallError::new(
                        ErrorKind::Denied,
                        "a person aborted all calls; nothing was run",
                    ));
                }
                Decision::Unavailable => {
                    return fail(
                        CallError::new(
                            ErrorKind::Denied,
                            format!("`{name}` needs confirmation ({reason}), and nobody can be asked here; nothing was run"),
                        )
                        .with_hint("run it from an interactive terminal, use --mode yolo to skip confirmation, or --dry-run to see what it would do"),
                    );
                }
            }
        }
        // 4. dry run: a tool that runs commands is called so the broker can
        // describe them, with nothing it could write through.
        if options.context.dry_run {
            if !grant.commands {
                return dry_run(&plugin, &parsed, &grant);
            }
            grant.workspace = grant.workspace.map(|_| Access::Read);
            for d in &mut grant.directories {
                d.access = Access::Read;
            }
        }
        // 5. run in the sandbox
        let mut limits = self.runtime.limits().clone();
        if let Some(timeout) = options.timeout {
            limits.timeout = timeout.min(crate::runtime::MAX_TIMEOUT);
        }
        let settings = self.settings_for(name);
        let broker_call = BrokerCall {
            broker: Arc::clone(&self.broker),
            tool: Arc::from(name),
            workspace: self.workspace().map(Path::to_owned),
            network: grant.command_network,
            mode: self.mode,
            confirmer,
            aborted: Arc::clone(&self.aborted),
            dry_run: options.context.dry_run,
            log: Arc::clone(&trace.commands),
        };
        let broker = grant.commands.then(|| broker_call.clone());
        let request = CallRequest {
            args,
            context: &options.context,
            grant: &grant,
            workspace: self.workspace(),
            limits: &limits,
            cancel: options.cancel.as_ref(),
            settings: &settings,
            broker: broker.as_ref(),
        };
        let out = match self.runtime.call(&plugin, &request) {
            Ok(out) => out,
            Err(err) => return fail(err),
        };
        // 6. post-edit hooks, as a person configured them: no network.
        let mut content = out.content;
        if let Some(workspace) = self.workspace()
            && !self.hooks.is_empty()
            && !out.changed_paths.is_empty()
            && !options.context.dry_run
        {
            let hook_call = BrokerCall {
                network: false,
                ..broker_call
            };
            let (records, appended) = self.hooks.run(
                &hook_call,
                workspace,
                &out.changed_paths,
                options.cancel.as_ref(),
            );
            trace.hooks = records;
            content.push_str(&appended);
        }
        ToolResult {
            structured: out.structured,
            changed_paths: out.changed_paths,
            ..ToolResult::success(name, content)
        }
    }
}

/// `dir` canonicalised, if it is a directory.
fn checked_dir(dir: &Path) -> std::io::Result<PathBuf> {
    let dir = dir.canonicalize()?;
    if !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("{} is not a directory", dir.display()),
        ));
    }
    Ok(dir)
}

fn parse_args(args: &str) -> Result<serde_json::Value, CallError> {
    let text = if args.trim().is_empty() { "{}" } else { args };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) if value.is_object() => Ok(value),
        Ok(other) => Err(CallError::new(
            ErrorKind::InvalidInput,
            format!(
                "the arguments must be a JSON object like {{\"path\": \"src/main.rs\"}}, not {}",
                json_kind(&other)
            ),
        )),
        Err(err) => Err(CallError::new(
            ErrorKind::InvalidInput,
            format!(
                "the arguments are not valid JSON ({err}); send a JSON object such as {{\"path\": \"src/main.rs\"}}"
            ),
        )),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn dry_run(plugin: &Plugin, args: &serde_json::Value, grant: &Effective) -> ToolResult {
    let name = plugin.name();
    let granted: Vec<String> = grant
        .capabilities()
        .iter()
        .map(ToString::to_string)
        .collect();
    let granted_text = if granted.is_empty() {
        "nothing".to_owned()
    } else {
        granted.join(", ")
    };
    ToolResult {
        structured: Some(serde_json::json!({
            "dry_run": true,
            "tool": name,
            "args": args,
            "sensitive": plugin.info().is_sensitive(),
            "granted": granted,
        })),
        ..ToolResult::success(
            name,
            format!(
                "[dry run] would call `{name}` with {args} (granted: {granted_text}); nothing was run"
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_table() {
        assert!(!Mode::Yolo.needs_confirmation(true));
        assert!(!Mode::Yolo.needs_confirmation(false));
        assert!(Mode::ConfirmSensitive.needs_confirmation(true));
        assert!(!Mode::ConfirmSensitive.needs_confirmation(false));
        assert!(Mode::ConfirmAll.needs_confirmation(true));
        assert!(Mode::ConfirmAll.needs_confirmation(false));
    }

    #[test]
    fn args_must_be_an_object() {
        assert!(parse_args("").is_ok());
        assert!(parse_args(r#"{"a":1}"#).is_ok());
        let err = parse_args("[1]").unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(err.message.contains("an array"), "{}", err.message);
        let err = parse_args("{path:").unwrap_err();
        assert!(err.message.contains("not valid JSON"), "{}", err.message);
    }

    #[test]
    fn modes_parse() {
        for m in [Mode::Yolo, Mode::ConfirmSensitive, Mode::ConfirmAll] {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(m));
        }
        assert!("always".parse::<Mode>().is_err());
    }
}
