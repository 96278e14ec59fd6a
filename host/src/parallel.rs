//! The host side of `parallel`: a tool's call fans its work out to fresh
//! instances of the same tool on the host's cores (WASI 0.2 has no threads).
//!
//! `run-shards` runs the inputs on the calling thread plus as many extra threads as
//! the runtime's worker permits allow at that moment, so the total never
//! exceeds the pool the runtime sized for it. A thread the OS refuses to
//! create is no error: the threads that did start (at least the calling one)
//! do its share. Each run is an ordinary sandboxed call with the caller's
//! arguments, grant, settings, remaining time and cancel token, and its input
//! as `call-context.shard`; runs cannot fan out again. A share's result is
//! not cut to the model-facing output limit (it goes back to the caller, not
//! to the model) but to [`SHARE_OUTPUT_BYTES`].
//!
//! WIT's `tool-error` has no case for a timeout, a cancellation, running out
//! of memory or a crash, so a share that ends that way reaches the caller as
//! `failed`. The host remembers those errors, and when the call then fails
//! with one of them (the usual way: the tool passes the share's error on),
//! [`keep_share_kinds`] gives the call's error its real kind back.

use crate::bindings::{parallel, types as wit};
use crate::broker::BrokerCall;
use crate::grant::Effective;
use crate::plugin::Plugin;
use crate::result::{CallError, ErrorKind};
use crate::runtime::{Limits, Runtime};
use crate::sandbox::{self, CallContext, CallRequest, CallState, CancelToken, Outcome};
use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Scope;
use std::time::Instant;

/// Most bytes of output (text, and structured JSON) kept from one share:
/// far above the model-facing limit, since shares report to their caller,
/// and bounded because the host holds every share's output at once.
pub(crate) const SHARE_OUTPUT_BYTES: usize = 64 << 20;

/// What a call needs to start more runs of itself.
pub(crate) struct Fanout {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) plugin: Arc<Plugin>,
    pub(crate) args: String,
    pub(crate) context: CallContext,
    pub(crate) grant: Effective,
    pub(crate) workspace: Option<PathBuf>,
    pub(crate) limits: Limits,
    pub(crate) settings: String,
    pub(crate) deadline: Instant,
    pub(crate) cancel: Option<CancelToken>,
    pub(crate) broker: Option<BrokerCall>,
}

impl Fanout {
    /// One run, with `shard` as its input.
    fn run(&self, shard: &str) -> Outcome {
        let limits = Limits {
            timeout: self.deadline.saturating_duration_since(Instant::now()),
            max_output_bytes: SHARE_OUTPUT_BYTES.max(self.limits.max_output_bytes),
            ..self.limits.clone()
        };
        if limits.timeout.is_zero() {
            return Err(CallError::new(
                ErrorKind::Timeout,
                "no time was left for this share of the work",
            ));
        }
        let request = CallRequest {
            args: &self.args,
            context: &self.context,
            grant: &self.grant,
            workspace: self.workspace.as_deref(),
            limits: &limits,
            cancel: self.cancel.as_ref(),
            settings: &self.settings,
            broker: self.broker.as_ref(),
        };
        sandbox::run_share(&self.runtime, &self.plugin, &request, shard)
    }

    /// Run every input, in parallel where permits allow.
    fn map(&self, inputs: &[String]) -> Vec<Outcome> {
        let permits = self.runtime.extra_workers(inputs.len().saturating_sub(1));
        let outcomes = run_all(inputs, permits.len(), &|input| self.run(input), &spawn);
        drop(permits);
        outcomes
    }
}

/// Start `work` on a new thread of `scope`.
type Spawn = dyn for<'scope, 'env> Fn(
        &'scope Scope<'scope, 'env>,
        Box<dyn FnOnce() + Send + 'scope>,
    ) -> std::io::Result<()>
    + Sync;

fn spawn<'scope>(
    scope: &'scope Scope<'scope, '_>,
    work: Box<dyn FnOnce() + Send + 'scope>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("toolhost-share".into())
        .spawn_scoped(scope, work)
        .map(drop)
}

/// Run `run` once per input on the calling thread and up to `extra` more
/// threads started with `spawn`; the outcomes come back in input order. A
/// thread that cannot start leaves its share to the others, and a panic in
/// `run` is that input's `failed` outcome, never the host's.
fn run_all(
    inputs: &[String],
    extra: usize,
    run: &(dyn Fn(&str) -> Outcome + Sync),
    spawn: &Spawn,
) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Outcome>>> = inputs.iter().map(|_| Mutex::new(None)).collect();
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(input) = inputs.get(i) else { break };
            let outcome =
                std::panic::catch_unwind(AssertUnwindSafe(|| run(input))).unwrap_or_else(|_| {
                    Err(CallError::new(
                        ErrorKind::Failed,
                        "this share of the work failed: the host hit a bug running it",
                    ))
                });
            *results[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..extra {
            if let Err(err) = spawn(scope, Box::new(work)) {
                tracing::warn!(%err, "cannot start a fan-out thread; running its share on the calling thread");
                break;
            }
        }
        work();
    });
    results
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                .unwrap_or_else(|| {
                    Err(CallError::new(
                        ErrorKind::Failed,
                        "this share of the work did not run",
                    ))
                })
        })
        .collect()
}

impl parallel::Host for CallState {
    fn width(&mut self) -> u32 {
        match &self.fanout {
            Some(f) => 1 + u32::try_from(f.runtime.free_workers()).unwrap_or(u32::MAX),
            None => 1,
        }
    }

    fn run_shards(&mut self, inputs: Vec<String>) -> Vec<Result<wit::ToolOutput, wit::ToolError>> {
        let Some(fanout) = &self.fanout else {
            let refusal = "a run started by parallel.run-shards cannot fan out again; do this share of the work directly";
            return inputs
                .iter()
                .map(|_| Err(wit::ToolError::Denied(refusal.to_owned())))
                .collect();
        };
        fanout.map(&inputs).into_iter().map(to_wit).collect()
    }
}

thread_local! {
    /// Share errors whose kind WIT cannot carry, with the message the
    /// calling tool received for each, for [`keep_share_kinds`]. A call
    /// runs its plugin, and so its `run-shards`, on the thread that called.
    static SHARE_ERRORS: RefCell<Vec<(String, CallError)>> = const { RefCell::new(Vec::new()) };
}

/// Run `call` (one sandboxed call of a plugin, on this thread) so that
/// when it fails with the error of one of its shares, the error keeps the
/// share's kind (timeout, cancelled, out_of_memory, trap) rather than
/// `failed`. If the tool passed the share's error on unchanged, the error
/// is the share's own; if it wrapped it, its message stays.
pub(crate) fn keep_share_kinds(call: impl FnOnce() -> Outcome) -> Outcome {
    let outer = SHARE_ERRORS.with(|e| e.take());
    let outcome = call();
    let recorded = SHARE_ERRORS.with(|e| e.replace(outer));
    match outcome {
        Err(err) if err.kind == ErrorKind::Failed => {
            let share = recorded
                .iter()
                .find(|(m, _)| *m == err.message)
                .or_else(|| {
                    recorded
                        .iter()
                        .find(|(m, _)| err.message.contains(m.as_str()))
                });
            Err(match share {
                Some((m, share)) if *m == err.message => share.clone(),
                Some((_, share)) => CallError {
                    kind: share.kind,
                    ..err
                },
                None => err,
            })
        }
        other => other,
    }
}

/// A run's outcome as the calling plugin receives it.
fn to_wit(outcome: Outcome) -> Result<wit::ToolOutput, wit::ToolError> {
    match outcome {
        Ok(out) => Ok(wit::ToolOutput {
            content: out.content,
            structured: out.structured.map(|v| v.to_string()),
            changed_paths: out.changed_paths,
        }),
        Err(err) => Err(match err.kind {
            ErrorKind::InvalidInput => wit::ToolError::InvalidInput(err.message),
            ErrorKind::Retry => wit::ToolError::Retry(err.message),
            ErrorKind::Denied => wit::ToolError::Denied(err.message),
            ErrorKind::Failed => wit::ToolError::Failed(wit::Failure {
                message: err.message,
                hint: err.hint,
            }),
            _ => {
                let message = format!("{} ({})", err.message, err.kind);
                SHARE_ERRORS.with(|e| e.borrow_mut().push((message.clone(), err.clone())));
                wit::ToolError::Failed(wit::Failure {
                    message,
                    hint: err.hint,
                })
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::PluginOutput;

    fn inputs(n: usize) -> Vec<String> {
        (0..n).map(|i| i.to_string()).collect()
    }

    fn echo(input: &str) -> Outcome {
        Ok(PluginOutput {
            content: input.to_owned(),
            ..PluginOutput::default()
        })
    }

    fn contents(outcomes: &[Outcome]) -> Vec<String> {
        outcomes
            .iter()
            .map(|o| match o {
                Ok(out) => out.content.clone(),
                Err(e) => format!("{}: {}", e.kind, e.message),
            })
            .collect()
    }

    // Regression: `scope.spawn` panicked (and took the host down) when the
    // OS would not create a thread.
    #[test]
    fn shares_run_on_the_calling_thread_when_no_thread_starts() {
        let refuse: &Spawn = &|_, _| Err(std::io::Error::other("no threads left"));
        let outcomes = run_all(&inputs(5), 3, &echo, refuse);
        assert_eq!(contents(&outcomes), inputs(5));
        let outcomes = run_all(&inputs(5), 3, &echo, &spawn);
        assert_eq!(contents(&outcomes), inputs(5));
    }

    // Regression: a panic while running a share re-panicked in the host
    // when the thread scope joined.
    #[test]
    fn a_panicking_share_is_a_failed_share() {
        let run = |input: &str| -> Outcome {
            assert_ne!(input, "1", "a host bug");
            echo(input)
        };
        let outcomes = run_all(&inputs(3), 1, &run, &spawn);
        let got = contents(&outcomes);
        assert_eq!((got[0].as_str(), got[2].as_str()), ("0", "2"));
        assert!(
            got[1].starts_with("failed: this share of the work failed"),
            "{got:?}"
        );
    }

    // Regression: a share's timeout, cancellation, memory exhaustion or
    // crash reached the call's result as `failed`.
    #[test]
    fn a_share_error_passed_on_keeps_its_kind() {
        let oom = CallError::new(ErrorKind::OutOfMemory, "the tool ran out of memory")
            .with_hint("ask for less");
        let passed_on = |wrap: bool| {
            let oom = oom.clone();
            keep_share_kinds(move || {
                let Err(wit::ToolError::Failed(f)) = to_wit(Err(oom)) else {
                    panic!("not failed");
                };
                let message = if wrap {
                    format!("searching failed: {}", f.message)
                } else {
                    f.message
                };
                Err(CallError::new(ErrorKind::Failed, message))
            })
        };
        assert_eq!(passed_on(false), Err(oom.clone()));
        let wrapped = passed_on(true).unwrap_err();
        assert_eq!(wrapped.kind, ErrorKind::OutOfMemory);
        assert!(wrapped.message.starts_with("searching failed: "));
        // Another failure of the same call stays `failed`, and nothing
        // carries over to the next call.
        let other = keep_share_kinds(|| {
            let _ = to_wit(Err(oom.clone()));
            Err(CallError::new(ErrorKind::Failed, "something else"))
        });
        assert_eq!(other.unwrap_err().kind, ErrorKind::Failed);
        let next = keep_share_kinds(|| {
            Err(CallError::new(
                ErrorKind::Failed,
                "the tool ran out of memory (out_of_memory)",
            ))
        });
        assert_eq!(next.unwrap_err().kind, ErrorKind::Failed);
    }
}
