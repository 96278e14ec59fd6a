//! Shared helpers: one runtime per test binary, executors over temporary
//! workspaces, and a runner for the real `toolhost` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, OnceLock};
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

/// One runtime for the whole test binary: compiling happens once.
pub fn runtime() -> Arc<Runtime> {
    static RUNTIME: OnceLock<Arc<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Arc::new(
                Runtime::new(RuntimeConfig {
                    cache: CacheDir::At(cache_dir()),
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

/// The built-ins that work through an embedder's services, listed only
/// where it offers them.
pub const SERVICE_BUILTINS: [&str; 2] = ["message", "spawn"];

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
    toolhost_full(cwd, args, stdin, &[])
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
        .env_remove("TOOLHOST_LOG");
    cmd
}

fn toolhost_full(cwd: &Path, args: &[&str], stdin: &str, env: &[(&str, &Path)]) -> Output {
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
pub fn http_transport(
    uri: impl Into<Arc<str>>,
) -> rmcp::transport::StreamableHttpClientTransport<reqwest::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    rmcp::transport::StreamableHttpClientTransport::from_uri(uri)
}
