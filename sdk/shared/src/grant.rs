//! Capabilities and grants as the host and the plugins both spell them.

/// Something a tool needs from the host (the WIT `capability`).
///
/// The host grants at most what the tool declares, and only what its
/// configuration allows: a read-only tool cannot write, because its workspace
/// preopen is read-only. It prints as `toolhost tools` shows it, which is
/// also how `--grant` spells it.
///
/// ```
/// use toolhost_shared::Capability;
/// let needs = [Capability::WorkspaceRead, Capability::Network(vec!["a.com".into(), "b.com".into()])];
/// let shown: Vec<String> = needs.iter().map(ToString::to_string).collect();
/// assert_eq!(shown, ["workspace:read", "network:a.com,network:b.com"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Read the workspace.
    WorkspaceRead,
    /// Read and write the workspace.
    WorkspaceWrite,
    /// Run commands through the broker.
    Commands,
    /// HTTP to these hosts (`*`: any public host).
    Network(Vec<String>),
    /// A host-configured directory mounted at `/<name>`.
    Directory {
        /// The configured name.
        name: String,
        /// Whether the tool writes there.
        writable: bool,
    },
    /// The embedding application's service of this name.
    Service(String),
    /// The environment variable of this name (a host variable, or a secret
    /// a person stored for the tool): declared by exporting the WIT
    /// `environment` interface, passed only when granted `env:NAME`.
    Env(String),
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::WorkspaceRead => f.write_str("workspace:read"),
            Self::WorkspaceWrite => f.write_str("workspace:write"),
            Self::Commands => f.write_str("commands"),
            // One `network:` item per host, so `--grant` reads it back.
            Self::Network(hosts) => {
                let items: Vec<String> = hosts.iter().map(|h| format!("network:{h}")).collect();
                f.write_str(&items.join(","))
            }
            Self::Directory { name, writable } => {
                write!(f, "dir:{name}:{}", if *writable { "write" } else { "read" })
            }
            Self::Service(name) => write!(f, "service:{name}"),
            Self::Env(name) => write!(f, "env:{name}"),
        }
    }
}

/// One item of a grant as people write it (`--grant`, `toolhost dynamic
/// approve`, create_tool's `capabilities`): `workspace:read`,
/// `workspace:write`, `commands`, `network:HOST`, `env:NAME`,
/// `dir:NAME:read`, `dir:NAME:write`, `service:NAME` or `none`: the
/// spellings `toolhost tools` prints, one item per host or directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantItem {
    /// `workspace:read`.
    WorkspaceRead,
    /// `workspace:write`.
    WorkspaceWrite,
    /// `commands`.
    Commands,
    /// `network:HOST` (`*`: any public host).
    Network(String),
    /// `env:NAME`: pass this environment variable.
    Env(String),
    /// `dir:NAME:read` or `dir:NAME:write`: the host's directory of that
    /// name (a state directory such as `memory`), mounted at `/NAME`.
    Dir {
        /// The directory's name.
        name: String,
        /// Whether the tool may write there.
        writable: bool,
    },
    /// `service:NAME`: the embedder's service of that name.
    Service(String),
    /// `none`.
    Nothing,
}

impl GrantItem {
    /// The spellings, for messages.
    pub const CHOICES: &'static str = "workspace:read, workspace:write, commands, network:HOST, env:NAME, dir:NAME:read, dir:NAME:write, service:NAME or none";

    /// Parse one item (surrounding spaces ignored); `None` if it is not one.
    ///
    /// ```
    /// use toolhost_shared::grant::GrantItem;
    /// assert_eq!(GrantItem::parse("env:HOME"), Some(GrantItem::Env("HOME".into())));
    /// assert_eq!(GrantItem::parse("workspace:rw"), None);
    /// assert_eq!(
    ///     GrantItem::parse("dir:memory:write"),
    ///     Some(GrantItem::Dir { name: "memory".into(), writable: true })
    /// );
    /// ```
    pub fn parse(item: &str) -> Option<Self> {
        match item.trim() {
            "workspace:read" => Some(Self::WorkspaceRead),
            "workspace:write" => Some(Self::WorkspaceWrite),
            "commands" => Some(Self::Commands),
            "none" => Some(Self::Nothing),
            other => {
                if let Some(host) = other.strip_prefix("network:") {
                    return is_host(host).then(|| Self::Network(host.to_owned()));
                }
                if let Some(name) = other.strip_prefix("env:") {
                    return is_env_name(name).then(|| Self::Env(name.to_owned()));
                }
                if let Some(name) = other.strip_prefix("service:") {
                    return is_service_name(name).then(|| Self::Service(name.to_owned()));
                }
                let (name, access) = other.strip_prefix("dir:")?.rsplit_once(':')?;
                let plain = !name.is_empty()
                    && !name.contains(['/', '\\', ':'])
                    && name != "."
                    && name != "..";
                match access {
                    "read" | "write" if plain => Some(Self::Dir {
                        name: name.to_owned(),
                        writable: access == "write",
                    }),
                    _ => None,
                }
            }
        }
    }
}

/// A service name: lowercase letters, digits, `_`, `-` and `.`, starting
/// with a letter (at most 64 characters).
///
/// ```
/// use toolhost_shared::grant::is_service_name;
/// assert!(is_service_name("message") && is_service_name("chat.send"));
/// assert!(!is_service_name("") && !is_service_name("Message") && !is_service_name("a:b"));
/// ```
pub fn is_service_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
}

/// Whether `host` can name what a `network:` grant allows: `*` (any public
/// host), an IP address (IPv6 optionally in brackets), or a DNS name of
/// ASCII letters, digits, `-` and `_` in dot-separated labels. Nothing
/// else — no port, no wildcard label, no character that reads differently
/// than it matches (bidirectional marks, look-alike letters).
///
/// ```
/// use toolhost_shared::grant::is_host;
/// for ok in ["*", "example.com", "api.search.brave.com", "127.0.0.1", "::1", "[::1]", "my_host"] {
///     assert!(is_host(ok), "{ok}");
/// }
/// for bad in ["", "x\u{202E}", "exa mple.com", "a..b", "host:8080", "*.example.com", "ехample.com"] {
///     assert!(!is_host(bad), "{bad}");
/// }
/// ```
pub fn is_host(host: &str) -> bool {
    let ip = |h: &str| h.parse::<std::net::IpAddr>().is_ok();
    host == "*"
        || ip(host)
        || host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .is_some_and(|h| h.parse::<std::net::Ipv6Addr>().is_ok())
        || (host.len() <= 253
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            }))
}

/// A plausible environment variable name (`[A-Za-z_][A-Za-z0-9_]*`).
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
