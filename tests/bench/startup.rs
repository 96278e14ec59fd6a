//! Start-up: `toolhost serve` over stdio answering `initialize` and
//! `tools/list` with an empty and with a warm compile cache, the first
//! calls of read_file, get_datetime and search_code on an empty cache
//! (while the server compiles ahead), and `toolhost call get_datetime` on
//! an empty cache; the warm-cache figures, measured in the same run, are
//! the baseline. And (section `cli`) `toolhost call` on a small file against
//! `cat`.

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use std::path::Path;
use std::time::{Duration, Instant};

/// Run the section: `runs` servers per cache state.
pub fn run(runs: usize) {
    println!("\n## Start-up (stdio server; empty vs warm compile cache)");
    let runtime = crate::client_runtime(2);
    let ws = tempfile::tempdir().expect("temp");
    std::fs::write(ws.path().join("a.txt"), "hello\n").expect("write");
    let warm = tempfile::tempdir().expect("temp cache");
    let mut empty_ready = Vec::new();
    let mut first_calls = Vec::new();
    let mut warm_ready = Vec::new();
    let mut warm_calls = Vec::new();
    runtime.block_on(async {
        for _ in 0..runs {
            let cache = tempfile::tempdir().expect("temp cache");
            let (ready, calls) = start(ws.path(), cache.path()).await;
            empty_ready.push(ready);
            first_calls.push(calls);
        }
        // Fill the warm cache (every tool compiled), then measure over it.
        fill(ws.path(), warm.path());
        for _ in 0..runs {
            let (ready, calls) = start(ws.path(), warm.path()).await;
            warm_ready.push(ready);
            warm_calls.push(calls);
        }
    });
    let (empty, warm_start) = (median(&mut empty_ready), median(&mut warm_ready));
    println!(
        "initialize + tools/list, empty cache: median {:.1} ms, max {:.1} ms (target <= 1000 ms; warm cache {:.1} ms = {:.1}x)",
        ms(empty),
        ms(max(&empty_ready)),
        ms(warm_start),
        ms(empty) / ms(warm_start),
    );
    for (i, (tool, _)) in FIRST_CALLS.iter().enumerate() {
        let mut empty: Vec<Duration> = first_calls.iter().map(|calls| calls[i]).collect();
        let mut warm: Vec<Duration> = warm_calls.iter().map(|calls| calls[i]).collect();
        let (first, warm_first) = (median(&mut empty), median(&mut warm));
        println!(
            "first {tool} call, empty cache: median {:.0} ms, max {:.0} ms (target <= 500 ms; warm cache {:.1} ms)",
            ms(first),
            ms(max(&empty)),
            ms(warm_first),
        );
    }
    let mut cli_empty = Vec::new();
    let mut cli_warm = Vec::new();
    for _ in 0..runs {
        let cache = tempfile::tempdir().expect("temp cache");
        cli_empty.push(cli_call(ws.path(), cache.path()));
        cli_warm.push(cli_call(ws.path(), warm.path()));
    }
    let (cold, hot) = (median(&mut cli_empty), median(&mut cli_warm));
    println!(
        "`toolhost call get_datetime`, empty cache: median {:.0} ms, max {:.0} ms (target <= 3000 ms; warm cache {:.1} ms = {:.0}x)",
        ms(cold),
        ms(max(&cli_empty)),
        ms(hot),
        ms(cold) / ms(hot),
    );
}

/// `toolhost call read_file` on a small file (its tool in the compile
/// cache) against `cat` of it, `runs` times interleaved, with `toolhost
/// --version` (the process alone: the binary loaded, no executor) between
/// them. The binary run is a copy, as `cargo install` makes: the one the
/// linker wrote runs 0.9–1.4 ms slower per call while its page cache holds
/// what the linker and the disk left (docs/benchmarks.md).
pub fn cli(runs: usize) {
    println!("\n## `toolhost call` against `cat` (read_file compiled and cached)");
    let ws = tempfile::tempdir().expect("temp");
    std::fs::write(ws.path().join("a.txt"), "hello\n").expect("write");
    let cache = tempfile::tempdir().expect("temp cache");
    let installed = tempfile::tempdir().expect("temp bin");
    let (ws, cache) = (ws.path(), cache.path());
    let copy = installed.path().join("toolhost");
    std::fs::copy(env!("CARGO_BIN_EXE_toolhost"), &copy).expect("copy the binary");
    let toolhost = copy.to_str().expect("a UTF-8 temp path");
    // The first call compiles read_file into the cache.
    timed(command(toolhost, ws, cache).args(["call", "read_file", r#"{"path":"a.txt"}"#]));
    let (mut call, mut version, mut cat) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        call.push(timed(command(toolhost, ws, cache).args([
            "call",
            "read_file",
            r#"{"path":"a.txt"}"#,
        ])));
        version.push(timed(command(toolhost, ws, cache).arg("--version")));
        cat.push(timed(command("cat", ws, cache).arg("a.txt")));
    }
    let (call, version, cat) = (median(&mut call), median(&mut version), median(&mut cat));
    println!(
        "`toolhost call read_file` on a small file, warm cache, installed copy: median {:.2} ms = {:.2}x `cat` ({:.2} ms); `toolhost --version` {:.2} ms = {:.1}x `cat` (targets <= 5 ms, <= 4x cat)",
        ms(call),
        ms(call) / ms(cat),
        ms(cat),
        ms(version),
        ms(version) / ms(cat),
    );
}

/// Run `cmd` to its end, its output read and dropped: the wall time.
fn timed(cmd: &mut std::process::Command) -> Duration {
    let started = Instant::now();
    let out = cmd.output().expect("run the command");
    let took = started.elapsed();
    assert!(out.status.success(), "{out:?}");
    took
}

fn command(program: &str, ws: &Path, cache: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.current_dir(ws)
        .env("TOOLHOST_CACHE_DIR", cache)
        .env("XDG_CONFIG_HOME", cache.join("no-config"))
        .env("XDG_STATE_HOME", cache.join("state"))
        .env_remove("TOOLHOST_CONFIG");
    cmd
}

/// The tools whose first calls are timed, one after the other, and their
/// arguments.
const FIRST_CALLS: [(&str, &str); 3] = [
    ("read_file", r#"{"path":"a.txt"}"#),
    ("get_datetime", "{}"),
    ("search_code", r#"{"pattern":"hello"}"#),
];

/// Spawn a server, time spawn → `tools/list` answered, then the first
/// call of each of [`FIRST_CALLS`].
async fn start(ws: &Path, cache: &Path) -> (Duration, Vec<Duration>) {
    let mut cmd = command(env!("CARGO_BIN_EXE_toolhost"), ws, cache);
    cmd.args(["serve", "--mode", "yolo", "--workspace"]).arg(ws);
    let started = Instant::now();
    let client =
        ().serve(TokioChildProcess::new(tokio::process::Command::from(cmd)).expect("spawn"))
            .await
            .expect("initialize");
    let tools = client.list_all_tools().await.expect("tools/list");
    let ready = started.elapsed();
    let mut calls = Vec::new();
    for (tool, args) in FIRST_CALLS {
        assert!(tools.iter().any(|t| t.name == tool), "{tool} listed");
        let args: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(args).expect("arguments");
        let call = Instant::now();
        let result = client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
            .await
            .expect(tool);
        calls.push(call.elapsed());
        assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    }
    client.cancel().await.expect("close");
    (ready, calls)
}

/// Let a server compile every built-in into `cache` ahead of use, as it
/// does in the background, and wait until it has.
fn fill(ws: &Path, cache: &Path) {
    let mut server = command(env!("CARGO_BIN_EXE_toolhost"), ws, cache)
        .arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn toolhost serve");
    let deadline = Instant::now() + Duration::from_secs(300);
    while compiled(cache) < toolhost::builtins().len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// How many compiled components the compile cache `cache` holds.
pub fn compiled(cache: &Path) -> usize {
    std::fs::read_dir(cache).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .count()
    })
}

fn cli_call(ws: &Path, cache: &Path) -> Duration {
    timed(command(env!("CARGO_BIN_EXE_toolhost"), ws, cache).args(["call", "get_datetime", "{}"]))
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn max(samples: &[Duration]) -> Duration {
    samples.iter().copied().max().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
