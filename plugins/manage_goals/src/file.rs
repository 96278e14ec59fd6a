//! GOALS.md as a file: goals as checkbox lines, read back and written, and the summary a model sees.

use super::*;

/// GOALS.md read back: text that is not a goal, open goals, completed ones.
#[derive(Debug, Default)]
pub(super) struct File {
    other: Vec<String>,
    pub(super) active: Vec<Goal>,
    pub(super) completed: Vec<Goal>,
}

impl File {
    pub(super) fn parse(text: &str) -> Self {
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

    pub(super) fn render(&self) -> String {
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

pub(super) fn word<T: Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

pub(super) fn from_word<T: for<'de> Deserialize<'de>>(word: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(word.trim().to_owned())).ok()
}

/// `- [ ] GOAL — priority: P, status: S` or `- [x] GOAL — priority: P, completed: DATE`.
pub(super) fn goal_line(goal: &Goal) -> String {
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

pub(super) fn parse_goal(line: &str) -> Option<Goal> {
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

pub(super) fn summary(goals: &Goals) -> String {
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
