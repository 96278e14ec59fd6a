//! What the persona tools share (the TypeScript bot framework's soul): the persona directory
//! (`/soul` inside the sandbox, granted read-write to update_soul,
//! update_identity and manage_goals, per agent when a profile sets its
//! own `soul_dir`) and its three files.
//!
//! Every change is a read-modify-write under the directory's lock, written
//! atomically, so concurrent calls never lose an update and a reader never
//! sees half a file.

use crate::lock::DirLock;
use std::path::Path;
use toolhost_sdk::ToolError;

/// Where the persona directory is mounted in the sandbox.
pub const DIR: &str = crate::contract::path::SOUL;
/// Personality, tone and rules of behaviour, replaced whole by update_soul.
pub const SOUL: &str = "SOUL.md";
/// Name, emoji and vibe, kept by update_identity.
pub const IDENTITY: &str = "IDENTITY.md";
/// Goals as markdown checkboxes, kept by manage_goals.
pub const GOALS: &str = "GOALS.md";

/// The persona directory, or a clear failure when the host granted none.
pub fn dir(root: &Path) -> Result<&Path, ToolError> {
    toolhost_sdk::fs::granted_dir(root, "the persona tools")
}

/// The persona directory's lock, held for a whole read-modify-write.
pub fn lock(root: &Path) -> Result<DirLock, ToolError> {
    DirLock::take(
        root,
        "persona",
        "another call is still writing the persona directory",
    )
}

/// `file`'s text in `root`, empty when it does not exist yet.
pub fn read(root: &Path, file: &str) -> Result<String, ToolError> {
    match std::fs::read_to_string(root.join(file)) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(ToolError::failed(format!("cannot read {file}: {e}"))),
    }
}

/// Replace `file` in `root` with `text`, atomically.
pub fn write(root: &Path, file: &str, text: &str) -> Result<(), ToolError> {
    toolhost_sdk::fs::write_atomic_in_dir(&root.join(file), text.as_bytes())
        .map_err(|e| e.context(&format!("cannot write {file}")))
}

/// `text` for `field`, refused if it looks like a credential: the persona
/// is read into every prompt, and a secret must never be.
pub fn refuse_credentials(field: &str, text: &str) -> Result<(), ToolError> {
    match crate::memory::credential_kind(text) {
        Some(kind) => Err(ToolError::denied(format!(
            "`{field}` looks like it contains {kind}; credentials are never written to the persona"
        ))),
        None => Ok(()),
    }
}

/// `text` as one line (runs of whitespace, newlines included, become one
/// space), refused when empty or longer than `max` characters.
pub fn one_line(field: &str, text: &str, max: usize) -> Result<String, ToolError> {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return Err(ToolError::invalid_input(format!(
            "`{field}` is empty; give a value or leave the field out"
        )));
    }
    let n = line.chars().count();
    if n > max {
        return Err(ToolError::invalid_input(format!(
            "`{field}` has {n} characters; at most {max} are allowed"
        )));
    }
    refuse_credentials(field, &line)?;
    Ok(line)
}
