//! `subscriptions/listen` (MCP 2026-07-28): the stream that replaces a
//! session's event stream, carrying the tool list's changes.

use super::*;
use rmcp::model::{ServerNotification, ToolListChangedNotification};
use rmcp::service::SubscriptionContext;

impl McpServer {
    /// Carry `notifications/tools/list_changed` on subscription `context`
    /// whenever the tools change, until the client or the server ends it.
    pub(super) async fn follow_tools(&self, context: SubscriptionContext) -> Result<(), McpError> {
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        let mut changes = self.executor().changes();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    // The executor is gone: the server is ending.
                    if changed.is_err() {
                        return Ok(());
                    }
                    let note = ServerNotification::ToolListChangedNotification(
                        ToolListChangedNotification::default(),
                    );
                    if context.sink().send(note).await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}
