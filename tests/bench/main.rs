//! The toolhost benchmark harness: prints figures and ratios against native
//! baselines measured in the same run. Run with `cargo bench -p toolhost`.
//!
//! - host overhead per call: a fresh sandbox and instance per call of the
//!   trivial `echo` fixture, through the bare runtime and through the full
//!   executor pipeline (p50/p99, calls/s), against the same tool logic called
//!   natively;
//! - start-up of `toolhost serve` (initialize + tools/list) and first calls
//!   on an empty compile cache, against a warm one (startup.rs);
//! - cold Cranelift compile vs compile-cache hit, per component;
//! - read_file on a 10 MB file in the sandbox vs the same read_file code
//!   compiled natively, and vs a bare `std::fs::read` + hash;
//! - grep and search_code over a >= 300 MB tree vs `rg -j1` and `rg`
//!   (search.rs);
//! - run_command `true` through the whole pipeline (plugin, policy,
//!   confinement, process group, reaping) vs `bash -c true` spawned
//!   directly, and the policy check alone on a compound line;
//! - MCP throughput over stdio at 1 and 50 calls in flight (mcp.rs), against
//!   the in-process executor, and the time to answer after a cancel;
//! - a remote MCP server's tool (`toolhost serve --http` upstream) through
//!   the executor vs the same upstream called by rmcp's client directly
//!   (remote.rs);
//! - a JavaScript dynamic tool per call vs the echo component and native
//!   Rust (dynamic.rs);
//! - tool authors: `toolhost new` to a passing test in Rust, JavaScript and
//!   Python from an empty build cache, and each word count per call beside
//!   the echo component (authors.rs); then the csv_stats example in
//!   JavaScript and Python beside `read_file`, over MCP and per CLI
//!   process (examples.rs);
//! - soak: 10,000 mixed calls a transport at 50 in flight, with what the
//!   server holds before and after and its memory by quarter (soak.rs);
//! - memory: serve's resident size idle and per call in flight (memory.rs);
//! - binary: the installed binary's size, its embedded components packed
//!   against unpacked (binary.rs).

#![expect(clippy::print_stdout, reason = "a benchmark prints its figures")]

mod authors;
mod binary;
mod bytes;
mod dynamic;
mod examples;
mod lean;
mod mcp;
mod memory;
mod remote;
mod replicas;
mod search;
mod soak;
/// The soak test's driver, shared with the test.
#[path = "../e2e/soak.rs"]
mod soak_driver;
mod startup;
mod tails;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::grant::Effective;
use toolhost::sandbox::CallRequest;
use toolhost::{
    CacheDir, CallContext, CallOptions, Executor, Mode, Plugin, PluginSource, Registry, Runtime,
    RuntimeConfig,
};

/// Sections, selectable by name on the command line
/// (`cargo bench -p toolhost -- overhead`); all run by default.
const SECTIONS: [&str; 16] = [
    "startup",
    "cli",
    "compile",
    "overhead",
    "read_file",
    "search",
    "commands",
    "mcp",
    "remote",
    "dynamic",
    "authors",
    "soak",
    "memory",
    "binary",
    "bytes",
    "tails",
];

/// `toolhost serve EXTRA…` with the fixtures' plugin directory, in yolo
/// mode, over `ws`, with the compile cache `cache` and no user
/// configuration or state from this machine.
fn toolhost_serve(cache: &Path, ws: &Path, home: &Path, extra: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("serve")
        .args(extra)
        .args(["--mode", "yolo", "--plugin-dir"])
        .arg(env!("TOOLHOST_FIXTURES_DIR"))
        .arg("--workspace")
        .arg(ws)
        .env("TOOLHOST_CACHE_DIR", cache)
        .env("XDG_CONFIG_HOME", home.join("no-config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("TOOLHOST_CONFIG");
    cmd
}

/// A tokio runtime with `workers` threads for a section's clients.
fn client_runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("tokio")
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let Some(unknown) = args.iter().find(|a| !SECTIONS.contains(&a.as_str())) {
        println!("unknown section `{unknown}`; choose from {SECTIONS:?}");
        std::process::exit(2);
    }
    let wanted = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    println!(
        "toolhost benchmarks ({} cores){}",
        num_cores(),
        if quick { ", quick mode" } else { "" }
    );
    if wanted("startup") {
        startup::run(if quick { 3 } else { 7 });
    }
    if wanted("cli") {
        startup::cli(if quick { 30 } else { 200 });
    }
    if wanted("compile") {
        compile_vs_cache();
    }
    let cache = tempfile::tempdir().expect("temp cache");
    let runtime = Arc::new(runtime(cache.path()));
    if wanted("overhead") {
        call_overhead(&runtime, 20_000 / scale);
    }
    if wanted("read_file") {
        read_file_10mb(&runtime, 300 / scale);
    }
    if wanted("search") {
        // Timed against rg on the same cores: nothing compiling beside it.
        compile_all(&runtime);
        search::run(cache.path(), if quick { 1 } else { 5 });
    }
    if wanted("commands") {
        commands(&runtime, 300 / scale);
    }
    if wanted("mcp") {
        // A server on an empty cache compiles every tool ahead of use for
        // its first minute or so, which is not the steady state measured.
        compile_all(&runtime);
        let baseline = in_process_rate(&runtime, 20_000 / scale);
        mcp::run(cache.path(), baseline, 20_000 / scale);
    }
    if wanted("remote") {
        remote::run(&runtime, cache.path(), 2_000 / scale);
    }
    if wanted("dynamic") {
        dynamic::run(&runtime, 2_000 / scale);
    }
    if wanted("authors") {
        authors::run(&runtime, 1_000 / scale);
    }
    if wanted("soak") {
        // Growth once work ahead of use is done (on an empty cache, a
        // first call's baseline code is mapped per call until it is, and
        // Cranelift's then held: settling, not a leak).
        compile_all(&runtime);
        soak::run(cache.path(), 10_000 / scale);
    }
    if wanted("memory") {
        memory::run(cache.path(), 32, || compile_all(&runtime));
    }
    if wanted("binary") {
        binary::run();
    }
    if wanted("bytes") {
        bytes::run(cache.path());
    }
    if wanted("tails") {
        // The steady state: every tool in the cache, nothing compiling.
        compile_all(&runtime);
        tails::run(cache.path(), if quick { 2 } else { 5 }, 2_000 / scale);
    }
}

/// Calls per second of `echo` through `Executor::call` on one thread: the
/// MCP section's baseline.
fn in_process_rate(runtime: &Arc<Runtime>, n: usize) -> f64 {
    let executor = Executor::new(Arc::clone(runtime), echo_registry(runtime)).with_mode(Mode::Yolo);
    let options = CallOptions::default();
    let (_, total) = time_n(n, || {
        assert!(executor.call("echo", r#"{"w":0,"i":1}"#, &options).success);
    });
    n as f64 / total.as_secs_f64()
}

fn commands(runtime: &Arc<Runtime>, n: usize) {
    println!("\n== run_command: `true` through the broker vs spawned directly");
    let mut registry = Registry::new();
    registry.load_builtins(runtime).expect("built-ins");
    let ws = tempfile::tempdir().expect("temp");
    let executor = Executor::new(Arc::clone(runtime), registry)
        .with_workspace(ws.path())
        .expect("ws")
        .with_mode(Mode::Yolo);
    let options = CallOptions::default();
    let args = r#"{"command":"true"}"#;
    for _ in 0..10 {
        assert!(executor.call("run_command", args, &options).success);
    }
    let first = executor.call("run_command", args, &options);
    let confinement = first.structured.as_ref().map_or_else(String::new, |s| {
        s["confinement"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    });
    println!("confined by: {confinement}");
    let (mut samples, _) = time_n(n, || {
        let r = executor.call("run_command", args, &options);
        assert!(r.success, "{r:?}");
    });
    let (p50, p99) = percentiles(&mut samples);
    println!(
        "commands that entered a view made ahead: {} of {}",
        executor.commands_in_views_made_ahead(),
        n + 11
    );
    let (mut samples, _) = time_n(n, || {
        let status = std::process::Command::new("/bin/bash")
            .args(["-c", "true"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("bash runs");
        assert!(status.status.success());
    });
    let (p50_native, _) = percentiles(&mut samples);
    // The same spawn through fork (as any pre_exec hook forces), from this
    // process with its runtime's large address space: the floor for a
    // confined command spawned in-process.
    let (mut samples, _) = time_n(n, || {
        let mut command = std::process::Command::new("/bin/bash");
        command
            .args(["-c", "true"])
            .stdin(std::process::Stdio::null());
        // SAFETY: the hook does nothing; it only makes std fork.
        #[expect(unsafe_code, reason = "measuring the cost of fork")]
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || Ok(()));
        }
        assert!(command.output().expect("bash runs").status.success());
    });
    let (p50_fork, _) = percentiles(&mut samples);
    println!(
        "run_command true:  p50 {:>7.2} ms   p99 {:>7.2} ms  (n={n})",
        ms(p50),
        ms(p99)
    );
    println!(
        "bash -c true:      p50 {:>7.2} ms (posix_spawn)",
        ms(p50_native)
    );
    println!(
        "bash -c true:      p50 {:>7.2} ms (fork, as with a pre_exec hook)",
        ms(p50_fork)
    );
    let ratio = p50.as_secs_f64() / p50_native.as_secs_f64();
    println!(
        "ratio {ratio:.2}x; broker + sandbox overhead {:.2} ms per command at p50",
        ms(p50.saturating_sub(p50_native))
    );
    let met = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "targets: p50 <= 3 ms {}; <= 2x posix_spawn {}",
        met(ms(p50) <= 3.0),
        met(ratio <= 2.0)
    );
    // What each layer costs: the view built by each command's child
    // instead of made ahead (as root), without the network namespace (a
    // network grant), and the fallback (Landlock and seccomp alone).
    for (what, commands) in [
        (
            "view built by the child (views_ahead = false)",
            toolhost::CommandConfig {
                views_ahead: false,
                ..toolhost::CommandConfig::default()
            },
        ),
        (
            "with a network grant (no net-ns)",
            toolhost::CommandConfig::default(),
        ),
        (
            "fallback (Landlock + seccomp)",
            toolhost::CommandConfig {
                namespaces: false,
                ..toolhost::CommandConfig::default()
            },
        ),
    ] {
        let mut registry = Registry::new();
        registry.load_builtins(runtime).expect("built-ins");
        let mut layer = Executor::new(Arc::clone(runtime), registry)
            .with_workspace(ws.path())
            .expect("ws")
            .with_mode(Mode::Yolo)
            .with_commands(commands)
            .expect("commands");
        if what.contains("network") {
            layer = layer.with_grant(
                "run_command",
                toolhost::Grant::parse_caps("commands,network:*").expect("grant"),
            );
        }
        for _ in 0..10 {
            assert!(layer.call("run_command", args, &options).success);
        }
        let (mut samples, _) = time_n(n, || {
            let r = layer.call("run_command", args, &options);
            assert!(r.success, "{r:?}");
        });
        let (p50_layer, _) = percentiles(&mut samples);
        println!("run_command true, {what}: p50 {:>7.2} ms", ms(p50_layer));
    }
    let line = "cd sub && FOO=1 timeout 60 cargo test -p core -- --nocapture 2>&1 | tee log.txt | tail -n 50; git status --short || echo \"$(date)\"";
    let broker = executor.broker();
    let m = n * 20;
    let (mut samples, _) = time_n(m, || {
        std::hint::black_box(broker.assess(std::hint::black_box(line)).expect("allowed"));
    });
    let (p50_policy, _) = percentiles(&mut samples);
    println!(
        "policy check of a {}-character compound line: p50 {:>6.1} µs (n={m})",
        line.len(),
        us(p50_policy)
    );
}

fn num_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn runtime(cache: &Path) -> Runtime {
    Runtime::new(RuntimeConfig {
        cache: CacheDir::At(cache.to_owned()),
        ..RuntimeConfig::default()
    })
    .expect("runtime")
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("TOOLHOST_FIXTURES_DIR")).join(format!("{name}.wasm"))
}

/// Sorted samples → (p50, p99).
fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.99))
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn time_n(n: usize, mut f: impl FnMut()) -> (Vec<Duration>, Duration) {
    let mut samples = Vec::with_capacity(n);
    let started = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    (samples, started.elapsed())
}

fn compile_vs_cache() {
    println!("\n## Compile once, load from cache (per component)");
    println!(
        "{:<22} {:>10} {:>14} {:>16} {:>8}",
        "component", "size KiB", "cold compile", "cache hit load", "ratio"
    );
    let mut sources: Vec<(String, PluginSource)> = toolhost::builtins()
        .iter()
        .map(|b| (b.crate_name.to_owned(), PluginSource::Builtin(b)))
        .collect();
    for name in ["fixture_echo", "fixture_misbehave"] {
        sources.push((name.to_owned(), PluginSource::File(fixture(name))));
    }
    for (name, source) in sources {
        let size = match &source {
            PluginSource::Builtin(b) => b.len,
            PluginSource::File(p) => std::fs::metadata(p).map_or(0, |m| m.len() as usize),
            PluginSource::Bytes(b, _) => b.len(),
        };
        // Cold: an empty cache, so loading compiles (and describes) it.
        let dir = tempfile::tempdir().expect("temp");
        let cold = load_time(&runtime(dir.path()), &source);
        // Hit: a new runtime over the filled cache reads the description
        // and deserialises the code.
        let hit = load_time(&runtime(dir.path()), &source);
        println!(
            "{name:<22} {:>10.0} {:>11.1} ms {:>13.3} ms {:>7.0}x",
            size as f64 / 1024.0,
            ms(cold),
            ms(hit),
            cold.as_secs_f64() / hit.as_secs_f64()
        );
    }
    println!("target: cache hit <= 1 ms per component");
}

/// Load a plugin and make it ready to call.
fn load_time(rt: &Runtime, source: &PluginSource) -> Duration {
    let t = Instant::now();
    let plugin = Plugin::load(rt, source.clone()).expect("load");
    plugin.warm_up(rt).expect("ready");
    t.elapsed()
}

fn call_overhead(runtime: &Arc<Runtime>, n: usize) {
    println!("\n## Host overhead per call (fresh sandbox + instance, trivial `echo` tool)");
    let plugin =
        Plugin::load(runtime, PluginSource::File(fixture("fixture_echo"))).expect("echo loads");
    plugin.warm_up(runtime).expect("compile");
    let context = CallContext::new();
    let grant = Effective::default();
    let limits = runtime.limits().clone();
    let request = CallRequest::bare(r#"{"n":1}"#, &context, &grant, &limits);
    for _ in 0..n / 10 {
        let _ = plugin.run(runtime, &request);
    }
    let (mut samples, total) = time_n(n, || {
        let out = plugin.run(runtime, &request).expect("echo succeeds");
        assert_eq!(out.content, r#"{"n":1}"#);
    });
    let (p50, p99) = percentiles(&mut samples);
    println!(
        "sandbox call:      p50 {:>7.1} µs   p99 {:>7.1} µs   {:>8.0} calls/s  (n={n})",
        us(p50),
        us(p99),
        n as f64 / total.as_secs_f64()
    );

    let ws = tempfile::tempdir().expect("temp");
    let executor = Executor::new(Arc::clone(runtime), echo_registry(runtime))
        .with_workspace(ws.path())
        .expect("ws")
        .with_mode(Mode::Yolo);
    let options = CallOptions::default();
    let (mut samples, total) = time_n(n, || {
        let r = executor.call("echo", r#"{"n":1}"#, &options);
        assert!(r.success);
    });
    let (p50_ex, p99_ex) = percentiles(&mut samples);
    println!(
        "executor pipeline: p50 {:>7.1} µs   p99 {:>7.1} µs   {:>8.0} calls/s",
        us(p50_ex),
        us(p99_ex),
        n as f64 / total.as_secs_f64()
    );
    let audit_dir = tempfile::tempdir().expect("temp");
    let audited = Executor::new(Arc::clone(runtime), echo_registry(runtime))
        .with_mode(Mode::Yolo)
        .with_audit(toolhost::AuditLog::open(&audit_dir.path().join("a.jsonl")).expect("audit"));
    let (mut samples, total) = time_n(n, || {
        let r = audited.call("echo", r#"{"n":1}"#, &options);
        assert!(r.success);
    });
    let (p50_au, p99_au) = percentiles(&mut samples);
    println!(
        "  + audit log:     p50 {:>7.1} µs   p99 {:>7.1} µs   {:>8.0} calls/s",
        us(p50_au),
        us(p99_au),
        n as f64 / total.as_secs_f64()
    );
    // Step 2 alone: read_file's schema refuses the arguments, so nothing
    // else runs (lookup, JSON parse, validation, the error message).
    let mut builtins = Registry::new();
    builtins.load_builtins(runtime).expect("built-ins");
    let validating = Executor::new(Arc::clone(runtime), builtins).with_mode(Mode::Yolo);
    let (mut samples, _) = time_n(n, || {
        let r = validating.call("read_file", r#"{"path":"a.rs","limit":"ten"}"#, &options);
        assert!(!r.success);
    });
    let (p50_va, p99_va) = percentiles(&mut samples);
    println!(
        "refused by schema: p50 {:>7.1} µs   p99 {:>7.1} µs   (read_file, wrong type; no sandbox)",
        us(p50_va),
        us(p99_va),
    );

    // Native baseline: the same work without a sandbox (parse the JSON
    // arguments, render them back).
    let (mut samples, _) = time_n(n, || {
        let v: serde_json::Value =
            serde_json::from_str(std::hint::black_box(r#"{"n":1}"#)).expect("json");
        std::hint::black_box(v.to_string());
    });
    let (p50_native, _) = percentiles(&mut samples);
    println!("native echo logic: p50 {:>7.2} µs", us(p50_native));
    println!(
        "overhead of the sandbox: {:.1} µs per call at p50 (target <= 20 µs)",
        us(p50.saturating_sub(p50_native))
    );
}

fn read_file_10mb(runtime: &Arc<Runtime>, n: usize) {
    println!(
        "\n## read_file on a 10 MB file (whole file hashed and counted, first 2000 lines shown)"
    );
    let ws = tempfile::tempdir().expect("temp");
    let line =
        "the quick brown fox jumps over the lazy dog; 0123456789 abcdefghijklmnopqrstuvwxyz\n";
    let text = line.repeat((10 << 20) / line.len());
    std::fs::write(ws.path().join("big.txt"), &text).expect("write");

    let mut registry = Registry::new();
    registry.load_builtins(runtime).expect("builtins");
    let executor = Executor::new(Arc::clone(runtime), registry)
        .with_workspace(ws.path())
        .expect("ws")
        .with_mode(Mode::Yolo);
    let args = r#"{"path":"big.txt"}"#;
    let options = CallOptions::default();
    let wasm_hash = executor
        .call("read_file", args, &options)
        .structured
        .expect("structured")["hash"]
        .clone();
    let (mut samples, _) = time_n(n, || {
        let r = executor.call("read_file", args, &options);
        assert!(r.success, "{r:?}");
    });
    let (wasm_p50, _) = percentiles(&mut samples);

    // The same read_file code, compiled natively and called directly.
    let ctx = toolhost_sdk::Context::for_workspace(ws.path().display().to_string());
    let parsed: read_file::Args = serde_json::from_str(args).expect("args");
    let native_out = read_file::read(&parsed, &ctx).expect("native read");
    assert_eq!(
        native_out.structured().expect("structured")["hash"],
        wasm_hash,
        "same result"
    );
    let (mut samples, _) = time_n(n, || {
        std::hint::black_box(read_file::read(&parsed, &ctx).expect("native read"));
    });
    let (native_p50, _) = percentiles(&mut samples);

    // A bare read + hash, the least any implementation must do.
    let (mut samples, _) = time_n(n, || {
        let bytes = std::fs::read(ws.path().join("big.txt")).expect("read");
        std::hint::black_box(toolhost_shared::text::content_hash(&bytes));
    });
    let (bare_p50, _) = percentiles(&mut samples);

    println!("read_file in the sandbox:   p50 {:>7.2} ms", ms(wasm_p50));
    println!(
        "read_file compiled natively: p50 {:>7.2} ms",
        ms(native_p50)
    );
    println!("bare fs::read + hash:       p50 {:>7.2} ms", ms(bare_p50));
    println!(
        "ratio sandbox/native read_file: {:.2}x (target <= 2x); sandbox/bare read: {:.2}x",
        wasm_p50.as_secs_f64() / native_p50.as_secs_f64(),
        wasm_p50.as_secs_f64() / bare_p50.as_secs_f64()
    );
}

/// A registry holding only the `echo` fixture.
/// Compile every built-in and fixture plugin into the runtime's cache, so
/// the servers a section starts on that cache have nothing to compile.
fn compile_all(runtime: &Runtime) {
    let mut registry = Registry::new();
    registry.load_builtins(runtime).expect("built-ins load");
    let problems = registry.load_dir(runtime, Path::new(env!("TOOLHOST_FIXTURES_DIR")));
    assert!(problems.is_empty(), "{problems:?}");
    for plugin in registry.list() {
        plugin.warm_up(runtime).expect("compiles");
    }
}

fn echo_registry(runtime: &Runtime) -> Registry {
    let mut registry = Registry::new();
    registry
        .register(
            Plugin::load(runtime, PluginSource::File(fixture("fixture_echo"))).expect("load"),
            false,
        )
        .expect("register");
    registry
}
