//! Kept outputs as MCP resources. When a command's output is cut, the
//! broker keeps the full text under an `output_id` (`out-N`) for the
//! session that ran it; over MCP that text is also the resource
//! `toolhost://outputs/out-N`:
//!
//! - `resources/list` shows the outputs the asking client's session keeps
//!   (never another client's), `resources/templates/list` the URI form;
//! - `resources/read` returns the full text; an id the session does not
//!   keep (another client's, evicted, or never made) is -32002, the same
//!   answer whichever it is, so a client learns nothing of others;
//! - the cut call's result carries a `resource_link` to it, and the client
//!   is told `notifications/resources/list_changed`.
//!
//! The agent's persona (SOUL.md, IDENTITY.md, GOALS.md of the soul
//! directory, those that hold text) is offered too: each file as the
//! resource `toolhost://persona/NAME`, and all of them as the prompt
//! `persona`.

use crate::executor::Executor;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, Prompt, PromptMessage, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, Role,
};

/// Every kept output's URI starts so; the output id follows.
const PREFIX: &str = "toolhost://outputs/";

/// Every persona file's URI starts so; its name follows.
const PERSONA: &str = "toolhost://persona/";

/// The prompt that holds the persona.
const PERSONA_PROMPT: &str = "persona";

/// The resource of the output `session` keeps under `id`.
fn resource(id: &str, bytes: usize) -> Resource {
    Resource::new(format!("{PREFIX}{id}"), id)
        .with_title(format!("Full output {id}"))
        .with_description(
            "The full output of a command whose result was cut; the same text as process {action: \"output\"}.",
        )
        .with_mime_type("text/plain")
        .with_size(u64::try_from(bytes).unwrap_or(u64::MAX))
}

/// `resources/list`: the persona files, then what `session` keeps, oldest
/// first.
pub(super) fn list(executor: &Executor, session: &str) -> ListResourcesResult {
    let persona = executor.persona().into_iter().map(|(name, text)| {
        Resource::new(format!("{PERSONA}{name}"), name)
            .with_title(format!("The agent's {name}"))
            .with_description(
                "Part of the persona the agent keeps (update_soul, update_identity and \
                 manage_goals change it).",
            )
            .with_mime_type("text/markdown")
            .with_size(u64::try_from(text.len()).unwrap_or(u64::MAX))
    });
    let resources = persona
        .chain(
            executor
                .kept_outputs(session)
                .iter()
                .map(|(id, bytes)| resource(id, *bytes)),
        )
        .collect();
    ListResourcesResult::with_all_items(resources)
}

/// `prompts/list`: the persona, when there is one.
pub(super) fn prompts(executor: &Executor) -> ListPromptsResult {
    let prompts = if executor.persona().is_empty() {
        Vec::new()
    } else {
        vec![Prompt::new(
            PERSONA_PROMPT,
            Some("The persona the agent keeps: its SOUL.md, IDENTITY.md and GOALS.md."),
            None,
        )]
    };
    ListPromptsResult::with_all_items(prompts)
}

/// `prompts/get` of `name`.
pub(super) fn prompt(executor: &Executor, name: &str) -> Result<GetPromptResult, McpError> {
    let text = (name == PERSONA_PROMPT)
        .then(|| executor.persona_prompt())
        .flatten()
        .ok_or_else(|| {
            McpError::invalid_params(
                format!(
                    "no prompt `{name}`: this server's one prompt is `{PERSONA_PROMPT}`, offered \
                     while the soul directory holds SOUL.md, IDENTITY.md or GOALS.md"
                ),
                None,
            )
        })?;
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description("The persona the agent keeps."),
    )
}

/// `resources/templates/list`: the one URI form.
pub(super) fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(format!("{PREFIX}{{output_id}}"), "kept-output")
            .with_title("Full output of a cut command")
            .with_description(
                "The full text of a command output that was cut, by the `output_id` of run_command's result.",
            )
            .with_mime_type("text/plain"),
    ])
}

/// `resources/read` of `uri` for `session`.
pub(super) fn read(
    executor: &Executor,
    session: &str,
    uri: &str,
) -> Result<ReadResourceResult, McpError> {
    if let Some(name) = uri.strip_prefix(PERSONA) {
        let text = executor
            .persona()
            .into_iter()
            .find_map(|(file, text)| (file == name).then_some(text))
            .ok_or_else(|| {
                McpError::resource_not_found(
                    format!(
                        "no persona file `{name}` holds text; resources/list shows those that do"
                    ),
                    None,
                )
            })?;
        return Ok(ReadResourceResult::new(vec![ResourceContents::text(
            text, uri,
        )]));
    }
    let Some(id) = uri.strip_prefix(PREFIX) else {
        return Err(McpError::resource_not_found(
            format!(
                "no resource `{uri}`: this server's resources are kept command outputs, `{PREFIX}<output_id>`; resources/list shows them"
            ),
            None,
        ));
    };
    let text = executor.kept_output(session, id).ok_or_else(|| {
        McpError::resource_not_found(
            format!(
                "no output is kept under `{id}` for this connection (only the most recent cut outputs are kept); resources/list shows what is, or run the command again"
            ),
            None,
        )
    })?;
    Ok(ReadResourceResult::new(vec![ResourceContents::text(
        text, uri,
    )]))
}

/// If `id` (the `output_id` a result's structured data names) is a cut
/// output `session` keeps, link the resource from `result`. Returns
/// whether it did, i.e. whether the session's resource list changed.
pub(super) fn link(
    executor: &Executor,
    session: &str,
    id: &str,
    result: &mut CallToolResult,
) -> bool {
    let Some((id, bytes)) = executor
        .kept_outputs(session)
        .into_iter()
        .find(|(kept, _)| kept == id)
    else {
        return false;
    };
    result
        .content
        .push(ContentBlock::resource_link(resource(&id, bytes)));
    true
}

/// Every list of this server comes in one page: any cursor is one it
/// never gave (-32602).
pub(super) fn one_page(request: Option<PaginatedRequestParams>) -> Result<(), McpError> {
    match request.and_then(|r| r.cursor) {
        None => Ok(()),
        Some(cursor) => Err(McpError::invalid_params(
            format!(
                "unknown cursor `{cursor}`: this server lists everything in one page; list again without a cursor"
            ),
            None,
        )),
    }
}
