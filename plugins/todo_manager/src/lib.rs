//! The `todo_manager` tool (as in the agent tool contracts): the agent's plan as a short list of
//! steps, at most one in progress, kept per session in a state directory
//! only this tool is granted (`/todo`).

use std::path::Path;
use toolhost_builtin::contract;
use toolhost_sdk::export_tool;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};

/// The most steps a plan may have.
pub const MAX_ITEMS: usize = 15;

/// Where the plans live inside the sandbox.
pub const STATE_DIR: &str = contract::path::TODO;

/// A step's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started.
    Pending,
    /// Being worked on now (at most one).
    InProgress,
    /// Done.
    Completed,
}

/// One step as the model sends it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemIn {
    /// What to do, in the imperative: "Run the tests".
    pub content: String,
    /// The same step as an ongoing action: "Running the tests".
    #[serde(rename = "activeForm")]
    pub active_form: String,
    /// pending, in_progress or completed.
    pub status: Status,
}

/// Arguments of `todo_manager`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The whole plan, replacing the previous one. Omit to get the current
    /// plan.
    #[serde(default)]
    pub items: Option<Vec<ItemIn>>,
}

/// One step as stored and returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Item {
    /// `step-1` … `step-N`, in order.
    pub id: String,
    /// What to do.
    pub content: String,
    /// The ongoing form.
    #[serde(rename = "activeForm")]
    pub active_form: String,
    /// Its state.
    pub status: Status,
}

/// The plan.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Plan {
    /// The steps, in order.
    pub items: Vec<Item>,
    /// The most steps allowed.
    #[serde(rename = "maxItems")]
    pub max_items: usize,
    /// The step in progress, if any.
    #[serde(rename = "currentItem")]
    pub current_item: Option<Item>,
}

/// The `todo_manager` tool.
pub struct TodoManager;

impl Tool for TodoManager {
    type Args = Args;
    const NAME: &'static str = "todo_manager";
    const TITLE: Option<&'static str> = Some("Keep a plan");
    const DESCRIPTION: &'static str = "Keep your plan for the current task as a list of steps, \
        and update it as you work. Send the whole list each time (`items`); send `{}` to read \
        it. At most 15 steps and one `in_progress` (with none, the first pending step starts). \
        Use it for tasks of three steps or more; mark a step completed as soon as it is done.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: contract::dir::TODO.to_owned(),
            writable: true,
        }]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Plan>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        run(args, ctx, Path::new(STATE_DIR))
    }
}

export_tool!(TodoManager);

/// The body of [`TodoManager::call`], over the state directory `dir`.
pub fn run(args: Args, ctx: &Context, dir: &Path) -> Result<Output, ToolError> {
    let dir = toolhost_sdk::fs::granted_dir(dir, "todo_manager")?;
    let file = toolhost_builtin::session::file(dir, ctx.session(), "json");
    let items = match args.items {
        None => load(&file)?,
        Some(items) => {
            let mut items = check(items)?;
            promote_first_pending(&mut items);
            save(&file, &items)?;
            items
        }
    };
    let plan = Plan {
        current_item: items
            .iter()
            .find(|i| i.status == Status::InProgress)
            .cloned(),
        max_items: MAX_ITEMS,
        items,
    };
    Ok(Output::text(render(&plan)).with_structured(&plan))
}

/// The agent tool contracts: a plan with no step in progress starts its first pending one,
/// so there is always a `currentItem` while work remains.
fn promote_first_pending(items: &mut [Item]) {
    if items.iter().all(|i| i.status != Status::InProgress)
        && let Some(first) = items.iter_mut().find(|i| i.status == Status::Pending)
    {
        first.status = Status::InProgress;
    }
}

/// The rules, each broken one named; ids assigned in order.
fn check(items: Vec<ItemIn>) -> Result<Vec<Item>, ToolError> {
    if items.len() > MAX_ITEMS {
        return Err(ToolError::invalid_input(format!(
            "the plan has {} steps; at most {MAX_ITEMS} are allowed: merge small steps or plan a part at a time",
            items.len()
        )));
    }
    let busy: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, i)| i.status == Status::InProgress)
        .map(|(n, _)| n + 1)
        .collect();
    if busy.len() > 1 {
        return Err(ToolError::invalid_input(format!(
            "steps {} are all in_progress; only one step may be in_progress at a time: mark the others pending or completed",
            busy.iter()
                .map(|n| format!("step-{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(n, item)| {
            let id = format!("step-{}", n + 1);
            if item.content.trim().is_empty() {
                return Err(ToolError::invalid_input(format!(
                    "{id} has no content: say what the step does"
                )));
            }
            if item.active_form.trim().is_empty() {
                return Err(ToolError::invalid_input(format!(
                    "{id} has no activeForm: give the step as an ongoing action, e.g. \"Running the tests\""
                )));
            }
            Ok(Item {
                id,
                content: item.content.trim().to_owned(),
                active_form: item.active_form.trim().to_owned(),
                status: item.status,
            })
        })
        .collect()
}

fn load(file: &Path) -> Result<Vec<Item>, ToolError> {
    match std::fs::read(file) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            ToolError::failed(format!("the saved plan is unreadable ({e})"))
                .with_hint("send the whole plan again to replace it")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(ToolError::failed(format!("cannot read the plan: {e}"))),
    }
}

fn save(file: &Path, items: &[Item]) -> Result<(), ToolError> {
    let text = serde_json::to_vec_pretty(items).map_err(|e| ToolError::failed(e.to_string()))?;
    toolhost_sdk::fs::write_atomic_in_dir(file, &text)
        .map_err(|e| e.context("cannot save the plan"))
}

fn render(plan: &Plan) -> String {
    if plan.items.is_empty() {
        return "No plan yet. Send `items` to make one.\n".to_owned();
    }
    let done = plan
        .items
        .iter()
        .filter(|i| i.status == Status::Completed)
        .count();
    let mut text = format!("Plan: {done}/{} done\n", plan.items.len());
    for item in &plan.items {
        let (mark, what) = match item.status {
            Status::Completed => ("[x]", &item.content),
            Status::InProgress => ("[>]", &item.active_form),
            Status::Pending => ("[ ]", &item.content),
        };
        text.push_str(&format!("{mark} {} {what}\n", item.id));
    }
    text
}

#[cfg(test)]
mod tests;
