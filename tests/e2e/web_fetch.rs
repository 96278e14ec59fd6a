//! web_fetch against an HTTP server on 127.0.0.1 that the test starts: the
//! conversions, the cut, the markers, the cache, and every refusal of the
//! host's network policy (hosts, private addresses, redirects).

use crate::support::{FakeHttp, HttpReply, call, executor, workspace};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolhost::grant::{Access, DirGrant};
use toolhost::{ErrorKind, Executor, Grant};

const PAGE: &str = "<html><head><title>T</title></head><body><h1>Welcome</h1>\
    <p>Some <b>bold</b> words and a <a href=\"/next\">link</a>.</p></body></html>";

/// A tiny HTTP/1.1 server; returns its port and how many requests it served.
fn serve() -> (u16, Arc<AtomicUsize>) {
    let served = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&served);
    let server = FakeHttp::start(move |request| {
        count.fetch_add(1, Ordering::SeqCst);
        let (status, location, body) = match request.path.as_str() {
            "/page" => (200, None, PAGE.to_owned()),
            "/big" => (200, None, format!("<p>{}</p>", "word ".repeat(2000))),
            "/to-page" => (302, Some("/page"), String::new()),
            "/loop" => (302, Some("/loop"), String::new()),
            "/to-metadata" => (
                302,
                Some("http://169.254.169.254/latest/meta-data/"),
                String::new(),
            ),
            _ => (404, None, "missing".to_owned()),
        };
        let mut headers = vec![(
            "Content-Type".to_owned(),
            "text/html; charset=utf-8".to_owned(),
        )];
        headers.extend(location.map(|l| ("Location".to_owned(), l.to_owned())));
        HttpReply {
            status,
            headers,
            body: body.into(),
            ..HttpReply::default()
        }
    });
    (server.port, served)
}

/// web_fetch granted `hosts` and a cache directory.
fn granted(hosts: &[&str], cache: &std::path::Path) -> Executor {
    let grant = Grant {
        network: hosts.iter().map(|h| (*h).to_owned()).collect(),
        directories: vec![DirGrant {
            name: "web_cache".into(),
            host_path: cache.to_owned(),
            access: Access::Write,
        }],
        ..Grant::none()
    };
    executor(workspace().path()).with_grant("web_fetch", grant)
}

fn fetch(ex: &Executor, args: serde_json::Value) -> toolhost::ToolResult {
    call(ex, "web_fetch", &args.to_string())
}

#[test]
fn html_becomes_markdown_or_text_inside_untrusted_markers() {
    let (port, _) = serve();
    let cache = workspace();
    let ex = granted(&["127.0.0.1"], cache.path());
    let url = format!("http://127.0.0.1:{port}/page");
    let r = fetch(&ex, json!({"url": url}));
    assert!(r.success, "{}", r.content);
    assert!(
        r.content.starts_with("<<<EXTERNAL_UNTRUSTED_CONTENT>>>\n"),
        "{}",
        r.content
    );
    assert!(
        r.content
            .trim_end()
            .ends_with("<<<END_EXTERNAL_UNTRUSTED_CONTENT>>>")
    );
    assert!(
        r.content.contains(&format!("Source: {url}")),
        "{}",
        r.content
    );
    assert!(
        r.content.contains("Content-Type: text/html"),
        "{}",
        r.content
    );
    assert!(
        r.content.contains("# Welcome") && r.content.contains("**bold**"),
        "{}",
        r.content
    );
    let r = fetch(&ex, json!({"url": url, "format": "text"}));
    assert!(r.content.contains("Some bold words"), "{}", r.content);
    assert!(!r.content.contains("<p>"));
    // A redirect inside the grant is followed.
    let r = fetch(
        &ex,
        json!({"url": format!("http://127.0.0.1:{port}/to-page"), "format": "html"}),
    );
    assert!(
        r.success && r.content.contains("<h1>Welcome</h1>"),
        "{}",
        r.content
    );
}

#[test]
fn max_length_cuts_with_a_note() {
    let (port, _) = serve();
    let cache = workspace();
    let ex = granted(&["127.0.0.1"], cache.path());
    let r = fetch(
        &ex,
        json!({"url": format!("http://127.0.0.1:{port}/big"), "max_length": 200}),
    );
    assert!(r.success, "{}", r.content);
    assert!(r.content.contains("[cut at 200 of"), "{}", r.content);
    assert_eq!(r.structured.expect("structured")["truncated"], true);
}

#[test]
fn a_second_fetch_comes_from_the_cache() {
    let (port, served) = serve();
    let cache = workspace();
    let ex = granted(&["127.0.0.1"], cache.path());
    let url = format!("http://127.0.0.1:{port}/page");
    assert!(fetch(&ex, json!({"url": url})).success);
    let r = fetch(&ex, json!({"url": url, "format": "text"}));
    assert!(r.success, "{}", r.content);
    assert_eq!(r.structured.expect("structured")["cached"], true);
    assert_eq!(
        served.load(Ordering::SeqCst),
        1,
        "the server saw one request"
    );
}

#[test]
fn a_redirect_to_a_private_address_is_refused() {
    let (port, _) = serve();
    let cache = workspace();
    let ex = granted(&["127.0.0.1", "*"], cache.path());
    let r = fetch(
        &ex,
        json!({"url": format!("http://127.0.0.1:{port}/to-metadata")}),
    );
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied), "{}", r.content);
    assert!(
        r.content.contains("169.254.169.254") && r.content.contains("private"),
        "{}",
        r.content
    );
}

#[test]
fn a_host_not_on_the_allowlist_is_refused() {
    let (port, served) = serve();
    let cache = workspace();
    let ex = granted(&["example.com"], cache.path());
    let r = fetch(&ex, json!({"url": format!("http://127.0.0.1:{port}/page")}));
    assert_eq!(r.error_kind(), Some(ErrorKind::Denied), "{}", r.content);
    assert!(r.content.contains("not among the hosts"), "{}", r.content);
    assert_eq!(
        served.load(Ordering::SeqCst),
        0,
        "nothing reached the server"
    );
}

#[test]
fn a_name_resolving_to_loopback_is_refused_unless_the_address_is_granted() {
    let (port, served) = serve();
    // The built-in's default grant: any public host.
    let ex = executor(workspace().path());
    for host in ["localhost", "127.0.0.1"] {
        let r = fetch(&ex, json!({"url": format!("http://{host}:{port}/page")}));
        assert_eq!(
            r.error_kind(),
            Some(ErrorKind::Denied),
            "{host}: {}",
            r.content
        );
        assert!(
            r.content.contains("private, local or metadata"),
            "{}",
            r.content
        );
    }
    assert_eq!(served.load(Ordering::SeqCst), 0);
    let r = fetch(&ex, json!({"url": "file:///etc/passwd"}));
    assert_eq!(r.error_kind(), Some(ErrorKind::InvalidInput));
}

#[test]
fn redirects_stop_after_five() {
    let (port, served) = serve();
    let cache = workspace();
    let ex = granted(&["127.0.0.1"], cache.path());
    let r = fetch(&ex, json!({"url": format!("http://127.0.0.1:{port}/loop")}));
    assert_eq!(r.error_kind(), Some(ErrorKind::Failed), "{}", r.content);
    assert!(r.content.contains("more than 5 redirects"), "{}", r.content);
    assert_eq!(
        served.load(Ordering::SeqCst),
        6,
        "the first request and 5 redirects"
    );
}
