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

/// A finished call in MCP's terms.
pub(super) struct Answered {
    /// What `tools/call` answers.
    pub result: CallToolResult,
    /// The session gained a kept output, linked from the result.
    pub linked: bool,
    /// The background command the call started, if it started one.
    pub started: Option<String>,
}

/// What `tools/call` answers for `result` of tool `name` (with its
/// `structuredContent` when `structured`), whether it kept an output the
/// session lists as a resource, and the background command it started.
/// An unknown (or hidden) tool is a protocol error, not a tool's.
pub(super) fn answer(
    executor: &Executor,
    session: &Session,
    agent: Option<&str>,
    name: &str,
    result: ToolResult,
    structured: bool,
) -> Result<Answered, McpError> {
    match &result.error {
        Some(err) if err.kind == ErrorKind::NotFound => {
            Err(McpError::invalid_params(err.message.clone(), None))
        }
        _ => {
            let member = |key: &str| {
                result
                    .structured
                    .as_ref()
                    .filter(|_| result.error.is_none())
                    .and_then(|s| s.get(key))
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            };
            let (output_id, started) = (member("output_id"), member("command_id"));
            let plugin = executor.lookup_as(agent, name);
            let schema = plugin
                .as_ref()
                .ok()
                .and_then(|p| p.info().output_schema.as_ref());
            let mut out = to_mcp(result, structured.then_some(schema));
            let linked =
                output_id.is_some_and(|id| resources::link(executor, &session.id, &id, &mut out));
            Ok(Answered {
                result: out,
                linked,
                started,
            })
        }
    }
}

/// A tool result as MCP sees it: `content` is the text; with `structured`
/// (the tool's output schema, if any), `structuredContent` is its
/// structured data with that text beside it ([`mcp_structured`]); a tool
/// error is `isError: true` with the message (and hint) for the model.
pub(super) fn to_mcp(
    result: ToolResult,
    structured: Option<Option<&serde_json::Value>>,
) -> CallToolResult {
    match &result.error {
        None => {
            let data = structured
                .and_then(|schema| mcp_structured(schema, result.structured, &result.content));
            let mut out = CallToolResult::success(vec![ContentBlock::text(result.content)]);
            out.structured_content = data;
            out
        }
        Some(_) => CallToolResult::error(vec![ContentBlock::text(result.model_text())]),
    }
}
