//! find_files, grep and search_code on a fixture tree (ignored, hidden,
//! binary, nested, CRLF), exact results per option; a file streamed
//! because it is over 1 MiB; match sets against GNU grep on 2,000
//! generated files; the read-only grant the search tools hold.

use crate::support::{call_cli, content_lines, kind, workspace, write};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

/// The fixture tree every test here searches.
fn tree() -> tempfile::TempDir {
    let ws = workspace();
    let p = ws.path();
    write(p, ".gitignore", "build/\n*.log\n");
    write(
        p,
        "src/main.rs",
        "fn main() {\n    let needle = 1;\n    println!(\"{needle}\");\n}\n",
    );
    write(
        p,
        "src/lib/deep/nested.rs",
        "// a needle in a nested dir\npub fn f() {}\n",
    );
    write(
        p,
        "docs/guide.md",
        "# Guide\nNo needles here? One: needle.\n",
    );
    write(p, "win.txt", "first\r\nneedle with crlf\r\nlast\r\n");
    write(p, "build/out.rs", "needle in an ignored dir\n");
    write(p, "debug.log", "needle in an ignored file\n");
    write(p, ".hidden/keys.txt", "needle in a hidden dir\n");
    write(p, ".settings", "NEEDLE=1\n");
    write(p, "image.bin", b"needle\x00\x01\x02binary");
    ws
}

#[test]
fn grep_content_sorted_by_path_then_line_skipping_ignored_hidden_binary() {
    let ws = tree();
    let v = call_cli(ws.path(), "grep", &json!({"pattern": "needle"}), &[]);
    assert_eq!(
        content_lines(&v),
        [
            "docs/guide.md:2:No needles here? One: needle.",
            "src/lib/deep/nested.rs:1:// a needle in a nested dir",
            "src/main.rs:2:    let needle = 1;",
            "src/main.rs:3:    println!(\"{needle}\");",
            "win.txt:2:needle with crlf",
        ]
    );
    let s = &v["structured"];
    assert_eq!(
        (
            s["total_matches"].as_u64(),
            s["files_with_matches"].as_u64()
        ),
        (Some(5), Some(4))
    );
}

#[test]
fn grep_options_change_the_set() {
    let ws = tree();
    let files = |args: Value| content_lines(&call_cli(ws.path(), "grep", &args, &[]));
    assert_eq!(
        files(
            json!({"pattern": "needle", "output": "files", "respect_ignore": false, "hidden": true})
        ),
        [
            ".hidden/keys.txt",
            "build/out.rs",
            "debug.log",
            "docs/guide.md",
            "src/lib/deep/nested.rs",
            "src/main.rs",
            "win.txt"
        ]
    );
    assert_eq!(
        files(json!({"pattern": "NEEDLE", "output": "files", "hidden": true})),
        [".settings"]
    );
    assert_eq!(
        files(json!({"pattern": "NEEDLE", "output": "count", "case_sensitive": false})),
        [
            "docs/guide.md:1",
            "src/lib/deep/nested.rs:1",
            "src/main.rs:2",
            "win.txt:1"
        ]
    );
    assert_eq!(
        files(json!({"pattern": "needle", "output": "files", "file_pattern": "*.rs"})),
        ["src/lib/deep/nested.rs", "src/main.rs"]
    );
    assert_eq!(
        files(json!({"pattern": "needle", "output": "files", "path": "src/lib"})),
        ["src/lib/deep/nested.rs"]
    );
    assert_eq!(
        files(json!({"pattern": "let needle", "context": 1})),
        [
            "src/main.rs-1-fn main() {",
            "src/main.rs:2:    let needle = 1;",
            "src/main.rs-3-    println!(\"{needle}\");"
        ]
    );
    assert_eq!(
        files(json!({"pattern": "a.b"})),
        ["0 matches for `a.b`."],
        "literal, not a regex"
    );
    // The Python tool system's `recursive` (default true): false stays in the directory.
    assert_eq!(
        files(json!({"pattern": "needle", "output": "files", "recursive": false})),
        ["win.txt"]
    );
    assert_eq!(
        files(json!({"pattern": "needle", "output": "files", "path": "src", "recursive": false})),
        ["src/main.rs"]
    );
    assert_eq!(
        files(json!({"pattern": "needle", "output": "files", "path": "src", "recursive": true})),
        ["src/lib/deep/nested.rs", "src/main.rs"]
    );
}

#[test]
fn nothing_found_says_what_was_skipped() {
    let ws = tree();
    let v = call_cli(ws.path(), "grep", &json!({"pattern": "ignored"}), &[]);
    assert_eq!(
        v["content"],
        "0 matches for `ignored`; 2 matches exist in 2 ignored files — set respect_ignore=false to search them.\n"
    );
    let v = call_cli(ws.path(), "grep", &json!({"pattern": "hidden dir"}), &[]);
    assert!(
        v["content"]
            .as_str()
            .unwrap()
            .contains("1 match exists in 1 hidden file — set hidden=true"),
        "{v}"
    );
    let v = call_cli(ws.path(), "find_files", &json!({"pattern": "*.log"}), &[]);
    assert_eq!(
        v["content"],
        "0 files match `*.log`; 1 match exists in 1 ignored file — set respect_ignore=false to \
         include them.\n"
    );
    // Regression: a file both hidden and ignored was counted nowhere.
    write(
        ws.path(),
        ".cache/deep.log",
        "needle in a hidden ignored file\n",
    );
    let v = call_cli(
        ws.path(),
        "grep",
        &json!({"pattern": "hidden ignored"}),
        &[],
    );
    assert_eq!(
        v["content"],
        "0 matches for `hidden ignored`; 1 match exists in 1 hidden and ignored file — set both \
         respect_ignore=false and hidden=true to search them.\n"
    );
}

#[test]
fn max_results_cuts_with_a_note() {
    let ws = tree();
    let v = call_cli(
        ws.path(),
        "grep",
        &json!({"pattern": "needle", "max_results": 2}),
        &[],
    );
    let l = content_lines(&v);
    assert_eq!(l.len(), 3, "{l:?}");
    assert_eq!(
        l[2],
        "[2 of 5 matching lines shown (5 matches in 4 files); narrow the path or file pattern, or raise max_results]"
    );
    assert_eq!(v["structured"]["truncated"], true);
    let v = call_cli(
        ws.path(),
        "grep",
        &json!({"pattern": "needle", "output": "files", "max_results": 1}),
        &[],
    );
    assert!(
        content_lines(&v)[1].starts_with("[1 of 4 files shown"),
        "{v}"
    );
}

#[test]
fn search_code_regex_with_context_multiline_and_errors() {
    let ws = tree();
    let v = call_cli(
        ws.path(),
        "search_code",
        &json!({"pattern": r"let \w+ = \d;", "context_lines": 1}),
        &[],
    );
    assert_eq!(
        content_lines(&v),
        [
            "src/main.rs-1-fn main() {",
            "src/main.rs:2:    let needle = 1;",
            "src/main.rs-3-    println!(\"{needle}\");"
        ]
    );
    let v = call_cli(
        ws.path(),
        "search_code",
        &json!({"pattern": r"^(first|last)$", "context_lines": 0}),
        &[],
    );
    assert_eq!(
        content_lines(&v),
        ["win.txt:1:first", "win.txt:3:last"],
        "CRLF lines match with ^ and $"
    );
    let v = call_cli(
        ws.path(),
        "search_code",
        &json!({"pattern": r"main\(\) \{\n\s+let", "multiline": true, "context_lines": 0}),
        &[],
    );
    assert_eq!(
        content_lines(&v),
        [
            "src/main.rs:1:fn main() {",
            "src/main.rs:2:    let needle = 1;"
        ]
    );
    let v = call_cli(
        ws.path(),
        "search_code",
        &json!({"pattern": "(unclosed"}),
        &[],
    );
    assert_eq!(kind(&v), "invalid_input", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unclosed group"),
        "{v}"
    );
    let v = call_cli(
        ws.path(),
        "search_code",
        &json!({"pattern": "needle", "max_results": 1, "context_lines": 0}),
        &[],
    );
    assert_eq!(
        content_lines(&v)[0],
        "docs/guide.md:2:No needles here? One: needle."
    );
}

#[test]
fn find_files_newest_first_with_limits() {
    let ws = tree();
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    for (f, age) in [("src/main.rs", 3), ("src/lib/deep/nested.rs", 1)] {
        let file = std::fs::File::options()
            .write(true)
            .open(ws.path().join(f))
            .unwrap();
        file.set_modified(old + std::time::Duration::from_secs(age))
            .unwrap();
    }
    let v = call_cli(ws.path(), "find_files", &json!({"pattern": "*.rs"}), &[]);
    assert_eq!(content_lines(&v), ["src/main.rs", "src/lib/deep/nested.rs"]);
    let v = call_cli(
        ws.path(),
        "find_files",
        &json!({"pattern": "*.rs", "respect_ignore": false}),
        &[],
    );
    assert_eq!(content_lines(&v)[0], "build/out.rs", "newest first");
    let v = call_cli(
        ws.path(),
        "find_files",
        &json!({"pattern": "*", "limit": 2}),
        &[],
    );
    assert!(
        content_lines(&v)[2].starts_with("[2 of 5 files shown"),
        "{v}"
    );
    let v = call_cli(
        ws.path(),
        "find_files",
        &json!({"pattern": "src/**/*.rs"}),
        &[],
    );
    assert_eq!(v["structured"]["total"], 2);
    let v = call_cli(
        ws.path(),
        "find_files",
        &json!({"pattern": "*.rs", "recursive": false}),
        &[],
    );
    assert_eq!(v["structured"]["total"], 0);
    let v = call_cli(ws.path(), "find_files", &json!({"pattern": "[bad"}), &[]);
    assert_eq!(kind(&v), "invalid_input", "{v}");
}

/// A generated tree of about 2,000 files in nested directories, some binary.
fn generated(root: &Path) {
    let mut rng = fastrand::Rng::with_seed(42);
    let words = [
        "alpha", "beta", "gamma", "delta", "needle", "haystack", "fn", "let", "value", "struct",
    ];
    for i in 0..2000 {
        let dir = format!("d{}/e{}", i % 17, i % 5);
        let mut text = String::new();
        for _ in 0..rng.usize(1..60) {
            let n = rng.usize(1..10);
            let line: Vec<&str> = (0..n).map(|_| words[rng.usize(0..words.len())]).collect();
            text.push_str(&line.join(" "));
            text.push('\n');
        }
        if i % 97 == 0 {
            text.insert(0, '\0');
        }
        write(root, &format!("{dir}/f{i}.txt"), text);
    }
}

fn gnu_grep(root: &Path, args: &[&str]) -> BTreeSet<(String, u64)> {
    let out = std::process::Command::new("grep")
        .args(["-rnI", "--exclude-dir=.git"])
        .args(args)
        .arg(".")
        .current_dir(root)
        .env("LC_ALL", "C")
        .output()
        .expect("grep runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut parts = l.splitn(3, ':');
            let path = parts.next().unwrap().trim_start_matches("./").to_owned();
            (path, parts.next().unwrap().parse().unwrap())
        })
        .collect()
}

fn ours(v: &Value) -> BTreeSet<(String, u64)> {
    v["structured"]["results"]
        .as_array()
        .unwrap_or_else(|| {
            panic!(
                "no structured results: {}",
                &v["content"].as_str().unwrap_or("")
                    [..200.min(v["content"].as_str().unwrap_or("").len())]
            )
        })
        .iter()
        .flat_map(|f| {
            let path = f["path"].as_str().unwrap().to_owned();
            f["lines"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|l| l["is_match"] == true)
                .map(move |l| (path.clone(), l["number"].as_u64().unwrap()))
        })
        .collect()
}

#[test]
fn match_sets_equal_gnu_grep_on_2000_files() {
    let ws = workspace();
    generated(ws.path());
    let all = 1_000_000;
    for (tool, args, grep_args) in [
        (
            "grep",
            json!({"pattern": "needle haystack", "max_results": all}),
            vec!["-F", "needle haystack"],
        ),
        (
            "grep",
            json!({"pattern": "GAMMA DELTA", "case_sensitive": false, "max_results": all}),
            vec!["-F", "-i", "GAMMA DELTA"],
        ),
        (
            "search_code",
            json!({"pattern": r"^fn (let|value)\b", "context_lines": 0, "max_results": all}),
            vec!["-E", r"^fn (let|value)\b"],
        ),
    ] {
        let v = call_cli(ws.path(), tool, &args, &[]);
        let expected = gnu_grep(ws.path(), &grep_args);
        assert!(
            expected.len() > 100,
            "the pattern should match plenty: {}",
            expected.len()
        );
        let got = ours(&v);
        assert_eq!(got.len(), expected.len(), "{tool} {args}");
        assert!(got == expected, "{tool} {args}: sets differ");
        assert_eq!(
            v["structured"]["total_matches"].as_u64(),
            Some(expected.len() as u64)
        );
    }
}

#[test]
fn find_files_hidden_finds_dot_files_and_their_directories() {
    let ws = tree();
    let sorted = |args: Value| -> Vec<String> {
        let mut l = content_lines(&call_cli(ws.path(), "find_files", &args, &[]));
        l.sort();
        l
    };
    assert_eq!(
        sorted(json!({"pattern": "*.txt", "hidden": true})),
        [".hidden/keys.txt", "win.txt"]
    );
    assert_eq!(
        sorted(json!({"pattern": ".settings", "hidden": true})),
        [".settings"]
    );
    assert_eq!(
        sorted(json!({"pattern": ".settings"})),
        [
            "0 files match `.settings`; 1 match exists in 1 hidden file — set hidden=true to include them."
        ]
    );
}

#[test]
fn search_code_options_each_change_the_set_exactly() {
    let ws = tree();
    let search = |args: Value| content_lines(&call_cli(ws.path(), "search_code", &args, &[]));
    assert_eq!(
        search(json!({"pattern": "needle in an ignored", "context_lines": 0})),
        [
            "0 matches for `needle in an ignored`; 2 matches exist in 2 ignored files — set \
             respect_ignore=false to search them."
        ]
    );
    assert_eq!(
        search(
            json!({"pattern": "needle in an ignored", "context_lines": 0, "respect_ignore": false})
        ),
        [
            "build/out.rs:1:needle in an ignored dir",
            "debug.log:1:needle in an ignored file"
        ]
    );
    assert_eq!(
        search(json!({"pattern": r"hidden \w+", "context_lines": 0, "hidden": true})),
        [".hidden/keys.txt:1:needle in a hidden dir"]
    );
    assert_eq!(
        search(json!({"pattern": "needle", "context_lines": 0, "file_pattern": "*.md"})),
        ["docs/guide.md:2:No needles here? One: needle."]
    );
    assert_eq!(
        search(json!({"pattern": "needle", "context_lines": 0, "file_pattern": "src/**"})),
        [
            "src/lib/deep/nested.rs:1:// a needle in a nested dir",
            "src/main.rs:2:    let needle = 1;",
            "src/main.rs:3:    println!(\"{needle}\");"
        ]
    );
    assert_eq!(
        search(json!({"pattern": "NEEDLE WITH", "context_lines": 0, "case_sensitive": false})),
        ["win.txt:2:needle with crlf"]
    );
    assert_eq!(
        search(json!({"pattern": "NEEDLE WITH", "context_lines": 0})),
        ["0 matches for `NEEDLE WITH`."]
    );
}

#[test]
fn grep_context_does_not_change_a_list_of_files() {
    let ws = tree();
    let files = |args: Value| content_lines(&call_cli(ws.path(), "grep", &args, &[]));
    let expected = [
        "docs/guide.md",
        "src/lib/deep/nested.rs",
        "src/main.rs",
        "win.txt",
    ];
    assert_eq!(
        files(json!({"pattern": "needle", "output": "files", "context": 3})),
        expected
    );
    assert_eq!(
        files(json!({"pattern": "needle", "output": "count", "context": 3})),
        [
            "docs/guide.md:1",
            "src/lib/deep/nested.rs:1",
            "src/main.rs:2",
            "win.txt:1"
        ]
    );
}

// Regression: with `context` set, `--` appeared only when some context line
// existed; grep -C separates every non-adjacent group.
#[test]
fn group_separators_follow_the_context_setting() {
    let ws = workspace();
    write(ws.path(), "a.txt", "needle\n");
    write(ws.path(), "b.txt", "needle\n");
    let v = call_cli(
        ws.path(),
        "grep",
        &json!({"pattern": "needle", "context": 1}),
        &[],
    );
    assert_eq!(
        content_lines(&v),
        ["a.txt:1:needle", "--", "b.txt:1:needle"]
    );
    let v = call_cli(ws.path(), "grep", &json!({"pattern": "needle"}), &[]);
    assert_eq!(content_lines(&v), ["a.txt:1:needle", "b.txt:1:needle"]);
}

/// A file over 1 MiB is streamed through WASI rather than read whole.
#[test]
fn a_file_over_one_mebibyte_is_searched_exactly() {
    let ws = workspace();
    let mut text = String::new();
    for i in 1..=60_000 {
        if [1, 30_000, 60_000].contains(&i) {
            text.push_str(&format!("needle at {i}\n"));
        } else {
            text.push_str(&format!("filler line number {i}\n"));
        }
    }
    assert!(text.len() > 1 << 20, "{}", text.len());
    write(ws.path(), "big.txt", &text);
    let v = call_cli(ws.path(), "grep", &json!({"pattern": "needle"}), &[]);
    assert_eq!(
        content_lines(&v),
        [
            "big.txt:1:needle at 1",
            "big.txt:30000:needle at 30000",
            "big.txt:60000:needle at 60000"
        ]
    );
    let v = call_cli(
        ws.path(),
        "search_code",
        &json!({"pattern": r"^needle at \d+0000$", "context_lines": 1}),
        &[],
    );
    assert_eq!(
        content_lines(&v),
        [
            "big.txt-29999-filler line number 29999",
            "big.txt:30000:needle at 30000",
            "big.txt-30001-filler line number 30001",
            "--",
            "big.txt-59999-filler line number 59999",
            "big.txt:60000:needle at 60000"
        ]
    );
}

/// The search tools are granted workspace:read only, and that grant is a
/// read-only preopen: a tool holding it can write neither through WASI nor
/// through the host's `files.write-atomic`.
#[test]
fn search_tools_only_ever_get_read_access() {
    let ws = tree();
    let ex = crate::support::executor(ws.path()).with_grant(
        "misbehave",
        toolhost::Grant::parse_caps("workspace:read").unwrap(),
    );
    for action in ["write", "write_atomic"] {
        for path in ["src/main.rs", "new.txt"] {
            let args = json!({"action": action, "path": path, "content": "pwned"});
            let r = crate::support::call(&ex, "misbehave", &args.to_string());
            assert_eq!(
                r.error_kind(),
                Some(toolhost::ErrorKind::Denied),
                "{action} {path}: {r:?}"
            );
        }
    }
    assert!(!ws.path().join("new.txt").exists());
    assert!(
        std::fs::read_to_string(ws.path().join("src/main.rs"))
            .unwrap()
            .starts_with("fn main()")
    );
    for tool in ["grep", "search_code", "find_files"] {
        let out = crate::support::toolhost(ws.path(), &["describe", tool, "--json"]);
        assert_eq!(
            crate::support::json(&out)["granted"],
            json!(["workspace:read"]),
            "{tool}"
        );
    }
}
