//! The review page: where a person approves or rejects the tools agents
//! created (seed 001's web UI), sees every tool with its grant, and reads
//! the audit log. Served by `toolhost serve --http` under [`BASE`] on the
//! same port, and by `toolhost review` on its own.
//!
//! Server-rendered HTML with a little JavaScript, no external assets (it
//! works offline). Who may open it: the `Host` header must be one of the
//! server's (DNS rebinding), and a browser must have signed in with the
//! page's own secret — random per start, printed for the person who started
//! the server as a `BASE/login?token=SECRET` link, never the MCP token (an
//! agent holds that) — which sets an HttpOnly, SameSite=Strict cookie. So a
//! process on the same machine, an agent's command among them, cannot
//! approve anything. Every state-changing request is a POST carrying the
//! page's CSRF token, from the page's own origin, and an approval carries
//! the digest of what the person was shown. A Content-Security-Policy
//! allows only the page's own script and style.
//!
//! Approving here is `toolhost dynamic approve`: the store records the
//! approval and its digest in the trust store, and the tool set is
//! reloaded at once, so MCP clients get `tools/list_changed`.

use crate::dynamic::{Entry, Store, caps_text};
use crate::executor::Executor;
use crate::net::{host_name, same};
use axum::extract::{Form, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;
use std::fmt::Write as _;
use std::sync::Arc;
use toolhost_shared::dynamic::{Kind, Status};

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

/// What the page is served with.
#[derive(Debug, Clone)]
pub struct ReviewOptions {
    /// The secret a browser signs in with ([`new_secret`], or a person's
    /// `--token-file`); never the MCP token.
    pub secret: String,
    /// `Host` header values accepted (names, without port).
    pub allowed_hosts: Vec<String>,
    /// `Origin` header values accepted on a POST: the page's own.
    pub allowed_origins: Vec<String>,
}

impl ReviewOptions {
    /// The link that signs a browser in, on the server at `addr`.
    pub fn login_url(&self, addr: std::net::SocketAddr) -> String {
        format!("http://{addr}{BASE}/login?token={}", self.secret)
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
}

/// The page's routes, under [`BASE`] (`BASE/` is sent to `BASE`), to be
/// merged into a server's router.
pub fn router(executor: Arc<Executor>, options: ReviewOptions) -> axum::Router {
    axum::Router::new()
        .nest(BASE, pages(executor, options))
        .route(
            &format!("{BASE}/"),
            axum::routing::get(|| async { Redirect::permanent(BASE) }),
        )
}

fn pages(executor: Arc<Executor>, options: ReviewOptions) -> axum::Router {
    let page = Arc::new(Page {
        executor,
        options,
        csrf: random_hex(32),
    });
    axum::Router::new()
        .route("/", axum::routing::get(pending))
        .route("/tools", axum::routing::get(tools))
        .route("/audit", axum::routing::get(audit))
        .route("/approve", axum::routing::post(approve))
        .route("/reject", axum::routing::post(reject))
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

/// `toolhost review`: the page alone, on `addr`, until Ctrl-C. `ready`
/// receives the bound address.
pub async fn serve(
    executor: Arc<Executor>,
    addr: std::net::SocketAddr,
    token: Option<String>,
    ready: impl FnOnce(std::net::SocketAddr, &ReviewOptions),
) -> std::io::Result<()> {
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(std::io::Error::other(format!(
            "{addr} is not a loopback address: anyone who can reach it could try to sign in. \
             Serve on 127.0.0.1, or give the secret with --token-file FILE"
        )));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let options = options_for(bound, token.unwrap_or_else(new_secret), &[]);
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { Redirect::to(BASE) }))
        .merge(router(executor, options.clone()));
    ready(bound, &options);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}

/// The options for a server bound to `addr` signing browsers in with
/// `secret`: loopback names and the address itself, plus the extra hosts
/// allowed; only the page's own origins.
pub fn options_for(addr: std::net::SocketAddr, secret: String, hosts: &[String]) -> ReviewOptions {
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
        secret,
        allowed_hosts,
        allowed_origins,
    }
}

/// The Host check for every request, then the sign-in for all but the
/// login route and the assets.
async fn guard(State(page): State<Arc<Page>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(host_name)
        .unwrap_or_default();
    if !page
        .options
        .allowed_hosts
        .iter()
        .any(|h| h.eq_ignore_ascii_case(&host))
    {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: this Host is not one the review page answers to",
        )
            .into_response();
    }
    let path = request.uri().path();
    let open = path == "/login" || path.starts_with("/assets/");
    if !open && !signed_in(request.headers(), &page.options.secret) {
        return (
            StatusCode::UNAUTHORIZED,
            Html(layout(
                "Sign in",
                "",
                &format!(
                    "<p>Open the link the server printed when it started \
                     (<code>{BASE}/login?token=...</code>), or paste its token:</p>\
                     <form method=\"post\" action=\"{BASE}/login\"><label>Token \
                     <input name=\"token\" type=\"password\" size=\"40\" autocomplete=\"off\"></label> \
                     <button type=\"submit\">Sign in</button></form>"
                ),
            )),
        )
            .into_response();
    }
    next.run(request).await
}

/// Whether the request carries the page's sign-in cookie.
fn signed_in(headers: &HeaderMap, secret: &str) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE)
        .any(|(_, value)| same(value.as_bytes(), secret.as_bytes()))
}

/// The headers every answer carries: what the browser may load and run.
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[derive(Deserialize)]
struct LoginQuery {
    #[serde(default)]
    token: String,
}

/// Keep the secret in a cookie this site alone sends, then go to the page.
async fn login(State(page): State<Arc<Page>>, Query(q): Query<LoginQuery>) -> Response {
    sign_in(&page, &q.token)
}

/// The same, from the sign-in form (the secret stays out of the history).
async fn login_form(State(page): State<Arc<Page>>, Form(q): Form<LoginQuery>) -> Response {
    sign_in(&page, &q.token)
}

fn sign_in(page: &Page, token: &str) -> Response {
    if !same(token.as_bytes(), page.options.secret.as_bytes()) {
        return (
            StatusCode::UNAUTHORIZED,
            "Unauthorized: not this server's review token",
        )
            .into_response();
    }
    let cookie = format!(
        "{COOKIE}={}; Path={BASE}; HttpOnly; SameSite=Strict",
        page.options.secret
    );
    let mut response = Redirect::to(BASE).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
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

#[derive(Deserialize)]
struct Shown {
    /// The tool just decided, to show its new state at the top.
    #[serde(default)]
    decided: Option<String>,
}

/// The dynamic tools: pending ones to decide, then the decided ones.
async fn pending(State(page): State<Arc<Page>>, Query(shown): Query<Shown>) -> Response {
    blocking(move || Html(render_pending(&page, shown.decided.as_deref(), None)).into_response())
        .await
}

/// `render` on a thread of its own: pages read files, and the server's
/// protocol thread must not wait on them.
async fn blocking(render: impl FnOnce() -> Response + Send + 'static) -> Response {
    tokio::task::spawn_blocking(render)
        .await
        .unwrap_or_else(|e| {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the page failed: {e}"),
            )
                .into_response()
        })
}

fn store(page: &Page) -> Option<&Store> {
    page.executor.dynamic_store()
}

fn render_pending(page: &Page, decided: Option<&str>, error: Option<&str>) -> String {
    let mut body = String::new();
    if let Some(error) = error {
        let _ = write!(body, "<p class=\"error\" role=\"alert\">{}</p>", esc(error));
    }
    let Some(store) = store(page) else {
        body.push_str(
            "<p>There is no dynamic-tool store: set <code>[dynamic] dir</code> or \
             <code>state_dir</code> in the configuration.</p>",
        );
        return layout("Tools agents created", "pending", &body);
    };
    let (entries, problems) = store.list();
    if let Some(id) = decided
        && let Some(entry) = entries.iter().find(|e| e.meta.id == id)
    {
        let what = match entry.meta.status {
            Status::Approved => format!(
                "Approved <b>{}</b> with: {}. It is loaded now.",
                esc(&entry.meta.name),
                esc(&caps_text(entry.meta.grant.as_deref().unwrap_or_default()))
            ),
            Status::Rejected => format!(
                "Rejected <b>{}</b>; its source is removed.",
                esc(&entry.meta.name)
            ),
            Status::Pending => format!("<b>{}</b> is still pending.", esc(&entry.meta.name)),
        };
        let _ = write!(body, "<p class=\"notice\" role=\"status\">{what}</p>");
    }
    for problem in problems {
        let _ = write!(
            body,
            "<p class=\"error\">{}: {}</p>",
            esc(&problem.path.display().to_string()),
            esc(&problem.reason)
        );
    }
    let waiting: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.meta.status == Status::Pending)
        .collect();
    let _ = write!(body, "<h2>Pending ({})</h2>", waiting.len());
    if waiting.is_empty() {
        body.push_str("<p class=\"empty\">Nothing waits for a decision.</p>");
    }
    for entry in waiting {
        body.push_str(&pending_card(page, entry));
    }
    let decided: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.meta.status != Status::Pending)
        .collect();
    if !decided.is_empty() {
        body.push_str(
            "<h2>Decided</h2><table><thead><tr><th>Name</th><th>Status</th><th>Kind</th>\
             <th>Granted</th><th>Decided</th><th>Reason</th></tr></thead><tbody>",
        );
        for e in decided {
            let m = &e.meta;
            let _ = write!(
                body,
                "<tr id=\"t-{id}\" class=\"{status}\"><td>{name}</td><td>{status}</td><td>{kind}</td>\
                 <td>{grant}</td><td>{at}</td><td>{reason}</td></tr>",
                id = attr(&m.id),
                name = esc(&m.name),
                status = m.status.as_str(),
                kind = m.kind.as_str(),
                grant = esc(&m.grant.as_deref().map(caps_text).unwrap_or_default()),
                at = esc(m.decided_at.as_deref().unwrap_or("")),
                reason = esc(m.reason.as_deref().unwrap_or("")),
            );
        }
        body.push_str("</tbody></table>");
    }
    layout("Tools agents created", "pending", &body)
}

fn pending_card(page: &Page, entry: &Entry) -> String {
    let m = &entry.meta;
    let id = attr(&m.id);
    let mut card = format!(
        "<article class=\"tool\" id=\"t-{id}\" data-requested=\"{asked}\">\
         <h3>{name} <span class=\"badge\">pending</span></h3>\
         <dl><dt>id</dt><dd><code>{shown_id}</code></dd><dt>kind</dt><dd>{kind}</dd>\
         <dt>scope</dt><dd>{scope}</dd><dt>created by</dt><dd>{by}</dd>\
         <dt>created</dt><dd>{at}</dd><dt>asks for</dt><dd class=\"requested\">{requested}</dd></dl>\
         <p class=\"description\">{description}</p>",
        name = esc(&m.name),
        kind = m.kind.as_str(),
        scope = esc(&m.scope),
        by = esc(m.created_by.as_deref().unwrap_or("-")),
        at = esc(&m.created_at),
        shown_id = esc(&m.id),
        requested = esc(&caps_text(&m.capabilities)),
        asked = attr(&m.capabilities.join(", ")),
        description = esc(&m.description),
    );
    let mut warnings = m.warnings.clone();
    let source = std::fs::read(entry.source_path());
    if m.kind == Kind::Command
        && let Ok(bytes) = &source
    {
        let template: Vec<String> = serde_json::from_slice(bytes).unwrap_or_default();
        for w in toolhost_shared::dynamic::template_warnings(&template) {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    if warnings.is_empty() {
        card.push_str(
            "<p class=\"no-warnings\">No warnings found. Parsing finds the common risky \
             constructs; it is not a verdict: the grant is what bounds the tool.</p>",
        );
    } else {
        card.push_str("<h4>Warnings</h4><ul class=\"warnings\">");
        for w in &warnings {
            let _ = write!(card, "<li>{}</li>", esc(w));
        }
        card.push_str("</ul>");
    }
    let schema = serde_json::to_string_pretty(&m.parameters).unwrap_or_default();
    let _ = write!(
        card,
        "<details><summary>Parameters (JSON Schema)</summary><pre>{}</pre></details>",
        esc(&schema)
    );
    let seen = source
        .as_ref()
        .map(|bytes| crate::dynamic::review_digest(m, bytes))
        .unwrap_or_default();
    match source {
        Ok(bytes) if m.kind == Kind::Component => {
            let _ = write!(
                card,
                "<p>A component of {} bytes, blake3 <code>{}</code>.</p>",
                bytes.len(),
                blake3::hash(&bytes).to_hex()
            );
        }
        Ok(bytes) => {
            card.push_str("<h4>Source</h4><pre class=\"source\">");
            for (n, line) in js_lines(&String::from_utf8_lossy(&bytes)).enumerate() {
                let _ = writeln!(card, "<span class=\"ln\">{:>4}</span> {}", n + 1, esc(line));
            }
            card.push_str("</pre>");
        }
        Err(e) => {
            let _ = write!(
                card,
                "<p class=\"error\">The source cannot be read: {}</p>",
                esc(&e.to_string())
            );
        }
    }
    let csrf = &page.csrf;
    let _ = write!(
        card,
        "<div class=\"decide\">\
         <form method=\"post\" action=\"{BASE}/approve\" class=\"approve\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <input type=\"hidden\" name=\"id\" value=\"{id}\">\
         <input type=\"hidden\" name=\"seen\" value=\"{seen}\">\
         <label>Grant <input name=\"grant\" value=\"{asked}\" size=\"40\" \
         aria-describedby=\"grant-help\"></label>\
         <button type=\"submit\" class=\"approve-button\">Approve</button></form>\
         <form method=\"post\" action=\"{BASE}/reject\" class=\"reject\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <input type=\"hidden\" name=\"id\" value=\"{id}\">\
         <label>Reason <input name=\"reason\" size=\"30\"></label>\
         <button type=\"submit\" class=\"reject-button\">Reject</button></form>\
         <p id=\"grant-help\" class=\"help\">The grant is what the tool may use, comma-separated \
         (<code>workspace:read</code>, <code>workspace:write</code>, <code>commands</code>, \
         <code>network:HOST</code>, <code>env:VAR</code>); empty grants nothing.</p></div></article>",
        asked = attr(&m.capabilities.join(", ")),
    );
    card
}

#[derive(Deserialize)]
struct Decision {
    /// Absent is refused like wrong (403), not as a malformed form.
    #[serde(default)]
    csrf: String,
    id: String,
    /// The digest of what the person was shown (approvals).
    #[serde(default)]
    seen: Option<String>,
    #[serde(default)]
    grant: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

/// Why a POST is refused, if it is: it must carry the page's CSRF token
/// and, when the browser says where it comes from, come from this page's
/// origin.
fn refusal(page: &Page, headers: &HeaderMap, csrf: &str) -> Option<&'static str> {
    if !same(csrf.as_bytes(), page.csrf.as_bytes()) {
        return Some("the request does not carry this page's CSRF token (reload the page)");
    }
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    let foreign = origin.is_some_and(|o| !page.options.allowed_origins.iter().any(|a| a == o))
        || site.is_some_and(|s| !matches!(s, "same-origin" | "none"));
    foreign.then_some("the request comes from another site")
}

fn forbidden(why: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        format!("Forbidden: {why}; nothing was changed"),
    )
        .into_response()
}

async fn approve(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    Form(form): Form<Decision>,
) -> Response {
    if let Some(why) = refusal(&page, &headers, &form.csrf) {
        return forbidden(why);
    }
    let grant: Vec<String> = form
        .grant
        .unwrap_or_default()
        .split([',', ' ', '\n', '\t'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect();
    // What the person saw is what is approved: without the digest of it,
    // nothing is.
    let seen = form.seen.unwrap_or_default();
    decide(page, form.id, "approve", move |executor, store, id| {
        store
            .approve_seen(
                executor.runtime(),
                &executor.registry(),
                id,
                Some(grant),
                Some(&seen),
            )
            .map_err(|e| e.to_string())
    })
    .await
}

async fn reject(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    Form(form): Form<Decision>,
) -> Response {
    if let Some(why) = refusal(&page, &headers, &form.csrf) {
        return forbidden(why);
    }
    let reason = form
        .reason
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    decide(page, form.id, "reject", move |_, store, id| {
        store.reject(id, reason).map_err(|e| e.to_string())
    })
    .await
}

/// Carry out a decision (`what`: approve or reject) on `id` off the
/// protocol thread, reload the tool set at once (clients get
/// list_changed), and answer with the page showing it.
async fn decide(
    page: Arc<Page>,
    id: String,
    what: &'static str,
    act: impl FnOnce(&Executor, &Store, &str) -> Result<Entry, String> + Send + 'static,
) -> Response {
    let page2 = Arc::clone(&page);
    let done = tokio::task::spawn_blocking(move || {
        let executor = &page2.executor;
        let store = executor
            .dynamic_store()
            .ok_or_else(|| "there is no dynamic-tool store".to_owned())?;
        let entry = act(executor, store, &id).map_err(|e| format!("cannot {what} `{id}`: {e}"))?;
        tracing::info!(tool = %entry.meta.name, id = %entry.meta.id, what, "decided in the review page");
        if let Err(err) = executor.reload_plugins() {
            tracing::warn!(%err, "cannot reload after a decision");
        }
        Ok::<_, String>(entry.meta.id)
    })
    .await
    .unwrap_or_else(|e| Err(format!("the decision failed: {e}")));
    decided(&page, done)
}

/// After a decision: back to the page showing it (a reload does not post
/// again), or the page with what went wrong.
fn decided(page: &Page, done: Result<String, String>) -> Response {
    match done {
        Ok(id) => {
            let query: String = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("decided", &id)
                .finish();
            Redirect::to(&format!("{BASE}?{query}")).into_response()
        }
        Err(why) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Html(render_pending(page, None, Some(&why))),
        )
            .into_response(),
    }
}

/// Every tool the executor offers: what it declares, what it is granted,
/// how sensitive it is.
async fn tools(State(page): State<Arc<Page>>) -> Response {
    blocking(move || render_tools(&page)).await
}

fn render_tools(page: &Page) -> Response {
    let executor = &page.executor;
    let mut body = String::from(
        "<table class=\"tools\"><thead><tr><th>Tool</th><th>Origin</th><th>Sensitivity</th>\
         <th>Declares</th><th>Granted</th><th>Description</th></tr></thead><tbody>",
    );
    for plugin in executor.tools() {
        let info = plugin.info();
        let declared: Vec<String> = info.capabilities.iter().map(ToString::to_string).collect();
        let granted: Vec<String> = executor
            .effective_grant(&plugin)
            .capabilities()
            .iter()
            .map(ToString::to_string)
            .collect();
        let _ = write!(
            body,
            "<tr id=\"tool-{id}\"><td><b>{name}</b></td><td>{origin}</td><td>{sensitivity}</td>\
             <td>{declared}</td><td>{granted}</td><td>{description}</td></tr>",
            id = attr(&info.name),
            name = esc(&info.name),
            origin = esc(&plugin.origin().to_string()),
            sensitivity = esc(&executor.sensitivity(&plugin).to_string()),
            declared = esc(&or_none(&declared)),
            granted = esc(&or_none(&granted)),
            description = esc(&info.description),
        );
    }
    body.push_str("</tbody></table>");
    Html(layout("Tools", "tools", &body)).into_response()
}

#[derive(Deserialize, Default)]
struct AuditFilter {
    #[serde(default)]
    tool: String,
    #[serde(default)]
    outcome: String,
    /// `1h`, `24h`, `7d` or empty (all).
    #[serde(default)]
    since: String,
}

/// The newest audit records, filtered by tool, outcome and time.
async fn audit(State(page): State<Arc<Page>>, Query(filter): Query<AuditFilter>) -> Response {
    blocking(move || render_audit(&page, &filter)).await
}

fn render_audit(page: &Page, filter: &AuditFilter) -> Response {
    let mut body = String::new();
    let Some(path) = page.executor.audit_path() else {
        body.push_str(
            "<p>The audit log is off: set <code>audit_log</code> in the configuration (or \
             <code>--audit FILE</code>).</p>",
        );
        return Html(layout("Audit log", "audit", &body)).into_response();
    };
    let text = tail(path, AUDIT_TAIL_BYTES);
    let lines: Vec<&str> = text.lines().collect();
    let newest = &lines[lines.len().saturating_sub(AUDIT_LINES)..];
    let records: Vec<serde_json::Value> = newest
        .iter()
        .rev()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let since = match filter.since.as_str() {
        "1h" => Some(3_600),
        "24h" => Some(86_400),
        "7d" => Some(7 * 86_400),
        _ => None,
    }
    .map(|secs| std::time::SystemTime::now() - std::time::Duration::from_secs(secs));
    let mut tools: Vec<&str> = records.iter().filter_map(|r| r["tool"].as_str()).collect();
    tools.sort_unstable();
    tools.dedup();
    let mut outcomes: Vec<&str> = records
        .iter()
        .filter_map(|r| r["outcome"].as_str())
        .collect();
    outcomes.sort_unstable();
    outcomes.dedup();
    let select = |name: &str, values: &[&str], chosen: &str| {
        let mut html = format!("<select name=\"{name}\"><option value=\"\">all</option>");
        for v in values {
            let _ = write!(
                html,
                "<option value=\"{a}\"{}>{v}</option>",
                if *v == chosen { " selected" } else { "" },
                a = attr(v),
                v = esc(v)
            );
        }
        html.push_str("</select>");
        html
    };
    let _ = write!(
        body,
        "<form method=\"get\" action=\"{BASE}/audit\" class=\"filter\">\
         <label>Tool {}</label> <label>Outcome {}</label> <label>Since {}</label> \
         <button type=\"submit\">Filter</button></form>",
        select("tool", &tools, &filter.tool),
        select("outcome", &outcomes, &filter.outcome),
        select("since", &["1h", "24h", "7d"], &filter.since),
    );
    let shown: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| filter.tool.is_empty() || r["tool"] == filter.tool.as_str())
        .filter(|r| filter.outcome.is_empty() || r["outcome"] == filter.outcome.as_str())
        .filter(|r| {
            since.is_none_or(|since| {
                r["time"]
                    .as_str()
                    .and_then(|t| humantime::parse_rfc3339(t).ok())
                    .is_some_and(|t| t >= since)
            })
        })
        .take(AUDIT_SHOWN)
        .collect();
    let _ = write!(
        body,
        "<p class=\"count\">{} record{} (newest first; at most {AUDIT_SHOWN}).</p>\
         <table class=\"audit\"><thead><tr><th>Time</th><th>Tool</th><th>Outcome</th><th>Agent</th>\
         <th>ms</th><th>Input</th><th>Commands</th></tr></thead><tbody>",
        shown.len(),
        if shown.len() == 1 { "" } else { "s" }
    );
    for r in shown {
        let commands: Vec<String> = r["commands"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        format!(
                            "{} ({})",
                            c["command"].as_str().unwrap_or(""),
                            c["outcome"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = write!(
            body,
            "<tr class=\"{outcome}\"><td>{time}</td><td>{tool}</td><td>{outcome}</td><td>{agent}</td>\
             <td>{ms:.1}</td><td><code>{input}</code></td><td>{commands}</td></tr>",
            time = esc(r["time"].as_str().unwrap_or("")),
            tool = esc(r["tool"].as_str().unwrap_or("")),
            outcome = esc(r["outcome"].as_str().unwrap_or("")),
            agent = esc(r["agent"].as_str().unwrap_or("-")),
            ms = r["duration_ms"].as_f64().unwrap_or(0.0),
            input = esc(&r["input"].to_string()),
            commands = esc(&commands.join("; ")),
        );
    }
    body.push_str("</tbody></table>");
    Html(layout("Audit log", "audit", &body)).into_response()
}

/// The page around `body`, with the navigation (`current` marked).
fn layout(title: &str, current: &str, body: &str) -> String {
    let link = |href: &str, name: &str, label: &str| {
        format!(
            "<a href=\"{BASE}{href}\"{}>{label}</a>",
            if name == current {
                " aria-current=\"page\""
            } else {
                ""
            }
        )
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · toolhost review</title>\
         <link rel=\"stylesheet\" href=\"{BASE}/assets/review.css\">\
         <script src=\"{BASE}/assets/review.js\" defer></script></head><body>\
         <header><b>toolhost</b> review <nav>{} {} {}</nav></header>\
         <main><h1>{title}</h1>{body}</main></body></html>",
        link("", "pending", "Created tools"),
        link("/tools", "tools", "All tools"),
        link("/audit", "audit", "Audit log"),
        title = esc(title),
    )
}

/// `text` safe in HTML text and attribute values; control, bidirectional
/// and invisible characters are shown as a visible `U+XXXX` mark, so an
/// agent's source cannot hide what it does from the person reading it.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() || toolhost_shared::dynamic::is_invisible(c) => {
                let _ = write!(out, "<mark class=\"cc\">U+{:04X}</mark>", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` safe inside a quoted attribute: like [`esc`], with hidden
/// characters written as `U+XXXX` text (no markup inside an attribute).
fn attr(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() || toolhost_shared::dynamic::is_invisible(c) => {
                let _ = write!(out, "U+{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `source`'s lines as JavaScript counts them (`\r\n`, `\n`, `\r`, U+2028,
/// U+2029 each end one), so the numbers match the warnings'.
fn js_lines(source: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(source);
    std::iter::from_fn(move || {
        let text = rest?;
        match text.find(['\n', '\r', '\u{2028}', '\u{2029}']) {
            None => {
                rest = None;
                (!text.is_empty()).then_some(text)
            }
            Some(at) => {
                let end = text[at..].chars().next().map_or(1, char::len_utf8);
                let skip = if text[at..].starts_with("\r\n") {
                    2
                } else {
                    end
                };
                rest = Some(&text[at + skip..]);
                Some(&text[..at])
            }
        }
    })
}

/// The last `max` bytes of the file at `path` (from a line's start), or
/// nothing when it cannot be read.
fn tail(path: &std::path::Path, max: u64) -> String {
    use std::io::{Read as _, Seek as _};
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(max);
    let mut bytes = Vec::new();
    if file.seek(std::io::SeekFrom::Start(start)).is_err() || file.read_to_end(&mut bytes).is_err()
    {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if start == 0 {
        return text;
    }
    // The first line was cut: drop it.
    text.split_once('\n')
        .map(|(_, rest)| rest.to_owned())
        .unwrap_or_default()
}

fn or_none(items: &[String]) -> String {
    if items.is_empty() {
        "-".to_owned()
    } else {
        items.join(", ")
    }
}

/// `bytes` random bytes from the kernel, as hex.
fn random_hex(bytes: usize) -> String {
    use std::io::Read as _;
    let mut buf = vec![0u8; bytes];
    if let Err(err) = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)) {
        // Without the kernel's randomness, a per-process value is still
        // unguessable enough for one loopback page; say so.
        tracing::warn!(%err, "cannot read /dev/urandom; the CSRF token is weaker");
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        return blake3::hash(seed.as_bytes()).to_hex().to_string();
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
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
    fn hosts_and_tokens() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:80"), "::1");
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; toolhost_review=s3cret"),
        );
        assert!(signed_in(&headers, "s3cret"));
        assert!(!signed_in(&headers, "other"));
        assert_eq!(random_hex(32).len(), 64);
        assert_ne!(random_hex(8), random_hex(8));
    }
}
