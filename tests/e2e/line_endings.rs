//! Line endings through the edit tools: CRLF files edited at their last
//! line, CRLF and mixed-ending patches made by GNU diff, and mixed-ending
//! files, each compared byte for byte.

use crate::apply_patch::patch_of;
use crate::support::{bytes, call_cli, workspace, write};
use serde_json::json;

/// Run `tool` with `args` on a workspace holding `f.txt` = `before`; the
/// file's bytes afterwards.
fn edited(before: &[u8], tool: &str, args: &serde_json::Value) -> Vec<u8> {
    let ws = workspace();
    write(ws.path(), "f.txt", before);
    let v = call_cli(ws.path(), tool, args, &[]);
    assert_eq!(v["success"], true, "{tool} {args}: {v}");
    bytes(ws.path(), "f.txt")
}

#[test]
fn a_crlf_file_edited_at_its_last_line_keeps_crlf() {
    for (before, after) in [
        (&b"a\r\nb\r\nlast\r\n"[..], &b"a\r\nb\r\nLAST\r\n"[..]),
        (b"a\r\nb\r\nlast", b"a\r\nb\r\nLAST"),
    ] {
        let edit = json!({"path": "f.txt", "old_str": "last", "new_str": "LAST"});
        assert_eq!(edited(before, "edit_file", &edit), after);
        let multi =
            json!({"path": "f.txt", "edits": [{"old_str": "b\nlast", "new_str": "b\nLAST"}]});
        assert_eq!(edited(before, "multi_edit", &multi), after);
        let (before_text, after_text) = (
            String::from_utf8(before.to_vec()).unwrap(),
            String::from_utf8(after.to_vec()).unwrap(),
        );
        let patch = patch_of(&[("f.txt", &before_text, &after_text)]);
        assert_eq!(
            edited(before, "apply_patch", &json!({"patch": patch})),
            after
        );
    }
    // Appending a line after the last one.
    let edit = json!({"path": "f.txt", "old_str": "last\n", "new_str": "last\nmore\n"});
    assert_eq!(
        edited(b"a\r\nlast\r\n", "edit_file", &edit),
        b"a\r\nlast\r\nmore\r\n"
    );
}

#[test]
fn a_crlf_patch_made_by_diff_applies_to_a_crlf_file() {
    let before = "one\r\ntwo\r\nthree\r\nfour\r\n";
    let after = "one\r\n2\r\nthree\r\nfour\r\nfive\r\n";
    let patch = patch_of(&[("f.txt", before, after)]);
    assert!(patch.contains("+2\r\n"), "diff keeps the CRs: {patch:?}");
    let ws = workspace();
    write(ws.path(), "f.txt", before);
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "f.txt"), after.as_bytes());
    assert_eq!(
        v["structured"]["files"][0]["hunks"][0]["fuzz"], "exact",
        "{v}"
    );
}

// Regression: every patch line lost its CR, so a line added to a file with
// mixed endings lost its CR and the CRLF context only matched with fuzz.
#[test]
fn a_mixed_ending_file_keeps_each_line_ending() {
    let before = "lf one\ncrlf two\r\nlf three\ncrlf four\r\n";
    let after = "lf one\ncrlf 2\r\nlf three\ncrlf four\r\nadded crlf\r\nadded lf\n";
    let patch = patch_of(&[("f.txt", before, after)]);
    let ws = workspace();
    write(ws.path(), "f.txt", before);
    let v = call_cli(ws.path(), "apply_patch", &json!({"patch": patch}), &[]);
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(bytes(ws.path(), "f.txt"), after.as_bytes());
    assert_eq!(
        v["structured"]["files"][0]["hunks"][0]["fuzz"], "exact",
        "{v}"
    );
    // edit_file and multi_edit leave the other lines' endings alone.
    let edit = json!({"path": "f.txt", "old_str": "lf three", "new_str": "lf 3"});
    assert_eq!(
        edited(before.as_bytes(), "edit_file", &edit),
        b"lf one\ncrlf two\r\nlf 3\ncrlf four\r\n"
    );
    let multi = json!({"path": "f.txt", "edits": [{"old_str": "two\nlf", "new_str": "2\nLF"}]});
    assert_eq!(
        edited(before.as_bytes(), "multi_edit", &multi),
        b"lf one\ncrlf 2\r\nLF three\ncrlf four\r\n"
    );
}
