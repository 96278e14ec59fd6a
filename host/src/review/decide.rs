//! Approve and reject: the checks every state-changing request passes, and the decision itself.

use super::*;

#[derive(Deserialize)]
pub(super) struct Decision {
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
pub(super) fn refusal(page: &Page, headers: &HeaderMap, csrf: &str) -> Option<&'static str> {
    if !same(csrf.as_bytes(), page.csrf.as_bytes()) {
        return Some("the request does not carry this page's CSRF token (reload the page)");
    }
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    let foreign = origin.is_some_and(|o| !page.options.allowed_origins.iter().any(|a| a == o))
        || site.is_some_and(|s| !matches!(s, "same-origin" | "none"));
    foreign.then_some("the request comes from another site")
}

pub(super) fn forbidden(why: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        format!("Forbidden: {why}; nothing was changed"),
    )
        .into_response()
}

pub(super) async fn approve(
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

pub(super) async fn reject(
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
pub(super) async fn decide(
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
pub(super) fn decided(page: &Page, done: Result<String, String>) -> Response {
    match done {
        Ok(id) => {
            let query: String = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("decided", &id)
                .finish();
            Redirect::to(&format!("{BASE}?{query}")).into_response()
        }
        Err(why) => {
            let mut answer = render_pending(page, None, Some(&why));
            if answer.status().is_success() {
                *answer.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
            }
            answer
        }
    }
}
