//! Unit tests of write_file's logic, run natively on a temporary workspace.

use super::*;

fn setup() -> (tempfile::TempDir, Context) {
    let ws = tempfile::tempdir().unwrap();
    let ctx = Context::for_workspace(ws.path().display().to_string());
    (ws, ctx)
}

fn args(path: &str, content: &str, mode: Mode, expected_hash: Option<String>) -> Args {
    Args {
        path: path.into(),
        content: content.into(),
        mode,
        expected_hash,
    }
}

#[test]
fn creates_overwrites_and_appends() {
    let (ws, ctx) = setup();
    let out = write(&args("d/a.txt", "one\n", Mode::Overwrite, None), &ctx).unwrap();
    assert_eq!(out.content(), "Created `d/a.txt` (4 bytes).");
    assert_eq!(out.changed_paths(), ["d/a.txt"]);
    write(&args("d/a.txt", "two\n", Mode::Append, None), &ctx).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path().join("d/a.txt")).unwrap(),
        "one\ntwo\n"
    );
    let out = write(&args("d/a.txt", "new\n", Mode::Overwrite, None), &ctx).unwrap();
    assert_eq!(out.structured().unwrap()["created"], false);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("d/a.txt")).unwrap(),
        "new\n"
    );
}

#[test]
fn expected_hash_guards_the_write() {
    let (ws, ctx) = setup();
    std::fs::write(ws.path().join("a.txt"), "v1").unwrap();
    let stale = content_hash(b"v0");
    let err = write(&args("a.txt", "v2", Mode::Overwrite, Some(stale)), &ctx).unwrap_err();
    assert!(matches!(err, ToolError::Retry(_)), "{err:?}");
    let fresh = content_hash(b"v1");
    write(
        &args("a.txt", "v2", Mode::Overwrite, Some(fresh.clone())),
        &ctx,
    )
    .unwrap();
    let err = write(
        &args("missing.txt", "x", Mode::Overwrite, Some(fresh)),
        &ctx,
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::Retry(_)), "{err:?}");
}

#[test]
fn directories_and_escapes_are_refused() {
    let (ws, ctx) = setup();
    std::fs::create_dir(ws.path().join("dir")).unwrap();
    assert!(matches!(
        write(&args("dir", "x", Mode::Overwrite, None), &ctx),
        Err(ToolError::Retry(_))
    ));
    assert!(matches!(
        write(&args("../x", "x", Mode::Overwrite, None), &ctx),
        Err(ToolError::Denied(_))
    ));
}
