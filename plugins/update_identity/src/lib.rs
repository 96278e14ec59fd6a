//! The `update_identity` tool (as in the TypeScript bot framework): change the agent's name, emoji or
//! vibe in IDENTITY.md; at least one, the others kept. Lines of the file
//! that are not one of the three are kept as they are.

use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::persona;
use toolhost_sdk::export_tool;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};

/// Arguments of `update_identity`: at least one field.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
pub struct Args {
    /// The new name (one line, at most 64 characters).
    #[serde(default)]
    pub name: Option<String>,
    /// The new emoji (at most 8 characters, no spaces).
    #[serde(default)]
    pub emoji: Option<String>,
    /// The new vibe: how you come across, in a few words (one line, at most
    /// 200 characters).
    #[serde(default)]
    pub vibe: Option<String>,
}

/// The identity after the call.
#[derive(Debug, Default, Serialize, JsonSchema, PartialEq, Eq)]
pub struct Identity {
    /// The name, if one is set.
    pub name: Option<String>,
    /// The emoji, if one is set.
    pub emoji: Option<String>,
    /// The vibe, if one is set.
    pub vibe: Option<String>,
    /// The fields this call changed.
    pub changed: Vec<String>,
}

/// The `update_identity` tool.
pub struct UpdateIdentity;

impl Tool for UpdateIdentity {
    type Args = Args;
    const NAME: &'static str = "update_identity";
    const TITLE: Option<&'static str> = Some("Change your identity");
    const DESCRIPTION: &'static str = "Change your name, emoji or vibe (how you come across) in \
        IDENTITY.md. Give at least one of `name`, `emoji`, `vibe`; the fields you leave out \
        keep their values. Use it when the person gives you a new name or asks you to \
        present yourself differently.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: contract::dir::SOUL.to_owned(),
            writable: true,
        }]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Identity>())
    }

    fn call(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
        update(args, Path::new(persona::DIR))
    }
}

export_tool!(UpdateIdentity);

/// The three fields: their key in `Args`, their label in the file, and
/// the longest value accepted.
const FIELDS: [(&str, &str, usize); 3] = [
    ("name", "Name", 64),
    ("emoji", "Emoji", 8),
    ("vibe", "Vibe", 200),
];

/// Apply `args` to IDENTITY.md under `root`.
pub fn update(args: Args, root: &Path) -> Result<Output, ToolError> {
    let root = persona::dir(root)?;
    let given = [args.name, args.emoji, args.vibe];
    if given.iter().all(Option::is_none) {
        return Err(ToolError::invalid_input(
            "give at least one of `name`, `emoji` or `vibe`; the others keep their values",
        ));
    }
    let mut values = [None, None, None];
    for (n, value) in given.iter().enumerate() {
        if let Some(value) = value {
            let (key, _, max) = FIELDS[n];
            let value = persona::one_line(key, value, max)?;
            if key == "emoji" && value.contains(' ') {
                return Err(ToolError::invalid_input(
                    "`emoji` has spaces; give one emoji (or a short sequence of them) without spaces",
                ));
            }
            values[n] = Some(value);
        }
    }
    let _lock = persona::lock(root)?;
    let old = persona::read(root, persona::IDENTITY)?;
    let mut lines: Vec<String> = if old.trim().is_empty() {
        vec!["# Identity".to_owned(), String::new()]
    } else {
        old.lines().map(str::to_owned).collect()
    };
    let mut identity = Identity::default();
    for (n, (key, label, _)) in FIELDS.iter().enumerate() {
        let at = position_of(&lines, label);
        let current = at.and_then(|i| field_of(&lines[i]).map(|(_, v)| v.to_owned()));
        let value = match values[n].take() {
            Some(new) => {
                if current.as_deref() != Some(new.as_str()) {
                    identity.changed.push((*key).to_owned());
                }
                let line = format!("- **{label}:** {new}");
                match at {
                    Some(i) => lines[i] = line,
                    None => {
                        // In the fields' order: after the one before it,
                        // else before the first, else at the end.
                        let at = FIELDS[..n]
                            .iter()
                            .rev()
                            .find_map(|(_, l, _)| position_of(&lines, l))
                            .map(|i| i + 1)
                            .or_else(|| lines.iter().position(|l| field_of(l).is_some()))
                            .unwrap_or(lines.len());
                        lines.insert(at, line);
                    }
                }
                Some(new)
            }
            None => current.filter(|v| !v.is_empty()),
        };
        match n {
            0 => identity.name = value,
            1 => identity.emoji = value,
            _ => identity.vibe = value,
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    if text != old {
        persona::write(root, persona::IDENTITY, &text)?;
    }
    Ok(Output::text(render(&identity)).with_structured(&identity))
}

/// The line of field `label`, if the file has one.
fn position_of(lines: &[String], label: &str) -> Option<usize> {
    lines
        .iter()
        .position(|l| field_of(l).is_some_and(|(k, _)| k.eq_ignore_ascii_case(label)))
}

/// `- **Label:** value` → (Label, value).
fn field_of(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix("- **")?;
    let (label, value) = rest.split_once(":**")?;
    Some((label.trim(), value.trim()))
}

fn render(identity: &Identity) -> String {
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not set)".to_owned());
    let changed = if identity.changed.is_empty() {
        "nothing changed (the values were already set)".to_owned()
    } else {
        format!("changed {}", identity.changed.join(", "))
    };
    format!(
        "Identity updated, {changed}.\nName: {}\nEmoji: {}\nVibe: {}\n",
        show(&identity.name),
        show(&identity.emoji),
        show(&identity.vibe)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(name: Option<&str>, emoji: Option<&str>, vibe: Option<&str>) -> Args {
        Args {
            name: name.map(str::to_owned),
            emoji: emoji.map(str::to_owned),
            vibe: vibe.map(str::to_owned),
        }
    }

    #[test]
    fn at_least_one_field_is_required() {
        let dir = tempfile::tempdir().unwrap();
        let err = update(Args::default(), dir.path()).unwrap_err();
        assert!(err.to_string().contains("at least one of `name`"), "{err}");
        assert!(!dir.path().join("IDENTITY.md").exists());
    }

    #[test]
    fn fields_left_out_keep_their_values_and_other_lines_stay() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("IDENTITY.md"),
            "# Identity\n\nWritten by hand.\n\n- **Name:** Nova\n- **Vibe:** calm\n",
        )
        .unwrap();
        let out = update(args(None, Some("🦊"), Some("warm, direct")), dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("IDENTITY.md")).unwrap(),
            "# Identity\n\nWritten by hand.\n\n- **Name:** Nova\n- **Emoji:** 🦊\n- **Vibe:** warm, direct\n"
        );
        let s = out.structured().unwrap();
        assert_eq!(s["name"], "Nova");
        assert_eq!(s["changed"], serde_json::json!(["emoji", "vibe"]));
    }

    #[test]
    fn a_new_file_is_made_and_bad_values_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        update(args(Some("  Ada \n"), None, None), dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("IDENTITY.md")).unwrap(),
            "# Identity\n\n- **Name:** Ada\n"
        );
        for (bad, says) in [
            (args(Some(""), None, None), "`name` is empty"),
            (args(None, Some("🦊 🐺"), None), "without spaces"),
            (args(None, None, Some(&"v".repeat(201))), "at most 200"),
            (
                args(Some("sk-abcdefghijklmnopqrstuvwxyz"), None, None),
                "never written",
            ),
        ] {
            let err = update(bad, dir.path()).unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("IDENTITY.md")).unwrap(),
            "# Identity\n\n- **Name:** Ada\n"
        );
    }

    #[test]
    fn concurrent_updates_of_different_fields_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::thread::scope(|s| {
            let d = dir.path();
            s.spawn(move || update(args(Some("Ada"), None, None), d).unwrap());
            s.spawn(move || update(args(None, Some("🦉"), None), d).unwrap());
            s.spawn(move || update(args(None, None, Some("curious")), d).unwrap());
        });
        let text = std::fs::read_to_string(dir.path().join("IDENTITY.md")).unwrap();
        for line in ["- **Name:** Ada", "- **Emoji:** 🦉", "- **Vibe:** curious"] {
            assert!(text.contains(line), "{text}");
        }
    }
}
