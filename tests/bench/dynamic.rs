//! A JavaScript dynamic tool per call: js_runtime (boa) instantiated fresh
//! in the sandbox, the interpreter set up, the script loaded and `run`
//! called; against the trivial `echo` component through the same pipeline
//! and the same logic in native Rust.

use crate::{echo_registry, percentiles, time_n, us};
use serde_json::json;
use std::sync::Arc;
use toolhost::dynamic::{Entry, Meta};
use toolhost::{CallOptions, Executor, Mode, Runtime};

const SCRIPT: &str = "function run(a) { return String(a.text.split(/\\s+/).length) }";
const ARGS: &str = r#"{"text":"one two three four five"}"#;

pub fn run(runtime: &Arc<Runtime>, n: usize) {
    println!("\n## Dynamic tools: a JavaScript tool per call (js_runtime = boa in the sandbox)");
    let meta: Meta = serde_json::from_value(json!({
        "id": "count_words-bench", "name": "count_words",
        "description": "Count the words of a text (benchmark).", "kind": "javascript",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        "scope": "all", "created_at": "2026-01-01T00:00:00Z", "status": "approved",
        "grant": [],
    }))
    .expect("a valid record");
    let dir = tempfile::tempdir().expect("temp");
    let entry = Entry {
        meta,
        dir: dir.path().to_owned(),
    };
    let plugin = toolhost::dynamic::plugin(runtime, &entry, SCRIPT.as_bytes()).expect("builds");
    let mut registry = echo_registry(runtime);
    registry.register(plugin, false).expect("register");
    let executor = Executor::new(Arc::clone(runtime), registry).with_mode(Mode::Yolo);
    let options = CallOptions::default();
    let call = |tool: &str, args: &str| {
        let r = executor.call(tool, args, &options);
        assert!(r.success, "{r:?}");
        r
    };
    assert_eq!(call("count_words", ARGS).content, "5");
    for _ in 0..10 {
        call("count_words", ARGS);
        call("echo", ARGS);
    }
    let (mut js, _) = time_n(n, || {
        call("count_words", ARGS);
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
    let (n50, _) = percentiles(&mut native);
    println!(
        "javascript tool (count_words)  p50 {:>8.1} µs  p99 {:>8.1} µs",
        us(js50),
        us(js99)
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
}
