//! The pending tools page: one card per tool awaiting a decision.

use super::*;

#[derive(Deserialize)]
pub(super) struct Shown {
    /// The tool just decided, to show its new state at the top.
    #[serde(default)]
    decided: Option<String>,
}

/// The dynamic tools: pending ones to decide, then the decided ones.
pub(super) async fn pending(State(page): State<Arc<Page>>, Query(shown): Query<Shown>) -> Response {
    blocking(move || Html(render_pending(&page, shown.decided.as_deref(), None)).into_response())
        .await
}

/// `render` on a thread of its own: pages read files, and the server's
/// protocol thread must not wait on them.
pub(super) async fn blocking(render: impl FnOnce() -> Response + Send + 'static) -> Response {
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

pub(super) fn store(page: &Page) -> Option<&Store> {
    page.executor.dynamic_store()
}

pub(super) fn render_pending(page: &Page, decided: Option<&str>, error: Option<&str>) -> String {
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

pub(super) fn pending_card(page: &Page, entry: &Entry) -> String {
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
