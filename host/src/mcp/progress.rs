//! Progress notes of a running call: news when there is some, a sign of life when there is none.

use super::*;

/// How often a call with a progress token looks for news.
pub(super) const PROGRESS_LOOK: Duration = Duration::from_millis(250);
/// The longest a call with a progress token goes without a notification.
pub(super) const PROGRESS_QUIET: Duration = Duration::from_secs(4);

/// The progress notifications of one call: one when the call has news,
/// and one at least every [`PROGRESS_QUIET`] while it runs, so a client
/// whose timeout resets on progress keeps waiting.
pub(super) struct Notes {
    tool: String,
    token: ProgressToken,
    progress: Progress,
    started: std::time::Instant,
    pub(super) last_sent: std::time::Instant,
    seen: u64,
    /// The last `progress` value sent: each must be greater.
    last: f64,
}

impl Notes {
    pub(super) fn new(tool: &str, token: ProgressToken, progress: Progress) -> Self {
        let now = std::time::Instant::now();
        Self {
            tool: tool.to_owned(),
            token,
            progress,
            started: now,
            last_sent: now,
            seen: 0,
            last: 0.0,
        }
    }

    /// The notification to send now, if any.
    pub(super) fn next(&mut self) -> Option<ProgressNotificationParam> {
        let state = self.progress.snapshot();
        let news = state.seq != self.seen;
        if !news && self.last_sent.elapsed() < PROGRESS_QUIET {
            return None;
        }
        self.seen = state.seq;
        self.last_sent = std::time::Instant::now();
        let running = format!(
            "{} running for {} s",
            self.tool,
            self.started.elapsed().as_secs()
        );
        let message = match state.message {
            Some(m) if news => m,
            Some(m) => format!("{running}; last: {m}"),
            None => running,
        };
        // Counted work reports its count (a hair more when there is no
        // news: the value must grow); other work a growing number.
        let (progress, total) = match (state.done, state.total) {
            (Some(done), Some(total)) => ((done as f64).max(self.last + 0.001), Some(total as f64)),
            _ => (self.last + 1.0, None),
        };
        self.last = progress;
        let mut note =
            ProgressNotificationParam::new(self.token.clone(), progress).with_message(message);
        note.total = total;
        Some(note)
    }
}
