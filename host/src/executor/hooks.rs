//! Post-edit hooks (step 6 of the pipeline): configured commands run through
//! the broker after a call changed files, once per changed file that matches
//! the hook's patterns, e.g. a formatter or a linter.
//!
//! The file reaches the command as `{file}` (shell-quoted where it appears)
//! and as `TOOLHOST_EDITED_FILE`. A person wrote the hook in the
//! configuration, so it runs without asking; the blocklist, confinement,
//! timeouts and output caps still apply. A failure, a timeout or a refusal is
//! appended to the tool's result so the model sees it.

use crate::broker::BrokerCall;
use crate::broker::{CommandRequest, Program};
use crate::types::context::CancelToken;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path};
use std::time::Duration;

/// Default time one hook run may take.
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 30;

/// Most characters of hook output appended to one result; the failures
/// past it are counted, not shown.
const MAX_APPENDED_CHARS: usize = 20_000;

/// A `[[hooks.post_edit]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostEditHook {
    /// Shown in results and the audit log.
    pub name: String,
    /// A shell command line; `{file}` is replaced by the changed file's
    /// workspace-relative path, shell-quoted.
    pub command: String,
    /// Globs over the workspace-relative path (`*.rs`, `src/**/*.py`); a
    /// `*` also crosses directories. Empty: every changed file.
    #[serde(default)]
    pub file_patterns: Vec<String>,
    /// Seconds before the hook is killed.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_timeout() -> u64 {
    DEFAULT_HOOK_TIMEOUT_SECS
}

impl PostEditHook {
    /// A hook running `command` for changed files matching `patterns`
    /// (every file if empty), killed after `timeout_secs`.
    pub fn new(name: &str, command: &str, patterns: &[&str], timeout_secs: u64) -> Self {
        Self {
            name: name.to_owned(),
            command: command.to_owned(),
            file_patterns: patterns.iter().map(|p| (*p).to_owned()).collect(),
            timeout_secs,
        }
    }
}

/// One hook run, as the audit log shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookRecord {
    /// The hook's name.
    pub hook: String,
    /// The changed file it ran for.
    pub file: String,
    /// `ok`, `failed`, `timed_out` or `not_run`.
    pub outcome: &'static str,
    /// The exit code, if it ran to its end.
    pub exit_code: Option<i32>,
}

/// The configured hooks, compiled.
#[derive(Debug, Default)]
pub(crate) struct Hooks {
    hooks: Vec<(PostEditHook, GlobSet)>,
}

/// Why the configured post-edit hooks were refused; each names the hook.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// A hook without a name or a command.
    #[error("every post_edit hook needs a name and a command (hook `{0}`)")]
    Incomplete(String),
    /// A timeout of 0 or over the broker's longest.
    #[error("hook `{hook}`: timeout_secs is {secs}; use 1 to {max} (commands.max_timeout_secs)")]
    Timeout {
        /// The hook's name.
        hook: String,
        /// The timeout it asked for.
        secs: u64,
        /// The broker's `max_timeout`, in seconds.
        max: u64,
    },
    /// A file pattern that is not a glob.
    #[error("hook `{hook}`: file pattern `{pattern}`: {source}")]
    Pattern {
        /// The hook's name.
        hook: String,
        /// The pattern (all of them, if they failed together).
        pattern: String,
        /// What the glob parser said.
        source: globset::Error,
    },
}

impl Hooks {
    /// Compile the hooks' patterns; the error names the hook and what is
    /// wrong. A timeout above `max_timeout` (the broker's) is refused rather
    /// than cut short silently.
    pub(crate) fn new(hooks: Vec<PostEditHook>, max_timeout: Duration) -> Result<Self, HookError> {
        let mut out = Vec::with_capacity(hooks.len());
        for hook in hooks {
            if hook.name.trim().is_empty() || hook.command.trim().is_empty() {
                return Err(HookError::Incomplete(hook.name));
            }
            if hook.timeout_secs == 0 || hook.timeout_secs > max_timeout.as_secs() {
                return Err(HookError::Timeout {
                    hook: hook.name,
                    secs: hook.timeout_secs,
                    max: max_timeout.as_secs(),
                });
            }
            let mut set = GlobSetBuilder::new();
            for pattern in &hook.file_patterns {
                let glob = Glob::new(pattern).map_err(|source| HookError::Pattern {
                    hook: hook.name.clone(),
                    pattern: pattern.clone(),
                    source,
                })?;
                set.add(glob);
            }
            let set = set.build().map_err(|source| HookError::Pattern {
                hook: hook.name.clone(),
                pattern: hook.file_patterns.join(" "),
                source,
            })?;
            out.push((hook, set));
        }
        Ok(Self { hooks: out })
    }

    /// True when no hook is configured.
    pub(crate) fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Run every matching hook for every changed file that still exists.
    /// Returns the records and the text to append to the result (empty
    /// when every hook succeeded).
    pub(crate) fn run(
        &self,
        call: &BrokerCall,
        workspace: &Path,
        changed: &[String],
        cancel: Option<&CancelToken>,
    ) -> (Vec<HookRecord>, String) {
        let call = BrokerCall {
            confirmer: std::sync::Arc::new(crate::types::confirm::Configured),
            ..call.clone()
        };
        let mut records = Vec::new();
        let mut appended = String::new();
        let mut unshown = 0;
        for file in changed {
            // A plugin reports the paths; only plain paths inside the
            // workspace to files that still exist get a hook.
            let plain = Path::new(file)
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            let file = file.trim_start_matches("./");
            if !plain || file.is_empty() || !workspace.join(file).is_file() {
                continue;
            }
            for (hook, patterns) in &self.hooks {
                if !hook.file_patterns.is_empty() && !patterns.is_match(file) {
                    continue;
                }
                let (record, text) = run_one(&call, hook, file, cancel);
                records.push(record);
                if appended.len() + text.len() <= MAX_APPENDED_CHARS {
                    appended.push_str(&text);
                } else if !text.is_empty() {
                    unshown += 1;
                }
            }
        }
        if unshown > 0 {
            appended.push_str(&format!(
                "\n\n[{unshown} more hook failure(s) not shown; see the audit log]\n"
            ));
        }
        (records, appended)
    }
}

fn run_one(
    call: &BrokerCall,
    hook: &PostEditHook,
    file: &str,
    cancel: Option<&CancelToken>,
) -> (HookRecord, String) {
    // `./` keeps a name like `-rf.rs` from reading as an option.
    let path = format!("./{file}");
    let quoted = crate::broker::shell_words(std::slice::from_ref(&path));
    let request = CommandRequest {
        timeout_ms: Some(u32::try_from(hook.timeout_secs.saturating_mul(1000)).unwrap_or(u32::MAX)),
        env: vec![("TOOLHOST_EDITED_FILE".to_owned(), path)],
        ..CommandRequest::new(Program::Shell(hook.command.replace("{file}", &quoted)))
    };
    let mut record = HookRecord {
        hook: hook.name.clone(),
        file: file.to_owned(),
        outcome: "ok",
        exit_code: None,
    };
    let name = &hook.name;
    let text = match call.run(&request, cancel) {
        Ok(out) => {
            record.exit_code = out.exit_code;
            let output = joined_output(&out.stdout, &out.stderr);
            if out.timed_out {
                record.outcome = "timed_out";
                format!(
                    "\n\n[hook {name}: failed (timed out after {}s)] {file}\n{output}",
                    hook.timeout_secs
                )
            } else if out.exit_code == Some(0) {
                String::new()
            } else {
                record.outcome = "failed";
                let exit = out
                    .exit_code
                    .map_or_else(|| "killed by a signal".to_owned(), |c| format!("exit {c}"));
                format!("\n\n[hook {name}: failed ({exit})] {file}\n{output}")
            }
        }
        Err(err) => {
            record.outcome = "not_run";
            let why = err.into_message();
            format!("\n\n[hook {name}: not run ({why})] {file}\n")
        }
    };
    (record, text)
}

fn joined_output(stdout: &str, stderr: &str) -> String {
    let mut out = String::from(stdout);
    if !out.is_empty() && !out.ends_with('\n') && !stderr.is_empty() {
        out.push('\n');
    }
    out.push_str(stderr);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use PostEditHook as Hook;

    const MAX: Duration = Duration::from_secs(600);

    #[test]
    fn bad_hooks_are_refused_naming_the_hook() {
        let err = |h: PostEditHook| Hooks::new(vec![h], MAX).unwrap_err().to_string();
        assert!(err(Hook::new("", "true", &[], 5)).contains("needs a name and a command"));
        assert!(err(Hook::new("fmt", " ", &[], 5)).contains("`fmt`"));
        let m = err(Hook::new("fmt", "true", &[], 0));
        assert!(
            m.contains("timeout_secs is 0") && m.contains("1 to 600"),
            "{m}"
        );
        let m = err(Hook::new("fmt", "true", &[], 601));
        assert!(m.contains("commands.max_timeout_secs"), "{m}");
        let m = err(Hook::new("fmt", "true", &["src/[a"], 5));
        assert!(m.contains("`fmt`") && m.contains("src/[a"), "{m}");
        assert!(Hooks::new(vec![Hook::new("fmt", "true", &["*.rs"], 600)], MAX).is_ok());
    }
}
