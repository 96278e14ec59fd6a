//! A tool's structured result is checked against its output schema
//! wherever it is called: through the library, `toolhost call`, MCP and
//! the harness (`toolhost test`), which also compares numbers by value.
//! The fixture `misbehave` answers `{"action": "structured", "value": V}`
//! with V, and its output schema says `count` is an integer.

use crate::mcp::{Client, call, connect, is_error, text};
use crate::support::{
    call_cli, executor, fixtures_dir, kind, stderr, stdout, toolhost, workspace, write,
};
use serde_json::json;
use toolhost::ErrorKind;

/// What every surface says of `{"count": "three"}`.
const BROKEN: &str = "`misbehave` returned a structured result that does not match its output schema: `/count` must be an integer, not a string (\"three\")";

#[test]
fn a_result_that_breaks_its_schema_fails_through_the_library() {
    let ws = workspace();
    let ex = executor(ws.path());
    let call = |value: serde_json::Value| {
        ex.call(
            "misbehave",
            &json!({"action": "structured", "value": value}).to_string(),
            &Default::default(),
        )
    };
    let r = call(json!({"count": "three"}));
    assert_eq!(r.error_kind(), Some(ErrorKind::Failed), "{}", r.content);
    assert!(r.content.contains(BROKEN), "{}", r.content);
    assert!(
        r.structured.is_none(),
        "no data that breaks the schema is passed on"
    );
    let hint = r
        .error
        .as_ref()
        .and_then(|e| e.hint.clone())
        .unwrap_or_default();
    assert!(hint.contains("its author must fix"), "{hint}");
    // The whole output of the wrong type.
    let r = call(json!([1]));
    assert!(
        r.content
            .contains("`(the whole output)` must be an object, not an array"),
        "{}",
        r.content
    );
    // What matches is passed on; an answer of text alone is not checked.
    let r = call(json!({"count": 3, "more": true}));
    assert!(r.success, "{}", r.content);
    assert_eq!(r.structured, Some(json!({"count": 3, "more": true})));
    let r = ex.call(
        "misbehave",
        r#"{"action":"report","path":"x"}"#,
        &Default::default(),
    );
    assert!(r.success, "{}", r.content);
    // One failed check harms nothing: the next call is answered.
    assert!(call(json!({"count": "three"})).content.contains(BROKEN));
    assert!(call(json!({"count": 4})).success);
}

#[test]
fn a_result_that_breaks_its_schema_fails_through_the_cli() {
    let ws = workspace();
    let fixtures = fixtures_dir().display().to_string();
    let flags = ["--plugin-dir", fixtures.as_str()];
    let args =
        |count: serde_json::Value| json!({"action": "structured", "value": {"count": count}});
    let v = call_cli(ws.path(), "misbehave", &args(json!("three")), &flags);
    assert_eq!(kind(&v), "failed", "{v}");
    assert!(
        v["content"].as_str().unwrap_or_default().contains(BROKEN),
        "{v}"
    );
    let v = call_cli(ws.path(), "misbehave", &args(json!(3)), &flags);
    assert_eq!(v["success"], true, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_breaks_its_schema_fails_over_mcp() {
    let ws = workspace();
    let fixtures = fixtures_dir().display().to_string();
    let dir = ws.path().display().to_string();
    let session = connect(
        ws.path(),
        &[
            "serve",
            "--mode",
            "yolo",
            "--structured-output",
            "--workspace",
            &dir,
            "--plugin-dir",
            &fixtures,
        ],
        Client::default(),
    )
    .await;
    let r = call(
        &session,
        "misbehave",
        json!({"action": "structured", "value": {"count": "three"}}),
    )
    .await
    .expect("answered");
    assert!(is_error(&r), "{r:?}");
    assert!(text(&r).contains(BROKEN), "{}", text(&r));
    assert!(r.structured_content.is_none(), "{r:?}");
    let r = call(
        &session,
        "misbehave",
        json!({"action": "structured", "value": {"count": 3}}),
    )
    .await
    .expect("answered");
    assert!(!is_error(&r), "{r:?}");
    assert_eq!(
        r.structured_content.as_ref().map(|s| &s["count"]),
        Some(&json!(3))
    );
    session.cancel().await.expect("close");
}

#[test]
fn the_harness_checks_the_schema_and_compares_numbers_by_value() {
    let ws = workspace();
    let wasm = fixtures_dir().join("fixture_misbehave.wasm");
    let cases = json!([
        {
            "name": "breaks its schema",
            "args": {"action": "structured", "value": {"count": "three"}},
            "expect": {"success": true}
        },
        {
            "name": "numbers by value",
            "args": {"action": "structured", "value": {"count": 35, "stats": {"mean": 2.5, "rows": [1.0, 2]}}},
            "expect": {"success": true, "structured": {"count": 35.0, "stats": {"mean": 2.50, "rows": [1, 2.0]}}}
        },
        {
            "name": "a difference at its pointer",
            "args": {"action": "structured", "value": {"count": 35, "stats": {"rows": [1, 2]}}},
            "expect": {"structured": {"stats": {"rows": [1, 3]}}}
        }
    ]);
    write(ws.path(), "cases.json", cases.to_string());
    let out = toolhost(
        ws.path(),
        &["test", wasm.to_str().expect("utf-8"), "cases.json"],
    );
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(BROKEN), "{said}");
    assert!(
        said.contains("structured at `/stats/rows/1`: expected 3, got 2"),
        "{said}"
    );
    assert!(said.contains("misbehave: 1 passed, 2 failed"), "{said}");
}
