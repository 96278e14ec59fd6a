//! Who confirms a call over MCP: the person behind the client through
//! elicitation, or nobody when the client cannot elicit (then the refusal
//! says how to allow the call).

use crate::types::confirm::{ConfirmRequest, Confirmer, Decision};
use crate::types::context::CancelToken;
use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema,
    ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions};
use std::time::Duration;

/// How long a person has to answer a confirmation asked through the client.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(600);

pub(super) fn supports_elicitation(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some())
}

/// Asks the person behind the MCP client, through elicitation. The client
/// is trusted to relay the person's answer.
pub(super) struct Elicit {
    pub(super) peer: Peer<RoleServer>,
    pub(super) handle: tokio::runtime::Handle,
    /// The call's token: a cancelled call stops waiting for the answer.
    pub(super) cancel: CancelToken,
}

/// The way out when an MCP client cannot ask its user.
const NO_ELICITATION_HINT: &str = "the MCP client cannot ask its user (no elicitation support); \
    start `toolhost serve` with --mode yolo, or use a profile whose mode allows it (--profile), \
    or a client that supports elicitation";

/// The confirmer of a client that cannot elicit: nobody to ask.
pub(super) struct NoElicitation;

impl Confirmer for NoElicitation {
    fn confirm(&self, _request: &ConfirmRequest<'_>) -> Decision {
        Decision::Unavailable
    }

    fn unavailable_hint(&self) -> &'static str {
        NO_ELICITATION_HINT
    }
}

impl Confirmer for Elicit {
    fn unavailable_hint(&self) -> &'static str {
        NO_ELICITATION_HINT
    }

    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision {
        let Ok(schema) = ElicitationSchema::builder()
            .required_bool("confirm")
            .build()
        else {
            return Decision::Unavailable;
        };
        let args = serde_json::to_string_pretty(request.args).unwrap_or_default();
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "toolhost asks: run `{}`? ({})\n{args}\nSet confirm to true to run it.",
                request.tool, request.reason
            ),
            requested_schema: schema,
        };
        // Called on the call's blocking thread, never on the protocol thread.
        self.handle.block_on(self.ask(params))
    }
}

impl Elicit {
    /// Send the elicitation and wait for the person. A call cancelled (or
    /// timed out) meanwhile withdraws the question: the client gets
    /// `notifications/cancelled` for it and can close its dialog.
    async fn ask(&self, params: ElicitRequestParams) -> Decision {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        let mut handle = match self
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(err) => {
                tracing::warn!(%err, "cannot send the confirmation request");
                return Decision::Failed;
            }
        };
        let answer = tokio::select! {
            answer = tokio::time::timeout(CONFIRM_TIMEOUT, &mut handle.rx) => answer.ok(),
            () = until_cancelled(&self.cancel) => None,
        };
        let Some(answer) = answer else {
            // Cancelled or unanswered: take the question back.
            let _ = handle
                .cancel(Some(
                    "the tool call was cancelled or its confirmation timed out".into(),
                ))
                .await;
            return Decision::Deny;
        };
        match answer {
            Ok(Ok(ClientResult::ElicitResult(reply))) => {
                let yes = reply.action == ElicitationAction::Accept
                    && reply
                        .content
                        .as_ref()
                        .and_then(|c| c.get("confirm"))
                        .and_then(serde_json::Value::as_bool)
                        == Some(true);
                if yes { Decision::Allow } else { Decision::Deny }
            }
            Ok(Ok(other)) => {
                tracing::warn!(
                    ?other,
                    "the client answered the confirmation with something else"
                );
                Decision::Failed
            }
            Ok(Err(err)) => {
                tracing::warn!(%err, "the client answered the confirmation with an error");
                Decision::Failed
            }
            Err(_) => Decision::Failed,
        }
    }
}

/// Returns once `token` is cancelled (checked every 20 ms).
async fn until_cancelled(token: &CancelToken) {
    while !token.is_cancelled() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
