//! Workspaces that are safe to grant (issue #12): `/`, the home directory
//! and ancestors of toolhost's own directories are refused on the CLI, as
//! MCP roots and as the serve fallback; a root that is missing or a file
//! is an error, never a silent fallback.

use crate::mcp::{Client, call, connect_command, is_error, text};
use crate::support::{stderr, toolhost_command, toolhost_with_env, workspace, write};
use serde_json::json;
use std::path::Path;

fn refused(cwd: &Path, args: &[&str], env: &[(&str, &Path)], expected: &str) {
    let out = toolhost_with_env(cwd, args, env);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot be the workspace") && err.contains(expected),
        "{args:?}: {err}"
    );
}

#[test]
fn the_cli_refuses_workspaces_that_grant_too_much() {
    let ws = workspace();
    let home = workspace();
    let env = [("HOME", home.path())];
    let read = ["call", "read_file", r#"{"path":"x"}"#];
    let with = |dir: &Path| {
        let mut args = vec!["--workspace".to_owned(), dir.display().to_string()];
        args.extend(read.iter().map(|s| (*s).to_owned()));
        args
    };
    let run = |args: &[String], env: &[(&str, &Path)], expected: &str| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(ws.path(), &args, env, expected);
    };
    run(&with(Path::new("/")), &env, "root of the file system");
    run(&with(home.path()), &env, "home directory");
    // An ancestor of toolhost's own configuration directory.
    let config = ws.path().join("cfg");
    std::fs::create_dir_all(config.join("toolhost")).unwrap();
    run(
        &with(ws.path()),
        &[("XDG_CONFIG_HOME", config.as_path())],
        "toolhost's own configuration",
    );
    // Missing and file roots are errors, not a fallback.
    let out = toolhost_with_env(
        ws.path(),
        &[
            "--workspace",
            "/no/such/dir",
            "call",
            "read_file",
            r#"{"path":"x"}"#,
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let file = write(ws.path(), "a.txt", "x");
    let out = toolhost_with_env(
        ws.path(),
        &[
            "--workspace",
            file.to_str().unwrap(),
            "call",
            "read_file",
            r#"{"path":"x"}"#,
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not a directory"), "{}", stderr(&out));
    // Run from the home directory with no --workspace: calls that need a
    // workspace are refused with the reason; the rest still work.
    write(home.path(), "notes.txt", "private\n");
    let out = toolhost_with_env(home.path(), &read, &env);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("home directory"), "{}", stderr(&out));
    let out = toolhost_with_env(home.path(), &["call", "get_datetime", "{}"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `toolhost serve` in `cwd` with HOME at `home`, `client` connected.
async fn serve(cwd: &Path, home: &Path, client: Client) -> crate::mcp::Session {
    let mut command = toolhost_command(cwd, &["serve"]);
    command.env("HOME", home);
    connect_command(command, client).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_in_the_home_directory_without_roots_grants_nothing() {
    let home = workspace();
    write(home.path(), "notes.txt", "private\n");
    let session = serve(home.path(), home.path(), Client::default()).await;
    let r = call(&session, "read_file", json!({"path": "notes.txt"}))
        .await
        .expect("answered");
    assert!(is_error(&r), "{}", text(&r));
    assert!(
        text(&r).contains("home directory") && !text(&r).contains("private"),
        "{}",
        text(&r)
    );
    session.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_that_cannot_be_granted_are_not_replaced_by_the_cwd() {
    let home = workspace();
    let cwd = workspace();
    write(cwd.path(), "notes.txt", "the cwd\n");
    for root in ["/", "/no/such/dir"] {
        let uri = url::Url::from_directory_path(root)
            .expect("uri")
            .to_string();
        let client = Client::with_roots(vec![uri]);
        let session = serve(cwd.path(), home.path(), client).await;
        let r = call(&session, "read_file", json!({"path": "notes.txt"}))
            .await
            .expect("answered");
        assert!(is_error(&r), "{root}: {}", text(&r));
        assert!(
            text(&r).contains("roots cannot be granted") && !text(&r).contains("the cwd"),
            "{root}: {}",
            text(&r)
        );
        session.cancel().await.expect("close");
    }
}
