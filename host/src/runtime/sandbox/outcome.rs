//! What the end of a call becomes: the plugin's output converted and capped, and errors and traps classified with what to do next.

use super::*;

pub(super) fn convert_output(out: wit::ToolOutput, max: usize, tool: &str) -> PluginOutput {
    let mut content = out.content;
    let structured = match out.structured {
        Some(text) if over_limit(&mut content, text.len(), max, tool) => None,
        Some(text) => match serde_json::from_str(&text) {
            Ok(value) => Some(value),
            Err(err) => {
                tracing::warn!(tool, %err, "dropping structured output that is not valid JSON");
                None
            }
        },
        None => None,
    };
    cut_content(&mut content, max);
    let changed_paths = out
        .changed_paths
        .into_iter()
        .filter(|p| {
            let ok = is_workspace_relative(p);
            if !ok {
                tracing::warn!(tool, path = %p, "ignoring a changed path that is not inside the workspace");
            }
            ok
        })
        .collect();
    PluginOutput {
        content,
        structured,
        changed_paths,
    }
}

/// Whether structured output of `len` bytes (as JSON text) is over the
/// output limit `max`; if so it is dropped, and `content` says so.
pub(super) fn over_limit(content: &mut String, len: usize, max: usize, tool: &str) -> bool {
    if len <= max {
        return false;
    }
    tracing::warn!(
        tool,
        bytes = len,
        "dropping structured output over the output limit"
    );
    content.push_str(&format!(
        "\n[structured output dropped: {len} bytes is over the {max}-byte limit]"
    ));
    true
}

/// Cut `content` to the output limit `max`, saying how much is shown.
pub(super) fn cut_content(content: &mut String, max: usize) {
    if content.len() > max {
        let total = content.len();
        content.truncate(content.floor_char_boundary(max));
        content.push_str(&format!(
            "\n[output cut: {} of {total} bytes shown; ask for less, e.g. with a narrower path or a limit]",
            content.len()
        ));
    }
}

/// A reported changed path must be relative and stay inside the workspace
/// (later steps, such as post-edit hooks, act on it).
pub(super) fn is_workspace_relative(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty()
        && p.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
}

/// The tool's error as the call's. A `stopped` error keeps its kind only
/// when one of the call's shares really stopped that way (`stopped_shares`);
/// a tool cannot claim a timeout or a crash it did not have.
pub(super) fn convert_error(err: wit::ToolError, stopped_shares: &[ErrorKind]) -> CallError {
    match err {
        wit::ToolError::InvalidInput(m) => CallError::new(ErrorKind::InvalidInput, m),
        wit::ToolError::Retry(m) => CallError::new(ErrorKind::Retry, m),
        wit::ToolError::Denied(m) => CallError::new(ErrorKind::Denied, m),
        wit::ToolError::Failed(f) => {
            with_hint(CallError::new(ErrorKind::Failed, f.message), f.hint)
        }
        wit::ToolError::Stopped(s) => {
            let kind = stop_kind(s.why);
            let kind = if stopped_shares.contains(&kind) {
                kind
            } else {
                ErrorKind::Failed
            };
            with_hint(CallError::new(kind, s.message), s.hint)
        }
    }
}

pub(super) fn with_hint(err: CallError, hint: Option<String>) -> CallError {
    match hint {
        Some(h) => err.with_hint(h),
        None => err,
    }
}

/// The call-result kind of a WIT `stop`.
pub(crate) fn stop_kind(why: wit::Stop) -> ErrorKind {
    match why {
        wit::Stop::Timeout => ErrorKind::Timeout,
        wit::Stop::Cancelled => ErrorKind::Cancelled,
        wit::Stop::OutOfMemory => ErrorKind::OutOfMemory,
        wit::Stop::Trap => ErrorKind::Trap,
    }
}

/// Name what stopped a call that did not return normally.
pub(super) fn classify(
    err: &wasmtime::Error,
    state: &CallState,
    limits: &Limits,
    stderr: &str,
) -> CallError {
    match state.interrupted {
        Some(ErrorKind::Cancelled) => {
            return CallError::new(ErrorKind::Cancelled, "the call was cancelled");
        }
        Some(_) => {
            return CallError::new(
                ErrorKind::Timeout,
                format!(
                    "the call ran past its {} limit and was stopped",
                    human_duration(limits.timeout)
                ),
            )
            .with_hint(
                "ask for less work (a narrower path or pattern), or allow more time with --timeout",
            );
        }
        None => {}
    }
    if state.limiter.table_denied {
        return CallError::new(
            ErrorKind::OutOfMemory,
            format!("the tool ran out of table space: it needed more than {MAX_TABLE_ELEMENTS} table elements"),
        )
        .with_hint("this is a bug or a limit of the tool; calling it again the same way will fail the same way");
    }
    if state.limiter.memory_denied {
        return out_of_memory(limits, None);
    }
    let detail = last_lines(stderr, 20);
    if let Some(trap) = err.downcast_ref::<Trap>() {
        let mut message = format!("the tool crashed ({trap})");
        if !detail.is_empty() {
            message.push_str(&format!("; its last output:\n{detail}"));
        }
        return CallError::new(ErrorKind::Trap, message)
            .with_hint("this is a bug in the tool; calling again with the same arguments will fail the same way");
    }
    CallError::new(ErrorKind::Failed, format!("the tool failed: {err}"))
}

/// The call ran out of memory; `said` is what the tool reported of it,
/// if it reported it as an error of its own.
fn out_of_memory(limits: &Limits, said: Option<&str>) -> CallError {
    let mut message = format!(
        "the tool ran out of memory: it needed more than its {} MiB limit",
        limits.memory_bytes >> 20
    );
    if let Some(said) = said {
        message.push_str(&format!(" (it said: {said})"));
    }
    CallError::new(ErrorKind::OutOfMemory, message).with_hint(
        "ask for less data at once (a smaller file, range or limit), or raise the memory limit",
    )
}

/// A `failed` error the tool returned after the host refused it memory
/// (Python's `MemoryError`, JavaScript's out-of-memory `RangeError`, a Rust
/// tool that handles the failed allocation): the call ran out of memory,
/// whatever the language called it.
pub(super) fn out_of_memory_if_refused(
    err: CallError,
    state: &CallState,
    limits: &Limits,
) -> CallError {
    if state.limiter.memory_denied && err.kind == ErrorKind::Failed {
        out_of_memory(limits, Some(&err.message))
    } else {
        err
    }
}

pub(super) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub(super) fn human_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}
