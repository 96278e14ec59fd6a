//! The `log` import: a plugin's log lines, forwarded to tracing with the
//! tool's name, the call's id and its session (a line over 8 KiB is cut).

use crate::bindings::log;
use crate::runtime::sandbox::CallState;

impl log::Host for CallState {
    fn log(&mut self, level: log::Level, message: String) {
        const MAX: usize = 8 << 10;
        let message = crate::types::grant::redact(&message, &self.secrets).into_owned();
        let message = if message.len() > MAX {
            let cut = message.floor_char_boundary(MAX);
            format!("{}… [{} bytes cut]", &message[..cut], message.len() - cut)
        } else {
            message
        };
        // The session routes the line to its own MCP client only.
        let (tool, call) = (&*self.tool, self.context.call_id.to_string());
        let session = self.context.session.as_deref().unwrap_or("");
        match level {
            log::Level::Trace => {
                tracing::trace!(target: "toolhost::plugin", tool, call, session, "{message}")
            }
            log::Level::Debug => {
                tracing::debug!(target: "toolhost::plugin", tool, call, session, "{message}")
            }
            log::Level::Info => {
                tracing::info!(target: "toolhost::plugin", tool, call, session, "{message}")
            }
            log::Level::Warn => {
                tracing::warn!(target: "toolhost::plugin", tool, call, session, "{message}")
            }
            log::Level::Error => {
                tracing::error!(target: "toolhost::plugin", tool, call, session, "{message}")
            }
        }
    }
}
