//! What a tool's author is told, and what a person granting it is told,
//! when the fix is the author's: a capability the tool does not declare.

use crate::support::{fixtures_dir, json, kind, stderr, toolhost, toolhost_with_stdin, workspace};
use serde_json::json;

/// The refusal a tool gets for a capability it does not declare.
const UNDECLARED: &str = "this tool does not declare the `commands` capability, so no grant can give it: the tool must declare it";

#[test]
fn a_capability_the_tool_does_not_declare_is_for_its_author_to_add() {
    let ws = workspace();
    let fixtures = fixtures_dir().display().to_string();
    let args = json!({"action": "command"}).to_string();
    let grant = "misbehave=commands,workspace:read";
    // Without a grant and with one: the same refusal, naming who can fix it.
    for granted in [false, true] {
        let mut argv = vec!["--plugin-dir", fixtures.as_str()];
        if granted {
            argv.extend(["--grant", grant]);
        }
        argv.extend(["call", "misbehave", "-", "--json", "--mode", "yolo"]);
        let out = toolhost_with_stdin(ws.path(), &argv, &args);
        let v = json(&out);
        let content = v["content"].as_str().unwrap_or_default();
        assert_eq!(kind(&v), "denied", "{v}");
        assert!(content.contains(UNDECLARED), "{content}");
        assert!(content.contains("`Tool::capabilities`"), "{content}");
        assert!(!content.contains("--grant"), "no grant helps: {content}");
        let warned = stderr(&out);
        let warning = format!(
            "--grant {grant}: `misbehave` does not declare `commands`, so that part of the grant gives it nothing"
        );
        assert_eq!(warned.contains(&warning), granted, "{warned}");
        // What it declares (workspace access) is not warned about.
        assert!(!warned.contains("`workspace:read`"), "{warned}");
    }
    // The same in the configuration, named by its key.
    let conf = workspace();
    let config = conf.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "[grants.misbehave]\ncommands = true\nenv = [\"TOKEN\"]\nworkspace = \"read\"\n",
    )
    .expect("config");
    let out = toolhost(
        ws.path(),
        &[
            "--config",
            config.to_str().expect("utf-8"),
            "--plugin-dir",
            &fixtures,
            "describe",
            "misbehave",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "grants.misbehave: `misbehave` does not declare `commands`, `env:TOKEN`, so that part of the grant gives it nothing"
        ),
        "{}",
        stderr(&out)
    );
}

/// A tool may not take a built-in's name: `toolhost new` refuses it,
/// `check` reports it, and a plugin file of that name is not loaded; each
/// says what to rename it to.
#[test]
fn a_built_in_name_is_refused_with_a_name_to_use() {
    let ws = workspace();
    let out = toolhost(ws.path(), &["new", "read_file", "--lang", "rust"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "`read_file` is the name of a built-in tool, which keeps it: a plugin of that name is not loaded; rename the tool, e.g. `my_read_file`"
        ),
        "{}",
        stderr(&out)
    );
    assert!(!ws.path().join("read_file").exists());
    // Another component of that name: the built-in with a custom section
    // of its own appended (valid, and not the built-in's bytes).
    let builtin = toolhost::builtins()
        .iter()
        .find(|b| b.crate_name == "read_file")
        .expect("read_file is built in");
    let mut wasm = builtin.wasm().expect("unpacks");
    let name = b"note";
    let payload = b"not the built-in";
    wasm.push(0);
    wasm.push(u8::try_from(1 + name.len() + payload.len()).expect("short"));
    wasm.push(u8::try_from(name.len()).expect("short"));
    wasm.extend_from_slice(name);
    wasm.extend_from_slice(payload);
    let plugins = workspace();
    let copy = plugins.path().join("read_file.wasm");
    std::fs::write(&copy, &wasm).expect("write");
    let out = toolhost(ws.path(), &["check", copy.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "  error: name: `read_file` is the name of a built-in tool, which keeps it: a plugin of that name is not loaded\n    fix: rename the tool, e.g. `my_read_file`"
        ),
        "{}",
        stderr(&out)
    );
    std::fs::write(ws.path().join("a.txt"), "hi\n").expect("write");
    let plugin_dir = plugins.path().display().to_string();
    let out = toolhost(
        ws.path(),
        &[
            "--plugin-dir",
            &plugin_dir,
            "call",
            "read_file",
            r#"{"path":"a.txt"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "`read_file` is the name of a built-in tool, so the one from {} was not added: rename it, e.g. `my_read_file`",
            copy.display()
        )),
        "{}",
        stderr(&out)
    );
}

/// A tool that handles refused memory itself and fails (Python's
/// `MemoryError`) ran out of memory, and is reported so, with what it said.
#[test]
fn a_failure_after_memory_was_refused_is_out_of_memory() {
    use crate::support::{call, executor};
    let ws = workspace();
    let ex = executor(ws.path());
    // 1.5 GiB: past the 256 MiB limit, within what wasm32 can ask for.
    let r = call(&ex, "misbehave", r#"{"action":"alloc_or_fail","mib":1536}"#);
    assert_eq!(
        r.error_kind(),
        Some(toolhost::ErrorKind::OutOfMemory),
        "{}",
        r.content
    );
    assert!(
        r.content
            .starts_with("the tool ran out of memory: it needed more than its 256 MiB limit (it said: MemoryError: "),
        "{}",
        r.content
    );
    // Memory it may have is given; another failure stays `failed`.
    let r = call(&ex, "misbehave", r#"{"action":"alloc_or_fail","mib":1}"#);
    assert!(r.success, "{}", r.content);
    let r = call(&ex, "misbehave", r#"{"action":"fail"}"#);
    assert_eq!(
        r.error_kind(),
        Some(toolhost::ErrorKind::Failed),
        "{}",
        r.content
    );
}
