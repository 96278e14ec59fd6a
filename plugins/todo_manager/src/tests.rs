//! Unit tests of todo_manager.

use super::*;
use serde_json::json;
use std::path::PathBuf;

fn args(items: serde_json::Value) -> Args {
    serde_json::from_value(json!({ "items": items })).unwrap()
}

fn step(content: &str, status: &str) -> serde_json::Value {
    json!({"content": content, "activeForm": format!("{content}ing"), "status": status})
}

fn err(dir: &Path, items: serde_json::Value) -> String {
    run(args(items), &Context::default(), dir)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_plan_is_saved_numbered_and_read_back_with_empty_args() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        args(json!([
            step("Write", "completed"),
            step("Test", "in_progress"),
            step("Ship", "pending")
        ])),
        &Context::default(),
        dir.path(),
    )
    .unwrap();
    let plan = out.structured().unwrap();
    assert_eq!(plan["items"][2]["id"], "step-3");
    assert_eq!(plan["maxItems"], 15);
    assert_eq!(plan["currentItem"]["id"], "step-2");
    assert!(
        out.content().contains("[>] step-2 Testing"),
        "{}",
        out.content()
    );
    let again = run(Args::default(), &Context::default(), dir.path()).unwrap();
    assert_eq!(again.structured().unwrap()["items"], plan["items"]);
}

#[test]
fn at_most_fifteen_items() {
    let dir = tempfile::tempdir().unwrap();
    let many: Vec<_> = (0..16).map(|i| step(&format!("s{i}"), "pending")).collect();
    let m = err(dir.path(), json!(many));
    assert!(m.contains("16 steps") && m.contains("at most 15"), "{m}");
}

#[test]
fn at_most_one_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let m = err(
        dir.path(),
        json!([step("a", "in_progress"), step("b", "in_progress")]),
    );
    assert!(
        m.contains("step-1, step-2") && m.contains("only one"),
        "{m}"
    );
}

#[test]
fn active_form_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let m = err(
        dir.path(),
        json!([{"content": "a", "activeForm": " ", "status": "pending"}]),
    );
    assert!(m.contains("step-1 has no activeForm"), "{m}");
    let missing: Result<Args, _> =
        serde_json::from_value(json!({"items": [{"content": "a", "status": "pending"}]}));
    assert!(missing.is_err(), "activeForm is a required field");
}

#[test]
fn content_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let m = err(
        dir.path(),
        json!([{"content": "", "activeForm": "x", "status": "pending"}]),
    );
    assert!(m.contains("step-1 has no content"), "{m}");
}

#[test]
fn plans_are_per_session_and_a_broken_rule_keeps_the_old_plan() {
    let dir = tempfile::tempdir().unwrap();
    let a = Context::default();
    run(args(json!([step("Keep", "pending")])), &a, dir.path()).unwrap();
    assert!(
        err(
            dir.path(),
            json!([step("x", "in_progress"), step("y", "in_progress")])
        )
        .contains("only one")
    );
    let kept = run(Args::default(), &a, dir.path()).unwrap();
    assert_eq!(kept.structured().unwrap()["items"][0]["content"], "Keep");
    // Another session has its own plan.
    let b = Context::default().with_session("chat-2");
    let theirs = run(Args::default(), &b, dir.path()).unwrap();
    assert_eq!(theirs.structured().unwrap()["items"], json!([]));
    let names = [
        Some("a.b"),
        Some("a/b"),
        Some("a_b"),
        Some("default"),
        None,
        Some("../etc"),
    ];
    let files: std::collections::HashSet<PathBuf> = names
        .iter()
        .map(|n| toolhost_builtin::session::file(dir.path(), *n, "json"))
        .collect();
    assert_eq!(files.len(), names.len(), "no two sessions share a file");
    assert!(files.iter().all(|f| f.parent() == Some(dir.path())));
}

#[test]
fn no_state_directory_is_a_clear_failure() {
    let m = run(
        Args::default(),
        &Context::default(),
        Path::new("/no/such/dir"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        m.contains("did not grant `todo_manager` its `dir` directory"),
        "{m}"
    );
}
