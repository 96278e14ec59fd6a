//! The store of one call: its state, built from the request alone, and
//! the limits the store itself keeps (host-call fuel, epoch deadline).

use super::*;

/// Build the store for one call, on `engine` (the one its component was
/// compiled by). Nothing is granted that is not listed here.
pub(super) fn new_store(
    runtime: &Runtime,
    engine: &wasmtime::Engine,
    shared: Option<&Arc<Runtime>>,
    tool: &str,
    req: &CallRequest<'_>,
    fanout: Option<Fanout>,
) -> Result<(Store<CallState>, Captured), CallError> {
    let (state, captured) = call_state(runtime, shared, tool, req, fanout)?;
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    store.epoch_deadline_callback(|mut ctx| on_epoch(ctx.data_mut()));
    limit(&mut store, req.limits);
    Ok((store, captured))
}

/// Set the limits the store itself keeps for a call: its host-call fuel
/// and its next epoch check.
pub(super) fn limit(store: &mut Store<CallState>, limits: &Limits) {
    store.set_hostcall_fuel(limits.hostcall_fuel);
    store.set_epoch_deadline(1);
}

/// One call's state: its sandbox, built from `req` alone, and what it
/// writes to stdout and stderr.
pub(super) fn call_state(
    runtime: &Runtime,
    shared: Option<&Arc<Runtime>>,
    tool: &str,
    req: &CallRequest<'_>,
    fanout: Option<Fanout>,
) -> Result<(CallState, Captured), CallError> {
    runtime
        .ticking()
        .map_err(|e| CallError::new(ErrorKind::Failed, e.to_string()))?;
    let stderr = CappedPipe::new(req.limits.max_captured_bytes);
    let stdout = CappedPipe::new(req.limits.max_captured_bytes);
    let wasi = wasi_ctx(req, &stdout, &stderr)?;
    let mut table = ResourceTable::new();
    table.set_max_capacity(req.limits.max_resources);
    let granted = GrantedDirs::new(req.grant, req.workspace);
    let call_deadline = deadline(req.limits.timeout);
    let state = CallState {
        wasi,
        table,
        http: wasmtime_wasi_http::WasiHttpCtx::new(),
        net: NetHooks {
            policy: NetPolicy::new(&req.grant.network),
            deadline: call_deadline,
        },
        limiter: CallLimiter {
            memory_bytes: req.limits.memory_bytes,
            memory_denied: false,
            table_denied: false,
        },
        tool: Arc::from(tool),
        deadline: call_deadline,
        cancel: req.cancel.cloned(),
        interrupted: None,
        commands_granted: req.grant.commands,
        commands_declared: req.grant.declared_commands,
        commands: req.broker.filter(|_| req.grant.commands).cloned(),
        waited: Duration::ZERO,
        paths: PathGuard::new(
            req.paths.map_or_else(PathRules::shared_default, Arc::clone),
            granted.roots(),
        ),
        granted,
        env: CallEnv {
            runtime: shared.cloned(),
            workspace: req.workspace.map(Path::to_owned),
            max_read_bytes: u64::try_from(req.limits.memory_bytes).unwrap_or(u64::MAX),
        },
        fanout,
        stopped_shares: Vec::new(),
        services: req.services.cloned(),
        services_granted: req.grant.services.clone(),
        services_declared: req.grant.declared_services.clone(),
        context: req.context.clone(),
        secrets: req.grant.secrets.clone(),
        reached_host: false,
    };
    let secrets = req.grant.secrets.clone();
    Ok((
        state,
        Captured {
            stdout,
            stderr,
            secrets,
        },
    ))
}

/// At each epoch tick: stop a call that was cancelled or is past its
/// deadline (noting why), else let it run to the next tick.
fn on_epoch(state: &mut CallState) -> wasmtime::Result<UpdateDeadline> {
    let stop = if state.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
        Some(ErrorKind::Cancelled)
    } else if Instant::now() >= state.deadline {
        Some(ErrorKind::Timeout)
    } else {
        None
    };
    match stop {
        Some(kind) => {
            state.interrupted = Some(kind);
            Err(Trap::Interrupt.into())
        }
        None => Ok(UpdateDeadline::Continue(1)),
    }
}

/// The guest's stdout and stderr, kept for the log and for crash reports.
pub(super) struct Captured {
    stdout: CappedPipe,
    stderr: CappedPipe,
    /// The call's secrets, redacted from both.
    secrets: Vec<(String, crate::types::grant::SecretValue)>,
}

impl Captured {
    /// Log what the guest printed; returns its stderr for crash reports.
    pub(super) fn finish(&self, tool: &str, call: &str) -> String {
        let redacted = |text: String| redact(&text, &self.secrets).into_owned();
        let (stdout, stderr) = (redacted(self.stdout.text()), redacted(self.stderr.text()));
        if !stdout.is_empty() {
            tracing::debug!(tool, call, stdout = %stdout, "plugin stdout");
        }
        if !stderr.is_empty() {
            tracing::debug!(tool, call, stderr = %stderr, "plugin stderr");
        }
        stderr
    }
}

/// When a call started now must stop; never overflows.
pub(super) fn deadline(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout.min(MAX_TIMEOUT))
        .unwrap_or(now + Duration::from_secs(1))
}

pub(super) fn perms(access: Access) -> FsPerms {
    match access {
        Access::Read => FsPerms::ReadOnly,
        Access::Write => FsPerms::ReadWrite,
    }
}

/// A store of `engine` with an empty sandbox: no grant, no workspace, no
/// settings, `limits`; `label` names it in logs.
pub(super) fn empty_store(
    runtime: &Runtime,
    engine: &wasmtime::Engine,
    label: &str,
    limits: &Limits,
) -> Result<(Store<CallState>, Captured), CallError> {
    let context = CallContext::new();
    let grant = Effective::default();
    let req = CallRequest::bare("", &context, &grant, limits);
    new_store(runtime, engine, None, label, &req, None)
}
