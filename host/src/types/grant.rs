//! What the configuration allows a tool ([`Grant`]), and what it finally gets:
//! the tool's declared capabilities intersected with its grant.

use crate::types::names::ParseError;
use crate::types::tool_info::Capability;
use std::path::PathBuf;
use toolhost_shared::grant::GrantItem;

/// Access to a directory.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read-only.
    Read,
    /// Read and write.
    Write,
}

/// A host directory granted under a name (mounted in the guest at `/<name>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// The name the tool asks for.
    pub name: String,
    /// The host directory behind it.
    pub host_path: PathBuf,
    /// The most access allowed.
    pub access: Access,
}

/// What the configuration allows one tool. A tool never gets more than it
/// declared; see [`Grant::effective`].
///
/// The default grant is empty: no workspace, no commands, no network, no
/// directories. Built-in tools are granted everything they declare
/// ([`Grant::all`]); a third-party plugin gets nothing until configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// Workspace access, if any.
    pub workspace: Option<Access>,
    /// Whether the command broker answers.
    pub commands: bool,
    /// Hosts the tool may reach; `*` means any public host.
    pub network: Vec<String>,
    /// Named host directories.
    pub directories: Vec<DirGrant>,
    /// The executor's state directories (`memory`, `todo`, ...) by name,
    /// as `dir:NAME:ACCESS` grants them; the executor supplies the host
    /// path when the call's grant is computed, and one it does not have
    /// is not granted.
    pub state_dirs: Vec<(String, Access)>,
    /// Environment variables the tool sees (by name; the value is a
    /// secret stored for the tool, else the host's, read when the call
    /// starts). A tool gets one only if it declares it too
    /// ([`Capability::Env`]): it starts with an empty environment.
    pub env: Vec<String>,
    /// The embedder's services it may call (`service:NAME`).
    pub services: Vec<String>,
    /// Grant whatever the tool declares (built-ins). Named directories still
    /// need an entry in `directories` to know where they live.
    pub all_declared: bool,
}

impl Grant {
    /// Nothing at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// Whatever the tool declares (the default for built-in tools).
    pub fn all() -> Self {
        Self {
            all_declared: true,
            ..Self::default()
        }
    }

    /// Parse one `--grant` value's capability list, e.g.
    /// `workspace:read`, `workspace:write,commands`, `network:example.com`,
    /// `network:*,dir:web_cache:write`: what `toolhost tools` prints.
    ///
    /// ```
    /// use toolhost::grant::{Access, Grant};
    /// let g = Grant::parse_caps("workspace:read").unwrap();
    /// assert_eq!(g.workspace, Some(Access::Read));
    /// let g = Grant::parse_caps("network:*,dir:web_cache:write").unwrap();
    /// assert_eq!(g.state_dirs, [("web_cache".to_owned(), Access::Write)]);
    /// assert!(Grant::parse_caps("workspace:rw").is_err());
    /// ```
    pub fn parse_caps(spec: &str) -> Result<Self, ParseError> {
        let mut grant = Self::none();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match GrantItem::parse(item) {
                Some(GrantItem::WorkspaceRead) => {
                    grant.workspace = grant.workspace.max(Some(Access::Read));
                }
                Some(GrantItem::WorkspaceWrite) => grant.workspace = Some(Access::Write),
                Some(GrantItem::Commands) => grant.commands = true,
                Some(GrantItem::Network(host)) => grant.network.push(host),
                Some(GrantItem::Env(name)) => grant.env.push(name),
                Some(GrantItem::Service(name)) => grant.services.push(name),
                Some(GrantItem::Dir { name, writable }) => {
                    let access = if writable {
                        Access::Write
                    } else {
                        Access::Read
                    };
                    grant.state_dirs.retain(|(n, _)| *n != name);
                    grant.state_dirs.push((name, access));
                }
                Some(GrantItem::Nothing) => {}
                None => return Err(ParseError::new("capability", item, GrantItem::CHOICES)),
            }
        }
        Ok(grant)
    }

    /// What a tool declaring `declared` actually gets under this grant.
    pub fn effective(&self, declared: &[Capability]) -> Effective {
        let mut out = Effective::default();
        for cap in declared {
            match cap {
                Capability::WorkspaceRead => {
                    if self.all_declared || self.workspace.is_some() {
                        out.workspace = out.workspace.max(Some(Access::Read));
                    }
                }
                Capability::WorkspaceWrite => {
                    let granted = if self.all_declared {
                        Some(Access::Write)
                    } else {
                        self.workspace
                    };
                    out.workspace = out.workspace.max(granted);
                }
                Capability::Commands => {
                    out.declared_commands = true;
                    out.commands |= self.all_declared || self.commands;
                    // OS filters cannot tell hosts apart: any network entry
                    // in an explicit grant opens the network to commands.
                    out.command_network = out.commands && !self.network.is_empty();
                }
                Capability::Network(hosts) => {
                    out.network
                        .extend(intersect_hosts(hosts, &self.network, self.all_declared));
                }
                Capability::Service(name) => {
                    out.declared_services.push(name.clone());
                    if self.all_declared || self.services.contains(name) {
                        out.services.push(name.clone());
                    }
                }
                // Only what both the tool declares and a person names.
                Capability::Env(name) => {
                    if self.env.contains(name) && !out.env.contains(name) {
                        out.env.push(name.clone());
                    }
                }
                Capability::Directory { name, writable } => {
                    if let Some(dir) = self.directories.iter().find(|d| &d.name == name) {
                        let asked = if *writable {
                            Access::Write
                        } else {
                            Access::Read
                        };
                        out.directories.push(DirGrant {
                            access: asked.min(dir.access),
                            ..dir.clone()
                        });
                    }
                }
            }
        }
        out.network.sort();
        out.network.dedup();
        out
    }

    /// What this grant names that a tool declaring `declared` does not
    /// declare, in `--grant` spelling: it gives the tool nothing, since a
    /// tool gets only what it declares and a person grants.
    ///
    /// ```
    /// use toolhost::{Capability, Grant};
    /// let grant = Grant::parse_caps("workspace:read,commands,env:TOKEN").unwrap();
    /// assert_eq!(grant.undeclared(&[Capability::WorkspaceWrite]), ["commands", "env:TOKEN"]);
    /// // The network a tool running commands is granted is its commands'.
    /// let commands = Grant::parse_caps("commands,network:*").unwrap();
    /// assert!(commands.undeclared(&[Capability::Commands]).is_empty());
    /// assert!(Grant::all().undeclared(&[]).is_empty());
    /// ```
    pub fn undeclared(&self, declared: &[Capability]) -> Vec<String> {
        if self.all_declared {
            return Vec::new();
        }
        let declares = |want: &dyn Fn(&Capability) -> bool| declared.iter().any(want);
        let mut out = Vec::new();
        if let Some(access) = self.workspace
            && !declares(&|c| matches!(c, Capability::WorkspaceRead | Capability::WorkspaceWrite))
        {
            out.push(
                match access {
                    Access::Read => "workspace:read",
                    Access::Write => "workspace:write",
                }
                .to_owned(),
            );
        }
        if self.commands && !declares(&|c| *c == Capability::Commands) {
            out.push("commands".to_owned());
        }
        // A network entry also opens the network to the commands of a tool
        // declaring `commands`.
        let runs_commands = declares(&|c| *c == Capability::Commands);
        for host in &self.network {
            let reached = runs_commands
                || declares(&|c| {
                    matches!(c, Capability::Network(hosts)
                    if !intersect_hosts(hosts, std::slice::from_ref(host), false).is_empty())
                });
            if !reached {
                out.push(format!("network:{host}"));
            }
        }
        let dirs = self
            .directories
            .iter()
            .map(|d| &d.name)
            .chain(self.state_dirs.iter().map(|(name, _)| name));
        for name in dirs {
            if !declares(&|c| matches!(c, Capability::Directory { name: n, .. } if n == name)) {
                out.push(format!("dir:{name}"));
            }
        }
        for name in &self.env {
            if !declares(&|c| matches!(c, Capability::Env(n) if n == name)) {
                out.push(format!("env:{name}"));
            }
        }
        for name in &self.services {
            if !declares(&|c| matches!(c, Capability::Service(n) if n == name)) {
                out.push(format!("service:{name}"));
            }
        }
        out
    }
}

pub use toolhost_shared::grant::is_env_name;

/// Why a tool that does not declare `capability` (in `--grant` spelling)
/// cannot use it, and who can change that: its author, not a person
/// granting it.
pub(crate) fn must_declare(capability: &str) -> String {
    format!(
        "this tool does not declare the `{capability}` capability, so no grant can give it: \
         the tool must declare it, and its author must add `{capability}` to the capabilities \
         it declares (Rust: `Tool::capabilities`; JavaScript: `capabilities` in `defineTool`; \
         Python: `capabilities=` of `@tool`) and build it again"
    )
}

/// Hosts in both lists; `*` on either side stands for the other side's list.
fn intersect_hosts(declared: &[String], granted: &[String], all_declared: bool) -> Vec<String> {
    if all_declared {
        return declared.to_vec();
    }
    let any = |list: &[String]| list.iter().any(|h| h == "*");
    if any(declared) {
        return granted.to_vec();
    }
    if any(granted) {
        return declared.to_vec();
    }
    declared
        .iter()
        .filter(|h| granted.iter().any(|g| g.eq_ignore_ascii_case(h)))
        .cloned()
        .collect()
}

/// What one tool really gets: the sandbox is built from this and nothing else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effective {
    /// Workspace preopen at `.`, if any.
    pub workspace: Option<Access>,
    /// Whether the broker answers `commands` requests.
    pub commands: bool,
    /// Whether those commands may use the network (the grant lists a
    /// `network:` entry); otherwise Landlock and seccomp deny it.
    pub command_network: bool,
    /// Reachable hosts.
    pub network: Vec<String>,
    /// Directories mounted at `/<name>`.
    pub directories: Vec<DirGrant>,
    /// Host environment variables passed in (by name).
    pub env: Vec<String>,
    /// The embedder's services it may call.
    pub services: Vec<String>,
    /// Values a person stored for it (`toolhost secret set`), by variable
    /// name, for variables of `env` only: they replace the host's, and are
    /// redacted from what the call leaves ([`redact`]).
    pub secrets: Vec<(String, SecretValue)>,
    /// Whether the tool declares `commands` (granted or not): a refusal
    /// then says who can change it, a person or the tool's author.
    pub declared_commands: bool,
    /// The services the tool declares (granted or not), for the same.
    pub declared_services: Vec<String>,
}

/// A secret's value: never printed (`Debug` shows `[secret]`).
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(pub String);

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[secret]")
    }
}

/// The shortest secret value that is redacted: a shorter one would blank
/// ordinary words wherever they appear.
pub const MIN_REDACTED_CHARS: usize = 4;

/// `text` with every value of `secrets` (of at least
/// [`MIN_REDACTED_CHARS`]) replaced by `[secret NAME]`: as it is, and as
/// JSON and Rust's `{:?}` escape it (a value with quotes, backslashes or
/// newlines, such as a PEM key, printed in a JSON text or a debug line).
/// The longest values go first, so one secret inside another leaves no
/// part of the longer one.
///
/// ```
/// use toolhost::grant::{SecretValue, redact};
/// let secrets = [("TOKEN".to_owned(), SecretValue("s3cr3t\"v4lue".into()))];
/// assert_eq!(redact("got s3cr3t\"v4lue back", &secrets), "got [secret TOKEN] back");
/// assert_eq!(redact(r#"{"t":"s3cr3t\"v4lue"}"#, &secrets), r#"{"t":"[secret TOKEN]"}"#);
/// ```
pub fn redact<'a>(text: &'a str, secrets: &[(String, SecretValue)]) -> std::borrow::Cow<'a, str> {
    let mut forms: Vec<(String, &str)> = Vec::new();
    for (name, SecretValue(value)) in secrets {
        if value.chars().count() < MIN_REDACTED_CHARS {
            continue;
        }
        let json = serde_json::to_string(value).unwrap_or_default();
        let debug = format!("{value:?}");
        let inner = |quoted: &str| quoted[1..quoted.len().saturating_sub(1)].to_owned();
        for form in [value.clone(), inner(&json), inner(&debug)] {
            if !forms.iter().any(|(f, _)| *f == form) {
                forms.push((form, name));
            }
        }
    }
    forms.sort_by_key(|(form, _)| std::cmp::Reverse(form.len()));
    let mut out = std::borrow::Cow::Borrowed(text);
    for (form, name) in forms {
        if out.contains(form.as_str()) {
            out = std::borrow::Cow::Owned(out.replace(form.as_str(), &format!("[secret {name}]")));
        }
    }
    out
}

/// `value` with every string in it redacted ([`redact`]), keys included.
pub fn redact_json(value: &mut serde_json::Value, secrets: &[(String, SecretValue)]) {
    match value {
        serde_json::Value::String(s) => {
            if let std::borrow::Cow::Owned(r) = redact(s, secrets) {
                *s = r;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| redact_json(v, secrets)),
        serde_json::Value::Object(map) => {
            let taken = std::mem::take(map);
            *map = taken
                .into_iter()
                .map(|(k, mut v)| {
                    redact_json(&mut v, secrets);
                    (redact(&k, secrets).into_owned(), v)
                })
                .collect();
        }
        _ => {}
    }
}

impl Effective {
    /// The grant as capabilities, in a stable order (their `Display` is
    /// `workspace:read`, `commands`, ...).
    pub fn capabilities(&self) -> Vec<Capability> {
        let mut out = Vec::new();
        match self.workspace {
            Some(Access::Read) => out.push(Capability::WorkspaceRead),
            Some(Access::Write) => out.push(Capability::WorkspaceWrite),
            None => {}
        }
        if self.commands {
            out.push(Capability::Commands);
        }
        if !self.network.is_empty() {
            out.push(Capability::Network(self.network.clone()));
        }
        out.extend(self.directories.iter().map(|d| Capability::Directory {
            name: d.name.clone(),
            writable: d.access == Access::Write,
        }));
        out.extend(self.services.iter().cloned().map(Capability::Service));
        out.extend(self.env.iter().cloned().map(Capability::Env));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_declared_read_granted_gets_read() {
        let g = Grant::parse_caps("workspace:read").unwrap();
        let e = g.effective(&[Capability::WorkspaceWrite]);
        assert_eq!(e.workspace, Some(Access::Read));
    }

    #[test]
    fn nothing_declared_gets_nothing_even_if_granted() {
        let g = Grant::parse_caps("workspace:write,commands,network:*").unwrap();
        assert_eq!(g.effective(&[]), Effective::default());
    }

    #[test]
    fn services_pass_only_when_declared_and_granted() {
        let declared = [
            Capability::Service("message".into()),
            Capability::Service("spawn".into()),
        ];
        let g = Grant::parse_caps("service:message,service:cron").unwrap();
        assert_eq!(g.effective(&declared).services, ["message"]);
        assert_eq!(
            Grant::all().effective(&declared).services,
            ["message", "spawn"]
        );
        assert!(Grant::none().effective(&declared).services.is_empty());
        assert!(Grant::parse_caps("service:Bad Name").is_err());
        let e = g.effective(&declared);
        assert_eq!(e.capabilities(), [Capability::Service("message".into())]);
    }

    #[test]
    fn env_keys_pass_only_when_declared_and_granted() {
        let g = Grant::parse_caps("env:LANG,env:TZ").unwrap();
        assert!(g.effective(&[]).env.is_empty(), "nothing declared");
        let declared = [Capability::Env("TZ".into()), Capability::Env("HOME".into())];
        assert_eq!(g.effective(&declared).env, ["TZ"]);
        assert!(
            Grant::all().effective(&declared).env.is_empty(),
            "only named grants pass any"
        );
        assert!(Grant::parse_caps("env:A=B").is_err());
    }

    #[test]
    fn empty_grant_gives_nothing() {
        let declared = [
            Capability::WorkspaceWrite,
            Capability::Commands,
            Capability::Network(vec!["*".into()]),
        ];
        let got = Grant::none().effective(&declared);
        assert!(got.capabilities().is_empty(), "{got:?}");
        assert!(!got.command_network);
        // What it declares is kept, for the refusal to name who can help.
        assert!(got.declared_commands);
    }

    #[test]
    fn builtins_get_what_they_declare() {
        let e = Grant::all().effective(&[Capability::WorkspaceRead]);
        assert_eq!(e.workspace, Some(Access::Read));
        assert!(!e.commands);
        let e = Grant::all().effective(&[Capability::WorkspaceWrite, Capability::Commands]);
        assert_eq!(e.workspace, Some(Access::Write));
        assert!(e.commands);
        assert!(!e.command_network, "commands get no network by default");
    }

    #[test]
    fn a_network_entry_opens_the_network_to_commands() {
        let g = Grant::parse_caps("commands,network:*").unwrap();
        let e = g.effective(&[Capability::Commands]);
        assert!(e.commands && e.command_network);
        assert!(e.network.is_empty(), "the tool itself declared no hosts");
    }

    #[test]
    fn what_a_capability_prints_parses_back() {
        let caps = [
            Capability::Network(vec!["a.com".into(), "b.com".into()]),
            Capability::Directory {
                name: "memory".into(),
                writable: true,
            },
            Capability::WorkspaceRead,
        ];
        let text: Vec<String> = caps.iter().map(ToString::to_string).collect();
        assert_eq!(text[0], "network:a.com,network:b.com");
        let g = Grant::parse_caps(&text.join(",")).unwrap();
        assert_eq!(g.network, ["a.com", "b.com"]);
        assert_eq!(g.state_dirs, [("memory".to_owned(), Access::Write)]);
        assert_eq!(g.workspace, Some(Access::Read));
        for bad in [
            "dir:memory",
            "dir:memory:rw",
            "dir::write",
            "dir:../x:read",
            "dir:a/b:read",
        ] {
            assert!(Grant::parse_caps(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hosts_intersect() {
        let g = Grant::parse_caps("network:a.com,network:b.com").unwrap();
        let e = g.effective(&[Capability::Network(vec!["b.com".into(), "c.com".into()])]);
        assert_eq!(e.network, vec!["b.com"]);
        let e = g.effective(&[Capability::Network(vec!["*".into()])]);
        assert_eq!(e.network, vec!["a.com", "b.com"]);
    }

    #[test]
    fn directories_need_a_configured_path_and_take_the_lesser_access() {
        let mut g = Grant::none();
        g.directories.push(DirGrant {
            name: "state".into(),
            host_path: "/tmp/s".into(),
            access: Access::Read,
        });
        let e = g.effective(&[
            Capability::Directory {
                name: "state".into(),
                writable: true,
            },
            Capability::Directory {
                name: "other".into(),
                writable: false,
            },
        ]);
        assert_eq!(e.directories.len(), 1);
        assert_eq!(e.directories[0].access, Access::Read);
    }

    #[test]
    fn bad_capability_names_the_choices() {
        let err = Grant::parse_caps("workspace:rw").unwrap_err();
        assert!(err.to_string().contains("workspace:read"), "{err}");
    }
}
