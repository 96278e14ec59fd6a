//! Unit tests of delete_file's logic, run natively on a temporary workspace.

use super::*;

fn setup(allow: bool) -> (tempfile::TempDir, Context) {
    let ws = tempfile::tempdir().unwrap();
    let ctx = Context::for_workspace(ws.path().display().to_string())
        .with_setting(fs::ALLOW_DELETE, allow);
    (ws, ctx)
}

fn args(path: &str) -> Args {
    Args { path: path.into() }
}

#[test]
fn refused_unless_allowed() {
    let (ws, ctx) = setup(false);
    std::fs::write(ws.path().join("a.txt"), "x").unwrap();
    let err = delete(&args("a.txt"), &ctx).unwrap_err();
    assert!(
        matches!(&err, ToolError::Denied(m) if m.contains("--allow-delete")
            && m.contains("`a.txt` was not deleted")
            && !m.contains("toolhost.toml")),
        "{err:?}"
    );
    assert!(ws.path().join("a.txt").exists());
}

#[test]
fn deletes_files_and_links_never_directories() {
    let (ws, ctx) = setup(true);
    std::fs::write(ws.path().join("a.txt"), "xyz").unwrap();
    let out = delete(&args("a.txt"), &ctx).unwrap();
    assert_eq!(out.structured().unwrap()["size"], 3);
    assert!(!ws.path().join("a.txt").exists());
    std::fs::create_dir(ws.path().join("d")).unwrap();
    assert!(matches!(delete(&args("d"), &ctx), Err(ToolError::Retry(_))));
    assert!(matches!(
        delete(&args("."), &ctx),
        Err(ToolError::InvalidInput(_))
    ));
    assert!(matches!(
        delete(&args("missing"), &ctx),
        Err(ToolError::Retry(_))
    ));
    let target = tempfile::NamedTempFile::new().unwrap();
    std::os::unix::fs::symlink(target.path(), ws.path().join("link")).unwrap();
    let out = delete(&args("link"), &ctx).unwrap();
    assert_eq!(out.structured().unwrap()["symlink"], true);
    assert!(target.path().exists(), "the link's target stays");
}
