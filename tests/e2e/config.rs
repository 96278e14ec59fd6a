//! `toolhost.toml` through the real binary: discovery, checking, showing,
//! profiles, prompts, hooks and the audit log.

use crate::support::{
    call_cli, json, kind, stderr, stdout, toolhost, toolhost_with_env, workspace, write,
};
use std::path::Path;

/// Write `text` as the workspace's toolhost.toml and trust it.
fn trusted_config(ws: &Path, text: &str) {
    write(ws, "toolhost.toml", text);
    let out = toolhost(ws, &["config", "trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("trusted "), "{}", stdout(&out));
}

#[test]
fn no_configuration_means_safe_defaults() {
    let ws = workspace();
    let out = toolhost(ws.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("no configuration file (safe defaults)"));
    assert!(stdout(&out).contains("mode confirm-sensitive"));
    let shown = stdout(&toolhost(ws.path(), &["config", "show"]));
    assert!(shown.contains("allow_delete = false"), "{shown}");
    assert!(shown.contains("[commands]\nenabled = true"), "{shown}");
}

#[test]
fn an_unknown_key_or_wrong_type_stops_every_command_with_its_line() {
    let ws = workspace();
    write(
        ws.path(),
        "toolhost.toml",
        "mode = \"yolo\"\n\n[commands]\nalow = [\"ls\"]\n",
    );
    for args in [
        &["config", "check"][..],
        &["tools"],
        &["call", "read_file", "{}"],
    ] {
        let out = toolhost(ws.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains("toolhost.toml") && err.contains("line 4"),
            "{err}"
        );
        assert!(err.contains("unknown field `alow`"), "{err}");
    }
    write(ws.path(), "toolhost.toml", "[limits]\nmemory_mb = -1\n");
    let err = stderr(&toolhost(ws.path(), &["config", "check"]));
    assert!(err.contains("line 2") && err.contains("memory_mb"), "{err}");
}

#[test]
fn unknown_tools_in_the_configuration_are_named_with_near_names() {
    let ws = workspace();
    trusted_config(ws.path(), "[tools.edit_flie]\ndescription = \"x\"\n");
    let out = toolhost(ws.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("tools.edit_flie") && err.contains("`edit_file`"),
        "{err}"
    );
}

#[test]
fn show_prints_the_file_the_profile_and_the_flags_combined() {
    let ws = workspace();
    trusted_config(
        ws.path(),
        r#"
mode = "confirm-all"
[commands]
allow = ["cargo test **"]
[profiles.bot]
mode = "yolo"
tools = ["read_file"]
"#,
    );
    let out = toolhost(
        ws.path(),
        &[
            "--profile",
            "bot",
            "--allow-command",
            "make **",
            "--allow-delete",
            "config",
            "show",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    let parsed: toml::Table = toml::from_str(&shown).expect("show prints TOML");
    assert_eq!(parsed["mode"].as_str(), Some("yolo"));
    assert_eq!(parsed["allow_delete"].as_bool(), Some(true));
    assert_eq!(parsed["profile"].as_str(), Some("bot"));
    let allow: Vec<&str> = parsed["commands"]["allow"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(allow, ["cargo test **", "make **"]);
    let workspace = ws.path().canonicalize().expect("canonical");
    assert!(
        shown.contains(&format!("workspace = \"{}\"", ws.path().display()))
            || shown.contains(&format!("workspace = \"{}\"", workspace.display())),
        "{shown}"
    );
}

#[test]
fn a_profile_limits_the_tools_and_sets_the_mode() {
    let ws = workspace();
    write(ws.path(), "a.txt", "a\n");
    trusted_config(
        ws.path(),
        "[profiles.reader]\ntools = [\"read_file\", \"grep\"]\nmode = \"yolo\"\n",
    );
    let out = toolhost(ws.path(), &["--profile", "reader", "tools", "--json"]);
    let names: Vec<String> = json(&out)
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(names, ["grep", "read_file"]);
    let v = call_cli(
        ws.path(),
        "write_file",
        &serde_json::json!({"path": "b", "content": "x"}),
        &["--profile", "reader"],
    );
    assert_eq!(kind(&v), "not_found");
    let out = toolhost(ws.path(), &["--profile", "writer", "tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the defined profiles are: reader"),
        "{}",
        stderr(&out)
    );
}

/// The bot framework's prompt modes change the tools offered: a
/// collaboration session gets memory search and the persona tools alone
/// (a call to another tool is refused, naming the mode), and its
/// guidance only about them; conversation and autonomous offer every tool.
#[test]
fn a_collaboration_profile_offers_memory_and_persona_tools_only() {
    let ws = workspace();
    trusted_config(
        ws.path(),
        "[profiles.peer]\nprompt_mode = \"collaboration\"\nmode = \"yolo\"\n\
         [profiles.solo]\nprompt_mode = \"autonomous\"\n",
    );
    let names = |profile: &str| -> Vec<String> {
        let out = toolhost(ws.path(), &["--profile", profile, "tools", "--json"]);
        json(&out)
            .as_array()
            .expect("array")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(
        names("peer"),
        [
            "memory_get",
            "memory_search",
            "save_memory",
            "update_identity",
            "update_soul"
        ]
    );
    let solo = names("solo");
    assert!(
        solo.contains(&"run_command".to_owned()) && solo.contains(&"manage_goals".to_owned()),
        "{solo:?}"
    );
    let v = call_cli(
        ws.path(),
        "write_file",
        &serde_json::json!({"path": "b", "content": "x"}),
        &["--profile", "peer"],
    );
    assert_eq!(kind(&v), "denied", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("collaboration prompt mode"), "{message}");
    assert!(!ws.path().join("b").exists());
}

#[test]
fn prompts_and_descriptions_override_what_schemas_show() {
    let ws = workspace();
    write(
        ws.path(),
        "prompts/grep.md",
        "Find text in the project.\n\nUse it first.\n",
    );
    write(ws.path(), "prompts/not_a_tool.md", "ignored\n");
    trusted_config(
        ws.path(),
        "prompts_dir = \"prompts\"\n[tools.read_file]\ndescription = \"Read exactly one file.\"\n",
    );
    let out = toolhost(
        ws.path(),
        &["schema", "--format", "mcp", "grep", "read_file"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("not_a_tool.md"), "{}", stderr(&out));
    let schemas = json(&out);
    assert_eq!(
        schemas[0]["description"],
        "Find text in the project.\n\nUse it first."
    );
    assert_eq!(schemas[1]["description"], "Read exactly one file.");
    let check = toolhost(ws.path(), &["config", "check"]);
    assert_eq!(
        check.status.code(),
        Some(1),
        "a skipped prompt fails the check"
    );
}

#[test]
fn configured_hooks_grants_and_audit_apply_to_calls() {
    let ws = workspace();
    trusted_config(
        ws.path(),
        r#"
mode = "yolo"
allow_delete = true
audit_log = "logs/audit.jsonl"

[grants.read_file]
workspace = "none"


[[hooks.post_edit]]
name = "nonempty"
command = "test -s {file} || { echo empty file; exit 1; }"
file_patterns = ["*.txt"]
"#,
    );
    let v = call_cli(
        ws.path(),
        "write_file",
        &serde_json::json!({"path": "e.txt", "content": ""}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    let content = v["content"].as_str().expect("text");
    assert!(
        content.contains("[hook nonempty: failed (exit 1)] e.txt\nempty file"),
        "{content}"
    );
    // The configured grant replaces read_file's default: no workspace.
    let v = call_cli(
        ws.path(),
        "read_file",
        &serde_json::json!({"path": "e.txt"}),
        &[],
    );
    assert_ne!(v["success"], true, "{v}");
    // --audit overrides the file's path.
    let elsewhere = ws.path().join("other.jsonl");
    let v = call_cli(
        ws.path(),
        "delete_file",
        &serde_json::json!({"path": "e.txt", "password": "pw"}),
        &["--audit", elsewhere.to_str().expect("utf-8")],
    );
    assert_eq!(kind(&v), "invalid_input", "{v}");
    let log = std::fs::read_to_string(ws.path().join("logs/audit.jsonl")).expect("audit log");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["channel"], "cli");
    assert_eq!(lines[0]["hooks"][0]["outcome"], "failed");
    assert_eq!(lines[1]["capabilities"], serde_json::json!([]));
    let other = std::fs::read_to_string(&elsewhere).expect("--audit log");
    assert!(other.contains("\"password\":\"[redacted]\""), "{other}");
}

#[test]
fn a_workspace_configuration_is_used_only_while_trusted() {
    let ws = workspace();
    write(ws.path(), "toolhost.toml", "mode = \"yolo\"\n");
    let out = toolhost(ws.path(), &["tools"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("is not trusted") && err.contains("toolhost config trust"),
        "{err}"
    );
    trusted_config(ws.path(), "mode = \"yolo\"\n");
    let out = toolhost(ws.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("mode yolo"));
    // A tool may not change it (a protected path)...
    let v = call_cli(
        ws.path(),
        "write_file",
        &serde_json::json!({"path": "toolhost.toml", "content": "mode = \"yolo\"\n[commands]\nallow = [\"cargo **\"]\n"}),
        &[],
    );
    assert_eq!(kind(&v), "denied", "{v}");
    let out = toolhost(ws.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // ...and anyone else changing it makes it untrusted again.
    write(
        ws.path(),
        "toolhost.toml",
        "mode = \"yolo\"\n[commands]\nallow = [\"cargo **\"]\n",
    );
    let out = toolhost(ws.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is not trusted"), "{}", stderr(&out));
    // A file named with --config (or TOOLHOST_CONFIG) is the person's choice.
    let path = ws.path().join("toolhost.toml");
    let out = toolhost(
        ws.path(),
        &["--config", path.to_str().expect("utf-8"), "config", "check"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn the_workspace_file_comes_before_the_user_file() {
    let ws = workspace();
    let home = workspace();
    write(
        home.path(),
        "toolhost/toolhost.toml",
        "mode = \"confirm-all\"\n",
    );
    let env = [("XDG_CONFIG_HOME", home.path())];
    let with_user = stdout(&toolhost_with_env(ws.path(), &["config", "check"], &env));
    assert!(with_user.contains("mode confirm-all"), "{with_user}");
    trusted_config(ws.path(), "mode = \"yolo\"\n");
    let with_workspace = stdout(&toolhost_with_env(ws.path(), &["config", "check"], &env));
    assert!(with_workspace.contains("mode yolo"), "{with_workspace}");
    // TOOLHOST_CONFIG names a file explicitly, over both.
    let other = home.path().join("toolhost/toolhost.toml");
    let env = [
        ("XDG_CONFIG_HOME", home.path()),
        ("TOOLHOST_CONFIG", other.as_path()),
    ];
    let named = stdout(&toolhost_with_env(ws.path(), &["config", "check"], &env));
    assert!(named.contains("mode confirm-all"), "{named}");
}

#[test]
fn a_disabled_tool_is_gone_from_tools_schema_describe_and_call() {
    let ws = workspace();
    trusted_config(
        ws.path(),
        "[profiles.safe]\ndisabled = [\"write_file\", \"run_command\"]\n",
    );
    let flags = ["--profile", "safe"];
    let listed = json(&toolhost(
        ws.path(),
        &[&flags[..], &["tools", "--json"]].concat(),
    ));
    let names: Vec<&str> = listed
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"read_file") && !names.contains(&"write_file"),
        "{names:?}"
    );
    let schemas = json(&toolhost(
        ws.path(),
        &[&flags[..], &["schema", "--format", "mcp"]].concat(),
    ));
    let text = schemas.to_string();
    assert!(!text.contains("\"write_file\"") && !text.contains("\"run_command\""));
    assert_eq!(schemas.as_array().map(Vec::len), Some(names.len()));
    let out = toolhost(ws.path(), &[&flags[..], &["schema", "write_file"]].concat());
    assert_eq!(out.status.code(), Some(2));
    let out = toolhost(
        ws.path(),
        &[&flags[..], &["describe", "run_command"]].concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    let v = call_cli(
        ws.path(),
        "write_file",
        &serde_json::json!({"path": "a", "content": "b"}),
        &flags,
    );
    assert_eq!(kind(&v), "not_found");
    assert!(!ws.path().join("a").exists());
    // Without the profile, the same file shows them.
    let all = json(&toolhost(ws.path(), &["tools", "--json"]));
    assert!(all.to_string().contains("\"write_file\""));
}

#[test]
fn a_symlinked_configuration_is_its_target_where_it_is() {
    let original = workspace();
    trusted_config(
        original.path(),
        "plugin_dirs = [\"plugins\"]\n[commands]\nwritable = [\"out\"]\n",
    );
    let other = workspace();
    std::os::unix::fs::symlink(
        original.path().join("toolhost.toml"),
        other.path().join("toolhost.toml"),
    )
    .unwrap();
    // Trusted (its target is), with its relative paths where the target is.
    let out = toolhost(other.path(), &["config", "show"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    let real = original.path().canonicalize().unwrap();
    assert!(
        shown.contains(&real.join("out").display().to_string()),
        "{shown}"
    );
    assert!(
        !shown.contains(&other.path().join("out").display().to_string()),
        "{shown}"
    );
    // A symlink to a file nobody trusted is untrusted.
    let untrusted = workspace();
    write(untrusted.path(), "loose.toml", "mode = \"yolo\"\n");
    let third = workspace();
    std::os::unix::fs::symlink(
        untrusted.path().join("loose.toml"),
        third.path().join("toolhost.toml"),
    )
    .unwrap();
    let out = toolhost(third.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is not trusted"), "{}", stderr(&out));
}
