//! `[bots.NAME]` and `[message]`: the bots of the TypeScript bot framework
//! as configuration (`toolhost agent --bot NAME`, delegate_to_bot and
//! collaborate reach them), and where the message tool sends.

use super::*;

/// `[bots.NAME]`: a bot: its endpoint and model (by default `[agent]`'s),
/// persona, prompt mode and tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BotSection {
    /// What it is good at: shown to other bots (collaborate `discover`,
    /// delegate_to_bot's description).
    pub description: String,
    /// `openai` or `anthropic` (default `[agent]`'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// Its endpoint (default `[agent]`'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Its model (default `[agent]`'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The environment variable holding its API key (default `[agent]`'s
    /// when it uses `[agent]`'s endpoint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Text put before the tools' guidance in its system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Its persona directory (SOUL.md, IDENTITY.md, GOALS.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soul_dir: Option<PathBuf>,
    /// Its prompt mode (default the configuration's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_mode: Option<crate::guidance::PromptMode>,
    /// Only these tools, if set (of those the configuration shows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

/// `[message]`: where the message tool sends besides the person's
/// terminal (`toolhost agent` on a terminal).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MessageSection {
    /// A URL each message is POSTed to as JSON `{content, channel, to,
    /// agent, session}` (http to this machine, or https).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// The environment variable holding a token sent as `Authorization:
    /// Bearer` to the webhook.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
}

/// `[phone]`: phone_call's provider (Twilio's REST API, or one that
/// speaks it) and the contacts it may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhoneSection {
    /// The API's base URL.
    #[serde(default = "twilio")]
    pub url: String,
    /// The account the calls are made for.
    pub account_sid: String,
    /// The variable holding the auth token: a secret stored for
    /// phone_call (`toolhost secret set phone_call NAME`), else the
    /// environment variable of that name.
    #[serde(default = "auth_token_env")]
    pub auth_token_env: String,
    /// The number calls come from.
    pub from: String,
    /// The people it may call, by name: `ana = "+34612345678"`.
    pub contacts: BTreeMap<String, String>,
}

fn twilio() -> String {
    "https://api.twilio.com".to_owned()
}

fn auth_token_env() -> String {
    "TWILIO_AUTH_TOKEN".to_owned()
}

/// Whether `name` can name a bot: lowercase letters, digits, `_` and
/// `-`, starting with a letter, at most 64 characters.
pub fn is_bot_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

impl Config {
    /// Where built-in tools and the scheduler keep their state:
    /// `state_dir`, else `$XDG_STATE_HOME/toolhost` (or the data
    /// directory's).
    pub fn state_home(&self) -> Option<PathBuf> {
        self.state_dir.clone().or_else(|| {
            ::dirs::state_dir()
                .or_else(::dirs::data_dir)
                .map(|d| d.join("toolhost"))
        })
    }

    /// `[bots]` and `[message]`, checked: names, APIs, key variables, URLs.
    pub(super) fn check_bots(&self) -> Result<(), ConfigError> {
        let bad = |message: String| invalid("configuration", message);
        for (name, bot) in &self.bots {
            if !is_bot_name(name) {
                return Err(bad(format!(
                    "[bots.{name}]: a bot's name is lowercase letters, digits, `_` and `-`, \
                     starting with a letter"
                )));
            }
            let api = bot.api.as_deref().unwrap_or(&self.agent.api);
            checked_api(&format!("bots.{name}"), api, bot.api_key_env.as_deref())?;
            if let Some(url) = &bot.endpoint
                && !(url.starts_with("http://") || url.starts_with("https://"))
            {
                return Err(bad(format!(
                    "[bots.{name}] endpoint `{url}` is not an http(s) URL"
                )));
            }
        }
        if let Some(phone) = &self.phone {
            crate::net::credential_may_go_to(&phone.url, "the phone provider's token")
                .map_err(|e| bad(format!("[phone] url: {e}")))?;
            if !crate::types::grant::is_env_name(&phone.auth_token_env) {
                return Err(bad(
                    "[phone] auth_token_env takes the NAME of a variable".to_owned()
                ));
            }
            if phone.contacts.is_empty() {
                return Err(bad(
                    "[phone] has no contacts: phone_call calls only the people named in \
                     [phone.contacts]"
                        .to_owned(),
                ));
            }
        }
        if let Some(url) = &self.message.webhook {
            crate::net::credential_may_go_to(url, "a message")
                .map_err(|e| bad(format!("[message] webhook: {e}")))?;
        }
        if let Some(var) = &self.message.token_env
            && !crate::types::grant::is_env_name(var)
        {
            return Err(bad(
                "[message] token_env takes the NAME of an environment variable".to_owned(),
            ));
        }
        Ok(())
    }
}
