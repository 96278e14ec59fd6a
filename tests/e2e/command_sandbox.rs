//! The command sandbox as an attacker tries it, through the real binary:
//! the host's environment, secrets, protected paths, root actions, process
//! and file limits, `/dev/shm`, and the fallback. Each test names the
//! attack it runs.
//!
//! Every command that would harm the machine if the sandbox regressed
//! (hostname, mount, writes outside the workspace, many processes) runs in
//! a throwaway namespace around `toolhost` itself ([`contained`]): its own
//! mount, UTS, IPC and PID namespaces, the host's root read-only but for
//! the test's directory, and a fresh `/tmp`. A regression then fails the
//! assertion instead of damaging the CI machine. The clock cannot be
//! namespaced, so `date -s` sets it to the current second.

use crate::support::{self, stdout, toolhost_command};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// The test's own directory: the one place the throwaway namespace keeps
/// writable (workspaces, a fake home, toolhost's state).
pub(crate) struct Scene {
    pub(crate) dir: tempfile::TempDir,
}

impl Scene {
    pub(crate) fn new() -> Self {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("command-sandbox");
        std::fs::create_dir_all(&base).unwrap();
        Self {
            dir: tempfile::tempdir_in(base).unwrap(),
        }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A workspace that is a git repository with a hook and a config.
    pub(crate) fn repo(&self) -> PathBuf {
        let ws = self.path("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(&ws)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["config", "user.email", "t@example.com"]);
        git(&["config", "user.name", "T"]);
        support::write(&ws, "README.md", "hello\n");
        support::write(&ws, ".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
        git(&["add", "README.md"]);
        git(&["commit", "-qm", "first"]);
        ws
    }

    /// `toolhost ARGS` in `cwd`, contained (see the module docs), with
    /// `env` set.
    pub(crate) fn toolhost(&self, cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
        contained(
            self.dir.path(),
            toolhost_command(cwd, args).envs(env.iter().copied()),
        )
    }

    /// run_command `line` in `ws`, allowed without asking (the class is
    /// not what is under test), as JSON.
    pub(crate) fn run(&self, ws: &Path, line: &str, extra: &[&str]) -> serde_json::Value {
        self.run_with(ws, &[], line, extra)
    }

    pub(crate) fn run_with(
        &self,
        ws: &Path,
        env: &[(&str, &str)],
        line: &str,
        extra: &[&str],
    ) -> serde_json::Value {
        let script = ws.join(".attack.sh");
        std::fs::write(&script, line).unwrap();
        let args = serde_json::json!({ "command": "bash .attack.sh", "timeout": 20 }).to_string();
        let mut all = vec![
            "call",
            "run_command",
            &args,
            "--json",
            "--mode",
            "yolo",
            "--allow-command",
            "bash .attack.sh",
        ];
        all.extend_from_slice(extra);
        let out = self.toolhost(ws, env, &all);
        let _ = std::fs::remove_file(&script);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}\n{}",
                stdout(&out),
                support::stderr(&out)
            )
        })
    }
}

/// Run `command` in a throwaway namespace where only `keep` is writable.
pub(crate) fn contained(keep: &Path, command: &mut std::process::Command) -> Output {
    let root = rustix::process::geteuid().is_root();
    // A checkout under /tmp would vanish under the fresh /tmp with the
    // test's directory and the binary: the directory holding them there
    // (entered before the tmpfs covers it) is bound back, read-only but
    // for the test's directory.
    let script = r#"set -e
mount --bind "$KEEP" "$KEEP"
mount -o remount,bind,ro /
if [ -n "$HELD" ]; then cd "$HELD"; fi
mount -t tmpfs -o size=256m tmpfs /tmp
if [ -n "$HELD" ]; then
  mkdir -p "$HELD"
  mount --no-canonicalize --rbind . "$HELD"
  mount -o remount,bind,ro "$HELD"
fi
cd "$CWD"
# A host whose pids cgroups toolhost cannot use.
if [ -n "$TOOLHOST_TEST_NO_CGROUPS" ]; then mount -t tmpfs -o ro tmpfs /sys/fs/cgroup; fi
# A descriptor toolhost itself inherits, as a parent could leave one open.
if [ -n "$TOOLHOST_TEST_FD7" ]; then exec 7<"$TOOLHOST_TEST_FD7"; fi
exec "$@""#;
    let held = held_under_tmp(keep, Path::new(command.get_program()));
    let mut outer = std::process::Command::new("unshare");
    if !root {
        outer.args(["--user", "--map-root-user"]);
    }
    outer
        .args([
            "--mount",
            "--uts",
            "--ipc",
            "--pid",
            "--fork",
            "--mount-proc",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(command.get_program())
        .args(command.get_args())
        .env("KEEP", keep)
        .env("HELD", held.as_deref().unwrap_or(Path::new("")));
    // Entered again once the mounts are made: a directory entered before
    // is the read-only one.
    let cwd = command
        .get_current_dir()
        .map_or_else(|| std::env::current_dir().unwrap(), Path::to_owned);
    outer.current_dir(&cwd).env("CWD", &cwd);
    for (k, v) in command.get_envs() {
        match v {
            Some(v) => outer.env(k, v),
            None => outer.env_remove(k),
        };
    }
    outer.output().expect("unshare runs")
}

/// The directory right below /tmp that holds the test's directory and
/// the binary, for those of them under /tmp; `None` if neither is.
fn held_under_tmp(keep: &Path, program: &Path) -> Option<PathBuf> {
    let top = |p: &Path| {
        p.strip_prefix("/tmp")
            .ok()
            .and_then(|rest| rest.components().next())
            .map(|first| Path::new("/tmp").join(first))
    };
    match (top(keep), top(program)) {
        (None, None) => None,
        (Some(one), None) | (None, Some(one)) => Some(one),
        (Some(a), Some(b)) if a == b => Some(a),
        (keep_top, program_top) => panic!(
            "these tests run toolhost under a fresh /tmp, and {} and {} are under /tmp in different \
             places ({keep_top:?}, {program_top:?}): build and test from one checkout",
            keep.display(),
            program.display()
        ),
    }
}

pub(crate) fn text(v: &serde_json::Value) -> String {
    let s = &v["structured"];
    format!(
        "{}\n{}\n{}",
        v["content"].as_str().unwrap_or(""),
        s["stdout"].as_str().unwrap_or(""),
        s["stderr"].as_str().unwrap_or("")
    )
}

fn confinement(v: &serde_json::Value) -> Vec<String> {
    v["structured"]["confinement"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_hosts_environment_and_command_lines_are_out_of_reach() {
    let scene = Scene::new();
    let ws = scene.repo();
    let canary = format!("canary-{}-{}", std::process::id(), fastrand::u64(..));
    let attack = "cat /proc/$PPID/environ; cat /proc/1/environ; ps eww -e; \
                  for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/environ; tr '\\0' ' ' < $p/cmdline; done; \
                  env; echo done";
    let out = scene.run_with(&ws, &[("TOOLHOST_TEST_CANARY", &canary)], attack, &[]);
    let all = text(&out);
    assert!(all.contains("done"), "{all}");
    assert!(
        !all.contains(&canary),
        "the host's environment leaked: {all}"
    );
    // Only the command's own processes are there.
    assert!(!all.contains("toolhost call"), "{all}");
    assert!(confinement(&out).contains(&"pid-ns".to_owned()), "{out}");
}

// Regression: a command inherited every descriptor toolhost had itself
// inherited without close-on-exec: `cat <&7` read a file its view hides.
#[test]
fn a_descriptor_toolhost_inherited_never_reaches_a_command() {
    let scene = Scene::new();
    let ws = scene.repo();
    let secret = scene.path("elsewhere/id_rsa");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(&secret, "CANARY-PRIVATE-KEY\n").unwrap();
    let fd7 = secret.to_str().unwrap();
    let fallback = scene.path("fallback.toml");
    std::fs::write(&fallback, "[commands]\nnamespaces = false\n").unwrap();
    let fallback = fallback.display().to_string();
    // In the namespace sandbox, and in the fallback (Landlock and seccomp).
    for extra in [&[][..], &["--config", &fallback][..]] {
        let out = scene.run_with(
            &ws,
            &[("TOOLHOST_TEST_FD7", fd7)],
            "cat <&7; ls -l /proc/self/fd; echo done",
            extra,
        );
        let all = text(&out);
        assert!(all.contains("done"), "{all}");
        assert!(
            !all.contains("CANARY") && !all.contains("id_rsa"),
            "an inherited descriptor reached the command ({extra:?}): {all}"
        );
    }
}

#[test]
fn secrets_are_unreadable_however_they_are_read() {
    let scene = Scene::new();
    let ws = scene.repo();
    let home = scene.path("home");
    support::write(&home, ".ssh/id_rsa", "PRIVATE-KEY-canary");
    support::write(&home, ".aws/credentials", "AWS-canary");
    support::write(&home, ".bash_history", "HISTORY-canary");
    support::write(&ws, ".env", "DOTENV-canary");
    support::write(&ws, "config/prod.pem", "PEM-canary");
    let home_text = home.display().to_string();
    let attack = format!(
        "cat {h}/.ssh/id_rsa {h}/.aws/credentials {h}/.bash_history; echo after-cat
cat .env config/prod.pem; echo after-ws
cat /etc/shadow; echo after-shadow
grep -r canary {h} . ; echo after-grep
tar cf - {h} .env config 2>&1 | strings | grep canary; echo after-tar
python3 -c 'print(open(\".env\").read())'; echo after-python
git diff --no-index /dev/null .env; git hash-object .env; echo after-git
ls -la .env config",
        h = home_text
    );
    // Control: unconfined (but contained), the same reads see every canary.
    let control = contained(
        scene.dir.path(),
        std::process::Command::new("bash")
            .args(["-c", &attack])
            .current_dir(&ws),
    );
    let control = String::from_utf8_lossy(&control.stdout).into_owned();
    let out = scene.run_with(&ws, &[("HOME", &home_text)], &attack, &[]);
    let all = text(&out);
    for canary in [
        "PRIVATE-KEY",
        "AWS-canary",
        "HISTORY",
        "DOTENV",
        "PEM-canary",
    ] {
        assert!(
            control.contains(canary),
            "{canary} is not readable even unconfined: {control}"
        );
        assert!(!all.contains(canary), "{canary} leaked: {all}");
    }
    for step in [
        "after-cat",
        "after-ws",
        "after-shadow",
        "after-grep",
        "after-tar",
        "after-python",
        "after-git",
    ] {
        assert!(
            all.contains(step),
            "the command's other work stopped before {step}: {all}"
        );
    }
    assert!(all.contains("Permission denied"), "a clear error: {all}");
    assert!(!all.contains("root:"), "/etc/shadow: {all}");
    let c = confinement(&out);
    assert!(c.iter().any(|c| c == "secrets-masked 2"), "{c:?}");
    // The files are untouched.
    assert_eq!(
        std::fs::read_to_string(ws.join(".env")).unwrap(),
        "DOTENV-canary"
    );
}

#[test]
fn protected_paths_stay_byte_identical_and_git_still_works() {
    let scene = Scene::new();
    let ws = scene.repo();
    let config = std::fs::read(ws.join(".git/config")).unwrap();
    let hook = std::fs::read(ws.join(".git/hooks/pre-commit")).unwrap();
    // An archive holding a hook, to extract over .git.
    let payload = scene.path("payload");
    support::write(&payload, ".git/hooks/pre-commit", "#!/bin/sh\necho PWNED\n");
    let tar = std::process::Command::new("tar")
        .args(["cf"])
        .arg(ws.join("hook.tar"))
        .args(["-C"])
        .arg(&payload)
        .arg(".git")
        .status()
        .unwrap();
    assert!(tar.success());
    let attacks = [
        "echo '[core] fsmonitor = echo PWNED' | xxd -p | xxd -r -p >> .git/config",
        "printf '[core]\\n\\tpager = sh\\n' > x.txt && iconv -f utf-8 -t utf-8 -o .git/config x.txt",
        "echo '[alias] st = !sh' | tee -a .git/config",
        "sed -i 's/^/#/' .git/config",
        "cd .git && echo '[core] editor = sh' >> config",
        "echo 'echo PWNED' >> .gi[t]/hooks/pre-commit",
        "tar xf hook.tar",
        "cp README.md .git/config; cp README.md .git/hooks/pre-commit",
        "mv .git/config /tmp/c; mv README.md .git/hooks/pre-commit",
        "ln -sf /tmp/evil .git/config; ln -sf /tmp/evil .git/hooks/pre-commit",
        "rm -rf .git/hooks; chmod 777 .git/config",
    ];
    for attack in attacks {
        // Control: unconfined (but contained), the attack does change a
        // copy of the repository, so the check below means something.
        let copy = scene.path("copy");
        let _ = std::fs::remove_dir_all(&copy);
        let cp = std::process::Command::new("cp")
            .arg("-a")
            .arg(&ws)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(cp.success());
        let control = contained(
            scene.dir.path(),
            std::process::Command::new("bash")
                .args(["-c", attack])
                .current_dir(&copy),
        );
        let changed = std::fs::read(copy.join(".git/config")).ok() != Some(config.clone())
            || std::fs::read(copy.join(".git/hooks/pre-commit")).ok() != Some(hook.clone());
        assert!(
            changed,
            "the attack `{attack}` changes nothing even unconfined: {control:?}"
        );
        let out = scene.run(&ws, attack, &[]);
        assert_eq!(
            std::fs::read(ws.join(".git/config")).unwrap(),
            config,
            "{attack}: {out}"
        );
        assert_eq!(
            std::fs::read(ws.join(".git/hooks/pre-commit")).unwrap(),
            hook,
            "{attack}: {out}"
        );
    }
    // A cwd of .git changes nothing either.
    let args = serde_json::json!({ "command": "echo x >> config", "cwd": ".git" }).to_string();
    scene.toolhost(
        &ws,
        &[],
        &[
            "call",
            "run_command",
            &args,
            "--mode",
            "yolo",
            "--allow-command",
            "echo **",
        ],
    );
    assert_eq!(std::fs::read(ws.join(".git/config")).unwrap(), config);
    // Normal git use works: objects, refs, the index and HEAD are writable.
    let out = scene.run(
        &ws,
        "echo more >> README.md && git add README.md && git commit -qm second && git checkout -qb topic && git log --oneline | wc -l && git branch --show-current",
        &[],
    );
    let all = text(&out);
    assert!(all.contains("\n2\ntopic\n"), "{all}");
    assert!(!all.contains("PWNED"), "{all}");
}

#[test]
fn protected_paths_a_command_creates_are_moved_aside() {
    let scene = Scene::new();
    let ws = scene.repo();
    let state = scene.path("state");
    let state_text = state.display().to_string();
    let out = scene.run_with(
        &ws,
        &[("XDG_STATE_HOME", &state_text)],
        "mkdir -p .vscode .cargo && echo '{}' > .vscode/tasks.json && printf '[build]\\nrustc-wrapper = \"/tmp/x\"\\n' > .cargo/config.toml; echo made",
        &[],
    );
    let all = text(&out);
    assert!(all.contains("made"), "{all}");
    assert!(!ws.join(".vscode").exists(), "{all}");
    assert!(!ws.join(".cargo/config.toml").exists(), "{all}");
    assert!(all.contains("moved `.vscode`"), "{all}");
    let kept: Vec<_> = walk(&state);
    assert!(
        kept.iter().any(|p| p.ends_with(".vscode/tasks.json")),
        "{kept:?}"
    );
    assert!(
        kept.iter().any(|p| p.ends_with(".cargo/config.toml")),
        "{kept:?}"
    );
}

pub(crate) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn root_actions_fail() {
    let scene = Scene::new();
    let ws = scene.repo();
    let attack = "hostname toolhost-pwned; echo hostname=$?
date -s \"@$(date +%s)\" >/dev/null; echo date=$?
mount -t tmpfs none /mnt 2>&1; echo mount=$?
python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)' 2>/dev/null; echo raw=$?
python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)' 2>/dev/null; echo packet=$?
unshare -r true 2>/dev/null; echo userns=$?
python3 -c 'import ctypes, os, sys; n = {\"x86_64\": 323, \"aarch64\": 282}[os.uname().machine]; sys.exit(0 if ctypes.CDLL(None).syscall(n, 0) >= 0 else 1)' 2>/dev/null; echo userfaultfd=$?
python3 -c 'import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)' 2>/dev/null; echo vsock=$?
python3 -c 'import threading; t = threading.Thread(target=print); t.start(); t.join()'; echo threads=$?
hostname";
    let out = scene.run(&ws, attack, &[]);
    let all = text(&out);
    // Threads still start: clone3's ENOSYS sends the C library to clone.
    assert!(all.contains("threads=0"), "{all}");
    for step in [
        "hostname",
        "date",
        "mount",
        "raw",
        "packet",
        "userns",
        "userfaultfd",
        "vsock",
    ] {
        assert!(all.contains(&format!("{step}=")), "{all}");
        assert!(
            !all.contains(&format!("{step}=0")),
            "{step} succeeded: {all}"
        );
    }
    assert!(!all.contains("toolhost-pwned"), "{all}");
    assert!(
        confinement(&out).contains(&"no-capabilities".to_owned()),
        "{out}"
    );
}

#[test]
fn many_processes_end_at_the_limit_and_the_next_call_is_answered() {
    let out = processes_end_at_the_limit(&[]);
    assert!(
        confinement(&out)
            .iter()
            .any(|c| c.starts_with("process-limit 48")),
        "{out}"
    );
}

/// As root with no pids cgroup (a container's read-only `/sys/fs/cgroup`),
/// where `RLIMIT_NPROC` binds nobody, the command's PID namespace's own
/// `pid_max` holds a fork bomb, and the host's is left as it was.
#[test]
#[ignore = "needs root and Linux 6.14 or later (a pid_max per PID namespace); .ci/run runs it"]
fn as_root_without_a_cgroup_the_pid_namespace_holds_the_limit() {
    assert!(
        rustix::process::geteuid().is_root(),
        "run as root, or without --include-ignored"
    );
    let host_pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let out = processes_end_at_the_limit(&[("TOOLHOST_TEST_NO_CGROUPS", "1")]);
    assert!(
        confinement(&out)
            .iter()
            .any(|c| c == "process-limit 48 (pid namespace, up to 347)"),
        "needs Linux 6.14 or later (uname -r: {:?}): {out}",
        rustix::system::uname().release()
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap(),
        host_pid_max
    );
}

/// A command that tries to start 1,023 processes under `max_processes =
/// 48` fails to fork, and the next call is answered as quickly as
/// before; its JSON answer.
fn processes_end_at_the_limit(env: &[(&str, &str)]) -> serde_json::Value {
    let scene = Scene::new();
    let ws = scene.repo();
    let config = scene.path("limits.toml");
    std::fs::write(&config, "[commands]\nmax_processes = 48\n").unwrap();
    let config_text = config.display().to_string();
    let with_config = ["--config", config_text.as_str()];
    // A baseline for a quick call on this machine, now.
    let started = Instant::now();
    let quick = scene.run_with(&ws, env, "echo ready", &with_config);
    let baseline = started.elapsed();
    assert!(text(&quick).contains("ready"), "{quick}");
    // Bounded, so that a regression cannot hurt the machine: at most 1023
    // processes without the limit.
    support::write(
        &ws,
        "spread.sh",
        "[ \"$1\" -gt 0 ] && { bash spread.sh $(( $1 - 1 )) & bash spread.sh $(( $1 - 1 )); wait; }; sleep 1\n",
    );
    let out = scene.run_with(
        &ws,
        env,
        "timeout 4 bash spread.sh 9; echo ended",
        &with_config,
    );
    let all = text(&out);
    assert!(all.contains("Resource temporarily unavailable"), "{all}");
    let started = Instant::now();
    let next = scene.run_with(&ws, env, "echo next", &with_config);
    assert!(text(&next).contains("next"), "{next}");
    assert!(
        started.elapsed() < baseline + Duration::from_secs(1),
        "the next call took {:?} (a quick one took {baseline:?})",
        started.elapsed()
    );
    out
}

#[test]
fn dev_shm_and_tmp_vanish_with_the_command() {
    let scene = Scene::new();
    let ws = scene.repo();
    let name = format!("toolhost-shm-{}", std::process::id());
    let first = scene.run(
        &ws,
        &format!("echo x > /dev/shm/{name}; echo y > /tmp/{name}; ls /dev/shm /tmp"),
        &[],
    );
    assert!(text(&first).contains(&name), "{first}");
    let second = scene.run(&ws, "ls -A /dev/shm /tmp; echo listed", &[]);
    let all = text(&second);
    assert!(all.contains("listed") && !all.contains(&name), "{all}");
    assert!(!Path::new("/dev/shm").join(&name).exists());
}

#[test]
fn the_fallback_says_what_it_lacks_and_require_sandbox_refuses_it() {
    let scene = Scene::new();
    let ws = scene.repo();
    let config = scene.path("fallback.toml");
    std::fs::write(&config, "[commands]\nnamespaces = false\n").unwrap();
    let config_text = config.display().to_string();
    let out = scene.run(&ws, "echo ran", &["--config", &config_text]);
    assert!(text(&out).contains("ran"), "{out}");
    let c = confinement(&out);
    assert!(c.iter().any(|c| c.starts_with("landlock-fs")), "{c:?}");
    assert!(c.contains(&"seccomp-net".to_owned()), "{c:?}");
    for missing in [
        "user-ns",
        "mount-ns",
        "pid-ns",
        "private-proc",
        "secrets-masked 0",
    ] {
        assert!(
            !c.iter().any(|x| x.starts_with(missing)),
            "{missing} in {c:?}"
        );
    }
    let refused = scene.run(
        &ws,
        "echo ran",
        &["--config", &config_text, "--require-sandbox"],
    );
    assert_eq!(refused["error"]["kind"], "denied", "{refused}");
    let message = refused["content"].as_str().unwrap();
    assert!(
        message.contains("namespaces") && message.contains("nothing was run"),
        "{message}"
    );
    // With namespaces, the same flag runs it.
    let full = scene.run(&ws, "echo ran", &["--require-sandbox"]);
    assert!(text(&full).contains("ran"), "{full}");
}

#[test]
fn trusted_configuration_widens_and_narrows_the_secret_list() {
    let scene = Scene::new();
    let ws = scene.repo();
    support::write(&ws, ".env", "DOTENV-visible");
    support::write(&ws, "notes/private.txt", "NOTES-hidden");
    let config = scene.path("paths.toml");
    std::fs::write(
        &config,
        "[paths]\nnot_secret = [\".env\"]\nsecret = [\"/notes/\"]\n",
    )
    .unwrap();
    let config_text = config.display().to_string();
    let out = scene.run(
        &ws,
        "cat .env notes/private.txt; echo end",
        &["--config", &config_text],
    );
    let all = text(&out);
    assert!(all.contains("DOTENV-visible"), "{all}");
    assert!(
        !all.contains("NOTES-hidden") && all.contains("end"),
        "{all}"
    );
    assert!(
        confinement(&out).contains(&"secrets-masked 1".to_owned()),
        "{out}"
    );
}

#[test]
fn secrets_stay_masked_when_the_temp_dir_is_reached_through_a_symlink() {
    let scene = Scene::new();
    let ws = scene.repo();
    support::write(&ws, ".env", "DOTENV-canary");
    let real = scene.path("tmp-real");
    std::fs::create_dir_all(&real).unwrap();
    let link = scene.path("tmp-link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let link = link.display().to_string();
    // No runtime dir: the view's skeletons go to TMPDIR, a symlink.
    let env = [("TMPDIR", link.as_str()), ("XDG_RUNTIME_DIR", "")];
    let out = scene.run_with(&ws, &env, "cat .env; echo after-cat", &[]);
    let all = text(&out);
    assert!(!all.contains("DOTENV"), "the mask was skipped: {all}");
    assert!(all.contains("after-cat"), "{all}");
    let c = confinement(&out);
    assert!(c.iter().any(|c| c == "secrets-masked 1"), "{c:?}");
}

#[test]
fn a_workspace_holding_the_sandbox_directory_is_refused() {
    let scene = Scene::new();
    let ws = scene.repo();
    // TMPDIR inside the workspace: a command could rewrite the masks and
    // mount points the next command's view is built from.
    let tmp = ws.join("scratch");
    std::fs::create_dir_all(&tmp).unwrap();
    let tmp = tmp.display().to_string();
    let env = [("TMPDIR", tmp.as_str()), ("XDG_RUNTIME_DIR", "")];
    let out = scene.run_with(&ws, &env, "touch ran", &[]);
    let all = text(&out);
    assert!(all.contains("holds toolhost's sandbox directory"), "{out}");
    assert!(!ws.join("ran").exists(), "the command ran: {out}");
}

#[test]
fn a_read_list_holding_the_whole_host_keeps_the_private_mounts_on_top() {
    let scene = Scene::new();
    let ws = scene.repo();
    let home = scene.path("home");
    support::write(&home, "diary.txt", "HOME-canary");
    let config = scene.path("wide.toml");
    std::fs::write(&config, "[commands]\nread = [\"/\"]\n").unwrap();
    let (config_text, home_text) = (config.display().to_string(), home.display().to_string());
    let attack = format!(
        "cat {home_text}/diary.txt; echo after-home
ls /proc | grep -cE '^[0-9]+$'; echo after-proc
ls /dev | wc -l; echo after-dev
touch /tmp/x && echo tmp-writable"
    );
    let out = scene.run_with(
        &ws,
        &[("HOME", &home_text)],
        &attack,
        &["--config", &config_text],
    );
    let all = text(&out);
    assert!(
        !all.contains("HOME-canary"),
        "the home tmpfs was hidden: {all}"
    );
    assert!(
        all.contains("after-home") && all.contains("tmp-writable"),
        "{all}"
    );
    // Only the command's own processes (bash, ls, grep) in its /proc, and
    // the minimal /dev, not the host's.
    let count = |before: &str| {
        all.lines()
            .take_while(|l| *l != before)
            .last()
            .and_then(|l| l.trim().parse::<u32>().ok())
            .unwrap_or(u32::MAX)
    };
    assert!(count("after-proc") <= 5, "the host's /proc: {all}");
    assert!(count("after-dev") <= 12, "the host's /dev: {all}");
}

#[test]
fn toolhosts_own_configuration_is_hidden_even_inside_a_writable_directory() {
    let scene = Scene::new();
    let ws = scene.repo();
    // A person widened `writable` to a directory that holds toolhost's own
    // configuration and trust store.
    let outer = scene.path("outer");
    let (config_home, data_home) = (outer.join("config"), outer.join("data"));
    support::write(
        &config_home,
        "toolhost/toolhost.toml",
        "mode = \"confirm-all\"\n",
    );
    support::write(&data_home, "toolhost/trusted", "TRUST-canary\n");
    let config = scene.path("wide.toml");
    std::fs::write(
        &config,
        format!(
            "[commands]\nwritable = [{:?}]\n",
            outer.display().to_string()
        ),
    )
    .unwrap();
    let (config_text, outer_text) = (config.display().to_string(), outer.display().to_string());
    let attack = format!(
        "cat {outer_text}/data/toolhost/trusted; echo after-read
echo 'mode = \"yolo\"' > {outer_text}/config/toolhost/toolhost.toml && echo wrote-config
echo ok > {outer_text}/allowed.txt && echo wrote-allowed"
    );
    let env = [
        ("XDG_CONFIG_HOME", config_home.to_str().unwrap()),
        ("XDG_DATA_HOME", data_home.to_str().unwrap()),
    ];
    let out = scene.run_with(&ws, &env, &attack, &["--config", &config_text]);
    let all = text(&out);
    assert!(
        !all.contains("TRUST-canary"),
        "the trust store was read: {all}"
    );
    assert!(
        !all.contains("wrote-config"),
        "the configuration was written: {all}"
    );
    assert!(
        all.contains("after-read") && all.contains("wrote-allowed"),
        "{all}"
    );
    assert_eq!(
        std::fs::read_to_string(config_home.join("toolhost/toolhost.toml")).unwrap(),
        "mode = \"confirm-all\"\n"
    );
    // Without namespaces nothing can be hidden: nothing runs.
    std::fs::write(
        &config,
        format!(
            "[commands]\nnamespaces = false\nwritable = [{:?}]\n",
            outer.display().to_string()
        ),
    )
    .unwrap();
    let out = scene.run_with(&ws, &env, &attack, &["--config", &config_text]);
    let all = text(&out);
    assert!(
        all.contains("holds toolhost's own configuration") && !all.contains("after-read"),
        "{all}"
    );
    assert_eq!(
        std::fs::read_to_string(config_home.join("toolhost/toolhost.toml")).unwrap(),
        "mode = \"confirm-all\"\n"
    );
}
