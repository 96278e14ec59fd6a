//! The `manage_goals` tool (seed 001): the agent's goals as markdown
//! checkboxes in GOALS.md: list, add, update, complete. A goal is named by
//! any part of its text (case-insensitive); only the last 10 completed
//! goals are kept.
//!
//! The file is the tool's to write, but a person may edit it: goal lines
//! (`- [ ]`, `- [x]`) and their `Notes:`/`Outcome:` lines are read back,
//! and any other text is kept, above the goals.

use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::persona;
use toolhost_sdk::export_tool;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};

/// Completed goals kept (the oldest are dropped).
pub const MAX_COMPLETED: usize = 10;
/// Goals open at once.
pub const MAX_ACTIVE: usize = 50;
/// The longest goal, in characters.
const MAX_GOAL_CHARS: usize = 300;
/// The longest notes or outcome, in characters.
const MAX_NOTE_CHARS: usize = 1_000;

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Show every goal.
    List,
    /// Add `goal`.
    Add,
    /// Change the status, priority or notes of the goal `goal` names.
    Update,
    /// Mark the goal `goal` names done, with its `outcome`.
    Complete,
}

/// An open goal's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Waiting on something.
    Blocked,
}

/// How much a goal matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// First.
    High,
    /// The default.
    Medium,
    /// When there is time.
    Low,
}

/// Arguments of `manage_goals`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// list, add, update or complete.
    pub action: Action,
    /// add: the goal's text. update / complete: any part of an open goal's
    /// text (case-insensitive) naming exactly one goal.
    #[serde(default)]
    pub goal: Option<String>,
    /// add / update: pending, in_progress or blocked (add: pending).
    #[serde(default)]
    pub status: Option<Status>,
    /// add / update: high, medium or low (add: medium).
    #[serde(default)]
    pub priority: Option<Priority>,
    /// add / update: notes on the goal (replace the old ones).
    #[serde(default)]
    pub notes: Option<String>,
    /// complete: what came of it.
    #[serde(default)]
    pub outcome: Option<String>,
}

/// One goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Goal {
    /// What it is.
    pub goal: String,
    /// Its state; absent once completed.
    pub status: Option<Status>,
    /// How much it matters.
    pub priority: Priority,
    /// Notes, if any.
    pub notes: Option<String>,
    /// What came of it (completed goals).
    pub outcome: Option<String>,
    /// The day it was completed, YYYY-MM-DD.
    pub completed: Option<String>,
}

/// Every goal after the call.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Goals {
    /// What was done.
    pub action: Action,
    /// The goal added, updated or completed.
    pub changed: Option<Goal>,
    /// Open goals, in order.
    pub active: Vec<Goal>,
    /// The last completed goals, oldest first.
    pub completed: Vec<Goal>,
}

/// The `manage_goals` tool.
pub struct ManageGoals;

impl Tool for ManageGoals {
    type Args = Args;
    const NAME: &'static str = "manage_goals";
    const TITLE: Option<&'static str> = Some("Manage your goals");
    const DESCRIPTION: &'static str = "Keep your longer-term goals in GOALS.md (markdown \
        checkboxes). `action`: `list` shows them; `add` needs `goal` (and takes `priority` \
        high/medium/low, `status` pending/in_progress/blocked, `notes`); `update` changes the \
        `status`, `priority` or `notes` of the goal that `goal` names; `complete` marks it done \
        with an `outcome`. Name a goal by any part of its text (case-insensitive) that matches \
        only one open goal. Only the last 10 completed goals are kept.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: contract::dir::SOUL.to_owned(),
            writable: true,
        }]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Goals>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        let zone = ctx
            .setting::<String>(contract::setting::TIMEZONE)
            .and_then(|z| jiff::tz::TimeZone::get(&z).ok())
            .unwrap_or(jiff::tz::TimeZone::UTC);
        let today = jiff::Timestamp::now()
            .to_zoned(zone)
            .strftime("%Y-%m-%d")
            .to_string();
        run(args, Path::new(persona::DIR), &today)
    }
}

export_tool!(ManageGoals);

/// Carry out `args` on GOALS.md under `root`; `today` dates completions.
pub fn run(args: Args, root: &Path, today: &str) -> Result<Output, ToolError> {
    let root = persona::dir(root)?;
    refuse_fields(&args)?;
    let goal = args
        .goal
        .as_deref()
        .map(|g| persona::one_line("goal", g, MAX_GOAL_CHARS))
        .transpose()?;
    let notes = args
        .notes
        .as_deref()
        .map(|n| persona::one_line("notes", n, MAX_NOTE_CHARS))
        .transpose()?;
    let outcome = args
        .outcome
        .as_deref()
        .map(|o| persona::one_line("outcome", o, MAX_NOTE_CHARS))
        .transpose()?;
    let _lock = (args.action != Action::List)
        .then(|| persona::lock(root))
        .transpose()?;
    let old = persona::read(root, persona::GOALS)?;
    let mut file = File::parse(&old);
    let changed = match args.action {
        Action::List => None,
        Action::Add => {
            let goal = goal.unwrap_or_default();
            if let Some(same) = file
                .active
                .iter()
                .find(|g| g.goal.eq_ignore_ascii_case(&goal))
            {
                return Err(ToolError::invalid_input(format!(
                    "\"{}\" is already an open goal; change it with action `update`",
                    same.goal
                )));
            }
            if file.active.len() >= MAX_ACTIVE {
                return Err(ToolError::invalid_input(format!(
                    "there are already {MAX_ACTIVE} open goals; complete some before adding more"
                )));
            }
            let new = Goal {
                goal,
                status: Some(args.status.unwrap_or(Status::Pending)),
                priority: args.priority.unwrap_or(Priority::Medium),
                notes,
                outcome: None,
                completed: None,
            };
            file.active.push(new.clone());
            Some(new)
        }
        Action::Update => {
            let at = find(&file.active, &goal.unwrap_or_default())?;
            let g = &mut file.active[at];
            if let Some(status) = args.status {
                g.status = Some(status);
            }
            if let Some(priority) = args.priority {
                g.priority = priority;
            }
            if notes.is_some() {
                g.notes = notes;
            }
            Some(g.clone())
        }
        Action::Complete => {
            let at = find(&file.active, &goal.unwrap_or_default())?;
            let mut g = file.active.remove(at);
            g.status = None;
            g.outcome = outcome;
            g.completed = Some(today.to_owned());
            file.completed.push(g.clone());
            let extra = file.completed.len().saturating_sub(MAX_COMPLETED);
            file.completed.drain(..extra);
            Some(g)
        }
    };
    let text = file.render();
    if args.action != Action::List && text != old {
        persona::write(root, persona::GOALS, &text)?;
    }
    let goals = Goals {
        action: args.action,
        changed,
        active: file.active,
        completed: file.completed,
    };
    Ok(Output::text(summary(&goals)).with_structured(&goals))
}

/// Each action's required and refused fields, named.
fn refuse_fields(args: &Args) -> Result<(), ToolError> {
    let given = [
        ("goal", args.goal.is_some()),
        ("status", args.status.is_some()),
        ("priority", args.priority.is_some()),
        ("notes", args.notes.is_some()),
        ("outcome", args.outcome.is_some()),
    ];
    let (needs, takes): (&[&str], &[&str]) = match args.action {
        Action::List => (&[], &[]),
        Action::Add => (&["goal"], &["goal", "status", "priority", "notes"]),
        Action::Update => (&["goal"], &["goal", "status", "priority", "notes"]),
        Action::Complete => (&["goal"], &["goal", "outcome"]),
    };
    let action = serde_json::to_value(args.action).unwrap_or_default();
    let action = action.as_str().unwrap_or_default();
    for need in needs {
        if !given.iter().any(|(f, set)| f == need && *set) {
            return Err(ToolError::invalid_input(format!(
                "action `{action}` needs `{need}`"
            )));
        }
    }
    if let Some((extra, _)) = given.iter().find(|(f, set)| *set && !takes.contains(f)) {
        return Err(ToolError::invalid_input(format!(
            "action `{action}` does not take `{extra}` (it takes {})",
            if takes.is_empty() {
                "nothing else".to_owned()
            } else {
                takes
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )));
    }
    if args.action == Action::Update
        && args.status.is_none()
        && args.priority.is_none()
        && args.notes.is_none()
    {
        return Err(ToolError::invalid_input(
            "action `update` needs at least one of `status`, `priority` or `notes`",
        ));
    }
    Ok(())
}

/// The one open goal `wanted` names: the goal whose text it is
/// (case-insensitive), else the only one containing it.
fn find(active: &[Goal], wanted: &str) -> Result<usize, ToolError> {
    let lower = wanted.to_lowercase();
    if let Some(exact) = active.iter().position(|g| g.goal.to_lowercase() == lower) {
        return Ok(exact);
    }
    let hits: Vec<usize> = (0..active.len())
        .filter(|&i| active[i].goal.to_lowercase().contains(&lower))
        .collect();
    let list = |ids: &mut dyn Iterator<Item = usize>| {
        ids.take(5)
            .map(|i| format!("\"{}\"", active[i].goal))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match hits.as_slice() {
        [one] => Ok(*one),
        [] if active.is_empty() => Err(ToolError::invalid_input(format!(
            "no open goal matches \"{wanted}\": there are no open goals (add one with action `add`)"
        ))),
        [] => Err(ToolError::invalid_input(format!(
            "no open goal matches \"{wanted}\"; open goals: {}",
            list(&mut (0..active.len()))
        ))),
        many => Err(ToolError::invalid_input(format!(
            "\"{wanted}\" matches {} open goals ({}); give more of the goal's text",
            many.len(),
            list(&mut many.iter().copied())
        ))),
    }
}

/// GOALS.md read back: text that is not a goal, open goals, completed ones.
#[derive(Debug, Default)]
struct File {
    other: Vec<String>,
    active: Vec<Goal>,
    completed: Vec<Goal>,
}

impl File {
    fn parse(text: &str) -> Self {
        let mut file = Self::default();
        let mut last: Option<(bool, usize)> = None;
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some(goal) = parse_goal(trimmed) {
                let done = goal.status.is_none();
                let list = if done {
                    &mut file.completed
                } else {
                    &mut file.active
                };
                list.push(goal);
                last = Some((done, list.len() - 1));
                continue;
            }
            if let (Some((done, at)), Some(rest)) = (last, trimmed.strip_prefix("- ")) {
                let goal = if done {
                    &mut file.completed[at]
                } else {
                    &mut file.active[at]
                };
                if let Some(notes) = rest.strip_prefix("Notes:") {
                    goal.notes = Some(notes.trim().to_owned());
                    continue;
                }
                if let Some(outcome) = rest.strip_prefix("Outcome:") {
                    goal.outcome = Some(outcome.trim().to_owned());
                    continue;
                }
            }
            last = None;
            if !matches!(trimmed, "" | "# Goals" | "## Active" | "## Completed") {
                file.other.push(line.to_owned());
            }
        }
        file
    }

    fn render(&self) -> String {
        let mut text = String::from("# Goals\n\n");
        for line in &self.other {
            text.push_str(line);
            text.push('\n');
        }
        if !self.other.is_empty() {
            text.push('\n');
        }
        for (heading, goals) in [("Active", &self.active), ("Completed", &self.completed)] {
            text.push_str(&format!("## {heading}\n\n"));
            for goal in goals.iter() {
                text.push_str(&goal_line(goal));
                text.push('\n');
                if let Some(notes) = &goal.notes {
                    text.push_str(&format!("  - Notes: {notes}\n"));
                }
                if let Some(outcome) = &goal.outcome {
                    text.push_str(&format!("  - Outcome: {outcome}\n"));
                }
            }
            text.push('\n');
        }
        text.truncate(text.trim_end().len());
        text.push('\n');
        text
    }
}

fn word<T: Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn from_word<T: for<'de> Deserialize<'de>>(word: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(word.trim().to_owned())).ok()
}

/// `- [ ] GOAL — priority: P, status: S` or `- [x] GOAL — priority: P, completed: DATE`.
fn goal_line(goal: &Goal) -> String {
    let (mark, state) = match (&goal.status, &goal.completed) {
        (Some(status), _) => (' ', format!("status: {}", word(status))),
        (None, Some(day)) => ('x', format!("completed: {day}")),
        (None, None) => ('x', "completed".to_owned()),
    };
    format!(
        "- [{mark}] {} — priority: {}, {state}",
        goal.goal,
        word(goal.priority)
    )
}

fn parse_goal(line: &str) -> Option<Goal> {
    let (done, rest) = if let Some(rest) = line.strip_prefix("- [ ] ") {
        (false, rest)
    } else {
        (
            true,
            line.strip_prefix("- [x] ")
                .or_else(|| line.strip_prefix("- [X] "))?,
        )
    };
    let mut goal = Goal {
        goal: rest.trim().to_owned(),
        status: (!done).then_some(Status::Pending),
        priority: Priority::Medium,
        notes: None,
        outcome: None,
        completed: None,
    };
    if let Some((text, meta)) = rest.rsplit_once(" — ") {
        let mut parsed = false;
        for part in meta.split(',') {
            let (key, value) = part.split_once(':').unwrap_or((part, ""));
            match (key.trim(), done) {
                ("priority", _) => {
                    goal.priority = from_word(value).unwrap_or(Priority::Medium);
                    parsed = true;
                }
                ("status", false) => {
                    goal.status = Some(from_word(value).unwrap_or(Status::Pending));
                    parsed = true;
                }
                ("completed", true) => {
                    goal.completed = Some(value.trim().to_owned()).filter(|d| !d.is_empty());
                    parsed = true;
                }
                _ => {}
            }
        }
        if parsed {
            goal.goal = text.trim().to_owned();
        }
    }
    (!goal.goal.is_empty()).then_some(goal)
}

fn summary(goals: &Goals) -> String {
    let mut text = match (&goals.changed, goals.action) {
        (Some(g), Action::Add) => format!("Added \"{}\".\n", g.goal),
        (Some(g), Action::Update) => format!("Updated \"{}\".\n", g.goal),
        (Some(g), Action::Complete) => format!("Completed \"{}\".\n", g.goal),
        _ => String::new(),
    };
    if goals.active.is_empty() {
        text.push_str("No open goals.\n");
    } else {
        text.push_str(&format!("Open goals ({}):\n", goals.active.len()));
        for g in &goals.active {
            text.push_str(&format!(
                "- [ ] {} ({}, {})\n",
                g.goal,
                word(g.priority),
                g.status.map(word).unwrap_or_default()
            ));
            if let Some(notes) = &g.notes {
                text.push_str(&format!("  Notes: {notes}\n"));
            }
        }
    }
    if !goals.completed.is_empty() {
        text.push_str(&format!("Completed (last {}):\n", goals.completed.len()));
        for g in &goals.completed {
            text.push_str(&format!(
                "- [x] {}{}\n",
                g.goal,
                g.outcome
                    .as_ref()
                    .map(|o| format!(": {o}"))
                    .unwrap_or_default()
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests;
