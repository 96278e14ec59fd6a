//! The call pipeline, one function per step (numbered as in executor.rs):
//! [`Executor::call`] runs [`Executor::pipeline`] (steps 1-6 and 8) and
//! records the call (step 7), and nothing escapes it as a panic.

use super::CallOptions;
use super::Executor;
use super::audit::{CallTrace, redact};
use crate::broker::BrokerCall;
use crate::plugin::Plugin;
use crate::registry::Registry;
use crate::runtime::MAX_TIMEOUT;
use crate::runtime::sandbox::{CallRequest, PluginOutput};
use crate::types::confirm::{ConfirmRequest, Confirmer, Decision};
use crate::types::grant::{Access, Effective, SecretValue, redact_json};
use crate::types::result::{CallError, ErrorKind, ToolResult};
use crate::types::sensitivity::Sensitivity;
use crate::validate::ArgsSchema;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

impl Executor {
    /// Run one call through the whole pipeline. Never panics.
    pub fn call(&self, tool: &str, args: &str, options: &CallOptions) -> ToolResult {
        let started = Instant::now();
        // The call's span (what OTLP traces show; no argument values).
        let span = tracing::info_span!(
            target: "toolhost::calls",
            "tool call",
            tool,
            call_id = %options.context.call_id,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        let _in_span = span.enter();
        let mut trace = CallTrace::default();
        let mut result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.pipeline(tool, args, options, &mut trace)
                .unwrap_or_else(|error| ToolResult::failure(tool, error))
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
        // A call refused before its arguments were read (unknown tool)
        // still shows and logs them, if they are an object.
        if trace.input.is_none() {
            trace.input = parse_args(args).ok().as_ref().map(redact);
        }
        result.input = trace.input.take();
        self.record(tool, args, options, &result, trace);
        span.record(
            "outcome",
            result.error_kind().map_or("success", ErrorKind::as_str),
        );
        span.record("duration_ms", result.duration.as_secs_f64() * 1e3);
        result
    }

    /// Steps 1-6 and 8; each step passes on what the next needs, or stops
    /// the call with its error (a dry run stops it with its description).
    fn pipeline(
        &self,
        name: &str,
        args: &str,
        options: &CallOptions,
        trace: &mut CallTrace,
    ) -> Result<ToolResult, CallError> {
        // Servers connecting on first use first, so the snapshot has their tools.
        self.remote_first_use();
        let registry = self.registry();
        let plugin = self.lookup_step(&registry, name, options)?;
        let parsed = self.validate(&registry, name, args, trace)?;
        self.not_aborted(options.context.session.as_deref())?;
        let mut grant = self.effective_grant(&plugin);
        let sensitivity = self.sensitivity_with(&plugin, &grant);
        self.prepare_state_dirs(&grant)?;
        let confirmer = options
            .confirmer
            .clone()
            .unwrap_or_else(|| Arc::clone(&self.policy.confirmer));
        if self.policy.audit.is_some() {
            trace.capabilities = grant
                .capabilities()
                .iter()
                .map(ToString::to_string)
                .collect();
        }
        self.confirm(&plugin, &parsed, sensitivity, &*confirmer, options)?;
        if options.context.dry_run
            && let Some(described) = dry_run(&plugin, &parsed, sensitivity, &mut grant)
        {
            return Ok(described);
        }
        let broker_call = self.broker_call(name, &grant, confirmer, options, trace);
        let mut out = self
            .run(&plugin, args, options, &grant, &broker_call)
            .map_err(|e| dynamic_remedy(e, plugin.origin()))?;
        self.post_edit_hooks(&mut out, broker_call, options, trace);
        Ok(result(
            name,
            out,
            plugin.info().output_schema.as_ref(),
            registry.output_schema(name).and_then(|c| c.as_ref().ok()),
        ))
    }

    /// Step 1: The tool, as the caller's agent and the active profile see it.
    fn lookup_step(
        &self,
        registry: &Registry,
        name: &str,
        options: &CallOptions,
    ) -> Result<Arc<Plugin>, CallError> {
        self.lookup_in(registry, options.context.agent.as_deref(), name)
            .map_err(|err| {
                let unavailable = registry
                    .get(name)
                    .ok()
                    .filter(|_| self.policy.profile.as_ref().is_none_or(|pr| pr.shows(name)))
                    .and_then(|p| self.unavailable_here(p));
                let mode = self.prompt_mode;
                let unavailable = unavailable.or_else(|| {
                    (registry.get(name).is_ok() && !mode.offers(name)).then(|| {
                        format!(
                            "`{name}` is not offered in the {} prompt mode, which offers only {}",
                            mode.as_str(),
                            crate::guidance::COLLABORATION_TOOLS.join(", ")
                        )
                    })
                });
                match (unavailable, self.unreachable_remote(name)) {
                    (Some(why), _) => {
                        CallError::new(ErrorKind::Denied, format!("{why}; nothing was run"))
                    }
                    (None, Some(why)) => CallError::new(ErrorKind::Failed, why),
                    (None, None) => CallError::new(ErrorKind::NotFound, err.to_string()),
                }
            })
    }

    /// Step 2: The arguments: a JSON object valid under the tool's schema. Empty
    /// text means `{}`.
    fn validate(
        &self,
        registry: &Registry,
        name: &str,
        args: &str,
        trace: &mut CallTrace,
    ) -> Result<serde_json::Value, CallError> {
        let parsed = parse_args(args)?;
        trace.input = Some(redact(&parsed));
        match registry.args_schema(name) {
            Some(Ok(schema)) => schema.check(name, &parsed)?,
            Some(Err(why)) => {
                return Err(CallError::new(
                    ErrorKind::Failed,
                    format!("`{name}` declares an input schema that is not valid JSON Schema ({why}); nothing was run"),
                ).with_hint("this is a bug in the plugin; report it to its author"));
            }
            None => {}
        }
        // A result that cannot be checked is not run for; a remote
        // server's tool, whose schema nobody here can fix, goes unchecked.
        let remote = registry
            .get(name)
            .is_ok_and(|p| matches!(p.origin(), crate::plugin::Origin::Remote(_)));
        if let Some(Err(why)) = registry.output_schema(name)
            && !remote
        {
            return Err(CallError::new(
                ErrorKind::Failed,
                format!("`{name}` declares an output schema that is not valid JSON Schema ({why}); nothing was run"),
            ).with_hint("this is a bug in the plugin; report it to its author"));
        }
        Ok(parsed)
    }

    /// Nothing runs once a person chose "abort all" (part of step 3, checked
    /// before anything is prepared for the call).
    fn not_aborted(&self, session: Option<&str>) -> Result<(), CallError> {
        if self.aborted_in(session) {
            return Err(CallError::new(
                ErrorKind::Denied,
                "a person chose to abort all calls earlier in this session; nothing was run",
            ));
        }
        Ok(())
    }

    /// The executor's state directories the grant names, created on first use.
    fn prepare_state_dirs(&self, grant: &Effective) -> Result<(), CallError> {
        for dir in &grant.directories {
            self.ensure_state_dir(&dir.host_path).map_err(|err| {
                CallError::new(
                    ErrorKind::Failed,
                    format!(
                        "cannot create the state directory {}: {err}",
                        dir.host_path.display()
                    ),
                )
            })?;
        }
        Ok(())
    }

    /// Step 3: Confirmation per the mode and the tool's [`Sensitivity`] (a tool
    /// that only runs commands is asked about by the broker, per command).
    fn confirm(
        &self,
        plugin: &Plugin,
        parsed: &serde_json::Value,
        sensitivity: Sensitivity,
        confirmer: &dyn Confirmer,
        options: &CallOptions,
    ) -> Result<(), CallError> {
        let denied = |message: String| CallError::new(ErrorKind::Denied, message);
        if options.context.dry_run || !sensitivity.needs_confirmation(self.policy.mode) {
            return Ok(());
        }
        let name = plugin.name();
        let reason = if let crate::plugin::Origin::Remote(server) = plugin.origin()
            && sensitivity.is_sensitive()
        {
            format!(
                "it is a tool of the MCP server `{server}`, which may change anything it reaches \
                 (its section does not say `read_only = true`), and the mode is {}",
                self.policy.mode.as_str()
            )
        } else if sensitivity.is_sensitive() {
            format!(
                "it is sensitive (it can change files or run commands) and the mode is {}",
                self.policy.mode.as_str()
            )
        } else {
            format!("the mode is {}", self.policy.mode.as_str())
        };
        let request = ConfirmRequest {
            tool: name,
            args: parsed,
            reason: &reason,
        };
        match confirmer.confirm(&request) {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(denied(format!("a person declined to run `{name}`"))),
            Decision::AbortAll => {
                self.abort_flag(options.context.session.as_deref())
                    .store(true, Ordering::Relaxed);
                Err(denied("a person aborted all calls; nothing was run".to_owned()))
            }
            Decision::Unavailable => Err(CallError::new(
                ErrorKind::Denied,
                format!("`{name}` needs confirmation ({reason}), and nobody can be asked here; nothing was run"),
            )
            .with_hint(confirmer.unavailable_hint())),
            Decision::Failed => Err(CallError::new(
                ErrorKind::Denied,
                format!("`{name}` needs confirmation ({reason}), and asking the person failed: the client answered the question with an error; nothing was run"),
            )
            .with_hint(crate::types::confirm::ASK_FAILED_HINT)),
        }
    }

    /// What the call may ask of the broker (its commands, and the hooks).
    fn broker_call(
        &self,
        name: &str,
        grant: &Effective,
        confirmer: Arc<dyn Confirmer>,
        options: &CallOptions,
        trace: &CallTrace,
    ) -> BrokerCall {
        BrokerCall {
            broker: Arc::clone(&self.broker),
            tool: Arc::from(name),
            owner: Arc::from(options.context.session.as_deref().unwrap_or("")),
            background_refused: self.policy.background_refused.clone(),
            keeps_outputs: !self.policy.one_call,
            progress: options.progress.clone(),
            workspace: self.workspace().map(|w| w.to_path_buf()),
            network: grant.command_network,
            mode: self.policy.mode,
            confirmer,
            aborted: self.abort_flag(options.context.session.as_deref()),
            dry_run: options.context.dry_run,
            log: Arc::clone(&trace.commands),
            until: options.timeout.map(|t| Instant::now() + t.min(MAX_TIMEOUT)),
        }
    }

    /// Step 5: Run in the sandbox under the effective grant, unless the call
    /// was cancelled while a person was being asked.
    fn run(
        &self,
        plugin: &Arc<Plugin>,
        args: &str,
        options: &CallOptions,
        grant: &Effective,
        broker_call: &BrokerCall,
    ) -> Result<PluginOutput, CallError> {
        if options.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(CallError::new(
                ErrorKind::Cancelled,
                "the call was cancelled before it ran; nothing was run",
            ));
        }
        if grant.workspace.is_some()
            && broker_call.workspace.is_none()
            && let Some(why) = self.workspace_problem()
        {
            return Err(CallError::new(ErrorKind::Denied, why));
        }
        let mut limits = self.runtime.limits().clone();
        if let Some(timeout) = options.timeout.or_else(|| self.service_timeout(grant)) {
            limits.timeout = timeout.min(MAX_TIMEOUT);
        }
        let settings = self.settings_for(plugin);
        let with_secrets = self.secrets_for(plugin.name(), grant)?;
        let grant = with_secrets.as_ref().unwrap_or(grant);
        let request = CallRequest {
            args: if args.trim().is_empty() { "{}" } else { args },
            context: &options.context,
            grant,
            workspace: broker_call.workspace.as_deref(),
            limits: &limits,
            cancel: options.cancel.as_ref(),
            settings: &settings,
            broker: grant.commands.then_some(broker_call),
            paths: Some(self.broker.path_rules()),
            progress: options.progress.as_ref(),
            services: self.services.as_ref(),
        };
        let outcome = plugin.run(&self.runtime, &request);
        if grant.secrets.is_empty() {
            return outcome;
        }
        // Nothing the call leaves holds a secret's value.
        let secrets = &grant.secrets;
        match outcome {
            Ok(mut out) => {
                out.content = crate::types::grant::redact(&out.content, secrets).into_owned();
                if let Some(structured) = &mut out.structured {
                    redact_json(structured, secrets);
                }
                Ok(out)
            }
            Err(mut err) => {
                err.message = crate::types::grant::redact(&err.message, secrets).into_owned();
                Err(err)
            }
        }
    }

    /// The longest deadline the services `grant` reaches ask for
    /// ([`crate::services::Service::with_timeout`]), if any.
    fn service_timeout(&self, grant: &Effective) -> Option<std::time::Duration> {
        let services = self.services.as_ref()?;
        grant
            .services
            .iter()
            .filter_map(|name| services.get(name)?.timeout())
            .max()
    }

    /// `grant` with the secrets stored for `tool` among its variables, if
    /// it has any (`None`: as it is).
    fn secrets_for(&self, tool: &str, grant: &Effective) -> Result<Option<Effective>, CallError> {
        let Some(store) = self.secrets.as_ref().filter(|_| !grant.env.is_empty()) else {
            return Ok(None);
        };
        let stored = store.of(tool).map_err(|e| {
            CallError::new(
                ErrorKind::Failed,
                format!("cannot read the secrets of `{tool}`: {e}"),
            )
        })?;
        let secrets: Vec<_> = grant
            .env
            .iter()
            .filter_map(|name| Some((name.clone(), SecretValue(stored.get(name)?.clone()))))
            .collect();
        if secrets.is_empty() {
            return Ok(None);
        }
        Ok(Some(Effective {
            secrets,
            ..grant.clone()
        }))
    }

    /// Step 6: Post-edit hooks for the files the call changed, as a person
    /// configured them: no network. Their notes are appended to the content.
    fn post_edit_hooks(
        &self,
        out: &mut PluginOutput,
        broker_call: BrokerCall,
        options: &CallOptions,
        trace: &mut CallTrace,
    ) {
        if let Some(workspace) = broker_call.workspace.clone()
            && !self.policy.hooks.is_empty()
            && !out.changed_paths.is_empty()
            && !options.context.dry_run
        {
            let hook_call = BrokerCall {
                network: false,
                ..broker_call
            };
            let (records, appended) = self.policy.hooks.run(
                &hook_call,
                &workspace,
                &out.changed_paths,
                options.cancel.as_ref(),
            );
            trace.hooks = records;
            out.content.push_str(&appended);
        }
    }

    /// Step 7: The structured log line and the audit record.
    fn record(
        &self,
        tool: &str,
        args: &str,
        options: &CallOptions,
        result: &ToolResult,
        trace: CallTrace,
    ) {
        let outcome = result.error_kind().map_or("success", ErrorKind::as_str);
        tracing::info!(
            tool,
            call = %options.context.call_id,
            agent = options.context.agent.as_deref().unwrap_or(""),
            outcome,
            duration_ms = result.duration.as_secs_f64() * 1e3,
            "call finished"
        );
        self.policy.metrics.record(tool, outcome, result.duration);
        if let Some(audit) = &self.policy.audit {
            audit.record(tool, args.len(), &options.context, result, trace);
        }
    }
}

/// Step 8: The result the caller gets.
/// The result of a call that ran: where the tool has an output schema, a
/// `null` member the (portable) schema leaves out is dropped, and the data
/// must then validate against it (`check`, the schema compiled), as every
/// client is shown it; if it does not, the call failed, naming where and
/// what was expected (and what the call changed: it did run). A result
/// with no data (text only, or data the host dropped as too large) is not
/// checked.
fn result(
    name: &str,
    out: PluginOutput,
    output_schema: Option<&serde_json::Value>,
    check: Option<&ArgsSchema>,
) -> ToolResult {
    let mut structured = out.structured;
    if let (Some(data), Some(schema)) = (&mut structured, output_schema) {
        toolhost_shared::schema::drop_absent_nulls(data, schema);
    }
    if let (Some(check), Some(data)) = (check, &structured)
        && let Some(problems) = check.problems(data)
    {
        let mut message = format!(
            "`{name}` returned a structured result that does not match its output schema: {problems}"
        );
        if !out.changed_paths.is_empty() {
            message.push_str(&format!(
                " (the call ran, and changed {}: do not repeat it for that)",
                out.changed_paths.join(", ")
            ));
        }
        let error = CallError::new(ErrorKind::Failed, message).with_hint(
            "this is a bug in the tool: its author must fix what it returns, or its output schema",
        );
        return ToolResult {
            changed_paths: out.changed_paths,
            ..ToolResult::failure(name, error)
        };
    }
    ToolResult {
        structured,
        changed_paths: out.changed_paths,
        ..ToolResult::success(name, out.content)
    }
}

/// Step 4, dry run: a tool that runs no commands stops here with a
/// description of the call; one that does runs with nothing it could write
/// through, so the broker describes each command instead of running it.
fn dry_run(
    plugin: &Plugin,
    args: &serde_json::Value,
    sensitivity: Sensitivity,
    grant: &mut Effective,
) -> Option<ToolResult> {
    if grant.commands {
        grant.workspace = grant.workspace.map(|_| Access::Read);
        for d in &mut grant.directories {
            d.access = Access::Read;
        }
        return None;
    }
    let name = plugin.name();
    let remote = plugin.forwarded_dry_run(args);
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
    Some(ToolResult {
        structured: Some(serde_json::json!({
            "dry_run": true,
            "tool": name,
            "args": args,
            "sensitive": sensitivity.is_sensitive(),
            "sensitivity": sensitivity,
            "granted": granted,
        })),
        ..ToolResult::success(
            name,
            remote.unwrap_or_else(|| format!(
                "[dry run] would call `{name}` with {args} (granted: {granted_text}); nothing was run"
            )),
        )
    })
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

/// A refusal of a tool an agent created names the remedy that applies to
/// it: its approval (`toolhost dynamic approve ID --grant CAPS`), not
/// `--grant TOOL=`. Refusals name that remedy through
/// [`toolhost_shared::contract::GRANT_REMEDY`], so it is replaced here once.
fn dynamic_remedy(mut err: CallError, origin: &crate::plugin::Origin) -> CallError {
    let crate::plugin::Origin::Dynamic(id) = origin else {
        return err;
    };
    let remedy = toolhost_shared::contract::GRANT_REMEDY;
    if err.kind == ErrorKind::Denied && err.message.contains(remedy) {
        err.message = err
            .message
            .replace(remedy, &format!("toolhost dynamic approve {id} --grant "));
        err.hint.get_or_insert_with(|| {
            format!(
                "this tool was created by an agent; `toolhost dynamic show {id}` shows what it \
                 asked for and what a person granted"
            )
        });
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
