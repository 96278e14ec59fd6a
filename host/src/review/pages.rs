//! The tools and audit pages, the layout every page shares, and the escaping and text helpers.

use super::*;

/// Every tool the executor offers: what it declares, what it is granted,
/// how sensitive it is.
pub(super) async fn tools(State(page): State<Arc<Page>>) -> Response {
    blocking(move || render_tools(&page)).await
}

pub(super) fn render_tools(page: &Page) -> Response {
    #[derive(Serialize)]
    struct Row {
        name: String,
        origin: String,
        sensitivity: String,
        declared: String,
        granted: String,
        description: String,
    }
    let executor = &page.executor;
    let rows: Vec<Row> = executor
        .tools()
        .iter()
        .map(|plugin| {
            let info = plugin.info();
            let declared: Vec<String> = info.capabilities.iter().map(ToString::to_string).collect();
            let granted: Vec<String> = executor
                .effective_grant(plugin)
                .capabilities()
                .iter()
                .map(ToString::to_string)
                .collect();
            Row {
                name: info.name.clone(),
                origin: plugin.origin().to_string(),
                sensitivity: executor.sensitivity(plugin).to_string(),
                declared: or_none(&declared),
                granted: or_none(&granted),
                description: info.description.clone(),
            }
        })
        .collect();
    page_of(
        "tools.html",
        context! { rows => value(&rows), ..value(Layout::new("Tools", "tools", &page.options.links.base)) },
    )
}

#[derive(Deserialize, Serialize, Default)]
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
    let layout = value(Layout::new("Audit log", "audit", &page.options.links.base));
    let Some(path) = page.executor.audit_path() else {
        return page_of("audit.html", context! { off => true, ..layout });
    };
    let text = tail(path, AUDIT_TAIL_BYTES);
    let lines: Vec<&str> = text.lines().collect();
    let newest = &lines[lines.len().saturating_sub(AUDIT_LINES)..];
    let records: Vec<serde_json::Value> = newest
        .iter()
        .rev()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let rows: Vec<AuditRow> = records
        .iter()
        .filter(|r| filter.admits(r))
        .take(AUDIT_SHOWN)
        .map(AuditRow::of)
        .collect();
    page_of(
        "audit.html",
        context! {
            off => false,
            filter => value(filter),
            tools => value(distinct(&records, "tool")),
            outcomes => value(distinct(&records, "outcome")),
            rows => value(&rows),
            most => AUDIT_SHOWN,
            ..layout
        },
    )
}

/// The values of `key` across `records`, sorted, each once.
fn distinct<'a>(records: &'a [serde_json::Value], key: &str) -> Vec<&'a str> {
    let mut values: Vec<&str> = records.iter().filter_map(|r| r[key].as_str()).collect();
    values.sort_unstable();
    values.dedup();
    values
}

impl AuditFilter {
    /// Whether `record` passes the tool, outcome and time filters.
    fn admits(&self, record: &serde_json::Value) -> bool {
        let since = match self.since.as_str() {
            "1h" => Some(3_600),
            "24h" => Some(86_400),
            "7d" => Some(7 * 86_400),
            _ => None,
        }
        .map(|secs| std::time::SystemTime::now() - std::time::Duration::from_secs(secs));
        (self.tool.is_empty() || record["tool"] == self.tool.as_str())
            && (self.outcome.is_empty() || record["outcome"] == self.outcome.as_str())
            && since.is_none_or(|since| {
                record["time"]
                    .as_str()
                    .and_then(|t| humantime::parse_rfc3339(t).ok())
                    .is_some_and(|t| t >= since)
            })
    }
}

/// One audit record as the page shows it.
#[derive(Serialize)]
struct AuditRow {
    time: String,
    tool: String,
    outcome: String,
    agent: String,
    ms: String,
    input: String,
    commands: String,
}

impl AuditRow {
    fn of(r: &serde_json::Value) -> Self {
        let text = |key: &str, none: &str| r[key].as_str().unwrap_or(none).to_owned();
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
        Self {
            time: text("time", ""),
            tool: text("tool", ""),
            outcome: text("outcome", ""),
            agent: text("agent", "-"),
            ms: format!("{:.1}", r["duration_ms"].as_f64().unwrap_or(0.0)),
            input: r["input"].to_string(),
            commands: commands.join("; "),
        }
    }
}

/// `text` safe in HTML text and attribute values; control, bidirectional
/// and invisible characters are shown as a visible `U+XXXX` mark, so an
/// agent's source cannot hide what it does from the person reading it.
pub fn esc(text: &str) -> String {
    escaped(text, true)
}

/// `text` safe inside a quoted attribute: like [`esc`], with hidden
/// characters written as `U+XXXX` text (no markup inside an attribute).
pub(super) fn attr(text: &str) -> String {
    escaped(text, false)
}

/// `text` with HTML's special characters escaped and hidden ones shown,
/// as a `<mark>` when `in_text` (tabs and newlines kept), else as plain
/// `U+XXXX`.
fn escaped(text: &str, in_text: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' if in_text => out.push(c),
            c if c.is_control() || toolhost_shared::dynamic::is_invisible(c) => {
                let code = u32::from(c);
                let _ = if in_text {
                    write!(out, "<mark class=\"cc\">U+{code:04X}</mark>")
                } else {
                    write!(out, "U+{code:04X}")
                };
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
