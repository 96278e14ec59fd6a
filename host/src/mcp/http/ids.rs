//! Request ids in flight in a session. JSON-RPC asks a client to give
//! each of its requests an id of its own; rmcp routes a session's answers
//! by id, so a request reusing the id of one still running took over its
//! route, and the earlier request's answer never came (its response
//! stayed open). Such a request is refused instead, and the one running
//! is answered.

use axum::response::Response;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The (session, request id) pairs being answered.
#[derive(Clone, Default)]
pub(super) struct InFlight(Arc<Mutex<HashSet<(String, String)>>>);

/// A request's id held while it is answered; let go when dropped.
pub(super) struct Held {
    ids: InFlight,
    key: (String, String),
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut ids = self.ids.0.lock().unwrap_or_else(PoisonError::into_inner);
        ids.remove(&self.key);
    }
}

/// What of a message decides whether it is a request: a method and an id.
#[derive(serde::Deserialize)]
struct Probe {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
}

impl InFlight {
    /// Hold the id of the request `body` is in `session`: `None` for a
    /// notification, a response or what does not parse (rmcp answers
    /// those); the error to answer (`400` with `-32600`) if a request of
    /// the session with the same id is still being answered.
    pub(super) fn hold(&self, session: &str, body: &[u8]) -> Result<Option<Held>, String> {
        let Ok(Probe {
            id: Some(id),
            method: Some(_),
        }) = serde_json::from_slice::<Probe>(body)
        else {
            return Ok(None);
        };
        let key = (session.to_owned(), id.to_string());
        let mut ids = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !ids.insert(key.clone()) {
            return Err(format!(
                "invalid request: request id {id} is already in flight in this session; give each request an id of its own"
            ));
        }
        Ok(Some(Held {
            ids: self.clone(),
            key,
        }))
    }
}

/// `response`, keeping `guard` alive until its body (an event stream,
/// maybe) has been sent or dropped.
pub(super) fn until_sent<G: Send + Sync + 'static>(response: Response, guard: G) -> Response {
    response.map(|body| {
        axum::body::Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
            let _ = &guard;
            frame
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::InFlight;

    #[test]
    fn a_reused_id_is_refused_until_the_first_is_answered() {
        let ids = InFlight::default();
        let call = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}"#;
        let held = ids.hold("s1", call).expect("first").expect("a request");
        let reused = ids.hold("s1", call).err().expect("refused");
        assert!(
            reused.contains("request id 5 is already in flight"),
            "{reused}"
        );
        // Another session, or the same number as a string, is another id.
        assert!(ids.hold("s2", call).expect("another session").is_some());
        let named = br#"{"jsonrpc":"2.0","id":"5","method":"tools/call"}"#;
        assert!(ids.hold("s1", named).expect("a string id").is_some());
        drop(held);
        assert!(ids.hold("s1", call).expect("after the answer").is_some());
        // Notifications and responses hold nothing.
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(ids.hold("s1", note).expect("a notification").is_none());
        let answer = br#"{"jsonrpc":"2.0","id":5,"result":{}}"#;
        assert!(ids.hold("s1", answer).expect("a response").is_none());
    }
}
