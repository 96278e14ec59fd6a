//! The tool loop (the TypeScript bot framework's multi-turn loop, the agent tool contracts' budgets): a model
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

mod anthropic;
mod openai;
use openai::{arguments, assistant_message, with_ids};
mod endpoint;
pub use endpoint::*;

/// How far one run may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Requests to the model, the last one without tools (the TypeScript bot framework's
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
        // The persona first, then the configured text, then the tools' guidance.
        let system = [
            self.executor.persona_prompt(),
            self.system.clone(),
            Some(self.executor.instructions(agent)),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n\n");
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
