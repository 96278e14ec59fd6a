//! `toolhost serve --http ADDR`: MCP over streamable HTTP (rmcp's service
//! under axum), on loopback by default.
//!
//! - `/mcp`: the MCP endpoint. rmcp checks the `Host` header against the
//!   allowed hosts and any `Origin` header against the allowed origins
//!   (DNS-rebinding protection: a browser page on another site, or a
//!   rebound name, gets 403). With a token, a request without
//!   `Authorization: Bearer TOKEN` gets 401.
//! - `/health`: `{"status":"ok","tools":N}`; the same Host check, no token.
//!
//! Sessions are capped ([`super::sessions`]): a request that would open a
//! session past a cap gets `503` with the reason and `Retry-After`.
//! Each session is its own client: it sees only the background commands
//! it started, which are killed when the session ends.
//!
//! Clients come and go over HTTP, so the workspace is fixed at start (the
//! configured one, else the current directory); roots are not used.
//!
//! A non-loopback address needs a token.

use super::sessions::{CappedSessions, SessionLimits};
use super::{McpServer, ServeError, ServeOptions};
use crate::executor::Executor;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;

/// The HTTP transport's settings.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The bearer token clients must send, if any.
    pub token: Option<String>,
    /// Host header values accepted besides `localhost`, `127.0.0.1`, `::1`
    /// and the listening address.
    pub allowed_hosts: Vec<String>,
    /// Origin header values accepted besides the server's own loopback
    /// origins (`http://localhost:PORT`, `http://127.0.0.1:PORT`).
    pub allowed_origins: Vec<String>,
    /// Caps on sessions and their idle timeout.
    pub sessions: SessionLimits,
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

/// Serve `executor` over HTTP until Ctrl-C (or the process is stopped).
/// `ready` receives the bound address (useful with port 0).
pub async fn serve_http(
    executor: Arc<Executor>,
    options: ServeOptions,
    http: HttpOptions,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    if !http.addr.ip().is_loopback() && http.token.is_none() {
        return Err(ServeError::Options(format!(
            "{} is not a loopback address: anyone who can reach it could run tools. \
             Serve on 127.0.0.1, or require a token with --token-file FILE",
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
    let (hosts, origins) = http.allowlists();
    let server = McpServer::new(Arc::clone(&executor), &options, "mcp-http");
    let shutdown = tokio_util::sync::CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts.clone())
        .with_allowed_origins(origins)
        .with_cancellation_token(shutdown.clone());
    let running = server.clone();
    let sessions = CappedSessions::new(http.sessions);
    let mcp = StreamableHttpService::new(
        move || Ok(server.for_new_session()),
        Arc::new(sessions.clone()),
        config,
    );
    let token: Arc<Option<String>> = Arc::new(http.token.clone());
    let health = axum::Router::new()
        .route(
            "/health",
            axum::routing::get(move || {
                let tools = executor.tools().len();
                async move { axum::Json(serde_json::json!({"status": "ok", "tools": tools})) }
            }),
        )
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(hosts),
            require_host,
        ));
    let app = axum::Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(sessions, session_room))
        .layer(axum::middleware::from_fn_with_state(token, require_token))
        .merge(health);
    ready(bound);
    tracing::info!(addr = %bound, "serving MCP over HTTP at /mcp");
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            // Open event streams end too, so shutdown does not wait on them.
            shutdown.cancel();
        })
        .await
        .map_err(|e| ServeError::Transport(e.to_string()));
    running.cancel_all();
    served
}

/// 401 unless the request carries the configured bearer token.
async fn require_token(
    State(token): State<Arc<Option<String>>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(expected) = token.as_ref() {
        // The scheme name is case-insensitive (RFC 9110).
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map_or("", |(_, token)| token.trim());
        if !same(given.as_bytes(), expected.as_bytes()) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "Unauthorized: send the token given to toolhost serve --token-file as `Authorization: Bearer TOKEN`",
            )
                .into_response();
        }
    }
    next.run(request).await
}

/// 503 for a request that would open a session when no more may be
/// opened (rmcp refuses it too, but as a bare 500).
async fn session_room(
    State(sessions): State<CappedSessions>,
    request: Request,
    next: Next,
) -> Response {
    let opens =
        request.method() == http::Method::POST && !request.headers().contains_key("mcp-session-id");
    if opens && let Some(why) = sessions.refusal() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "5")],
            format!("Service Unavailable: {why}"),
        )
            .into_response();
    }
    next.run(request).await
}

/// 403 unless the Host header names an allowed host (for /health; rmcp
/// checks /mcp itself).
async fn require_host(
    State(hosts): State<Arc<Vec<String>>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(host_name)
        .unwrap_or_default();
    if hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) {
        next.run(request).await
    } else {
        (
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed",
        )
            .into_response()
    }
}

/// `localhost:8080` → `localhost`, `[::1]:80` → `::1`.
fn host_name(header: &str) -> String {
    if let Some(rest) = header.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("").to_owned();
    }
    header.split(':').next().unwrap_or("").to_owned()
}

/// Equal, in time independent of where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_comparison() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }

    #[test]
    fn host_names_drop_the_port() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
    }

    #[test]
    fn allowlists_cover_loopback_and_the_port() {
        let options = HttpOptions {
            addr: "127.0.0.1:8080".parse().unwrap(),
            token: None,
            allowed_hosts: vec!["tools.internal".into()],
            allowed_origins: vec!["https://app.example".into()],
            sessions: SessionLimits::default(),
        };
        let (hosts, origins) = options.allowlists();
        assert!(hosts.contains(&"localhost".to_owned()));
        assert!(hosts.contains(&"tools.internal".to_owned()));
        assert!(origins.contains(&"http://127.0.0.1:8080".to_owned()));
        assert!(origins.contains(&"https://app.example".to_owned()));
        assert!(!origins.iter().any(|o| o.contains("evil")));
    }
}
