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
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a new session may take to send `notifications/initialized`.
pub const HANDSHAKE_WINDOW: Duration = Duration::from_secs(10);

/// The limits on HTTP sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Live sessions (handshake finished or not) at once.
    pub max_live: usize,
    /// Sessions still in their handshake at once.
    pub max_pending: usize,
    /// Live sessions of one credential at once.
    pub max_per_principal: usize,
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
    /// least 4) may be in their handshake at once; one credential may hold
    /// them all.
    pub fn new(max_live: usize, idle: Duration) -> Self {
        let max_live = max_live.max(1);
        Self {
            max_live,
            max_pending: (max_live / 4).clamp(4.min(max_live), max_live),
            max_per_principal: max_live,
            idle,
        }
    }

    /// The same with at most `n` sessions per credential.
    pub fn per_principal(self, n: usize) -> Self {
        Self {
            max_per_principal: n.clamp(1, self.max_live),
            ..self
        }
    }
}

/// Why no session was made.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// A request that was not admitted would open a session: it named a
    /// protocol without sessions in its header.
    #[error(
        "this request names a protocol revision without sessions (MCP-Protocol-Version          2026-07-28 or later) yet opens a session; send `initialize` without that header,          or use `server/discover` and requests that carry their own _meta"
    )]
    NotAdmitted,
}

tokio::task_local! {
    /// The admission of the request opening a session, while it is served:
    /// `create_session` gives the session to its credential.
    static OPENING: u64;
}

/// One session made and not yet closed.
struct Held {
    /// The credential that opened it (none: opened without one).
    principal: Option<Arc<str>>,
    /// When its last request ended (or began, while one runs).
    last: Instant,
    /// Its requests being answered now.
    busy: u32,
    /// Its client has not sent `notifications/initialized`.
    pending: bool,
}

#[derive(Default)]
struct Table {
    held: HashMap<SessionId, Held>,
    /// Admitted requests whose session is not made yet, by admission.
    opening: HashMap<u64, Arc<str>>,
}

impl Table {
    /// Sessions live or about to be, of `principal` and in all.
    fn count(&self, principal: &str) -> (usize, usize) {
        let mine = self
            .held
            .values()
            .filter(|h| h.principal.as_deref() == Some(principal))
            .count()
            + self.opening.values().filter(|p| ***p == *principal).count();
        (mine, self.held.len() + self.opening.len())
    }

    /// The idle session of `principal` whose last request is oldest.
    fn oldest_idle(&self, principal: &str) -> Option<SessionId> {
        self.held
            .iter()
            .filter(|(_, h)| h.busy == 0 && h.principal.as_deref() == Some(principal))
            .min_by_key(|(_, h)| h.last)
            .map(|(id, _)| id.clone())
    }

    /// The credential holding the most sessions, and how many.
    fn biggest(&self) -> Option<(Arc<str>, usize)> {
        let mut counts: HashMap<&Arc<str>, usize> = HashMap::new();
        for p in self.held.values().filter_map(|h| h.principal.as_ref()) {
            *counts.entry(p).or_default() += 1;
        }
        counts
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .map(|(p, n)| (Arc::clone(p), n))
    }
}

/// rmcp's session manager with [`SessionLimits`], and the credential each
/// session belongs to. Admission ([`CappedSessions::admit`]) is the one
/// place caps are checked, atomically with the reservation it makes.
#[derive(Clone)]
pub struct CappedSessions {
    inner: Arc<LocalSessionManager>,
    table: Arc<Mutex<Table>>,
    next: Arc<AtomicU64>,
    limits: SessionLimits,
}

/// A request admitted to open a session: its place is kept until the
/// session is made or the request ends.
pub struct Admitted {
    sessions: CappedSessions,
    key: u64,
}

impl Admitted {
    /// Serve `request` (the one that opens the session) with this
    /// admission: the session made is the admitted credential's.
    pub async fn serve<F: Future>(self, request: F) -> F::Output {
        OPENING.scope(self.key, request).await
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.sessions.table().opening.remove(&self.key);
    }
}

/// A request of a session being answered (its event stream included):
/// the session is not idle.
pub struct Busy {
    sessions: CappedSessions,
    id: SessionId,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(held) = self.sessions.table().held.get_mut(&self.id) {
            held.busy = held.busy.saturating_sub(1);
            held.last = Instant::now();
        }
    }
}

impl CappedSessions {
    /// A manager enforcing `limits`.
    pub fn new(limits: SessionLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle);
        inner.session_config.init_timeout = Some(HANDSHAKE_WINDOW);
        Self {
            inner: Arc::new(inner),
            table: Arc::default(),
            next: Arc::default(),
            limits,
        }
    }

    /// Sessions open now.
    pub fn live(&self) -> usize {
        self.table().held.len()
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admit a request of `principal` that would open a session, or say
    /// why not (the message for the client, HTTP 503). When `principal`
    /// is at its cap, or every session is taken and it holds fewer than
    /// the credential holding the most, that credential's session idle
    /// the longest is closed to make room.
    pub fn admit(&self, principal: &Arc<str>) -> Result<Admitted, String> {
        let SessionLimits {
            max_live,
            max_pending,
            max_per_principal,
            ..
        } = self.limits;
        let mut table = self.table();
        let pending = table.held.values().filter(|h| h.pending).count() + table.opening.len();
        if pending >= max_pending {
            return Err(format!(
                "{pending} new MCP sessions have not finished their handshake yet; a \
                 session must send notifications/initialized within {} s. Try again shortly",
                HANDSHAKE_WINDOW.as_secs()
            ));
        }
        let (mine, live) = table.count(principal);
        let victim = if mine >= max_per_principal {
            Some(table.oldest_idle(principal).ok_or_else(|| {
                format!(
                    "this credential holds {mine} MCP sessions, the most one may \
                     (--max-sessions-per-token), and each is answering a request; close one \
                     you no longer use (HTTP DELETE), or try again when one has ended"
                )
            })?)
        } else if live >= max_live {
            let reclaimable = table
                .biggest()
                .filter(|(_, n)| *n > mine + 1)
                .and_then(|(p, _)| table.oldest_idle(&p));
            Some(reclaimable.ok_or_else(|| {
                format!(
                    "this toolhost serves {max_live} MCP sessions at once, the most allowed \
                     (--max-sessions); close a session you no longer use (HTTP DELETE), or \
                     try again when one has ended"
                )
            })?)
        } else {
            None
        };
        if let Some(id) = victim {
            let held = table.held.remove(&id);
            tracing::info!(
                session = %id,
                holder = held.as_ref().and_then(|h| h.principal.as_deref()).unwrap_or("?"),
                "closing the session idle the longest to make room for a new one"
            );
            let inner = Arc::clone(&self.inner);
            tokio::spawn(async move { inner.close_session(&id).await });
        }
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        table.opening.insert(key, Arc::clone(principal));
        Ok(Admitted {
            sessions: self.clone(),
            key,
        })
    }

    /// Whose session `id` is: `None` when it is not one of these.
    pub fn owner(&self, id: &str) -> Option<Option<Arc<str>>> {
        self.table().held.get(id).map(|h| h.principal.clone())
    }

    /// Mark session `id` busy until the returned guard drops.
    pub fn busy(&self, id: &str) -> Option<Busy> {
        let mut table = self.table();
        let held = table.held.get_mut(id)?;
        held.busy += 1;
        held.last = Instant::now();
        Some(Busy {
            sessions: self.clone(),
            id: id.into(),
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
        // Every request that may open a session was admitted (http.rs):
        // one that was not cannot pass the caps by opening one.
        // An admission opens one session: a batch of `initialize`s under
        // one gets one, and the rest are refused.
        let admitted = OPENING
            .try_with(|key| *key)
            .map_err(|_| SessionsError::NotAdmitted)?;
        let principal = self
            .table()
            .opening
            .remove(&admitted)
            .ok_or(SessionsError::NotAdmitted)?;
        let (id, transport) = self.inner.create_session().await?;
        {
            let mut table = self.table();
            let principal = Some(principal);
            table.held.insert(
                id.clone(),
                Held {
                    principal,
                    last: Instant::now(),
                    busy: 0,
                    pending: true,
                },
            );
        }
        // A handshake that never finishes ends the session.
        let this = self.clone();
        let late = id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(HANDSHAKE_WINDOW).await;
            let unfinished = this.table().held.get(&late).is_some_and(|h| h.pending);
            if unfinished {
                tracing::debug!(session = %late, "closing a session whose handshake never finished");
                let _ = this.close_session(&late).await;
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
        self.table().held.remove(id);
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
        if initialized && let Some(held) = self.table().held.get_mut(id) {
            held.pending = false;
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
        assert_eq!(
            (l.max_live, l.max_pending, l.max_per_principal),
            (64, 16, 64)
        );
        assert_eq!(SessionLimits::new(8, Duration::ZERO).max_pending, 4);
        assert_eq!(SessionLimits::new(2, Duration::ZERO).max_pending, 2);
        assert_eq!(SessionLimits::new(0, Duration::ZERO).max_live, 1);
        assert_eq!(l.per_principal(0).max_per_principal, 1);
        assert_eq!(l.per_principal(100).max_per_principal, 64);
    }

    /// Open a session as `who` the way the HTTP layer does.
    async fn open(sessions: &CappedSessions, who: &Arc<str>) -> Result<SessionId, String> {
        let admitted = sessions.admit(who)?;
        let (id, _transport) = admitted
            .serve(sessions.create_session())
            .await
            .map_err(|e| e.to_string())?;
        Ok(id)
    }

    fn finish_handshake(sessions: &CappedSessions, id: &SessionId) {
        sessions.table().held.get_mut(id).unwrap().pending = false;
    }

    #[tokio::test]
    async fn sessions_past_a_cap_are_refused_with_the_remedy() {
        let sessions = CappedSessions::new(SessionLimits {
            max_live: 3,
            max_pending: 2,
            max_per_principal: 3,
            idle: Duration::from_secs(60),
        });
        let alice: Arc<str> = "alice".into();
        let a = open(&sessions, &alice).await.unwrap();
        let b = open(&sessions, &alice).await.unwrap();
        let why = open(&sessions, &alice).await.unwrap_err();
        assert!(why.contains("notifications/initialized"), "{why}");
        // A finished handshake makes room among the pending, not the live.
        finish_handshake(&sessions, &a);
        let c = open(&sessions, &alice).await.unwrap();
        assert_eq!(sessions.owner(&c), Some(Some(Arc::clone(&alice))));
        finish_handshake(&sessions, &b);
        finish_handshake(&sessions, &c);
        // Full, with every session busy: refused.
        let busy: Vec<Busy> = [&a, &b, &c]
            .iter()
            .map(|id| sessions.busy(id).unwrap())
            .collect();
        let why = open(&sessions, &alice).await.unwrap_err();
        assert!(why.contains("--max-sessions-per-token"), "{why}");
        // Idle again: the one idle the longest makes room.
        drop(busy);
        std::thread::sleep(Duration::from_millis(5));
        drop(sessions.busy(&b));
        drop(sessions.busy(&c));
        let d = open(&sessions, &alice).await.unwrap();
        assert_eq!(
            sessions.owner(&a),
            None,
            "the oldest idle session was not the one closed"
        );
        assert!(sessions.owner(&b).is_some() && sessions.owner(&d).is_some());
    }

    #[tokio::test]
    async fn one_credential_cannot_starve_another() {
        let sessions = CappedSessions::new(SessionLimits {
            max_live: 4,
            max_pending: 4,
            max_per_principal: 4,
            idle: Duration::from_secs(60),
        });
        let (hog, other): (Arc<str>, Arc<str>) = ("hog".into(), "other".into());
        for _ in 0..4 {
            let id = open(&sessions, &hog).await.unwrap();
            finish_handshake(&sessions, &id);
        }
        let mine = open(&sessions, &other).await.unwrap();
        assert_eq!(sessions.owner(&mine), Some(Some(Arc::clone(&other))));
        let held = sessions.table().count("hog");
        assert_eq!(held, (3, 4));
        // Another credential's session id is not its own to use.
        assert_ne!(sessions.owner(&mine), Some(Some(hog)));
    }

    #[tokio::test]
    async fn admissions_are_atomic_under_a_burst() {
        let sessions = CappedSessions::new(SessionLimits {
            max_live: 8,
            max_pending: 8,
            max_per_principal: 8,
            idle: Duration::from_secs(60),
        });
        let who: Arc<str> = "burst".into();
        // Admitted, none made yet: the places are taken already.
        let admitted: Vec<Admitted> = (0..8).map(|_| sessions.admit(&who).unwrap()).collect();
        assert!(sessions.admit(&who).is_err());
        drop(admitted);
        assert!(sessions.admit(&who).is_ok());
    }
    /// One admission opens one session: a second `initialize` served
    /// under it (a batch) is refused, never stored without a credential.
    #[tokio::test]
    async fn one_admission_opens_one_session() {
        let sessions = CappedSessions::new(SessionLimits::new(8, Duration::from_secs(60)));
        let who: Arc<str> = Arc::from("alice");
        let admitted = sessions.admit(&who).unwrap();
        let (first, second) = admitted
            .serve(async {
                let first = sessions.create_session().await.map(|(id, _)| id);
                let second = sessions.create_session().await.map(|(id, _)| id);
                (first, second)
            })
            .await;
        assert!(first.is_ok());
        assert!(
            matches!(second, Err(SessionsError::NotAdmitted)),
            "{second:?}"
        );
        assert_eq!(sessions.live(), 1);
    }
}
