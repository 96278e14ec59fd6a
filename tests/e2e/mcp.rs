//! `toolhost serve` driven by rmcp's client, spawning the real binary: the
//! stdio flow, errors, concurrency, cancellation, confirmation through
//! elicitation, list_changed, roots, and the HTTP transport's checks.

use crate::support::{fixtures_dir, toolhost_command, workspace, write};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceError, ServiceExt as _};
use serde_json::{Value, json};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A test client: answers elicitation as told, offers roots, counts
/// `tools/list_changed` and `resources/list_changed`.
#[derive(Clone, Default)]
pub(crate) struct Client {
    /// `None`: no elicitation capability; `Some(yes)`: accept or decline.
    elicit: Option<bool>,
    asked: Arc<AtomicUsize>,
    /// The roots it offers; a test may change them (then it notifies).
    pub(crate) roots: Arc<std::sync::Mutex<Vec<String>>>,
    pub(crate) list_changed: Arc<tokio::sync::Notify>,
    /// Told on `notifications/resources/list_changed`.
    pub(crate) resources_changed: Arc<tokio::sync::Notify>,
    /// Every `notifications/message` received, in order.
    pub(crate) logs: Arc<std::sync::Mutex<Vec<Value>>>,
    /// Every progress notification received, in order.
    pub(crate) progress: Arc<std::sync::Mutex<Vec<ProgressNotificationParam>>>,
}

impl Client {
    /// A client offering these roots, and nothing else.
    pub(crate) fn with_roots(roots: Vec<String>) -> Self {
        Self {
            roots: Arc::new(std::sync::Mutex::new(roots)),
            ..Self::default()
        }
    }
}

impl ClientHandler for Client {
    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(if self.elicit == Some(true) {
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true}))
        } else {
            ElicitResult::new(ElicitationAction::Decline)
        })
    }

    #[expect(deprecated, reason = "roots, as toolhost negotiates 2025-11-25")]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        Ok(rmcp::model::ListRootsResult::new(
            self.roots
                .lock()
                .expect("roots")
                .iter()
                .map(|r| rmcp::model::Root::new(r.clone()))
                .collect(),
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.resources_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().expect("progress").push(params);
    }

    #[expect(deprecated, reason = "logging, as toolhost negotiates 2025-11-25")]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let line = serde_json::to_value(params).expect("a log line");
        self.logs.lock().expect("logs").push(line);
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = json!({});
        if self.elicit.is_some() {
            caps["elicitation"] = json!({});
        }
        if !self.roots.lock().expect("roots").is_empty() {
            caps["roots"] = json!({"listChanged": true});
        }
        let caps: ClientCapabilities = serde_json::from_value(caps).expect("capabilities");
        ClientConfig::new(caps, Implementation::new("e2e-client", "0"))
    }
}

pub(crate) type Session = RunningService<RoleClient, Client>;

/// `toolhost <args>` over stdio, with `client` connected.
pub(crate) async fn connect(cwd: &Path, args: &[&str], client: Client) -> Session {
    connect_command(toolhost_command(cwd, args), client).await
}

/// `command` (a `toolhost serve`) over stdio, with `client` connected.
pub(crate) async fn connect_command(command: std::process::Command, client: Client) -> Session {
    let command = tokio::process::Command::from(command);
    let transport = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn toolhost serve")
        .0;
    client.serve(transport).await.expect("initialize")
}

fn fixtures() -> String {
    fixtures_dir().display().to_string()
}

pub(crate) async fn call(
    session: &Peer<RoleClient>,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object");
    };
    session
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
}

pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// A read_file call that must succeed with `expected` in its text.
async fn read_ok(session: &Peer<RoleClient>, path: &str, expected: &str) -> CallToolResult {
    let r = call(session, "read_file", json!({"path": path}))
        .await
        .expect("a result");
    assert!(!is_error(&r) && text(&r).contains(expected), "{}", text(&r));
    r
}

/// A write_file call that must be refused with `why` and write nothing.
async fn refused_write(session: &Peer<RoleClient>, ws: &Path, why: &str) {
    let r = call(
        session,
        "write_file",
        json!({"path": "refused.txt", "content": "x"}),
    )
    .await
    .expect("a result");
    assert!(is_error(&r) && text(&r).contains(why), "{}", text(&r));
    assert!(!ws.join("refused.txt").exists());
}

/// initialize (done by the caller) → tools/list (schemas, annotations) →
/// read_file, grep, edit_file in `ws`; a tool error as isError; an unknown
/// tool as a protocol error. Both transports run it: `structured` when the
/// server runs with `--structured-output`.
pub(crate) async fn the_whole_flow(session: &Peer<RoleClient>, ws: &Path, structured: bool) {
    write(ws, "src/lib.rs", "fn alpha() {}\nfn beta() {}\n");
    let tools = session.list_all_tools().await.expect("tools/list");
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} listed"))
    };
    let read = find("read_file");
    assert_eq!(read.input_schema["type"], "object");
    assert!(read.input_schema["properties"]["path"].is_object());
    let hints = read.annotations.as_ref().expect("annotations");
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.destructive_hint, Some(false));
    let edit = find("edit_file");
    assert_eq!(
        edit.annotations.as_ref().and_then(|a| a.destructive_hint),
        Some(true)
    );
    assert_eq!(
        edit.output_schema.is_some(),
        structured,
        "edit_file's output schema is listed with --structured-output alone"
    );
    assert!(tools.iter().any(|t| t.name == "run_command"));

    let r = read_ok(session, "src/lib.rs", "fn alpha() {}").await;
    if structured {
        let data = r.structured_content.as_ref().expect("structured");
        assert_eq!(data["total_lines"], 2);
        assert_eq!(
            data["text"],
            text(&r),
            "a client reading fields alone reads the text"
        );
    } else {
        assert!(r.structured_content.is_none(), "the text alone, once");
    }
    let r = call(session, "grep", json!({"pattern": "fn beta"}))
        .await
        .expect("call");
    assert!(text(&r).contains("src/lib.rs"), "{}", text(&r));
    let r = call(
        session,
        "edit_file",
        json!({"path": "src/lib.rs", "old_str": "fn beta() {}", "new_str": "fn gamma() {}"}),
    )
    .await
    .expect("call");
    assert!(!is_error(&r), "{}", text(&r));
    let edited = std::fs::read_to_string(ws.join("src/lib.rs")).expect("read");
    assert_eq!(edited, "fn alpha() {}\nfn gamma() {}\n");

    let r = call(session, "read_file", json!({"path": "missing.txt"}))
        .await
        .expect("a result");
    assert!(
        is_error(&r) && text(&r).contains("`missing.txt` does not exist"),
        "{}",
        text(&r)
    );
    let r = call(session, "read_file", json!({"path": 7}))
        .await
        .expect("a result");
    assert!(
        is_error(&r) && text(&r).contains("`path` must be a string"),
        "{}",
        text(&r)
    );
    match call(session, "reed_file", json!({})).await {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602);
            assert!(
                e.message.contains("did you mean `read_file`"),
                "{}",
                e.message
            );
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_flow_over_stdio() {
    let ws = workspace();
    let dir = ws.path().display().to_string();
    let session = connect(
        ws.path(),
        &[
            "serve",
            "--workspace",
            &dir,
            "--mode",
            "yolo",
            "--structured-output",
        ],
        Client::default(),
    )
    .await;
    the_whole_flow(&session, ws.path(), true).await;
    session.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_elicitation_a_sensitive_call_is_refused_with_the_way_out() {
    let ws = workspace();
    let dir = ws.path().display().to_string();
    let session = connect(
        ws.path(),
        &["serve", "--workspace", &dir],
        Client::default(),
    )
    .await;
    refused_write(&session, ws.path(), "--mode yolo").await;
    session.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_calls_each_get_their_own_answer() {
    let ws = workspace();
    let dir = ws.path().display().to_string();
    let plugins = fixtures();
    let session = connect(
        ws.path(),
        &["serve", "--workspace", &dir, "--plugin-dir", &plugins],
        Client::default(),
    )
    .await;
    let peer = session.peer().clone();
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let peer = peer.clone();
            tokio::spawn(async move {
                let Value::Object(args) = json!({"i": i, "pad": "x".repeat(i % 17)}) else {
                    unreachable!()
                };
                let r = peer
                    .call_tool(CallToolRequestParams::new("echo").with_arguments(args.clone()))
                    .await
                    .expect("answered");
                (Value::Object(args), r)
            })
        })
        .collect();
    let mut answered = 0;
    for task in tasks {
        let (sent, r) = task.await.expect("task");
        let back: Value = serde_json::from_str(&text(&r)).expect("echo returns JSON");
        assert_eq!(back, sent, "an answer matches its request");
        answered += 1;
    }
    assert_eq!(answered, 200);
    session.cancel().await.expect("close");
}

/// A configuration with one call at a time and a long deadline: a call that
/// is not really stopped by cancellation would hold the only slot.
fn one_at_a_time(dir: &Path) -> PathBuf {
    let path = dir.join("serve.toml");
    std::fs::write(
        &path,
        "mode = \"yolo\"\n[limits]\nmax_concurrent_calls = 1\ntimeout_secs = 120\n",
    )
    .expect("write config");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_stops_and_the_next_one_is_answered() {
    let ws = workspace();
    let conf = workspace();
    let config = one_at_a_time(conf.path());
    let dir = ws.path().display().to_string();
    let plugins = fixtures();
    let session = connect(
        ws.path(),
        &[
            "--config",
            config.to_str().expect("utf-8"),
            "serve",
            "--workspace",
            &dir,
            "--plugin-dir",
            &plugins,
        ],
        Client::default(),
    )
    .await;
    // Dropping the request future sends notifications/cancelled.
    let looped = tokio::time::timeout(
        Duration::from_millis(300),
        call(&session, "misbehave", json!({"action": "loop"})),
    )
    .await;
    assert!(looped.is_err(), "the loop never answers by itself");
    let started = Instant::now();
    let r = call(&session, "echo", json!({"after": "loop"}))
        .await
        .expect("answered");
    assert_eq!(text(&r), r#"{"after":"loop"}"#);
    // The loop's deadline is 120 s: an answer within seconds means the
    // instance was interrupted (the bench measures ~5 ms for this).
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the loop held the only slot: it was not interrupted ({:?})",
        started.elapsed()
    );
    // A brokered process is killed too.
    let marker = format!("sleep 7{}", std::process::id() % 1000);
    let slept = tokio::time::timeout(
        Duration::from_millis(500),
        call(&session, "run_command", json!({"command": marker})),
    )
    .await;
    assert!(slept.is_err());
    let r = call(&session, "echo", json!({"after": "sleep"}))
        .await
        .expect("answered");
    assert!(!is_error(&r));
    let deadline = Instant::now() + Duration::from_secs(5);
    while still_running(&marker) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !still_running(&marker),
        "`{marker}` outlived its cancelled call"
    );
    session.cancel().await.expect("close");
}

fn still_running(command: &str) -> bool {
    std::process::Command::new("pgrep")
        .args(["-f", command])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Read JSON-RPC lines from `stdout` until the response with `id`; every
/// line must be a JSON-RPC message.
fn frames_until(lines: &mut impl Iterator<Item = std::io::Result<String>>, id: u64) -> Value {
    loop {
        let line = lines
            .next()
            .expect("the server answers before closing")
            .expect("utf-8");
        let frame: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}"));
        assert_eq!(frame["jsonrpc"], "2.0", "not a JSON-RPC frame: {line}");
        if frame["id"] == id {
            return frame;
        }
    }
}

#[test]
fn a_plugin_printing_to_stdout_does_not_break_the_stream() {
    let ws = workspace();
    let dir = ws.path().display().to_string();
    let plugins = fixtures();
    let mut server = RawServer::start(
        ws.path(),
        &[
            "serve",
            "--workspace",
            &dir,
            "--plugin-dir",
            &plugins,
            "--mode",
            "yolo",
        ],
    );
    let printed = server.call(2, "misbehave", json!({"action": "print", "lines": 5000}));
    assert_eq!(
        printed["result"]["content"][0]["text"],
        "printed 5000 lines"
    );
    let echoed = server.call(3, "echo", json!({"still": "framed"}));
    assert_eq!(
        echoed["result"]["content"][0]["text"],
        r#"{"still":"framed"}"#
    );
    // Closing stdin ends the server; nothing but frames came before.
    server.close();
}

/// `toolhost serve` over stdio, spoken to frame by frame, initialized.
pub(crate) struct RawServer {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl RawServer {
    pub(crate) fn start(cwd: &Path, args: &[&str]) -> Self {
        use std::io::BufRead as _;
        let mut child = toolhost_command(cwd, args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        let stdin = child.stdin.take();
        let lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut server = Self {
            child,
            stdin,
            lines,
        };
        server.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        );
        frames_until(&mut server.lines, 1);
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, frame: Value) {
        use std::io::Write as _;
        let stdin = self.stdin.as_mut().expect("open");
        writeln!(stdin, "{frame}").expect("send");
        stdin.flush().expect("flush");
    }

    /// `tools/call` of `tool` as request `id`; the answer.
    pub(crate) fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments}}),
        );
        frames_until(&mut self.lines, id)
    }

    /// Close stdin; every line left is a frame, and the server exits 0.
    pub(crate) fn close(mut self) {
        drop(self.stdin.take());
        for line in self.lines.by_ref() {
            let line = line.expect("utf-8");
            assert!(serde_json::from_str::<Value>(&line).is_ok(), "{line:?}");
        }
        assert!(self.child.wait().expect("exit").success());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirmation_goes_through_elicitation() {
    let ws = workspace();
    let dir = ws.path().display().to_string();
    let yes = Client {
        elicit: Some(true),
        ..Client::default()
    };
    let asked = Arc::clone(&yes.asked);
    let session = connect(ws.path(), &["serve", "--workspace", &dir], yes).await;
    let r = call(
        &session,
        "write_file",
        json!({"path": "a.txt", "content": "yes"}),
    )
    .await
    .expect("a result");
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    // Reading is not sensitive: nobody is asked.
    call(&session, "read_file", json!({"path": "a.txt"}))
        .await
        .expect("a result");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    session.cancel().await.expect("close");

    let no = Client {
        elicit: Some(false),
        ..Client::default()
    };
    let session = connect(ws.path(), &["serve", "--workspace", &dir], no).await;
    refused_write(&session, ws.path(), "declined").await;
    session.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_plugin_is_announced_with_list_changed() {
    let (ws, plugins) = (workspace(), workspace());
    let client = Client::default();
    let session = serve_watching(ws.path(), plugins.path(), &[], client.clone()).await;
    let before = session.list_all_tools().await.expect("list");
    assert!(!before.iter().any(|t| t.name == "echo"));
    drop_in(plugins.path(), "fixture_echo.wasm", &client).await;
    let after = session.list_all_tools().await.expect("list");
    assert!(after.iter().any(|t| t.name == "echo"));
    let r = call(&session, "echo", json!({"new": true}))
        .await
        .expect("answered");
    assert_eq!(text(&r), r#"{"new":true}"#);
    session.cancel().await.expect("close");
}

/// `toolhost serve` watching `plugins` every second, with `extra` flags.
async fn serve_watching(ws: &Path, plugins: &Path, extra: &[&str], client: Client) -> Session {
    let (dir, plugin_dir) = (ws.display().to_string(), plugins.display().to_string());
    let mut args = vec![
        "serve",
        "--workspace",
        &dir,
        "--plugin-dir",
        &plugin_dir,
        "--reload-secs",
        "1",
    ];
    args.extend_from_slice(extra);
    connect(ws, &args, client).await
}

/// Copy the fixture `file` into `plugins` once the watcher has looked at
/// it, and wait for the server to announce it.
async fn drop_in(plugins: &Path, file: &str, client: &Client) {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let changed = client.list_changed.notified();
    std::fs::copy(fixtures_dir().join(file), plugins.join(file)).expect("copy");
    tokio::time::timeout(Duration::from_secs(60), changed)
        .await
        .expect("tools/list_changed within 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_root_is_the_workspace_when_none_is_configured() {
    let ws = workspace();
    let elsewhere = workspace();
    write(ws.path(), "notes.txt", "from the root\n");
    let uri = url::Url::from_directory_path(ws.path())
        .expect("uri")
        .to_string();
    let client = Client::with_roots(vec!["https://example.com/not-local".into(), uri]);
    let session = connect(elsewhere.path(), &["serve"], client).await;
    read_ok(&session, "notes.txt", "from the root").await;
    session.cancel().await.expect("close");
}

/// The roots change: calls afterwards use the new first root; a root that
/// cannot be granted (`/`) changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workspace_follows_the_clients_roots() {
    let first = workspace();
    let second = workspace();
    let elsewhere = workspace();
    write(first.path(), "a.txt", "in the first\n");
    write(second.path(), "b.txt", "in the second\n");
    let uri = |p: &Path| url::Url::from_directory_path(p).expect("uri").to_string();
    let client = Client::with_roots(vec![uri(first.path())]);
    let roots = Arc::clone(&client.roots);
    let session = connect(elsewhere.path(), &["serve"], client).await;
    read_ok(&session, "a.txt", "in the first").await;

    // A root toolhost may not grant is refused; the workspace stays.
    *roots.lock().expect("roots") = vec!["file:///".into()];
    session.notify_roots_list_changed().await.expect("notify");
    tokio::time::sleep(Duration::from_millis(500)).await;
    read_ok(&session, "a.txt", "in the first").await;

    *roots.lock().expect("roots") = vec![uri(second.path())];
    session.notify_roots_list_changed().await.expect("notify");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let r = call(&session, "read_file", json!({"path": "b.txt"}))
            .await
            .expect("a result");
        if !is_error(&r) {
            assert!(text(&r).contains("in the second"), "{}", text(&r));
            break;
        }
        assert!(
            Instant::now() < until,
            "the new root was never followed: {}",
            text(&r)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let old = call(&session, "read_file", json!({"path": "a.txt"}))
        .await
        .expect("a result");
    assert!(
        is_error(&old),
        "the old workspace is still used: {}",
        text(&old)
    );
    session.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_leave_a_configured_workspace_alone() {
    let ws = workspace();
    let root = workspace();
    write(ws.path(), "mine.txt", "configured\n");
    write(root.path(), "theirs.txt", "root\n");
    let uri = url::Url::from_directory_path(root.path())
        .expect("uri")
        .to_string();
    let client = Client::with_roots(vec![uri]);
    let dir = ws.path().display().to_string();
    let session = connect(ws.path(), &["serve", "--workspace", &dir], client).await;
    read_ok(&session, "mine.txt", "configured").await;
    let r = call(&session, "read_file", json!({"path": "theirs.txt"}))
        .await
        .expect("a result");
    assert!(is_error(&r), "{}", text(&r));
    session.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_connection_is_its_own_session() {
    let ws = workspace();
    let dir = ws.path().display().to_string();
    let args = [
        "serve",
        "--workspace",
        dir.as_str(),
        "--mode",
        "yolo",
        "--structured-output",
    ];
    let first = connect(ws.path(), &args, Client::default()).await;
    let plan =
        json!({"items": [{"content": "Ship", "activeForm": "Shipping", "status": "in_progress"}]});
    let r = call(&first, "todo_manager", plan).await.expect("a result");
    assert!(!is_error(&r), "{}", text(&r));
    let second = connect(ws.path(), &args, Client::default()).await;
    let r = call(&second, "todo_manager", json!({}))
        .await
        .expect("a result");
    assert_eq!(
        r.structured_content.expect("structured")["items"],
        json!([])
    );
    let r = call(&first, "todo_manager", json!({}))
        .await
        .expect("a result");
    assert_eq!(
        r.structured_content.expect("structured")["currentItem"]["content"],
        "Ship"
    );
    first.cancel().await.expect("close");
    second.cancel().await.expect("close");
}

/// A call of `tool`; the result, and the progress notifications `client`
/// received while it ran. (rmcp's client puts a progress token of its own
/// on every request.)
pub(crate) async fn call_with_progress(
    session: &Peer<RoleClient>,
    client: &Client,
    tool: &str,
    args: Value,
) -> (CallToolResult, Vec<ProgressNotificationParam>) {
    client.progress.lock().expect("progress").clear();
    let result = call(session, tool, args).await.expect("a result");
    let before = client.progress.lock().expect("progress").clone();
    // Nothing may follow the result.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = client.progress.lock().expect("progress").len();
    assert_eq!(before.len(), after, "progress came after the result");
    (result, before)
}

/// A long command sends its output lines as progress, and a quiet one a
/// heartbeat, both with growing values.
pub(crate) async fn progress_flow(session: &Peer<RoleClient>, client: &Client) {
    let cases = [
        (
            "for i in 1 2 3 4 5 6; do echo step $i; sleep 0.5; done",
            "step ",
        ),
        // Quiet: a heartbeat within 5 s.
        ("sleep 5", "running for"),
    ];
    for (command, needle) in cases {
        let (result, notes) =
            call_with_progress(session, client, "run_command", json!({"command": command})).await;
        assert!(!is_error(&result), "{}", text(&result));
        assert!(
            notes
                .iter()
                .any(|n| n.message.as_deref().is_some_and(|m| m.contains(needle))),
            "`{command}`: no progress saying {needle:?}: {notes:?}"
        );
        assert!(
            notes.windows(2).all(|w| w[1].progress > w[0].progress),
            "progress must grow: {notes:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_calls_report_progress_over_stdio() {
    let ws = workspace();
    let dir = ws.path().display().to_string();
    let client = Client::default();
    let session = connect(
        ws.path(),
        &["serve", "--workspace", &dir, "--mode", "yolo"],
        client.clone(),
    )
    .await;
    progress_flow(&session, &client).await;
    session.cancel().await.expect("close");
}

/// A `--grant` for a tool that is not there yet applies when its plugin is
/// dropped into the plugin directory of a running server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_waits_for_its_tool_to_be_dropped_in() {
    let (ws, plugins) = (workspace(), workspace());
    let client = Client::default();
    let grant = ["--mode", "yolo", "--grant", "misbehave=workspace:write"];
    let session = serve_watching(ws.path(), plugins.path(), &grant, client.clone()).await;
    drop_in(plugins.path(), "fixture_misbehave.wasm", &client).await;
    let r = call(
        &session,
        "misbehave",
        json!({"action": "write", "path": "granted.txt", "content": "yes"}),
    )
    .await
    .expect("answered");
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("granted.txt")).expect("written"),
        "yes"
    );
    session.cancel().await.expect("close");
}

/// The persona is offered over MCP: each file as a resource
/// (`toolhost://persona/SOUL.md`) and all of them as the `persona` prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_persona_is_a_resource_and_a_prompt() {
    let ws = workspace();
    let home = workspace();
    let soul = home.path().join("soul");
    std::fs::create_dir_all(&soul).expect("soul");
    std::fs::write(soul.join("SOUL.md"), "I am patient and precise.\n").expect("soul");
    std::fs::write(soul.join("IDENTITY.md"), "Name: Ada.\n").expect("id");
    let config = home.path().join("persona.toml");
    std::fs::write(
        &config,
        format!("soul_dir = {:?}\n", soul.display().to_string()),
    )
    .expect("config");
    let config = config.display().to_string();
    let session = connect(
        ws.path(),
        &["--config", &config, "serve"],
        Client::default(),
    )
    .await;
    let listed = session.list_all_resources().await.expect("resources/list");
    let uris: Vec<String> = listed.iter().map(|r| r.uri.clone()).collect();
    assert!(
        uris.contains(&"toolhost://persona/SOUL.md".to_owned()),
        "{uris:?}"
    );
    assert!(
        uris.contains(&"toolhost://persona/IDENTITY.md".to_owned()),
        "{uris:?}"
    );
    assert!(
        !uris.iter().any(|u| u.ends_with("GOALS.md")),
        "no GOALS.md yet: {uris:?}"
    );
    let read = session
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "toolhost://persona/SOUL.md",
        ))
        .await
        .expect("resources/read");
    let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("not text: {read:?}");
    };
    assert_eq!(text, "I am patient and precise.\n");
    let missing = session
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "toolhost://persona/GOALS.md",
        ))
        .await;
    assert!(missing.is_err(), "{missing:?}");
    let prompts = session.list_all_prompts().await.expect("prompts/list");
    assert!(prompts.iter().any(|p| p.name == "persona"), "{prompts:?}");
    let prompt = session
        .get_prompt(rmcp::model::GetPromptRequestParams::new("persona"))
        .await
        .expect("prompts/get");
    let said = serde_json::to_string(&prompt.messages).expect("json");
    assert!(
        said.contains("I am patient and precise.") && said.contains("Name: Ada."),
        "{said}"
    );
    session.cancel().await.expect("close");
}
