//! The read_file built-in, through the library.

use crate::support::{call, executor, lines_file, workspace, write};
use toolhost::ErrorKind;

fn numbered(lines: std::ops::RangeInclusive<usize>) -> String {
    lines.map(|n| format!("{n:>6}\tline {n}\n")).collect()
}

#[test]
fn reads_a_whole_small_file_with_line_numbers() {
    let ws = workspace();
    write(ws.path(), "a.txt", lines_file(3));
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"a.txt"}"#);
    assert!(r.success, "{r:?}");
    assert_eq!(r.content, numbered(1..=3));
    let s = r.structured.expect("structured output");
    assert_eq!(s["total_lines"], 3);
    assert_eq!(s["start_line"], 1);
    assert_eq!(s["end_line"], 3);
    assert_eq!(s["truncated"], false);
    assert_eq!(s["size"], 21);
    let expected_hash = toolhost_shared::text::content_hash(lines_file(3).as_bytes());
    assert_eq!(s["hash"], expected_hash);
}

#[test]
fn offset_and_limit_select_a_window_and_say_how_to_continue() {
    let ws = workspace();
    write(ws.path(), "a.txt", lines_file(10));
    let r = call(
        &executor(ws.path()),
        "read_file",
        r#"{"path":"a.txt","offset":4,"limit":3}"#,
    );
    assert!(r.success, "{r:?}");
    assert!(r.content.starts_with(&numbered(4..=6)), "{}", r.content);
    assert!(
        r.content.contains("Showing lines 4-6 of 10"),
        "{}",
        r.content
    );
    assert!(r.content.contains("offset=7"), "{}", r.content);
    let s = r.structured.expect("structured");
    assert_eq!(
        (s["start_line"].as_u64(), s["end_line"].as_u64()),
        (Some(4), Some(6))
    );
    assert_eq!(s["truncated"], true);
}

#[test]
fn offset_past_the_end_is_a_retry_with_the_line_count() {
    let ws = workspace();
    write(ws.path(), "a.txt", lines_file(5));
    let r = call(
        &executor(ws.path()),
        "read_file",
        r#"{"path":"a.txt","offset":9}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::Retry));
    assert!(r.content.contains("has 5 lines"), "{}", r.content);
}

#[test]
fn the_2000_line_guard_returns_what_fits_and_a_note() {
    let ws = workspace();
    write(ws.path(), "big.txt", lines_file(2500));
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"big.txt"}"#);
    assert!(r.success, "{r:?}");
    assert!(r.content.starts_with(&numbered(1..=2000)));
    assert!(!r.content.contains("line 2001\n"));
    assert!(
        r.content
            .contains("Showing lines 1-2000 of 2500 (stopped at the 2000-line limit)"),
        "{}",
        &r.content[r.content.len() - 300..]
    );
    assert!(r.content.contains("offset=2001"));
    // A limit above the guard is capped, not an error.
    let r = call(
        &executor(ws.path()),
        "read_file",
        r#"{"path":"big.txt","offset":2001,"limit":5000}"#,
    );
    assert!(r.success, "{r:?}");
    assert_eq!(r.content, numbered(2001..=2500));
}

#[test]
fn the_100_kb_guard_cuts_on_a_line_boundary() {
    let ws = workspace();
    let line = "x".repeat(199);
    let text: String = (0..1000).map(|_| format!("{line}\n")).collect();
    write(ws.path(), "wide.txt", &text);
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"wide.txt"}"#);
    assert!(r.success, "{r:?}");
    let shown = r.content.lines().filter(|l| l.ends_with(&line)).count();
    assert!(shown > 400 && shown < 1000, "{shown} lines shown");
    assert!(r.content.len() < 110 * 1024);
    assert!(
        r.content.contains("stopped at the 100 KB output limit"),
        "{}",
        &r.content[r.content.len() - 300..]
    );
    assert!(r.content.contains(&format!("offset={}", shown + 1)));
}

#[test]
fn long_lines_are_cut_with_a_marker() {
    let ws = workspace();
    write(
        ws.path(),
        "long.txt",
        format!("{}\nshort\n", "é".repeat(2500)),
    );
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"long.txt"}"#);
    assert!(r.success, "{r:?}");
    assert!(
        r.content
            .contains("[line cut: 2000 of 2500 characters shown]"),
        "{}",
        r.content
    );
    assert!(r.content.contains("     2\tshort\n"));
}

#[test]
fn crlf_and_missing_final_newline_are_counted_and_shown_cleanly() {
    let ws = workspace();
    write(ws.path(), "crlf.txt", "one\r\ntwo\r\nthree");
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"crlf.txt"}"#);
    assert!(r.success, "{r:?}");
    assert_eq!(r.content, "     1\tone\n     2\ttwo\n     3\tthree\n");
    assert_eq!(r.structured.expect("structured")["total_lines"], 3);
}

#[test]
fn line_count_is_exact_beyond_the_window() {
    let ws = workspace();
    // Lines past the window are counted in bulk; a missing final newline
    // still counts as a line.
    let mut text = lines_file(3000);
    text.push_str("tail without newline");
    write(ws.path(), "a.txt", &text);
    let r = call(
        &executor(ws.path()),
        "read_file",
        r#"{"path":"a.txt","limit":10}"#,
    );
    assert_eq!(r.structured.expect("structured")["total_lines"], 3001);
}

#[test]
fn empty_file_says_so() {
    let ws = workspace();
    write(ws.path(), "empty.txt", "");
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"empty.txt"}"#);
    assert!(r.success, "{r:?}");
    assert!(r.content.contains("is empty"), "{}", r.content);
}

#[test]
fn binary_files_are_refused_clearly() {
    let ws = workspace();
    write(ws.path(), "img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR");
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"img.png"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::Retry));
    assert!(r.content.contains("binary file"), "{}", r.content);
}

#[test]
fn a_directory_points_to_the_list_tools() {
    let ws = workspace();
    std::fs::create_dir(ws.path().join("src")).expect("mkdir");
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"src"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::Retry));
    assert!(
        r.content.contains("is a directory") && r.content.contains("list_files"),
        "{}",
        r.content
    );
}

#[test]
fn a_missing_file_is_a_retry_with_a_hint() {
    let ws = workspace();
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"nope.rs"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::Retry));
    assert!(
        r.content.contains("does not exist") && r.content.contains("find_files"),
        "{}",
        r.content
    );
}

#[test]
fn an_absolute_path_inside_the_workspace_is_accepted() {
    let ws = workspace();
    let path = write(ws.path(), "src/lib.rs", "fn main() {}\n");
    let canonical = path.canonicalize().expect("canonical");
    let args = serde_json::json!({ "path": canonical }).to_string();
    let r = call(&executor(ws.path()), "read_file", &args);
    assert!(r.success, "{r:?}");
    assert_eq!(r.structured.expect("structured")["path"], "src/lib.rs");
}

#[test]
fn invalid_utf8_is_shown_lossily_with_a_note() {
    let ws = workspace();
    write(ws.path(), "latin1.txt", b"caf\xe9\n");
    let r = call(
        &executor(ws.path()),
        "read_file",
        r#"{"path":"latin1.txt"}"#,
    );
    assert!(r.success, "{r:?}");
    assert!(
        r.content.contains("caf\u{fffd}") && r.content.contains("not valid UTF-8"),
        "{}",
        r.content
    );
}

#[test]
fn wrong_argument_types_are_invalid_input_naming_the_field() {
    let ws = workspace();
    let r = call(
        &executor(ws.path()),
        "read_file",
        r#"{"path":"a","offset":"three"}"#,
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput));
    assert!(r.content.contains("`offset`"), "{}", r.content);
    let r = call(&executor(ws.path()), "read_file", r#"{}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput));
    assert!(
        r.content.contains("missing required field `path`"),
        "{}",
        r.content
    );
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let ws = workspace();
    let fifo = ws.path().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"pipe"}"#);
    assert_eq!(r.error_kind(), Some(ErrorKind::Retry), "{r:?}");
    assert!(r.content.contains("not a regular file"), "{}", r.content);
}

#[test]
fn a_huge_single_line_is_cut_without_running_out_of_memory() {
    let ws = workspace();
    let mut text = "x".repeat(300 << 20);
    text.push_str("\nafter\n");
    write(ws.path(), "huge.txt", &text);
    drop(text);
    let r = call(&executor(ws.path()), "read_file", r#"{"path":"huge.txt"}"#);
    assert!(r.success, "{:?}", r.error);
    assert!(
        r.content.contains(&format!(
            "[line cut: first 2000 characters of a {}-byte line shown]",
            300 << 20
        )),
        "{}",
        &r.content[..300]
    );
    assert!(
        r.content.contains("     2\tafter\n"),
        "{}",
        &r.content[r.content.len() - 200..]
    );
    assert_eq!(r.structured.expect("structured")["total_lines"], 2);
}

#[test]
fn a_large_file_is_scanned_by_the_host_with_exact_results() {
    let ws = workspace();
    let text = lines_file(60_000);
    write(ws.path(), "large.txt", &text);
    let r = call(
        &executor(ws.path()),
        "read_file",
        r#"{"path":"large.txt","offset":30000,"limit":2}"#,
    );
    assert!(r.success, "{:?}", r.error);
    assert!(
        r.content
            .starts_with(" 30000\tline 30000\n 30001\tline 30001\n"),
        "{}",
        r.content
    );
    let s = r.structured.expect("structured");
    assert_eq!(s["total_lines"], 60_000);
    assert_eq!(
        s["hash"],
        toolhost_shared::text::content_hash(text.as_bytes())
    );
}
