//! Shared helpers: one runtime per test binary, executors over temporary
//! workspaces, and a runner for the real `toolhost` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use toolhost::{
    CacheDir, CallOptions, Executor, Mode, Registry, Runtime, RuntimeConfig, ToolResult,
};

/// Where host/build.rs put the fixture plugins.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("TOOLHOST_FIXTURES_DIR"))
}

/// A compile cache shared by every test in this run (and by the CLI tests).
pub fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-cache")
}

/// The key signing [`cache_dir`]'s entries, which every process of the
/// tests using that cache shares (`TOOLHOST_CACHE_KEY` for the binary).
pub fn cache_key() -> Option<PathBuf> {
    Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-cache.key"))
}

/// One runtime for the whole test binary: compiling happens once.
pub fn runtime() -> Arc<Runtime> {
    static RUNTIME: OnceLock<Arc<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Arc::new(
                Runtime::new(RuntimeConfig {
                    cache: CacheDir::At(cache_dir()),
                    cache_key: cache_key(),
                    ..RuntimeConfig::default()
                })
                .expect("runtime"),
            )
        })
        .clone()
}

/// The built-ins plus the fixture plugins (as third-party plugins).
pub fn registry() -> Registry {
    let runtime = runtime();
    let mut registry = Registry::new();
    registry.load_builtins(&runtime).expect("built-ins load");
    let problems = registry.load_dir(&runtime, &fixtures_dir());
    assert!(
        problems.is_empty(),
        "fixture plugins failed to load: {problems:?}"
    );
    registry
}

/// The built-ins a default configuration does not offer: those working
/// through an embedder's services, and web_search without a provider.
pub const UNOFFERED_BUILTINS: [&str; 3] = ["message", "spawn", "web_search"];

/// The host's own tools, offered beside the built-ins where there is a
/// dynamic-tool store (the default).
pub const HOST_TOOLS: [&str; 2] = ["load_component", "unload_component"];

/// What an embedder might offer: `message` (answers `{"status": "sent"}`)
/// and `spawn` (answers `{"result": "done: TASK"}`).
pub fn embedder_services() -> toolhost::services::Services {
    use toolhost::services::{Service, ServiceCall};
    let mut services = toolhost::services::Services::new();
    let message = Service::new(
        "message",
        "Send a message.",
        serde_json::json!({"type": "object", "required": ["content"]}),
        |_: ServiceCall| async { Ok(serde_json::json!({"status": "sent"})) },
    );
    let spawn = Service::new(
        "spawn",
        "Run a sub-agent.",
        serde_json::json!({"type": "object", "required": ["task"]}),
        |call: ServiceCall| async move {
            let task = call.input["task"].as_str().unwrap_or_default().to_owned();
            Ok(serde_json::json!({"result": format!("done: {task}")}))
        },
    );
    for service in [message, spawn] {
        services
            .register(service.expect("valid"))
            .expect("one each");
    }
    services
}

/// An executor over `workspace` in yolo mode (no confirmation needed),
/// offering [`embedder_services`].
pub fn executor(workspace: &Path) -> Executor {
    Executor::new(runtime(), registry())
        .with_workspace(workspace)
        .expect("workspace exists")
        .with_mode(Mode::Yolo)
        .with_services(embedder_services())
}

/// Call with default options.
pub fn call(executor: &Executor, tool: &str, args: &str) -> ToolResult {
    executor.call(tool, args, &CallOptions::default())
}

/// A temporary workspace.
pub fn workspace() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// `program ARGS` in `dir` (`CARGO_TARGET_DIR` unset, so a cargo it runs
/// builds where its project says); fails the test, with its output, unless
/// it succeeds. Its standard output.
pub fn run_in(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Write `content` to `dir/rel`, creating parents.
pub fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(&path, content).expect("write fixture file");
    path
}

/// Compile every built-in and fixture plugin into the shared cache once, so
/// the `toolhost` processes the tests start (many at once) only load them.
pub fn warm_cache() {
    static WARM: OnceLock<()> = OnceLock::new();
    WARM.get_or_init(|| {
        let runtime = runtime();
        for plugin in registry().list() {
            plugin.warm_up(&runtime).expect("plugin compiles");
        }
    });
}

/// Run the real `toolhost` binary in `cwd` with the shared cache.
pub fn toolhost(cwd: &Path, args: &[&str]) -> Output {
    toolhost_with_stdin(cwd, args, "")
}

/// Like [`toolhost`], feeding `stdin`.
pub fn toolhost_with_stdin(cwd: &Path, args: &[&str], stdin: &str) -> Output {
    toolhost_full::<&Path>(cwd, args, stdin, &[])
}

/// Like [`toolhost`], with environment variables set over the defaults.
pub fn toolhost_with_env(cwd: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    toolhost_full(cwd, args, "", env)
}

/// The `toolhost` binary in `cwd` with the test environment: the shared
/// compile cache, and no user configuration or trust store from the machine
/// running the tests.
pub fn toolhost_command(cwd: &Path, args: &[&str]) -> Command {
    warm_cache();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.args(args)
        .current_dir(cwd)
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env("TOOLHOST_CACHE_KEY", cache_key().expect("a key file"))
        .env(
            "XDG_CONFIG_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-user-config"),
        )
        .env(
            "XDG_DATA_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-data"),
        )
        .env(
            "XDG_STATE_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-state"),
        )
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("TOOLHOST_LOG")
        .env_remove("TOOLHOST_SDK");
    cmd
}

/// `toolhost ARGS` in `cwd` with `stdin` and the extra `env`.
pub fn toolhost_full<V: AsRef<std::ffi::OsStr>>(
    cwd: &Path,
    args: &[&str],
    stdin: &str,
    env: &[(&str, V)],
) -> Output {
    use std::io::Write;
    let mut child = toolhost_command(cwd, args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolhost");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("toolhost ran")
}

/// Stdout as text.
/// Wait (in an async test) until `done`, checking every 50 ms; fail
/// naming `what` after `within`.
pub async fn eventually(what: &str, within: std::time::Duration, mut done: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + within;
    while !done() {
        assert!(std::time::Instant::now() < until, "{what}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Parse `toolhost call --json` output.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            stdout(out),
            stderr(out)
        )
    })
}

/// `line 1\nline 2\n...` up to `n`.
pub fn lines_file(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// `toolhost [flags] call TOOL - --json --mode yolo` with `args` on stdin,
/// in workspace `ws`; the parsed JSON result.
pub fn call_cli(
    ws: &Path,
    tool: &str,
    args: &serde_json::Value,
    flags: &[&str],
) -> serde_json::Value {
    let mut argv: Vec<&str> = flags.to_vec();
    argv.extend(["call", tool, "-", "--json", "--mode", "yolo"]);
    let out = toolhost_with_stdin(ws, &argv, &args.to_string());
    let v = json(&out);
    let code = out.status.code();
    assert_eq!(
        code,
        Some(if v["success"] == true { 0 } else { 1 }),
        "exit code of {tool}: {v}"
    );
    v
}

/// The error kind of a `--json` result (`null` on success).
pub fn kind(v: &serde_json::Value) -> &str {
    v["error"]["kind"].as_str().unwrap_or("")
}

/// Read a file of the workspace as bytes.
pub fn bytes(ws: &Path, rel: &str) -> Vec<u8> {
    std::fs::read(ws.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// The lines of a `toolhost call --json` result's content.
pub fn content_lines(v: &serde_json::Value) -> Vec<String> {
    v["content"]
        .as_str()
        .expect("content is text")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// rmcp's streamable HTTP client transport to `uri`. toolhost's MCP client
/// brings reqwest with rustls and no process-wide crypto provider (its own
/// client is given ring directly), so a default reqwest client, as rmcp's
/// `from_uri` builds, needs one installed first.
/// It sends the token of the server at that address, when a test started
/// one with a token ([`server_token`]).
pub fn http_transport(
    uri: impl Into<Arc<str>>,
) -> rmcp::transport::StreamableHttpClientTransport<reqwest::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let uri: Arc<str> = uri.into();
    let addr = uri
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(uri);
    if let Some(token) = token_of(&addr) {
        config = config.auth_header(token);
    }
    rmcp::transport::StreamableHttpClientTransport::from_config(config)
}

/// The tokens of the servers tests started, by address (`127.0.0.1:PORT`).
static SERVER_TOKENS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Remember that the server at `addr` takes `token`.
pub fn server_token(addr: &str, token: &str) {
    let mut tokens = SERVER_TOKENS.lock().unwrap_or_else(|e| e.into_inner());
    tokens.retain(|(a, _)| a != addr);
    tokens.push((addr.to_owned(), token.to_owned()));
}

/// The token of the server at `addr`, if a test started it with one.
pub fn token_of(addr: &str) -> Option<String> {
    let tokens = SERVER_TOKENS.lock().unwrap_or_else(|e| e.into_inner());
    tokens
        .iter()
        .find(|(a, _)| a == addr)
        .map(|(_, t)| t.clone())
}

/// Serve `executor` over MCP's streamable HTTP on a free loopback port,
/// on a thread of its own (its own tokio runtime, two workers); the
/// address once it listens.
pub fn serve_http_in_background(
    executor: Arc<Executor>,
    options: toolhost::mcp::ServeOptions,
) -> std::net::SocketAddr {
    let (ready, addr) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(toolhost::mcp::http::serve_http(
            executor,
            options,
            toolhost::mcp::http::HttpOptions {
                addr: "127.0.0.1:0".parse().unwrap(),
                auth: toolhost::access::Auth::Open,
                allowed_hosts: Vec::new(),
                allowed_origins: Vec::new(),
                sessions: toolhost::mcp::sessions::SessionLimits::default(),
                review: toolhost::review::SignInLinks::quiet(),
                drain: std::time::Duration::from_secs(5),
                drain_notice: std::time::Duration::ZERO,
            },
            move |bound| ready.send(bound).unwrap(),
        ))
        .unwrap();
    });
    addr.recv().unwrap()
}

/// Serve `executor` over HTTP ([`serve_http_in_background`]) and run
/// `test` with an rmcp client of it, on a current-thread runtime; the
/// client is closed after.
pub fn with_http_client(
    executor: Arc<Executor>,
    options: toolhost::mcp::ServeOptions,
    test: impl AsyncFnOnce(&rmcp::service::RunningService<rmcp::RoleClient, ()>),
) {
    use rmcp::ServiceExt as _;
    let addr = serve_http_in_background(executor, options);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let transport = http_transport(format!("http://{addr}/mcp"));
        let client = ().serve(transport).await.unwrap();
        test(&client).await;
        client.cancel().await.unwrap();
    });
}

/// One request a [`FakeHttp`] server received.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// The path with its query.
    pub path: String,
    /// Every header, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a [`FakeHttp`] server answers: status, extra headers, body, and
/// how long it waits before answering.
#[derive(Debug, Clone, Default)]
pub struct HttpReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub delay: std::time::Duration,
}

impl HttpReply {
    /// `200` with a JSON body.
    pub fn json(body: impl Into<String>) -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.into().into_bytes(),
            ..Self::default()
        }
    }
}

/// A small HTTP/1.1 server on 127.0.0.1 started by a test: each request
/// (answered on a thread of its own, `Connection: close`) is kept and
/// answered by the handler.
pub struct FakeHttp {
    pub port: u16,
    pub seen: Arc<Mutex<Vec<HttpRequest>>>,
}

impl FakeHttp {
    pub fn start(handler: impl Fn(&HttpRequest) -> HttpReply + Send + Sync + 'static) -> Self {
        use std::io::{BufRead as _, Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        let handler = Arc::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                let handler = Arc::clone(&handler);
                std::thread::spawn(move || {
                    let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
                    let mut first = String::new();
                    let _ = reader.read_line(&mut first);
                    let path = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let mut headers = Vec::new();
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        if let Some((n, v)) = line.split_once(':') {
                            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
                        }
                    }
                    let length = headers
                        .iter()
                        .find(|(n, _)| n == "content-length")
                        .and_then(|(_, v)| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    let mut body = vec![0; length];
                    let _ = reader.read_exact(&mut body);
                    let request = HttpRequest {
                        path,
                        headers,
                        body,
                    };
                    let reply = handler(&request);
                    kept.lock().expect("requests").push(request);
                    std::thread::sleep(reply.delay);
                    let extra: String = reply
                        .headers
                        .iter()
                        .map(|(n, v)| format!("{n}: {v}\r\n"))
                        .collect();
                    let mut stream = stream;
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {} X\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
                        reply.status,
                        reply.body.len(),
                    )
                    .and_then(|()| stream.write_all(&reply.body));
                });
            }
        });
        Self { port, seen }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.seen.lock().expect("requests").clone()
    }
}

/// [`crate::soak::id_in_text`], which must find it.
pub fn id_in_text(text: &str, field: &str) -> String {
    crate::soak::id_in_text(text, field).unwrap_or_else(|| panic!("no `{field}` in {text:?}"))
}
