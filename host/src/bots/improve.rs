//! `improve`: a supervised session in which the agent revises its own
//! persona. Its loop is offered only the persona tools (update_soul,
//! update_identity, manage_goals) and memory search, so it can change
//! nothing but the soul directory; what it changed is written to the
//! audit log as a diff and, in the confirm modes, shown to a person, whose
//! "no" puts every file back as it was.

use super::{Bots, DELEGATED_CHANNEL, LOOP_TIMEOUT, blocking};
use crate::agent::Shape;
use crate::services::{Service, ServiceCall, ServiceError};
use crate::types::confirm::{ConfirmRequest, Decision, Mode};
use crate::types::context::CallContext;
use serde_json::{Value, json};
use std::path::Path;
use toolhost_shared::contract::dir;

/// The tools an improvement session is offered.
const IMPROVE_TOOLS: &[&str] = &[
    "update_soul",
    "update_identity",
    "manage_goals",
    "memory_search",
    "memory_get",
];

/// One persona file as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kept {
    /// There was none.
    Absent,
    /// Its bytes.
    Bytes(Vec<u8>),
    /// It could not be read (too large, not a regular file, a link out):
    /// never touched when putting things back.
    Unreadable,
}

/// The persona files as they are, with update_soul's previous version.
type Snapshot = Vec<(&'static str, Kept)>;

/// The files a session may change and a "no" puts back.
const SNAPSHOT_FILES: &[&str] = &["SOUL.md", "IDENTITY.md", "GOALS.md", "SOUL.previous.md"];

impl Bots {
    pub(super) fn improve(&self) -> Result<Service, String> {
        let bots = self.clone();
        Service::new(
            "improve",
            "Revise your own persona (SOUL.md, IDENTITY.md, GOALS.md) in a supervised session: \
             only the persona tools, every change shown to a person as a diff and, unless the \
             mode is yolo, kept only if they agree. Say what to improve in `focus`.",
            json!({
                "type": "object",
                "properties": {
                    "focus": {"type": "string", "minLength": 1, "description": "What to improve, and why."},
                },
                "required": ["focus"],
                "additionalProperties": false,
            }),
            move |call: ServiceCall| {
                let bots = bots.clone();
                blocking(move || bots.run_improve(&call))
            },
        )
        // Asked before it starts in the confirm modes, as every service
        // call is; what it changed is asked about after.
        .map(|s| s.as_tool("Improve your persona").with_timeout(LOOP_TIMEOUT))
    }

    fn run_improve(&self, call: &ServiceCall) -> Result<Value, ServiceError> {
        let executor = self.executor()?;
        let soul = executor
            .state_dir(dir::SOUL)
            .ok_or_else(|| ServiceError::Failed("this host keeps no soul directory".to_owned()))?
            .to_owned();
        if call.context.channel.as_deref() == Some(DELEGATED_CHANNEL) {
            return Err(ServiceError::Denied(
                "a bot answering a delegation does not change the persona".to_owned(),
            ));
        }
        let before = snapshot(&soul);
        let focus = call.input["focus"].as_str().unwrap_or_default();
        let task = format!(
            "Improve your persona, focusing on: {focus}\n\nIt is in your system prompt. Change \
             only what the focus needs, with update_soul, update_identity and manage_goals, \
             then say what you changed and why."
        );
        let shape = Shape {
            tools: Some(IMPROVE_TOOLS.iter().map(|t| (*t).to_owned()).collect()),
            ..Shape::default()
        };
        let context = CallContext {
            channel: Some("improve".to_owned()),
            ..call.context.clone()
        };
        let outcome = self.run_loop(None, &task, context, shape, &call.cancel)?;
        let after = snapshot(&soul);
        let diff = diff(&before, &after);
        executor.audit(&json!({
            "time": crate::executor::audit::now(),
            "event": "improve",
            "agent": call.context.agent,
            "session": call.context.session,
            "focus": redacted(focus),
            "diff": redacted(&diff),
        }));
        if diff.is_empty() {
            return Ok(json!({"diff": "", "text": format!("Nothing changed. {}", outcome.answer)}));
        }
        if executor.mode() != Mode::Yolo {
            let args = json!({"focus": focus, "diff": diff});
            let asked = ConfirmRequest {
                tool: "improve",
                args: &args,
                reason: "the agent changed its own persona; keep these changes?",
            };
            if executor.confirmer().confirm(&asked) != Decision::Allow {
                restore(&soul, &before);
                return Err(ServiceError::Denied(
                    "a person did not keep the changes (or could not be asked); the persona is \
                     as it was"
                        .to_owned(),
                ));
            }
        }
        Ok(json!({
            "diff": diff,
            "text": format!("{}\n\nChanged:\n{diff}", outcome.answer),
        }))
    }
}

/// `text` with credentials redacted, for the audit log.
fn redacted(text: &str) -> String {
    toolhost_shared::credentials::redact(text).into_owned()
}

/// The persona files under `soul` as they are now.
fn snapshot(soul: &Path) -> Snapshot {
    let dir = cap_std::fs::Dir::open_ambient_dir(soul, cap_std::ambient_authority()).ok();
    SNAPSHOT_FILES
        .iter()
        .map(|name| {
            let kept = match dir
                .as_ref()
                .map(|d| crate::dirs::read_whole(d, Path::new(name), name, 1 << 20))
            {
                Some(Ok(bytes)) => Kept::Bytes(bytes),
                Some(Err(crate::dirs::FileError::NotFound(_))) | None => Kept::Absent,
                Some(Err(_)) => Kept::Unreadable,
            };
            (*name, kept)
        })
        .collect()
}

/// Put every persona file back as `before` had it (never one that could
/// not be read).
fn restore(soul: &Path, before: &Snapshot) {
    let Ok(dir) = cap_std::fs::Dir::open_ambient_dir(soul, cap_std::ambient_authority()) else {
        return;
    };
    for (name, kept) in before {
        let done = match kept {
            Kept::Bytes(bytes) => dir.write(name, bytes),
            Kept::Absent => dir.remove_file(name).or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(e),
            }),
            Kept::Unreadable => Ok(()),
        };
        if let Err(err) = done {
            tracing::warn!(file = name, %err, "cannot put a persona file back");
        }
    }
}

/// What changed between `before` and `after`, as unified diffs (the
/// previous version kept aside is not shown).
fn diff(before: &Snapshot, after: &Snapshot) -> String {
    let bytes = |k: &Kept| match k {
        Kept::Bytes(b) => b.clone(),
        Kept::Absent => Vec::new(),
        Kept::Unreadable => b"(could not be read)\n".to_vec(),
    };
    before
        .iter()
        .zip(after)
        .filter(|((name, old), (_, new))| old != new && !name.ends_with(".previous.md"))
        .map(|((name, old), (_, new))| {
            crate::dynamic::unified_diff(
                &bytes(old),
                &bytes(new),
                &format!("{name} before"),
                &format!("{name} after"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A "no" puts back every persona file, update_soul's previous version
    /// too, and removes the ones the session created.
    #[test]
    fn a_no_puts_back_every_file_and_the_previous_version() {
        let soul = tempfile::tempdir().unwrap();
        let at = |name: &str| soul.path().join(name);
        std::fs::write(at("SOUL.md"), "I am terse.\n").unwrap();
        std::fs::write(at("SOUL.previous.md"), "I was shy.\n").unwrap();
        let before = snapshot(soul.path());
        std::fs::write(at("SOUL.md"), "I am loud.\n").unwrap();
        std::fs::write(at("SOUL.previous.md"), "I am terse.\n").unwrap();
        std::fs::write(at("GOALS.md"), "- take over\n").unwrap();
        let after = snapshot(soul.path());
        let shown = diff(&before, &after);
        assert!(
            shown.contains("+I am loud.") && shown.contains("+- take over"),
            "{shown}"
        );
        assert!(
            !shown.contains("I was shy"),
            "the kept version is not shown: {shown}"
        );
        restore(soul.path(), &before);
        assert_eq!(
            std::fs::read_to_string(at("SOUL.md")).unwrap(),
            "I am terse.\n"
        );
        assert_eq!(
            std::fs::read_to_string(at("SOUL.previous.md")).unwrap(),
            "I was shy.\n"
        );
        assert!(!at("GOALS.md").exists());
        assert_eq!(snapshot(soul.path()), before);
    }

    /// What could not be read is never written or deleted, and a link the
    /// session left is removed without touching what it points at.
    #[test]
    fn restoring_never_follows_a_link_out_or_deletes_what_it_could_not_read() {
        let soul = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.txt");
        std::fs::write(&secret, "the person's own file\n").unwrap();
        // IDENTITY.md is a link out of the soul directory: unreadable here.
        symlink(&secret, soul.path().join("IDENTITY.md")).unwrap();
        let before = snapshot(soul.path());
        assert!(
            before.contains(&("IDENTITY.md", Kept::Unreadable)),
            "{before:?}"
        );
        // The session leaves GOALS.md as a link out too.
        symlink(&secret, soul.path().join("GOALS.md")).unwrap();
        restore(soul.path(), &before);
        assert!(
            std::fs::symlink_metadata(soul.path().join("IDENTITY.md")).is_ok(),
            "an unreadable file is left as it was"
        );
        assert!(std::fs::symlink_metadata(soul.path().join("GOALS.md")).is_err());
        assert_eq!(
            std::fs::read_to_string(&secret).unwrap(),
            "the person's own file\n"
        );
        // A file too large to keep is unreadable too, and left whole.
        let big = "x".repeat((1 << 20) + 1);
        std::fs::write(soul.path().join("SOUL.md"), &big).unwrap();
        let before = snapshot(soul.path());
        assert!(before.contains(&("SOUL.md", Kept::Unreadable)));
        restore(soul.path(), &before);
        assert_eq!(
            std::fs::read_to_string(soul.path().join("SOUL.md"))
                .unwrap()
                .len(),
            big.len()
        );
    }
}
