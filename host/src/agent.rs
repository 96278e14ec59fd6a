//! The tool loop (seed 001's multi-turn loop, seed 003's budgets): a model
//! behind an OpenAI-compatible chat completions endpoint (or Anthropic's
//! messages API) gets the task and
//! the visible tools; each tool call it answers with runs through the
//! executor's pipeline (confirmation, audit, hooks) and goes back as a
//! `role: tool` message with the call's id; this repeats for at most
//! `max_tool_rounds` requests, the last one sent without tools so the model
//! answers in text; when even that brings no text, a fallback message is
//! the answer.
//!
//! The API key is sent only in the `Authorization` header. It is never
//! logged, never in the transcript, and any text shown from the endpoint
//! (an error body) has it replaced by `[redacted]`.

use crate::executor::{CallOptions, Executor};
use crate::schema::SchemaFormat;
use crate::types::context::CallContext;
use serde_json::{Value, json};
use std::time::Duration;

/// How far one run may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Requests to the model, the last one without tools (seed 001's
    /// `maxToolRounds`, default 5).
    pub max_tool_rounds: u32,
    /// Tool calls run in the whole run; calls past it are answered with a
    /// message instead of running.
    pub max_tool_calls: u32,
    /// Characters of tool results given to the model in the whole run;
    /// results past it are cut, with a message.
    pub max_result_chars: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_tool_rounds: 5,
            max_tool_calls: 50,
            max_result_chars: 200_000,
        }
    }
}

/// The API an endpoint speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Api {
    /// OpenAI's chat completions (OpenAI, Ollama, llama.cpp, vLLM,
    /// LiteLLM, ...): `POST …/chat/completions`, `Authorization: Bearer`.
    #[default]
    OpenAi,
    /// Anthropic's messages API: `POST …/messages`, `x-api-key`.
    Anthropic,
}

impl std::str::FromStr for Api {
    type Err = AgentError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            other => Err(AgentError::Usage(format!(
                "unknown API `{other}`; use openai (chat completions) or anthropic (messages)"
            ))),
        }
    }
}

impl Api {
    /// The path requests go to, below the base URL.
    fn path(self) -> &'static str {
        match self {
            Self::OpenAi => "/chat/completions",
            Self::Anthropic => "/messages",
        }
    }
}

/// A model endpoint: where, which API, the key.
#[derive(Clone)]
pub struct Endpoint {
    url: String,
    api: Api,
    api_key: Option<String>,
    timeout: Duration,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("api", &self.api)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Endpoint {
    /// The OpenAI-compatible endpoint at `url`: a base such as
    /// `http://127.0.0.1:8080/v1` (`/chat/completions` is added) or the
    /// full completions URL.
    pub fn new(url: &str) -> Result<Self, AgentError> {
        Self::speaking(Api::OpenAi, url)
    }

    /// The endpoint at `url` speaking `api`: a base URL (the API's path,
    /// `/chat/completions` or `/messages`, is added) or the full URL.
    pub fn speaking(api: Api, url: &str) -> Result<Self, AgentError> {
        let url = url.trim().trim_end_matches('/');
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(AgentError::Usage(format!(
                "the endpoint `{url}` is not an http(s) URL; give one such as \
                 https://api.openai.com/v1 or http://127.0.0.1:11434/v1"
            )));
        }
        let url = if url.ends_with(api.path()) {
            url.to_owned()
        } else {
            format!("{url}{}", api.path())
        };
        Ok(Self {
            url,
            api,
            api_key: None,
            timeout: Duration::from_secs(120),
        })
    }

    /// The API it speaks.
    pub fn api(&self) -> Api {
        self.api
    }

    /// Send the API key (`Authorization: Bearer KEY`, or `x-api-key` for
    /// Anthropic). Refused over plain http to a host other than this
    /// machine, where anyone on the way could read it.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Result<Self, AgentError> {
        crate::net::credential_may_go_to(&self.url, "the API key").map_err(AgentError::Usage)?;
        self.api_key = Some(key.into()).filter(|k: &String| !k.is_empty());
        Ok(self)
    }

    /// How long one request may take (default 120 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The completions URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `text` with the API key replaced by `[redacted]`.
    fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) if key.len() >= 4 => text.replace(key.as_str(), "[redacted]"),
            _ => text.to_owned(),
        }
    }

    /// POST `body`; the response's JSON.
    fn complete(&self, body: &Value) -> Result<Value, AgentError> {
        // No redirects: a key sent to a URL a person chose must not follow
        // a Location anywhere else.
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .new_agent();
        let mut request = agent
            .post(&self.url)
            .header("Content-Type", "application/json");
        match (&self.api_key, self.api) {
            (Some(key), Api::OpenAi) => {
                request = request.header("Authorization", &format!("Bearer {key}"));
            }
            (Some(key), Api::Anthropic) => request = request.header("x-api-key", key),
            (None, _) => {}
        }
        if self.api == Api::Anthropic {
            request = request.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let mut response = request.send(body.to_string()).map_err(|e| {
            AgentError::Endpoint(self.redact(&format!(
                "cannot reach the endpoint {}: {e}; check the URL and that the server runs",
                self.url
            )))
        })?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .map_err(|e| {
                AgentError::Endpoint(format!("the endpoint's answer could not be read: {e}"))
            })?;
        if status.is_redirection() {
            let to = response
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .unwrap_or("elsewhere")
                .to_owned();
            return Err(AgentError::Endpoint(self.redact(&format!(
                "the endpoint answered {status}, redirecting to {to}; give that URL as the \
                 endpoint if it is the one you mean (redirects are not followed)"
            ))));
        }
        if !status.is_success() {
            let hint = match status.as_u16() {
                401 | 403 => "; check the API key (--api-key-env names the variable holding it)",
                404 => "; check the endpoint URL and the model name",
                429 => "; the endpoint is rate limiting: wait and try again",
                _ => "",
            };
            return Err(AgentError::Endpoint(self.redact(&format!(
                "the endpoint answered {status}: {}{hint}",
                excerpt(&text)
            ))));
        }
        serde_json::from_str(&text).map_err(|e| {
            AgentError::Endpoint(self.redact(&format!(
                "the endpoint's answer is not JSON ({e}): {}",
                excerpt(&text)
            )))
        })
    }
}

/// The `anthropic-version` header the requests carry.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Most tokens an Anthropic answer may take (its API requires a number;
/// every current model allows this many).
const ANTHROPIC_MAX_TOKENS: u32 = 4096;

/// Most bytes of one answer of the endpoint.
const MAX_ANSWER_BYTES: u64 = 8 << 20;

/// Most tool calls run from one answer; the rest are told to come later.
const MAX_CALLS_PER_ROUND: usize = 16;

impl Endpoint {
    /// Ask for the next message of the conversation `messages` (kept in
    /// OpenAI's shape: system, user, assistant with tool_calls, tool),
    /// offering `tools` (in this API's schema format) unless `last`. The
    /// answer in OpenAI's shape: `{content, tool_calls}`.
    fn ask(
        &self,
        model: &str,
        messages: &[Value],
        tools: &[Value],
        last: bool,
    ) -> Result<Value, AgentError> {
        match self.api {
            Api::OpenAi => {
                let mut body = json!({"model": model, "messages": messages});
                if !last && !tools.is_empty() {
                    body["tools"] = Value::Array(tools.to_vec());
                }
                let response = self.complete(&body)?;
                response
                    .pointer("/choices/0/message")
                    .cloned()
                    .ok_or_else(|| self.unexpected("choices[0].message", &response))
            }
            Api::Anthropic => {
                let (system, turns) = anthropic::messages(messages);
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
                let response = self.complete(&body)?;
                anthropic::answer(&response).ok_or_else(|| self.unexpected("content", &response))
            }
        }
    }

    /// The error for an answer without `what`.
    fn unexpected(&self, what: &str, response: &Value) -> AgentError {
        AgentError::Endpoint(self.redact(&format!(
            "the endpoint's answer has no {what}: {}",
            excerpt(&response.to_string())
        )))
    }
}

/// Anthropic's messages API in and out of the conversation's OpenAI shape.
mod anthropic {
    use serde_json::{Value, json};

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

    /// An Anthropic answer as `{content, tool_calls}`; None if it has no
    /// `content` list.
    pub(super) fn answer(response: &Value) -> Option<Value> {
        let blocks = response.get("content")?.as_array()?;
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        let calls: Vec<Value> = blocks
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
        let mut message = json!({"role": "assistant", "content": text.join("")});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        Some(message)
    }
}

/// At most 500 characters of `text`, for a message.
fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(500) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Why a run ended without an answer: for the person, not the model.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The endpoint could not be reached, answered an HTTP error, or
    /// answered something that is not a chat completion.
    #[error("{0}")]
    Endpoint(String),
    /// The loop was set up wrongly (a bad URL, no model).
    #[error("{0}")]
    Usage(String),
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The model answered in text.
    Answered,
    /// The rounds ran out without a text answer: the fallback message.
    Fallback,
}

/// What a run produced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// The model's final text, or the fallback message.
    pub answer: String,
    /// How it ended.
    pub stop: Stop,
    /// Requests made to the model.
    pub rounds: u32,
    /// Tool calls run (calls refused by the budget not counted).
    pub tool_calls: u32,
    /// Every message of the conversation, the system prompt first and the
    /// model's last answer last.
    pub transcript: Vec<Value>,
}

/// One run's tool loop over an executor.
pub struct ToolLoop<'a> {
    executor: &'a Executor,
    endpoint: Endpoint,
    model: String,
    budget: Budget,
    context: CallContext,
    system: Option<String>,
}

impl<'a> ToolLoop<'a> {
    /// A loop asking `model` at `endpoint`, running tools through
    /// `executor` (its profile, mode, confirmer and audit apply).
    pub fn new(executor: &'a Executor, endpoint: Endpoint, model: impl Into<String>) -> Self {
        Self {
            executor,
            endpoint,
            model: model.into(),
            budget: Budget::default(),
            context: CallContext {
                channel: Some("agent".to_owned()),
                ..CallContext::new()
            },
            system: None,
        }
    }

    /// The budget of this run.
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Who the calls are made for (agent, session, chat); each tool call
    /// gets its own call id.
    pub fn with_context(mut self, context: CallContext) -> Self {
        self.context = context;
        self
    }

    /// Text put before the tools' guidance in the system prompt.
    pub fn with_system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// Run `task` to an answer.
    pub fn run(&self, task: &str) -> Result<Outcome, AgentError> {
        if self.model.trim().is_empty() {
            return Err(AgentError::Usage(
                "no model given; name the model the endpoint serves (--model)".to_owned(),
            ));
        }
        let agent = self.context.agent.as_deref();
        let tools = self
            .executor
            .schemas_for(
                agent,
                None::<&[&str]>,
                match self.endpoint.api {
                    Api::OpenAi => SchemaFormat::OpenAi,
                    Api::Anthropic => SchemaFormat::Anthropic,
                },
            )
            .map_err(|e| AgentError::Usage(e.to_string()))?;
        let guidance = self.executor.instructions(agent);
        let system = match &self.system {
            Some(text) => format!("{text}\n\n{guidance}"),
            None => guidance,
        };
        let mut messages = vec![
            json!({"role": "system", "content": system}),
            json!({"role": "user", "content": task}),
        ];
        let mut spent = Spent::default();
        let rounds = self.budget.max_tool_rounds.max(1);
        for round in 1..=rounds {
            let last = round == rounds;
            let message = self.endpoint.ask(&self.model, &messages, &tools, last)?;
            let text = message
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let calls = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let calls = with_ids(calls, round);
            if calls.is_empty() && text.trim().is_empty() && !last {
                // Nothing at all: ask again (an empty assistant turn is not
                // one every API takes back).
                continue;
            }
            messages.push(assistant_message(&text, &calls));
            if calls.is_empty() || last {
                if !text.trim().is_empty() {
                    return Ok(Outcome {
                        answer: text,
                        stop: Stop::Answered,
                        rounds: round,
                        tool_calls: spent.calls,
                        transcript: messages,
                    });
                }
                break;
            }
            let answers = self.run_calls(&calls, &mut spent);
            messages.extend(answers);
        }
        Ok(Outcome {
            answer: format!(
                "I could not reach an answer within {rounds} rounds of tool calls ({} tool calls \
                 made). Ask again with a narrower task, or allow more rounds (max_tool_rounds).",
                spent.calls
            ),
            stop: Stop::Fallback,
            rounds,
            tool_calls: spent.calls,
            transcript: messages,
        })
    }

    /// Run one round's tool calls, concurrently, within the budget; their
    /// `role: tool` messages in the order the model gave them.
    fn run_calls(&self, calls: &[Value], spent: &mut Spent) -> Vec<Value> {
        let planned: Vec<Planned> = calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let name = call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let args = arguments(call.pointer("/function/arguments"));
                let within = i < MAX_CALLS_PER_ROUND && spent.calls < self.budget.max_tool_calls;
                if within && args.is_ok() && !name.is_empty() {
                    spent.calls += 1;
                }
                Planned {
                    id,
                    name,
                    args,
                    within,
                    late: i >= MAX_CALLS_PER_ROUND,
                }
            })
            .collect();
        // A thread for each call that runs; the others are answered here.
        let results: Vec<String> = std::thread::scope(|scope| {
            let running: Vec<_> = planned
                .iter()
                .map(|p| {
                    if !p.runs() {
                        return Err(self.answer(p));
                    }
                    std::thread::Builder::new()
                        .name("toolhost-agent-call".to_owned())
                        .spawn_scoped(scope, move || self.answer(p))
                        .map_err(|e| {
                            format!(
                                "error (failed): this call could not start ({e}); call it again"
                            )
                        })
                })
                .collect();
            running
                .into_iter()
                .map(|started| match started {
                    Ok(handle) => handle.join().unwrap_or_else(|_| {
                        "error (failed): the tool call stopped unexpectedly".to_owned()
                    }),
                    Err(answer) => answer,
                })
                .collect()
        });
        planned
            .iter()
            .zip(results)
            .map(|(p, content)| {
                let content = spent.take(content, self.budget.max_result_chars);
                json!({"role": "tool", "tool_call_id": p.id, "content": content})
            })
            .collect()
    }

    /// What the model is told about one planned call.
    fn answer(&self, planned: &Planned) -> String {
        if planned.name.is_empty() {
            return "error (invalid_input): this tool call names no function; call a tool by \
                    its name"
                .to_owned();
        }
        let args = match &planned.args {
            Ok(args) => args,
            Err(why) => {
                return format!(
                    "error (invalid_input): the arguments of this call to `{}` are not a JSON \
                     object ({why}); call it again with its arguments as one JSON object",
                    planned.name
                );
            }
        };
        if planned.late {
            return format!(
                "error (budget): at most {MAX_CALLS_PER_ROUND} tool calls run from one answer; \
                 `{}` did not run. Call it again in your next answer.",
                planned.name
            );
        }
        if !planned.within {
            return format!(
                "error (budget): this run may make at most {} tool calls and has made them; \
                 `{}` did not run. Answer with what you have.",
                self.budget.max_tool_calls, planned.name
            );
        }
        let options = CallOptions {
            context: CallContext {
                call_id: crate::types::context::CallId::new(),
                ..self.context.clone()
            },
            ..CallOptions::default()
        };
        self.executor
            .call(&planned.name, args, &options)
            .model_text()
    }
}

/// One tool call as the model asked for it.
struct Planned {
    id: String,
    name: String,
    /// The arguments as JSON object text, or why they are not one.
    args: Result<String, String>,
    /// Whether the budget lets it run.
    within: bool,
    /// Past the calls one answer may run.
    late: bool,
}

impl Planned {
    /// Whether it runs (on a thread of its own).
    fn runs(&self) -> bool {
        self.within && !self.late && self.args.is_ok() && !self.name.is_empty()
    }
}

/// What a run has used of its budget.
#[derive(Default)]
struct Spent {
    calls: u32,
    chars: usize,
}

impl Spent {
    /// `content` within what is left of the result budget.
    fn take(&mut self, content: String, max: usize) -> String {
        let left = max.saturating_sub(self.chars);
        let length = content.chars().count();
        if length <= left {
            self.chars += length;
            return content;
        }
        self.chars = max;
        let kept: String = content.chars().take(left).collect();
        format!(
            "{kept}\n[cut: this run's tool results may total at most {max} characters, and that \
             is reached; answer with what you have]"
        )
    }
}

/// A call's `function.arguments` (JSON text, or an object some servers
/// send) as JSON object text.
fn arguments(raw: Option<&Value>) -> Result<String, String> {
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

fn kind_of(value: &Value) -> &'static str {
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
fn assistant_message(text: &str, calls: &[Value]) -> Value {
    let mut kept = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        kept["tool_calls"] = Value::Array(calls.to_vec());
    }
    kept
}

/// `calls` with an id each, unique in the round: the one the endpoint
/// gave, or `call_ROUND_I`; the `role: tool` answers use the same.
fn with_ids(calls: Vec<Value>, round: u32) -> Vec<Value> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conversation_translates_to_anthropics_turns() {
        let messages = [
            json!({"role": "system", "content": "guide"}),
            json!({"role": "user", "content": "task"}),
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"x\"}"}},
                {"id": "b", "type": "function", "function": {"name": "grep", "arguments": "not json"}}]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "text of x"}),
            json!({"role": "tool", "tool_call_id": "b", "content": "error (invalid_input): bad"}),
        ];
        let (system, turns) = anthropic::messages(&messages);
        assert_eq!(system, "guide");
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[1]["content"][0]["input"], json!({"path": "x"}));
        assert_eq!(
            turns[1]["content"][1]["input"],
            json!({}),
            "arguments that are not JSON"
        );
        let results = turns[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 2, "consecutive results in one user turn");
        assert_eq!(results[0]["is_error"], false);
        assert_eq!(results[1]["is_error"], true);
        let answer = anthropic::answer(&json!({"content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"},
            {"type": "tool_use", "id": "t", "name": "grep", "input": {"pattern": "p"}}]}))
        .unwrap();
        assert_eq!(answer["content"], "ab");
        assert_eq!(
            answer["tool_calls"][0]["function"]["arguments"],
            "{\"pattern\":\"p\"}"
        );
    }

    #[test]
    fn a_key_is_refused_over_plain_http_to_another_machine() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost/v1",
            "http://[::1]:9/v1",
            "https://api.example/v1",
        ] {
            assert!(
                Endpoint::new(url).unwrap().with_api_key("k").is_ok(),
                "{url}"
            );
        }
        for url in ["http://api.example/v1", "http://10.0.0.2:11434/v1"] {
            assert!(
                Endpoint::new(url).unwrap().with_api_key("k").is_err(),
                "{url}"
            );
        }
        let shown = format!(
            "{:?}",
            Endpoint::new("https://a.example")
                .unwrap()
                .with_api_key("sk-secret")
                .unwrap()
        );
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
}
