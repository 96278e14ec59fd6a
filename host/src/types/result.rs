//! What every call returns, success or not: [`ToolResult`].
//!
//! Nothing a plugin or a caller does makes a call return `Err` or panic; every
//! failure is a `ToolResult` whose [`ErrorKind`] tells the caller what to do.

use serde::Serialize;
use std::time::Duration;

/// Why a call failed. The serialised names are the contract of
/// `toolhost call --json` and the MCP error results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The arguments are wrong (bad JSON, wrong type, missing field).
    InvalidInput,
    /// A model-correctable condition: try again differently.
    Retry,
    /// Refused by policy, confirmation or a missing capability.
    Denied,
    /// The tool failed for another reason (including a host-side failure).
    Failed,
    /// No tool has that name.
    NotFound,
    /// The call ran past its deadline and was stopped.
    Timeout,
    /// The call was cancelled by the caller.
    Cancelled,
    /// The plugin hit its memory limit.
    OutOfMemory,
    /// The plugin crashed (a panic, an unreachable instruction, a bad access).
    Trap,
}

impl ErrorKind {
    /// The snake_case name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::Retry => "retry",
            Self::Denied => "denied",
            Self::Failed => "failed",
            Self::NotFound => "not_found",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::OutOfMemory => "out_of_memory",
            Self::Trap => "trap",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed call's error: its kind, a message for the model, and maybe a hint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What went wrong, written for the model or person reading it.
    pub message: String,
    /// What to do next, when there is something useful to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl CallError {
    /// An error of `kind` with `message` and no hint.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            hint: None,
        }
    }

    /// The same error with a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

/// The outcome of one call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    /// The tool that was called (as asked, even if unknown).
    pub tool: String,
    /// The arguments it was called with (the agent tool contracts' `input`), as the audit
    /// log keeps them: secret-looking values redacted, long strings cut.
    /// Absent when they were not a JSON object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    /// True when the tool succeeded.
    pub success: bool,
    /// Text for the model: the output, or the error message on failure.
    pub content: String,
    /// Structured output, when the tool gave one.
    pub structured: Option<serde_json::Value>,
    /// The error, when the call failed.
    pub error: Option<CallError>,
    /// Workspace-relative paths the call changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_paths: Vec<String>,
    /// Wall-clock time of the whole call.
    #[serde(rename = "duration_ms", serialize_with = "millis")]
    pub duration: Duration,
}

impl ToolResult {
    /// A successful result.
    pub fn success(tool: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            input: None,
            success: true,
            content: content.into(),
            structured: None,
            error: None,
            changed_paths: Vec::new(),
            duration: Duration::ZERO,
        }
    }

    /// A failed result; its content is the error's text.
    pub fn failure(tool: impl Into<String>, error: CallError) -> Self {
        Self {
            tool: tool.into(),
            input: None,
            success: false,
            content: error.to_string(),
            structured: None,
            error: Some(error),
            changed_paths: Vec::new(),
            duration: Duration::ZERO,
        }
    }

    /// The error kind, if the call failed.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.error.as_ref().map(|e| e.kind)
    }

    /// The result as a model reads it (an MCP text block, a `role: tool`
    /// message): the content, or `error (KIND): MESSAGE` and its hint.
    ///
    /// ```
    /// use toolhost::{CallError, ErrorKind, ToolResult};
    /// assert_eq!(ToolResult::success("t", "done").model_text(), "done");
    /// let err = CallError::new(ErrorKind::Retry, "no such file").with_hint("list the directory");
    /// assert_eq!(
    ///     ToolResult::failure("t", err).model_text(),
    ///     "error (retry): no such file\nhint: list the directory"
    /// );
    /// ```
    pub fn model_text(&self) -> String {
        match &self.error {
            None => self.content.clone(),
            Some(err) => {
                let mut text = format!("error ({}): {}", err.kind, err.message);
                if let Some(hint) = &err.hint {
                    text.push_str(&format!("\nhint: {hint}"));
                }
                text
            }
        }
    }
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape_is_the_cli_contract() {
        let mut r = ToolResult::failure(
            "read_file",
            CallError::new(ErrorKind::OutOfMemory, "too big").with_hint("read less"),
        );
        r.duration = Duration::from_micros(1500);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["tool"], "read_file");
        assert_eq!(v["success"], false);
        assert_eq!(v["error"]["kind"], "out_of_memory");
        assert_eq!(v["error"]["message"], "too big");
        assert_eq!(v["structured"], serde_json::Value::Null);
        assert_eq!(v["duration_ms"], 1.5);
        assert_eq!(r.content, "too big\nhint: read less");
    }
}
