//! The tools and audit pages, the layout every page shares, and the escaping and text helpers.

use super::*;

/// Every tool the executor offers: what it declares, what it is granted,
/// how sensitive it is.
pub(super) async fn tools(State(page): State<Arc<Page>>) -> Response {
    blocking(move || render_tools(&page)).await
}

pub(super) fn render_tools(page: &Page) -> Response {
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
pub(super) struct AuditFilter {
    #[serde(default)]
    tool: String,
    #[serde(default)]
    outcome: String,
    /// `1h`, `24h`, `7d` or empty (all).
    #[serde(default)]
    since: String,
}

/// The newest audit records, filtered by tool, outcome and time.
pub(super) async fn audit(
    State(page): State<Arc<Page>>,
    Query(filter): Query<AuditFilter>,
) -> Response {
    blocking(move || render_audit(&page, &filter)).await
}

pub(super) fn render_audit(page: &Page, filter: &AuditFilter) -> Response {
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
pub(super) fn layout(title: &str, current: &str, body: &str) -> String {
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
pub(super) fn attr(text: &str) -> String {
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
pub(super) fn js_lines(source: &str) -> impl Iterator<Item = &str> {
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
pub(super) fn tail(path: &std::path::Path, max: u64) -> String {
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

pub(super) fn or_none(items: &[String]) -> String {
    if items.is_empty() {
        "-".to_owned()
    } else {
        items.join(", ")
    }
}

/// `bytes` random bytes from the kernel, as hex.
pub(super) fn random_hex(bytes: usize) -> String {
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
