//! Everything the CLI shows a person or a script goes through here: results,
//! tables, JSON, warnings and the confirmation prompt.

#![expect(clippy::print_stderr, reason = "the CLI's one output module")]

use std::io::{IsTerminal, Write};
use toolhost::{Capability, ErrorKind, Executor, Plugin, Sensitivity, ToolResult};

mod check;
mod confirm;
pub use check::{check_json, check_text};
pub use confirm::TtyConfirmer;

/// Print a warning to stderr.
pub fn warn(message: &str) {
    eprintln!("warning: {message}");
}

/// Print a notice to stderr (never stdout, which may carry a protocol).
pub fn warn_info(message: &str) {
    eprintln!("{message}");
}

/// A progress bar on stderr while components compile, when stderr is a
/// terminal (scripts and MCP clients see nothing): the first use of a tool,
/// or of a new toolhost, compiles it once, and the compile cache serves it
/// afterwards.
pub fn compile_progress() -> Option<toolhost::CompileProgress> {
    use indicatif::{ProgressBar, ProgressStyle};
    use std::sync::{Mutex, PoisonError};
    use toolhost::CompileEvent;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    // The bar and the components compiling now, in the order they started.
    let state: Mutex<(Option<ProgressBar>, Vec<String>)> = Mutex::new((None, Vec::new()));
    Some(toolhost::CompileProgress::new(move |event| {
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        let (bar, active) = &mut *state;
        match event {
            CompileEvent::Started { what, bytes } => {
                active.push(what.to_owned());
                let bar = bar.get_or_insert_with(|| {
                    let bar = ProgressBar::new_spinner().with_style(
                        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    bar.enable_steady_tick(std::time::Duration::from_millis(100));
                    bar
                });
                bar.set_message(format!(
                    "compiling {} ({:.1} MB, first use; cached afterwards)",
                    active.join(", "),
                    bytes as f64 / 1e6
                ));
            }
            CompileEvent::Finished { what } => {
                if let Some(at) = active.iter().position(|a| a == what) {
                    active.remove(at);
                }
                if active.is_empty() {
                    if let Some(bar) = bar.take() {
                        bar.finish_and_clear();
                    }
                } else if let Some(bar) = bar {
                    bar.set_message(format!("compiling {}", active.join(", ")));
                }
            }
            _ => {}
        }
    }))
}

/// Print an error (with its causes) to stderr.
pub fn error(err: &anyhow::Error) {
    eprintln!("error: {err:#}");
}

/// Write to stdout (locked, unbuffered by lines); a closed pipe (`| head`)
/// is not an error.
fn out(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// One line of compact JSON (a `--json-events` event).
pub fn json_line(value: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string(value).unwrap_or_default();
    out(&format!("{text}\n"))
}

/// Pretty JSON, fields in their declared order.
fn json_out(value: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    out(&format!("{text}\n"))
}

/// `toolhost call`: the content (plain) or the whole result (JSON). Errors in
/// plain mode go to stderr, so stdout only ever carries tool output.
pub fn call_result(result: &ToolResult, json: bool) -> std::io::Result<()> {
    if json {
        return json_out(result);
    }
    match &result.error {
        None => {
            let mut text = result.content.clone();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            out(&text)
        }
        Some(err) => {
            eprintln!("error ({}): {}", err.kind, err.message);
            if let Some(hint) = &err.hint {
                eprintln!("hint: {hint}");
            }
            // The tool's hints are for a model; a person at the CLI also
            // gets the command that shows more.
            match err.kind {
                ErrorKind::InvalidInput if !result.tool.is_empty() => {
                    eprintln!("hint: `toolhost describe {}` shows the schema", result.tool);
                }
                ErrorKind::NotFound => {
                    eprintln!("hint: `toolhost tools` lists the available tools")
                }
                _ => {}
            }
            Ok(())
        }
    }
}

/// `toolhost tools`: a table, or a JSON array.
pub fn tools(executor: &Executor, agent: Option<&str>, json: bool) -> std::io::Result<()> {
    let plugins = executor.tools_for(agent);
    if json {
        let list: Vec<serde_json::Value> = plugins
            .iter()
            .map(|p| {
                let info = p.info();
                let sensitivity = executor.sensitivity(p);
                serde_json::json!({
                    "name": info.name,
                    "description": info.description,
                    "capabilities": cap_strings(&info.capabilities),
                    "sensitive": sensitivity.is_sensitive(),
                    "sensitivity": sensitivity,
                    "version": info.version,
                    "origin": p.origin().to_string(),
                })
            })
            .collect();
        return json_out(&serde_json::Value::Array(list));
    }
    let rows: Vec<[String; 4]> = plugins
        .iter()
        .map(|p| {
            let info = p.info();
            let caps = cap_strings(&info.capabilities);
            [
                info.name.clone(),
                if caps.is_empty() {
                    "-".to_owned()
                } else {
                    caps.join(",")
                },
                executor.sensitivity(p).to_string(),
                first_sentence(&info.description),
            ]
        })
        .collect();
    let width = |i: usize, title: &str| {
        rows.iter()
            .map(|r| r[i].len())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2) = (
        width(0, "NAME"),
        width(1, "CAPABILITIES"),
        width(2, "CHANGES"),
    );
    let mut text = format!(
        "{:w0$}  {:w1$}  {:w2$}  DESCRIPTION\n",
        "NAME", "CAPABILITIES", "CHANGES"
    );
    for [name, caps, changes, description] in &rows {
        text.push_str(&format!(
            "{name:w0$}  {caps:w1$}  {changes:w2$}  {description}\n"
        ));
    }
    // Remote tools left out, by name: a collision is not silent.
    text.push_str(&not_offered(executor));
    out(&text)
}

/// A line for each remote tool that could not be offered, saying which
/// and why.
fn not_offered(executor: &Executor) -> String {
    executor
        .remote_problems()
        .iter()
        .map(|p| {
            format!(
                "not offered: {}: {}\n",
                printable(&p.path.display().to_string()),
                printable(&p.reason)
            )
        })
        .collect()
}

/// What `describe` says a tool can change, and what that means for asking.
fn changes_text(sensitivity: Sensitivity) -> String {
    let means = match sensitivity {
        Sensitivity::ReadOnly => "changes nothing",
        Sensitivity::OwnState => "writes only its own state directory; never asks",
        Sensitivity::Commands => "runs commands; each one is asked about by its class",
        Sensitivity::Writes => "can change files; asks first in confirm-sensitive mode",
    };
    format!("{sensitivity} ({means})")
}

fn cap_strings(caps: &[Capability]) -> Vec<String> {
    caps.iter().map(ToString::to_string).collect()
}

/// The description's first sentence, cut to fit a table row; for text
/// another server wrote (between untrusted-content markers), said so.
fn first_sentence(text: &str) -> String {
    if let Some((_, body)) = toolhost_shared::untrusted::unwrap(text) {
        return format!("[untrusted, `describe` shows all] {}", first_sentence(body));
    }
    const MAX: usize = 80;
    let end = text.find(". ").map_or(text.len(), |i| i + 1);
    let sentence = &text[..end];
    match sentence.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", sentence[..cut].trim_end()),
        None => sentence.to_owned(),
    }
}

/// `toolhost describe`.
pub fn describe(executor: &Executor, plugin: &Plugin, json: bool) -> std::io::Result<()> {
    let info = plugin.info();
    let granted = cap_strings(&executor.effective_grant(plugin).capabilities());
    let sensitivity = executor.sensitivity(plugin);
    if json {
        return json_out(&serde_json::json!({
            "name": info.name,
            "title": info.title,
            "description": info.description,
            "version": info.version,
            "idempotent": info.idempotent,
            "origin": plugin.origin().to_string(),
            "sensitive": sensitivity.is_sensitive(),
            "sensitivity": sensitivity,
            "capabilities": cap_strings(&info.capabilities),
            "granted": granted,
            "input_schema": info.input_schema,
            "output_schema": info.output_schema,
        }));
    }
    let caps = cap_strings(&info.capabilities);
    let none = |v: &[String]| {
        if v.is_empty() {
            "none".to_owned()
        } else {
            v.join(", ")
        }
    };
    let mut text = format!(
        "{} {} ({}): {}\n\n{}\n\nchanges:      {}\ncapabilities: {}\ngranted:      {}\n\ninput schema:\n{}\n",
        info.name,
        info.version,
        plugin.origin(),
        info.title,
        info.description,
        changes_text(sensitivity),
        none(&caps),
        none(&granted),
        serde_json::to_string_pretty(&info.input_schema).unwrap_or_default(),
    );
    if let Some(schema) = &info.output_schema {
        text.push_str(&format!(
            "\noutput schema:\n{}\n",
            serde_json::to_string_pretty(schema).unwrap_or_default()
        ));
    }
    out(&text)
}

/// `toolhost schema`.
pub fn schemas(schemas: &[serde_json::Value]) -> std::io::Result<()> {
    json_out(&schemas)
}

/// `toolhost test`: each case `ok` or `FAILED` with what differed, and a
/// count; or everything as JSON.
pub fn test_outcomes(
    tool: &str,
    outcomes: &[toolhost::harness::Outcome],
    json: bool,
) -> std::io::Result<()> {
    if json {
        return json_out(&outcomes);
    }
    let mut report = String::new();
    for o in outcomes {
        if o.passed() {
            report.push_str(&format!("ok: {}\n", o.name));
        } else {
            report.push_str(&format!("FAILED: {}\n", o.name));
            for f in &o.failures {
                report.push_str(&format!("  - {f}\n"));
            }
        }
    }
    let failed = outcomes.iter().filter(|o| !o.passed()).count();
    report.push_str(&format!(
        "{tool}: {} passed, {failed} failed\n",
        outcomes.len() - failed
    ));
    text(&report)
}

/// `toolhost agent`: the answer, or the whole outcome as JSON.
pub fn agent_outcome(outcome: &toolhost::agent::Outcome, json: bool) -> std::io::Result<()> {
    if json {
        return json_out(outcome);
    }
    // A terminal shows the model's text without its control sequences.
    let mut text = if std::io::stdout().is_terminal() {
        printable_lines(&outcome.answer)
    } else {
        outcome.answer.clone()
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    out(&text)
}

/// Print plain text to stdout.
pub fn text(text: &str) -> std::io::Result<()> {
    out(text)
}

/// `toolhost config check|show`.
pub fn config(
    settings: &crate::cli::Settings,
    action: &crate::cli::ConfigAction,
) -> std::io::Result<()> {
    let source = settings.source.as_ref().map_or_else(
        || "no configuration file (safe defaults)".to_owned(),
        |p| p.display().to_string(),
    );
    match action {
        crate::cli::ConfigAction::Check => {
            let executor = &settings.executor;
            if settings.problems > 0 {
                return Err(std::io::Error::other(format!(
                    "{source}: {} file(s) skipped, named above; fix or remove them",
                    settings.problems
                )));
            }
            let profile = executor
                .profile()
                .map_or_else(String::new, |p| format!(", profile `{}`", p.name));
            out(&format!(
                "ok: {source}: {} tools visible of {}{profile}, mode {}\n{}",
                executor.tools().len(),
                executor.registry().count(),
                settings.config.mode.as_str(),
                not_offered(executor),
            ))
        }
        // Handled in main.rs before settings are built: trusting must work
        // on a file that is not trusted yet.
        crate::cli::ConfigAction::Trust => Ok(()),
        crate::cli::ConfigAction::Show => out(&format!(
            "# effective configuration; from {source}, with profile and command-line flags applied\n{}",
            settings.config.to_toml()
        )),
    }
}

/// `text` with control and invisible characters (ESC, CR, bidi marks,
/// U+2028, ...) shown as escapes.
pub(crate) fn printable(text: &str) -> String {
    escaped(text, |_| false)
}

/// Like [`printable`], keeping line breaks and tabs: an agent-written
/// script or description shown to the person who approves it cannot hide a
/// line with terminal escapes or carriage returns.
pub(crate) fn printable_lines(text: &str) -> String {
    escaped(text, |c| c == '\n' || c == '\t')
}

fn escaped(text: &str, keep: fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if !keep(c) && (c.is_control() || toolhost_shared::dynamic::is_invisible(c)) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `toolhost dynamic list`: a table, or the records as JSON.
pub fn dynamic_list(entries: &[toolhost::dynamic::Entry], json: bool) -> std::io::Result<()> {
    if json {
        let records: Vec<&toolhost::dynamic::Meta> = entries.iter().map(|e| &e.meta).collect();
        let text = serde_json::to_string_pretty(&records).map_err(std::io::Error::other)?;
        return out(&format!("{text}\n"));
    }
    if entries.is_empty() {
        return out("no dynamic tools\n");
    }
    let mut text = format!(
        "{:<32} {:<9} {:<11} {:<24} {:<12} {}\n",
        "ID", "STATUS", "KIND", "NAME", "SCOPE", "CREATED BY"
    );
    for e in entries {
        let m = &e.meta;
        text.push_str(&format!(
            "{:<32} {:<9} {:<11} {:<24} {:<12} {}\n",
            printable(&m.id),
            m.status.as_str(),
            m.kind.as_str(),
            printable(&m.name),
            printable(&m.scope),
            printable(m.created_by.as_deref().unwrap_or("-")),
        ));
    }
    out(&text)
}

/// What `dynamic show` says of a tool's state since it was decided: a
/// change since its approval (with the diff), where it came from, and
/// what an agent asked about it.
fn dynamic_since(m: &toolhost::dynamic::Meta, since: Option<&toolhost::dynamic::Since>) -> String {
    let mut text = String::new();
    match since {
        Some(toolhost::dynamic::Since::Changed { diff, .. }) => {
            text.push_str(
                "changed:      since it was approved; not loaded until approved again (or rejected)\n",
            );
            text.push_str(&printable_lines(diff));
            text.push('\n');
        }
        Some(toolhost::dynamic::Since::Unrecorded) => text.push_str(
            "changed:      no approval of it is on record; not loaded (reject it, or approve it after reading it)\n",
        ),
        _ => {}
    }
    if let Some(from) = &m.source {
        text.push_str(&format!("from:         {}\n", printable(from)));
    }
    if let Some(request) = &m.request {
        let asked = if request.revoke.is_empty() {
            "unload it".to_owned()
        } else {
            format!("take away {}", request.revoke.join(", "))
        };
        let line = format!(
            "asked:        {asked}, by {} at {}{} (`toolhost dynamic reject|approve --grant|decline`)",
            request.by.as_deref().unwrap_or("-"),
            request.at,
            request
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default(),
        );
        text.push_str(&printable(&line));
        text.push('\n');
    }
    text
}

/// `toolhost dynamic show`: the record, then the source.
pub fn dynamic_show(
    entry: &toolhost::dynamic::Entry,
    history: &[toolhost::dynamic::Decision],
    since: Option<toolhost::dynamic::Since>,
) -> std::io::Result<()> {
    let m = &entry.meta;
    let grant = m
        .grant
        .as_ref()
        .map_or_else(|| "(not approved)".to_owned(), |g| caps_text(g));
    let mut text = format!(
        "id:           {}\nname:         {}\nkind:         {}\nstatus:       {}\nscope:        {}\ncreated by:   {}\ncreated at:   {}\nrequested:    {}\ngranted:      {}\n",
        printable(&m.id),
        printable(&m.name),
        m.kind.as_str(),
        m.status.as_str(),
        printable(&m.scope),
        printable(m.created_by.as_deref().unwrap_or("-")),
        printable(&m.created_at),
        printable(&caps_text(&m.capabilities)),
        printable(&grant),
    );
    if let Some(reason) = &m.reason {
        text.push_str(&format!("reason:       {}\n", printable(reason)));
    }
    text.push_str(&dynamic_since(m, since.as_ref()));
    text.push_str(if history.is_empty() {
        ""
    } else {
        "\ndecisions:\n"
    });
    for d in history {
        let granted = d.granted.as_deref().map(caps_text);
        let granted = granted
            .map(|g| format!(", granted {g}"))
            .unwrap_or_default();
        let (reviewed, asked) = (d.reviewed.get(..16).unwrap_or(""), caps_text(&d.requested));
        let line = format!(
            "  {} {} by {} via {} (reviewed {reviewed}; asked for {asked}{granted})",
            d.time, d.decision, d.by, d.channel
        );
        text.push_str(&printable(&line));
        text.push('\n');
    }
    text.push_str(&format!(
        "\ndescription:\n  {}\n",
        printable_lines(&m.description)
    ));
    let schema = serde_json::to_string_pretty(&m.parameters).unwrap_or_default();
    text.push_str(&format!("\nparameters (JSON Schema):\n{schema}\n"));
    if let Some(original) = entry.original_path() {
        text.push_str(&match std::fs::read(&original) {
            Ok(bytes) => format!(
                "\ntypescript as written ({}), for reading; its types were removed and the \
                 source below is what runs:\n{}\n",
                original.display(),
                printable_lines(&String::from_utf8_lossy(&bytes))
            ),
            Err(_) => "\ntypescript as written: (removed)\n".to_owned(),
        });
    }
    let path = entry.source_path();
    match std::fs::read(&path) {
        Ok(bytes) if m.kind == toolhost::dynamic::Kind::Component => text.push_str(&format!(
            "\nsource: {} ({} bytes, blake3 {})\n",
            path.display(),
            bytes.len(),
            blake3::hash(&bytes).to_hex()
        )),
        Ok(bytes) => {
            text.push_str(&format!(
                "\nsource ({}):\n{}\n",
                path.display(),
                printable_lines(&String::from_utf8_lossy(&bytes))
            ));
            if m.kind == toolhost::dynamic::Kind::Command {
                let template: Vec<String> = serde_json::from_slice(&bytes).unwrap_or_default();
                let warnings = toolhost_shared::dynamic::template_warnings(&template);
                if !warnings.is_empty() {
                    text.push_str("\nREVIEW: this template runs code through literal options:\n");
                    for w in warnings {
                        text.push_str(&format!("  - {}\n", printable(&w)));
                    }
                }
            }
        }
        Err(_) => text.push_str("\nsource: (removed)\n"),
    }
    if !m.warnings.is_empty() {
        text.push_str("\nREVIEW: found in the script when it was created:\n");
        for w in &m.warnings {
            text.push_str(&format!("  - {}\n", printable(w)));
        }
    }
    out(&text)
}

pub use toolhost::dynamic::caps_text;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_cannot_hide_lines() {
        let shown = printable_lines("run();\x1b[2K\rhidden();\n\tnext");
        assert_eq!(shown, "run();\\u{1b}[2K\\rhidden();\n\tnext");
        let shown = printable_lines("// note\u{2028}evil(); \u{202E}txt");
        assert_eq!(shown, "// note\\u{2028}evil(); \\u{202e}txt");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\x1b[2Jb\rc ok"), "a\\u{1b}[2Jb\\rc ok");
    }
}
