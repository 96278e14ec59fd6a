//! The configuration file, `toolhost.toml`: every key is optional, and no
//! file at all means safe defaults. See docs/configuration.md.
//!
//! [`Config::find`] looks in the workspace, then in the user's config
//! directory; [`Config::load`] parses and checks a file (unknown keys and
//! wrong types are errors that name the key and its line); relative paths in
//! it are relative to the file's directory. [`Config::apply_profile`] folds a
//! `[profiles.NAME]` section in, and [`Config::executor`] builds the
//! [`Executor`] the file describes.

use crate::broker::CommandConfig;
use crate::executor::hooks::PostEditHook;
use crate::executor::{Executor, Profile};
use crate::registry::LoadProblem;
use crate::runtime::{CacheDir, CompileProgress, Limits, RuntimeConfig};
use crate::trust;
use crate::types::confirm::Mode;
use crate::types::grant::{Access, DirGrant, Grant};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
mod sections;
pub use sections::*;
mod bots;
pub use bots::*;

/// The file name looked for.
pub const FILE_NAME: &str = "toolhost.toml";

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read the configuration {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, has an unknown key or a wrong type (the
    /// message names the key and its line).
    #[error("{}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, where.
        message: String,
    },
    /// The file is in the workspace and its content was never trusted
    /// (`toolhost config trust`), or changed since.
    #[error(
        "{} is in the workspace and is not trusted (new, or changed since it was trusted): a cloned repository or a tool could have written it, and it could loosen the policy. Review it, then run `toolhost config trust` to use it, or pass it with --config",
        path.display()
    )]
    Untrusted {
        /// The file.
        path: PathBuf,
    },
    /// A value is well-formed but unusable (an unknown tool, a bad pattern,
    /// a missing directory).
    #[error("{origin}: {message}")]
    Invalid {
        /// The file, or `configuration` when built in code.
        origin: String,
        /// What is wrong and how to fix it.
        message: String,
    },
}

/// Access to the workspace in a `[grants.TOOL]` section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceAccess {
    /// No workspace.
    #[default]
    None,
    /// Read-only.
    Read,
    /// Read and write.
    Write,
}

/// `toolhost.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The workspace root (default: the current directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    /// When calls need confirmation.
    pub mode: Mode,
    /// Let delete_file and apply_patch delete files.
    pub allow_delete: bool,
    /// Directories of third-party `.wasm` plugins.
    pub plugin_dirs: Vec<PathBuf>,
    /// Components from OCI registries (`[[plugins]] source = "oci://…"`),
    /// pinned in the workspace's `toolhost.lock`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<PluginSection>,
    /// How components from registries are trusted (`[signatures]`).
    pub signatures: SignaturesSection,
    /// A directory of `NAME.md` files replacing tools' descriptions, and
    /// `groups/GROUP.md` files replacing the guidance of a tool group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts_dir: Option<PathBuf>,
    /// How the model works with the person: the guidance's preamble and
    /// groups (`conversation`, `collaboration`, `autonomous`).
    pub prompt_mode: crate::guidance::PromptMode,
    /// Where the audit log is appended (off if absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_log: Option<PathBuf>,
    /// The profile used when `--profile` is not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Where built-in tools keep their state (todo_manager's plans under
    /// `todo/`; default `$XDG_STATE_HOME/toolhost`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<PathBuf>,
    /// The memory tools' directory (default `<state_dir>/memory`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_dir: Option<PathBuf>,
    /// The persona directory of update_soul, update_identity and
    /// manage_goals (default `<state_dir>/soul`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soul_dir: Option<PathBuf>,
    /// JSON Schemas for validate_output, one `TYPE.json` per output type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schemas_dir: Option<PathBuf>,
    /// The default IANA time zone of get_datetime (default UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// get_datetime's default locale for weekday and month names (e.g.
    /// `es-AR`; default none: English only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// Per-call limits.
    pub limits: LimitsSection,
    /// How commands run.
    pub commands: CommandsSection,
    /// Secret and protected paths, beyond or short of the defaults.
    pub paths: crate::types::paths::PathRulesConfig,
    /// What each tool is granted, replacing its default grant.
    pub grants: BTreeMap<String, GrantSection>,
    /// Per-tool description and settings.
    pub tools: BTreeMap<String, ToolSection>,
    /// Post-edit hooks.
    pub hooks: HooksSection,
    /// Named profiles.
    pub profiles: BTreeMap<String, ProfileSection>,
    /// Tools agents create with create_tool.
    pub dynamic: DynamicSection,
    /// The tool loop of `toolhost agent`.
    pub agent: AgentSection,
    /// Remote MCP servers whose tools are offered as `mcp_{NAME}_{tool}`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_servers: BTreeMap<String, McpServerSection>,
    /// web_search's provider (the tool is not offered without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_search: Option<WebSearchSection>,
    /// Bots: `toolhost agent --bot NAME`, delegate_to_bot, collaborate.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub bots: BTreeMap<String, BotSection>,
    /// Where the message tool sends.
    pub message: MessageSection,
    /// phone_call's provider and contacts (not offered without).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone: Option<PhoneSection>,
}

/// How [`Config::executor`] builds, beyond what the file says.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Where compiled components are kept.
    pub cache: CacheDir,
    /// The profile to apply, if any.
    pub profile: Option<Profile>,
    /// Told whenever a component has to be compiled.
    pub progress: Option<CompileProgress>,
    /// Leave plugin files the compile cache does not describe yet for
    /// [`Executor::load_deferred_plugins`] (a server starts at once); a
    /// configuration that names one of their tools then fails as an
    /// unknown name, and the caller may build again without deferring.
    pub defer_uncached: bool,
    /// The executor makes one call and the process ends (`toolhost
    /// call`): no instance pool is set up
    /// ([`RuntimeConfig::pool_instances`](crate::runtime::RuntimeConfig::pool_instances)).
    pub one_call: bool,
    /// The file holding the compile cache's signing key (`None`: in the
    /// data directory; see
    /// [`RuntimeConfig::cache_key`](crate::runtime::RuntimeConfig::cache_key)).
    pub cache_key: Option<PathBuf>,
    /// A person watches this process's terminal: the message tool can
    /// show them messages (`toolhost agent`).
    pub terminal_messages: bool,
}

/// An executor built from a configuration, and what was skipped on the way.
#[derive(Debug)]
pub struct Built {
    /// The executor (set its confirmer before use).
    pub executor: Executor,
    /// Plugin files that were not loaded, and prompt files for unknown tools.
    pub problems: Vec<LoadProblem>,
    /// Plugin files left for [`Executor::load_deferred_plugins`] (only when
    /// building with `defer_uncached`).
    pub deferred: usize,
    /// The bots and agent services (spawn, delegate_to_bot, collaborate,
    /// message) the executor offers: hand them the executor once it is
    /// shared ([`crate::bots::Bots::attach`]).
    pub bots: crate::bots::Bots,
    /// Grants for tools that are not loaded: kept, and applied when a
    /// tool of that name is loaded (a plugin dropped in later); each says
    /// which.
    pub waiting_grants: Vec<String>,
    /// Grants naming what their (loaded) tool does not declare: that part
    /// gives it nothing; each says which, and who can change it.
    pub grant_warnings: Vec<String>,
}

/// Where the configuration file `path` really is (symlinks resolved).
fn real_file(path: &Path) -> Result<PathBuf, ConfigError> {
    path.canonicalize().map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })
}

impl Config {
    /// Where a configuration is looked for: `<workspace>/toolhost.toml`,
    /// then `<user config dir>/toolhost/toolhost.toml`. The flag says
    /// whether the file is the workspace's, which must be trusted
    /// ([`Config::load_found`]).
    pub fn find(workspace: &Path) -> Option<(PathBuf, bool)> {
        let in_workspace = workspace.join(FILE_NAME);
        if in_workspace.is_file() {
            return Some((in_workspace, true));
        }
        dirs::config_dir()
            .map(|d| d.join("toolhost").join(FILE_NAME))
            .filter(|p| p.is_file())
            .map(|p| (p, false))
    }

    /// Load a file [`Config::find`] found: a workspace file only if its
    /// content is trusted.
    pub fn load_found(path: &Path, in_workspace: bool) -> Result<Self, ConfigError> {
        Self::load_checked(path, in_workspace)
    }

    /// Record the current content of `path` (a workspace configuration) as
    /// trusted; returns its blake3 hash.
    pub fn trust(path: &Path) -> Result<String, ConfigError> {
        // Only a file that parses is worth trusting, and the text checked
        // is the text whose hash is recorded.
        let real = real_file(path)?;
        let text = std::fs::read_to_string(&real).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let base = real
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_owned);
        Self::parse(&text, path, &base)?;
        trust::trust_content(&real, text.as_bytes()).map_err(|e| {
            invalid(
                &path.display().to_string(),
                format!("cannot record that it is trusted: {e}"),
            )
        })
    }

    /// Read and check `path`; relative paths in it become relative to its
    /// directory. The file is used as given (a person named it).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_checked(path, false)
    }

    fn load_checked(path: &Path, needs_trust: bool) -> Result<Self, ConfigError> {
        // A symlinked file is the file it leads to: trusted only if that is,
        // its relative paths resolved where it really is.
        let real = real_file(path)?;
        let text = std::fs::read_to_string(&real).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let base = real
            .parent()
            .map(Path::to_owned)
            .unwrap_or_else(|| PathBuf::from("."));
        // Errors in the text come first: they are what a person fixes before
        // trusting it.
        let config = Self::parse(&text, path, &base)?;
        if needs_trust && !trust::is_trusted(path, text.as_bytes()) {
            return Err(ConfigError::Untrusted {
                path: path.to_owned(),
            });
        }
        Ok(config)
    }

    /// Parse configuration text; `path` is named in errors and relative
    /// paths are resolved against `base`.
    pub fn parse(text: &str, path: &Path, base: &Path) -> Result<Self, ConfigError> {
        let mut config: Self = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        config.resolve_paths(base);
        Ok(config)
    }

    fn resolve_paths(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if let Some(rest) = p.to_str().and_then(|s| s.strip_prefix("~/"))
                && let Some(home) = dirs::home_dir()
            {
                *p = home.join(rest);
            } else if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        self.workspace.iter_mut().for_each(fix);
        self.plugin_dirs.iter_mut().for_each(fix);
        self.signatures.keys.iter_mut().for_each(fix);
        self.prompts_dir.iter_mut().for_each(fix);
        self.state_dir.iter_mut().for_each(fix);
        self.memory_dir.iter_mut().for_each(fix);
        self.soul_dir.iter_mut().for_each(fix);
        for profile in self.profiles.values_mut() {
            profile.memory_dir.iter_mut().for_each(fix);
            profile.soul_dir.iter_mut().for_each(fix);
        }
        self.schemas_dir.iter_mut().for_each(fix);
        for bot in self.bots.values_mut() {
            bot.soul_dir.iter_mut().for_each(fix);
        }
        self.dynamic.dir.iter_mut().for_each(fix);
        self.audit_log.iter_mut().for_each(fix);
        self.commands.writable.iter_mut().for_each(fix);
        self.commands.read.iter_mut().for_each(fix);
        let grants = self.grants.values_mut().chain(
            self.profiles
                .values_mut()
                .flat_map(|p| p.grants.values_mut()),
        );
        for grant in grants {
            for dir in &mut grant.directories {
                fix(&mut dir.host);
            }
        }
    }

    /// The configuration as TOML (what `toolhost config show` prints).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot show: {e}\n"))
    }

    /// Fold the profile `name` (or the file's default `profile`) into the
    /// top level: its mode, grants and allow_delete win. Returns the
    /// profile's tool filter; an unknown name lists the defined ones.
    pub fn apply_profile(&mut self, name: Option<&str>) -> Result<Option<Profile>, ConfigError> {
        let Some(name) = name.map(str::to_owned).or_else(|| self.profile.clone()) else {
            return Ok(None);
        };
        let Some(section) = self.profiles.get(&name).cloned() else {
            let known: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
            let listed = if known.is_empty() {
                "no profiles are defined; add a [profiles.NAME] section".to_owned()
            } else {
                format!("the defined profiles are: {}", known.join(", "))
            };
            return Err(invalid(
                "configuration",
                format!("unknown profile `{name}`; {listed}"),
            ));
        };
        if let Some(mode) = section.mode {
            self.mode = mode;
        }
        if let Some(prompt_mode) = section.prompt_mode {
            self.prompt_mode = prompt_mode;
        }
        if let Some(allow) = section.allow_delete {
            self.allow_delete = allow;
        }
        if section.memory_dir.is_some() {
            self.memory_dir = section.memory_dir;
        }
        if section.soul_dir.is_some() {
            self.soul_dir = section.soul_dir;
        }
        self.grants.extend(section.grants);
        self.profile = Some(name.clone());
        Ok(Some(Profile {
            name,
            tools: section.tools,
            disabled: section.disabled,
        }))
    }
}

fn invalid(origin: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        origin: origin.to_owned(),
        message: message.into(),
    }
}

mod build;
mod mcp_servers;
mod web_search;
pub use build::{undeclared_grant, waiting_grant};
pub use mcp_servers::{ConnectSection, McpServerSection};
pub use web_search::{BRAVE_ENDPOINT, Provider as SearchProvider, WebSearchSection};
#[cfg(test)]
mod tests;
