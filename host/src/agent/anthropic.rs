//! Anthropic's messages API in and out of the conversation's OpenAI shape.

use super::{ANTHROPIC_MAX_TOKENS, AgentError, Endpoint, reply::Reply};
use serde_json::{Value, json};

/// Ask Anthropic's messages API for the next message (see
/// [`Endpoint::ask`]); the answer in OpenAI's shape.
pub(super) fn ask(
    endpoint: &Endpoint,
    model: &str,
    messages: &[Value],
    tools: &[Value],
    last: bool,
) -> Result<Reply, AgentError> {
    let (system, turns) = self::messages(messages);
    let mut body = json!({
        "model": model,
        "max_tokens": ANTHROPIC_MAX_TOKENS,
        "messages": turns,
    });
    if !system.is_empty() {
        body["system"] = Value::String(system);
    }
    // Its API wants the tools defined whenever the conversation
    // holds tool blocks: the last round keeps them, and forbids
    // their use instead.
    let used = messages.iter().any(|m| m["role"] == "tool");
    if !tools.is_empty() && (!last || used) {
        body["tools"] = Value::Array(tools.to_vec());
        if last {
            body["tool_choice"] = json!({"type": "none"});
        }
    }
    let response = endpoint.complete(&body)?;
    Reply::anthropic(&response).ok_or_else(|| endpoint.unexpected("content", &response))
}

/// The system prompt, and the turns in Anthropic's shape: assistant
/// tool calls as `tool_use` blocks, consecutive tool results as one
/// user turn of `tool_result` blocks.
pub(super) fn messages(messages: &[Value]) -> (String, Vec<Value>) {
    let mut system = Vec::new();
    let mut turns: Vec<Value> = Vec::new();
    for message in messages {
        let text = message["content"].as_str().unwrap_or("");
        match message["role"].as_str() {
            Some("system") => system.push(text.to_owned()),
            Some("assistant") => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    let input = call["function"]["arguments"]
                        .as_str()
                        .and_then(|a| serde_json::from_str::<Value>(a).ok())
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": input,
                    }));
                }
                turns.push(json!({"role": "assistant", "content": blocks}));
            }
            Some("tool") => {
                let block = json!({
                    "type": "tool_result",
                    "tool_use_id": message["tool_call_id"],
                    "content": text,
                    // What `ToolResult::model_text` writes for a failure.
                    "is_error": text.starts_with("error ("),
                });
                match turns.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["content"][0]["type"] == "tool_result" =>
                    {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(block);
                        }
                    }
                    _ => turns.push(json!({"role": "user", "content": [block]})),
                }
            }
            _ => turns.push(json!({"role": "user", "content": text})),
        }
    }
    (system.join("\n\n"), turns)
}
