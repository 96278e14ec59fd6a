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
        let ids = request
            .arguments
            .iter()
            .flat_map(|args| ["command_id", "output_id"].map(|k| args.get(k)))
            .filter_map(|v| v.and_then(serde_json::Value::as_str))
            .chain(request.request_state.as_deref());
        if let Some((cluster, addr)) = self.held_elsewhere(&context, ids)? {
            let name = request.name.to_string();
            let params = with_meta(&request, &context)?;
            let result = cluster
                .forward(
                    &addr,
                    authorization(&context),
                    "tools/call",
                    Some(&name),
                    params,
                )
                .await?;
            let input_required =
                result.get("resultType").and_then(|t| t.as_str()) == Some("input_required");
            let parsed = if input_required {
                serde_json::from_value(result).map(CallToolResponse::InputRequired)
            } else {
                serde_json::from_value(result).map(CallToolResponse::Complete)
            };
            return parsed.map_err(|e| {
                McpError::internal_error(format!("replica {addr} answered: {e}"), None)
            });
        }
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

/// The `Authorization` the request came with (HTTP), to forward.
pub(super) fn authorization(context: &RequestContext<RoleServer>) -> Option<&str> {
    context
        .extensions
        .get::<::http::request::Parts>()?
        .headers
        .get(::http::header::AUTHORIZATION)?
        .to_str()
        .ok()
}
