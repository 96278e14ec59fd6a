//! Session history (the bot framework's memory manager indexes it): each
//! `toolhost agent` run appends its task and answer to
//! `sessions/DATE.md` in the memory directory, where memory_search finds
//! it beside what save_memory kept.

use super::Executor;
use std::io::Write as _;
use std::path::Path;
use toolhost_shared::contract::dir;

/// The most characters of a task or an answer kept in the history.
const MOST_CHARS: usize = 4_000;

/// One run, as the history keeps it.
pub struct Exchange<'a> {
    /// The agent it ran as, if any.
    pub agent: Option<&'a str>,
    /// Its session, if any.
    pub session: Option<&'a str>,
    /// What the person asked.
    pub task: &'a str,
    /// What the model answered (or why the run stopped).
    pub answer: &'a str,
    /// How it ended (`answered`, `cancelled`, ...).
    pub stop: &'a str,
}

impl Executor {
    /// Append `exchange` to today's session history in the memory
    /// directory (created on first use), credentials redacted and long
    /// texts cut; written beneath that directory only. A failure is
    /// logged: the run already happened.
    pub fn record_exchange(&self, exchange: &Exchange<'_>) {
        let Some((path, _)) = self.state_dirs.get(dir::MEMORY) else {
            return;
        };
        if let Err(err) = self.append_exchange(path, exchange) {
            tracing::warn!(
                dir = %path.display(),
                %err,
                "cannot keep the session history"
            );
        }
    }

    fn append_exchange(&self, path: &Path, exchange: &Exchange<'_>) -> std::io::Result<()> {
        self.ensure_state_dir(path)?;
        let memory = cap_std::fs::Dir::open_ambient_dir(path, cap_std::ambient_authority())?;
        memory.create_dir_all("sessions")?;
        let now = crate::executor::audit::now();
        let day = now.get(..10).unwrap_or("undated");
        let mut options = cap_std::fs::OpenOptions::new();
        options.append(true).create(true);
        let mut file = memory.open_with(format!("sessions/{day}.md"), &options)?;
        let who = [
            exchange.agent.map(|a| format!("agent {a}")),
            exchange.session.map(|s| format!("session {s}")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
        let who = if who.is_empty() {
            String::new()
        } else {
            format!(" ({who})")
        };
        let text = format!(
            "\n## {now}{who}: {}\n\nTask: {}\n\nAnswer: {}\n",
            exchange.stop,
            kept(exchange.task),
            kept(exchange.answer),
        );
        file.write_all(text.as_bytes())
    }
}

/// `text` as the history keeps it: one paragraph, credentials redacted, cut.
fn kept(text: &str) -> String {
    let text = toolhost_shared::credentials::redact(text.trim());
    let mut text: String = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    if let Some((at, _)) = text.char_indices().nth(MOST_CHARS) {
        text.truncate(at);
        text.push_str(" […]");
    }
    text
}
