//! The `parallel` import: a tool fans its work out to fresh instances of
//! itself (runtime/fanout.rs runs them).
//!
//! A share the host stopped (timeout, cancellation, out of memory, crash)
//! reaches the calling tool as WIT's `stopped` error, with its kind. The
//! call state remembers which kinds its shares stopped with, so a `stopped`
//! error the tool passes on keeps its kind, and one it invents does not.

use crate::bindings::{parallel, types as wit};
use crate::runtime::sandbox::{CallState, Outcome};
use crate::types::result::ErrorKind;

impl parallel::Host for CallState {
    fn width(&mut self) -> u32 {
        match &self.fanout {
            Some(f) => 1 + u32::try_from(f.runtime.free_workers()).unwrap_or(u32::MAX),
            None => 1,
        }
    }

    fn run_shares(&mut self, inputs: Vec<String>) -> Vec<Result<wit::ToolOutput, wit::ToolError>> {
        let Some(fanout) = &self.fanout else {
            let refusal = "a run started by parallel.run-shares cannot fan out again; do this share of the work directly";
            return inputs
                .iter()
                .map(|_| Err(wit::ToolError::Denied(refusal.to_owned())))
                .collect();
        };
        let outcomes = fanout.map(self.env.workspace.as_deref(), &inputs);
        outcomes
            .into_iter()
            .map(|outcome| to_wit(outcome, &mut self.stopped_shares))
            .collect()
    }
}

/// A run's outcome as the calling plugin receives it; a stopped run's kind
/// is added to `stopped`.
fn to_wit(
    outcome: Outcome,
    stopped: &mut Vec<ErrorKind>,
) -> Result<wit::ToolOutput, wit::ToolError> {
    let err = match outcome {
        Ok(out) => {
            return Ok(wit::ToolOutput {
                content: out.content,
                structured: out.structured.map(|v| v.to_string()),
                changed_paths: out.changed_paths,
            });
        }
        Err(err) => err,
    };
    let why = match err.kind {
        ErrorKind::InvalidInput => return Err(wit::ToolError::InvalidInput(err.message)),
        ErrorKind::Retry => return Err(wit::ToolError::Retry(err.message)),
        ErrorKind::Denied => return Err(wit::ToolError::Denied(err.message)),
        ErrorKind::Failed | ErrorKind::NotFound => {
            return Err(wit::ToolError::Failed(wit::Failure {
                message: err.message,
                hint: err.hint,
            }));
        }
        ErrorKind::Timeout => wit::Stop::Timeout,
        ErrorKind::Cancelled => wit::Stop::Cancelled,
        ErrorKind::OutOfMemory => wit::Stop::OutOfMemory,
        ErrorKind::Trap => wit::Stop::Trap,
    };
    if !stopped.contains(&err.kind) {
        stopped.push(err.kind);
    }
    Err(wit::ToolError::Stopped(wit::Stopped {
        why,
        message: err.message,
        hint: err.hint,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::result::CallError;

    // Regression: a share's timeout, cancellation, memory exhaustion or
    // crash reached the call's result as `failed`.
    #[test]
    fn a_stopped_share_reaches_the_caller_with_its_kind() {
        let mut stopped = Vec::new();
        for (kind, why) in [
            (ErrorKind::Timeout, wit::Stop::Timeout),
            (ErrorKind::Cancelled, wit::Stop::Cancelled),
            (ErrorKind::OutOfMemory, wit::Stop::OutOfMemory),
            (ErrorKind::Trap, wit::Stop::Trap),
        ] {
            let err = CallError::new(kind, "stopped").with_hint("ask for less");
            let Err(wit::ToolError::Stopped(s)) = to_wit(Err(err), &mut stopped) else {
                panic!("{kind} did not arrive as `stopped`");
            };
            assert_eq!(
                (s.why, s.message.as_str(), s.hint.as_deref()),
                (why, "stopped", Some("ask for less"))
            );
            assert_eq!(crate::runtime::sandbox::stop_kind(s.why), kind);
        }
        assert_eq!(stopped.len(), 4);
        let failed = to_wit(Err(CallError::new(ErrorKind::Failed, "no")), &mut stopped);
        assert!(matches!(failed, Err(wit::ToolError::Failed(_))));
        assert_eq!(stopped.len(), 4, "a plain failure is not a stop");
    }
}
