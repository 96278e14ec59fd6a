//! What the broker is asked and what it answers, in its own terms. The
//! `commands` import (imports/commands.rs) converts the guest's WIT types
//! to and from these at the edge, as wasmtime-wasi's host implementations
//! do; nothing below it sees generated bindings.

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// An argument vector, run directly without a shell.
    Argv(Vec<String>),
    /// A shell command line; the policy applies to every part of it.
    Shell(String),
}

/// A request to run a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    /// The command.
    pub program: Program,
    /// Working directory relative to the workspace root; the root if absent.
    pub cwd: Option<String>,
    /// Timeout in milliseconds; the default if absent, capped by the maximum.
    pub timeout_ms: Option<u32>,
    /// Extra environment variables, added to the scrubbed environment.
    pub env: Vec<(String, String)>,
}

impl CommandRequest {
    /// `program` in the workspace root, with the default timeout and no
    /// extra variables.
    pub fn new(program: Program) -> Self {
        Self {
            program,
            cwd: None,
            timeout_ms: None,
            env: Vec::new(),
        }
    }
}

/// The result of a finished command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// The exit code, or `None` if the process was killed by a signal.
    pub exit_code: Option<i32>,
    /// Standard output, capped (head and tail kept).
    pub stdout: String,
    /// Standard error, capped (head and tail kept).
    pub stderr: String,
    /// The command ran past its timeout and was killed.
    pub timed_out: bool,
    /// stdout or stderr was cut; the full text is kept under `output_id`.
    pub truncated: bool,
    /// The id under which the full output is kept, if it was.
    pub output_id: Option<String>,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: u64,
    /// What confined it (`landlock-fs`, `seccomp-net`, ...), for the report.
    pub confinement: Vec<String>,
}

/// Why the broker did not run, or could not finish, a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The policy refused it (blocklist, classification, no grant).
    #[error("{0}")]
    Denied(String),
    /// Confirmation was needed and refused or unavailable.
    #[error("{0}")]
    NotConfirmed(String),
    /// The request is malformed (empty argv, cwd outside the workspace,
    /// unknown background command).
    #[error("{0}")]
    Invalid(String),
    /// It could not run (spawn failure, limit reached).
    #[error("{0}")]
    Failed(String),
    /// A dry run: what would be done; nothing ran.
    #[error("{0}")]
    DryRun(String),
}

impl CommandError {
    /// What the error says, whatever its kind.
    pub fn into_message(self) -> String {
        match self {
            Self::Denied(m)
            | Self::NotConfirmed(m)
            | Self::Invalid(m)
            | Self::Failed(m)
            | Self::DryRun(m) => m,
        }
    }
}

/// The state of a background command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundStatus {
    /// The id `spawn` returned.
    pub id: String,
    /// The command line, for display.
    pub command: String,
    /// The process still runs.
    pub running: bool,
    /// The exit code once finished, or `None` if running or killed.
    pub exit_code: Option<i32>,
    /// Output since the previous poll (stdout and stderr interleaved).
    pub new_output: String,
    /// Milliseconds since the command started.
    pub elapsed_ms: u64,
}
