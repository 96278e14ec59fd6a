//! The audit log: one JSON line per call (step 7 of the pipeline).
//!
//! A line holds the time, the tool, who called (agent, session, channel),
//! the arguments with secret-looking values redacted and long values cut,
//! the duration, the outcome kind, the capabilities the call was granted,
//! every command the broker was asked to run (with its class and what
//! happened) and every post-edit hook. Off unless a path is configured.

use crate::broker::CommandRecord;
use crate::executor::hooks::HookRecord;
use crate::types::context::CallContext;
use crate::types::result::{ErrorKind, ToolResult};
use serde::Serialize;
use serde_json::Value;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// Longest string value kept in an audit line, in characters.
const MAX_VALUE_CHARS: usize = 500;

/// Words of an argument name (split at `_`, `-`, `.` and case changes)
/// that mark its value as a secret (besides [`SECRET_PARTS`], which match
/// anywhere: `token`, `password`, `secret`, ...).
const SECRET_WORDS: &[&str] = &[
    "key",
    "keys",
    "passphrase",
    "pass",
    "pwd",
    "authorization",
    "auth",
    "bearer",
    "creds",
    "cookie",
    "cookies",
];

/// Run-together spellings (`apikey`, `accesstoken`) matched anywhere in a
/// name.
const SECRET_PARTS: &[&str] = &[
    "apikey",
    "token",
    "password",
    "passwd",
    "secret",
    "credential",
    "privatekey",
];

/// What one call did besides its result, gathered for its audit record.
#[derive(Debug, Default)]
pub(crate) struct CallTrace {
    /// The arguments, once parsed: redacted and cut ([`redact`]); moved
    /// into the result, which the audit record then reads.
    pub input: Option<Value>,
    /// What the call was granted.
    pub capabilities: Vec<String>,
    /// Every command it asked for (shared with its broker calls).
    pub commands: Arc<Mutex<Vec<CommandRecord>>>,
    /// Every hook run after it.
    pub hooks: Vec<HookRecord>,
}

/// One call, as written to the log.
#[derive(Debug, Serialize)]
pub(crate) struct AuditRecord<'a> {
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    pub call_id: &'a str,
    pub tool: &'a str,
    pub agent: Option<&'a str>,
    pub session: Option<&'a str>,
    pub channel: Option<&'a str>,
    pub dry_run: bool,
    /// The arguments, redacted and cut (the result's `input`).
    pub input: Value,
    pub duration_ms: f64,
    /// `success` or an error kind (`denied`, `timeout`, ...).
    pub outcome: &'a str,
    /// What the call was granted (`workspace:write`, `commands`, ...).
    pub capabilities: Vec<String>,
    pub commands: Vec<CommandRecord>,
    pub hooks: Vec<HookRecord>,
}

/// An append-only JSON-lines file shared by every call of an executor.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl AuditLog {
    /// Open (or create) `path` for appending; its directory is created.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        // Only the person running toolhost can read it.
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        Ok(Self {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append the record of one finished call. Arguments that are not a
    /// JSON object are logged as their size only: a secret in them could not
    /// be found to redact.
    pub(crate) fn record(
        &self,
        tool: &str,
        args_len: usize,
        context: &CallContext,
        result: &ToolResult,
        trace: CallTrace,
    ) {
        let mut commands = std::mem::take(
            &mut *trace
                .commands
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for command in &mut commands {
            command.command = redact_command(&command.command);
        }
        self.write(&AuditRecord {
            time: now(),
            call_id: context.call_id.as_str(),
            tool,
            agent: context.agent.as_deref(),
            session: context.session.as_deref(),
            channel: context.channel.as_deref(),
            dry_run: context.dry_run,
            // The result's copy: the one the caller gets is the one logged.
            input: result
                .input
                .clone()
                .unwrap_or_else(|| format!("[not a JSON object: {args_len} bytes]").into()),
            duration_ms: result.duration.as_secs_f64() * 1e3,
            outcome: result.error_kind().map_or("success", ErrorKind::as_str),
            capabilities: trace.capabilities,
            commands,
            hooks: trace.hooks,
        });
    }

    /// Append one record; a failure is logged, never returned (the call
    /// itself already happened).
    pub(crate) fn write(&self, record: &impl Serialize) {
        let mut line = match serde_json::to_string(record) {
            Ok(line) => line,
            Err(err) => {
                tracing::warn!(%err, "cannot encode an audit record");
                return;
            }
        };
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(err) = file.write_all(line.as_bytes()) {
            tracing::warn!(path = %self.path.display(), %err, "cannot write the audit log");
        }
    }
}

/// The current time as RFC 3339 UTC with milliseconds.
pub(crate) fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// `args` with secret-looking values replaced by `"[redacted]"` (under a
/// secret-sounding name, or recognised by the value itself:
/// [`toolhost_shared::credentials`]) and long strings cut, at any depth.
pub(crate) fn redact(args: &Value) -> Value {
    match args {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let value = if is_secret_name(k) && !v.is_null() {
                        Value::String("[redacted]".to_owned())
                    } else {
                        redact(v)
                    };
                    (k.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::String(s) => Value::String(shown_value(s)),
        other => other.clone(),
    }
}

fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    words(name)
        .iter()
        .any(|w| SECRET_WORDS.contains(&w.as_str()))
        || SECRET_PARTS.iter().any(|p| lower.contains(p))
}

/// `apiKey`, `api_key`, `API-KEY` → `["api", "key"]`.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            prev_lower = false;
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// A command line with the values of secret-looking options, headers and
/// variable assignments replaced: `--password x`, `-H 'Authorization: …'`,
/// `GITHUB_TOKEN=…`.
pub(crate) fn redact_command(line: &str) -> String {
    static PATTERNS: std::sync::OnceLock<Vec<(regex::Regex, &str)>> = std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        [
            // Authorization / cookie headers, up to the closing quote or the end.
            (
                r#"(?i)((?:authorization|proxy-authorization|cookie|x-api-key)\s*:\s*)[^'"\n]+"#,
                "${1}[redacted]",
            ),
            // --password x, --token=x, --api-key x, -p is left alone.
            (
                r#"(?i)(--?(?:[a-z0-9]+[-_])*(?:password|passwd|token|secret|api[-_]?key|auth)(?:[-_][a-z0-9]+)*[= ]\s*)[^\s'"]+"#,
                "${1}[redacted]",
            ),
            // NAME=value where NAME looks secret.
            (
                r#"(?i)(\b[a-z0-9_]*(?:token|secret|password|passwd|api_?key|credential)[a-z0-9_]*=)[^\s'"]+"#,
                "${1}[redacted]",
            ),
            // user:password@ in URLs.
            (r#"(://[^/\s:@]+:)[^@\s/]+@"#, "${1}[redacted]@"),
        ]
        .into_iter()
        .map(|(p, with)| {
            (
                regex::Regex::new(p).expect("the redaction patterns are valid regexes"),
                with,
            )
        })
        .collect()
    });
    let mut text = line.to_owned();
    for (pattern, with) in patterns {
        text = pattern.replace_all(&text, *with).into_owned();
    }
    toolhost_shared::credentials::redact(&text).into_owned()
}

/// Characters past the kept part looked at for credentials, so one the
/// cut falls in (a private-key block is ~3 KiB) is still found.
const REDACT_LOOKAHEAD: usize = 4096;

/// The first [`MAX_VALUE_CHARS`] of `text` with its credentials
/// redacted, and how many characters followed. Only what is kept, and a
/// little beyond, is searched: a 5 MB file's content costs no more than
/// a short one's.
fn shown_value(text: &str) -> String {
    let end = text
        .char_indices()
        .nth(MAX_VALUE_CHARS + REDACT_LOOKAHEAD)
        .map_or(text.len(), |(at, _)| at);
    let redacted = toolhost_shared::credentials::redact(&text[..end]);
    match redacted.char_indices().nth(MAX_VALUE_CHARS) {
        Some((at, _)) => format!(
            "{}…[{} more chars]",
            &redacted[..at],
            redacted[at..].chars().count() + text[end..].chars().count()
        ),
        None => redacted.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_at_any_depth() {
        let v = redact(&json!({
            "path": "a.txt",
            "api_key": "sk-123",
            "headers": {"Authorization": "Bearer x", "accept": "text/html"},
            "items": [{"Password": "hunter2"}],
            "token": null,
        }));
        assert_eq!(v["path"], "a.txt");
        assert_eq!(v["api_key"], "[redacted]");
        assert_eq!(v["headers"]["Authorization"], "[redacted]");
        assert_eq!(v["headers"]["accept"], "text/html");
        assert_eq!(v["items"][0]["Password"], "[redacted]");
        assert!(v["token"].is_null());
        // Values are recognised whatever the field is called.
        let v = redact(&json!({
            "text": "deploy with AKIAIOSFODNN7EXAMPLE please",
            "content": "key = sk-proj-0123456789abcdefghijKLMN",
            "notes": ["-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"],
        }));
        let shown = v.to_string();
        for leaked in ["AKIAIOSFODNN7", "sk-proj-0123", "MIIE"] {
            assert!(!shown.contains(leaked), "{shown}");
        }
        assert_eq!(v["text"], "deploy with [redacted] please");
        assert_eq!(
            redact_command("curl -d AKIAIOSFODNN7EXAMPLE https://x"),
            "curl -d [redacted] https://x"
        );
    }

    #[test]
    fn secret_names_are_found_by_word() {
        for name in [
            "api_key",
            "apiKey",
            "API-KEY",
            "x-api-key",
            "token",
            "accessToken",
            "GITHUB_TOKEN",
            "password",
            "db.passphrase",
            "auth",
            "Authorization",
            "bearer",
            "creds",
            "client_secret",
            "privateKey",
            "sort_key",
            "cookie",
        ] {
            assert!(is_secret_name(name), "{name} should be redacted");
        }
        for name in [
            "path",
            "keywords",
            "content",
            "monkey_business",
            "author",
            "passage",
            "session_id",
        ] {
            assert!(!is_secret_name(name), "{name} should be kept");
        }
    }

    #[test]
    fn secrets_in_command_lines_are_redacted() {
        let cases = [
            (
                "curl -H 'Authorization: Bearer abc.def' https://x",
                "curl -H 'Authorization: [redacted]' https://x",
            ),
            (
                "mysql --password=hunter2 db",
                "mysql --password=[redacted] db",
            ),
            (
                "gh --auth-token abc repo",
                "gh --auth-token [redacted] repo",
            ),
            ("GITHUB_TOKEN=ghp_1 make", "GITHUB_TOKEN=[redacted] make"),
            (
                "git clone https://me:pw@host/r",
                "git clone https://me:[redacted]@host/r",
            ),
            ("cargo test --all", "cargo test --all"),
        ];
        for (line, expected) in cases {
            assert_eq!(redact_command(line), expected, "{line}");
        }
    }

    #[test]
    fn the_log_is_private_to_its_owner() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("a.jsonl")).unwrap();
        let mode = std::fs::metadata(log.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn long_values_are_cut() {
        let long = "é".repeat(MAX_VALUE_CHARS + 20);
        let v = redact(&json!({ "content": long }));
        let s = v["content"].as_str().unwrap();
        assert!(s.ends_with("…[20 more chars]"), "{s}");
        assert_eq!(s.chars().filter(|c| *c == 'é').count(), MAX_VALUE_CHARS);
        // Far past the window, the count is still right; a key the cut
        // falls in is still redacted.
        let huge = format!("{}{}", "x".repeat(MAX_VALUE_CHARS - 4), "x".repeat(1 << 20));
        let v = redact(&json!({ "content": huge }));
        let more = (1 << 20) - 4;
        assert!(
            v["content"]
                .as_str()
                .unwrap()
                .ends_with(&format!("…[{more} more chars]"))
        );
        let straddling = format!(
            "{} AKIAIOSFODNN7EXAMPLE tail",
            "y".repeat(MAX_VALUE_CHARS - 8)
        );
        let v = redact(&json!({ "content": straddling }));
        assert!(!v.to_string().contains("AKIAIOSF"), "{v}");
    }

    #[test]
    fn lines_append_and_parse() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("sub/audit.jsonl")).unwrap();
        for tool in ["a", "b"] {
            log.write(&AuditRecord {
                time: now(),
                call_id: "1",
                tool,
                agent: None,
                session: None,
                channel: Some("cli"),
                dry_run: false,
                input: json!({}),
                duration_ms: 1.0,
                outcome: "success",
                capabilities: vec![],
                commands: vec![],
                hooks: vec![],
            });
        }
        let text = std::fs::read_to_string(log.path()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["tool"], "b");
        assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'));
    }
}
