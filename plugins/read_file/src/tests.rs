//! Large files take the scanned path; its results must equal the streamed
//! path's, line for line and hash for hash.

use super::*;
use toolhost_builtin::text::content_hash;

fn run(dir: &std::path::Path, json: &str) -> Result<Output, ToolError> {
    let args: Args = toolhost_sdk::serde_json::from_str(json).unwrap();
    read(&args, &Context::for_workspace(dir.to_str().unwrap()))
}

fn big_file(dir: &std::path::Path, lines: usize, final_newline: bool) -> Vec<u8> {
    let mut text: String = (1..=lines).map(|i| format!("line {i}\n")).collect();
    if !final_newline {
        text.pop();
    }
    std::fs::write(dir.join("big.txt"), &text).unwrap();
    text.into_bytes()
}

#[test]
fn a_large_file_is_scanned_with_the_same_results() {
    let dir = tempfile::tempdir().unwrap();
    for final_newline in [true, false] {
        let bytes = big_file(dir.path(), 40_000, final_newline);
        assert!(bytes.len() as u64 > WHOLE_FILE_MAX);
        let out = run(dir.path(), r#"{"path":"big.txt","offset":20000,"limit":3}"#).unwrap();
        assert!(
            out.content()
                .starts_with(" 20000\tline 20000\n 20001\tline 20001\n 20002\tline 20002\n"),
            "{}",
            out.content()
        );
        let report = out.structured().unwrap();
        assert_eq!(report["total_lines"], 40_000);
        assert_eq!(report["hash"], content_hash(&bytes));
        assert_eq!(report["size"], bytes.len());
        assert_eq!(
            (report["start_line"].as_u64(), report["end_line"].as_u64()),
            (Some(20000), Some(20002))
        );
        let last = run(dir.path(), r#"{"path":"big.txt","offset":40000}"#).unwrap();
        assert!(
            last.content().starts_with(" 40000\tline 40000\n"),
            "{}",
            last.content()
        );
        assert_eq!(last.structured().unwrap()["truncated"], false);
    }
    let past = run(dir.path(), r#"{"path":"big.txt","offset":40001}"#).unwrap_err();
    assert!(past.to_string().contains("past the end"), "{past}");
}

#[test]
fn long_lines_beyond_the_scanned_window_are_streamed() {
    let dir = tempfile::tempdir().unwrap();
    let line = "y".repeat(3 << 20);
    let text = format!("{line}\n{line}\nend\n");
    std::fs::write(dir.path().join("long.txt"), &text).unwrap();
    let out = run(dir.path(), r#"{"path":"long.txt"}"#).unwrap();
    assert!(
        out.content()
            .contains(&format!("of a {}-byte line shown]", 3 << 20)),
        "{}",
        &out.content()[..200]
    );
    assert!(out.content().contains("     3\tend\n"));
    assert_eq!(
        out.structured().unwrap()["hash"],
        content_hash(text.as_bytes())
    );
}

#[test]
fn a_large_binary_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = vec![b'a'; 1 << 20];
    bytes[100] = 0;
    std::fs::write(dir.path().join("blob.bin"), &bytes).unwrap();
    let err = run(dir.path(), r#"{"path":"blob.bin"}"#).unwrap_err();
    assert!(err.to_string().contains("binary file"), "{err}");
}
