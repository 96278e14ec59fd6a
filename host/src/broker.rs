//! The brokered command runner behind the `commands` import
//! (imports/commands.rs).
//!
//! A plugin never spawns a process; it asks the broker, which for every
//! request:
//! 1. parses the command line ([`shell`]) and applies the [`policy`]: the
//!    blocklist refuses in every mode; the rest is classed `safe`, `dev` or
//!    `dangerous`;
//! 2. refuses `dangerous` commands outright when `allowed_only` is set;
//! 3. asks the caller's [`Confirmer`] when the mode and class require it;
//! 4. runs the command in the workspace with stdin closed, a scrubbed
//!    environment, a timeout that kills the whole process group, and OS
//!    confinement ([`confine`]): Landlock, seccomp, `no_new_privs`;
//! 5. caps the output to a head and a tail and keeps the full text by id.
//!
//! Background commands ([`background`]) are capped, expire after they finish,
//! and never outlive the host ([`process`]).

pub(crate) mod background;
mod call;
mod confine;
mod env;
pub(crate) mod output;
pub mod policy;
mod process;
mod shell;

pub use call::{BrokerCall, CommandRecord};
pub(crate) use toolhost_shared::shell_words;

use crate::bindings::commands::CommandError;
use confine::{Plan, Prepared, Support};
use policy::{Assessment, Pattern, Policy};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How the broker runs commands; the `[commands]` part of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandConfig {
    /// Whether commands run at all (`--no-commands` turns this off).
    pub enabled: bool,
    /// Argv patterns (`cargo test *`, `npm run **`) classed `safe`.
    pub allow: Vec<String>,
    /// Argv patterns refused like the blocklist.
    pub deny: Vec<String>,
    /// Refuse `dangerous` commands without asking.
    pub allowed_only: bool,
    /// Refuse to run when Landlock or the network filter cannot be enforced.
    pub require_sandbox: bool,
    /// Timeout when the request gives none.
    pub default_timeout: Duration,
    /// The longest timeout a request may ask for.
    pub max_timeout: Duration,
    /// Characters of stdout (and of stderr) shown before cutting the middle.
    pub max_output_chars: usize,
    /// Variables added to the scrubbed environment.
    pub env: Vec<(String, String)>,
    /// Host variables passed through (e.g. `CARGO_HOME`).
    pub pass_env: Vec<String>,
    /// Directories commands may write besides the workspace and their
    /// private temp dir (e.g. `~/.cargo` for builds that fetch crates).
    pub writable: Vec<PathBuf>,
    /// Background commands that may run at once.
    pub max_background: usize,
    /// How long a finished background command is kept.
    pub background_ttl: Duration,
    /// Characters of a background command's output kept between polls.
    pub background_buffer_chars: usize,
}

impl Default for CommandConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            allow: Vec::new(),
            deny: Vec::new(),
            allowed_only: false,
            require_sandbox: false,
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(600),
            max_output_chars: 30_000,
            env: Vec::new(),
            pass_env: Vec::new(),
            writable: Vec::new(),
            max_background: 10,
            background_ttl: Duration::from_secs(600),
            background_buffer_chars: 200_000,
        }
    }
}

/// Why a [`Broker`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// An allow or deny pattern is malformed.
    #[error("commands.{key}: {source}")]
    Pattern {
        /// `allow` or `deny`.
        key: &'static str,
        /// What is wrong with it.
        source: policy::PatternError,
    },
}

/// Bytes of one command's output kept for retrieval (head + tail).
const KEEP_BYTES: usize = 16 << 20;

/// Runs commands for plugins; one per executor, shared by its calls.
pub struct Broker {
    config: CommandConfig,
    policy: Policy,
    support: Support,
    shell: PathBuf,
    pub(crate) kept: output::Kept,
    pub(crate) background: background::Background,
    /// Started on the first command.
    processes: OnceLock<Result<Processes, String>>,
}

/// What running commands needs, started on first use.
struct Processes {
    spawner: process::Spawner,
    watchdog: Option<Arc<process::Watchdog>>,
    temp: tempfile::TempDir,
    /// The environment every command starts from (see `env::base_env`).
    env: Vec<(String, String)>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("config", &self.config)
            .field("support", &self.support)
            .finish_non_exhaustive()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.background.kill_all();
    }
}

impl Broker {
    /// A broker with `config`; the error names a bad pattern.
    pub fn new(config: CommandConfig) -> Result<Self, BrokerError> {
        let patterns = |list: &[String], key: &'static str| -> Result<Vec<Pattern>, BrokerError> {
            list.iter()
                .map(|p| Pattern::parse(p).map_err(|source| BrokerError::Pattern { key, source }))
                .collect()
        };
        let policy = Policy {
            allow: patterns(&config.allow, "allow")?,
            deny: patterns(&config.deny, "deny")?,
        };
        let shell = ["/bin/bash", "/usr/bin/bash", "/bin/sh"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .unwrap_or_else(|| PathBuf::from("/bin/sh"));
        Ok(Self {
            kept: output::Kept::new(64, 64 << 20),
            background: background::Background::new(
                config.max_background.max(1),
                config.background_ttl,
            ),
            config,
            policy,
            support: Support::get(),
            shell,
            processes: OnceLock::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &CommandConfig {
        &self.config
    }

    /// What the policy says about a shell command line, without running it.
    pub fn assess(&self, line: &str) -> Result<Assessment, policy::Refusal> {
        self.policy.assess_line(line)
    }

    /// What this system can enforce, e.g. `["no-new-privs", "landlock-fs (abi 7)", …]`.
    pub fn confinement(&self, network: bool) -> Vec<String> {
        let plan = Plan {
            writable: Vec::new(),
            network,
        };
        Prepared::new(&plan, &self.support).map_or_else(|_| Vec::new(), |p| p.enforced)
    }

    fn processes(&self) -> Result<&Processes, CommandError> {
        self.processes
            .get_or_init(|| {
                let spawner = process::Spawner::new()
                    .map_err(|e| format!("cannot start the command runner: {e}"))?;
                let temp = tempfile::Builder::new()
                    .prefix("toolhost-cmd-")
                    .tempdir()
                    .map_err(|e| format!("cannot create the commands' private temp dir: {e}"))?;
                Ok(Processes {
                    spawner,
                    watchdog: process::Watchdog::start().map(Arc::new),
                    env: env::base_env(&self.config, temp.path()),
                    temp,
                })
            })
            .as_ref()
            .map_err(|e| CommandError::Failed(e.clone()))
    }
}

#[cfg(test)]
mod tests;
