//! Replicas behind a load balancer: a request that names state another
//! replica holds is forwarded to it.
//!
//! A replica started with `--replica-addr HOST:PORT` (where the others
//! reach it) and `--cluster-key-file` (the same secret on every replica)
//! ends the ids it gives out (background commands `s-3`, kept outputs
//! `out-2`, a confirmation's `requestState`) with its own name, signed:
//! `s-3@10.0.0.5:8080~1f2e3d4c5b6a`. A 2026-07-28 request naming another
//! replica's id (in `command_id`, `output_id`, a `toolhost://outputs/` URI
//! or `requestState`) is sent on to that replica as the same principal,
//! and its answer is the answer. Only names the key signed are followed
//! (no request can make a replica call an address of its choosing), a
//! forwarded request is never forwarded again, and a replica that does
//! not answer (drained, gone) is said to be so.
//!
//! The client's token never leaves the replica it reached. A forwarded
//! request carries the principal's name and a seal instead
//! (`Cluster::seal_request`): a MAC under the cluster key over the
//! sending replica, the principal, the time, a nonce and the exact body.
//! The receiver (`Cluster::open_request`) accepts it only within
//! `SEAL_FOR` of its time and only once, so someone who reads the
//! plain-HTTP hop (or holds an address a replica had) learns no
//! credential and can replay nothing.

use rmcp::ErrorData as McpError;
use std::time::Duration;

/// The header that marks a forwarded request: the sending replica.
pub(super) const FORWARDED: &str = "toolhost-forwarded";

/// The principal a forwarded request acts for (hex of its name).
pub(super) const PRINCIPAL: &str = "toolhost-principal";

/// A forwarded request's seal: `SECS.NONCE.MAC`.
pub(super) const SEAL: &str = "toolhost-seal";

/// How far a seal's time may be from the receiver's clock.
const SEAL_FOR: Duration = Duration::from_secs(60);

/// The largest forwarded body a replica reads before its seal is checked
/// (the largest request body any client may send, mcp/http.rs).
pub(super) const MOST_FORWARDED_BYTES: usize = 4 << 20;

/// How long a forwarded request may take (a call's own limits apply on
/// the replica that runs it).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(900);

/// This replica among several.
pub struct Cluster {
    /// `HOST:PORT` the other replicas reach this one at.
    me: String,
    /// Derived from the shared secret: signs replica names.
    key: [u8; 32],
    /// Derived from the shared secret: seals forwarded requests.
    request_key: [u8; 32],
    /// Nonces of seals accepted within [`SEAL_FOR`], and when they expire.
    opened: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// This replica's ids end with this.
    suffix: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("me", &self.me)
            .finish_non_exhaustive()
    }
}

/// The least bytes of a cluster key.
const MIN_KEY: usize = 32;

impl Cluster {
    /// Replica `me` (`HOST:PORT`) of the cluster sharing `secret`.
    pub fn new(me: &str, secret: &[u8]) -> Result<Self, String> {
        if secret.len() < MIN_KEY {
            return Err(format!(
                "the cluster key has {} bytes; it needs at least {MIN_KEY} (e.g. `head -c 32 \
                 /dev/urandom | base64 > FILE`), the same file on every replica",
                secret.len()
            ));
        }
        if me.is_empty() || me.contains(['@', '~', '/', ' ']) {
            return Err(format!(
                "`{me}` is not a HOST:PORT the other replicas can reach this one at"
            ));
        }
        let key = blake3::derive_key("toolhost 2026-11 replica names", secret);
        let request_key = blake3::derive_key("toolhost 2026-11 forwarded requests", secret);
        let http = crate::remote::http_client()?;
        let mut cluster = Self {
            me: me.to_owned(),
            key,
            request_key,
            opened: std::sync::Mutex::default(),
            suffix: String::new(),
            http,
        };
        cluster.suffix = format!("@{me}~{}", cluster.seal(me));
        Ok(cluster)
    }

    /// What this replica's ids end with.
    pub(super) fn suffix(&self) -> &str {
        &self.suffix
    }

    /// `HOST:PORT` of this replica.
    pub(crate) fn me(&self) -> &str {
        &self.me
    }

    fn seal(&self, addr: &str) -> String {
        let mac = blake3::keyed_hash(&self.key, addr.as_bytes()).to_hex();
        mac[..12].to_owned()
    }

    /// The replica holding `id` when it is another one: its `HOST:PORT`.
    /// An id with a name the key did not sign is refused.
    pub(super) fn holder(&self, id: &str) -> Result<Option<String>, McpError> {
        let Some((_, named)) = id.rsplit_once('@') else {
            return Ok(None);
        };
        let Some((addr, mac)) = named.split_once('~') else {
            return Ok(None);
        };
        if addr == self.me {
            return Ok(None);
        }
        if !crate::net::same(mac.as_bytes(), self.seal(addr).as_bytes()) {
            return Err(McpError::invalid_params(
                format!(
                    "`{id}` names a replica this cluster did not make; use the id exactly as \
                     a result gave it"
                ),
                None,
            ));
        }
        Ok(Some(addr.to_owned()))
    }

    fn request_mac(&self, route: (&str, &str), principal: &str, time: &str, body: &[u8]) -> String {
        let mut hasher = blake3::Hasher::new_keyed(&self.request_key);
        let (from, to) = route;
        for part in [from, to, principal, time].map(str::as_bytes) {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        hasher.update(body);
        hasher.finalize().to_hex().to_string()
    }

    /// The [`SEAL`] of a request this replica sends to replica `to` for
    /// `principal` with `body`.
    pub(super) fn seal_request(&self, to: &str, principal: &str, body: &[u8]) -> String {
        let secs = unix_secs();
        let time = format!("{secs}.{}", crate::net::random_hex(16));
        let mac = self.request_mac((&self.me, to), principal, &time, body);
        format!("{time}.{mac}")
    }

    /// The principal a forwarded request acts for, if replica `from`
    /// sealed it (`seal`) to this replica for `principal_hex` and `body` within
    /// [`SEAL_FOR`] and it was not opened before; else why not.
    pub(super) fn open_request(
        &self,
        from: &str,
        principal_hex: &str,
        seal: &str,
        body: &[u8],
    ) -> Result<String, String> {
        let principal = hex::decode(principal_hex)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or("its principal is not hex of a name")?;
        let (time, mac) = seal
            .rsplit_once('.')
            .ok_or("its seal is not SECS.NONCE.MAC")?;
        let (secs, nonce) = time
            .split_once('.')
            .ok_or("its seal is not SECS.NONCE.MAC")?;
        let expected = self.request_mac((from, &self.me), &principal, time, body);
        if !crate::net::same(mac.as_bytes(), expected.as_bytes()) {
            return Err(
                "its seal was not made with this cluster's key for this replica and body".into(),
            );
        }
        let secs: u64 = secs
            .parse()
            .map_err(|_| "its seal's time is not a number")?;
        if secs.abs_diff(unix_secs()) > SEAL_FOR.as_secs() {
            return Err(format!(
                "its seal is more than {} s from this replica's clock (are the clocks in step?)",
                SEAL_FOR.as_secs()
            ));
        }
        let now = std::time::Instant::now();
        let mut opened = self
            .opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        opened.retain(|_, until| *until > now);
        if opened
            .insert(nonce.to_owned(), now + 2 * SEAL_FOR)
            .is_some()
        {
            return Err("its seal was used already (a replay)".into());
        }
        Ok(principal)
    }

    /// Send `method` with `params` (its `_meta` included) to the replica at
    /// `addr` for `principal`, sealed; its JSON-RPC result.
    pub(super) async fn forward(
        &self,
        addr: &str,
        principal: &str,
        method: &str,
        name: Option<&str>,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, McpError> {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
                .to_string();
        let seal = self.seal_request(addr, principal, body.as_bytes());
        let mut request = self
            .http
            .post(format!("http://{addr}/mcp"))
            .timeout(FORWARD_TIMEOUT)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header(FORWARDED, &self.me)
            .header(PRINCIPAL, hex::encode(principal.as_bytes()))
            .header(SEAL, seal)
            .body(body);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let gone = |why: String| {
            McpError::invalid_params(
                format!(
                    "this is held by the toolhost replica at {addr}, which does not answer \
                     ({why}): it was drained or is gone, and what it held (background \
                     commands, kept outputs, open questions) ended with it; start again"
                ),
                None,
            )
        };
        let response = request.send().await.map_err(|e| gone(e.to_string()))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| gone(e.to_string()))?;
        // JSON, or an event stream whose last message is the answer.
        let message = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|d| !d.is_empty())
            .unwrap_or(text.trim());
        let answer: serde_json::Value = serde_json::from_str(message)
            .map_err(|_| gone(format!("HTTP {status}, not a JSON-RPC answer")))?;
        if let Some(error) = answer.get("error") {
            return Err(serde_json::from_value(error.clone()).unwrap_or_else(|_| {
                McpError::internal_error(format!("replica {addr}: {error}"), None)
            }));
        }
        answer
            .get("result")
            .cloned()
            .ok_or_else(|| gone(format!("HTTP {status}, an answer without a result")))
    }
}

/// A request marked as forwarded, with the principal its seal names
/// attached (as the `Authorization` of a client's request would be); a 401
/// that says why if no replica of this cluster sealed it.
pub(super) async fn admit_forwarded(
    cluster: Option<&Cluster>,
    request: axum::extract::Request,
) -> Result<axum::extract::Request, axum::response::Response> {
    use axum::response::IntoResponse as _;
    let refuse = |why: String| {
        (
            http::StatusCode::UNAUTHORIZED,
            format!("Unauthorized: a request forwarded by another replica, refused: {why}"),
        )
            .into_response()
    };
    let Some(cluster) = cluster else {
        return Err(refuse(
            "this server is no replica (start it with --replica-addr and --cluster-key-file)"
                .into(),
        ));
    };
    let (mut parts, body) = request.into_parts();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (from, principal, seal) = (header(FORWARDED), header(PRINCIPAL), header(SEAL));
    // Forwarded requests come with their token no more.
    parts.headers.remove(http::header::AUTHORIZATION);
    let body = axum::body::to_bytes(body, MOST_FORWARDED_BYTES)
        .await
        .map_err(|e| refuse(format!("its body could not be read ({e})")))?;
    let principal = cluster
        .open_request(&from, &principal, &seal, &body)
        .map_err(refuse)?;
    parts
        .extensions
        .insert(super::http::Principal(principal.into()));
    Ok(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(body),
    ))
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(me: &str, secret: &[u8]) -> Cluster {
        Cluster::new(me, secret).expect("a cluster")
    }

    /// Two replicas of one cluster.
    fn pair() -> (Cluster, Cluster) {
        let secret = [7u8; 32];
        (
            replica("10.0.0.1:8080", &secret),
            replica("10.0.0.2:8080", &secret),
        )
    }

    #[test]
    fn a_sealed_request_opens_once_for_its_principal_and_body() {
        let (a, b) = pair();
        let body = br#"{"method":"tools/call"}"#;
        let seal = a.seal_request("10.0.0.2:8080", "alice", body);
        let hex = hex::encode(b"alice");
        assert_eq!(
            b.open_request("10.0.0.1:8080", &hex, &seal, body),
            Ok("alice".into())
        );
        let replay = b.open_request("10.0.0.1:8080", &hex, &seal, body);
        assert!(replay.unwrap_err().contains("replay"));
    }

    #[test]
    fn a_seal_binds_the_body_the_principal_the_route_and_the_key() {
        let (a, b) = pair();
        let body = br#"{"method":"tools/call"}"#;
        let seal = a.seal_request("10.0.0.2:8080", "alice", body);
        let alice = hex::encode(b"alice");
        let c = replica("10.0.0.3:8080", &[7u8; 32]);
        let refused = [
            c.open_request("10.0.0.1:8080", &alice, &seal, body),
            b.open_request("10.0.0.1:8080", &alice, &seal, b"{}"),
            b.open_request("10.0.0.1:8080", &hex::encode(b"mallory"), &seal, body),
            b.open_request("10.0.0.3:8080", &alice, &seal, body),
            replica("10.0.0.2:8080", &[8u8; 32]).open_request("10.0.0.1:8080", &alice, &seal, body),
        ];
        for outcome in refused {
            assert!(outcome.unwrap_err().contains("this cluster's key"));
        }
        // Still unopened: the refusals used nothing up.
        assert!(b.open_request("10.0.0.1:8080", &alice, &seal, body).is_ok());
    }

    #[test]
    fn a_stale_seal_is_refused() {
        let a = replica("10.0.0.1:8080", &[7u8; 32]);
        let body = b"{}";
        let time = format!("{}.{}", unix_secs() - 3600, "00".repeat(16));
        let mac = a.request_mac(("10.0.0.1:8080", "10.0.0.1:8080"), "alice", &time, body);
        let outcome = a.open_request(
            "10.0.0.1:8080",
            &hex::encode(b"alice"),
            &format!("{time}.{mac}"),
            body,
        );
        assert!(outcome.unwrap_err().contains("clock"));
    }

    /// A forwarded request of `body`, sealed by `a` for `b` as alice's.
    fn forwarded(a: &Cluster, body: Vec<u8>) -> axum::extract::Request {
        let seal = a.seal_request("10.0.0.2:8080", "alice", &body);
        axum::extract::Request::builder()
            .uri("/mcp")
            .header(FORWARDED, "10.0.0.1:8080")
            .header(PRINCIPAL, hex::encode(b"alice"))
            .header(SEAL, seal)
            .body(axum::body::Body::from(body))
            .expect("a request")
    }

    // A body over the cap is refused before anything else is read or
    // checked, even with a good seal; one at the cap is admitted.
    #[tokio::test]
    async fn a_forwarded_body_over_the_cap_is_refused() {
        let (a, b) = pair();
        let at_cap = vec![b' '; MOST_FORWARDED_BYTES];
        let admitted = admit_forwarded(Some(&b), forwarded(&a, at_cap)).await;
        assert!(admitted.is_ok());
        let over = vec![b' '; MOST_FORWARDED_BYTES + 1];
        let refused = admit_forwarded(Some(&b), forwarded(&a, over))
            .await
            .expect_err("over the cap");
        assert_eq!(refused.status(), http::StatusCode::UNAUTHORIZED);
        let text = axum::body::to_bytes(refused.into_body(), 4096)
            .await
            .expect("body");
        assert!(
            String::from_utf8_lossy(&text).contains("could not be read"),
            "{text:?}"
        );
    }
}
