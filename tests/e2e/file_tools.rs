//! write_file, delete_file, edit_file, multi_edit, list_files, list_dirs:
//! every behaviour through `toolhost call ... --json`.

use crate::support::{bytes, call_cli, kind, workspace, write};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

#[test]
fn write_file_creates_parents_and_reports_the_hash() {
    let ws = workspace();
    let v = call_cli(
        ws.path(),
        "write_file",
        &json!({"path": "a/b/c.txt", "content": "hi\n"}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "a/b/c.txt"), b"hi\n");
    let s = &v["structured"];
    assert_eq!(
        (s["created"].as_bool(), s["size"].as_u64()),
        (Some(true), Some(3))
    );
    assert_eq!(s["hash"], toolhost_shared::text::content_hash(b"hi\n"));
    assert!(
        v["content"]
            .as_str()
            .unwrap()
            .starts_with("Created `a/b/c.txt`")
    );
}

#[test]
fn write_file_overwrites_appends_and_keeps_permissions() {
    let ws = workspace();
    let script = write(ws.path(), "run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    let v = call_cli(
        ws.path(),
        "write_file",
        &json!({"path": "run.sh", "content": "#!/bin/sh\necho 1\n"}),
        &[],
    );
    assert_eq!(v["structured"]["created"], false, "{v}");
    let v = call_cli(
        ws.path(),
        "write_file",
        &json!({"path": "run.sh", "content": "echo 2\n", "mode": "append"}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "run.sh"), b"#!/bin/sh\necho 1\necho 2\n");
    let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o751, "permissions kept through atomic replace");
    let leftovers: Vec<_> = std::fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
}

#[test]
fn write_file_refuses_a_stale_expected_hash() {
    let ws = workspace();
    write(ws.path(), "a.txt", "v1\n");
    let stale = toolhost_shared::text::content_hash(b"v0\n");
    let v = call_cli(
        ws.path(),
        "write_file",
        &json!({"path": "a.txt", "content": "v2\n", "expected_hash": stale}),
        &[],
    );
    assert_eq!(kind(&v), "retry", "{v}");
    assert!(
        v["content"]
            .as_str()
            .unwrap()
            .contains("changed since it was read")
    );
    assert_eq!(bytes(ws.path(), "a.txt"), b"v1\n");
    let fresh = toolhost_shared::text::content_hash(b"v1\n");
    let v = call_cli(
        ws.path(),
        "write_file",
        &json!({"path": "a.txt", "content": "v2\n", "expected_hash": fresh}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    let v = call_cli(
        ws.path(),
        "write_file",
        &json!({"path": "gone.txt", "content": "x", "expected_hash": fresh}),
        &[],
    );
    assert_eq!(kind(&v), "retry", "{v}");
    assert!(!ws.path().join("gone.txt").exists());
}

#[test]
fn write_file_refuses_directories_and_escapes() {
    let ws = workspace();
    std::fs::create_dir(ws.path().join("dir")).unwrap();
    let v = call_cli(
        ws.path(),
        "write_file",
        &json!({"path": "dir", "content": "x"}),
        &[],
    );
    assert_eq!(kind(&v), "retry", "{v}");
    for path in ["../escape.txt", "/tmp/escape.txt"] {
        let v = call_cli(
            ws.path(),
            "write_file",
            &json!({"path": path, "content": "x"}),
            &[],
        );
        assert_eq!(kind(&v), "denied", "{path}: {v}");
    }
    assert!(!ws.path().parent().unwrap().join("escape.txt").exists());
}

#[test]
fn delete_file_is_off_by_default_and_says_how_to_enable_it() {
    let ws = workspace();
    write(ws.path(), "a.txt", "x");
    let v = call_cli(ws.path(), "delete_file", &json!({"path": "a.txt"}), &[]);
    assert_eq!(kind(&v), "denied", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    // Regression: it told people to set `allow_delete = true` in a
    // toolhost.toml that does not exist yet.
    assert!(
        msg.contains("`--allow-delete`")
            && msg.contains("the `allow_delete` setting")
            && !msg.contains("toolhost.toml"),
        "{msg}"
    );
    assert!(ws.path().join("a.txt").exists());
    let v = call_cli(
        ws.path(),
        "delete_file",
        &json!({"path": "a.txt"}),
        &["--allow-delete"],
    );
    assert_eq!(v["success"], true, "{v}");
    assert!(!ws.path().join("a.txt").exists());
    let v = call_cli(
        ws.path(),
        "delete_file",
        &json!({"path": "a.txt"}),
        &["--allow-delete"],
    );
    assert_eq!(kind(&v), "retry", "{v}");
}

#[test]
fn delete_file_never_deletes_directories_or_anything_outside() {
    let ws = workspace();
    let outside = workspace();
    let secret = write(outside.path(), "secret.txt", "keep");
    std::fs::create_dir(ws.path().join("dir")).unwrap();
    std::os::unix::fs::symlink(&secret, ws.path().join("link")).unwrap();
    let allow = ["--allow-delete"];
    let v = call_cli(ws.path(), "delete_file", &json!({"path": "dir"}), &allow);
    assert_eq!(kind(&v), "retry", "{v}");
    assert!(ws.path().join("dir").is_dir());
    for path in [
        "../x".to_owned(),
        secret.display().to_string(),
        ".".to_owned(),
    ] {
        let v = call_cli(ws.path(), "delete_file", &json!({"path": path}), &allow);
        assert!(v["success"] == false, "{path}: {v}");
    }
    // The link is in the workspace: it goes, its target stays.
    let v = call_cli(ws.path(), "delete_file", &json!({"path": "link"}), &allow);
    assert_eq!(v["structured"]["symlink"], true, "{v}");
    assert!(secret.exists());
}

#[test]
fn edit_file_replaces_a_unique_match_and_returns_diff_and_hash() {
    let ws = workspace();
    write(ws.path(), "m.rs", "fn a() {}\nfn b() {}\n");
    let v = call_cli(
        ws.path(),
        "edit_file",
        &json!({"path": "m.rs", "old_str": "fn b() {}", "new_str": "fn b() { 1 }"}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "m.rs"), b"fn a() {}\nfn b() { 1 }\n");
    let s = &v["structured"];
    assert!(
        s["diff"]
            .as_str()
            .unwrap()
            .contains("-fn b() {}\n+fn b() { 1 }\n"),
        "{s}"
    );
    assert_eq!(
        s["hash"],
        toolhost_shared::text::content_hash(b"fn a() {}\nfn b() { 1 }\n")
    );
    assert_eq!(s["lines"], json!([2]));
}

#[test]
fn edit_file_no_match_shows_the_closest_region_and_the_difference() {
    let ws = workspace();
    write(
        ws.path(),
        "m.py",
        "def f():\n    return 'x'\n\ndef g():\n    pass\n",
    );
    let v = call_cli(
        ws.path(),
        "edit_file",
        &json!({"path": "m.py", "old_str": "def f():\n  return \"x\"", "new_str": "y"}),
        &[],
    );
    assert_eq!(kind(&v), "retry", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("closest region is lines 1-2"), "{msg}");
    assert!(msg.contains("     2\t    return 'x'"), "{msg}");
    assert!(
        msg.contains("indentation") || msg.contains("quotes"),
        "{msg}"
    );
}

#[test]
fn edit_file_several_matches_list_every_line_and_replace_all_works() {
    let ws = workspace();
    write(ws.path(), "a.txt", "x\ny\nx\nz\nx\n");
    let v = call_cli(
        ws.path(),
        "edit_file",
        &json!({"path": "a.txt", "old_str": "x", "new_str": "w"}),
        &[],
    );
    assert_eq!(kind(&v), "retry", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("lines 1, 3, 5"),
        "{v}"
    );
    assert_eq!(bytes(ws.path(), "a.txt"), b"x\ny\nx\nz\nx\n");
    let v = call_cli(
        ws.path(),
        "edit_file",
        &json!({"path": "a.txt", "old_str": "x", "new_str": "w", "replace_all": true}),
        &[],
    );
    assert_eq!(v["structured"]["replacements"], 3, "{v}");
    assert_eq!(bytes(ws.path(), "a.txt"), b"w\ny\nw\nz\nw\n");
}

#[test]
fn edit_file_bad_arguments_are_invalid_input() {
    let ws = workspace();
    write(ws.path(), "a.txt", "x\n");
    for args in [
        json!({"path": "a.txt", "old_str": "", "new_str": "y"}),
        json!({"path": "a.txt", "old_str": "x", "new_str": "x"}),
        json!({"path": "a.txt", "old_str": "x"}),
    ] {
        let v = call_cli(ws.path(), "edit_file", &args, &[]);
        assert_eq!(kind(&v), "invalid_input", "{args}: {v}");
    }
}

#[test]
fn edit_file_refuses_non_utf8_and_leaves_it_untouched() {
    let ws = workspace();
    write(ws.path(), "latin1.txt", b"caf\xe9 = 1\n");
    let v = call_cli(
        ws.path(),
        "edit_file",
        &json!({"path": "latin1.txt", "old_str": "= 1", "new_str": "= 2"}),
        &[],
    );
    assert_eq!(kind(&v), "failed", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid UTF-8"),
        "{v}"
    );
    assert_eq!(bytes(ws.path(), "latin1.txt"), b"caf\xe9 = 1\n");
}

#[test]
fn edit_file_refuses_a_stale_expected_hash() {
    let ws = workspace();
    write(ws.path(), "a.txt", "one\n");
    let v = call_cli(
        ws.path(),
        "edit_file",
        &json!({"path": "a.txt", "old_str": "one", "new_str": "two", "expected_hash": "xxh3:00"}),
        &[],
    );
    assert_eq!(kind(&v), "retry", "{v}");
    assert_eq!(bytes(ws.path(), "a.txt"), b"one\n");
}

#[test]
fn multi_edit_applies_in_order_all_or_nothing() {
    let ws = workspace();
    write(ws.path(), "a.txt", "alpha\nbeta\ngamma\n");
    let edits = json!([
        {"old_str": "alpha", "new_str": "ALPHA"},
        {"old_str": "ALPHA\nbeta", "new_str": "AB"},
    ]);
    let v = call_cli(
        ws.path(),
        "multi_edit",
        &json!({"path": "a.txt", "edits": edits}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "a.txt"), b"AB\ngamma\n");
    assert_eq!(v["structured"]["replacements"], json!([1, 1]));

    let edits = json!([
        {"old_str": "AB", "new_str": "ab"},
        {"old_str": "missing", "new_str": "x"},
        {"old_str": "gamma", "new_str": "g"},
    ]);
    let v = call_cli(
        ws.path(),
        "multi_edit",
        &json!({"path": "a.txt", "edits": edits}),
        &[],
    );
    assert_eq!(kind(&v), "retry", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("edit 2 of 3 failed") && msg.contains("unchanged"),
        "{msg}"
    );
    assert_eq!(bytes(ws.path(), "a.txt"), b"AB\ngamma\n", "file untouched");
    let v = call_cli(
        ws.path(),
        "multi_edit",
        &json!({"path": "a.txt", "edits": []}),
        &[],
    );
    assert_eq!(kind(&v), "invalid_input", "{v}");
}

/// CRLF (touched and untouched lines), BOM and a missing final newline
/// survive every editing tool byte for byte outside the edited text.
#[test]
fn crlf_bom_and_missing_final_newline_survive_every_edit_tool() {
    let original: &[u8] = b"\xef\xbb\xbfline one\r\nline two\r\nline three";
    let expected: &[u8] = b"\xef\xbb\xbfline one\r\nline 2\r\nline three";
    let patch = "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n line one\n-line two\n+line 2\n line three\n\\ No newline at end of file\n";
    let cases = [
        (
            "edit_file",
            json!({"path": "f.txt", "old_str": "line two", "new_str": "line 2"}),
        ),
        (
            "multi_edit",
            json!({"path": "f.txt", "edits": [{"old_str": "two", "new_str": "2"}]}),
        ),
        ("apply_patch", json!({"patch": patch})),
    ];
    for (tool, args) in cases {
        let ws = workspace();
        write(ws.path(), "f.txt", original);
        let v = call_cli(ws.path(), tool, &args, &[]);
        assert_eq!(v["success"], true, "{tool}: {v}");
        assert_eq!(bytes(ws.path(), "f.txt"), expected, "{tool}");
    }
}

#[test]
fn list_files_lists_files_with_sizes_sorted_and_filtered() {
    let ws = workspace();
    write(ws.path(), "b.rs", "12345");
    write(ws.path(), "a.md", "1");
    write(ws.path(), "src/c.rs", "12");
    write(ws.path(), "src/docs/d.md", "123");
    write(ws.path(), ".git/HEAD", "ref");
    let v = call_cli(ws.path(), "list_files", &json!({}), &[]);
    let paths = |v: &serde_json::Value| -> Vec<String> {
        v["structured"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        paths(&v),
        ["a.md", "b.rs"],
        "not recursive, files only: {v}"
    );
    assert_eq!(v["structured"]["files"][1]["size"], 5);
    assert_eq!(v["content"], "a.md (1 bytes)\nb.rs (5 bytes)\n");
    let v = call_cli(ws.path(), "list_files", &json!({"recursive": true}), &[]);
    assert_eq!(
        paths(&v),
        ["a.md", "b.rs", "src/c.rs", "src/docs/d.md"],
        ".git not entered: {v}"
    );
    let v = call_cli(
        ws.path(),
        "list_files",
        &json!({"pattern": "*.rs", "recursive": true}),
        &[],
    );
    assert_eq!(paths(&v), ["b.rs", "src/c.rs"]);
    let v = call_cli(ws.path(), "list_files", &json!({"pattern": "**/*.md"}), &[]);
    assert_eq!(paths(&v), ["a.md", "src/docs/d.md"], "** implies recursive");
    let v = call_cli(
        ws.path(),
        "list_files",
        &json!({"path": "src", "pattern": "*.rs"}),
        &[],
    );
    assert_eq!(paths(&v), ["src/c.rs"]);
    let v = call_cli(
        ws.path(),
        "list_files",
        &json!({"recursive": true, "limit": 2}),
        &[],
    );
    assert_eq!(v["structured"]["truncated"], true);
    assert_eq!(v["structured"]["total"], 4);
    assert!(
        v["content"]
            .as_str()
            .unwrap()
            .contains("[2 of 4 files shown"),
        "{v}"
    );
    let v = call_cli(ws.path(), "list_files", &json!({"pattern": "[bad"}), &[]);
    assert_eq!(kind(&v), "invalid_input", "{v}");
    let v = call_cli(ws.path(), "list_files", &json!({"path": "../"}), &[]);
    assert_eq!(kind(&v), "denied", "{v}");
    let v = call_cli(ws.path(), "list_files", &json!({"path": "b.rs"}), &[]);
    assert_eq!(kind(&v), "retry", "{v}");
}

#[test]
fn list_dirs_lists_directories_to_a_depth_of_three() {
    let ws = workspace();
    for d in ["a/b/c/d", "e", ".git/objects"] {
        std::fs::create_dir_all(ws.path().join(d)).unwrap();
    }
    write(ws.path(), "file.txt", "x");
    let dirs = |v: &serde_json::Value| -> Vec<(String, u64)> {
        v["structured"]["dirs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["path"].as_str().unwrap().to_owned(),
                    d["depth"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let v = call_cli(ws.path(), "list_dirs", &json!({}), &[]);
    assert_eq!(
        dirs(&v),
        [(".git".into(), 1), ("a".into(), 1), ("e".into(), 1)]
    );
    let v = call_cli(ws.path(), "list_dirs", &json!({"depth": 3}), &[]);
    assert_eq!(
        dirs(&v),
        [
            (".git".into(), 1),
            ("a".into(), 1),
            ("a/b".into(), 2),
            ("a/b/c".into(), 3),
            ("e".into(), 1)
        ]
    );
    let v = call_cli(ws.path(), "list_dirs", &json!({"depth": 4}), &[]);
    assert_eq!(kind(&v), "invalid_input", "{v}");
    let v = call_cli(
        ws.path(),
        "list_dirs",
        &json!({"depth": 3, "limit": 2}),
        &[],
    );
    assert_eq!(v["structured"]["truncated"], true);
    assert!(
        v["content"]
            .as_str()
            .unwrap()
            .contains("[2 of 5 directories shown"),
        "{v}"
    );
}

#[test]
fn read_tools_get_a_read_only_workspace() {
    let ws = workspace();
    let out = crate::support::toolhost(ws.path(), &["tools", "--json"]);
    for tool in crate::support::json(&out).as_array().unwrap() {
        let caps = tool["capabilities"].as_array().unwrap();
        if ["read_file", "list_files", "list_dirs"].contains(&tool["name"].as_str().unwrap()) {
            assert_eq!(caps, &vec![json!("workspace:read")], "{tool}");
        }
    }
}
