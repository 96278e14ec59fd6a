//! What the endpoint answered, whatever shape it took: text (a string,
//! null, or an array of parts), tool calls, a refusal, and the tokens the
//! endpoint says it used.

use serde_json::{Value, json};

/// One answer of the model.
#[derive(Debug, Default)]
pub(super) struct Reply {
    /// Its text ("" when it has none).
    pub text: String,
    /// Its tool calls, in OpenAI's shape.
    pub calls: Vec<Value>,
    /// Why it declined, when it did.
    pub refusal: Option<String>,
    /// Tokens the request used (prompt and answer), from `usage`.
    pub tokens: u64,
}

impl Reply {
    /// A chat completion: `choices[0].message` and `usage`. The content
    /// may be a string, null, or an array of parts (`text`, `refusal`);
    /// a `refusal` field declines.
    pub(super) fn openai(response: &Value) -> Option<Self> {
        let message = response.pointer("/choices/0/message")?;
        let mut text = String::new();
        let mut refused = Vec::new();
        match message.get("content") {
            Some(Value::String(s)) => text.push_str(s),
            Some(Value::Array(parts)) => {
                for part in parts {
                    match part.get("type").and_then(Value::as_str) {
                        Some("refusal") => {
                            refused.extend(part.get("refusal").and_then(Value::as_str));
                        }
                        _ => text.extend(part.get("text").and_then(Value::as_str)),
                    }
                }
            }
            _ => {}
        }
        refused.extend(message.get("refusal").and_then(Value::as_str));
        Some(Self {
            text,
            calls: message
                .get("tool_calls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            refusal: said(&refused),
            tokens: tokens(response),
        })
    }

    /// An Anthropic message: `text` and `tool_use` blocks, `stop_reason`
    /// `refusal`, and `usage`.
    pub(super) fn anthropic(response: &Value) -> Option<Self> {
        let blocks = response.get("content")?.as_array()?;
        let text: String = blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        let calls = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                json!({
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": b["input"].to_string()},
                })
            })
            .collect();
        let refusal = (response["stop_reason"] == "refusal").then(|| {
            said(&[text.as_str()])
                .unwrap_or_else(|| "The model declined to answer this task.".to_owned())
        });
        Some(Self {
            text,
            calls,
            refusal,
            tokens: tokens(response),
        })
    }
}

/// The non-empty parts of a refusal, joined; none if there are none.
fn said(parts: &[&str]) -> Option<String> {
    let text = parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (!text.is_empty()).then_some(text)
}

/// The tokens `usage` counts: `total_tokens`, or its parts (OpenAI's
/// `prompt_tokens` and `completion_tokens`, Anthropic's `input_tokens`
/// and `output_tokens`); 0 without `usage`.
fn tokens(response: &Value) -> u64 {
    let usage = &response["usage"];
    if let Some(total) = usage["total_tokens"].as_u64() {
        return total;
    }
    [
        "prompt_tokens",
        "completion_tokens",
        "input_tokens",
        "output_tokens",
    ]
    .iter()
    .filter_map(|k| usage[*k].as_u64())
    .fold(0u64, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_in_any_shape_the_apis_define() {
        let reply = |message: Value| {
            Reply::openai(&json!({"choices": [{"message": message}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3}}))
            .unwrap()
        };
        let r = reply(json!({"content": null}));
        assert_eq!((r.text.as_str(), r.refusal, r.tokens), ("", None, 10));
        let r = reply(json!({"content": [{"type": "text", "text": "a"},
            {"type": "output_text", "text": "b"}]}));
        assert_eq!(r.text, "ab");
        let r = reply(json!({"content": null, "refusal": "I can't help with that."}));
        assert_eq!(r.refusal.as_deref(), Some("I can't help with that."));
        let r = reply(json!({"content": [{"type": "refusal", "refusal": "No."}]}));
        assert_eq!(r.refusal.as_deref(), Some("No."));
        let r = reply(json!({"content": "x", "refusal": null}));
        assert_eq!((r.text.as_str(), r.refusal), ("x", None));
        let r = Reply::anthropic(&json!({"content": [], "stop_reason": "refusal",
            "usage": {"input_tokens": 5, "output_tokens": 1}}))
        .unwrap();
        assert_eq!(r.tokens, 6);
        assert!(r.refusal.unwrap().contains("declined"));
    }
}
