//! The Host check, the sign-in and its cookie, and the security headers of every answer.
//!
//! - The page lives under a random path of its own per start
//!   ([`ReviewOptions::base`], `/review/<random>`), and its cookie is
//!   scoped to that path. Browsers send cookies by host, not port: a
//!   server on another loopback port receives the cookie only for a URL
//!   under that path, which it does not know.
//! - The cookie holds a sign-in's own id, never a secret that was printed.
//! - A printed sign-in link works once, within [`LINK_LIFETIME`]. A used
//!   or expired one has a new one printed where the server runs (for
//!   whoever can read that terminal), at most once per [`RELINK_EVERY`].

use super::*;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a printed sign-in link works.
pub const LINK_LIFETIME: Duration = Duration::from_secs(15 * 60);
/// How long a sign-in lasts.
const SIGN_IN_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// The least time between two new links printed on request.
const RELINK_EVERY: Duration = Duration::from_secs(10);

/// The page's sign-ins: the links that may still be used, and the browsers
/// signed in.
#[derive(Default)]
pub(super) struct SignIns {
    /// One-time link tokens, with when each stops working.
    links: Mutex<HashMap<String, Instant>>,
    /// Signed-in browsers: cookie value → who (for the record) and until when.
    browsers: Mutex<HashMap<String, (String, Instant)>>,
    /// When a new link was last printed on request.
    relinked: Mutex<Option<Instant>>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SignIns {
    /// Sign-ins whose first link token is `first`.
    pub(super) fn new(first: &str) -> Self {
        let signins = Self::default();
        locked(&signins.links).insert(first.to_owned(), Instant::now() + LINK_LIFETIME);
        signins
    }

    /// Use a link token: true once, within its lifetime.
    pub(super) fn use_link(&self, token: &str) -> bool {
        let mut links = locked(&self.links);
        let now = Instant::now();
        links.retain(|_, until| *until > now);
        let found = links
            .keys()
            .find(|k| same(k.as_bytes(), token.as_bytes()))
            .cloned();
        found.is_some_and(|k| links.remove(&k).is_some())
    }

    /// A new link token, unless one was made on request too recently.
    pub(super) fn relink(&self) -> Option<String> {
        let mut last = locked(&self.relinked);
        let now = Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < RELINK_EVERY) {
            return None;
        }
        *last = Some(now);
        let token = random_hex(32);
        locked(&self.links).insert(token.clone(), now + LINK_LIFETIME);
        Some(token)
    }

    /// A new sign-in: its cookie value.
    pub(super) fn sign_in(&self) -> String {
        let id = random_hex(32);
        let label = format!("sign-in {}", &blake3::hash(id.as_bytes()).to_hex()[..12]);
        tracing::info!(who = %label, "a browser signed in to the review page");
        let mut browsers = locked(&self.browsers);
        let now = Instant::now();
        browsers.retain(|_, (_, until)| *until > now);
        browsers.insert(id.clone(), (label, now + SIGN_IN_LIFETIME));
        id
    }

    /// Who the browser presenting `cookie` is, if it is signed in.
    pub(super) fn who(&self, cookie: &str) -> Option<String> {
        let browsers = locked(&self.browsers);
        let now = Instant::now();
        browsers
            .iter()
            .find(|(id, (_, until))| *until > now && same(id.as_bytes(), cookie.as_bytes()))
            .map(|(_, (label, _))| label.clone())
    }
}

/// Who signed in, for a request that is: the label decisions are recorded
/// with.
#[derive(Debug, Clone)]
pub(super) struct SignedIn(pub(super) String);

/// The Host check for every request, then the sign-in for all but the
/// login route and the assets.
pub(super) async fn guard(
    State(page): State<Arc<Page>>,
    mut request: Request,
    next: Next,
) -> Response {
    if !host_allowed(request.headers(), &page.options.allowed_hosts) {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: this Host is not one the review page answers to",
        )
            .into_response();
    }
    let path = request.uri().path();
    let open = path == "/login" || path.starts_with("/assets/");
    if open {
        return next.run(request).await;
    }
    match cookie(request.headers()).and_then(|c| page.signins.who(c)) {
        Some(who) => {
            request.extensions_mut().insert(SignedIn(who));
            next.run(request).await
        }
        None => sign_in_page(&page, StatusCode::UNAUTHORIZED, None),
    }
}

/// The page's cookie in `headers`, if any.
pub(super) fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
}

/// The sign-in page, with `said` above the form.
fn sign_in_page(page: &Page, status: StatusCode, said: Option<&str>) -> Response {
    let mut answer = page_of(
        "sign_in.html",
        context! { said => said, ..value(Layout::new("Sign in", "", &page.options.links.base)) },
    );
    if answer.status().is_success() {
        *answer.status_mut() = status;
    }
    answer
}

/// The headers every answer carries: what the browser may load and run.
pub(super) async fn security_headers(request: Request, next: Next) -> Response {
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
        // The page's address, its random path included, goes in a Referer
        // to the page itself only (`no-referrer` would make a browser's
        // form POST say `Origin: null`).
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[derive(Deserialize)]
pub(super) struct LoginQuery {
    #[serde(default)]
    token: String,
}

/// Sign in with a printed link, then go to the page.
pub(super) async fn login(State(page): State<Arc<Page>>, Query(q): Query<LoginQuery>) -> Response {
    sign_in(&page, &q.token)
}

/// The same, from the sign-in form (the token stays out of the history).
pub(super) async fn login_form(
    State(page): State<Arc<Page>>,
    Form(q): Form<LoginQuery>,
) -> Response {
    sign_in(&page, &q.token)
}

pub(super) fn sign_in(page: &Page, token: &str) -> Response {
    let password = page
        .options
        .links
        .password
        .as_deref()
        .is_some_and(|p| same(p.as_bytes(), token.as_bytes()));
    if !password && !page.signins.use_link(token) {
        let said = match page.signins.relink() {
            Some(link) => {
                page.options.links.announce(&format!(
                    "{}{}/login?token={link}",
                    page.options.origin, page.options.links.base
                ));
                "That sign-in link was used already, has expired, or is wrong. A new one \
                 was printed where toolhost runs; open it."
            }
            None => {
                "That sign-in link was used already, has expired, or is wrong. Open the \
                 newest link printed where toolhost runs."
            }
        };
        return sign_in_page(page, StatusCode::UNAUTHORIZED, Some(said));
    }
    let base = &page.options.links.base;
    let cookie = format!(
        "{COOKIE}={}; Path={base}; HttpOnly; SameSite=Strict",
        page.signins.sign_in()
    );
    let mut response = Redirect::to(base).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}
