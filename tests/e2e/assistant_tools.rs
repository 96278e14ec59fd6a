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
        .with_state_dir("react", state.join("react"))
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
    // The agent tool contracts: with no step in progress, the first pending one starts.
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
    // `from`/`lines`, names these had before any release, are refused.
    let old = call(
        &ex,
        "memory_get",
        &json!({"path": path, "from": line, "lines": 1}).to_string(),
    );
    assert!(
        !old.success && old.content.contains("from"),
        "{}",
        old.content
    );
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

/// The TypeScript bot framework's persona tools through the CLI: each profile's own
/// `soul_dir`, SOUL.md replaced whole, identity fields kept, goals by
/// substring.
#[test]
fn persona_tools_keep_each_agents_own_persona() {
    let ws = workspace();
    let state = workspace();
    let config = ws.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "state_dir = {:?}\n[profiles.ada]\nsoul_dir = {:?}\n[profiles.bob]\nsoul_dir = {:?}\n",
            state.path().join("state"),
            state.path().join("ada"),
            state.path().join("bob"),
        ),
    )
    .expect("config");
    let config = config.to_str().expect("utf-8 path");
    let as_agent = |profile: &str, tool: &str, args: serde_json::Value| {
        crate::support::call_cli(
            ws.path(),
            tool,
            &args,
            &["--config", config, "--profile", profile],
        )
    };
    let r = as_agent(
        "ada",
        "update_soul",
        json!({"content": "# Soul\n\nBe brief."}),
    );
    assert_eq!(r["success"], true, "{r}");
    let r = as_agent(
        "ada",
        "update_identity",
        json!({"name": "Ada", "emoji": "🦉"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let r = as_agent("ada", "update_identity", json!({"vibe": "curious"}));
    assert_eq!(r["structured"]["name"], "Ada", "{r}");
    assert_eq!(r["structured"]["changed"], json!(["vibe"]), "{r}");
    let r = as_agent("ada", "update_identity", json!({}));
    assert_eq!(r["success"], false, "{r}");
    let r = as_agent(
        "bob",
        "manage_goals",
        json!({"action": "add", "goal": "Learn Rust"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let r = as_agent(
        "bob",
        "manage_goals",
        json!({"action": "complete", "goal": "rust", "outcome": "done"}),
    );
    assert_eq!(r["structured"]["completed"][0]["goal"], "Learn Rust", "{r}");
    let ada = state.path().join("ada");
    assert_eq!(
        std::fs::read_to_string(ada.join("SOUL.md")).expect("SOUL.md"),
        "# Soul\n\nBe brief.\n"
    );
    assert_eq!(
        std::fs::read_to_string(ada.join("IDENTITY.md")).expect("IDENTITY.md"),
        "# Identity\n\n- **Name:** Ada\n- **Emoji:** 🦉\n- **Vibe:** curious\n"
    );
    assert!(!ada.join("GOALS.md").exists(), "bob's goals stay bob's");
    assert!(state.path().join("bob").join("GOALS.md").is_file());
    assert!(!state.path().join("bob").join("SOUL.md").exists());
}

/// The async Python tools' react scratchpad, kept per session in its own state directory.
#[test]
fn react_keeps_a_scratchpad_per_session() {
    let ws = workspace();
    let state = workspace();
    let ex = with_state(ws.path(), state.path()).with_mode(Mode::ConfirmSensitive);
    let in_session = |session: &str, args: serde_json::Value| {
        let options = toolhost::CallOptions {
            context: toolhost::CallContext {
                session: Some(session.to_owned()),
                ..toolhost::CallContext::new()
            },
            ..toolhost::CallOptions::default()
        };
        ex.call("react", &args.to_string(), &options)
    };
    let r = in_session(
        "a",
        json!({"thought": "Check the logs first", "action": "grep ERROR"}),
    );
    assert!(r.success, "{}", r.content);
    let r = in_session("a", json!({"observation": "3 errors at 02:00"}));
    assert_eq!(
        r.structured.as_ref().expect("structured")["steps"][1]["n"],
        2
    );
    assert!(
        r.content.contains("2. Observation: 3 errors at 02:00"),
        "{}",
        r.content
    );
    let other = in_session("b", json!({}));
    assert_eq!(other.structured.expect("structured")["steps"], json!([]));
    assert!(
        std::fs::read_dir(state.path().join("react"))
            .expect("react dir")
            .count()
            >= 1
    );
}

/// PicoClaw's and the async Python tools' list_dir, and the TypeScript bot framework's locale for get_datetime.
#[test]
fn list_dir_and_a_localized_date() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("src")).expect("dir");
    std::fs::write(ws.path().join("src/lib.rs"), "x").expect("file");
    std::fs::write(ws.path().join("README.md"), "hi").expect("file");
    let ex = executor(ws.path());
    let r = call(&ex, "list_dir", r#"{"directory":"."}"#);
    assert_eq!(r.content, "README.md (2 bytes)\nsrc/\n", "{}", r.content);
    let r = call(&ex, "list_dir", r#"{"recursive":true}"#);
    assert_eq!(r.structured.expect("structured")["total"], 3);
    let r = call(
        &ex,
        "get_datetime",
        r#"{"timezone":"America/Argentina/Buenos_Aires","at":"2026-11-26T15:00:00Z","locale":"es-AR"}"#,
    );
    let s = r.structured.expect("structured");
    assert_eq!(s["weekday"], "Thursday");
    assert_eq!(s["localized"]["weekday"], "jueves");
    assert_eq!(s["localized"]["month"], "noviembre");
    let r = call(&ex, "get_datetime", r#"{"locale":"klingon"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput));
    let configured = executor(ws.path()).with_setting("locale", "fr-FR");
    let r = call(
        &configured,
        "get_datetime",
        r#"{"at":"2026-11-26T15:00:00Z"}"#,
    );
    assert_eq!(
        r.structured.expect("structured")["localized"]["weekday"],
        "jeudi"
    );
}
