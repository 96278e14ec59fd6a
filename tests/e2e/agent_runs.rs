//! How a `toolhost agent` run ends, every way it can, against a scripted
//! endpoint on 127.0.0.1: a failure after tools acted keeps the transcript
//! and the changed files, the token budget stops the run, refusals and
//! content in parts, a JSON answer taken and checked, one event per step,
//! and a person stopping the run from a terminal (a pty) with "abort all"
//! or Ctrl-C: exit 130 and an audit record.

use crate::agent::{FakeModel, agent, calls, text};
use crate::support::{json, stderr, stdout, toolhost_command, workspace};
use serde_json::{Value, json};
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An answer with tool calls that reports `tokens` used.
fn calls_using(list: &[(&str, &str, &str)], tokens: u64) -> (u16, String) {
    let (status, body) = calls(list);
    let mut body: Value = serde_json::from_str(&body).unwrap();
    body["usage"] = json!({"prompt_tokens": tokens - 10, "completion_tokens": 10,
        "total_tokens": tokens});
    (status, body.to_string())
}

/// An answer whose message is `message`.
fn message(message: Value) -> (u16, String) {
    (200, json!({"choices": [{"message": message}]}).to_string())
}

/// `toolhost agent --endpoint MODEL --model m ARGS…` in `ws`, with no key
/// and the default mode.
fn agent_at(ws: &Path, model: &FakeModel, args: &[&str]) -> std::process::Output {
    let url = model.url();
    let mut all = vec!["agent", "--endpoint", url.as_str(), "--model", "m"];
    all.extend_from_slice(args);
    toolhost_command(ws, &all).output().unwrap()
}

/// The records of the audit log at `path` about runs (not calls).
fn run_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "agent_run")
        .collect()
}

/// `--json` on a run that fails in round 2: the transcript and the file
/// written in round 1 are printed, the error is on stderr, and the audit
/// log says how the run ended.
#[test]
fn a_failure_after_tools_acted_keeps_the_transcript_and_the_changes() {
    let ws = workspace();
    let model = FakeModel::start(vec![
        Box::new(|_| {
            calls(&[(
                "w",
                "write_file",
                r#"{"path":"notes.txt","content":"round one\n"}"#,
            )])
        }),
        Box::new(|_| (400, r#"{"error":"context too long"}"#.to_owned())),
    ]);
    let audit = ws.path().join("audit.jsonl");
    let audit_arg = audit.display().to_string();
    let out = agent(ws.path(), &model, &["--audit", &audit_arg], "Write notes.");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("400"), "{}", stderr(&out));
    let outcome = json(&out);
    assert_eq!(outcome["stop"], "failed");
    assert_eq!(outcome["changed_files"], json!(["notes.txt"]));
    assert!(
        outcome["error"]
            .as_str()
            .unwrap()
            .contains("context too long")
    );
    let transcript = outcome["transcript"].as_array().unwrap();
    assert_eq!(transcript.last().unwrap()["role"], "tool", "{outcome}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("notes.txt")).unwrap(),
        "round one\n"
    );
    let records = run_records(&audit);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["stop"], "failed");
    assert_eq!(records[0]["changed_files"], json!(["notes.txt"]));
}

/// The endpoint's `usage` counts against `--max-tokens`: once it is used
/// up, the calls in hand do not run and the run says `budget_exceeded`.
#[test]
fn the_token_budget_stops_the_run_before_more_tools_act() {
    let ws = workspace();
    let model = FakeModel::start(vec![
        Box::new(|_| calls_using(&[("a", "get_datetime", "{}")], 300)),
        Box::new(|_| {
            calls_using(
                &[("b", "write_file", r#"{"path":"late.txt","content":"x"}"#)],
                300,
            )
        }),
    ]);
    let out = agent(ws.path(), &model, &["--max-tokens", "500"], "Use tokens.");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let outcome = json(&out);
    assert_eq!(outcome["stop"], "budget_exceeded", "{outcome}");
    assert_eq!(outcome["tokens"], 600);
    assert_eq!(
        outcome["tool_calls"], 1,
        "round 1's call ran, round 2's did not"
    );
    assert!(!ws.path().join("late.txt").exists());
    assert_eq!(model.seen().len(), 2);
}

/// Content as the APIs define it: an array of parts is read as its text;
/// a refusal ends the run at once with the model's words, not five
/// more requests.
#[test]
fn content_parts_and_refusals_are_read_as_the_api_defines_them() {
    let ws = workspace();
    let model = FakeModel::start(vec![Box::new(|_| {
        message(json!({"role": "assistant", "content": [
            {"type": "text", "text": "Two "}, {"type": "text", "text": "parts."}]}))
    })]);
    let out = agent(ws.path(), &model, &[], "Answer in parts.");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["answer"], "Two parts.");

    let model = FakeModel::start(vec![Box::new(|_| {
        message(json!({"role": "assistant", "content": null,
            "refusal": "I can't help with that."}))
    })]);
    let out = agent(ws.path(), &model, &[], "Something refused.");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let outcome = json(&out);
    assert_eq!(outcome["stop"], "refused");
    assert_eq!(outcome["answer"], "I can't help with that.");
    assert_eq!(model.seen().len(), 1, "asked once");
}

/// `--output json --output-schema`: the model is told the schema, an
/// answer that does not fit is sent back with what was wrong, and the
/// value alone is printed; one that never fits ends `invalid_output`.
#[test]
fn a_json_answer_is_taken_from_the_text_and_checked() {
    let ws = workspace();
    let schema = ws.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}"#,
    )
    .unwrap();
    let schema = schema.display().to_string();
    let model = FakeModel::start(vec![
        Box::new(|request| {
            let system = request["messages"][0]["content"].as_str().unwrap();
            assert!(system.contains("\"required\":[\"count\"]"), "{system}");
            text(r#"Here: {"count": "three"}"#)
        }),
        Box::new(|request| {
            let messages = request["messages"].as_array().unwrap();
            let told = messages.last().unwrap()["content"].as_str().unwrap();
            assert!(told.contains("count"), "{told}");
            text("Sure.\n```json\n{\"count\": 3}\n```")
        }),
    ]);
    let mut args = vec!["agent", "--mode", "yolo", "--endpoint"];
    let url = model.url();
    args.extend([url.as_str(), "--model", "m", "--output", "json"]);
    args.extend(["--output-schema", schema.as_str(), "Count."]);
    let out = toolhost_command(ws.path(), &args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"count\":3}\n");

    let model = FakeModel::start(vec![
        Box::new(|_| text("no json")),
        Box::new(|_| text("still none")),
    ]);
    let out = agent_at(
        ws.path(),
        &model,
        &["--max-rounds", "2", "--output", "json", "--json", "Count."],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let outcome = json(&out);
    assert_eq!(outcome["stop"], "invalid_output");
    assert!(
        outcome["error"].as_str().unwrap().contains("no JSON"),
        "{outcome}"
    );
}

/// `--json-events`: one JSON line per step as it happens, the outcome
/// last.
#[test]
fn json_events_stream_each_step_and_end_with_the_outcome() {
    let ws = workspace();
    let model = FakeModel::start(vec![
        Box::new(|_| calls(&[("t", "get_datetime", "{}")])),
        Box::new(|_| text("It is now.")),
    ]);
    let out = agent_at(ws.path(), &model, &["--json-events", "Time?"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "asking",
            "answer",
            "tool_call",
            "tool_result",
            "asking",
            "answer",
            "end"
        ]
    );
    assert_eq!(events[3]["tool"], "get_datetime");
    assert_eq!(events[3]["outcome"], "success");
    assert_eq!(events[6]["answer"], "It is now.");
}

/// `toolhost` run on a new pseudo-terminal as its controlling terminal,
/// as a person runs it; what it writes is gathered from the other end.
pub(crate) struct OnTerminal {
    child: std::process::Child,
    master: std::fs::File,
    seen: Arc<Mutex<String>>,
}

impl OnTerminal {
    pub(crate) fn start(ws: &Path, args: &[&str]) -> Self {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();
        // `setsid --ctty`: a new session whose controlling terminal is
        // the pty, so Ctrl-C typed there is SIGINT to toolhost.
        let mut command = std::process::Command::new("setsid");
        let toolhost = toolhost_command(ws, args);
        command
            .args(["--ctty", "--wait"])
            .arg(toolhost.get_program())
            .args(toolhost.get_args())
            .current_dir(ws)
            .envs(
                toolhost
                    .get_envs()
                    .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
            )
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave.try_clone().unwrap());
        let child = command.spawn().unwrap();
        drop(slave);
        let master = std::fs::File::from(master);
        let seen = Arc::new(Mutex::new(String::new()));
        let mut reader = master.try_clone().unwrap();
        let gathered = Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                gathered
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Self {
            child,
            master,
            seen,
        }
    }

    /// Wait until the terminal shows `text`.
    pub(crate) fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.seen.lock().unwrap().contains(text) {
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {text:?}: {}",
                self.seen.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Type `keys` at the terminal.
    pub(crate) fn type_keys(&mut self, keys: &[u8]) {
        self.master.write_all(keys).unwrap();
        self.master.flush().unwrap();
    }

    /// The exit status, within `limit`.
    pub(crate) fn exit_code(mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "still running after {limit:?}: {}",
                    self.seen.lock().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `toolhost agent` on a terminal against `model`, its audit log at `audit`.
fn agent_on_terminal(ws: &Path, model: &FakeModel, audit: &Path, task: &str) -> OnTerminal {
    let (url, audit) = (model.url(), audit.display().to_string());
    let args = [
        "agent",
        "--endpoint",
        &url,
        "--model",
        "m",
        "--audit",
        &audit,
        task,
    ];
    OnTerminal::start(ws, &args)
}

/// The audit log at `audit` holds one run, and it was cancelled.
fn assert_cancelled(audit: &Path) {
    let records = run_records(audit);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["stop"], "cancelled");
}

/// "abort all" at the terminal's confirmation stops the run at once:
/// exit 130, no more requests, nothing written, the end in the audit log.
#[test]
fn abort_all_at_the_terminal_stops_the_run() {
    let ws = workspace();
    let model = FakeModel::start(vec![
        Box::new(|_| calls(&[("w", "write_file", r#"{"path":"no.txt","content":"x"}"#)])),
        Box::new(|_| text("should not be asked")),
    ]);
    let audit = ws.path().join("audit.jsonl");
    let mut run = agent_on_terminal(ws.path(), &model, &audit, "Write.");
    run.wait_for("[a]bort all");
    run.type_keys(b"a\n");
    assert_eq!(run.exit_code(Duration::from_secs(30)), Some(130));
    assert_eq!(model.seen().len(), 1, "no request after the abort");
    assert!(!ws.path().join("no.txt").exists());
    assert_cancelled(&audit);
}

/// Ctrl-C while the model is slow to answer stops the run at once, with
/// exit 130 and the record of a cancelled run.
#[test]
fn ctrl_c_stops_a_run_waiting_for_the_model() {
    let ws = workspace();
    let model = FakeModel::start(vec![Box::new(|_| {
        std::thread::sleep(Duration::from_secs(20));
        text("too late")
    })]);
    let audit = ws.path().join("audit.jsonl");
    let mut run = agent_on_terminal(ws.path(), &model, &audit, "Wait.");
    run.wait_for("asking m");
    let pressed = Instant::now();
    run.type_keys(&[0x03]);
    assert_eq!(run.exit_code(Duration::from_secs(15)), Some(130));
    assert!(
        pressed.elapsed() < Duration::from_secs(5),
        "{:?}",
        pressed.elapsed()
    );
    assert_cancelled(&audit);
}

/// Each run's task and answer go to the session history in the memory
/// directory, credentials redacted, where memory_search finds them in a
/// later session; `history = false` keeps none.
#[test]
fn memory_search_finds_what_earlier_sessions_asked_and_answered() {
    let ws = workspace();
    let memory = ws.path().join("memory-home");
    let config = ws.path().join("history.toml");
    std::fs::write(
        &config,
        format!("memory_dir = {:?}\n", memory.display().to_string()),
    )
    .unwrap();
    let config = config.display().to_string();
    let model = FakeModel::start(vec![Box::new(|_| {
        text("The staging database is on port 6543.")
    })]);
    let out = agent(
        ws.path(),
        &model,
        &["--config", &config, "--session", "monday"],
        "Which port does staging use? token=sk-proj-0123456789abcdefghijKLMN",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let found = crate::support::call_cli(
        ws.path(),
        "memory_search",
        &json!({"query": "staging port"}),
        &["--config", &config],
    );
    assert_eq!(found["success"], true, "{found}");
    let hits = found["structured"]["results"].as_array().unwrap();
    assert!(
        hits.iter()
            .any(|h| h["path"].as_str().unwrap().starts_with("sessions/")
                && h["snippet"].as_str().unwrap().contains("6543")),
        "{found}"
    );
    let days: Vec<_> = std::fs::read_dir(memory.join("sessions"))
        .unwrap()
        .collect();
    assert_eq!(days.len(), 1);
    let kept = std::fs::read_to_string(days[0].as_ref().unwrap().path()).unwrap();
    assert!(
        kept.contains("session monday") && kept.contains("answered"),
        "{kept}"
    );
    assert!(
        !kept.contains("0123456789abcdefghij"),
        "a credential was kept: {kept}"
    );

    std::fs::write(
        &config,
        format!(
            "memory_dir = {:?}\n[agent]\nhistory = false\n",
            memory.display().to_string()
        ),
    )
    .unwrap();
    let model = FakeModel::start(vec![Box::new(|_| text("Not kept."))]);
    let out = agent(
        ws.path(),
        &model,
        &["--config", &config],
        "Forget this one.",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let kept = std::fs::read_to_string(days[0].as_ref().unwrap().path()).unwrap();
    assert!(!kept.contains("Forget this one"), "{kept}");
}
