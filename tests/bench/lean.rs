//! A lean MCP client for the MCP section: JSON-RPC bodies written as text
//! and answers only checked for a result, over a pipe to `toolhost serve`
//! or HTTP/1.1 connections (hyper's) to `serve --http`. rmcp's client
//! builds and validates typed messages and runs a service per connection,
//! which on these 2 cores costs more than the server it measures; this
//! one leaves the cores to the server, so stdio and HTTP, a session and a
//! stateless request, are compared on what the server does.

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::oneshot;

/// The `_meta` a 2026-07-28 request carries instead of a session.
const META_2026: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}"#;

/// A `tools/call` of `tool` with `arguments` (a JSON object) numbered
/// `id`, with 2026-07-28's `_meta` or not.
fn call_body(id: u64, tool: &str, arguments: &str, stateless: bool) -> String {
    let meta = if stateless {
        META_2026
    } else {
        r#""_meta":{}"#
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},{meta}}}}}"#
    )
}

/// A JSON-RPC answer that is a successful result (of `tools/call`, not an
/// error result), or the answer itself to report.
fn check(answer: &str) -> Result<(), String> {
    let ok = answer.contains(r#""result""#) && !answer.contains(r#""isError":true"#);
    ok.then_some(())
        .ok_or_else(|| answer.chars().take(400).collect())
}

/// One client connection's way of making a numbered call.
pub enum Lean {
    /// Lines to and from `toolhost serve`'s standard streams.
    Stdio(Stdio),
    /// POSTs to `serve --http`: in a session when `session` is set,
    /// otherwise stateless at 2026-07-28.
    Http {
        to: Connections,
        token: String,
        session: Option<String>,
    },
}

/// HTTP/1.1 connections to one address (hyper's connection-level client,
/// no pool logic but a stack of idle connections): one per request in
/// flight, each kept alive and used again.
pub struct Connections {
    addr: String,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl Connections {
    /// A new HTTP/1.1 connection, its driver spawned.
    async fn connect(&self) -> SendRequest<Full<Bytes>> {
        let stream = tokio::net::TcpStream::connect(&self.addr)
            .await
            .expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("HTTP/1.1 handshake");
        tokio::spawn(connection);
        sender
    }

    /// POST `request` (its URI a path) on an idle connection or a new one;
    /// the answer's status, session id and body.
    async fn post(&self, request: http::Request<Full<Bytes>>) -> (u16, Option<String>, String) {
        // An idle connection once it is ready for the next request (one
        // the server closed is dropped), else a new one.
        let mut sender = loop {
            let idle = self.idle.lock().expect("connections").pop();
            match idle {
                Some(mut sender) => {
                    if sender.ready().await.is_ok() {
                        break sender;
                    }
                }
                None => break self.connect().await,
            }
        };
        let response = sender.send_request(request).await.expect("POST /mcp");
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response
            .into_body()
            .collect()
            .await
            .expect("the answer")
            .to_bytes();
        self.idle.lock().expect("connections").push(sender);
        (status, session, String::from_utf8_lossy(&body).into_owned())
    }
}

/// `toolhost serve` over stdio, its answers routed to their callers by id.
pub struct Stdio {
    child: tokio::process::Child,
    stdin: tokio::sync::Mutex<tokio::process::ChildStdin>,
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>>,
}

impl Stdio {
    /// Start `cmd` (a `toolhost serve` command) and initialize at 2025-11-25.
    pub async fn start(mut cmd: tokio::process::Command) -> Self {
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn toolhost serve");
        let stdin = child.stdin.take().expect("stdin");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>> = Arc::default();
        let routes = Arc::clone(&waiting);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let id = serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .and_then(|v| v["id"].as_u64());
                // Notifications (a list changed) have no id.
                if let Some(tx) = id.and_then(|id| routes.lock().expect("routes").remove(&id)) {
                    let _ = tx.send(line);
                }
            }
        });
        let stdio = Self {
            child,
            stdin: tokio::sync::Mutex::new(stdin),
            waiting,
        };
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
        check(&stdio.send(0, init.to_owned()).await).expect("initialize");
        stdio
            .write(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned())
            .await;
        stdio
    }

    async fn write(&self, mut line: String) {
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        stdin
            .write_all(line.as_bytes())
            .await
            .expect("write to serve");
    }

    async fn send(&self, id: u64, line: String) -> String {
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().expect("routes").insert(id, tx);
        self.write(line).await;
        rx.await.expect("serve answered")
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Lean {
    /// HTTP to `served`, stateless; [`Lean::session`] makes it one.
    pub fn http(served: &crate::remote::Served) -> Self {
        let addr = served
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        Lean::Http {
            to: Connections {
                addr: addr.to_owned(),
                idle: Mutex::default(),
            },
            token: served.token.clone().unwrap_or_default(),
            session: None,
        }
    }

    /// The same client in a 2025-11-25 session it opens now (a stdio
    /// client already is in one).
    pub async fn session(self) -> Self {
        let Lean::Http { to, token, .. } = self else {
            return self;
        };
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
        let (_, session, answer) = to.post(request(&to.addr, &token, None, None, init)).await;
        check(&answer).expect("initialize");
        let session = session.expect("a session id");
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let (status, ..) = to
            .post(request(&to.addr, &token, Some(&session), None, initialized))
            .await;
        assert_eq!(status, 202, "notifications/initialized");
        Lean::Http {
            to,
            token,
            session: Some(session),
        }
    }

    /// Call `echo` as request `id`; the answer, if it is not a result.
    pub async fn echo(&self, id: u64) -> Result<(), String> {
        self.call(id, "echo", &format!(r#"{{"i":{id}}}"#)).await
    }

    /// Call `tool` with `arguments` (a JSON object) as request `id`; the
    /// answer, if it is not a result.
    pub async fn call(&self, id: u64, tool: &str, arguments: &str) -> Result<(), String> {
        match self {
            Lean::Stdio(stdio) => {
                check(&stdio.send(id, call_body(id, tool, arguments, false)).await)
            }
            Lean::Http { to, token, session } => {
                let body = call_body(id, tool, arguments, session.is_none());
                let name = session.is_none().then_some(tool);
                let post = request(&to.addr, token, session.as_deref(), name, &body);
                let (status, _, answer) = to.post(post).await;
                if status != 200 {
                    return Err(format!("{status}: {answer}"));
                }
                check(&answer)
            }
        }
    }

    /// Until `echo` answers (the server compiles its plugin files after
    /// it starts).
    pub async fn wait_for_echo(&self) {
        let until = Instant::now() + Duration::from_secs(120);
        while self.echo(1).await.is_err() {
            assert!(Instant::now() < until, "the server never called echo");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A POST of `body` to `/mcp` at `addr`; in `session` if set; with
/// `Mcp-Method` and `Mcp-Name` for a stateless call of tool `name`.
fn request(
    addr: &str,
    token: &str,
    session: Option<&str>,
    name: Option<&str>,
    body: &str,
) -> http::Request<Full<Bytes>> {
    let mut request = http::Request::post("/mcp")
        .header("Host", addr)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Authorization", format!("Bearer {token}"));
    request = match (session, name) {
        (Some(session), _) => request
            .header("Mcp-Session-Id", session)
            .header("MCP-Protocol-Version", "2025-11-25"),
        (None, Some(name)) => request
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", name),
        (None, None) => request,
    };
    request
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .expect("a request")
}

/// `n` calls of `echo` with `inflight` outstanding at any time, each
/// with its own id; the total time and each call's latency.
pub async fn drive(lean: &Arc<Lean>, inflight: usize, n: usize) -> (Duration, Vec<Duration>) {
    drive_tool(lean, ("echo", None), inflight, n).await
}

/// `n` calls of `tool` (its arguments, or `{"i": id}` when `None`) with
/// `inflight` outstanding at any time, each with its own id; the total
/// time and each call's latency.
pub async fn drive_tool(
    lean: &Arc<Lean>,
    (tool, arguments): (&'static str, Option<&'static str>),
    inflight: usize,
    n: usize,
) -> (Duration, Vec<Duration>) {
    let lean = Arc::clone(lean);
    drive_with(inflight, n, move |id| {
        let lean = Arc::clone(&lean);
        let id = 10 + id as u64;
        async move {
            let arguments = arguments.map_or_else(|| format!(r#"{{"i":{id}}}"#), str::to_owned);
            let answer = lean.call(id, tool, &arguments).await;
            answer.unwrap_or_else(|e| panic!("{tool} did not answer with a result: {e}"));
        }
    })
    .await
}

/// `n` calls of `call(number)` with `inflight` outstanding at any time;
/// the total time and each call's latency.
pub async fn drive_with<F, Fut>(inflight: usize, n: usize, call: F) -> (Duration, Vec<Duration>)
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let per_worker = n / inflight;
    let started = Instant::now();
    let workers: Vec<_> = (0..inflight)
        .map(|w| {
            let call = call.clone();
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_worker);
                for i in 0..per_worker {
                    let t = Instant::now();
                    call(w * per_worker + i).await;
                    samples.push(t.elapsed());
                }
                samples
            })
        })
        .collect();
    let mut all = Vec::with_capacity(n);
    for w in workers {
        all.extend(w.await.expect("worker"));
    }
    (started.elapsed(), all)
}
