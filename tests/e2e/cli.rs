//! The `toolhost` binary: output shapes, exit codes, schemas, grants.

use crate::support::{
    fixtures_dir, json, lines_file, stderr, stdout, toolhost, toolhost_with_stdin, workspace, write,
};

#[test]
fn call_prints_numbered_lines_and_exits_zero() {
    let ws = workspace();
    write(ws.path(), "notes.txt", lines_file(5));
    let out = toolhost(
        ws.path(),
        &[
            "call",
            "read_file",
            r#"{"path":"notes.txt","offset":2,"limit":2}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("     2\tline 2\n     3\tline 3\n"),
        "{text}"
    );
    assert!(text.contains("offset=4"), "{text}");
}

#[test]
fn workspace_flag_points_the_tools_elsewhere() {
    let ws = workspace();
    write(ws.path(), "notes.txt", "hi\n");
    let elsewhere = workspace();
    let ws_arg = ws.path().display().to_string();
    let out = toolhost(
        elsewhere.path(),
        &[
            "call",
            "read_file",
            r#"{"path":"notes.txt"}"#,
            "--workspace",
            &ws_arg,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "     1\thi\n");
}

#[test]
fn json_output_has_the_documented_shape() {
    let ws = workspace();
    write(ws.path(), "notes.txt", lines_file(3));
    let out = toolhost(
        ws.path(),
        &["call", "read_file", r#"{"path":"notes.txt"}"#, "--json"],
    );
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    let mut keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "content",
            "duration_ms",
            "error",
            "input",
            "structured",
            "success",
            "tool"
        ]
    );
    assert_eq!(v["tool"], "read_file");
    assert_eq!(v["success"], true);
    assert_eq!(v["error"], serde_json::Value::Null);
    assert_eq!(v["structured"]["total_lines"], 3);
    assert!(v["duration_ms"].as_f64().expect("number") >= 0.0);
}

#[test]
fn a_tool_error_exits_one_with_its_kind() {
    let ws = workspace();
    write(ws.path(), "blob.bin", b"\x00\x01\x02binary");
    let out = toolhost(
        ws.path(),
        &["call", "read_file", r#"{"path":"blob.bin"}"#, "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["success"], false);
    assert_eq!(v["error"]["kind"], "retry");
    assert!(
        v["error"]["message"]
            .as_str()
            .expect("message")
            .contains("binary"),
        "{v}"
    );

    // Plain mode: nothing on stdout, the error on stderr.
    let out = toolhost(ws.path(), &["call", "read_file", r#"{"path":"blob.bin"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("error (retry)"), "{}", stderr(&out));
}

#[test]
fn every_error_kind_name_is_the_documented_one() {
    let ws = workspace();
    let fixtures = fixtures_dir().display().to_string();
    let cases: [(&[&str], &str); 7] = [
        (&["call", "nope", "{}"], "not_found"),
        (&["call", "read_file", "{oops"], "invalid_input"),
        (&["call", "read_file", r#"{"path":"../x"}"#], "denied"),
        (&["call", "read_file", r#"{"path":"missing.txt"}"#], "retry"),
        (
            &[
                "--plugin-dir",
                &fixtures,
                "call",
                "misbehave",
                r#"{"action":"fail"}"#,
                "--mode",
                "yolo",
            ],
            "failed",
        ),
        (
            &[
                "--plugin-dir",
                &fixtures,
                "call",
                "misbehave",
                r#"{"action":"panic"}"#,
                "--mode",
                "yolo",
            ],
            "trap",
        ),
        (
            &[
                "--plugin-dir",
                &fixtures,
                "call",
                "misbehave",
                r#"{"action":"loop"}"#,
                "--mode",
                "yolo",
                "--timeout",
                "0.5",
            ],
            "timeout",
        ),
    ];
    for (args, kind) in cases {
        let mut args = args.to_vec();
        args.push("--json");
        let out = toolhost(ws.path(), &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(json(&out)["error"]["kind"], kind, "{args:?}");
    }
}

#[test]
fn out_of_memory_through_the_cli() {
    let ws = workspace();
    let fixtures = fixtures_dir().display().to_string();
    let out = toolhost(
        ws.path(),
        &[
            "--plugin-dir",
            &fixtures,
            "call",
            "misbehave",
            r#"{"action":"alloc","mib":1024}"#,
            "--mode",
            "yolo",
            "--json",
        ],
    );
    assert_eq!(json(&out)["error"]["kind"], "out_of_memory");
}

#[test]
fn usage_errors_exit_two() {
    let ws = workspace();
    for args in [
        &["call", "read_file", "{}", "--mode", "sometimes"][..],
        &["call", "read_file", "{}", "--timeout", "-1"],
        &["--grant", "read_file", "tools"],
        &["--grant", "read_file=workspace:rw", "tools"],
        &["--workspace", "/definitely/not/here", "tools"],
        &["frobnicate"],
    ] {
        let out = toolhost(ws.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty());
    }
}

/// A grant for a tool that is not loaded is kept, with a warning naming
/// it (a plugin dropped in later gets it; see mcp.rs), from the command
/// line and from the configuration alike.
#[test]
fn a_grant_for_a_tool_not_loaded_waits_with_a_warning() {
    let ws = workspace();
    let conf = workspace();
    write(
        conf.path(),
        "grants.toml",
        "[grants.later_tool]\nworkspace = \"read\"\n",
    );
    let config = conf.path().join("grants.toml").display().to_string();
    let out = toolhost(
        ws.path(),
        &[
            "--config",
            &config,
            "--grant",
            "nope=workspace:read",
            "tools",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    for key in ["--grant nope=workspace:read", "grants.later_tool"] {
        assert!(
            err.lines().any(
                |l| l.contains(key) && l.contains("applies when a tool of that name is loaded")
            ),
            "{key}: {err}"
        );
    }
    assert!(stdout(&out).contains("read_file"), "{}", stdout(&out));
}

#[test]
fn args_can_come_from_stdin() {
    let ws = workspace();
    write(ws.path(), "a.txt", "from stdin\n");
    let out = toolhost_with_stdin(
        ws.path(),
        &["call", "read_file", "-"],
        r#"{"path":"a.txt"}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "     1\tfrom stdin\n");
}

#[test]
fn escapes_through_the_cli_are_denied_and_leak_nothing() {
    let ws = workspace();
    std::os::unix::fs::symlink("/etc/passwd", ws.path().join("pw")).expect("symlink");
    for path in ["../../../../etc/passwd", "/etc/passwd", "pw"] {
        let args = serde_json::json!({ "path": path }).to_string();
        let out = toolhost(ws.path(), &["call", "read_file", &args, "--json"]);
        let v = json(&out);
        assert_eq!(v["error"]["kind"], "denied", "{path}: {v}");
        assert!(!v.to_string().contains("root:"), "{path}: {v}");
    }
}

#[test]
fn tools_lists_the_builtins() {
    let ws = workspace();
    let out = toolhost(ws.path(), &["tools", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let read_file = v
        .as_array()
        .expect("array")
        .iter()
        .find(|t| t["name"] == "read_file")
        .expect("read_file listed");
    assert_eq!(
        read_file["capabilities"],
        serde_json::json!(["workspace:read"])
    );
    assert_eq!(read_file["sensitive"], false);
    assert!(read_file["description"].as_str().expect("text").len() > 40);

    let out = toolhost(ws.path(), &["tools"]);
    let text = stdout(&out);
    assert!(text.starts_with("NAME"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("read_file") && l.contains("workspace:read")),
        "{text}"
    );
}

#[test]
fn third_party_plugins_show_up_with_their_grant() {
    let ws = workspace();
    let fixtures = fixtures_dir().display().to_string();
    let out = toolhost(
        ws.path(),
        &["--plugin-dir", &fixtures, "describe", "misbehave", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(
        v["capabilities"],
        serde_json::json!(["workspace:write", "network:*"])
    );
    assert_eq!(v["granted"], serde_json::json!([]), "no grant by default");
    let out = toolhost(
        ws.path(),
        &[
            "--plugin-dir",
            &fixtures,
            "--grant",
            "misbehave=workspace:read",
            "describe",
            "misbehave",
            "--json",
        ],
    );
    assert_eq!(json(&out)["granted"], serde_json::json!(["workspace:read"]));
}

// Regression: `tools` printed `dir:NAME:write` and `network:a,b`, which
// `--grant` could not read back.
#[test]
fn grant_reads_back_what_tools_prints_for_every_builtin() {
    let ws = workspace();
    let out = toolhost(ws.path(), &["tools", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tools = json(&out);
    let tools = tools.as_array().expect("array");
    assert!(tools.len() > 20, "{tools:?}");
    for tool in tools {
        let name = tool["name"].as_str().expect("name");
        let describe = |grant: Option<&str>| {
            let flag = grant.map(|caps| format!("{name}={caps}"));
            let mut args = vec!["describe", name, "--json"];
            if let Some(flag) = &flag {
                args.splice(0..0, ["--grant", flag.as_str()]);
            }
            let out = toolhost(ws.path(), &args);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
            json(&out)["granted"].clone()
        };
        let granted = describe(None);
        let printed: Vec<&str> = granted
            .as_array()
            .expect("granted")
            .iter()
            .map(|c| c.as_str().expect("text"))
            .collect();
        let caps = if printed.is_empty() {
            "none".to_owned()
        } else {
            printed.join(",")
        };
        assert_eq!(describe(Some(&caps)), granted, "--grant {name}={caps}");
    }
    // A directory the host does not keep is named, with what it has.
    let out = toolhost(
        ws.path(),
        &["--grant", "save_memory=dir:secrets:write", "tools"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("`dir:secrets` names no directory this host keeps") && err.contains("memory"),
        "{err}"
    );
}

#[test]
fn a_third_party_plugin_without_a_grant_sees_nothing_through_the_cli() {
    let ws = workspace();
    write(ws.path(), "visible.txt", "x");
    let fixtures = fixtures_dir().display().to_string();
    let out = toolhost(
        ws.path(),
        &[
            "--plugin-dir",
            &fixtures,
            "call",
            "misbehave",
            r#"{"action":"list","path":"."}"#,
            "--mode",
            "yolo",
            "--json",
        ],
    );
    let v = json(&out);
    assert_eq!(v["success"], false, "{v}");
    assert!(!v.to_string().contains("visible.txt"), "{v}");
}

#[test]
fn describe_shows_the_schema() {
    let ws = workspace();
    let out = toolhost(ws.path(), &["describe", "read_file"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("read_file "), "{text}");
    assert!(text.contains("granted:      workspace:read"), "{text}");
    assert!(text.contains("\"offset\""), "{text}");
    let out = toolhost(ws.path(), &["describe", "nope"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown tool on the command line is a usage error"
    );
    assert!(stderr(&out).contains("no tool named `nope`"));
}

#[test]
fn openai_schemas_parse_and_every_parameters_is_an_object_schema() {
    let ws = workspace();
    let fixtures = fixtures_dir().display().to_string();
    let out = toolhost(
        ws.path(),
        &["--plugin-dir", &fixtures, "schema", "--format", "openai"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let tools = v.as_array().expect("array");
    assert!(tools.len() >= 3);
    for t in tools {
        assert_eq!(t["type"], "function", "{t}");
        let f = &t["function"];
        assert!(f["name"].is_string() && f["description"].is_string(), "{t}");
        assert_eq!(f["parameters"]["type"], "object", "{t}");
        assert!(f["parameters"].is_object());
        assert_eq!(f.as_object().expect("object").len(), 3, "{t}");
    }
    let read_file = tools
        .iter()
        .find(|t| t["function"]["name"] == "read_file")
        .expect("listed");
    assert_eq!(
        read_file["function"]["parameters"]["required"],
        serde_json::json!(["path"])
    );
}

#[test]
fn anthropic_and_mcp_schemas_have_their_shapes() {
    let ws = workspace();
    let out = toolhost(ws.path(), &["schema", "--format", "anthropic", "read_file"]);
    let v = json(&out);
    assert_eq!(v[0]["name"], "read_file");
    assert_eq!(v[0]["input_schema"]["type"], "object");
    let out = toolhost(ws.path(), &["schema", "--format", "mcp", "read_file"]);
    let v = json(&out);
    assert_eq!(v[0]["inputSchema"]["type"], "object");
    assert_eq!(v[0]["annotations"]["readOnlyHint"], true);
    assert!(v[0].get("outputSchema").is_none(), "{}", v[0]);
    let out = toolhost(
        ws.path(),
        &["schema", "--format", "mcp-structured", "read_file"],
    );
    let v = json(&out);
    assert_eq!(v[0]["outputSchema"]["required"][0], "path");
    let out = toolhost(ws.path(), &["schema", "nope"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sensitive_calls_without_a_terminal_are_refused_with_the_fix() {
    let ws = workspace();
    let fixtures = fixtures_dir().display().to_string();
    let write_args = r#"{"action":"write","path":"a.txt","content":"x"}"#;
    let base = [
        "--plugin-dir",
        fixtures.as_str(),
        "--grant",
        "misbehave=workspace:write",
        "call",
        "misbehave",
        write_args,
    ];
    let out = toolhost(ws.path(), &[&base[..], &["--json"]].concat());
    let v = json(&out);
    assert_eq!(v["error"]["kind"], "denied");
    assert!(
        v["error"]["message"]
            .as_str()
            .expect("text")
            .contains("confirmation"),
        "{v}"
    );
    assert!(!ws.path().join("a.txt").exists());

    let out = toolhost(ws.path(), &[&base[..], &["--dry-run", "--json"]].concat());
    assert_eq!(json(&out)["success"], true);
    assert!(!ws.path().join("a.txt").exists());

    let out = toolhost(ws.path(), &[&base[..], &["--mode", "yolo"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(ws.path().join("a.txt").exists());
}

#[test]
fn broken_and_clashing_plugins_are_skipped_with_a_warning() {
    let ws = workspace();
    let plugins = workspace();
    write(plugins.path(), "garbage.wasm", "not wasm at all");
    // A second copy of a fixture claims a name that is already taken.
    std::fs::copy(
        fixtures_dir().join("fixture_echo.wasm"),
        plugins.path().join("a_echo.wasm"),
    )
    .expect("copy");
    std::fs::copy(
        fixtures_dir().join("fixture_echo.wasm"),
        plugins.path().join("b_echo.wasm"),
    )
    .expect("copy");
    let dir = plugins.path().display().to_string();
    let out = toolhost(ws.path(), &["--plugin-dir", &dir, "tools", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("skipped ")
            && err.contains("garbage.wasm")
            && err.contains("not a valid wasm component"),
        "{err}"
    );
    assert!(
        err.contains("b_echo.wasm") && err.contains("already registered"),
        "{err}"
    );
    let names: Vec<String> = json(&out)
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(
        names.iter().filter(|n| *n == "echo").count(),
        1,
        "{names:?}"
    );
    assert!(names.contains(&"read_file".to_owned()));
}

/// Snapshots of what a person sees; paths and timings are replaced so they
/// hold on any machine.
mod snapshots {
    use super::*;

    fn normalise(text: &str, ws: &std::path::Path) -> String {
        let fixtures = fixtures_dir().display().to_string();
        let ws = ws.canonicalize().expect("canonical").display().to_string();
        text.replace(&fixtures, "[FIXTURES]")
            .replace(&ws, "[WORKSPACE]")
    }

    #[test]
    fn tools_table() {
        let ws = workspace();
        let fixtures = fixtures_dir().display().to_string();
        let out = toolhost(ws.path(), &["--plugin-dir", &fixtures, "tools"]);
        insta::assert_snapshot!(normalise(&stdout(&out), ws.path()));
    }

    #[test]
    fn describe_read_file() {
        let ws = workspace();
        let out = toolhost(ws.path(), &["describe", "read_file"]);
        insta::assert_snapshot!(normalise(&stdout(&out), ws.path()));
    }

    #[test]
    fn plain_errors() {
        let ws = workspace();
        write(ws.path(), "blob.bin", b"\x00\x01");
        let mut transcript = String::new();
        for args in [
            r#"{"path":"blob.bin"}"#,
            r#"{"path":"../x"}"#,
            r#"{"path":"missing.txt"}"#,
            r#"{"path":7}"#,
            "{",
        ] {
            let out = toolhost(ws.path(), &["call", "read_file", args]);
            transcript.push_str(&format!(
                "$ toolhost call read_file '{args}'\n[exit {}]\n{}\n",
                out.status.code().unwrap_or(-1),
                stderr(&out)
            ));
        }
        insta::assert_snapshot!(normalise(&transcript, ws.path()));
    }
}

/// `toolhost completions SHELL` prints a script the shell loads and that
/// completes subcommands and their values, for every shell clap_complete
/// knows; bash runs it here.
#[test]
fn completions_complete_subcommands_in_a_real_bash() {
    let ws = workspace();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = toolhost(ws.path(), &["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        assert!(stdout(&out).contains("completions"), "{shell}");
    }
    let out = toolhost(ws.path(), &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("possible values"), "{}", stderr(&out));

    let script = ws.path().join("toolhost.bash");
    std::fs::write(
        &script,
        stdout(&toolhost(ws.path(), &["completions", "bash"])),
    )
    .unwrap();
    let complete = |words: &str, cword: usize| {
        let line = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE=\"{words}\"; \
             COMP_POINT=${{#COMP_LINE}}; _toolhost toolhost \"${{COMP_WORDS[$COMP_CWORD]}}\" \
             \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &line])
            .output()
            .expect("bash runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let subcommands = complete("toolhost ch", 1);
    assert!(
        subcommands.lines().any(|l| l == "check") && !subcommands.contains("call"),
        "{subcommands}"
    );
    let shells = complete("toolhost completions ''", 2);
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.lines().any(|l| l == shell), "{shells}");
    }
}
