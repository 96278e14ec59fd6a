//! The executor: the pipeline every call goes through, from any front end.
//!
//! 1. lookup in the [`Registry`];
//! 2. parse the arguments (a JSON object);
//! 3. confirmation per [`Mode`] and the tool's sensitivity, asked of a [`Confirmer`]
//!    (commands a tool runs are confirmed one by one by the [`Broker`], by class);
//! 4. dry run: describe, run nothing (a tool that runs commands is called with
//!    a read-only workspace, and the broker describes each command instead);
//! 5. run in the sandbox under the tool's effective grant;
//! 6. log;
//! 7. return a [`ToolResult`].
//!
//! Nothing escapes as a panic or an `Err`: an internal failure anywhere is a
//! `failed` result.

use crate::broker::{Broker, BrokerCall, CommandConfig};
use crate::grant::{Access, Effective, Grant};
use crate::names::ParseError;
use crate::plugin::{Origin, Plugin};
use crate::registry::Registry;
use crate::result::{CallError, ErrorKind, ToolResult};
use crate::runtime::Runtime;
use crate::sandbox::{CallContext, CallRequest, CancelToken};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// When calls need a person's confirmation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
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
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Who calls, and whether this is a dry run.
    pub context: CallContext,
    /// Overrides the default timeout.
    pub timeout: Option<Duration>,
    /// Cancels the call.
    pub cancel: Option<CancelToken>,
}

/// Runs calls through the pipeline. `Send + Sync`; calls may run concurrently.
pub struct Executor {
    runtime: Arc<Runtime>,
    registry: Registry,
    workspace: Option<PathBuf>,
    mode: Mode,
    grants: HashMap<String, Grant>,
    /// Settings every tool receives (e.g. `allow_delete`).
    global_settings: serde_json::Map<String, serde_json::Value>,
    /// Settings for one tool, over the global ones.
    tool_settings: HashMap<String, serde_json::Map<String, serde_json::Value>>,
    confirmer: Arc<dyn Confirmer>,
    broker: Arc<Broker>,
    aborted: Arc<AtomicBool>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("tools", &self.registry.count())
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
            registry,
            workspace: None,
            mode: Mode::default(),
            grants: HashMap::new(),
            global_settings: serde_json::Map::new(),
            tool_settings: HashMap::new(),
            confirmer: Arc::new(NoConfirmer),
            broker: Arc::new(broker),
            aborted: Arc::new(AtomicBool::new(false)),
        }
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
        let dir = dir.canonicalize()?;
        if !dir.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        self.workspace = Some(dir);
        Ok(self)
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

    /// The registered tools.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The workspace, if set.
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
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
        let mut result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.pipeline(tool, args, options)
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
        result
    }

    fn pipeline(&self, name: &str, args: &str, options: &CallOptions) -> ToolResult {
        let fail = |e: CallError| ToolResult::failure(name, e);
        // 1. lookup
        let plugin = match self.registry.get(name) {
            Ok(plugin) => plugin,
            Err(err) => return fail(CallError::new(ErrorKind::NotFound, err.to_string())),
        };
        // 2. arguments: a JSON object (the plugin checks the fields). Empty
        // text means `{}`, and the plugin gets that rather than the raw text.
        let parsed = match parse_args(args) {
            Ok(value) => value,
            Err(err) => return fail(err),
        };
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
        let mut grant = self.effective_grant(plugin);
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
            match self.confirmer.confirm(&request) {
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
                return dry_run(plugin, &parsed, &grant);
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
        let broker = grant.commands.then(|| BrokerCall {
            broker: Arc::clone(&self.broker),
            tool: Arc::from(name),
            workspace: self.workspace.clone(),
            network: grant.command_network,
            mode: self.mode,
            confirmer: Arc::clone(&self.confirmer),
            aborted: Arc::clone(&self.aborted),
            dry_run: options.context.dry_run,
        });
        let request = CallRequest {
            args,
            context: &options.context,
            grant: &grant,
            workspace: self.workspace.as_deref(),
            limits: &limits,
            cancel: options.cancel.as_ref(),
            settings: &settings,
            broker: broker.as_ref(),
        };
        match self.runtime.call(plugin, &request) {
            Ok(out) => ToolResult {
                structured: out.structured,
                changed_paths: out.changed_paths,
                ..ToolResult::success(name, out.content)
            },
            Err(err) => fail(err),
        }
    }
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
