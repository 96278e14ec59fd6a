//! The `run_command` tool: a shell command line, run by the host's broker.
//!
//! The plugin only shapes the request and the report. The broker parses the
//! line, refuses blocked commands in every mode, classes the rest (safe,
//! dev, dangerous) to decide confirmation, and runs it confined to the
//! workspace with a timeout, a scrubbed environment and no network.

use std::collections::BTreeMap;
use std::time::Duration;
use toolhost_sdk::commands::{self, CommandError, Finished, Request};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError, export_tool,
};

/// The longest timeout a call may ask for, in seconds.
pub const MAX_TIMEOUT_SECS: u32 = 600;

/// Arguments of `run_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The command line, in bash syntax (`cargo test -p core`, `ls src | head`).
    pub command: String,
    /// Working directory relative to the workspace root (default: the root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Timeout in seconds, 1 to 600 (default 30). On timeout the command and
    /// every process it started are killed.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600))]
    pub timeout: Option<u32>,
    /// Extra environment variables for the command.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Start it in the background and return its id at once (see `process`).
    #[serde(default)]
    pub background: bool,
}

/// What `run_command` reports beside the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// The command line.
    pub command: String,
    /// The exit code; null if a signal ended it or it runs in the background.
    pub exit_code: Option<i32>,
    /// The background command's id, with `background: true`.
    pub command_id: Option<String>,
    /// Standard output (head and tail if long).
    pub stdout: String,
    /// Standard error (head and tail if long).
    pub stderr: String,
    /// True if the output was cut; the full text is under `output_id`.
    pub truncated: bool,
    /// Id of the full output, for `process` with `action: output`.
    pub output_id: Option<String>,
    /// Run time in milliseconds.
    pub duration_ms: u64,
    /// What the host enforced on the command.
    pub confinement: Vec<String>,
}

/// The `run_command` tool.
pub struct RunCommand;

impl Tool for RunCommand {
    type Args = Args;
    const NAME: &'static str = "run_command";
    const TITLE: Option<&'static str> = Some("Run a command");
    const DESCRIPTION: &'static str = "Run a shell command line (bash) in the workspace and \
        return its exit code and output: build, test, lint, inspect (`cargo test`, `git \
        status`). Destructive commands are refused; others may need a person's confirmation. \
        Commands run confined (each result lists what was enforced). stdin is closed: pass \
        flags such as `-y`. Long output keeps its head and tail; read the rest with `process`. \
        Use `background: true` for servers and watchers.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Commands]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        run(args, ctx)
    }
}

export_tool!(RunCommand);

/// Check the arguments and build the broker request.
pub fn request(args: &Args) -> Result<Request, ToolError> {
    if args.command.trim().is_empty() {
        return Err(ToolError::invalid_input(
            "`command` is empty; give the command line to run, e.g. `cargo test`",
        ));
    }
    let mut request = Request::shell(args.command.clone());
    if let Some(cwd) = &args.cwd {
        request = request.with_cwd(cwd.clone());
    }
    if let Some(secs) = args.timeout {
        if !(1..=MAX_TIMEOUT_SECS).contains(&secs) {
            return Err(ToolError::invalid_input(format!(
                "`timeout` is {secs}; give a number of seconds from 1 to {MAX_TIMEOUT_SECS}, or use `background: true` for longer runs"
            )));
        }
        request.timeout = Some(Duration::from_secs(secs.into()));
    }
    for (name, value) in args.env.iter().flatten() {
        request = request.with_env(name.clone(), value.clone());
    }
    Ok(request)
}

/// The body of [`RunCommand::call`].
pub fn run(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
    let request = request(&args)?;
    if args.background {
        return match commands::spawn(&request) {
            Ok(id) => Ok(started(&args.command, id)),
            Err(CommandError::DryRun(text)) => Ok(Output::text(text)),
            Err(e) => Err(e.into()),
        };
    }
    match commands::run(&request) {
        Ok(done) => finished(&args.command, done, args.timeout),
        Err(CommandError::DryRun(text)) => Ok(Output::text(text)),
        Err(e) => Err(e.into()),
    }
}

fn started(command: &str, id: String) -> Output {
    let text = format!(
        "started `{command}` in the background as {id}; read its output with \
         process {{\"action\": \"poll\", \"command_id\": \"{id}\"}} and stop it with \
         {{\"action\": \"kill\", \"command_id\": \"{id}\"}}"
    );
    let report = Report {
        command: command.to_owned(),
        exit_code: None,
        command_id: Some(id),
        stdout: String::new(),
        stderr: String::new(),
        truncated: false,
        output_id: None,
        duration_ms: 0,
        confinement: Vec::new(),
    };
    Output::text(text).with_structured(report)
}

/// Format a finished command for the model.
pub fn finished(command: &str, done: Finished, timeout: Option<u32>) -> Result<Output, ToolError> {
    let text = done.render(command);
    if done.timed_out {
        let secs = timeout.map_or_else(|| "its".to_owned(), |s| format!("the {s} s"));
        return Err(ToolError::failed(format!(
            "`{command}` ran past {secs} timeout; it and every process it started were killed. Output so far:\n{text}"
        ))
        .with_hint("raise `timeout` (up to 600 s), or run it with `background: true` and poll it"));
    }
    let report = Report {
        command: command.to_owned(),
        exit_code: done.exit_code,
        command_id: None,
        stdout: done.stdout,
        stderr: done.stderr,
        truncated: done.truncated,
        output_id: done.output_id,
        duration_ms: u64::try_from(done.duration.as_millis()).unwrap_or(u64::MAX),
        confinement: done.confinement,
    };
    Ok(Output::text(text).with_structured(report))
}

#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests;
