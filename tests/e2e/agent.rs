//! `toolhost agent`, the tool loop, against a scripted chat completions
//! endpoint the test starts on 127.0.0.1 (no real model): a two-round
//! conversation, calls run at once, the last round sent without tools, the
//! fallback, a malformed call the model corrects, the budget, and endpoint
//! failures that never show the API key.

use crate::support::{
    FakeHttp, HttpReply, json, stderr, stdout, toolhost_with_env, workspace, write,
};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What the model answers to one request (the request's JSON body in):
/// an HTTP status and a body.
pub(crate) type Turn = Box<dyn Fn(&Value) -> (u16, String) + Send + Sync>;

/// One request the fake model received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) authorization: Option<String>,
    /// Every header, the name in lowercase.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

/// A scripted chat completions endpoint: each request gets the next turn's
/// answer; every request is kept.
pub(crate) struct FakeModel(FakeHttp);

impl FakeModel {
    pub(crate) fn start(turns: Vec<Turn>) -> Self {
        let turns = Mutex::new(turns.into_iter());
        Self(FakeHttp::start(move |request| {
            let body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let next = turns.lock().unwrap().next();
            let (status, body) = match next {
                Some(turn) => turn(&body),
                None => (
                    500,
                    r#"{"error":"the script has no more turns"}"#.to_owned(),
                ),
            };
            HttpReply {
                status,
                ..HttpReply::json(body)
            }
        }))
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.0.port)
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.0
            .requests()
            .into_iter()
            .map(|r| Seen {
                authorization: r.header("authorization").map(str::to_owned),
                body: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
                path: r.path,
                headers: r.headers,
            })
            .collect()
    }
}

/// An answer in text.
pub(crate) fn text(content: &str) -> (u16, String) {
    let body = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": content}}]});
    (200, body.to_string())
}

/// An answer with tool calls: (id, function name, arguments as sent).
pub(crate) fn calls(list: &[(&str, &str, &str)]) -> (u16, String) {
    let calls: Vec<Value> = list
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    let body = json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": calls}}]});
    (200, body.to_string())
}

/// The `role: tool` messages at the end of a request, by call id.
pub(crate) fn tool_messages(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .take_while(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

/// The names of the tools an OpenAI request offers.
fn offered(request: &Value) -> Vec<&str> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect()
}

const KEY: &str = "sk-test-key-0123456789";

/// `toolhost agent` in `ws` against `model`, the key in TEST_MODEL_KEY.
pub(crate) fn agent(
    ws: &Path,
    model: &FakeModel,
    extra: &[&str],
    task: &str,
) -> std::process::Output {
    let url = model.url();
    let mut args = vec![
        "agent",
        "--mode",
        "yolo",
        "--endpoint",
        &url,
        "--model",
        "fake-1",
        "--api-key-env",
        "TEST_MODEL_KEY",
        "--json",
    ];
    args.extend_from_slice(extra);
    args.push(task);
    let out = toolhost_with_env(ws, &args, &[("TEST_MODEL_KEY", Path::new(KEY))]);
    assert!(
        !stdout(&out).contains(KEY) && !stderr(&out).contains(KEY),
        "the key was shown"
    );
    out
}

/// `toolhost agent` at `url` with the key in K, plainly.
fn keyed(ws: &Path, url: &str) -> std::process::Output {
    let args = [
        "agent",
        "--endpoint",
        url,
        "--model",
        "m",
        "--api-key-env",
        "K",
        "hi",
    ];
    toolhost_with_env(ws, &args, &[("K", Path::new(KEY))])
}

#[test]
fn a_two_round_conversation_runs_the_tool_and_answers() {
    let ws = workspace();
    write(ws.path(), "notes.txt", "hello from the file\n");
    let model = FakeModel::start(vec![
        Box::new(|_| calls(&[("call_1", "read_file", r#"{"path":"notes.txt"}"#)])),
        Box::new(|request| {
            let answers = tool_messages(request);
            assert_eq!(answers.len(), 1, "{request}");
            assert_eq!(answers[0].0, "call_1");
            assert!(
                answers[0].1.contains("hello from the file"),
                "{}",
                answers[0].1
            );
            text("The file says hello.")
        }),
    ]);
    let audit = ws.path().join("audit.jsonl");
    let out = agent(
        ws.path(),
        &model,
        &["--session", "s1", "--audit", audit.to_str().unwrap()],
        "What does notes.txt say?",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Through the pipeline: audited, and the key is nowhere in the record.
    let record = std::fs::read_to_string(&audit).unwrap();
    assert!(record.contains("\"read_file\""), "{record}");
    assert!(record.contains("\"agent\""), "the channel: {record}");
    assert!(!record.contains(KEY));
    let outcome = json(&out);
    assert_eq!(outcome["answer"], "The file says hello.");
    assert_eq!(outcome["stop"], "answered");
    assert_eq!(outcome["rounds"], 2);
    assert_eq!(outcome["tool_calls"], 1);
    let transcript = outcome["transcript"].as_array().unwrap();
    let roles: Vec<&str> = transcript
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);

    let seen = model.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(seen[0].body["model"], "fake-1");
    let offered = offered(&seen[0].body);
    assert!(
        offered.contains(&"read_file") && offered.contains(&"edit_file"),
        "{offered:?}"
    );
    // The system prompt carries the guidance for the visible tools.
    let system = seen[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("read_file"), "{system}");
    assert_eq!(
        seen[0].body["messages"][1]["content"],
        "What does notes.txt say?"
    );
}

#[test]
fn the_calls_of_one_round_run_at_once_and_answer_in_order() {
    let ws = workspace();
    // The first call waits for a file only the second makes: run one after
    // the other, the first would time out without it.
    let wait = r#"{"command":"for i in $(seq 100); do [ -e flag ] && break; sleep 0.1; done; [ -e flag ] && echo waited","timeout":20}"#;
    let make = r#"{"command":"touch flag && echo made"}"#;
    let model = FakeModel::start(vec![
        Box::new(move |_| calls(&[("a", "run_command", wait), ("b", "run_command", make)])),
        Box::new(|request| {
            let answers = tool_messages(request);
            assert_eq!(answers.len(), 2, "{request}");
            assert_eq!(answers[0].0, "a");
            assert!(answers[0].1.contains("waited"), "{}", answers[0].1);
            assert_eq!(answers[1].0, "b");
            assert!(answers[1].1.contains("made"), "{}", answers[1].1);
            text("both ran")
        }),
    ]);
    let out = agent(ws.path(), &model, &[], "Run both.");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["tool_calls"], 2);
}

#[test]
fn the_last_round_goes_without_tools_and_the_fallback_answers_when_rounds_run_out() {
    let ws = workspace();
    let model = FakeModel::start(vec![
        Box::new(|_| calls(&[("c1", "get_datetime", "{}")])),
        // Asked without tools, it still calls one: no text, so the fallback.
        Box::new(|_| calls(&[("c2", "get_datetime", "{}")])),
    ]);
    let out = agent(
        ws.path(),
        &model,
        &["--max-rounds", "2"],
        "What time is it?",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let outcome = json(&out);
    assert_eq!(outcome["stop"], "fallback");
    assert_eq!(outcome["rounds"], 2);
    assert_eq!(outcome["tool_calls"], 1, "the last round's call is not run");
    assert!(
        outcome["answer"]
            .as_str()
            .unwrap()
            .contains("could not reach an answer within 2 rounds"),
        "{outcome}"
    );
    let seen = model.seen();
    assert!(seen[0].body.get("tools").is_some());
    assert!(seen[1].body.get("tools").is_none(), "{}", seen[1].body);

    // Asked without tools, it answers: that is the answer.
    let model = FakeModel::start(vec![
        Box::new(|_| calls(&[("c1", "get_datetime", "{}")])),
        Box::new(|_| text("It is now.")),
    ]);
    let out = agent(
        ws.path(),
        &model,
        &["--max-rounds", "2"],
        "What time is it?",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["answer"], "It is now.");
}

#[test]
fn malformed_and_unknown_calls_are_explained_to_the_model_which_corrects_them() {
    let ws = workspace();
    write(ws.path(), "a.txt", "alpha\n");
    let model = FakeModel::start(vec![
        Box::new(|_| {
            calls(&[
                ("bad", "read_file", "{not json"),
                ("ghost", "no_such_tool", "{}"),
                ("list", "read_file", "[1]"),
            ])
        }),
        Box::new(|request| {
            let answers = tool_messages(request);
            assert!(
                answers[0].1.contains("not a JSON object"),
                "{}",
                answers[0].1
            );
            assert!(
                answers[1].1.starts_with("error (not_found)"),
                "{}",
                answers[1].1
            );
            assert!(answers[2].1.contains("got an array"), "{}", answers[2].1);
            calls(&[("good", "read_file", r#"{"path":"a.txt"}"#)])
        }),
        Box::new(|request| {
            assert!(tool_messages(request)[0].1.contains("alpha"), "{request}");
            text("a.txt holds alpha")
        }),
    ]);
    let out = agent(ws.path(), &model, &[], "Read a.txt.");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let outcome = json(&out);
    assert_eq!(outcome["answer"], "a.txt holds alpha");
    assert_eq!(outcome["rounds"], 3);
}

#[test]
fn the_budget_stops_tool_calls_and_tells_the_model() {
    let ws = workspace();
    let model = FakeModel::start(vec![
        Box::new(|_| calls(&[("one", "get_datetime", "{}"), ("two", "get_datetime", "{}")])),
        Box::new(|request| {
            let answers = tool_messages(request);
            assert!(!answers[0].1.starts_with("error"), "{}", answers[0].1);
            assert!(
                answers[1].1.contains("at most 1 tool calls"),
                "{}",
                answers[1].1
            );
            text("done with one")
        }),
    ]);
    let out = agent(ws.path(), &model, &["--max-tool-calls", "1"], "Twice.");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["tool_calls"], 1);

    // Results past the character budget are cut, with a note.
    write(ws.path(), "big.txt", "x".repeat(5_000));
    let model = FakeModel::start(vec![
        Box::new(|_| calls(&[("big", "read_file", r#"{"path":"big.txt"}"#)])),
        Box::new(|request| {
            let answer = &tool_messages(request)[0].1;
            assert!(
                answer.contains("may total at most 1000 characters"),
                "{answer}"
            );
            assert!(answer.chars().count() < 1_200, "{}", answer.len());
            text("cut")
        }),
    ]);
    let out = agent(
        ws.path(),
        &model,
        &["--max-result-chars", "1000"],
        "Read big.txt.",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn endpoint_failures_are_clear_and_never_show_the_key() {
    let ws = workspace();
    // Nothing listens: connection refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = keyed(ws.path(), &url);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot reach the endpoint"),
        "{}",
        stderr(&out)
    );

    // An HTTP error whose body echoes the key: shown, the key redacted.
    let model = FakeModel::start(vec![Box::new(|_| {
        (
            401,
            format!(r#"{{"error":"Incorrect API key provided: {KEY}"}}"#),
        )
    })]);
    let out = agent(ws.path(), &model, &[], "hi");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("401") && said.contains("check the API key"),
        "{said}"
    );
    assert!(said.contains("[redacted]"), "{said}");

    // Not a chat completion.
    let model = FakeModel::start(vec![Box::new(|_| (200, "<html>".to_owned()))]);
    let out = agent(ws.path(), &model, &[], "hi");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("not JSON"), "{}", stderr(&out));
    let model = FakeModel::start(vec![Box::new(|_| (200, "{}".to_owned()))]);
    let out = agent(ws.path(), &model, &[], "hi");
    assert!(
        stderr(&out).contains("no choices[0].message"),
        "{}",
        stderr(&out)
    );

    // A key variable that is not set, a key where its variable's name
    // belongs (never shown), no model, a bad URL: usage errors.
    for (args, said) in [
        (
            vec![
                "agent",
                "--endpoint",
                "http://127.0.0.1:1/v1",
                "--model",
                "m",
                "--api-key-env",
                KEY,
                "hi",
            ],
            "not the key itself",
        ),
        (
            vec![
                "agent",
                "--endpoint",
                "http://127.0.0.1:1/v1",
                "--model",
                "m",
                "--api-key-env",
                "NOT_SET_ANYWHERE",
                "hi",
            ],
            "NOT_SET_ANYWHERE (--api-key-env or api_key_env) is not set",
        ),
        (
            vec!["agent", "--endpoint", "http://127.0.0.1:1/v1", "hi"],
            "no model",
        ),
        (
            vec!["agent", "--endpoint", "ftp://x", "--model", "m", "hi"],
            "not an http(s) URL",
        ),
    ] {
        let out = toolhost_with_env(ws.path(), &args, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(said), "{}", stderr(&out));
        assert!(!stderr(&out).contains(KEY), "the key was shown");
    }
}

/// The model gets no way around the person: without `--mode yolo` and with
/// no terminal to ask, a write it asks for is refused and nothing is
/// written; a profile's hidden tools are neither offered nor callable.
#[test]
fn the_model_cannot_go_around_confirmation_or_the_profile() {
    let ws = workspace();
    let model = FakeModel::start(vec![
        Box::new(|_| calls(&[("w", "write_file", r#"{"path":"x.txt","content":"hi"}"#)])),
        Box::new(|request| {
            let answer = &tool_messages(request)[0].1;
            assert!(answer.starts_with("error ("), "{answer}");
            // The model is told what it can do, not flags it cannot use.
            assert!(answer.contains("a person must approve this"), "{answer}");
            assert!(!answer.contains("--"), "{answer}");
            calls(&[("r", "run_command", r#"{"command":"touch y.txt"}"#)])
        }),
        Box::new(|request| {
            let answer = &tool_messages(request)[0].1;
            assert!(answer.contains("nothing was run"), "{answer}");
            assert!(answer.contains("a person must approve this"), "{answer}");
            assert!(!answer.contains("--"), "{answer}");
            text("I could not write it.")
        }),
    ]);
    let url = model.url();
    let out = toolhost_with_env(
        ws.path(),
        &[
            "agent",
            "--endpoint",
            &url,
            "--model",
            "m",
            "--json",
            "Write x.txt.",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !ws.path().join("x.txt").exists() && !ws.path().join("y.txt").exists(),
        "written without confirmation"
    );

    let config = ws.path().join("profiles.toml");
    write(
        ws.path(),
        "profiles.toml",
        "[profiles.reader]\ntools = [\"read_file\"]\nmode = \"yolo\"\n",
    );
    let model = FakeModel::start(vec![
        Box::new(|request| {
            assert_eq!(offered(request), ["read_file"]);
            calls(&[("w", "write_file", r#"{"path":"x.txt","content":"hi"}"#)])
        }),
        Box::new(|request| {
            let answer = &tool_messages(request)[0].1;
            assert!(answer.starts_with("error (not_found)"), "{answer}");
            text("No such tool here.")
        }),
    ]);
    let url = model.url();
    let out = toolhost_with_env(
        ws.path(),
        &[
            "--config",
            config.to_str().unwrap(),
            "--profile",
            "reader",
            "agent",
            "--endpoint",
            &url,
            "--model",
            "m",
            "Write x.txt.",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "No such tool here.\n");
    assert!(!ws.path().join("x.txt").exists());
}

/// `--api anthropic`: the same loop over Anthropic's messages API — the
/// system prompt apart, tool calls as `tool_use` blocks, results as
/// `tool_result` blocks, the key in `x-api-key`, and the last round keeping
/// the tools (the API wants them defined) with `tool_choice` none.
#[test]
fn the_loop_speaks_anthropics_messages_api_too() {
    let ws = workspace();
    write(ws.path(), "notes.txt", "hello from the file\n");
    let model = FakeModel::start(vec![
        Box::new(|request| {
            assert!(request["system"].as_str().unwrap().contains("read_file"));
            assert_eq!(
                request["messages"],
                json!([{"role": "user", "content": "What does notes.txt say?"}])
            );
            assert!(request["tools"][0]["input_schema"].is_object(), "{request}");
            assert!(request.get("tool_choice").is_none());
            assert!(request["max_tokens"].as_u64().unwrap() > 0);
            let body = json!({"type": "message", "role": "assistant", "stop_reason": "tool_use",
                "content": [{"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "tu_1", "name": "read_file", "input": {"path": "notes.txt"}}]});
            (200, body.to_string())
        }),
        Box::new(|request| {
            let turns = request["messages"].as_array().unwrap();
            assert_eq!(turns[1]["role"], "assistant");
            assert_eq!(turns[1]["content"][1]["type"], "tool_use");
            assert_eq!(
                turns[1]["content"][1]["input"],
                json!({"path": "notes.txt"})
            );
            assert_eq!(turns[2]["role"], "user");
            assert_eq!(turns[2]["content"][0]["type"], "tool_result");
            assert_eq!(turns[2]["content"][0]["tool_use_id"], "tu_1");
            assert!(
                turns[2]["content"][0]["content"]
                    .as_str()
                    .unwrap()
                    .contains("hello from the file")
            );
            assert_eq!(request["tool_choice"], json!({"type": "none"}), "{request}");
            let body = json!({"type": "message", "role": "assistant", "stop_reason": "end_turn",
                "content": [{"type": "text", "text": "It says hello."}]});
            (200, body.to_string())
        }),
    ]);
    let out = agent(
        ws.path(),
        &model,
        &["--api", "anthropic", "--max-rounds", "2"],
        "What does notes.txt say?",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let outcome = json(&out);
    assert_eq!(outcome["answer"], "It says hello.");
    assert_eq!(outcome["tool_calls"], 1);
    let seen = model.seen();
    assert_eq!(seen[0].path, "/v1/messages");
    let header = |name: &str| {
        seen[0]
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("x-api-key"), Some(KEY));
    assert_eq!(header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(seen[0].authorization, None);
}

/// Answers that would trip the loop: an empty one (not kept; asked again
/// with a nudge saying what was wrong),
/// calls without ids (given ids the answers use), more calls than one
/// answer may run (the rest told to come later).
#[test]
fn empty_answers_missing_ids_and_floods_of_calls_are_handled() {
    let ws = workspace();
    let model = FakeModel::start(vec![
        Box::new(|_| text("")),
        Box::new(|request| {
            // The empty answer is not part of the conversation; the
            // nudge is.
            let messages = request["messages"].as_array().unwrap();
            assert_eq!(messages.len(), 3, "{request}");
            assert_eq!(messages[2]["role"], "user");
            assert!(
                messages[2]["content"]
                    .as_str()
                    .unwrap()
                    .contains("no text and no tool call"),
                "{request}"
            );
            let body = json!({"choices": [{"message": {"role": "assistant", "content": null,
                "tool_calls": [{"function": {"name": "get_datetime", "arguments": "{}"}},
                               {"function": {"name": "get_datetime", "arguments": "{}"}}]}}]});
            (200, body.to_string())
        }),
        Box::new(|request| {
            let messages = request["messages"].as_array().unwrap();
            let kept: Vec<&str> = messages[3]["tool_calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap())
                .collect();
            let answered: Vec<String> = tool_messages(request)
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            assert_eq!(kept, ["call_2_0", "call_2_1"]);
            assert_eq!(answered, kept);
            let flood: Vec<(String, &str, &str)> = (0..18)
                .map(|i| (format!("f{i}"), "get_datetime", "{}"))
                .collect();
            let list: Vec<(&str, &str, &str)> = flood
                .iter()
                .map(|(id, n, a)| (id.as_str(), *n, *a))
                .collect();
            calls(&list)
        }),
        Box::new(|request| {
            let answers = tool_messages(request);
            assert_eq!(answers.len(), 18);
            assert!(!answers[15].1.starts_with("error"), "{}", answers[15].1);
            assert!(
                answers[16]
                    .1
                    .contains("at most 16 tool calls run from one answer"),
                "{}",
                answers[16].1
            );
            text("done")
        }),
    ]);
    let out = agent(ws.path(), &model, &[], "Time, many times.");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let outcome = json(&out);
    assert_eq!(outcome["answer"], "done");
    assert_eq!(outcome["tool_calls"], 18, "2 + 16 ran");
}

/// The key goes nowhere a person did not name: redirects are not
/// followed, and plain http to another machine is refused.
#[test]
fn the_key_goes_only_where_it_was_sent() {
    let ws = workspace();
    let model = FakeModel::start(vec![Box::new(|_| (307, String::new()))]);
    let out = agent(ws.path(), &model, &[], "hi");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("redirects are not followed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(model.seen().len(), 1);

    let out = keyed(ws.path(), "http://model.example/v1");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("refusing to send the API key over plain http"),
        "{}",
        stderr(&out)
    );
}

/// Failures that may pass are asked again: a 429 with `Retry-After: 1`
/// waits that second and then succeeds; an endpoint that keeps answering
/// 500 is asked `retries` more times, then the `[agent.fallback]`
/// endpoint answers, with its own model. A 400 is not asked again.
#[test]
fn failures_that_may_pass_are_retried_then_the_fallback_answers() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let ws = workspace();
    let busy = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&busy);
    let limited = FakeHttp::start(move |_| {
        if count.fetch_add(1, Ordering::SeqCst) == 0 {
            HttpReply {
                status: 429,
                headers: vec![("Retry-After".into(), "1".into())],
                body: r#"{"error":"slow down"}"#.into(),
                ..HttpReply::default()
            }
        } else {
            HttpReply::json(text("after the wait").1)
        }
    });
    let url = format!("http://127.0.0.1:{}/v1", limited.port);
    let started = std::time::Instant::now();
    let out = toolhost_with_env(
        ws.path(),
        &["agent", "--endpoint", &url, "--model", "m", "--json", "hi"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    assert_eq!(json(&out)["answer"], "after the wait", "{}", stdout(&out));
    assert_eq!(busy.load(Ordering::SeqCst), 2);

    let down = FakeHttp::start(|_| HttpReply {
        status: 500,
        body: r#"{"error":"down"}"#.into(),
        ..HttpReply::default()
    });
    let fallback = FakeModel::start(vec![Box::new(|_| text("from the fallback"))]);
    let config = ws.path().join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "[agent]\nendpoint = \"http://127.0.0.1:{}/v1\"\nmodel = \"first\"\nretries = 2\n\
             [agent.fallback]\nendpoint = \"{}\"\nmodel = \"second\"\n",
            down.port,
            fallback.url()
        ),
    )
    .expect("config");
    let config = config.display().to_string();
    let out = toolhost_with_env(
        ws.path(),
        &["--config", &config, "agent", "--json", "hi"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        json(&out)["answer"],
        "from the fallback",
        "{}",
        stdout(&out)
    );
    assert_eq!(down.requests().len(), 3, "the first and two retries");
    let seen = fallback.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body["model"], "second");

    // A request the endpoint refuses as bad is not sent again.
    let bad = FakeHttp::start(|_| HttpReply {
        status: 400,
        body: r#"{"error":"bad request"}"#.into(),
        ..HttpReply::default()
    });
    let url = format!("http://127.0.0.1:{}/v1", bad.port);
    let out = toolhost_with_env(
        ws.path(),
        &["agent", "--endpoint", &url, "--model", "m", "hi"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(bad.requests().len(), 1);
}

/// The persona the agent keeps is in its system prompt: SOUL.md,
/// IDENTITY.md and GOALS.md from the soul directory, before the tools'
/// guidance; a persona file that is not a regular file is left out.
#[test]
fn the_system_prompt_holds_the_persona() {
    let ws = workspace();
    let home = workspace();
    let soul = home.path().join("soul");
    std::fs::create_dir_all(&soul).expect("soul");
    std::fs::write(soul.join("SOUL.md"), "I am patient and precise.\n").expect("soul");
    std::fs::write(soul.join("IDENTITY.md"), "Name: Ada, the build helper.\n").expect("id");
    std::os::unix::fs::symlink("/etc/passwd", soul.join("GOALS.md")).expect("link");
    let config = home.path().join("persona.toml");
    std::fs::write(
        &config,
        format!("soul_dir = {:?}\n", soul.display().to_string()),
    )
    .expect("config");
    let model = FakeModel::start(vec![Box::new(|_| text("hello"))]);
    let config = config.display().to_string();
    let out = agent(ws.path(), &model, &["--config", &config], "hi");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = model.seen();
    let system = seen[0].body["messages"][0]["content"]
        .as_str()
        .expect("a system message")
        .to_owned();
    assert!(
        system.contains("## SOUL.md\n\nI am patient and precise."),
        "{system}"
    );
    assert!(
        system.contains("## IDENTITY.md\n\nName: Ada, the build helper."),
        "{system}"
    );
    assert!(
        !system.contains("root:"),
        "a symlink out of the soul directory: {system}"
    );
    assert!(
        system.find("I am patient").unwrap() < system.find("update_soul").unwrap_or(usize::MAX)
            || system.contains("Your persona"),
        "{system}"
    );
}
