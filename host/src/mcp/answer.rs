//! What a tools/call answers: the confirmer the call asks through, and its result in MCP's terms.

use super::*;

/// The confirmer of a call from `peer`: elicitation where the client can
/// answer it (given up when `cancel` fires), else a refusal that says how
/// to allow the call over MCP.
pub(super) fn confirmer_for(peer: &Peer<RoleServer>, cancel: &CancelToken) -> Arc<dyn Confirmer> {
    if supports_elicitation(peer) {
        Arc::new(Elicit {
            peer: peer.clone(),
            handle: tokio::runtime::Handle::current(),
            cancel: cancel.clone(),
        })
    } else {
        Arc::new(NoElicitation)
    }
}

/// What `tools/call` answers for `result` of tool `name`, and whether it
/// kept an output the session lists as a resource. An unknown (or hidden)
/// tool is a protocol error, not a tool's.
pub(super) fn answer(
    executor: &Executor,
    session: &Session,
    agent: Option<&str>,
    name: &str,
    result: ToolResult,
) -> Result<(CallToolResult, bool), McpError> {
    match &result.error {
        Some(err) if err.kind == ErrorKind::NotFound => {
            Err(McpError::invalid_params(err.message.clone(), None))
        }
        _ => {
            let plugin = executor.lookup_as(agent, name);
            let schema = plugin
                .as_ref()
                .ok()
                .and_then(|p| p.info().output_schema.as_ref());
            let mut out = to_mcp(result, schema);
            let linked = resources::link(executor, &session.id, &mut out);
            Ok((out, linked))
        }
    }
}

/// A tool result as MCP sees it: `content` is the text, and for a tool
/// with an output schema `structuredContent` is its structured data with
/// that text beside it ([`mcp_structured`]); a tool error is
/// `isError: true` with the message (and hint) for the model.
pub(super) fn to_mcp(
    result: ToolResult,
    output_schema: Option<&serde_json::Value>,
) -> CallToolResult {
    match &result.error {
        None => {
            let structured = mcp_structured(output_schema, result.structured, &result.content);
            let mut out = CallToolResult::success(vec![ContentBlock::text(result.content)]);
            out.structured_content = structured;
            out
        }
        Some(_) => CallToolResult::error(vec![ContentBlock::text(result.model_text())]),
    }
}
