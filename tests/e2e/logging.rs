//! Logs on stderr, as people and scripts use them: `-v`, `TOOLHOST_LOG`,
//! `--log-format json`, and the warnings the documentation promises.

use crate::support::{toolhost_command, workspace};
use std::io::BufRead as _;
use std::time::{Duration, Instant};

/// `toolhost ARGS` in `ws` with `env`; its stderr.
fn stderr_of(ws: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = toolhost_command(ws, args)
        .envs(env.iter().copied())
        .output()
        .expect("run toolhost");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn verbose_calls_say_how_they_finished() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello\n").expect("file");
    let call = ["call", "read_file", r#"{"path":"a.txt"}"#, "--mode", "yolo"];
    let quiet = stderr_of(ws.path(), &call, &[]);
    assert!(!quiet.contains("call finished"), "{quiet}");
    for (flags, env) in [
        (vec!["-v"], vec![]),
        (vec!["-vv"], vec![]),
        (vec![], vec![("TOOLHOST_LOG", "toolhost=debug")]),
    ] {
        let args: Vec<&str> = flags.iter().copied().chain(call).collect();
        let err = stderr_of(ws.path(), &args, &env);
        assert!(
            err.contains("call finished") && err.contains("read_file") && err.contains("success"),
            "{flags:?} {env:?}: {err}"
        );
    }
    let args: Vec<&str> = ["-v", "--log-format", "json"]
        .into_iter()
        .chain(call)
        .collect();
    let err = stderr_of(ws.path(), &args, &[]);
    let finished = err
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["fields"]["message"] == "call finished")
        .unwrap_or_else(|| panic!("no JSON line says the call finished: {err}"));
    assert_eq!(finished["fields"]["tool"], "read_file", "{finished}");
    assert_eq!(finished["level"], "INFO", "{finished}");
}

#[test]
fn a_cache_others_can_write_is_refused_with_a_warning() {
    use std::os::unix::fs::PermissionsExt as _;
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello\n").expect("file");
    let cache = workspace();
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let err = stderr_of(
        ws.path(),
        &["call", "read_file", r#"{"path":"a.txt"}"#, "--mode", "yolo"],
        &[("TOOLHOST_CACHE_DIR", cache.path().to_str().expect("utf-8"))],
    );
    assert!(
        err.contains("compile cache disabled") && err.contains("chmod go-w"),
        "no warning, at the default level: {err}"
    );
}

#[test]
fn serve_names_an_mcp_server_that_fails() {
    let ws = workspace();
    let config = ws.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "[mcp_servers.crasher]\ncommand = \"sh\"\nargs = [\"-c\", \"echo dying >&2; exit 3\"]\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let mut child = toolhost_command(
        ws.path(),
        &[
            "--config",
            &config,
            "serve",
            "--http",
            "127.0.0.1:0",
            "--no-auth",
            "--workspace",
            ".",
        ],
    )
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("spawn");
    let (lines, seen) = (
        child.stderr.take().expect("stderr"),
        std::sync::mpsc::channel(),
    );
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(lines).lines().map_while(Result::ok) {
            if seen.0.send(line).is_err() {
                break;
            }
        }
    });
    let until = Instant::now() + Duration::from_secs(30);
    let mut said = Vec::new();
    let warned = loop {
        let left = until.saturating_duration_since(Instant::now());
        match seen.1.recv_timeout(left) {
            Ok(line) if line.contains("WARN") && line.contains("crasher") => break Some(line),
            Ok(line) => said.push(line),
            Err(_) => break None,
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(warned.is_some(), "no warning names the server: {said:#?}");
}

#[test]
fn an_audit_log_that_cannot_be_written_is_warned_about() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello\n").expect("file");
    // Every write to /dev/full fails (ENOSPC): the call still answers.
    let config = ws.path().join("toolhost.toml");
    std::fs::write(&config, "audit_log = \"/dev/full\"\n").expect("config");
    let config = config.display().to_string();
    let out = toolhost_command(
        ws.path(),
        &[
            "--config",
            &config,
            "call",
            "read_file",
            r#"{"path":"a.txt"}"#,
            "--mode",
            "yolo",
        ],
    )
    .output()
    .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello"));
    assert!(
        err.contains("cannot write the audit log") && err.contains("/dev/full"),
        "{err}"
    );
}

/// With an OTLP endpoint configured, each call is a span sent to it (here
/// a receiver this test runs on 127.0.0.1, OTLP/HTTP with JSON): the tool,
/// the call id, the outcome and the duration, never an argument value.
#[test]
fn calls_are_traced_to_an_otlp_receiver_without_their_arguments() {
    use std::io::{Read as _, Write as _};
    let receiver = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", receiver.local_addr().expect("addr"));
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let kept = std::sync::Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in receiver.incoming() {
            let Ok(stream) = stream else { continue };
            let mut reader = std::io::BufReader::new(stream);
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            kept.lock()
                .unwrap()
                .push((first, String::from_utf8_lossy(&body).into_owned()));
            let _ = reader.get_mut().write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
            );
        }
    });
    let ws = workspace();
    std::fs::write(ws.path().join("secret-name-xyz.txt"), "hello\n").expect("file");
    let out = toolhost_command(
        ws.path(),
        &[
            "call",
            "read_file",
            r#"{"path":"secret-name-xyz.txt"}"#,
            "--mode",
            "yolo",
        ],
    )
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
    .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    .env("OTEL_SERVICE_NAME", "toolhost-e2e")
    .output()
    .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The exporter sends what is left as the process ends.
    let until = Instant::now() + Duration::from_secs(10);
    while received.lock().unwrap().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let received = received.lock().unwrap();
    let (request, body) = received.first().expect("no OTLP request arrived");
    assert!(request.starts_with("POST /v1/traces "), "{request}");
    assert!(
        !body.contains("secret-name-xyz"),
        "an argument value was sent: {body}"
    );
    let traces: serde_json::Value = serde_json::from_str(body).expect("OTLP JSON");
    let resource = &traces["resourceSpans"][0];
    assert!(
        resource["resource"].to_string().contains("toolhost-e2e"),
        "{resource}"
    );
    let spans: Vec<&serde_json::Value> = resource["scopeSpans"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["spans"].as_array().into_iter().flatten())
        .collect();
    let call = spans
        .iter()
        .find(|s| s["name"] == "tool call")
        .unwrap_or_else(|| panic!("no call span: {body}"));
    let attribute = |key: &str| {
        call["attributes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["key"] == key)
            .map(|a| a["value"].clone())
            .unwrap_or_else(|| panic!("no `{key}` on {call}"))
    };
    assert_eq!(attribute("tool")["stringValue"], "read_file");
    assert_eq!(attribute("outcome")["stringValue"], "success");
    assert!(attribute("duration_ms")["doubleValue"].as_f64().is_some());
    assert!(attribute("call_id")["stringValue"].as_str().is_some());
}
