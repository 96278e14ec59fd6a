//! The review page end to end, in a real headless browser: an MCP client
//! is connected to `toolhost serve --http`; an agent creates tools over
//! MCP; the page (driven by Playwright for Python in Debian's Chromium,
//! tests/interop/review_page.py) shows one pending with its warnings and
//! approves it with an edited grant; the client gets tools/list_changed and
//! calls it; a second is rejected in the page and never listed; forged
//! requests change nothing; the screenshot is kept for the docs.

use crate::mcp::{Client, call, is_error, text};
use crate::mcp_http::{http_server, raw, raw_with_head};
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
    let config = state_config(home.path(), "");
    // No rescans: what loads the approved tool is the page's own reload.
    let server = http_server(
        ws.path(),
        &[
            "--config",
            &config,
            "--reload-secs",
            "0",
            "--structured-output",
        ],
    );
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
    let base = page_path(&login);
    // Nothing answers where the page is not: its path is in the link only.
    assert_eq!(raw(&addr, "GET", "/review", &[], "").0, 404);
    assert_eq!(raw(&addr, "GET", "/review/login", &[], "").0, 404);
    let (status, _) = raw(&addr, "GET", &base, &[], "");
    assert_eq!(status, 401, "not signed in");
    let csrf_free = format!("id={}&grant=commands", ids[2]);
    let (status, _) = raw(
        &addr,
        "POST",
        &format!("{base}/approve"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &csrf_free,
    );
    assert_eq!(status, 401, "not signed in");
    let (status, _) = raw(&addr, "GET", &format!("{base}/login?token=wrong"), &[], "");
    assert_eq!(status, 401, "a wrong secret");
    // The printed secret is no cookie: only a sign-in makes one.
    let secret = login.split("token=").nth(1).expect("token");
    let cookie = format!("toolhost_review={secret}");
    let (status, _) = raw(&addr, "GET", &base, &[("Cookie", &cookie)], "");
    assert_eq!(status, 401, "the link's secret as a cookie");
    let (status, _) = raw(&addr, "GET", &base, &[("Host", "evil.example")], "");
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
        json!({"no_token": 403, "wrong_token": 403, "other_site": 403, "no_origin": 403, "unseen": 422}),
        "{seen}"
    );
    assert_eq!(seen["other_still_pending"], true, "{seen}");
    // A server on another loopback port got no cookie at the paths it
    // could guess, and none that works here; under the page's random path
    // it would (the control).
    assert_eq!(seen["cookies_elsewhere"], json!([]), "{seen}");
    assert_eq!(seen["cookie_under_the_secret_path"], true, "{seen}");
    let replayed: Vec<u64> = seen["replayed"]
        .as_array()
        .expect("replayed")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert!(replayed.iter().all(|s| *s == 401), "{seen}");
    assert_eq!(seen["other_still_pending_after_replay"], true, "{seen}");
    assert_eq!(
        seen["link_again"], 401,
        "a sign-in link worked twice: {seen}"
    );
    assert!(
        seen["link_again_says"]
            .as_str()
            .is_some_and(|s| s.contains("used already")),
        "{seen}"
    );

    // Every decision is on the record: who, through what, having seen what.
    let decisions = decisions_in(&home.path().join("audit.jsonl"));
    let approval = decisions
        .iter()
        .find(|d| d["tool"] == "word_count")
        .expect("the approval in the audit log");
    assert_eq!(approval["decision"], "approve", "{approval}");
    assert_eq!(approval["channel"], "review page", "{approval}");
    assert!(
        approval["by"]
            .as_str()
            .is_some_and(|b| b.starts_with("sign-in ")),
        "{approval}"
    );
    assert_eq!(
        approval["requested"],
        json!(["workspace:read", "commands"]),
        "{approval}"
    );
    assert_eq!(approval["granted"], json!(["workspace:read"]), "{approval}");
    assert_eq!(
        approval["reviewed"].as_str().map(str::len),
        Some(64),
        "{approval}"
    );
    let rejection = decisions
        .iter()
        .find(|d| d["tool"] == "unwanted")
        .expect("the rejection in the audit log");
    assert_eq!(rejection["decision"], "reject", "{rejection}");
    assert_eq!(rejection["reason"], "not needed here", "{rejection}");
    assert_eq!(rejection["by"], approval["by"], "one sign-in made both");
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
    let config = state_config(home.path(), "");
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
    let base = page_path(&login);
    let (status, _) = raw(addr, "GET", &base, &[], "");
    assert_eq!(status, 401);
    let (cookie, head) = sign_in(addr, path);
    assert!(head.contains(&format!("Path={base};")), "{head}");
    let secret = path.split("token=").nth(1).expect("token");
    assert!(!cookie.contains(secret), "the cookie is the printed secret");
    let (status, page) = raw(addr, "GET", &base, &[("Cookie", &cookie)], "");
    assert_eq!(status, 200);
    assert!(
        page.contains("shout") && page.contains("Pending (1)"),
        "{page}"
    );

    // Granting more than was asked takes a second step, which shows it.
    let field = |name: &str| {
        let at = page.find(&format!("name=\"{name}\" value=\"")).expect(name) + name.len() + 15;
        page[at..].split('"').next().expect("value").to_owned()
    };
    let (csrf, id, seen) = (field("csrf"), field("id"), field("seen"));
    let origin = format!("http://{addr}");
    let post = |body: String| post_form(addr, &format!("{base}/approve"), &cookie, &origin, &body);
    let form = format!("csrf={csrf}&id={id}&seen={seen}&grant=commands");
    let (status, second) = post(form.clone());
    assert_eq!(status, 200, "{second}");
    assert!(
        second.contains("+ commands") && second.contains("widen"),
        "{second}"
    );
    let listed =
        crate::support::toolhost_command(ws.path(), &["--config", &config, "dynamic", "list"])
            .output()
            .expect("list");
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("pending"),
        "not approved yet"
    );
    let (status, _) = post(format!("{form}&widen=yes"));
    assert_eq!(status, 303, "confirmed");

    // The CLI's decisions are on the record too; a rejection of an
    // approved tool is a revocation; `dynamic show` prints them all.
    let out = crate::support::toolhost_command(
        ws.path(),
        &[
            "--config", &config, "dynamic", "reject", &id, "--reason", "too much",
        ],
    )
    .output()
    .expect("reject");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out =
        crate::support::toolhost_command(ws.path(), &["--config", &config, "dynamic", "show", &id])
            .output()
            .expect("show");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("approve by sign-in ") && shown.contains("via review page"),
        "{shown}"
    );
    assert!(shown.contains("granted commands"), "{shown}");
    assert!(
        shown.contains("revoke by uid ") && shown.contains("via cli"),
        "{shown}"
    );
    let decisions = decisions_in(&home.path().join("audit.jsonl"));
    let kinds: Vec<(&str, &str)> = decisions
        .iter()
        .map(|d| {
            (
                d["decision"].as_str().unwrap_or(""),
                d["channel"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(kinds, [("approve", "review page"), ("revoke", "cli")]);

    // A typescript tool: its TypeScript for reading, then the JavaScript
    // that is approved and runs, both escaped.
    let mut typed = script(
        "typed",
        "interface A { n: number }\nfunction run(a: A): Array<number> { return [a.n]; }\n",
        &[],
    );
    typed["kind"] = "typescript".into();
    let created =
        crate::support::call_cli(ws.path(), "create_tool", &typed, &["--config", &config]);
    assert_eq!(created["success"], true, "{created}");
    let (status, page) = raw(addr, "GET", &base, &[("Cookie", &cookie)], "");
    assert_eq!(status, 200);
    let ts = page
        .find("TypeScript, as the agent wrote it")
        .expect("the TypeScript");
    let js = page.find("JavaScript that runs").expect("the JavaScript");
    assert!(ts < js, "{page}");
    assert!(
        page[ts..js].contains("interface A { n: number }")
            && page[ts..js].contains("Array&lt;number&gt;"),
        "{page}"
    );
    assert!(page[js..].contains("function run(a) {"), "{page}");
    let _ = child.kill();
    let _ = child.wait();
}

/// Write `home`/toolhost.toml keeping the state and the audit log in
/// `home`, with `extra` after; its path.
pub(crate) fn state_config(home: &std::path::Path, extra: &str) -> String {
    let config = home.join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "state_dir = {:?}\naudit_log = {:?}\n{extra}",
            home.join("state"),
            home.join("audit.jsonl")
        ),
    )
    .expect("config");
    config.display().to_string()
}

/// POST the form `body` to `path` on `addr` as the page's own, signed in
/// with `cookie`, from `origin`.
pub(crate) fn post_form(
    addr: &str,
    path: &str,
    cookie: &str,
    origin: &str,
    body: &str,
) -> (u16, String) {
    raw(
        addr,
        "POST",
        path,
        &[
            ("Cookie", cookie),
            ("Origin", origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        body,
    )
}

/// Open the sign-in link `path` (after the address) on `addr`, as a
/// browser would: the session cookie it sets, and the answer's head.
pub(crate) fn sign_in(addr: &str, path: &str) -> (String, String) {
    let (status, head, _) = raw_with_head(addr, "GET", &format!("/{path}"), &[], "");
    assert_eq!(status, 303, "signed in and sent to the page");
    let cookie = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .expect("a cookie")
        .to_owned();
    (cookie, head)
}

/// The review page's path in a sign-in link: `/review/<random>`.
pub(crate) fn page_path(login: &str) -> String {
    let path = login.split_once("/review/").expect("a /review/ link").1;
    format!(
        "/review/{}",
        path.split('/').next().expect("the random part")
    )
}

/// The decision records in an audit log.
fn decisions_in(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "decision")
        .collect()
}

/// A tool changed in the store after its approval: not loaded, shown in a
/// browser as changed with the difference, approved again or revoked from
/// the page; an approval granting what the tool's kind cannot use is
/// refused.
#[test]
#[ignore = "needs Chromium (TOOLHOST_CHROMIUM); .ci/run runs it"]
fn a_tool_changed_after_approval_is_shown_changed_and_decided_again() {
    use std::io::BufRead as _;
    let ws = workspace();
    let home = workspace();
    let config = state_config(home.path(), "");
    let cli = |args: &[&str]| {
        let mut all = vec!["--config", config.as_str()];
        all.extend_from_slice(args);
        let out = crate::support::toolhost_command(ws.path(), &all)
            .output()
            .expect("run toolhost");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let created = crate::support::call_cli(
        ws.path(),
        "create_tool",
        &script(
            "shout",
            "function run() { return 'HI' }",
            &["workspace:read"],
        ),
        &["--config", &config],
    );
    let id = created["structured"]["id"].as_str().expect("id").to_owned();
    let (ok, said) = cli(&["dynamic", "approve", &id]);
    assert!(ok, "{said}");
    assert_eq!(cli(&["call", "shout", "{}"]).1.trim(), "HI");
    // Something with the store's access edits the approved source.
    let source = home
        .path()
        .join("state/dynamic")
        .join(&id)
        .join("source.js");
    std::fs::write(&source, "function run() { return 'PWNED' }").expect("edit");
    let (ok, said) = cli(&["call", "shout", "{}"]);
    assert!(
        !ok && !said.contains("PWNED"),
        "a changed tool never runs: {said}"
    );
    // Something with the store's access writes a tool of its own as
    // approved: no approval of it is on record, so it never loads.
    let store = home.path().join("state/dynamic");
    let forged = store.join("forged-00000001");
    std::fs::create_dir_all(&forged).expect("forged");
    std::fs::write(
        forged.join("source.js"),
        "function run() { return 'FORGED' }",
    )
    .expect("src");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join(&id).join("meta.json")).unwrap())
            .expect("meta");
    meta["id"] = "forged-00000001".into();
    meta["name"] = "forged".into();
    meta["grant"] = json!(["workspace:write"]);
    std::fs::write(forged.join("meta.json"), meta.to_string()).expect("meta");
    let (ok, said) = cli(&["call", "forged", "{}"]);
    assert!(!ok && !said.contains("FORGED"), "{said}");
    let (_, shown) = cli(&["dynamic", "show", &id]);
    assert!(
        shown.contains("changed:") && shown.contains("+function run() { return 'PWNED' }"),
        "{shown}"
    );

    // The page, in a browser, signed in with a reusable token.
    let token_file = home.path().join("review.token");
    std::fs::write(&token_file, "correct-horse-battery\n").expect("token");
    std::fs::set_permissions(
        &token_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("chmod");
    let mut child = crate::support::toolhost_command(
        ws.path(),
        &[
            "--config",
            &config,
            "review",
            "--port",
            "0",
            "--token-file",
            &token_file.display().to_string(),
        ],
    )
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("spawn toolhost review");
    // Warnings (the changed tool skipped) may come first.
    let link = std::io::BufReader::new(child.stderr.take().expect("stderr"))
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("review page: ")
                .and_then(|l| l.split_whitespace().next())
                .map(str::to_owned)
        })
        .expect("the sign-in link");
    let login = format!(
        "{}?token=correct-horse-battery",
        link.split('?').next().expect("the link")
    );
    let dom = crate::load_component::rendered_in_chromium(&login);
    let forged_card = &dom[dom
        .find("id=\"c-forged-00000001\"")
        .expect("the forged card")..];
    let forged_card = &forged_card[..forged_card.find("</article>").expect("its end")];
    assert!(
        forged_card.contains("no approval on record") && !forged_card.contains("Approve it"),
        "{forged_card}"
    );
    for shown in [
        "Changed since approval (2)",
        "changed since approval",
        "+function run() { return 'PWNED' }",
        "-function run() { return 'HI' }",
        "Approve it as it is now",
    ] {
        assert!(
            dom.contains(shown),
            "the page does not show {shown}:\n{dom}"
        );
    }

    // Decided again from the page: a grant the kind cannot use is refused;
    // approved as it is now, it runs; then revoked from the decided list.
    let rest = link.strip_prefix("http://").expect("http");
    let (addr, path) = rest.split_once('/').expect("addr/path");
    let base = page_path(&link);
    let (cookie, _) = sign_in(
        addr,
        &format!(
            "{}?token=correct-horse-battery",
            path.split('?').next().unwrap()
        ),
    );
    let (_, page) = raw(addr, "GET", &base, &[("Cookie", &cookie)], "");
    let card = &page[page
        .find(&format!("id=\"c-{id}\""))
        .expect("the changed card")..];
    let value = |name: &str| {
        let at = card.find(&format!("name=\"{name}\" value=\"")).expect(name) + name.len() + 15;
        card[at..].split('"').next().expect("value").to_owned()
    };
    let (csrf, seen) = (value("csrf"), value("seen"));
    let origin = format!("http://{addr}");
    let post = |path: &str, body: String| {
        post_form(addr, &format!("{base}/{path}"), &cookie, &origin, &body)
    };
    let (status, refused) = post(
        "approve",
        format!("csrf={csrf}&id={id}&seen={seen}&grant=network:example.com&widen=yes"),
    );
    assert_eq!(status, 422, "{refused}");
    assert!(refused.contains("cannot use"), "{refused}");
    let (status, answer) = post(
        "approve",
        format!("csrf={csrf}&id={id}&seen={seen}&grant=workspace:read"),
    );
    assert_eq!(status, 303, "{answer}");
    assert_eq!(
        cli(&["call", "shout", "{}"]).1.lines().next(),
        Some("PWNED")
    );
    let (_, page) = raw(addr, "GET", &base, &[("Cookie", &cookie)], "");
    assert!(!page.contains(&format!("id=\"c-{id}\"")), "{page}");
    assert!(
        page.contains("Changed since approval (1)"),
        "the forged one stays: {page}"
    );
    assert!(page.contains("class=\"revoke\""), "{page}");
    let (status, answer) = post("reject", format!("csrf={csrf}&id={id}&reason=no+longer"));
    assert_eq!(status, 303, "{answer}");
    let (ok, said) = cli(&["call", "shout", "{}"]);
    assert!(!ok, "revoked: {said}");
    let kinds: Vec<String> = decisions_in(&home.path().join("audit.jsonl"))
        .iter()
        .map(|d| d["decision"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(kinds, ["approve", "approve", "revoke"]);
    let _ = child.kill();
    let _ = child.wait();
}
