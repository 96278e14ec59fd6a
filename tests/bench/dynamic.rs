//! A JavaScript dynamic tool per call: js_runtime (QuickJS) instantiated fresh
//! in the sandbox from a snapshot with the interpreter set up (and, once
//! work ahead of use prepared it, the script parsed and compiled), the
//! script run and `run` called; against the trivial `echo` component
//! through the same pipeline and the same logic in native Rust.

use crate::{echo_registry, percentiles, time_n, us};
use serde_json::json;
use std::sync::Arc;
use toolhost::dynamic::{Entry, Meta};
use toolhost::{CallOptions, Executor, Mode, Runtime};

/// The trivial tool: one string built from an argument.
const TRIVIAL: &str = "function run(a) { return 'hello ' + a.text }";
const SCRIPT: &str = "function run(a) { return String(a.text.split(/\\s+/).length) }";

/// The JavaScript template's word count (`toolhost new --lang javascript`),
/// as a dynamic tool: the same logic the componentize-js component runs.
pub const WORD_COUNT: &str = "function run(a) {
  const t0 = Date.now();
  const text = toolhost.readFile(a.path);
  const t1 = Date.now();
  const lines = text.split('\\n').length - (text === '' || text.endsWith('\\n') ? 1 : 0);
  const t2 = Date.now();
  const words = text.split(/\\s+/).filter(Boolean).length;
  const t3 = Date.now();
  const chars = [...text].length;
  const t4 = Date.now();
  return {lines, words, chars, ms: {read: t1 - t0, lines: t2 - t1, words: t3 - t2, chars: t4 - t3}};
}";

/// A text of about `bytes` bytes: words of 1-10 letters, 12 to a line;
/// and its word count.
pub fn words_text(bytes: usize) -> (String, usize) {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut text = String::with_capacity(bytes + 64);
    let mut words = 0;
    while text.len() < bytes {
        for i in 0..12 {
            if i > 0 {
                text.push(' ');
            }
            for _ in 0..rng.usize(1..=10) {
                text.push(rng.alphabetic().to_ascii_lowercase());
            }
            words += 1;
        }
        text.push('\n');
    }
    (text, words)
}

/// `javascript` dynamic tool `name` running `source` with `grant`.
pub fn js_tool(runtime: &Runtime, name: &str, source: &str, grant: &[&str]) -> toolhost::Plugin {
    let meta: Meta = serde_json::from_value(json!({
        "id": format!("{name}-bench"), "name": name,
        "description": "A benchmark's JavaScript tool.", "kind": "javascript",
        "parameters": {"type": "object"},
        "scope": "all", "created_at": "2026-01-01T00:00:00Z", "status": "approved",
        "grant": grant,
    }))
    .expect("a valid record");
    let entry = Entry {
        meta,
        dir: std::env::temp_dir(),
    };
    toolhost::dynamic::plugin(runtime, &entry, source.as_bytes()).expect("builds")
}
const ARGS: &str = r#"{"text":"one two three four five"}"#;

pub fn run(runtime: &Arc<Runtime>, n: usize) {
    println!(
        "\n## Dynamic tools: a JavaScript tool per call (js_runtime = QuickJS in the sandbox)"
    );
    let mut registry = echo_registry(runtime);
    let script = js_tool(runtime, "count_words", SCRIPT, &[]);
    let started = std::time::Instant::now();
    script.warm_up(runtime).expect("prepares");
    let first_prepared_in = started.elapsed();
    registry.register(script, false).expect("register");
    // The same script twice: as work ahead of use leaves it (prepared in
    // a snapshot of its own) and as it runs before that (the shared
    // snapshot, parsing it in each call; a comment makes it another script).
    let trivial = js_tool(runtime, "hello", TRIVIAL, &[]);
    let started = std::time::Instant::now();
    trivial.warm_up(runtime).expect("prepares");
    let prepared_in = started.elapsed();
    registry.register(trivial, false).expect("register");
    let shared = js_tool(
        runtime,
        "hello_shared",
        &format!("{TRIVIAL} // shared"),
        &[],
    );
    registry.register(shared, false).expect("register");
    let file = js_tool(runtime, "count_file_words", WORD_COUNT, &["workspace:read"]);
    registry.register(file, false).expect("register");
    let ws = tempfile::tempdir().expect("temp");
    let (text, words) = words_text(5 << 20);
    std::fs::write(ws.path().join("big.txt"), &text).expect("write");
    let executor = Executor::new(Arc::clone(runtime), registry)
        .with_workspace(ws.path())
        .expect("ws")
        .with_mode(Mode::Yolo);
    let options = CallOptions::default();
    let call = |tool: &str, args: &str| {
        let r = executor.call(tool, args, &options);
        assert!(r.success, "{r:?}");
        r
    };
    assert_eq!(call("count_words", ARGS).content, "5");
    assert_eq!(call("hello", ARGS).content, "hello one two three four five");
    assert_eq!(
        call("hello_shared", ARGS).content,
        "hello one two three four five"
    );
    for _ in 0..10 {
        call("hello", ARGS);
        call("hello_shared", ARGS);
        call("count_words", ARGS);
        call("echo", ARGS);
    }
    let (mut js, _) = time_n(n, || {
        call("count_words", ARGS);
    });
    let (mut hello, _) = time_n(n, || {
        call("hello", ARGS);
    });
    let (mut shared, _) = time_n(n, || {
        call("hello_shared", ARGS);
    });
    let (mut echo, _) = time_n(n, || {
        call("echo", ARGS);
    });
    let (mut native, _) = time_n(n, || {
        let v: serde_json::Value = serde_json::from_str(ARGS).expect("json");
        let words = v["text"].as_str().unwrap_or("").split_whitespace().count();
        std::hint::black_box(words.to_string());
    });
    let (js50, js99) = percentiles(&mut js);
    let (echo50, echo99) = percentiles(&mut echo);
    let (hello50, hello99) = percentiles(&mut hello);
    let (shared50, shared99) = percentiles(&mut shared);
    let (n50, _) = percentiles(&mut native);
    println!(
        "javascript tool (count_words)  p50 {:>8.1} µs  p99 {:>8.1} µs (target p50 <= 80 µs)",
        us(js50),
        us(js99)
    );
    println!(
        "trivial javascript tool (hello) p50 {:>7.1} µs  p99 {:>8.1} µs (target p50 <= 40 µs; {:.1}x echo)",
        us(hello50),
        us(hello99),
        hello50.as_secs_f64() / echo50.as_secs_f64()
    );
    println!(
        "  the same, before its script is prepared (shared snapshot) p50 {:>7.1} µs  p99 {:>8.1} µs",
        us(shared50),
        us(shared99),
    );
    println!(
        "  preparing a script (work ahead of use, once per script and cache): {:.2} s; the first in a cache {:.2} s (it also compiles the instrumented runner)",
        prepared_in.as_secs_f64(),
        first_prepared_in.as_secs_f64(),
    );
    println!(
        "echo component (same pipeline) p50 {:>8.1} µs  p99 {:>8.1} µs",
        us(echo50),
        us(echo99)
    );
    println!("native Rust, same logic        p50 {:>8.2} µs", us(n50));
    println!(
        "ratio: javascript / echo component = {:.1}x (the interpreter's set-up and the script, per call)",
        js50.as_secs_f64() / echo50.as_secs_f64()
    );
    let options = CallOptions {
        timeout: Some(std::time::Duration::from_secs(120)),
        ..CallOptions::default()
    };
    let started = std::time::Instant::now();
    let r = executor.call("count_file_words", r#"{"path":"big.txt"}"#, &options);
    let took = started.elapsed();
    assert!(r.success, "{r:?}");
    let out = r.structured.expect("structured");
    assert_eq!(out["words"], words);
    let native = std::time::Instant::now();
    std::hint::black_box(text.split_whitespace().count());
    let native = native.elapsed();
    println!(
        "5 MB word count, javascript tool: {:.2} s (target <= 2 s; in the script, ms: {}); native Rust split {:.1} ms = {:.0}x (target <= 100x)",
        took.as_secs_f64(),
        out["ms"],
        native.as_secs_f64() * 1e3,
        took.as_secs_f64() / native.as_secs_f64()
    );
    let per_call = |tool: &str, args: &str| memory_per_call(&executor, tool, args, 8);
    println!(
        "memory per call in flight (resident, 8 in flight): count_words {:.2} MB, hello {:.2} MB, echo component {:.2} MB",
        per_call("count_words", ARGS),
        per_call("hello", ARGS),
        per_call("echo", ARGS),
    );
}

/// The resident memory a call in flight costs: this process's highest
/// RSS (sampled every 2 ms) while `threads` threads call `tool` 200 times
/// each, above what it was before, per call in flight, in MB.
fn memory_per_call(executor: &Executor, tool: &str, args: &str, threads: usize) -> f64 {
    use std::sync::atomic::{AtomicBool, Ordering};
    let rss_kib = || crate::soak_driver::status(std::process::id())("VmRSS:");
    let before = rss_kib();
    let done = AtomicBool::new(false);
    let peak = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = 0;
            while !done.load(Ordering::Relaxed) {
                peak = peak.max(rss_kib());
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            peak
        });
        let callers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    for _ in 0..200 {
                        let r = executor.call(tool, args, &CallOptions::default());
                        assert!(r.success, "{r:?}");
                    }
                })
            })
            .collect();
        for caller in callers {
            caller.join().expect("a caller");
        }
        done.store(true, Ordering::Relaxed);
        sampler.join().expect("the sampler")
    });
    peak.saturating_sub(before) as f64 / 1024.0 / threads as f64
}
