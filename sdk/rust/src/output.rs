//! What a call returns: [`Output`] on success, [`ToolError`] otherwise.

use crate::__private::bindings::toolhost::plugin::types as wit;
use serde::Serialize;

/// A successful result: text for the model, optional structured JSON, and the
/// workspace paths the call changed.
///
/// ```
/// use toolhost_sdk::{Output, json};
/// let out = Output::text("2 lines")
///     .with_structured(json!({"lines": 2}))
///     .changed("src/main.rs");
/// assert_eq!(out.content(), "2 lines");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    content: String,
    structured: Option<serde_json::Value>,
    changed_paths: Vec<String>,
}

impl Output {
    /// An output with this text for the model.
    ///
    /// ```
    /// let out = toolhost_sdk::Output::text("3 files");
    /// assert_eq!(out.content(), "3 files");
    /// ```
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// Attach structured data (anything `Serialize`). Data that cannot be
    /// serialised is dropped rather than failing the call.
    ///
    /// ```
    /// use toolhost_sdk::{Output, json};
    /// let out = Output::text("3 files").with_structured(json!({"count": 3}));
    /// assert_eq!(out.structured(), Some(&json!({"count": 3})));
    /// ```
    pub fn with_structured(mut self, data: impl Serialize) -> Self {
        self.structured = serde_json::to_value(data).ok();
        self
    }

    /// Record a workspace-relative path this call changed.
    ///
    /// ```
    /// let out = toolhost_sdk::Output::text("saved").changed("src/lib.rs");
    /// assert_eq!(out.changed_paths(), ["src/lib.rs"]);
    /// ```
    pub fn changed(mut self, path: impl Into<String>) -> Self {
        self.changed_paths.push(path.into());
        self
    }

    /// The text for the model.
    ///
    /// ```
    /// assert_eq!(toolhost_sdk::Output::text("done").content(), "done");
    /// ```
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The structured data, if any.
    ///
    /// ```
    /// assert_eq!(toolhost_sdk::Output::text("no data").structured(), None);
    /// ```
    pub fn structured(&self) -> Option<&serde_json::Value> {
        self.structured.as_ref()
    }

    /// The paths the call changed.
    ///
    /// ```
    /// let out = toolhost_sdk::Output::text("").changed("a.txt").changed("b.txt");
    /// assert_eq!(out.changed_paths(), ["a.txt", "b.txt"]);
    /// ```
    pub fn changed_paths(&self) -> &[String] {
        &self.changed_paths
    }
}

impl From<wit::ToolOutput> for Output {
    fn from(out: wit::ToolOutput) -> Self {
        Self {
            content: out.content,
            structured: out.structured.and_then(|s| serde_json::from_str(&s).ok()),
            changed_paths: out.changed_paths,
        }
    }
}

impl From<wit::ToolError> for ToolError {
    fn from(err: wit::ToolError) -> Self {
        match err {
            wit::ToolError::InvalidInput(m) => Self::InvalidInput(m),
            wit::ToolError::Retry(m) => Self::Retry(m),
            wit::ToolError::Denied(m) => Self::Denied(m),
            wit::ToolError::Failed(f) => Self::Failed {
                message: f.message,
                hint: f.hint,
            },
            wit::ToolError::Stopped(s) => Self::Stopped {
                why: match s.why {
                    wit::Stop::Timeout => Stop::Timeout,
                    wit::Stop::Cancelled => Stop::Cancelled,
                    wit::Stop::OutOfMemory => Stop::OutOfMemory,
                    wit::Stop::Trap => Stop::Trap,
                },
                message: s.message,
                hint: s.hint,
            },
        }
    }
}

impl From<Output> for wit::ToolOutput {
    fn from(out: Output) -> Self {
        wit::ToolOutput {
            content: out.content,
            structured: out.structured.map(|v| v.to_string()),
            changed_paths: out.changed_paths,
        }
    }
}

/// Why a call did not succeed. The kind tells the model what to do next.
///
/// ```
/// use toolhost_sdk::ToolError;
/// let e = ToolError::retry("src/mian.rs does not exist; did you mean src/main.rs?");
/// assert!(e.to_string().contains("src/main.rs"));
/// let e = ToolError::failed("disk full").with_hint("free some space and try again");
/// assert_eq!(e.to_string(), "disk full (free some space and try again)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments are wrong; the model should fix its call.
    InvalidInput(String),
    /// A model-correctable condition (not found, not unique): try differently.
    Retry(String),
    /// Policy or capability refused the action.
    Denied(String),
    /// Something else failed.
    Failed {
        /// What went wrong.
        message: String,
        /// What to do next, if known.
        hint: Option<String>,
    },
    /// A share of this call ([`parallel::fan_out`](crate::parallel::fan_out))
    /// was stopped by the host. Return it as it is (or with
    /// [`context`](ToolError::context)) and the call reports the same kind;
    /// the host ignores a `Stopped` that no share of the call had.
    Stopped {
        /// Why the host stopped the share.
        why: Stop,
        /// What happened.
        message: String,
        /// What to do next, if known.
        hint: Option<String>,
    },
}

/// Why the host stopped a share of a call (see [`ToolError::Stopped`]).
///
/// ```
/// use toolhost_sdk::{Stop, ToolError};
/// # fn first_share() -> Result<(), ToolError> {
/// #     let message = "share 1 ran past its 30 s limit".into();
/// #     Err(ToolError::Stopped { why: Stop::Timeout, message, hint: None })
/// # }
/// match first_share() {
///     Err(ToolError::Stopped { why: Stop::Timeout, .. }) => { /* ask for less */ }
///     _ => {}
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It ran past the call's time limit.
    Timeout,
    /// The caller cancelled the call.
    Cancelled,
    /// It ran out of memory.
    OutOfMemory,
    /// It crashed (a panic, an unreachable, a bad memory access).
    Trap,
}

impl ToolError {
    /// Bad arguments: say which field and what is expected.
    ///
    /// ```
    /// let e = toolhost_sdk::ToolError::invalid_input("`path` is empty; give a file path");
    /// assert!(matches!(e, toolhost_sdk::ToolError::InvalidInput(_)));
    /// ```
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::InvalidInput(message.into())
    }

    /// Check a numeric argument against its range (the schema's bounds,
    /// which the host does not enforce); the error names the field, the
    /// range and `hint`, what to do instead.
    ///
    /// ```
    /// use toolhost_sdk::ToolError;
    /// assert!(ToolError::check_range("limit", 5, 1..=10, "").is_ok());
    /// let e = ToolError::check_range("limit", 0, 1..=10, "list less at a time").unwrap_err();
    /// assert_eq!(e.to_string(), "`limit` is 0, but it must be 1 to 10; list less at a time");
    /// ```
    pub fn check_range(
        field: &str,
        value: usize,
        range: std::ops::RangeInclusive<usize>,
        hint: &str,
    ) -> Result<(), Self> {
        if range.contains(&value) {
            return Ok(());
        }
        let bounds = if *range.end() == usize::MAX {
            format!("at least {}", range.start())
        } else {
            format!("{} to {}", range.start(), range.end())
        };
        let hint = if hint.is_empty() {
            String::new()
        } else {
            format!("; {hint}")
        };
        Err(Self::invalid_input(format!(
            "`{field}` is {value}, but it must be {bounds}{hint}"
        )))
    }

    /// A model-correctable condition: say what to try instead.
    ///
    /// ```
    /// use toolhost_sdk::ToolError;
    /// let e = ToolError::retry("`src/mian.rs` does not exist; did you mean `src/main.rs`?");
    /// assert!(matches!(e, ToolError::Retry(_)));
    /// ```
    pub fn retry(message: impl Into<String>) -> Self {
        Self::Retry(message.into())
    }

    /// A refusal by policy or missing capability: say how it could be allowed.
    ///
    /// ```
    /// use toolhost_sdk::ToolError;
    /// let e = ToolError::denied("writing is off; a person can grant workspace:write");
    /// assert!(matches!(e, ToolError::Denied(_)));
    /// ```
    pub fn denied(message: impl Into<String>) -> Self {
        Self::Denied(message.into())
    }

    /// Any other failure.
    ///
    /// ```
    /// let e = toolhost_sdk::ToolError::failed("the disk is full");
    /// assert_eq!(e.to_string(), "the disk is full");
    /// ```
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            hint: None,
        }
    }

    /// The same error with `prefix: ` before its message, e.g. to say which
    /// of several steps failed.
    ///
    /// ```
    /// let e = toolhost_sdk::ToolError::retry("old_str was not found").context("edit 2 of 3");
    /// assert_eq!(e.to_string(), "edit 2 of 3: old_str was not found");
    /// ```
    pub fn context(self, prefix: &str) -> Self {
        match self {
            Self::InvalidInput(m) => Self::InvalidInput(format!("{prefix}: {m}")),
            Self::Retry(m) => Self::Retry(format!("{prefix}: {m}")),
            Self::Denied(m) => Self::Denied(format!("{prefix}: {m}")),
            Self::Failed { message, hint } => Self::Failed {
                message: format!("{prefix}: {message}"),
                hint,
            },
            Self::Stopped { why, message, hint } => Self::Stopped {
                why,
                message: format!("{prefix}: {message}"),
                hint,
            },
        }
    }

    /// Add a hint to a [`ToolError::Failed`] or [`ToolError::Stopped`]; for
    /// the other kinds the hint is appended to the message, which is what
    /// the model reads.
    ///
    /// ```
    /// let e = toolhost_sdk::ToolError::retry("`a.rs` does not exist");
    /// let e = e.with_hint("list the directory");
    /// assert_eq!(e.to_string(), "`a.rs` does not exist; list the directory");
    /// ```
    pub fn with_hint(self, hint: impl Into<String>) -> Self {
        let hint = hint.into();
        match self {
            Self::Failed { message, .. } => Self::Failed {
                message,
                hint: Some(hint),
            },
            Self::Stopped { why, message, .. } => Self::Stopped {
                why,
                message,
                hint: Some(hint),
            },
            Self::InvalidInput(m) => Self::InvalidInput(format!("{m}; {hint}")),
            Self::Retry(m) => Self::Retry(format!("{m}; {hint}")),
            Self::Denied(m) => Self::Denied(format!("{m}; {hint}")),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidInput(m) | Self::Retry(m) | Self::Denied(m) => f.write_str(m),
            Self::Failed {
                message,
                hint: None,
            }
            | Self::Stopped {
                message,
                hint: None,
                ..
            } => f.write_str(message),
            Self::Failed {
                message,
                hint: Some(hint),
            }
            | Self::Stopped {
                message,
                hint: Some(hint),
                ..
            } => write!(f, "{message} ({hint})"),
        }
    }
}

impl std::error::Error for ToolError {}

impl From<ToolError> for wit::ToolError {
    fn from(err: ToolError) -> Self {
        match err {
            ToolError::InvalidInput(m) => wit::ToolError::InvalidInput(m),
            ToolError::Retry(m) => wit::ToolError::Retry(m),
            ToolError::Denied(m) => wit::ToolError::Denied(m),
            ToolError::Failed { message, hint } => {
                wit::ToolError::Failed(wit::Failure { message, hint })
            }
            ToolError::Stopped { why, message, hint } => wit::ToolError::Stopped(wit::Stopped {
                why: match why {
                    Stop::Timeout => wit::Stop::Timeout,
                    Stop::Cancelled => wit::Stop::Cancelled,
                    Stop::OutOfMemory => wit::Stop::OutOfMemory,
                    Stop::Trap => wit::Stop::Trap,
                },
                message,
                hint,
            }),
        }
    }
}
