//! The csv_stats example (examples/csv_stats) in JavaScript and Python,
//! each built in its language's project, called beside the built-in
//! `read_file` on the same server: over MCP (stdio, one call in flight,
//! rounds interleaved) and as one `toolhost call` process per call.
//! Targets (issue 48): a warm MCP call ≤ 1.5× `read_file`'s; a CLI call
//! ≤ 3×.

use crate::bytes::Raw;
use crate::memory::faults_and_cpu;
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `example` (the file under examples/csv_stats) built with `build` in
/// `project`; the directory holding `csv_stats.wasm` alone.
fn built(project: &Path, example: &str, build: &[&str]) -> Option<tempfile::TempDir> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/csv_stats")
        .join(example);
    let file = source.file_name()?.to_str()?.to_owned();
    std::fs::copy(&source, project.join(&file)).ok()?;
    let plugins = tempfile::tempdir().ok()?;
    let wasm = plugins.path().join("csv_stats.wasm");
    let out = Command::new(build[0])
        .args(&build[1..])
        .args([file.as_str(), "-o", wasm.to_str()?])
        .current_dir(project)
        .output()
        .ok()?;
    if !out.status.success() {
        println!(
            "csv_stats ({example}) did not build: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(plugins)
}

/// The median of `samples`.
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// `toolhost ARGS` in `ws`, `n` times, each its own process: the median.
fn per_process(binary: &Path, cache: &Path, ws: &Path, args: &[&str], n: usize) -> Duration {
    median(
        (0..n)
            .map(|_| {
                let started = Instant::now();
                let out = Command::new(binary)
                    .args(args)
                    .current_dir(ws)
                    .env("TOOLHOST_CACHE_DIR", cache)
                    .output()
                    .expect("toolhost runs");
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                started.elapsed()
            })
            .collect(),
    )
}

/// Each of `projects` (language, its project directory from `toolhost
/// new`) whose language has an example builds it and calls it.
pub fn run(projects: &[(&str, std::path::PathBuf)], cache: &Path, rounds: usize, n: usize) {
    println!("\n## csv_stats (JavaScript, Python) beside read_file, per call");
    let binary = Path::new(env!("CARGO_BIN_EXE_toolhost"));
    let ws = tempfile::tempdir().expect("temp");
    std::fs::write(
        ws.path().join("people.csv"),
        "name,age,score\nann,30,1.5\nbob,40,2.5\n",
    )
    .expect("write");
    let args = json!({"path": "people.csv"});
    println!(
        "| language | over MCP: p50 csv_stats / read_file (median of {rounds} rounds) | ratio (≤ 1.5) | the same with TOOLHOST_SPARES=0 | the server per csv_stats call, spares off: page faults, CPU | ratio 3 ms between calls: spares / none | per CLI process: csv_stats / read_file | ratio (≤ 3) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (lang, project) in projects {
        let (example, build): (&str, &[&str]) = match *lang {
            "javascript" => ("javascript/csv_stats.js", &["npx", "toolhost-js", "build"]),
            "python" => ("python/csv_stats.py", &[".venv/bin/toolhost-py", "build"]),
            _ => continue,
        };
        let Some(plugins) = built(project, example, build) else {
            continue;
        };
        let dir = plugins.path().to_str().expect("utf-8");
        let mcp = |spares, pause| {
            let got = over_mcp(
                binary,
                dir,
                ws.path(),
                cache,
                &args,
                (rounds, n),
                (spares, pause),
            );
            let ratio = got.tool.as_secs_f64() / got.baseline.as_secs_f64();
            (got, ratio)
        };
        let (on, ratio) = mcp(true, Duration::ZERO);
        let (off, ratio_off) = mcp(false, Duration::ZERO);
        // An agent's pace: 3 ms between a reply and the next call.
        let paced = mcp(true, PACE).1;
        let paced_off = mcp(false, PACE).1;
        // `read_file` alone: with the plugin directory, every process would
        // load csv_stats too.
        let grant = "csv_stats=workspace:read";
        let tool_args = args.to_string();
        let with_plugin = [
            "--plugin-dir",
            dir,
            "--grant",
            grant,
            "call",
            "csv_stats",
            &tool_args,
        ];
        let runs = n / 10 + 3;
        let cli_tool = per_process(binary, cache, ws.path(), &with_plugin, runs);
        let cli_read = per_process(
            binary,
            cache,
            ws.path(),
            &["call", "read_file", &tool_args],
            runs,
        );
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "| {lang} | {:.3} / {:.3} ms | **{ratio:.2}×** | {:.3} / {:.3} ms: {ratio_off:.2}× | {:.0}, {:.2} ms | **{paced:.2}×** / {paced_off:.2}× | {:.1} / {:.1} ms | **{:.2}×** |",
            ms(on.tool),
            ms(on.baseline),
            ms(off.tool),
            ms(off.baseline),
            off.faults,
            ms(off.cpu),
            ms(cli_tool),
            ms(cli_read),
            cli_tool.as_secs_f64() / cli_read.as_secs_f64()
        );
    }
}

/// The time an agent takes between a reply and its next call, at least.
const PACE: Duration = Duration::from_millis(3);

/// What one server gave: p50 of csv_stats and of read_file (the medians
/// of the rounds), and the server's minor page faults and CPU per
/// csv_stats call (all it did while they ran, after replies included).
struct OverMcp {
    tool: Duration,
    baseline: Duration,
    faults: f64,
    cpu: Duration,
}

/// csv_stats and read_file over MCP, in one server serving the plugins
/// in `dir` (spares made ahead or not, `pause` before each call): `rounds`
/// rounds of `n` calls each, interleaved.
fn over_mcp(
    binary: &Path,
    dir: &str,
    ws: &Path,
    cache: &Path,
    args: &serde_json::Value,
    (rounds, n): (usize, usize),
    (spares, pause): (bool, Duration),
) -> OverMcp {
    let mut command = Command::new(binary);
    command
        .args(["serve", "--mode", "yolo", "--plugin-dir", dir, "--grant"])
        .args(["csv_stats=workspace:read", "--workspace"])
        .arg(ws)
        .env("TOOLHOST_CACHE_DIR", cache)
        .env("TOOLHOST_SPARES", if spares { "1" } else { "0" });
    let mut server = Raw::start(command);
    let pid = server.pid();
    // Listed once its component is compiled (in the background).
    let listed = (0..600).any(|_| {
        let tools = server.request("tools/list", json!({}));
        let found = tools["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "csv_stats"));
        if !found {
            std::thread::sleep(Duration::from_millis(200));
        }
        found
    });
    assert!(listed, "csv_stats in {dir} was never listed");
    let mut call = |tool: &str, args: &serde_json::Value| {
        std::thread::sleep(pause);
        let started = Instant::now();
        let result = server.request("tools/call", json!({"name": tool, "arguments": args}));
        assert_ne!(result["isError"], true, "{tool}: {result}");
        started.elapsed()
    };
    for _ in 0..n / 4 {
        call("csv_stats", args);
        call("read_file", args);
    }
    let (mut tool, mut baseline) = (Vec::new(), Vec::new());
    let (mut faults, mut ticks) = (0, 0);
    for _ in 0..rounds {
        let before = faults_and_cpu(pid);
        tool.push(median((0..n).map(|_| call("csv_stats", args)).collect()));
        let after = faults_and_cpu(pid);
        faults += after.0.saturating_sub(before.0);
        ticks += after.1.saturating_sub(before.1);
        baseline.push(median((0..n).map(|_| call("read_file", args)).collect()));
    }
    let calls = (rounds * n).max(1) as f64;
    OverMcp {
        tool: median(tool),
        baseline: median(baseline),
        faults: faults as f64 / calls,
        cpu: Duration::from_secs_f64(ticks as f64 / 100.0 / calls),
    }
}
