//! `[mcp_servers.NAME]`: remote MCP servers whose tools are offered as
//! `mcp_{NAME}_{tool}` (remote.rs), each section checked with a message
//! that names its key.

use super::{ConfigError, invalid};
use crate::types::grant::is_env_name;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// When a server is first connected (`connect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectSection {
    /// In the background as soon as toolhost starts (the default).
    #[default]
    Start,
    /// When the tools are first listed or one of them is looked up.
    FirstUse,
}

/// One remote MCP server: `url` (streamable HTTP) or `command` + `args`
/// (stdio, started through the broker's sandbox in the workspace).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerSection {
    /// The streamable HTTP endpoint, e.g. `https://example.com/mcp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The environment variable holding a bearer token for `url` (the
    /// token itself is never written in the configuration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    /// The program of a stdio server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to its (scrubbed) environment.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Let a stdio server reach the network (default: no network).
    pub network: bool,
    /// Its tools change nothing: not sensitive, never confirmed (default:
    /// sensitive, like any tool that may act elsewhere).
    pub read_only: bool,
    /// These of its tools (by the server's names) change nothing, when
    /// the server as a whole is not `read_only`: a person's word, per
    /// tool; the server's own hints are never trusted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_only_tools: Vec<String>,
    /// When it is first connected: `start` or `first-use`.
    pub connect: ConnectSection,
    /// Seconds connecting and listing its tools may take.
    pub connect_timeout_secs: u64,
    /// Seconds one call may take (the call's own limit if shorter).
    pub timeout_secs: u64,
}

impl Default for McpServerSection {
    fn default() -> Self {
        Self {
            url: None,
            bearer_token_env: None,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            network: false,
            read_only: false,
            read_only_tools: Vec::new(),
            connect: ConnectSection::Start,
            connect_timeout_secs: 10,
            timeout_secs: 60,
        }
    }
}

impl McpServerSection {
    /// Every problem of the section `mcp_servers.{name}`, as one message
    /// per problem (empty: it is fine).
    pub fn problems(&self, name: &str) -> Vec<String> {
        let key = format!("mcp_servers.{name}");
        let mut problems = Vec::new();
        let normal = snake_case(name);
        if normal.is_empty() {
            problems.push(format!(
                "[{key}]: the name has no letters or digits; name the server like `docs` or `issue_tracker`"
            ));
        }
        match (&self.url, &self.command) {
            (Some(_), Some(_)) => problems.push(format!(
                "[{key}] has both `url` and `command`; a server is reached one way: keep `url` \
                 for streamable HTTP, or `command` (with `args`) for stdio"
            )),
            (None, None) => problems.push(format!(
                "[{key}] has neither `url` nor `command`; add `url = \"https://HOST/mcp\"` \
                 (streamable HTTP) or `command = \"PROGRAM\"` with `args` (stdio)"
            )),
            (Some(url), None) => {
                let parsed = url.parse::<http::Uri>();
                match parsed {
                    Ok(uri) if uri.authority().is_some_and(|a| a.as_str().contains('@')) => {
                        problems.push(format!(
                            "{key}.url carries a user name or password; put a token in the \
                             variable `bearer_token_env` names instead"
                        ));
                    }
                    Ok(uri)
                        if matches!(uri.scheme_str(), Some("http" | "https"))
                            && uri.host().is_some() => {}
                    _ => problems.push(format!(
                        "{key}.url `{url}` is not an http or https URL; write it like \
                         `https://example.com/mcp`"
                    )),
                }
                for (set, what) in [
                    (!self.args.is_empty(), "args"),
                    (!self.env.is_empty(), "env"),
                    (self.network, "network"),
                ] {
                    if set {
                        problems.push(format!(
                            "{key}.{what} applies to a stdio server (`command`), not to one \
                             reached at a `url`; remove it"
                        ));
                    }
                }
                if let Some(var) = &self.bearer_token_env {
                    if !is_env_name(var) {
                        problems.push(format!(
                            "{key}.bearer_token_env must name an environment variable (like \
                             `DOCS_TOKEN`), not hold the token; put the token in that variable"
                        ));
                    } else if let Err(why) =
                        crate::net::credential_may_go_to(url, "the bearer token")
                    {
                        problems.push(format!("{key}: {why}"));
                    }
                }
            }
            (None, Some(command)) => {
                if command.trim().is_empty() {
                    problems.push(format!("{key}.command is empty; name the server's program"));
                }
                if self.bearer_token_env.is_some() {
                    problems.push(format!(
                        "{key}.bearer_token_env applies to a server reached at a `url`; pass a \
                         stdio server its token in `env` instead"
                    ));
                }
                if let Some(bad) = self.env.keys().find(|k| !is_env_name(k)) {
                    problems.push(format!(
                        "{key}.env: `{bad}` is not an environment variable name"
                    ));
                }
            }
        }
        for (what, value, max) in [
            ("connect_timeout_secs", self.connect_timeout_secs, 300),
            ("timeout_secs", self.timeout_secs, 86_400),
        ] {
            if !(1..=max).contains(&value) {
                problems.push(format!("{key}.{what} is {value}; use 1 to {max}"));
            }
        }
        problems
    }
}

/// Check every `[mcp_servers]` section (and that no two names are the
/// same once normalised to snake_case); the first problem is the error.
pub(super) fn check(servers: &BTreeMap<String, McpServerSection>) -> Result<(), ConfigError> {
    let mut problems: Vec<String> = servers
        .iter()
        .flat_map(|(name, section)| section.problems(name))
        .collect();
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for name in servers.keys() {
        let normal = snake_case(name);
        if let Some(first) = seen.insert(normal.clone(), name) {
            problems.push(format!(
                "[mcp_servers.{first}] and [mcp_servers.{name}] are both `{normal}` in tool names; rename one"
            ));
        }
    }
    if cfg!(not(feature = "mcp")) && !servers.is_empty() {
        problems.push(
            "[mcp_servers] needs toolhost's MCP client, which this build leaves out (feature `mcp`)"
                .to_owned(),
        );
    }
    match problems.into_iter().next() {
        Some(problem) => Err(invalid("configuration", problem)),
        None => Ok(()),
    }
}

#[cfg(feature = "mcp")]
fn snake_case(name: &str) -> String {
    crate::remote::snake_case(name)
}

#[cfg(not(feature = "mcp"))]
fn snake_case(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// The servers the sections describe, checked.
#[cfg(feature = "mcp")]
pub(super) fn specs(
    servers: &BTreeMap<String, McpServerSection>,
) -> Result<Vec<crate::remote::ServerSpec>, ConfigError> {
    use crate::remote::{Connect, ServerSpec, Transport};
    use std::time::Duration;
    check(servers)?;
    Ok(servers
        .iter()
        .map(|(name, s)| ServerSpec {
            name: snake_case(name),
            transport: match (&s.url, &s.command) {
                (Some(url), _) => Transport::Http {
                    url: url.clone(),
                    bearer_token_env: s.bearer_token_env.clone(),
                },
                (None, command) => Transport::Stdio {
                    command: command.clone().unwrap_or_default(),
                    args: s.args.clone(),
                    env: s.env.clone(),
                    network: s.network,
                },
            },
            read_only: s.read_only,
            read_only_tools: s.read_only_tools.clone(),
            connect: match s.connect {
                ConnectSection::Start => Connect::Start,
                ConnectSection::FirstUse => Connect::FirstUse,
            },
            connect_timeout: Duration::from_secs(s.connect_timeout_secs),
            call_timeout: Duration::from_secs(s.timeout_secs),
        })
        .collect())
}
