//! Replicas behind a load balancer: a request that names state another
//! replica holds is forwarded to it.
//!
//! A replica started with `--replica-addr HOST:PORT` (where the others
//! reach it) and `--cluster-key-file` (the same secret on every replica)
//! ends the ids it gives out (background commands `s-3`, kept outputs
//! `out-2`, a confirmation's `requestState`) with its own name, signed:
//! `s-3@10.0.0.5:8080~1f2e3d4c5b6a`. A 2026-07-28 request naming another
//! replica's id (in `command_id`, `output_id`, a `toolhost://outputs/` URI
//! or `requestState`) is sent on to that replica with the same
//! credential, and its answer is the answer. Only names the key signed
//! are followed (no request can make a replica call an address of its
//! choosing), a forwarded request is never forwarded again, and a replica
//! that does not answer (drained, gone) is said to be so.

use rmcp::ErrorData as McpError;
use std::time::Duration;

/// The header that marks a forwarded request.
pub(super) const FORWARDED: &str = "toolhost-forwarded";

/// How long a forwarded request may take (a call's own limits apply on
/// the replica that runs it).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(900);

/// This replica among several.
pub struct Cluster {
    /// `HOST:PORT` the other replicas reach this one at.
    me: String,
    /// Derived from the shared secret.
    key: [u8; 32],
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
        let http = crate::remote::http_client()?;
        let mut cluster = Self {
            me: me.to_owned(),
            key,
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

    /// Send `method` with `params` (its `_meta` included) to the replica at
    /// `addr` with the request's own credential; its JSON-RPC result.
    pub(super) async fn forward(
        &self,
        addr: &str,
        authorization: Option<&str>,
        method: &str,
        name: Option<&str>,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, McpError> {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self
            .http
            .post(format!("http://{addr}/mcp"))
            .timeout(FORWARD_TIMEOUT)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header(FORWARDED, &self.me)
            .body(body.to_string());
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
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
