//! The persona an agent keeps — SOUL.md, IDENTITY.md and GOALS.md in the
//! soul directory, written by update_soul, update_identity and
//! manage_goals — read for the model to see: in `toolhost agent`'s system
//! prompt, and over MCP as resources and the `persona` prompt.

use super::Executor;
use std::path::Path;
use toolhost_shared::contract::dir;

/// The persona files, in the order they are shown.
pub const PERSONA_FILES: &[&str] = &["SOUL.md", "IDENTITY.md", "GOALS.md"];

/// The most bytes of one persona file read (update_soul keeps SOUL.md far
/// smaller); a larger one is left out, and the prompt says so.
const MOST_BYTES: u64 = 64 * 1024;

impl Executor {
    /// The persona files that hold text, with it: `(file name, text)`. Read
    /// beneath the soul directory only (no symlink leads out, no FIFO
    /// hangs the read); a file too large or not text is said to be so.
    pub fn persona(&self) -> Vec<(&'static str, String)> {
        match self.state_dirs.get(dir::SOUL) {
            Some((path, _)) => persona_in(path),
            None => Vec::new(),
        }
    }

    /// The persona as one block of a system prompt, or `None` when there
    /// is none.
    pub fn persona_prompt(&self) -> Option<String> {
        prompt(self.persona())
    }
}

/// The persona files in the soul directory `path` that hold text (see
/// [`Executor::persona`]).
pub fn persona_in(path: &Path) -> Vec<(&'static str, String)> {
    let Ok(soul) = cap_std::fs::Dir::open_ambient_dir(path, cap_std::ambient_authority()) else {
        return Vec::new();
    };
    PERSONA_FILES
        .iter()
        .filter_map(|name| {
            let text = match crate::dirs::read_whole(&soul, Path::new(name), name, MOST_BYTES) {
                Ok(bytes) => String::from_utf8(bytes)
                    .unwrap_or_else(|_| format!("({name} is not UTF-8 text; not shown)")),
                Err(crate::dirs::FileError::TooLarge(_)) => {
                    format!("({name} is over {MOST_BYTES} bytes; not shown)")
                }
                Err(_) => return None,
            };
            (!text.trim().is_empty()).then_some((*name, text))
        })
        .collect()
}

/// `files` as one block of a system prompt, or `None` when there are none.
pub fn prompt(files: Vec<(&'static str, String)>) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Your persona, as you keep it (update_soul, update_identity and manage_goals change it):",
    );
    for (name, body) in files {
        text.push_str(&format!("\n\n## {name}\n\n{}", body.trim_end()));
    }
    Some(text)
}
