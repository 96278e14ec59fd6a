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
    // Seed 003: with no step in progress, the first pending one starts.
    let pending = json!({"items": [
        {"content": "Gather context", "activeForm": "Gathering context", "status": "completed"},
        {"content": "Map domains", "activeForm": "Mapping domains", "status": "pending"},
        {"content": "Write it up", "activeForm": "Writing it up", "status": "pending"},
    ]});
    let r = call(&ex, "todo_manager", &pending.to_string());
    let s = r.structured.expect("structured");
    assert_eq!(s["items"][1]["status"], "in_progress", "{s}");
    assert_eq!(s["items"][2]["status"], "pending", "{s}");
    assert_eq!(s["currentItem"]["id"], "step-2", "{s}");
    let done = json!({"items": [
        {"content": "Gather context", "activeForm": "Gathering context", "status": "completed"},
    ]});
    let s = call(&ex, "todo_manager", &done.to_string())
        .structured
        .expect("structured");
    assert!(s["currentItem"].is_null(), "{s}");
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
    assert!(
        r.content
            .contains("did not grant `todo_manager` its `todo` directory"),
        "{}",
        r.content
    );
}

#[test]
fn memory_save_then_search_then_get() {
    let ws = workspace();
    let state = workspace();
    let ex = with_state(ws.path(), state.path()).with_mode(Mode::ConfirmSensitive);
    for fact in [
        "The staging database is postgres 16 on db-staging-2",
        "The user prefers short answers",
    ] {
        let r = call(&ex, "save_memory", &json!({ "fact": fact }).to_string());
        assert!(r.success, "{}", r.content);
    }
    // The same fact again is reported, not stored twice.
    let r = call(
        &ex,
        "save_memory",
        r#"{"fact":"the user prefers  SHORT answers"}"#,
    );
    assert!(r.success, "{}", r.content);
    assert_eq!(r.structured.expect("structured")["already_stored"], true);
    let r = call(
        &ex,
        "memory_search",
        r#"{"query":"staging database","maxResults":3}"#,
    );
    assert!(r.success, "{}", r.content);
    let found = r.structured.expect("structured");
    let best = &found["results"][0];
    assert!(
        best["snippet"]
            .as_str()
            .expect("snippet")
            .contains("postgres 16"),
        "{found}"
    );
    let path = best["path"].as_str().expect("path").to_owned();
    assert!(
        path.ends_with(".md") && path.len() == "YYYY-MM-DD.md".len(),
        "{path}"
    );
    let line = best["line"].as_u64().expect("line");
    let r = call(
        &ex,
        "memory_get",
        &json!({"path": path, "offset": line, "limit": 1}).to_string(),
    );
    assert!(r.success, "{}", r.content);
    assert!(r.content.contains("postgres 16"), "{}", r.content);
    // `from`/`lines`, the names before 0.1, still read the same lines.
    let old = call(
        &ex,
        "memory_get",
        &json!({"path": path, "from": line, "lines": 1}).to_string(),
    );
    assert_eq!(old.content, r.content);
    assert!(state.path().join("memory").join(&path).is_file());
    let r = call(&ex, "memory_search", r#"{"query":"kubernetes cluster"}"#);
    assert_eq!(r.structured.expect("structured")["results"], json!([]));
}

#[test]
fn memory_refuses_credentials_and_paths_outside_it() {
    let ws = workspace();
    let state = workspace();
    let ex = with_state(ws.path(), state.path());
    let r = call(
        &ex,
        "save_memory",
        r#"{"fact":"prod token is ghp_abcdefghijklmnopqrstuvwxyz0123456789"}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied));
    assert!(r.content.contains("GitHub token"), "{}", r.content);
    assert!(
        !state.path().join("memory").exists()
            || std::fs::read_dir(state.path().join("memory"))
                .expect("dir")
                .next()
                .is_none()
    );
    for path in ["../todo/default.json", "/etc/passwd"] {
        let r = call(&ex, "memory_get", &json!({ "path": path }).to_string());
        assert_eq!(
            r.error_kind(),
            Some(ErrorKind::InvalidInput),
            "{path}: {}",
            r.content
        );
    }
}

#[test]
fn validate_output_checks_registered_and_inline_schemas() {
    let ws = workspace();
    let schemas = workspace();
    std::fs::write(
        schemas.path().join("summary.json"),
        json!({"type": "object", "required": ["title", "points"], "properties": {
            "title": {"type": "string"},
            "points": {"type": "array", "items": {"type": "string"}, "minItems": 1}
        }})
        .to_string(),
    )
    .expect("schema");
    let ex = executor(ws.path()).with_state_dir("schemas", schemas.path());
    let ok = json!({"outputType": "summary", "data": {"title": "T", "points": ["a"]}});
    let r = call(&ex, "validate_output", &ok.to_string());
    let v = r.structured.expect("structured");
    assert_eq!(v["valid"], true, "{v}");
    let bad = json!({"outputType": "summary", "data": {"title": 3, "points": [], "extra": 1}});
    let v = call(&ex, "validate_output", &bad.to_string())
        .structured
        .expect("structured");
    assert_eq!(v["valid"], false);
    let paths: Vec<&str> = v["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert!(
        paths.contains(&"/title") && paths.contains(&"/points"),
        "{paths:?}"
    );
    assert_eq!(v["warnings"][0]["path"], "/extra");
    let r = call(
        &ex,
        "validate_output",
        r#"{"outputType":"sumary","data":{}}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput));
    assert!(
        r.content.contains("known output types are: summary"),
        "{}",
        r.content
    );
    // The tool only reads the schemas directory.
    let grant = ex.effective_grant(&ex.lookup("validate_output").expect("tool"));
    assert_eq!(grant.directories[0].access, toolhost::grant::Access::Read);
    // An inline schema works without one.
    let inline = json!({"outputType": "n", "data": 3, "schema": {"type": "integer", "minimum": 5}});
    let v = call(&executor(ws.path()), "validate_output", &inline.to_string())
        .structured
        .expect("structured");
    assert_eq!(v["valid"], false);
}
