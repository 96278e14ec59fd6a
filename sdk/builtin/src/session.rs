//! State kept per session (todo_manager's plan, react's scratchpad): one
//! file per session in the tool's state directory.

use std::path::{Path, PathBuf};

/// The file of `session` in `dir`: `default.EXT` without one, else a
/// readable prefix of the session id and a hash of all of it (so ids that
/// differ only in unsafe characters or length never share a file).
///
/// ```
/// use std::path::Path;
/// use toolhost_builtin::session::file;
/// assert_eq!(file(Path::new("/todo"), None, "json"), Path::new("/todo/default.json"));
/// let a = file(Path::new("/todo"), Some("chat/1"), "json");
/// let b = file(Path::new("/todo"), Some("chat_1"), "json");
/// assert_ne!(a, b);
/// assert!(a.to_string_lossy().starts_with("/todo/s-chat_1-"));
/// ```
pub fn file(dir: &Path, session: Option<&str>, ext: &str) -> PathBuf {
    let Some(session) = session else {
        return dir.join(format!("default.{ext}"));
    };
    let prefix: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let hash = xxhash_rust::xxh3::xxh3_64(session.as_bytes());
    dir.join(format!("s-{prefix}-{hash:016x}.{ext}"))
}
