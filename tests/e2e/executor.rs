//! The executor pipeline: lookup, arguments, confirmation, dry run, registry.

use crate::support::{call, executor, registry, runtime, workspace, write};
use std::sync::Mutex;
use toolhost::{
    CallContext, CallOptions, ConfirmRequest, Confirmer, Decision, ErrorKind, Executor, Mode,
    Plugin, PluginSource, RegistryError,
};

#[test]
fn an_unknown_tool_is_not_found_with_near_names() {
    let ws = workspace();
    let r = call(&executor(ws.path()), "reed_file", "{}");
    assert_eq!(r.error_kind(), Some(ErrorKind::NotFound));
    assert!(
        r.content.contains("did you mean `read_file`"),
        "{}",
        r.content
    );
    assert!(!r.success);
}

#[test]
fn bad_json_is_invalid_input_and_runs_nothing() {
    let ws = workspace();
    let ex = executor(ws.path());
    for args in ["{", "[]", "\"text\"", "42"] {
        let r = call(&ex, "read_file", args);
        assert_eq!(
            r.error_kind(),
            Some(ErrorKind::InvalidInput),
            "{args}: {r:?}"
        );
    }
}

#[test]
fn registering_a_duplicate_name_is_an_error() {
    let mut reg = registry();
    let rt = runtime();
    let again = Plugin::load(&rt, PluginSource::Builtin(&toolhost::builtins()[0])).expect("load");
    let err = reg.register(again, false).expect_err("duplicate");
    assert!(matches!(err, RegistryError::Duplicate { .. }), "{err}");
    assert!(err.to_string().contains("already registered"), "{err}");
    let again = Plugin::load(&rt, PluginSource::Builtin(&toolhost::builtins()[0])).expect("load");
    reg.register(again, true).expect("override allowed");
}

#[test]
fn registry_lists_sorted_and_filters_by_name() {
    let reg = registry();
    let names: Vec<&str> = reg.list().map(|p| p.name()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert_eq!(reg.count(), names.len());
    assert!(names.contains(&"read_file") && names.contains(&"misbehave"));
    let picked = reg.filter_by_names(&["read_file"]).expect("known");
    assert_eq!(picked.len(), 1);
    assert!(matches!(
        reg.filter_by_names(&["nope"]),
        Err(RegistryError::NotFound { .. })
    ));
}

/// A confirmer that answers from a script and records what it was asked.
struct Scripted {
    answers: Mutex<Vec<Decision>>,
    asked: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(answers: &[Decision]) -> Box<Self> {
        Box::new(Self {
            answers: Mutex::new(answers.iter().rev().copied().collect()),
            asked: Mutex::new(Vec::new()),
        })
    }
}

impl Confirmer for Scripted {
    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision {
        self.asked
            .lock()
            .expect("lock")
            .push(request.tool.to_owned());
        self.answers
            .lock()
            .expect("lock")
            .pop()
            .unwrap_or(Decision::Unavailable)
    }
}

fn write_args(path: &str) -> String {
    serde_json::json!({"action": "write", "path": path, "content": "x"}).to_string()
}

fn ex_with(ws: &std::path::Path, mode: Mode, confirmer: Box<dyn Confirmer>) -> Executor {
    executor(ws)
        .with_mode(mode)
        .with_confirmer(confirmer)
        .with_grant(
            "misbehave",
            toolhost::Grant::parse_caps("workspace:write").expect("caps"),
        )
}

#[test]
fn confirm_sensitive_asks_for_sensitive_tools_only() {
    let ws = workspace();
    write(ws.path(), "ok.txt", "fine\n");
    let ex = ex_with(
        ws.path(),
        Mode::ConfirmSensitive,
        Scripted::new(&[Decision::Deny, Decision::Allow]),
    );
    // read_file is not sensitive: no question.
    assert!(call(&ex, "read_file", r#"{"path":"ok.txt"}"#).success);
    // misbehave is: denied first, then allowed.
    let r = call(&ex, "misbehave", &write_args("a.txt"));
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied));
    assert!(!ws.path().join("a.txt").exists());
    let r = call(&ex, "misbehave", &write_args("a.txt"));
    assert!(r.success, "{r:?}");
    assert!(ws.path().join("a.txt").exists());
}

#[test]
fn confirm_all_asks_for_every_tool_and_abort_stops_everything() {
    let ws = workspace();
    write(ws.path(), "ok.txt", "fine\n");
    let ex = ex_with(
        ws.path(),
        Mode::ConfirmAll,
        Scripted::new(&[Decision::Allow, Decision::AbortAll]),
    );
    assert!(call(&ex, "read_file", r#"{"path":"ok.txt"}"#).success);
    let r = call(&ex, "read_file", r#"{"path":"ok.txt"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied));
    assert!(ex.aborted());
    let r = call(&ex, "read_file", r#"{"path":"ok.txt"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied));
    assert!(r.content.contains("abort"), "{}", r.content);
}

// Regression: "abort all" answered to one client stopped every client's
// calls, and stayed until the server restarted.
#[test]
fn abort_all_stops_only_the_session_that_chose_it() {
    let ws = workspace();
    write(ws.path(), "ok.txt", "fine\n");
    let ex = ex_with(
        ws.path(),
        Mode::ConfirmAll,
        Scripted::new(&[Decision::AbortAll, Decision::Allow, Decision::Allow]),
    );
    let as_session = |session: &str| CallOptions {
        context: CallContext {
            session: Some(session.to_owned()),
            ..CallContext::new()
        },
        ..CallOptions::default()
    };
    let read = r#"{"path":"ok.txt"}"#;
    let r = ex.call("read_file", read, &as_session("a"));
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied));
    assert!(ex.aborted_in(Some("a")) && !ex.aborted_in(Some("b")) && !ex.aborted());
    // Session a's next call is refused without asking...
    let r = ex.call("read_file", read, &as_session("a"));
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied));
    assert!(r.content.contains("abort"), "{}", r.content);
    // ...session b and a call with no session are asked, and run.
    assert!(ex.call("read_file", read, &as_session("b")).success);
    assert!(call(&ex, "read_file", read).success);
    // A session that ends takes its choice with it.
    ex.end_session("a");
    assert!(!ex.aborted_in(Some("a")));
}

#[test]
fn yolo_never_asks() {
    let ws = workspace();
    let ex = ex_with(ws.path(), Mode::Yolo, Scripted::new(&[]));
    assert!(call(&ex, "misbehave", &write_args("a.txt")).success);
}

#[test]
fn with_nobody_to_ask_the_refusal_names_the_ways_out() {
    let ws = workspace();
    let ex = executor(ws.path())
        .with_mode(Mode::ConfirmSensitive)
        .with_confirmer(Box::new(toolhost::NoConfirmer));
    let r = call(&ex, "misbehave", &write_args("a.txt"));
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied));
    assert!(
        r.content.contains("--mode yolo") && r.content.contains("--dry-run"),
        "{}",
        r.content
    );
    assert!(!ws.path().join("a.txt").exists());
}

#[test]
fn dry_run_runs_nothing_and_needs_no_confirmation() {
    let ws = workspace();
    let ex = ex_with(ws.path(), Mode::ConfirmAll, Scripted::new(&[]));
    let options = CallOptions {
        context: CallContext {
            dry_run: true,
            ..CallContext::new()
        },
        ..CallOptions::default()
    };
    let r = ex.call("misbehave", &write_args("a.txt"), &options);
    assert!(r.success, "{r:?}");
    assert!(r.content.starts_with("[dry run]"), "{}", r.content);
    let s = r.structured.expect("structured");
    assert_eq!(s["dry_run"], true);
    assert_eq!(s["granted"], serde_json::json!(["workspace:write"]));
    assert!(!ws.path().join("a.txt").exists());
    // Even a tool that would loop forever returns at once.
    let r = ex.call("misbehave", r#"{"action":"loop"}"#, &options);
    assert!(r.success);
}

#[test]
fn call_context_ids_are_unique() {
    let a = CallContext::new();
    let b = CallContext::new();
    assert_ne!(a.call_id, b.call_id);
}
