//! Unit tests of list_dirs's logic, run natively on a temporary workspace.

use super::*;

#[test]
fn depth_is_limited_to_three() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("a/b/c/d")).unwrap();
    let ctx = Context::for_workspace(ws.path().display().to_string());
    let args = |depth| Args {
        path: ".".into(),
        depth,
        limit: 200,
    };
    let out = list(&args(3), &ctx).unwrap();
    assert_eq!(out.content(), "a/\na/b/\na/b/c/\n");
    for bad in [0, 4] {
        assert!(
            matches!(list(&args(bad), &ctx), Err(ToolError::InvalidInput(_))),
            "{bad}"
        );
    }
}

// Regression: the schema's maximum for `limit` (10000) was not enforced.
#[test]
fn limit_is_one_to_ten_thousand() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = Context::for_workspace(ws.path().display().to_string());
    let args = |limit| Args {
        path: ".".into(),
        depth: 1,
        limit,
    };
    assert!(list(&args(MAX_LIMIT), &ctx).is_ok());
    for bad in [0, MAX_LIMIT + 1] {
        let err = list(&args(bad), &ctx).unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidInput(m) if m.contains("must be 1 to 10000")),
            "{bad}: {err:?}"
        );
    }
}
