//! The built-ins are listed from host/builtins.json, their recorded
//! `describe()` answers, and compiled on first use: a first start answers
//! `tools/list` without Cranelift.

use crate::support::{runtime, workspace};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use toolhost::{
    CacheDir, CallOptions, CompileEvent, CompileProgress, Executor, Mode, Plugin, PluginSource,
    Registry, Runtime, RuntimeConfig,
};

#[test]
fn the_recorded_descriptions_are_what_the_components_say() {
    let runtime = runtime();
    let mut said = BTreeMap::new();
    let mut stale = Vec::new();
    for builtin in toolhost::builtins() {
        let plugin = Plugin::load(&runtime, PluginSource::Builtin(builtin)).unwrap();
        let fresh = plugin.describe_now(&runtime).unwrap();
        if plugin.info() != &fresh {
            stale.push(builtin.crate_name);
        }
        said.insert(builtin.crate_name, fresh);
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(toolhost::RECORDED_BUILTINS);
    if std::env::var_os("TOOLHOST_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&said).unwrap() + "\n";
        std::fs::write(&path, text).unwrap();
        return;
    }
    assert!(
        stale.is_empty(),
        "{} is out of date for {stale:?}: run `TOOLHOST_BLESS=1 cargo test -p toolhost --test e2e \
         cold_start::the_recorded` and commit the file",
        path.display()
    );
    // Nothing recorded for a built-in that no longer exists.
    let recorded: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let names: Vec<&String> = recorded.keys().collect();
    let built: Vec<&str> = said.keys().copied().collect();
    assert_eq!(names, built, "rerun with TOOLHOST_BLESS=1");
}

/// How many compiled components the compile cache `dir` holds.
pub(crate) fn compiled_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            })
            .count()
    })
}

/// A runtime over an empty compile cache that counts what it compiles.
pub(crate) fn counting_runtime(cache: &Path) -> (Arc<Runtime>, Arc<Mutex<Vec<String>>>) {
    let compiled = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&compiled);
    let progress = CompileProgress::new(move |event| {
        if let CompileEvent::Started { what, .. } = event {
            seen.lock().unwrap().push(what.to_owned());
        }
    });
    let runtime = Runtime::new(RuntimeConfig {
        cache: CacheDir::At(cache.to_owned()),
        max_concurrent_calls: 2,
        progress: Some(progress),
        ..RuntimeConfig::default()
    })
    .unwrap();
    (Arc::new(runtime), compiled)
}

#[test]
fn listing_the_builtins_compiles_nothing_and_a_first_call_compiles_only_its_tool() {
    let cache = tempfile::tempdir().unwrap();
    let (runtime, compiled) = counting_runtime(cache.path());
    let mut registry = Registry::new();
    registry.load_builtins(&runtime).unwrap();
    assert_eq!(registry.count(), toolhost::builtins().len());
    assert!(compiled.lock().unwrap().is_empty(), "{compiled:?}");
    assert!(registry.list().all(|p| !p.is_warm()));
    let cached = std::fs::read_dir(cache.path()).unwrap().count();
    assert_eq!(cached, 0, "listing wrote nothing to the compile cache");

    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let executor = Executor::new(Arc::clone(&runtime), registry)
        .with_workspace(ws.path())
        .unwrap()
        .with_mode(Mode::Yolo);
    let result = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(result.success, "{result:?}");
    assert!(result.content.contains("hello"), "{}", result.content);
    assert_eq!(*compiled.lock().unwrap(), ["read_file"]);
    // The second call, and a second runtime over the same cache, compile nothing.
    let again = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(again.success, "{again:?}");
    let (second, compiled_again) = counting_runtime(cache.path());
    let mut registry = Registry::new();
    registry.load_builtins(&second).unwrap();
    registry.get("read_file").unwrap().warm_up(&second).unwrap();
    assert!(
        compiled_again.lock().unwrap().is_empty(),
        "{compiled_again:?}"
    );
}

/// Compiling ahead of use (what `serve` does in the background) fills the
/// compile cache without loading the tools, so an idle server does not keep
/// their machine code mapped; a first call then loads its tool from the
/// cache and compiles nothing. With no cache to fill, the tools are loaded.
#[test]
fn compiling_ahead_fills_the_cache_without_loading_the_tools() {
    let two = |runtime: Arc<Runtime>| {
        let (executor, ws) = two_builtins(runtime);
        while executor.warm_up_next() {}
        (executor, ws)
    };
    let cache = tempfile::tempdir().unwrap();
    let (runtime, compiled) = counting_runtime(cache.path());
    let (executor, _ws) = two(runtime);
    let mut names = compiled.lock().unwrap().clone();
    names.sort();
    assert_eq!(names, ["get_datetime", "read_file"]);
    assert_eq!(
        compiled_files(cache.path()),
        2,
        "both compiled into the cache"
    );
    assert!(
        executor.tools().iter().all(|p| !p.is_warm()),
        "and not loaded"
    );
    let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(r.success && r.content.contains("hello"), "{r:?}");
    assert_eq!(
        compiled.lock().unwrap().len(),
        2,
        "the call compiled nothing"
    );

    let (executor, _ws) = two(uncached_runtime());
    assert!(
        executor.tools().iter().all(|p| p.is_warm()),
        "no cache: loaded"
    );
}

/// get_datetime and read_file in yolo mode over a workspace holding
/// `a.txt`; nothing loaded yet.
pub(crate) fn two_builtins(runtime: Arc<Runtime>) -> (Executor, tempfile::TempDir) {
    let mut registry = Registry::new();
    for builtin in toolhost::builtins() {
        if ["get_datetime", "read_file"].contains(&builtin.crate_name) {
            let plugin = Plugin::load(&runtime, PluginSource::Builtin(builtin)).unwrap();
            registry.register(plugin, false).unwrap();
        }
    }
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let executor = Executor::new(runtime, registry)
        .with_workspace(ws.path())
        .unwrap()
        .with_mode(Mode::Yolo);
    (executor, ws)
}

/// A runtime with no compile cache: every load compiles.
fn uncached_runtime() -> Arc<Runtime> {
    Arc::new(
        Runtime::new(RuntimeConfig {
            cache: CacheDir::Disabled,
            max_concurrent_calls: 2,
            ..RuntimeConfig::default()
        })
        .unwrap(),
    )
}

fn loaded(executor: &Executor, tool: &str) -> bool {
    executor
        .tools()
        .iter()
        .any(|p| p.name() == tool && p.is_warm())
}

/// `Executor::unload_idle` lets go of the loaded tools; their code stays in
/// the compile cache, so the next call loads its tool without compiling.
/// `activity` moves with every call and says when none runs.
#[test]
fn unloaded_tools_load_again_without_compiling() {
    let cache = tempfile::tempdir().unwrap();
    let (runtime, compiled) = counting_runtime(cache.path());
    let (executor, _ws) = two_builtins(runtime);
    let (before, idle) = executor.activity();
    assert!(idle);
    let read = || executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(read().success);
    let (after, idle) = executor.activity();
    assert!(after > before && idle, "{before} {after} {idle}");
    assert!(loaded(&executor, "read_file"));
    assert_eq!(executor.unload_idle(), 1, "only read_file was loaded");
    assert!(!loaded(&executor, "read_file"));
    assert_eq!(executor.unload_idle(), 0);
    let r = read();
    assert!(r.success && r.content.contains("hello"), "{r:?}");
    assert!(loaded(&executor, "read_file"));
    assert_eq!(*compiled.lock().unwrap(), ["read_file"], "compiled once");

    // Without a compile cache, loading again would mean compiling: kept.
    let (executor, _ws) = two_builtins(uncached_runtime());
    let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(r.success, "{r:?}");
    assert_eq!(executor.unload_idle(), 0);
    assert!(loaded(&executor, "read_file"));
}

/// A server with `unload_idle` lets go of its loaded tools once no call
/// has run for that long, and answers the next call as before.
#[test]
fn an_idle_server_lets_go_of_its_tools() {
    let cache = tempfile::tempdir().unwrap();
    let (runtime, compiled) = counting_runtime(cache.path());
    let (executor, _ws) = two_builtins(runtime);
    let executor = Arc::new(executor);
    let options = toolhost::mcp::ServeOptions {
        unload_idle: Some(std::time::Duration::from_millis(200)),
        ..toolhost::mcp::ServeOptions::default()
    };
    crate::support::with_http_client(Arc::clone(&executor), options, async |client| {
        for _ in 0..2 {
            let r = crate::mcp::call(
                client.peer(),
                "read_file",
                serde_json::json!({"path": "a.txt"}),
            )
            .await
            .unwrap();
            assert!(crate::mcp::text(&r).contains("hello"), "{r:?}");
            assert!(loaded(&executor, "read_file"), "loaded for the call");
            let waited = std::time::Instant::now();
            while loaded(&executor, "read_file") {
                assert!(waited.elapsed().as_secs() < 10, "never let go");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    });
    assert_eq!(*compiled.lock().unwrap(), ["read_file"], "compiled once");
}

/// `toolhost serve` over an empty compile cache, with a third-party plugin
/// the cache has never seen: it answers at once, lists the built-ins, and
/// adds the plugin (with tools/list_changed) once it is compiled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_start_answers_at_once_and_adds_new_plugins_when_compiled() {
    use crate::mcp::{Client, call, connect_command, text};
    let ws = workspace();
    let plugins = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    std::fs::copy(
        crate::support::fixtures_dir().join("fixture_echo.wasm"),
        plugins.path().join("echo.wasm"),
    )
    .unwrap();
    let dir = ws.path().display().to_string();
    let plugin_dir = plugins.path().display().to_string();
    let mut command = crate::support::toolhost_command(
        ws.path(),
        &["serve", "--workspace", &dir, "--plugin-dir", &plugin_dir],
    );
    command.env("TOOLHOST_CACHE_DIR", cache.path());
    let client = Client::default();
    let changed = Arc::clone(&client.list_changed);
    let started = std::time::Instant::now();
    let session = connect_command(command, client).await;
    let first = session.list_all_tools().await.unwrap();
    let ready = started.elapsed();
    // Loose, so a slow machine cannot fail it: the bench measures the
    // real figure (docs/benchmarks.md).
    assert!(ready < std::time::Duration::from_secs(10), "{ready:?}");
    assert!(first.iter().any(|t| t.name == "read_file"));
    // Those working through an embedder's services, and web_search
    // without a provider, are not listed here.
    assert_eq!(
        first.iter().filter(|t| t.name != "echo").count(),
        toolhost::builtins().len() - crate::support::UNOFFERED_BUILTINS.len()
            + crate::support::HOST_TOOLS.len()
    );
    // The plugin arrives when compiled (it may already have).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let listed = session.list_all_tools().await.unwrap();
        if listed.iter().any(|t| t.name == "echo") {
            break;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "echo was never added");
        let _ = tokio::time::timeout(left, changed.notified()).await;
    }
    let echoed = call(&session, "echo", serde_json::json!({"n": 1}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), r#"{"n":1}"#);
    let now = call(&session, "get_datetime", serde_json::json!({}))
        .await
        .unwrap();
    assert!(text(&now).contains("UTC"), "{}", text(&now));
    session.cancel().await.unwrap();
}

/// A grant that names a plugin the cache has never seen makes the server
/// wait for it, rather than refuse the grant as an unknown tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_for_an_uncompiled_plugin_waits_for_it() {
    use crate::mcp::{Client, connect_command};
    let ws = workspace();
    let plugins = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    std::fs::copy(
        crate::support::fixtures_dir().join("fixture_echo.wasm"),
        plugins.path().join("echo.wasm"),
    )
    .unwrap();
    let plugin_dir = plugins.path().display().to_string();
    let mut command = crate::support::toolhost_command(
        ws.path(),
        &[
            "--plugin-dir",
            &plugin_dir,
            "--grant",
            "echo=workspace:read",
            "serve",
        ],
    );
    command.env("TOOLHOST_CACHE_DIR", cache.path());
    let session = connect_command(command, Client::default()).await;
    let listed = session.list_all_tools().await.unwrap();
    assert!(
        listed.iter().any(|t| t.name == "echo"),
        "echo is listed at once"
    );
    session.cancel().await.unwrap();
}

/// `toolhost call` over an empty cache compiles only the tool it calls.
#[test]
fn a_first_cli_call_compiles_only_its_tool() {
    let ws = workspace();
    let cache = tempfile::tempdir().unwrap();
    let out = crate::support::toolhost_command(ws.path(), &["call", "get_datetime", "{}"])
        .env("TOOLHOST_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        compiled_files(cache.path()),
        1,
        "only get_datetime was compiled"
    );
}

/// The compile cache keeps to its budget (`[limits] cache_max_mb`): a
/// store evicts what was used longest ago and what a crashed writer left,
/// keeps what was used lately, and a tool it kept loads without compiling.
#[test]
fn the_compile_cache_keeps_to_its_budget() {
    use std::time::{Duration, SystemTime};
    let ws = workspace();
    crate::support::write(ws.path(), "a.txt", "hello\n");
    let cache = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let config = crate::support::write(
        elsewhere.path(),
        "toolhost.toml",
        "[limits]\ncache_max_mb = 256\n",
    );
    let call = |args: &[&str]| {
        let config = config.to_str().unwrap();
        let mut all = vec!["--config", config, "call"];
        all.extend_from_slice(args);
        let out = crate::support::toolhost_command(ws.path(), &all)
            .env("TOOLHOST_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // The entries' compiled files and descriptions (each compiled file
    // has its signature beside it).
    let entries = || -> Vec<String> {
        let all: Vec<String> = std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let mut names: Vec<String> = all
            .iter()
            .filter(|n| !n.ends_with(".mac"))
            .cloned()
            .collect();
        for compiled in names.iter().filter_map(|n| n.strip_suffix(".cwasm")) {
            if !compiled.starts_with("0123") {
                assert!(all.contains(&format!("{compiled}.mac")), "{all:?}");
            }
        }
        names.sort();
        names
    };
    call(&["read_file", r#"{"path":"a.txt"}"#]);
    let read_file = entries();
    assert_eq!(read_file.len(), 1, "{read_file:?}");
    // An old build's entry (sparse: 1 GiB that takes no disk) and a
    // temporary file a process that died while writing left behind.
    let plant = |name: &str, bytes: u64, ago: Duration| {
        let file = std::fs::File::create(cache.path().join(name)).unwrap();
        file.set_len(bytes).unwrap();
        file.set_modified(SystemTime::now() - ago).unwrap();
    };
    let days = Duration::from_secs(3 * 86_400);
    plant("0123456789abcdef0123456789abcdef.cwasm", 1 << 30, days);
    plant("0123456789abcdef0123456789abcdef.info.json", 100, days);
    plant(".tmpDIED", 1 << 20, Duration::from_secs(7200));
    // A call of another tool compiles and stores it: the store prunes.
    call(&["get_datetime", "{}"]);
    let after = entries();
    assert!(
        after
            .iter()
            .all(|n| !n.starts_with("0123") && !n.starts_with(".tmp")),
        "the old entry and the abandoned file are gone: {after:?}"
    );
    assert!(
        after.contains(&read_file[0]),
        "what was used lately stays: {after:?}"
    );
    assert_eq!(after.len(), 2, "{after:?}");
    // read_file loads from the cache, not compiled again (a store would
    // replace the file), and the load marks its entry used: on its
    // signature, the compiled file keeping the change time it is known by.
    use std::os::unix::fs::MetadataExt;
    let kept = cache.path().join(&read_file[0]);
    let mark = kept.with_extension("mac");
    let five_minutes_ago = SystemTime::now() - Duration::from_secs(300);
    std::fs::File::open(&mark)
        .unwrap()
        .set_modified(five_minutes_ago)
        .unwrap();
    let inode = std::fs::metadata(&kept).unwrap().ino();
    call(&["read_file", r#"{"path":"a.txt"}"#]);
    let meta = std::fs::metadata(&kept).unwrap();
    assert_eq!(meta.ino(), inode, "read_file was compiled again");
    let marked = std::fs::metadata(&mark).unwrap().modified().unwrap();
    assert!(marked > five_minutes_ago + Duration::from_secs(60));
    assert_eq!(entries(), after);
}

/// A process keeps calling a tool whose cache file went while it had it
/// loaded (evicted by another process's store, or removed by hand): the
/// loaded code is a mapping of the file, which outlives its name.
#[test]
fn a_loaded_tool_outlives_its_evicted_cache_file() {
    let cache = tempfile::tempdir().unwrap();
    let (first, _) = counting_runtime(cache.path());
    let (executor, _first_ws) = two_builtins(first);
    assert!(
        executor
            .call("read_file", r#"{"path":"a.txt"}"#, &Default::default())
            .success
    );
    // A second process's runtime maps read_file from the cache file.
    let (second, compiled) = counting_runtime(cache.path());
    let (executor, _ws) = two_builtins(second);
    let read = || executor.call("read_file", r#"{"path":"a.txt"}"#, &Default::default());
    assert!(read().success);
    assert!(compiled.lock().unwrap().is_empty(), "loaded from the file");
    for file in std::fs::read_dir(cache.path()).unwrap() {
        std::fs::remove_file(file.unwrap().path()).unwrap();
    }
    for _ in 0..3 {
        let r = read();
        assert!(r.success && r.content.contains("hello"), "{r:?}");
    }
    assert!(
        compiled.lock().unwrap().is_empty(),
        "nothing compiled again"
    );
}

/// A one-shot call reads a plugin file only when it changed: the compile
/// cache remembers its hash on its stamp. A file rewritten in place, its
/// size kept and its modification time set back, is another file all the
/// same: its new tool is listed, not the one remembered.
#[test]
fn a_plugin_rewritten_in_place_with_its_times_set_back_is_read_again() {
    let ws = workspace();
    let cache = tempfile::tempdir().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    let fixture = |name: &str| std::fs::read(crate::support::fixtures_dir().join(name)).unwrap();
    let (echo, misbehave) = (
        fixture("fixture_echo.wasm"),
        fixture("fixture_misbehave.wasm"),
    );
    let size = echo.len().max(misbehave.len()) + 100;
    let file = plugins.path().join("tool.wasm");
    let tools = || {
        let dir = plugins.path().to_str().unwrap();
        let out = crate::support::toolhost_command(ws.path(), &["--plugin-dir", dir, "tools"])
            .env("TOOLHOST_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed = |name: &str| text.lines().any(|l| l.starts_with(&format!("{name} ")));
        (listed("echo"), listed("misbehave"))
    };
    std::fs::write(&file, padded(echo, size)).unwrap();
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    // Left alone long enough for its hash to be remembered, then listed
    // twice: hashed, then known by its stamp.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(tools(), (true, false));
    assert_eq!(tools(), (true, false));
    let memo = std::fs::read_dir(cache.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().ends_with(".file"));
    assert!(memo, "the file's hash is remembered");
    std::fs::write(&file, padded(misbehave, size)).unwrap();
    let rewritten = std::fs::File::options().write(true).open(&file).unwrap();
    rewritten.set_modified(modified).unwrap();
    drop(rewritten);
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(
        (meta.len(), meta.modified().unwrap()),
        (size as u64, modified)
    );
    // Read again at once (changed too lately to be known by a stamp), and
    // once it has settled (its change time is not the one remembered).
    assert_eq!(tools(), (false, true));
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(tools(), (false, true));
}

/// `wasm` with a custom section appended so that it is `size` bytes long
/// (still the same component).
fn padded(mut wasm: Vec<u8>, size: usize) -> Vec<u8> {
    let leb = |mut n: usize| {
        let mut bytes = Vec::new();
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                bytes.push(byte);
                return bytes;
            }
            bytes.push(byte | 0x80);
        }
    };
    // The section: its id (0), its length as LEB128, a one-byte name
    // "p", and zeros; the length's own bytes counted.
    let section = size - wasm.len();
    let length = (1..=5)
        .map(|k| section - 1 - k)
        .find(|&body| leb(body).len() == section - 1 - body)
        .unwrap();
    wasm.push(0);
    wasm.extend_from_slice(&leb(length));
    wasm.extend_from_slice(&[1, b'p']);
    wasm.resize(size, 0);
    wasm
}
