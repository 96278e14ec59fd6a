//! Remote MCP servers as tools (`[mcp_servers]`): a server written with the
//! official Python SDK (tests/interop/remote_server.py) over streamable
//! HTTP and over stdio (started through the broker's sandbox), and another
//! `toolhost serve --http`, each started here on 127.0.0.1. Their tools are
//! listed as `mcp_{server}_{tool}`, called through the whole pipeline
//! (schema refusals, confirmation, dry run, remote errors), a remote
//! `tools/list_changed` reaches our own clients, and a server that is down
//! neither blocks the start nor the other tools.
//!
//! Like tests/e2e/interop.rs, these need a python with the `mcp` package:
//! ignored by a plain `cargo test`, run by .ci/run (which installs it and
//! names it in `TOOLHOST_INTEROP_PYTHON`) with `--include-ignored`.

use crate::interop::python;
use crate::mcp::{Client, call, connect_command, is_error, text};
use crate::mcp_http::http_server;
use crate::support::{json, stderr, stdout, toolhost, toolhost_command, workspace, write};
use serde_json::json;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Python SDK server, over HTTP on `port`.
struct PyServer {
    child: Child,
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/interop/remote_server.py")
        .canonicalize()
        .expect("tests/interop/remote_server.py")
}

fn py_server(python: &str, port: u16, token: &str) -> PyServer {
    py_server_with(python, port, token, &[])
}

/// [`py_server`] with `env` set for it.
fn py_server_with(python: &str, port: u16, token: &str, env: &[(&str, &str)]) -> PyServer {
    let mut child = Command::new(python)
        .arg(script())
        .args(["http", &port.to_string(), token])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the Python server");
    let out = child.stdout.take().expect("stdout");
    let line = std::io::BufReader::new(out).lines().next();
    assert!(
        matches!(&line, Some(Ok(l)) if l.starts_with("listening")),
        "the Python server did not start: {line:?}"
    );
    // uvicorn binds just after saying so.
    let until = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "the Python server never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    PyServer { child }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

const TOKEN: &str = "s3cret-token-for-tests";

fn with_config(ws: &Path, config: &str, args: &[&str]) -> std::process::Output {
    let path = write(ws, "remote.toml", config).display().to_string();
    let mut all = vec!["--config", &path, "--workspace", "."];
    all.extend_from_slice(args);
    toolhost_command(ws, &all)
        .env("PY_TOKEN", TOKEN)
        .env("HOST_SECRET_PROBE", "leaked")
        .output()
        .expect("run toolhost")
}

/// `toolhost call --mode yolo TOOL ARGS` under `config`; its stdout, trimmed.
fn yolo(ws: &Path, config: &str, tool: &str, args: &str) -> String {
    let out = with_config(ws, config, &["call", "--mode", "yolo", tool, args]);
    plain(stdout(&out).trim())
}

/// A remote tool's text without the untrusted-content markers around it,
/// which it must have.
fn plain(text: &str) -> String {
    let (source, body) = toolhost_shared::untrusted::unwrap(text.trim())
        .unwrap_or_else(|| panic!("not marked as untrusted: {text}"));
    assert!(
        source.contains("MCP server") && source.contains("not toolhost"),
        "{source}"
    );
    body.to_owned()
}

fn names(out: &std::process::Output) -> Vec<String> {
    json(out)
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
#[ignore = "needs python3 with the mcp and jsonschema packages (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
fn tools_of_a_python_sdk_server_are_imported_and_called_through_the_pipeline() {
    let py = python();
    let port = free_port();
    let _server = py_server(&py, port, TOKEN);
    let ws = workspace();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = format!(
        "[mcp_servers.py]\nurl = \"{url}\"\nbearer_token_env = \"PY_TOKEN\"\n\
         read_only_tools = [\"getWeather\"]\n\
         [mcp_servers.Read-Only]\nurl = \"{url}\"\nbearer_token_env = \"PY_TOKEN\"\nread_only = true\n\
         [mcp_servers.nokey]\nurl = \"{url}\"\nbearer_token_env = \"NO_SUCH_TOKEN_VAR\"\n\
         [mcp_servers.badkey]\nurl = \"{url}\"\nbearer_token_env = \"HOME\"\n\
         [mcp_servers.down]\nurl = \"http://127.0.0.1:{}/mcp\"\nconnect_timeout_secs = 5\n",
        free_port()
    );
    let ws = ws.path();

    let out = with_config(ws, &config, &["tools", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = names(&out);
    for name in [
        "mcp_py_add",
        "mcp_py_echo",
        "mcp_py_get_weather",
        "mcp_read_only_echo",
    ] {
        assert!(
            listed.contains(&name.to_owned()),
            "{name} missing: {listed:?}"
        );
    }
    assert!(
        !listed
            .iter()
            .any(|n| n.starts_with("mcp_nokey_") || n.starts_with("mcp_badkey_"))
    );
    let tools = json(&out);
    let sensitivity = |name: &str| {
        tools
            .as_array()
            .and_then(|a| a.iter().find(|t| t["name"] == name))
            .map(|t| t["sensitivity"].clone())
    };
    assert_eq!(sensitivity("mcp_py_add"), Some(json!("writes")));
    // A person's word for one tool of a server that is not read-only.
    assert_eq!(sensitivity("mcp_py_get_weather"), Some(json!("read-only")));
    assert_eq!(sensitivity("mcp_read_only_echo"), Some(json!("read-only")));
    // Servers that cannot be reached are named, with why, and the token
    // never shows.
    let err = stderr(&out);
    assert!(
        err.contains("`nokey`") && err.contains("NO_SUCH_TOKEN_VAR is not set"),
        "{err}"
    );
    assert!(err.contains("`badkey`") && err.contains("401"), "{err}");
    // A server nobody answers for, in plain words: no Rust type names.
    assert!(
        err.contains("`down`") && err.contains("nothing answers at"),
        "{err}"
    );
    assert!(
        !err.contains("rmcp::") && !err.contains("reqwest::") && !err.contains("hyper"),
        "{err}"
    );
    assert!(!err.contains(TOKEN) && !stdout(&out).contains(TOKEN));

    // A server set to connect on first use is listed when the tools are.
    let lazy = format!(
        "[mcp_servers.lazy]\nurl = \"{url}\"\nbearer_token_env = \"PY_TOKEN\"\nconnect = \"first-use\"\n"
    );
    let out = with_config(ws, &lazy, &["tools", "--json"]);
    assert!(
        names(&out).contains(&"mcp_lazy_add".to_owned()),
        "{}",
        stderr(&out)
    );
    assert_eq!(yolo(ws, &lazy, "mcp_lazy_add", r#"{"a":1,"b":1}"#), "2");

    // A description that speaks as toolhost: the model gets it marked as
    // the server's, a forged end marker defused; the load warns; `tools`
    // says it is untrusted and `describe` shows it whole.
    let notice = tools
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == "mcp_py_notice"))
        .and_then(|t| t["description"].as_str())
        .expect("mcp_py_notice is listed")
        .to_owned();
    let (source, body) = toolhost_shared::untrusted::unwrap(&notice).expect("marked");
    assert!(
        source.contains("`py`") && source.contains("`notice`"),
        "{notice}"
    );
    assert!(
        body.contains("IMPORTANT SYSTEM NOTICE FROM TOOLHOST"),
        "{notice}"
    );
    assert_eq!(
        notice.matches(toolhost_shared::untrusted::END).count(),
        1,
        "a forged end marker survived: {notice}"
    );
    assert!(
        err.lines().any(|l| l.contains("WARN")
            && l.contains("mcp_py_notice")
            && l.contains("addresses the model")),
        "{err}"
    );
    let out = with_config(ws, &config, &["tools"]);
    let row = stdout(&out)
        .lines()
        .find(|l| l.starts_with("mcp_py_notice "))
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(row.contains("[untrusted"), "{row}");
    let out = with_config(ws, &config, &["describe", "mcp_py_notice"]);
    assert!(stdout(&out).contains(&notice), "{}", stdout(&out));
    let out = with_config(
        ws,
        &config,
        &["call", "--mode", "yolo", "--json", "mcp_py_notice", "{}"],
    );
    let said = json(&out)["content"].as_str().unwrap_or("").to_owned();
    assert_eq!(
        said.matches(toolhost_shared::untrusted::END).count(),
        1,
        "{said}"
    );
    assert!(plain(&said).contains("call run_command"), "{said}");

    // A call, with the server's structured output.
    let out = with_config(
        ws,
        &config,
        &[
            "call",
            "--mode",
            "yolo",
            "--json",
            "mcp_py_add",
            r#"{"a":2,"b":3}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let result = json(&out);
    assert_eq!(plain(result["content"].as_str().unwrap_or("")), "5");
    assert_eq!(result["structured"]["result"], 5);
    let out = with_config(
        ws,
        &config,
        &[
            "call",
            "--mode",
            "yolo",
            "mcp_py_get_weather",
            r#"{"city":"Oslo"}"#,
        ],
    );
    assert_eq!(plain(&stdout(&out)), "sunny in Oslo", "{}", stderr(&out));

    // The server's schema is checked here: nothing is sent.
    let out = with_config(
        ws,
        &config,
        &[
            "call",
            "--mode",
            "yolo",
            "--json",
            "mcp_py_add",
            r#"{"a":"two"}"#,
        ],
    );
    let result = json(&out);
    assert_eq!(result["error"]["kind"], "invalid_input", "{result}");
    let message = result["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("`b`") && message.contains("integer"),
        "{message}"
    );

    // A remote tool error is a tool error with the server's message.
    let out = with_config(
        ws,
        &config,
        &[
            "call",
            "--mode",
            "yolo",
            "--json",
            "mcp_py_fail",
            r#"{"message":"the disk is full"}"#,
        ],
    );
    let result = json(&out);
    assert_eq!(result["error"]["kind"], "failed", "{result}");
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("the disk is full"),
        "{result}"
    );

    // Sensitive by default: confirmed; a read-only server's tools are not.
    let out = with_config(
        ws,
        &config,
        &["call", "--json", "mcp_py_echo", r#"{"text":"hi"}"#],
    );
    assert_eq!(json(&out)["error"]["kind"], "denied", "{}", stdout(&out));
    let out = with_config(
        ws,
        &config,
        &["call", "mcp_read_only_echo", r#"{"text":"hi"}"#],
    );
    assert_eq!(plain(&stdout(&out)), "hi", "{}", stderr(&out));

    // A dry run describes the call and sends nothing: `grow` would add a tool.
    let out = with_config(
        ws,
        &config,
        &["call", "--dry-run", "--json", "mcp_py_grow", "{}"],
    );
    let result = json(&out);
    let said = result["content"].as_str().unwrap_or("");
    assert!(
        said.contains("would send") && said.contains(&url) && said.contains("nothing was sent"),
        "{said}"
    );
    let out = with_config(ws, &config, &["tools", "--json"]);
    assert!(
        !names(&out).contains(&"mcp_py_late".to_owned()),
        "the dry run ran the tool"
    );
}

#[test]
#[ignore = "needs python3 with the mcp and jsonschema packages (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
fn a_stdio_server_runs_as_a_sandboxed_command() {
    let py = python();
    let prefixes = Command::new(&py)
        .args([
            "-c",
            "import sys; print(sys.prefix); print(sys.base_prefix)",
        ])
        .output()
        .expect("python");
    let mut read: Vec<String> = String::from_utf8_lossy(&prefixes.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    read.push(script().parent().expect("dir").display().to_string());
    // The interpreter may be reached through a symlink elsewhere.
    if let Ok(real) = std::fs::canonicalize(&py) {
        read.push(real.parent().expect("dir").display().to_string());
    }
    let ws = workspace();
    let config = format!(
        "[mcp_servers.local]\ncommand = {py:?}\nargs = [{:?}, \"stdio\"]\nenv = {{ GIVEN = \"yes\" }}\n\
         [mcp_servers.open]\ncommand = {py:?}\nargs = [{:?}, \"stdio\"]\nnetwork = true\n\
         [mcp_servers.wipe]\ncommand = \"rm\"\nargs = [\"-rf\", \"/\"]\n\
         [commands]\nread = {read:?}\n",
        script().display().to_string(),
        script().display().to_string()
    );
    let ws = ws.path();
    let call = |tool: &str, args: &str| yolo(ws, &config, tool, args);
    assert_eq!(
        call("mcp_local_get_weather", r#"{"city":"Bergen"}"#),
        "sunny in Bergen"
    );
    // Its environment is the broker's scrubbed one, plus what its section adds.
    assert_eq!(call("mcp_local_environment", r#"{"name":"GIVEN"}"#), "yes");
    assert_eq!(
        call("mcp_local_environment", r#"{"name":"HOST_SECRET_PROBE"}"#),
        "unset"
    );
    // No network unless its section says so: a listener of this machine's
    // loopback cannot be reached from its namespace.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let reach = json!({"port": port.parse::<u16>().expect("port")}).to_string();
    assert_eq!(call("mcp_local_connect", &reach), "unreachable");
    assert_eq!(call("mcp_open_connect", &reach), "connected");
    // The command policy applies to a server's command as to any other.
    let out = with_config(ws, &config, &["tools"]);
    let err = stderr(&out);
    assert!(err.contains("`wipe`") && err.contains("refused"), "{err}");
    // A call of its tools says why they are missing.
    let out = with_config(
        ws,
        &config,
        &[
            "call",
            "--mode",
            "yolo",
            "--json",
            "mcp_wipe_anything",
            "{}",
        ],
    );
    let result = json(&out);
    assert_eq!(result["error"]["kind"], "failed", "{result}");
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("cannot be reached"),
        "{result}"
    );
}

/// The tool names a client sees.
async fn listed(session: &rmcp::service::Peer<rmcp::RoleClient>) -> Vec<String> {
    session
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// Wait until `name` is listed, at most `secs`.
async fn until_listed(session: &rmcp::service::Peer<rmcp::RoleClient>, name: &str, secs: u64) {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        if listed(session).await.iter().any(|n| n == name) {
            return;
        }
        assert!(
            Instant::now() < until,
            "{name} never listed: {:?}",
            listed(session).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python3 with the mcp and jsonschema packages (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
async fn a_toolhost_and_a_python_server_behind_toolhost_serve() {
    let py = python();
    let port = free_port();
    let mut server = Some(py_server(&py, port, TOKEN));
    let upstream_ws = workspace();
    write(upstream_ws.path(), "hello.txt", "hello from upstream\n");
    let upstream = http_server(upstream_ws.path(), &[]);
    let dead = free_port();
    let ws = workspace();
    let config = format!(
        "[mcp_servers.up]\nurl = \"http://{}/mcp\"\nbearer_token_env = \"UP_TOKEN\"\n\
         [mcp_servers.py]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env = \"PY_TOKEN\"\n\
         [mcp_servers.dead]\nurl = \"http://127.0.0.1:{dead}/mcp\"\n",
        upstream.addr
    );
    let path = write(ws.path(), "remote.toml", config)
        .display()
        .to_string();
    let mut command = toolhost_command(
        ws.path(),
        &[
            "--config",
            &path,
            "serve",
            "--workspace",
            ".",
            "--mode",
            "yolo",
        ],
    );
    command.env("PY_TOKEN", TOKEN);
    command.env(
        "UP_TOKEN",
        crate::support::token_of(&upstream.addr).expect("the upstream's token"),
    );
    let client = Client::default();
    let started = Instant::now();
    let session = connect_command(command, client.clone()).await;
    // The dead server holds nothing up: the built-ins are there at once.
    assert!(listed(&session).await.contains(&"read_file".to_owned()));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    // The others' tools come with a tools/list_changed.
    tokio::time::timeout(Duration::from_secs(20), client.list_changed.notified())
        .await
        .expect("tools/list_changed once the servers are listed");
    until_listed(&session, "mcp_up_read_file", 20).await;
    until_listed(&session, "mcp_py_add", 20).await;

    // toolhost's own read_file, through another toolhost.
    let result = call(&session, "mcp_up_read_file", json!({"path": "hello.txt"}))
        .await
        .expect("tools/call");
    assert!(
        text(&result).contains("hello from upstream"),
        "{}",
        text(&result)
    );
    // A refusal of the upstream toolhost is a tool error here.
    let result = call(&session, "mcp_up_read_file", json!({"path": "../outside"}))
        .await
        .expect("tools/call");
    assert!(is_error(&result), "{}", text(&result));

    // A tool added at the Python server reaches our client.
    let result = call(&session, "mcp_py_grow", json!({}))
        .await
        .expect("tools/call");
    assert_eq!(plain(&text(&result)), "grown");
    tokio::time::timeout(Duration::from_secs(20), client.list_changed.notified())
        .await
        .expect("the remote list_changed passed on");
    until_listed(&session, "mcp_py_late", 20).await;
    let result = call(&session, "mcp_py_late", json!({}))
        .await
        .expect("tools/call");
    assert_eq!(plain(&text(&result)), "late tool here");

    // A server that is down: a clear failure, and the next tool is fine.
    let result = call(&session, "mcp_dead_anything", json!({}))
        .await
        .expect("tools/call");
    assert!(
        is_error(&result) && text(&result).contains("cannot be reached"),
        "{}",
        text(&result)
    );
    server.take();
    let result = call(&session, "mcp_py_add", json!({"a": 1, "b": 1}))
        .await
        .expect("tools/call");
    assert!(is_error(&result), "{}", text(&result));
    assert!(text(&result).contains("`py`"), "{}", text(&result));
    let result = call(&session, "mcp_up_read_file", json!({"path": "hello.txt"}))
        .await
        .expect("tools/call");
    assert!(!is_error(&result), "{}", text(&result));

    // Back up at the same address: retried, and served again.
    let _server = py_server(&py, port, TOKEN);
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let result = call(&session, "mcp_py_add", json!({"a": 20, "b": 22}))
            .await
            .expect("tools/call");
        if !is_error(&result) {
            assert_eq!(plain(&text(&result)), "42");
            break;
        }
        assert!(
            Instant::now() < until,
            "never reconnected: {}",
            text(&result)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    session.cancel().await.expect("close");
}

/// Two tools of one server whose names are the same once normalised: the
/// first is offered, and `toolhost tools` and `config check` name the one
/// left out, and why.
#[test]
#[ignore = "needs python3 with the mcp and jsonschema packages (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
fn colliding_remote_names_are_named_not_dropped_silently() {
    let py = python();
    let port = free_port();
    let _server = py_server_with(&py, port, TOKEN, &[("REMOTE_SERVER_CLASH", "1")]);
    let ws = workspace();
    let config = format!(
        "[mcp_servers.clash]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env = \"PY_TOKEN\"\n"
    );
    for args in [&["tools"][..], &["config", "check"][..]] {
        let out = with_config(ws.path(), &config, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let said = stdout(&out);
        assert!(
            said.contains("not offered: [mcp_servers.clash] tool `get-weather`")
                && said.contains("`getWeather`"),
            "{args:?}: {said}"
        );
    }
    let out = with_config(ws.path(), &config, &["tools", "--json"]);
    let listed = names(&out);
    assert_eq!(
        listed
            .iter()
            .filter(|n| *n == "mcp_clash_get_weather")
            .count(),
        1,
        "{listed:?}"
    );
}

#[test]
fn bad_sections_are_refused_with_what_to_do() {
    let ws = workspace();
    for (section, expect) in [
        ("[mcp_servers.x]\n", "neither `url` nor `command`"),
        (
            "[mcp_servers.x]\nurl = \"http://a/mcp\"\ncommand = \"b\"\n",
            "both `url` and `command`",
        ),
        (
            "[mcp_servers.x]\nurl = \"ftp://a/mcp\"\n",
            "not an http or https URL",
        ),
        (
            "[mcp_servers.x]\nurl = \"http://example.com/mcp\"\nbearer_token_env = \"T\"\n",
            "plain http",
        ),
        (
            "[mcp_servers.x]\nurl = \"https://a/mcp\"\nbearer_token_env = \"sk-123 secret\"\n",
            "must name an environment variable",
        ),
        (
            "[mcp_servers.x]\nurl = \"https://a/mcp\"\nargs = [\"-v\"]\n",
            "applies to a stdio server",
        ),
        (
            "[mcp_servers.x]\ncommand = \"srv\"\nbearer_token_env = \"T\"\n",
            "pass a stdio server its token in `env`",
        ),
        (
            "[mcp_servers.a-b]\ncommand = \"srv\"\n[mcp_servers.a_b]\ncommand = \"srv\"\n",
            "both `a_b`",
        ),
        (
            "[mcp_servers.x]\ncommand = \"srv\"\ntimeout_secs = 0\n",
            "timeout_secs is 0",
        ),
        (
            "[mcp_servers.x]\ncommand = \"srv\"\nport = 3\n",
            "unknown field",
        ),
    ] {
        write(ws.path(), "bad.toml", section);
        let out = toolhost(ws.path(), &["--config", "bad.toml", "tools"]);
        assert!(!out.status.success(), "{section} was accepted");
        assert!(stderr(&out).contains(expect), "{section}: {}", stderr(&out));
    }
}
