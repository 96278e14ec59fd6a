//! A model endpoint: where, which API, the key; one request and its answer, whatever the dialect.

use super::reply::Reply;
use super::*;

/// A model endpoint: where, which API, the key.
#[derive(Clone)]
pub struct Endpoint {
    url: String,
    pub(super) api: Api,
    api_key: Option<String>,
    timeout: Duration,
    /// Requests sent again after a failure that may pass (429, 5xx, a
    /// timeout, a dropped connection).
    retries: u32,
    /// Asked when this one fails for good: another endpoint and its model.
    fallback: Option<Box<(Endpoint, String)>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("api", &self.api)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field(
                "fallback",
                &self.fallback.as_ref().map(|f| f.0.url.as_str()),
            )
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
            retries: DEFAULT_RETRIES,
            fallback: None,
        })
    }

    /// Send a request again up to `retries` times after a failure that may
    /// pass: 429 and 5xx answers (waiting what `Retry-After` says, up to a
    /// minute), timeouts and dropped connections (waiting 0.5 s, 1 s, 2 s …
    /// with jitter). Default 2.
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Ask `fallback` (serving `model`) when this endpoint fails for good,
    /// retries spent.
    pub fn with_fallback(mut self, fallback: Endpoint, model: impl Into<String>) -> Self {
        self.fallback = Some(Box::new((fallback, model.into())));
        self
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

    /// POST `body`, again after a failure that may pass; the response's JSON.
    pub(super) fn complete(&self, body: &Value) -> Result<Value, AgentError> {
        let mut attempt = 0;
        loop {
            match self.send(body) {
                Ok(answer) => return Ok(answer),
                Err(failed) if attempt < self.retries => match failed.wait {
                    Some(wait) => {
                        let wait = wait.unwrap_or_else(|| backoff(attempt)).min(MOST_WAIT);
                        tracing::info!(
                            target: "toolhost::agent",
                            attempt = attempt + 1,
                            wait_ms = wait.as_millis() as u64,
                            "{}; asking again",
                            failed.error
                        );
                        std::thread::sleep(wait);
                        attempt += 1;
                    }
                    None => return Err(failed.error),
                },
                Err(failed) => return Err(failed.error),
            }
        }
    }

    /// POST `body` once.
    fn send(&self, body: &Value) -> Result<Value, Failed> {
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
            let timed_out = matches!(e, ureq::Error::Timeout(_));
            let said = if timed_out {
                format!(
                    "the endpoint {} is slow: no answer within {} s (it was reached); \
                     raise agent.request_timeout_secs or ask for less",
                    self.url,
                    self.timeout.as_secs()
                )
            } else {
                format!(
                    "cannot reach the endpoint {}: {e}; check the URL and that the server runs",
                    self.url
                )
            };
            Failed::again(AgentError::Endpoint(self.redact(&said)), None)
        })?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .map_err(|e| {
                Failed::again(
                    AgentError::Endpoint(format!("the endpoint's answer could not be read: {e}")),
                    None,
                )
            })?;
        if status.is_redirection() {
            let to = response
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .unwrap_or("elsewhere")
                .to_owned();
            return Err(Failed::once(AgentError::Endpoint(self.redact(&format!(
                "the endpoint answered {status}, redirecting to {to}; give that URL as the \
                 endpoint if it is the one you mean (redirects are not followed)"
            )))));
        }
        if !status.is_success() {
            let hint = match status.as_u16() {
                401 | 403 => "; check the API key (--api-key-env names the variable holding it)",
                404 => "; check the endpoint URL and the model name",
                429 => "; the endpoint is rate limiting: wait and try again",
                _ => "",
            };
            let error = AgentError::Endpoint(self.redact(&format!(
                "the endpoint answered {status}: {}{hint}",
                excerpt(&text)
            )));
            return Err(match status.as_u16() {
                408 | 429 | 500..=599 => Failed::again(error, retry_after(response.headers())),
                _ => Failed::once(error),
            });
        }
        serde_json::from_str(&text).map_err(|e| {
            Failed::once(AgentError::Endpoint(self.redact(&format!(
                "the endpoint's answer is not JSON ({e}): {}",
                excerpt(&text)
            ))))
        })
    }
}

/// Requests sent again after a failure that may pass, by default.
pub const DEFAULT_RETRIES: u32 = 2;

/// The longest wait before asking again, whatever `Retry-After` says.
const MOST_WAIT: Duration = Duration::from_secs(60);

/// A failed request, and whether (and after how long) to send it again:
/// `wait` is `None` for a failure that will not pass, `Some(None)` to
/// wait the backoff, `Some(Some(d))` to wait what the endpoint said.
struct Failed {
    error: AgentError,
    wait: Option<Option<Duration>>,
}

impl Failed {
    fn once(error: AgentError) -> Self {
        Self { error, wait: None }
    }

    fn again(error: AgentError, after: Option<Duration>) -> Self {
        Self {
            error,
            wait: Some(after),
        }
    }
}

/// What a `Retry-After` header says: seconds, or an HTTP date.
fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        // Any number, however large or odd, is at most the longest wait.
        return Duration::try_from_secs_f64(secs.clamp(0.0, MOST_WAIT.as_secs_f64())).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

/// The wait before retry `attempt` (from 0): 0.5 s doubled each time,
/// plus up to half as much again at random, so clients that failed
/// together do not come back together.
fn backoff(attempt: u32) -> Duration {
    use std::hash::{BuildHasher as _, Hasher as _};
    let base = Duration::from_millis(500) * 2u32.saturating_pow(attempt.min(10));
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(attempt);
    let jitter = (hasher.finish() % 1000) as u32;
    base + base / 2 * jitter / 1000
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
    /// offering `tools` (in this API's schema format) unless `last`.
    pub(super) fn ask(
        &self,
        model: &str,
        messages: &[Value],
        tools: &[Value],
        last: bool,
    ) -> Result<Reply, AgentError> {
        let asked = match self.api {
            Api::OpenAi => openai::ask(self, model, messages, tools, last),
            Api::Anthropic => anthropic::ask(self, model, messages, tools, last),
        };
        match (asked, &self.fallback) {
            (Err(AgentError::Endpoint(why)), Some(fallback)) => {
                let (endpoint, model) = fallback.as_ref();
                tracing::warn!(
                    target: "toolhost::agent",
                    fallback = %endpoint.url,
                    "{why}; asking the fallback endpoint"
                );
                endpoint.ask(model, messages, tools, last)
            }
            (asked, _) => asked,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_retry_after_is_a_wait_of_at_most_a_minute() {
        let wait = |value: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert("retry-after", value.parse().unwrap());
            retry_after(&headers)
        };
        assert_eq!(wait("1"), Some(Duration::from_secs(1)));
        assert_eq!(wait("1e300"), Some(MOST_WAIT));
        assert_eq!(wait("-5"), Some(Duration::ZERO));
        assert_eq!(wait("NaN"), None);
        assert_eq!(wait("Sun, 06 Nov 1994 08:49:37 GMT"), Some(Duration::ZERO));
        assert_eq!(wait("soon"), None);
        assert!(backoff(30) <= Duration::from_millis(500) * 1024 * 3 / 2);
    }
}
