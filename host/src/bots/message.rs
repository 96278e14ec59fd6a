//! `message`: to the person's terminal (`toolhost agent` watched by
//! someone) and to the configured webhook, as JSON.

use super::{Bots, blocking};
use crate::services::{Service, ServiceCall, ServiceError};
use serde_json::{Value, json};

impl Bots {
    pub(super) fn message(&self) -> Result<Service, String> {
        let bots = self.clone();
        Service::new(
            "message",
            "Show a message to the person (their terminal) or post it to the configured webhook.",
            json!({
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1},
                    "channel": {"type": ["string", "null"]},
                    "to": {"type": ["string", "null"]},
                },
                "required": ["content"],
            }),
            move |call: ServiceCall| {
                let bots = bots.clone();
                blocking(move || bots.send_message(&call))
            },
        )
    }

    fn send_message(&self, call: &ServiceCall) -> Result<Value, ServiceError> {
        let content = call.input["content"].as_str().unwrap_or_default();
        let mut went = Vec::new();
        if let Some(terminal) = self.inner.terminal.get() {
            let from = call.context.agent.as_deref().unwrap_or("the agent");
            let to = call.input["to"]
                .as_str()
                .map(|t| format!(" to {t}"))
                .unwrap_or_default();
            terminal(&format!("[message from {from}{to}] {content}"));
            went.push("terminal");
        }
        if let Some(url) = &self.inner.message.webhook {
            self.post(url, call)?;
            went.push("webhook");
        }
        if went.is_empty() {
            return Err(ServiceError::Failed(
                "no terminal watches this run and no [message] webhook is configured".to_owned(),
            ));
        }
        Ok(json!({"status": format!("sent to the {}", went.join(" and the "))}))
    }

    /// POST the message to the webhook; its answer's status only.
    fn post(&self, url: &str, call: &ServiceCall) -> Result<(), ServiceError> {
        let body = json!({
            "content": call.input["content"],
            "channel": call.input["channel"],
            "to": call.input["to"],
            "agent": call.context.agent,
            "session": call.context.session,
        });
        let agent = super::http_agent();
        let mut request = agent.post(url).header("Content-Type", "application/json");
        if let Some(var) = &self.inner.message.token_env {
            let token = std::env::var(var).map_err(|_| {
                ServiceError::Failed(format!("[message] token_env names {var}, which is not set"))
            })?;
            request = request.header("Authorization", &format!("Bearer {token}"));
        }
        let response = request
            .send(body.to_string())
            .map_err(|e| ServiceError::Failed(format!("the webhook could not be reached: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(ServiceError::Failed(format!(
                "the webhook answered {status}; the message was not delivered"
            )));
        }
        Ok(())
    }
}
