//! The pages' HTML, from the templates in review/templates/ (minijinja,
//! auto-escaping): no page is put together by hand. Every value shown as
//! text goes through [`esc`], which also makes hidden characters visible;
//! every value inside an attribute goes through the `attr` filter
//! ([`attr`]), which adds no markup.

use super::pages::{attr, esc};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse as _, Response};
use minijinja::value::{Serde, Value};
use minijinja::{AutoEscape, Environment, Error, Output, State};
use serde::Serialize;
use std::sync::LazyLock;

/// The templates, parsed once.
static TEMPLATES: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    for (name, source) in [
        ("layout.html", include_str!("templates/layout.html")),
        ("pending.html", include_str!("templates/pending.html")),
        ("tools.html", include_str!("templates/tools.html")),
        ("audit.html", include_str!("templates/audit.html")),
        ("sign_in.html", include_str!("templates/sign_in.html")),
        ("widen.html", include_str!("templates/widen.html")),
    ] {
        if let Err(err) = env.add_template(name, source) {
            // The tests render every template: this is a build of a broken one.
            tracing::error!(%err, "the review page's template {name} does not parse");
        }
    }
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.set_formatter(shown);
    env.add_filter("attr", |text: &str| Value::from_safe_string(attr(text)));
    env
});

/// Text in HTML: [`esc`] for anything not marked safe.
fn shown(out: &mut Output, state: &mut State, value: &Value) -> Result<(), Error> {
    if value.is_safe() || !matches!(state.auto_escape(), AutoEscape::Html) {
        return minijinja::escape_formatter(out, state, value);
    }
    if value.is_none() || value.is_undefined() {
        return Ok(());
    }
    let text = match value.as_str() {
        Some(text) => esc(text),
        None => esc(&value.to_string()),
    };
    out.write_str(&text).map_err(Error::from)
}

/// `data` as a template value.
pub(super) fn value(data: impl Serialize) -> Value {
    Value::from(Serde(data))
}

/// The page `name` with `context`, as HTML text.
pub(super) fn render(name: &str, context: impl Serialize) -> Result<String, Error> {
    TEMPLATES
        .get_template(name)
        .and_then(|t| t.render(value(&context)))
}

/// The answer with page `name`; a template that fails is a plain-text
/// 500 (and a log line), never half a page.
pub(super) fn page_of(name: &str, context: impl Serialize) -> Response {
    match render(name, context) {
        Ok(html) => Html(html).into_response(),
        Err(err) => {
            tracing::error!(%err, "the review page {name} cannot be rendered");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("this page cannot be shown: {err}"),
            )
                .into_response()
        }
    }
}

/// What every page's layout shows: its title, the navigation entry it is
/// (`current`), and where the pages are.
#[derive(Debug, Serialize)]
pub(super) struct Layout {
    title: &'static str,
    current: &'static str,
    base: String,
}

impl Layout {
    /// The layout of a page titled `title`, under `base`.
    pub(super) fn new(title: &'static str, current: &'static str, base: &str) -> Self {
        Self {
            title,
            current,
            base: base.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;

    fn layout() -> Value {
        value(Layout::new("Tools agents created", "pending", "/review/x"))
    }

    #[test]
    fn every_template_renders() {
        for (name, ctx) in [
            (
                "sign_in.html",
                value(Layout::new("Sign in", "", "/review/x")),
            ),
            (
                "tools.html",
                context! { rows => Vec::<()>::new(), ..layout() },
            ),
            ("audit.html", context! { off => true, ..layout() }),
            ("pending.html", context! { no_store => true, ..layout() }),
            (
                "widen.html",
                context! {
                    name => "t", id => "t-1", seen => "d", csrf => "c", grant => "commands",
                    requested => "nothing", granted => "commands", added => vec!["commands"],
                    ..layout()
                },
            ),
        ] {
            let html = render(name, ctx).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert!(
                html.starts_with("<!doctype html>") && html.contains("</html>"),
                "{html}"
            );
        }
    }

    // Regression: what an agent wrote (a tool's name, grant, source) is
    // text in the page, never markup, and hidden characters show.
    #[test]
    fn an_agents_text_is_escaped_in_text_and_attributes() {
        let card = context! {
            id => "t1",
            name => "<script>alert(1)</script>",
            kind => "javascript",
            asked => "network:x\u{202E}\"><b>",
            requested => "network:x",
            warnings => vec!["uses <eval>"],
            lines => vec![context! { number => "   1", text => "if (a) {\u{202E} }" }],
            seen => "digest",
        };
        let html = render(
            "pending.html",
            context! { csrf => "c\"srf", waiting => vec![card], decided => Vec::<()>::new(), ..layout() },
        )
        .unwrap();
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("data-requested=\"network:xU+202E&quot;&gt;&lt;b&gt;\""),
            "{html}"
        );
        assert!(html.contains("value=\"c&quot;srf\""), "{html}");
        assert!(html.contains("<li>uses &lt;eval&gt;</li>"), "{html}");
        assert!(
            html.contains("if (a) {<mark class=\"cc\">U+202E</mark> }"),
            "{html}"
        );
    }
}
