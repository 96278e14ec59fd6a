//! Unit tests of multi_edit's logic, run natively on a temporary workspace.

use super::*;

fn edit(old: &str, new: &str) -> Edit {
    Edit {
        old_str: old.into(),
        new_str: new.into(),
        replace_all: false,
    }
}

#[test]
fn all_or_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = Context::for_workspace(ws.path().display().to_string());
    std::fs::write(ws.path().join("f.txt"), "a\nb\nc\n").unwrap();
    let args = |edits| Args {
        path: "f.txt".into(),
        edits,
        expected_hash: None,
    };
    let err = MultiEdit::call(args(vec![edit("a", "A"), edit("zzz", "Z")]), &ctx).unwrap_err();
    assert!(
        matches!(&err, ToolError::Retry(m) if m.starts_with("edit 2 of 2 failed")),
        "{err:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f.txt")).unwrap(),
        "a\nb\nc\n"
    );
    MultiEdit::call(args(vec![edit("a", "A"), edit("A\nb", "AB")]), &ctx).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f.txt")).unwrap(),
        "AB\nc\n"
    );
    assert!(matches!(
        MultiEdit::call(args(vec![]), &ctx),
        Err(ToolError::InvalidInput(_))
    ));
}
