//! Who decides: the confirmation [`Mode`], and the [`Confirmer`] a front
//! end supplies (a TTY prompt, MCP elicitation) with its [`Decision`].

use crate::types::names::ParseError;

/// When calls need a person's confirmation.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// No tool call asks; only `dangerous` commands do.
    Yolo,
    /// Sensitive tools (those that write) ask first, and so do `dev` and
    /// `dangerous` commands.
    #[default]
    ConfirmSensitive,
    /// Every call and every command asks first.
    ConfirmAll,
}

impl Mode {
    /// The name used by `--mode` and the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Yolo => "yolo",
            Self::ConfirmSensitive => "confirm-sensitive",
            Self::ConfirmAll => "confirm-all",
        }
    }

    /// Whether a call of a tool with this sensitivity needs confirmation.
    pub fn needs_confirmation(self, sensitive: bool) -> bool {
        match self {
            Self::Yolo => false,
            Self::ConfirmSensitive => sensitive,
            Self::ConfirmAll => true,
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "yolo" => Ok(Self::Yolo),
            "confirm-sensitive" => Ok(Self::ConfirmSensitive),
            "confirm-all" => Ok(Self::ConfirmAll),
            _ => Err(ParseError::new(
                "mode",
                s,
                "yolo, confirm-sensitive or confirm-all",
            )),
        }
    }
}

/// What a [`Confirmer`] is asked to approve.
#[derive(Debug, Clone, Copy)]
pub struct ConfirmRequest<'a> {
    /// The tool.
    pub tool: &'a str,
    /// Its arguments.
    pub args: &'a serde_json::Value,
    /// Why confirmation is needed (e.g. "write_file is sensitive").
    pub reason: &'a str,
}

/// What to do when the front end could not relay a confirmation
/// ([`Decision::Failed`]).
pub(crate) const ASK_FAILED_HINT: &str = "tell the person their client could not show the confirmation; they can check it and ask you to call again";

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Do not run this call.
    Deny,
    /// Do not run this call or any later one.
    AbortAll,
    /// Nobody can be asked (no TTY, no client support).
    Unavailable,
    /// Asking failed: the front end that should relay the question
    /// answered with an error, or lost the connection.
    Failed,
}

/// Asks a person to approve a call. Front ends supply their own (a TTY
/// prompt, MCP elicitation); the default, [`NoConfirmer`], can ask no one.
pub trait Confirmer: Send + Sync {
    /// Ask; must not panic.
    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision;

    /// How to let a call run when [`Decision::Unavailable`] came back (what
    /// the person behind this front end can do).
    fn unavailable_hint(&self) -> &'static str {
        "run it from an interactive terminal, use --mode yolo to skip confirmation, or --dry-run to see what it would do"
    }

    /// How to let a command run when [`Decision::Unavailable`] came back:
    /// `remedy` is what a person can configure so it runs without asking
    /// (an allow pattern, a variable commands may set), `yolo` whether the
    /// yolo mode would let it run without asking.
    fn command_hint(&self, remedy: &str, yolo: bool) -> String {
        let yolo = if yolo {
            "use --mode yolo (only dangerous commands then ask), "
        } else {
            ""
        };
        format!("To let it run: {yolo}{remedy}, or use --dry-run to see what would run")
    }
}

/// What a model running in the tool loop is told when nobody can be asked:
/// what it can do, never a command-line flag it cannot use.
pub(crate) const MODEL_UNAVAILABLE_HINT: &str = "a person must approve this and cannot be asked \
    during this run; do the task another way, or say in your answer what you wanted to do and \
    why, so the person can allow it";

/// A confirmer that asks as `inner` does and tells a model, not a person,
/// what to do when nobody can be asked (the tool loop's calls).
pub(crate) struct ForModel(pub std::sync::Arc<dyn Confirmer>);

impl Confirmer for ForModel {
    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision {
        self.0.confirm(request)
    }

    fn unavailable_hint(&self) -> &'static str {
        MODEL_UNAVAILABLE_HINT
    }

    fn command_hint(&self, _remedy: &str, _yolo: bool) -> String {
        format!("Hint: {MODEL_UNAVAILABLE_HINT}")
    }
}

/// What a person wrote in the configuration (a post-edit hook, a stdio MCP
/// server's command): writing it there was the approval.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Configured;

impl Confirmer for Configured {
    fn confirm(&self, _request: &ConfirmRequest<'_>) -> Decision {
        Decision::Allow
    }
}

/// A confirmer with nobody to ask: every confirmation is unavailable.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoConfirmer;

impl Confirmer for NoConfirmer {
    fn confirm(&self, _request: &ConfirmRequest<'_>) -> Decision {
        Decision::Unavailable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_table() {
        assert!(!Mode::Yolo.needs_confirmation(true));
        assert!(!Mode::Yolo.needs_confirmation(false));
        assert!(Mode::ConfirmSensitive.needs_confirmation(true));
        assert!(!Mode::ConfirmSensitive.needs_confirmation(false));
        assert!(Mode::ConfirmAll.needs_confirmation(true));
        assert!(Mode::ConfirmAll.needs_confirmation(false));
    }

    #[test]
    fn modes_parse() {
        for m in [Mode::Yolo, Mode::ConfirmSensitive, Mode::ConfirmAll] {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(m));
        }
        assert!("always".parse::<Mode>().is_err());
    }
}
