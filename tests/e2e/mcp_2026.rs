//! MCP 2026-07-28 over HTTP, as a stateless client speaks it: no
//! `initialize` and no session, every request with its `_meta` and the
//! standard headers. State belongs to the credential; a confirmation is a
//! round trip (an input-required result answered by a retry) bound to its
//! caller and to the exact call.

use crate::mcp_http::{HttpServer, http_server, raw_with_head};
use crate::support::{self, workspace};
use serde_json::{Value, json};
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::time::Duration;

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef";

/// A server with two credentials, alice's and bob's.
fn two_users(ws: &Path, secret: &Path) -> HttpServer {
    use std::os::unix::fs::PermissionsExt as _;
    let tokens = secret.join("tokens");
    std::fs::write(&tokens, format!("{ALICE} alice\n{BOB} bob\n")).unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    http_server(ws, &["--token-file", tokens.to_str().unwrap()])
}

/// One stateless 2026-07-28 request as `token`: its HTTP head and its
/// JSON-RPC answer (from a JSON body or the event stream's last message).
fn request(server: &HttpServer, token: &str, method: &str, params: Value) -> (String, Value) {
    request_at(&server.addr, token, method, params)
}

/// One stateless 2026-07-28 request to the server at `addr` as `token`.
pub(crate) fn request_at(addr: &str, token: &str, method: &str, params: Value) -> (String, Value) {
    let caps = json!({"elicitation": {"form": {}}});
    request_with(addr, token, method, params, &caps)
}

/// The same from a client with capabilities `caps`.
pub(crate) fn request_with(
    addr: &str,
    token: &str,
    method: &str,
    params: Value,
    caps: &Value,
) -> (String, Value) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let bearer = format!("Bearer {token}");
    // Mcp-Name: the tool's name, the resource's URI, or the task's id.
    let name = params["name"]
        .as_str()
        .or(params["uri"].as_str())
        .or(params["taskId"].as_str())
        .unwrap_or("")
        .to_owned();
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Authorization", bearer.as_str()),
    ];
    if !name.is_empty() {
        headers.push(("Mcp-Name", name.as_str()));
    }
    let (status, head, body) = exchange(addr, &headers, &body);
    assert!(status == 200 || status == 400, "{status} {head}{body}");
    let answer = serde_json::from_str(last_message(&body))
        .unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {head}{body}"));
    (head, answer)
}

/// An answer's JSON-RPC message: the body, or the last message of an
/// event stream.
pub(crate) fn last_message(body: &str) -> &str {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| !d.is_empty())
        .unwrap_or(body.trim())
}

/// POST `body` to `/mcp` with `headers` and read the whole answer (a
/// stateless request's event stream ends with its response); the status,
/// the head and the body, de-chunked.
pub(crate) fn exchange(addr: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    try_exchange(addr, headers, body).unwrap()
}

/// [`exchange`], with what went wrong on the way instead of a panic.
pub(crate) fn try_exchange(
    addr: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<(u16, String, String)> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes())?;
    let mut data = Vec::new();
    stream.read_to_end(&mut data)?;
    let text = String::from_utf8_lossy(&data).into_owned();
    let (head, mut rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut body = String::new();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        while let Some((size, after)) = rest.split_once("\r\n") {
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 || after.len() < size {
                break;
            }
            body.push_str(&after[..size]);
            rest = after[size..].trim_start_matches("\r\n");
        }
    } else {
        body.push_str(rest);
    }
    Ok((status, head.to_owned(), body))
}

/// A tools/call as `token`, with `more` merged into its params.
fn call(server: &HttpServer, token: &str, tool: &str, args: Value, more: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Value::Object(more) = more {
        params.as_object_mut().unwrap().extend(more);
    }
    request(server, token, "tools/call", params).1
}

fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_2026_client_is_served_without_sessions_and_its_state_is_its_credentials() {
    let ws = workspace();
    let secret = workspace();
    let server = two_users(ws.path(), secret.path());
    let (head, found) = request(&server, ALICE, "server/discover", json!({}));
    let versions = found["result"]["supportedVersions"].to_string();
    assert!(
        versions.contains("2026-07-28") && versions.contains("2025-11-25"),
        "{found}"
    );
    assert!(
        !head.to_ascii_lowercase().contains("mcp-session-id"),
        "{head}"
    );

    let (_, listed) = request(&server, ALICE, "tools/list", json!({}));
    assert!(listed["result"]["tools"].as_array().unwrap().len() > 10);
    assert_eq!(
        listed["result"]["ttlMs"], 60_000,
        "{}",
        listed["result"]["ttlMs"]
    );
    assert_eq!(listed["result"]["cacheScope"], "private");

    // A background command started in one request is alice's in the next
    // ones, and only hers.
    let started = call(
        &server,
        ALICE,
        "run_command",
        json!({"command": "sleep 30", "background": true}),
        json!({}),
    );
    assert!(text(&started).contains("in the background as"), "{started}");
    let mine = call(
        &server,
        ALICE,
        "process",
        json!({"action": "list"}),
        json!({}),
    );
    assert!(text(&mine).contains("sleep 30"), "{mine}");
    let theirs = call(
        &server,
        BOB,
        "process",
        json!({"action": "list"}),
        json!({}),
    );
    assert!(!text(&theirs).contains("sleep 30"), "{theirs}");

    // Clients of the previous revision still open sessions beside them.
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"0"}}}"#;
    let bearer = format!("Bearer {ALICE}");
    let (status, head, body) = raw_with_head(
        &server.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", &bearer),
        ],
        init,
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("\"protocolVersion\":\"2025-11-25\""),
        "{body}"
    );
    assert!(
        head.to_ascii_lowercase().contains("mcp-session-id"),
        "{head}"
    );
}

#[test]
fn a_confirmation_is_a_round_trip_bound_to_its_caller_and_its_arguments() {
    let ws = workspace();
    let secret = workspace();
    // Not on any list: a dangerous command, which asks even in yolo mode.
    support::write(ws.path(), "confirm.sh", "echo ran >> marker.txt\n");
    let server = two_users(ws.path(), secret.path());
    let marker = ws.path().join("marker.txt");
    let args = json!({"command": "sh confirm.sh"});

    let asked = call(&server, ALICE, "run_command", args.clone(), json!({}));
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let question = &result["inputRequests"]["confirm"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    assert!(
        question["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("sh confirm.sh") && m.contains("dangerous")),
        "{question}"
    );
    let state = result["requestState"].as_str().unwrap().to_owned();
    assert!(!marker.exists(), "ran before anyone answered");

    let yes = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let answer = json!({"inputResponses": yes, "requestState": state});
    // Bob cannot answer alice's question, and alice cannot reuse it for
    // another command.
    let by_bob = call(&server, BOB, "run_command", args.clone(), answer.clone());
    assert_eq!(by_bob["error"]["code"], -32602, "{by_bob}");
    let changed = json!({"command": "sh confirm.sh; sh confirm.sh"});
    let other = call(&server, ALICE, "run_command", changed, answer.clone());
    assert_eq!(other["error"]["code"], -32602, "{other}");
    assert!(!marker.exists(), "a refused answer ran the command");

    let ran = call(&server, ALICE, "run_command", args.clone(), answer.clone());
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    assert!(text(&ran).contains("exit code 0"), "{ran}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");

    // The same answer again is a replay.
    let replay = call(&server, ALICE, "run_command", args.clone(), answer);
    assert_eq!(replay["error"]["code"], -32602, "{replay}");
    assert!(
        replay["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("answered already")),
        "{replay}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");

    // Declined: nothing runs, and the model is told.
    let asked = call(&server, ALICE, "run_command", args.clone(), json!({}));
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let no = json!({"confirm": {"action": "decline"}});
    let declined = call(
        &server,
        ALICE,
        "run_command",
        args,
        json!({"inputResponses": no, "requestState": state}),
    );
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert!(text(&declined).contains("declined"), "{declined}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
}

/// `subscriptions/listen` replaces the session's event stream: a client
/// subscribed to tool changes hears of a plugin added to the plugin
/// directory, and lists the new tool.
#[test]
fn a_subscription_hears_of_changed_tools() {
    let ws = workspace();
    let secret = workspace();
    let plugins = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_str().unwrap().to_owned();
    let tokens = secret.path().join("tokens");
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(&tokens, format!("{ALICE} alice\n")).unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let server = http_server(
        ws.path(),
        &[
            "--token-file",
            tokens.to_str().unwrap(),
            "--plugin-dir",
            &dir,
            "--reload-secs",
            "1",
        ],
    );
    let body = json!({
        "jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": {
            "notifications": {"toolsListChanged": true},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "listener", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string();
    let mut stream = std::net::TcpStream::connect(&server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nAuthorization: Bearer {ALICE}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut seen = String::new();
    let mut read_until = |what: &str, within: Duration| {
        let until = std::time::Instant::now() + within;
        let mut chunk = [0u8; 4096];
        while !seen.contains(what) {
            assert!(
                std::time::Instant::now() < until,
                "no `{what}` on the subscription: {seen}"
            );
            if let Ok(n) = stream.read(&mut chunk) {
                seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        }
    };
    read_until("subscriptionId", Duration::from_secs(10));
    std::fs::copy(
        support::fixtures_dir().join("fixture_echo.wasm"),
        plugins.path().join("echo.wasm"),
    )
    .unwrap();
    read_until("notifications/tools/list_changed", Duration::from_secs(90));
    let (_, listed) = request_as(&server, ALICE, "tools/list");
    assert!(listed.contains("\"echo\""), "{listed}");
}

/// A stateless request with no parameters as `token`: the raw answer.
fn request_as(server: &HttpServer, token: &str, method: &str) -> (String, String) {
    let (head, answer) = request(server, token, method, json!({}));
    (head, answer.to_string())
}

/// `/metrics` needs the token, and the Prometheus project's own parser
/// reads it: the calls counted add up to the calls made, by tool and
/// outcome, and so do the duration histograms.
#[test]
#[ignore = "needs python3 with the prometheus-client package (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
fn metrics_count_every_call_and_parse_as_openmetrics() {
    let python = std::env::var("TOOLHOST_INTEROP_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let ws = workspace();
    let secret = workspace();
    support::write(ws.path(), "a.txt", "hello\n");
    let server = two_users(ws.path(), secret.path());
    for _ in 0..3 {
        let ok = call(
            &server,
            ALICE,
            "read_file",
            json!({"path": "a.txt"}),
            json!({}),
        );
        assert_eq!(ok["result"]["isError"], false, "{ok}");
    }
    let missing = call(
        &server,
        BOB,
        "read_file",
        json!({"path": "nope.txt"}),
        json!({}),
    );
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    let listed = call(&server, ALICE, "list_dir", json!({}), json!({}));
    assert_eq!(listed["result"]["isError"], false, "{listed}");

    let (status, _, _) = raw_with_head(
        &server.addr,
        "GET",
        "/metrics",
        &[("Authorization", "")],
        "",
    );
    assert_eq!(status, 401, "metrics without the token");
    let bearer = format!("Bearer {ALICE}");
    let (status, head, text) = raw_with_head(
        &server.addr,
        "GET",
        "/metrics",
        &[("Authorization", &bearer), ("Host", "10.1.2.3:8080")],
        "",
    );
    assert_eq!(status, 200, "{head}{text}");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/parse_metrics.py");
    let mut parse = std::process::Command::new(&python)
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    parse
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = parse.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{python} could not parse /metrics (pip install prometheus-client==0.26.0, or run \
         without --include-ignored): {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let value = |name: &str, labels: &[(&str, &str)]| -> f64 {
        samples
            .iter()
            .filter(|s| s["name"] == name)
            .filter(|s| labels.iter().all(|(k, v)| s["labels"][*k] == *v))
            .map(|s| s["value"].as_f64().unwrap())
            .sum()
    };
    let read_ok = [("tool", "read_file"), ("outcome", "success")];
    assert_eq!(value("toolhost_calls_total", &read_ok), 3.0, "{text}");
    let read_missing = [("tool", "read_file"), ("outcome", "retry")];
    assert_eq!(value("toolhost_calls_total", &read_missing), 1.0, "{text}");
    assert_eq!(value("toolhost_calls_total", &[]), 5.0, "{text}");
    let read = [("tool", "read_file")];
    assert_eq!(value("toolhost_call_duration_seconds_count", &read), 4.0);
    assert_eq!(value("toolhost_call_duration_seconds_count", &[]), 5.0);
    assert_eq!(value("toolhost_principals", &[]), 2.0, "{text}");
    assert!(value("toolhost_resident_memory_bytes", &[]) > 1e6, "{text}");
    for family in [
        "toolhost_calls_in_flight",
        "toolhost_sessions",
        "toolhost_background_commands",
        "toolhost_compile_cache_hits_total",
        "toolhost_compiles_total",
        "toolhost_sandbox_spawn_seconds_count",
    ] {
        assert!(
            samples.iter().any(|s| s["name"] == family),
            "no {family}: {text}"
        );
    }
}

/// A call still running after two seconds becomes a task for a client
/// that takes tasks: polled with `tasks/get` (its credential's alone),
/// ended with its result, or cancelled; a client that does not take tasks
/// waits for the result.
#[test]
fn long_calls_become_tasks_polled_and_cancelled() {
    let ws = workspace();
    let secret = workspace();
    let server = two_users(ws.path(), secret.path());
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let call_as = |token: &str, command: &str, caps: &Value| {
        request_with(
            &server.addr,
            token,
            "tools/call",
            json!({"name": "run_command", "arguments": {"command": command, "timeout": 60}}),
            caps,
        )
        .1
    };
    let get = |token: &str, id: &str| {
        request_with(
            &server.addr,
            token,
            "tasks/get",
            json!({"taskId": id}),
            &tasks,
        )
        .1
    };

    let quick = call_as(ALICE, "echo quick", &tasks);
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    let started = call_as(ALICE, "sleep 3; echo task-done", &tasks);
    assert_eq!(started["result"]["resultType"], "task", "{started}");
    assert_eq!(started["result"]["status"], "working", "{started}");
    let id = started["result"]["taskId"].as_str().unwrap().to_owned();
    let by_bob = get(BOB, &id);
    assert_eq!(by_bob["error"]["code"], -32602, "{by_bob}");
    let until = std::time::Instant::now() + Duration::from_secs(30);
    let ended = loop {
        let now = get(ALICE, &id);
        if now["result"]["status"] != "working" {
            break now;
        }
        assert!(std::time::Instant::now() < until, "never ended: {now}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    let text = ended["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("task-done"), "{ended}");

    let long = call_as(ALICE, "sleep 60", &tasks);
    let id = long["result"]["taskId"].as_str().unwrap().to_owned();
    let cancelled = request_with(
        &server.addr,
        ALICE,
        "tasks/cancel",
        json!({"taskId": id}),
        &tasks,
    )
    .1;
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = get(ALICE, &id);
        if now["result"]["status"] == "cancelled" {
            break;
        }
        assert!(std::time::Instant::now() < until, "not cancelled: {now}");
        std::thread::sleep(Duration::from_millis(200));
    }

    // A background command is a task as long as it runs: its output and
    // exit code are the result; cancelling the task kills it.
    let background = |command: &str| {
        request_with(
            &server.addr,
            ALICE,
            "tools/call",
            json!({"name": "run_command", "arguments": {"command": command, "background": true}}),
            &tasks,
        )
        .1
    };
    let started = background("sleep 1; echo bg-task-line");
    assert_eq!(started["result"]["resultType"], "task", "{started}");
    let id = started["result"]["taskId"].as_str().unwrap().to_owned();
    let until = std::time::Instant::now() + Duration::from_secs(30);
    let ended = loop {
        let now = get(ALICE, &id);
        if now["result"]["status"] != "working" {
            break now;
        }
        assert!(std::time::Instant::now() < until, "never ended: {now}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = ended["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        text.contains("bg-task-line") && text.contains("exited with code 0"),
        "{ended}"
    );
    let forever = background("sleep 300");
    let id = forever["result"]["taskId"].as_str().unwrap().to_owned();
    request_with(
        &server.addr,
        ALICE,
        "tasks/cancel",
        json!({"taskId": id}),
        &tasks,
    );
    assert_eq!(get(ALICE, &id)["result"]["status"], "cancelled");
    // The command is killed off the protocol thread, within moments.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let listed = call(
            &server,
            ALICE,
            "process",
            json!({"action": "list"}),
            json!({}),
        );
        let lines = listed["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if lines
            .lines()
            .filter(|l| l.contains("sleep 300"))
            .all(|l| !l.contains("running"))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the cancelled task's command still runs: {lines}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Without the extension, the client waits for the result itself.
    let plain = call_as(ALICE, "sleep 3; echo waited", &json!({}));
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert!(
        plain["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("waited")
    );
}
