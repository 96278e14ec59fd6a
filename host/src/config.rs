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
}

/// `[agent]`: the tool loop of `toolhost agent` (flags override each key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSection {
    /// The API the endpoint speaks: `openai` (chat completions) or
    /// `anthropic` (messages).
    pub api: String,
    /// The endpoint, e.g. `http://127.0.0.1:11434/v1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The model the endpoint serves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The environment variable holding the API key (the key itself is
    /// never written in the configuration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Requests to the model per run, the last one without tools.
    pub max_tool_rounds: u32,
    /// Tool calls per run.
    pub max_tool_calls: u32,
    /// Characters of tool results per run.
    pub max_result_chars: usize,
    /// Seconds one request to the endpoint may take.
    pub request_timeout_secs: u64,
    /// Text put before the tools' guidance in the system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
}

impl Default for AgentSection {
    fn default() -> Self {
        let budget = crate::agent::Budget::default();
        Self {
            api: "openai".to_owned(),
            endpoint: None,
            model: None,
            api_key_env: None,
            max_tool_rounds: budget.max_tool_rounds,
            max_tool_calls: budget.max_tool_calls,
            max_result_chars: budget.max_result_chars,
            request_timeout_secs: 120,
            system: None,
        }
    }
}

impl AgentSection {
    /// The API it names, checked (and that `api_key_env` names a variable:
    /// a key pasted there is refused without being shown).
    pub fn api(&self) -> Result<crate::agent::Api, ConfigError> {
        if self
            .api_key_env
            .as_deref()
            .is_some_and(|v| !crate::types::grant::is_env_name(v))
        {
            return Err(invalid(
                "configuration",
                "agent.api_key_env takes the NAME of an environment variable holding the key \
                 (letters, digits and `_`), not the key itself",
            ));
        }
        self.api.parse().map_err(|e: crate::agent::AgentError| {
            invalid("configuration", format!("agent.api: {e}"))
        })
    }

    /// The budget it sets, checked.
    pub fn budget(&self) -> Result<crate::agent::Budget, ConfigError> {
        build::in_range("agent.max_tool_rounds", self.max_tool_rounds.into(), 1, 100)?;
        build::in_range(
            "agent.max_tool_calls",
            self.max_tool_calls.into(),
            1,
            10_000,
        )?;
        build::in_range(
            "agent.max_result_chars",
            self.max_result_chars as u64,
            1_000,
            100_000_000,
        )?;
        build::in_range(
            "agent.request_timeout_secs",
            self.request_timeout_secs,
            1,
            3_600,
        )?;
        Ok(crate::agent::Budget {
            max_tool_rounds: self.max_tool_rounds,
            max_tool_calls: self.max_tool_calls,
            max_result_chars: self.max_result_chars,
        })
    }
}

/// `[dynamic]`: the dynamic-tool store and create_tool's limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DynamicSection {
    /// Where created tools are kept (default `<state_dir>/dynamic`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// Most tools one agent may have pending or approved.
    pub max_per_agent: u32,
    /// Largest script or template, in bytes.
    pub max_source_bytes: u64,
}

impl Default for DynamicSection {
    fn default() -> Self {
        Self {
            dir: None,
            max_per_agent: crate::dynamic::DEFAULT_MAX_PER_AGENT,
            max_source_bytes: crate::dynamic::DEFAULT_MAX_SOURCE_BYTES,
        }
    }
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsSection {
    /// Most memory one call may use, in MiB.
    pub memory_mb: u64,
    /// Seconds before a call is stopped.
    pub timeout_secs: u64,
    /// Most bytes of output kept from one call; more is cut with a note.
    pub max_output_bytes: usize,
    /// Most calls running at once.
    pub max_concurrent_calls: u32,
    /// Most MiB the compile cache keeps on disk.
    pub cache_max_mb: u64,
}

impl Default for LimitsSection {
    fn default() -> Self {
        let limits = Limits::default();
        Self {
            memory_mb: (limits.memory_bytes >> 20) as u64,
            timeout_secs: limits.timeout.as_secs(),
            max_output_bytes: limits.max_output_bytes,
            max_concurrent_calls: RuntimeConfig::default().max_concurrent_calls,
            cache_max_mb: RuntimeConfig::default().cache_max_bytes >> 20,
        }
    }
}

/// `[commands]`: the broker's policy and limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommandsSection {
    /// Whether commands run at all.
    pub enabled: bool,
    /// Argv patterns classed safe (they run without asking).
    pub allow: Vec<String>,
    /// Argv patterns refused in every mode.
    pub deny: Vec<String>,
    /// Refuse dangerous commands without asking.
    pub allowed_only: bool,
    /// Refuse to run commands when the full sandbox (namespaces, Landlock
    /// and seccomp) cannot be built on this host.
    pub require_sandbox: bool,
    /// Confine commands in namespaces where the host allows it (`false`:
    /// Landlock and seccomp only).
    pub namespaces: bool,
    /// As root, build each command's view ahead of it in a low-priority
    /// thread (`false`: each command's child builds its own).
    pub views_ahead: bool,
    /// Seconds a command may run when the request names no timeout.
    pub timeout_secs: u64,
    /// The longest timeout a request may ask for, in seconds.
    pub max_timeout_secs: u64,
    /// Characters of stdout (and of stderr) shown before the middle is cut.
    pub max_output_chars: usize,
    /// Variables added to the commands' scrubbed environment.
    pub env: BTreeMap<String, String>,
    /// Host variables passed through to commands.
    pub pass_env: Vec<String>,
    /// Directories commands may write besides the workspace.
    pub writable: Vec<PathBuf>,
    /// Paths commands may read besides the system directories and the
    /// workspace (toolchains); missing ones are skipped.
    pub read: Vec<PathBuf>,
    /// Tasks (processes and threads) one command may have at once.
    pub max_processes: u32,
    /// The largest file a command may write, in MiB.
    pub max_file_size_mb: u64,
    /// Size of a command's private /tmp, in MiB.
    pub tmp_size_mb: u64,
    /// Background commands that may run at once (`max_sessions`, its
    /// name before 0.1, still reads).
    #[serde(alias = "max_sessions")]
    pub max_background: usize,
    /// Background commands running at once for all clients together.
    pub max_background_total: usize,
    /// Seconds a finished background command is kept.
    #[serde(alias = "session_ttl_secs")]
    pub background_ttl_secs: u64,
    /// Characters of a background command's output kept between polls.
    #[serde(alias = "session_buffer_chars")]
    pub background_buffer_chars: usize,
}

impl Default for CommandsSection {
    fn default() -> Self {
        let c = CommandConfig::default();
        Self {
            enabled: c.enabled,
            allow: c.allow,
            deny: c.deny,
            allowed_only: c.allowed_only,
            require_sandbox: c.require_sandbox,
            namespaces: c.namespaces,
            views_ahead: c.views_ahead,
            timeout_secs: c.default_timeout.as_secs(),
            max_timeout_secs: c.max_timeout.as_secs(),
            max_output_chars: c.max_output_chars,
            env: c.env.into_iter().collect(),
            pass_env: c.pass_env,
            writable: c.writable,
            read: c.read,
            max_processes: c.max_processes,
            max_file_size_mb: c.max_file_size_mb,
            tmp_size_mb: c.tmp_size_mb,
            max_background: c.max_background,
            max_background_total: c.max_background_total,
            background_ttl_secs: c.background_ttl.as_secs(),
            background_buffer_chars: c.background_buffer_chars,
        }
    }
}

impl CommandsSection {
    /// The broker configuration this section describes.
    pub fn to_command_config(&self) -> CommandConfig {
        CommandConfig {
            enabled: self.enabled,
            allow: self.allow.clone(),
            deny: self.deny.clone(),
            allowed_only: self.allowed_only,
            require_sandbox: self.require_sandbox,
            namespaces: self.namespaces,
            views_ahead: self.views_ahead,
            default_timeout: Duration::from_secs(self.timeout_secs),
            max_timeout: Duration::from_secs(self.max_timeout_secs),
            max_output_chars: self.max_output_chars,
            env: self.env.clone().into_iter().collect(),
            pass_env: self.pass_env.clone(),
            writable: self.writable.clone(),
            read: self.read.clone(),
            max_processes: self.max_processes,
            max_file_size_mb: self.max_file_size_mb,
            tmp_size_mb: self.tmp_size_mb,
            max_background: self.max_background,
            max_background_total: self.max_background_total,
            background_ttl: Duration::from_secs(self.background_ttl_secs),
            background_buffer_chars: self.background_buffer_chars,
        }
    }
}

/// `[grants.TOOL]`: what one tool may use. It replaces the tool's default
/// grant (built-ins: what they declare; others: nothing), and a tool never
/// gets more than it declares.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrantSection {
    /// `none`, `read` or `write`.
    pub workspace: WorkspaceAccess,
    /// Whether the command broker answers it.
    pub commands: bool,
    /// Hosts it may reach (`*`: any public host).
    pub network: Vec<String>,
    /// Host environment variables it sees.
    pub env: Vec<String>,
    /// Extra host directories, mounted at `/GUEST`.
    pub directories: Vec<DirSection>,
    /// The embedder's services it may call (`service:NAME`).
    pub services: Vec<String>,
}

/// `[[grants.TOOL.directories]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirSection {
    /// The host directory.
    pub host: PathBuf,
    /// The name the tool knows it by (mounted at `/<guest>`).
    pub guest: String,
    /// `read` or `write`.
    pub access: Access,
}

impl GrantSection {
    /// The grant this section describes.
    pub fn to_grant(&self) -> Grant {
        Grant {
            workspace: match self.workspace {
                WorkspaceAccess::None => None,
                WorkspaceAccess::Read => Some(Access::Read),
                WorkspaceAccess::Write => Some(Access::Write),
            },
            commands: self.commands,
            network: self.network.clone(),
            directories: self
                .directories
                .iter()
                .map(|d| DirGrant {
                    name: d.guest.clone(),
                    host_path: d.host.clone(),
                    access: d.access,
                })
                .collect(),
            env: self.env.clone(),
            services: self.services.clone(),
            state_dirs: Vec::new(),
            all_declared: false,
        }
    }
}

impl From<&Grant> for GrantSection {
    fn from(grant: &Grant) -> Self {
        Self {
            workspace: match grant.workspace {
                None => WorkspaceAccess::None,
                Some(Access::Read) => WorkspaceAccess::Read,
                Some(Access::Write) => WorkspaceAccess::Write,
            },
            commands: grant.commands,
            network: grant.network.clone(),
            env: grant.env.clone(),
            directories: grant
                .directories
                .iter()
                .map(|d| DirSection {
                    host: d.host_path.clone(),
                    guest: d.name.clone(),
                    access: d.access,
                })
                .collect(),
            services: grant.services.clone(),
        }
    }
}

/// `[tools.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSection {
    /// Replaces the description schemas and MCP show; never what the tool
    /// may do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Settings the tool reads from its call context (over the global ones).
    pub settings: serde_json::Map<String, serde_json::Value>,
}

/// `[hooks]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HooksSection {
    /// `[[hooks.post_edit]]`: run after a call changed files.
    pub post_edit: Vec<PostEditHook>,
}

/// `[profiles.NAME]`: a named variant (seed 001's per-bot tools, seed 000's
/// allowed_tools).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProfileSection {
    /// Overrides the mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Only these tools are visible, if set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// These tools are hidden.
    pub disabled: Vec<String>,
    /// Grants over the top-level ones.
    pub grants: BTreeMap<String, GrantSection>,
    /// Overrides `allow_delete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_delete: Option<bool>,
    /// Overrides `prompt_mode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_mode: Option<crate::guidance::PromptMode>,
    /// Overrides `memory_dir`: this agent's own memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_dir: Option<PathBuf>,
    /// Overrides `soul_dir`: this agent's own persona.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soul_dir: Option<PathBuf>,
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
    /// Grants for tools that are not loaded: kept, and applied when a
    /// tool of that name is loaded (a plugin dropped in later); each says
    /// which.
    pub waiting_grants: Vec<String>,
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
        self.prompts_dir.iter_mut().for_each(fix);
        self.state_dir.iter_mut().for_each(fix);
        self.memory_dir.iter_mut().for_each(fix);
        self.soul_dir.iter_mut().for_each(fix);
        for profile in self.profiles.values_mut() {
            profile.memory_dir.iter_mut().for_each(fix);
            profile.soul_dir.iter_mut().for_each(fix);
        }
        self.schemas_dir.iter_mut().for_each(fix);
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
pub use build::waiting_grant;
pub use mcp_servers::{ConnectSection, McpServerSection};
pub use web_search::{BRAVE_ENDPOINT, Provider as SearchProvider, WebSearchSection};
#[cfg(test)]
mod tests;
