//! `collaborate`: discover the other bots, send one a message in a
//! collaboration session (it answers in the collaboration prompt mode:
//! memory and persona tools only, no delegation), and end the session,
//! which returns the transcript and puts its end in the audit log.

use super::{Bots, DELEGATED_CHANNEL, DELEGATION_TOOLS, blocking};
use crate::guidance::PromptMode;
use crate::services::{Service, ServiceCall, ServiceError};
use crate::types::context::CallContext;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Most collaboration sessions open at once.
const MOST_SESSIONS: usize = 32;
/// Most messages one session keeps (both sides).
const MOST_TURNS: usize = 50;

/// The open collaboration sessions.
#[derive(Default)]
pub(super) struct Sessions {
    open: Mutex<HashMap<String, Session>>,
}

/// One collaboration: who started it, with which bot, what was said.
#[derive(Clone)]
struct Session {
    bot: String,
    with: Option<String>,
    /// The agent and the client session that started it: only they see,
    /// go on with or end it.
    owner: (Option<String>, Option<String>),
    turns: Vec<(String, String)>,
}

/// A new session's id: `collab-` and 64 random bits, so no caller guesses
/// another's.
fn random_id() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    format!("collab-{:016x}", hasher.finish())
}

/// Who `call` comes from, as sessions are owned.
fn owner(call: &ServiceCall) -> (Option<String>, Option<String>) {
    (call.context.agent.clone(), call.context.session.clone())
}

impl Bots {
    pub(super) fn collaborate(&self) -> Result<Service, String> {
        let bots = self.clone();
        Service::new(
            "collaborate",
            "Work with another bot: `discover` lists the bots and what they are good at; `send` \
             a message to one (a new collaboration session, or `session_id` to go on with one) \
             and get its reply; `end` a session to get its transcript. The other bot answers \
             from its memory and persona only. Never yourself.",
            json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["discover", "send", "end"]},
                    "bot": {"type": "string", "description": "send: the bot to start a session with."},
                    "message": {"type": "string", "description": "send: what to say."},
                    "session_id": {"type": "string", "description": "send, end: the session."},
                },
                "required": ["action"],
                "additionalProperties": false,
            }),
            move |call: ServiceCall| {
                let bots = bots.clone();
                blocking(move || match call.input["action"].as_str() {
                    Some("discover") => Ok(bots.discover(&call)),
                    Some("send") => bots.send(&call),
                    Some("end") => bots.end(&call),
                    _ => Err(ServiceError::Invalid(
                        "`action` is discover, send or end".to_owned(),
                    )),
                })
            },
        )
        .map(|s| s.as_tool("Collaborate with a bot").with_timeout(super::LOOP_TIMEOUT))
    }

    fn discover(&self, call: &ServiceCall) -> Value {
        let caller = call.context.agent.as_deref();
        let bots: Vec<Value> = self
            .inner
            .bots
            .iter()
            .filter(|(name, _)| Some(name.as_str()) != caller)
            .map(|(name, bot)| json!({"name": name, "description": bot.description}))
            .collect();
        let text = bots
            .iter()
            .map(|b| {
                format!(
                    "- {}: {}",
                    b["name"].as_str().unwrap_or(""),
                    b["description"].as_str().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        json!({"bots": bots, "text": if text.is_empty() { "no other bots".to_owned() } else { text }})
    }

    fn send(&self, call: &ServiceCall) -> Result<Value, ServiceError> {
        let message = call.input["message"].as_str().unwrap_or_default().trim();
        if message.is_empty() {
            return Err(ServiceError::Invalid(
                "`message` is empty; say what to send".to_owned(),
            ));
        }
        let sessions = &self.inner.collaborations;
        let caller = call.context.agent.clone();
        let (id, session) = match call.input["session_id"].as_str() {
            Some(id) => {
                let open = sessions.open.lock().unwrap_or_else(PoisonError::into_inner);
                let session = open
                    .get(id)
                    .filter(|s| s.owner == owner(call))
                    .cloned()
                    .ok_or_else(|| {
                        ServiceError::Invalid(format!(
                            "no collaboration session `{id}` of yours is open; start one with `bot`"
                        ))
                    })?;
                (id.to_owned(), session)
            }
            None => {
                let bot = self.target(call)?;
                let id = random_id();
                let session = Session {
                    bot,
                    with: caller.clone(),
                    owner: owner(call),
                    turns: Vec::new(),
                };
                // Its place is taken before its first loop runs.
                let mut open = sessions.open.lock().unwrap_or_else(PoisonError::into_inner);
                if open.len() >= MOST_SESSIONS {
                    return Err(ServiceError::Denied(format!(
                        "{MOST_SESSIONS} collaboration sessions are open, the most; end one first"
                    )));
                }
                open.insert(id.clone(), session.clone());
                (id, session)
            }
        };
        if session.turns.len() + 2 > MOST_TURNS {
            return Err(ServiceError::Denied(format!(
                "the session `{id}` holds {MOST_TURNS} messages, the most; end it and start another"
            )));
        }
        let me = caller
            .clone()
            .unwrap_or_else(|| "the person's agent".to_owned());
        let so_far: String = session
            .turns
            .iter()
            .map(|(who, text)| format!("{who}: {text}\n"))
            .collect();
        let task = format!(
            "You are `{bot}`, in a collaboration session with `{me}`.\n\nSo far:\n{so_far}\n\
             {me} says: {message}\n\nReply to {me}.",
            bot = session.bot,
        );
        let mut shape = self.shape(&session.bot);
        shape.prompt_mode = Some(PromptMode::Collaboration);
        shape
            .without
            .extend(DELEGATION_TOOLS.iter().map(|t| (*t).to_owned()));
        let context = CallContext {
            agent: Some(session.bot.clone()),
            channel: Some(DELEGATED_CHANNEL.to_owned()),
            ..call.context.clone()
        };
        let outcome = self.run_loop(Some(&session.bot), &task, context, shape, &call.cancel)?;
        let mut open = sessions.open.lock().unwrap_or_else(PoisonError::into_inner);
        // Ended while the bot answered: the reply comes back, the session
        // stays ended.
        let note = match open.get_mut(&id) {
            Some(kept) => {
                kept.turns.push((me, message.to_owned()));
                kept.turns.push((kept.bot.clone(), outcome.answer.clone()));
                "send again with this session_id, or end it"
            }
            None => "it was ended meanwhile",
        };
        Ok(json!({
            "session_id": id,
            "bot": session.bot,
            "reply": outcome.answer,
            "stop": outcome.stop,
            "text": format!(
                "{} replied (collaboration session {id}; {note}):\n{}",
                session.bot, outcome.answer
            ),
        }))
    }

    fn end(&self, call: &ServiceCall) -> Result<Value, ServiceError> {
        let id = call.input["session_id"].as_str().unwrap_or_default();
        let mut open = self
            .inner
            .collaborations
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let session = match open.get(id) {
            Some(s) if s.owner == owner(call) => open.remove(id),
            _ => None,
        }
        .ok_or_else(|| {
            ServiceError::Invalid(format!("no collaboration session `{id}` of yours is open"))
        })?;
        drop(open);
        let transcript: Vec<Value> = session
            .turns
            .iter()
            .map(|(who, text)| json!({"from": who, "text": text}))
            .collect();
        if let Some(executor) = self.inner.executor.get().and_then(std::sync::Weak::upgrade) {
            executor.audit(&json!({
                "time": crate::executor::audit::now(),
                "event": "collaboration_ended",
                "session_id": id,
                "bot": session.bot,
                "with": session.with,
                "messages": transcript.len(),
            }));
        }
        let text = session
            .turns
            .iter()
            .map(|(who, text)| format!("{who}: {text}"))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(json!({"session_id": id, "bot": session.bot, "transcript": transcript, "text": text}))
    }
}
