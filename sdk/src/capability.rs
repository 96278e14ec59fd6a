//! What a tool asks of the host, converted to and from the WIT `capability`.

use crate::__private::bindings::toolhost::plugin::types as wit;

/// Something a tool needs from the host.
///
/// The host grants at most what the tool declares, and only what its
/// configuration allows: a read-only tool cannot write, because its workspace
/// preopen is read-only.
///
/// ```
/// use toolhost_sdk::Capability;
/// let needs = vec![Capability::WorkspaceRead, Capability::Network(vec!["example.com".into()])];
/// assert_eq!(needs.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capability {
    /// Read the workspace (preopened read-only at `.`).
    WorkspaceRead,
    /// Read and write the workspace (preopened read-write at `.`).
    WorkspaceWrite,
    /// Ask the host broker to run commands.
    Commands,
    /// Make HTTP requests to these hosts; `*` means any public host.
    Network(Vec<String>),
    /// A host-configured directory, mounted at `/<name>`.
    Directory {
        /// The name the host maps to a real directory.
        name: String,
        /// Whether the tool writes there.
        writable: bool,
    },
}

impl From<Capability> for wit::Capability {
    fn from(value: Capability) -> Self {
        match value {
            Capability::WorkspaceRead => wit::Capability::WorkspaceRead,
            Capability::WorkspaceWrite => wit::Capability::WorkspaceWrite,
            Capability::Commands => wit::Capability::Commands,
            Capability::Network(hosts) => wit::Capability::Network(hosts),
            Capability::Directory { name, writable } => {
                wit::Capability::Directory(wit::DirectoryAccess { name, writable })
            }
        }
    }
}

/// One item of a grant as people write it (`--grant`, `toolhost dynamic
/// approve`, create_tool's `capabilities`): `workspace:read`,
/// `workspace:write`, `commands`, `network:HOST`, `env:NAME`,
/// `dir:NAME:read`, `dir:NAME:write` or `none`: the spellings `toolhost
/// tools` prints, one item per host or directory.
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
    /// `none`.
    Nothing,
}

impl GrantItem {
    /// The spellings, for messages.
    pub const CHOICES: &'static str = "workspace:read, workspace:write, commands, network:HOST, env:NAME, dir:NAME:read, dir:NAME:write or none";

    /// Parse one item (surrounding spaces ignored); `None` if it is not one.
    ///
    /// ```
    /// use toolhost_sdk::capability::GrantItem;
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
                    return (!host.is_empty() && !host.contains(','))
                        .then(|| Self::Network(host.to_owned()));
                }
                if let Some(name) = other.strip_prefix("env:") {
                    return is_env_name(name).then(|| Self::Env(name.to_owned()));
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

/// A plausible environment variable name (`[A-Za-z_][A-Za-z0-9_]*`).
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
