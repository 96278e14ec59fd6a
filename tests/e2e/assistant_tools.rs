//! The planning, time, validation and memory tools (issue 8) through the
//! executor, with the state directories the host grants only to them.

use crate::support::{call, executor, workspace};
use serde_json::json;
use toolhost::{ErrorKind, Executor, Mode};

/// An executor whose built-ins get their state directories under `state`.
fn with_state(ws: &std::path::Path, state: &std::path::Path) -> Executor {
    executor(ws)
        .with_state_dir("todo", state.join("todo"))
        .with_state_dir("memory", state.join("memory"))
}

#[test]
fn get_datetime_gives_the_offset_of_a_known_zone_and_date() {
    let ex = executor(workspace().path());
    let r = call(
        &ex,
        "get_datetime",
        r#"{"timezone":"America/New_York","at":"2026-07-04T16:00:00Z"}"#,
    );
    assert!(r.success, "{}", r.content);
    let s = r.structured.expect("structured");
    assert_eq!(s["utc_offset"], "-04:00");
    assert_eq!(s["time"], "12:00:00");
    assert_eq!(s["weekday"], "Saturday");
    assert_eq!(s["iso8601"], "2026-07-04T12:00:00-04:00");
    let r = call(&ex, "get_datetime", r#"{"timezone":"America/Nwe_York"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput));
    assert!(r.content.contains("`America/New_York`"), "{}", r.content);
    // The configured default zone.
    let ex = executor(workspace().path()).with_setting("timezone", "Asia/Kolkata");
    let r = call(&ex, "get_datetime", r#"{"at":"2026-01-01T00:00:00Z"}"#);
    assert_eq!(r.structured.expect("structured")["utc_offset"], "+05:30");
}

#[test]
fn todo_manager_keeps_the_plan_in_its_own_state_directory() {
    let ws = workspace();
    let state = workspace();
    let ex = with_state(ws.path(), state.path()).with_mode(Mode::ConfirmSensitive);
    let plan = json!({"items": [
        {"content": "Write the parser", "activeForm": "Writing the parser", "status": "in_progress"},
        {"content": "Test it", "activeForm": "Testing it", "status": "pending"},
    ]});
    // Writing its own state is not a sensitive call: nobody is asked.
    let r = call(&ex, "todo_manager", &plan.to_string());
    assert!(r.success, "{}", r.content);
    let r = call(&ex, "todo_manager", "{}");
    let s = r.structured.expect("structured");
    assert_eq!(s["currentItem"]["id"], "step-1");
    assert_eq!(s["items"][1]["id"], "step-2");
    assert!(state.path().join("todo/default.json").is_file());
    assert_eq!(
        std::fs::read_dir(ws.path()).expect("ws").count(),
        0,
        "nothing in the workspace"
    );
    // Each rule broken is invalid_input naming it.
    let two = json!({"items": [
        {"content": "a", "activeForm": "A", "status": "in_progress"},
        {"content": "b", "activeForm": "B", "status": "in_progress"},
    ]});
    let r = call(&ex, "todo_manager", &two.to_string());
    assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput));
    assert!(
        r.content.contains("only one step may be in_progress"),
        "{}",
        r.content
    );
    let r = call(
        &ex,
        "todo_manager",
        r#"{"items":[{"content":"a","status":"pending"}]}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput));
    assert!(r.content.contains("activeForm"), "{}", r.content);
    // Without a state directory the tool says so.
    let r = call(&executor(ws.path()), "todo_manager", "{}");
    assert_eq!(r.error_kind(), Some(ErrorKind::Failed));
    assert!(r.content.contains("no state directory"), "{}", r.content);
}
