//! The `parallel` import: a tool fans its work out to fresh instances of
//! itself (runtime/fanout.rs runs them).
//!
//! WIT's `tool-error` has no case for a timeout, a cancellation, running out
//! of memory or a crash, so a share that ends that way reaches the caller as
//! `failed`. The host remembers those errors, and when the call then fails
//! with one of them (the usual way: the tool passes the share's error on),
//! [`keep_share_kinds`] gives the call's error its real kind back.

use crate::bindings::{parallel, types as wit};
use crate::runtime::sandbox::{CallState, Outcome};
use crate::types::result::{CallError, ErrorKind};
use std::cell::RefCell;

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
