//! The review page: where a person approves or rejects the tools agents
//! created (the TypeScript bot framework's web UI), sees every tool with its grant, and reads
//! the audit log. Served by `toolhost serve --http` under [`BASE`] on the
//! same port, and by `toolhost review` on its own.
//!
//! Server-rendered HTML with a little JavaScript, no external assets (it
//! works offline). Who may open it: the `Host` header must be one of the
//! server's (DNS rebinding); the page lives under a random path per start
//! (`/review/<random>`); and a browser must have signed in with a one-time
//! link printed for the person who started the server (never the MCP
//! token: an agent holds that), which sets an HttpOnly, SameSite=Strict
//! cookie holding the sign-in's own id, scoped to that path (review/auth.rs).
//! So a process on the same machine, an agent's command among them, and a
//! server on another loopback port (browsers send cookies by host, not
//! port) cannot approve anything. Every state-changing request is a POST
//! carrying the page's CSRF token and an `Origin` or `Sec-Fetch-Site` of
//! the page's own; an approval carries the digest of what the person was
//! shown, and one granting more than the tool asked for needs a second,
//! explicit step that shows what is added. Every decision is on the
//! record (dynamic/decisions.rs). A Content-Security-Policy allows only
//! the page's own script and style.
//!
//! Approving here is `toolhost dynamic approve`: the store records the
//! approval and its digest in the trust store, and the tool set is
//! reloaded at once, so MCP clients get `tools/list_changed`.

use crate::dynamic::{Entry, Store, caps_text};
use crate::executor::Executor;
use crate::net::{host_allowed, random_hex, same};
use axum::extract::{Extension, Form, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use minijinja::context;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::sync::Arc;
use toolhost_shared::dynamic::{Kind, Status};
mod pages;
pub use pages::*;
mod decide;
use decide::*;
mod component;
mod pending;
use pending::*;
mod auth;
use auth::*;
mod render;
use render::*;

/// Where the page lives.
pub const BASE: &str = "/review";

/// The cookie a browser keeps the token in.
const COOKIE: &str = "toolhost_review";

/// The most audit lines read (the newest).
const AUDIT_LINES: usize = 5_000;
/// The most bytes read from the end of the audit log.
const AUDIT_TAIL_BYTES: u64 = 8 << 20;
/// The most audit records shown.
const AUDIT_SHOWN: usize = 200;

const CSS: &str = include_str!("review/review.css");
const JS: &str = include_str!("review/review.js");

/// How browsers sign in to one page: where it lives (a random path under
/// [`BASE`], new each start), its first sign-in link's one-time token,
/// an optional password (`toolhost review --token-file`), and how a new
/// link reaches the person when a used or expired one is opened (printed
/// on the server's terminal; never through logs, which may go to clients).
#[derive(Clone)]
pub struct SignInLinks {
    /// The page's path: `/review/<random>`.
    pub base: String,
    /// The first link's one-time token.
    pub first: String,
    /// A token that signs in any number of times, if the person gave one.
    pub password: Option<String>,
    announce: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for SignInLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInLinks")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl SignInLinks {
    /// New links for a page; `announce` shows a new link to the person.
    pub fn new(announce: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self {
            base: format!("{BASE}/{}", random_hex(12)),
            first: new_secret(),
            password: None,
            announce: Arc::new(announce),
        }
    }

    /// Links that are never shown again (embedders, tests).
    pub fn quiet() -> Self {
        Self::new(|_| {})
    }

    /// The same, also signing in with `password`.
    pub fn with_password(self, password: Option<String>) -> Self {
        Self { password, ..self }
    }

    /// The first sign-in link, on the server at `addr`.
    pub fn login_url(&self, addr: std::net::SocketAddr) -> String {
        format!("http://{addr}{}/login?token={}", self.base, self.first)
    }

    /// Show a new link to the person.
    pub(crate) fn announce(&self, link: &str) {
        (self.announce)(link);
    }
}

/// What the page is served with.
#[derive(Debug, Clone)]
pub struct ReviewOptions {
    /// How browsers sign in; never with the MCP token.
    pub links: SignInLinks,
    /// The page's own origin (`http://ADDR`), for the links it prints.
    pub origin: String,
    /// `Host` header values accepted (names, without port).
    pub allowed_hosts: Vec<String>,
    /// `Origin` header values accepted on a POST: the page's own.
    pub allowed_origins: Vec<String>,
}

impl ReviewOptions {
    /// The first sign-in link, on the server at `addr`.
    pub fn login_url(&self, addr: std::net::SocketAddr) -> String {
        self.links.login_url(addr)
    }
}

/// A new secret for the page: 32 random bytes from the kernel, as hex.
pub fn new_secret() -> String {
    random_hex(32)
}

struct Page {
    executor: Arc<Executor>,
    options: ReviewOptions,
    csrf: String,
    signins: SignIns,
}

/// The page's routes, under its random path ([`SignInLinks::base`]), to
/// be merged into a server's router. Nothing answers at [`BASE`] itself:
/// the path is known only from a printed link.
pub fn router(executor: Arc<Executor>, options: ReviewOptions) -> axum::Router {
    let base = options.links.base.clone();
    axum::Router::new().nest(&base, pages(executor, options))
}

fn pages(executor: Arc<Executor>, options: ReviewOptions) -> axum::Router {
    let signins = SignIns::new(&options.links.first);
    let page = Arc::new(Page {
        executor,
        options,
        csrf: random_hex(32),
        signins,
    });
    axum::Router::new()
        .route("/", axum::routing::get(pending))
        .route("/tools", axum::routing::get(tools))
        .route("/audit", axum::routing::get(audit))
        .route("/approve", axum::routing::post(approve))
        .route("/reject", axum::routing::post(reject))
        .route("/decline", axum::routing::post(decline))
        .route("/login", axum::routing::get(login).post(login_form))
        .route("/assets/review.css", axum::routing::get(css))
        .route("/assets/review.js", axum::routing::get(js))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&page),
            guard,
        ))
        .layer(axum::middleware::from_fn(security_headers))
        .with_state(page)
}

/// `toolhost review`: the page alone, on `addr`, until Ctrl-C or SIGTERM.
/// `ready` receives the bound address.
pub async fn serve(
    executor: Arc<Executor>,
    addr: std::net::SocketAddr,
    links: SignInLinks,
    ready: impl FnOnce(std::net::SocketAddr, &ReviewOptions),
) -> std::io::Result<()> {
    if !addr.ip().is_loopback() && links.password.is_none() {
        return Err(std::io::Error::other(format!(
            "{addr} is not a loopback address: anyone who can reach it could try to sign in. \
             Serve on 127.0.0.1, or give the secret with --token-file FILE"
        )));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let options = options_for(bound, links, &[]);
    let app = router(executor, options.clone());
    ready(bound, &options);
    axum::serve(crate::access::OwnUser::new(listener)?, app)
        .with_graceful_shutdown(crate::access::stop_requested())
        .await
}

/// The options for a server bound to `addr` signing browsers in with
/// `links`: loopback names and the address itself, plus the extra hosts
/// allowed; only the page's own origins.
pub fn options_for(
    addr: std::net::SocketAddr,
    links: SignInLinks,
    hosts: &[String],
) -> ReviewOptions {
    let port = addr.port();
    let mut allowed_hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
        addr.ip().to_string(),
    ];
    allowed_hosts.extend(hosts.iter().cloned());
    let mut allowed_origins = vec![
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
        format!("http://{addr}"),
    ];
    allowed_origins.extend(hosts.iter().map(|h| format!("http://{h}:{port}")));
    ReviewOptions {
        links,
        origin: format!("http://{addr}"),
        allowed_hosts,
        allowed_origins,
    }
}

async fn css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], CSS).into_response()
}

async fn js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        JS,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_shows_hidden_characters() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(
            esc("if (admin) {\u{202E} }\u{2066}"),
            "if (admin) {<mark class=\"cc\">U+202E</mark> }<mark class=\"cc\">U+2066</mark>"
        );
        assert_eq!(
            esc("a\u{1b}[2Jb\rc"),
            "a<mark class=\"cc\">U+001B</mark>[2Jb<mark class=\"cc\">U+000D</mark>c"
        );
    }

    #[test]
    fn attributes_get_no_markup_and_lines_count_as_javascript_does() {
        assert_eq!(
            attr("network:x\u{202E}\"><b>"),
            "network:xU+202E&quot;&gt;&lt;b&gt;"
        );
        let lines: Vec<&str> = js_lines("a\r\nb\u{2028}c\rd\n\ne").collect();
        assert_eq!(lines, ["a", "b", "c", "d", "", "e"]);
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        std::fs::write(&log, "first line\nsecond\nthird\n").unwrap();
        assert_eq!(tail(&log, 100), "first line\nsecond\nthird\n");
        assert_eq!(tail(&log, 10), "third\n");
    }

    #[test]
    fn tokens() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; toolhost_review=s3cret"),
        );
        assert_eq!(cookie(&headers), Some("s3cret"));
        assert_eq!(random_hex(32).len(), 64);
        assert_ne!(random_hex(8), random_hex(8));
    }

    #[test]
    fn sign_in_links_work_once_and_sign_ins_are_their_own_ids() {
        let signins = SignIns::new("first-link-token");
        assert!(!signins.use_link("wrong"));
        assert!(signins.use_link("first-link-token"));
        assert!(!signins.use_link("first-link-token"), "a link worked twice");
        let new = signins.relink().expect("a new link");
        assert!(signins.relink().is_none(), "links printed back to back");
        let cookie = signins.sign_in();
        assert_ne!(cookie, new);
        assert!(
            signins
                .who(&cookie)
                .is_some_and(|w| w.starts_with("sign-in "))
        );
        assert!(signins.who("first-link-token").is_none());
        assert!(signins.use_link(&new));
    }
}
