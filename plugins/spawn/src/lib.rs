//! The `spawn` tool (as in PicoClaw): hand a task to a sub-agent through the
//! `spawn` service of the application embedding toolhost, and return what
//! it reports. Listed only where an embedder offers that service.

use toolhost_sdk::{
    Capability, Context, JsonSchema, Output, Serialize, ToolError, json, services, tool,
};

/// What `spawn` reports.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(crate = "toolhost_sdk::serde")]
#[schemars(crate = "toolhost_sdk::schemars")]
pub struct Report {
    /// What the sub-agent reported.
    pub result: String,
}

/// Hand a self-contained task to a sub-agent and get back its result. Use
/// it for work that can run on its own (research, a long analysis) while
/// you keep the main thread; say everything the sub-agent needs in `task`
/// and `context`, as it does not see this conversation.
///
/// # Arguments
///
/// * `task` - What the sub-agent should do.
/// * `context` - Background it needs: facts, constraints, where to look.
#[tool(
    capabilities = [Capability::Service("spawn".into())],
    output = Report,
    title = "Start a sub-agent"
)]
pub fn spawn(ctx: &Context, task: String, context: Option<String>) -> Result<Output, ToolError> {
    if task.trim().is_empty() {
        return Err(ToolError::invalid_input(
            "`task` is empty; say what the sub-agent should do",
        ));
    }
    if ctx.dry_run() {
        return Ok(Output::text(format!(
            "dry run: would start a sub-agent on: {task}"
        )));
    }
    let answer = services::call("spawn", &json!({"task": task, "context": context}))?;
    let result = match answer.get("result").and_then(|r| r.as_str()) {
        Some(result) => result.to_owned(),
        None => answer.to_string(),
    };
    Ok(Output::text(result.clone()).with_structured(Report { result }))
}
