//! MCP protocol details as a client nobody here wrote would hit them, over
//! real stdio (raw JSON-RPC lines) and real HTTP: parse errors, batches by
//! negotiated version, cursors, logging, the untrusted-configuration
//! notice, guidance in `instructions`.

use crate::support::{toolhost_command, workspace, write};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A `toolhost serve` over stdio fed raw lines.
struct Raw {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Raw {
    fn start(ws: &std::path::Path, extra: &[&str]) -> Self {
        let mut args = vec!["serve", "--mode", "yolo"];
        args.extend_from_slice(extra);
        let mut child = toolhost_command(ws, &args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Self { child, lines }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
    }

    /// The next line that `pick` accepts (others are skipped).
    fn next(&self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if pick(&v) => return v,
                Ok(_) => {}
                Err(_) => panic!("no {what} within 30 s"),
            }
        }
    }

    fn initialize(&mut self, version: &str) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}})
            .to_string(),
        );
        let init = self.next("initialize answer", |v| v["id"] == 0);
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        init
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_error_with(v: &Value, code: i64) -> bool {
    v["error"]["code"] == code
}

#[test]
fn stdio_answers_garbage_with_a_parse_error_and_keeps_serving() {
    let ws = workspace();
    write(ws.path(), "a.txt", "hi\n");
    let mut raw = Raw::start(ws.path(), &[]);
    raw.send("this is not json");
    let err = raw.next("parse error", |v| is_error_with(v, -32700));
    assert_eq!(err["id"], Value::Null, "{err}");
    raw.send(r#"{"nothing": "of json-rpc", "id": 9}"#);
    let err = raw.next("invalid request", |v| is_error_with(v, -32600));
    assert_eq!(err["id"], 9, "{err}");
    let init = raw.initialize("2025-06-18");
    // The guidance names what the visible tools are for.
    let instructions = init["result"]["instructions"].as_str().unwrap();
    assert!(
        instructions.contains("never guess today's date"),
        "{instructions}"
    );
    // A batch is not part of 2025-06-18.
    raw.send(r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#);
    let err = raw.next("batch refusal", |v| is_error_with(v, -32600));
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2025-03-26"),
        "{err}"
    );
    // An unknown cursor is an error; the server still answers after all this.
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"nope"}}"#);
    let err = raw.next("cursor error", |v| v["id"] == 2);
    assert!(is_error_with(&err, -32602), "{err}");
    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt","limit":null}}}"#);
    let read = raw.next("read_file answer", |v| v["id"] == 3);
    assert_eq!(read["result"]["isError"], false, "{read}");
    // The result is the text the model reads, once.
    assert_eq!(
        read["result"]["content"][0]["text"], "     1\thi\n",
        "{read}"
    );
    assert!(read["result"].get("structuredContent").is_none(), "{read}");
}

#[test]
fn stdio_serves_a_batch_when_2025_03_26_is_negotiated() {
    let ws = workspace();
    write(ws.path(), "a.txt", "hi\n");
    let mut raw = Raw::start(ws.path(), &[]);
    raw.initialize("2025-03-26");
    raw.send(
        r#"[{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}]"#,
    );
    let answers = raw.next("the batch's answers", Value::is_array);
    let ids: Vec<&Value> = answers
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["id"])
        .collect();
    assert_eq!(
        ids.len(),
        2,
        "one answer per request, none for the notification: {answers}"
    );
    assert!(
        ids.contains(&&json!(1)) && ids.contains(&&json!(2)),
        "{answers}"
    );
}

#[test]
fn an_untrusted_workspace_configuration_starts_the_server_with_defaults_and_says_so() {
    let ws = workspace();
    write(ws.path(), "toolhost.toml", "mode = \"yolo\"\n");
    let mut child = toolhost_command(ws.path(), &["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"raw","version":"0"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let init: Value = serde_json::from_str(&line).expect("an initialize answer, not a crash");
    let instructions = init["result"]["instructions"].as_str().unwrap();
    assert!(
        instructions.starts_with("Note for the person:")
            && instructions.contains("toolhost.toml is not trusted")
            && instructions.contains("toolhost config trust"),
        "{instructions}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("started with its safe defaults"),
        "{stderr}"
    );
}

#[test]
fn an_invalid_configuration_names_the_file_and_line_and_exits_non_zero() {
    let ws = workspace();
    let config = write(
        ws.path(),
        "custom.toml",
        "mode = \"yolo\"\nno_such_key = 1\n",
    );
    let out = toolhost_command(ws.path(), &["--config", config.to_str().unwrap(), "serve"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("custom.toml") && stderr.contains("line 2"),
        "{stderr}"
    );
}

/// Stdin and stdout that are not pipes (here one Unix socket, as some
/// clients start servers) are served through the other path of the stdio
/// transport, the same protocol.
#[test]
fn stdio_serves_over_a_socket_as_well_as_pipes() {
    use std::os::unix::net::UnixStream;
    let ws = workspace();
    write(ws.path(), "a.txt", "hi\n");
    let (ours, theirs) = UnixStream::pair().expect("socketpair");
    let mut child = toolhost_command(ws.path(), &["serve", "--mode", "yolo"])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(
            theirs.try_clone().expect("dup"),
        )))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    ours.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut writer = ours.try_clone().expect("dup");
    let mut lines = BufReader::new(ours).lines();
    let mut next = |id: i64| loop {
        let line = lines.next().expect("an answer").expect("read");
        let v: Value = serde_json::from_str(&line).expect("json");
        if v["id"] == id {
            return v;
        }
    };
    for line in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "socket", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "a.txt"}}}),
    ] {
        writeln!(writer, "{line}").expect("write");
        if line["id"] == 0 {
            assert!(next(0)["result"]["serverInfo"].is_object());
        }
    }
    let read = next(1);
    assert_eq!(
        read["result"]["content"][0]["text"], "     1\thi\n",
        "{read}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// With stdout and stderr one pipe (`2>&1`), the server keeps that pipe
/// blocking (its logs are written without a reactor) and still serves.
#[test]
fn stdio_keeps_a_pipe_shared_with_stderr_blocking() {
    let ws = workspace();
    write(ws.path(), "a.txt", "hi\n");
    let (reader, writer) = std::io::pipe().expect("pipe");
    let ours = writer.try_clone().expect("dup");
    let mut child = toolhost_command(ws.path(), &["serve", "--mode", "yolo"])
        .stdin(Stdio::piped())
        .stdout(writer.try_clone().expect("dup"))
        .stderr(writer)
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(reader).lines();
    let mut next = |id: i64| loop {
        let line = lines.next().expect("an answer").expect("read");
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && v["id"] == id
        {
            return v;
        }
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "shared", "version": "0"}}});
    writeln!(stdin, "{init}").expect("write");
    assert!(next(0)["result"]["serverInfo"].is_object());
    let flags = rustix::fs::fcntl_getfl(&ours).expect("flags");
    assert!(
        !flags.contains(rustix::fs::OFlags::NONBLOCK),
        "the server made the pipe it shares with stderr non-blocking"
    );
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("write");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"a.txt"}}}}}}"#
    )
    .expect("write");
    let read = next(1);
    assert_eq!(read["result"]["isError"], false, "{read}");
    let _ = child.kill();
    let _ = child.wait();
}
