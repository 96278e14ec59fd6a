//! The sections of toolhost.toml beyond the top level: [agent], [dynamic], [limits], [commands], grants, tools, hooks and profiles.

use super::*;

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
    /// Tokens per run, as the endpoint counts them (none: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Seconds one request to the endpoint may take.
    pub request_timeout_secs: u64,
    /// Text put before the tools' guidance in the system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Requests sent again after a failure that may pass (429, 5xx, a
    /// timeout), honouring `Retry-After`.
    pub retries: u32,
    /// How deep sub-agents (`spawn`) may go: 1 lets the agent start
    /// sub-agents that start none.
    pub max_depth: u32,
    /// Keep each run's task and answer in the session history
    /// (`sessions/DATE.md` in the memory directory), for memory_search.
    pub history: bool,
    /// `[agent.fallback]`: another endpoint asked when this one fails for
    /// good.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<FallbackSection>,
}

/// `[agent.fallback]`: the endpoint asked when the first fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackSection {
    /// `openai` or `anthropic`.
    #[serde(default = "openai")]
    pub api: String,
    /// Its URL.
    pub endpoint: String,
    /// The model it serves.
    pub model: String,
    /// The environment variable holding its API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
}

fn openai() -> String {
    "openai".to_owned()
}

impl FallbackSection {
    /// The API it names, checked (and that `api_key_env` names a variable).
    pub fn api(&self) -> Result<crate::agent::Api, ConfigError> {
        checked_api("agent.fallback", &self.api, self.api_key_env.as_deref())
    }
}

/// The API `api` names, checked, and that `key_env` names a variable (a
/// key pasted there is refused without being shown); `section` names the
/// keys in messages.
pub(super) fn checked_api(
    section: &str,
    api: &str,
    key_env: Option<&str>,
) -> Result<crate::agent::Api, ConfigError> {
    if key_env.is_some_and(|v| !crate::types::grant::is_env_name(v)) {
        return Err(invalid(
            "configuration",
            format!(
                "{section}.api_key_env takes the NAME of an environment variable holding the key \
                 (letters, digits and `_`), not the key itself"
            ),
        ));
    }
    api.parse().map_err(|e: crate::agent::AgentError| {
        invalid("configuration", format!("{section}.api: {e}"))
    })
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
            max_tokens: budget.max_tokens,
            request_timeout_secs: 120,
            system: None,
            retries: crate::agent::DEFAULT_RETRIES,
            history: true,
            max_depth: 2,
            fallback: None,
        }
    }
}

impl AgentSection {
    /// The API it names, checked (and that `api_key_env` names a variable:
    /// a key pasted there is refused without being shown).
    pub fn api(&self) -> Result<crate::agent::Api, ConfigError> {
        checked_api("agent", &self.api, self.api_key_env.as_deref())
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
        build::in_range("agent.retries", self.retries.into(), 0, 10)?;
        build::in_range("agent.max_depth", self.max_depth.into(), 1, 5)?;
        if let Some(tokens) = self.max_tokens {
            build::in_range("agent.max_tokens", tokens, 100, 1_000_000_000)?;
        }
        Ok(crate::agent::Budget {
            max_tool_rounds: self.max_tool_rounds,
            max_tool_calls: self.max_tool_calls,
            max_result_chars: self.max_result_chars,
            max_tokens: self.max_tokens,
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
    /// Variables commands may set without asking, besides the fixed list.
    pub settable_env: Vec<String>,
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
    /// Background commands that may run at once.
    pub max_background: usize,
    /// Background commands running at once for all clients together.
    pub max_background_total: usize,
    /// Seconds a finished background command is kept.
    pub background_ttl_secs: u64,
    /// Characters of a background command's output kept between polls.
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
            settable_env: c.settable_env,
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
            settable_env: self.settable_env.clone(),
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

/// `[profiles.NAME]`: a named variant (the TypeScript bot framework's per-bot tools, the Python tool system's
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

/// One `[[plugins]]` entry: a component from a registry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSection {
    /// `oci://REGISTRY/REPOSITORY:TAG` (or `@sha256:…`).
    pub source: String,
}

/// `[signatures]`: whether components from registries must be signed,
/// and by which keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SignaturesSection {
    /// Load a pulled component only if one of `keys` signed it (as cosign
    /// does, in the registry).
    pub require: bool,
    /// PEM ECDSA P-256 public keys (`cosign.pub`).
    pub keys: Vec<PathBuf>,
}
