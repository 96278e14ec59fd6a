//! What the process tool answers: the list, one command's status, and a window of its output.

use super::*;

pub(super) fn needed<'a>(
    value: Option<&'a str>,
    field: &str,
    action: &str,
) -> Result<&'a str, ToolError> {
    value
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ToolError::invalid_input(format!("action `{action}` needs `{field}`")))
}

pub(super) fn state(s: &BackgroundStatus) -> String {
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
