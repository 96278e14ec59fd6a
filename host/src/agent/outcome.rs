//! How a run ends: its stop, its outcome, the events on the way.

use super::calls::{Changed, Spent};
use serde_json::Value;
use std::sync::Arc;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The model answered in text.
    Answered,
    /// The rounds ran out without a text answer: the fallback message.
    Fallback,
    /// The tokens the budget allows were used up before an answer.
    BudgetExceeded,
    /// The model declined the task (its `refusal`): the answer says why.
    Refused,
    /// A person stopped the run (Ctrl-C, "abort all" at a confirmation,
    /// or the embedder's cancel token).
    Cancelled,
    /// The endpoint failed for good (retries and fallback spent): `error`
    /// says how.
    Failed,
    /// A JSON answer was asked for ([`JsonOutput`](super::JsonOutput)) and the last answer
    /// held none that fits: `error` says what was wrong.
    InvalidOutput,
}

impl Stop {
    /// Its name, as `--json` and the audit log write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::Fallback => "fallback",
            Self::BudgetExceeded => "budget_exceeded",
            Self::Refused => "refused",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
            Self::InvalidOutput => "invalid_output",
        }
    }
}

/// What a run produced, however it ended.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// The model's final text, or what stopped the run, in words.
    pub answer: String,
    /// How it ended.
    pub stop: Stop,
    /// With [`JsonOutput`](super::JsonOutput): the JSON value taken from the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Why the run failed ([`Stop::Failed`], [`Stop::InvalidOutput`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Requests made to the model.
    pub rounds: u32,
    /// Tool calls run (calls refused by the budget not counted).
    pub tool_calls: u32,
    /// Tokens the endpoint reported using, over the whole run (0 when it
    /// reports none).
    pub tokens: u64,
    /// Workspace-relative paths the run's tool calls changed, in the order
    /// they were first changed.
    pub changed_files: Vec<String>,
    /// Every message of the conversation, the system prompt first and the
    /// model's last answer last.
    pub transcript: Vec<Value>,
}

/// One step of a run, as it happens ([`ToolLoop::with_events`](super::ToolLoop::with_events)): for
/// progress on a terminal and for `--json-events`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Request `round` goes to the model.
    Asking {
        /// The request's number, from 1.
        round: u32,
        /// The model asked.
        model: String,
    },
    /// The model answered request `round`.
    Answer {
        /// The request's number.
        round: u32,
        /// Tool calls in the answer.
        tool_calls: usize,
        /// Tokens the endpoint counted for the request.
        tokens: u64,
        /// How long the answer took, retries included.
        ms: u64,
    },
    /// A tool call starts.
    ToolCall {
        /// The round it belongs to.
        round: u32,
        /// The call's id in the conversation.
        id: String,
        /// The tool called.
        tool: String,
    },
    /// A tool call ended.
    ToolResult {
        /// The round it belongs to.
        round: u32,
        /// The call's id in the conversation.
        id: String,
        /// The tool called.
        tool: String,
        /// `success` or an error kind (`denied`, `timeout`, ...).
        outcome: String,
        /// How long the call took.
        ms: u64,
        /// Workspace-relative paths it changed.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        changed: Vec<String>,
    },
    /// The model is asked again, and told why (an empty answer, a JSON
    /// answer that does not fit).
    Nudge {
        /// The round whose answer did not do.
        round: u32,
        /// What the model is told.
        why: String,
    },
}

/// Where a run reports its [`Event`]s.
pub type Events = Arc<dyn Fn(&Event) + Send + Sync>;

/// Why a request brought no reply.
pub(super) enum Asked {
    Cancelled,
    Failed(String),
}

/// A run as it goes.
pub(super) struct Progress {
    /// The conversation so far, shared with the request that is asking.
    pub(super) messages: Arc<Vec<Value>>,
    pub(super) spent: Spent,
    pub(super) changed: Changed,
    pub(super) rounds: u32,
    /// The tools this run offers; a call of any other is refused.
    pub(super) offered: Vec<String>,
}

impl Progress {
    /// Add `message` to the conversation.
    pub(super) fn say(&mut self, message: Value) {
        Arc::make_mut(&mut self.messages).push(message);
    }

    pub(super) fn finish(self, end: End) -> Outcome {
        Outcome {
            answer: end.answer,
            stop: end.stop,
            output: end.output,
            error: end.error,
            rounds: self.rounds,
            tool_calls: self.spent.calls,
            tokens: self.spent.tokens,
            changed_files: self.changed.into_list(),
            transcript: Arc::try_unwrap(self.messages)
                .unwrap_or_else(|shared| shared.as_ref().clone()),
        }
    }
}

/// How the rounds ended: the stop, the answer's text, and what goes with it.
pub(super) struct End {
    stop: Stop,
    answer: String,
    output: Option<Value>,
    error: Option<String>,
}

impl End {
    pub(super) fn said(stop: Stop, answer: String) -> Self {
        Self {
            stop,
            answer,
            output: None,
            error: None,
        }
    }

    pub(super) fn failed(stop: Stop, why: String) -> Self {
        Self {
            error: Some(why.clone()),
            ..Self::said(stop, why)
        }
    }

    pub(super) fn json(answer: String, value: Value) -> Self {
        Self {
            output: Some(value),
            ..Self::said(Stop::Answered, answer)
        }
    }

    pub(super) fn invalid(answer: String, why: String) -> Self {
        Self {
            error: Some(why),
            ..Self::said(Stop::InvalidOutput, answer)
        }
    }
}
