//! The `save_memory` tool (as in the TypeScript bot framework): append a fact to today's memory log,
//! `YYYY-MM-DD.md` in the memory directory; never a credential, never a
//! fact already stored, one call at a time.

use std::io::Write as _;
use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::lock::DirLock;
use toolhost_builtin::memory;
use toolhost_sdk::export_tool;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};

/// Arguments of `save_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// One fact worth remembering across sessions, in a sentence.
    pub fact: String,
}

/// Where the fact went.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Saved {
    /// The memory file, relative to the memory directory.
    pub path: String,
    /// The fact's line in it.
    pub line: usize,
    /// The fact was stored before (at `path`, `line`): nothing was written.
    pub already_stored: bool,
}

/// The `save_memory` tool.
pub struct SaveMemory;

impl Tool for SaveMemory {
    type Args = Args;
    const NAME: &'static str = "save_memory";
    const TITLE: Option<&'static str> = Some("Save a memory");
    const DESCRIPTION: &'static str = "Remember one fact across sessions (a preference, a \
        decision, where something lives), appended with the time to today's memory log; a fact \
        already stored is not saved twice. One self-contained sentence. Secrets (keys, tokens, \
        passwords, phone numbers) are refused. Find facts with memory_search.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: contract::dir::MEMORY.to_owned(),
            writable: true,
        }]
    }

    fn output_schema() -> Option<toolhost_sdk::Value> {
        Some(toolhost_sdk::json_schema::<Saved>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        let zone = ctx
            .setting::<String>(contract::setting::TIMEZONE)
            .and_then(|z| jiff::tz::TimeZone::get(&z).ok())
            .unwrap_or(jiff::tz::TimeZone::UTC);
        save(
            &args.fact,
            Path::new(memory::DIR),
            &jiff::Timestamp::now().to_zoned(zone),
        )
    }
}

export_tool!(SaveMemory);

/// Append `fact` to the log of `now`'s day under `root`.
pub fn save(fact: &str, root: &Path, now: &jiff::Zoned) -> Result<Output, ToolError> {
    let root = memory::dir(root)?;
    let fact = fact.split_whitespace().collect::<Vec<_>>().join(" ");
    if fact.is_empty() {
        return Err(ToolError::invalid_input(
            "`fact` is empty; give one sentence to remember",
        ));
    }
    if fact.chars().count() > memory::MAX_FACT_CHARS {
        return Err(ToolError::invalid_input(format!(
            "`fact` is longer than {} characters; save the essential sentence, or several facts",
            memory::MAX_FACT_CHARS
        )));
    }
    if let Some(kind) = memory::credential_kind(&fact) {
        return Err(ToolError::denied(format!(
            "not saved: the fact looks like it contains {kind}, and credentials are never written to memory; \
             save what the secret is for (e.g. \"the staging API key is in the team vault\") instead"
        )));
    }
    if memory::has_phone_number(&fact) {
        return Err(ToolError::denied(
            "not saved: the fact holds a phone number, and phone numbers are never written to \
             memory; save who the contact is and where their number is kept instead",
        ));
    }
    // One call at a time: the check for the same fact and the append
    // must not interleave with another call's.
    let _lock = DirLock::take(
        root,
        "save_memory",
        "another save_memory call is still writing the memory log",
    )?;
    if let Some((path, line)) = stored(root, &fact)? {
        return Ok(Output::text(format!(
            "Already remembered in {path} line {line}; nothing was saved."
        ))
        .with_structured(&Saved {
            path,
            line,
            already_stored: true,
        }));
    }
    let name = format!("{}.md", now.strftime("%Y-%m-%d"));
    let path = root.join(&name);
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(ToolError::failed(format!("cannot read {name}: {e}"))),
    };
    let mut entry = String::new();
    let mut line = existing.lines().count() + 1;
    if existing.is_empty() {
        entry.push_str(&format!("# Memory {}\n\n", now.strftime("%Y-%m-%d")));
        line = 3;
    } else if !existing.ends_with('\n') {
        entry.push('\n');
    }
    entry.push_str(&format!("- {} {fact}\n", now.strftime("%H:%M")));
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(entry.as_bytes()))
        .map_err(|e| ToolError::failed(format!("cannot write {name}: {e}")))?;
    let saved = Saved {
        path: name,
        line,
        already_stored: false,
    };
    Ok(
        Output::text(format!("Saved to {} line {}.", saved.path, saved.line))
            .with_structured(&saved),
    )
}

/// `text`'s words, lowercase, without punctuation: how two facts are
/// compared.
fn words(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where `fact` is stored already, if it is: a log line `- HH:MM FACT`
/// with the same words, whatever their case and punctuation.
fn stored(root: &Path, fact: &str) -> Result<Option<(String, usize)>, ToolError> {
    let wanted = words(fact);
    for (path, text) in memory::files(root)? {
        for (n, line) in text.lines().enumerate() {
            let Some(rest) = line.strip_prefix("- ") else {
                continue;
            };
            let said = rest.split_once(' ').map_or("", |(_, f)| f);
            if words(said) == wanted {
                return Ok(Some((path, n + 1)));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> jiff::Zoned {
        text.parse().unwrap()
    }

    #[test]
    fn facts_are_appended_to_the_daily_log() {
        let dir = tempfile::tempdir().unwrap();
        let now = at("2026-11-22T09:30:00+00:00[UTC]");
        let first = save("The user prefers tabs", dir.path(), &now).unwrap();
        assert_eq!(first.structured().unwrap()["line"], 3);
        let second = save("Deploys\nhappen on Fridays", dir.path(), &now).unwrap();
        assert_eq!(second.structured().unwrap()["line"], 4);
        let text = std::fs::read_to_string(dir.path().join("2026-11-22.md")).unwrap();
        assert_eq!(
            text,
            "# Memory 2026-11-22\n\n- 09:30 The user prefers tabs\n- 09:30 Deploys happen on Fridays\n"
        );
    }

    #[test]
    fn a_fact_stored_already_is_reported_not_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let now = at("2026-11-22T09:30:00+00:00[UTC]");
        save("The user prefers tabs", dir.path(), &now).unwrap();
        let later = at("2026-11-23T10:00:00+00:00[UTC]");
        let again = save("the user  PREFERS tabs", dir.path(), &later).unwrap();
        let s = again.structured().unwrap();
        assert_eq!(s["already_stored"], true);
        assert_eq!(
            (s["path"].as_str(), s["line"].as_u64()),
            (Some("2026-11-22.md"), Some(3))
        );
        assert!(!dir.path().join("2026-11-23.md").exists());
        assert!(
            !dir.path().join(".save_memory.lock").exists(),
            "the lock is let go"
        );
        let other = save("The user prefers tabs to spaces", dir.path(), &later).unwrap();
        assert_eq!(other.structured().unwrap()["already_stored"], false);
    }

    #[test]
    fn concurrent_saves_keep_every_fact_once() {
        let dir = tempfile::tempdir().unwrap();
        let now = at("2026-11-22T09:30:00+00:00[UTC]");
        std::thread::scope(|s| {
            for i in 0..8 {
                let (dir, now) = (dir.path(), &now);
                s.spawn(move || {
                    save(&format!("fact number {i}"), dir, now).unwrap();
                    save(&format!("fact number {i}"), dir, now).unwrap();
                });
            }
        });
        let text = std::fs::read_to_string(dir.path().join("2026-11-22.md")).unwrap();
        assert_eq!(
            text.lines().filter(|l| l.starts_with("- ")).count(),
            8,
            "{text}"
        );
    }

    #[test]
    fn credentials_are_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let now = at("2026-11-22T09:30:00+00:00[UTC]");
        let err = save(
            "the key is sk-abcdefghijklmnopqrstuvwxyz123456",
            dir.path(),
            &now,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("credentials are never written"),
            "{err}"
        );
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[test]
    fn phone_numbers_are_refused_and_near_duplicates_are_known() {
        let dir = tempfile::tempdir().unwrap();
        let now = at("2026-11-22T09:30:00+00:00[UTC]");
        for fact in [
            "Ana's mobile is +34 612 345 678",
            "call the plumber at (415) 555-0100",
        ] {
            let err = save(fact, dir.path(), &now).unwrap_err();
            assert!(
                err.to_string().contains("phone numbers are never written"),
                "{err}"
            );
        }
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        save("The deploy runs on Fridays.", dir.path(), &now).unwrap();
        let again = save("the deploy runs on fridays", dir.path(), &now).unwrap();
        assert!(
            again.content().contains("Already remembered"),
            "{}",
            again.content()
        );
        // A date and a room number are no phone number.
        save(
            "Met Ana on 2026-11-28 at 10:30 in room 101.",
            dir.path(),
            &now,
        )
        .unwrap();
    }
}
