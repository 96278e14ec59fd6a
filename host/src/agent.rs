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
//! A run always ends in an [`Outcome`], whatever stopped it (an answer,
//! the rounds or tokens running out, a refusal, a person cancelling, the
//! endpoint failing for good): the transcript and the files the tools
//! changed are never lost, and the run's end is written to the audit log.
//!
//! The API key is sent only in the `Authorization` header. It is never
//! logged, never in the transcript, and any text shown from the endpoint
//! (an error body) has it replaced by `[redacted]`.

use crate::executor::Executor;
use crate::schema::SchemaFormat;
use crate::types::context::{CallContext, CancelToken};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

mod anthropic;
mod calls;
mod openai;
mod outcome;
mod output;
pub use outcome::*;
use outcome::{Asked, End, Progress};
mod reply;
mod shape;
use calls::{Changed, Spent};
use openai::{assistant_message, with_ids};
pub use output::JsonOutput;
use reply::Reply;
pub use shape::Shape;
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
    /// Tokens the run may use, as the endpoint counts them in each
    /// answer's `usage` (prompt and completion); none: no limit. Once they
    /// are used up, no more tools run and no more requests are made.
    pub max_tokens: Option<u64>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_tool_rounds: 5,
            max_tool_calls: 50,
            max_result_chars: 200_000,
            max_tokens: None,
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

/// One run's tool loop over an executor.
pub struct ToolLoop<'a> {
    executor: &'a Executor,
    endpoint: Endpoint,
    model: String,
    budget: Budget,
    context: CallContext,
    system: Option<String>,
    cancel: CancelToken,
    events: Option<Events>,
    output: Option<JsonOutput>,
    history: bool,
    shape: Shape,
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
            cancel: CancelToken::new(),
            events: None,
            output: None,
            history: false,
            shape: Shape::default(),
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

    /// Stop the run when `cancel` is cancelled: at once while waiting for
    /// the model, and the running tool calls are cancelled with it.
    pub fn with_cancel(mut self, cancel: CancelToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Report each step to `events` as it happens.
    pub fn with_events(mut self, events: Events) -> Self {
        self.events = Some(events);
        self
    }

    /// Ask for an answer that is one JSON value (matching its schema, if
    /// it has one): the model is told so, the value is taken out of the
    /// answer's text, and an answer without one is sent back with what
    /// was wrong while rounds are left.
    pub fn with_json_output(mut self, output: JsonOutput) -> Self {
        self.output = Some(output);
        self
    }

    /// Keep the task and the answer in the session history, where
    /// memory_search finds them ([`Executor::record_exchange`]).
    pub fn with_history(mut self, keep: bool) -> Self {
        self.history = keep;
        self
    }

    /// Run `task` to an [`Outcome`]; an error only when the run could not
    /// start (no model, tools that cannot be described).
    pub fn run(&self, task: &str) -> Result<Outcome, AgentError> {
        if self.model.trim().is_empty() {
            return Err(AgentError::Usage(
                "no model given; name the model the endpoint serves (--model)".to_owned(),
            ));
        }
        let agent = self.context.agent.as_deref();
        let offered = self.offered();
        let tools = self
            .executor
            .schemas_for(
                agent,
                Some(&offered),
                match self.endpoint.api {
                    Api::OpenAi => SchemaFormat::OpenAi,
                    Api::Anthropic => SchemaFormat::Anthropic,
                },
            )
            .map_err(|e| AgentError::Usage(e.to_string()))?;
        // The persona first, then the configured text, then the tools'
        // guidance, then what the answer must look like.
        let system = [
            self.persona(),
            self.system.clone(),
            Some(self.guidance(&offered)),
            self.output.as_ref().map(JsonOutput::instruction),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n\n");
        let tools: Arc<[Value]> = tools.into();
        let mut run = Progress {
            messages: Arc::new(vec![
                json!({"role": "system", "content": system}),
                json!({"role": "user", "content": task}),
            ]),
            spent: Spent::default(),
            changed: Changed::default(),
            rounds: 0,
            offered,
        };
        let end = self.drive(&mut run, &tools);
        let outcome = run.finish(end);
        self.record(&outcome);
        if self.history {
            self.executor.record_exchange(&crate::executor::Exchange {
                agent,
                session: self.context.session.as_deref(),
                task,
                answer: &outcome.answer,
                stop: outcome.stop.as_str(),
            });
        }
        Ok(outcome)
    }

    /// The rounds of one run, to the end that stopped it.
    fn drive(&self, run: &mut Progress, tools: &Arc<[Value]>) -> End {
        let rounds = self.budget.max_tool_rounds.max(1);
        let mut nudged = false;
        for round in 1..=rounds {
            if self.stopped() {
                return self.cancelled(run);
            }
            let last = round == rounds;
            run.rounds = round;
            let reply = match self.ask(run, tools, last) {
                Ok(reply) => reply,
                Err(Asked::Cancelled) => return self.cancelled(run),
                Err(Asked::Failed(why)) => return End::failed(Stop::Failed, why),
            };
            if let Some(refusal) = reply.refusal {
                run.say(assistant_message(&refusal, &[]));
                return End::said(Stop::Refused, refusal);
            }
            let calls = with_ids(reply.calls, round);
            let text = reply.text;
            if calls.is_empty() && text.trim().is_empty() {
                if last {
                    break;
                }
                // Nothing at all (an empty assistant turn is not one every
                // API takes back): ask again, saying so once.
                if !nudged {
                    nudged = true;
                    self.nudge(run, round, EMPTY_NUDGE);
                }
                continue;
            }
            run.say(assistant_message(&text, &calls));
            if calls.is_empty() || last {
                if text.trim().is_empty() {
                    break;
                }
                let Some(expected) = &self.output else {
                    return End::said(Stop::Answered, text);
                };
                match expected.take(&text) {
                    Ok(value) => return End::json(text, value),
                    Err(why) if last => return End::invalid(text, why),
                    Err(why) => {
                        self.nudge(run, round, &expected.correction(&why));
                        continue;
                    }
                }
            }
            if let Some(end) = self.over_budget(run) {
                return end;
            }
            let answers = self.run_calls(&calls, run, round);
            for answer in answers {
                run.say(answer);
            }
        }
        End::said(
            Stop::Fallback,
            format!(
                "I could not reach an answer within {rounds} rounds of tool calls ({} tool calls \
                 made). Ask again with a narrower task, or allow more rounds (max_tool_rounds).",
                run.spent.calls
            ),
        )
    }

    /// Whether a person (or the embedder) stopped the run: the cancel
    /// token, or "abort all" answered at a confirmation of its session.
    fn stopped(&self) -> bool {
        self.cancel.is_cancelled() || self.executor.aborted_in(self.context.session.as_deref())
    }

    fn cancelled(&self, run: &Progress) -> End {
        End::said(
            Stop::Cancelled,
            format!(
                "The run was cancelled by a person in round {} after {} tool calls; nothing more \
                 was asked or run.",
                run.rounds, run.spent.calls
            ),
        )
    }

    /// The end when the tokens are used up before the calls in hand run.
    fn over_budget(&self, run: &Progress) -> Option<End> {
        let max = self.budget.max_tokens?;
        (run.spent.tokens >= max).then(|| {
            End::said(
                Stop::BudgetExceeded,
                format!(
                    "The run used {} tokens of its budget of {max} before reaching an answer; \
                     the tool calls of round {} did not run. Ask again with a narrower task or \
                     a larger token budget (max_tokens).",
                    run.spent.tokens, run.rounds
                ),
            )
        })
    }

    /// Ask the next request and wait for it, giving up at once when the
    /// run is stopped (the request's thread is left to end on its own).
    fn ask(&self, run: &mut Progress, tools: &Arc<[Value]>, last: bool) -> Result<Reply, Asked> {
        self.emit(Event::Asking {
            round: run.rounds,
            model: self.model.clone(),
        });
        let started = Instant::now();
        let (send, answer) = std::sync::mpsc::channel();
        let endpoint = self.endpoint.clone();
        let model = self.model.clone();
        // Shared, not copied: the thread lets go of them before it answers,
        // so the next message is added in place.
        let messages = Arc::clone(&run.messages);
        let tools = Arc::clone(tools);
        std::thread::Builder::new()
            .name("toolhost-agent-ask".to_owned())
            .spawn(move || {
                let reply = endpoint.ask(&model, &messages, &tools, last);
                drop((messages, tools));
                let _ = send.send(reply);
            })
            .map_err(|e| Asked::Failed(format!("the request could not start: {e}")))?;
        let reply = loop {
            match answer.recv_timeout(Duration::from_millis(50)) {
                Ok(reply) => break reply.map_err(|e| Asked::Failed(e.to_string()))?,
                Err(RecvTimeoutError::Timeout) if self.stopped() => {
                    return Err(Asked::Cancelled);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Asked::Failed(
                        "the request to the endpoint stopped unexpectedly".to_owned(),
                    ));
                }
            }
        };
        run.spent.tokens += reply.tokens;
        self.emit(Event::Answer {
            round: run.rounds,
            tool_calls: reply.calls.len(),
            tokens: reply.tokens,
            ms: started.elapsed().as_millis() as u64,
        });
        Ok(reply)
    }

    /// Tell the model why it is asked again.
    fn nudge(&self, run: &mut Progress, round: u32, why: &str) {
        self.emit(Event::Nudge {
            round,
            why: why.to_owned(),
        });
        run.say(json!({"role": "user", "content": why}));
    }

    fn emit(&self, event: Event) {
        if let Some(events) = &self.events {
            events(&event);
        }
    }

    /// The run's end in the audit log (and the structured log).
    fn record(&self, outcome: &Outcome) {
        tracing::info!(
            target: "toolhost::agent",
            stop = ?outcome.stop,
            rounds = outcome.rounds,
            tool_calls = outcome.tool_calls,
            tokens = outcome.tokens,
            "the run ended"
        );
        self.executor.audit(&json!({
            "time": crate::executor::audit::now(),
            "event": "agent_run",
            "agent": self.context.agent,
            "session": self.context.session,
            "channel": self.context.channel,
            "model": self.model,
            "endpoint": self.endpoint.url(),
            "stop": outcome.stop,
            "rounds": outcome.rounds,
            "tool_calls": outcome.tool_calls,
            "tokens": outcome.tokens,
            "changed_files": outcome.changed_files,
            "error": outcome
                .error
                .as_deref()
                .map(toolhost_shared::credentials::redact),
        }));
    }
}

/// What a model that answered nothing is told.
const EMPTY_NUDGE: &str = "Your last answer had no text and no tool call. Answer the task in \
                           text, or call one of the tools.";

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
        let answer = Reply::anthropic(&json!({"content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"},
            {"type": "tool_use", "id": "t", "name": "grep", "input": {"pattern": "p"}}]}))
        .unwrap();
        assert_eq!(answer.text, "ab");
        assert_eq!(
            answer.calls[0]["function"]["arguments"],
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
