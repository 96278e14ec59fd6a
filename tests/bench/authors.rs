//! Tool authors (issue #18), per language: the wall time from `toolhost
//! new` to a passing `toolhost test`, each step as the guide says it, from
//! an empty build cache (a fresh cargo target directory, an empty npm
//! cache, pip without its cache: every package comes from the registry);
//! then the word count each project holds, called through the whole
//! pipeline, beside the `echo` component in the same run.

use crate::{echo_registry, percentiles, time_n, us};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;
use toolhost::grant::Access;
use toolhost::{CallOptions, Executor, Grant, Mode, Plugin, PluginSource, Runtime};

/// Per language: its name, the steps from `toolhost new` (run in the
/// project after the first), and where the component lands.
const LANGUAGES: [(&str, &[&str], &str); 3] = [
    (
        "rust",
        &[
            "cargo build --quiet --release --target wasm32-wasip2",
            "cargo test --quiet --release",
            "toolhost test target/wasm32-wasip2/release/count_words.wasm tests/cases.json",
        ],
        "target/wasm32-wasip2/release/count_words.wasm",
    ),
    (
        "javascript",
        &[
            "npm install --no-audit --no-fund --cache \"$BENCH_NPM_CACHE\"",
            "npm run build",
            "npm test",
        ],
        "count_words.wasm",
    ),
    (
        "python",
        &[
            "python3 -m venv .venv && .venv/bin/pip install --quiet --no-cache-dir -r requirements.txt",
            ".venv/bin/toolhost-py build count_words.py",
            ".venv/bin/python -m unittest",
        ],
        "count_words.wasm",
    ),
];

pub fn run(runtime: &Arc<Runtime>, n: usize) {
    println!("\n## Tool authors: from `toolhost new` to a passing test, then per call");
    let base = tempfile::tempdir().expect("temp");
    let binary = Path::new(env!("CARGO_BIN_EXE_toolhost"));
    let path = std::env::join_paths(
        std::iter::once(binary.parent().expect("a directory").to_owned()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ),
    )
    .expect("PATH");
    let mut built = Vec::new();
    let mut projects = Vec::new();
    for (lang, steps, wasm) in LANGUAGES {
        let dir = base.path().join(lang);
        std::fs::create_dir_all(&dir).expect("dir");
        let started = Instant::now();
        // The checkout's SDKs: the registries may not hold this version.
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk");
        let new = format!(
            "toolhost new count_words --lang {lang} --sdk {}",
            sdk.display()
        );
        let mut ok = true;
        for (i, step) in std::iter::once(new.as_str())
            .chain(steps.iter().copied())
            .enumerate()
        {
            let at = if i == 0 {
                dir.clone()
            } else {
                dir.join("count_words")
            };
            let t = Instant::now();
            let out = Command::new("bash")
                .args(["-euo", "pipefail", "-c", step])
                .current_dir(&at)
                .env("PATH", &path)
                .env("TOOLHOST", binary)
                .env("TOOLHOST_CACHE_DIR", base.path().join("compile-cache"))
                .env(
                    "BENCH_NPM_CACHE",
                    base.path().join(format!("npm-cache-{lang}")),
                )
                .env("CARGO_TARGET_DIR", dir.join("count_words/target"))
                .output()
                .expect("bash runs");
            println!("{lang:<10} {:>7.1} s  {step}", t.elapsed().as_secs_f64());
            if !out.status.success() {
                println!(
                    "{lang}: `{step}` failed:\n{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                ok = false;
                break;
            }
        }
        if ok {
            println!(
                "{lang:<10} {:>7.1} s  in all, from `toolhost new` to a passing test (target <= 300 s)",
                started.elapsed().as_secs_f64()
            );
            built.push((lang, dir.join("count_words").join(wasm)));
            projects.push((lang, dir.join("count_words")));
        }
    }

    // The word count of each language through the pipeline, per call.
    let ws = tempfile::tempdir().expect("temp");
    std::fs::write(ws.path().join("notes.txt"), "one two\nthree\n".repeat(50)).expect("write");
    let mut executors = Vec::new();
    for (lang, wasm) in &built {
        // Each language's tool under its own name, so all three load at once.
        let copy = base.path().join(format!("count_words_{lang}.wasm"));
        std::fs::copy(wasm, &copy).expect("copy");
        let plugin = Plugin::load(runtime, PluginSource::File(copy)).expect("load");
        let name = plugin.info().name.clone();
        let mut alone = toolhost::Registry::new();
        alone.register(plugin, false).expect("register");
        let executor = Executor::new(Arc::clone(runtime), alone)
            .with_workspace(ws.path())
            .expect("ws")
            .with_mode(Mode::Yolo)
            .with_grant(
                &name,
                Grant {
                    workspace: Some(Access::Read),
                    ..Grant::default()
                },
            );
        executors.push((*lang, executor));
    }
    let echo = Executor::new(Arc::clone(runtime), echo_registry(runtime)).with_mode(Mode::Yolo);
    let options = CallOptions::default();
    let (mut echo_samples, _) = time_n(n, || {
        assert!(echo.call("echo", r#"{"n":1}"#, &options).success);
    });
    let (echo50, echo99) = percentiles(&mut echo_samples);
    println!(
        "echo component (baseline)   p50 {:>8.1} µs  p99 {:>8.1} µs",
        us(echo50),
        us(echo99)
    );
    plain_beside_sdk(runtime, n, echo50);
    for (lang, executor) in &executors {
        let call = || {
            let r = executor.call("count_words", r#"{"path":"notes.txt"}"#, &options);
            assert!(r.success, "{lang}: {r:?}");
            r
        };
        assert_eq!(call().structured.expect("structured")["words"], 150);
        for _ in 0..5 {
            call();
        }
        let (mut samples, _) = time_n(n, || {
            call();
        });
        let (p50, p99) = percentiles(&mut samples);
        println!(
            "count_words in {lang:<10} p50 {:>8.1} µs  p99 {:>8.1} µs  ({:.0}x echo)",
            us(p50),
            us(p99),
            p50.as_secs_f64() / echo50.as_secs_f64()
        );
    }

    // A 5 MB text: each language's component, and the same logic as a
    // `javascript` dynamic tool (QuickJS in js_runtime).
    let (text, words) = crate::dynamic::words_text(5 << 20);
    std::fs::write(ws.path().join("big.txt"), &text).expect("write");
    let mut dynamic = toolhost::Registry::new();
    let tool = crate::dynamic::js_tool(
        runtime,
        "count_words",
        crate::dynamic::WORD_COUNT,
        &["workspace:read"],
    );
    dynamic.register(tool, false).expect("register");
    let quickjs = Executor::new(Arc::clone(runtime), dynamic)
        .with_workspace(ws.path())
        .expect("ws")
        .with_mode(Mode::Yolo);
    let long = CallOptions {
        timeout: Some(std::time::Duration::from_secs(300)),
        ..CallOptions::default()
    };
    for (lang, executor) in executors
        .iter()
        .chain([&("javascript (QuickJS, dynamic tool)", quickjs)])
    {
        let started = Instant::now();
        let r = executor.call("count_words", r#"{"path":"big.txt"}"#, &long);
        let took = started.elapsed();
        assert!(r.success, "{lang}: {r:?}");
        assert_eq!(r.structured.expect("structured")["words"], words, "{lang}");
        println!(
            "5 MB word count in {lang:<10} {:>7.2} s",
            took.as_secs_f64()
        );
    }
    crate::examples::run(&projects, &base.path().join("compile-cache"), 5, n);
}

/// A plain WIT component's function (no toolhost SDK: its arguments and
/// result converted by the host from the component's own types) beside the
/// SDK's echo component, each doing next to nothing.
fn plain_beside_sdk(runtime: &Arc<Runtime>, n: usize, echo50: std::time::Duration) {
    let dir = Path::new(env!("TOOLHOST_FIXTURES_DIR")).join("plain");
    let mut registry = toolhost::Registry::new();
    let problems = registry.load_dir(runtime, &dir);
    assert!(problems.is_empty(), "{problems:?}");
    let plain = Executor::new(Arc::clone(runtime), registry).with_mode(Mode::Yolo);
    let options = CallOptions::default();
    let args = r#"{"name":"Ada"}"#;
    assert!(plain.call("fixture_plain_greet", args, &options).success);
    let (mut samples, _) = time_n(n, || {
        assert!(plain.call("fixture_plain_greet", args, &options).success);
    });
    let (p50, p99) = percentiles(&mut samples);
    println!(
        "plain WIT greet (no SDK)    p50 {:>8.1} µs  p99 {:>8.1} µs  ({:.2}x echo)",
        us(p50),
        us(p99),
        p50.as_secs_f64() / echo50.as_secs_f64()
    );
}
