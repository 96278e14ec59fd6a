//! The host side of `parallel`: a tool's call fans its work out to fresh
//! instances of the same tool on the host's cores (WASI 0.2 has no threads).
//!
//! `run-shards` runs the inputs on the calling thread plus as many extra threads as
//! the runtime's worker permits allow at that moment, so the total never
//! exceeds the pool the runtime sized for it. Each run is an ordinary
//! sandboxed call with the caller's arguments, grant, settings, remaining
//! time and cancel token, and its input as `call-context.shard`; runs cannot
//! fan out again.

use crate::bindings::{parallel, types as wit};
use crate::broker::BrokerCall;
use crate::grant::Effective;
use crate::plugin::Plugin;
use crate::result::{CallError, ErrorKind};
use crate::runtime::{Limits, Runtime};
use crate::sandbox::{self, CallContext, CallRequest, CallState, CancelToken, Outcome};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

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
        let next = AtomicUsize::new(0);
        let results: Vec<Mutex<Option<Outcome>>> =
            inputs.iter().map(|_| Mutex::new(None)).collect();
        let work = || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(input) = inputs.get(i) else { break };
                let outcome = self.run(input);
                *results[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
            }
        };
        std::thread::scope(|scope| {
            for _ in &permits {
                scope.spawn(work);
            }
            work();
        });
        drop(permits);
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
            _ => wit::ToolError::Failed(wit::Failure {
                message: format!("{} ({})", err.message, err.kind),
                hint: err.hint,
            }),
        }),
    }
}
