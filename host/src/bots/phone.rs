//! `phone_call`: call a contact named in `[phone.contacts]` and say a
//! message, through a provider speaking Twilio's REST API (`POST
//! /2010-04-01/Accounts/SID/Calls.json` with `To`, `From` and `Twiml`,
//! basic auth with the account and its token). Never a number the model
//! makes up: only the configured contacts.

use super::{Bots, blocking};
use crate::services::{Service, ServiceCall, ServiceError};
use serde_json::{Value, json};
use std::time::Duration;

/// The longest message said in one call.
const MOST_CHARS: usize = 1_000;

impl Bots {
    pub(super) fn phone(&self) -> Option<Result<Service, String>> {
        let phone = self.inner.phone.as_ref()?;
        let bots = self.clone();
        let names: Vec<&str> = phone.contacts.keys().map(String::as_str).collect();
        Some(
            Service::new(
                "phone_call",
                format!(
                    "Phone a contact and say a short message (a voice reads it). Contacts: {}.",
                    names.join(", ")
                ),
                json!({
                    "type": "object",
                    "properties": {
                        "contact": {"type": "string", "description": "A contact's name."},
                        "message": {"type": "string", "minLength": 1, "maxLength": MOST_CHARS, "description": "What to say."},
                    },
                    "required": ["contact", "message"],
                    "additionalProperties": false,
                }),
                move |call: ServiceCall| {
                    let bots = bots.clone();
                    blocking(move || bots.call_contact(&call))
                },
            )
            // It reaches a person outside: asked first in confirm modes.
            // Longer than the provider's 30 s: a call placed late is not
            // reported as failed (and retried, ringing twice).
            .map(|s| s.as_tool("Phone a contact").with_timeout(Duration::from_secs(90))),
        )
    }

    fn call_contact(&self, call: &ServiceCall) -> Result<Value, ServiceError> {
        let phone = self
            .inner
            .phone
            .as_ref()
            .ok_or_else(|| ServiceError::Failed("no [phone] is configured".to_owned()))?;
        let name = call.input["contact"].as_str().unwrap_or_default().trim();
        let Some(number) = phone.contacts.get(name) else {
            let known: Vec<&str> = phone.contacts.keys().map(String::as_str).collect();
            return Err(ServiceError::Invalid(format!(
                "`{name}` is not a contact; the contacts are: {} (a person adds one in \
                 [phone.contacts])",
                known.join(", ")
            )));
        };
        let message = call.input["message"].as_str().unwrap_or_default();
        let token = auth_token(&phone.auth_token_env)?;
        let url = format!(
            "{}/2010-04-01/Accounts/{}/Calls.json",
            phone.url.trim_end_matches('/'),
            phone.account_sid
        );
        let twiml = format!("<Response><Say>{}</Say></Response>", xml_text(message));
        let agent = super::http_agent();
        let basic = base64_basic(&phone.account_sid, &token);
        let mut response = agent
            .post(&url)
            .header("Authorization", &format!("Basic {basic}"))
            .send_form([
                ("To", number.as_str()),
                ("From", phone.from.as_str()),
                ("Twiml", twiml.as_str()),
            ])
            .map_err(|e| {
                ServiceError::Failed(format!("the phone provider could not be reached: {e}"))
            })?;
        let status = response.status();
        let body: Value = response
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_to_string()
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null);
        if !status.is_success() {
            let said = body["message"].as_str().unwrap_or("no reason given");
            return Err(ServiceError::Failed(format!(
                "the phone provider answered {status}: {said}; nobody was called"
            )));
        }
        let state = body["status"].as_str().unwrap_or("queued");
        Ok(json!({
            "contact": name,
            "status": state,
            "call_sid": body["sid"],
            "text": format!("calling {name}: {state}"),
        }))
    }
}

/// The token: a secret stored for phone_call, else the environment.
fn auth_token(var: &str) -> Result<String, ServiceError> {
    let stored = crate::secrets::Secrets::user()
        .ok()
        .and_then(|s| s.of("phone_call").ok())
        .and_then(|mut s| s.remove(var));
    stored.or_else(|| std::env::var(var).ok()).ok_or_else(|| {
        ServiceError::Failed(format!(
            "no phone token: store it with `toolhost secret set phone_call {var}` or export {var}"
        ))
    })
}

/// `user:password` as HTTP basic credentials.
fn base64_basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

/// `text` safe inside an XML element.
fn xml_text(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n')
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            other => other.to_string(),
        })
        .collect()
}
