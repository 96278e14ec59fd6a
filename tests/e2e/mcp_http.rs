//! `toolhost serve --http`: the same flow over streamable HTTP, and the
//! transport's own checks (Host, Origin, token, public addresses).

use crate::commands::{processes_with, wait_until};
use crate::mcp::{Client, call, is_error, progress_flow, text, the_whole_flow};
use crate::support::{toolhost_command, workspace};
use rmcp::ServiceExt as _;
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;
use std::io::{BufRead as _, Read as _, Write as _};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A `toolhost serve --http 127.0.0.1:0` process and its address.
pub(crate) struct HttpServer {
    child: std::process::Child,
    pub(crate) addr: String,
    /// What it printed before it served (the review page's sign-in link).
    pub(crate) banner: Vec<String>,
}

impl HttpServer {
    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status, once it exits within `within`.
    fn exit_within(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let until = std::time::Instant::now() + within;
        while std::time::Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn http_server(ws: &Path, extra: &[&str]) -> HttpServer {
    http_server_env(ws, extra, &[])
}

/// [`http_server`] with the environment variables `env` set.
pub(crate) fn http_server_env(ws: &Path, extra: &[&str], env: &[(&str, &Path)]) -> HttpServer {
    let dir = ws.display().to_string();
    let mut args = vec![
        "serve",
        "--http",
        "127.0.0.1:0",
        "--workspace",
        &dir,
        "--mode",
        "yolo",
    ];
    args.extend_from_slice(extra);
    let mut child = toolhost_command(ws, &args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let mut banner = Vec::new();
    let addr = loop {
        let Some(line) = lines.next() else {
            panic!("the server exited before serving:\n{}", banner.join("\n"));
        };
        let line = line.expect("utf-8");
        if let Some(rest) = line.strip_prefix("serving MCP on http://") {
            break rest.trim_end_matches("/mcp").to_owned();
        }
        banner.push(line);
    };
    // The token the server made, which the tests' clients send.
    if let Some(path) = token_path(&banner) {
        let token = std::fs::read_to_string(&path).expect("the token file");
        crate::support::server_token(&addr, token.trim());
    }
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    HttpServer {
        child,
        addr,
        banner,
    }
}

/// `tools/list` in session `id` of the server at `addr`, with `extra`
/// headers; the status and the body.
fn list_in_session(addr: &str, id: &str, extra: &[(&str, &str)]) -> (u16, String) {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Mcp-Session-Id", id),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    headers.extend_from_slice(extra);
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    raw(addr, "POST", "/mcp", &headers, list)
}

/// The token file a server's banner names.
pub(crate) fn token_path(banner: &[String]) -> Option<std::path::PathBuf> {
    banner.iter().find_map(|line| {
        let rest = line.split_once("MCP token: in ")?.1;
        Some(rest.split_once(" (").map_or(rest, |(p, _)| p).into())
    })
}

/// One raw HTTP/1.1 request; returns the status code and the body. It
/// sends the server's token unless `headers` has an `Authorization`
/// (empty: none is sent).
pub(crate) fn raw(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let (status, _, body) = raw_with_head(addr, method, path, headers, body);
    (status, body)
}

/// One raw HTTP/1.1 request; returns the status code, the head and the body.
pub(crate) fn raw_with_head(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    let authorization = headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    if !authorization && let Some(token) = crate::support::token_of(addr) {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for (k, v) in headers.iter().filter(|(_, v)| !v.is_empty()) {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    // Read the head, then the body if its length is known (an SSE reply
    // may stay open: the status is all that is needed then).
    let mut data = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break data.len(),
            Ok(n) => data.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let length = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())
            .flatten()
    });
    if let Some(length) = length {
        while data.len() < head_end + length {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => data.extend_from_slice(&chunk[..n]),
            }
        }
    }
    let body = String::from_utf8_lossy(&data[head_end..]).into_owned();
    (status, head, body)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// POST an initialize request; the status and the body.
fn post_initialize_full(addr: &str, extra: &[(&str, &str)]) -> (u16, String) {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    headers.extend_from_slice(extra);
    raw(addr, "POST", "/mcp", &headers, INITIALIZE)
}

fn post_initialize(addr: &str, extra: &[(&str, &str)]) -> u16 {
    post_initialize_full(addr, extra).0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_serves_the_same_flow_on_loopback() {
    let ws = workspace();
    let server = http_server(ws.path(), &[]);
    let (status, body) = raw(&server.addr, "GET", "/health", &[], "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"status\":\"ok\""), "{body}");
    let transport = crate::support::http_transport(format!("http://{}/mcp", server.addr));
    let session = ().serve(transport).await.expect("initialize over HTTP");
    the_whole_flow(&session, ws.path(), false).await;
    session.cancel().await.expect("close");
}

#[test]
fn http_refuses_foreign_hosts_and_origins() {
    let ws = workspace();
    let server = http_server(ws.path(), &[]);
    let own = format!("http://{}", server.addr);
    assert_eq!(post_initialize(&server.addr, &[("Origin", &own)]), 200);
    assert_eq!(
        post_initialize(&server.addr, &[]),
        200,
        "no Origin: not a browser"
    );
    let (status, body) = post_initialize_full(&server.addr, &[("Origin", "http://evil.example")]);
    assert_eq!(status, 403);
    assert!(body.contains("Origin header is not allowed"), "{body}");
    let port = server.addr.rsplit(':').next().expect("port");
    let rebound = format!("evil.example:{port}");
    let (status, body) = post_initialize_full(&server.addr, &[("Host", &rebound)]);
    assert_eq!(status, 403);
    assert!(body.contains("Host header is not allowed"), "{body}");
    // /health answers only to the allowed hosts too.
    let (status, _) = raw(&server.addr, "GET", "/health", &[("Host", &rebound)], "");
    assert_eq!(status, 403);
}

/// A token file only its owner may read, holding `text`.
fn private_file(dir: &Path, text: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("tokens");
    std::fs::write(&path, text).expect("token file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

#[test]
fn http_with_a_token_refuses_requests_without_it() {
    let ws = workspace();
    let secret = workspace();
    let token_file = private_file(
        secret.path(),
        "s3cret-token-0123456789 alice\nother-token-0123456789 bob\n",
    );
    let server = http_server(
        ws.path(),
        &["--token-file", token_file.to_str().expect("utf-8")],
    );
    assert_eq!(post_initialize(&server.addr, &[("Authorization", "")]), 401);
    assert_eq!(
        post_initialize(
            &server.addr,
            &[("Authorization", "Bearer wrong-token-0123456789")]
        ),
        401
    );
    let alice = [("Authorization", "Bearer s3cret-token-0123456789")];
    assert_eq!(post_initialize(&server.addr, &alice), 200);
    // The scheme name is case-insensitive.
    let lower = [("Authorization", "bearer s3cret-token-0123456789")];
    assert_eq!(post_initialize(&server.addr, &lower), 200);
    // Health needs no token.
    assert_eq!(raw(&server.addr, "GET", "/health", &[], "").0, 200);

    // A session is its credential's: bob presenting alice's id gets what
    // an unknown id gets, and alice is still served.
    let (status, head, _) = raw_with_head(
        &server.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            alice[0],
        ],
        INITIALIZE,
    );
    assert_eq!(status, 200);
    let id = session_of(&head).expect("a session id");
    let as_who = |token: &str| {
        let bearer = format!("Bearer {token}");
        list_in_session(&server.addr, &id, &[("Authorization", bearer.as_str())])
    };
    let (status, body) = as_who("other-token-0123456789");
    assert_eq!(status, 404, "bob used alice's session: {body}");
    let (status, body) = as_who("s3cret-token-0123456789");
    assert_ne!(status, 404, "alice lost her own session: {body}");
}

#[test]
fn token_files_others_can_read_are_refused_with_the_fix() {
    use std::os::unix::fs::PermissionsExt as _;
    let ws = workspace();
    let token_file = private_file(ws.path(), "s3cret-token-0123456789\n");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let file = token_file.to_str().expect("utf-8");
    for args in [
        vec!["serve", "--http", "127.0.0.1:0", "--token-file", file],
        vec!["review", "--port", "0", "--token-file", file],
    ] {
        let out = toolhost_command(ws.path(), &args).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&format!("chmod 600 {file}")), "{err}");
    }
}

#[test]
fn without_flags_a_token_is_made_kept_privately_and_required() {
    use std::os::unix::fs::PermissionsExt as _;
    let ws = workspace();
    let server = http_server(ws.path(), &[]);
    let path = token_path(&server.banner).expect("the banner names the token file");
    let mode = std::fs::metadata(&path)
        .expect("token file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{}", path.display());
    let token = std::fs::read_to_string(&path).expect("token");
    // The token itself is never printed.
    assert!(
        !server.banner.iter().any(|l| l.contains(token.trim())),
        "{:?}",
        server.banner
    );
    assert_eq!(post_initialize(&server.addr, &[("Authorization", "")]), 401);
    assert_eq!(post_initialize(&server.addr, &[]), 200, "with the token");
    // The file goes with the server when it is stopped (SIGTERM).
    let pid = rustix::process::Pid::from_raw(server.pid() as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("kill");
    wait_until("the token file to go with the server", || !path.exists());
}

#[test]
#[ignore = "needs root, to make a process of another user (CI runs it)"]
fn another_user_cannot_drive_a_loopback_server_even_with_its_token() {
    let ws = workspace();
    let server = http_server(ws.path(), &[]);
    let token = crate::support::token_of(&server.addr).expect("token");
    // The same requests as uid 65534 (nobody), from a process of its own.
    let script = r#"
import sys, urllib.request, urllib.error
addr, token = sys.argv[1], sys.argv[2]
body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}'
for path, headers in (("/mcp", {}), ("/mcp", {"Authorization": "Bearer " + token}), ("/health", {})):
    req = urllib.request.Request("http://" + addr + path, data=body if path == "/mcp" else None, headers=dict(headers, **{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}))
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            print(path, r.status, r.read(200))
    except urllib.error.HTTPError as e:
        print(path, e.code, e.read(300).decode().strip())
    except Exception as e:
        print(path, "error", e)
"#;
    if !rustix::process::geteuid().is_root() {
        panic!("this test makes a process of another user, which needs root (CI runs as root)");
    }
    let out = std::process::Command::new("setpriv")
        // The system's Python: a per-user one (pyenv) is not another user's to run.
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            script,
        ])
        .args([&server.addr, &token])
        .output()
        .expect("setpriv and python3");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        printed.lines().count(),
        3,
        "{printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in printed.lines() {
        // The 403 is written and the connection closed without reading the
        // request: a client still sending its body may see the close first.
        let refused =
            line.contains(" 403 ") && line.contains("serves only the user who started it");
        let cut_off = line.contains(" error ")
            && (line.contains("Broken pipe") || line.contains("reset by peer"));
        assert!(refused || cut_off, "another user was served: {line}");
    }
    // Its own user still is.
    assert_eq!(post_initialize(&server.addr, &[]), 200);
}

#[test]
fn a_public_address_cannot_go_without_a_token() {
    let ws = workspace();
    let out = toolhost_command(ws.path(), &["serve", "--http", "0.0.0.0:0", "--no-auth"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("loopback only"), "{err}");
}

/// An rmcp client of the HTTP server at `addr`.
pub(crate) async fn http_client(addr: &str) -> RunningService<RoleClient, ()> {
    let transport = crate::support::http_transport(format!("http://{addr}/mcp"));
    ().serve(transport).await.expect("initialize over HTTP")
}

/// An rmcp client of the HTTP server at `addr`, with the test client's
/// handler (it hears list_changed notifications).
async fn http_session(addr: &str, client: Client) -> crate::mcp::Session {
    let transport = crate::support::http_transport(format!("http://{addr}/mcp"));
    client.serve(transport).await.expect("initialize over HTTP")
}

/// The JSON-RPC error code of a failed request.
fn error_code(e: &rmcp::ServiceError) -> i32 {
    match e {
        rmcp::ServiceError::McpError(data) => data.code.0,
        other => panic!("not a JSON-RPC error: {other}"),
    }
}

/// The id `field` a result's text gives (no structuredContent by default).
fn id_in(result: &rmcp::model::CallToolResult, field: &str) -> String {
    assert!(result.structured_content.is_none(), "the text alone, once");
    crate::support::id_in_text(&text(result), field)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_clients_see_only_their_own_background_commands() {
    let ws = workspace();
    let server = http_server(ws.path(), &[]);
    let a = http_client(&server.addr).await;
    let b = http_client(&server.addr).await;
    let marker = format!("{}.{}", 600 + std::process::id() % 100, std::process::id());
    let started = call(
        &a,
        "run_command",
        json!({"command": format!("sleep {marker} & read l; echo got:$l; wait"), "background": true}),
    )
    .await
    .expect("run_command");
    assert!(!is_error(&started), "{}", text(&started));
    let id = id_in(&started, "command_id");
    let cut = call(&a, "run_command", json!({"command": "seq 1 200000"}))
        .await
        .expect("run_command");
    let output_id = id_in(&cut, "output_id");
    wait_until("a's command to start", || {
        processes_with(&marker).len() == 1
    });

    // B: its list is empty, and A's ids are unknown to it, exactly as an id
    // that never existed.
    let listed = call(&b, "process", json!({"action": "list"}))
        .await
        .unwrap();
    assert!(
        !text(&listed).contains(&marker) && text(&listed).contains("no background commands"),
        "{}",
        text(&listed)
    );
    let never = call(
        &b,
        "process",
        json!({"action": "poll", "command_id": "s-999"}),
    )
    .await
    .unwrap();
    for action in ["poll", "kill"] {
        let r = call(&b, "process", json!({"action": action, "command_id": id}))
            .await
            .unwrap();
        assert!(is_error(&r), "b could {action} a's command: {}", text(&r));
        if action == "poll" {
            assert_eq!(text(&r), text(&never).replace("s-999", &id));
        }
    }
    let w = call(
        &b,
        "process",
        json!({"action": "write", "command_id": id, "input": "from b\n"}),
    )
    .await
    .unwrap();
    assert!(is_error(&w), "{}", text(&w));
    let out = call(
        &b,
        "process",
        json!({"action": "output", "output_id": output_id}),
    )
    .await
    .unwrap();
    assert!(
        is_error(&out) && !text(&out).contains("199999"),
        "b read a's output: {}",
        text(&out)
    );
    let cleared = call(&b, "process", json!({"action": "clear"}))
        .await
        .unwrap();
    assert!(text(&cleared).contains("removed 0"), "{}", text(&cleared));

    // A still has all of it: its command is alive and got no input from B.
    assert_eq!(
        processes_with(&marker).len(),
        1,
        "b's attempts left it alone"
    );
    let mine = call(
        &a,
        "process",
        json!({"action": "output", "output_id": output_id}),
    )
    .await
    .unwrap();
    assert!(
        !is_error(&mine) && text(&mine).contains("200000"),
        "{}",
        text(&mine)
    );
    call(
        &a,
        "process",
        json!({"action": "write", "command_id": id, "input": "from a\n"}),
    )
    .await
    .unwrap();
    let mut seen = String::new();
    for _ in 0..200 {
        let p = call(&a, "process", json!({"action": "poll", "command_id": id}))
            .await
            .unwrap();
        seen.push_str(&text(&p));
        if seen.contains("got:from") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        seen.contains("got:from a") && !seen.contains("from b"),
        "{seen}"
    );

    // A leaves (its session is deleted): its command dies; B is unharmed.
    a.cancel().await.expect("close a");
    wait_until("a's command to be killed with its session", || {
        processes_with(&marker).is_empty()
    });
    let still = call(&b, "process", json!({"action": "list"}))
        .await
        .unwrap();
    assert!(!is_error(&still), "{}", text(&still));
    b.cancel().await.expect("close b");
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The `Mcp-Session-Id` header of a response head.
fn session_of(head: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("mcp-session-id")
            .then(|| v.trim().to_owned())
    })
}

/// `count` initialize requests on keep-alive connections (a new one after
/// each reply that opens a session, whose event stream is left open).
/// Returns how many opened a session, how many got 503, and the last 503's
/// body.
fn flood(addr: &str, count: u32) -> (u32, u32, String) {
    let token = crate::support::token_of(addr).expect("the server's token");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: {}\r\n\r\n{INITIALIZE}",
        INITIALIZE.len()
    );
    let (mut ok, mut refused, mut why) = (0, 0, String::new());
    let mut conn: Option<std::io::BufReader<std::net::TcpStream>> = None;
    for _ in 0..count {
        let reader = conn.get_or_insert_with(|| {
            let stream = std::net::TcpStream::connect(addr).expect("connect");
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            std::io::BufReader::new(stream)
        });
        reader
            .get_mut()
            .write_all(request.as_bytes())
            .expect("send");
        let mut status_line = String::new();
        reader.read_line(&mut status_line).expect("status line");
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line {status_line:?}"));
        let mut length = None;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("header");
            if line.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse::<usize>().ok();
            }
        }
        match (status, length) {
            (503, Some(length)) => {
                let mut body = vec![0; length];
                reader.read_exact(&mut body).expect("body");
                refused += 1;
                why = String::from_utf8_lossy(&body).into_owned();
            }
            (200, _) => {
                ok += 1;
                conn = None;
            }
            (status, _) => panic!("unexpected {status} during the flood"),
        }
    }
    (ok, refused, why)
}

/// The server's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// A full handshake over raw HTTP: the new session's id, or the refusal.
fn open_session(addr: &str) -> Result<String, (u16, String)> {
    let (status, head, body) = raw_with_head(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        INITIALIZE,
    );
    let id = match (status, session_of(&head)) {
        (200, Some(id)) => id,
        _ => return Err((status, body)),
    };
    let (status, body) = raw(
        addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", &id),
            ("Mcp-Protocol-Version", "2025-06-18"),
        ],
        INITIALIZED,
    );
    assert_eq!(status, 202, "initialized: {body}");
    Ok(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(clippy::print_stderr, reason = "the figures docs/security.md quotes")]
async fn an_initialize_flood_is_bounded_and_harms_no_session() {
    // 32,000 `initialize` requests on loopback, by 4 threads, none
    // finishing its handshake: the few the handshake cap lets in expire,
    // the rest get 503 at once. Memory stays small; a client connected
    // before keeps working.
    let ws = workspace();
    std::fs::write(ws.path().join("note.txt"), "still here\n").unwrap();
    let server = http_server(ws.path(), &[]);
    let pid = server.child.id();
    let client = http_client(&server.addr).await;
    let before = rss_kib(pid);
    let addr = server.addr.clone();
    let flood = tokio::task::spawn_blocking(move || {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let addr = addr.clone();
                std::thread::spawn(move || flood(&addr, 8_000))
            })
            .collect();
        let mut peak = 0;
        while threads.iter().any(|t| !t.is_finished()) {
            peak = peak.max(rss_kib(pid));
            std::thread::sleep(Duration::from_millis(20));
        }
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        (results, peak)
    });
    // Meanwhile the connected client is answered.
    let during = call(&client, "read_file", json!({"path": "note.txt"}))
        .await
        .expect("an answer during the flood");
    assert!(text(&during).contains("still here"), "{}", text(&during));
    let (results, peak) = flood.await.unwrap();
    let ok: u32 = results.iter().map(|r| r.0).sum();
    let refused: u32 = results.iter().map(|r| r.1).sum();
    assert_eq!(ok + refused, 32_000);
    assert!(ok <= 64, "{ok} sessions were made");
    let why = &results.iter().find(|r| r.1 > 0).expect("some refused").2;
    assert!(
        why.contains("notifications/initialized") && why.contains("Try again"),
        "{why}"
    );
    let peak = peak.max(rss_kib(pid));
    eprintln!("RSS before the flood {before} KiB, peak {peak} KiB; {ok} made, {refused} refused");
    assert!(peak < 100 * 1024, "RSS reached {peak} KiB");
    let after = call(&client, "read_file", json!({"path": "note.txt"}))
        .await
        .expect("an answer after the flood");
    assert!(text(&after).contains("still here"), "{}", text(&after));

    // The unfinished handshakes expire; then live sessions fill the cap,
    // and a new one takes the place of the one idle the longest. The
    // first client holds its event stream open: it is not idle.
    let addr = server.addr.clone();
    let opened = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut opened = Vec::new();
        while opened.len() < 63 {
            match open_session(&addr) {
                Ok(id) => opened.push(id),
                Err((503, why)) if why.contains("handshake") => {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "handshakes never expired"
                    );
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err((status, body)) => panic!("{status}: {body}"),
            }
        }
        opened
    })
    .await
    .unwrap();
    let addr = server.addr.clone();
    let again = tokio::task::spawn_blocking(move || open_session(&addr))
        .await
        .unwrap();
    assert!(again.is_ok(), "a 65th session past the cap: {again:?}");
    let headers = |id: &str| list_in_session(&server.addr, id, &[]);
    assert_eq!(
        headers(&opened[0]).0,
        404,
        "the session idle the longest was kept"
    );
    assert_eq!(headers(&opened[1]).0, 200, "another session was closed");
    let last = call(&client, "read_file", json!({"path": "note.txt"}))
        .await
        .expect("the first client still works");
    assert!(!is_error(&last), "{}", text(&last));
}

#[test]
fn a_burst_of_session_openings_is_refused_with_503_never_500() {
    // 300 initialize requests at once, none finishing its handshake: the
    // admission is atomic, so exactly the handshake cap's worth are made
    // and every other one gets 503 with Retry-After.
    let ws = workspace();
    let server = http_server(ws.path(), &["--max-sessions", "32"]);
    let start = Arc::new(std::sync::Barrier::new(300));
    let threads: Vec<_> = (0..300)
        .map(|_| {
            let (addr, start) = (server.addr.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                raw_with_head(
                    &addr,
                    "POST",
                    "/mcp",
                    &[
                        ("Content-Type", "application/json"),
                        ("Accept", "application/json, text/event-stream"),
                    ],
                    INITIALIZE,
                )
            })
        })
        .collect();
    let (mut made, mut refused) = (0, 0);
    for thread in threads {
        let (status, head, body) = thread.join().expect("a request thread");
        match status {
            200 => made += 1,
            503 => {
                refused += 1;
                assert!(
                    head.to_ascii_lowercase().contains("\r\nretry-after: "),
                    "{head}"
                );
                assert!(body.contains("handshake"), "{body}");
            }
            other => panic!("{other} in a burst: {head}{body}"),
        }
    }
    assert_eq!(made + refused, 300);
    assert_eq!(made, 8, "the handshake cap of 32 sessions is 8");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_the_calls_in_flight_then_exits_0() {
    let ws = workspace();
    let mut server = http_server(ws.path(), &["--drain-secs", "30"]);
    // Probes answer whatever the Host (a kubelet's is the pod's address).
    let probe = |path: &str| raw(&server.addr, "GET", path, &[("Host", "10.1.2.3:8765")], "").0;
    assert_eq!((probe("/healthz"), probe("/readyz")), (200, 200));
    let client = http_client(&server.addr).await;
    let call_in_flight = tokio::spawn(async move {
        let r = call(
            &client,
            "run_command",
            json!({"command": "sleep 2; echo finished"}),
        )
        .await;
        let _ = client.cancel().await;
        r
    });
    // Once the call runs (its command has started), the server is told to stop.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let pid = rustix::process::Pid::from_raw(server.pid() as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        std::net::TcpStream::connect(&server.addr).is_err(),
        "a new connection was taken while draining"
    );
    let result = call_in_flight
        .await
        .expect("the call's task")
        .expect("the call in flight was answered");
    assert!(
        !is_error(&result) && text(&result).contains("finished"),
        "{}",
        text(&result)
    );
    let status = tokio::task::spawn_blocking(move || server.exit_within(Duration::from_secs(20)))
        .await
        .expect("wait")
        .expect("the server exited after the drain");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_longer_than_the_drain_is_cancelled_and_the_server_still_exits_0() {
    let ws = workspace();
    let mut server = http_server(ws.path(), &["--drain-secs", "1"]);
    let client = http_client(&server.addr).await;
    let call_in_flight = tokio::spawn(async move {
        call(
            &client,
            "run_command",
            json!({"command": "sleep 30; echo finished"}),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    let pid = rustix::process::Pid::from_raw(server.pid() as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let started = std::time::Instant::now();
    let status = tokio::task::spawn_blocking(move || server.exit_within(Duration::from_secs(15)))
        .await
        .expect("wait")
        .expect("the server exited after its drain timeout");
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The call did not finish, and its client was told so.
    let answer = tokio::time::timeout(Duration::from_secs(10), call_in_flight)
        .await
        .expect("the client was left waiting after the server exited")
        .expect("the call's task");
    match answer {
        Ok(result) => assert!(is_error(&result), "{}", text(&result)),
        Err(e) => assert!(e.to_string().contains("cancel"), "{e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_calls_report_progress_over_http() {
    let ws = workspace();
    let server = http_server(ws.path(), &[]);
    let client = Client::default();
    let transport = crate::support::http_transport(format!("http://{}/mcp", server.addr));
    let session = client.clone().serve(transport).await.expect("initialize");
    progress_flow(&session, &client).await;
    session.cancel().await.expect("close");
}

/// JSON-RPC framing over HTTP: a body that is not JSON is `400` with
/// `-32700` (not 415), and deleting a session answers `204`.
#[test]
fn http_parse_errors_are_400_and_session_deletion_is_204() {
    let ws = workspace();
    let server = http_server(ws.path(), &[]);
    let (status, body) = raw(
        &server.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        "{not json",
    );
    assert_eq!(status, 400, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).expect("a JSON-RPC error");
    assert_eq!(error["error"]["code"], -32700, "{body}");
    let id = open_session(&server.addr).expect("a session");
    let (status, body) = raw(
        &server.addr,
        "DELETE",
        "/mcp",
        &[
            ("Mcp-Session-Id", &id),
            ("Mcp-Protocol-Version", "2025-06-18"),
        ],
        "",
    );
    assert!(status == 200 || status == 204, "{status} {body}");
    // A batch under a version without batches is refused, saying why.
    let id = open_session(&server.addr).expect("a session");
    let (status, body) = raw(
        &server.addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", &id),
            ("Mcp-Protocol-Version", "2025-06-18"),
        ],
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("2025-03-26"), "{body}");
}

/// A plugin's log lines reach the client whose call wrote them, at the
/// level it chose, and never another client, even one listening at debug.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_log_lines_go_only_to_the_client_that_called_it() {
    let ws = workspace();
    let fixtures = crate::support::fixtures_dir().display().to_string();
    let server = http_server(ws.path(), &["--plugin-dir", &fixtures]);
    let connect = |client: Client| {
        let transport = crate::support::http_transport(format!("http://{}/mcp", server.addr));
        async move { client.serve(transport).await.expect("initialize over HTTP") }
    };
    let (a_client, b_client) = (Client::default(), Client::default());
    let (a_logs, b_logs) = (Arc::clone(&a_client.logs), Arc::clone(&b_client.logs));
    let a = connect(a_client).await;
    let b = connect(b_client).await;
    #[expect(deprecated, reason = "logging, as toolhost negotiates 2025-11-25")]
    for peer in [&a, &b] {
        peer.set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Debug,
        ))
        .await
        .expect("setLevel");
    }
    let secret = "a-secret-only-for-a-7731";
    let r = call(&a, "misbehave", json!({"action": "log", "text": secret}))
        .await
        .expect("a result");
    assert!(!is_error(&r), "{}", text(&r));
    let got = |logs: &Arc<std::sync::Mutex<Vec<serde_json::Value>>>| {
        logs.lock()
            .expect("logs")
            .iter()
            .any(|l| l["data"].as_str().is_some_and(|d| d.contains(secret)))
    };
    crate::support::eventually(
        "a never got its own log line",
        Duration::from_secs(10),
        || got(&a_logs),
    )
    .await;
    let line = a_logs
        .lock()
        .expect("logs")
        .iter()
        .find(|l| l["data"].as_str().is_some_and(|d| d.contains(secret)))
        .cloned()
        .expect("the line");
    assert_eq!(
        (line["level"].as_str(), line["logger"].as_str()),
        (Some("info"), Some("misbehave"))
    );
    // Give a leak every chance to arrive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !got(&b_logs),
        "b got a's log line: {:?}",
        b_logs.lock().expect("logs")
    );
    a.cancel().await.expect("close");
    b.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_outputs_are_resources_only_their_client_can_list_and_read() {
    use rmcp::model::{ContentBlock, ReadResourceRequestParams, ResourceContents};
    let ws = workspace();
    let server = http_server(ws.path(), &[]);
    let client = Client::default();
    let a = http_session(&server.addr, client.clone()).await;
    let b = http_client(&server.addr).await;
    let caps = a.peer_info().expect("server info").capabilities.clone();
    let resources = caps.resources.expect("the resources capability");
    assert_eq!(resources.list_changed, Some(true));
    assert!(
        a.list_resources(None).await.unwrap().resources.is_empty(),
        "nothing is kept yet"
    );

    let changed = client.resources_changed.notified();
    let cut = call(&a, "run_command", json!({"command": "seq 1 200000"}))
        .await
        .expect("run_command");
    let output_id = id_in(&cut, "output_id");
    let uri = format!("toolhost://outputs/{output_id}");
    let link = cut
        .content
        .iter()
        .find_map(|c| match c {
            ContentBlock::ResourceLink(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no resource_link in {:?}", cut.content));
    assert_eq!(link.uri, uri);
    assert_eq!(link.mime_type.as_deref(), Some("text/plain"));
    let full: String = (1..=200_000).map(|n| format!("{n}\n")).collect();
    assert_eq!(link.size, Some(full.len() as u64));
    tokio::time::timeout(Duration::from_secs(10), changed)
        .await
        .expect("resources/list_changed after a cut output");

    // A lists and reads it, whole.
    let listed = a.list_resources(None).await.unwrap().resources;
    assert_eq!(
        listed.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(),
        [uri.as_str()]
    );
    let read = a
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .expect("a reads its own output");
    match read.contents.as_slice() {
        [ResourceContents::TextResourceContents { text, uri: u, .. }] => {
            assert_eq!(u, &uri);
            assert!(text == &full, "the full output, {} bytes", text.len());
        }
        other => panic!("{other:?}"),
    }
    let templates = a.list_resource_templates(None).await.unwrap();
    assert_eq!(
        templates.resource_templates[0].uri_template,
        "toolhost://outputs/{output_id}"
    );

    // B sees none of it: its list is empty, and A's URI is answered exactly
    // as one that never existed.
    assert!(b.list_resources(None).await.unwrap().resources.is_empty());
    let stolen = b
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .expect_err("b read a's output");
    assert_eq!(error_code(&stolen), -32002);
    let never = b
        .read_resource(ReadResourceRequestParams::new(
            "toolhost://outputs/out-999".to_owned(),
        ))
        .await
        .expect_err("an id never kept");
    assert_eq!(
        stolen.to_string(),
        never.to_string().replace("out-999", &output_id)
    );
    let elsewhere = a
        .read_resource(ReadResourceRequestParams::new(
            "file:///etc/passwd".to_owned(),
        ))
        .await
        .expect_err("only kept outputs are resources");
    assert_eq!(error_code(&elsewhere), -32002);
    assert!(
        elsewhere.to_string().contains("resources/list"),
        "{elsewhere}"
    );

    // A short output is not cut: no link, nothing new listed.
    let short = call(&a, "run_command", json!({"command": "echo hi"}))
        .await
        .unwrap();
    assert!(
        !short
            .content
            .iter()
            .any(|c| matches!(c, ContentBlock::ResourceLink(_))),
        "{:?}",
        short.content
    );
    assert_eq!(a.list_resources(None).await.unwrap().resources.len(), 1);
    a.cancel().await.expect("close");
    b.cancel().await.expect("close");
}

/// Without tokens (`--no-auth`), `/metrics` is open to the server's own
/// user only, so a page that rebinds a name to 127.0.0.1 must not read it:
/// a foreign Host gets 403, the loopback one the figures.
#[test]
fn metrics_without_tokens_refuse_a_foreign_host() {
    let ws = workspace();
    let server = http_server(ws.path(), &["--no-auth"]);
    let (status, _) = raw(
        &server.addr,
        "GET",
        "/metrics",
        &[("Host", "attacker.example")],
        "",
    );
    assert_eq!(status, 403, "a rebound name read /metrics");
    let (status, body) = raw(&server.addr, "GET", "/metrics", &[], "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("toolhost_calls_in_flight"), "{body}");
}

#[test]
fn a_request_reusing_an_id_in_flight_is_refused_and_the_first_is_answered() {
    let ws = workspace();
    let server = http_server(ws.path(), &[]);
    let session = open_session(&server.addr).expect("a session");
    let bearer = format!(
        "Bearer {}",
        crate::support::token_of(&server.addr).expect("the server's token")
    );
    // Each answer read to its end (its event stream ends with the result).
    let post = move |addr: &str, command: &str| {
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Authorization", bearer.as_str()),
        ];
        let call = json!({
            "jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "run_command", "arguments": {"command": command}},
        });
        let (status, _, body) = crate::mcp_2026::exchange(addr, &headers, &call.to_string());
        (status, body)
    };
    let (addr, first_post) = (server.addr.clone(), post.clone());
    let (first, first_answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || first.send(first_post(&addr, "sleep 1.5; echo first-answer")));
    std::thread::sleep(Duration::from_millis(500));
    // Before the fix, this took over id 5's route: it was answered and
    // the first request's response stayed open for ever.
    let (status, body) = post(&server.addr, "echo second-answer");
    // Before the fix the first answer never came (its stream kept alive).
    let (first_status, first_body) = first_answer
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| {
            panic!("the first request was not answered; the second got {status} {body}")
        });
    let both = format!("second: {status} {body}\nfirst: {first_status} {first_body}");
    assert_eq!(status, 400, "{both}");
    assert!(
        body.contains("-32600") && body.contains("request id 5 is already in flight"),
        "{both}"
    );
    assert_eq!(first_status, 200, "{both}");
    assert!(first_body.contains("first-answer"), "{both}");
    // Once answered, the id is free again.
    let (status, body) = post(&server.addr, "echo third-answer");
    assert!(
        status == 200 && body.contains("third-answer"),
        "{status} {body}"
    );
}
