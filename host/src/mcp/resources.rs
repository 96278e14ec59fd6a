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

use crate::executor::Executor;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ContentBlock, ListResourceTemplatesResult, ListResourcesResult,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};

/// Every kept output's URI starts so; the output id follows.
const PREFIX: &str = "toolhost://outputs/";

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

/// `resources/list`: what `session` keeps, oldest first.
pub(super) fn list(executor: &Executor, session: &str) -> ListResourcesResult {
    let resources = executor
        .kept_outputs(session)
        .iter()
        .map(|(id, bytes)| resource(id, *bytes))
        .collect();
    ListResourcesResult::with_all_items(resources)
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

/// If `result` is a cut output `session` keeps (its structured content
/// names an `output_id`), link the resource from the result. Returns
/// whether it did, i.e. whether the session's resource list changed.
pub(super) fn link(executor: &Executor, session: &str, result: &mut CallToolResult) -> bool {
    let Some(id) = result
        .structured_content
        .as_ref()
        .and_then(|s| s.get("output_id"))
        .and_then(serde_json::Value::as_str)
    else {
        return false;
    };
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
