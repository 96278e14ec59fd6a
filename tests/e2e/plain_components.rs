//! Plain WIT components (no toolhost SDK, no toolhost WIT) as tools: the
//! fixture tests/fixtures/fixture_plain is built with wit-bindgen alone
//! and exports functions over a record, a variant, an enum, flags, an
//! option, a list, a tuple and a result. `toolhost check` shows the
//! derived schemas (checked here against the expected JSON Schemas), and
//! an MCP client lists and calls them: valid input gives the structured
//! output, invalid input `invalid_input` naming the field, an error result
//! a tool error, and files only through a grant.

use crate::mcp::{Client, call, connect, is_error, text};
use crate::support::{
    fixtures_dir, json, stderr, stdout, toolhost, toolhost_full, workspace, write,
};
use serde_json::{Value, json};
use std::path::Path;

/// A plugin directory holding the plain fixture as `inventory.wasm`.
fn plugin_dir() -> tempfile::TempDir {
    let dir = workspace();
    let from = fixtures_dir().join("plain/fixture_plain.wasm");
    std::fs::copy(&from, dir.path().join("inventory.wasm")).expect("copy the plain fixture");
    dir
}

fn item_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64},
            "price": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "count", "tags"],
        "additionalProperties": false,
    })
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object", "properties": properties, "required": required,
        "additionalProperties": false,
    })
}

#[test]
fn check_shows_one_tool_per_function_with_the_derived_schemas() {
    let plugins = plugin_dir();
    let file = plugins.path().join("inventory.wasm");
    let out = toolhost(
        plugins.path(),
        &["check", "--json", &file.display().to_string()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let tools = report[0]["plain_tools"].as_array().expect("plain tools");
    let by_name = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {tools:?}"))
            .clone()
    };
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "inventory_count_lines",
            "inventory_env_var",
            "inventory_find",
            "inventory_greet",
            "inventory_label",
            "inventory_restock",
            "inventory_swap",
            "inventory_total"
        ]
    );

    let total = by_name("inventory_total");
    let pick = json!({"oneOf": [
        object(json!({"by-name": {"type": "string"}}), &["by-name"]),
        object(json!({"by-index": {"type": "integer", "minimum": 0, "maximum": 65535}}), &["by-index"]),
        {"const": "everything"},
    ]});
    let expected_input = object(
        json!({
            "items": {"type": "array", "items": item_schema()},
            "pick": pick,
            "unit": {"type": "string", "enum": ["pieces", "dozens"]},
        }),
        &["items", "pick", "unit"],
    );
    assert_eq!(total["input_schema"], expected_input);
    // result<u64, string>: the success type, under `value`.
    let u64_schema = json!({"type": "integer", "minimum": 0, "maximum": u64::MAX});
    assert_eq!(
        total["output_schema"],
        object(json!({"value": u64_schema}), &["value"])
    );

    let label = by_name("inventory_label");
    let style = json!({"type": "array", "uniqueItems": true,
        "items": {"type": "string", "enum": ["upper", "reversed"]}});
    assert_eq!(
        label["input_schema"],
        object(
            json!({"item": item_schema(), "style": style}),
            &["item", "style"]
        )
    );

    let find = by_name("inventory_find");
    let maybe_item = json!({"anyOf": [item_schema(), {"type": "null"}]});
    assert_eq!(
        find["output_schema"],
        object(json!({"value": maybe_item}), &["value"])
    );

    // A record result is the output as it is.
    let restock = by_name("inventory_restock");
    assert_eq!(restock["output_schema"], item_schema());

    let swap = by_name("inventory_swap");
    let char_schema = json!({"type": "string", "minLength": 1, "maxLength": 1});
    let s8 = json!({"type": "integer", "minimum": -128, "maximum": 127});
    assert_eq!(
        swap["input_schema"]["properties"]["pair"],
        json!({"type": "array", "prefixItems": [s8, char_schema], "items": false,
               "minItems": 2, "maxItems": 2})
    );
    // Only what the imports can use is asked for: files (Rust's std imports
    // wasi:filesystem), never commands; and the variable it declares.
    for tool in tools {
        assert_eq!(
            tool["capabilities"],
            json!(["workspace:write", "env:INVENTORY_TOKEN"]),
            "{tool}"
        );
    }
}

/// A result's structured content without the `text` member toolhost's MCP
/// server adds to every tool's.
fn structured(result: &rmcp::model::CallToolResult) -> Value {
    let mut value = result.structured_content.clone().unwrap_or(Value::Null);
    if let Some(object) = value.as_object_mut() {
        object.remove("text");
    }
    value
}

async fn serve(ws: &Path, plugins: &Path, grant: Option<&str>) -> crate::mcp::Session {
    let (dir, plugins) = (ws.display().to_string(), plugins.display().to_string());
    let mut args = vec![
        "serve",
        "--workspace",
        &dir,
        "--plugin-dir",
        &plugins,
        "--mode",
        "yolo",
        // Its tests read the results' fields.
        "--structured-output",
    ];
    if let Some(grant) = grant {
        args.extend(["--grant", grant]);
    }
    let session = connect(ws, &args, Client::default()).await;
    // On a first start the component is compiled in the background, and
    // its tools are added when it is.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let listed = session.list_all_tools().await.expect("tools/list");
        if listed.iter().any(|t| t.name == "inventory_total") {
            return session;
        }
        assert!(
            std::time::Instant::now() < until,
            "the plain component never loaded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_lists_and_calls_a_plain_component() {
    let plugins = plugin_dir();
    calls_over_mcp(plugins.path()).await;
}

/// The inventory component in `plugins`, listed and called over MCP.
async fn calls_over_mcp(plugins: &Path) {
    let ws = workspace();
    let session = serve(ws.path(), plugins, None).await;
    let listed = session.list_all_tools().await.expect("tools/list");
    let total = listed
        .iter()
        .find(|t| t.name == "inventory_total")
        .expect("inventory_total is listed");
    assert!(total.output_schema.is_some(), "{total:?}");
    assert!(
        listed.iter().any(|t| t.name == "read_file"),
        "the built-ins stay"
    );

    let items = json!([
        {"name": "egg", "count": 30, "tags": ["fresh"]},
        {"name": "nut", "count": 6, "price": 1.25, "tags": []},
    ]);
    let done = call(
        &session,
        "inventory_total",
        json!({"items": items, "pick": "everything", "unit": "dozens"}),
    )
    .await
    .expect("a call");
    assert!(!is_error(&done), "{done:?}");
    assert_eq!(structured(&done), json!({"value": 3}));

    let by_name = json!({"items": items, "pick": {"by-name": "nut"}, "unit": "pieces"});
    let nut = call(&session, "inventory_total", by_name)
        .await
        .expect("a call");
    assert_eq!(structured(&nut), json!({"value": 6}));

    // An error result is a tool error with its text.
    let none = json!({"items": items, "pick": {"by-name": "kiwi"}, "unit": "pieces"});
    let failed = call(&session, "inventory_total", none)
        .await
        .expect("a call");
    assert!(is_error(&failed), "{failed:?}");
    assert!(
        text(&failed).contains("nothing was picked"),
        "{}",
        text(&failed)
    );

    // Invalid input names the field.
    let bad = json!({"items": [{"name": "egg", "count": "many", "tags": []}], "pick": "everything", "unit": "pieces"});
    let refused = call(&session, "inventory_total", bad)
        .await
        .expect("a call");
    assert!(is_error(&refused), "{refused:?}");
    let said = text(&refused);
    assert!(
        said.contains("invalid_input") && said.contains("items[0].count"),
        "{said}"
    );
    let bad_case = json!({"items": items, "pick": {"by-colour": "red"}, "unit": "pieces"});
    let refused = call(&session, "inventory_total", bad_case)
        .await
        .expect("a call");
    assert!(
        is_error(&refused) && text(&refused).contains("pick"),
        "{}",
        text(&refused)
    );

    // An option, a record, flags, a tuple and a char come back as JSON.
    let found = call(
        &session,
        "inventory_find",
        json!({"items": items, "name": "nut"}),
    )
    .await
    .expect("a call");
    assert_eq!(
        structured(&found),
        json!({"value": {"name": "nut", "count": 6, "price": 1.25, "tags": []}})
    );
    let missing = call(
        &session,
        "inventory_find",
        json!({"items": [], "name": "nut"}),
    )
    .await
    .expect("a call");
    assert_eq!(structured(&missing), json!({"value": null}));
    let label = json!({"item": {"name": "egg", "count": 2, "tags": []}, "style": ["upper"]});
    let labelled = call(&session, "inventory_label", label)
        .await
        .expect("a call");
    assert_eq!(text(&labelled), "EGG X2");
    let swapped = call(
        &session,
        "inventory_swap",
        json!({"pair": [-7, "é"], "flag": false}),
    )
    .await
    .expect("a call");
    assert_eq!(structured(&swapped), json!({"value": ["é", -7, true]}));
    let more = json!({"item": {"name": "egg", "count": 2, "tags": ["x"]}, "more": 10});
    let restocked = call(&session, "inventory_restock", more)
        .await
        .expect("a call");
    assert_eq!(
        structured(&restocked),
        json!({"name": "egg", "count": 12, "tags": ["x"]})
    );
    let hello = call(&session, "inventory_greet", json!({"name": "Ada"}))
        .await
        .expect("a call");
    assert_eq!(text(&hello), "hello, Ada");
    session.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_component_reads_files_only_when_granted() {
    let ws = workspace();
    write(ws.path(), "notes.txt", "one\ntwo\nthree\n");
    let plugins = plugin_dir();
    let session = serve(ws.path(), plugins.path(), None).await;
    let denied = call(
        &session,
        "inventory_count_lines",
        json!({"path": "notes.txt"}),
    )
    .await
    .expect("a call");
    assert!(
        is_error(&denied),
        "nothing granted, nothing seen: {denied:?}"
    );
    session.cancel().await.expect("close");

    let granted = Some("inventory_count_lines=workspace:read");
    let session = serve(ws.path(), plugins.path(), granted).await;
    let counted = call(
        &session,
        "inventory_count_lines",
        json!({"path": "notes.txt"}),
    )
    .await
    .expect("a call");
    assert_eq!(structured(&counted), json!({"value": 3}), "{counted:?}");
    // The grant is the workspace only: nothing outside it.
    let outside = call(
        &session,
        "inventory_count_lines",
        json!({"path": "/etc/passwd"}),
    )
    .await
    .expect("a call");
    assert!(is_error(&outside), "{outside:?}");
    session.cancel().await.expect("close");
}

/// `toolhost ARGS` with the user's data directory at `data` (where
/// secrets are kept), `stdin` and extra `env`.
fn toolhost_at(
    ws: &Path,
    data: &Path,
    args: &[&str],
    stdin: &str,
    env: &[(&str, &str)],
) -> std::process::Output {
    let mut all: Vec<(&str, &std::ffi::OsStr)> = vec![("XDG_DATA_HOME", data.as_os_str())];
    all.extend(env.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(v))));
    toolhost_full(ws, args, stdin, &all)
}

#[test]
fn a_secret_reaches_a_tool_that_declares_it_when_granted_and_never_leaves() {
    use std::os::unix::fs::PermissionsExt as _;
    // Quotes and a backslash: JSON and debug lines escape them.
    const SECRET: &str = r#"s3cr3t"va\lue-42"#;
    const ESCAPED: &str = r#"s3cr3t\"va\\lue-42"#;
    let ws = workspace();
    let data = workspace();
    let plugins = plugin_dir();
    let plugin_dir = plugins.path().display().to_string();
    let audit = ws.path().join("audit.jsonl");
    let audit_arg = audit.display().to_string();

    let set = ["secret", "set", "inventory_env_var", "INVENTORY_TOKEN"];
    let out = toolhost_at(ws.path(), data.path(), &set, &format!("{SECRET}\n"), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = data.path().join("toolhost/secrets/inventory_env_var.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let listed = toolhost_at(ws.path(), data.path(), &["secret", "list"], "", &[]);
    assert_eq!(stdout(&listed), "inventory_env_var: INVENTORY_TOKEN\n");

    let call_with = |grant: Option<&str>, var: &str| {
        let args_json = format!(r#"{{"name":"{var}"}}"#);
        let mut args = vec!["--plugin-dir", &plugin_dir, "--audit", &audit_arg];
        if let Some(grant) = grant {
            args.extend(["--grant", grant]);
        }
        args.extend(["call", "inventory_env_var", &args_json, "--json"]);
        // The host has a variable of the same name: the secret wins.
        let env = [
            ("INVENTORY_TOKEN", "from-the-host"),
            ("TOOLHOST_LOG", "debug"),
        ];
        toolhost_at(ws.path(), data.path(), &args, "", &env)
    };
    // Declared, not granted: nothing.
    let out = call_with(None, "INVENTORY_TOKEN");
    assert_eq!(
        json(&out)["structured"]["value"],
        Value::Null,
        "{}",
        stdout(&out)
    );
    // Declared and granted: the secret, which no output shows.
    let out = call_with(
        Some("inventory_env_var=env:INVENTORY_TOKEN"),
        "INVENTORY_TOKEN",
    );
    assert_eq!(
        json(&out)["structured"]["value"],
        "[secret INVENTORY_TOKEN]",
        "{}",
        stdout(&out)
    );
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("read INVENTORY_TOKEN"),
        "the tool's stderr is logged: {said}"
    );
    assert!(
        !said.contains(SECRET) && !said.contains(ESCAPED),
        "the secret leaked: {said}"
    );
    // Granted but not declared: nothing, whatever the host holds.
    let out = call_with(Some("inventory_env_var=env:HOME"), "HOME");
    assert_eq!(
        json(&out)["structured"]["value"],
        Value::Null,
        "{}",
        stdout(&out)
    );
    let audited = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(audited.lines().count(), 3, "{audited}");
    assert!(
        !audited.contains(SECRET) && !audited.contains(ESCAPED),
        "{audited}"
    );

    let removed = toolhost_at(
        ws.path(),
        data.path(),
        &["secret", "remove", "inventory_env_var", "INVENTORY_TOKEN"],
        "",
        &[],
    );
    assert!(removed.status.success(), "{}", stderr(&removed));
    // Without the secret, the host's own variable.
    let out = call_with(
        Some("inventory_env_var=env:INVENTORY_TOKEN"),
        "INVENTORY_TOKEN",
    );
    assert_eq!(json(&out)["structured"]["value"], "from-the-host");
}

/// The inventory written in JavaScript (componentize-js, from npm),
/// built into `out`.
fn build_javascript(out: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/plain/javascript");
    let work = tempfile::tempdir().unwrap();
    for file in ["package.json", "build.mjs", "inventory.js"] {
        std::fs::copy(source.join(file), work.path().join(file)).unwrap();
    }
    crate::support::run_in(
        work.path(),
        "npm",
        &["install", "--no-audit", "--no-fund", "--loglevel=error"],
    );
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/fixture_plain/wit");
    crate::support::run_in(
        work.path(),
        "node",
        &["build.mjs", out.to_str().unwrap(), wit.to_str().unwrap()],
    );
}

/// The inventory written in Python (componentize-py, from PyPI), built
/// into `out`.
fn build_python(out: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/plain/python");
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(source.join("app.py"), src.join("app.py")).unwrap();
    let venv = work.path().join("venv");
    crate::support::run_in(
        work.path(),
        "python3",
        &["-m", "venv", venv.to_str().unwrap()],
    );
    let pip = venv.join("bin/pip");
    crate::support::run_in(
        work.path(),
        pip.to_str().unwrap(),
        &["install", "-q", "componentize-py==0.25.1"],
    );
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/fixture_plain/wit");
    let componentize = venv.join("bin/componentize-py");
    crate::support::run_in(
        work.path(),
        componentize.to_str().unwrap(),
        &[
            "-d",
            wit.to_str().unwrap(),
            "-w",
            "inventory",
            "componentize",
            "app",
            "-p",
            src.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
}

/// The names and schemas `toolhost check --json` derives for `file`.
fn derived(file: &Path) -> Vec<Value> {
    let out = toolhost(
        file.parent().unwrap(),
        &["check", "--json", file.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let mut tools: Vec<Value> = json(&out)[0]["plain_tools"]
        .as_array()
        .expect("plain tools")
        .iter()
        .map(|t| json!({"name": t["name"], "input": t["input_schema"], "output": t["output_schema"]}))
        .collect();
    tools.sort_by_key(|t| t["name"].to_string());
    tools
}

/// The same WIT implemented without any toolhost SDK in JavaScript and in
/// Python: the same tools and schemas as the Rust component, and the same
/// answers over MCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs npm (componentize-js) and PyPI (componentize-py); .ci/run runs it"]
async fn javascript_and_python_components_are_tools_like_the_rust_one() {
    let rust = plugin_dir();
    let expected = derived(&rust.path().join("inventory.wasm"));
    let (js, py) = (workspace(), workspace());
    let (js_wasm, py_wasm) = (
        js.path().join("inventory.wasm"),
        py.path().join("inventory.wasm"),
    );
    std::thread::scope(|scope| {
        scope.spawn(|| build_javascript(&js_wasm));
        scope.spawn(|| build_python(&py_wasm));
    });
    for (language, wasm) in [("JavaScript", &js_wasm), ("Python", &py_wasm)] {
        // componentize-py's own `exports` interface is no tool.
        assert_eq!(derived(wasm), expected, "{language}");
        calls_over_mcp(wasm.parent().unwrap()).await;
    }
}

/// `wasm` with a `package-docs` custom section holding `docs` appended, as
/// Wassette's wit-docs-inject adds the WIT doc comments to a component.
fn with_package_docs(wasm: &[u8], docs: &Value) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                break;
            }
        }
    }
    let name = b"package-docs";
    let mut payload = Vec::new();
    leb(name.len(), &mut payload);
    payload.extend_from_slice(name);
    payload.push(1);
    payload.extend(docs.to_string().bytes());
    let mut out = wasm.to_vec();
    out.push(0);
    leb(payload.len(), &mut out);
    out.extend(payload);
    out
}

#[test]
fn descriptions_come_from_the_wit_doc_comments_a_component_carries() {
    let plugins = plugin_dir();
    let file = plugins.path().join("inventory.wasm");
    let docs = json!({
        "package": "example:inventory@0.1.0",
        "worlds": {"inventory": {"func_exports": {"greet": {"docs": "Say hello to someone."}}}},
        "interfaces": {"shelf": {"funcs": {
            "total": {"docs": "Count the items picked, in pieces or dozens. Fails when nothing is picked."},
        }}},
    });
    let wasm = std::fs::read(&file).expect("the fixture");
    std::fs::write(&file, with_package_docs(&wasm, &docs)).expect("write");
    let out = toolhost(
        plugins.path(),
        &["check", "--json", &file.display().to_string()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let description = |name: &str| {
        report[0]["plain_tools"]
            .as_array()
            .expect("plain tools")
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))["description"]
            .as_str()
            .expect("a description")
            .to_owned()
    };
    assert_eq!(description("inventory_greet"), "Say hello to someone.");
    assert_eq!(
        description("inventory_total"),
        "Count the items picked, in pieces or dozens. Fails when nothing is picked."
    );
    // A function the docs say nothing of keeps the description made for it.
    assert!(
        description("inventory_label").contains("shelf@0.1.0#label"),
        "{}",
        description("inventory_label")
    );
    // And the component still loads and runs with the section in it.
    let out = toolhost(
        plugins.path(),
        &[
            "--plugin-dir",
            &plugins.path().display().to_string(),
            "call",
            "inventory_greet",
            r#"{"name":"Ada"}"#,
        ],
    );
    assert_eq!(stdout(&out).trim(), "hello, Ada", "{}", stderr(&out));
}

/// A plain function's output is held to the output limit like any tool's:
/// structured output over it is dropped and the text cut, each saying so.
#[test]
fn a_plain_result_over_the_output_limit_is_cut_and_says_so() {
    let plugins = plugin_dir();
    let config = plugins.path().join("limits.toml");
    std::fs::write(&config, "[limits]\nmax_output_bytes = 1000\n").expect("config");
    let long = "n".repeat(5_000);
    let item = json!({"name": long, "count": 1, "tags": []});
    let call = |tool: &str, args: &Value| {
        let out = toolhost(
            plugins.path(),
            &[
                "--config",
                &config.display().to_string(),
                "--plugin-dir",
                &plugins.path().display().to_string(),
                "call",
                tool,
                &args.to_string(),
                "--json",
            ],
        );
        json(&out)
    };
    let restocked = call("inventory_restock", &json!({"item": item, "more": 1}));
    assert_eq!(restocked["success"], true, "{restocked}");
    assert_eq!(restocked["structured"], Value::Null, "{restocked}");
    let content = restocked["content"].as_str().expect("content");
    assert!(content.contains("[output cut: "), "{content}");
    assert!(content.len() < 1_200, "{} bytes", content.len());
    // Under the limit, nothing is cut.
    let small = json!({"name": "nut", "count": 1, "tags": []});
    let restocked = call("inventory_restock", &json!({"item": small, "more": 1}));
    assert_eq!(restocked["structured"]["count"], 2, "{restocked}");
    assert!(
        !restocked["content"]
            .as_str()
            .unwrap_or_default()
            .contains("[output cut")
    );
}
