//! The wire side of a remote server: capped listing, result text, the HTTP client, a stdio server's stderr, the client handler and the forwarded tool.

use super::*;

/// `text` cut at `max_bytes` (on a character boundary), with a note.
pub(super) fn cut(mut text: String, max_bytes: usize) -> String {
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
pub(super) async fn list_capped(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, ServiceError> {
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
pub(super) fn content_text(result: &CallToolResult) -> String {
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
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
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
pub(super) fn keep_last_lines(stderr: std::fs::File, lines: Arc<Mutex<VecDeque<String>>>) {
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

pub(super) fn stderr_note(lines: &Mutex<VecDeque<String>>) -> String {
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
pub(super) struct Listener {
    pub(super) server: Weak<Server>,
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
pub(super) struct RemoteTool {
    pub(super) server: Arc<Server>,
    pub(super) remote_name: String,
}

impl Forwarded for RemoteTool {
    fn call(&self, _: &Arc<crate::runtime::Runtime>, request: &CallRequest<'_>) -> Outcome {
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

/// Where a remote tool's text comes from, as its untrusted block says.
pub(super) fn remote_source(server: &str, tool: &str) -> String {
    format!("the MCP server `{server}`, tool `{tool}` (not toolhost)")
}

/// What in a description addresses the model as toolhost or the system
/// would: a hint for the person, never a check anything relies on (the
/// markers are what tell the model).
const SPEAKS_FOR_US: &[&str] = &[
    "system notice",
    "system message",
    "system prompt",
    "toolhost",
    "ignore previous",
    "ignore all previous",
    "ignore the above",
    "you must call",
    "call run_command",
    "run_command",
    "important instruction",
];

/// Warn (once per tool and description) when `description` of the remote
/// tool `local` of `server` speaks as toolhost or the system.
pub(super) fn warn_if_it_speaks_for_us(local: &str, server: &str, description: &str) {
    static WARNED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let lower = description.to_lowercase();
    let Some(phrase) = SPEAKS_FOR_US.iter().find(|p| lower.contains(*p)) else {
        return;
    };
    let key = format!("{local}\0{}", blake3::hash(description.as_bytes()).to_hex());
    let mut warned = WARNED.lock().unwrap_or_else(PoisonError::into_inner);
    if warned.contains(&key) {
        return;
    }
    warned.push(key);
    tracing::warn!(
        tool = local,
        server,
        phrase,
        "the description of a remote tool addresses the model as if it were toolhost or the \
         system; it reaches the model marked as untrusted content from that server, but look at \
         the server (`toolhost describe {local}` shows the whole text)"
    );
}
