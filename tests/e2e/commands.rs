//! run_command and process through the executor and the real binary: the
//! plugin, the broker and the OS confinement together.

use crate::support::{self, call, executor, kind, stderr, stdout, toolhost, workspace, write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost::{ErrorKind, Grant, Mode};

#[test]
fn run_command_runs_in_the_workspace() {
    let ws = workspace();
    write(ws.path(), "hello.txt", "hi there\n");
    let ex = executor(ws.path());
    let r = call(
        &ex,
        "run_command",
        r#"{"command":"cat hello.txt && echo oops >&2; exit 3"}"#,
    );
    assert!(r.success, "{r:?}");
    assert!(r.content.starts_with("$ cat hello.txt"), "{}", r.content);
    assert!(
        r.content
            .contains("hi there\n[stderr]\noops\n[exit code 3 (failed)"),
        "{}",
        r.content
    );
    let s = r.structured.unwrap();
    assert_eq!(s["exit_code"], 3);
    assert!(
        s["confinement"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "net-ns" || c == "seccomp-net"),
        "{s}"
    );
}

#[test]
fn a_plugin_without_the_grant_is_denied() {
    let ws = workspace();
    let ex = executor(ws.path()).with_grant("run_command", Grant::none());
    let r = call(&ex, "run_command", r#"{"command":"touch made"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied), "{r:?}");
    assert!(
        r.content.contains("not granted the `commands` capability"),
        "{}",
        r.content
    );
    assert!(!ws.path().join("made").exists());
}

#[test]
fn blocked_commands_are_refused_through_the_tool() {
    let ws = workspace();
    let ex = executor(ws.path());
    let r = call(
        &ex,
        "run_command",
        r#"{"command":"echo ok && sudo rm -rf /"}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied), "{r:?}");
    assert!(r.content.contains("another user"), "{}", r.content);
}

#[test]
fn writes_outside_the_workspace_never_reach_the_host() {
    let ws = workspace();
    let ex = executor(ws.path());
    let outside = std::env::temp_dir().join(format!("toolhost-outside-{}", std::process::id()));
    let r = call(
        &ex,
        "run_command",
        &serde_json::json!({
            "command": format!("touch ./inside; touch {} ; echo done", outside.display())
        })
        .to_string(),
    );
    assert!(r.success, "{r:?}");
    assert!(ws.path().join("inside").exists());
    assert!(!outside.exists(), "{}", r.content);
}

#[test]
fn background_commands_through_the_process_tool() {
    let ws = workspace();
    let ex = executor(ws.path());
    let r = call(
        &ex,
        "run_command",
        r#"{"command":"while read l; do echo got:$l; done","background":true}"#,
    );
    assert!(r.success, "{r:?}");
    let id = r.structured.unwrap()["command_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let w = call(
        &ex,
        "process",
        &format!(r#"{{"action":"write","command_id":"{id}","input":"ping\n"}}"#),
    );
    assert!(w.success, "{w:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = String::new();
    while !seen.contains("got:ping") && Instant::now() < deadline {
        let p = call(
            &ex,
            "process",
            &format!(r#"{{"action":"poll","command_id":"{id}"}}"#),
        );
        seen.push_str(&p.content);
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(seen.contains("got:ping"), "{seen}");
    let list = call(&ex, "process", r#"{"action":"list"}"#);
    assert!(
        list.content.contains(&id) && list.content.contains("running"),
        "{}",
        list.content
    );
    // `session_id`, a name this argument had before any release, is
    // refused like any unknown field.
    let old = call(
        &ex,
        "process",
        &format!(r#"{{"action":"kill","session_id":"{id}"}}"#),
    );
    assert!(!old.success, "{old:?}");
    let k = call(
        &ex,
        "process",
        &format!(r#"{{"action":"kill","command_id":"{id}"}}"#),
    );
    assert!(k.success, "{k:?}");
    let gone = call(&ex, "process", r#"{"action":"clear"}"#);
    assert!(gone.content.contains("removed 1"), "{}", gone.content);
}

#[test]
fn cut_output_is_read_back_through_the_process_tool() {
    let ws = workspace();
    let ex = executor(ws.path());
    let r = call(&ex, "run_command", r#"{"command":"seq 1 50000"}"#);
    assert!(r.success, "{r:?}");
    let s = r.structured.unwrap();
    assert_eq!(s["truncated"], true);
    let id = s["output_id"].as_str().unwrap();
    assert!(r.content.contains("lines omitted"), "{}", &r.content[..200]);
    let page = call(
        &ex,
        "process",
        &format!(r#"{{"action":"output","output_id":"{id}","offset":25000,"limit":2}}"#),
    );
    assert_eq!(
        page.content,
        format!(
            " 25000\t25000\n 25001\t25001\n[{id}: lines 25000-25001 of 50000; continue with offset 25002]"
        )
    );
    let grep = call(
        &ex,
        "process",
        &format!(r#"{{"action":"output","output_id":"{id}","grep":"^4999[0-9]$"}}"#),
    );
    assert!(
        grep.content.contains(" 49999\t49999\n[") && grep.content.contains("10 line(s)"),
        "{}",
        grep.content
    );
}

/// `toolhost call` ends with its one call, so a cut output is not kept
/// under an id no later call could read; the result says what to do.
#[test]
fn a_one_shot_call_promises_no_kept_output() {
    let ws = workspace();
    let v = support::call_cli(
        ws.path(),
        "run_command",
        &serde_json::json!({"command": "seq 1 50000"}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["structured"]["truncated"], true, "{v}");
    assert!(v["structured"]["output_id"].is_null(), "{v}");
    let text = v["content"].as_str().unwrap();
    assert!(!text.contains("kept as"), "{text}");
    assert!(text.contains("redirect it to a file"), "{text}");
}

#[test]
fn commands_may_outlast_the_plugin_timeout_but_not_the_callers() {
    let ws = workspace();
    // The runtime's own limit: a command has its own timeout, so waiting
    // on it is credited to the call.
    let runtime = toolhost::Runtime::new(toolhost::RuntimeConfig {
        cache: toolhost::CacheDir::At(support::cache_dir()),
        cache_key: support::cache_key(),
        limits: toolhost::Limits {
            timeout: Duration::from_millis(500),
            ..toolhost::Limits::default()
        },
        ..toolhost::RuntimeConfig::default()
    })
    .unwrap();
    let runtime = std::sync::Arc::new(runtime);
    let mut registry = toolhost::Registry::new();
    registry.load_builtins(&runtime).unwrap();
    let ex = toolhost::Executor::new(runtime, registry)
        .with_workspace(ws.path())
        .unwrap()
        .with_mode(Mode::Yolo);
    let line = r#"{"command":"sleep 1; echo done"}"#;
    let r = ex.call("run_command", line, &toolhost::CallOptions::default());
    assert!(r.success && r.content.contains("done"), "{r:?}");
    // A deadline the caller sets bounds the whole call, the command too.
    let options = toolhost::CallOptions {
        timeout: Some(Duration::from_millis(500)),
        ..toolhost::CallOptions::default()
    };
    let r = ex.call("run_command", line, &options);
    assert_eq!(r.error_kind(), Some(ErrorKind::Timeout), "{r:?}");
    assert!(!r.content.contains("done"), "{r:?}");
}

#[test]
fn without_a_terminal_dev_commands_are_refused_with_a_way_out() {
    let ws = workspace();
    let out = toolhost(
        ws.path(),
        &[
            "call",
            "run_command",
            r#"{"command":"make no-such-target"}"#,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = support::json(&out);
    assert_eq!(kind(&v), "denied", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("--mode yolo") && message.contains("--dry-run"),
        "{message}"
    );
    // The same command in yolo mode, or matched by an allow pattern, runs.
    let v = support::call_cli(
        ws.path(),
        "run_command",
        &serde_json::json!({"command": "true"}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    let out = toolhost(
        ws.path(),
        &[
            "--allow-command",
            "make *",
            "call",
            "run_command",
            r#"{"command":"make no-such-target"}"#,
            "--json",
        ],
    );
    let v = support::json(&out);
    assert_ne!(kind(&v), "denied", "{v}");
}

/// A variable outside the fixed list makes a command dangerous, and the
/// message says how to allow that variable (an allow pattern would not
/// help); once a person allows it (`--allow-env`, or `settable_env` in
/// [commands]) the command runs in yolo without asking, and other
/// variables still ask.
#[test]
fn variables_a_person_allowed_pass_and_the_hint_says_how() {
    let ws = workspace();
    let call = |flags: &[&str], env: &str| {
        let args = format!(r#"{{"command":"printenv PYTHONPATH","env":{env}}}"#);
        let mut all: Vec<&str> = flags.to_vec();
        all.extend(["call", "run_command", &args, "--mode", "yolo", "--json"]);
        support::json(&toolhost(ws.path(), &all))
    };
    let v = call(&[], r#"{"PYTHONPATH":"src"}"#);
    assert_eq!(kind(&v), "denied", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("--allow-env PYTHONPATH"), "{message}");
    assert!(!message.contains("--allow-command"), "{message}");
    assert!(
        !message.contains("--mode yolo"),
        "yolo does not help: {message}"
    );

    let v = call(&["--allow-env", "PYTHONPATH"], r#"{"PYTHONPATH":"src"}"#);
    assert_eq!(v["success"], true, "{v}");
    assert!(v["content"].as_str().unwrap().contains("src"), "{v}");
    // Set on the line itself, too.
    let line = r#"{"command":"PYTHONPATH=lib printenv PYTHONPATH"}"#;
    let out = toolhost(
        ws.path(),
        &[
            "--allow-env",
            "PYTHONPATH",
            "call",
            "run_command",
            line,
            "--mode",
            "yolo",
            "--json",
        ],
    );
    assert_eq!(support::json(&out)["success"], true, "{}", stdout(&out));

    write(
        ws.path(),
        "toolhost.toml",
        "[commands]\nsettable_env = [\"PYTHONPATH\"]\n",
    );
    let v = call(&["--config", "toolhost.toml"], r#"{"PYTHONPATH":"src"}"#);
    assert_eq!(v["success"], true, "{v}");
    let v = call(
        &["--config", "toolhost.toml"],
        r#"{"PYTHONPATH":"src","LD_PRELOAD":"x.so"}"#,
    );
    assert_eq!(kind(&v), "denied", "other variables still ask: {v}");
    write(
        ws.path(),
        "bad.toml",
        "[commands]\nsettable_env = [\"A=B\"]\n",
    );
    let out = toolhost(ws.path(), &["--config", "bad.toml", "tools"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("settable_env"), "{}", stderr(&out));
}

#[test]
fn dry_run_shows_the_verdict() {
    let ws = workspace();
    let out = toolhost(
        ws.path(),
        &[
            "call",
            "run_command",
            r#"{"command":"rm -rf build"}"#,
            "--dry-run",
        ],
    );
    let text = stdout(&out);
    assert!(
        text.contains("[dry run] would run `rm -rf build`") && text.contains("dangerous"),
        "{text}\n{}",
        stderr(&out)
    );
    let ex = executor(ws.path()).with_mode(Mode::ConfirmAll);
    let r = ex.call(
        "run_command",
        r#"{"command":"touch made"}"#,
        &toolhost::CallOptions {
            context: toolhost::CallContext {
                dry_run: true,
                ..toolhost::CallContext::new()
            },
            ..toolhost::CallOptions::default()
        },
    );
    assert!(r.success && r.content.contains("would ask"), "{r:?}");
    assert!(!ws.path().join("made").exists());
}

/// Live `sleep MARKER` processes.
pub(crate) fn processes_with(marker: &str) -> Vec<u32> {
    let wanted = format!("sleep\0{marker}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            });
            alive && cmdline == wanted.as_bytes()
        })
        .collect()
}

pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn no_background_command_survives_the_executor() {
    let ws = workspace();
    let marker = format!("{}.{}", 700 + std::process::id() % 100, std::process::id());
    let ex = executor(ws.path());
    let args = format!(r#"{{"command":"sleep {marker} & sleep {marker}","background":true}}"#);
    assert!(call(&ex, "run_command", &args).success);
    wait_until("both sleeps to start", || {
        processes_with(&marker).len() == 2
    });
    drop(ex);
    wait_until("every sleep to be killed", || {
        processes_with(&marker).is_empty()
    });
}

#[test]
fn the_cli_refuses_background_commands_it_would_kill_at_exit() {
    // `toolhost call` exits when the call ends; a background command would
    // die with it, so it is refused with what to do instead.
    let ws = workspace();
    let marker = format!("{}.{}", 900 + std::process::id() % 100, std::process::id());
    let args = format!(r#"{{"command":"sleep {marker} & touch started; wait","background":true}}"#);
    let out = toolhost(ws.path(), &["call", "run_command", &args, "--mode", "yolo"]);
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(
        text.contains("denied") && text.contains("toolhost serve") && text.contains("foreground"),
        "{text}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(!ws.path().join("started").exists(), "nothing ran");
    assert!(processes_with(&marker).is_empty());
    // In the foreground it runs.
    let out = toolhost(
        ws.path(),
        &[
            "call",
            "run_command",
            r#"{"command":"echo fine"}"#,
            "--mode",
            "yolo",
        ],
    );
    assert!(
        out.status.success() && stdout(&out).contains("fine"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn no_process_survives_the_host_being_killed() {
    let ws = workspace();
    let marker = format!("{}.{}", 800 + std::process::id() % 100, std::process::id());
    let args = format!(r#"{{"command":"sleep {marker} & sleep {marker}","timeout":120}}"#);
    toolhost(ws.path(), &["tools"]); // warm the cache first
    let mut host = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["call", "run_command", &args, "--mode", "yolo"])
        .current_dir(ws.path())
        .env("TOOLHOST_CACHE_DIR", support::cache_dir())
        .env(
            "TOOLHOST_CACHE_KEY",
            support::cache_key().expect("a key file"),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("both sleeps to start", || {
        processes_with(&marker).len() == 2
    });
    host.kill().unwrap();
    host.wait().unwrap();
    wait_until("every sleep to be killed", || {
        processes_with(&marker).is_empty()
    });
}

/// With commands disabled, the tools that only run commands are not
/// offered (the Python tool system registers run_command only when enabled); a call of
/// one says why, and the other tools are unaffected.
#[test]
fn disabled_commands_hide_the_tools_that_run_them() {
    let ws = workspace();
    let listed = |extra: &[&str]| -> Vec<String> {
        let mut args = extra.to_vec();
        args.extend(["tools", "--json"]);
        let out = toolhost(ws.path(), &args);
        assert!(out.status.success(), "{}", stderr(&out));
        support::json(&out)
            .as_array()
            .expect("a list")
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_owned())
            .collect()
    };
    let on = listed(&[]);
    assert!(on.contains(&"run_command".to_owned()) && on.contains(&"process".to_owned()));
    let off = listed(&["--no-commands"]);
    assert!(!off.contains(&"run_command".to_owned()), "{off:?}");
    assert!(!off.contains(&"process".to_owned()), "{off:?}");
    assert_eq!(on.len() - off.len(), 2, "only the two command tools go");

    let out = toolhost(
        ws.path(),
        &[
            "--no-commands",
            "call",
            "--mode",
            "yolo",
            "--json",
            "run_command",
            r#"{"command":"true"}"#,
        ],
    );
    let result = support::json(&out);
    assert_eq!(result["error"]["kind"], "denied", "{result}");
    let message = result["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("commands are disabled") && message.contains("nothing was run"),
        "{message}"
    );

    // The model is not told about commands either.
    let out = toolhost(
        ws.path(),
        &["--no-commands", "schema", "--format", "openai"],
    );
    assert!(
        !stdout(&out).contains("\"run_command\""),
        "{}",
        stdout(&out)
    );
}

/// `toolhost call` ends its executor with `end_at_exit`, which leaves the
/// runtime's memory to the exit but must still end everything with effects
/// outside the process: the commands' private temporary directory and
/// their cgroup, which a thread of its own removes after the command (the
/// exit waits for it); and no process a command left behind survives.
#[test]
fn a_cli_call_leaves_no_temp_dir_or_process_behind() {
    cli_call_leaves_nothing_behind(false);
}

/// The same, where the host can make cgroups: the command ran in one of
/// its own, named after the host's pid, and that directory is gone.
#[test]
#[ignore = "needs a pids cgroup the host can make (root, or a delegated cgroup); .ci/run runs it"]
fn a_cli_call_leaves_no_cgroup_behind() {
    cli_call_leaves_nothing_behind(true);
}

fn cli_call_leaves_nothing_behind(in_cgroup: bool) {
    use std::path::Path;
    let ws = workspace();
    let tmp = tempfile::tempdir().unwrap();
    let marker = format!(
        "{}.{}{}",
        600 + std::process::id() % 100,
        std::process::id(),
        u8::from(in_cgroup)
    );
    let args = format!(
        r#"{{"command":"(sleep {marker} > /dev/null 2>&1 &); cat /proc/self/cgroup; echo ran"}}"#
    );
    let child =
        support::toolhost_command(ws.path(), &["call", "run_command", &args, "--mode", "yolo"])
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let text = stdout(&out);
    assert!(
        out.status.success() && text.contains("ran"),
        "{text}{}",
        stderr(&out)
    );

    // The broker made its private temporary directory under TMPDIR, and it
    // is gone.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");

    let own = format!("toolhost-{pid}-");
    let line = text.lines().find(|l| l.contains(&own));
    if in_cgroup {
        let line = line.unwrap_or_else(|| {
            panic!(
                "the command ran in no cgroup of toolhost's ({text}): run as root or in a \
                 delegated cgroup, or run without --include-ignored"
            )
        });
        let path = line.splitn(3, ':').nth(2).unwrap().trim_start_matches('/');
        let dir = [
            "/sys/fs/cgroup/pids",
            "/sys/fs/cgroup",
            "/sys/fs/cgroup/unified",
        ]
        .iter()
        .map(|root| Path::new(root).join(path))
        .find(|d| d.parent().is_some_and(Path::exists))
        .expect("the cgroup hierarchy the command was in");
        let parent = dir.parent().unwrap();
        let left: Vec<_> = std::fs::read_dir(parent)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| name.starts_with(&own))
            .collect();
        assert!(
            left.is_empty(),
            "cgroups left in {}: {left:?}",
            parent.display()
        );
    }

    // The process the command left running is gone too (the broker kills
    // it when the command ends, before `end_at_exit`; checked end to end).
    wait_until("the left-behind sleep to be killed", || {
        processes_with(&marker).is_empty()
    });
}
