//! One `tools/call`: whose state it uses, who confirms it (elicitation,
//! or at 2026-07-28 an input-required round), and its run on a call
//! thread with progress notes and cancellation.

use super::*;
use crate::types::confirm::Confirmer;
use rounds::Asker;

/// A call's confirmer, and the same as an [`Asker`] when it asks in
/// rounds (its question, if any, is the call's answer).
type Confirmers = (Arc<dyn Confirmer>, Option<Arc<Asker>>);

impl McpServer {
    /// Whose state a request uses: over HTTP at 2026-07-28, where a
    /// request belongs to no session, its credential's (made on its first
    /// request); otherwise the connection's (stdio, or an HTTP session).
    pub(super) fn session_for(&self, context: &RequestContext<RoleServer>) -> Arc<Session> {
        let principal = context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<http::Principal>());
        match principal {
            Some(principal) if is_modern(context) => {
                let mut principals = self
                    .shared
                    .principals
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                Arc::clone(
                    principals
                        .entry(Arc::clone(&principal.0))
                        .or_insert_with(|| {
                            Session::named(
                                &self.shared.executor,
                                format!("principal-{}", principal.0),
                            )
                        }),
                )
            }
            _ => Arc::clone(&self.session),
        }
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
        self.ensure_workspace(&context.peer).await;
        let name = request.name.to_string();
        let tool = name.clone();
        // The call holds the session, so a command it starts after the
        // client left is still killed when the session ends.
        let session = self.session_for(&context);
        let cancel = CancelToken::new();
        let (confirmer, asker) = self.confirmer_of(&context, &session, &request, &cancel)?;
        let confirmer = Some(confirmer);
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
            )
        });
        let mut notes = progress.map(|(token, progress)| Notes::new(&tool, token, progress));
        let finished = loop {
            tokio::select! {
                done = &mut task => break done,
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
        self.shared
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        let (result, linked) = finished.map_err(|_| {
            McpError::internal_error("the call's thread ended without an answer", None)
        })??;
        if let Some(asked) = asker.and_then(|a| self.shared.rounds.input_required(&a)) {
            return Ok(CallToolResponse::InputRequired(asked));
        }
        // 2026-07-28 clients hear of list changes only on a subscription.
        if linked && !is_modern(&context) {
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

/// Whether a 2026-07-28 request's client can answer an elicitation form.
fn modern_client_elicits(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some())
}
