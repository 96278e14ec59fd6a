//! The `process` tool: manage background commands started by `run_command`
//! with `background: true`, and read the full output the host kept when a
//! command's output was cut.

use toolhost_sdk::commands::{self, BackgroundStatus};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError, export_tool,
};

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
    /// The background command's id (from `run_command` with `background:
    /// true`), for poll, write and kill.
    #[serde(default)]
    pub command_id: Option<String>,
    /// Deprecated: `command_id`'s name before 0.1.
    #[serde(default)]
    #[schemars(extend("deprecated" = true))]
    pub session_id: Option<String>,
    /// Text for `write`; end it with `\n` to send a line.
    #[serde(default)]
    pub input: Option<String>,
    /// The id of a kept output (from a cut `run_command` result), for `output`.
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
    const DESCRIPTION: &'static str = "Manage background commands started by `run_command` with \
        `background: true`: `list` them, `poll` one for its new output and exit status, \
        `write` to its stdin, `kill` it (with everything it started), `clear` finished ones. \
        Also `output`: read the full text of a command whose output was cut, by its \
        `output_id`, a range of lines at a time (`offset`, `limit`) or only the lines \
        matching `grep`. Never guess what a cut output contained: read it here.";

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
                let id = needed(
                    args.command_id.as_deref().or(args.session_id.as_deref()),
                    "command_id",
                    "poll",
                )?;
                Ok(status(&commands::poll(id)?))
            }
            Action::Write => {
                let id = needed(
                    args.command_id.as_deref().or(args.session_id.as_deref()),
                    "command_id",
                    "write",
                )?;
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
                let id = needed(
                    args.command_id.as_deref().or(args.session_id.as_deref()),
                    "command_id",
                    "kill",
                )?;
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

fn needed<'a>(value: Option<&'a str>, field: &str, action: &str) -> Result<&'a str, ToolError> {
    value
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ToolError::invalid_input(format!("action `{action}` needs `{field}`")))
}

fn state(s: &BackgroundStatus) -> String {
    match (s.running, s.exit_code) {
        (true, _) => format!("running for {:.1} s", s.elapsed.as_secs_f64()),
        (false, Some(code)) => format!(
            "exited with code {code} after {:.1} s",
            s.elapsed.as_secs_f64()
        ),
        (false, None) => format!("killed after {:.1} s", s.elapsed.as_secs_f64()),
    }
}

/// The table of background commands.
pub fn list(commands: &[BackgroundStatus]) -> Output {
    let text = if commands.is_empty() {
        "no background commands; start one with run_command and `background: true`".to_owned()
    } else {
        commands
            .iter()
            .map(|s| format!("{}  {}  `{}`", s.id, state(s), s.command))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Output::text(text).with_structured(Report {
        action: Some(Action::List),
        commands: Some(commands.iter().map(Background::from).collect()),
        ..Report::default()
    })
}

/// One background command's state and new output.
pub fn status(s: &BackgroundStatus) -> Output {
    let mut text = format!(
        "background command {} (`{}`): {}\n",
        s.id,
        s.command,
        state(s)
    );
    if s.new_output.is_empty() {
        text.push_str("[no new output]");
    } else {
        text.push_str(&s.new_output);
    }
    Output::text(text).with_structured(Report {
        action: Some(Action::Poll),
        command: Some(Background::from(s)),
        new_output: Some(s.new_output.clone()),
        ..Report::default()
    })
}

/// A window of a kept output: matching lines, or a range of lines, numbered.
pub fn view(id: &str, text: &str, args: &Args) -> Result<Output, ToolError> {
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let pattern = match args.grep.as_deref() {
        Some(p) => Some(regex::Regex::new(p).map_err(|e| {
            ToolError::invalid_input(format!("`grep` is not a valid regular expression: {e}"))
        })?),
        None => None,
    };
    let first = args.offset.unwrap_or(1).max(1);
    if first > total.max(1) {
        return Err(ToolError::invalid_input(format!(
            "`offset` {first} is past the end: {id} has {total} lines"
        )));
    }
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let mut out = String::new();
    let mut shown = 0;
    let mut last = first.saturating_sub(1);
    let mut stopped = false;
    for (i, line) in lines.iter().enumerate().skip(first - 1) {
        if pattern.as_ref().is_some_and(|p| !p.is_match(line)) {
            continue;
        }
        if shown == limit || (shown > 0 && out.len() + line.len() > MAX_CHARS) {
            stopped = true;
            break;
        }
        // One line longer than the whole budget is shown cut, so paging
        // always moves on.
        let cut = line.floor_char_boundary(MAX_CHARS);
        let more = if cut < line.len() {
            format!(" [… {} more characters]", line[cut..].chars().count())
        } else {
            String::new()
        };
        out.push_str(&format!("{:>6}\t{}{more}\n", i + 1, &line[..cut]));
        shown += 1;
        last = i + 1;
    }
    let what = match &args.grep {
        Some(p) => format!("{shown} line(s) matching `{p}`"),
        None => format!("lines {first}-{last}"),
    };
    let more = if stopped {
        format!("; continue with offset {}", last + 1)
    } else {
        String::new()
    };
    out.push_str(&format!("[{id}: {what} of {total}{more}]"));
    Ok(Output::text(out).with_structured(Report {
        action: Some(Action::Output),
        window: Some(Window {
            output_id: id.to_owned(),
            total_lines: total,
            first_line: first,
            last_line: last,
            shown,
            next_offset: stopped.then_some(last + 1),
        }),
        ..Report::default()
    }))
}

#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests;
