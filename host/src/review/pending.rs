//! The pending tools page: one card per tool awaiting a decision.

use super::component::Component;
use super::*;
use crate::dynamic::Since;

#[derive(Deserialize)]
pub(super) struct Shown {
    /// The tool just decided, to show its new state at the top.
    #[serde(default)]
    decided: Option<String>,
}

/// The dynamic tools: pending ones to decide, then the decided ones.
pub(super) async fn pending(State(page): State<Arc<Page>>, Query(shown): Query<Shown>) -> Response {
    blocking(move || render_pending(&page, shown.decided.as_deref(), None)).await
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

/// The pending page: `decided` is the tool just decided (its new state
/// at the top), `error` what went wrong with a decision.
pub(super) fn render_pending(page: &Page, decided: Option<&str>, error: Option<&str>) -> Response {
    page_of("pending.html", pending_view(page, decided, error))
}

#[derive(Serialize)]
struct PendingView {
    #[serde(flatten)]
    layout: Layout,
    csrf: String,
    error: Option<String>,
    no_store: bool,
    notice: Option<Notice>,
    problems: Vec<Problem>,
    waiting: Vec<Card>,
    requests: Vec<Asked>,
    changed: Vec<ChangedCard>,
    decided: Vec<DecidedRow>,
}

/// An agent's request about an approved tool (`unload_component`).
#[derive(Serialize)]
struct Asked {
    id: String,
    name: String,
    kind: &'static str,
    grant: String,
    /// Unload it, rather than narrow its grant.
    unload: bool,
    /// What to take away, and the grant that leaves.
    revoke: String,
    after: String,
    reason: String,
    by: String,
    at: String,
    seen: String,
}

impl Asked {
    fn of(entry: &Entry, request: &crate::dynamic::Request) -> Self {
        let m = &entry.meta;
        let grant = m.grant.clone().unwrap_or_default();
        let after: Vec<String> = grant
            .iter()
            .filter(|c| !request.revoke.contains(c))
            .cloned()
            .collect();
        Self {
            id: m.id.clone(),
            name: m.name.clone(),
            kind: m.kind.as_str(),
            grant: caps_text(&grant),
            unload: request.revoke.is_empty(),
            revoke: request.revoke.join(", "),
            after: after.join(", "),
            reason: request.reason.clone().unwrap_or_default(),
            by: request.by.clone().unwrap_or_else(|| "-".to_owned()),
            at: request.at.clone(),
            seen: std::fs::read(entry.source_path())
                .map(|bytes| crate::dynamic::review_digest(m, &bytes))
                .unwrap_or_default(),
        }
    }
}

/// The state of the tool just decided.
#[derive(Serialize)]
struct Notice {
    status: &'static str,
    name: String,
    grant: String,
}

#[derive(Serialize)]
struct Problem {
    path: String,
    reason: String,
}

#[derive(Serialize)]
struct DecidedRow {
    id: String,
    name: String,
    status: &'static str,
    kind: &'static str,
    grant: String,
    at: String,
    reason: String,
    /// Approved: a person may revoke it here.
    revocable: bool,
}

/// An approved tool whose record or source changed since: not loaded
/// until a person approves it again (or revokes it).
#[derive(Serialize)]
struct ChangedCard {
    id: String,
    name: String,
    kind: &'static str,
    /// The grant last approved (from the copy kept at approval).
    grant: String,
    diff: String,
    seen: String,
    /// Whether the whole difference is shown, so it may be approved here.
    approvable: bool,
    /// No approval of it is on record at all.
    unrecorded: bool,
}

/// One pending tool: what it is, what it asks for, what parsing found,
/// its source, and the digest of what the person saw.
#[derive(Serialize)]
struct Card {
    id: String,
    name: String,
    kind: &'static str,
    scope: String,
    by: String,
    at: String,
    requested: String,
    asked: String,
    description: String,
    warnings: Vec<String>,
    schema: String,
    seen: String,
    component: Option<Component>,
    lines: Vec<Line>,
    /// A typescript tool's TypeScript, shown for reading above the
    /// JavaScript that runs.
    original: Vec<Line>,
    source_error: Option<String>,
}

#[derive(Serialize)]
struct Line {
    number: String,
    text: String,
}

fn pending_view(page: &Page, decided: Option<&str>, error: Option<&str>) -> PendingView {
    let mut view = PendingView {
        layout: Layout::new("Tools agents created", "pending", &page.options.links.base),
        csrf: page.csrf.clone(),
        error: error.map(str::to_owned),
        no_store: false,
        notice: None,
        problems: Vec::new(),
        waiting: Vec::new(),
        requests: Vec::new(),
        changed: Vec::new(),
        decided: Vec::new(),
    };
    let Some(store) = store(page) else {
        view.no_store = true;
        return view;
    };
    let (entries, problems) = store.list();
    view.notice = decided
        .and_then(|id| entries.iter().find(|e| e.meta.id == id))
        .map(|e| Notice {
            status: e.meta.status.as_str(),
            name: e.meta.name.clone(),
            grant: caps_text(e.meta.grant.as_deref().unwrap_or_default()),
        });
    view.problems = problems
        .into_iter()
        .map(|p| Problem {
            path: p.path.display().to_string(),
            reason: p.reason,
        })
        .collect();
    for entry in &entries {
        let m = &entry.meta;
        if m.status == Status::Pending {
            view.waiting.push(card(page, entry));
            continue;
        }
        let since = store.since_approval(entry);
        // A request is about the tool as approved; a changed one is
        // decided as changed first.
        if let Some(request) = m.request.as_ref()
            && since == Some(Since::Unchanged)
        {
            view.requests.push(Asked::of(entry, request));
        }
        if let Some(card) = changed_card(store, entry, since.as_ref()) {
            view.changed.push(card);
        }
        view.decided.push(DecidedRow {
            id: m.id.clone(),
            name: m.name.clone(),
            status: match since {
                Some(Since::Changed { .. }) => "changed since approval",
                Some(Since::Unrecorded) => "no approval on record",
                _ => m.status.as_str(),
            },
            kind: m.kind.as_str(),
            grant: m.grant.as_deref().map(caps_text).unwrap_or_default(),
            at: m.decided_at.clone().unwrap_or_default(),
            reason: m.reason.clone().unwrap_or_default(),
            revocable: m.status == Status::Approved,
        });
    }
    view
}

/// The card of an approved tool that is not as a person approved it.
fn changed_card(store: &Store, entry: &Entry, since: Option<&Since>) -> Option<ChangedCard> {
    let m = &entry.meta;
    let (diff, whole, unrecorded) = match since? {
        Since::Unchanged => return None,
        Since::Changed { diff, whole } => (diff.clone(), *whole, false),
        Since::Unrecorded => (String::new(), false, true),
    };
    let source = std::fs::read(entry.source_path()).unwrap_or_default();
    Some(ChangedCard {
        id: m.id.clone(),
        name: m.name.clone(),
        kind: m.kind.as_str(),
        grant: store.approved_grant(entry).unwrap_or_default().join(", "),
        diff,
        seen: crate::dynamic::review_digest(m, &source),
        approvable: whole,
        unrecorded,
    })
}

fn card(page: &Page, entry: &Entry) -> Card {
    let m = &entry.meta;
    let source = std::fs::read(entry.source_path());
    let mut warnings = m.warnings.clone();
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
    let mut card = Card {
        id: m.id.clone(),
        name: m.name.clone(),
        kind: m.kind.as_str(),
        scope: m.scope.clone(),
        by: m.created_by.clone().unwrap_or_else(|| "-".to_owned()),
        at: m.created_at.clone(),
        requested: caps_text(&m.capabilities),
        asked: m.capabilities.join(", "),
        description: m.description.clone(),
        warnings,
        schema: serde_json::to_string_pretty(&m.parameters).unwrap_or_default(),
        seen: source
            .as_ref()
            .map(|bytes| crate::dynamic::review_digest(m, bytes))
            .unwrap_or_default(),
        component: None,
        lines: Vec::new(),
        original: entry
            .original_path()
            .and_then(|path| std::fs::read(path).ok())
            .map(|bytes| numbered(&String::from_utf8_lossy(&bytes)))
            .unwrap_or_default(),
        source_error: None,
    };
    match source {
        Ok(bytes) if m.kind == Kind::Component => {
            card.component = Some(Component::of(page, m, &bytes));
        }
        Ok(bytes) => card.lines = numbered(&String::from_utf8_lossy(&bytes)),
        Err(e) => card.source_error = Some(e.to_string()),
    }
    card
}

/// `text` as numbered lines, as the page shows a script.
fn numbered(text: &str) -> Vec<Line> {
    js_lines(text)
        .enumerate()
        .map(|(n, text)| Line {
            number: format!("{:>4}", n + 1),
            text: text.to_owned(),
        })
        .collect()
}
