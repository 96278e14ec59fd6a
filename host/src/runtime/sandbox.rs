//! One call in a fresh sandbox: a new `Store` whose WASI context is built only
//! from the tool's effective grant, with memory, time and host-call limits.
//!
//! What a plugin gets by default — all of it explicit in `call_state`
//! (sandbox/store.rs):
//! no preopened directories, no environment variables, no arguments, stdin
//! closed, stdout and stderr captured (capped, never inherited), TCP, UDP and
//! name lookup denied, the `commands` broker answering `denied`. Its effective
//! grant adds the workspace preopen at `.` (read-only or read-write), named
//! directories at `/<name>`, broker access, and the `files` helpers for the
//! directories it may write.
//!
//! Every failure comes back as a [`CallError`]: traps, timeouts (epoch
//! deadline), cancellation, memory exhaustion (seen by the store's limiter)
//! and plugin errors. The store is dropped after each call (on an MCP call
//! worker, after the reply: sandbox/spare.rs), never used again, so one bad
//! call never harms the next.

mod pipe;

pub use crate::types::context::{CallContext, CallId, CancelToken, Progress};

use super::fanout::Fanout;
use super::{
    CORE_INSTANCES_PER_COMPONENT, Limits, MAX_TABLE_ELEMENTS, MAX_TIMEOUT, MEMORIES_PER_COMPONENT,
    Runtime, TABLES_PER_COMPONENT,
};
use crate::bindings::{ToolPluginPre, types as wit};
use crate::broker::BrokerCall;
use crate::dirs::GrantedDirs;
use crate::guard::PathGuard;
use crate::net::{NetHooks, NetPolicy};
use crate::types::grant::{Access, Effective, redact};
use crate::types::paths::PathRules;
use crate::types::result::{CallError, ErrorKind};
use pipe::CappedPipe;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};
mod outcome;
pub(crate) use outcome::*;
mod limiter;
use limiter::*;
mod wasi;
use wasi::*;
mod plain;
pub(crate) use plain::{ENVIRONMENT, declared_env, run_plain};
mod spare;
pub(crate) use spare::{OUTSIDE_CALLS, Spares, Started};
mod store;
pub use spare::{after_reply, runs_work_after_replies};
use store::*;

/// Everything one sandboxed call needs.
#[derive(Debug, Clone, Copy)]
pub struct CallRequest<'a> {
    /// The arguments, as JSON text.
    pub args: &'a str,
    /// Who is calling.
    pub context: &'a CallContext,
    /// What the tool gets; the sandbox is built from this alone.
    pub grant: &'a Effective,
    /// The workspace directory, preopened at `.` if the grant allows.
    pub workspace: Option<&'a Path>,
    /// Limits for this call.
    pub limits: &'a Limits,
    /// Stops the call early when cancelled.
    pub cancel: Option<&'a CancelToken>,
    /// The tool's settings, a JSON object as text (`{}` for none).
    pub settings: &'a str,
    /// The command broker, for a tool granted `commands` (set by the
    /// executor; `None` makes every command request `denied`).
    pub broker: Option<&'a BrokerCall>,
    /// The secret and protected paths, enforced beneath every granted
    /// directory (`None`: the defaults).
    pub paths: Option<&'a Arc<PathRules>>,
    /// Where the call reports how it is going (fan-out shares done), if
    /// anyone is looking.
    pub progress: Option<&'a Progress>,
    /// The embedder's services, for a tool granted some (`None`: none
    /// offered).
    pub services: Option<&'a Arc<crate::services::Services>>,
}

impl<'a> CallRequest<'a> {
    /// A request with `args` and nothing beyond `grant` and `limits`: no
    /// workspace, no cancellation, settings `{}`, no broker (every command
    /// `denied`), the default secret and protected paths, no progress, no
    /// services.
    pub fn bare(
        args: &'a str,
        context: &'a CallContext,
        grant: &'a Effective,
        limits: &'a Limits,
    ) -> Self {
        Self {
            args,
            context,
            grant,
            workspace: None,
            limits,
            cancel: None,
            settings: "{}",
            broker: None,
            paths: None,
            progress: None,
            services: None,
        }
    }
}

/// A plugin's successful output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginOutput {
    /// Text for the model.
    pub content: String,
    /// Structured output, if the plugin gave valid JSON.
    pub structured: Option<serde_json::Value>,
    /// Paths the call changed.
    pub changed_paths: Vec<String>,
}

/// What a sandboxed call produced.
pub type Outcome = Result<PluginOutput, CallError>;

/// What a call's imports need of the call beyond its grant: owned, so a
/// fanned-out share has it too.
pub(crate) struct CallEnv {
    /// The runtime the call runs on, for create_tool's component check
    /// (`None` in the sandboxes that only describe or pre-initialise).
    pub(crate) runtime: Option<Arc<Runtime>>,
    /// The workspace, as the call saw it when it started.
    pub(crate) workspace: Option<std::path::PathBuf>,
    /// The most bytes one `files.read` may return: what the guest could
    /// hold in its memory anyway.
    pub(crate) max_read_bytes: u64,
}

/// The data of one call's `Store`.
///
/// The guest imports (imports/) are served on it, one file per interface.
pub(crate) struct CallState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) http: wasmtime_wasi_http::WasiHttpCtx,
    /// wasi:http requests, checked against the grant's hosts.
    pub(crate) net: NetHooks,
    limiter: CallLimiter,
    pub(crate) tool: Arc<str>,
    deadline: Instant,
    cancel: Option<CancelToken>,
    interrupted: Option<ErrorKind>,
    pub(crate) commands_granted: bool,
    /// Whether the tool declares `commands`: if not, no grant helps.
    pub(crate) commands_declared: bool,
    /// The broker answering this call's `commands` requests.
    pub(crate) commands: Option<BrokerCall>,
    /// Time already credited to the deadline for waiting on commands.
    pub(crate) waited: Duration,
    pub(crate) granted: GrantedDirs,
    /// Secret and protected paths beneath the granted directories.
    pub(crate) paths: PathGuard,
    /// What the call's imports need of the call itself, owned.
    pub(crate) env: CallEnv,
    /// How this call starts more runs of itself; `None` inside such a run.
    pub(crate) fanout: Option<Fanout>,
    /// How the host stopped this call's shares, if it stopped any: a
    /// `stopped` error the tool returns is honoured only for these.
    pub(crate) stopped_shares: Vec<ErrorKind>,
    /// The embedder's services and the names this call may use.
    pub(crate) services: Option<Arc<crate::services::Services>>,
    pub(crate) services_granted: Vec<String>,
    pub(crate) services_declared: Vec<String>,
    /// Who is calling: the call id and session tag its log lines (the
    /// session routes them to its own MCP client); services' handlers get it.
    pub(crate) context: CallContext,
    /// The call's secrets: redacted from the tool's log lines.
    pub(crate) secrets: Vec<(String, crate::types::grant::SecretValue)>,
    /// Whether the guest has called the host on this state: every
    /// import's getter sets it ([`CallState::reached`]). An instance made
    /// ahead whose start code did is never used (`spare.rs`).
    reached_host: bool,
}

impl CallState {
    /// This state, noting that the guest called the host: what every
    /// import's getter goes through.
    pub(crate) fn reached(&mut self) -> &mut Self {
        self.reached_host = true;
        self
    }

    /// The call's cancel token, for host calls that wait (commands).
    pub(crate) fn cancel_token(&self) -> Option<&CancelToken> {
        self.cancel.as_ref()
    }

    /// Time the call spent waiting on a command does not count against its
    /// own timeout: the command had its own.
    pub(crate) fn extend_deadline(&mut self, by: Duration) {
        self.deadline += by;
        self.net.deadline += by;
    }
}

/// The call's `wasi:filesystem/types`, as linker data: wasmtime-wasi's
/// view and the call's [`PathGuard`] (the interface is implemented in
/// imports/filesystem.rs).
pub(crate) struct GuardedFilesystem;

impl wasmtime::component::HasData for GuardedFilesystem {
    type Data<'a> = Guarded<'a>;
}

/// wasmtime-wasi's filesystem view of a call and its guard.
pub(crate) struct Guarded<'a> {
    pub(crate) inner: wasmtime_wasi::filesystem::WasiFilesystemCtxView<'a>,
    pub(crate) guard: &'a mut PathGuard,
}

/// The getter the linker takes.
pub(crate) fn guarded(state: &mut CallState) -> Guarded<'_> {
    let state = state.reached();
    Guarded {
        inner: wasmtime_wasi::filesystem::WasiFilesystemCtxView {
            ctx: state.wasi.filesystem(),
            table: &mut state.table,
        },
        guard: &mut state.paths,
    }
}

thread_local! {
    /// Each call thread's tokio runtime: the ambient one of its calls
    /// without network, and the one every guest wait runs on
    /// (imports/poll.rs), whose `block_on` drives its timers and the tasks
    /// spawned on it.
    static CALL_RUNTIME: Option<tokio::runtime::Runtime> =
        tokio::runtime::Builder::new_current_thread().enable_time().build().ok();
}

/// Run `f` with this thread's call runtime (`None` if it could not be built).
pub(crate) fn with_call_runtime<R>(f: impl FnOnce(Option<&tokio::runtime::Runtime>) -> R) -> R {
    CALL_RUNTIME.with(|rt| f(rt.as_ref()))
}

/// The linker's marker for `wasi:io/poll` bounded by the call's deadline
/// and cancellation (implemented in imports/poll.rs).
pub(crate) struct BoundedPoll;

impl wasmtime::component::HasData for BoundedPoll {
    type Data<'a> = Waiting<'a>;
}

/// What a guest waiting on the host needs: the resources it waits on and
/// when (or why) to stop waiting.
pub(crate) struct Waiting<'a> {
    pub(crate) table: &'a mut ResourceTable,
    pub(crate) limit: WaitLimit<'a>,
}

/// When a wait must end: the call's deadline or its cancellation, which
/// is then recorded as the call's interruption.
pub(crate) struct WaitLimit<'a> {
    pub(crate) deadline: Instant,
    pub(crate) cancel: Option<&'a CancelToken>,
    pub(crate) interrupted: &'a mut Option<ErrorKind>,
}

impl CallState {
    /// The call's wait limit: its deadline, cancellation and interruption.
    pub(crate) fn wait_limit(&mut self) -> WaitLimit<'_> {
        WaitLimit {
            deadline: self.deadline,
            cancel: self.cancel.as_ref(),
            interrupted: &mut self.interrupted,
        }
    }
}

/// The getter the linker takes for [`BoundedPoll`].
pub(crate) fn waiting(state: &mut CallState) -> Waiting<'_> {
    let state = state.reached();
    Waiting {
        table: &mut state.table,
        limit: WaitLimit {
            deadline: state.deadline,
            cancel: state.cancel.as_ref(),
            interrupted: &mut state.interrupted,
        },
    }
}

/// Run one call of the tool `tool` (linked as `pre`) in a fresh store,
/// holding one of the runtime's call slots; the call may fan out (see
/// [`super::fanout`]).
pub(crate) fn run(
    runtime: &Arc<Runtime>,
    tool: &str,
    pre: &ToolPluginPre<CallState>,
    req: &CallRequest<'_>,
) -> Outcome {
    let _slot = runtime.slot();
    let fanout = Fanout {
        runtime: Arc::clone(runtime),
        tool: Arc::from(tool),
        pre: pre.clone(),
        args: req.args.to_owned(),
        context: req.context.clone(),
        grant: req.grant.clone(),
        limits: req.limits.clone(),
        settings: req.settings.to_owned(),
        deadline: deadline(req.limits.timeout),
        cancel: req.cancel.cloned(),
        broker: req.broker.cloned(),
        paths: req.paths.cloned(),
        progress: req.progress.cloned(),
        services: req.services.cloned(),
    };
    execute(runtime, tool, pre, req, None, Some(fanout))
}

/// One share of a fanned-out call: no slot of its own (the caller holds
/// one, and its worker permits bound these runs), no further fan-out.
pub(crate) fn run_share(
    runtime: &Arc<Runtime>,
    tool: &str,
    pre: &ToolPluginPre<CallState>,
    req: &CallRequest<'_>,
    share: &str,
) -> Outcome {
    execute(runtime, tool, pre, req, Some(share), None)
}

fn execute(
    runtime: &Arc<Runtime>,
    tool: &str,
    pre: &ToolPluginPre<CallState>,
    req: &CallRequest<'_>,
    share: Option<&str>,
    fanout: Option<Fanout>,
) -> Outcome {
    // wasmtime-wasi's synchronous host functions run their (here always
    // immediately ready) futures on the ambient tokio runtime; without one
    // they fall back to a shared runtime and a forced yield, which costs
    // microseconds on every WASI call. The thread's call runtime, entered
    // for the call, makes each WASI call a plain function call.
    // A tool granted the network is the exception: wasi:http spawns each
    // request onto the ambient runtime, which only a runtime with its own
    // workers and I/O (wasmtime-wasi's shared one) drives while the guest
    // waits. (Without a grant, a request spawned on the call runtime runs
    // when the guest waits for it (imports/poll.rs) and is refused.)
    if !req.grant.network.is_empty() {
        return execute_in_runtime(runtime, tool, pre, req, share, fanout);
    }
    CALL_RUNTIME.with(|rt| {
        let _ambient = rt.as_ref().map(tokio::runtime::Runtime::enter);
        execute_in_runtime(runtime, tool, pre, req, share, fanout)
    })
}

fn execute_in_runtime(
    runtime: &Arc<Runtime>,
    tool: &str,
    pre: &ToolPluginPre<CallState>,
    req: &CallRequest<'_>,
    share: Option<&str>,
    fanout: Option<Fanout>,
) -> Outcome {
    let spare = share
        .is_none()
        .then(|| runtime.spares.take(tool, spare::code_of(pre), req.limits))
        .flatten();
    let (mut store, captured, made) = match spare {
        Some(spare) => {
            let (store, captured, instance) = spare.install(runtime, tool, req, fanout)?;
            (store, captured, Some(instance))
        }
        None => {
            let engine = pre.instance_pre().engine();
            let (store, captured) = new_store(runtime, engine, Some(runtime), tool, req, fanout)?;
            (store, captured, None)
        }
    };
    let ctx = wit::CallContext {
        call_id: req.context.call_id.to_string(),
        agent: req.context.agent.clone(),
        session: req.context.session.clone(),
        channel: req.context.channel.clone(),
        chat: req.context.chat.clone(),
        workspace_root: req
            .grant
            .workspace
            .and(req.workspace)
            .map(|p| p.display().to_string()),
        dry_run: req.context.dry_run,
        settings: req.settings.to_owned(),
        share: share.map(str::to_owned),
    };
    let mut started = match share {
        Some(_) => Started::AsShare,
        None => Started::OnSpare,
    };
    let instance = match made {
        Some(instance) => instance,
        None => {
            let at = Instant::now();
            let instance = pre.instantiate(&mut store);
            if share.is_none() {
                started = Started::AtCall(at.elapsed());
            }
            instance
        }
        .map_err(|e| {
            let stderr = captured.finish(tool, &ctx.call_id);
            if store.data().limiter.memory_denied || store.data().limiter.table_denied {
                classify(&e, store.data(), req.limits, &stderr)
            } else {
                CallError::new(
                    ErrorKind::Failed,
                    format!("the tool `{tool}` could not start: {e}"),
                )
            }
        })?,
    };
    let result = instance
        .toolhost_plugin_tool()
        .call_call(&mut store, req.args, &ctx);
    let stderr = captured.finish(tool, &ctx.call_id);
    let outcome = match result {
        Ok(Ok(output)) => {
            let mut out = convert_output(output, req.limits.max_output_bytes, tool);
            note_hidden(&mut out, store.data().paths.hidden());
            Ok(out)
        }
        Ok(Err(err)) => Err(with_notes(
            out_of_memory_if_refused(
                convert_error(err, &store.data().stopped_shares),
                store.data(),
                req.limits,
            ),
            store.data().paths.notes(),
        )),
        Err(err) => Err(classify(&err, store.data(), req.limits, &stderr)),
    };
    spare::finish(runtime, tool, pre, req.limits, store, started);
    outcome
}

/// Say how many secret paths listings left out (never which), so a
/// search that found nothing says why it may have.
fn note_hidden(out: &mut PluginOutput, hidden: usize) {
    if hidden > 0 {
        let what = if hidden == 1 {
            "1 secret path was".to_owned()
        } else {
            format!("{hidden} secret paths were")
        };
        if !out.content.is_empty() && !out.content.ends_with('\n') {
            out.content.push('\n');
        }
        out.content.push_str(&format!(
            "[{what} left out: toolhost keeps secrets from every tool; a person \
             can allow a path with `not_secret` under [paths] in a trusted toolhost.toml]"
        ));
    }
}

/// The tool's error with why toolhost refused paths during the call (a
/// tool sees only "access denied" from the filesystem), each note once.
fn with_notes(mut err: CallError, notes: &[String]) -> CallError {
    for note in notes {
        if !err.message.contains(note.as_str()) {
            err.message.push_str(&format!("\n{note}."));
        }
    }
    err
}

/// Ask a freshly prepared plugin what it is, in an empty sandbox: its
/// `describe()` answer, and the environment variables it declares (its
/// optional `environment` export).
pub(crate) fn describe(
    runtime: &Runtime,
    pre: &ToolPluginPre<CallState>,
) -> Result<(wit::ToolInfo, Vec<String>), String> {
    in_empty_sandbox(
        runtime,
        pre.instance_pre().engine(),
        "describe()",
        |store| {
            let instance = pre.instance_pre().instantiate(&mut *store)?;
            let plugin = crate::bindings::v0_1_0::ToolPlugin::new(&mut *store, &instance)?;
            let info = plugin.toolhost_plugin_tool().call_describe(&mut *store)?;
            Ok((info, declared_env(store, &instance)?))
        },
    )
}

/// Run `f` on a store of `engine` in an empty sandbox (no grant, no
/// settings, a 10 s deadline): what `describe()` and pre-initialisation
/// run in. An error says what `what` is and why it failed.
pub(crate) fn in_empty_sandbox<T>(
    runtime: &Runtime,
    engine: &wasmtime::Engine,
    what: &str,
    f: impl FnOnce(&mut Store<CallState>) -> wasmtime::Result<T>,
) -> Result<T, String> {
    let limits = Limits {
        timeout: Duration::from_secs(10),
        ..runtime.limits.clone()
    };
    let _slot = runtime.slot();
    let label = format!("({what})");
    let (mut store, captured) =
        empty_store(runtime, engine, &label, &limits).map_err(|e| e.message)?;
    let call_id = store.data().context.call_id.to_string();
    f(&mut store).map_err(|e| {
        let stderr = captured.finish(&label, &call_id);
        let err = classify(&e, store.data(), &limits, &stderr);
        format!("its {what} failed: {}", err.message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // A tool may pass a share's stop on, but not invent one.
    #[test]
    fn a_stopped_error_keeps_its_kind_only_if_a_share_stopped_that_way() {
        let stopped = |why| {
            wit::ToolError::Stopped(wit::Stopped {
                why,
                message: "share 2 ran out of memory".to_owned(),
                hint: Some("split the work finer".to_owned()),
            })
        };
        let passed_on = convert_error(stopped(wit::Stop::OutOfMemory), &[ErrorKind::OutOfMemory]);
        assert_eq!(passed_on.kind, ErrorKind::OutOfMemory);
        assert_eq!(passed_on.message, "share 2 ran out of memory");
        assert_eq!(passed_on.hint.as_deref(), Some("split the work finer"));
        let invented = convert_error(stopped(wit::Stop::Timeout), &[ErrorKind::OutOfMemory]);
        assert_eq!(invented.kind, ErrorKind::Failed);
        assert_eq!(
            convert_error(stopped(wit::Stop::Trap), &[]).kind,
            ErrorKind::Failed
        );
    }

    /// A core module of `count` entries in section `id` (memories or
    /// tables), each empty: hand-encoded, so the test needs no assembler.
    fn module_with(engine: &wasmtime::Engine, id: u8, entry: &[u8], count: u8) -> wasmtime::Module {
        let mut section = vec![count];
        for _ in 0..count {
            section.extend_from_slice(entry);
        }
        let mut bytes = b"\0asm\x01\0\0\0".to_vec();
        bytes.push(id);
        bytes.push(u8::try_from(section.len()).expect("small"));
        bytes.extend(section);
        wasmtime::Module::new(engine, &bytes).expect("valid module")
    }

    // A runtime without an instance pool (`toolhost call`) holds each
    // call's component to the pool's per-component maxima all the same
    // (the pool itself is stricter still: one memory and one table per
    // core module): the store's limiter enforces them.
    #[test]
    fn a_call_store_holds_the_pools_per_component_maxima_without_a_pool() {
        let engine = wasmtime::Engine::new(&super::super::engine_config(2, false)).expect("engine");
        let store = || {
            let mut store = Store::new(
                &engine,
                CallLimiter {
                    memory_bytes: 1 << 20,
                    memory_denied: false,
                    table_denied: false,
                },
            );
            store.limiter(|l| l);
            store
        };
        let memories = |n| module_with(&engine, 5, &[0, 0], n);
        let tables = |n| module_with(&engine, 4, &[0x70, 0, 0], n);
        let max_memories = u8::try_from(MEMORIES_PER_COMPONENT).expect("small");
        let max_tables = u8::try_from(TABLES_PER_COMPONENT).expect("small");
        let fits = |m: &wasmtime::Module| wasmtime::Instance::new(&mut store(), m, &[]).is_ok();
        assert!(fits(&memories(max_memories)));
        assert!(!fits(&memories(max_memories + 1)));
        assert!(fits(&tables(max_tables)));
        assert!(!fits(&tables(max_tables + 1)));
        // Spread over instances of one store, the same.
        let one_memory = memories(1);
        let mut spread = store();
        for _ in 0..max_memories {
            wasmtime::Instance::new(&mut spread, &one_memory, &[]).expect("within the maximum");
        }
        assert!(wasmtime::Instance::new(&mut spread, &one_memory, &[]).is_err());
        let empty = memories(0);
        let mut one = store();
        for _ in 0..CORE_INSTANCES_PER_COMPONENT {
            wasmtime::Instance::new(&mut one, &empty, &[]).expect("within the maximum");
        }
        assert!(wasmtime::Instance::new(&mut one, &empty, &[]).is_err());
    }
}
