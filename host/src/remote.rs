//! Remote MCP servers as tools (the Python tool system's MCPToolAdapter): each tool of a
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

use crate::broker::{BrokerCall, Piped};
use crate::broker::{CommandRequest, Program};
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
mod wire;
pub(crate) use wire::http_client;
use wire::*;
mod server;
use server::*;

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
    /// These of its tools (by its names) change nothing.
    pub read_only_tools: Vec<String>,
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
            .map_err(crate::broker::CommandError::into_message)
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
/// sensitive unless the server is read-only. The description is the
/// server's text, so it reaches the model between the untrusted-content
/// markers, as a web page does ([`toolhost_shared::untrusted`]); one that
/// speaks as toolhost or the system is warned about at load.
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
            |d| {
                warn_if_it_speaks_for_us(local, &spec.name, d);
                toolhost_shared::untrusted::wrap(
                    &remote_source(&spec.name, &tool.name),
                    &cut(d.to_owned(), MAX_DESCRIPTION_BYTES),
                )
            },
        );
    let title = tool
        .title
        .clone()
        .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
        .unwrap_or_default();
    let read_only = spec.read_only || spec.read_only_tools.iter().any(|t| *t == tool.name);
    ToolInfo {
        name: local.to_owned(),
        description,
        input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
        output_schema: tool
            .output_schema
            .as_ref()
            .map(|s| serde_json::Value::Object((**s).clone())),
        sensitive: !read_only,
        capabilities: Vec::new(),
        version: String::new(),
        title,
        idempotent: read_only,
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
