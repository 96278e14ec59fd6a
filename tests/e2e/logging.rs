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
