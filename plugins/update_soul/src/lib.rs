//! The `update_soul` tool (as in the TypeScript bot framework): replace SOUL.md, the agent's
//! personality, tone and rules of behaviour, whole. The version it
//! replaces is kept as SOUL.previous.md, so one bad rewrite loses nothing.

use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::persona;
use toolhost_sdk::export_tool;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};

/// The largest SOUL.md accepted, in bytes: it is read into every prompt.
pub const MAX_BYTES: usize = 32 * 1024;

/// Where the replaced version is kept.
pub const PREVIOUS: &str = "SOUL.previous.md";

/// Arguments of `update_soul`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The whole new SOUL.md (markdown): personality, tone, rules of
    /// behaviour. It replaces the old one entirely.
    pub content: String,
}

/// What was written.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Updated {
    /// The file, relative to the persona directory.
    pub path: String,
    /// Its size now.
    pub bytes: usize,
    /// The size of the version replaced (kept as SOUL.previous.md); 0 when
    /// there was none.
    pub previous_bytes: usize,
}

/// The `update_soul` tool.
pub struct UpdateSoul;

impl Tool for UpdateSoul {
    type Args = Args;
    const NAME: &'static str = "update_soul";
    const TITLE: Option<&'static str> = Some("Rewrite your soul");
    const DESCRIPTION: &'static str = "Rewrite your personality, tone and rules (SOUL.md): \
        `content` replaces it whole (markdown, at most 32 KiB), so send the whole document. \
        The previous version is kept as SOUL.previous.md. Only when the person asks; never put \
        secrets in it.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: contract::dir::SOUL.to_owned(),
            writable: true,
        }]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Updated>())
    }

    fn call(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
        update(&args.content, Path::new(persona::DIR))
    }
}

export_tool!(UpdateSoul);

/// Replace SOUL.md under `root` with `content`.
pub fn update(content: &str, root: &Path) -> Result<Output, ToolError> {
    let root = persona::dir(root)?;
    let content = content.trim();
    if content.is_empty() {
        return Err(ToolError::invalid_input(
            "`content` is empty; send the whole new SOUL.md (an empty soul is not allowed)",
        ));
    }
    if content.len() > MAX_BYTES {
        return Err(ToolError::invalid_input(format!(
            "`content` is {} bytes; SOUL.md may be at most {MAX_BYTES}: keep it to what shapes behaviour",
            content.len()
        )));
    }
    persona::refuse_credentials("content", content)?;
    let _lock = persona::lock(root)?;
    let old = persona::read(root, persona::SOUL)?;
    let text = format!("{content}\n");
    if !old.is_empty() && old != text {
        persona::write(root, PREVIOUS, &old)?;
    }
    persona::write(root, persona::SOUL, &text)?;
    let updated = Updated {
        path: persona::SOUL.to_owned(),
        bytes: text.len(),
        previous_bytes: old.len(),
    };
    let kept = if old.is_empty() {
        String::new()
    } else {
        format!(" (the previous {} bytes are in {PREVIOUS})", old.len())
    };
    Ok(
        Output::text(format!("SOUL.md rewritten: {} bytes{kept}.", updated.bytes))
            .with_structured(&updated),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soul_is_replaced_whole_and_the_old_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        update("# Soul\n\nBe brief.", dir.path()).unwrap();
        let out = update("# Soul\n\nBe warm and thorough.\n\n", dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("SOUL.md")).unwrap(),
            "# Soul\n\nBe warm and thorough.\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(PREVIOUS)).unwrap(),
            "# Soul\n\nBe brief.\n"
        );
        assert_eq!(out.structured().unwrap()["previous_bytes"], 18);
    }

    #[test]
    fn empty_oversized_and_secret_souls_are_refused_and_nothing_changes() {
        let dir = tempfile::tempdir().unwrap();
        update("Be brief.", dir.path()).unwrap();
        let empty = update(" \n ", dir.path()).unwrap_err();
        assert!(empty.to_string().contains("is empty"), "{empty}");
        let big = update(&"x".repeat(MAX_BYTES + 1), dir.path()).unwrap_err();
        assert!(big.to_string().contains("at most 32768"), "{big}");
        let secret =
            update("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", dir.path()).unwrap_err();
        assert!(secret.to_string().contains("never written"), "{secret}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("SOUL.md")).unwrap(),
            "Be brief.\n"
        );
    }

    #[test]
    fn without_the_persona_directory_it_says_how_to_grant_one() {
        let err = update("Be brief.", Path::new("/no/such/soul")).unwrap_err();
        assert!(err.to_string().contains("did not grant"), "{err}");
    }
}
