//! OpenAI's chat completions API, the shape the conversation is kept in:
//! the request, and the assistant's tool calls read and kept.

use super::{AgentError, Endpoint, reply::Reply};
use serde_json::{Value, json};

/// Ask a chat completions endpoint for the next message (see
/// [`Endpoint::ask`]).
pub(super) fn ask(
    endpoint: &Endpoint,
    model: &str,
    messages: &[Value],
    tools: &[Value],
    last: bool,
) -> Result<Reply, AgentError> {
    let mut body = json!({"model": model, "messages": messages});
    if !last && !tools.is_empty() {
        body["tools"] = Value::Array(tools.to_vec());
    }
    let response = endpoint.complete(&body)?;
    Reply::openai(&response).ok_or_else(|| endpoint.unexpected("choices[0].message", &response))
}

/// A call's `function.arguments` (JSON text, or an object some servers
/// send) as JSON object text.
pub(super) fn arguments(raw: Option<&Value>) -> Result<String, String> {
    let parsed = match raw {
        None | Some(Value::Null) => return Ok("{}".to_owned()),
        Some(Value::String(text)) if text.trim().is_empty() => return Ok("{}".to_owned()),
        Some(Value::String(text)) => {
            serde_json::from_str::<Value>(text).map_err(|e| e.to_string())?
        }
        Some(other) => other.clone(),
    };
    match parsed {
        Value::Object(_) => Ok(parsed.to_string()),
        other => Err(format!("got {}", kind_of(&other))),
    }
}

pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The assistant message to keep in the conversation: its text and its
/// tool calls (with their ids).
pub(super) fn assistant_message(text: &str, calls: &[Value]) -> Value {
    let mut kept = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        kept["tool_calls"] = Value::Array(calls.to_vec());
    }
    kept
}

/// `calls` with an id each, unique in the round: the one the endpoint
/// gave, or `call_ROUND_I`; the `role: tool` answers use the same.
pub(super) fn with_ids(calls: Vec<Value>, round: u32) -> Vec<Value> {
    let mut seen = std::collections::HashSet::new();
    calls
        .into_iter()
        .enumerate()
        .map(|(i, mut call)| {
            let given = call.get("id").and_then(Value::as_str).map(str::to_owned);
            let id = match given {
                Some(id) if !id.is_empty() && !seen.contains(&id) => id,
                _ => format!("call_{round}_{i}"),
            };
            seen.insert(id.clone());
            if let Some(object) = call.as_object_mut() {
                object.insert("id".to_owned(), Value::String(id));
                object.insert("type".to_owned(), json!("function"));
            }
            call
        })
        .collect()
}
