//! The audit log: one JSON line per call (step 7 of the pipeline).
//!
//! A line holds the time, the tool, who called (agent, session, channel),
//! the arguments with secret-looking values redacted and long values cut,
//! the duration, the outcome kind, the capabilities the call was granted,
//! every command the broker was asked to run (with its class and what
//! happened) and every post-edit hook. Off unless a path is configured.

use crate::broker::CommandRecord;
use crate::hooks::HookRecord;
use serde::Serialize;
use serde_json::Value;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Longest string value kept in an audit line, in characters.
const MAX_VALUE_CHARS: usize = 500;

/// Parts of an argument name that mark its value as a secret.
const SECRET_WORDS: &[&str] = &[
    "key",
    "token",
    "password",
    "passwd",
    "secret",
    "authorization",
    "credential",
    "cookie",
];

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
    /// Redacted and cut.
    pub args: Value,
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
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
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

    /// Append one record; a failure is logged, never returned (the call
    /// itself already happened).
    pub(crate) fn write(&self, record: &AuditRecord<'_>) {
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

/// `args` with secret-looking values replaced by `"[redacted]"` and long
/// strings cut, at any depth.
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
        Value::String(s) => Value::String(cut(s)),
        other => other.clone(),
    }
}

fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| lower.contains(w))
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_VALUE_CHARS) {
        Some((at, _)) => format!(
            "{}…[{} more chars]",
            &text[..at],
            text[at..].chars().count()
        ),
        None => text.to_owned(),
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
    }

    #[test]
    fn long_values_are_cut() {
        let long = "é".repeat(MAX_VALUE_CHARS + 20);
        let v = redact(&json!({ "content": long }));
        let s = v["content"].as_str().unwrap();
        assert!(s.ends_with("…[20 more chars]"), "{s}");
        assert_eq!(s.chars().filter(|c| *c == 'é').count(), MAX_VALUE_CHARS);
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
                args: json!({}),
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
