//! apply_patch: multi-file patches, creation and deletion, fuzz levels,
//! all-or-nothing, and a differential test against GNU patch.

use crate::support::{bytes, call_cli, executor, kind, workspace, write};
use serde_json::json;
use std::path::Path;
use std::process::Command;

pub fn patch_of(files: &[(&str, &str, &str)]) -> String {
    // (path, before, after) → a unified diff made by GNU diff (`diff -ru`).
    let dir = workspace();
    for (path, before, after) in files {
        write(dir.path(), &format!("a/{path}"), before);
        write(dir.path(), &format!("b/{path}"), after);
    }
    diff(dir.path())
}

fn diff(root: &Path) -> String {
    let out = Command::new("diff")
        .args(["-ru", "a", "b"])
        .current_dir(root)
        .output()
        .expect("diff runs");
    assert!(
        out.status.code() == Some(1),
        "diff found no change: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 diff")
}

#[test]
fn applies_a_multi_file_multi_hunk_patch_and_reports_each_hunk() {
    let ws = workspace();
    let a: String = (1..=40).map(|i| format!("a{i}\n")).collect();
    let b = "one\ntwo\n";
    write(ws.path(), "src/a.txt", &a);
    write(ws.path(), "b.txt", b);
    let a2 = a.replace("a3\n", "A3\n").replace("a30\n", "A30\n");
    let patch = patch_of(&[("src/a.txt", &a, &a2), ("b.txt", b, "one\n2\n")]);
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "src/a.txt"), a2.as_bytes());
    assert_eq!(bytes(ws.path(), "b.txt"), b"one\n2\n");
    let files = v["structured"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["path"], "b.txt");
    assert_eq!(files[1]["hunks"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(files[1]["hunks"][1]["fuzz"], "exact");
    assert!(
        v["content"]
            .as_str()
            .unwrap()
            .contains("hunk 2 applied at line 27 (exact)"),
        "{v}"
    );
}

#[test]
fn reports_offsets_and_whitespace_fuzz() {
    let ws = workspace();
    let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    // The file gained 3 lines at the top, and one line has trailing spaces.
    let moved = format!("x\ny\nz\n{}", text.replace("line 10\n", "line 10   \n"));
    write(ws.path(), "f.txt", &moved);
    let patch = patch_of(&[("f.txt", &text, &text.replace("line 11\n", "LINE 11\n"))]);
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
    assert_eq!(v["success"], true, "{v}");
    let hunk = &v["structured"]["files"][0]["hunks"][0];
    assert_eq!(hunk["fuzz"], "trailing_whitespace", "{v}");
    assert_eq!(hunk["offset"], 3);
    assert!(
        String::from_utf8(bytes(ws.path(), "f.txt"))
            .unwrap()
            .contains("line 10   \nLINE 11\n")
    );
}

#[test]
fn all_or_nothing_across_files() {
    let ws = workspace();
    write(ws.path(), "one.txt", "1\n2\n3\n");
    write(ws.path(), "two.txt", "a\nb\nc\n");
    let patch = "--- a/one.txt\n+++ b/one.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n--- a/two.txt\n+++ b/two.txt\n@@ -1,3 +1,3 @@\n a\n-nothing like this\n+B\n c\n";
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
    assert_eq!(kind(&v), "retry", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("file 2 of 2 (`two.txt`), nothing was changed"),
        "{msg}"
    );
    assert!(
        msg.contains("hunk 1 of 1") && msg.contains("It expects:\n  a\n  nothing like this\n  c\n"),
        "{msg}"
    );
    assert!(msg.contains("closest region is lines 1-3"), "{msg}");
    assert_eq!(
        bytes(ws.path(), "one.txt"),
        b"1\n2\n3\n",
        "the first file was not written"
    );
    assert_eq!(bytes(ws.path(), "two.txt"), b"a\nb\nc\n");
}

#[test]
fn creates_and_deletes_files_through_dev_null() {
    let ws = workspace();
    write(ws.path(), "old.txt", "bye\n");
    let patch = "--- /dev/null\n+++ b/new/file.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
    assert_eq!(kind(&v), "denied", "deletion needs allow_delete: {v}");
    assert!(
        !ws.path().join("new/file.txt").exists(),
        "nothing was created either"
    );
    let v = call_cli(
        ws.path(),
        "apply_patch",
        &json!({"patch": patch}),
        &["--allow-delete"],
    );
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "new/file.txt"), b"hello\nworld\n");
    assert!(!ws.path().join("old.txt").exists());
    let actions: Vec<&str> = v["structured"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["created", "deleted"]);
    // Creating a file that exists is refused.
    let v = call_cli(
        ws.path(),
        "apply_patch",
        &json!({"patch": "--- /dev/null\n+++ b/new/file.txt\n@@ -0,0 +1 @@\n+x\n"}),
        &[],
    );
    assert_eq!(kind(&v), "retry", "{v}");
}

#[test]
fn headerless_hunks_need_a_path() {
    let ws = workspace();
    write(ws.path(), "f.txt", "a\nb\n");
    let hunk = "@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": hunk}), &[]);
    assert_eq!(kind(&v), "invalid_input", "{v}");
    let v = call_cli(
        ws.path(),
        "apply_patch",
        &json!({"patch": hunk, "path": "f.txt"}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "f.txt"), b"a\nc\n");
}

#[test]
fn malformed_patches_and_escapes_are_refused() {
    let ws = workspace();
    write(ws.path(), "f.txt", "a\n");
    for (patch, want) in [
        ("not a diff at all", "invalid_input"),
        (
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n",
            "invalid_input",
        ),
        (
            "--- a/../escape.txt\n+++ b/../escape.txt\n@@ -1 +1 @@\n-a\n+b\n",
            "denied",
        ),
        (
            "--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-a\n+b\n",
            "retry",
        ),
    ] {
        let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
        assert_eq!(kind(&v), want, "{patch}: {v}");
    }
    assert_eq!(bytes(ws.path(), "f.txt"), b"a\n");
}

// Regression: with `path` given, `/dev/null` headers were ignored, so a
// creation patch aimed at another path failed as "does not exist".
#[test]
fn dev_null_headers_create_and_delete_even_with_a_path() {
    let ws = workspace();
    let create = "--- /dev/null\n+++ b/whatever.txt\n@@ -0,0 +1 @@\n+hi\n";
    let v = call_cli(
        ws.path(),
        "apply_patch",
        &json!({"patch": create, "path": "made.txt"}),
        &[],
    );
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "made.txt"), b"hi\n");
    assert!(!ws.path().join("whatever.txt").exists());
    let delete = "--- a/whatever.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-hi\n";
    let args = json!({"patch": delete, "path": "made.txt"});
    let v = call_cli(ws.path(), "apply_patch", &args, &[]);
    assert_eq!(kind(&v), "denied", "{v}");
    let v = call_cli(ws.path(), "apply_patch", &args, &["--allow-delete"]);
    assert_eq!(v["success"], true, "{v}");
    assert!(!ws.path().join("made.txt").exists());
}

// Regression: the new path was always patched, so `diff -u f f.new`
// failed where GNU patch patches the existing `f`.
#[test]
fn a_diff_of_f_against_f_new_patches_f() {
    let dir = workspace();
    write(dir.path(), "f", "one\ntwo\n");
    write(dir.path(), "f.new", "one\n2\n");
    let out = Command::new("diff")
        .args(["-u", "f", "f.new"])
        .current_dir(dir.path())
        .output()
        .expect("diff runs");
    let patch = String::from_utf8(out.stdout).unwrap();
    let ws = workspace();
    write(ws.path(), "f", "one\ntwo\n");
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "f"), b"one\n2\n");
    assert!(!ws.path().join("f.new").exists());
    // When the new path exists, it is the one patched.
    write(ws.path(), "f.new", "one\ntwo\n");
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "f.new"), b"one\n2\n");
}

// Regression (missing test): a write failing after others succeeded must
// put those back; the message said "the {i} files ... were restored" even
// for created files or when nothing had been written.
#[test]
fn a_failed_write_puts_back_what_was_written_and_says_what_it_did() {
    let ws = workspace();
    write(ws.path(), "a.txt", "old\n");
    // `d` is created as a file, so `d/x.txt` cannot be: the third write fails.
    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n\
                 --- /dev/null\n+++ b/d\n@@ -0,0 +1 @@\n+a file\n\
                 --- /dev/null\n+++ b/d/x.txt\n@@ -0,0 +1 @@\n+x\n";
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
    assert!(!v["success"].as_bool().unwrap(), "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with(
            "creating `d/x.txt` failed; what the patch did before it was undone: \
             restored `a.txt`, removed the created `d`: "
        ),
        "{msg}"
    );
    assert_eq!(
        bytes(ws.path(), "a.txt"),
        b"old\n",
        "the first file is restored"
    );
    assert!(!ws.path().join("d").exists(), "the created file is removed");
}

/// Real text: this repository's own sources and docs.
fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut texts = Vec::new();
    for dir in [
        "host/src",
        "sdk/rust/src",
        "docs",
        "plugins/apply_patch/src",
        "plugins/read_file/src",
    ] {
        for entry in std::fs::read_dir(root.join(dir)).expect("corpus dir") {
            let path = entry.expect("entry").path();
            if let Ok(text) = std::fs::read_to_string(&path)
                && text.lines().count() > 30
            {
                texts.push(text);
            }
        }
    }
    assert!(texts.len() >= 10, "corpus too small");
    texts
}

/// A random multi-hunk edit: lines replaced, deleted and inserted at spots
/// far enough apart to make separate hunks; sometimes the final newline
/// goes or comes.
fn random_edit(rng: &mut fastrand::Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let spots = rng.usize(2..=5);
    let stride = (lines.len() / spots).max(8);
    for k in (0..spots).rev() {
        let at = (k * stride + rng.usize(0..stride.min(6))).min(lines.len().saturating_sub(1));
        match rng.u8(0..3) {
            0 => lines[at] = format!("edited {} {}", rng.u32(..), lines[at]),
            1 => {
                let n = rng.usize(1..=3).min(lines.len() - at);
                lines.drain(at..at + n);
            }
            _ => {
                for i in 0..rng.usize(1..=3) {
                    lines.insert(at, format!("inserted line {i} {}", rng.u32(..)));
                }
            }
        }
    }
    let mut out = lines.join("\n");
    if rng.u8(0..5) != 0 {
        out.push('\n');
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read tree") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, to.join(path.file_name().expect("name"))).expect("copy");
    }
}

fn same_tree(a: &Path, b: &Path) -> bool {
    std::fs::read_dir(a).expect("tree").all(|e| {
        let name = e.expect("entry").file_name();
        std::fs::read(a.join(&name)).ok() == std::fs::read(b.join(&name)).ok()
    })
}

/// 200 random multi-hunk, often multi-file patches made by GNU diff:
/// apply_patch and GNU patch must produce identical files; the same patches
/// with one context line corrupted must fail cleanly, every file untouched.
#[test]
fn differential_against_gnu_patch() {
    let corpus = corpus();
    let mut rng = fastrand::Rng::with_seed(0x7001_0507);
    for case in 0..200 {
        let root = workspace();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        for f in 0..rng.usize(1..=3) {
            let mut original = corpus[rng.usize(0..corpus.len())].clone();
            if rng.u8(0..5) == 0 {
                original.pop(); // no final newline
            }
            std::fs::write(a.join(format!("f{f}.txt")), &original).unwrap();
            std::fs::write(
                b.join(format!("f{f}.txt")),
                random_edit(&mut rng, &original),
            )
            .unwrap();
        }
        let patch = diff(root.path());

        let ours = workspace();
        copy_tree(&a, ours.path());
        let r = crate::support::call(
            &executor(ours.path()),
            "apply_patch",
            &json!({"patch": patch}).to_string(),
        );
        assert!(r.success, "case {case}: {r:?}\n{patch}");

        let theirs = workspace();
        copy_tree(&a, theirs.path());
        let status = Command::new("patch")
            .args(["-p1", "-s", "--no-backup-if-mismatch", "-d"])
            .arg(theirs.path())
            .stdin(std::fs::File::open(write(root.path(), "p.diff", &patch)).unwrap())
            .status()
            .expect("GNU patch runs");
        assert!(status.success(), "case {case}: GNU patch failed");
        assert!(
            same_tree(ours.path(), theirs.path()),
            "case {case}: results differ\n{patch}"
        );
        assert!(
            same_tree(ours.path(), &b),
            "case {case}: result is not the edited file"
        );

        // Corrupt one context line: the patch must fail and change nothing.
        let corrupted = patch.replacen("\n ", "\n @@CORRUPTED@@", 1);
        let untouched = workspace();
        copy_tree(&a, untouched.path());
        let r = crate::support::call(
            &executor(untouched.path()),
            "apply_patch",
            &json!({"patch": corrupted}).to_string(),
        );
        assert!(
            !r.success,
            "case {case}: a corrupted patch applied\n{corrupted}"
        );
        assert!(
            same_tree(untouched.path(), &a),
            "case {case}: a failed patch changed files"
        );
    }
}
