//! Decisions about dynamic tools on the record: who approved, rejected or
//! revoked which tool, having reviewed what, through which channel. Each
//! is kept beside the tool (`decisions.jsonl` in its directory, which
//! `toolhost dynamic show` prints) and, when an audit log is kept, written
//! there too ([`crate::Executor::record_decision`]).

use super::{Entry, Store, review_digest};
use serde::{Deserialize, Serialize};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;

/// The file beside a tool that holds its decisions.
const HISTORY_FILE: &str = "decisions.jsonl";

/// Who decided, and through what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decider {
    /// `cli`, `review page` or `mcp elicitation`.
    pub channel: &'static str,
    /// Who: the user running the CLI (`uid 1000 (alice)`), or the review
    /// page's sign-in (`sign-in 3f2a…`).
    pub by: String,
}

impl Decider {
    /// The person running this process, at its terminal.
    pub fn cli() -> Self {
        let uid = rustix::process::getuid().as_raw();
        let name = std::env::var("USER").or_else(|_| std::env::var("LOGNAME"));
        Self {
            channel: "cli",
            by: match name {
                Ok(name) if !name.is_empty() => format!("uid {uid} ({name})"),
                _ => format!("uid {uid}"),
            },
        }
    }

    /// A browser signed in to the review page, as `sign_in` names it.
    pub fn review_page(sign_in: &str) -> Self {
        Self {
            channel: "review page",
            by: sign_in.to_owned(),
        }
    }
}

/// One decision about a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// When (RFC 3339, UTC).
    pub time: String,
    /// Always `decision` (audit lines of calls have none).
    pub event: String,
    /// `approve`, `reject`, `revoke` (the rejection of an approved tool),
    /// or `decline` (of an agent's request about an approved tool).
    pub decision: String,
    /// The tool's name.
    pub tool: String,
    /// The tool's id.
    pub tool_id: String,
    /// The digest of the record and source decided on
    /// ([`review_digest`]), which the review page also shows.
    pub reviewed: String,
    /// What the tool asked for.
    pub requested: Vec<String>,
    /// What it was granted (approvals).
    pub granted: Option<Vec<String>>,
    /// Through what: `cli`, `review page`, ...
    pub channel: String,
    /// Who.
    pub by: String,
    /// Why, when a reason was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Decision {
    /// The decision `what` on `before` (the tool as it was decided on),
    /// which became `after`.
    pub(super) fn new(what: &str, before: &Entry, after: &Entry, decider: &Decider) -> Self {
        let source = std::fs::read(before.source_path()).unwrap_or_default();
        Self {
            time: super::now(),
            event: "decision".to_owned(),
            decision: what.to_owned(),
            tool: after.meta.name.clone(),
            tool_id: after.meta.id.clone(),
            reviewed: review_digest(&before.meta, &source),
            requested: before.meta.capabilities.clone(),
            granted: after.meta.grant.clone(),
            channel: decider.channel.to_owned(),
            by: decider.by.clone(),
            reason: after.meta.reason.clone(),
        }
    }
}

impl Store {
    /// [`Store::approve_seen`], on the record as `decider`'s.
    pub fn approve_as(
        &self,
        runtime: &crate::runtime::Runtime,
        registry: &crate::registry::Registry,
        id_or_name: &str,
        grant: Option<Vec<String>>,
        seen: Option<&str>,
        decider: &Decider,
    ) -> Result<(Entry, Decision), super::DynamicError> {
        let before = self.find(id_or_name)?;
        // The digest of what is decided on, read before anything changes.
        let decision = Decision::new("approve", &before, &before, decider);
        let after = self.approve_seen(runtime, registry, &before.meta.id, grant, seen)?;
        let decision = Decision {
            granted: after.meta.grant.clone(),
            ..decision
        };
        keep(&after, &decision);
        Ok((after, decision))
    }

    /// [`Store::reject`], on the record as `decider`'s: a `revoke` when the
    /// tool was approved.
    pub fn reject_as(
        &self,
        id_or_name: &str,
        reason: Option<String>,
        decider: &Decider,
    ) -> Result<(Entry, Decision), super::DynamicError> {
        let before = self.find(id_or_name)?;
        let what = match before.meta.status {
            toolhost_shared::dynamic::Status::Approved => "revoke",
            _ => "reject",
        };
        let decision = Decision::new(what, &before, &before, decider);
        let after = self.reject(&before.meta.id, reason)?;
        let decision = Decision {
            granted: None,
            reason: after.meta.reason.clone(),
            ..decision
        };
        keep(&after, &decision);
        Ok((after, decision))
    }

    /// The decisions about `entry`, oldest first.
    pub fn history(&self, entry: &Entry) -> Vec<Decision> {
        std::fs::read_to_string(entry.dir.join(HISTORY_FILE))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }
}

/// Append `decision` to the history beside `entry`; a failure is logged
/// (the decision itself is made).
pub(super) fn keep(entry: &Entry, decision: &Decision) {
    let path = entry.dir.join(HISTORY_FILE);
    let written = serde_json::to_string(decision)
        .map_err(std::io::Error::other)
        .and_then(|mut line| {
            line.push('\n');
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(&path)?
                .write_all(line.as_bytes())
        });
    if let Err(err) = written {
        tracing::warn!(path = %path.display(), %err, "cannot keep a decision beside its tool");
    }
}
