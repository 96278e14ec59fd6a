//! The serving commands: `toolhost serve` (MCP over stdio or HTTP) and `toolhost review` (the review page alone).

use super::*;

/// The token on the first line of `--token-file`, if one was given.
pub(super) fn token_file(path: Option<&Path>) -> anyhow::Result<Option<String>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --token-file {}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_owned();
    if token.len() < 16 {
        return Err(UsageError(format!(
            "--token-file {}: the token must be at least 16 characters on the first line",
            path.display()
        ))
        .into());
    }
    Ok(Some(token))
}

/// `toolhost review`: the review page alone, until Ctrl-C.
pub(super) fn review(settings: Settings, args: &cli::ReviewArgs) -> anyhow::Result<ExitCode> {
    let token = token_file(args.token_file.as_deref())?;
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
            token,
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

/// `toolhost serve`: the executor over MCP until the client leaves (stdio)
/// or Ctrl-C (HTTP).
pub(super) fn serve(settings: Settings, args: &cli::ServeArgs) -> anyhow::Result<ExitCode> {
    let token = token_file(args.token_file.as_deref())?;
    // A person at this terminal is not the one to ask: clients are asked
    // through elicitation, per call.
    let executor = Arc::new(
        settings
            .executor
            .with_confirmer(Box::new(toolhost::NoConfirmer)),
    );
    let options = toolhost::mcp::ServeOptions {
        reload_interval: (args.reload_secs > 0)
            .then(|| std::time::Duration::from_secs(args.reload_secs)),
        notice: settings.notice.clone(),
        compile_ahead: true,
        unload_idle: (args.unload_idle_secs > 0)
            .then(|| std::time::Duration::from_secs(args.unload_idle_secs)),
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
    let served = runtime.block_on(async {
        match args.http {
            None => toolhost::mcp::serve_stdio(executor, options).await,
            Some(addr) => {
                let review_secret = toolhost::review::new_secret();
                let review_url = format!("/review/login?token={review_secret}");
                let http = toolhost::mcp::http::HttpOptions {
                    addr,
                    token,
                    review_secret,
                    allowed_hosts: args.allowed_hosts.clone(),
                    allowed_origins: args.allowed_origins.clone(),
                    sessions: toolhost::mcp::sessions::SessionLimits::new(
                        args.max_sessions as usize,
                        std::time::Duration::from_secs(args.session_idle_secs),
                    ),
                };
                toolhost::mcp::http::serve_http(executor, options, http, |bound| {
                    // The person who started the server signs in with this
                    // link; MCP clients never see it.
                    output::warn_info(&format!(
                        "review page: http://{bound}{review_url} (for you, not for clients)"
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
