//! Carrying out one action on the goals: the checks of its fields, then the change.

use super::*;

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
pub(super) fn refuse_fields(args: &Args) -> Result<(), ToolError> {
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
pub(super) fn find(active: &[Goal], wanted: &str) -> Result<usize, ToolError> {
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
