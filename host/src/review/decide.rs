//! Approve and reject: the checks every state-changing request passes, and the decision itself.

use super::*;
use crate::dynamic::Decider;

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
    /// `yes`: the person confirmed a grant wider than what was asked.
    #[serde(default)]
    widen: Option<String>,
}

/// Why a POST is refused, if it is: it must carry the page's CSRF token,
/// and say it comes from this page: an `Origin` of the page's or
/// `Sec-Fetch-Site: same-origin` (browsers send one of them on a form's
/// POST), and neither saying otherwise.
pub(super) fn refusal(page: &Page, headers: &HeaderMap, csrf: &str) -> Option<&'static str> {
    if !same(csrf.as_bytes(), page.csrf.as_bytes()) {
        return Some("the request does not carry this page's CSRF token (reload the page)");
    }
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    let own_origin = origin.map(|o| page.options.allowed_origins.iter().any(|a| a == o));
    let own_site = site.map(|s| s == "same-origin");
    match (own_origin, own_site) {
        (Some(false), _) | (_, Some(false)) => Some("the request comes from another site"),
        (None, None) => Some(
            "the request does not say where it comes from (no Origin or Sec-Fetch-Site); \
             decide in the page itself",
        ),
        _ => None,
    }
}

pub(super) fn forbidden(why: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        format!("Forbidden: {why}; nothing was changed"),
    )
        .into_response()
}

/// The grant field as capabilities.
fn grant_of(text: Option<&str>) -> Vec<String> {
    text.unwrap_or_default()
        .split([',', ' ', '\n', '\t'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What `granted` gives that `requested` did not ask for (`workspace:read`
/// is within `workspace:write`; `none` adds nothing).
pub(super) fn added(requested: &[String], granted: &[String]) -> Vec<String> {
    let asked = |cap: &str| requested.iter().any(|r| r == cap);
    granted
        .iter()
        .filter(|cap| {
            !(cap.as_str() == "none"
                || asked(cap)
                || (cap.as_str() == "workspace:read" && asked("workspace:write")))
        })
        .cloned()
        .collect()
}

/// The second step of an approval that grants more than was asked: the
/// difference, and a form to confirm it.
fn widen_page(page: &Page, entry: &Entry, form: &Decision, grant: &[String]) -> Response {
    page_of(
        "widen.html",
        context! {
            name => entry.meta.name.clone(),
            id => form.id.clone(),
            seen => form.seen.clone().unwrap_or_default(),
            grant => grant.join(", "),
            requested => caps_text(&entry.meta.capabilities),
            granted => caps_text(grant),
            added => added(&entry.meta.capabilities, grant),
            csrf => page.csrf.clone(),
            ..value(Layout::new("Widen a grant", "pending", &page.options.links.base))
        },
    )
}

pub(super) async fn approve(
    State(page): State<Arc<Page>>,
    Extension(who): Extension<SignedIn>,
    headers: HeaderMap,
    Form(form): Form<Decision>,
) -> Response {
    if let Some(why) = refusal(&page, &headers, &form.csrf) {
        return forbidden(why);
    }
    let grant = grant_of(form.grant.as_deref());
    // Narrowing takes one step; a grant wider than what the tool asked
    // for takes a second, which shows the difference.
    if form.widen.as_deref() != Some("yes") {
        let (page2, id) = (Arc::clone(&page), form.id.clone());
        let entry = tokio::task::spawn_blocking(move || store(&page2)?.find(&id).ok())
            .await
            .ok()
            .flatten();
        if let Some(entry) = entry
            && !added(&entry.meta.capabilities, &grant).is_empty()
        {
            return widen_page(&page, &entry, &form, &grant);
        }
    }
    // What the person saw is what is approved: without the digest of it,
    // nothing is.
    let seen = form.seen.unwrap_or_default();
    decide(page, form.id, "approve", move |executor, store, id| {
        store
            .approve_as(
                executor.runtime(),
                &executor.registry(),
                id,
                Some(grant),
                Some(&seen),
                &Decider::review_page(&who.0),
            )
            .map_err(|e| e.to_string())
    })
    .await
}

pub(super) async fn reject(
    State(page): State<Arc<Page>>,
    Extension(who): Extension<SignedIn>,
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
        store
            .reject_as(id, reason, &Decider::review_page(&who.0))
            .map_err(|e| e.to_string())
    })
    .await
}

/// Decline an agent's request about an approved tool: it stays as it is.
pub(super) async fn decline(
    State(page): State<Arc<Page>>,
    Extension(who): Extension<SignedIn>,
    headers: HeaderMap,
    Form(form): Form<Decision>,
) -> Response {
    if let Some(why) = refusal(&page, &headers, &form.csrf) {
        return forbidden(why);
    }
    decide(page, form.id, "decline", move |_, store, id| {
        store
            .decline_as(id, &Decider::review_page(&who.0))
            .map_err(|e| e.to_string())
    })
    .await
}

/// Carry out a decision (`what`: approve, reject or decline) on `id` off the
/// protocol thread, put it on the record, reload the tool set at once
/// (clients get list_changed), and answer with the page showing it.
pub(super) async fn decide(
    page: Arc<Page>,
    id: String,
    what: &'static str,
    act: impl FnOnce(&Executor, &Store, &str) -> Result<(Entry, crate::dynamic::Decision), String>
    + Send
    + 'static,
) -> Response {
    let page2 = Arc::clone(&page);
    let done = tokio::task::spawn_blocking(move || {
        let executor = &page2.executor;
        let store = executor
            .dynamic_store()
            .ok_or_else(|| "there is no dynamic-tool store".to_owned())?;
        let (entry, decision) =
            act(executor, store, &id).map_err(|e| format!("cannot {what} `{id}`: {e}"))?;
        executor.record_decision(&decision);
        tracing::info!(
            tool = %entry.meta.name,
            id = %entry.meta.id,
            decision = %decision.decision,
            by = %decision.by,
            "decided in the review page"
        );
        if let Err(err) = executor.reload_plugins() {
            tracing::warn!(%err, "cannot reload after a decision");
        }
        Ok::<_, String>(entry.meta.id)
    })
    .await
    .unwrap_or_else(|e| Err(format!("the decision failed: {e}")));
    decided(page, done).await
}

/// After a decision: back to the page showing it (a reload does not post
/// again), or the page with what went wrong.
pub(super) async fn decided(page: Arc<Page>, done: Result<String, String>) -> Response {
    match done {
        Ok(id) => {
            let query: String = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("decided", &id)
                .finish();
            Redirect::to(&format!("{}?{query}", page.options.links.base)).into_response()
        }
        // Drawn off the protocol thread: it reads the store and inspects
        // components.
        Err(why) => {
            blocking(move || {
                let mut answer = render_pending(&page, None, Some(&why));
                if answer.status().is_success() {
                    *answer.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
                }
                answer
            })
            .await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_was_not_asked_for_is_added() {
        let asked = |caps: &[&str]| caps.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>();
        assert!(
            added(
                &asked(&["workspace:write", "commands"]),
                &asked(&["workspace:read"])
            )
            .is_empty()
        );
        assert!(added(&asked(&["commands"]), &asked(&["none"])).is_empty());
        assert_eq!(
            added(
                &asked(&["workspace:read"]),
                &asked(&["workspace:write", "commands"])
            ),
            ["workspace:write", "commands"]
        );
        assert_eq!(
            added(&asked(&[]), &asked(&["network:example.com"])),
            ["network:example.com"]
        );
    }
}
