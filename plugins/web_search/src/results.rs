//! The provider's answer read as results, and the report a model sees (with the key never in it).

use super::*;

/// The provider's answer as results, or what went wrong in words.
pub(super) fn parse(
    settings: &Settings,
    response: &Response,
    wanted: usize,
) -> Result<Vec<Hit>, ToolError> {
    let name = settings.name();
    let status = response.status;
    match status {
        200..=299 => {}
        401 | 403 => {
            let var = settings.key_var.as_deref().unwrap_or("api_key_env");
            return Err(ToolError::failed(format!(
                "the {name} search provider refused the request (HTTP {status}): the API key is \
                 missing, wrong or not allowed this API"
            ))
            .with_hint(format!("a person checks the key in `{var}`")));
        }
        429 => {
            let after = response
                .header("retry-after")
                .and_then(|v| v.trim().parse::<u64>().ok());
            return Err(ToolError::retry(match after {
                Some(secs) => format!(
                    "the {name} search provider is rate limiting (HTTP 429); try again in {secs} seconds"
                ),
                None => format!(
                    "the {name} search provider is rate limiting (HTTP 429); try again in a minute"
                ),
            }));
        }
        500.. => {
            return Err(ToolError::retry(format!(
                "the {name} search provider failed (HTTP {status}); try again later"
            )));
        }
        _ => {
            return Err(ToolError::failed(format!(
                "the {name} search provider answered HTTP {status} to {}",
                http::shown(&settings.endpoint)
            )));
        }
    }
    let malformed = |why: String| {
        ToolError::failed(format!(
            "the {name} search provider's answer is not the JSON it should send ({why})"
        ))
        .with_hint("a person checks web_search.endpoint and provider in toolhost.toml")
    };
    let body: serde_json::Value = serde_json::from_slice(&response.body)
        .map_err(|e| malformed(format!("{e}; it starts {:?}", preview(&response.body))))?;
    let (list, snippet_key) = match settings.provider {
        Provider::Brave => (body.pointer("/web/results"), "description"),
        Provider::Searxng => (body.get("results"), "content"),
    };
    let list = match list {
        Some(serde_json::Value::Array(items)) => items.as_slice(),
        // Brave leaves `web` out when nothing matched.
        None if settings.provider == Provider::Brave && body.is_object() => &[],
        _ => {
            return Err(malformed(match settings.provider {
                Provider::Brave => "no `web.results` list".to_owned(),
                Provider::Searxng => "no `results` list".to_owned(),
            }));
        }
    };
    let text = |item: &serde_json::Value, key: &str| {
        item.get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Ok(list
        .iter()
        .filter(|item| {
            item.get("url")
                .and_then(serde_json::Value::as_str)
                .is_some()
        })
        .take(wanted)
        .enumerate()
        .map(|(n, item)| Hit {
            rank: n + 1,
            title: plain(&text(item, "title")),
            // A URL holds no whitespace: what a provider wraps is folded.
            url: text(item, "url").split_whitespace().collect(),
            snippet: cut(&plain(&text(item, snippet_key)), MAX_SNIPPET_CHARS),
        })
        .collect())
}

/// Provider text (Brave marks matches with `<strong>`) as one line of
/// plain text.
pub(super) fn plain(html: &str) -> String {
    let text = if html.contains('<') || html.contains('&') {
        html2text::config::plain_no_decorate()
            .string_from_read(html.as_bytes(), usize::MAX >> 1)
            .unwrap_or_else(|_| html.to_owned())
    } else {
        html.to_owned()
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

pub(super) fn preview(body: &[u8]) -> String {
    cut(&String::from_utf8_lossy(body), 60)
}

/// `error` with every occurrence of the key replaced, its kind kept: a
/// provider's error may echo what it was sent.
pub(super) fn redact(error: ToolError, key: &str) -> ToolError {
    let hide = |text: String| {
        if key.len() >= 4 {
            text.replace(key, "[redacted]")
        } else {
            text
        }
    };
    match error {
        ToolError::InvalidInput(m) => ToolError::InvalidInput(hide(m)),
        ToolError::Retry(m) => ToolError::Retry(hide(m)),
        ToolError::Denied(m) => ToolError::Denied(hide(m)),
        ToolError::Failed { message, hint } => ToolError::Failed {
            message: hide(message),
            hint: hint.map(hide),
        },
        ToolError::Stopped { why, message, hint } => ToolError::Stopped {
            why,
            message: hide(message),
            hint: hint.map(hide),
        },
    }
}

pub(super) fn report(
    settings: &Settings,
    query: String,
    results: Vec<Hit>,
    cached: bool,
) -> Output {
    let mut text = format!(
        "{BEGIN}\nSearch results for {:?} ({}, {} result{}{}):\n",
        query,
        settings.name(),
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        if cached { ", cached" } else { "" }
    );
    if results.is_empty() {
        text.push_str("\nNo results. Try other words.\n");
    }
    for hit in &results {
        text.push_str(&http::defuse(&format!(
            "\n{}. {}\n   {}\n   {}\n",
            hit.rank, hit.title, hit.url, hit.snippet
        )));
    }
    text.push_str(END);
    text.push('\n');
    let report = Report {
        query,
        provider: settings.name().to_owned(),
        results,
        cached,
    };
    Output::text(text).with_structured(&report)
}
