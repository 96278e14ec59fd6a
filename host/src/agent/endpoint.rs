//! A model endpoint: where, which API, the key; one request and its answer, whatever the dialect.

use super::*;

/// A model endpoint: where, which API, the key.
#[derive(Clone)]
pub struct Endpoint {
    url: String,
    pub(super) api: Api,
    api_key: Option<String>,
    timeout: Duration,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("api", &self.api)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Endpoint {
    /// The OpenAI-compatible endpoint at `url`: a base such as
    /// `http://127.0.0.1:8080/v1` (`/chat/completions` is added) or the
    /// full completions URL.
    pub fn new(url: &str) -> Result<Self, AgentError> {
        Self::speaking(Api::OpenAi, url)
    }

    /// The endpoint at `url` speaking `api`: a base URL (the API's path,
    /// `/chat/completions` or `/messages`, is added) or the full URL.
    pub fn speaking(api: Api, url: &str) -> Result<Self, AgentError> {
        let url = url.trim().trim_end_matches('/');
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(AgentError::Usage(format!(
                "the endpoint `{url}` is not an http(s) URL; give one such as \
                 https://api.openai.com/v1 or http://127.0.0.1:11434/v1"
            )));
        }
        let url = if url.ends_with(api.path()) {
            url.to_owned()
        } else {
            format!("{url}{}", api.path())
        };
        Ok(Self {
            url,
            api,
            api_key: None,
            timeout: Duration::from_secs(120),
        })
    }

    /// The API it speaks.
    pub fn api(&self) -> Api {
        self.api
    }

    /// Send the API key (`Authorization: Bearer KEY`, or `x-api-key` for
    /// Anthropic). Refused over plain http to a host other than this
    /// machine, where anyone on the way could read it.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Result<Self, AgentError> {
        crate::net::credential_may_go_to(&self.url, "the API key").map_err(AgentError::Usage)?;
        self.api_key = Some(key.into()).filter(|k: &String| !k.is_empty());
        Ok(self)
    }

    /// How long one request may take (default 120 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The completions URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `text` with the API key replaced by `[redacted]`.
    fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) if key.len() >= 4 => text.replace(key.as_str(), "[redacted]"),
            _ => text.to_owned(),
        }
    }

    /// POST `body`; the response's JSON.
    pub(super) fn complete(&self, body: &Value) -> Result<Value, AgentError> {
        // No redirects: a key sent to a URL a person chose must not follow
        // a Location anywhere else.
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .new_agent();
        let mut request = agent
            .post(&self.url)
            .header("Content-Type", "application/json");
        match (&self.api_key, self.api) {
            (Some(key), Api::OpenAi) => {
                request = request.header("Authorization", &format!("Bearer {key}"));
            }
            (Some(key), Api::Anthropic) => request = request.header("x-api-key", key),
            (None, _) => {}
        }
        if self.api == Api::Anthropic {
            request = request.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let mut response = request.send(body.to_string()).map_err(|e| {
            AgentError::Endpoint(self.redact(&format!(
                "cannot reach the endpoint {}: {e}; check the URL and that the server runs",
                self.url
            )))
        })?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .map_err(|e| {
                AgentError::Endpoint(format!("the endpoint's answer could not be read: {e}"))
            })?;
        if status.is_redirection() {
            let to = response
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .unwrap_or("elsewhere")
                .to_owned();
            return Err(AgentError::Endpoint(self.redact(&format!(
                "the endpoint answered {status}, redirecting to {to}; give that URL as the \
                 endpoint if it is the one you mean (redirects are not followed)"
            ))));
        }
        if !status.is_success() {
            let hint = match status.as_u16() {
                401 | 403 => "; check the API key (--api-key-env names the variable holding it)",
                404 => "; check the endpoint URL and the model name",
                429 => "; the endpoint is rate limiting: wait and try again",
                _ => "",
            };
            return Err(AgentError::Endpoint(self.redact(&format!(
                "the endpoint answered {status}: {}{hint}",
                excerpt(&text)
            ))));
        }
        serde_json::from_str(&text).map_err(|e| {
            AgentError::Endpoint(self.redact(&format!(
                "the endpoint's answer is not JSON ({e}): {}",
                excerpt(&text)
            )))
        })
    }
}

/// The `anthropic-version` header the requests carry.
pub(super) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Most tokens an Anthropic answer may take (its API requires a number;
/// every current model allows this many).
pub(super) const ANTHROPIC_MAX_TOKENS: u32 = 4096;

/// Most bytes of one answer of the endpoint.
pub(super) const MAX_ANSWER_BYTES: u64 = 8 << 20;

/// Most tool calls run from one answer; the rest are told to come later.
pub(super) const MAX_CALLS_PER_ROUND: usize = 16;

impl Endpoint {
    /// Ask for the next message of the conversation `messages` (kept in
    /// OpenAI's shape: system, user, assistant with tool_calls, tool),
    /// offering `tools` (in this API's schema format) unless `last`. The
    /// answer in OpenAI's shape: `{content, tool_calls}`.
    pub(super) fn ask(
        &self,
        model: &str,
        messages: &[Value],
        tools: &[Value],
        last: bool,
    ) -> Result<Value, AgentError> {
        match self.api {
            Api::OpenAi => openai::ask(self, model, messages, tools, last),
            Api::Anthropic => anthropic::ask(self, model, messages, tools, last),
        }
    }

    /// The error for an answer without `what`.
    pub(super) fn unexpected(&self, what: &str, response: &Value) -> AgentError {
        AgentError::Endpoint(self.redact(&format!(
            "the endpoint's answer has no {what}: {}",
            excerpt(&response.to_string())
        )))
    }
}

/// At most 500 characters of `text`, for a message.
pub(super) fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(500) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
