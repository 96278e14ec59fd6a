use super::*;
use std::time::Duration;

fn args(json: &str) -> Args {
    toolhost_sdk::serde_json::from_str(json).unwrap()
}

fn kept() -> String {
    (1..=1000)
        .map(|i| format!("line {i}{}\n", if i % 250 == 0 { " ERROR" } else { "" }))
        .collect()
}

#[test]
fn output_pages_by_lines() {
    let out = view(
        "out-1",
        &kept(),
        &args(r#"{"action":"output","offset":10,"limit":3}"#),
    )
    .unwrap();
    assert_eq!(
        out.content(),
        "    10\tline 10\n    11\tline 11\n    12\tline 12\n[out-1: lines 10-12 of 1000; continue with offset 13]"
    );
    let end = view(
        "out-1",
        &kept(),
        &args(r#"{"action":"output","offset":999}"#),
    )
    .unwrap();
    assert!(
        end.content().ends_with("[out-1: lines 999-1000 of 1000]"),
        "{}",
        end.content()
    );
}

#[test]
fn output_greps_with_line_numbers() {
    let out = view(
        "out-1",
        &kept(),
        &args(r#"{"action":"output","grep":"ERROR$"}"#),
    )
    .unwrap();
    let lines: Vec<&str> = out.content().lines().collect();
    assert_eq!(lines[0], "   250\tline 250 ERROR");
    assert_eq!(lines[3], "  1000\tline 1000 ERROR");
    assert_eq!(lines[4], "[out-1: 4 line(s) matching `ERROR$` of 1000]");
}

#[test]
fn bad_output_requests_are_explained() {
    let err = view("out-1", &kept(), &args(r#"{"action":"output","grep":"("}"#)).unwrap_err();
    assert!(
        err.to_string().contains("not a valid regular expression"),
        "{err}"
    );
    let err = view(
        "out-1",
        &kept(),
        &args(r#"{"action":"output","offset":5000}"#),
    )
    .unwrap_err();
    assert!(err.to_string().contains("has 1000 lines"), "{err}");
    let err =
        Process::call(args(r#"{"action":"poll"}"#), &Context::for_workspace(".")).unwrap_err();
    assert!(err.to_string().contains("needs `command_id`"), "{err}");
    let err = toolhost_sdk::serde_json::from_str::<Args>(r#"{"action":"restart"}"#).unwrap_err();
    assert!(err.to_string().contains("unknown variant"), "{err}");
}

#[test]
fn background_commands_render_their_state() {
    let s = |id: &str, running, code| BackgroundStatus {
        id: id.into(),
        command: "npm run dev".into(),
        running,
        exit_code: code,
        new_output: String::new(),
        elapsed: Duration::from_millis(2500),
    };
    let out = list(&[
        s("s-1", true, None),
        s("s-2", false, Some(3)),
        s("s-3", false, None),
    ]);
    assert_eq!(
        out.content(),
        "s-1  running for 2.5 s  `npm run dev`\ns-2  exited with code 3 after 2.5 s  `npm run dev`\ns-3  killed after 2.5 s  `npm run dev`"
    );
    assert_eq!(out.structured().unwrap()["commands"][1]["exit_code"], 3);
    assert!(
        out.structured().unwrap()["commands"][0]
            .get("exit_code")
            .is_none()
    );
    let mut polled = s("s-1", true, None);
    polled.new_output = "ready on :3000\n".into();
    let out = status(&polled);
    assert!(
        out.content()
            .ends_with("running for 2.5 s\nready on :3000\n"),
        "{}",
        out.content()
    );
    assert!(list(&[]).content().contains("no background commands"));
}

#[test]
fn a_line_longer_than_the_budget_is_cut_and_paging_moves_on() {
    let text = format!("short\n{}\nlast\n", "x".repeat(MAX_CHARS * 2));
    let page = view("out-2", &text, &args(r#"{"action":"output","offset":2}"#)).unwrap();
    assert!(
        page.content()
            .contains(&format!("[… {MAX_CHARS} more characters]")),
        "{}",
        &page.content()[..80]
    );
    assert!(
        page.content()
            .ends_with("[out-2: lines 2-2 of 3; continue with offset 3]"),
        "{}",
        &page.content()[page.content().len() - 80..]
    );
}
