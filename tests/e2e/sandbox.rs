//! The sandbox holds: escapes are refused, misbehaving plugins are stopped
//! and classified, grants are enforced, and the host keeps serving.

use crate::support::{call, executor, workspace, write};
use std::time::{Duration, Instant};
use toolhost::{CallOptions, ErrorKind, Executor, Grant};

/// Outside the workspace: a secret the tools must never show.
fn secret_outside() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("secret.txt");
    std::fs::write(&path, "TOP-SECRET-CONTENT\n").expect("write secret");
    (dir, path)
}

/// After a refused or failed call, the host still serves a normal one.
fn assert_next_call_works(executor: &Executor) {
    let r = call(executor, "read_file", r#"{"path":"ok.txt"}"#);
    assert!(r.success, "the next call failed: {r:?}");
    assert_eq!(r.content, "     1\tfine\n");
}

fn ws_with_ok_file() -> tempfile::TempDir {
    let ws = workspace();
    write(ws.path(), "ok.txt", "fine\n");
    ws
}

fn assert_refused(r: &toolhost::ToolResult) {
    assert!(
        matches!(r.error_kind(), Some(ErrorKind::Denied | ErrorKind::Retry)),
        "expected denied or retry, got {r:?}"
    );
    assert!(
        !r.content.contains("TOP-SECRET"),
        "secret leaked: {}",
        r.content
    );
    if let Some(s) = &r.structured {
        assert!(!s.to_string().contains("TOP-SECRET"), "secret leaked: {s}");
    }
}

/// read_file refuses each path as `denied` and shows nothing of what is
/// outside (the secret, /etc/passwd).
fn assert_read_file_denied(ex: &Executor, paths: &[&str]) {
    for path in paths {
        let r = call(
            ex,
            "read_file",
            &serde_json::json!({ "path": path }).to_string(),
        );
        assert_refused(&r);
        assert_eq!(r.error_kind(), Some(ErrorKind::Denied), "{path}: {r:?}");
        assert!(!r.content.contains("root:"), "{path}: {}", r.content);
    }
}

#[test]
fn parent_traversal_is_refused() {
    let (_outside, secret) = secret_outside();
    let ws = ws_with_ok_file();
    let ex = executor(ws.path());
    // A relative path from the workspace up to the secret.
    let depth = ws
        .path()
        .canonicalize()
        .expect("canonical")
        .components()
        .count();
    let up = "../".repeat(depth);
    let rel = format!(
        "{up}{}",
        secret
            .canonicalize()
            .expect("canonical")
            .display()
            .to_string()
            .trim_start_matches('/')
    );
    assert_read_file_denied(&ex, &[rel.as_str(), "../secret.txt", "a/../../secret.txt"]);
    assert_next_call_works(&ex);
}

#[test]
fn absolute_paths_outside_are_refused() {
    let (_outside, secret) = secret_outside();
    let ws = ws_with_ok_file();
    let ex = executor(ws.path());
    assert_read_file_denied(&ex, &["/etc/passwd", &secret.display().to_string()]);
    assert_next_call_works(&ex);
}

#[test]
fn symlinks_leading_outside_are_refused() {
    let (outside, secret) = secret_outside();
    let ws = ws_with_ok_file();
    std::os::unix::fs::symlink(&secret, ws.path().join("link.txt")).expect("symlink");
    std::os::unix::fs::symlink(outside.path(), ws.path().join("linkdir")).expect("symlink");
    std::os::unix::fs::symlink("/etc/passwd", ws.path().join("passwd")).expect("symlink");
    let ex = executor(ws.path());
    assert_read_file_denied(&ex, &["link.txt", "linkdir/secret.txt", "passwd"]);
    assert_next_call_works(&ex);
}

#[test]
fn a_symlink_inside_the_workspace_is_followed() {
    let ws = ws_with_ok_file();
    std::os::unix::fs::symlink("ok.txt", ws.path().join("alias.txt")).expect("symlink");
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"alias.txt"}"#);
    assert!(r.success, "{r:?}");
}

#[test]
fn an_infinite_loop_times_out_within_the_deadline_plus_one_second() {
    let ws = ws_with_ok_file();
    let ex = executor(ws.path());
    let options = CallOptions {
        timeout: Some(Duration::from_secs(1)),
        ..CallOptions::default()
    };
    let started = Instant::now();
    let r = ex.call("misbehave", r#"{"action":"loop"}"#, &options);
    let elapsed = started.elapsed();
    assert_eq!(r.error_kind(), Some(ErrorKind::Timeout), "{r:?}");
    assert!(r.content.contains("1 s limit"), "{}", r.content);
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(2),
        "took {elapsed:?}"
    );
    assert_next_call_works(&ex);
}

#[test]
fn allocating_a_gibibyte_is_out_of_memory() {
    let ws = ws_with_ok_file();
    let ex = executor(ws.path());
    let r = call(&ex, "misbehave", r#"{"action":"alloc","mib":1024}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::OutOfMemory), "{r:?}");
    assert!(r.content.contains("256 MiB"), "{}", r.content);
    // Below the limit the same plugin works.
    let r = call(&ex, "misbehave", r#"{"action":"alloc","mib":16}"#);
    assert!(r.success, "{r:?}");
    assert_next_call_works(&ex);
}

#[test]
fn a_panic_is_a_trap_with_the_panic_message() {
    let ws = ws_with_ok_file();
    let ex = executor(ws.path());
    let r = call(&ex, "misbehave", r#"{"action":"panic"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::Trap), "{r:?}");
    assert!(
        r.content.contains("misbehave was asked to panic"),
        "{}",
        r.content
    );
    assert_next_call_works(&ex);
}

#[test]
fn a_read_grant_cannot_write_and_the_file_is_unchanged() {
    let ws = ws_with_ok_file();
    let ex = executor(ws.path()).with_grant(
        "misbehave",
        Grant::parse_caps("workspace:read").expect("caps"),
    );
    for path in ["ok.txt", "new.txt"] {
        let args =
            serde_json::json!({"action": "write", "path": path, "content": "changed"}).to_string();
        let r = call(&ex, "misbehave", &args);
        assert_eq!(r.error_kind(), Some(ErrorKind::Denied), "{path}: {r:?}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join("ok.txt")).expect("read"),
        "fine\n"
    );
    assert!(!ws.path().join("new.txt").exists());
    // It can still read.
    let r = call(&ex, "misbehave", r#"{"action":"read","path":"ok.txt"}"#);
    assert!(r.success, "{r:?}");
    assert_next_call_works(&ex);
}

#[test]
fn a_write_grant_can_write() {
    let ws = ws_with_ok_file();
    let ex = executor(ws.path()).with_grant(
        "misbehave",
        Grant::parse_caps("workspace:write").expect("caps"),
    );
    let r = call(
        &ex,
        "misbehave",
        r#"{"action":"write","path":"new.txt","content":"made"}"#,
    );
    assert!(r.success, "{r:?}");
    assert_eq!(r.changed_paths, vec!["new.txt"]);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("new.txt")).expect("read"),
        "made"
    );
}

#[test]
fn a_third_party_plugin_without_a_grant_sees_no_files() {
    let (_outside, secret) = secret_outside();
    let ws = ws_with_ok_file();
    let ex = executor(ws.path());
    for args in [
        serde_json::json!({"action": "list", "path": "."}),
        serde_json::json!({"action": "list", "path": "/"}),
        serde_json::json!({"action": "read", "path": "ok.txt"}),
        serde_json::json!({"action": "read", "path": "/etc/passwd"}),
        serde_json::json!({"action": "read", "path": secret}),
    ] {
        let r = call(&ex, "misbehave", &args.to_string());
        assert!(!r.success, "{args}: {r:?}");
        // Neither the file's content nor (for listings) its name shows.
        assert!(!r.content.contains("fine"), "{args}: {}", r.content);
        if args["action"] == "list" {
            assert!(!r.content.contains("ok.txt"), "{args}: {}", r.content);
        }
        assert!(
            !r.content.contains("root:") && !r.content.contains("TOP-SECRET"),
            "{args}: {}",
            r.content
        );
    }
    let r = call(
        &ex,
        "misbehave",
        r#"{"action":"write","path":"x.txt","content":"x"}"#,
    );
    assert!(!r.success);
    assert!(!ws.path().join("x.txt").exists());
}

#[test]
fn stdout_and_stderr_noise_is_captured_not_returned() {
    let ws = ws_with_ok_file();
    let ex = executor(ws.path());
    let r = call(&ex, "misbehave", r#"{"action":"print","lines":100000}"#);
    assert!(r.success, "{r:?}");
    assert_eq!(r.content, "printed 100000 lines");
}

#[test]
fn concurrent_calls_are_isolated() {
    let ws = ws_with_ok_file();
    for i in 0..8 {
        write(ws.path(), &format!("f{i}.txt"), format!("file {i}\n"));
    }
    let ex = executor(ws.path());
    std::thread::scope(|s| {
        for i in 0..8 {
            let ex = &ex;
            s.spawn(move || {
                for _ in 0..20 {
                    let r = call(ex, "read_file", &format!(r#"{{"path":"f{i}.txt"}}"#));
                    assert_eq!(r.content, format!("     1\tfile {i}\n"), "{r:?}");
                }
            });
        }
        // A crash and a timeout in the middle of it all harm nobody.
        s.spawn(|| {
            assert_eq!(
                call(&ex, "misbehave", r#"{"action":"panic"}"#).error_kind(),
                Some(ErrorKind::Trap)
            )
        });
    });
}

#[test]
fn the_compile_cache_holds_the_component_and_its_description() {
    // Loading the registry (done by every executor) fills the cache.
    let _ = executor(ws_with_ok_file().path());
    let dir = crate::support::cache_dir();
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("cache dir exists")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.ends_with(".cwasm")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with(".info.json")), "{names:?}");
    // A second runtime over the same cache loads without compiling: the
    // descriptions come from the cache and calls deserialise the code.
    let rt = toolhost::Runtime::new(toolhost::RuntimeConfig {
        cache: toolhost::CacheDir::At(dir),
        cache_key: crate::support::cache_key(),
        ..toolhost::RuntimeConfig::default()
    })
    .expect("runtime");
    let mut reg = toolhost::Registry::new();
    reg.load_builtins(&rt).expect("load");
    let ws = ws_with_ok_file();
    let ex = Executor::new(std::sync::Arc::new(rt), reg)
        .with_workspace(ws.path())
        .expect("ws");
    assert_next_call_works(&ex);
}

/// A compiled file in the cache swapped for another tool's (as a command
/// that could write the cache would) is not loaded: the tool is compiled
/// again, answers as itself, and the host says why.
#[test]
fn a_swapped_compiled_file_is_compiled_again_not_loaded() {
    let cache = tempfile::tempdir().unwrap();
    let ws = ws_with_ok_file();
    let call = |args: &[&str]| {
        crate::support::toolhost_with_env(ws.path(), args, &[("TOOLHOST_CACHE_DIR", cache.path())])
    };
    // Each tool compiled once into a cache of its own: the compiled file
    // each call adds is that tool's.
    let compiled_files = || -> std::collections::BTreeSet<std::path::PathBuf> {
        std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
            .collect()
    };
    let mut keys = std::collections::HashMap::new();
    for (tool, args) in [
        ("read_file", r#"{"path":"ok.txt"}"#),
        ("grep", r#"{"pattern":"fine"}"#),
    ] {
        let before = compiled_files();
        let out = call(&["call", tool, args]);
        assert!(out.status.success(), "{}", crate::support::stderr(&out));
        let added: Vec<_> = compiled_files().difference(&before).cloned().collect();
        assert_eq!(added.len(), 1, "{tool}: {added:?}");
        keys.insert(tool, added[0].clone());
    }
    let compiled = |tool: &str| keys[tool].clone();
    assert!(compiled("read_file").is_file() && compiled("grep").is_file());
    std::fs::copy(compiled("grep"), compiled("read_file")).unwrap();
    let out = call(&["call", "read_file", r#"{"path":"ok.txt"}"#]);
    let (stdout, stderr) = (crate::support::stdout(&out), crate::support::stderr(&out));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("fine"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("does not match what toolhost recorded"),
        "{stderr}"
    );
    assert_ne!(
        std::fs::read(compiled("read_file")).unwrap(),
        std::fs::read(compiled("grep")).unwrap(),
        "the recompiled file replaced the swapped one"
    );
}

/// The sandbox itself, not the SDK's path checks, stops a plugin with a
/// workspace grant that opens paths as it likes.
#[test]
fn the_sandbox_confines_a_plugin_that_skips_path_checks() {
    let (outside, secret) = secret_outside();
    let ws = ws_with_ok_file();
    let outside_name = outside
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("linkdir")).expect("symlink");
    // A relative symlink climbing out of the workspace.
    let up = "../".repeat(ws.path().components().count());
    let rel_target = format!(
        "{up}{}",
        secret.display().to_string().trim_start_matches('/')
    );
    std::os::unix::fs::symlink(&rel_target, ws.path().join("rel-link.txt")).expect("symlink");
    let ex = executor(ws.path()).with_grant(
        "misbehave",
        Grant::parse_caps("workspace:read").expect("caps"),
    );
    for path in [
        "../secret.txt".to_owned(),
        format!("../{outside_name}/secret.txt"),
        secret.display().to_string(),
        "linkdir/secret.txt".to_owned(),
        "rel-link.txt".to_owned(),
        rel_target.clone(),
    ] {
        let r = call(
            &ex,
            "misbehave",
            &serde_json::json!({"action": "read", "path": path}).to_string(),
        );
        assert!(!r.success, "{path}: {r:?}");
        assert!(!r.content.contains("TOP-SECRET"), "{path}: {}", r.content);
    }
    for path in ["..", "linkdir", "/"] {
        let r = call(
            &ex,
            "misbehave",
            &serde_json::json!({"action": "list", "path": path}).to_string(),
        );
        assert!(!r.content.contains("secret.txt"), "{path}: {}", r.content);
    }
    assert_next_call_works(&ex);
}

#[test]
fn writing_through_a_symlink_out_of_the_workspace_is_refused() {
    let (outside, secret) = secret_outside();
    let ws = ws_with_ok_file();
    std::os::unix::fs::symlink(&secret, ws.path().join("out.txt")).expect("symlink");
    std::os::unix::fs::symlink(outside.path(), ws.path().join("outdir")).expect("symlink");
    let ex = executor(ws.path()).with_grant(
        "misbehave",
        Grant::parse_caps("workspace:write").expect("caps"),
    );
    for path in [
        "out.txt",
        "outdir/secret.txt",
        "outdir/new.txt",
        "../new.txt",
    ] {
        let args =
            serde_json::json!({"action": "write", "path": path, "content": "pwned"}).to_string();
        let r = call(&ex, "misbehave", &args);
        assert!(!r.success, "{path}: {r:?}");
    }
    assert_eq!(
        std::fs::read_to_string(&secret).expect("read"),
        "TOP-SECRET-CONTENT\n"
    );
    assert!(!outside.path().join("new.txt").exists());
    assert_next_call_works(&ex);
}

#[test]
fn changed_paths_outside_the_workspace_are_dropped() {
    let ws = ws_with_ok_file();
    let ex = executor(ws.path());
    for (path, kept) in [
        ("src/a.rs", true),
        ("../x", false),
        ("/etc/passwd", false),
        ("a/../../x", false),
    ] {
        let r = call(
            &ex,
            "misbehave",
            &serde_json::json!({"action": "report", "path": path}).to_string(),
        );
        assert!(r.success, "{r:?}");
        assert_eq!(
            r.changed_paths == vec![path.to_owned()],
            kept,
            "{path}: {:?}",
            r.changed_paths
        );
    }
}

#[test]
fn a_plugin_error_keeps_its_kind_and_hint() {
    let ws = ws_with_ok_file();
    let r = call(&executor(ws.path()), "misbehave", r#"{"action":"fail"}"#);
    let err = r.error.expect("an error");
    assert_eq!(err.kind, ErrorKind::Failed);
    assert_eq!(err.message, "misbehave failed on purpose");
    assert_eq!(err.hint.as_deref(), Some("ask it not to"));
}

/// The runtime `toolhost call` builds (no instance pool: set up for one
/// call it would cost more than the call) loads what the pooled runtimes
/// compiled into the same cache, and keeps every limit.
#[test]
fn a_runtime_without_a_pool_shares_the_cache_and_keeps_the_limits() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use toolhost::{CacheDir, CompileEvent, CompileProgress, Registry, Runtime, RuntimeConfig};
    let ws = ws_with_ok_file();
    // The pooled runtime of this test binary has compiled both tools.
    let pooled = executor(ws.path());
    assert_next_call_works(&pooled);
    assert!(call(&pooled, "misbehave", r#"{"action":"alloc","mib":1}"#).success);
    let compiled = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&compiled);
    let runtime = Runtime::new(RuntimeConfig {
        cache: CacheDir::At(crate::support::cache_dir()),
        cache_key: crate::support::cache_key(),
        pool_instances: false,
        progress: Some(CompileProgress::new(move |event| {
            if let CompileEvent::Started { .. } = event {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        })),
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    let mut registry = Registry::new();
    registry.load_builtins(&runtime).expect("built-ins");
    assert!(
        registry
            .load_dir(&runtime, &crate::support::fixtures_dir())
            .is_empty()
    );
    let ex = Executor::new(Arc::new(runtime), registry)
        .with_workspace(ws.path())
        .expect("ws")
        .with_mode(toolhost::Mode::Yolo);
    assert_next_call_works(&ex);
    let options = CallOptions {
        timeout: Some(Duration::from_secs(1)),
        ..CallOptions::default()
    };
    let started = Instant::now();
    let r = ex.call("misbehave", r#"{"action":"loop"}"#, &options);
    assert_eq!(r.error_kind(), Some(ErrorKind::Timeout), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    let r = call(&ex, "misbehave", r#"{"action":"alloc","mib":1024}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::OutOfMemory), "{r:?}");
    assert!(call(&ex, "misbehave", r#"{"action":"alloc","mib":16}"#).success);
    assert_read_file_denied(&ex, &["../outside.txt"]);
    assert_next_call_works(&ex);
    assert_eq!(
        compiled.load(Ordering::SeqCst),
        0,
        "nothing is compiled again"
    );
}
