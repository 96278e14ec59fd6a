//! Unit tests of edit_file's logic, run natively on a temporary workspace.

use super::*;

fn run(
    ws: &tempfile::TempDir,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Output, ToolError> {
    let ctx = Context::for_workspace(ws.path().display().to_string());
    let args = Args {
        path: "f.txt".into(),
        old_str: old.into(),
        new_str: new.into(),
        replace_all,
        expected_hash: None,
    };
    EditFile::call(args, &ctx)
}

#[test]
fn edits_keep_bom_crlf_and_the_missing_final_newline() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("f.txt"), b"\xef\xbb\xbfa\r\nb\r\nc").unwrap();
    let out = run(&ws, "b", "B", false).unwrap();
    assert_eq!(
        std::fs::read(ws.path().join("f.txt")).unwrap(),
        b"\xef\xbb\xbfa\r\nB\r\nc"
    );
    let report = out.structured().unwrap();
    assert_eq!(report["replacements"], 1);
    assert_eq!(
        report["hash"],
        toolhost_builtin::text::content_hash(b"\xef\xbb\xbfa\r\nB\r\nc")
    );
}

#[test]
fn misses_and_duplicates_are_retries_and_change_nothing() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("f.txt"), "x\nx\n").unwrap();
    assert!(
        matches!(run(&ws, "x", "y", false), Err(ToolError::Retry(m)) if m.contains("lines 1, 2"))
    );
    assert!(matches!(
        run(&ws, "nope", "y", false),
        Err(ToolError::Retry(_))
    ));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f.txt")).unwrap(),
        "x\nx\n"
    );
    run(&ws, "x", "y", true).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f.txt")).unwrap(),
        "y\ny\n"
    );
}
