//! One configured remote server: its connection, listing, retries and calls.

use super::*;

/// Why a server is down.
#[derive(Debug, Clone)]
pub(super) struct Down {
    pub(super) error: String,
    retry_at: Instant,
    failures: u32,
}

/// One live connection.
pub(super) struct Link {
    service: RunningService<RoleClient, Listener>,
    /// A stdio server's process (killed when dropped) and its stderr's
    /// last lines.
    process: Option<(Piped, Arc<Mutex<VecDeque<String>>>)>,
}

/// One configured server and its connection.
pub(super) struct Server {
    pub(super) spec: ServerSpec,
    /// The connection, locked while connecting.
    pub(super) link: tokio::sync::Mutex<Option<Link>>,
    /// The connection's peer, for calls (no lock held while calling).
    pub(super) peer: Mutex<Option<Peer<RoleClient>>>,
    /// Its tools as last listed (`None`: never listed).
    pub(super) tools: Mutex<Option<Arc<Vec<Tool>>>>,
    pub(super) down: Mutex<Option<Down>>,
    pub(super) retry_scheduled: AtomicBool,
    /// A listing after `tools/list_changed` is running; another is wanted.
    pub(super) relisting: AtomicBool,
    pub(super) relist_again: AtomicBool,
    /// True once the first attempt to connect has ended.
    pub(super) tried: watch::Sender<bool>,
    pub(super) shared: Arc<Shared>,
    pub(super) handle: tokio::runtime::Handle,
}

impl Server {
    pub(super) fn listed(&self) -> Option<Arc<Vec<Tool>>> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn down_since(&self) -> Option<Down> {
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

    pub(super) fn wait_tried(&self, timeout: Duration) {
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
    pub(super) fn restart_in_background(self: &Arc<Self>) {
        let server = Arc::clone(self);
        self.handle.spawn(async move {
            let mut link = server.link.lock().await;
            *server.peer.lock().unwrap_or_else(PoisonError::into_inner) = None;
            *link = None;
            drop(link);
            let _ = server.connect().await;
        });
    }

    pub(super) fn connect_in_background(self: &Arc<Self>) {
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
                let service = match listener.serve(transport).await {
                    Ok(service) => service,
                    Err(e) => {
                        return Err(reachable(url)
                            .await
                            .unwrap_or_else(|| handshake_failed(&e, url)));
                    }
                };
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
                    env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    ..CommandRequest::new(Program::Argv(argv))
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
    pub(super) fn relist(self: &Arc<Self>, peer: Peer<RoleClient>) {
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
    pub(super) async fn call(
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

    /// A remote call's result: its text between the untrusted-content
    /// markers (the model reads it as the server's data, not as toolhost's
    /// word), its structured part when it fits.
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
        let source = remote_source(&self.spec.name, remote_name);
        if result.is_error == Some(true) {
            let message = if content.trim().is_empty() {
                format!(
                    "the MCP server `{}` says `{remote_name}` failed, without a message",
                    self.spec.name
                )
            } else {
                format!(
                    "the MCP server `{}` says `{remote_name}` failed:\n{}",
                    self.spec.name,
                    toolhost_shared::untrusted::wrap(&source, &content)
                )
            };
            return Err(CallError::new(ErrorKind::Failed, message));
        }
        Ok(PluginOutput {
            content: toolhost_shared::untrusted::wrap(&source, &content),
            structured,
            changed_paths: Vec::new(),
        })
    }
}

/// Why nothing could answer at `url`, found by connecting to its host and
/// port (the client's own error does not say it in words a person
/// reads): a refused connection, a name that does not resolve, no answer
/// in time. `None` when a connection opens: the failure was later.
async fn reachable(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = parsed.port_or_known_default()?;
    let connect = tokio::net::TcpStream::connect((host.as_str(), port));
    match tokio::time::timeout(Duration::from_secs(3), connect).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Some(format!(
            "nothing answers at {url} (connection refused); check that the server runs and the \
             url in its section"
        )),
        Ok(Err(e)) => Some(format!("cannot connect to {url}: {e}")),
        Err(_) => Some(format!(
            "{url} did not answer within 3 s; check the address and the network"
        )),
    }
}

/// Why connecting to the HTTP server at `url` failed, in plain words: the
/// innermost cause (a refused connection, a name that does not resolve,
/// a timeout, an HTTP status), never the client's type names.
fn handshake_failed(error: &(dyn std::error::Error + 'static), url: &str) -> String {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut innermost = error.to_string();
    while let Some(now) = cause {
        if let Some(io) = now.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => format!(
                    "nothing answers at {url} (connection refused); check that the server runs \
                     and the url in its section"
                ),
                std::io::ErrorKind::TimedOut => {
                    format!("{url} did not answer in time; check the address and the network")
                }
                _ => format!("cannot connect to {url}: {io}"),
            };
        }
        if let Some(http) = now.downcast_ref::<reqwest::Error>() {
            if let Some(status) = http.status() {
                return format!("{url} answered HTTP {status} to the MCP handshake");
            }
            if http.is_timeout() {
                return format!("{url} did not answer in time; check the address and the network");
            }
        }
        innermost = now.to_string();
        cause = now.source();
    }
    format!(
        "the MCP handshake with {url} failed: {}",
        without_type_names(&innermost)
    )
}

/// `text` without the bracketed Rust type names some client errors
/// carry (`[rmcp::transport::…]`).
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        let inside = &rest[open..open + close];
        out.push_str(&rest[..open]);
        if !inside.contains("::") {
            out.push_str(&rest[open..=open + close]);
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}
