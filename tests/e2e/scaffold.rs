//! `toolhost new`: the project it writes builds for wasm32-wasip2, its own
//! test passes, `toolhost check` accepts the component without a warning,
//! its cases pass through `toolhost test` in the real host, and `toolhost
//! call` and `toolhost serve` run it with the grant its README gives.

use crate::support::{json, stderr, stdout, toolhost, workspace, write};
use std::path::Path;
use std::process::Command;

/// `cargo ARGS` in `dir`, with one target directory for every run of this
/// test (the SDK's dependencies compile once).
fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO"))
        .args(args)
        .current_dir(dir)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("scaffold-target"),
        )
        .output()
        .expect("cargo runs")
}

/// Build the project at `dir` for wasm32-wasip2; its component.
fn build_component(dir: &Path) -> std::path::PathBuf {
    let built = cargo(dir, &["build", "--release", "--target", "wasm32-wasip2"]);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let name = dir.file_name().unwrap().to_str().unwrap();
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("scaffold-target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"))
}

#[test]
fn a_new_rust_tool_builds_tests_checks_and_runs() {
    let base = workspace();
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk");
    let sdk = sdk.to_str().unwrap();

    // A bad name gets a valid one to use, and nothing is written.
    let out = toolhost(base.path(), &["new", "Count-Words", "--sdk", sdk]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("e.g. `count_words`"),
        "{}",
        stderr(&out)
    );
    assert!(!base.path().join("Count-Words").exists());

    let out = toolhost(base.path(), &["new", "count_words", "--sdk", sdk]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("cargo build --release --target wasm32-wasip2"));
    let project = base.path().join("count_words");
    for file in [
        "Cargo.toml",
        "src/lib.rs",
        "README.md",
        "Cargo.lock",
        "tests/cases.json",
    ] {
        assert!(project.join(file).is_file(), "{file}");
    }
    // Never over an author's files.
    let again = toolhost(base.path(), &["new", "count_words", "--sdk", sdk]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));

    let wasm = build_component(&project);
    let tested = cargo(&project, &["test"]);
    assert!(
        tested.status.success() && String::from_utf8_lossy(&tested.stdout).contains("1 passed"),
        "{}{}",
        String::from_utf8_lossy(&tested.stdout),
        String::from_utf8_lossy(&tested.stderr)
    );

    let check = toolhost(base.path(), &["check", wasm.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    assert!(stdout(&check).contains("`count_words` 0.1.0, asks for: workspace:read"));
    assert!(!stderr(&check).contains("warning"), "{}", stderr(&check));

    // Its own cases pass in the real host; a wrong expectation fails and
    // says what differed; cases that are not JSON are a usage error.
    let wasm_arg = wasm.to_str().unwrap();
    let cases = project.join("tests/cases.json");
    let out = toolhost(base.path(), &["test", wasm_arg, cases.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("count_words: 4 passed, 0 failed"),
        "{}",
        stdout(&out)
    );
    write(
        base.path(),
        "wrong.json",
        r#"[{"args": {"path": "a.txt"}, "grant": "workspace:read", "files": {"a.txt": "x"},
            "expect": {"structured": {"words": 5}}}]"#,
    );
    let out = toolhost(base.path(), &["test", wasm_arg, "wrong.json", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let outcomes = json(&out);
    assert_eq!(outcomes[0]["name"], "case 1");
    assert_eq!(
        outcomes[0]["failures"][0],
        "structured.words: expected 5, got 1"
    );
    write(base.path(), "broken.json", "{not json");
    let out = toolhost(base.path(), &["test", wasm_arg, "broken.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("JSON array of cases"),
        "{}",
        stderr(&out)
    );

    // Run as the README says, on a file of a workspace.
    let ws = workspace();
    write(ws.path(), "notes.txt", "one two\nthree\n");
    let plugins = workspace();
    std::fs::copy(&wasm, plugins.path().join("count_words.wasm")).unwrap();
    let plugin_dir = plugins.path().to_str().unwrap();
    let out = toolhost(
        ws.path(),
        &[
            "--plugin-dir",
            plugin_dir,
            "--grant",
            "count_words=workspace:read",
            "call",
            "count_words",
            r#"{"path":"notes.txt"}"#,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = json(&out);
    assert_eq!(
        result["content"],
        "notes.txt: 2 lines, 3 words, 14 characters"
    );
    assert_eq!(
        result["structured"],
        serde_json::json!({"lines": 2, "words": 3, "chars": 14})
    );
    // Over MCP, as the README says.
    let dir = ws.path().to_str().unwrap();
    let mut server = crate::mcp::RawServer::start(
        ws.path(),
        &[
            "serve",
            "--workspace",
            dir,
            "--plugin-dir",
            plugin_dir,
            "--grant",
            "count_words=workspace:read",
        ],
    );
    let answer = server.call(2, "count_words", serde_json::json!({"path": "notes.txt"}));
    assert_eq!(
        answer["result"]["structuredContent"]["words"], 3,
        "{answer}"
    );
    server.close();
    // Without the grant it reaches nothing, and says how to grant it.
    let out = toolhost(
        ws.path(),
        &[
            "--plugin-dir",
            plugin_dir,
            "call",
            "count_words",
            r#"{"path":"notes.txt"}"#,
            "--json",
        ],
    );
    assert_eq!(json(&out)["error"]["kind"], "denied", "{}", stdout(&out));
}

/// The SDK ships the WIT it was built for: its package holds
/// `wit/plugin.wit`, which is the one the host is built against (there is
/// one copy). `.ci/run` also runs `cargo package` on it in full.
#[test]
fn the_sdk_package_holds_its_wit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO"))
        .args(["package", "-p", "toolhost-sdk", "--list", "--allow-dirty"])
        .current_dir(&root)
        .output()
        .expect("cargo runs");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(listed.lines().any(|l| l == "wit/plugin.wit"), "{listed}");
    assert!(!root.join("wit").exists(), "a second copy of the WIT");
}

/// The code block in `## fence` of docs/plugin-guide.md.
fn guide_block(guide: &str, heading: &str, fence: &str) -> String {
    let after = guide
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no `{heading}` in the guide"))
        .1;
    let start = after
        .split_once(&format!("```{fence}\n"))
        .unwrap_or_else(|| panic!("no {fence} block under `{heading}`"))
        .1;
    start
        .split_once("```")
        .expect("a closed block")
        .0
        .to_owned()
}

/// The guide's own example (its Cargo.toml and src/lib.rs, as printed)
/// builds, passes `toolhost check` and runs as the guide says.
#[test]
fn the_guides_example_builds_checks_and_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let guide = std::fs::read_to_string(root.join("docs/plugin-guide.md")).unwrap();
    let manifest = guide_block(&guide, "## Cargo.toml", "toml");
    let lib = guide_block(&guide, "## src/lib.rs", "rust");
    let sdk = root.join("sdk").canonicalize().unwrap();
    let manifest = manifest.replace(
        r#"toolhost-sdk = { path = "../toolhost/sdk" }"#,
        &format!(
            "toolhost-sdk = {{ path = {:?} }}",
            sdk.display().to_string()
        ),
    );
    assert!(manifest.contains(&sdk.display().to_string()), "{manifest}");
    let base = workspace();
    let project = base.path().join("word_count");
    write(&project, "Cargo.toml", format!("{manifest}\n[workspace]\n"));
    write(&project, "src/lib.rs", &lib);
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();

    let wasm = build_component(&project);
    let check = toolhost(base.path(), &["check", wasm.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));

    let ws = workspace();
    write(ws.path(), "README.md", "three little words\n");
    let plugins = workspace();
    std::fs::copy(&wasm, plugins.path().join("word_count.wasm")).unwrap();
    let out = toolhost(
        ws.path(),
        &[
            "--plugin-dir",
            plugins.path().to_str().unwrap(),
            "--grant",
            "word_count=workspace:read",
            "call",
            "word_count",
            r#"{"path":"README.md"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "3 words");
}
