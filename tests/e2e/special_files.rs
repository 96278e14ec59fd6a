//! FIFOs and oversized files in the workspace: no tool opens a FIFO (that
//! would block the call in a host read no deadline can stop), and a whole
//! -file read is bounded by the host, whatever limit the guest asks for.

use crate::support::{call, executor, workspace, write};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;
use toolhost::{ErrorKind, ToolResult};

/// Make a FIFO at `path`.
fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .expect("mkfifo");
}

/// Call `tool` with `args` in `ws` (the misbehave fixture granted
/// workspace:read), failing the test if the call does not return within
/// 60 s (a call blocked on a FIFO never would).
fn call_with_guard(ws: &Path, tool: &'static str, args: serde_json::Value) -> ToolResult {
    let (done, result) = mpsc::channel();
    let ws = ws.to_owned();
    std::thread::spawn(move || {
        let grant = toolhost::Grant::parse_caps("workspace:read").unwrap();
        let ex = executor(&ws).with_grant("misbehave", grant);
        let r = call(&ex, tool, &args.to_string());
        let _ = done.send(r);
    });
    result
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{tool} hung (on the FIFO?)"))
}

// Regression: search scopes kept FIFOs, the host's `files.read` refusal
// looked like "too large", and the search then opened the FIFO through
// WASI, blocking forever.
#[test]
fn a_fifo_in_the_tree_hangs_no_search_tool() {
    let ws = workspace();
    write(ws.path(), "src/a.txt", "needle\n");
    mkfifo(&ws.path().join("src/pipe"));
    mkfifo(&ws.path().join("pipe.txt"));
    for (tool, args, first) in [
        (
            "grep",
            serde_json::json!({"pattern": "needle"}),
            "src/a.txt:1:needle",
        ),
        (
            "search_code",
            serde_json::json!({"pattern": "need+le", "context_lines": 0}),
            "src/a.txt:1:needle",
        ),
        (
            "find_files",
            serde_json::json!({"pattern": "*"}),
            "src/a.txt",
        ),
    ] {
        let r = call_with_guard(ws.path(), tool, args);
        assert!(r.success, "{tool}: {r:?}");
        assert_eq!(r.content.lines().collect::<Vec<_>>(), [first], "{tool}");
    }
    // Nothing found: the explanation does not open it either.
    let r = call_with_guard(
        ws.path(),
        "grep",
        serde_json::json!({"pattern": "absent", "hidden": true}),
    );
    assert_eq!(r.content, "0 matches for `absent`.\n");
    // Searching the FIFO itself is refused.
    let r = call_with_guard(
        ws.path(),
        "grep",
        serde_json::json!({"pattern": "x", "path": "src/pipe"}),
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::Retry), "{r:?}");
    assert!(r.content.contains("not a regular file"), "{}", r.content);
}

#[test]
fn the_host_read_refuses_a_fifo_and_anything_over_its_cap() {
    let ws = workspace();
    mkfifo(&ws.path().join("pipe"));
    let read = |path: &str, max_bytes: u64| {
        call_with_guard(
            ws.path(),
            "misbehave",
            serde_json::json!({"action": "read_whole", "path": path, "max_bytes": max_bytes}),
        )
    };
    let r = read("pipe", 1 << 20);
    assert!(!r.success, "{r:?}");
    assert!(r.content.contains("not a regular file"), "{}", r.content);
    // Regression: the host allocated whatever the guest asked for. 300 MiB
    // (sparse) is over the 256 MiB memory limit, so the host refuses it as
    // too large, and the guest would stream it.
    let big = std::fs::File::create(ws.path().join("big.bin")).unwrap();
    big.set_len(300 << 20).unwrap();
    let r = read("big.bin", u64::MAX);
    assert!(r.success, "{r:?}");
    assert_eq!(r.content, "too large");
    write(ws.path(), "small.txt", "12345");
    let r = read("small.txt", u64::MAX);
    assert_eq!(r.content, "read 5 bytes", "{r:?}");
}
