//! One definition of "sensitive": for every built-in, what `tools` and
//! `describe` show, the dry run, the MCP annotations and whether step 3
//! asks a person all come from the same `Sensitivity`.

use crate::support::{json, runtime, toolhost, workspace, write};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use toolhost::schema::SchemaFormat;
use toolhost::{
    CallContext, CallOptions, ConfirmRequest, Confirmer, Decision, ErrorKind, Executor, Mode,
    Registry, Sensitivity,
};

/// What each built-in can change with its default grant, and arguments
/// that pass its schema.
const BUILTINS: &[(&str, Sensitivity, &str)] = &[
    ("read_file", Sensitivity::ReadOnly, r#"{"path":"a.txt"}"#),
    ("list_files", Sensitivity::ReadOnly, r#"{}"#),
    ("list_dirs", Sensitivity::ReadOnly, r#"{}"#),
    ("list_dir", Sensitivity::ReadOnly, r#"{}"#),
    ("find_files", Sensitivity::ReadOnly, r#"{"pattern":"*"}"#),
    ("grep", Sensitivity::ReadOnly, r#"{"pattern":"x"}"#),
    ("search_code", Sensitivity::ReadOnly, r#"{"pattern":"x"}"#),
    ("get_datetime", Sensitivity::ReadOnly, r#"{}"#),
    (
        "validate_output",
        Sensitivity::ReadOnly,
        r#"{"outputType":"summary","schema":{"type":"object"},"data":{}}"#,
    ),
    ("memory_search", Sensitivity::ReadOnly, r#"{"query":"x"}"#),
    (
        "memory_get",
        Sensitivity::ReadOnly,
        r#"{"path":"2026-01-01.md"}"#,
    ),
    ("todo_manager", Sensitivity::OwnState, r#"{}"#),
    ("react", Sensitivity::OwnState, r#"{"thought":"x"}"#),
    (
        "save_memory",
        Sensitivity::OwnState,
        r#"{"fact":"the sky is blue"}"#,
    ),
    (
        "update_soul",
        Sensitivity::OwnState,
        r#"{"content":"Be brief."}"#,
    ),
    (
        "update_identity",
        Sensitivity::OwnState,
        r#"{"name":"Ada"}"#,
    ),
    (
        "manage_goals",
        Sensitivity::OwnState,
        r#"{"action":"list"}"#,
    ),
    (
        "web_fetch",
        Sensitivity::OwnState,
        r#"{"url":"http://127.0.0.1:9/"}"#,
    ),
    (
        "create_tool",
        Sensitivity::OwnState,
        r#"{"name":"say_hello","description":"Says hello to the person it is given.","kind":"javascript","source":"function run(a){return 'hi'}","parameters":{"type":"object"}}"#,
    ),
    (
        "run_command",
        Sensitivity::Commands,
        r#"{"command":"true"}"#,
    ),
    ("process", Sensitivity::Commands, r#"{"action":"list"}"#),
    (
        "write_file",
        Sensitivity::Writes,
        r#"{"path":"b.txt","content":"b"}"#,
    ),
    ("delete_file", Sensitivity::Writes, r#"{"path":"a.txt"}"#),
    (
        "edit_file",
        Sensitivity::Writes,
        r#"{"path":"a.txt","old_str":"x","new_str":"y"}"#,
    ),
    (
        "multi_edit",
        Sensitivity::Writes,
        r#"{"path":"a.txt","edits":[{"old_str":"x","new_str":"y"}]}"#,
    ),
    (
        "apply_patch",
        Sensitivity::Writes,
        r#"{"patch":"*** Begin Patch\n*** End Patch"}"#,
    ),
];

/// What a person was asked about: (tool, the arguments shown).
type Asked = Arc<Mutex<Vec<(String, serde_json::Value)>>>;

/// Records what a person is asked about, and declines it all.
struct Recorder(Asked);

impl Confirmer for Recorder {
    fn confirm(&self, request: &ConfirmRequest<'_>) -> Decision {
        self.0
            .lock()
            .unwrap()
            .push((request.tool.to_owned(), request.args.clone()));
        Decision::Deny
    }
}

/// The built-ins with the state directories the CLI's default
/// configuration gives them.
fn executor(ws: &Path, state: &Path, mode: Mode, asked: &Asked) -> Executor {
    let mut registry = Registry::new();
    registry.load_builtins(&runtime()).expect("built-ins load");
    std::fs::create_dir_all(state.join("schemas")).unwrap();
    Executor::new(runtime(), registry)
        .with_workspace(ws)
        .unwrap()
        .with_mode(mode)
        .with_state_dir("todo", state.join("todo"))
        .with_state_dir("web_cache", state.join("web_cache"))
        .with_state_dir("memory", state.join("memory"))
        .with_state_dir("soul", state.join("soul"))
        .with_state_dir("react", state.join("react"))
        .with_state_dir("schemas", state.join("schemas"))
        .with_dynamic_store(toolhost::dynamic::Store::new(state.join("dynamic")))
        .with_confirmer(Box::new(Recorder(Arc::clone(asked))))
}

#[test]
fn every_surface_agrees_for_every_builtin() {
    let ws = workspace();
    let state = workspace();
    write(ws.path(), "a.txt", "x\n");
    let asked_about: Asked = Arc::default();
    let ex = executor(
        ws.path(),
        state.path(),
        Mode::ConfirmSensitive,
        &asked_about,
    );
    let listed: Vec<String> = ex.tools().iter().map(|p| p.name().to_owned()).collect();
    let mut table: Vec<&str> = BUILTINS.iter().map(|(n, _, _)| *n).collect();
    table.sort_unstable();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, table, "every built-in has a row here");

    let annotations: BTreeMap<String, serde_json::Value> = ex
        .schemas::<&str>(None, SchemaFormat::Mcp)
        .unwrap()
        .into_iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["annotations"].clone(),
            )
        })
        .collect();
    for &(name, expected, args) in BUILTINS {
        let plugin = ex.lookup(name).unwrap();
        let s = ex.sensitivity(&plugin);
        assert_eq!(s, expected, "{name}: the rule gives {s}");
        // MCP annotations.
        let a = &annotations[name];
        assert_eq!(a["readOnlyHint"], s.read_only(), "{name}: {a}");
        assert_eq!(a["destructiveHint"], s.destructive(), "{name}: {a}");
        // The dry run (a tool that runs commands is called instead, with
        // the broker describing each command).
        if s != Sensitivity::Commands {
            let dry = ex.call(
                name,
                args,
                &CallOptions {
                    context: CallContext {
                        dry_run: true,
                        ..CallContext::new()
                    },
                    ..CallOptions::default()
                },
            );
            let shown = dry
                .structured
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: {dry:?}"));
            assert_eq!(shown["sensitivity"], s.as_str(), "{name}: {shown}");
            assert_eq!(shown["sensitive"], s.is_sensitive(), "{name}: {shown}");
        }
    }
}

// Step 3 asks a person about the call itself exactly when the rule says, in
// every mode (commands a tool runs are asked about separately, by the broker).
#[test]
fn confirmation_follows_the_rule_in_every_mode() {
    for mode in [Mode::Yolo, Mode::ConfirmSensitive, Mode::ConfirmAll] {
        let ws = workspace();
        let state = workspace();
        write(ws.path(), "a.txt", "x\n");
        let asked_about: Asked = Arc::default();
        let ex = executor(ws.path(), state.path(), mode, &asked_about);
        for &(name, expected, args) in BUILTINS {
            asked_about.lock().unwrap().clear();
            let result = ex.call(name, args, &CallOptions::default());
            let parsed: serde_json::Value = serde_json::from_str(args).unwrap();
            let asked = asked_about
                .lock()
                .unwrap()
                .iter()
                .any(|(t, a)| t == name && *a == parsed);
            assert_eq!(
                asked,
                expected.needs_confirmation(mode),
                "{name} in {mode:?}: asked {asked}, {result:?}"
            );
            // In yolo every tool runs, and the placeholder edits may miss;
            // the other modes show that the arguments pass the schema.
            if mode != Mode::Yolo {
                assert_ne!(
                    result.error_kind(),
                    Some(ErrorKind::InvalidInput),
                    "{name}: {result:?}"
                );
            }
            if asked {
                assert_eq!(result.error_kind(), Some(ErrorKind::Denied), "{name}");
            }
        }
    }
}

#[test]
fn the_cli_shows_the_same_sensitivity_in_tools_and_describe() {
    let ws = workspace();
    let listed = json(&toolhost(ws.path(), &["tools", "--json"]));
    let listed = listed.as_array().expect("an array");
    assert!(listed.len() >= BUILTINS.len(), "{listed:?}");
    for &(name, expected, _) in BUILTINS {
        let row = listed
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        assert_eq!(row["sensitivity"], expected.as_str(), "tools: {row}");
        assert_eq!(row["sensitive"], expected.is_sensitive(), "tools: {row}");
        let described = json(&toolhost(ws.path(), &["describe", name, "--json"]));
        assert_eq!(
            described["sensitivity"],
            expected.as_str(),
            "describe: {described}"
        );
        assert_eq!(
            described["sensitive"],
            expected.is_sensitive(),
            "describe: {described}"
        );
    }
}
