//! Remote MCP servers as tools (seed 000's MCPToolAdapter): each tool of a
//! server configured under `[mcp_servers.NAME]` is registered as
//! `mcp_{NAME}_{tool}` and called through the same pipeline as any other
//! tool (schema check against the server's input schema, confirmation,
//! dry run, audit); only its run step differs, which sends `tools/call`
//! to the server instead of running a component.
//!
//! The client lives in the host (rmcp's, on a small runtime of its own):
//! an MCP session is long-lived (initialize once, a session id, the
//! server's `tools/list_changed` arriving at any time, a stdio server's
//! process kept running), which a fresh component per call cannot hold.
//! What a component's grant would bound is bounded here instead:
//!
//! - a `url` server is reached at that URL only (no redirects followed, no
//!   proxy from the environment), its bearer token read from the named
//!   variable and never sent over plain http to another machine;
//! - a `command` server is started through the broker, like any command
//!   of a tool: the policy's blocklist, the OS sandbox (namespaces, the
//!   view with secrets masked, Landlock, seccomp), the network only if its
//!   section says `network = true`; the process is the host's, killed when
//!   the server is dropped;
//! - every call has the call's deadline and cancellation (the request is
//!   cancelled at the server too), and its text is cut at the call's
//!   output limit.
//!
//! A server that cannot be reached never holds up the start or the other
//! tools: connecting happens in the background (or on first use), a
//! failure is retried with a growing pause, and a call of one of its tools
//! gets a `failed` result that says why and when it is tried again.

use crate::bindings::commands::{CommandRequest, Program};
use crate::broker::{BrokerCall, Piped};
use crate::plugin::{Forwarded, Origin, Plugin};
use crate::runtime::sandbox::{CallRequest, Outcome, PluginOutput};
use crate::types::context::CancelToken;
use crate::types::result::{CallError, ErrorKind};
use crate::types::tool_info::ToolInfo;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, Implementation, JsonObject, PaginatedRequestParams, ProtocolVersion,
    ServerResult, Tool,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceError, ServiceExt as _};
use std::collections::{BTreeMap, VecDeque};
use std::io::BufRead as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The prefix of every remote tool's name.
pub const PREFIX: &str = "mcp_";

/// Tool names are at most this long (the model APIs' limit).
const MAX_NAME_LEN: usize = 64;

/// The most tools offered from one server (a model cannot choose among
/// more, and each costs schema space in every request).
const MAX_TOOLS: usize = 256;

/// The most pages of `tools/list` asked for.
const MAX_PAGES: usize = 64;

/// The first pause before connecting again after a failure; it doubles
/// with each failure in a row, up to [`MAX_RETRY_PAUSE`].
const FIRST_RETRY_PAUSE: Duration = Duration::from_secs(2);
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(60);

/// How long a stopped call waits for its cancellation to be sent.
const CANCEL_GRACE: Duration = Duration::from_millis(200);

/// The most bytes of a server's error message kept.
const MAX_MESSAGE_BYTES: usize = 4096;

/// The most bytes of a tool's description kept.
const MAX_DESCRIPTION_BYTES: usize = 8192;

/// The lines of a stdio server's stderr kept for messages.
const STDERR_LINES: usize = 8;

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP at `url`.
    Http {
        /// The server's endpoint.
        url: String,
        /// The environment variable holding a bearer token, if the server
        /// wants one.
        bearer_token_env: Option<String>,
    },
    /// A process speaking MCP on its stdin and stdout, started through the
    /// broker in the workspace.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the broker's scrubbed environment.
        env: BTreeMap<String, String>,
        /// Whether it may reach the network.
        network: bool,
    },
}

/// When a server's tools are first listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Connect {
    /// Connect in the background as soon as the host starts.
    #[default]
    Start,
    /// Connect when the tools are first listed or one of them is called.
    FirstUse,
}

/// One `[mcp_servers.NAME]` section, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The name in tool names (snake_case).
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// Its tools change nothing: not sensitive (default: sensitive).
    pub read_only: bool,
    /// When it is connected.
    pub connect: Connect,
    /// How long connecting (and listing its tools) may take.
    pub connect_timeout: Duration,
    /// The longest one call may take (the call's own deadline is kept if
    /// shorter).
    pub call_timeout: Duration,
}

impl ServerSpec {
    /// What it is, for messages: its URL without the query (which may
    /// carry a key), or its command line.
    pub fn target(&self) -> String {
        match &self.transport {
            Transport::Http { url, .. } => url
                .parse::<http::Uri>()
                .map(|u| {
                    format!(
                        "{}://{}{}",
                        u.scheme_str().unwrap_or("http"),
                        u.authority().map_or("", |a| a.as_str()),
                        u.path()
                    )
                })
                .unwrap_or_else(|_| "its URL".to_owned()),
            Transport::Stdio { command, args, .. } => {
                let mut argv = vec![command.clone()];
                argv.extend(args.iter().cloned());
                crate::broker::shell_words(&argv)
            }
        }
    }
}

/// `name` in snake_case: lowercase ASCII letters and digits, every other
/// run of characters one `_`, none at either end (`getWeather` and
/// `get-weather` are both `get_weather`).
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if (gap || (c.is_ascii_uppercase() && prev_lower)) && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_lowercase());
        } else {
            gap = true;
            prev_lower = false;
        }
    }
    out
}

/// Starts the commands of stdio servers: a broker call made by the
/// executor (its mode, the configuration's approval), with the workspace
/// as it is when the command starts.
#[derive(Clone)]
pub(crate) struct Launcher {
    /// Everything but the workspace and the network.
    pub call: BrokerCall,
    /// The executor's workspace, read at each start.
    pub workspace: Arc<RwLock<Option<Arc<Path>>>>,
}

impl Launcher {
    fn spawn(&self, request: &CommandRequest, network: bool) -> Result<Piped, String> {
        let workspace = self
            .workspace
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_deref()
            .map(Path::to_path_buf);
        let call = BrokerCall {
            workspace,
            network,
            ..self.call.clone()
        };
        call.spawn_piped(request)
            .map_err(crate::bindings::commands::CommandError::into_message)
    }
}

/// What the servers share with their tasks.
struct Shared {
    /// A new value each time a server's tools change.
    changes: watch::Sender<u64>,
    /// Set by the executor before the first command server starts.
    launcher: Mutex<Option<Launcher>>,
}

/// Every configured remote MCP server.
pub struct RemoteServers {
    servers: Vec<Arc<Server>>,
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    shared: Arc<Shared>,
    first_use: AtomicBool,
}

impl std::fmt::Debug for RemoteServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServers")
            .field(
                "servers",
                &self
                    .servers
                    .iter()
                    .map(|s| &s.spec.name)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Drop for RemoteServers {
    fn drop(&mut self) {
        // Dropped maybe inside another runtime: nothing here may block.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl RemoteServers {
    /// The servers `specs` describes (nothing is connected yet). Names must
    /// be distinct snake_case.
    pub fn new(specs: Vec<ServerSpec>) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolhost-mcp-client")
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            changes: watch::Sender::new(0),
            launcher: Mutex::new(None),
        });
        let servers = specs
            .into_iter()
            .map(|spec| {
                Arc::new(Server {
                    spec,
                    link: tokio::sync::Mutex::new(None),
                    peer: Mutex::new(None),
                    tools: Mutex::new(None),
                    down: Mutex::new(None),
                    retry_scheduled: AtomicBool::new(false),
                    relisting: AtomicBool::new(false),
                    relist_again: AtomicBool::new(false),
                    tried: watch::Sender::new(false),
                    shared: Arc::clone(&shared),
                    handle: runtime.handle().clone(),
                })
            })
            .collect();
        Ok(Self {
            servers,
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            shared,
            first_use: AtomicBool::new(true),
        })
    }

    /// Whether `tool` is a name one of these servers' tools would have
    /// (`mcp_{server}_...`), listed yet or not.
    pub fn claims(&self, tool: &str) -> bool {
        self.server_of(tool).is_some()
    }

    /// The server whose tools are named like `tool` (the longest name
    /// that fits, for servers `a` and `a_b`).
    fn server_of(&self, tool: &str) -> Option<&Arc<Server>> {
        self.servers
            .iter()
            .filter(|s| {
                tool.strip_prefix(PREFIX)
                    .and_then(|rest| rest.strip_prefix(s.spec.name.as_str()))
                    .is_some_and(|rest| rest.len() > 1 && rest.starts_with('_'))
            })
            .max_by_key(|s| s.spec.name.len())
    }

    /// Why `tool`, which no listed tool is, may still be one of a server
    /// that cannot be reached (its tools are not known): that server's
    /// failure.
    pub(crate) fn unreachable(&self, tool: &str) -> Option<String> {
        let server = self.server_of(tool)?;
        let down = server.down_since()?;
        Some(format!(
            "`{tool}` may be a tool of the MCP server `{}` ({}), which cannot be reached: {}; \
             its tools are not known until it answers (toolhost tries again)",
            server.spec.name,
            server.spec.target(),
            down.error
        ))
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Run `task` on the clients' runtime.
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.handle.spawn(task);
    }

    /// A receiver that sees a new value each time a server's tools change
    /// (listed for the first time, changed on its `tools/list_changed`).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// How many times the servers' tools have changed.
    pub(crate) fn generation(&self) -> u64 {
        *self.shared.changes.borrow()
    }

    /// Use `launcher` for stdio servers from now on.
    pub(crate) fn set_launcher(&self, launcher: Launcher) {
        *self
            .shared
            .launcher
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(launcher);
    }

    /// Connect the servers configured to connect at start, in the
    /// background.
    pub(crate) fn connect_at_start(&self) {
        for server in self
            .servers
            .iter()
            .filter(|s| s.spec.connect == Connect::Start)
        {
            server.connect_in_background();
        }
    }

    /// The workspace was set or replaced: a stdio server already started
    /// runs in the old one (its view, its working directory), so it is
    /// started again in the new one; a server that failed (for want of a
    /// workspace, say) is tried again at once.
    pub(crate) fn workspace_changed(&self) {
        for server in &self.servers {
            let stdio = matches!(server.spec.transport, Transport::Stdio { .. });
            if stdio && *server.tried.borrow() {
                server.restart_in_background();
            } else if server.down_since().is_some() {
                server.connect_in_background();
            }
        }
    }

    /// The first time the tools are used: connect the servers configured
    /// to connect on first use. Each use then waits until each has been
    /// tried once (see [`RemoteServers::wait_tried`]).
    pub(crate) fn first_use(&self, launcher: impl FnOnce() -> Launcher) {
        if self.first_use.swap(false, Ordering::AcqRel) {
            let mut slot = self
                .shared
                .launcher
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if slot.is_none() {
                *slot = Some(launcher());
            }
            drop(slot);
            for server in self
                .servers
                .iter()
                .filter(|s| s.spec.connect == Connect::FirstUse)
            {
                server.connect_in_background();
            }
        }
        self.wait_tried(Connect::FirstUse);
    }

    /// Wait until every server configured to connect at start has been
    /// tried once: for a one-shot command that lists or calls tools once.
    pub(crate) fn wait_for_start(&self) {
        self.wait_tried(Connect::Start);
    }

    /// Wait until each server connecting `when` has been tried once
    /// (connected or failed), all together at most the longest of their
    /// connect timeouts. Never on a thread of an async runtime (an MCP
    /// server's protocol thread): there the tools arrive later, with a
    /// `tools/list_changed`.
    fn wait_tried(&self, when: Connect) {
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let started = Instant::now();
        for server in self.servers.iter().filter(|s| s.spec.connect == when) {
            if *server.tried.borrow() {
                continue;
            }
            let left =
                (started + server.spec.connect_timeout).saturating_duration_since(Instant::now());
            server.wait_tried(left);
        }
    }

    /// Every server's state, for `toolhost tools` and status messages:
    /// (name, target, tools listed, why it is down).
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|s| ServerStatus {
                name: s.spec.name.clone(),
                target: s.spec.target(),
                tools: s.listed().map(|t| t.len()),
                down: s.down_since().map(|d| d.error),
            })
            .collect()
    }

    /// The tools of every server, as plugins, and what could not be
    /// registered (where, why): names that collide after normalising, or
    /// that are too long.
    pub(crate) fn plugins(&self) -> (Vec<Plugin>, Vec<(String, String)>) {
        let mut plugins = Vec::new();
        let mut problems = Vec::new();
        for server in &self.servers {
            let Some(tools) = server.listed() else {
                continue;
            };
            if tools.len() > MAX_TOOLS {
                problems.push((
                    format!("[mcp_servers.{}]", server.spec.name),
                    format!(
                        "it lists {} tools; only the first {MAX_TOOLS} are offered",
                        tools.len()
                    ),
                ));
            }
            let mut seen: BTreeMap<String, String> = BTreeMap::new();
            for tool in tools.iter().take(MAX_TOOLS) {
                let local = format!("{PREFIX}{}_{}", server.spec.name, snake_case(&tool.name));
                let at = format!("[mcp_servers.{}] tool `{}`", server.spec.name, tool.name);
                if let Some(first) = seen.get(&local) {
                    problems.push((
                        at,
                        format!(
                            "its name and `{first}`'s are both `{local}` once normalised to \
                             snake_case; only `{first}` is offered (rename one on the server)"
                        ),
                    ));
                    continue;
                }
                if local.len() > MAX_NAME_LEN || snake_case(&tool.name).is_empty() {
                    problems.push((
                        at,
                        format!(
                            "`{local}` is not a usable tool name (empty or longer than \
                             {MAX_NAME_LEN} characters); shorten the server's name in \
                             [mcp_servers] or the tool's on the server"
                        ),
                    ));
                    continue;
                }
                seen.insert(local.clone(), tool.name.to_string());
                let info = tool_info(&local, tool, &server.spec);
                let forward = RemoteTool {
                    server: Arc::clone(server),
                    remote_name: tool.name.to_string(),
                };
                plugins.push(Plugin::forwarded(
                    info,
                    Origin::Remote(server.spec.name.clone()),
                    Arc::new(forward),
                ));
            }
        }
        (plugins, problems)
    }
}

/// One server's state, as [`RemoteServers::status`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// Its URL or command line.
    pub target: String,
    /// How many tools it listed (`None`: not listed yet).
    pub tools: Option<usize>,
    /// Why it is down, if it is.
    pub down: Option<String>,
}

/// A remote tool's [`ToolInfo`]: the server's description and schemas,
/// sensitive unless the server is read-only.
fn tool_info(local: &str, tool: &Tool, spec: &ServerSpec) -> ToolInfo {
    let description = tool
        .description
        .as_deref()
        .filter(|d| !d.trim().is_empty())
        .map_or_else(
            || {
                format!(
                    "The tool `{}` of the MCP server `{}`.",
                    tool.name, spec.name
                )
            },
            |d| cut(d.to_owned(), MAX_DESCRIPTION_BYTES),
        );
    let title = tool
        .title
        .clone()
        .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
        .unwrap_or_default();
    ToolInfo {
        name: local.to_owned(),
        description,
        input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
        output_schema: tool
            .output_schema
            .as_ref()
            .map(|s| serde_json::Value::Object((**s).clone())),
        sensitive: !spec.read_only,
        capabilities: Vec::new(),
        version: String::new(),
        title,
        idempotent: spec.read_only,
    }
}

/// Why a server is down.
#[derive(Debug, Clone)]
struct Down {
    error: String,
    retry_at: Instant,
    failures: u32,
}

/// One live connection.
struct Link {
    service: RunningService<RoleClient, Listener>,
    /// A stdio server's process (killed when dropped) and its stderr's
    /// last lines.
    process: Option<(Piped, Arc<Mutex<VecDeque<String>>>)>,
}

/// One configured server and its connection.
struct Server {
    spec: ServerSpec,
    /// The connection, locked while connecting.
    link: tokio::sync::Mutex<Option<Link>>,
    /// The connection's peer, for calls (no lock held while calling).
    peer: Mutex<Option<Peer<RoleClient>>>,
    /// Its tools as last listed (`None`: never listed).
    tools: Mutex<Option<Arc<Vec<Tool>>>>,
    down: Mutex<Option<Down>>,
    retry_scheduled: AtomicBool,
    /// A listing after `tools/list_changed` is running; another is wanted.
    relisting: AtomicBool,
    relist_again: AtomicBool,
    /// True once the first attempt to connect has ended.
    tried: watch::Sender<bool>,
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
}

impl Server {
    fn listed(&self) -> Option<Arc<Vec<Tool>>> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn down_since(&self) -> Option<Down> {
        self.down
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn live_peer(&self) -> Option<Peer<RoleClient>> {
        self.peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|p| !p.is_transport_closed())
    }

    fn wait_tried(&self, timeout: Duration) {
        let mut tried = self.tried.subscribe();
        let wait = async move {
            let _ = tokio::time::timeout(timeout, tried.wait_for(|t| *t)).await;
        };
        // Wait on this thread, whatever runtime it may be in.
        let (tx, rx) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            wait.await;
            let _ = tx.send(());
        });
        let _ = rx.recv_timeout(timeout + Duration::from_millis(100));
    }

    /// Keep `tools` as the server's list; tell the executor if it changed.
    fn set_tools(&self, tools: Vec<Tool>) {
        let mut slot = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        let same = slot
            .as_deref()
            .is_some_and(|old| serde_json::to_value(old).ok() == serde_json::to_value(&tools).ok());
        if !same {
            *slot = Some(Arc::new(tools));
            drop(slot);
            self.shared.changes.send_modify(|n| *n += 1);
        }
    }

    /// Drop the connection (a stdio server's process is killed with it)
    /// and connect again.
    fn restart_in_background(self: &Arc<Self>) {
        let server = Arc::clone(self);
        self.handle.spawn(async move {
            let mut link = server.link.lock().await;
            *server.peer.lock().unwrap_or_else(PoisonError::into_inner) = None;
            *link = None;
            drop(link);
            let _ = server.connect().await;
        });
    }

    fn connect_in_background(self: &Arc<Self>) {
        let server = Arc::clone(self);
        self.handle.spawn(async move {
            let _ = server.connect().await;
        });
    }

    /// Connect (if not connected) and list the tools; a failure is kept,
    /// and a retry scheduled.
    async fn connect(self: &Arc<Self>) -> Result<Peer<RoleClient>, String> {
        let mut link = self.link.lock().await;
        if let Some(peer) = self.live_peer() {
            return Ok(peer);
        }
        // A dead connection goes first: its process is killed.
        *link = None;
        let opened = match tokio::time::timeout(self.spec.connect_timeout, self.open()).await {
            Ok(opened) => opened,
            Err(_) => Err(format!(
                "it did not answer within {} s",
                self.spec.connect_timeout.as_secs()
            )),
        };
        let result = match opened {
            Ok((new_link, tools)) => {
                let peer = new_link.service.peer().clone();
                *link = Some(new_link);
                *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = Some(peer.clone());
                *self.down.lock().unwrap_or_else(PoisonError::into_inner) = None;
                self.set_tools(tools);
                tracing::info!(server = %self.spec.name, "connected to the MCP server");
                Ok(peer)
            }
            Err(error) => {
                self.failed(error.clone());
                Err(error)
            }
        };
        self.tried.send_replace(true);
        result
    }

    /// Note a failure and schedule the next try.
    fn failed(self: &Arc<Self>, error: String) {
        let mut down = self.down.lock().unwrap_or_else(PoisonError::into_inner);
        let failures = down.as_ref().map_or(0, |d| d.failures).saturating_add(1);
        let pause = FIRST_RETRY_PAUSE
            .saturating_mul(1 << failures.saturating_sub(1).min(6))
            .min(MAX_RETRY_PAUSE);
        tracing::warn!(server = %self.spec.name, target = %self.spec.target(), %error,
            retry_in_secs = pause.as_secs(), "cannot reach the MCP server");
        *down = Some(Down {
            error,
            retry_at: Instant::now() + pause,
            failures,
        });
        drop(down);
        *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        if !self.retry_scheduled.swap(true, Ordering::AcqRel) {
            let server = Arc::clone(self);
            self.handle.spawn(async move {
                tokio::time::sleep(pause).await;
                server.retry_scheduled.store(false, Ordering::Release);
                if server.live_peer().is_none() {
                    let _ = server.connect().await;
                }
            });
        }
    }

    /// Open a connection and list the tools.
    async fn open(self: &Arc<Self>) -> Result<(Link, Vec<Tool>), String> {
        let listener = Listener {
            server: Arc::downgrade(self),
        };
        let (service, process) = match &self.spec.transport {
            Transport::Http {
                url,
                bearer_token_env,
            } => {
                let client = http_client()?;
                let mut config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                        url.as_str(),
                    );
                if let Some(var) = bearer_token_env {
                    let token = std::env::var(var).map_err(|_| {
                        format!("its bearer token variable {var} is not set; export it before starting toolhost")
                    })?;
                    crate::net::credential_may_go_to(url, "the bearer token")?;
                    config = config.auth_header(token);
                }
                let transport =
                    rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
                let service = listener
                    .serve(transport)
                    .await
                    .map_err(|e| format!("the MCP handshake failed: {e}"))?;
                (service, None)
            }
            Transport::Stdio {
                command,
                args,
                env,
                network,
            } => {
                let launcher = self
                    .shared
                    .launcher
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
                    .ok_or("toolhost has not set up its command runner for MCP servers yet")?;
                let mut argv = vec![command.clone()];
                argv.extend(args.iter().cloned());
                let request = CommandRequest {
                    program: Program::Argv(argv),
                    cwd: None,
                    timeout_ms: None,
                    env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                };
                let network = *network;
                let mut piped =
                    tokio::task::spawn_blocking(move || launcher.spawn(&request, network))
                        .await
                        .map_err(|e| format!("starting its command failed: {e}"))?
                        .map_err(|e| format!("its command was not started: {e}"))?;
                let stderr = Arc::new(Mutex::new(VecDeque::new()));
                if let Some(err) = piped.stderr.take() {
                    keep_last_lines(err, Arc::clone(&stderr));
                }
                let (Some(stdin), Some(stdout)) = (piped.stdin.take(), piped.stdout.take()) else {
                    return Err("its command has no pipes".to_owned());
                };
                let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(stdout.into())
                    .map_err(|e| format!("cannot read its output: {e}"))?;
                let writer = tokio::net::unix::pipe::Sender::from_owned_fd(stdin.into())
                    .map_err(|e| format!("cannot write to it: {e}"))?;
                match listener.serve((reader, writer)).await {
                    Ok(service) => (service, Some((piped, stderr))),
                    Err(e) => {
                        // Give it a moment to say why on stderr.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let exit = piped.exited().map(|code| match code {
                            Some(code) => format!("; it exited with code {code}"),
                            None => "; it was killed by a signal".to_owned(),
                        });
                        return Err(format!(
                            "the MCP handshake failed: {e}{}{}",
                            exit.unwrap_or_default(),
                            stderr_note(&stderr)
                        ));
                    }
                }
            }
        };
        let tools = list_capped(service.peer())
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        Ok((Link { service, process }, tools))
    }

    /// The connection for a call: the live one, or a new one unless the
    /// server failed recently (then the failure, and when it is tried
    /// again).
    async fn peer_for_call(self: &Arc<Self>) -> Result<Peer<RoleClient>, String> {
        if let Some(peer) = self.live_peer() {
            return Ok(peer);
        }
        if let Some(down) = self.down_since() {
            let left = down.retry_at.saturating_duration_since(Instant::now());
            if !left.is_zero() {
                return Err(format!(
                    "{}; toolhost tries again in {} s",
                    down.error,
                    left.as_secs().max(1)
                ));
            }
        }
        self.connect().await
    }

    /// The connection broke during a call: note it so the next call
    /// reconnects.
    async fn lost(self: &Arc<Self>, why: String) {
        let link = self.link.lock().await;
        let note = link
            .as_ref()
            .and_then(|l| l.process.as_ref())
            .map(|(_, err)| stderr_note(err))
            .unwrap_or_default();
        drop(link);
        self.failed(format!("the connection was lost ({why}){note}"));
    }

    /// List the tools again after the server said they changed. One
    /// listing at a time: notifications that come meanwhile are answered
    /// by one more listing after it, however many they are.
    fn relist(self: &Arc<Self>, peer: Peer<RoleClient>) {
        self.relist_again.store(true, Ordering::Release);
        if self.relisting.swap(true, Ordering::AcqRel) {
            return;
        }
        let server = Arc::clone(self);
        self.handle.spawn(async move {
            loop {
                server.relist_again.store(false, Ordering::Release);
                match tokio::time::timeout(server.spec.connect_timeout, list_capped(&peer)).await {
                    Ok(Ok(tools)) => server.set_tools(tools),
                    Ok(Err(err)) => {
                        tracing::warn!(server = %server.spec.name, %err, "cannot list the MCP server's tools again");
                    }
                    Err(_) => {
                        tracing::warn!(server = %server.spec.name, "listing the MCP server's tools again took too long");
                    }
                }
                server.relisting.store(false, Ordering::Release);
                if !server.relist_again.load(Ordering::Acquire)
                    || server.relisting.swap(true, Ordering::AcqRel)
                {
                    return;
                }
            }
        });
    }

    /// One `tools/call`, mapped to a tool result; when `stop` is told, the
    /// request is cancelled at the server (`notifications/cancelled`).
    async fn call(
        self: Arc<Self>,
        remote_name: String,
        args: JsonObject,
        max_bytes: usize,
        stop: Arc<tokio::sync::Notify>,
    ) -> Outcome {
        let peer = self
            .peer_for_call()
            .await
            .map_err(|why| self.unreachable(why))?;
        let params = CallToolRequestParams::new(remote_name.clone()).with_arguments(args);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(err) => return Err(self.call_failed(&peer, &remote_name, err, max_bytes).await),
        };
        let answer = tokio::select! {
            answer = &mut handle.rx => answer,
            () = stop.notified() => {
                let reason = "the caller stopped waiting (cancelled or past its deadline)";
                if let Err(err) = handle.cancel(Some(reason.to_owned())).await {
                    tracing::debug!(%err, server = %self.spec.name, "cannot send notifications/cancelled");
                }
                return Err(CallError::new(ErrorKind::Cancelled, reason));
            }
        };
        match answer {
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                self.result(&remote_name, result, max_bytes)
            }
            Ok(Ok(_)) => Err(CallError::new(
                ErrorKind::Failed,
                format!(
                    "the MCP server `{}` answered `{remote_name}` with something other than a tool result",
                    self.spec.name
                ),
            )),
            Ok(Err(err)) => Err(self.call_failed(&peer, &remote_name, err, max_bytes).await),
            Err(_) => Err(self
                .call_failed(
                    &peer,
                    &remote_name,
                    ServiceError::TransportClosed,
                    max_bytes,
                )
                .await),
        }
    }

    /// The error of a server that cannot be reached.
    fn unreachable(&self, why: String) -> CallError {
        CallError::new(
            ErrorKind::Failed,
            format!(
                "the MCP server `{}` ({}) cannot be reached: {why}",
                self.spec.name,
                self.spec.target()
            ),
        )
        .with_hint("check that the server runs and its [mcp_servers] section is right; other tools are not affected")
    }

    /// A request that failed: the server's JSON-RPC error (cut at
    /// `max_bytes`), or a broken connection, noted so the next call
    /// reconnects.
    async fn call_failed(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
        remote_name: &str,
        err: ServiceError,
        max_bytes: usize,
    ) -> CallError {
        match err {
            ServiceError::McpError(error) => {
                let kind = if error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    ErrorKind::InvalidInput
                } else {
                    ErrorKind::Failed
                };
                CallError::new(
                    kind,
                    format!(
                        "the MCP server `{}` refused `{remote_name}`: {} (JSON-RPC error {})",
                        self.spec.name,
                        cut(error.message.to_string(), max_bytes.min(MAX_MESSAGE_BYTES)),
                        error.code.0
                    ),
                )
            }
            err => {
                let why = err.to_string();
                if peer.is_transport_closed()
                    || matches!(
                        err,
                        ServiceError::TransportClosed | ServiceError::TransportSend(_)
                    )
                {
                    self.lost(why.clone()).await;
                }
                self.unreachable(why)
            }
        }
    }

    fn result(&self, remote_name: &str, result: CallToolResult, max_bytes: usize) -> Outcome {
        let mut content = cut(content_text(&result), max_bytes);
        let mut structured = result.structured_content;
        if structured
            .as_ref()
            .is_some_and(|s| s.to_string().len() > max_bytes)
        {
            structured = None;
            content.push_str(&format!(
                "\n[toolhost: the server's structured result was larger than {max_bytes} bytes and was left out]"
            ));
        }
        if result.is_error == Some(true) {
            let message = if content.trim().is_empty() {
                format!(
                    "the MCP server `{}` says `{remote_name}` failed, without a message",
                    self.spec.name
                )
            } else {
                content
            };
            return Err(CallError::new(ErrorKind::Failed, message));
        }
        Ok(PluginOutput {
            content,
            structured,
            changed_paths: Vec::new(),
        })
    }
}

/// `text` cut at `max_bytes` (on a character boundary), with a note.
fn cut(mut text: String, max_bytes: usize) -> String {
    if text.len() > max_bytes {
        let mut at = max_bytes;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
        text.push_str(&format!(
            "\n[toolhost: the MCP server's answer was cut at {max_bytes} bytes]"
        ));
    }
    text
}

/// A server's tools, page by page: at most [`MAX_PAGES`] pages, and no
/// page asked for once more than [`MAX_TOOLS`] are in (a server cannot
/// make the host list forever).
async fn list_capped(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer.list_tools(params).await?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() || tools.len() > MAX_TOOLS {
            break;
        }
    }
    Ok(tools)
}

/// The text of a result's content blocks: text as it is, anything else
/// named with its type and size (the model reads text).
fn content_text(result: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &result.content {
        let value = serde_json::to_value(block).unwrap_or_default();
        let field = |name: &str| value.get(name).and_then(serde_json::Value::as_str);
        let part = match field("type").unwrap_or("") {
            "text" => field("text").unwrap_or("").to_owned(),
            "image" | "audio" => format!(
                "[{} {}, {} bytes of base64 not shown]",
                field("type").unwrap_or(""),
                field("mimeType").unwrap_or("of unknown type"),
                field("data").map_or(0, str::len)
            ),
            "resource_link" => format!("[resource link: {}]", field("uri").unwrap_or("")),
            "resource" => {
                let resource = value.get("resource");
                let text = resource
                    .and_then(|r| r.get("text"))
                    .and_then(|t| t.as_str());
                let uri = resource
                    .and_then(|r| r.get("uri"))
                    .and_then(|u| u.as_str())
                    .unwrap_or("");
                text.map_or_else(
                    || format!("[resource {uri}: binary, not shown]"),
                    str::to_owned,
                )
            }
            other => format!("[{other} content not shown]"),
        };
        parts.push(part);
    }
    if parts.is_empty()
        && let Some(data) = &result.structured_content
    {
        return data.to_string();
    }
    parts.join("\n")
}

/// The client of redirects-free HTTP: rustls with ring and the webpki
/// roots, no proxy taken from the environment.
fn http_client() -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot set up its HTTP client: {e}"))
}

/// Keep the last lines of a stdio server's stderr (on a thread of its own).
fn keep_last_lines(stderr: std::fs::File, lines: Arc<Mutex<VecDeque<String>>>) {
    let spawned = std::thread::Builder::new()
        .name("toolhost-mcp-stderr".to_owned())
        .spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                tracing::debug!(target: "toolhost::remote", "{line}");
                let mut kept = lines.lock().unwrap_or_else(PoisonError::into_inner);
                if kept.len() == STDERR_LINES {
                    kept.pop_front();
                }
                kept.push_back(line.chars().take(500).collect());
            }
        });
    if let Err(err) = spawned {
        tracing::debug!(%err, "cannot read an MCP server's stderr");
    }
}

fn stderr_note(lines: &Mutex<VecDeque<String>>) -> String {
    let kept = lines.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.is_empty() {
        String::new()
    } else {
        format!(
            "; its last lines on stderr: {}",
            kept.iter().cloned().collect::<Vec<_>>().join(" | ")
        )
    }
}

/// The client side of one connection: it hears the server's
/// `tools/list_changed`.
struct Listener {
    server: Weak<Server>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        )
        // The last version whose notifications need no subscription.
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            // Listed on a task of its own: the connection keeps reading.
            server.relist(context.peer);
        }
    }
}

/// One remote tool: its server and its name there.
struct RemoteTool {
    server: Arc<Server>,
    remote_name: String,
}

impl Forwarded for RemoteTool {
    fn call(&self, request: &CallRequest<'_>) -> Outcome {
        let args = match serde_json::from_str::<serde_json::Value>(request.args) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => JsonObject::new(),
        };
        let timeout = request.limits.timeout.min(self.server.spec.call_timeout);
        let stop = Arc::new(tokio::sync::Notify::new());
        let task = Arc::clone(&self.server).call(
            self.remote_name.clone(),
            args,
            request.limits.max_output_bytes,
            Arc::clone(&stop),
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let running = self.server.handle.spawn(async move {
            let _ = tx.send(task.await);
        });
        let until = Instant::now() + timeout;
        let stopped = |kind: ErrorKind, what: String| {
            // The task cancels the request at the server; it has a moment
            // to send that before it is dropped.
            stop.notify_one();
            let _ = rx.recv_timeout(CANCEL_GRACE);
            running.abort();
            Err(CallError::new(kind, what))
        };
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(Duration::from_millis(20))) {
                Ok(outcome) => return outcome,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(CallError::new(
                        ErrorKind::Failed,
                        "the MCP client stopped before the server answered",
                    ));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if request.cancel.is_some_and(CancelToken::is_cancelled) {
                        return stopped(
                            ErrorKind::Cancelled,
                            format!(
                                "the call was cancelled; the request to the MCP server `{}` was cancelled too",
                                self.server.spec.name
                            ),
                        );
                    }
                    if left.is_zero() {
                        return stopped(
                            ErrorKind::Timeout,
                            format!(
                                "the MCP server `{}` did not answer `{}` within {} s; the request was cancelled",
                                self.server.spec.name,
                                self.remote_name,
                                timeout.as_secs_f64()
                            ),
                        );
                    }
                }
            }
        }
    }

    fn dry_run(&self, args: &serde_json::Value) -> String {
        format!(
            "[dry run] would send `tools/call` of `{}` with {args} to the MCP server `{}` ({}); nothing was sent",
            self.remote_name,
            self.server.spec.name,
            self.server.spec.target()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_snake_case() {
        for (name, want) in [
            ("getWeather", "get_weather"),
            ("get-weather", "get_weather"),
            ("Get Weather!", "get_weather"),
            ("HTTPServer", "httpserver"),
            ("read_file", "read_file"),
            ("v2Search", "v2_search"),
            ("--", ""),
        ] {
            assert_eq!(snake_case(name), want, "{name}");
        }
    }
}
