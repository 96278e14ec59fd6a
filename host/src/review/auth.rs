//! The Host check, the sign-in and its cookie, and the security headers of every answer.

use super::*;

/// The Host check for every request, then the sign-in for all but the
/// login route and the assets.
pub(super) async fn guard(State(page): State<Arc<Page>>, request: Request, next: Next) -> Response {
    if !host_allowed(request.headers(), &page.options.allowed_hosts) {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: this Host is not one the review page answers to",
        )
            .into_response();
    }
    let path = request.uri().path();
    let open = path == "/login" || path.starts_with("/assets/");
    if !open && !signed_in(request.headers(), &page.options.secret) {
        let mut answer = page_of("sign_in.html", Layout::new("Sign in", ""));
        if answer.status().is_success() {
            *answer.status_mut() = StatusCode::UNAUTHORIZED;
        }
        return answer;
    }
    next.run(request).await
}

/// Whether the request carries the page's sign-in cookie.
pub(super) fn signed_in(headers: &HeaderMap, secret: &str) -> bool {
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

/// Keep the secret in a cookie this site alone sends, then go to the page.
pub(super) async fn login(State(page): State<Arc<Page>>, Query(q): Query<LoginQuery>) -> Response {
    sign_in(&page, &q.token)
}

/// The same, from the sign-in form (the secret stays out of the history).
pub(super) async fn login_form(
    State(page): State<Arc<Page>>,
    Form(q): Form<LoginQuery>,
) -> Response {
    sign_in(&page, &q.token)
}

pub(super) fn sign_in(page: &Page, token: &str) -> Response {
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
