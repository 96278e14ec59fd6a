//! The review page end to end, in a real headless browser: an MCP client
//! is connected to `toolhost serve --http`; an agent creates tools over
//! MCP; the page (driven by Playwright for Python in Debian's Chromium,
//! tests/interop/review_page.py) shows one pending with its warnings and
//! approves it with an edited grant; the client gets tools/list_changed and
//! calls it; a second is rejected in the page and never listed; forged
//! requests change nothing; the screenshot is kept for the docs.

use crate::mcp::{Client, call, is_error, text};
use crate::mcp_http::{http_server, raw};
use crate::support::workspace;
use rmcp::ServiceExt as _;
use serde_json::{Value, json};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// The Python with Playwright, and Chromium; a test that calls this fails,
/// saying what to install, where either is missing.
fn browser() -> (String, String) {
    let python = crate::interop::python();
    let chromium =
        std::env::var("TOOLHOST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let has_playwright = Command::new(&python)
        .args(["-c", "import playwright.sync_api"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_playwright && std::path::Path::new(&chromium).is_file(),
        "the review page test needs Playwright for Python in {python} (pip install playwright) \
         and Chromium at {chromium} (apt-get install chromium, or set TOOLHOST_CHROMIUM); \
         .ci/run installs both"
    );
    (python, chromium)
}

fn script(name: &str, source: &str, caps: &[&str]) -> Value {
    json!({
        "name": name,
        "description": format!("The {name} tool, made by an agent for the review page test."),
        "kind": "javascript",
        "source": source,
        "parameters": {"type": "object", "properties": {}},
        "capabilities": caps,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Playwright for Python (TOOLHOST_INTEROP_PYTHON) and Chromium (TOOLHOST_CHROMIUM); .ci/run runs it"]
async fn the_review_page_in_a_real_browser() {
    let (python, chromium) = browser();
    let ws = workspace();
    let home = workspace();
    std::fs::write(ws.path().join("words.txt"), "one two three").expect("file");
    let config = home.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "state_dir = {:?}\naudit_log = {:?}\n",
            home.path().join("state"),
            home.path().join("audit.jsonl")
        ),
    )
    .expect("config");
    let config = config.display().to_string();
    // No rescans: what loads the approved tool is the page's own reload.
    let server = http_server(ws.path(), &["--config", &config, "--reload-secs", "0"]);
    let client = Client::default();
    let changed = Arc::clone(&client.list_changed);
    let transport = crate::support::http_transport(format!("http://{}/mcp", server.addr));
    let session = client.serve(transport).await.expect("initialize over HTTP");

    // An agent creates three tools over MCP.
    let mut ids = Vec::new();
    for (name, source, caps) in [
        (
            "word_count",
            "function run() {\n  // counts words \u{202E} in words.txt\n  const text = toolhost.readFile('words.txt');\n  return {words: text.trim().split(/\\s+/).length, sum: eval('1 + 1')};\n}",
            &["workspace:read", "commands"][..],
        ),
        ("unwanted", "function run() { return 'no' }", &[][..]),
        ("left_pending", "function run() { return 'later' }", &[][..]),
    ] {
        let r = call(&session, "create_tool", script(name, source, caps))
            .await
            .expect("answered");
        assert!(!is_error(&r), "{}", text(&r));
        ids.push(
            r.structured_content.expect("structured")["id"]
                .as_str()
                .expect("id")
                .to_owned(),
        );
    }
    let listed = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    assert!(
        !listed(session.list_all_tools().await.expect("list")).contains(&"word_count".to_owned())
    );

    // Nobody gets in without the sign-in link printed for the person who
    // started the server: not a process on this machine, not a rebinding
    // page.
    let login = server
        .banner
        .iter()
        .find_map(|l| l.strip_prefix("review page: "))
        .and_then(|l| l.split_whitespace().next())
        .expect("the sign-in link is printed")
        .to_owned();
    let addr = server.addr.clone();
    let (status, _) = raw(&addr, "GET", "/review", &[], "");
    assert_eq!(status, 401, "not signed in");
    let csrf_free = format!("id={}&grant=commands", ids[2]);
    let (status, _) = raw(
        &addr,
        "POST",
        "/review/approve",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &csrf_free,
    );
    assert_eq!(status, 401, "not signed in");
    let (status, _) = raw(&addr, "GET", "/review/login?token=wrong", &[], "");
    assert_eq!(status, 401, "a wrong secret");
    let secret = login.split("token=").nth(1).expect("token");
    let cookie = format!("toolhost_review={secret}");
    let (status, _) = raw(&addr, "GET", "/review", &[("Cookie", &cookie)], "");
    assert_eq!(status, 200, "signed in");
    let (status, _) = raw(
        &addr,
        "GET",
        "/review",
        &[("Cookie", &cookie), ("Host", "evil.example")],
        "",
    );
    assert_eq!(status, 403, "a foreign Host");

    // A person opens the page.
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("review-page.png");
    let _ = std::fs::remove_file(&shot);
    let plan = json!({
        "login": login,
        "approve": {"id": ids[0], "name": "word_count", "grant": "workspace:read"},
        "reject": {"id": ids[1], "reason": "not needed here"},
        "other": ids[2],
        "screenshot": shot,
        "chromium": chromium,
    });
    let page_script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/review_page.py");
    let out = tokio::task::spawn_blocking({
        let base = format!("http://{}", server.addr);
        move || {
            Command::new(&python)
                .arg(page_script)
                .args([base, plan.to_string()])
                .output()
                .expect("run the browser script")
        }
    })
    .await
    .expect("browser task");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("its JSON");

    // What the page showed.
    let warnings: Vec<&str> = seen["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(warnings.iter().any(|w| w.contains("uses eval")), "{seen}");
    assert_eq!(seen["requested"], "workspace:read, commands", "{seen}");
    assert_eq!(
        seen["hidden_marks"],
        json!(["U+202E"]),
        "the bidi mark is shown: {seen}"
    );
    assert!(
        seen["csp"]
            .as_str()
            .expect("csp")
            .contains("default-src 'none'"),
        "{seen}"
    );
    assert_eq!(
        seen["fetch_blocked"], true,
        "connect-src falls back to 'none': {seen}"
    );
    assert_eq!(seen["grant_marked_changed"], true, "{seen}");
    let approved = seen["after_approve"].as_str().expect("notice");
    assert!(
        approved.contains("Approved word_count with: workspace:read"),
        "{approved}"
    );
    assert!(
        seen["after_reject"]
            .as_str()
            .expect("notice")
            .contains("Rejected unwanted"),
        "{seen}"
    );
    assert_eq!(
        seen["forged"],
        json!({"no_token": 403, "wrong_token": 403, "other_site": 403, "unseen": 422}),
        "{seen}"
    );
    assert_eq!(seen["other_still_pending"], true, "{seen}");
    assert!(seen["tools_rows"].as_u64().expect("rows") > 20, "{seen}");
    assert!(
        seen["approved_row"]
            .as_str()
            .expect("row")
            .contains("workspace:read"),
        "{seen}"
    );
    assert_eq!(seen["audit_tools"], json!(["create_tool"]), "{seen}");
    assert_eq!(
        seen["blocked_requests"],
        json!([]),
        "every asset loads: {seen}"
    );

    // The MCP client heard of it at once, and can call it with the
    // edited grant (it reads the workspace; commands were taken away).
    tokio::time::timeout(Duration::from_secs(20), changed.notified())
        .await
        .expect("tools/list_changed after the approval");
    let names = listed(session.list_all_tools().await.expect("list"));
    assert!(names.contains(&"word_count".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"unwanted".to_owned()) && !names.contains(&"left_pending".to_owned()),
        "{names:?}"
    );
    let r = call(&session, "word_count", json!({}))
        .await
        .expect("answered");
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(r.structured_content, Some(json!({"words": 3, "sum": 2})));
    assert!(
        call(&session, "unwanted", json!({})).await.is_err(),
        "a rejected tool is unknown"
    );

    // The screenshot, for docs/dynamic-tools.md.
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "the screenshot was taken ({size} bytes)");
    if std::env::var_os("TOOLHOST_BLESS").is_some() {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/images");
        std::fs::create_dir_all(&docs).expect("docs/images");
        std::fs::copy(&shot, docs.join("review-page.png")).expect("copy the screenshot");
    }
    session.cancel().await.expect("close");
}

/// `toolhost review` serves the page alone (for people who serve MCP over
/// stdio): it prints its sign-in link, refuses a browser that has not
/// used it, and shows the pending tools once signed in.
#[test]
fn toolhost_review_serves_the_page_alone() {
    use std::io::BufRead as _;
    let ws = workspace();
    let home = workspace();
    let config = home.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!("state_dir = {:?}\n", home.path().join("state")),
    )
    .expect("config");
    let config = config.display().to_string();
    let created = crate::support::call_cli(
        ws.path(),
        "create_tool",
        &script("shout", "function run() { return 'HI' }", &[]),
        &["--config", &config],
    );
    assert_eq!(created["success"], true, "{created}");
    let mut child = crate::support::toolhost_command(
        ws.path(),
        &["--config", &config, "review", "--port", "0"],
    )
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("spawn toolhost review");
    let first = std::io::BufReader::new(child.stderr.take().expect("stderr"))
        .lines()
        .next()
        .expect("a line")
        .expect("utf-8");
    let login = first
        .strip_prefix("review page: http://")
        .and_then(|l| l.split_whitespace().next())
        .expect("the sign-in link")
        .to_owned();
    let (addr, path) = login.split_once('/').expect("addr/path");
    let (status, _) = raw(addr, "GET", "/review", &[], "");
    assert_eq!(status, 401);
    let (status, _) = raw(addr, "GET", &format!("/{path}"), &[], "");
    assert_eq!(status, 303, "signed in and sent to the page");
    let secret = path.split("token=").nth(1).expect("token");
    let (status, page) = raw(
        addr,
        "GET",
        "/review",
        &[("Cookie", &format!("toolhost_review={secret}"))],
        "",
    );
    assert_eq!(status, 200);
    assert!(
        page.contains("shout") && page.contains("Pending (1)"),
        "{page}"
    );
    let _ = child.kill();
    let _ = child.wait();
}
