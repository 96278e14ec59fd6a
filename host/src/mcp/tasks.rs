//! Long calls as Tasks (the MCP Tasks extension, SEP-2663) for 2026-07-28
//! clients that declare it: a call still running after [`TASK_AFTER`]
//! answers with a task instead, and runs on; so does a `run_command` with
//! `background: true`, whose task lasts as long as its command. The client
//! polls `tasks/get` for its state and, once it ends, its result, and may
//! `tasks/cancel` it (a background command is then killed).
//!
//! A task belongs to the credential (or connection) that started it:
//! another one asking for it is told it does not exist, as for an id
//! never made. Ended tasks are kept for [`KEEP_ENDED`], and so are tasks
//! following a background command after their owner last asked. Among
//! replicas a task id names its replica (cluster.rs), so `tasks/get`
//! through any replica reaches it.

use crate::broker::Broker;
use crate::types::context::CancelToken;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, DetailedTask, JsonObject, Task, TaskPayload, TaskStatus};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// A call still running this long becomes a task.
pub(super) const TASK_AFTER: Duration = Duration::from_secs(2);

/// How long an ended task is kept for its client to read.
const KEEP_ENDED: Duration = Duration::from_secs(600);

/// How often a client should ask.
const POLL_EVERY_MS: u64 = 500;

/// The tasks of this server.
pub(super) struct Tasks {
    inner: Mutex<HashMap<String, Entry>>,
    next: AtomicU64,
    /// What this replica's ids end with (none alone).
    suffix: String,
}

struct Entry {
    owner: Arc<str>,
    tool: String,
    created: String,
    updated: String,
    /// The call's token: cancelling the task cancels the call.
    cancel: CancelToken,
    cancelled: bool,
    /// Its end: the call's result, or the protocol error it ended with.
    ended: Option<(Result<CallToolResult, McpError>, Instant)>,
    /// The background command it follows, and the output read so far.
    background: Option<(String, String)>,
    /// When its owner last asked about it.
    seen: Instant,
}

/// The most output a background command's task keeps (its tail).
const KEEP_OUTPUT: usize = 1 << 20;

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

fn unknown(id: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "there is no task `{id}` of yours (it may have ended more than {} minutes ago)",
            KEEP_ENDED.as_secs() / 60
        ),
        None,
    )
}

impl Tasks {
    pub(super) fn new(suffix: &str) -> Self {
        Self {
            inner: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            suffix: suffix.to_owned(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.retain(|_, e| keep(e));
        inner
    }

    /// A task of `owner` for a call of `tool` still running (cancelled
    /// with `cancel`); its seed state.
    pub(super) fn start(&self, owner: &str, tool: &str, cancel: CancelToken) -> Task {
        self.insert(owner, tool, cancel, None)
    }

    /// A task of `owner` that lasts as long as its background command
    /// `command_id`; its seed state.
    pub(super) fn follow(&self, owner: &str, command_id: &str) -> Task {
        let background = Some((command_id.to_owned(), String::new()));
        self.insert(owner, "run_command", CancelToken::new(), background)
    }

    fn insert(
        &self,
        owner: &str,
        tool: &str,
        cancel: CancelToken,
        background: Option<(String, String)>,
    ) -> Task {
        let id = format!(
            "task-{}{}",
            self.next.fetch_add(1, Ordering::Relaxed),
            self.suffix
        );
        let created = now();
        self.lock().insert(
            id.clone(),
            Entry {
                owner: Arc::from(owner),
                tool: tool.to_owned(),
                created: created.clone(),
                updated: created.clone(),
                cancel,
                cancelled: false,
                ended: None,
                background,
                seen: Instant::now(),
            },
        );
        Task::new(id, TaskStatus::Working, created.clone(), created)
            .with_poll_interval_ms(POLL_EVERY_MS)
            .with_ttl_ms(u64::try_from(KEEP_ENDED.as_millis()).unwrap_or(u64::MAX))
            .with_status_message(format!("{tool} is running"))
    }

    /// Task `id` ended with `outcome`.
    pub(super) fn end(&self, id: &str, outcome: Result<CallToolResult, McpError>) {
        if let Some(entry) = self.lock().get_mut(id) {
            entry.updated = now();
            entry.ended = Some((outcome, Instant::now()));
        }
    }

    /// Task `id` as `owner` sees it (a background command's looked at in
    /// `broker` first).
    pub(super) fn get(
        &self,
        owner: &str,
        id: &str,
        broker: &Broker,
    ) -> Result<DetailedTask, McpError> {
        let mut inner = self.lock();
        let entry = inner
            .get_mut(id)
            .filter(|e| *e.owner == *owner)
            .ok_or_else(|| unknown(id))?;
        entry.seen = Instant::now();
        if entry.ended.is_none()
            && let Some((command, output)) = &mut entry.background
        {
            let looked = broker.background.poll(owner, command);
            let ended = match looked {
                Ok(status) => {
                    output.push_str(&status.new_output);
                    if output.len() > KEEP_OUTPUT {
                        let cut = output.len() - KEEP_OUTPUT;
                        let at = (cut..output.len()).find(|&i| output.is_char_boundary(i));
                        output.drain(..at.unwrap_or(0));
                    }
                    (!status.running).then(|| {
                        let how = status.exit_code.map_or_else(
                            || "was killed".to_owned(),
                            |code| format!("exited with code {code}"),
                        );
                        let text = format!(
                            "`{}` {how} after {:.1} s\n{output}",
                            status.command,
                            status.elapsed_ms as f64 / 1e3
                        );
                        Ok(CallToolResult::success(vec![
                            rmcp::model::ContentBlock::text(text),
                        ]))
                    })
                }
                Err(err) => Some(Err(McpError::invalid_params(err.to_string(), None))),
            };
            if let Some(outcome) = ended {
                entry.updated = now();
                entry.ended = Some((outcome, Instant::now()));
            }
        }
        let payload = match &entry.ended {
            None => TaskPayload::Working,
            Some(_) if entry.cancelled => TaskPayload::Cancelled,
            Some((Ok(result), _)) => TaskPayload::Completed {
                result: object(serde_json::to_value(result).unwrap_or_default()),
            },
            Some((Err(error), _)) => TaskPayload::Failed {
                error: object(serde_json::to_value(error).unwrap_or_default()),
            },
        };
        let message = match &payload {
            TaskPayload::Working if entry.cancelled => format!("{} is being cancelled", entry.tool),
            TaskPayload::Working => format!("{} is running", entry.tool),
            TaskPayload::Cancelled => format!("{} was cancelled", entry.tool),
            _ => format!("{} ended", entry.tool),
        };
        let task = Task::new(id, TaskStatus::Working, &entry.created, &entry.updated)
            .with_poll_interval_ms(POLL_EVERY_MS)
            .with_ttl_ms(u64::try_from(KEEP_ENDED.as_millis()).unwrap_or(u64::MAX))
            .with_status_message(message);
        Ok(DetailedTask::new(task, payload))
    }

    /// Cancel `owner`'s task `id` (its call is interrupted; `tasks/get`
    /// says cancelled once it has stopped).
    /// The background command to kill, if the task follows one (the
    /// caller kills it off the protocol thread: a kill may wait).
    pub(super) fn cancel(&self, owner: &str, id: &str) -> Result<Option<String>, McpError> {
        let mut inner = self.lock();
        let entry = inner
            .get_mut(id)
            .filter(|e| *e.owner == *owner)
            .ok_or_else(|| unknown(id))?;
        if entry.ended.is_some() {
            return Ok(None);
        }
        entry.cancelled = true;
        entry.updated = now();
        entry.cancel.cancel();
        let Some((command, _)) = &entry.background else {
            return Ok(None);
        };
        let command = command.clone();
        let cancelled = McpError::invalid_params("cancelled", None);
        entry.ended = Some((Err(cancelled), Instant::now()));
        Ok(Some(command))
    }
}

/// Whether a task is still kept: an ended one for [`KEEP_ENDED`] after
/// its end; one following a background command for [`KEEP_ENDED`] after
/// its owner last asked (its command runs on, reached by `process`);
/// a call's for as long as the call runs (its own deadline ends it).
fn keep(entry: &Entry) -> bool {
    match &entry.ended {
        Some((_, at)) => at.elapsed() < KEEP_ENDED,
        None if entry.background.is_some() => entry.seen.elapsed() < KEEP_ENDED,
        None => true,
    }
}

fn object(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(background: bool, ended: bool, age: Duration) -> Entry {
        let then = Instant::now().checked_sub(age).unwrap();
        Entry {
            owner: Arc::from("alice"),
            tool: "run_command".into(),
            created: now(),
            updated: now(),
            cancel: CancelToken::new(),
            cancelled: false,
            ended: ended.then(|| (Err(McpError::invalid_params("x", None)), then)),
            background: background.then(|| ("s-1".into(), String::new())),
            seen: then,
        }
    }

    #[test]
    fn tasks_nobody_asks_about_are_let_go() {
        let old = KEEP_ENDED + Duration::from_secs(1);
        let young = Duration::from_secs(1);
        assert!(
            !keep(&entry(true, false, old)),
            "an unwatched background task"
        );
        assert!(keep(&entry(true, false, young)));
        assert!(
            !keep(&entry(false, true, old)),
            "an ended task past its time"
        );
        assert!(keep(&entry(false, true, young)));
        assert!(keep(&entry(false, false, old)), "a call still running");
    }
}
