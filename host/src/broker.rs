//! The brokered command runner: the host side of the `commands` interface.
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
//! Background sessions ([`sessions`]) are capped, expire after they finish,
//! and never outlive the host ([`process`]).

mod confine;
mod output;
pub mod policy;
mod process;
mod sessions;
mod shell;

use crate::bindings::commands::{
    self, CommandError, CommandOutput, CommandRequest, Program, SessionStatus,
};
use crate::executor::{ConfirmRequest, Confirmer, Decision, Mode};
use crate::sandbox::{CallState, CancelToken};
use confine::{Plan, Prepared, Support};
use policy::{Assessment, Class, Pattern, Policy};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
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
    /// Background sessions that may run at once.
    pub max_sessions: usize,
    /// How long a finished background session is kept.
    pub session_ttl: Duration,
    /// Characters of a background session's output kept between polls.
    pub session_buffer_chars: usize,
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
            max_sessions: 10,
            session_ttl: Duration::from_secs(600),
            session_buffer_chars: 200_000,
        }
    }
}

/// Bytes of one command's output kept for retrieval (head + tail).
const KEEP_BYTES: usize = 16 << 20;

/// Runs commands for plugins; one per executor, shared by its calls.
pub struct Broker {
    config: CommandConfig,
    policy: Policy,
    support: Support,
    shell: PathBuf,
    kept: output::Kept,
    sessions: sessions::Sessions,
    /// Started on the first command.
    processes: OnceLock<Result<Processes, String>>,
}

/// What running commands needs, started on first use.
struct Processes {
    spawner: process::Spawner,
    watchdog: Option<Arc<process::Watchdog>>,
    temp: tempfile::TempDir,
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
        self.sessions.kill_all();
    }
}

impl Broker {
    /// A broker with `config`; the error names a bad pattern.
    pub fn new(config: CommandConfig) -> Result<Self, String> {
        let patterns = |list: &[String], what: &str| -> Result<Vec<Pattern>, String> {
            list.iter()
                .map(|p| Pattern::parse(p).map_err(|e| format!("commands.{what}: {e}")))
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
            sessions: sessions::Sessions::new(config.max_sessions.max(1), config.session_ttl),
            config,
            policy,
            support: Support::probe(),
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
        Prepared::new(&plan, self.support).map_or_else(|_| Vec::new(), |p| p.enforced)
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
                    temp,
                })
            })
            .as_ref()
            .map_err(|e| CommandError::Failed(e.clone()))
    }
}

/// What one call may do with the broker; built by the [`crate::Executor`]
/// for a tool granted `commands`.
#[derive(Clone)]
pub struct BrokerCall {
    pub(crate) broker: Arc<Broker>,
    pub(crate) tool: Arc<str>,
    pub(crate) workspace: Option<PathBuf>,
    /// The grant lets commands use the network.
    pub(crate) network: bool,
    pub(crate) mode: Mode,
    pub(crate) confirmer: Arc<dyn Confirmer>,
    /// Set when a person answers "abort all".
    pub(crate) aborted: Arc<AtomicBool>,
    pub(crate) dry_run: bool,
}

impl std::fmt::Debug for BrokerCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerCall")
            .field("tool", &self.tool)
            .field("mode", &self.mode)
            .field("dry_run", &self.dry_run)
            .finish_non_exhaustive()
    }
}

/// A request after checks, ready to start.
struct Checked {
    shown: String,
    command: Command,
    enforced: Vec<String>,
    timeout: Duration,
}

impl BrokerCall {
    fn broker(&self) -> &Broker {
        &self.broker
    }

    /// Every check before running: policy, allowed_only, cwd, environment,
    /// confinement, dry run, confirmation.
    fn check(&self, request: &CommandRequest, background: bool) -> Result<Checked, CommandError> {
        let broker = self.broker();
        let config = &broker.config;
        if !config.enabled {
            return Err(CommandError::Denied(
                "commands are disabled in this toolhost (--no-commands or commands.enabled = false); nothing was run".to_owned(),
            ));
        }
        let (shown, assessed) = match &request.program {
            Program::Shell(line) => (line.clone(), broker.policy.assess_line(line)),
            Program::Argv(argv) => (shell_words(argv), broker.policy.assess_argv(argv)),
        };
        let mut assessment = assessed.map_err(|r| {
            CommandError::Denied(format!(
                "refused `{shown}`: {r}. This is refused in every mode; nothing was run"
            ))
        })?;
        for (name, value) in &request.env {
            if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
                return Err(CommandError::Invalid(format!(
                    "`{name}` is not a valid environment variable name (or its value holds a NUL byte)"
                )));
            }
        }
        let names: Vec<&str> = request.env.iter().map(|(n, _)| n.as_str()).collect();
        if let Some(env) = broker.policy.assess_env(&names)
            && env.class > assessment.class
        {
            assessment = env;
        }
        if config.allowed_only && assessment.class == Class::Dangerous {
            return Err(CommandError::Denied(format!(
                "refused `{shown}`: it is classed dangerous ({}) and commands.allowed_only is set, so it was not even offered for confirmation; add an allow pattern for it to the configuration if it should run",
                assessment.reason
            )));
        }
        let Some(workspace) = &self.workspace else {
            return Err(CommandError::Denied(
                "commands run in the workspace, and no workspace is set; start toolhost with --workspace DIR".to_owned(),
            ));
        };
        let cwd = resolve_cwd(workspace, request.cwd.as_deref())?;
        let processes = broker.processes()?;
        let mut writable = vec![workspace.clone(), processes.temp.path().to_owned()];
        writable.extend(config.writable.iter().cloned());
        let plan = Plan {
            writable,
            network: self.network,
        };
        let prepared = Prepared::new(&plan, broker.support).map_err(CommandError::Failed)?;
        if config.require_sandbox
            && !(prepared.confines_files() && prepared.confines_network(&plan))
        {
            let missing = if prepared.confines_files() {
                "the network filter (seccomp)"
            } else {
                "Landlock"
            };
            return Err(CommandError::Denied(format!(
                "commands.require_sandbox is set and this system cannot enforce {missing}; nothing was run"
            )));
        }
        let timeout = request
            .timeout_ms
            .map_or(config.default_timeout, |ms| {
                Duration::from_millis(ms.into())
            })
            .min(config.max_timeout);
        let needs = needs_confirmation(self.mode, assessment.class);
        if self.dry_run {
            let confirm = if needs {
                "would ask for confirmation"
            } else {
                "would run without asking"
            };
            let how = if background {
                "start in the background"
            } else {
                "run"
            };
            let dir = request
                .cwd
                .as_deref()
                .filter(|c| !c.is_empty())
                .unwrap_or(".");
            return Err(CommandError::DryRun(format!(
                "[dry run] would {how} `{shown}` in `{dir}`: {} ({}); in mode {} it {confirm}; confined by {}; nothing was run",
                assessment.class,
                assessment.reason,
                self.mode.as_str(),
                prepared.enforced.join(", ")
            )));
        }
        if needs {
            self.confirm(&shown, request, &assessment)?;
        }
        let enforced = prepared.enforced.clone();
        let mut command = match &request.program {
            Program::Shell(line) => {
                let mut c = Command::new(&broker.shell);
                c.arg("-c").arg(line);
                c
            }
            Program::Argv(argv) => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                c
            }
        };
        command
            .current_dir(&cwd)
            .env_clear()
            .envs(base_env(config, processes.temp.path()))
            .envs(request.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(if background {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .process_group(0);
        let mut prepared = prepared;
        // SAFETY: `apply` runs in the forked child before exec and only
        // makes system calls (prctl, landlock_restrict_self, seccomp) with
        // data prepared in the parent; it takes no locks and allocates
        // nothing.
        #[expect(
            unsafe_code,
            reason = "confinement must be applied between fork and exec"
        )]
        unsafe {
            command.pre_exec(move || prepared.apply());
        }
        Ok(Checked {
            shown,
            command,
            enforced,
            timeout,
        })
    }

    fn confirm(
        &self,
        shown: &str,
        request: &CommandRequest,
        assessment: &Assessment,
    ) -> Result<(), CommandError> {
        if self.aborted.load(Ordering::Relaxed) {
            return Err(CommandError::NotConfirmed(
                "a person chose to abort all calls earlier in this session; nothing was run"
                    .to_owned(),
            ));
        }
        let reason = format!(
            "`{shown}` is {}: {}; mode {}",
            assessment.class,
            assessment.reason,
            self.mode.as_str()
        );
        let args =
            serde_json::json!({ "command": shown, "cwd": request.cwd.as_deref().unwrap_or(".") });
        let asked = ConfirmRequest {
            tool: &self.tool,
            args: &args,
            reason: &reason,
        };
        match self.confirmer.confirm(&asked) {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(CommandError::NotConfirmed(format!(
                "a person declined to run `{shown}`; nothing was run"
            ))),
            Decision::AbortAll => {
                self.aborted.store(true, Ordering::Relaxed);
                Err(CommandError::NotConfirmed(
                    "a person aborted all calls; nothing was run".to_owned(),
                ))
            }
            Decision::Unavailable => Err(CommandError::NotConfirmed(format!(
                "`{shown}` needs confirmation ({reason}) and nobody can be asked here (no terminal); nothing was run. \
                 To let it run: use --mode yolo (only dangerous commands then ask), add an allow pattern such as `{}` to the \
                 configuration, or use --dry-run to see what would run",
                suggest_pattern(shown)
            ))),
        }
    }

    fn spawn_checked(
        &self,
        checked: Checked,
    ) -> Result<(std::process::Child, Option<Arc<process::Watchdog>>), CommandError> {
        let processes = self.broker().processes()?;
        let child = processes
            .spawner
            .spawn(checked.command)
            .map_err(|e| CommandError::Failed(format!("cannot start `{}`: {e}", checked.shown)))?;
        if let Some(w) = &processes.watchdog {
            w.watch(child.id());
        }
        Ok((child, processes.watchdog.clone()))
    }

    fn run(
        &self,
        request: &CommandRequest,
        cancel: Option<&CancelToken>,
    ) -> Result<CommandOutput, CommandError> {
        let checked = self.check(request, false)?;
        let (shown, enforced, timeout) = (
            checked.shown.clone(),
            checked.enforced.clone(),
            checked.timeout,
        );
        let (mut child, watchdog) = self.spawn_checked(checked)?;
        let pgid = child.id();
        let half = KEEP_BYTES / 4;
        let out = Arc::new(Mutex::new(process::Buffer::new(half, half)));
        let err = Arc::new(Mutex::new(process::Buffer::new(half, half)));
        let (done_tx, done_rx) = mpsc::channel();
        let mut streams = 0;
        if let Some(stdout) = child.stdout.take() {
            process::pump(stdout, Arc::clone(&out), done_tx.clone());
            streams += 1;
        }
        if let Some(stderr) = child.stderr.take() {
            process::pump(stderr, Arc::clone(&err), done_tx.clone());
            streams += 1;
        }
        drop(done_tx);
        let exited = process::reap(child, watchdog);
        let cancelled = || cancel.is_some_and(CancelToken::is_cancelled);
        let ended = process::wait(pgid, &exited, &done_rx, streams, timeout, &cancelled);
        let text = |b: &process::Shared| {
            b.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .text()
        };
        let (stdout_full, mut stderr_full) = (text(&out), text(&err));
        if ended.abandoned_streams > 0 {
            stderr_full.push_str("\n[toolhost: a process that left the command's process group kept its output open; reading stopped]\n");
        }
        if ended.cancelled {
            return Err(CommandError::Failed(format!(
                "`{shown}` was cancelled and its process group killed"
            )));
        }
        let max = self.broker().config.max_output_chars;
        let (stdout, cut_out) = output::head_and_tail(&stdout_full, max);
        let (stderr, cut_err) = output::head_and_tail(&stderr_full, max);
        let truncated = cut_out || cut_err;
        let output_id = truncated.then(|| {
            let full = if stderr_full.is_empty() {
                stdout_full
            } else {
                format!(
                    "{stdout_full}{}[stderr]\n{stderr_full}",
                    if stdout_full.is_empty() || stdout_full.ends_with('\n') {
                        ""
                    } else {
                        "\n"
                    }
                )
            };
            self.broker().kept.keep(full)
        });
        Ok(CommandOutput {
            exit_code: ended.status.and_then(|s| s.code()),
            stdout,
            stderr,
            timed_out: ended.timed_out,
            truncated,
            output_id,
            duration_ms: u64::try_from(ended.duration.as_millis()).unwrap_or(u64::MAX),
            confinement: enforced,
        })
    }

    fn spawn(&self, request: &CommandRequest) -> Result<String, CommandError> {
        let broker = self.broker();
        broker.sessions.check_room().map_err(CommandError::Failed)?;
        let checked = self.check(request, true)?;
        let shown = checked.shown.clone();
        let (mut child, watchdog) = self.spawn_checked(checked)?;
        let cap = broker.config.session_buffer_chars.max(1024);
        let output = Arc::new(Mutex::new(process::Buffer::new(0, cap)));
        let (done_tx, _done_rx) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            process::pump(stdout, Arc::clone(&output), done_tx.clone());
        }
        if let Some(stderr) = child.stderr.take() {
            process::pump(stderr, Arc::clone(&output), done_tx);
        }
        let session = sessions::Session {
            command: shown,
            pgid: child.id(),
            started: std::time::Instant::now(),
            output,
            stdin: child.stdin.take(),
            exited: process::reap(child, watchdog),
        };
        Ok(broker.sessions.add(session))
    }
}

/// Mode × class: which commands a person must approve.
pub(crate) fn needs_confirmation(mode: Mode, class: Class) -> bool {
    match mode {
        Mode::Yolo => class == Class::Dangerous,
        Mode::ConfirmSensitive => class >= Class::Dev,
        Mode::ConfirmAll => true,
    }
}

/// An allow pattern that would cover `shown`, for the no-TTY message.
fn suggest_pattern(shown: &str) -> String {
    let words: Vec<&str> = shown.split_whitespace().take(2).collect();
    match words.as_slice() {
        [] => "PROGRAM **".to_owned(),
        [one] => format!("{one} **"),
        [a, b] if b.starts_with('-') => format!("{a} **"),
        [a, b, ..] => format!("{a} {b} **"),
    }
}

/// `argv` shown as one shell-like line.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The documented minimum environment plus configured variables.
fn base_env(config: &CommandConfig, temp: &Path) -> Vec<(String, String)> {
    let host = |name: &str| std::env::var(name).ok();
    let mut env = vec![
        (
            "PATH".to_owned(),
            host("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".to_owned()),
        ),
        (
            "HOME".to_owned(),
            host("HOME").unwrap_or_else(|| "/".to_owned()),
        ),
        (
            "LANG".to_owned(),
            host("LANG").unwrap_or_else(|| "C.UTF-8".to_owned()),
        ),
        ("TERM".to_owned(), "dumb".to_owned()),
        ("PAGER".to_owned(), "cat".to_owned()),
        ("GIT_PAGER".to_owned(), "cat".to_owned()),
        ("NO_COLOR".to_owned(), "1".to_owned()),
    ];
    for name in ["TMPDIR", "TMP", "TEMP"] {
        env.push((name.to_owned(), temp.display().to_string()));
    }
    for name in &config.pass_env {
        if let Some(value) = host(name) {
            env.push((name.clone(), value));
        }
    }
    env.extend(config.env.iter().cloned());
    env
}

/// `cwd` (relative to the workspace) resolved, and inside the workspace.
fn resolve_cwd(workspace: &Path, cwd: Option<&str>) -> Result<PathBuf, CommandError> {
    let Some(cwd) = cwd.filter(|c| !c.is_empty() && *c != ".") else {
        return Ok(workspace.to_owned());
    };
    let joined = workspace.join(cwd.trim_start_matches("./"));
    let resolved = joined.canonicalize().map_err(|e| {
        CommandError::Invalid(format!(
            "the working directory `{cwd}` cannot be used ({e}); give a directory relative to the workspace root"
        ))
    })?;
    if !resolved.starts_with(workspace) {
        return Err(CommandError::Invalid(format!(
            "the working directory `{cwd}` is outside the workspace; commands run only inside it"
        )));
    }
    if !resolved.is_dir() {
        return Err(CommandError::Invalid(format!("`{cwd}` is not a directory")));
    }
    Ok(resolved)
}

fn status(s: sessions::Status) -> SessionStatus {
    SessionStatus {
        id: s.id,
        command: s.command,
        running: s.running,
        exit_code: s.exit_code,
        new_output: s.new_output,
        elapsed_ms: u64::try_from(s.elapsed.as_millis()).unwrap_or(u64::MAX),
    }
}

impl CallState {
    fn broker_call(&self) -> Result<&BrokerCall, CommandError> {
        match (&self.commands, self.commands_granted) {
            (Some(call), true) => Ok(call),
            (None, true) => Err(CommandError::Denied(
                "this host was set up without a command broker; nothing was run".to_owned(),
            )),
            (_, false) => Err(CommandError::Denied(
                "this tool was not granted the `commands` capability; grant it with \
                 --grant TOOL=commands (or in the configuration) to let it run commands"
                    .to_owned(),
            )),
        }
    }

    fn session_table(&self) -> Result<&sessions::Sessions, CommandError> {
        Ok(&self.broker_call()?.broker.sessions)
    }
}

impl commands::Host for CallState {
    fn run(&mut self, request: CommandRequest) -> Result<CommandOutput, CommandError> {
        let cancel = self.cancel_token().cloned();
        let started = std::time::Instant::now();
        let result = self.broker_call()?.run(&request, cancel.as_ref());
        self.extend_deadline(started.elapsed());
        result
    }

    fn spawn(&mut self, request: CommandRequest) -> Result<String, CommandError> {
        let started = std::time::Instant::now();
        let result = self.broker_call()?.spawn(&request);
        self.extend_deadline(started.elapsed());
        result
    }

    fn poll(&mut self, id: String) -> Result<SessionStatus, CommandError> {
        self.session_table()?
            .poll(&id)
            .map(status)
            .map_err(CommandError::Invalid)
    }

    fn write_stdin(&mut self, id: String, data: Vec<u8>) -> Result<(), CommandError> {
        self.session_table()?
            .write(&id, &data)
            .map_err(CommandError::Invalid)
    }

    fn kill(&mut self, id: String) -> Result<(), CommandError> {
        self.session_table()?
            .kill(&id)
            .map(|_| ())
            .map_err(CommandError::Invalid)
    }

    fn sessions(&mut self) -> Vec<SessionStatus> {
        self.session_table()
            .map(|s| s.list().into_iter().map(status).collect())
            .unwrap_or_default()
    }

    fn clear(&mut self) -> u32 {
        self.session_table().map_or(0, sessions::Sessions::clear)
    }

    fn output(&mut self, output_id: String) -> Result<String, CommandError> {
        self.broker_call()?.broker.kept.get(&output_id).ok_or_else(|| {
            CommandError::Invalid(format!(
                "no output is kept under `{output_id}` (only the most recent cut outputs are kept); run the command again"
            ))
        })
    }
}

#[cfg(test)]
mod tests;
