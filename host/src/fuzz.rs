//! What the fuzz targets (fuzz/fuzz_targets/) run, and the regression
//! tests run on their corpus (host/tests/fuzz_corpus.rs): each function
//! takes the fuzzer's bytes, drives one of the host's input paths with
//! them, and panics only when a property the code promises does not hold.
//! Not an API: hidden from the documentation, and may change any time.

use crate::broker::policy::Policy;
use crate::validate::ArgsSchema;
use serde_json::Value;

/// Argument validation (pipeline step 2). The input is a JSON Schema and
/// the arguments separated by a NUL byte, or arguments alone, checked
/// against a schema shaped like the built-ins'. The check must never
/// panic, must agree with the schema (removing `null`s of fields that
/// are not required, as it promises), and must explain every refusal.
pub fn validate(data: &[u8]) -> Option<()> {
    let (schema, args) = match data.iter().position(|b| *b == 0) {
        Some(at) => (
            serde_json::from_slice::<Value>(&data[..at]).ok()?,
            &data[at + 1..],
        ),
        None => (builtin_like_schema(), data),
    };
    let args: Value = serde_json::from_slice(args).ok()?;
    let compiled = ArgsSchema::compile(&schema).ok()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut seen = args.clone();
    if let Some(members) = seen.as_object_mut() {
        members.retain(|name, v| !v.is_null() || required.contains(&name.as_str()));
    }
    let valid = jsonschema::validator_for(&schema).ok()?.is_valid(&seen);
    match compiled.check("fuzzed", &args) {
        Ok(()) => assert!(valid, "accepted arguments the schema refuses: {seen}"),
        Err(e) => {
            assert!(!valid, "refused arguments the schema accepts: {seen}");
            assert!(
                e.message.starts_with("invalid arguments for `fuzzed`: ") && e.message.len() > 34,
                "a refusal that says nothing: {}",
                e.message
            );
            assert!(e.hint.is_some(), "a refusal without a hint");
        }
    }
    Some(())
}

/// A schema with what the built-ins' schemas use: required strings,
/// integers with bounds, enums, arrays of objects, nullable fields.
fn builtin_like_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["path", "edits"],
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "offset": {"type": ["integer", "null"], "minimum": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
            "mode": {"enum": ["replace", "append"]},
            "dry": {"type": "boolean"},
            "edits": {"type": "array", "maxItems": 8, "items": {
                "type": "object",
                "required": ["old_text", "new_text"],
                "additionalProperties": false,
                "properties": {
                    "old_text": {"type": "string"},
                    "new_text": {"type": "string"},
                    "replace_all": {"type": "boolean"}
                }
            }}
        }
    })
}

/// The shell parser and the command policy: any text is assessed (or
/// refused with a reason) without panicking, the same way every time; a
/// line that runs `rm -rf /` is refused whatever comes before it on its
/// own line, and an argument vector too.
pub fn shell(data: &[u8]) -> Option<()> {
    let line = std::str::from_utf8(data).ok()?;
    let policy = Policy::default();
    let first = policy.assess_line(line);
    let again = policy.assess_line(line);
    assert_eq!(
        format!("{first:?}"),
        format!("{again:?}"),
        "two assessments of one line differ"
    );
    if let Err(refusal) = &first {
        assert!(!refusal.0.trim().is_empty(), "a refusal without a reason");
    }
    // A separate line after a complete one (no open quote, here-document
    // or continuation: the first line parses alone) is a command of its own.
    if first.is_ok() && !line.ends_with('\\') && !line.contains("<<") {
        let with = format!("{line}\nrm -rf /");
        assert!(
            policy.assess_line(&with).is_err(),
            "`rm -rf /` after {line:?} was not refused"
        );
    }
    let argv: Vec<String> = line.split('\0').map(str::to_owned).collect();
    let _ = policy.assess_argv(&argv);
    Some(())
}

/// The argv template of a dynamic `command` tool: the input is a template
/// (one item a line) and the arguments (JSON) after a NUL byte. A template
/// that passes `check_template` fills to exactly one argv item per
/// template item, each placeholder exactly its value, and no value can
/// pass as an option before a literal `--`.
pub fn template(data: &[u8]) -> Option<()> {
    use toolhost_shared::dynamic::{check_template, fill_template, placeholder};
    let at = data.iter().position(|b| *b == 0)?;
    let template: Vec<String> = std::str::from_utf8(&data[..at])
        .ok()?
        .lines()
        .map(str::to_owned)
        .collect();
    let args: Value = serde_json::from_slice(&data[at + 1..]).ok()?;
    let args = args.as_object()?;
    let names: Vec<&str> = template.iter().filter_map(|i| placeholder(i)).collect();
    let parameters = serde_json::json!({
        "type": "object",
        "required": names,
        "properties": names.iter().map(|n| (n.to_string(), serde_json::json!({"type": "string"}))).collect::<serde_json::Map<_, _>>(),
    });
    let _ = toolhost_shared::dynamic::template_warnings(&template);
    check_template(&template, &parameters).ok()?;
    let Ok(argv) = fill_template(&template, args) else {
        return Some(());
    };
    assert_eq!(argv.len(), template.len(), "an item was added or dropped");
    let mut options_ended = false;
    for (item, filled) in template.iter().zip(&argv) {
        match placeholder(item) {
            None => {
                assert_eq!(item, filled, "a literal item changed");
                options_ended |= item == "--";
            }
            Some(name) => {
                let expected = match &args[name] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                assert_eq!(&expected, filled, "`{name}` is not its value");
                assert!(
                    options_ended || !filled.starts_with(['-', '@']),
                    "`{filled}` passes as an option"
                );
            }
        }
    }
    Some(())
}

/// MCP over stdio: the bytes as standard input (the first byte picks the
/// negotiated version: batches or not). Every line written back must be
/// one JSON-RPC message or a batch of them, and every batch whose
/// requests were answered must be sent.
#[cfg(feature = "mcp")]
pub fn mcp_stdio(data: &[u8]) -> Option<()> {
    use rmcp::model::ProtocolVersion;
    let (&first, input) = data.split_first()?;
    let version = if first & 1 == 0 {
        ProtocolVersion::V_2025_03_26
    } else {
        ProtocolVersion::V_2025_06_18
    };
    let written = tokio_runtime().block_on(crate::mcp::stdio::replay(input.to_vec(), version));
    for line in written.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let value: Value = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!(
                "a line written is not JSON ({e}): {}",
                String::from_utf8_lossy(line)
            )
        });
        let messages = match &value {
            Value::Array(items) => items.iter().collect(),
            one => vec![one],
        };
        for message in messages {
            assert_eq!(
                message["jsonrpc"], "2.0",
                "not a JSON-RPC message: {message}"
            );
        }
    }
    Some(())
}

/// MCP over streamable HTTP: the bytes as the body of a POST to `/mcp`
/// of the routes `toolhost serve --http` serves (an executor with no
/// tools), in the session opened once, or in none (the first byte picks;
/// also the protocol version header and the content type). Every request
/// gets an answer, never a 5xx other than a full server's 503.
#[cfg(feature = "mcp")]
pub fn mcp_http(data: &[u8]) -> Option<()> {
    let (&first, body) = data.split_first()?;
    let server = http_server();
    let request = post(
        body.to_vec(),
        (first & 1 == 0).then_some(server.session.as_str()),
        if first & 2 == 0 {
            "2025-03-26"
        } else {
            "2025-06-18"
        },
        if first & 4 == 0 {
            "application/json"
        } else {
            "text/plain"
        },
    );
    let (status, _) = server.send(request);
    assert!(
        !status.is_server_error() || status == http::StatusCode::SERVICE_UNAVAILABLE,
        "answered {status}"
    );
    Some(())
}

/// The runtime the MCP targets run on (one per process).
#[cfg(feature = "mcp")]
fn tokio_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// The HTTP routes with a session opened in them.
#[cfg(feature = "mcp")]
struct HttpServer {
    app: axum::Router,
    session: String,
}

#[cfg(feature = "mcp")]
impl HttpServer {
    /// Send `request`: its status and headers, once its body has ended
    /// (which must be within 10 s).
    fn send(
        &self,
        request: http::Request<axum::body::Body>,
    ) -> (http::StatusCode, http::HeaderMap) {
        use tower::ServiceExt as _;
        let app = self.app.clone();
        tokio_runtime().block_on(async move {
            let response = app.oneshot(request).await.unwrap_or_else(|e| match e {});
            let (parts, body) = response.into_parts();
            let status = parts.status;
            tokio::time::timeout(
                std::time::Duration::from_secs(10),
                axum::body::to_bytes(body, usize::MAX),
            )
            .await
            .unwrap_or_else(|_| panic!("a {status} answer whose body never ended"))
            .ok();
            (status, parts.headers)
        })
    }
}

/// A POST to `/mcp` as a client on this machine sends it.
#[cfg(feature = "mcp")]
fn post(
    body: Vec<u8>,
    session: Option<&str>,
    version: &str,
    content_type: &str,
) -> http::Request<axum::body::Body> {
    let mut request = http::Request::post("/mcp")
        .header("host", "127.0.0.1:8765")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", content_type)
        .header("mcp-protocol-version", version);
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    request
        .body(axum::body::Body::from(body))
        .expect("a request of valid parts")
}

#[cfg(feature = "mcp")]
fn http_server() -> &'static HttpServer {
    static SERVER: std::sync::OnceLock<HttpServer> = std::sync::OnceLock::new();
    SERVER.get_or_init(|| {
        use crate::mcp::http::HttpOptions;
        use std::sync::Arc;
        let runtime = Arc::new(
            crate::runtime::Runtime::new(crate::runtime::RuntimeConfig::default())
                .expect("a wasmtime runtime"),
        );
        // No tools, so no workspace either: what is fuzzed is the way in.
        let executor = Arc::new(crate::executor::Executor::new(
            runtime,
            crate::registry::Registry::new(),
        ));
        let http = HttpOptions {
            addr: "127.0.0.1:8765".parse().expect("an address"),
            auth: crate::access::Auth::Open,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            sessions: crate::mcp::sessions::SessionLimits::default(),
            review: crate::review::SignInLinks::quiet(),
            drain: std::time::Duration::ZERO,
            drain_notice: std::time::Duration::ZERO,
        };
        let (app, _, _, _) = tokio_runtime().block_on(async {
            crate::mcp::http::app(executor, &crate::mcp::ServeOptions::default(), &http)
        });
        let mut server = HttpServer {
            app,
            session: String::new(),
        };
        let initialize = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "fuzz", "version": "1"}}});
        let json = |v: Value| v.to_string().into_bytes();
        let (status, headers) = server.send(post(
            json(initialize),
            None,
            "2025-03-26",
            "application/json",
        ));
        assert!(status.is_success(), "initialize answered {status}");
        server.session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id for initialize")
            .to_owned();
        let initialized =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _) = server.send(post(
            json(initialized),
            Some(&server.session),
            "2025-03-26",
            "application/json",
        ));
        assert!(status.is_success(), "initialized answered {status}");
        server
    })
}

#[cfg(test)]
#[path = "../../fuzz/replay.rs"]
mod replay;

#[cfg(test)]
mod tests {
    use super::replay::replay;
    use std::path::Path;

    /// A target's corpus and crashes through its property.
    fn corpus(target: &str, check: fn(&[u8]) -> Option<()>) {
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        replay(&fuzz, target, |data| {
            check(data);
        });
    }

    #[test]
    fn validation_corpus() {
        corpus("validate", super::validate);
    }

    #[test]
    fn shell_corpus() {
        corpus("shell", super::shell);
    }

    #[test]
    fn template_corpus() {
        corpus("template", super::template);
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn mcp_stdio_corpus() {
        corpus("mcp_stdio", super::mcp_stdio);
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn mcp_http_corpus() {
        corpus("mcp_http", super::mcp_http);
    }

    /// The fuzzed requests reach the MCP service in a live session: a
    /// listing in it is answered, one outside it refused. (Its id is
    /// unlike the corpus's: rmcp never ends the stream of a request whose
    /// id another request in flight in the session also has.)
    #[cfg(feature = "mcp")]
    #[test]
    fn the_http_target_reaches_a_live_session() {
        let server = super::http_server();
        let list = br#"{"jsonrpc":"2.0","id":"reach","method":"tools/list"}"#.to_vec();
        let json = "application/json";
        let (status, _) = server.send(super::post(
            list.clone(),
            Some(&server.session),
            "2025-03-26",
            json,
        ));
        assert_eq!(status, http::StatusCode::OK);
        let (status, _) = server.send(super::post(
            list,
            Some("no-such-session"),
            "2025-03-26",
            json,
        ));
        assert!(status.is_client_error(), "{status}");
    }
}
