//! An application embedding toolhost (docs/embedding.md shows `embedder`
//! as it is here): it offers the services `message` and `spawn`, so the
//! built-ins of the same names are listed, and serves the tools over MCP;
//! an MCP client calls them and the application's handlers receive the
//! calls with their context.

use crate::support::{runtime, workspace};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};

// The example of docs/embedding.md, from here to its end marker.
use toolhost::services::{Service, ServiceCall, ServiceError, Services};
use toolhost::{Executor, Mode, Registry, Runtime};

/// The executor of an application whose `message` service keeps what tools
/// send in `outbox`, and whose `spawn` service answers for a sub-agent.
fn embedder(
    runtime: Arc<Runtime>,
    workspace: &Path,
    outbox: Arc<Mutex<Vec<Value>>>,
) -> Result<Executor, Box<dyn std::error::Error>> {
    let mut services = Services::new();
    services.register(Service::new(
        "message",
        "Send a message to the person, or to a channel or recipient.",
        json!({"type": "object", "required": ["content"], "properties": {
            "content": {"type": "string"},
            "channel": {"type": ["string", "null"]},
            "to": {"type": ["string", "null"]}}}),
        move |call: ServiceCall| {
            let outbox = Arc::clone(&outbox);
            async move {
                let mut sent = call.input;
                sent["session"] = json!(call.context.session);
                outbox
                    .lock()
                    .map_err(|_| ServiceError::Failed("the outbox is broken".into()))?
                    .push(sent);
                Ok(json!({"status": "sent"}))
            }
        },
    )?)?;
    services.register(Service::new(
        "spawn",
        "Hand a task to a sub-agent and return its result.",
        json!({"type": "object", "required": ["task"]}),
        |call: ServiceCall| async move {
            // A real application hands the task to its agent runtime here,
            // off this task (the call waits, bounded by its deadline), with
            // a limit on how deep sub-agents may nest.
            let task = call.input["task"].as_str().unwrap_or_default().to_owned();
            Ok(json!({"result": format!("sub-agent finished: {task}")}))
        },
    )?)?;
    let mut registry = Registry::new();
    registry.load_builtins(&runtime)?;
    Ok(Executor::new(runtime, registry)
        .with_workspace(workspace)?
        // The application confirms in its own way; here nothing asks.
        .with_mode(Mode::Yolo)
        .with_services(services))
}
// End of the example.

#[test]
fn an_embedders_services_reach_its_tools_through_mcp() {
    let ws = workspace();
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let executor = Arc::new(embedder(runtime(), ws.path(), Arc::clone(&outbox)).unwrap());
    let options = toolhost::mcp::ServeOptions::default();
    crate::support::with_http_client(Arc::clone(&executor), options, async |client| {
        let tools = client.list_all_tools().await.unwrap();
        let message = tools.iter().find(|t| t.name == "message").expect("listed");
        assert!(tools.iter().any(|t| t.name == "spawn"));
        let hints = message.annotations.as_ref().unwrap();
        assert_eq!(hints.read_only_hint, Some(false), "it acts outside");
        let instructions = client.peer_info().unwrap().instructions.clone().unwrap();
        assert!(
            instructions.contains("spawn hands a self-contained task"),
            "{instructions}"
        );

        let call = |name: &str, args: Value| {
            CallToolRequestParams::new(name.to_owned())
                .with_arguments(args.as_object().cloned().unwrap())
        };
        let sent = client
            .call_tool(call(
                "message",
                json!({"content": "the build is done", "to": "ana"}),
            ))
            .await
            .unwrap();
        assert_eq!(sent.is_error, Some(false), "{sent:?}");
        let report = client
            .call_tool(call("spawn", json!({"task": "summarise the logs"})))
            .await
            .unwrap();
        let said = report.content[0].as_text().expect("text").text.clone();
        assert!(
            said.contains("sub-agent finished: summarise the logs"),
            "{said}"
        );
        assert!(report.structured_content.is_none(), "the text alone, once");
        // An empty message is refused before the service is called.
        let refused = client
            .call_tool(call("message", json!({"content": "  "})))
            .await
            .unwrap();
        assert_eq!(refused.is_error, Some(true));
    });
    let outbox = outbox.lock().unwrap();
    assert_eq!(outbox.len(), 1, "{outbox:?}");
    assert_eq!(outbox[0]["content"], "the build is done");
    assert_eq!(outbox[0]["to"], "ana");
    assert!(
        outbox[0]["session"].is_string(),
        "the MCP session: {outbox:?}"
    );
}

/// Without an embedder's services the built-ins that need them are not
/// listed, and a call of one is refused saying which service is missing.
#[test]
fn without_the_services_message_and_spawn_are_not_offered() {
    let ws = workspace();
    let mut registry = Registry::new();
    registry.load_builtins(&runtime()).unwrap();
    let executor = Executor::new(runtime(), registry)
        .with_workspace(ws.path())
        .unwrap()
        .with_mode(Mode::Yolo);
    let names: Vec<String> = executor
        .tools()
        .iter()
        .map(|p| p.name().to_owned())
        .collect();
    assert!(!names.contains(&"message".to_owned()) && !names.contains(&"spawn".to_owned()));
    let r = crate::support::call(&executor, "message", r#"{"content":"hi"}"#);
    let error = r.error.unwrap();
    assert_eq!(error.kind, toolhost::ErrorKind::Denied);
    assert!(
        error.message.contains("service `message`") && error.message.contains("does not offer"),
        "{}",
        error.message
    );
}

/// docs/embedding.md shows the example above exactly.
#[test]
fn the_embedding_guide_shows_the_tested_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let source = std::fs::read_to_string(root.join("tests/e2e/embedding.rs")).unwrap();
    let start = source.find("use toolhost::services::{Service").unwrap();
    let end = source.find("// End of the example.").unwrap();
    let example = &source[start..end];
    let guide = std::fs::read_to_string(root.join("docs/embedding.md")).unwrap();
    assert!(
        guide.contains(&format!("```rust\n{example}```")),
        "docs/embedding.md does not show tests/e2e/embedding.rs's example as it is"
    );
}
