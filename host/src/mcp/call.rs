//! One `tools/call`: whose state it uses, who confirms it (elicitation,
//! or at 2026-07-28 an input-required round), and its run on a call
//! thread with progress notes and cancellation.

use super::*;
use crate::types::confirm::Confirmer;
use rmcp::model::CreateTaskResult;
use rounds::Asker;

/// A call's confirmer, and the same as an [`Asker`] when it asks in
/// rounds (its question, if any, is the call's answer).
type Confirmers = (Arc<dyn Confirmer>, Option<Arc<Asker>>);

impl McpServer {
    /// Whose state a request uses: over HTTP at 2026-07-28, where a
    /// request belongs to no session, its credential's (made on its first
    /// request); otherwise the connection's (stdio, or an HTTP session).
    pub(super) fn session_for(&self, context: &RequestContext<RoleServer>) -> Arc<Session> {
        match principal(context) {
            Some(principal) if is_modern(context) => {
                let mut principals = self
                    .shared
                    .principals
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                Arc::clone(principals.entry(Arc::clone(principal)).or_insert_with(|| {
                    Session::named(&self.shared.executor, format!("principal-{principal}"))
                }))
            }
            _ => Arc::clone(&self.session),
        }
    }

    /// The cluster and the replica holding one of `ids` when a 2026-07-28
    /// request names another replica's (cluster.rs); `None` when this one
    /// answers. A request another replica forwarded is never forwarded
    /// again.
    pub(super) fn held_elsewhere<'a>(
        &self,
        context: &RequestContext<RoleServer>,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> Result<Option<(Arc<cluster::Cluster>, String)>, McpError> {
        let Some(cluster) = self.shared.cluster.as_ref().filter(|_| is_modern(context)) else {
            return Ok(None);
        };
        for id in ids {
            if let Some(addr) = cluster.holder(id)? {
                let forwarded = context
                    .extensions
                    .get::<::http::request::Parts>()
                    .is_some_and(|p| p.headers.contains_key(cluster::FORWARDED));
                if forwarded {
                    return Err(McpError::invalid_params(
                        format!(
                            "`{id}` is held by the replica at {addr}, and this request was \
                             forwarded here already; send it again"
                        ),
                        None,
                    ));
                }
                return Ok(Some((Arc::clone(cluster), addr)));
            }
        }
        Ok(None)
    }

    /// The answer of the replica holding an id `request` names (its
    /// `command_id`, `output_id` or `requestState`), when another one does.
    async fn forward_call(
        &self,
        context: &RequestContext<RoleServer>,
        request: &CallToolRequestParams,
    ) -> Result<Option<CallToolResponse>, McpError> {
        let ids = request
            .arguments
            .iter()
            .flat_map(|args| ["command_id", "output_id"].map(|k| args.get(k)))
            .filter_map(|v| v.and_then(serde_json::Value::as_str))
            .chain(request.request_state.as_deref());
        let name = Some(&*request.name);
        let forwarded =
            self.forwarded::<serde_json::Value>(context, ids, "tools/call", name, request);
        let Some(result) = forwarded.await? else {
            return Ok(None);
        };
        let parsed = match result.get("resultType").and_then(|t| t.as_str()) {
            Some("input_required") => {
                serde_json::from_value(result).map(CallToolResponse::InputRequired)
            }
            Some("task") => serde_json::from_value(result).map(CallToolResponse::Task),
            _ => serde_json::from_value(result).map(CallToolResponse::Complete),
        };
        parsed
            .map(Some)
            .map_err(|e| McpError::internal_error(format!("a replica answered: {e}"), None))
    }

    /// Hand the rest of call `id` of `tool` (its answer to come from
    /// `answer`) to a task of `owner`, cancelled with `cancel`; the task's
    /// seed, to answer the request with.
    fn hand_to_task(
        &self,
        owner: &str,
        tool: &str,
        id: u64,
        cancel: &CancelToken,
        answer: tokio::sync::oneshot::Receiver<Result<Answered, McpError>>,
        asker: Option<Arc<Asker>>,
    ) -> CreateTaskResult {
        let seed = self.shared.tasks.start(owner, tool, cancel.clone());
        let shared = Arc::clone(&self.shared);
        let task_id = seed.task_id.clone();
        tokio::spawn(async move {
            let done = answer.await;
            shared.call_ended(id);
            let outcome = match done {
                Ok(Ok(answered)) => Ok(answered.result),
                Ok(Err(error)) => Err(error),
                Err(_) => Err(McpError::internal_error(
                    "the call's thread ended without an answer",
                    None,
                )),
            };
            // A question it came to after becoming a task has no one to
            // ask: its refusal is the result.
            if let Some(asker) = asker {
                let _ = shared.rounds.input_required(&asker);
            }
            shared.tasks.end(&task_id, outcome);
        });
        CreateTaskResult::new(seed)
    }

    /// When a 2026-07-28 request names another replica's id among `ids`,
    /// that replica's answer to it (`method`, `name` its Mcp-Name).
    pub(super) async fn forwarded<T: serde::de::DeserializeOwned>(
        &self,
        context: &RequestContext<RoleServer>,
        ids: impl IntoIterator<Item = &str>,
        method: &str,
        name: Option<&str>,
        request: &impl serde::Serialize,
    ) -> Result<Option<T>, McpError> {
        let Some((cluster, addr)) = self.held_elsewhere(context, ids)? else {
            return Ok(None);
        };
        let params = with_meta(request, context)?;
        let principal = principal(context).ok_or_else(|| {
            McpError::invalid_params(
                format!("this is held by the replica at {addr}; send it there over HTTP"),
                None,
            )
        })?;
        let result = cluster
            .forward(&addr, principal, method, name, params)
            .await?;
        serde_json::from_value(result)
            .map(Some)
            .map_err(|e| McpError::internal_error(format!("replica {addr} answered: {e}"), None))
    }

    /// Who confirms a call: at 2026-07-28, which forbids asking the
    /// client, a question ends the call with an input-required result
    /// answered by a retry (the [`Asker`], answered from the retry's
    /// state); earlier, elicitation; nobody for a client that cannot ask.
    fn confirmer_of(
        &self,
        context: &RequestContext<RoleServer>,
        session: &Session,
        request: &CallToolRequestParams,
        cancel: &CancelToken,
    ) -> Result<Confirmers, McpError> {
        if !is_modern(context) {
            return Ok((confirmer_for(&context.peer, cancel), None));
        }
        if !modern_client_elicits(context) {
            return Ok((Arc::new(NoElicitation), None));
        }
        let asker = Arc::new(self.shared.rounds.confirmer(
            &session.id,
            &request.name,
            request.arguments.as_ref(),
            request.request_state.as_deref(),
            request.input_responses.as_ref(),
        )?);
        Ok((Arc::clone(&asker) as _, Some(asker)))
    }

    pub(super) async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if let Some(answer) = self.forward_call(&context, &request).await? {
            return Ok(answer);
        }
        let name = request.name.to_string();
        self.ensure_workspace(&context.peer).await;
        let tool = name.clone();
        // The call holds the session, so a command it starts after the
        // client left is still killed when the session ends.
        let session = self.session_for(&context);
        let session_id = Arc::clone(&session.id);
        let cancel = CancelToken::new();
        let (confirmer, asker) = self.confirmer_of(&context, &session, &request, &cancel)?;
        let confirmer = Some(confirmer);
        let follow = follows_background(&context, &request);
        let arguments = request.arguments;
        let client = context.client_info().map(|info| info.name);
        let id = self.shared.next_call.fetch_add(1, Ordering::Relaxed);
        self.shared
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, cancel.clone());
        let channel = self.shared.channel;
        let token = cancel.clone();
        // A client that sent a progress token hears how the call goes.
        let progress = context
            .meta
            .get_progress_token()
            .map(|t| (t, Progress::new()));
        let reporter = progress.as_ref().map(|(_, p)| p.clone());
        let executor = Arc::clone(self.executor());
        let structured = self.shared.structured;
        // Everything but the protocol runs on the call thread: the protocol
        // thread has every client's JSON to do.
        let mut task = self.shared.pool.run(move || {
            let args = arguments.map_or_else(
                || "{}".to_owned(),
                |a| serde_json::Value::Object(a).to_string(),
            );
            let options = CallOptions {
                context: CallContext {
                    agent: client,
                    session: Some(session.id.to_string()),
                    channel: Some(channel.to_owned()),
                    ..CallContext::new()
                },
                cancel: Some(token),
                confirmer,
                progress: reporter,
                timeout: None,
            };
            let result = executor.call(&name, &args, &options);
            answer(
                &executor,
                &session,
                options.context.agent.as_deref(),
                &name,
                result,
                structured,
            )
        });
        let mut notes = progress.map(|(token, progress)| Notes::new(&tool, token, progress));
        // A client that takes tasks gets one for a call still running
        // after a while (tasks.rs); the call runs on.
        let becomes_task = takes_tasks(&context);
        let task_after = tokio::time::sleep(tasks::TASK_AFTER);
        tokio::pin!(task_after);
        let finished = loop {
            tokio::select! {
                done = &mut task => break done,
                () = &mut task_after, if becomes_task => {
                    let seed = self.hand_to_task(&session_id, &tool, id, &cancel, task, asker);
                    return Ok(CallToolResponse::Task(seed));
                }
                () = context.ct.cancelled() => {
                    cancel.cancel();
                    break task.await;
                }
                // Sent here, in the call's own future, so no notification
                // can follow the result.
                () = tokio::time::sleep(PROGRESS_LOOK), if notes.is_some() => {
                    if let Some(note) = notes.as_mut().and_then(Notes::next) {
                        let _ = context.peer.notify_progress(note).await;
                    }
                }
            }
        };
        self.shared.call_ended(id);
        let answered = finished.map_err(|_| {
            McpError::internal_error("the call's thread ended without an answer", None)
        })??;
        let follower = follow.then_some(&*session_id);
        self.answer_call(&context, asker, answered, follower).await
    }

    /// What a call that was `answered` answers: a task following the
    /// background command it started, for a `follower` that asked for one;
    /// else the question its `asker` was left with, if any; else the result
    /// (told first, before 2026-07-28, that the session keeps a new output).
    async fn answer_call(
        &self,
        context: &RequestContext<RoleServer>,
        asker: Option<Arc<Asker>>,
        answered: Answered,
        follower: Option<&str>,
    ) -> Result<CallToolResponse, McpError> {
        let Answered {
            result,
            linked,
            started,
        } = answered;
        // A background command it started, followed as a task for `follower`.
        if let (Some(owner), Some(command_id)) = (follower, started) {
            let seed = self.shared.tasks.follow(owner, &command_id);
            return Ok(CallToolResponse::Task(CreateTaskResult::new(seed)));
        }
        if let Some(asked) = asker.and_then(|a| self.shared.rounds.input_required(&a)) {
            return Ok(CallToolResponse::InputRequired(asked));
        }
        // 2026-07-28 clients hear of list changes only on a subscription.
        if linked && !is_modern(context) {
            // The session keeps a new output (and may have dropped its oldest).
            let _ =
                tokio::time::timeout(NOTIFY_TIMEOUT, context.peer.notify_resource_list_changed())
                    .await;
        }
        Ok(result.into())
    }
}

/// Whether a request speaks 2026-07-28 or later (stateless; no requests
/// to the client).
pub(super) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Whether a 2026-07-28 request's client takes tasks (the extension).
fn takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    is_modern(context)
        && context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
}

/// Whether `request` starts a background command that is a task as long as
/// it runs: a `run_command` with `background: true` from a client that
/// takes tasks.
fn follows_background(
    context: &RequestContext<RoleServer>,
    request: &CallToolRequestParams,
) -> bool {
    takes_tasks(context)
        && request.name == "run_command"
        && request
            .arguments
            .as_ref()
            .and_then(|a| a.get("background"))
            .and_then(serde_json::Value::as_bool)
            == Some(true)
}

/// Whether a 2026-07-28 request's client can answer an elicitation form.
fn modern_client_elicits(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some())
}

/// `request` as JSON with the request's `_meta`, to forward.
pub(super) fn with_meta(
    request: &impl serde::Serialize,
    context: &RequestContext<RoleServer>,
) -> Result<serde_json::Value, McpError> {
    let mut params = serde_json::to_value(request)
        .map_err(|e| McpError::internal_error(format!("cannot forward: {e}"), None))?;
    params["_meta"] = serde_json::to_value(&context.meta)
        .map_err(|e| McpError::internal_error(format!("cannot forward: {e}"), None))?;
    Ok(params)
}

/// Who sent the request (HTTP, once authenticated).
pub(super) fn principal(context: &RequestContext<RoleServer>) -> Option<&Arc<str>> {
    context
        .extensions
        .get::<::http::request::Parts>()?
        .extensions
        .get::<http::Principal>()
        .map(|p| &p.0)
}

impl Shared {
    /// Call `id` no longer runs.
    fn call_ended(&self, id: u64) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }
}
