//! The `toolhost` command: list, describe and call sandboxed tools.

mod agent;
mod cli;
mod otel;
mod output;
mod scaffold;

use anyhow::Context as _;
use cli::{CallArgs, Cli, Command, DynamicAction, Purpose, Settings, UsageError};
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost::{CallContext, CallOptions};
mod serving;
use serving::*;

/// Exit status when a tool reports an error.
const EXIT_TOOL_ERROR: u8 = 1;
/// Exit status for a usage error (clap uses it too).
const EXIT_USAGE: u8 = 2;
/// Exit status when a person aborts at a confirmation prompt (as for Ctrl-C).
const EXIT_ABORTED: u8 = 130;

fn main() -> ExitCode {
    if let Some(code) = compile_ahead_helper() {
        return code;
    }
    let cli = Cli::parse_args();
    // Spans not yet sent go when this drops, after the command.
    let _traces = init_logging(cli.global.verbose, cli.global.log_format);
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            output::error(&err);
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::from(EXIT_TOOL_ERROR)
            }
        }
    }
}

/// `toolhost __compile-ahead`, which `toolhost serve` runs to compile a
/// tool ahead of use (toolhost::runtime's helper.rs); not a command for
/// people, so not in the help.
fn compile_ahead_helper() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != toolhost::runtime::COMPILE_AHEAD_ARG || args.next().is_some() {
        return None;
    }
    Some(
        match toolhost::runtime::compile_ahead_helper(std::io::stdin().lock()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                output::error(&anyhow::anyhow!(err));
                ExitCode::FAILURE
            }
        },
    )
}

fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(code) = without_settings(&cli)? {
        return Ok(code);
    }
    let mode = match &cli.command {
        Command::Call(args) => args.mode,
        Command::Agent(args) => args.mode,
        Command::Serve(args) => args.mode,
        _ => None,
    };
    if let Command::Serve(args) = &cli.command {
        // A server runs for long, and its idle memory is what users pay.
        toolhost::runtime::give_freed_memory_back();
        let settings = Settings::build(&cli.global, mode, Purpose::Serve)?;
        return serve(settings, args);
    }
    if let Command::Review(args) = &cli.command {
        let settings = Settings::build(&cli.global, mode, Purpose::Other)?;
        return review(settings, args);
    }
    if let Command::Config {
        action: cli::ConfigAction::Trust,
    } = &cli.command
    {
        // Trusting must work on a file that is not trusted yet.
        output::text(&cli::trust_config(&cli.global)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    // `dynamic approve --grant CAPS`: the grant a person approves, not the
    // global TOOL=CAPS.
    let approved_caps = match &cli.command {
        Command::Dynamic {
            action: DynamicAction::Approve { .. },
        } => Some(std::mem::take(&mut cli.global.grants)),
        _ => None,
    };
    let purpose = match cli.command {
        Command::Call(_) => Purpose::OneCall,
        Command::Agent(_) | Command::Schedule { .. } => Purpose::Agent,
        _ => Purpose::Other,
    };
    let mut settings = Settings::build(&cli.global, mode, purpose)?;
    if matches!(cli.command, Command::Call(_)) {
        settings.executor.ends_after_one_call();
    }
    if purpose != Purpose::Other {
        settings.executor.refuse_background(
            "`toolhost call` exits when the call ends, which would kill a background command \
             at once; run it in the foreground with a `timeout` (up to 600 s), or start it \
             through `toolhost serve`, where it lives as long as the client's session",
        );
    }
    let executor = &settings.executor;
    let agent = cli.global.agent.as_deref();
    if lists_tools(&cli.command)
        || matches!(&cli.command, Command::Call(a) if executor.is_remote_tool(&a.tool))
    {
        wait_for_remote_servers(executor);
    }
    match cli.command {
        Command::Tools { json } => output::tools(executor, agent, json)?,
        Command::Describe { tool, json } => {
            let plugin = executor.lookup_as(agent, &tool).map_err(usage)?;
            output::describe(executor, &plugin, json)?;
        }
        Command::Schema { format, tools } => {
            let allowed = (!tools.is_empty()).then_some(tools.as_slice());
            let schemas = executor
                .schemas_for(agent, allowed, format)
                .map_err(usage)?;
            output::schemas(&schemas)?;
        }
        Command::Config { action } => output::config(&settings, &action)?,
        Command::Check { files, json } => return check(&settings, &files, json),
        Command::Test { wasm, cases, json } => return test(&settings, &wasm, &cases, json),
        Command::Dynamic { action } => dynamic(&settings, action, approved_caps)?,
        Command::Call(args) => {
            let code = call(&settings, agent, &args);
            settings.executor.end_at_exit();
            return code;
        }
        Command::Agent(args) => return agent::run(settings, agent, &args),
        Command::Schedule { action } => return agent::schedule(settings, &action),
        // Handled above: serving takes the settings whole, completions
        // need none.
        Command::Serve(_)
        | Command::Review(_)
        | Command::Completions { .. }
        | Command::Secret { .. }
        | Command::Plugin { .. }
        | Command::New { .. } => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// The commands that need no configuration (`new`, `completions`), run;
/// `None` for every other.
fn without_settings(cli: &Cli) -> anyhow::Result<Option<ExitCode>> {
    match &cli.command {
        Command::New {
            name,
            lang,
            dir,
            sdk,
        } => {
            let told = scaffold::new_project(name, *lang, dir.as_deref(), sdk.as_deref())?;
            output::text(&told)?;
        }
        Command::Secret { action } => output::text(&cli::secret::run(action)?)?,
        Command::Plugin { action } => output::text(&cli::plugin::run(action)?)?,
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut command, "toolhost", &mut script);
            output::text(&String::from_utf8_lossy(&script))?;
        }
        _ => return Ok(None),
    }
    Ok(Some(ExitCode::SUCCESS))
}

/// Connect to the remote MCP servers and wait for their lists (each at
/// most its connect timeout), warning about each that cannot be reached.
fn wait_for_remote_servers(executor: &toolhost::Executor) {
    executor.connect_remote_servers();
    for server in executor
        .remote_servers()
        .map(|r| r.status())
        .unwrap_or_default()
    {
        if let Some(why) = server.down {
            output::warn(&format!(
                "the MCP server `{}` ({}) cannot be reached, so its tools are missing: {why}",
                server.name, server.target
            ));
        }
    }
}

/// A tool named on the command line that does not exist is a usage error.
fn usage(err: toolhost::RegistryError) -> UsageError {
    UsageError(err.to_string())
}

/// `toolhost check`: the conformance checks, file by file, every problem
/// of each.
fn check(
    settings: &Settings,
    files: &[std::path::PathBuf],
    json: bool,
) -> anyhow::Result<ExitCode> {
    let runtime = settings.executor.runtime();
    let reports: Vec<(&std::path::PathBuf, toolhost::CheckReport)> = files
        .iter()
        .map(|file| {
            let report = match std::fs::read(file) {
                Ok(wasm) => {
                    let mut report = toolhost::check_component(runtime, &wasm, file);
                    toolhost::check_builtin_name(&mut report, &wasm);
                    report
                }
                Err(e) => toolhost::CheckReport {
                    info: None,
                    plain: Vec::new(),
                    problems: vec![toolhost::Problem {
                        severity: toolhost::Severity::Error,
                        field: "component",
                        message: format!("cannot read it: {e}"),
                        fix: "give the path of a built `.wasm` component".to_owned(),
                    }],
                },
            };
            (file, report)
        })
        .collect();
    if json {
        output::check_json(&reports)?;
    } else {
        for (file, report) in &reports {
            output::check_text(file, report)?;
        }
    }
    Ok(if reports.iter().all(|(_, r)| r.conforms()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TOOL_ERROR)
    })
}

/// `toolhost test`: a built component's cases, run in the real host.
fn test(settings: &Settings, wasm: &Path, cases: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(cases)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", cases.display())))?;
    let cases: Vec<toolhost::harness::Case> = serde_json::from_str(&text).map_err(|e| {
        UsageError(format!(
            "{}: {e}; it must be a JSON array of cases (see `toolhost test --help`)",
            cases.display()
        ))
    })?;
    let harness = toolhost::harness::Harness::new(Arc::clone(settings.executor.runtime()), wasm)
        .map_err(|e| anyhow::anyhow!(e))?;
    let outcomes: Vec<toolhost::harness::Outcome> = cases
        .iter()
        .enumerate()
        .map(|(i, case)| harness.run(case, i))
        .collect();
    output::test_outcomes(harness.tool(), &outcomes, json)?;
    Ok(if outcomes.iter().all(toolhost::harness::Outcome::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TOOL_ERROR)
    })
}

/// `toolhost dynamic ...`: a person reviews what agents created.
fn dynamic(
    settings: &Settings,
    action: DynamicAction,
    approved_caps: Option<Vec<String>>,
) -> anyhow::Result<()> {
    let executor = &settings.executor;
    let store = executor.dynamic_store().ok_or_else(|| {
        UsageError(
            "there is no dynamic-tool store: set `[dynamic] dir` (or `state_dir`) in the configuration"
                .to_owned(),
        )
    })?;
    match action {
        DynamicAction::List { status, json } => {
            let wanted = match status.as_deref() {
                None => None,
                Some(s @ ("pending" | "approved" | "rejected")) => Some(s.to_owned()),
                Some(other) => {
                    return Err(UsageError(format!(
                        "--status {other}: choose pending, approved or rejected"
                    ))
                    .into());
                }
            };
            let (entries, problems) = store.list();
            for p in problems {
                output::warn(&format!("{}: {}", p.path.display(), p.reason));
            }
            let entries: Vec<_> = entries
                .into_iter()
                .filter(|e| {
                    wanted
                        .as_deref()
                        .is_none_or(|w| e.meta.status.as_str() == w)
                })
                .collect();
            output::dynamic_list(&entries, json)?;
        }
        DynamicAction::Show { id } => {
            let entry = store.find(&id).map_err(|e| UsageError(e.to_string()))?;
            output::dynamic_show(&entry, &store.history(&entry), store.since_approval(&entry))?;
        }
        DynamicAction::Approve { id } => {
            // `--grant CAPS`, or the global form `--grant ID=CAPS` naming this tool.
            let mut caps = Vec::new();
            for given in approved_caps.unwrap_or_default() {
                match given.split_once('=') {
                    None => caps.push(given),
                    Some((tool, list)) if tool == id => caps.push(list.to_owned()),
                    Some(_) => {
                        return Err(UsageError(format!(
                            "--grant {given}: here --grant takes the capabilities of the tool being approved, e.g. --grant workspace:read,commands"
                        ))
                        .into());
                    }
                }
            }
            let grant = (!caps.is_empty()).then_some(caps);
            let (entry, decision) = store
                .approve_as(
                    executor.runtime(),
                    &executor.registry(),
                    &id,
                    grant,
                    None,
                    &toolhost::dynamic::Decider::cli(),
                )
                .map_err(|e| anyhow::anyhow!("cannot approve `{id}`: {e}"))?;
            executor.record_decision(&decision);
            output::text(&format!(
                "approved `{}` ({}) with: {}\nA running `toolhost serve` loads it at its next rescan (--reload-secs).\n",
                entry.meta.name,
                entry.meta.id,
                output::caps_text(entry.meta.grant.as_deref().unwrap_or_default()),
            ))?;
        }
        DynamicAction::Reject { id, reason } => {
            let (entry, decision) = store
                .reject_as(&id, reason, &toolhost::dynamic::Decider::cli())
                .map_err(|e| anyhow::anyhow!("cannot reject `{id}`: {e}"))?;
            executor.record_decision(&decision);
            output::text(&format!(
                "rejected `{}` ({}); its source is removed, and a running `toolhost serve` unloads it at its next rescan.\n",
                entry.meta.name, entry.meta.id
            ))?;
        }
        DynamicAction::Decline { id } => {
            let (entry, decision) = store
                .decline_as(&id, &toolhost::dynamic::Decider::cli())
                .map_err(|e| anyhow::anyhow!("cannot decline for `{id}`: {e}"))?;
            executor.record_decision(&decision);
            output::text(&format!(
                "declined what was asked about `{}` ({}); it stays as it is.\n",
                entry.meta.name, entry.meta.id
            ))?;
        }
    }
    Ok(())
}

/// `value`, or all of stdin when it is `-`.
pub(crate) fn or_stdin(value: &str, what: &str) -> anyhow::Result<String> {
    if value != "-" {
        return Ok(value.to_owned());
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {what} from stdin"))?;
    Ok(text)
}

fn call(settings: &Settings, agent: Option<&str>, args: &CallArgs) -> anyhow::Result<ExitCode> {
    let json_args = or_stdin(&args.args, "the arguments")?;
    let options = CallOptions {
        context: CallContext {
            agent: agent.map(str::to_owned),
            channel: Some("cli".to_owned()),
            session: args.session.clone(),
            dry_run: args.dry_run,
            ..CallContext::new()
        },
        timeout: args.timeout().map_err(|e| UsageError(e.to_string()))?,
        ..CallOptions::default()
    };
    let result = settings.executor.call(&args.tool, &json_args, &options);
    output::call_result(&result, args.json)?;
    Ok(if settings.executor.aborted() {
        ExitCode::from(EXIT_ABORTED)
    } else if result.success {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TOOL_ERROR)
    })
}

/// Whether `command` lists tools (or checks them) once, and so waits for
/// the remote MCP servers' lists (each server at most its connect
/// timeout).
fn lists_tools(command: &Command) -> bool {
    matches!(
        command,
        Command::Tools { .. }
            | Command::Describe { .. }
            | Command::Schema { .. }
            | Command::Agent(_)
            | Command::Config {
                action: cli::ConfigAction::Check
            }
    )
}

/// Logs go to stderr only: stdout belongs to tool output (and to the MCP
/// protocol when serving).
/// Traces go over OTLP when an endpoint is configured (otel.rs): the
/// exporter, to keep until the end.
fn init_logging(verbose: u8, format: cli::LogFormat) -> Option<otel::Traces> {
    // rmcp's own errors repeat, in Rust's words, what toolhost says of
    // the same failure in plain ones: shown from -vv on.
    let default = match verbose {
        0 => "warn,rmcp=off",
        1 => "warn,toolhost=info,rmcp=off",
        2 => "warn,toolhost=debug",
        _ => "info,toolhost=trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // stderr shows what the filter lets through; MCP clients get what
    // their own level asks for (`logging/setLevel`).
    let stderr = match format {
        cli::LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
        cli::LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
    };
    let (traces, exporter) = otel::layer().unzip();
    tracing_subscriber::registry()
        .with(stderr)
        .with(toolhost::mcp::logging::layer())
        .with(traces)
        .init();
    exporter
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
