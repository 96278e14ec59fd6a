//! The brokered command runner behind the `commands` import
//! (imports/commands.rs).
//!
//! A plugin never spawns a process; it asks the broker, which for every
//! request:
//! 1. parses the command line and applies the [`policy`]: the
//!    blocklist refuses in every mode; the rest is classed `safe`, `dev` or
//!    `dangerous`;
//! 2. refuses `dangerous` commands outright when `allowed_only` is set;
//! 3. asks the caller's [`Confirmer`](crate::types::confirm::Confirmer) when the mode and class require it;
//! 4. runs the command in the workspace with stdin closed, a scrubbed
//!    environment, a timeout that kills the whole process group, and OS
//!    confinement ([`confine`]), which is the boundary whatever the class:
//!    namespaces with a private view of the file system (secrets masked,
//!    protected paths read-only), no capabilities, a process limit, and
//!    Landlock and seccomp inside (or alone, where namespaces are
//!    unavailable);
//! 5. caps the output to a head and a tail and keeps the full text by id;
//! 6. moves aside any protected path the command created (sweep.rs).
//!
//! Background commands (background.rs) are capped, expire after they finish,
//! and never outlive the host (process.rs).

pub(crate) mod background;
mod call;
mod env;
pub(crate) mod output;
mod process;
mod request;
mod scan;
mod sweep;

#[cfg(feature = "mcp")]
pub(crate) use call::Piped;
pub use call::{BrokerCall, CommandRecord};
pub(crate) use process::settle_cleanup;
pub use request::{BackgroundStatus, CommandError, CommandOutput, CommandRequest, Program};
/// The OS sandbox of commands (crate `toolhost-confine`): namespaces,
/// mounts, Landlock, seccomp, cgroups.
use toolhost_confine as confine;
/// The command policy (crate `toolhost-policy`): parsing, blocklist,
/// classes.
pub use toolhost_policy as policy;
pub(crate) use toolhost_shared::shell_words;

use crate::types::paths::PathRules;
use confine::{Found, Limits, Plan, Prepared, Support, cgroup::Pids};
use policy::{Assessment, Pattern, Policy};
use scan::Scanner;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// toolhost's own directories (configuration, trust store, state, the
/// compile cache of native code); where they are does not change while the
/// host runs. The fallback cannot hide them, so a writable path holding one
/// refuses its commands.
static POLICY_DIRS: LazyLock<Vec<(&str, PathBuf)>> = LazyLock::new(crate::types::paths::own_dirs);

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
    /// Refuse to run when the full sandbox (namespaces, Landlock and
    /// seccomp) cannot be built here.
    pub require_sandbox: bool,
    /// Use the namespace sandbox where this host allows it; `false` keeps
    /// to the fallback (Landlock and seccomp alone).
    pub namespaces: bool,
    /// Where the host may make mount namespaces itself (as root), build
    /// the next command's view ahead in a thread of low priority (nice 19); `false`:
    /// each command's child builds its own.
    pub views_ahead: bool,
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
    /// Variables a request may set without that making the command
    /// dangerous, besides the fixed list (e.g. `PYTHONPATH`).
    pub settable_env: Vec<String>,
    /// Directories commands may write besides the workspace and their
    /// private temp dir (e.g. `~/.cargo` for builds that fetch crates).
    pub writable: Vec<PathBuf>,
    /// Paths commands may read besides the system directories and the
    /// workspace (toolchains); those missing on this host are skipped.
    pub read: Vec<PathBuf>,
    /// Tasks (processes and threads) one command may have at once.
    pub max_processes: u32,
    /// The largest file a command may write, in MiB.
    pub max_file_size_mb: u64,
    /// Size of a command's private `/tmp`, in MiB (`/dev/shm` gets a
    /// quarter).
    pub tmp_size_mb: u64,
    /// Background commands one client (MCP session) may run at once.
    pub max_background: usize,
    /// Background commands all clients together may run at once.
    pub max_background_total: usize,
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
            namespaces: true,
            views_ahead: true,
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(600),
            max_output_chars: 30_000,
            env: Vec::new(),
            pass_env: Vec::new(),
            settable_env: Vec::new(),
            writable: Vec::new(),
            read: default_read(),
            max_processes: 512,
            max_file_size_mb: 8192,
            tmp_size_mb: 1024,
            max_background: 10,
            max_background_total: 64,
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

/// Toolchains in the home directory that commands may read by default
/// (each only if present): enough for cargo, rustup, pyenv, nvm, pip's
/// user site, bun, deno, go and git's user configuration.
pub const DEFAULT_READ: &[&str] = &[
    "~/.cargo",
    "~/.rustup",
    "~/.pyenv",
    "~/.nvm",
    "~/.local/bin",
    "~/.local/lib",
    "~/.bun",
    "~/.deno",
    "~/go",
    "~/.gitconfig",
    "~/.config/git",
];

/// [`DEFAULT_READ`] with `~` expanded.
pub fn default_read() -> Vec<PathBuf> {
    let home = dirs::home_dir();
    DEFAULT_READ
        .iter()
        .filter_map(|p| {
            let rest = p.strip_prefix("~/")?;
            Some(home.as_ref()?.join(rest))
        })
        .collect()
}

/// Bytes of one command's output kept for retrieval (head + tail).
const KEEP_BYTES: usize = 16 << 20;

/// Runs commands for plugins; one per executor, shared by its calls.
pub struct Broker {
    config: CommandConfig,
    policy: Policy,
    shell: PathBuf,
    /// Secret and protected paths.
    rules: Arc<PathRules>,
    /// The guarded paths of each workspace commands ran in.
    scanners: Mutex<HashMap<PathBuf, Arc<Scanner>>>,
    /// Where protected paths commands created are moved ([`sweep`]).
    swept_dir: PathBuf,
    pub(crate) kept: output::Kept,
    pub(crate) background: background::Background,
    /// Started on the first command.
    processes: OnceLock<Result<Processes, StartError>>,
    /// How long starting each command in its sandbox took (`/metrics`).
    pub(crate) spawn_seconds: prometheus_client::metrics::histogram::Histogram,
}

/// Why commands cannot run at all here.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("cannot start the command runner: {0}")]
    Runner(#[source] std::io::Error),
    #[error("cannot create the commands' private temp dir: {0}")]
    Temp(#[source] std::io::Error),
}

/// Why the namespace sandbox cannot be used here (commands then run in
/// the fallback, Landlock and seccomp alone).
#[derive(Debug, thiserror::Error)]
enum NoNamespaces {
    #[error(transparent)]
    Confine(#[from] confine::Error),
    #[error("a test command cannot start in the sandbox: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("a test command in the sandbox cannot be waited for: {0}")]
    Wait(#[source] rustix::io::Errno),
    #[error("a test command in the sandbox ended with {0:?}")]
    Ended(Option<i32>),
    /// The system's settings refuse user namespaces: the cause, with how
    /// to allow them, rather than the errno it shows as.
    #[error("{cause} (the test command failed: {failure})")]
    Disabled { cause: String, failure: String },
}

impl NoNamespaces {
    /// `self`, or the cause behind it where the system's settings
    /// (`sys`, `/proc/sys`) turn user namespaces off.
    fn explained(self, sys: &Path) -> Self {
        let uses_user_namespace = !rustix::process::geteuid().is_root();
        match (
            &self,
            uses_user_namespace.then(|| userns_disabled(sys)).flatten(),
        ) {
            (Self::Spawn(_) | Self::Ended(_), Some(cause)) => Self::Disabled {
                cause,
                failure: self.to_string(),
            },
            _ => self,
        }
    }
}

/// Why this system refuses unprivileged user namespaces, from its
/// settings under `sys` (`/proc/sys`), with how to allow them; `None` if
/// no setting says so.
fn userns_disabled(sys: &Path) -> Option<String> {
    let read = |p: &str| {
        std::fs::read_to_string(sys.join(p))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    if read("user/max_user_namespaces").as_deref() == Some("0") {
        return Some(
            "user namespaces are turned off on this system (user.max_user_namespaces = 0); \
             allow them with `sudo sysctl -w user.max_user_namespaces=15000`"
                .to_owned(),
        );
    }
    if read("kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some(
            "unprivileged user namespaces are turned off on this system \
             (kernel.unprivileged_userns_clone = 0); allow them with \
             `sudo sysctl -w kernel.unprivileged_userns_clone=1`"
                .to_owned(),
        );
    }
    if read("kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Some(
            "AppArmor restricts unprivileged user namespaces on this system \
             (kernel.apparmor_restrict_unprivileged_userns = 1, as Ubuntu 24.04 sets it); allow \
             them with `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, or give \
             toolhost an AppArmor profile that allows `userns`"
                .to_owned(),
        );
    }
    None
}

/// What running commands needs, started on first use.
struct Processes {
    spawner: process::Spawner,
    watchdog: Option<Arc<process::Watchdog>>,
    temp: tempfile::TempDir,
    /// The environment every command starts from (see `env::base_env`),
    /// in the namespaces and in the fallback.
    env: Vec<(String, String)>,
    fallback_env: Vec<(String, String)>,
    /// The read list: present paths, canonical.
    read: Vec<PathBuf>,
    /// The read list is the default one, not the person's (its entries
    /// inside a workspace are left out rather than refused).
    default_read: bool,
    /// Secret paths near the top of the read list and the writable
    /// directories (looked for once).
    read_secrets: Vec<PathBuf>,
    /// Why the namespace sandbox cannot be used, if it cannot.
    namespaces: Result<(), NoNamespaces>,
    pids: Option<Arc<Pids>>,
    /// The views' skeletons (see crates/confine/src/view.rs).
    skeletons: Option<confine::view::Skeletons>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("config", &self.config)
            .field("support", Support::get())
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
            settable: config.settable_env.clone(),
        };
        let shell = ["/bin/bash", "/usr/bin/bash", "/bin/sh"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .unwrap_or_else(|| PathBuf::from("/bin/sh"));
        Ok(Self {
            kept: output::Kept::new(64, 64 << 20, 256 << 20),
            background: background::Background::new(
                config.max_background.max(1),
                config.max_background_total,
                config.background_ttl,
            ),
            config,
            policy,
            shell,
            rules: PathRules::shared_default(),
            scanners: Mutex::default(),
            swept_dir: sweep::default_dir(),
            processes: OnceLock::new(),
            // 0.5 ms to 1 s.
            spawn_seconds: prometheus_client::metrics::histogram::Histogram::new(
                prometheus_client::metrics::histogram::exponential_buckets(0.0005, 2.0, 12),
            ),
        })
    }

    /// The same broker with these secret and protected paths.
    #[must_use]
    pub fn with_path_rules(mut self, rules: Arc<PathRules>) -> Self {
        self.rules = rules;
        self.scanners = Mutex::default();
        self
    }

    /// `owner` (an MCP session) is gone: kill its background commands and
    /// forget them and its kept outputs. Returns how many were running.
    pub(crate) fn end_session(&self, owner: &str) -> usize {
        self.kept.release(owner);
        let killed = self.background.release(owner);
        if let Some(Ok(processes)) = self.processes.get() {
            processes.spawner.forget(owner);
        }
        killed
    }

    /// The full outputs of cut commands `owner` still keeps: ids and sizes
    /// in bytes, oldest first.
    pub(crate) fn kept_outputs(&self, owner: &str) -> Vec<(String, usize)> {
        self.kept.list(owner)
    }

    /// The full output `owner` keeps under `id`.
    pub(crate) fn kept_output(&self, owner: &str, id: &str) -> Option<String> {
        self.kept.get(owner, id)
    }

    /// The secret and protected paths.
    pub fn path_rules(&self) -> &Arc<PathRules> {
        &self.rules
    }

    /// The configuration.
    pub fn config(&self) -> &CommandConfig {
        &self.config
    }

    /// What the policy says about a shell command line, without running it.
    pub fn assess(&self, line: &str) -> Result<Assessment, policy::Refusal> {
        self.policy.assess_line(line)
    }

    /// What a command would be confined by here, e.g. `["user-ns", …,
    /// "landlock-fs (abi 6)", "seccomp-session"]`, with or without the
    /// network.
    pub fn confinement(&self, network: bool) -> Vec<String> {
        let Ok(processes) = self.processes() else {
            return Vec::new();
        };
        let temp = processes.temp.path();
        let none = Found::default();
        let plan = self.plan(processes, temp, network, &none);
        Prepared::new(&plan, Support::get()).map_or_else(|_| Vec::new(), |p| p.enforced)
    }

    /// Why the namespace sandbox is not used here, if it is not.
    pub fn without_namespaces(&self) -> Option<String> {
        if !self.config.namespaces {
            return Some("turned off by configuration (commands.namespaces = false)".to_owned());
        }
        match self.processes() {
            Ok(p) => p.namespaces.as_ref().err().map(ToString::to_string),
            Err(e) => Some(e.to_string()),
        }
    }

    fn plan<'a>(
        &'a self,
        processes: &'a Processes,
        workspace: &'a Path,
        network: bool,
        found: &'a Found,
    ) -> Plan<'a> {
        Plan {
            workspace,
            writable: &self.config.writable,
            read: &processes.read,
            temp: processes.temp.path(),
            network,
            namespaces: self.config.namespaces && processes.namespaces.is_ok(),
            found,
            policy_dirs: &POLICY_DIRS,
            limits: Limits {
                processes: self.config.max_processes.max(1),
                file_size: self
                    .config
                    .max_file_size_mb
                    .saturating_mul(1 << 20)
                    .max(1 << 20),
                tmp_mib: self.config.tmp_size_mb,
            },
            pids: processes.pids.as_deref(),
            skeletons: processes.skeletons.as_ref(),
        }
    }

    /// The secret and protected paths now present in `workspace`, and the
    /// secrets of the read list.
    fn guarded(&self, processes: &Processes, workspace: &Path) -> Found {
        let scanner = Arc::clone(
            self.scanners
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(workspace.to_owned())
                .or_insert_with(|| {
                    Arc::new(Scanner::new(workspace.to_owned(), Arc::clone(&self.rules)))
                }),
        );
        let mut found = scanner.current();
        found.secret.extend(processes.read_secrets.iter().cloned());
        found
    }

    /// End the ids of background commands and kept outputs with `suffix`
    /// from now on (once): among replicas, the name of the one holding
    /// them (mcp/cluster.rs).
    pub fn set_handle_suffix(&self, suffix: &str) {
        self.background.set_suffix(suffix);
        let _ = self.kept.suffix.set(suffix.to_owned());
    }

    /// How many commands entered a view made ahead (crates/confine/src/spawn/ahead.rs).
    pub(crate) fn views_made_ahead(&self) -> u64 {
        self.processes
            .get()
            .and_then(|p| p.as_ref().ok())
            .map_or(0, |p| p.spawner.views_made_ahead())
    }

    fn processes(&self) -> Result<&Processes, CommandError> {
        self.processes
            .get_or_init(|| {
                let pids = Pids::new().map(Arc::new);
                let spawner = process::Spawner::new(
                    pids.clone(),
                    self.config.max_processes.max(1),
                    self.config.views_ahead,
                )
                    .map_err(StartError::Runner)?;
                let temp = tempfile::Builder::new()
                    .prefix("toolhost-cmd-")
                    .tempdir()
                    .map_err(StartError::Temp)?;
                let read: Vec<PathBuf> = self
                    .config
                    .read
                    .iter()
                    .filter_map(|p| p.canonicalize().ok())
                    .collect();
                let mut near_top = read.clone();
                near_top.extend(self.config.writable.iter().filter_map(|p| p.canonicalize().ok()));
                let mut read_secrets = scan::shallow_secrets(&near_top, &self.rules, 3);
                // toolhost's own configuration, trust store, state and
                // cache are hidden from commands even when a person made a
                // directory holding them readable or writable.
                read_secrets.extend(
                    crate::types::paths::own_dirs()
                        .into_iter()
                        .filter_map(|(_, d)| d.canonicalize().ok())
                        .filter(|d| near_top.iter().any(|t| d.starts_with(t))),
                );
                let home = dirs::home_dir();
                let mut processes = Processes {
                    spawner,
                    watchdog: process::Watchdog::start().map(Arc::new),
                    env: env::base_env(&self.config, Path::new("/tmp"), home.as_deref()),
                    fallback_env: env::base_env(&self.config, temp.path(), home.as_deref()),
                    temp,
                    read,
                    default_read: self.config.read == default_read(),
                    read_secrets,
                    namespaces: Ok(()),
                    pids,
                    skeletons: None,
                };
                if self.config.namespaces {
                    processes.skeletons = confine::view::Skeletons::new()
                        .inspect_err(|e| {
                            tracing::warn!("cannot make a directory for the views' skeletons: {e}");
                        })
                        .ok();
                    processes.namespaces = self
                        .probe_namespaces(&processes)
                        .map_err(|e| e.explained(Path::new("/proc/sys")));
                    if let Err(why) = &processes.namespaces {
                        tracing::warn!(
                            "commands run without namespaces, confined by Landlock and seccomp only: {why}"
                        );
                    }
                }
                Ok(processes)
            })
            .as_ref()
            .map_err(|e| CommandError::Failed(e.to_string()))
    }

    /// Whether a namespaced command starts here: run `true` in one.
    fn probe_namespaces(&self, processes: &Processes) -> Result<(), NoNamespaces> {
        let temp = processes.temp.path();
        let found = Found::default();
        let mut plan = self.plan(processes, temp, false, &found);
        plan.namespaces = true;
        plan.pids = None;
        let prepared = Prepared::new(&plan, Support::get())?;
        let program = confine::candidates("true", "/usr/bin:/bin", temp);
        let launch = prepared.launch(temp, program, vec![c"true".into()], Vec::new())?;
        let started = processes
            .spawner
            .spawn(launch, false)
            .map_err(NoNamespaces::Spawn)?;
        let pid = rustix::process::Pid::from_raw(i32::try_from(started.pid).unwrap_or(0));
        let status = rustix::process::waitpid(pid, rustix::process::WaitOptions::empty())
            .map_err(NoNamespaces::Wait)?;
        match status.and_then(|(_, s)| s.exit_status()) {
            Some(0) => Ok(()),
            other => Err(NoNamespaces::Ended(other)),
        }
    }
}

#[cfg(test)]
mod tests;
