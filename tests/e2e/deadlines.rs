//! Deadlines that hold while a guest waits on the host (issue 16): a timer,
//! an HTTP request to a server that never answers, a share blocked the same
//! way. The epoch ticker stops a guest that runs; these stop one that
//! waits, and the next call is answered at once.

use crate::support::{executor, workspace};
use std::io::Read as _;
use std::net::TcpListener;
use std::time::{Duration, Instant};
use toolhost::{CallOptions, CancelToken, ErrorKind, Executor, Grant, ToolResult};

/// misbehave granted `hosts` (and nothing else).
fn misbehave(hosts: &[&str]) -> (tempfile::TempDir, Executor) {
    let ws = workspace();
    let grant = Grant {
        network: hosts.iter().map(|h| (*h).to_owned()).collect(),
        ..Grant::none()
    };
    let ex = executor(ws.path()).with_grant("misbehave", grant);
    (ws, ex)
}

/// Call misbehave with `args` and `timeout`; the result and how long it took.
fn timed(ex: &Executor, args: &serde_json::Value, timeout: Duration) -> (ToolResult, Duration) {
    let options = CallOptions {
        timeout: Some(timeout),
        ..CallOptions::default()
    };
    let started = Instant::now();
    let r = ex.call("misbehave", &args.to_string(), &options);
    (r, started.elapsed())
}

fn kind(r: &ToolResult) -> Option<ErrorKind> {
    r.error.as_ref().map(|e| e.kind)
}

/// The next call after a stopped one is answered at once.
fn next_call_is_answered(ex: &Executor) {
    let (r, took) = timed(
        ex,
        &serde_json::json!({"action": "report", "path": "x"}),
        Duration::from_secs(5),
    );
    assert!(r.success, "{r:?}");
    assert!(took < Duration::from_secs(1), "the next call took {took:?}");
}

/// A server that accepts connections and reads requests but never answers.
fn silent_server() -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let mut held = Vec::new();
        listener.set_nonblocking(true).unwrap();
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let mut buf = [0u8; 1024];
                    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
                    let _ = stream.read(&mut buf);
                    held.push(stream);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    (port, handle)
}

#[test]
fn a_guest_sleeping_on_a_host_timer_stops_at_its_deadline() {
    let (_ws, ex) = misbehave(&[]);
    let (r, took) = timed(
        &ex,
        &serde_json::json!({"action": "sleep", "secs": 600}),
        Duration::from_secs(2),
    );
    assert_eq!(kind(&r), Some(ErrorKind::Timeout), "{r:?}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(3),
        "stopped after {took:?}"
    );
    next_call_is_answered(&ex);
    // A short sleep within the deadline works, in a call without network.
    let (r, took) = timed(
        &ex,
        &serde_json::json!({"action": "sleep", "secs": 1}),
        Duration::from_secs(10),
    );
    assert!(r.success && r.content == "slept 1 s", "{r:?}");
    assert!(took >= Duration::from_secs(1), "{took:?}");
}

#[test]
fn a_guest_waiting_on_the_host_stops_when_cancelled() {
    let (_ws, ex) = misbehave(&[]);
    let cancel = CancelToken::new();
    let trigger = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        trigger.cancel();
    });
    let options = CallOptions {
        timeout: Some(Duration::from_secs(60)),
        cancel: Some(cancel),
        ..CallOptions::default()
    };
    let started = Instant::now();
    let r = ex.call("misbehave", r#"{"action":"sleep","secs":600}"#, &options);
    let took = started.elapsed();
    canceller.join().unwrap();
    assert_eq!(kind(&r), Some(ErrorKind::Cancelled), "{r:?}");
    assert!(took < Duration::from_secs(2), "stopped after {took:?}");
    next_call_is_answered(&ex);
}

#[test]
fn a_request_without_a_network_grant_is_denied_at_once() {
    let (port, _server) = silent_server();
    let (_ws, ex) = misbehave(&[]);
    let url = format!("http://127.0.0.1:{port}/");
    let (r, took) = timed(
        &ex,
        &serde_json::json!({"action": "fetch", "url": url}),
        Duration::from_secs(10),
    );
    assert_eq!(kind(&r), Some(ErrorKind::Denied), "{r:?}");
    assert!(r.error.unwrap().message.contains("denied"));
    assert!(took < Duration::from_secs(1), "refused after {took:?}");
    // A host outside the grant is refused as fast.
    let (_ws, ex) = misbehave(&["example.com"]);
    let (r, took) = timed(
        &ex,
        &serde_json::json!({"action": "fetch", "url": url}),
        Duration::from_secs(10),
    );
    assert_eq!(kind(&r), Some(ErrorKind::Denied), "{r:?}");
    assert!(took < Duration::from_secs(1), "refused after {took:?}");
}

#[test]
fn a_request_to_a_server_that_never_answers_ends_at_the_deadline() {
    let (port, _server) = silent_server();
    let (_ws, ex) = misbehave(&["127.0.0.1"]);
    let url = format!("http://127.0.0.1:{port}/");
    let (r, took) = timed(
        &ex,
        &serde_json::json!({"action": "fetch", "url": url}),
        Duration::from_secs(2),
    );
    // The request's own timeouts end at the deadline, and so does the wait:
    // the tool sees the error or is stopped, never later than the deadline
    // plus one second.
    assert!(!r.success, "{r:?}");
    assert!(
        matches!(kind(&r), Some(ErrorKind::Timeout | ErrorKind::Failed)),
        "{r:?}"
    );
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(3),
        "ended after {took:?}"
    );
    next_call_is_answered(&ex);
}

#[test]
fn shares_waiting_on_the_host_stop_at_the_callers_deadline() {
    let (_ws, ex) = misbehave(&[]);
    let (r, took) = timed(
        &ex,
        &serde_json::json!({"action": "shares", "n": 3, "share": "sleep"}),
        Duration::from_secs(2),
    );
    assert_eq!(kind(&r), Some(ErrorKind::Timeout), "{r:?}");
    assert!(took < Duration::from_secs(3), "stopped after {took:?}");
    next_call_is_answered(&ex);
}

/// `--timeout` bounds the whole call, the commands it waits on included:
/// the command is killed at the deadline and the call answers `timeout`.
#[test]
fn the_callers_timeout_ends_a_call_waiting_on_a_command() {
    let ws = workspace();
    let marker = format!("20.{}", std::process::id());
    let line = format!("sleep {marker}");
    let args = serde_json::json!({ "command": line, "timeout": 60 }).to_string();
    let started = Instant::now();
    let out = crate::support::toolhost(
        ws.path(),
        &[
            "call",
            "run_command",
            &args,
            "--json",
            "--timeout",
            "3",
            "--mode",
            "yolo",
            "--allow-command",
            &line,
        ],
    );
    let took = started.elapsed();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", crate::support::stderr(&out));
    });
    assert_eq!(v["error"]["kind"], "timeout", "{v}");
    assert!(took < Duration::from_secs(8), "took {took:?}: {v}");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&marker))
        .collect();
    assert!(left.is_empty(), "still running: {left:?}");
}
