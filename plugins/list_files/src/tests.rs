//! Unit tests of list_files's logic, run natively on a temporary workspace.

use super::*;

fn names(out: &Output) -> Vec<String> {
    out.structured().unwrap()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn patterns_match_names_or_paths() {
    let ws = tempfile::tempdir().unwrap();
    for f in ["a.rs", "b.md", "src/c.rs", "src/deep/d.md"] {
        let p = ws.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }
    let ctx = Context::for_workspace(ws.path().display().to_string());
    let args = |path: &str, pattern: Option<&str>, recursive| Args {
        path: path.into(),
        pattern: pattern.map(Into::into),
        recursive,
        limit: 200,
    };
    assert_eq!(
        names(&list(&args(".", None, false), &ctx).unwrap()),
        ["a.rs", "b.md"]
    );
    assert_eq!(
        names(&list(&args(".", Some("*.rs"), true), &ctx).unwrap()),
        ["a.rs", "src/c.rs"]
    );
    assert_eq!(
        names(&list(&args(".", Some("src/**/*.md"), false), &ctx).unwrap()),
        ["src/deep/d.md"]
    );
    assert_eq!(
        names(&list(&args("src", Some("deep/*.md"), false), &ctx).unwrap()),
        ["src/deep/d.md"]
    );
    assert!(matches!(
        list(&args(".", Some("a{b"), false), &ctx),
        Err(ToolError::InvalidInput(_))
    ));
    let cut = list(
        &Args {
            limit: 1,
            ..args(".", None, true)
        },
        &ctx,
    )
    .unwrap();
    assert_eq!(cut.structured().unwrap()["truncated"], true);
    assert!(cut.content().contains("[1 of 4 files shown"));
}

// Regression: the schema's maximum for `limit` (10000) was not enforced.
#[test]
fn limit_is_one_to_ten_thousand() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = Context::for_workspace(ws.path().display().to_string());
    let args = |limit| Args {
        path: ".".into(),
        pattern: None,
        recursive: false,
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
