//! Nothing a command leaves behind runs outside the sandbox: each attack
//! runs through the real binary (in the throwaway namespace of
//! [`contained`]), and then the person's own `git status`, `git commit` or
//! `cargo build` runs outside toolhost's sandbox (contained all the same),
//! and the test asserts that no planted code ran, that nothing outside the
//! workspace changed, and that the person's files are where they were.
//!
//! Each attack first runs unconfined on a copy of the workspace (the
//! control): there it does plant code that the person's next command
//! runs, so the test's verdict means something.

use crate::command_sandbox::{Scene, contained, text};
use std::path::{Path, PathBuf};

/// A payload's proof of running: this file exists.
fn pwned(scene: &Scene) -> PathBuf {
    scene.path("PWNED")
}

/// Git configuration that runs `touch <pwned>` on the next `git status`
/// (the fsmonitor hook) and on the next commit (a hooks path).
fn evil_config(scene: &Scene) -> String {
    let pwned = pwned(scene);
    format!(
        "[core]\n\tfsmonitor = \"touch {0}; false\"\n\thooksPath = {1}\n",
        pwned.display(),
        scene.path("evil-hooks").display()
    )
}

/// The person's own commands in `ws`, outside toolhost (contained).
fn person(scene: &Scene, ws: &Path, line: &str) -> String {
    let out = contained(
        scene.dir.path(),
        std::process::Command::new("sh")
            .args(["-c", line])
            .current_dir(ws),
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Set up a scene: the payloads the attacks refer to, outside the
/// workspace.
fn scene() -> Scene {
    let scene = Scene::new();
    let hooks = scene.path("evil-hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let hook = hooks.join("pre-commit");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ntouch {}\n", pwned(&scene).display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(scene.path("evil.config"), evil_config(&scene)).unwrap();
    scene
}

/// A copy of `ws` beside it, for the control.
fn copy_of(scene: &Scene, ws: &Path) -> PathBuf {
    let copy = scene.path("control");
    let _ = std::fs::remove_dir_all(&copy);
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(ws)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    copy
}

/// What the person's git runs after a command.
const GIT_AFTER: &str = "git status --short >/dev/null 2>&1; \
    git -c user.email=p@example.com -c user.name=P commit -q --allow-empty -m after 2>&1; true";

/// Run `attack` unconfined on a copy (it must plant code the person's
/// `after` runs), then through toolhost with `extra` arguments, then the
/// person's `after`: nothing planted may run, and `kept` (paths relative
/// to `ws`) must hold what they held.
fn assert_contained(
    scene: &Scene,
    ws: &Path,
    attack: &str,
    after: &str,
    kept: &[&str],
    extra: &[&str],
) {
    // The payload sits in the workspace, where a command can read it.
    std::fs::copy(scene.path("evil.config"), ws.join("payload.txt")).unwrap();
    let attack = attack.replace("EVIL", "payload.txt");
    let copy = copy_of(scene, ws);
    let _ = std::fs::remove_file(pwned(scene));
    let control = contained(
        scene.dir.path(),
        std::process::Command::new("bash")
            .args(["-c", &attack])
            .current_dir(&copy),
    );
    let shown = person(scene, &copy, after);
    assert!(
        pwned(scene).exists(),
        "the attack `{attack}` plants nothing even unconfined, so this test proves nothing: \
         {control:?}\n{shown}"
    );
    std::fs::remove_file(pwned(scene)).unwrap();
    let _ = std::fs::remove_dir_all(&copy);

    let before: Vec<Option<Vec<u8>>> = kept
        .iter()
        .map(|k| std::fs::read(ws.join(k)).ok())
        .collect();
    let state = scene.path("state").display().to_string();
    let out = scene.run_with(ws, &[("XDG_STATE_HOME", &state)], &attack, extra);
    let shown = person(scene, ws, after);
    assert!(
        !pwned(scene).exists(),
        "`{attack}` planted code the person's `{after}` ran:\n{}\n{shown}",
        text(&out)
    );
    for (k, was) in kept.iter().zip(before) {
        assert_eq!(
            std::fs::read(ws.join(k)).ok(),
            was,
            "`{attack}` changed or moved {k}:\n{}",
            text(&out)
        );
    }
}

/// The fallback (Landlock and seccomp, no namespaces), by configuration.
fn fallback(scene: &Scene) -> String {
    let config = scene.path("fallback.toml");
    std::fs::write(&config, "[commands]\nnamespaces = false\n").unwrap();
    config.display().to_string()
}

/// Each way of pointing the person's next `git` at other code: a
/// `commondir`, `.git` renamed and remade, `.git` replaced by a `gitdir:`
/// file; in the namespace sandbox and in the fallback.
#[test]
fn a_command_cannot_point_the_persons_git_at_its_own_code() {
    let scene = scene();
    let ws = scene.repo();
    let attacks = [
        // A common directory of the command's making.
        "mkdir -p cd/objects cd/refs/heads && cp EVIL cd/config && \
         cp .git/HEAD cd/ && echo ../cd > .git/commondir",
        // The repository renamed, and a new one in its place.
        "mv .git .git.old; mkdir -p .git && cp -r .git.old/. .git/ 2>/dev/null; \
         cat EVIL >> .git/config",
        // A `gitdir:` file in place of the directory.
        "mv .git elsewhere; cat EVIL >> elsewhere/config; echo 'gitdir: elsewhere' > .git",
    ];
    let kept = [".git/config", ".git/hooks/pre-commit", ".git/HEAD"];
    let config = fallback(&scene);
    for attack in attacks {
        assert_contained(&scene, &ws, attack, GIT_AFTER, &kept, &[]);
        assert_contained(
            &scene,
            &ws,
            attack,
            GIT_AFTER,
            &kept,
            &["--config", &config],
        );
    }
}

/// A nested repository and a `.cargo` directory are pinned as the
/// workspace's own `.git` is.
#[test]
fn nested_repositories_and_cargo_settings_stay_where_they_are() {
    let scene = scene();
    let ws = scene.repo();
    let nested = ws.join("nested");
    std::fs::create_dir_all(&nested).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&nested)
        .status()
        .unwrap();
    assert!(git.success());
    assert_contained(
        &scene,
        &ws,
        "mv nested/.git nested/.g; mkdir -p nested/.git; cp -r nested/.g/. nested/.git/; \
         cat EVIL >> nested/.git/config",
        "cd nested && git status --short >/dev/null 2>&1; true",
        &["nested/.git/config", "nested/.git/HEAD"],
        &[],
    );

    // Cargo: a project whose `.cargo` a command replaces.
    crate::support::write(
        &ws,
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    crate::support::write(&ws, "src/main.rs", "fn main() {}\n");
    crate::support::write(&ws, ".cargo/env.toml", "# the person's\n");
    let wrapper = scene.path("wrapper.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ntouch {}\nexec \"$@\"\n",
            pwned(&scene).display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let attack = format!(
        "mv .cargo .cargo.old; mkdir -p .cargo; printf '[build]\\nrustc-wrapper = \"{}\"\\n' > .cargo/config.toml",
        wrapper.display()
    );
    let build = format!(
        "CARGO_TARGET_DIR={} cargo build --offline -q 2>&1; true",
        scene.path("target").display()
    );
    assert_contained(&scene, &ws, &attack, &build, &[".cargo/env.toml"], &[]);
}

/// A workspace that is a git worktree: its `.git` is a file naming the
/// repository, and no command may change where it points.
#[test]
fn a_worktrees_gitdir_file_cannot_be_repointed() {
    let scene = scene();
    let main = scene.repo();
    let ws = scene.path("wt");
    let add = std::process::Command::new("git")
        .args(["worktree", "add", "-q", "-b", "wt"])
        .arg(&ws)
        .current_dir(&main)
        .status()
        .unwrap();
    assert!(add.success());
    assert!(ws.join(".git").is_file());
    let attacks = [
        "mkdir -p evil && cp -r ../ws/.git/. evil/ 2>/dev/null; git init -q evil2; \
         cat EVIL >> evil2/.git/config; echo \"gitdir: $PWD/evil2/.git\" > .git",
        "mv .git g; git init -q .; cat EVIL >> .git/config",
    ];
    for attack in attacks {
        assert_contained(&scene, &ws, attack, GIT_AFTER, &[".git"], &[]);
    }
}

/// Read or writable paths inside the workspace are refused, with why:
/// a command could swap them for links to anything of the person's.
#[test]
fn read_and_writable_paths_inside_the_workspace_are_refused() {
    let scene = Scene::new();
    let ws = scene.repo();
    std::fs::create_dir_all(ws.join("build/cache")).unwrap();
    std::fs::write(ws.join("gitconfig"), "[user]\n").unwrap();
    for (key, path) in [("read", "gitconfig"), ("writable", "build/cache")] {
        let config = scene.path(&format!("{key}.toml"));
        std::fs::write(
            &config,
            format!("[commands]\n{key} = [\"{}\"]\n", ws.join(path).display()),
        )
        .unwrap();
        let config = config.display().to_string();
        let out = scene.run(&ws, "echo ran", &["--config", &config]);
        let all = text(&out);
        assert!(!all.contains("\nran"), "{all}");
        assert!(
            all.contains("lies inside") && all.contains(&format!("[commands] {key}")),
            "{all}"
        );
    }
}

/// In the default mode, a line the policy once classed as safe ran code
/// read from a file at run time (bash arithmetic over `a[$(…)]`): it now
/// asks, and with nobody to ask here, nothing runs.
#[test]
fn arithmetic_over_data_read_at_run_time_asks_first() {
    let scene = scene();
    let ws = scene.repo();
    let stage = format!("touch {}\n", pwned(&scene).display());
    std::fs::write(ws.join("stage.sh"), stage).unwrap();
    std::fs::write(ws.join("n.txt"), "a[$(sh stage.sh)]\n").unwrap();
    let line = "read -r n < n.txt; echo $((n))";
    let control = contained(
        scene.dir.path(),
        std::process::Command::new("bash")
            .args(["-c", line])
            .current_dir(&ws),
    );
    assert!(
        pwned(&scene).exists(),
        "the payload does not run unconfined: {control:?}"
    );
    std::fs::remove_file(pwned(&scene)).unwrap();
    let args = serde_json::json!({ "command": line }).to_string();
    let out = scene.toolhost(&ws, &[], &["call", "run_command", &args, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!pwned(&scene).exists(), "{v}");
    let all = text(&v);
    assert!(
        all.contains("needs confirmation") && all.contains("arithmetic"),
        "{all}"
    );
}

/// A token in a remote's URL in `.git/config` is redacted in a command's
/// view (the file itself is untouched): `cat` and `git remote -v` show
/// `[redacted]`.
#[test]
fn a_token_in_a_remote_url_is_redacted_for_commands() {
    let scene = Scene::new();
    let ws = scene.repo();
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
    let url = format!("https://bob:{token}@github.com/x/y.git");
    let add = std::process::Command::new("git")
        .args(["remote", "add", "origin", &url])
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(add.success());
    let before = std::fs::read(ws.join(".git/config")).unwrap();
    let out = scene.run(&ws, "cat .git/config; git remote -v", &[]);
    let all = text(&out);
    assert!(!all.contains(token), "{all}");
    assert!(
        all.contains("[redacted]") && all.contains("github.com/x/y.git"),
        "{all}"
    );
    assert_eq!(std::fs::read(ws.join(".git/config")).unwrap(), before);
}

/// A writable tool directory (`writable = ["~/.cargo"]`): its `bin/` and
/// `config.toml` stay read-only, and one a command creates is swept.
#[test]
fn a_writable_tool_directory_cannot_hold_planted_programs() {
    let scene = Scene::new();
    let ws = scene.repo();
    let cargo = scene.path("cargo-home");
    std::fs::create_dir_all(cargo.join("bin")).unwrap();
    std::fs::create_dir_all(cargo.join("registry")).unwrap();
    std::fs::write(cargo.join("bin/cargo-fmt"), "#!/bin/sh\n").unwrap();
    let config = scene.path("writable.toml");
    std::fs::write(
        &config,
        format!("[commands]\nwritable = [\"{}\"]\n", cargo.display()),
    )
    .unwrap();
    let config = config.display().to_string();
    let state = scene.path("state").display().to_string();
    let c = cargo.display();
    let out = scene.run_with(
        &ws,
        &[("XDG_STATE_HOME", &state)],
        &format!(
            "echo evil > {c}/bin/git; echo evil >> {c}/bin/cargo-fmt; \
             printf '[build]\\nrustc-wrapper = \"/x\"\\n' > {c}/config.toml; \
             echo cached > {c}/registry/index; echo done"
        ),
        &["--config", &config],
    );
    let all = text(&out);
    assert!(all.contains("done"), "{all}");
    assert!(!cargo.join("bin/git").exists(), "{all}");
    assert_eq!(
        std::fs::read_to_string(cargo.join("bin/cargo-fmt")).unwrap(),
        "#!/bin/sh\n"
    );
    assert!(!cargo.join("config.toml").exists(), "{all}");
    assert_eq!(
        std::fs::read_to_string(cargo.join("registry/index")).unwrap(),
        "cached\n"
    );
}

/// The write tools refuse what commands may not leave behind, from the
/// same list: a `commondir`, anything new inside `.git` but git's state,
/// and a `.git` file where no repository was.
#[test]
fn the_write_tools_refuse_the_same_list() {
    let scene = Scene::new();
    let ws = scene.repo();
    let plain = scene.path("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let refused = |ws: &Path, tool: &str, args: serde_json::Value| {
        let v = crate::support::call_cli(ws, tool, &args, &[]);
        assert_eq!(v["success"], false, "{tool} {args}: {v}");
        assert!(v.to_string().contains("protected"), "{tool} {args}: {v}");
    };
    refused(
        &ws,
        "write_file",
        serde_json::json!({"path": ".git/commondir", "content": "../cd\n"}),
    );
    refused(
        &ws,
        "write_file",
        serde_json::json!({"path": ".git/anything-new", "content": "x\n"}),
    );
    refused(
        &ws,
        "apply_patch",
        serde_json::json!({"patch": "--- /dev/null\n+++ b/.git/commondir\n@@ -0,0 +1 @@\n+../cd\n"}),
    );
    refused(
        &plain,
        "write_file",
        serde_json::json!({"path": ".git", "content": "gitdir: elsewhere\n"}),
    );
    assert!(!ws.join(".git/commondir").exists() && !plain.join(".git").exists());
    // git's own state stays writable for the tools, as for git.
    let v = crate::support::call_cli(
        &ws,
        "write_file",
        &serde_json::json!({"path": ".git/COMMIT_EDITMSG", "content": "message\n"}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
}

/// Links a command plants where protected roots belong lead the sweep,
/// which runs outside any sandbox, nowhere: what they point at stays.
#[test]
fn the_sweep_never_follows_a_link_a_command_planted() {
    let scene = Scene::new();
    let ws = scene.path("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let home = scene.path("home");
    for dir in [".cargo", "other/.git/hooks", ".ssh"] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    let files = [".cargo/config.toml", "other/.git/config", ".ssh/config"];
    for file in files {
        std::fs::write(home.join(file), "mine\n").unwrap();
    }
    let state = scene.path("state").display().to_string();
    let h = home.display();
    let out = scene.run_with(
        &ws,
        &[("XDG_STATE_HOME", &state)],
        &format!("ln -s {h}/.cargo .cargo; ln -s {h}/other/.git .git; ln -s {h}/.ssh .vscode; echo planted"),
        &[],
    );
    let all = text(&out);
    assert!(all.contains("planted"), "{all}");
    for file in files {
        assert_eq!(
            std::fs::read_to_string(home.join(file)).unwrap(),
            "mine\n",
            "{file}: {all}"
        );
    }
    assert!(home.join("other/.git/hooks").is_dir(), "{all}");
    for link in [".cargo", ".git", ".vscode"] {
        assert!(
            std::fs::symlink_metadata(ws.join(link)).is_err(),
            "{link}: {all}"
        );
    }
}
