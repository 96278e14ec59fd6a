use super::*;
use serde_json::json;

fn args(value: Value) -> Args {
    serde_json::from_value(value).expect("valid arguments")
}

fn js(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Count the words of a text the caller gives.",
        "kind": "javascript",
        "source": "function run(a) { return a.text.split(/\\s+/).length }",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
    })
}

fn agent(name: &str) -> Context {
    Context::default()
        .with_agent(name)
        .with_setting("max_per_agent", 2)
        .with_setting("reserved_names", json!(["read_file"]))
}

#[test]
fn a_tool_is_stored_pending() {
    let store = tempfile::tempdir().unwrap();
    let out = create(args(js("count_words")), &agent("bot"), store.path()).unwrap();
    let id = out.structured().unwrap()["id"].as_str().unwrap().to_owned();
    assert!(out.content().contains("PENDING"), "{}", out.content());
    assert!(
        out.content()
            .contains(&format!("toolhost dynamic approve {id}"))
    );
    let meta: Meta = serde_json::from_str(
        &std::fs::read_to_string(store.path().join(&id).join(META_FILE)).unwrap(),
    )
    .unwrap();
    assert_eq!(meta.status, Status::Pending);
    assert_eq!(meta.created_by.as_deref(), Some("bot"));
    assert_eq!(meta.scope, "all");
    assert!(meta.grant.is_none());
    let source = std::fs::read_to_string(store.path().join(&id).join("source.js")).unwrap();
    assert!(source.contains("function run"));
}

/// A typescript tool is stored as the JavaScript its types leave (what is
/// reviewed and runs) with the TypeScript beside it; warnings are about
/// the JavaScript; a syntax error is refused with its line, and nothing
/// is left in the store.
#[test]
fn a_typescript_tool_is_stored_as_javascript_with_its_typescript() {
    let store = tempfile::tempdir().unwrap();
    let mut ts = js("shout");
    ts["kind"] = json!("typescript");
    ts["source"] = json!(
        "interface Args { text: string }\nfunction run(args: Args): string {\n  \
         return eval(args.text as string).toUpperCase();\n}\n"
    );
    let out = create(args(ts.clone()), &agent("bot"), store.path()).unwrap();
    let id = out.structured().unwrap()["id"].as_str().unwrap().to_owned();
    let dir = store.path().join(&id);
    let js = std::fs::read_to_string(dir.join("source.js")).unwrap();
    assert!(
        js.contains("function run(args)") && !js.contains("interface"),
        "{js}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("source.ts")).unwrap(),
        ts["source"].as_str().unwrap()
    );
    let meta: Meta =
        serde_json::from_str(&std::fs::read_to_string(dir.join(META_FILE)).unwrap()).unwrap();
    assert_eq!(meta.kind, Kind::Typescript);
    assert!(
        meta.warnings.iter().any(|w| w.contains("eval")),
        "{:?}",
        meta.warnings
    );

    ts["name"] = json!("broken");
    ts["source"] = json!("function run(args: Args) {\n  return args.;\n}\n");
    let err = create(args(ts), &agent("bot"), store.path()).unwrap_err();
    assert!(err.to_string().contains("line 2:"), "{err}");
    assert_eq!(std::fs::read_dir(store.path()).unwrap().count(), 1);
}

#[test]
fn refusals_say_what_to_fix() {
    let store = tempfile::tempdir().unwrap();
    let ctx = agent("bot");
    let refused = |value: Value, needle: &str| {
        let err = create(args(value.clone()), &ctx, store.path()).unwrap_err();
        assert!(err.to_string().contains(needle), "{value}: {err}");
    };
    refused(js("read_file"), "reserved or already a tool");
    refused(js("create_tool"), "reserved");
    refused(js("CountWords"), "snake_case");
    let mut bad = js("bad_schema");
    bad["parameters"] = json!({"type": "object", "properties": {"x": {"type": "strng"}}});
    refused(bad, "not a valid JSON Schema");
    let mut bad = js("bad_pattern");
    bad["parameters"] =
        json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "(["}}});
    refused(bad, "not a valid JSON Schema");
    let mut bad = js("remote_ref");
    bad["parameters"] =
        json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}});
    refused(bad, "not a valid JSON Schema");
    let mut bad = js("hidden_text");
    bad["description"] = json!("Counts words.\u{202E} Also deletes everything.");
    refused(bad, "invisible");
    let mut bad = js("no_object");
    bad["parameters"] = json!({"type": "string"});
    refused(bad, "\"type\": \"object\"");
    let mut bad = js("empty_source");
    bad["source"] = json!("  ");
    refused(bad, "empty");
    let mut bad = js("net_js");
    bad["capabilities"] = json!(["network:example.com"]);
    refused(bad, "not a capability a javascript tool");
    // No kind may ask for one of the host's directories (the memory, the
    // store itself): only a person grants those.
    let component = json!({
        "name": "dir_grab", "description": "A component that wants the memory directory.",
        "kind": "component", "source": "tool.wasm", "capabilities": ["dir:memory:write"],
    });
    refused(component, "not a capability a component tool");
    let bad = json!({
        "name": "spliced", "description": "Show the log of one path in the repo.",
        "kind": "command", "source": ["git", "log", "--author={{who}}"],
        "parameters": {"type": "object", "properties": {"who": {"type": "string"}},
                       "required": ["who"]},
    });
    refused(bad, "whole item");
    let bad = json!({
        "name": "optional_flag", "description": "Show the last commits, maybe fewer.",
        "kind": "command", "source": ["git", "log", "-n", "{{count}}"],
        "parameters": {"type": "object", "properties": {"count": {"type": "integer"}}},
    });
    refused(bad, "parameters.required");
    // Nothing was left behind by any refusal.
    assert_eq!(std::fs::read_dir(store.path()).unwrap().count(), 0);
}

#[test]
fn names_are_unique_and_each_agent_has_a_cap() {
    let store = tempfile::tempdir().unwrap();
    let bot = agent("bot");
    create(args(js("one")), &bot, store.path()).unwrap();
    let err = create(args(js("one")), &agent("other"), store.path()).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    create(args(js("two")), &bot, store.path()).unwrap();
    let err = create(args(js("three")), &bot, store.path()).unwrap_err();
    assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
    assert!(err.to_string().contains("limit is 2 per agent"), "{err}");
    // Another agent has its own count.
    create(args(js("three")), &agent("other"), store.path()).unwrap();
}

#[test]
fn command_templates_are_stored_as_json() {
    let store = tempfile::tempdir().unwrap();
    let out = create(
        args(json!({
            "name": "git_log", "description": "Show the last commits touching one path.",
            "kind": "command", "source": ["git", "log", "-n", "{{count}}", "--", "{{path}}"],
            "parameters": {"type": "object", "properties": {
                "count": {"type": "integer"}, "path": {"type": "string"}},
                "required": ["count", "path"]},
        })),
        &agent("bot"),
        store.path(),
    )
    .unwrap();
    let id = out.structured().unwrap()["id"].as_str().unwrap().to_owned();
    let meta: Meta = serde_json::from_str(
        &std::fs::read_to_string(store.path().join(&id).join(META_FILE)).unwrap(),
    )
    .unwrap();
    assert_eq!(meta.capabilities, vec!["commands".to_owned()]);
    let template: Vec<String> = serde_json::from_str(
        &std::fs::read_to_string(store.path().join(&id).join("template.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(template[3], "{{count}}");
}

#[test]
fn a_component_asks_for_real_host_names_only() {
    use crate::checks::check_capabilities;
    use toolhost_builtin::dynamic::Kind;
    assert!(check_capabilities(Kind::Component, vec!["network:api.example.com".into()]).is_ok());
    for bad in [
        "network:x\u{202E}",
        "network:host:8080",
        "network:*.example.com",
        "network:",
    ] {
        let err = check_capabilities(Kind::Component, vec![bad.into()]).unwrap_err();
        assert!(
            err.to_string().contains("is not a capability"),
            "{bad}: {err}"
        );
    }
}
