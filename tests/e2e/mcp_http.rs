//! `toolhost serve --http`: the same flow over streamable HTTP, and the
//! transport's own checks (Host, Origin, token, public addresses).

use crate::mcp::the_whole_flow;
use crate::support::{toolhost_command, workspace};
use rmcp::ServiceExt as _;
use std::io::{BufRead as _, Read as _, Write as _};
use std::path::Path;
use std::time::Duration;

/// A `toolhost serve --http 127.0.0.1:0` process and its address.
struct HttpServer {
    child: std::process::Child,
    addr: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server(ws: &Path, extra: &[&str]) -> HttpServer {
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
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines.next().expect("a line before exit").expect("utf-8");
        if let Some(rest) = line.strip_prefix("serving MCP on http://") {
            break rest.trim_end_matches("/mcp").to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    HttpServer { child, addr }
}

/// One raw HTTP/1.1 request; returns the status code and the body.
fn raw(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
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
    for (k, v) in headers {
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
    (
        status,
        String::from_utf8_lossy(&data[head_end..]).into_owned(),
    )
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
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!(
        "http://{}/mcp",
        server.addr
    ));
    let session = ().serve(transport).await.expect("initialize over HTTP");
    the_whole_flow(&session, ws.path()).await;
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

#[test]
fn http_with_a_token_refuses_requests_without_it() {
    let ws = workspace();
    let secret = workspace();
    let token_file = secret.path().join("token");
    std::fs::write(&token_file, "s3cret-token-0123456789\n").expect("token");
    let server = http_server(
        ws.path(),
        &["--token-file", token_file.to_str().expect("utf-8")],
    );
    assert_eq!(post_initialize(&server.addr, &[]), 401);
    assert_eq!(
        post_initialize(
            &server.addr,
            &[("Authorization", "Bearer wrong-token-0123456789")]
        ),
        401
    );
    assert_eq!(
        post_initialize(
            &server.addr,
            &[("Authorization", "Bearer s3cret-token-0123456789")]
        ),
        200
    );
    // The scheme name is case-insensitive.
    let lower = [("Authorization", "bearer s3cret-token-0123456789")];
    assert_eq!(post_initialize(&server.addr, &lower), 200);
    // Health needs no token.
    assert_eq!(raw(&server.addr, "GET", "/health", &[], "").0, 200);
}

#[test]
fn a_public_address_without_a_token_is_refused() {
    let ws = workspace();
    let out = toolhost_command(ws.path(), &["serve", "--http", "0.0.0.0:0"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--token-file"), "{err}");
}
