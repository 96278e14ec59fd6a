//! The `process` tool: manage background commands started by `run_command`
//! with `background: true`, and read the full output the host kept when a
//! command's output was cut.

use toolhost_sdk::commands::{self, BackgroundStatus};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError, export_tool,
};
mod report;
pub use report::*;

/// Lines of a kept output shown when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 400;
/// Characters of kept output shown in one call.
pub const MAX_CHARS: usize = 30_000;

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Every background command and its state.
    List,
    /// A background command's new output since the last poll, and whether it finished.
    Poll,
    /// Send `input` to a background command's stdin.
    Write,
    /// Kill a background command and every process it started.
    Kill,
    /// Forget finished background commands.
    Clear,
    /// Read a kept full output by `output_id`, with `offset`/`limit` or `grep`.
    Output,
}

/// Arguments of `process`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to do: list, poll, write, kill, clear or output.
    pub action: Action,
    /// Its id from `run_command`, for poll, write and kill.
    #[serde(default)]
    pub command_id: Option<String>,
    /// Text for `write`; end it with `\n` to send a line.
    #[serde(default)]
    pub input: Option<String>,
    /// A cut output's id, for `output`.
    #[serde(default)]
    pub output_id: Option<String>,
    /// For `output`: first line to show, counting from 1.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<usize>,
    /// For `output`: how many lines to show (default 400).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
    /// For `output`: show only lines matching this regular expression.
    #[serde(default)]
    pub grep: Option<String>,
}

/// One background command in the structured report.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Background {
    /// Its id.
    pub id: String,
    /// The command line.
    pub command: String,
    /// Still running.
    pub running: bool,
    /// Exit code once finished (absent while running or if killed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Seconds since it started (until it finished).
    pub elapsed_secs: f64,
}

/// What `process` reports beside the text; which members are present
/// depends on the action.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Report {
    /// The action done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// For `list`: every background command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<Vec<Background>>,
    /// For `poll`: the command's state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Background>,
    /// For `poll`: its output since the last poll.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_output: Option<String>,
    /// For `write`: how many bytes were sent to its stdin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_written: Option<usize>,
    /// For `kill`: the command that was killed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub killed: Option<String>,
    /// For `clear`: how many finished commands were forgotten.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<u32>,
    /// For `output`: the window of the kept output shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

/// The part of a kept output that `output` showed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Window {
    /// The kept output's id.
    pub output_id: String,
    /// Lines in the whole output.
    pub total_lines: usize,
    /// The first line looked at (1-based).
    pub first_line: usize,
    /// The last line shown (0 when none).
    pub last_line: usize,
    /// How many lines were shown.
    pub shown: usize,
    /// The line to continue from with `offset`, if the window stopped early.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

impl From<&BackgroundStatus> for Background {
    fn from(s: &BackgroundStatus) -> Self {
        Self {
            id: s.id.clone(),
            command: s.command.clone(),
            running: s.running,
            exit_code: s.exit_code,
            elapsed_secs: s.elapsed.as_secs_f64(),
        }
    }
}

/// The `process` tool.
pub struct Process;

impl Tool for Process {
    type Args = Args;
    const NAME: &'static str = "process";
    const TITLE: Option<&'static str> = Some("Manage background commands");
    const DESCRIPTION: &'static str = "Manage background commands started by `run_command` \
        with `background: true`: `list`, `poll` one for its new output and exit status, \
        `write` to its stdin, `kill` it (with everything it started), `clear` finished ones. \
        `output` reads a cut output by `output_id`, by lines (`offset`, `limit`) or those \
        matching `grep`.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Commands]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Report>())
    }

    fn call(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
        match args.action {
            Action::List => Ok(list(&commands::list_background())),
            Action::Poll => {
                let id = needed(args.command_id.as_deref(), "command_id", "poll")?;
                Ok(status(&commands::poll(id)?))
            }
            Action::Write => {
                let id = needed(args.command_id.as_deref(), "command_id", "write")?;
                let input = needed(args.input.as_deref(), "input", "write")?;
                commands::write_stdin(id, input.as_bytes())?;
                Ok(Output::text(format!(
                    "wrote {} bytes to background command {id}; poll it to see the response",
                    input.len()
                ))
                .with_structured(Report {
                    action: Some(Action::Write),
                    bytes_written: Some(input.len()),
                    ..Report::default()
                }))
            }
            Action::Kill => {
                let id = needed(args.command_id.as_deref(), "command_id", "kill")?;
                commands::kill(id)?;
                Ok(Output::text(format!(
                    "killed background command {id} and every process it started"
                ))
                .with_structured(Report {
                    action: Some(Action::Kill),
                    killed: Some(id.to_owned()),
                    ..Report::default()
                }))
            }
            Action::Clear => {
                let n = commands::clear();
                Ok(
                    Output::text(format!("removed {n} finished background command(s)"))
                        .with_structured(Report {
                            action: Some(Action::Clear),
                            removed: Some(n),
                            ..Report::default()
                        }),
                )
            }
            Action::Output => {
                let id = needed(args.output_id.as_deref(), "output_id", "output")?;
                let text = commands::output(id)?;
                view(id, &text, &args)
            }
        }
    }
}

export_tool!(Process);

#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests;
