//! The MCP server: every visible tool of the [`Executor`] over the Model
//! Context Protocol (rmcp), on stdio ([`serve_stdio`]) or streamable HTTP
//! ([`http::serve_http`]).
//!
//! - `tools/list` is the executor's MCP schemas (input and output schema,
//!   `readOnlyHint`/`destructiveHint`), so it shows what the active profile
//!   shows.
//! - `tools/call` runs through [`Executor::call`] on a call thread
//!   (pool.rs: one per core, more only while calls are stuck); the
//!   runtime's slot semaphore (`max_concurrent_calls`, which sizes the
//!   instance pool) bounds how many run in a sandbox at once, so calls
//!   waiting for a person hold no slot. A tool error is a result with
//!   `isError: true` and the model-facing message; an unknown tool or
//!   malformed parameters are JSON-RPC errors (-32602).
//! - `notifications/cancelled` cancels the call's token: the instance is
//!   interrupted at its next epoch tick and a brokered process group killed.
//! - Confirmation asks the client through elicitation when it supports it;
//!   otherwise the mode decides, and a refusal says how to allow the call.
//! - When the tool set changes (plugins reloaded), every connected client
//!   gets `notifications/tools/list_changed`.
//! - A cut command output is also a resource of the client that ran it
//!   (`toolhost://outputs/ID`, resources.rs), linked from the result.
//! - Over stdio, with no workspace configured, the client's first root
//!   becomes the workspace (else the current directory). Over HTTP, where
//!   clients come and go, the workspace is fixed at start.

mod call;
pub mod cluster;
use call::is_modern;
mod confirm;
pub mod http;
pub mod logging;
mod pool;
mod resources;
mod rounds;
pub mod sessions;
pub(crate) mod stdio;
pub use stdio::serve_stdio;
mod subscriptions;
mod tasks;

use crate::executor::{CallOptions, Executor, Upkeep};
use crate::schema::{SchemaFormat, mcp_structured};
use crate::types::confirm::Confirmer;
use crate::types::context::{CallContext, CancelToken, Progress};
use crate::types::result::{ErrorKind, ToolResult};
use confirm::{Elicit, NoElicitation, supports_elicitation};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    Implementation, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::model::{CancelTaskParams, GetTaskParams, GetTaskResult, SubscriptionFilter};
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
mod roots;
use resources::one_page;
use roots::*;
mod progress;
use progress::*;
mod answer;
use answer::*;

/// How long a 2026-07-28 client may keep a tool list without asking again.
const LIST_FRESH_MS: u64 = 60_000;

/// How long the client has to answer `roots/list`.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(5);

/// How `toolhost serve` behaves.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The most call threads (calls waiting for a person or a command hold
    /// one each); 0 means `2 × max_concurrent_calls + 16`.
    pub max_call_threads: usize,
    /// How often the plugin directories are checked for changes
    /// ([`Upkeep::reload_every`]; `None`: never).
    pub reload_interval: Option<Duration>,
    /// What the person should know, added to the instructions (e.g. the
    /// workspace configuration is not trusted, so the defaults are used).
    pub notice: Option<String>,
    /// Once serving, compile every tool ahead of its first call
    /// ([`Upkeep::compile_ahead`]; `toolhost serve` sets it).
    pub compile_ahead: bool,
    /// Compile ahead in helper processes running this program, the
    /// `toolhost` binary ([`Upkeep::compile_helper`]; serve sets itself).
    pub compile_helper: Option<PathBuf>,
    /// Let go of loaded code after this long with no call
    /// ([`Upkeep::unload_idle`]). `None`: never.
    pub unload_idle: Option<Duration>,
    /// This server as one replica of several (HTTP): requests naming
    /// another replica's ids go to it ([`cluster`]).
    pub cluster: Option<Arc<cluster::Cluster>>,
    /// List output schemas and answer `structuredContent` (with the text
    /// in it) besides `content`; by default a result is its text alone.
    pub structured_output: bool,
}

/// How long a `tools/list_changed` notification may take to one client.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the server stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The transport failed (stdio closed abnormally, a socket error).
    #[error("MCP transport: {0}")]
    Transport(String),
    /// The HTTP listener could not start.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The options cannot be used (e.g. a public address without a token).
    #[error("{0}")]
    Options(String),
}

/// The rmcp handler; one per connection (HTTP sessions share `Shared`).
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

/// One client's connection (a stdio connection or an HTTP session). Call
/// contexts carry its id, so what the client starts is its own: its
/// background commands and kept outputs, todo_manager's plan. When the
/// last handler clone drops (the connection closed, the session was
/// deleted or expired), the client's background commands are killed.
struct Session {
    id: Arc<str>,
    executor: Arc<Executor>,
    /// The log level the client chose (`logging/setLevel`).
    level: logging::ClientLevel,
}

impl Session {
    /// A fresh session, its id unique within this process.
    fn new(executor: &Arc<Executor>) -> Arc<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self::named(
            executor,
            format!(
                "mcp-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
        )
    }

    /// The session called `id`.
    fn named(executor: &Arc<Executor>, id: String) -> Arc<Self> {
        Arc::new(Self {
            id: Arc::from(id),
            executor: Arc::clone(executor),
            level: logging::ClientLevel::default(),
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let killed = self.executor.end_session(&self.id);
        if killed > 0 {
            tracing::info!(session = %self.id, killed, "the client left: its background commands were killed");
        }
    }
}

struct Shared {
    executor: Arc<Executor>,
    pool: pool::CallPool,
    /// Connected clients, told when the tool list changes.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// The cancel tokens of the calls running now, by a local id.
    running: Mutex<HashMap<u64, CancelToken>>,
    next_call: AtomicU64,
    /// One workspace resolution (from roots) at a time.
    workspace: tokio::sync::Mutex<()>,
    /// The workspace was set before any client came (configuration,
    /// `--workspace`, or HTTP's start directory): roots never change it.
    workspace_fixed: bool,
    /// `mcp` plus the transport, for call contexts and logs.
    channel: &'static str,
    /// See [`ServeOptions::notice`].
    notice: Option<String>,
    /// The state of the credentials whose requests carry no session
    /// (2026-07-28 over HTTP): their background commands and kept outputs,
    /// by credential, for as long as the server runs.
    principals: Mutex<HashMap<Arc<str>, Arc<Session>>>,
    /// Confirmations of 2026-07-28 clients (rounds.rs).
    rounds: rounds::Rounds,
    /// See [`ServeOptions::cluster`].
    cluster: Option<Arc<cluster::Cluster>>,
    /// Calls that became tasks (tasks.rs).
    tasks: tasks::Tasks,
    /// See [`ServeOptions::structured_output`].
    structured: bool,
}

impl McpServer {
    /// A server over `executor`; starts the tasks that watch for tool
    /// changes, so it must be created inside a tokio runtime.
    pub fn new(executor: Arc<Executor>, options: &ServeOptions, channel: &'static str) -> Self {
        // One core is the protocol thread's.
        let cores = std::thread::available_parallelism()
            .map_or(2, std::num::NonZero::get)
            .saturating_sub(1)
            .max(1);
        let max_threads = match options.max_call_threads {
            0 => 2 * executor.runtime().max_concurrent_calls() + 16,
            n => n,
        };
        if let Some(cluster) = &options.cluster {
            executor.broker().set_handle_suffix(cluster.suffix());
        }
        let session = Session::new(&executor);
        let workspace_fixed = executor.workspace().is_some();
        let server = Self {
            shared: Arc::new(Shared {
                pool: pool::CallPool::new(cores, max_threads),
                executor,
                peers: Mutex::new(Vec::new()),
                running: Mutex::new(HashMap::new()),
                next_call: AtomicU64::new(0),
                workspace: tokio::sync::Mutex::new(()),
                workspace_fixed,
                channel,
                notice: options.notice.clone(),
                principals: Mutex::new(HashMap::new()),
                rounds: rounds::Rounds::new(options.cluster.as_ref().map_or("", |c| c.suffix())),
                tasks: tasks::Tasks::new(options.cluster.as_ref().map_or("", |c| c.suffix())),
                cluster: options.cluster.clone(),
                structured: options.structured_output,
            }),
            session,
        };
        server.spawn_change_notifier();
        // Remote MCP servers connect in the background; their tools come
        // with a tools/list_changed.
        server.shared.executor.start_remote_servers();
        server.shared.executor.start_upkeep(&Upkeep {
            reload_every: options.reload_interval,
            compile_ahead: options.compile_ahead,
            compile_helper: options.compile_helper.clone(),
            unload_idle: options.unload_idle,
        });
        server
    }

    /// Tell every connected client when the visible tools change.
    fn spawn_change_notifier(&self) {
        let shared = Arc::downgrade(&self.shared);
        let mut changes = self.shared.executor.changes();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                let peers: Vec<Peer<RoleServer>> = {
                    let mut peers = shared.peers.lock().unwrap_or_else(PoisonError::into_inner);
                    peers.retain(|p| !p.is_transport_closed());
                    peers.clone()
                };
                // Each client on its own, so a stuck one delays nobody.
                for peer in peers {
                    tokio::spawn(async move {
                        let sent =
                            tokio::time::timeout(NOTIFY_TIMEOUT, peer.notify_tool_list_changed())
                                .await;
                        if !matches!(sent, Ok(Ok(()))) {
                            tracing::debug!("cannot send tools/list_changed to a client");
                        }
                    });
                }
            }
        });
    }

    fn executor(&self) -> &Arc<Executor> {
        &self.shared.executor
    }

    /// The guidance for the tools clients see, with the notice (if any)
    /// first, so the person sees why their settings are not used.
    fn instructions(&self) -> String {
        let guidance = self.executor().instructions(None);
        match &self.shared.notice {
            Some(notice) => format!("Note for the person: {notice}\n\n{guidance}"),
            None => guidance,
        }
    }

    /// Send this client the log lines meant for it, at its level, until it
    /// leaves.
    fn spawn_log_forwarder(&self, peer: Peer<RoleServer>) {
        let session = Arc::downgrade(&self.session);
        let mut lines = logging::subscribe();
        tokio::spawn(async move {
            loop {
                let line = tokio::select! {
                    line = lines.recv() => line,
                    // Look now and then whether the client is still there.
                    () = tokio::time::sleep(Duration::from_secs(30)) => {
                        if session.strong_count() == 0 || peer.is_transport_closed() {
                            return;
                        }
                        continue;
                    }
                };
                let line = match line {
                    Ok(line) => line,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let Some(note) = session.upgrade().and_then(|s| s.level.note(line, &s.id)) else {
                    if session.strong_count() == 0 {
                        return;
                    }
                    continue;
                };
                if logging::send(&peer, note).await.is_err() && peer.is_transport_closed() {
                    return;
                }
            }
        });
    }

    /// The same server for a new connection (an HTTP session).
    pub fn for_new_session(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            session: Session::new(&self.shared.executor),
        }
    }

    /// How many calls are running now.
    pub fn calls_running(&self) -> usize {
        self.shared
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// `/metrics` for this server with `sessions` open.
    pub fn metrics_text(&self, sessions: usize) -> String {
        let principals = self
            .shared
            .principals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        self.executor().metrics_text(crate::executor::Serving {
            calls_in_flight: self.calls_running(),
            sessions,
            principals,
        })
    }

    /// Cancel every call still running (the transport closed): their
    /// plugins are interrupted and their commands killed.
    pub fn cancel_all(&self) {
        let running = self
            .shared
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for token in running.values() {
            token.cancel();
        }
    }
}

impl ServerHandler for McpServer {
    #[expect(
        deprecated,
        reason = "logging is deprecated only in the newest protocol, which toolhost does not negotiate"
    )]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_prompts()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
        .with_instructions(self.instructions())
    }

    /// Every revision up to 2026-07-28, negotiated per request: a
    /// 2026-07-28 request is stateless (its state is its principal's) and
    /// is asked to confirm through input-required results instead of
    /// elicitation.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        one_page(request)?;
        let agent = context.client_info().map(|info| info.name);
        let format = SchemaFormat::mcp(self.shared.structured);
        let schemas = self
            .executor()
            .schemas_for::<&str>(agent.as_deref(), None, format)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let tools = schemas
            .into_iter()
            .map(serde_json::from_value::<Tool>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| McpError::internal_error(format!("a tool schema: {e}"), None))?;
        let listed = ListToolsResult::with_all_items(tools);
        // The list changes only when tools are reloaded (and the client is
        // told): fresh for a minute, for this client's profile alone.
        Ok(if is_modern(&context) {
            listed
                .with_ttl_ms(LIST_FRESH_MS)
                .with_cache_scope(CacheScope::Private)
        } else {
            listed
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.run_call(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        one_page(request)?;
        let listed = resources::list(self.executor(), &self.session_for(&context).id);
        // Each call may keep an output: never fresh.
        Ok(if is_modern(&context) {
            listed.with_ttl_ms(0).with_cache_scope(CacheScope::Private)
        } else {
            listed
        })
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        one_page(request)?;
        Ok(resources::prompts(self.executor()))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        resources::prompt(self.executor(), &request.name).map(Into::into)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        one_page(request)?;
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let id = request.uri.strip_prefix("toolhost://outputs/");
        let uri = Some(request.uri.as_str());
        let forwarded = self
            .forwarded::<rmcp::model::ReadResourceResult>(
                &context,
                id,
                "resources/read",
                uri,
                &request,
            )
            .await?;
        if let Some(result) = forwarded {
            return Ok(result.into());
        }
        let session = self.session_for(&context);
        resources::read(self.executor(), &session.id, &request.uri).map(Into::into)
    }

    #[expect(
        deprecated,
        reason = "logging is deprecated only in the newest protocol, which toolhost does not negotiate"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.session.level.set(request.level);
        Ok(())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let id = Some(request.task_id.as_str());
        if let Some(got) = self
            .forwarded(&context, id, "tasks/get", id, &request)
            .await?
        {
            return Ok(got);
        }
        let owner = self.session_for(&context);
        let broker = self.executor().broker();
        let task = self.shared.tasks.get(&owner.id, &request.task_id, broker)?;
        Ok(GetTaskResult::new(task))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let id = Some(request.task_id.as_str());
        let forwarded =
            self.forwarded::<serde_json::Value>(&context, id, "tasks/cancel", id, &request);
        if forwarded.await?.is_some() {
            return Ok(());
        }
        let owner = self.session_for(&context);
        if let Some(command) = self.shared.tasks.cancel(&owner.id, &request.task_id)? {
            let executor = Arc::clone(self.executor());
            let owner = Arc::clone(&owner.id);
            tokio::task::spawn_blocking(move || {
                let _ = executor.broker().background.kill(&owner, &command);
            });
        }
        Ok(())
    }

    /// 2026-07-28 clients hear of changed tools on a subscription (the
    /// tool list is the only list every client shares).
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.follow_tools(context).await
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.follow_roots(&context.peer).await;
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.spawn_log_forwarder(context.peer.clone());
        {
            let mut peers = self
                .shared
                .peers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            peers.retain(|p| !p.is_transport_closed());
            peers.push(context.peer.clone());
        }
        self.ensure_workspace(&context.peer).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::result::{CallError, ErrorKind};

    #[test]
    fn progress_notes_carry_news_and_always_grow() {
        let progress = Progress::new();
        let token = ProgressToken(rmcp::model::NumberOrString::Number(1));
        let mut notes = Notes::new("grep", token, progress.clone());
        assert!(notes.next().is_none(), "no news and not quiet for long");
        progress.count(1, 4, "grep: 1 of 4 parts done");
        let first = notes.next().expect("news");
        assert_eq!((first.progress, first.total), (1.0, Some(4.0)));
        assert_eq!(first.message.as_deref(), Some("grep: 1 of 4 parts done"));
        assert!(notes.next().is_none(), "the same news is not sent twice");
        notes.last_sent -= PROGRESS_QUIET;
        let beat = notes.next().expect("a heartbeat after a quiet spell");
        assert!(beat.progress > first.progress, "{beat:?}");
        assert!(
            beat.message
                .as_deref()
                .is_some_and(|m| m.starts_with("grep running for")
                    && m.ends_with("last: grep: 1 of 4 parts done")),
            "{beat:?}"
        );
        progress.message("no count now");
        let next = notes.next().expect("news");
        assert!(next.progress > beat.progress, "{next:?}");
    }

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_path("file:///home/me/my%20proj"),
            Some(PathBuf::from("/home/me/my proj"))
        );
        assert_eq!(file_uri_path("https://example.com/x"), None);
        assert_eq!(file_uri_path("not a uri"), None);
    }

    #[test]
    fn tool_errors_are_results_with_the_message_and_hint() {
        let failed = ToolResult::failure(
            "read_file",
            CallError::new(ErrorKind::Retry, "`a` does not exist").with_hint("list the directory"),
        );
        let out = to_mcp(failed, Some(None));
        assert_eq!(out.is_error, Some(true));
        let text = serde_json::to_value(&out.content).unwrap().to_string();
        assert!(
            text.contains("error (retry): `a` does not exist\\nhint: list the directory"),
            "{text}"
        );
        let ok = to_mcp(ToolResult::success("read_file", "hello"), None);
        assert!(ok.structured_content.is_none(), "text alone by default");
        assert_ne!(ok.is_error, Some(true));
    }
}
