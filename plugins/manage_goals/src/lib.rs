//! The `manage_goals` tool (as in the TypeScript bot framework): the agent's goals as markdown
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
mod file;
use file::*;
mod edit;
pub use edit::*;

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
    const DESCRIPTION: &'static str = "Keep your longer-term goals in GOALS.md. `action`: \
        `list`; `add` a `goal`; `update` the `status`, `priority` or `notes` of the goal \
        `goal` names (any part of its text matching one open goal); `complete` it with an \
        `outcome`. The last 10 completed goals are kept.";

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

#[cfg(test)]
mod tests;
