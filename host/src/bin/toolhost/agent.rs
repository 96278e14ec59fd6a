//! `toolhost agent`: the tool loop, flags over the configuration's
//! `[agent]`; Ctrl-C, progress on stderr, `--json`, `--json-events` and
//! `--output json`.

use crate::cli::{self, Settings, UsageError};
use crate::{EXIT_ABORTED, EXIT_TOOL_ERROR, or_stdin, output};
use serde_json::json;
use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use toolhost::agent::{AgentError, Endpoint, Event, JsonOutput, Outcome, Stop, ToolLoop};
use toolhost::{CallContext, CancelToken};

/// Set by Ctrl-C (or SIGTERM) during a run: the run stops, and a question
/// waiting on the terminal is answered "abort all".
static INTERRUPTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Whether Ctrl-C was pressed during a run.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED
        .get()
        .is_some_and(|flag| flag.load(Ordering::SeqCst))
}

/// `toolhost agent`: the tool loop, flags over the configuration's `[agent]`.
pub(crate) fn run(
    settings: &Settings,
    agent: Option<&str>,
    args: &cli::AgentArgs,
) -> anyhow::Result<ExitCode> {
    let section = &settings.config.agent;
    let task = or_stdin(&args.task, "the task")?;
    if task.trim().is_empty() {
        return Err(
            UsageError("the task is empty; say what the model should do".to_owned()).into(),
        );
    }
    let model = args
        .model
        .as_ref()
        .or(section.model.as_ref())
        .ok_or_else(|| {
            UsageError(
                "no model: give --model NAME or set [agent] model in toolhost.toml".to_owned(),
            )
        })?;
    let budget = toolhost::config::AgentSection {
        max_tool_rounds: args.max_rounds.unwrap_or(section.max_tool_rounds),
        max_tool_calls: args.max_tool_calls.unwrap_or(section.max_tool_calls),
        max_result_chars: args.max_result_chars.unwrap_or(section.max_result_chars),
        max_tokens: args.max_tokens.or(section.max_tokens),
        ..section.clone()
    }
    .budget()
    .map_err(|e| UsageError(e.to_string()))?;
    let expected = json_output(args)?;
    let mut run = ToolLoop::new(&settings.executor, endpoint(section, args)?, model)
        .with_budget(budget)
        .with_context(CallContext {
            agent: agent.map(str::to_owned),
            channel: Some("agent".to_owned()),
            session: args.session.clone(),
            ..CallContext::new()
        })
        .with_cancel(interrupt()?)
        .with_history(section.history);
    if let Some(system) = &section.system {
        run = run.with_system(system.clone());
    }
    if let Some(expected) = expected {
        run = run.with_json_output(expected);
    }
    if args.json_events {
        run = run.with_events(Arc::new(|event: &Event| {
            let _ = output::json_line(event);
        }));
    } else if std::io::stderr().is_terminal() {
        run = run.with_events(Arc::new(progress));
    }
    match run.run(&task) {
        Ok(outcome) => finish(&outcome, args),
        Err(AgentError::Usage(message)) => Err(UsageError(message).into()),
        Err(err) => Err(err.into()),
    }
}

/// The endpoint the flags and `[agent]` name, with its key, retries and
/// fallback.
fn endpoint(
    section: &toolhost::config::AgentSection,
    args: &cli::AgentArgs,
) -> anyhow::Result<Endpoint> {
    let url = args
        .endpoint
        .as_ref()
        .or(section.endpoint.as_ref())
        .ok_or_else(|| {
            UsageError(
                "no endpoint: give --endpoint URL (e.g. http://127.0.0.1:11434/v1) or set \
             [agent] endpoint in toolhost.toml"
                    .to_owned(),
            )
        })?;
    let api: toolhost::agent::Api = args
        .api
        .as_deref()
        .unwrap_or(&section.api)
        .parse()
        .map_err(|e: AgentError| UsageError(e.to_string()))?;
    let mut endpoint = Endpoint::speaking(api, url)
        .map_err(|e| UsageError(e.to_string()))?
        .with_timeout(std::time::Duration::from_secs(section.request_timeout_secs))
        .with_retries(section.retries);
    if let Some((second, model)) = fallback_endpoint(section)? {
        endpoint = endpoint.with_fallback(second, model);
    }
    if let Some(var) = args.api_key_env.as_ref().or(section.api_key_env.as_ref()) {
        if !toolhost::grant::is_env_name(var) {
            // Never echo it: it may be the key itself, pasted in by mistake.
            return Err(UsageError(
                "--api-key-env (or [agent] api_key_env) takes the NAME of an environment \
                 variable holding the key (letters, digits and `_`), not the key itself"
                    .to_owned(),
            )
            .into());
        }
        let key = std::env::var(var).map_err(|_| {
            UsageError(format!(
                "the environment variable {var} (--api-key-env) is not set; export it with the API key"
            ))
        })?;
        endpoint = endpoint
            .with_api_key(key)
            .map_err(|e| UsageError(e.to_string()))?;
    }
    Ok(endpoint)
}

/// The `[agent.fallback]` endpoint and its model, if one is configured.
fn fallback_endpoint(
    section: &toolhost::config::AgentSection,
) -> anyhow::Result<Option<(Endpoint, String)>> {
    let Some(fallback) = &section.fallback else {
        return Ok(None);
    };
    let api = fallback.api().map_err(|e| UsageError(e.to_string()))?;
    let mut second = Endpoint::speaking(api, &fallback.endpoint)
        .map_err(|e| UsageError(format!("[agent.fallback] {e}")))?
        .with_timeout(std::time::Duration::from_secs(section.request_timeout_secs))
        .with_retries(section.retries);
    if let Some(var) = &fallback.api_key_env {
        let key = std::env::var(var).map_err(|_| {
            UsageError(format!(
                "the environment variable {var} ([agent.fallback] api_key_env) is not set; \
                 export it with the fallback's API key"
            ))
        })?;
        second = second
            .with_api_key(key)
            .map_err(|e| UsageError(e.to_string()))?;
    }
    Ok(Some((second, fallback.model.clone())))
}

/// `--output json` and `--output-schema FILE`, checked.
fn json_output(args: &cli::AgentArgs) -> anyhow::Result<Option<JsonOutput>> {
    let json = match args.output.as_deref() {
        None | Some("text") => false,
        Some("json") => true,
        Some(other) => {
            return Err(UsageError(format!("--output takes text or json, not `{other}`")).into());
        }
    };
    let Some(path) = &args.output_schema else {
        return Ok(json.then(JsonOutput::any));
    };
    if !json {
        return Err(UsageError("--output-schema goes with --output json".to_owned()).into());
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError(format!(
            "cannot read the output schema {}: {e}",
            path.display()
        ))
    })?;
    let schema = serde_json::from_str(&text).map_err(|e| {
        UsageError(format!(
            "the output schema {} is not JSON: {e}",
            path.display()
        ))
    })?;
    let expected = JsonOutput::matching(schema).map_err(|why| {
        UsageError(format!(
            "the output schema {} cannot be used: {why}",
            path.display()
        ))
    })?;
    Ok(Some(expected))
}

/// A cancel token that Ctrl-C (or SIGTERM) sets; pressed again, it exits
/// at once with status 130.
fn interrupt() -> anyhow::Result<CancelToken> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let token = CancelToken::new();
    let flag = token.flag();
    for signal in [SIGINT, SIGTERM] {
        // The shutdown first: it is armed only once the flag is set.
        signal_hook::flag::register_conditional_shutdown(
            signal,
            i32::from(EXIT_ABORTED),
            Arc::clone(&flag),
        )?;
        signal_hook::flag::register(signal, Arc::clone(&flag))?;
    }
    let _ = INTERRUPTED.set(flag);
    Ok(token)
}

/// One step on stderr, for a person watching a terminal.
fn progress(event: &Event) {
    match event {
        Event::Asking { round, model } => {
            output::warn_info(&format!("round {round}: asking {model}…"))
        }
        Event::Answer {
            round,
            tool_calls,
            tokens,
            ms,
        } => output::warn_info(&format!(
            "round {round}: answered in {:.1} s ({tool_calls} tool calls, {tokens} tokens)",
            *ms as f64 / 1000.0
        )),
        Event::ToolCall { .. } => {}
        Event::ToolResult {
            tool,
            outcome,
            ms,
            changed,
            ..
        } => {
            let changed = if changed.is_empty() {
                String::new()
            } else {
                format!("; changed {}", changed.join(", "))
            };
            output::warn_info(&format!(
                "  {} → {outcome} ({ms} ms{})",
                output::printable(tool),
                output::printable(&changed)
            ));
        }
        Event::Nudge { round, .. } => {
            output::warn_info(&format!("round {round}: asking the model again"))
        }
    }
}

/// Print the outcome as asked; its exit status.
fn finish(outcome: &Outcome, args: &cli::AgentArgs) -> anyhow::Result<ExitCode> {
    if args.json_events {
        let mut end = serde_json::to_value(outcome)?;
        end["event"] = json!("end");
        output::json_line(&end)?;
    } else if args.json {
        output::agent_outcome(outcome, true)?;
    } else if let (Stop::Answered, Some(value)) = (outcome.stop, &outcome.output) {
        output::text(&format!("{value}\n"))?;
    } else if !matches!(outcome.stop, Stop::Failed | Stop::Cancelled) {
        output::agent_outcome(outcome, false)?;
    }
    match (outcome.stop, &outcome.error) {
        (Stop::Cancelled, _) => output::warn_info(&format!("cancelled: {}", outcome.answer)),
        (_, Some(error)) => output::warn_info(&format!("error: {}", output::printable(error))),
        _ => {}
    }
    Ok(match outcome.stop {
        Stop::Answered => ExitCode::SUCCESS,
        Stop::Cancelled => ExitCode::from(EXIT_ABORTED),
        _ => ExitCode::from(EXIT_TOOL_ERROR),
    })
}
