//! Fan-out (`parallel.run-shards`): a share's failure keeps its kind in
//! the call's result.

use crate::support::{call, executor, workspace};
use std::time::Duration;
use toolhost::{CallOptions, ErrorKind};

// Regression: a share that timed out, ran out of memory or crashed made
// the call fail as `failed`, its kind only in the message's "(timeout)".
#[test]
fn a_failing_share_gives_the_call_its_error_kind() {
    let ws = workspace();
    let ex = executor(ws.path());
    let r = call(
        &ex,
        "misbehave",
        r#"{"action":"shards","n":2,"share":"alloc"}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::OutOfMemory), "{r:?}");
    assert!(r.content.contains("256 MiB limit"), "{}", r.content);
    let r = call(
        &ex,
        "misbehave",
        r#"{"action":"shards","n":2,"share":"panic"}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::Trap), "{r:?}");
    assert!(r.content.contains("was asked to panic"), "{}", r.content);
    let options = CallOptions {
        timeout: Some(Duration::from_millis(500)),
        ..CallOptions::default()
    };
    let r = ex.call(
        "misbehave",
        r#"{"action":"shards","n":2,"share":"loop"}"#,
        &options,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::Timeout), "{r:?}");
    // The next call is unaffected.
    let r = call(&ex, "misbehave", r#"{"action":"shards","n":2}"#);
    assert!(r.success, "{r:?}");
}
