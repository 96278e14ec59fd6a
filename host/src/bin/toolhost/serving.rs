//! The serving commands: `toolhost serve` (MCP over stdio or HTTP) and `toolhost review` (the review page alone).

use super::*;

/// The credentials in `--token-file`, if one was given.
pub(super) fn token_file(
    path: Option<&Path>,
) -> anyhow::Result<Option<Vec<toolhost::access::Credential>>> {
    let Some(path) = path else {
        return Ok(None);
    };
    toolhost::access::read_token_file(path)
        .map(Some)
        .map_err(|e| UsageError(format!("--token-file: {e}")).into())
}

/// `toolhost review`: the review page alone, until Ctrl-C.
pub(super) fn review(settings: Settings, args: &cli::ReviewArgs) -> anyhow::Result<ExitCode> {
    let password = token_file(args.token_file.as_deref())?
        .and_then(|credentials| credentials.into_iter().next())
        .map(|c| c.token);
    let links = toolhost::review::SignInLinks::new(announce_link).with_password(password);
    let addr = args
        .addr
        .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], args.port)));
    let executor = Arc::new(settings.executor);
    if executor.dynamic_store().is_none() {
        return Err(UsageError(
            "there is no dynamic-tool store to review: set `[dynamic] dir` (or `state_dir`) in the configuration"
                .to_owned(),
        )
        .into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime
        .block_on(toolhost::review::serve(
            executor,
            addr,
            links,
            |bound, options| {
                output::warn_info(&format!(
                    "review page: {} (Ctrl-C to stop)",
                    options.login_url(bound)
                ));
            },
        ))
        .map_err(|e| UsageError(format!("cannot serve the review page on {addr}: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

/// This server as one replica of several, if asked (`--replica-addr` with
/// `--cluster-key-file`).
fn replica(args: &cli::ServeArgs) -> anyhow::Result<Option<Arc<toolhost::mcp::cluster::Cluster>>> {
    Ok(match (&args.replica_addr, &args.cluster_key_file) {
        (Some(addr), Some(file)) => {
            let key =
                toolhost::access::read_private(file).map_err(|e| UsageError(e.to_string()))?;
            let cluster = toolhost::mcp::cluster::Cluster::new(addr, key.trim().as_bytes())
                .map_err(|e| {
                    UsageError(format!(
                        "cannot serve as a replica ({}): {e}",
                        file.display()
                    ))
                })?;
            Some(Arc::new(cluster))
        }
        _ => None,
    })
}

/// The running binary, for the helpers that compile ahead of use: what
/// compiling leaves in a process goes with them (on Linux the binary even
/// if its file was replaced or removed since it started).
fn this_binary() -> Option<std::path::PathBuf> {
    if cfg!(target_os = "linux") {
        Some(std::path::PathBuf::from("/proc/self/exe"))
    } else {
        std::env::current_exe().ok()
    }
}

/// `toolhost serve`: the executor over MCP until the client leaves (stdio)
/// or Ctrl-C (HTTP).
pub(super) fn serve(settings: Settings, args: &cli::ServeArgs) -> anyhow::Result<ExitCode> {
    let tokens = token_file(args.token_file.as_deref())?;
    // A person at this terminal is not the one to ask: clients are asked
    // through elicitation, per call.
    let executor = Arc::new(
        settings
            .executor
            .with_confirmer(Box::new(toolhost::NoConfirmer)),
    );
    // The agent services run their loops on it; messages go to the
    // webhook only (nobody watches a server's terminal).
    settings.bots.attach(&executor, None);
    if settings.bots.schedules() {
        settings.bots.run_due_every_minute();
    }
    let cluster = replica(args)?;
    let options = toolhost::mcp::ServeOptions {
        cluster,
        reload_interval: (args.reload_secs > 0)
            .then(|| std::time::Duration::from_secs(args.reload_secs)),
        notice: settings.notice.clone(),
        compile_ahead: true,
        compile_helper: this_binary(),
        unload_idle: (args.unload_idle_secs > 0)
            .then(|| std::time::Duration::from_secs(args.unload_idle_secs)),
        structured_output: args.structured_output,
        ..toolhost::mcp::ServeOptions::default()
    };
    // One thread runs the protocol (stdio or HTTP, JSON in and out); calls
    // run on the server's call threads (toolhost::mcp). With tokio's
    // multi-threaded scheduler and blocking pool, its workers and one thread
    // per call in flight fought over the cores (docs/benchmarks.md).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("toolhost-mcp")
        .build()
        .context("cannot start the async runtime")?;
    // The token made for this server, removed when it stops.
    let (auth, _kept) = match args.http {
        Some(addr) => http_auth(addr, tokens, args.no_auth)?,
        None => (toolhost::access::Auth::Open, None),
    };
    let served = runtime.block_on(async {
        match args.http {
            None => toolhost::mcp::serve_stdio(executor, options).await,
            Some(addr) => {
                let review = toolhost::review::SignInLinks::new(announce_link);
                let first_link = review.clone();
                let max_sessions = args.max_sessions as usize;
                let http = toolhost::mcp::http::HttpOptions {
                    addr,
                    auth,
                    review,
                    drain: std::time::Duration::from_secs(args.drain_secs),
                    drain_notice: std::time::Duration::from_secs(args.drain_notice_secs),
                    allowed_hosts: args.allowed_hosts.clone(),
                    allowed_origins: args.allowed_origins.clone(),
                    sessions: toolhost::mcp::sessions::SessionLimits::new(
                        max_sessions,
                        std::time::Duration::from_secs(args.session_idle_secs),
                    )
                    .per_principal(
                        args.max_sessions_per_token
                            .map_or(max_sessions, |n| n as usize),
                    ),
                };
                toolhost::mcp::http::serve_http(executor, options, http, |bound| {
                    // The person who started the server signs in with this
                    // link; MCP clients never see it.
                    output::warn_info(&format!(
                        "review page: {} (for you, not for clients; the link works once)",
                        first_link.login_url(bound)
                    ));
                    output::warn_info(&format!("serving MCP on http://{bound}/mcp"));
                })
                .await
            }
        }
    });
    // Plugin calls still running on blocking threads are not waited for.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served.map_err(|e| match e {
        toolhost::mcp::ServeError::Options(m) => UsageError(m).into(),
        other => anyhow::Error::from(other),
    })?;
    Ok(ExitCode::SUCCESS)
}

/// How `serve --http` on `addr` authenticates: the `--token-file`'s
/// tokens; none with `--no-auth` (said loudly); else a token made now and
/// kept in a file only this user can read (its path printed, never the
/// token), with that file.
fn http_auth(
    addr: std::net::SocketAddr,
    tokens: Option<Vec<toolhost::access::Credential>>,
    no_auth: bool,
) -> anyhow::Result<(toolhost::access::Auth, Option<toolhost::access::KeptToken>)> {
    use toolhost::access::{Auth, KeptToken};
    if let Some(tokens) = tokens {
        return Ok((Auth::Tokens(tokens), None));
    }
    if no_auth {
        if !addr.ip().is_loopback() {
            return Err(UsageError(format!(
                "--no-auth serves on loopback only, and {addr} is not loopback: anyone who could \
                 reach it could run tools. Leave out --no-auth (a token is made for you)"
            ))
            .into());
        }
        output::warn(
            "--no-auth: every program you run can use this server's tools without a token \
             (another user's connections are still refused, and so are browser pages)",
        );
        return Ok((Auth::Open, None));
    }
    let kept = KeptToken::new(addr.port(), None).map_err(|e| UsageError(e.to_string()))?;
    output::warn_info(&format!(
        "MCP token: in {} (send it as `Authorization: Bearer TOKEN`; the file goes when this server stops)",
        kept.path.display()
    ));
    let auth = Auth::Tokens(vec![kept.credential.clone()]);
    Ok((auth, Some(kept)))
}

/// Show a new sign-in link of the review page to the person at the
/// server's terminal (stderr), never in the logs.
fn announce_link(link: &str) {
    output::warn_info(&format!(
        "review page: new sign-in link {link} (it works once)"
    ));
}
