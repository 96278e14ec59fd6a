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
    /// source; `whole` is false when it is too long to show in full (then
    /// it can only be revoked, or approved after a look at the store).
    Changed {
        /// The difference.
        diff: String,
        /// Whether all of it is shown.
        whole: bool,
    },
    /// Its record says approved, but no approval of it is on record (none
    /// matches, and no copy of one was kept): written so by something
    /// with the store's access, or approved before copies were kept. Not
    /// loaded; it can only be revoked (or created again for review).
    Unrecorded,
}

/// Keep the copies of what `entry` (just approved, with `source`) is.
pub(super) fn keep_approved(entry: &Entry, source: &[u8]) {
    let mut kept = trust::keep_copy(&entry.dir, RECORD, &pretty(&entry.meta, source));
    if entry.meta.kind != Kind::Component {
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
            return Some(Since::Unrecorded);
        };
        let mut diff = unified(&record, &pretty(&entry.meta, &source), "record");
        if let Some(old) = trust::kept_copy(&entry.dir, SOURCE) {
            diff.push_str(&unified(&old, &source, "source"));
        }
        let whole = diff.chars().count() <= MOST_DIFF_CHARS
            && source.len() <= MOST_COMPARED
            && record.len() <= MOST_COMPARED;
        if !whole {
            diff = diff.chars().take(MOST_DIFF_CHARS).collect();
            diff.push_str("\n[the difference goes on; compare the store's files]");
        }
        Some(Since::Changed { diff, whole })
    }

    /// The grant a person last approved `entry` with, from the copy kept
    /// beside the trust store (never from its record, which a plugin can
    /// write).
    pub fn approved_grant(&self, entry: &Entry) -> Option<Vec<String>> {
        let record = trust::kept_copy(&entry.dir, RECORD)?;
        let record: serde_json::Value = serde_json::from_slice(&record).ok()?;
        serde_json::from_value(record["grant"].clone()).ok()
    }
}

/// The most bytes of each side compared: a script or template is far
/// smaller; past it the difference is not shown whole.
const MOST_COMPARED: usize = 256 * 1024;

/// `old` → `new` as a unified diff of their lines, headed by `what`;
/// bounded in the bytes compared and in time (a second).
fn unified(old: &[u8], new: &[u8], what: &str) -> String {
    unified_diff(
        old,
        new,
        &format!("{what} as approved"),
        &format!("{what} now"),
    )
}

/// `old` → `new` as a unified diff of their lines headed `before` and
/// `after`, bounded in the bytes compared (256 KiB a side) and in time (a
/// second).
pub(crate) fn unified_diff(old: &[u8], new: &[u8], before: &str, after: &str) -> String {
    let cut = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(MOST_COMPARED)]).into_owned();
    let (old, new) = (cut(old), cut(new));
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(1))
        .diff_lines(old.as_str(), new.as_str())
        .unified_diff()
        .context_radius(3)
        .header(before, after)
        .to_string()
}
