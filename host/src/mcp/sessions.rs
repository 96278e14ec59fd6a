//! HTTP sessions with limits: rmcp's [`LocalSessionManager`] behind caps on
//! live sessions and on sessions that have not finished the handshake, an
//! idle timeout, and a short window for the handshake. Nothing a client
//! does without a session can grow the server: a flood of `initialize`
//! requests meets the caps and gets `503` at once.
//!
//! When a session ends (the client deletes it, it idles out, its handshake
//! never finishes), rmcp stops its service; the handler's `Session`
//! drops with it and the executor kills that client's background commands.

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long a new session may take to send `notifications/initialized`.
pub const HANDSHAKE_WINDOW: Duration = Duration::from_secs(10);

/// The limits on HTTP sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Live sessions (handshake finished or not) at once.
    pub max_live: usize,
    /// Sessions still in their handshake at once.
    pub max_pending: usize,
    /// A session with no request for this long is closed.
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self::new(64, Duration::from_secs(30 * 60))
    }
}

impl SessionLimits {
    /// `max_live` sessions idle for at most `idle`; a quarter of them (at
    /// least 4) may be in their handshake at once.
    pub fn new(max_live: usize, idle: Duration) -> Self {
        let max_live = max_live.max(1);
        Self {
            max_live,
            max_pending: (max_live / 4).clamp(4.min(max_live), max_live),
            idle,
        }
    }
}

/// Why no session was made.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// A cap was reached.
    #[error("{0}")]
    Full(String),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's session manager with [`SessionLimits`].
#[derive(Clone)]
pub struct CappedSessions {
    inner: Arc<LocalSessionManager>,
    /// Sessions made whose client has not sent `notifications/initialized`.
    pending: Arc<Mutex<HashSet<SessionId>>>,
    limits: SessionLimits,
}

impl CappedSessions {
    /// A manager enforcing `limits`.
    pub fn new(limits: SessionLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle);
        inner.session_config.init_timeout = Some(HANDSHAKE_WINDOW);
        Self {
            inner: Arc::new(inner),
            pending: Arc::default(),
            limits,
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashSet<SessionId>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Live sessions now (rmcp's count; `None` while its table is being
    /// changed).
    fn live(&self) -> Option<usize> {
        self.inner.sessions.try_read().ok().map(|s| s.len())
    }

    /// Why a new session cannot be made now, if it cannot: the message for
    /// the client (HTTP 503).
    pub fn refusal(&self) -> Option<String> {
        self.refusal_with(self.live().unwrap_or(0))
    }

    fn refusal_with(&self, live: usize) -> Option<String> {
        let SessionLimits {
            max_live,
            max_pending,
            ..
        } = self.limits;
        if live >= max_live {
            return Some(format!(
                "this toolhost serves {max_live} MCP sessions at once, the most allowed \
                 (--max-sessions); close a session you no longer use (HTTP DELETE), or \
                 try again when one has ended"
            ));
        }
        let pending = self.pending().len();
        (pending >= max_pending).then(|| {
            format!(
                "{pending} new MCP sessions have not finished their handshake yet; a \
                 session must send notifications/initialized within {} s. Try again shortly",
                HANDSHAKE_WINDOW.as_secs()
            )
        })
    }
}

/// True for the client's `notifications/initialized`.
fn is_initialized(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        ClientJsonRpcMessage::Notification(n)
            if matches!(n.notification, ClientNotification::InitializedNotification(_))
    )
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let live = self.inner.sessions.read().await.len();
        if let Some(why) = self.refusal_with(live) {
            return Err(SessionsError::Full(why));
        }
        let (id, transport) = self.inner.create_session().await?;
        self.pending().insert(id.clone());
        // A handshake that never finishes ends the session.
        let this = self.clone();
        let late = id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(HANDSHAKE_WINDOW).await;
            if this.pending().remove(&late) {
                tracing::debug!(session = %late, "closing a session whose handshake never finished");
                let _ = this.inner.close_session(&late).await;
            }
        });
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.pending().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        let initialized = is_initialized(&message);
        self.inner.accept_message(id, message).await?;
        if initialized {
            self.pending().remove(id);
        }
        Ok(())
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_keep_room_for_handshakes() {
        let l = SessionLimits::new(64, Duration::from_secs(60));
        assert_eq!((l.max_live, l.max_pending), (64, 16));
        assert_eq!(SessionLimits::new(8, Duration::ZERO).max_pending, 4);
        assert_eq!(SessionLimits::new(2, Duration::ZERO).max_pending, 2);
        assert_eq!(SessionLimits::new(0, Duration::ZERO).max_live, 1);
    }

    #[tokio::test]
    async fn sessions_past_a_cap_are_refused_with_the_remedy() {
        let sessions = CappedSessions::new(SessionLimits {
            max_live: 3,
            max_pending: 2,
            idle: Duration::from_secs(60),
        });
        let (a, _ta) = sessions.create_session().await.unwrap();
        let (_b, _tb) = sessions.create_session().await.unwrap();
        let Err(SessionsError::Full(why)) = sessions.create_session().await else {
            panic!("a third session in its handshake was made")
        };
        assert!(why.contains("notifications/initialized"), "{why}");
        assert_eq!(sessions.refusal(), Some(why));
        // A finished handshake makes room among the pending, not the live.
        sessions.pending().remove(&a);
        let (_c, _tc) = sessions.create_session().await.unwrap();
        let Err(SessionsError::Full(why)) = sessions.create_session().await else {
            panic!("a fourth live session was made")
        };
        assert!(why.contains("--max-sessions"), "{why}");
        sessions.close_session(&a).await.unwrap();
        assert_eq!(
            sessions
                .refusal()
                .as_deref()
                .map(|w| w.contains("handshake")),
            Some(true)
        );
    }
}
