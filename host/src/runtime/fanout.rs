//! Fan-out: a call's work run as fresh instances of the same tool on the
//! host's cores (WASI 0.2 has no threads); the `parallel` import
//! (imports/parallel.rs) is its guest-facing side.
//!
//! The inputs run on the calling thread plus as many extra threads as the
//! runtime's worker permits allow at that moment, so the total never
//! exceeds the pool the runtime sized for it. A thread the OS refuses to
//! create is no error: the threads that did start (at least the calling one)
//! do its share. Each run is an ordinary sandboxed call with the caller's
//! arguments, grant, settings, remaining time and cancel token, and its input
//! as `call-context.share`; runs cannot fan out again. A share's result is
//! not cut to the model-facing output limit (it goes back to the caller, not
//! to the model) but to [`SHARE_OUTPUT_BYTES`].

use super::sandbox::CallState;
use super::sandbox::{self, CallRequest, Outcome};
use super::{Limits, Runtime};
use crate::bindings::ToolPluginPre;
use crate::broker::BrokerCall;
use crate::types::context::{CallContext, CancelToken};
use crate::types::grant::Effective;
use crate::types::result::{CallError, ErrorKind};
use std::panic::AssertUnwindSafe;
use std::path::Path;
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
    /// The tool's name and its pre-linked component.
    pub(crate) tool: Arc<str>,
    pub(crate) pre: ToolPluginPre<CallState>,
    pub(crate) args: String,
    pub(crate) context: CallContext,
    pub(crate) grant: Effective,
    pub(crate) limits: Limits,
    pub(crate) settings: String,
    pub(crate) deadline: Instant,
    pub(crate) cancel: Option<CancelToken>,
    pub(crate) broker: Option<BrokerCall>,
    pub(crate) paths: Option<Arc<crate::types::paths::PathRules>>,
    /// Told how many shares are done.
    pub(crate) progress: Option<crate::types::context::Progress>,
    /// The embedder's services.
    pub(crate) services: Option<Arc<crate::services::Services>>,
}

impl Fanout {
    /// One run, with `share` as its input.
    fn run(&self, workspace: Option<&Path>, share: &str) -> Outcome {
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
            workspace,
            limits: &limits,
            cancel: self.cancel.as_ref(),
            settings: &self.settings,
            broker: self.broker.as_ref(),
            paths: self.paths.as_ref(),
            progress: None,
            services: self.services.as_ref(),
        };
        sandbox::run_share(&self.runtime, &self.tool, &self.pre, &request, share)
    }

    /// Run every input, in parallel where permits allow, in the call's
    /// `workspace` (its [`CallEnv`](super::sandbox::CallEnv)'s).
    pub(crate) fn map(&self, workspace: Option<&Path>, inputs: &[String]) -> Vec<Outcome> {
        let permits = self.runtime.extra_workers(inputs.len().saturating_sub(1));
        let total = inputs.len() as u64;
        let done = AtomicUsize::new(0);
        let run = |input: &str| {
            let outcome = self.run(workspace, input);
            if let Some(progress) = &self.progress {
                let n = done.fetch_add(1, Ordering::Relaxed) as u64 + 1;
                progress.count(
                    n,
                    total,
                    format!("{}: {n} of {total} parts done", self.tool),
                );
            }
            outcome
        };
        let outcomes = run_all(inputs, permits.len(), &run, &spawn);
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

#[cfg(test)]
mod tests {
    use super::sandbox::PluginOutput;
    use super::*;

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
}
