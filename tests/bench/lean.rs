//! A lean MCP client for the MCP section: JSON-RPC bodies written as text
//! and answers only checked for a result, over a pipe to `toolhost serve`
//! or reqwest to `serve --http`. rmcp's client builds and validates typed
//! messages and runs a service per connection, which on these 2 cores
//! costs more than the server it measures; this one leaves the cores to
//! the server, so stdio and HTTP, a session and a stateless request, are
//! compared on what the server does.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::oneshot;

/// The `_meta` a 2026-07-28 request carries instead of a session.
const META_2026: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}"#;

/// A `tools/call` of `echo` numbered `id`, with 2026-07-28's `_meta` or not.
fn echo_body(id: u64, stateless: bool) -> String {
    let meta = if stateless {
        META_2026
    } else {
        r#""_meta":{}"#
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"i":{id}}},{meta}}}}}"#
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
        client: reqwest::Client,
        url: String,
        token: String,
        session: Option<String>,
    },
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
    /// reqwest to `served`, stateless; [`Lean::session`] makes it one.
    pub fn http(served: &crate::remote::Served) -> Self {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .expect("reqwest client");
        Lean::Http {
            client,
            url: served.url.clone(),
            token: served.token.clone().unwrap_or_default(),
            session: None,
        }
    }

    /// The same client in a 2025-11-25 session it opens now.
    pub async fn session(self) -> Self {
        let Lean::Http {
            client, url, token, ..
        } = self
        else {
            return self;
        };
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
        let response = post(&client, &url, &token, None, None, init.to_owned()).await;
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        check(&response.text().await.expect("initialize answer")).expect("initialize");
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
        post(&client, &url, &token, Some(&session), None, initialized).await;
        Lean::Http {
            client,
            url,
            token,
            session: Some(session),
        }
    }

    /// Call `echo` as request `id`; the answer's text.
    pub async fn echo(&self, id: u64) -> Result<(), String> {
        match self {
            Lean::Stdio(stdio) => check(&stdio.send(id, echo_body(id, false)).await),
            Lean::Http {
                client,
                url,
                token,
                session,
            } => {
                let body = echo_body(id, session.is_none());
                let method = session.is_none().then_some("echo");
                let response = post(client, url, token, session.as_deref(), method, body).await;
                check(&response.text().await.map_err(|e| e.to_string())?)
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

/// POST `body` to `url`; in `session` if set; with `Mcp-Method` and
/// `Mcp-Name` for a stateless call of tool `name`.
async fn post(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    session: Option<&str>,
    name: Option<&str>,
    body: String,
) -> reqwest::Response {
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Authorization", format!("Bearer {token}"))
        .body(body);
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
    let response = request.send().await.expect("POST /mcp");
    assert!(
        response.status().is_success(),
        "POST /mcp: {}",
        response.status()
    );
    response
}

/// `n` calls with `inflight` outstanding at any time, each with its own
/// id; the total time and each call's latency.
pub async fn drive(lean: &Arc<Lean>, inflight: usize, n: usize) -> (Duration, Vec<Duration>) {
    let lean = Arc::clone(lean);
    drive_with(inflight, n, move |id| {
        let lean = Arc::clone(&lean);
        async move { lean.echo(10 + id as u64).await.expect("echo answers") }
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

/// The `toolhost serve` command the section's servers run, over stdio.
pub fn serve_command(cache: &Path, ws: &Path, home: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.args(["serve", "--mode", "yolo", "--plugin-dir"])
        .arg(env!("TOOLHOST_FIXTURES_DIR"))
        .arg("--workspace")
        .arg(ws)
        .env("TOOLHOST_CACHE_DIR", cache)
        // No user configuration or state from this machine.
        .env("XDG_CONFIG_HOME", home.join("no-config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("TOOLHOST_CONFIG");
    cmd
}
