//! What changed in an approved tool since a person approved it. An
//! approval keeps a copy of what was approved (its record as approved and,
//! for a script or a template, its source) beside the trust store, where
//! no plugin can write; a tool whose record or source no longer matches
//! its approval is not loaded, and the review page shows it as changed,
//! with the difference, for a person to approve again or revoke.

use super::{Entry, Kind, Status, Store, approval_digest};
use crate::trust;

/// The copy of the approved record.
const RECORD: &str = "approved.json";
/// The copy of an approved script or template.
const SOURCE: &str = "source";
/// The longest difference shown.
const MOST_DIFF_CHARS: usize = 20_000;

/// Where an approved tool stands against its approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// As approved: loaded.
    Unchanged,
    /// Changed since: not loaded until approved again. The difference,
    /// as a unified diff of the approved and the current record and
    /// source (or why it cannot be shown).
    Changed(String),
}

/// Keep the copies of what `entry` (just approved, with `source`) is.
pub(super) fn keep_approved(entry: &Entry, source: &[u8]) {
    let mut kept = trust::keep_copy(&entry.dir, RECORD, &pretty(&entry.meta, source));
    if matches!(entry.meta.kind, Kind::Javascript | Kind::Command) {
        kept = kept.and_then(|()| trust::keep_copy(&entry.dir, SOURCE, source));
    }
    if let Err(err) = kept {
        tracing::warn!(%err, tool = %entry.meta.name, "cannot keep a copy of what was approved");
    }
}

/// The approved record as people read it (what the approval's digest binds).
fn pretty(meta: &super::Meta, source: &[u8]) -> Vec<u8> {
    let value: serde_json::Value =
        serde_json::from_slice(&approval_digest(meta, source)).unwrap_or_default();
    serde_json::to_vec_pretty(&value).unwrap_or_default()
}

impl Store {
    /// Where the approved tool `entry` stands against its approval; `None`
    /// for a tool not approved.
    pub fn since_approval(&self, entry: &Entry) -> Option<Since> {
        if entry.meta.status != Status::Approved {
            return None;
        }
        let source = std::fs::read(entry.source_path()).unwrap_or_default();
        if trust::is_trusted(&entry.dir, &approval_digest(&entry.meta, &source)) {
            return Some(Since::Unchanged);
        }
        let Some(record) = trust::kept_copy(&entry.dir, RECORD) else {
            return Some(Since::Changed(
                "(what was approved was not kept: it was approved before toolhost kept copies, \
                 or its approval was recorded elsewhere)"
                    .to_owned(),
            ));
        };
        let mut diff = unified(&record, &pretty(&entry.meta, &source), "record");
        if let Some(old) = trust::kept_copy(&entry.dir, SOURCE) {
            diff.push_str(&unified(&old, &source, "source"));
        }
        if diff.chars().count() > MOST_DIFF_CHARS {
            diff = diff.chars().take(MOST_DIFF_CHARS).collect();
            diff.push_str("\n[the difference goes on; compare the store's files]");
        }
        Some(Since::Changed(diff))
    }
}

/// `old` → `new` as a unified diff of their lines, headed by `what`.
fn unified(old: &[u8], new: &[u8], what: &str) -> String {
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("{what} as approved"), &format!("{what} now"))
        .to_string()
}
