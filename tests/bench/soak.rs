//! Soak: `toolhost serve` over stdio and HTTP at 50 calls in flight with
//! the mix of tests/e2e/soak.rs (reads, greps, edits, commands, refused
//! arguments, timeouts, cancellations, background commands started and
//! killed), 10,000+ calls a transport; prints what the server held before
//! and after and its memory by quarter, and checks the same promises as
//! the test.

use crate::soak_driver::{Report, config, connect_stdio, prepare, soak};
use std::io::BufRead as _;
use std::path::Path;

/// Run the section: `n` calls a transport.
pub fn run(cache: &Path, n: usize) {
    println!("\n## Soak ({n} calls a transport, 50 in flight, mixed calls)");
    let runtime = crate::client_runtime(2);
    for transport in ["stdio", "http"] {
        let ws = tempfile::tempdir().expect("temp");
        let home = tempfile::tempdir().expect("temp");
        prepare(ws.path(), 50);
        let config = config(home.path());
        let report = runtime.block_on(async {
            match transport {
                "stdio" => over_stdio(cache, ws.path(), &config, n).await,
                _ => over_http(cache, ws.path(), &config, n).await,
            }
        });
        println!("{}", report.line(transport));
        report.check(transport);
    }
}

/// `toolhost --config CONFIG serve` with the fixtures, in `ws`, on `cache`.
pub fn command(cache: &Path, ws: &Path, config: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("--config")
        .arg(config)
        .args(["serve", "--plugin-dir", env!("TOOLHOST_FIXTURES_DIR")])
        .arg("--workspace")
        .arg(ws)
        .env("TOOLHOST_CACHE_DIR", cache)
        // Beside the configuration: toolhost refuses a workspace that
        // holds its own configuration directory.
        .env(
            "XDG_CONFIG_HOME",
            config.parent().unwrap_or(ws).join("no-config"),
        )
        .env_remove("TOOLHOST_CONFIG");
    cmd
}

async fn over_stdio(cache: &Path, ws: &Path, config: &Path, n: usize) -> Report {
    let (session, pid) = connect_stdio(command(cache, ws, config)).await;
    let report = soak(session.peer(), pid, n, 50).await;
    session.cancel().await.expect("close");
    report
}

async fn over_http(cache: &Path, ws: &Path, config: &Path, n: usize) -> Report {
    let mut child = command(cache, ws, config)
        .args(["--http", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn toolhost serve --http");
    let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let served = crate::remote::served_at(&mut lines);
    std::thread::spawn(move || for _ in lines {});
    let session = rmcp::ServiceExt::serve((), served.transport())
        .await
        .expect("initialize over HTTP");
    let report = soak(session.peer(), child.id(), n, 50).await;
    session.cancel().await.expect("close");
    let _ = child.kill();
    let _ = child.wait();
    report
}
