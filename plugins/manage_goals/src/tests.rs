use super::*;

const TODAY: &str = "2026-11-26";

fn call(dir: &Path, args: serde_json::Value) -> Result<Output, ToolError> {
    run(serde_json::from_value(args).unwrap(), dir, TODAY)
}

fn goals_md(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("GOALS.md")).unwrap()
}

#[test]
fn goals_are_added_updated_and_completed_as_checkboxes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    call(
        d,
        serde_json::json!({"action": "add", "goal": "Ship the 1.0 release", "priority": "high"}),
    )
    .unwrap();
    call(d, serde_json::json!({"action": "add", "goal": "Learn the person's routines", "notes": "ask about mornings"})).unwrap();
    call(
        d,
        serde_json::json!({"action": "update", "goal": "1.0", "status": "in_progress"}),
    )
    .unwrap();
    assert_eq!(
        goals_md(d),
        "# Goals\n\n## Active\n\n\
         - [ ] Ship the 1.0 release — priority: high, status: in_progress\n\
         - [ ] Learn the person's routines — priority: medium, status: pending\n  - Notes: ask about mornings\n\n\
         ## Completed\n"
    );
    let done = call(d, serde_json::json!({"action": "complete", "goal": "SHIP THE", "outcome": "released on time"})).unwrap();
    let s = done.structured().unwrap();
    assert_eq!(s["changed"]["goal"], "Ship the 1.0 release");
    assert_eq!(s["changed"]["completed"], TODAY);
    assert_eq!(s["active"].as_array().unwrap().len(), 1);
    assert!(goals_md(d).contains(
        "## Completed\n\n- [x] Ship the 1.0 release — priority: high, completed: 2026-11-26\n  - Outcome: released on time\n"
    ));
    let listed = call(d, serde_json::json!({"action": "list"})).unwrap();
    assert!(listed.content().contains("Learn the person's routines"));
}

#[test]
fn a_goal_is_named_by_a_case_insensitive_substring_that_matches_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for g in ["Write the docs", "Write the tests", "Tests"] {
        call(d, serde_json::json!({"action": "add", "goal": g})).unwrap();
    }
    let many = call(
        d,
        serde_json::json!({"action": "complete", "goal": "write"}),
    )
    .unwrap_err();
    assert!(many.to_string().contains("matches 2 open goals"), "{many}");
    let none = call(
        d,
        serde_json::json!({"action": "complete", "goal": "deploy"}),
    )
    .unwrap_err();
    assert!(
        none.to_string().contains("open goals: \"Write the docs\""),
        "{none}"
    );
    // An exact match wins over the goals that contain it.
    let exact = call(
        d,
        serde_json::json!({"action": "complete", "goal": "tests"}),
    )
    .unwrap();
    assert_eq!(exact.structured().unwrap()["changed"]["goal"], "Tests");
    let one = call(
        d,
        serde_json::json!({"action": "update", "goal": "DOCS", "priority": "low"}),
    )
    .unwrap();
    assert_eq!(one.structured().unwrap()["changed"]["priority"], "low");
}

#[test]
fn only_the_last_ten_completed_goals_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for n in 1..=12 {
        call(
            d,
            serde_json::json!({"action": "add", "goal": format!("goal number {n}!")}),
        )
        .unwrap();
        call(
            d,
            serde_json::json!({"action": "complete", "goal": format!("number {n}!")}),
        )
        .unwrap();
    }
    let listed = call(d, serde_json::json!({"action": "list"})).unwrap();
    let completed = listed.structured().unwrap()["completed"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(completed.len(), MAX_COMPLETED);
    assert_eq!(completed[0]["goal"], "goal number 3!");
    assert_eq!(completed[9]["goal"], "goal number 12!");
    assert_eq!(goals_md(d).matches("- [x]").count(), MAX_COMPLETED);
}

#[test]
fn fields_an_action_does_not_take_or_needs_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (args, says) in [
        (
            serde_json::json!({"action": "add"}),
            "action `add` needs `goal`",
        ),
        (
            serde_json::json!({"action": "add", "goal": "x", "outcome": "y"}),
            "does not take `outcome`",
        ),
        (
            serde_json::json!({"action": "list", "goal": "x"}),
            "does not take `goal` (it takes nothing else)",
        ),
        (
            serde_json::json!({"action": "update", "goal": "x"}),
            "at least one of `status`",
        ),
        (
            serde_json::json!({"action": "complete", "goal": "x", "status": "blocked"}),
            "does not take `status`",
        ),
        (
            serde_json::json!({"action": "add", "goal": "password = hunter2hunter2"}),
            "never written",
        ),
    ] {
        let err = call(d, args).unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
    call(
        d,
        serde_json::json!({"action": "add", "goal": "Run a marathon"}),
    )
    .unwrap();
    let twice = call(
        d,
        serde_json::json!({"action": "add", "goal": "run a MARATHON"}),
    )
    .unwrap_err();
    assert!(
        twice.to_string().contains("already an open goal"),
        "{twice}"
    );
}

#[test]
fn text_a_person_wrote_is_kept_and_their_goals_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("GOALS.md"),
        "# Goals\n\nWhat matters this year.\n\n- [ ] Read more books\n- [X] Move house\n",
    )
    .unwrap();
    call(
        d,
        serde_json::json!({"action": "update", "goal": "books", "status": "in_progress"}),
    )
    .unwrap();
    assert_eq!(
        goals_md(d),
        "# Goals\n\nWhat matters this year.\n\n## Active\n\n\
         - [ ] Read more books — priority: medium, status: in_progress\n\n\
         ## Completed\n\n- [x] Move house — priority: medium, completed\n"
    );
}

#[test]
fn concurrent_adds_are_all_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::thread::scope(|s| {
        for n in 0..8 {
            let d = dir.path();
            s.spawn(move || {
                call(
                    d,
                    serde_json::json!({"action": "add", "goal": format!("goal {n}")}),
                )
                .unwrap()
            });
        }
    });
    assert_eq!(goals_md(dir.path()).matches("- [ ] goal").count(), 8);
}
