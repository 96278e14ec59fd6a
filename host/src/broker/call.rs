//! One call's use of the broker: the checks before a command runs
//! ([`BrokerCall::check`]), confirmation, and running it to the end or in
//! the background.

use super::confine::spawn::{Launch, Spawned};
use super::confine::{self, Found, Prepared};
use super::env::{check_env, resolve_cwd};
use super::policy::{Assessment, Class};
use super::request::{CommandError, CommandOutput, CommandRequest, Program};
use super::{Broker, KEEP_BYTES, background, output, process, sweep};
use crate::types::confirm::{ConfirmRequest, Confirmer, Decision, Mode};
use crate::types::context::{CancelToken, Progress};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use toolhost_shared::shell_words;
mod confinement;
mod detached;

/// What one call may do with the broker; built by the [`crate::Executor`]
/// for a tool granted `commands`.
#[derive(Clone)]
pub struct BrokerCall {
    pub(crate) broker: Arc<Broker>,
    pub(crate) tool: Arc<str>,
    /// Whose background commands and kept outputs this call sees: its MCP
    /// session, or `""` for calls outside any session (CLI, library).
    pub(crate) owner: Arc<str>,
    /// Why background commands are refused for this call, if they are.
    pub(crate) background_refused: Option<Arc<str>>,
    /// Whether a cut output is kept for later calls to read (not in a
    /// process that ends with this call).
    pub(crate) keeps_outputs: bool,
    /// Told the latest line of a running command's output.
    pub(crate) progress: Option<Progress>,
    pub(crate) workspace: Option<PathBuf>,
    /// The grant lets commands use the network.
    pub(crate) network: bool,
    pub(crate) mode: Mode,
    pub(crate) confirmer: Arc<dyn Confirmer>,
    /// Set when a person answers "abort all".
    pub(crate) aborted: Arc<AtomicBool>,
    pub(crate) dry_run: bool,
    /// Every command this call asked for, for the audit log.
    pub(crate) log: Arc<Mutex<Vec<CommandRecord>>>,
    /// The deadline the caller set for the whole call (`--timeout`): a
    /// command it waits on ends by then, and waiting does not extend it.
    pub(crate) until: Option<Instant>,
}

/// One command a call asked the broker for, as the audit log shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CommandRecord {
    /// The command line (an argv is shown shell-quoted).
    pub command: String,
    /// `safe`, `dev` or `dangerous`; absent when refused before classing
    /// (blocklist, commands disabled).
    pub class: Option<&'static str>,
    /// Started as a background command.
    pub background: bool,
    /// `ran`, `timed_out`, `started`, `denied`, `not_confirmed`, `dry_run`,
    /// `invalid` or `failed`.
    pub outcome: &'static str,
    /// The exit code of a command that ran to its end.
    pub exit_code: Option<i32>,
    /// What confined it (the same list as the command's result).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub confinement: Vec<String>,
}

impl CommandRecord {
    fn error_outcome(err: &CommandError) -> &'static str {
        match err {
            CommandError::Denied(_) => "denied",
            CommandError::NotConfirmed(_) => "not_confirmed",
            CommandError::Invalid(_) => "invalid",
            CommandError::Failed(_) => "failed",
            CommandError::DryRun(_) => "dry_run",
        }
    }
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

/// A command started with [`BrokerCall::spawn_piped`]: its pipes, and its
/// process group, killed when this is dropped.
#[cfg(feature = "mcp")]
#[derive(Debug)]
pub(crate) struct Piped {
    /// Its standard input.
    pub stdin: Option<std::fs::File>,
    /// Its standard output (taken by whoever reads it).
    pub stdout: Option<std::fs::File>,
    /// Its standard error (taken by whoever reads it).
    pub stderr: Option<std::fs::File>,
    pgid: u32,
    exited: std::sync::mpsc::Receiver<process::Exit>,
}

#[cfg(feature = "mcp")]
impl Piped {
    /// Its exit code, if it has ended (`Some(None)`: killed by a signal).
    pub(crate) fn exited(&self) -> Option<Option<i32>> {
        self.exited.try_recv().ok()
    }
}

#[cfg(feature = "mcp")]
impl Drop for Piped {
    fn drop(&mut self) {
        process::kill_group(self.pgid);
    }
}

/// A request after checks, ready to start.
pub(super) struct Checked {
    shown: String,
    launch: Launch,
    enforced: Vec<String>,
    timeout: Duration,
    /// Protected paths absent before the command, to sweep after it.
    absent: sweep::Absent,
}

/// How to add an allow pattern, for messages.
const ALLOW_HOW: &str = "an allow pattern (`--allow-command 'PATTERN'`)";

impl BrokerCall {
    fn broker(&self) -> &Broker {
        &self.broker
    }

    /// Every check before running: policy, environment, allowed_only, cwd,
    /// confinement, dry run, confirmation.
    pub(super) fn check(
        &self,
        request: &CommandRequest,
        background: bool,
        record: &mut CommandRecord,
    ) -> Result<Checked, CommandError> {
        let config = &self.broker().config;
        let shown = shown(&request.program);
        record.command.clone_from(&shown);
        if !config.enabled {
            return Err(CommandError::Denied(
                "commands are disabled in this toolhost (--no-commands); nothing was run"
                    .to_owned(),
            ));
        }
        let assessment = self.assess(request, &shown)?;
        record.class = Some(assessment.class.as_str());
        let remedy = match &assessment.variable {
            Some(var) => format!(
                "let commands set `{var}` (`--allow-env {var}`, or `settable_env = [\"{var}\"]` \
                 in [commands])"
            ),
            None => format!("add {ALLOW_HOW} such as `{}`", suggest_pattern(&shown)),
        };
        if config.allowed_only && assessment.class == Class::Dangerous {
            return Err(CommandError::Denied(format!(
                "refused `{shown}`: it is classed dangerous ({}) and only allowed commands may run \
                 (allowed_only), so nobody was asked; {remedy} if it should run",
                assessment.reason
            )));
        }
        let (cwd, prepared, found) = self.confinement(request)?;
        // Without namespaces no mount keeps the protected paths read-only:
        // the sweep puts back what the command changed.
        let unmounted = if prepared.missing() == Some(confine::Layer::Namespaces) {
            found.protected.clone()
        } else {
            Vec::new()
        };
        let timeout = request
            .timeout_ms
            .map_or(config.default_timeout, |ms| {
                Duration::from_millis(ms.into())
            })
            .min(config.max_timeout)
            .min(self.until.map_or(Duration::MAX, |until| {
                until.saturating_duration_since(Instant::now())
            }));
        let needs = needs_confirmation(self.mode, assessment.class);
        if self.dry_run {
            return Err(self.dry_run_verdict(
                request,
                background,
                &shown,
                &assessment,
                needs,
                &prepared,
            ));
        }
        if needs {
            let what = serde_json::json!({
                "command": shown,
                "cwd": request.cwd.as_deref().unwrap_or("."),
                "env": request.env.iter().cloned().collect::<BTreeMap<_, _>>(),
                "background": background,
            });
            // The yolo mode lets a command run without asking unless it is
            // dangerous.
            let yolo = self.mode != Mode::Yolo && assessment.class < Class::Dangerous;
            self.confirm(
                &format!("`{shown}` is {}: {}", assessment.class, assessment.reason),
                &what,
                &shown,
                (&remedy, yolo),
            )?;
        }
        let enforced = prepared.enforced.clone();
        let absent = sweep::Absent::before(
            self.workspace.as_deref(),
            &self.broker().rules,
            (&found.pinned, &unmounted),
            &self.broker().swept_dir,
        )
        .with_writable(&self.broker().config.writable, &self.broker().rules);
        let launch = self.command(request, &cwd, prepared)?;
        record.confinement.clone_from(&enforced);
        Ok(Checked {
            shown,
            launch,
            enforced,
            timeout,
            absent,
        })
    }

    /// The policy's verdict on the command and its environment (the worse
    /// of the two); refused on the blocklist.
    fn assess(&self, request: &CommandRequest, shown: &str) -> Result<Assessment, CommandError> {
        let broker = self.broker();
        let assessed = match &request.program {
            Program::Shell(line) => broker.policy.assess_line(line),
            Program::Argv(argv) => broker.policy.assess_argv(argv),
        };
        let mut assessment = assessed.map_err(|r| {
            CommandError::Denied(format!(
                "refused `{shown}`: {r}. This is refused in every mode; nothing was run"
            ))
        })?;
        check_env(&request.env)?;
        let names: Vec<&str> = request.env.iter().map(|(n, _)| n.as_str()).collect();
        if let Some(env) = broker.policy.assess_env(&names)
            && env.class > assessment.class
        {
            assessment = env;
        }
        Ok(assessment)
    }

    /// The process to start: the shell line or argv, in `cwd`, with the
    /// scrubbed environment, and the confinement applied between clone and
    /// exec.
    fn command(
        &self,
        request: &CommandRequest,
        cwd: &Path,
        prepared: Prepared,
    ) -> Result<Launch, CommandError> {
        let broker = self.broker();
        let processes = broker.processes()?;
        let base = if prepared.in_namespaces() {
            &processes.env
        } else {
            &processes.fallback_env
        };
        // Later values win: the request's over the base.
        let env: BTreeMap<&str, &str> = base
            .iter()
            .chain(request.env.iter())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let text = |s: &str| {
            CString::new(s).map_err(|_| {
                CommandError::Invalid("the command holds a NUL byte; remove it".to_owned())
            })
        };
        let envp = env
            .iter()
            .map(|(k, v)| text(&format!("{k}={v}")))
            .collect::<Result<Vec<_>, _>>()?;
        let (program, argv) = match &request.program {
            Program::Shell(line) => {
                let shell = broker.shell.display().to_string();
                (
                    vec![text(&shell)?],
                    vec![text(&shell)?, text("-c")?, text(line)?],
                )
            }
            Program::Argv(argv) => {
                let first = argv.first().ok_or_else(|| {
                    CommandError::Invalid("the argv is empty; give the program first".to_owned())
                })?;
                let path = env.get("PATH").copied().unwrap_or("/usr/bin:/bin");
                let argv = argv
                    .iter()
                    .map(|a| text(a))
                    .collect::<Result<Vec<_>, _>>()?;
                (confine::candidates(first, path, cwd), argv)
            }
        };
        let mut launch = prepared
            .launch(cwd, program, argv, envp)
            .map_err(|e| CommandError::Invalid(e.to_string()))?;
        launch.owner = Arc::clone(&self.owner);
        Ok(launch)
    }

    /// Ask the caller's confirmer; `what` is shown as the arguments.
    fn confirm(
        &self,
        why: &str,
        what: &serde_json::Value,
        shown: &str,
        (remedy, yolo): (&str, bool),
    ) -> Result<(), CommandError> {
        if self.aborted.load(Ordering::Relaxed) {
            return Err(CommandError::NotConfirmed(
                "a person chose to abort all calls earlier in this session; nothing was run"
                    .to_owned(),
            ));
        }
        let reason = format!("{why}; mode {}", self.mode.as_str());
        let asked = ConfirmRequest {
            tool: &self.tool,
            args: what,
            reason: &reason,
        };
        match self.confirmer.confirm(&asked) {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(CommandError::NotConfirmed(format!(
                "a person declined `{shown}`; nothing was done"
            ))),
            Decision::AbortAll => {
                self.aborted.store(true, Ordering::Relaxed);
                Err(CommandError::NotConfirmed(
                    "a person aborted all calls; nothing was run".to_owned(),
                ))
            }
            Decision::Unavailable => Err(CommandError::NotConfirmed(format!(
                "`{shown}` needs confirmation ({reason}) and nobody can be asked here (no terminal); nothing was run. {}",
                self.confirmer.command_hint(remedy, yolo)
            ))),
            Decision::Failed => Err(CommandError::NotConfirmed(format!(
                "`{shown}` needs confirmation ({reason}), and asking the person failed: the client answered the question with an error; nothing was run; {}",
                crate::types::confirm::ASK_FAILED_HINT
            ))),
        }
    }

    fn spawn_checked(
        &self,
        launch: Launch,
        stdin: bool,
        shown: &str,
    ) -> Result<(Spawned, Option<Arc<process::Watchdog>>), CommandError> {
        let processes = self.broker().processes()?;
        // In a PID namespace the command is its init: when it dies (its
        // parent-death signal fires with the host), the kernel kills every
        // process of the namespace. Outside one, the watchdog kills its
        // group.
        let watchdog = processes
            .watchdog
            .clone()
            .filter(|_| launch.namespaces.is_none());
        let started = Instant::now();
        let child = processes
            .spawner
            .spawn(launch, stdin)
            .map_err(|e| CommandError::Failed(format!("cannot start `{shown}`: {e}")))?;
        self.broker()
            .spawn_seconds
            .observe(started.elapsed().as_secs_f64());
        if let Some(w) = &watchdog {
            w.watch(child.pid);
        }
        Ok((child, watchdog))
    }

    /// Run `f` with a fresh record of this command, then keep the record
    /// with its outcome.
    fn logged<T>(
        &self,
        background: bool,
        f: impl FnOnce(&mut CommandRecord) -> Result<T, CommandError>,
    ) -> Result<T, CommandError> {
        let mut record = CommandRecord {
            background,
            ..CommandRecord::default()
        };
        let result = f(&mut record);
        record.outcome = match &result {
            Err(err) => CommandRecord::error_outcome(err),
            Ok(_) if record.outcome.is_empty() => "started",
            Ok(_) => record.outcome,
        };
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
        result
    }

    /// Run a command to its end.
    pub(crate) fn run(
        &self,
        request: &CommandRequest,
        cancel: Option<&CancelToken>,
    ) -> Result<CommandOutput, CommandError> {
        self.logged(false, |record| {
            let out = self.run_checked(request, cancel, record)?;
            record.exit_code = out.exit_code;
            record.outcome = if out.timed_out { "timed_out" } else { "ran" };
            Ok(out)
        })
    }

    fn run_checked(
        &self,
        request: &CommandRequest,
        cancel: Option<&CancelToken>,
        record: &mut CommandRecord,
    ) -> Result<CommandOutput, CommandError> {
        let Checked {
            shown,
            launch,
            enforced,
            timeout,
            absent,
        } = self.check(request, false, record)?;
        let (child, watchdog) = self.spawn_checked(launch, false, &shown)?;
        let half = KEEP_BYTES / 4;
        let mut out = process::Buffer::new(half, half);
        let mut err = process::Buffer::new(half, half);
        // Every few milliseconds while it runs: stop if cancelled, and tell
        // the progress the newest output line.
        let mut seen = (0, 0);
        let mut tick = |out: &process::Buffer, err: &process::Buffer| {
            let now = (out.total(), err.total());
            if let Some(progress) = &self.progress
                && now != seen
            {
                let line = out
                    .last_line_after(seen.0)
                    .or_else(|| err.last_line_after(seen.1));
                seen = now;
                if let Some(line) = line {
                    progress.message(format!("`{shown}`: {line}"));
                }
            }
            cancel.is_some_and(CancelToken::is_cancelled)
        };
        let ended = process::run_to_end(child, watchdog, (&mut out, &mut err), timeout, &mut tick);
        let (stdout_full, mut stderr_full) = (out.text(), err.text());
        if ended.abandoned_streams > 0 {
            stderr_full.push_str(
                "\n[toolhost: a process survived the kill and kept the output open; reading stopped]\n",
            );
        }
        for note in absent.sweep() {
            stderr_full.push_str(&format!("\n[toolhost: {note}]\n"));
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
        let output_id = (truncated && self.keeps_outputs).then(|| {
            let full = if stderr_full.is_empty() {
                stdout_full
            } else {
                let gap = if stdout_full.is_empty() || stdout_full.ends_with('\n') {
                    ""
                } else {
                    "\n"
                };
                format!("{stdout_full}{gap}[stderr]\n{stderr_full}")
            };
            self.broker().kept.keep(&self.owner, full)
        });
        Ok(CommandOutput {
            exit_code: ended.exit_code,
            stdout,
            stderr,
            timed_out: ended.timed_out,
            truncated,
            output_id,
            duration_ms: u64::try_from(ended.duration.as_millis()).unwrap_or(u64::MAX),
            confinement: enforced,
        })
    }
}

/// A command as people read it (an argv shell-quoted).
fn shown(program: &Program) -> String {
    match program {
        Program::Shell(line) => line.clone(),
        Program::Argv(argv) => shell_words(argv),
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
    if shown.contains([';', '|', '&', '$', '`', '(', '>', '<', '\n']) {
        return "PROGRAM SUBCOMMAND **".to_owned();
    }
    let words: Vec<&str> = shown.split_whitespace().take(2).collect();
    match words.as_slice() {
        [] => "PROGRAM **".to_owned(),
        [one] => format!("{one} **"),
        [a, b] if b.starts_with('-') => format!("{a} **"),
        [a, b, ..] => format!("{a} {b} **"),
    }
}
