use super::*;

fn args(json: &str) -> Args {
    toolhost_sdk::serde_json::from_str(json).unwrap()
}

fn done(stdout: &str, stderr: &str, code: Option<i32>) -> Finished {
    Finished {
        exit_code: code,
        stdout: stdout.to_owned(),
        stderr: stderr.to_owned(),
        timed_out: false,
        truncated: false,
        output_id: None,
        duration: Duration::from_millis(1250),
        confinement: vec!["landlock-fs (abi 6)".to_owned(), "seccomp-net".to_owned()],
    }
}

#[test]
fn request_carries_every_argument() {
    let r = request(&args(
        r#"{"command":"make test","cwd":"core","timeout":90,"env":{"A":"1"}}"#,
    ))
    .unwrap();
    assert_eq!(r.program, commands::Program::Shell("make test".into()));
    assert_eq!(r.cwd.as_deref(), Some("core"));
    assert_eq!(r.timeout, Some(Duration::from_secs(90)));
    assert_eq!(r.env, [("A".to_owned(), "1".to_owned())]);
}

#[test]
fn bad_arguments_say_what_to_send() {
    for (json, expect) in [
        (r#"{"command":"  "}"#, "`command` is empty"),
        (r#"{"command":"ls","timeout":0}"#, "from 1 to 600"),
        (r#"{"command":"ls","timeout":601}"#, "from 1 to 600"),
    ] {
        let err = request(&args(json)).unwrap_err();
        assert!(matches!(err, ToolError::InvalidInput(_)), "{json}: {err:?}");
        assert!(err.to_string().contains(expect), "{json}: {err}");
    }
    let unknown = toolhost_sdk::serde_json::from_str::<Args>(r#"{"command":"ls","shell":"zsh"}"#);
    assert!(unknown.is_err(), "unknown fields are rejected");
}

#[test]
fn render_shows_output_status_and_confinement() {
    let text = done("ok\n", "warning: x", Some(1)).render("cargo test");
    assert_eq!(
        text,
        "$ cargo test\nok\n[stderr]\nwarning: x\n[exit code 1 (failed) · 1.25 s · confined: landlock-fs (abi 6), seccomp-net]"
    );
}

#[test]
fn cut_output_points_at_the_full_text() {
    let mut d = done("head\n[... 10 lines omitted ...]\ntail\n", "", Some(0));
    d.truncated = true;
    d.output_id = Some("out-4".into());
    let out = finished("seq 1 100000", d, None).unwrap();
    assert!(
        out.content().contains("\"output_id\": \"out-4\""),
        "{}",
        out.content()
    );
    assert_eq!(out.structured().unwrap()["output_id"], "out-4");
    assert_eq!(out.structured().unwrap()["exit_code"], 0);
}

#[test]
fn a_timeout_is_an_error_that_keeps_the_output() {
    let mut d = done("partial\n", "", None);
    d.timed_out = true;
    let err = finished("sleep 100", d, Some(5)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the 5 s timeout") && text.contains("partial"),
        "{text}"
    );
    assert!(text.contains("background: true"), "{text}");
}

#[test]
fn natively_there_is_no_broker() {
    let err = run(args(r#"{"command":"ls"}"#), &Context::for_workspace(".")).unwrap_err();
    assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
}
