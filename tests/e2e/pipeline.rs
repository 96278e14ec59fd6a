//! The executor's 8 steps through the library: schema validation, the
//! mode × sensitivity table, dry runs that touch nothing, profiles, prompt
//! overrides, call context, post-edit hooks and the audit log.

use crate::support::{call, executor, workspace, write};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use toolhost::hooks::PostEditHook;
use toolhost::schema::SchemaFormat;
use toolhost::{
    AuditLog, CallContext, CallOptions, ConfirmRequest, Confirmer, Decision, ErrorKind, Executor,
    Grant, Mode, Profile,
};

/// Approves everything and remembers which tools it was asked about.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Confirmer for &'static Recorder {
    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision {
        self.0.lock().expect("lock").push(request.tool.to_owned());
        Decision::Allow
    }
}

fn recorder() -> &'static Recorder {
    Box::leak(Box::default())
}

fn asked(r: &Recorder) -> Vec<String> {
    std::mem::take(&mut *r.0.lock().expect("lock"))
}

#[test]
fn arguments_are_checked_against_the_schema_before_anything_runs() {
    let ws = workspace();
    let ex = executor(ws.path());
    let cases = [
        (
            r#"{"path":"a.txt","limit":"ten"}"#,
            "`limit` must be an integer, not a string (\"ten\")",
        ),
        (r#"{"limit":3}"#, "missing required field `path`"),
        (
            r#"{"path":"a.txt","lines":3}"#,
            "unknown field `lines` (this tool takes: limit, offset, path)",
        ),
    ];
    for (args, expected) in cases {
        let r = call(&ex, "read_file", args);
        assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput), "{args}");
        assert!(r.content.contains(expected), "{args}: {}", r.content);
    }
    // A documented enum (schemars' oneOf of consts) lists its choices.
    let r = call(&ex, "process", r#"{"action":"start"}"#);
    assert!(
        r.content
            .contains("`action` must be one of \"list\", \"poll\""),
        "{}",
        r.content
    );
    // Validation comes before the plugin: an invalid write writes nothing.
    let r = call(&ex, "write_file", r#"{"path":"new.txt","content":42}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput));
    assert!(
        r.content.contains("`content` must be a string"),
        "{}",
        r.content
    );
    assert!(!ws.path().join("new.txt").exists());
}

#[test]
fn every_cell_of_the_mode_by_sensitivity_table() {
    let ws = workspace();
    write(ws.path(), "a.txt", "a\n");
    // (mode, asked about read_file (not sensitive), asked about write_file (sensitive))
    let table = [
        (Mode::Yolo, false, false),
        (Mode::ConfirmSensitive, false, true),
        (Mode::ConfirmAll, true, true),
    ];
    for (mode, plain, sensitive) in table {
        let who = recorder();
        let ex = executor(ws.path())
            .with_mode(mode)
            .with_confirmer(Box::new(who));
        assert!(call(&ex, "read_file", r#"{"path":"a.txt"}"#).success);
        assert_eq!(
            asked(who),
            if plain { vec!["read_file"] } else { vec![] },
            "{mode:?}"
        );
        let r = call(&ex, "write_file", r#"{"path":"b.txt","content":"b"}"#);
        assert!(r.success, "{mode:?}: {}", r.content);
        let expected: Vec<&str> = if sensitive {
            vec!["write_file"]
        } else {
            vec![]
        };
        assert_eq!(asked(who), expected, "{mode:?}");
    }
}

/// Every path under `dir` with its kind and bytes, hashed.
fn tree_hash(dir: &Path) -> String {
    let mut hasher = blake3::Hasher::new();
    let mut paths: Vec<_> = walk(dir);
    paths.sort();
    for path in paths {
        hasher.update(
            path.strip_prefix(dir)
                .expect("inside")
                .as_os_str()
                .as_encoded_bytes(),
        );
        if path.is_file() {
            hasher.update(&std::fs::read(&path).expect("read"));
        } else {
            hasher.update(b"/");
        }
    }
    hasher.finalize().to_hex().to_string()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

#[test]
fn a_dry_run_touches_nothing() {
    let ws = workspace();
    write(ws.path(), "a.txt", "one\ntwo\n");
    write(ws.path(), "src/lib.rs", "fn main() {}\n");
    let ex = executor(ws.path())
        .with_mode(Mode::ConfirmAll)
        .with_setting("allow_delete", true);
    let before = tree_hash(ws.path());
    let dry = CallOptions {
        context: CallContext {
            dry_run: true,
            ..CallContext::new()
        },
        ..CallOptions::default()
    };
    let calls = [
        ("write_file", r#"{"path":"new.txt","content":"x"}"#),
        ("write_file", r#"{"path":"a.txt","content":"replaced"}"#),
        (
            "edit_file",
            r#"{"path":"a.txt","old_str":"one","new_str":"ONE"}"#,
        ),
        ("delete_file", r#"{"path":"src/lib.rs"}"#),
        (
            "apply_patch",
            r#"{"patch":"*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"}"#,
        ),
        (
            "run_command",
            r#"{"command":"touch made.txt && rm a.txt && mkdir d"}"#,
        ),
    ];
    for (tool, args) in calls {
        let r = ex.call(tool, args, &dry);
        assert!(r.content.contains("[dry run]"), "{tool}: {}", r.content);
        assert_eq!(tree_hash(ws.path()), before, "{tool} changed the workspace");
    }
}

#[test]
fn a_profile_hides_tools_from_lookup_listing_and_schemas() {
    let ws = workspace();
    let profile = Profile {
        name: "reader".into(),
        tools: Some(vec!["read_file".into(), "grep".into()]),
        disabled: vec!["grep".into()],
    };
    let ex = executor(ws.path())
        .with_profile(profile)
        .expect("known tools");
    let tools = ex.tools();
    let names: Vec<&str> = tools.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["read_file"]);
    let r = call(&ex, "write_file", r#"{"path":"a","content":"b"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::NotFound));
    assert!(!ws.path().join("a").exists());
    // Near names never reveal a hidden tool.
    let r = call(&ex, "write_fil", "{}");
    assert!(!r.content.contains("write_file"), "{}", r.content);
    let r = call(&ex, "read_fil", "{}");
    assert!(
        r.content.contains("did you mean `read_file`"),
        "{}",
        r.content
    );
    assert_eq!(
        call(&ex, "grep", r#"{"pattern":"x"}"#).error_kind(),
        Some(ErrorKind::NotFound)
    );
    let all = ex
        .schemas::<&str>(None, SchemaFormat::Anthropic)
        .expect("schemas");
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["name"], "read_file");
    assert!(ex.schemas(Some(&["grep"]), SchemaFormat::Mcp).is_err());
    // A profile naming a tool that does not exist is refused with near names.
    let bad = Profile {
        name: "typo".into(),
        tools: Some(vec!["reed_file".into()]),
        disabled: vec![],
    };
    let err = executor(ws.path()).with_profile(bad).expect_err("unknown");
    assert!(
        err.to_string().contains("did you mean `read_file`"),
        "{err}"
    );
}

#[test]
fn schemas_refuse_unknown_names() {
    let ex = executor(workspace().path());
    let two = ex
        .schemas(Some(&["grep", "read_file"]), SchemaFormat::OpenAi)
        .expect("known");
    assert_eq!(two[0]["function"]["name"], "grep");
    let err = ex
        .schemas(Some(&["read_file", "nope"]), SchemaFormat::OpenAi)
        .expect_err("unknown");
    assert!(err.to_string().contains("no tool named `nope`"), "{err}");
    assert_eq!(
        ex.schemas::<&str>(None, SchemaFormat::Mcp)
            .expect("all")
            .len(),
        ex.tools().len()
    );
}

#[test]
fn a_description_override_changes_what_schemas_show_not_what_the_tool_may_do() {
    let ws = workspace();
    write(ws.path(), "a.txt", "a\n");
    let ex = executor(ws.path())
        .with_description("read_file", "Read one file of the project.")
        .expect("known");
    let schema = &ex
        .schemas(Some(&["read_file"]), SchemaFormat::Mcp)
        .expect("ok")[0];
    assert_eq!(schema["description"], "Read one file of the project.");
    assert_eq!(schema["annotations"]["readOnlyHint"], true);
    assert!(call(&ex, "read_file", r#"{"path":"a.txt"}"#).success);
    let r = call(&ex, "read_file", r#"{"path":"../outside"}"#);
    assert!(!r.success);
    assert!(executor(ws.path()).with_description("nope", "x").is_err());
}

#[test]
fn call_context_and_settings_reach_the_plugin_not_the_arguments() {
    let ws = workspace();
    let mut settings = serde_json::Map::new();
    settings.insert("greeting".into(), "hola".into());
    let ex = executor(ws.path())
        .with_grant("misbehave", Grant::none())
        .with_tool_settings("misbehave", settings);
    let options = CallOptions {
        context: CallContext {
            agent: Some("bot-7".into()),
            session: Some("s-1".into()),
            channel: Some("telegram".into()),
            chat: Some("chat-42".into()),
            ..CallContext::new()
        },
        ..CallOptions::default()
    };
    let r = ex.call("misbehave", r#"{"action":"context"}"#, &options);
    assert!(r.success, "{}", r.content);
    let seen: serde_json::Value = serde_json::from_str(&r.content).expect("json");
    assert_eq!(seen["agent"], "bot-7");
    assert_eq!(seen["session"], "s-1");
    assert_eq!(seen["channel"], "telegram");
    assert_eq!(seen["chat"], "chat-42");
    assert_eq!(seen["call_id"], options.context.call_id.as_str());
    assert_eq!(seen["greeting"], "hola");
}

fn with_hooks(ws: &Path, hooks: Vec<PostEditHook>) -> Executor {
    executor(ws).with_hooks(hooks).expect("hooks compile")
}

#[test]
fn a_failing_hook_appends_its_output_to_the_result() {
    let ws = workspace();
    let ex = with_hooks(
        ws.path(),
        vec![PostEditHook::new(
            "lint",
            "echo \"bad: $TOOLHOST_EDITED_FILE\"; echo arg={file} >&2; exit 3",
            &["*.txt"],
            10,
        )],
    );
    let r = call(&ex, "write_file", r#"{"path":"notes/a.txt","content":"x"}"#);
    assert!(r.success, "the edit itself succeeded: {}", r.content);
    assert!(
        r.content.contains(
            "[hook lint: failed (exit 3)] notes/a.txt\nbad: ./notes/a.txt\narg=./notes/a.txt\n"
        ),
        "{}",
        r.content
    );
    // A file the patterns do not match runs no hook.
    let r = call(&ex, "write_file", r#"{"path":"b.rs","content":"x"}"#);
    assert!(!r.content.contains("[hook"), "{}", r.content);
}

#[test]
fn hooks_that_pass_add_nothing_and_slow_ones_read_as_failures() {
    let ws = workspace();
    let ex = with_hooks(
        ws.path(),
        vec![
            PostEditHook::new(
                "fmt",
                "tr a-z A-Z < {file} > {file}.up && mv {file}.up {file}",
                &[],
                10,
            ),
            PostEditHook::new("slow", "sleep 30", &["*.md"], 1),
        ],
    );
    let r = call(&ex, "write_file", r#"{"path":"a.txt","content":"shout\n"}"#);
    assert!(!r.content.contains("[hook"), "{}", r.content);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "SHOUT\n"
    );
    let started = std::time::Instant::now();
    let r = call(&ex, "write_file", r#"{"path":"b.md","content":"x"}"#);
    assert!(
        r.content
            .contains("[hook slow: failed (timed out after 1s)] b.md"),
        "{}",
        r.content
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn a_file_name_cannot_inject_into_a_hook_command() {
    let ws = workspace();
    let ex = with_hooks(
        ws.path(),
        vec![PostEditHook::new("show", "cat {file}", &[], 10)],
    );
    let args = serde_json::json!({"path": "x'; touch pwned; echo '.txt", "content": "safe\n"});
    let r = call(&ex, "write_file", &args.to_string());
    assert!(r.success, "{}", r.content);
    assert!(
        !r.content.contains("[hook"),
        "cat of the literal name works: {}",
        r.content
    );
    assert!(!ws.path().join("pwned").exists());
    // Nor be read as an option by the hook's program.
    let r = call(
        &ex,
        "write_file",
        r#"{"path":"--version.txt","content":"x"}"#,
    );
    assert!(!r.content.contains("[hook"), "{}", r.content);
}

#[test]
fn audit_lines_parse_with_secrets_redacted_and_commands_classed() {
    let ws = workspace();
    write(ws.path(), "a.txt", "a\n");
    let log_dir = tempfile::tempdir().expect("tempdir");
    let log_path = log_dir.path().join("audit.jsonl");
    let ex = with_hooks(
        ws.path(),
        vec![PostEditHook::new("check", "test -s {file}", &[], 10)],
    )
    .with_audit(AuditLog::open(&log_path).expect("open"));
    let as_agent = CallOptions {
        context: CallContext {
            agent: Some("bot-1".into()),
            session: Some("s-9".into()),
            ..CallContext::new()
        },
        ..CallOptions::default()
    };
    ex.call("read_file", r#"{"path":"a.txt"}"#, &as_agent);
    call(
        &ex,
        "read_file",
        r#"{"path":"a.txt","api_token":"sk-live-123"}"#,
    );
    call(&ex, "run_command", r#"{"command":"echo hi"}"#);
    call(&ex, "run_command", r#"{"command":"rm -rf /"}"#);
    let long = "y".repeat(5000);
    call(
        &ex,
        "write_file",
        &serde_json::json!({"path": "b.txt", "content": long}).to_string(),
    );
    call(&ex, "nope", "{}");
    let text = std::fs::read_to_string(&log_path).expect("log");
    assert!(!text.contains("sk-live-123"), "{text}");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 6);
    let by_tool: BTreeMap<usize, &serde_json::Value> = lines.iter().enumerate().collect();
    let first = by_tool[&0];
    assert_eq!(first["tool"], "read_file");
    assert_eq!(first["agent"], "bot-1");
    assert_eq!(first["session"], "s-9");
    assert_eq!(first["outcome"], "success");
    assert_eq!(first["capabilities"], serde_json::json!(["workspace:read"]));
    assert!(first["duration_ms"].as_f64().expect("number") >= 0.0);
    assert!(first["time"].as_str().expect("time").ends_with('Z'));
    assert_eq!(by_tool[&1]["input"]["api_token"], "[redacted]");
    assert_eq!(by_tool[&1]["outcome"], "invalid_input");
    let ran = &by_tool[&2]["commands"][0];
    assert_eq!(ran["command"], "echo hi");
    assert_eq!(ran["class"], "safe");
    assert_eq!(ran["outcome"], "ran");
    assert_eq!(ran["exit_code"], 0);
    // What confined it, as the command's result said.
    let layers: Vec<&str> = ran["confinement"]
        .as_array()
        .expect("the confinement of a command that ran")
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    assert!(
        layers.iter().any(|c| c.starts_with("landlock-fs")) && layers.contains(&"no-new-privs"),
        "{layers:?}"
    );
    let refused = &by_tool[&3]["commands"][0];
    assert!(
        refused.get("confinement").is_none(),
        "refused before confinement"
    );
    assert_eq!(refused["outcome"], "denied");
    assert_eq!(by_tool[&3]["outcome"], "denied");
    let write = by_tool[&4];
    let content = write["input"]["content"].as_str().expect("cut");
    assert!(
        content.len() < 1000 && content.ends_with("more chars]"),
        "{content}"
    );
    assert_eq!(write["hooks"][0]["hook"], "check");
    assert_eq!(write["hooks"][0]["outcome"], "ok");
    assert_eq!(write["commands"][0]["command"], "test -s ./b.txt");
    assert_eq!(by_tool[&5]["outcome"], "not_found");
}

/// The agent tool contracts' `{name, input, output, error}`: every result echoes the
/// arguments it was called with, redacted and cut as the audit keeps them,
/// while the text the model reads does not repeat them.
#[test]
fn results_carry_their_input_redacted_and_cut() {
    let ws = workspace();
    write(ws.path(), "a.txt", "a\n");
    let ex = executor(ws.path()).with_mode(Mode::Yolo);
    let r = call(&ex, "read_file", r#"{"path":"a.txt"}"#);
    assert_eq!(r.input, Some(serde_json::json!({"path": "a.txt"})));
    let refused = call(&ex, "read_file", r#"{"path":"a.txt","password":"hunter2"}"#);
    assert_eq!(refused.error_kind(), Some(ErrorKind::InvalidInput));
    assert_eq!(
        refused.input,
        Some(serde_json::json!({"path": "a.txt", "password": "[redacted]"}))
    );
    let unknown = call(&ex, "no_such_tool", r#"{"x":1}"#);
    assert_eq!(unknown.input, Some(serde_json::json!({"x": 1})));
    assert_eq!(call(&ex, "read_file", "[1]").input, None, "not an object");
    let long = "z".repeat(50_000);
    let wrote = call(
        &ex,
        "write_file",
        &serde_json::json!({"path": "big.txt", "content": long}).to_string(),
    );
    assert!(wrote.success, "{}", wrote.content);
    let echoed = wrote.input.as_ref().expect("input")["content"]
        .as_str()
        .expect("content");
    assert!(
        echoed.len() < 1000 && echoed.ends_with("more chars]"),
        "{echoed}"
    );
    assert!(!wrote.content.contains("zzzz"), "{}", wrote.content);
    // The CLI's --json shows it too.
    let out = crate::support::call_cli(
        ws.path(),
        "read_file",
        &serde_json::json!({"path": "a.txt"}),
        &[],
    );
    assert_eq!(out["input"], serde_json::json!({"path": "a.txt"}), "{out}");
}

#[test]
fn hooks_run_only_for_existing_files_inside_the_workspace() {
    let ws = workspace();
    write(ws.path(), "a.txt", "a\n");
    let ex = with_hooks(
        ws.path(),
        vec![PostEditHook::new(
            "loud",
            "echo ran on {file}; exit 1",
            &[],
            10,
        )],
    )
    .with_grant("misbehave", Grant::none());
    for path in ["../a.txt", "/etc/passwd", "missing.txt"] {
        let args = serde_json::json!({"action": "report", "path": path}).to_string();
        let r = call(&ex, "misbehave", &args);
        assert!(r.success, "{}", r.content);
        assert!(!r.content.contains("[hook"), "{path}: {}", r.content);
    }
    let r = call(&ex, "misbehave", r#"{"action":"report","path":"./a.txt"}"#);
    assert!(
        r.content
            .contains("[hook loud: failed (exit 1)] a.txt\nran on ./a.txt"),
        "{}",
        r.content
    );
}

#[test]
fn reloading_plugins_swaps_the_tools_and_reports_changes() {
    let ws = workspace();
    let plugins = workspace();
    let ex = Executor::new(crate::support::runtime(), {
        let mut r = toolhost::Registry::new();
        r.load_builtins(&crate::support::runtime())
            .expect("built-ins");
        r
    })
    .with_workspace(ws.path())
    .expect("ws")
    .with_mode(Mode::Yolo)
    .with_plugin_dirs(vec![plugins.path().to_owned()])
    .with_description("grep", "Find text.")
    .expect("grep");
    let mut changes = ex.changes();
    let (changed, problems) = ex.reload_plugins().expect("reload");
    assert!(!changed && problems.is_empty(), "same tools: no change");
    assert!(!changes.has_changed().expect("sender alive"));
    std::fs::copy(
        crate::support::fixtures_dir().join("fixture_echo.wasm"),
        plugins.path().join("echo.wasm"),
    )
    .expect("copy");
    let (changed, _) = ex.reload_plugins().expect("reload");
    assert!(changed);
    assert!(changes.has_changed().expect("sender alive"));
    changes.mark_unchanged();
    assert!(call(&ex, "echo", r#"{"a":1}"#).success);
    // The description override survives the reload.
    let grep = ex.lookup("grep").expect("grep");
    assert_eq!(grep.info().description, "Find text.");
    std::fs::remove_file(plugins.path().join("echo.wasm")).expect("rm");
    assert!(ex.reload_plugins().expect("reload").0);
    assert!(changes.has_changed().expect("sender alive"));
    assert_eq!(
        call(&ex, "echo", "{}").error_kind(),
        Some(ErrorKind::NotFound)
    );
}
