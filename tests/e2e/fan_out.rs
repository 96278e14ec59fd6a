//! Fan-out (`parallel.run-shares`): shares run in order and cannot fan out
//! again, their failures keep their kind, and big results come back
//! whatever the model-facing output limit.

use crate::support::{cache_dir, call, call_cli, content_lines, executor, workspace, write};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use toolhost::{
    CacheDir, CallOptions, ErrorKind, Executor, Limits, Mode, Registry, Runtime, RuntimeConfig,
};

#[test]
fn fan_out_runs_shares_in_order_and_refuses_nesting() {
    let ws = workspace();
    let fixtures = crate::support::fixtures_dir().display().to_string();
    let v = call_cli(
        ws.path(),
        "misbehave",
        &json!({"action": "shares", "n": 5}),
        &["--plugin-dir", &fixtures],
    );
    let l = content_lines(&v);
    assert!(l[0].starts_with("width "), "{l:?}");
    let width: usize = l[0][6..].parse().unwrap();
    assert!(width >= 1);
    assert_eq!(
        &l[1..],
        (0..5)
            .map(|i| format!("share {i} width 1 nested-refused true"))
            .collect::<Vec<_>>()
    );
}

// Regression: a share that timed out, ran out of memory or crashed made
// the call fail as `failed`, its kind only in the message's "(timeout)".
#[test]
fn a_failing_share_gives_the_call_its_error_kind() {
    let ws = workspace();
    let ex = executor(ws.path());
    let r = call(
        &ex,
        "misbehave",
        r#"{"action":"shares","n":2,"share":"alloc"}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::OutOfMemory), "{r:?}");
    assert!(r.content.contains("256 MiB limit"), "{}", r.content);
    let r = call(
        &ex,
        "misbehave",
        r#"{"action":"shares","n":2,"share":"panic"}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::Trap), "{r:?}");
    assert!(r.content.contains("was asked to panic"), "{}", r.content);
    let options = CallOptions {
        timeout: Some(Duration::from_millis(500)),
        ..CallOptions::default()
    };
    let r = ex.call(
        "misbehave",
        r#"{"action":"shares","n":2,"share":"loop"}"#,
        &options,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::Timeout), "{r:?}");
    // The next call is unaffected.
    let r = call(&ex, "misbehave", r#"{"action":"shares","n":2}"#);
    assert!(r.success, "{r:?}");
    // A tool cannot claim a stop none of its shares had.
    let r = call(&ex, "misbehave", r#"{"action":"fake_stop"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::Failed), "{r:?}");
    assert!(
        r.content.contains("a share ran past its limit"),
        "{}",
        r.content
    );
}

/// An executor whose calls may return at most `max_output_bytes`, with one
/// fan-out worker whatever the machine's cores.
fn small_output_executor(ws: &std::path::Path, max_output_bytes: usize) -> Executor {
    let runtime = Runtime::new(RuntimeConfig {
        cache: CacheDir::At(cache_dir()),
        cache_key: crate::support::cache_key(),
        max_concurrent_calls: 2,
        fanout_workers: Some(1),
        limits: Limits {
            max_output_bytes,
            ..Limits::default()
        },
        ..RuntimeConfig::default()
    })
    .unwrap();
    let runtime = Arc::new(runtime);
    let mut registry = Registry::new();
    registry.load_builtins(&runtime).unwrap();
    Executor::new(runtime, registry)
        .with_workspace(ws)
        .unwrap()
        .with_mode(Mode::Yolo)
}

// Regression: every matching file went back from each share (with no
// lines), a share's structured result over the output limit was dropped,
// and the whole search failed with "a share returned no structured result".
#[test]
fn a_search_with_thousands_of_matching_files_stays_within_its_limits() {
    let ws = workspace();
    for i in 0..3000 {
        write(
            ws.path(),
            &format!("dir{:02}/file{i:04}.txt", i % 30),
            format!("needle {i}\n"),
        );
    }
    let ex = small_output_executor(ws.path(), 32 << 10);
    let run = |tool: &str, args: Value| {
        let r = ex.call(tool, &args.to_string(), &CallOptions::default());
        assert!(r.success, "{tool} {args}: {r:?}");
        let s = r.structured.clone().expect("structured result kept");
        (r.content, s)
    };
    for (tool, args) in [
        ("grep", json!({"pattern": "needle"})),
        (
            "search_code",
            json!({"pattern": r"needle \d+", "context_lines": 0, "max_results": 100}),
        ),
    ] {
        let (text, s) = run(tool, args);
        let shown: Vec<&str> = text.lines().collect();
        assert_eq!(shown.len(), 101, "{tool}");
        assert_eq!(shown[0], "dir00/file0000.txt:1:needle 0");
        assert_eq!(
            shown[100],
            "[100 of 3000 matching lines shown (3000 matches in 3000 files); narrow the path or \
             file pattern, or raise max_results]"
        );
        assert_eq!(s["total_matches"], 3000);
        assert_eq!(s["files_with_matches"], 3000);
        assert_eq!(s["truncated"], true);
        assert_eq!(s["results"].as_array().unwrap().len(), 100, "{tool}");
    }
    for (mode, first) in [
        ("files", "dir00/file0000.txt"),
        ("count", "dir00/file0000.txt:1"),
    ] {
        let (text, s) = run("grep", json!({"pattern": "needle", "output": mode}));
        let shown: Vec<&str> = text.lines().collect();
        assert_eq!(shown.len(), 101, "{mode}");
        assert_eq!(shown[0], first);
        assert!(
            shown[100].starts_with("[100 of 3000 files shown (3000 matches in 3000 files)"),
            "{}",
            shown[100]
        );
        let results = s["results"].as_array().unwrap();
        assert_eq!(results.len(), 100, "{mode}");
        assert!(results.iter().all(|f| f["lines"] == json!([])));
    }
}
