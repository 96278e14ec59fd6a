//! `load_component` over MCP: an agent asks for a component (a workspace
//! file, or an `oci://` reference from a real registry) to be loaded; it is
//! filed as pending and runs nothing until a person approves it; the review
//! page shows what the host derived from the component's bytes (its tools
//! and schemas, WIT interface, imports, digest, where it came from and
//! what its signatures say); once approved, its tools are listed and work
//! with the grant the person gave.

use crate::mcp::{Client, call, is_error, text};
use crate::mcp_http::{HttpServer, http_server_env, raw};
use crate::review::{page_path, post_form, sign_in};
use crate::support::{fixtures_dir, workspace};
use rmcp::ServiceExt as _;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// `serve --http` over `ws`, its state and audit log in `home`, with the
/// environment `env`; no rescans (only a decision reloads tools).
fn serve(ws: &Path, home: &Path, extra_config: &str, env: &[(&str, &Path)]) -> HttpServer {
    let config = crate::review::state_config(home, extra_config);
    let args = [
        "--config",
        &config,
        "--reload-secs",
        "0",
        "--structured-output",
    ];
    http_server_env(ws, &args, env)
}

/// The review page's sign-in path (after the address) from the banner.
fn login_of(server: &HttpServer) -> String {
    let link = server
        .banner
        .iter()
        .find_map(|l| l.strip_prefix("review page: http://"))
        .and_then(|l| l.split_whitespace().next())
        .expect("the sign-in link is printed");
    link.split_once('/').expect("addr/path").1.to_owned()
}

/// The pending page as a signed-in person sees it: (base, cookie, html).
fn pending_page(server: &HttpServer) -> (String, String, String) {
    let path = login_of(server);
    let base = page_path(&format!("{}/{path}", server.addr));
    let (cookie, _) = sign_in(&server.addr, &path);
    let page = page_again(server, &base, &cookie);
    (base, cookie, page)
}

/// The pending page again, for a person signed in with `cookie`.
fn page_again(server: &HttpServer, base: &str, cookie: &str) -> String {
    let (status, page) = raw(&server.addr, "GET", base, &[("Cookie", cookie)], "");
    assert_eq!(status, 200, "{page}");
    page
}

/// The value of the form field `name` in the card whose element id is
/// `card` (`t-ID` a pending tool's, `r-ID` a request's).
fn field(page: &str, card: &str, name: &str) -> String {
    let card = &page[page.find(&format!("id=\"{card}\"")).expect("the card")..];
    let at = card.find(&format!("name=\"{name}\" value=\"")).expect(name) + name.len() + 15;
    card[at..].split('"').next().expect("value").to_owned()
}

fn names(tools: Vec<rmcp::model::Tool>) -> Vec<String> {
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_an_agent_asks_for_runs_nothing_until_a_person_approves_it() {
    let ws = workspace();
    let home = workspace();
    std::fs::copy(
        fixtures_dir().join("plain/fixture_plain.wasm"),
        ws.path().join("inventory.wasm"),
    )
    .expect("copy the plain fixture");
    std::fs::write(ws.path().join("notes.txt"), "one\ntwo\nthree\n").expect("file");
    std::fs::write(ws.path().join("fake.wasm"), "not a component").expect("file");
    let server = serve(ws.path(), home.path(), "", &[]);
    let client = Client::default();
    let changed = Arc::clone(&client.list_changed);
    let transport = crate::support::http_transport(format!("http://{}/mcp", server.addr));
    let session = client.serve(transport).await.expect("initialize over HTTP");
    let listed = names(session.list_all_tools().await.expect("list"));
    assert!(listed.contains(&"load_component".to_owned()), "{listed:?}");

    // Bad requests are refused, saying what to do, and file nothing.
    for (args, says) in [
        (json!({"source": "missing.wasm"}), "cannot read"),
        (json!({"source": "../outside.wasm"}), "outside"),
        (json!({"source": "fake.wasm"}), "cannot be loaded as tools"),
        (
            json!({"source": "inventory.wasm", "name": "Bad Name"}),
            "snake_case",
        ),
        (
            json!({"source": "inventory.wasm", "name": "read_file"}),
            "taken",
        ),
        (
            json!({"source": "inventory.wasm", "capabilities": ["commands"]}),
            "never runs commands",
        ),
        (json!({"source": "oci://nowhere"}), "oci://REGISTRY"),
    ] {
        let r = call(&session, "load_component", args.clone())
            .await
            .expect("answered");
        assert!(is_error(&r), "{args}: {}", text(&r));
        assert!(text(&r).contains(says), "{args}: {}", text(&r));
    }

    // A good one is filed as pending, with what the host derived.
    let r = call(
        &session,
        "load_component",
        json!({"source": "inventory.wasm", "capabilities": ["workspace:read"]}),
    )
    .await
    .expect("answered");
    assert!(!is_error(&r), "{}", text(&r));
    assert!(text(&r).contains("PENDING"), "{}", text(&r));
    let filed = r.structured_content.expect("structured");
    assert_eq!(filed["status"], "pending", "{filed}");
    assert_eq!(filed["source"], "workspace: inventory.wasm", "{filed}");
    let tools: Vec<&str> = filed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"inventory_count_lines") && tools.contains(&"inventory_total"),
        "{filed}"
    );
    let id = filed["id"].as_str().expect("id").to_owned();

    // Nothing of it runs before a person decides.
    let listed = names(session.list_all_tools().await.expect("list"));
    assert!(
        !listed.iter().any(|n| n.starts_with("inventory_")),
        "{listed:?}"
    );
    assert!(
        call(
            &session,
            "inventory_count_lines",
            json!({"path": "notes.txt"})
        )
        .await
        .is_err(),
        "a pending tool is unknown"
    );

    // The page shows the interface derived from the component's bytes.
    let (base, cookie, page) = pending_page(&server);
    for shown in [
        "plain WIT component",
        "workspace: inventory.wasm",
        "<code>inventory_total</code>",
        "example:inventory/shelf@0.1.0#total: func(items: list&lt;record { name: string, count: u32, price: option&lt;f64&gt;, tags: list&lt;string&gt; }&gt;",
        "count-lines: func(path: string) -&gt; result&lt;u32, string&gt;",
        "wasi:filesystem/",
        "&quot;maximum&quot;: 4294967295",
        "workspace:read",
        "Declares it needs: workspace:write, env:INVENTORY_TOKEN",
    ] {
        assert!(
            page.contains(shown),
            "the page does not show {shown}:\n{page}"
        );
    }

    // A person approves it with the grant asked for.
    let origin = format!("http://{}", server.addr);
    let body = format!(
        "csrf={}&id={id}&seen={}&grant=workspace:read",
        field(&page, &format!("t-{id}"), "csrf"),
        field(&page, &format!("t-{id}"), "seen")
    );
    let (status, answer) = post_form(
        &server.addr,
        &format!("{base}/approve"),
        &cookie,
        &origin,
        &body,
    );
    assert_eq!(status, 303, "{answer}");
    tokio::time::timeout(Duration::from_secs(20), changed.notified())
        .await
        .expect("tools/list_changed after the approval");
    let count_lines = async || {
        call(
            &session,
            "inventory_count_lines",
            json!({"path": "notes.txt"}),
        )
        .await
        .expect("answered")
    };
    let listed = names(session.list_all_tools().await.expect("list"));
    assert!(
        listed.contains(&"inventory_count_lines".to_owned()),
        "{listed:?}"
    );
    let r = count_lines().await;
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(r.structured_content.expect("structured")["value"], 3);
    let r = call(&session, "inventory_greet", json!({"name": "Ada"}))
        .await
        .expect("answered");
    assert!(text(&r).contains("Ada"), "{}", text(&r));
    // The decision is on the record.
    let decisions = || -> Vec<String> {
        std::fs::read_to_string(home.path().join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["event"] == "decision" && v["tool_id"] == id.as_str())
            .map(|v| v["decision"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(decisions(), ["approve"]);

    // Asking to unload or narrow: refused for what an agent did not load,
    // and for what it was not granted; otherwise kept for a person, and
    // the tool works as it is meanwhile.
    for (args, says) in [
        (
            json!({"tool": "read_file"}),
            "a person configures the others",
        ),
        (
            json!({"tool": "inventory_greet", "revoke": ["network:example.com"]}),
            "is not granted",
        ),
    ] {
        let r = call(&session, "unload_component", args.clone())
            .await
            .expect("answered");
        assert!(
            is_error(&r) && text(&r).contains(says),
            "{args}: {}",
            text(&r)
        );
    }
    let asked =
        json!({"tool": "inventory_greet", "revoke": ["workspace:read"], "reason": "done reading"});
    let r = call(&session, "unload_component", asked)
        .await
        .expect("answered");
    assert!(!is_error(&r), "{}", text(&r));
    let r = count_lines().await;
    assert!(
        !is_error(&r),
        "still granted until a person decides: {}",
        text(&r)
    );
    let page = page_again(&server, &base, &cookie);
    for shown in [
        "Requests (1)",
        "take away workspace:read",
        "done reading",
        "Narrow the grant",
    ] {
        assert!(
            page.contains(shown),
            "the page does not show {shown}:\n{page}"
        );
    }
    let post = |path: &str, body: String| {
        post_form(
            &server.addr,
            &format!("{base}/{path}"),
            &cookie,
            &origin,
            &body,
        )
    };
    let (csrf, seen) = (
        field(&page, &format!("r-{id}"), "csrf"),
        field(&page, &format!("r-{id}"), "seen"),
    );
    let (status, answer) = post("approve", format!("csrf={csrf}&id={id}&seen={seen}&grant="));
    assert_eq!(status, 303, "{answer}");
    let r = count_lines().await;
    assert!(is_error(&r), "the workspace was taken away: {}", text(&r));

    // Asked to unload: declined, it stays; asked again and done, it goes.
    for decide in ["decline", "reject"] {
        let r = call(&session, "unload_component", json!({"tool": "inventory"}))
            .await
            .expect("answered");
        assert!(!is_error(&r), "{}", text(&r));
        let (status, answer) = post(decide, format!("csrf={csrf}&id={id}"));
        assert_eq!(status, 303, "{answer}");
        let listed = names(session.list_all_tools().await.expect("list"));
        assert_eq!(
            listed.contains(&"inventory_greet".to_owned()),
            decide == "decline",
            "after {decide}: {listed:?}"
        );
    }
    assert_eq!(decisions(), ["approve", "approve", "decline", "revoke"]);
    session.cancel().await.expect("close");
}

/// The page a headless Chromium renders after opening the sign-in link
/// `login` (as a person clicking it would): its DOM.
pub(crate) fn rendered_in_chromium(login: &str) -> String {
    let chromium =
        std::env::var("TOOLHOST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let profile = workspace();
    let out = std::process::Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.path().display()),
            "--dump-dom",
            login,
        ])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {chromium} ({e}): apt-get install chromium, or set TOOLHOST_CHROMIUM"
            )
        });
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs docker-registry, htpasswd and Chromium (apt-get install docker-registry apache2-utils chromium); .ci/run runs it"]
async fn a_registry_component_is_shown_with_its_digest_and_signature_before_approval() {
    use crate::oci_registry::{PASSWORD, Registry, USER, base64_of, key_pair, ok, run};
    let registry = Registry::start();
    let ws = workspace();
    let home = workspace();
    let docker = workspace();
    let user = workspace();
    let auth = base64_of(&format!("{USER}:{PASSWORD}"));
    std::fs::write(
        docker.path().join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
            registry.addr
        ),
    )
    .expect("docker config");
    let signed = format!("oci://{}/tools/inventory:1.0", registry.addr);
    let unsigned = format!("oci://{}/tools/echo:1.0", registry.addr);
    let inventory = fixtures_dir().join("plain/fixture_plain.wasm");
    let echo = fixtures_dir().join("fixture_echo.wasm");
    for (wasm, source) in [(&inventory, &signed), (&echo, &unsigned)] {
        ok(&run(
            user.path(),
            docker.path(),
            &["plugin", "push", wasm.to_str().unwrap(), source],
            "",
        ));
    }
    let (private, public) = key_pair(home.path(), "publisher", 7);
    ok(&run(
        user.path(),
        docker.path(),
        &["plugin", "pull", &signed],
        "",
    ));
    ok(&run(
        user.path(),
        docker.path(),
        &[
            "plugin",
            "sign",
            &signed,
            "--key",
            private.to_str().unwrap(),
        ],
        "",
    ));
    // The person's cache, lock and Docker config, as `run` sets them.
    let (cache, config) = (user.path().join(".cache"), user.path().join(".config"));
    let env = [
        ("DOCKER_CONFIG", docker.path()),
        ("XDG_CACHE_HOME", cache.as_path()),
        ("XDG_CONFIG_HOME", config.as_path()),
    ];
    let keys = format!(
        "[signatures]\nkeys = [{:?}]\n",
        public.display().to_string()
    );

    // Signatures not required: both are filed, each with what its
    // signatures say.
    let server = serve(ws.path(), home.path(), &keys, &env);
    let transport = crate::support::http_transport(format!("http://{}/mcp", server.addr));
    let session = Client::default()
        .serve(transport)
        .await
        .expect("initialize");
    let mut filed = Vec::new();
    for source in [&signed, &unsigned] {
        let r = call(&session, "load_component", json!({"source": source}))
            .await
            .expect("answered");
        assert!(!is_error(&r), "{source}: {}", text(&r));
        filed.push(r.structured_content.expect("structured"));
    }
    let by_digest = filed[0]["source"].as_str().expect("source").to_owned();
    assert!(
        by_digest.starts_with(&format!("oci://{}/tools/inventory@sha256:", registry.addr)),
        "{by_digest}"
    );
    let digest = by_digest.split('@').nth(1).expect("digest").to_owned();
    assert_eq!(
        filed[0]["signature"],
        format!("signed by {}", public.display()),
        "{}",
        filed[0]
    );
    assert!(
        filed[1]["signature"]
            .as_str()
            .is_some_and(|s| s.contains("has no signature")),
        "{}",
        filed[1]
    );
    // Loading asked for nothing to be pinned: the lock is the person's.
    let lock = std::fs::read_to_string(config.join("toolhost/toolhost.lock")).expect("lock");
    assert!(!lock.contains("tools/echo"), "{lock}");

    // A person opening the page in a browser sees where each came from,
    // its digest and its signature, checked now; nothing is listed yet.
    let login = format!("http://{}/{}", server.addr, login_of(&server));
    let dom = rendered_in_chromium(&login);
    for shown in [
        by_digest.as_str(),
        &format!("signed by {}", public.display()),
        "not verified: it has no signature",
        "inventory_total",
        "WIT interface",
        "toolhost plugin",
    ] {
        assert!(
            dom.contains(shown),
            "the page does not show {shown}:\n{dom}"
        );
    }
    let listed = names(session.list_all_tools().await.expect("list"));
    assert!(
        !listed
            .iter()
            .any(|n| n.starts_with("inventory_") || n == "echo"),
        "{listed:?}"
    );
    session.cancel().await.expect("close");
    drop(server);

    // Signatures required: the unsigned one is refused before anyone is
    // asked, naming its digest and the key tried.
    let required = format!("{keys}require = true\n");
    let server = serve(ws.path(), home.path(), &required, &env);
    let transport = crate::support::http_transport(format!("http://{}/mcp", server.addr));
    let session = Client::default()
        .serve(transport)
        .await
        .expect("initialize");
    let r = call(&session, "load_component", json!({"source": unsigned}))
        .await
        .expect("answered");
    assert!(is_error(&r), "{}", text(&r));
    let said = text(&r);
    assert!(
        said.contains("has no signature") && said.contains(public.to_str().unwrap()),
        "{said}"
    );
    let r = call(
        &session,
        "load_component",
        json!({"source": signed, "name": "shelf"}),
    )
    .await
    .expect("answered");
    assert!(!is_error(&r), "{}", text(&r));
    assert!(text(&r).contains(&digest), "{}", text(&r));
    session.cancel().await.expect("close");
}
