//! `toolhost serve --http ADDR`: MCP over streamable HTTP (rmcp's service
//! under axum), on loopback by default.
//!
//! Who may connect ([`crate::access`]): on loopback, only the user who
//! started the server (another user's connection gets 403 before its
//! request is read); and every request to `/mcp` needs one of the
//! server's tokens (`Authorization: Bearer TOKEN`, else 401) unless it
//! was started with `--no-auth`.
//!
//! - `/mcp`: the MCP endpoint. rmcp checks the `Host` header against the
//!   allowed hosts and any `Origin` header against the allowed origins
//!   (DNS-rebinding protection: a browser page on another site, or a
//!   rebound name, gets 403). A session belongs to the credential that
//!   opened it: another credential presenting its id gets 404.
//! - `/health`: `{"status":"ok","tools":N}`; the same Host check, no token.
//! - `/healthz` (200 while the process serves) and `/readyz` (503 once it
//!   drains): for probes, no Host check, no token.
//! - `/review/<random>`: the review page ([`crate::review`]): the same Host
//!   check, and a sign-in of its own (a one-time link printed at start),
//!   never with the MCP token.
//!
//! Sessions are capped ([`super::sessions`]), in all and per credential:
//! a request that would open a session past a cap gets `503` with the
//! reason and `Retry-After`, unless an idle session of the credential
//! over its share can be closed to make room.
//! Each session is its own client: it sees only the background commands
//! it started, which are killed when the session ends.
//!
//! Clients come and go over HTTP, so the workspace is fixed at start (the
//! configured one, else the current directory); roots are not used.
//!
//! A non-loopback address needs a token.

use super::sessions::{CappedSessions, SessionLimits};
use super::{McpServer, ServeError, ServeOptions};
use crate::access::{Auth, OwnUser};
use crate::executor::Executor;
use crate::net::host_allowed;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
mod auth;
mod ids;
pub(crate) use auth::Principal;
use auth::{Authenticate, authenticate};

/// The HTTP transport's settings.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The credentials clients present.
    pub auth: Auth,
    /// Host header values accepted besides `localhost`, `127.0.0.1`, `::1`
    /// and the listening address.
    pub allowed_hosts: Vec<String>,
    /// Origin header values accepted besides the server's own loopback
    /// origins (`http://localhost:PORT`, `http://127.0.0.1:PORT`).
    pub allowed_origins: Vec<String>,
    /// Caps on sessions and their idle timeout.
    pub sessions: SessionLimits,
    /// How the review page's browsers sign in ([`crate::review::SignInLinks`]),
    /// never with a token: clients hold those.
    pub review: crate::review::SignInLinks,
    /// On SIGTERM or Ctrl-C, how long calls in flight may take to finish
    /// before they are cancelled.
    pub drain: std::time::Duration,
    /// On SIGTERM or Ctrl-C, how long `/readyz` answers 503 while new
    /// connections are still served, so a load balancer stops sending
    /// before they are refused.
    pub drain_notice: std::time::Duration,
}

impl HttpOptions {
    /// The Host and Origin allowlists for this address.
    fn allowlists(&self) -> (Vec<String>, Vec<String>) {
        let port = self.addr.port();
        let mut hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            self.addr.ip().to_string(),
        ];
        hosts.extend(self.allowed_hosts.iter().cloned());
        let mut origins = vec![
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ];
        origins.extend(self.allowed_origins.iter().cloned());
        hosts.dedup();
        (hosts, origins)
    }
}

/// Serve `executor` over HTTP until Ctrl-C or SIGTERM, then drain: no new
/// connections, the calls in flight get [`HttpOptions::drain`] to finish,
/// the rest are cancelled, and it returns `Ok`.
/// `ready` receives the bound address (useful with port 0).
pub async fn serve_http(
    executor: Arc<Executor>,
    options: ServeOptions,
    http: HttpOptions,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    if !http.addr.ip().is_loopback() && matches!(http.auth, Auth::Open) {
        return Err(ServeError::Options(format!(
            "{} is not a loopback address: anyone who can reach it could run tools. \
             Serve on 127.0.0.1, or require a token (leave out --no-auth)",
            http.addr
        )));
    }
    let listener = tokio::net::TcpListener::bind(http.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: http.addr,
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: http.addr,
        source,
    })?;
    let http = HttpOptions {
        addr: bound,
        ..http
    };
    if executor.workspace().is_none()
        && let Ok(dir) = std::env::current_dir()
    {
        super::set_cwd_workspace(&executor, &dir);
    }
    let (app, running, shutdown, draining) = app(executor, &options, &http);
    ready(bound);
    tracing::info!(addr = %bound, "serving MCP over HTTP at /mcp");
    let listener = OwnUser::new(listener).map_err(|source| ServeError::Bind {
        addr: http.addr,
        source,
    })?;
    let calls = running.clone();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            crate::access::stop_requested().await;
            // /readyz says so first, while connections are still taken
            // for the notice; then none are, the calls in flight get
            // `drain` to finish, the rest are cancelled and answered, and
            // open event streams end, so shutdown does not wait on them.
            draining.store(true, Ordering::SeqCst);
            if !http.drain_notice.is_zero() {
                tracing::info!(
                    notice_secs = http.drain_notice.as_secs_f64(),
                    "stopping: /readyz answers 503; new connections are still served meanwhile"
                );
                tokio::time::sleep(http.drain_notice).await;
            }
            tracing::info!(
                calls = calls.calls_running(),
                drain_secs = http.drain.as_secs(),
                "stopping: no new connections; waiting for the calls in flight"
            );
            tokio::spawn(async move {
                let settled = |within: std::time::Duration| {
                    let calls = calls.clone();
                    async move {
                        let until = tokio::time::Instant::now() + within;
                        while calls.calls_running() > 0 && tokio::time::Instant::now() < until {
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        }
                    }
                };
                settled(http.drain).await;
                // What outlasted the drain is cancelled while its client is
                // still connected, so it gets the cancellation as its answer.
                calls.cancel_all();
                settled(std::time::Duration::from_secs(2)).await;
                shutdown.cancel();
            });
        })
        .await
        .map_err(|e| ServeError::Transport(e.to_string()));
    // What the drain left running is cancelled (its commands killed);
    // background commands go with the executor.
    running.cancel_all();
    served
}

/// The routes `serve_http` serves for `http` (its address the bound one):
/// `/mcp`, `/health`, `/healthz`, `/readyz` and `/review`. Also the MCP
/// server, whose calls are cancelled when serving ends, the token that
/// ends open event streams, and the flag that makes `/readyz` answer 503
/// while the server drains.
pub(crate) fn app(
    executor: Arc<Executor>,
    options: &ServeOptions,
    http: &HttpOptions,
) -> (
    axum::Router,
    McpServer,
    tokio_util::sync::CancellationToken,
    Arc<AtomicBool>,
) {
    let (mut hosts, origins) = http.allowlists();
    // Other replicas forward requests here by this address.
    if let Some(cluster) = &options.cluster {
        hosts.push(cluster.me().to_owned());
    }
    let server = McpServer::new(Arc::clone(&executor), options, "mcp-http");
    let shutdown = tokio_util::sync::CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts.clone())
        .with_allowed_origins(origins)
        // A 2026-07-28 answer with nothing before it is plain JSON, not an
        // event stream: cheaper, and no client's cap on one event's size
        // (the Python SDK's is 1 MiB) cuts a large result.
        .with_json_response(true)
        .with_cancellation_token(shutdown.clone());
    let running = server.clone();
    let sessions = CappedSessions::new(http.sessions);
    let mcp = StreamableHttpService::new(
        move || Ok(server.for_new_session()),
        Arc::new(sessions.clone()),
        config,
    );
    let auth = Arc::new(Authenticate {
        auth: http.auth.clone(),
        open_as: format!("uid {}", rustix::process::geteuid().as_raw()).into(),
        cluster: options.cluster.clone(),
    });
    let review = crate::review::router(
        Arc::clone(&executor),
        crate::review::options_for(http.addr, http.review.clone(), &http.allowed_hosts),
    );
    let health = axum::Router::new()
        .route(
            "/health",
            axum::routing::get(move || {
                let tools = executor.tools().len();
                async move { axum::Json(serde_json::json!({"status": "ok", "tools": tools})) }
            }),
        )
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(hosts.clone()),
            require_host,
        ));
    let (probes, draining) = probes();
    // For a scraper: the token, and the pod's address as its Host.
    let (of, open) = (running.clone(), sessions.clone());
    let metrics = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || {
                let text = of.metrics_text(open.live());
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    )
                }
            }),
        )
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&auth),
            authenticate,
        ));
    // Without tokens, the Host is checked as for /health (DNS rebinding).
    let metrics = if matches!(http.auth, Auth::Open) {
        metrics.layer(axum::middleware::from_fn_with_state(
            Arc::new(hosts),
            require_host,
        ))
    } else {
        metrics
    };
    let app = axum::Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(
            ids::InFlight::default(),
            json_rpc_framing,
        ))
        .layer(axum::middleware::from_fn_with_state(sessions, session_room))
        .layer(axum::middleware::from_fn_with_state(auth, authenticate))
        .merge(metrics)
        .merge(health)
        .merge(probes)
        .merge(review);
    (app, running, shutdown, draining)
}

/// `/healthz` (alive) and `/readyz` (503 once draining), with the flag
/// that says so. For probes (a kubelet's Host is the pod's address): no
/// Host check, and nothing in them a page could use.
fn probes() -> (axum::Router, Arc<AtomicBool>) {
    let draining = Arc::new(AtomicBool::new(false));
    let ready = |State(draining): State<Arc<AtomicBool>>| async move {
        if draining.load(Ordering::SeqCst) {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "draining: finishing the calls in flight\n",
            )
        } else {
            (StatusCode::OK, "ready\n")
        }
    };
    let router = axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
        .route("/readyz", axum::routing::get(ready))
        .with_state(Arc::clone(&draining));
    (router, draining)
}

/// Sessions and their credentials: a request opening a session is
/// admitted under the caps (503 with `Retry-After` if not), a request
/// naming another credential's session gets 404 (as an unknown one
/// does), and a session answering a request (its event stream included)
/// is busy until the answer ends.
async fn session_room(
    State(sessions): State<CappedSessions>,
    request: Request,
    next: Next,
) -> Response {
    let principal = request
        .extensions()
        .get::<Principal>()
        .map_or_else(|| Arc::from("anonymous"), |p| Arc::clone(&p.0));
    let post = request.method() == http::Method::POST;
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(id) = session else {
        // A 2026-07-28 request opens no session: it is answered alone.
        if !post || stateless(request.headers()) {
            return next.run(request).await;
        }
        return match sessions.admit(&principal) {
            Ok(admitted) => admitted.serve(next.run(request)).await,
            Err(why) => (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                format!("Service Unavailable: {why}"),
            )
                .into_response(),
        };
    };
    match sessions.owner(&id) {
        Some(Some(owner)) if owner != principal => {
            tracing::warn!(holder = %owner, presented_by = %principal, "refused another credential's session id");
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
        _ => {}
    }
    // Any request of the session, its event stream (GET) included: a
    // client listening is not idle.
    let busy = sessions.busy(&id);
    let response = next.run(request).await;
    match busy {
        None => response,
        // Busy until the answer's body (an event stream, maybe) ends.
        Some(busy) => ids::until_sent(response, busy),
    }
}

/// Whether a request names a protocol revision without sessions
/// (2026-07-28 or later) in its `MCP-Protocol-Version` header, which such
/// clients send with every request.
fn stateless(headers: &http::HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

/// The most bytes of one request body (rmcp's own limit).
const MAX_BODY: usize = 4 << 20;

/// JSON-RPC over HTTP where rmcp answers otherwise:
/// - a JSON body that does not parse gets `400` with a `-32700` error,
///   and JSON that is no message `400` with `-32600` (rmcp says 415,
///   which is for a wrong Content-Type; the body is parsed again only
///   then, never on the way in);
/// - a batch (a JSON array) is served one message at a time and answered
///   as one array, unless the client's `MCP-Protocol-Version` is one that
///   dropped batches: then `400` with `-32600` saying so;
/// - `DELETE` of a session answers `204` (rmcp says 202, which clients
///   read as a failed termination);
/// - a request reusing the id of one of its session's requests still
///   being answered gets `400` with `-32600` ([`ids`]).
async fn json_rpc_framing(
    State(in_flight): State<ids::InFlight>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == http::Method::DELETE {
        let response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            let (mut parts, _) = response.into_parts();
            parts.status = StatusCode::NO_CONTENT;
            return Response::from_parts(parts, axum::body::Body::empty());
        }
        return response;
    }
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    if request.method() != http::Method::POST || !is_json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: the request body exceeds {MAX_BODY} bytes"),
        )
            .into_response();
    };
    if bytes.trim_ascii_start().starts_with(b"[") {
        return match unparseable(&bytes) {
            Some(parse_error) => parse_error,
            None => batch(parts, &bytes, next).await,
        };
    }
    let session = parts.headers.get("mcp-session-id");
    let held = match session.and_then(|s| s.to_str().ok()) {
        Some(session) => match in_flight.hold(session, &bytes) {
            Ok(held) => held,
            Err(reused) => return json_rpc_error(StatusCode::BAD_REQUEST, -32600, &reused),
        },
        None => None,
    };
    let response = next
        .run(Request::from_parts(
            parts,
            axum::body::Body::from(bytes.clone()),
        ))
        .await;
    let response = match held {
        Some(held) => ids::until_sent(response, held),
        None => response,
    };
    // rmcp says 415 for a JSON body it cannot read (the Content-Type was
    // checked above): only then is the body looked at again.
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return unparseable(&bytes).unwrap_or_else(|| {
            json_rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "invalid request: not a JSON-RPC 2.0 request, response or notification this server knows",
            )
        });
    }
    response
}

/// `400` with `-32700` when `body` is not JSON.
fn unparseable(body: &[u8]) -> Option<Response> {
    let e = serde_json::from_slice::<serde::de::IgnoredAny>(body).err()?;
    (e.is_syntax() || e.is_eof()).then(|| {
        json_rpc_error(
            StatusCode::BAD_REQUEST,
            -32700,
            &format!("parse error: the body is not JSON ({e}); send one JSON-RPC message"),
        )
    })
}

/// A JSON-RPC error as an HTTP response.
fn json_rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    (
        status,
        axum::Json(serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": code, "message": message},
        })),
    )
        .into_response()
}

/// A batch: each message through the service on its own, in order; the
/// answers to its requests back as one array (`202` when it held none).
async fn batch(parts: http::request::Parts, bytes: &[u8], next: Next) -> Response {
    let version = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(v) = version.as_deref().filter(|v| *v != "2025-03-26") {
        return json_rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            &format!(
                "JSON-RPC batches are part of MCP 2025-03-26 only, and this session speaks {v}; send each message in its own request"
            ),
        );
    }
    let Ok(items) = serde_json::from_slice::<Vec<serde_json::Value>>(bytes) else {
        return json_rpc_error(StatusCode::BAD_REQUEST, -32600, "invalid batch");
    };
    if items.is_empty() {
        return json_rpc_error(StatusCode::BAD_REQUEST, -32600, "an empty batch");
    }
    let mut answers = Vec::new();
    for item in items {
        let mut one = Request::from_parts(parts.clone(), axum::body::Body::from(item.to_string()));
        one.headers_mut().remove(header::CONTENT_LENGTH);
        let response = next.clone().run(one).await;
        let status = response.status();
        let event_stream = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let Ok(body) = axum::body::to_bytes(response.into_body(), usize::MAX).await else {
            continue;
        };
        if !status.is_success() {
            // The message's own error, when the service gave one.
            if let Ok(error) = serde_json::from_slice::<serde_json::Value>(&body) {
                answers.push(error);
            }
            continue;
        }
        answers.extend(answers_in(&body, event_stream));
    }
    if answers.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    (
        StatusCode::OK,
        axum::Json(serde_json::Value::Array(answers)),
    )
        .into_response()
}

/// The JSON-RPC answers (results and errors) in one response body: plain
/// JSON, or the `data:` lines of an event stream.
fn answers_in(body: &[u8], event_stream: bool) -> Vec<serde_json::Value> {
    let is_answer = |v: &serde_json::Value| {
        v.get("id").is_some() && (v.get("result").is_some() || v.get("error").is_some())
    };
    if !event_stream {
        return serde_json::from_slice::<serde_json::Value>(body)
            .into_iter()
            .filter(is_answer)
            .collect();
    }
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data.trim()).ok())
        .filter(is_answer)
        .collect()
}

/// 403 unless the Host header names an allowed host (for /health; rmcp
/// checks /mcp itself).
async fn require_host(
    State(hosts): State<Arc<Vec<String>>>,
    request: Request,
    next: Next,
) -> Response {
    if host_allowed(request.headers(), &hosts) {
        next.run(request).await
    } else {
        (
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed",
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_comparison() {
        use crate::net::same;
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }

    #[test]
    fn allowlists_cover_loopback_and_the_port() {
        let options = HttpOptions {
            addr: "127.0.0.1:8080".parse().unwrap(),
            auth: Auth::Open,
            allowed_hosts: vec!["tools.internal".into()],
            allowed_origins: vec!["https://app.example".into()],
            sessions: SessionLimits::default(),
            review: crate::review::SignInLinks::quiet(),
            drain: std::time::Duration::from_secs(30),
            drain_notice: std::time::Duration::ZERO,
        };
        let (hosts, origins) = options.allowlists();
        assert!(hosts.contains(&"localhost".to_owned()));
        assert!(hosts.contains(&"tools.internal".to_owned()));
        assert!(origins.contains(&"http://127.0.0.1:8080".to_owned()));
        assert!(origins.contains(&"https://app.example".to_owned()));
        assert!(!origins.iter().any(|o| o.contains("evil")));
    }
}
