//! MCP logging: `logging/setLevel` and `notifications/message`.
//!
//! [`layer`] is a tracing layer (the CLI installs it beside its stderr
//! output; an embedder adds it to its own subscriber). It passes two kinds
//! of lines to the connected clients, each at the level that client chose
//! (`warning` until it sets one):
//!
//! - a plugin's log lines (target `toolhost::plugin`), only to the client
//!   whose call wrote them: they carry its session id;
//! - the server's own lines (targets under `toolhost::mcp`: workspace,
//!   plugin reloads, configuration), to every client.
//!
//! Nothing else goes out: a line from elsewhere in the host may name
//! another client's command or file.
//!
//! With no client connected, the layer costs one atomic load per event.

#![expect(
    deprecated,
    reason = "logging is deprecated only in the newest protocol, which toolhost does not negotiate"
)]

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};
use tokio::sync::broadcast;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::Context;

/// Lines not yet sent to a slow client before it misses some.
const BACKLOG: usize = 256;

/// One line for the clients.
#[derive(Debug, Clone)]
pub(super) struct Line {
    pub(super) level: LoggingLevel,
    pub(super) logger: String,
    pub(super) text: String,
    /// Only this session's client gets it; None: every client.
    pub(super) session: Option<String>,
}

fn feed() -> &'static broadcast::Sender<Line> {
    static FEED: OnceLock<broadcast::Sender<Line>> = OnceLock::new();
    FEED.get_or_init(|| broadcast::channel(BACKLOG).0)
}

/// A receiver of every line, for one client.
pub(super) fn subscribe() -> broadcast::Receiver<Line> {
    feed().subscribe()
}

/// The tracing layer that feeds the clients (see the module docs), with
/// a filter of its own: the lines it takes say nothing about what the
/// other layers (stderr) show, and the other way round.
pub fn layer<S>() -> impl tracing_subscriber::Layer<S>
where
    S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    McpLogLayer.with_filter(Forwarded)
}

/// See [`layer`].
#[derive(Debug, Clone, Copy)]
struct McpLogLayer;

/// Which lines [`McpLogLayer`] takes: those clients may get, while one is
/// connected.
#[derive(Debug, Clone, Copy)]
struct Forwarded;

/// Whether a line from `target` may go to clients at all.
fn forwarded(target: &str) -> bool {
    target == "toolhost::plugin" || target.starts_with("toolhost::mcp")
}

impl<S> tracing_subscriber::layer::Filter<S> for Forwarded {
    fn enabled(&self, metadata: &Metadata<'_>, _ctx: &Context<'_, S>) -> bool {
        forwarded(metadata.target()) && feed().receiver_count() > 0
    }

    /// Asked again per event (clients come and go): never cached as
    /// "always" for the lines clients may get.
    fn callsite_enabled(
        &self,
        metadata: &'static Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if forwarded(metadata.target()) {
            tracing::subscriber::Interest::sometimes()
        } else {
            tracing::subscriber::Interest::never()
        }
    }
}

impl<S: Subscriber> tracing_subscriber::Layer<S> for McpLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        if !forwarded(meta.target()) || feed().receiver_count() == 0 {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let plugin = meta.target() == "toolhost::plugin";
        // A plugin's line without its session goes nowhere.
        if plugin && fields.session.is_none() {
            return;
        }
        let logger = match (&fields.tool, plugin) {
            (Some(tool), true) => tool.clone(),
            _ => "toolhost".to_owned(),
        };
        let _ = feed().send(Line {
            level: level_of(*meta.level()),
            logger,
            text: fields.text,
            session: if plugin { fields.session } else { None },
        });
    }
}

/// The message and the fields a line needs.
#[derive(Default)]
struct Fields {
    text: String,
    tool: Option<String>,
    session: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "tool" => self.tool = Some(value.to_owned()),
            "session" => self.session = Some(value.to_owned()).filter(|s| !s.is_empty()),
            "message" => self.text.insert_str(0, value),
            other => {
                let _ = write!(self.text, " {other}={value}");
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => {
                let shown = format!("{value:?}");
                self.text.insert_str(0, &shown);
            }
            "tool" | "session" => self.record_str(field, &format!("{value:?}")),
            other => {
                let _ = write!(self.text, " {other}={value:?}");
            }
        }
    }
}

fn level_of(level: Level) -> LoggingLevel {
    match level {
        Level::ERROR => LoggingLevel::Error,
        Level::WARN => LoggingLevel::Warning,
        Level::INFO => LoggingLevel::Info,
        Level::DEBUG | Level::TRACE => LoggingLevel::Debug,
    }
}

/// The MCP levels from least to most severe.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// One client's chosen level (`warning` until it sets one).
#[derive(Debug)]
pub(super) struct ClientLevel(AtomicU8);

impl Default for ClientLevel {
    fn default() -> Self {
        Self(AtomicU8::new(rank(LoggingLevel::Warning)))
    }
}

impl ClientLevel {
    pub(super) fn set(&self, level: LoggingLevel) {
        self.0.store(rank(level), Ordering::Relaxed);
    }

    /// The notification for `line` if this client (`session`) gets it.
    pub(super) fn note(
        &self,
        line: Line,
        session: &str,
    ) -> Option<LoggingMessageNotificationParam> {
        if rank(line.level) < self.0.load(Ordering::Relaxed) {
            return None;
        }
        if line.session.as_deref().is_some_and(|s| s != session) {
            return None;
        }
        let mut note = LoggingMessageNotificationParam::new(line.level, line.text.into());
        note.logger = Some(line.logger);
        Some(note)
    }
}

/// Send one line to a client.
pub(super) async fn send(
    peer: &rmcp::Peer<rmcp::RoleServer>,
    note: LoggingMessageNotificationParam,
) -> Result<(), rmcp::service::ServiceError> {
    peer.notify_logging_message(note).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(level: LoggingLevel, session: Option<&str>) -> Line {
        Line {
            level,
            logger: "grep".into(),
            text: "hello".into(),
            session: session.map(str::to_owned),
        }
    }

    #[test]
    fn a_client_gets_lines_at_its_level_and_only_its_own_plugin_lines() {
        let level = ClientLevel::default();
        assert!(level.note(line(LoggingLevel::Info, None), "a").is_none());
        assert!(level.note(line(LoggingLevel::Warning, None), "a").is_some());
        level.set(LoggingLevel::Debug);
        let note = level
            .note(line(LoggingLevel::Info, Some("a")), "a")
            .unwrap();
        assert_eq!(note.logger.as_deref(), Some("grep"));
        assert_eq!(note.data, "hello");
        assert!(
            level
                .note(line(LoggingLevel::Error, Some("b")), "a")
                .is_none()
        );
    }

    #[test]
    fn only_plugin_and_server_lines_are_forwarded() {
        assert!(forwarded("toolhost::plugin"));
        assert!(forwarded("toolhost::mcp"));
        assert!(forwarded("toolhost::mcp::http"));
        assert!(!forwarded("toolhost::broker::call"));
        assert!(!forwarded("rmcp::service"));
    }
}
