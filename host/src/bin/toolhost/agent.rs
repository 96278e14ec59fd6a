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
use toolhost::config::{AgentSection, BotSection, Config};
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

/// `toolhost agent`: the tool loop, flags over the configuration's
/// `[agent]` (and `--bot NAME`'s `[bots.NAME]`).
pub(crate) fn run(
    settings: Settings,
    agent: Option<&str>,
    args: &cli::AgentArgs,
) -> anyhow::Result<ExitCode> {
    let Settings {
        executor,
        bots,
        config,
        ..
    } = settings;
    let section = &config.agent;
    let task = or_stdin(&args.task, "the task")?;
    if task.trim().is_empty() {
        return Err(
            UsageError("the task is empty; say what the model should do".to_owned()).into(),
        );
    }
    let budget = AgentSection {
        max_tool_rounds: args.max_rounds.unwrap_or(section.max_tool_rounds),
        max_tool_calls: args.max_tool_calls.unwrap_or(section.max_tool_calls),
        max_result_chars: args.max_result_chars.unwrap_or(section.max_result_chars),
        max_tokens: args.max_tokens.or(section.max_tokens),
        ..section.clone()
    }
    .budget()
    .map_err(|e| UsageError(e.to_string()))?;
    let expected = json_output(args)?;
    let bot = match &args.bot {
        Some(name) => Some((name.as_str(), bot_section(&config, name)?)),
        None => None,
    };
    let (endpoint, model) = endpoint(section, bot.map(|(_, b)| b), args)?;
    if bot.is_none() {
        bots.run_as(endpoint.clone(), model.clone(), budget);
    }
    let executor = Arc::new(executor);
    bots.attach(
        &executor,
        Some(Arc::new(|text: &str| {
            output::warn_info(&output::printable(text))
        })),
    );
    let mut run = ToolLoop::new(&executor, endpoint, model)
        .with_budget(budget)
        .with_context(CallContext {
            // A bot's calls are made as it, unless --agent says otherwise.
            agent: agent.or(args.bot.as_deref()).map(str::to_owned),
            channel: Some("agent".to_owned()),
            session: args.session.clone(),
            ..CallContext::new()
        })
        .with_cancel(interrupt()?)
        .with_history(section.history);
    let system = bot
        .and_then(|(_, b)| b.system.clone())
        .or_else(|| section.system.clone());
    if let Some(system) = system {
        run = run.with_system(system);
    }
    if let Some((name, _)) = bot {
        run = run.with_shape(bots.shape(name));
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

/// `[bots.NAME]`, or a usage error naming the bots there are.
fn bot_section<'a>(config: &'a Config, name: &str) -> anyhow::Result<&'a BotSection> {
    config.bots.get(name).ok_or_else(|| {
        let known: Vec<&str> = config.bots.keys().map(String::as_str).collect();
        UsageError(if known.is_empty() {
            format!("no bot is named `{name}`: toolhost.toml has no [bots.NAME] section")
        } else {
            format!(
                "no bot is named `{name}`; the bots are: {}",
                known.join(", ")
            )
        })
        .into()
    })
}

/// The endpoint and model: flags over the bot's keys over `[agent]`'s.
fn endpoint(
    section: &AgentSection,
    bot: Option<&BotSection>,
    args: &cli::AgentArgs,
) -> anyhow::Result<(Endpoint, String)> {
    let merged = AgentSection {
        endpoint: args.endpoint.clone().or_else(|| section.endpoint.clone()),
        model: args.model.clone().or_else(|| section.model.clone()),
        api: args.api.clone().unwrap_or_else(|| section.api.clone()),
        api_key_env: args
            .api_key_env
            .clone()
            .or_else(|| section.api_key_env.clone()),
        ..section.clone()
    };
    // A flag wins over the bot's own key too.
    let bot = bot.map(|b| BotSection {
        endpoint: b.endpoint.clone().filter(|_| args.endpoint.is_none()),
        model: b.model.clone().filter(|_| args.model.is_none()),
        api: b.api.clone().filter(|_| args.api.is_none()),
        api_key_env: b.api_key_env.clone().filter(|_| args.api_key_env.is_none()),
        ..b.clone()
    });
    toolhost::bots::endpoint_for(&merged, bot.as_ref())
        .map_err(|e| UsageError(e.to_string()).into())
}

/// `toolhost schedule`: run the due jobs (once, or each minute), or list
/// them.
pub(crate) fn schedule(
    settings: Settings,
    action: &cli::ScheduleAction,
) -> anyhow::Result<ExitCode> {
    let Settings { executor, bots, .. } = settings;
    let executor = Arc::new(executor);
    bots.attach(
        &executor,
        Some(Arc::new(|text: &str| {
            output::warn_info(&output::printable(text))
        })),
    );
    match action {
        cli::ScheduleAction::List { json } => {
            let jobs = bots.jobs().map_err(UsageError)?;
            if *json {
                output::json_line(&jobs)?;
            } else if jobs.is_empty() {
                output::text("no jobs\n")?;
            } else {
                for job in &jobs {
                    output::text(&format!(
                        "{}\n",
                        output::printable(&toolhost::bots::describe(job))
                    ))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        cli::ScheduleAction::Run { watch, json } => {
            let stop = interrupt()?;
            let mut failed = false;
            loop {
                for ran in bots.run_due(&stop).map_err(UsageError)? {
                    failed |= ran.stop.as_deref().is_some_and(|s| s != "answered");
                    if *json {
                        output::json_line(&ran)?;
                    } else {
                        let stop = ran
                            .stop
                            .as_deref()
                            .map(|s| format!(" ({s})"))
                            .unwrap_or_default();
                        output::text(&format!("{}: {}{stop}\n", ran.name, ran.status))?;
                    }
                }
                if !*watch {
                    break;
                }
                // Until the next minute, or Ctrl-C.
                for _ in 0..600 {
                    if stop.is_cancelled() {
                        return Ok(ExitCode::SUCCESS);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            }
            Ok(if failed {
                ExitCode::from(EXIT_TOOL_ERROR)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
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
