//! Run commands through the host's broker. A tool must declare
//! [`Capability::Commands`](crate::Capability::Commands) and be granted it;
//! otherwise every function here returns [`CommandError::Denied`].
//!
//! The plugin never spawns anything: the host parses the command, applies
//! its policy (blocklist, classification, confirmation), runs it confined to
//! the workspace with a timeout, and returns the capped output.
//!
//! ```no_run
//! use toolhost_sdk::commands::{self, Request};
//! # fn f() -> Result<toolhost_sdk::Output, toolhost_sdk::ToolError> {
//! let done = commands::run(&Request::shell("cargo test -q").with_timeout_secs(120))?;
//! Ok(toolhost_sdk::Output::text(done.render("cargo test -q")))
//! # }
//! ```

use crate::ToolError;
use std::time::Duration;

/// What to run.
///
/// ```
/// use toolhost_sdk::commands::{Program, Request};
/// assert_eq!(Request::shell("ls | wc -l").program, Program::Shell("ls | wc -l".into()));
/// let argv = Request::argv(["ls", "-l"]).program;
/// assert_eq!(argv, Program::Argv(vec!["ls".into(), "-l".into()]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// An argument vector, run without a shell.
    Argv(Vec<String>),
    /// A shell command line; the host checks every part of it.
    Shell(String),
}

/// A request to run a command.
///
/// ```
/// use toolhost_sdk::commands::Request;
/// let request = Request::argv(["cargo", "test"])
///     .with_cwd("crates/core")
///     .with_timeout_secs(300);
/// assert_eq!(request.cwd.as_deref(), Some("crates/core"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The command.
    pub program: Program,
    /// Working directory relative to the workspace root; the root if `None`.
    pub cwd: Option<String>,
    /// Timeout; the host's default if `None` (capped by its maximum).
    pub timeout: Option<Duration>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

impl Request {
    /// Run `line` through the shell.
    ///
    /// ```
    /// let request = toolhost_sdk::commands::Request::shell("ls | wc -l");
    /// assert!(matches!(request.program, toolhost_sdk::commands::Program::Shell(_)));
    /// ```
    pub fn shell(line: impl Into<String>) -> Self {
        Self::new(Program::Shell(line.into()))
    }

    /// Run `argv` directly.
    ///
    /// ```
    /// let request = toolhost_sdk::commands::Request::argv(["git", "status", "--short"]);
    /// assert!(matches!(request.program, toolhost_sdk::commands::Program::Argv(_)));
    /// ```
    pub fn argv<S: Into<String>>(argv: impl IntoIterator<Item = S>) -> Self {
        Self::new(Program::Argv(argv.into_iter().map(Into::into).collect()))
    }

    fn new(program: Program) -> Self {
        Self {
            program,
            cwd: None,
            timeout: None,
            env: Vec::new(),
        }
    }

    /// In `cwd` (relative to the workspace root).
    ///
    /// ```
    /// let request = toolhost_sdk::commands::Request::argv(["make"]).with_cwd("build");
    /// assert_eq!(request.cwd.as_deref(), Some("build"));
    /// ```
    pub fn with_cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// With a timeout in seconds.
    ///
    /// ```
    /// let request = toolhost_sdk::commands::Request::argv(["make"]).with_timeout_secs(120);
    /// assert_eq!(request.timeout, Some(std::time::Duration::from_secs(120)));
    /// ```
    pub fn with_timeout_secs(mut self, secs: u64) -> Self {
        self.timeout = Some(Duration::from_secs(secs));
        self
    }

    /// With an extra environment variable.
    ///
    /// ```
    /// use toolhost_sdk::commands::Request;
    /// let request = Request::argv(["cargo", "build"]).with_env("RUST_LOG", "info");
    /// assert_eq!(request.env, [("RUST_LOG".to_owned(), "info".to_owned())]);
    /// ```
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }
}

/// A finished command.
///
/// ```
/// use toolhost_sdk::commands::{self, Request};
/// use toolhost_sdk::{Output, ToolError};
/// fn test_suite() -> Result<Output, ToolError> {
///     let done = commands::run(&Request::argv(["cargo", "test", "-q"]))?;
///     match done.exit_code {
///         Some(0) => Ok(Output::text("all tests pass")),
///         _ => Err(ToolError::retry(format!("the tests fail:\n{}", done.stderr))),
///     }
/// }
/// // Natively (no host) the command is denied.
/// assert!(matches!(test_suite(), Err(ToolError::Denied(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The exit code; `None` if a signal killed it.
    pub exit_code: Option<i32>,
    /// Standard output, capped (head and tail kept).
    pub stdout: String,
    /// Standard error, capped (head and tail kept).
    pub stderr: String,
    /// It ran past its timeout and its process group was killed.
    pub timed_out: bool,
    /// Output was cut; the full text is kept under `output_id`.
    pub truncated: bool,
    /// Where the host keeps the full output (see [`output`]).
    pub output_id: Option<String>,
    /// How long it ran.
    pub duration: Duration,
    /// What the host enforced (`landlock-fs (abi 6)`, `seccomp-net`, ...).
    pub confinement: Vec<String>,
}

impl Finished {
    /// `$ command`, the output, then one status line (and where the full
    /// output is, when cut).
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolhost_sdk::commands::Finished;
    /// let done = Finished {
    ///     exit_code: Some(0), stdout: "ok".into(), stderr: String::new(), timed_out: false,
    ///     truncated: false, output_id: None, duration: Duration::from_millis(1500),
    ///     confinement: vec![],
    /// };
    /// assert_eq!(done.render("make"), "$ make\nok\n[exit code 0 · 1.50 s · not confined]");
    /// ```
    pub fn render(&self, command: &str) -> String {
        let done = self;
        let mut text = format!("$ {command}\n");
        text.push_str(&done.stdout);
        if !done.stdout.is_empty() && !done.stdout.ends_with('\n') {
            text.push('\n');
        }
        if !done.stderr.is_empty() {
            text.push_str("[stderr]\n");
            text.push_str(&done.stderr);
            if !done.stderr.ends_with('\n') {
                text.push('\n');
            }
        }
        let status = match done.exit_code {
            Some(0) => "exit code 0".to_owned(),
            Some(code) => format!("exit code {code} (failed)"),
            None if done.timed_out => "killed at the timeout".to_owned(),
            None => "killed by a signal".to_owned(),
        };
        let confined = if done.confinement.is_empty() {
            "not confined".to_owned()
        } else {
            format!("confined: {}", done.confinement.join(", "))
        };
        text.push_str(&format!(
            "[{status} · {:.2} s · {confined}]",
            done.duration.as_secs_f64()
        ));
        if let Some(id) = &done.output_id {
            text.push_str(&format!(
                "\n[output cut in the middle; the full text is kept as {id}: read it with process \
                 {{\"action\": \"output\", \"output_id\": \"{id}\"}}, adding `offset`/`limit` or `grep`]"
            ));
        } else if done.truncated {
            text.push_str(
                "\n[output cut in the middle; the full text is not kept here (the host ends with \
                 this call): redirect it to a file in the workspace and read that]",
            );
        }
        text
    }
}

pub use toolhost_shared::shell_words;

/// A background command's state.
///
/// ```
/// use toolhost_sdk::commands;
/// let running: Vec<String> = commands::list_background()
///     .into_iter()
///     .filter(|status| status.running)
///     .map(|status| format!("{}: {}", status.id, status.command))
///     .collect();
/// assert!(running.is_empty()); // natively there is no host, so there are none
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundStatus {
    /// The id [`spawn`] returned.
    pub id: String,
    /// The command line.
    pub command: String,
    /// Still running.
    pub running: bool,
    /// The exit code once finished (`None` while running or if killed).
    pub exit_code: Option<i32>,
    /// Output since the previous [`poll`] (empty from [`list_background`]).
    pub new_output: String,
    /// Time since it started (until it finished).
    pub elapsed: Duration,
}

/// Why the host did not run, or could not finish, a request.
///
/// ```
/// use toolhost_sdk::commands::{CommandError, Request, run};
/// // Natively (unit tests) there is no host, so every request is denied.
/// let err = run(&Request::argv(["ls"])).unwrap_err();
/// assert!(matches!(err, CommandError::Denied(_)));
/// let as_tool_error: toolhost_sdk::ToolError = err.into();
/// assert!(matches!(as_tool_error, toolhost_sdk::ToolError::Denied(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    /// Policy refused it (blocklist, `allowed_only`, no grant).
    Denied(String),
    /// It needed a person's confirmation, which was refused or unavailable.
    NotConfirmed(String),
    /// The request is malformed (bad cwd, unknown background command).
    Invalid(String),
    /// The host could not run it.
    Failed(String),
    /// A dry run: what the host would have done; nothing ran.
    DryRun(String),
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Denied(m)
            | Self::NotConfirmed(m)
            | Self::Invalid(m)
            | Self::Failed(m)
            | Self::DryRun(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CommandError {}

impl From<CommandError> for ToolError {
    /// Refusals become `denied`, bad requests `invalid_input`. A dry run
    /// becomes `denied` carrying the description: tools that support dry
    /// runs should turn [`CommandError::DryRun`] into an [`Output`](crate::Output).
    fn from(e: CommandError) -> Self {
        match e {
            CommandError::Denied(m) | CommandError::NotConfirmed(m) | CommandError::DryRun(m) => {
                Self::denied(m)
            }
            CommandError::Invalid(m) => Self::invalid_input(m),
            CommandError::Failed(m) => Self::failed(m),
        }
    }
}

#[cfg(target_arch = "wasm32")]
mod host {
    use super::{BackgroundStatus, CommandError, Finished, Program, Request};
    use crate::__private::bindings::toolhost::plugin::commands as wit;
    use std::time::Duration;

    pub(super) fn request(r: &Request) -> wit::CommandRequest {
        wit::CommandRequest {
            program: match &r.program {
                Program::Argv(a) => wit::Program::Argv(a.clone()),
                Program::Shell(s) => wit::Program::Shell(s.clone()),
            },
            cwd: r.cwd.clone(),
            timeout_ms: r
                .timeout
                .map(|t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX)),
            env: r.env.clone(),
        }
    }

    pub(super) fn error(e: wit::CommandError) -> CommandError {
        match e {
            wit::CommandError::Denied(m) => CommandError::Denied(m),
            wit::CommandError::NotConfirmed(m) => CommandError::NotConfirmed(m),
            wit::CommandError::Invalid(m) => CommandError::Invalid(m),
            wit::CommandError::Failed(m) => CommandError::Failed(m),
            wit::CommandError::DryRun(m) => CommandError::DryRun(m),
        }
    }

    pub(super) fn finished(o: wit::CommandOutput) -> Finished {
        Finished {
            exit_code: o.exit_code,
            stdout: o.stdout,
            stderr: o.stderr,
            timed_out: o.timed_out,
            truncated: o.truncated,
            output_id: o.output_id,
            duration: Duration::from_millis(o.duration_ms),
            confinement: o.confinement,
        }
    }

    pub(super) fn status(s: wit::BackgroundStatus) -> BackgroundStatus {
        BackgroundStatus {
            id: s.id,
            command: s.command,
            running: s.running,
            exit_code: s.exit_code,
            new_output: s.new_output,
            elapsed: Duration::from_millis(s.elapsed_ms),
        }
    }

    pub(super) use wit::{clear, kill, list_background, output, poll, run, spawn, write_stdin};
}

/// Natively there is no host: every request is denied.
#[cfg(not(target_arch = "wasm32"))]
fn no_host<T>() -> Result<T, CommandError> {
    Err(CommandError::Denied(
        "commands run only inside toolhost (this is a native run)".to_owned(),
    ))
}

/// Run a command to completion.
///
/// ```
/// use toolhost_sdk::commands::{CommandError, Request, run};
/// let request = Request::argv(["git", "log", "-n", "3"]).with_timeout_secs(30);
/// match run(&request) {
///     Ok(done) => { /* done.exit_code, done.stdout, done.stderr ... */ }
///     // Natively (unit tests) there is no host: every request is denied.
///     Err(e) => assert!(matches!(e, CommandError::Denied(_))),
/// }
/// ```
pub fn run(request: &Request) -> Result<Finished, CommandError> {
    #[cfg(target_arch = "wasm32")]
    {
        host::run(&host::request(request))
            .map(host::finished)
            .map_err(host::error)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = request;
        no_host()
    }
}

/// Start a background command; returns its id.
///
/// ```
/// use toolhost_sdk::commands::{self, Request};
/// use toolhost_sdk::{Output, ToolError};
/// fn start_server() -> Result<Output, ToolError> {
///     let id = commands::spawn(&Request::shell("npm run dev"))?;
///     Ok(Output::text(format!("started {id}; poll it for its output")))
/// }
/// assert!(matches!(start_server(), Err(ToolError::Denied(_)))); // natively: no host
/// ```
pub fn spawn(request: &Request) -> Result<String, CommandError> {
    #[cfg(target_arch = "wasm32")]
    {
        host::spawn(&host::request(request)).map_err(host::error)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = request;
        no_host()
    }
}

/// A background command's status and its output since the previous poll.
///
/// ```
/// use toolhost_sdk::{Output, ToolError, commands};
/// fn check(id: &str) -> Result<Output, ToolError> {
///     let status = commands::poll(id)?;
///     let state = if status.running { "still running" } else { "finished" };
///     Ok(Output::text(format!("{state}\n{}", status.new_output)))
/// }
/// assert!(matches!(check("bg-1"), Err(ToolError::Denied(_)))); // natively: no host
/// ```
pub fn poll(id: &str) -> Result<BackgroundStatus, CommandError> {
    #[cfg(target_arch = "wasm32")]
    {
        host::poll(id).map(host::status).map_err(host::error)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = id;
        no_host()
    }
}

/// Write to a background command's stdin (send `\n` to end a line).
///
/// ```
/// use toolhost_sdk::commands::{CommandError, write_stdin};
/// // Answer a prompt of the background command `bg-1`.
/// let sent = write_stdin("bg-1", b"yes\n");
/// assert!(matches!(sent, Err(CommandError::Denied(_)))); // natively: no host
/// ```
pub fn write_stdin(id: &str, data: &[u8]) -> Result<(), CommandError> {
    #[cfg(target_arch = "wasm32")]
    {
        host::write_stdin(id, data).map_err(host::error)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = (id, data);
        no_host()
    }
}

/// Kill a background command and everything it started.
///
/// ```
/// use toolhost_sdk::commands::{CommandError, kill};
/// let stopped = kill("bg-1");
/// assert!(matches!(stopped, Err(CommandError::Denied(_)))); // natively: no host
/// ```
pub fn kill(id: &str) -> Result<(), CommandError> {
    #[cfg(target_arch = "wasm32")]
    {
        host::kill(id).map_err(host::error)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = id;
        no_host()
    }
}

/// Every background command (no output is consumed); empty without the grant.
///
/// ```
/// // Natively (no host) there are none.
/// assert!(toolhost_sdk::commands::list_background().is_empty());
/// ```
pub fn list_background() -> Vec<BackgroundStatus> {
    #[cfg(target_arch = "wasm32")]
    {
        host::list_background()
            .into_iter()
            .map(host::status)
            .collect()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Vec::new()
    }
}

/// Forget finished background commands; returns how many.
///
/// ```
/// let removed = toolhost_sdk::commands::clear();
/// assert_eq!(removed, 0); // natively there is nothing to clear
/// ```
pub fn clear() -> u32 {
    #[cfg(target_arch = "wasm32")]
    {
        host::clear()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0
    }
}

/// The full output the host kept under `output_id`.
///
/// ```
/// use toolhost_sdk::{Output, ToolError, commands};
/// fn full_output(output_id: &str) -> Result<Output, ToolError> {
///     Ok(Output::text(commands::output(output_id)?))
/// }
/// assert!(matches!(full_output("out-1"), Err(ToolError::Denied(_)))); // natively: no host
/// ```
pub fn output(output_id: &str) -> Result<String, CommandError> {
    #[cfg(target_arch = "wasm32")]
    {
        host::output(output_id).map_err(host::error)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = output_id;
        no_host()
    }
}
