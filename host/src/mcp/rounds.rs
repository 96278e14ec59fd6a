//! Confirmations for 2026-07-28 clients, which the server may not send
//! requests to: multi-round-trip requests (SEP-2322).
//!
//! A call that needs a person ends with an "input required" result: an
//! elicitation form with the question (the tool, why it asks, the
//! arguments or the command) and a sealed `requestState`. The client asks
//! its person and calls again with the answer in `inputResponses` and the
//! state echoed; that call runs from the start, and the confirmation it
//! reaches is answered from the state. A second question in the same call
//! takes another round.
//!
//! The state is bound to the caller's credential, the tool and the digest
//! of its exact arguments (HMAC associated data, rmcp's
//! [`RequestStateCodec`]); it expires with the question and is used once:
//! its nonce is kept by this server until then, so a replay, another
//! caller's answer or a changed argument is refused. Nothing in it is
//! secret (it is signed, not encrypted).

use crate::types::confirm::{ConfirmRequest, Confirmer, Decision};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, JsonObject, RequestStateCodec, SealOptions,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a question waits for its answer (as elicitation's does).
const ANSWER_WITHIN: Duration = Duration::from_secs(600);

/// The most questions one call may ask.
const MOST_ROUNDS: usize = 10;

/// The most questions one caller may leave open: past it, its oldest
/// state can no longer be answered (it is asked afresh).
const MOST_OPEN: usize = 256;

/// The key of the question in `inputRequests` and `inputResponses`.
const KEY: &str = "confirm";

/// What to do after a refused state.
const ASK_AFRESH: &str =
    "call the tool again without inputResponses and requestState to be asked afresh";

/// The server's side of the rounds: the sealing key and the states issued
/// and not yet answered.
pub(super) struct Rounds {
    codec: RequestStateCodec,
    /// What this replica's states end with (mcp/cluster.rs; none alone).
    suffix: String,
    /// Nonces of issued states, until answered or expired: whose, and
    /// until when.
    issued: Mutex<HashMap<String, (Arc<str>, Instant)>>,
}

/// What the sealed state holds.
#[derive(Serialize, Deserialize)]
struct State {
    /// Questions answered in earlier rounds: their digests and answers.
    answered: Vec<(String, bool)>,
    /// The question this round asked.
    asked: String,
    /// Once only.
    nonce: String,
}

impl Rounds {
    /// Rounds sealed with a key of this process, their states ending
    /// with `suffix`.
    pub(super) fn new(suffix: &str) -> Self {
        Self {
            suffix: suffix.to_owned(),
            codec: RequestStateCodec::try_new(crate::net::random_hex(32))
                .expect("64 random hex digits are a key long enough"),
            issued: Mutex::new(HashMap::new()),
        }
    }

    /// The confirmer of a call by `principal` of `tool` with `arguments`:
    /// fresh, or answered from the state and responses of a retry
    /// (refused with -32602 if they do not belong to this caller and call,
    /// or were used already).
    pub(super) fn confirmer(
        &self,
        principal: &str,
        tool: &str,
        arguments: Option<&JsonObject>,
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<Asker, McpError> {
        let bound = bound_to(principal, tool, arguments);
        let Some(state) = state else {
            if responses.is_some() {
                return Err(McpError::invalid_params(
                    format!("inputResponses without the requestState they answer; {ASK_AFRESH}"),
                    None,
                ));
            }
            return Ok(Asker::new(principal, bound, Vec::new()));
        };
        let state = state.strip_suffix(&*self.suffix).unwrap_or(state);
        let opened: State = self
            .codec
            .open_json_with(state, bound.as_bytes())
            .map_err(|e| {
                McpError::invalid_params(
                    format!(
                        "requestState refused ({e}): it was not issued by this server for this \
                         caller, tool and arguments, or it expired; {ASK_AFRESH}"
                    ),
                    None,
                )
            })?;
        let yes = responses
            .and_then(|r| r.get(KEY))
            .map(accepted)
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!("inputResponses has no `{KEY}` answer to the question asked"),
                    None,
                )
            })?;
        let fresh = {
            let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
            issued
                .remove(&opened.nonce)
                .is_some_and(|(_, until)| until > Instant::now())
        };
        if !fresh {
            return Err(McpError::invalid_params(
                format!("this requestState was answered already (or expired); {ASK_AFRESH}"),
                None,
            ));
        }
        let mut answered = opened.answered;
        answered.push((opened.asked, yes));
        Ok(Asker::new(principal, bound, answered))
    }

    /// The input-required result for the question `asker` was left with,
    /// if it was left with one.
    pub(super) fn input_required(&self, asker: &Asker) -> Option<InputRequiredResult> {
        let (digest, message) = asker
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        let nonce = crate::net::random_hex(16);
        let now = Instant::now();
        {
            let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
            issued.retain(|_, (_, until)| *until > now);
            // A caller's oldest open question makes room for its newest.
            let theirs = issued.values().filter(|(o, _)| *o == asker.owner);
            if theirs.count() >= MOST_OPEN {
                let oldest = issued
                    .iter()
                    .filter(|(_, (o, _))| *o == asker.owner)
                    .min_by_key(|(_, (_, until))| *until)
                    .map(|(n, _)| n.clone());
                if let Some(oldest) = oldest {
                    issued.remove(&oldest);
                }
            }
            issued.insert(
                nonce.clone(),
                (Arc::clone(&asker.owner), now + ANSWER_WITHIN),
            );
        }
        let state = State {
            answered: asker.answered.clone(),
            asked: digest,
            nonce,
        };
        let sealed = self
            .codec
            .seal_json_with(
                &state,
                &SealOptions::new()
                    .associated_data(asker.bound.as_bytes())
                    .ttl(ANSWER_WITHIN),
            )
            .ok()?;
        let schema = ElicitationSchema::builder()
            .required_bool("confirm")
            .build()
            .ok()?;
        let form = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        };
        let requests: InputRequests = [(
            KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(form)),
        )]
        .into();
        Some(InputRequiredResult::new(
            Some(requests),
            Some(sealed + &self.suffix),
        ))
    }
}

/// Whether an elicitation answer accepts with `confirm: true`.
fn accepted(answer: &serde_json::Value) -> bool {
    answer
        .get("action")
        .and_then(|a| serde_json::from_value::<ElicitationAction>(a.clone()).ok())
        == Some(ElicitationAction::Accept)
        && answer
            .get("content")
            .and_then(|c| c.get("confirm"))
            .and_then(serde_json::Value::as_bool)
            == Some(true)
}

/// The associated data a state is bound to: the caller, the tool and its
/// exact arguments.
fn bound_to(principal: &str, tool: &str, arguments: Option<&JsonObject>) -> String {
    let args = arguments.map_or_else(
        || "{}".to_owned(),
        |a| serde_json::Value::Object(a.clone()).to_string(),
    );
    format!(
        "{principal}\n{tool}\n{}",
        blake3::hash(args.as_bytes()).to_hex()
    )
}

/// The confirmer of one call of a 2026-07-28 client: answers what earlier
/// rounds answered, and keeps the first new question (the call is then
/// refused here, and the client asked).
pub(super) struct Asker {
    /// The caller.
    owner: Arc<str>,
    bound: String,
    answered: Vec<(String, bool)>,
    pending: Mutex<Option<(String, String)>>,
}

impl Asker {
    fn new(owner: &str, bound: String, answered: Vec<(String, bool)>) -> Self {
        Self {
            owner: Arc::from(owner),
            bound,
            answered,
            pending: Mutex::new(None),
        }
    }
}

impl Confirmer for Asker {
    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision {
        let args = serde_json::to_string_pretty(request.args).unwrap_or_default();
        let question = format!(
            "toolhost asks: run `{}`? ({})\n{args}\nSet confirm to true to run it.",
            request.tool, request.reason
        );
        let digest = blake3::hash(question.as_bytes()).to_hex().to_string();
        if let Some((_, yes)) = self.answered.iter().find(|(d, _)| *d == digest) {
            return if *yes {
                Decision::Allow
            } else {
                Decision::Deny
            };
        }
        // A retry runs the call again from the start: once something a
        // person allowed has run in it, asking again would run that a
        // second time on the next retry. Such a call is refused here
        // (split it in two calls).
        if self.answered.len() >= MOST_ROUNDS || self.answered.iter().any(|(_, yes)| *yes) {
            return Decision::Failed;
        }
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.get_or_insert((digest, question));
        Decision::Unavailable
    }

    fn unavailable_hint(&self) -> &'static str {
        "the client is asked through an input-required result; its answer comes with the retry"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(asker: &Asker) -> Decision {
        let args = serde_json::json!({"command": "sh x.sh"});
        asker.confirm(&ConfirmRequest {
            tool: "run_command",
            args: &args,
            reason: "it is dangerous",
        })
    }

    fn args() -> JsonObject {
        serde_json::json!({"command": "sh x.sh"})
            .as_object()
            .unwrap()
            .clone()
    }

    fn answer(yes: bool) -> InputResponses {
        let reply = if yes {
            serde_json::json!({"action": "accept", "content": {"confirm": true}})
        } else {
            serde_json::json!({"action": "accept", "content": {"confirm": false}})
        };
        [(KEY.to_owned(), reply)].into()
    }

    /// A question of `who`, asked; its state.
    fn open_question(rounds: &Rounds, who: &str) -> String {
        let asker = rounds
            .confirmer(who, "run_command", Some(&args()), None, None)
            .unwrap();
        assert_eq!(ask(&asker), Decision::Unavailable);
        rounds
            .input_required(&asker)
            .unwrap()
            .request_state
            .unwrap()
    }

    #[test]
    fn a_caller_holds_a_bounded_number_of_open_questions() {
        let rounds = Rounds::new("");
        let bob = open_question(&rounds, "bob");
        let alice: Vec<String> = (0..MOST_OPEN + 10)
            .map(|_| open_question(&rounds, "alice"))
            .collect();
        let issued = rounds.issued.lock().unwrap();
        let count = |who: &str| issued.values().filter(|(o, _)| &**o == who).count();
        assert_eq!(count("alice"), MOST_OPEN);
        assert_eq!(
            count("bob"),
            1,
            "one caller's questions never crowd out another's"
        );
        drop(issued);
        let yes = answer(true);
        let retry = |who: &str, state: &str| {
            rounds.confirmer(who, "run_command", Some(&args()), Some(state), Some(&yes))
        };
        assert!(retry("alice", &alice[0]).is_err(), "the oldest made room");
        assert!(retry("alice", alice.last().unwrap()).is_ok());
        assert!(retry("bob", &bob).is_ok());
    }

    #[test]
    fn an_answer_counts_once_for_its_caller_and_arguments() {
        let rounds = Rounds::new("");
        let first = rounds
            .confirmer("alice", "run_command", Some(&args()), None, None)
            .unwrap();
        assert_eq!(ask(&first), Decision::Unavailable);
        let asked = rounds.input_required(&first).expect("a question");
        assert!(rounds.input_required(&first).is_none(), "asked once");
        let state = asked.request_state.unwrap();
        let yes = answer(true);
        let retry = |who: &str, args: &JsonObject| {
            rounds.confirmer(who, "run_command", Some(args), Some(&state), Some(&yes))
        };
        assert!(retry("bob", &args()).is_err(), "another caller");
        let mut other = args();
        other.insert("timeout".into(), 5.into());
        assert!(retry("alice", &other).is_err(), "other arguments");
        let answered = retry("alice", &args()).expect("the caller's answer");
        assert_eq!(ask(&answered), Decision::Allow);
        // Something allowed ran: a second question would run it again on
        // the next retry, so it is refused instead.
        let other = serde_json::json!({"command": "sh y.sh"});
        let second = answered.confirm(&ConfirmRequest {
            tool: "run_command",
            args: &other,
            reason: "it is dangerous",
        });
        assert_eq!(second, Decision::Failed);
        assert!(rounds.input_required(&answered).is_none());
        let again = retry("alice", &args()).err().expect("a replay");
        assert!(again.message.contains("answered already"), "{again:?}");
    }

    #[test]
    fn a_no_is_a_denial_and_a_new_question_takes_another_round() {
        let rounds = Rounds::new("");
        let first = rounds
            .confirmer("alice", "run_command", Some(&args()), None, None)
            .unwrap();
        ask(&first);
        let state = rounds
            .input_required(&first)
            .unwrap()
            .request_state
            .unwrap();
        let no = rounds
            .confirmer(
                "alice",
                "run_command",
                Some(&args()),
                Some(&state),
                Some(&answer(false)),
            )
            .unwrap();
        assert_eq!(ask(&no), Decision::Deny);
        let other = serde_json::json!({"command": "sh y.sh"});
        let second = no.confirm(&ConfirmRequest {
            tool: "run_command",
            args: &other,
            reason: "it is dangerous",
        });
        assert_eq!(second, Decision::Unavailable);
        assert!(rounds.input_required(&no).is_some(), "a second round");
        assert!(
            rounds
                .confirmer(
                    "alice",
                    "run_command",
                    Some(&args()),
                    None,
                    Some(&answer(true))
                )
                .is_err(),
            "responses without their state"
        );
    }
}
