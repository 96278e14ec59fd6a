//! The embedder's services (`toolhost::services`): an application offers
//! `greet`, `slow` and `broken`; the fixture tool `call_service` calls them
//! through the WIT `services` import. Only granted services answer, inputs
//! are checked against their schemas, errors come back as tool errors, and
//! the call's deadline and cancellation stop a handler that runs on.

use crate::support::{fixtures_dir, runtime};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::grant::Grant;
use toolhost::services::{Service, ServiceCall, ServiceError, Services};
use toolhost::{
    CallContext, CallOptions, CancelToken, ErrorKind, Executor, Mode, Plugin, PluginSource,
    Registry,
};

fn services() -> Services {
    let mut services = Services::new();
    services
        .register(
            Service::new(
                "greet",
                "Greet someone, saying who asked.",
                json!({"type": "object", "properties": {"name": {"type": "string"}},
                       "required": ["name"], "additionalProperties": false}),
                |call: ServiceCall| async move {
                    let name = call.input["name"].as_str().unwrap_or_default().to_owned();
                    Ok(json!({
                        "greeting": format!("hello, {name}"),
                        "agent": call.context.agent,
                        "session": call.context.session,
                        "tool": call.tool,
                    }))
                },
            )
            .unwrap(),
        )
        .unwrap();
    services
        .register(
            Service::new(
                "slow",
                "Take a minute.",
                json!({"type": "object"}),
                |_: ServiceCall| async move {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Ok(json!("finally"))
                },
            )
            .unwrap(),
        )
        .unwrap();
    services
        .register(
            Service::new(
                "broken",
                "Always fails.",
                json!({"type": "object"}),
                |_: ServiceCall| async move {
                    Err(ServiceError::Failed("the chat server is down".to_owned()))
                },
            )
            .unwrap(),
        )
        .unwrap();
    services
        .register(
            Service::new(
                "panics",
                "A handler with a bug.",
                json!({"type": "object"}),
                |_: ServiceCall| async move {
                    let empty: Vec<u8> = Vec::new();
                    Ok(json!(empty[3]))
                },
            )
            .unwrap(),
        )
        .unwrap();
    services
        .register(
            Service::new(
                "io",
                "Uses tokio's I/O driver.",
                json!({"type": "object"}),
                |_: ServiceCall| async move {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                        .await
                        .map_err(|e| ServiceError::Failed(e.to_string()))?;
                    Ok(json!({"listening": listener.local_addr().is_ok()}))
                },
            )
            .unwrap(),
        )
        .unwrap();
    services
}

/// A registry holding the fixture `call_service`.
fn fixture(runtime: &toolhost::Runtime) -> Registry {
    let mut registry = Registry::new();
    let wasm = fixtures_dir().join("fixture_services.wasm");
    registry
        .register(
            Plugin::load(runtime, PluginSource::File(wasm)).unwrap(),
            false,
        )
        .unwrap();
    registry
}

/// An executor holding the fixture, offering the services, granting it `grant`.
fn executor(grant: &str) -> Executor {
    let runtime = runtime();
    let registry = fixture(&runtime);
    Executor::new(runtime, registry)
        .with_mode(Mode::Yolo)
        .with_services(services())
        .with_grant("call_service", Grant::parse_caps(grant).unwrap())
}

fn options() -> CallOptions {
    CallOptions {
        context: CallContext {
            agent: Some("bot-7".to_owned()),
            session: Some("chat-1".to_owned()),
            ..CallContext::new()
        },
        ..CallOptions::default()
    }
}

#[test]
fn a_granted_service_answers_with_the_calls_context() {
    let executor = executor("service:greet");
    let r = executor.call(
        "call_service",
        r#"{"service":"greet","input":{"name":"Ada"}}"#,
        &options(),
    );
    assert!(r.success, "{r:?}");
    let answer: serde_json::Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(answer["greeting"], "hello, Ada");
    assert_eq!(answer["agent"], "bot-7");
    assert_eq!(answer["session"], "chat-1");
    assert_eq!(answer["tool"], "call_service");
    // It sees only what it was granted.
    let r = executor.call(
        "call_service",
        r#"{"service":"offered","input":{}}"#,
        &options(),
    );
    assert_eq!(r.content, "greet");
}

#[test]
fn ungranted_unknown_and_misused_services_are_refused_with_what_to_do() {
    let executor = executor("service:greet");
    let r = executor.call(
        "call_service",
        r#"{"service":"broken","input":{}}"#,
        &options(),
    );
    let err = r.error.unwrap();
    assert_eq!(err.kind, ErrorKind::Denied);
    assert!(err.message.contains("service:broken"), "{}", err.message);

    let executor = self::executor("service:greet,service:broken,service:absent");
    let r = executor.call(
        "call_service",
        r#"{"service":"absent","input":{}}"#,
        &options(),
    );
    assert_eq!(r.error.unwrap().kind, ErrorKind::Retry, "{}", r.content);
    let r = executor.call(
        "call_service",
        r#"{"service":"greet","input":{"nom":"Ada"}}"#,
        &options(),
    );
    let err = r.error.unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(
        err.message.contains("does not match its schema"),
        "{}",
        err.message
    );
    let r = executor.call(
        "call_service",
        r#"{"service":"broken","input":{}}"#,
        &options(),
    );
    let err = r.error.unwrap();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(
        err.message.contains("the chat server is down"),
        "{}",
        err.message
    );
    // With no services offered at all, the same call is not found.
    let runtime = runtime();
    let registry = fixture(&runtime);
    let bare = Executor::new(runtime, registry)
        .with_mode(Mode::Yolo)
        .with_grant("call_service", Grant::parse_caps("service:greet").unwrap());
    let r = bare.call(
        "call_service",
        r#"{"service":"greet","input":{"name":"x"}}"#,
        &options(),
    );
    assert_eq!(r.error.unwrap().kind, ErrorKind::Retry);
}

#[test]
fn the_calls_deadline_and_cancellation_stop_a_service_that_runs_on() {
    let executor = Arc::new(executor("service:slow"));
    let started = Instant::now();
    let r = executor.call(
        "call_service",
        r#"{"service":"slow","input":{}}"#,
        &CallOptions {
            timeout: Some(Duration::from_secs(1)),
            ..options()
        },
    );
    assert_eq!(r.error.as_ref().unwrap().kind, ErrorKind::Timeout, "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    let cancel = CancelToken::new();
    let stopper = cancel.clone();
    let stop = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        stopper.cancel();
    });
    let started = Instant::now();
    let r = executor.call(
        "call_service",
        r#"{"service":"slow","input":{}}"#,
        &CallOptions {
            cancel: Some(cancel),
            ..options()
        },
    );
    stop.join().unwrap();
    assert_eq!(
        r.error.as_ref().unwrap().kind,
        ErrorKind::Cancelled,
        "{r:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // One stopped call does not harm the next.
    let executor = self::executor("service:greet");
    let r = executor.call(
        "call_service",
        r#"{"service":"greet","input":{"name":"B"}}"#,
        &options(),
    );
    assert!(r.success, "{r:?}");
}

#[test]
fn handlers_run_on_a_full_runtime_and_a_panic_or_a_dry_run_harms_nothing() {
    let executor = executor("service:io,service:panics,service:greet");
    let r = executor.call("call_service", r#"{"service":"io","input":{}}"#, &options());
    assert!(r.success, "{r:?}");
    assert!(r.content.contains("\"listening\":true"), "{}", r.content);
    let r = executor.call(
        "call_service",
        r#"{"service":"panics","input":{}}"#,
        &options(),
    );
    let err = r.error.unwrap();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(
        err.message.contains("its handler panicked"),
        "{}",
        err.message
    );
    // A dry run sends nothing.
    let mut dry = options();
    dry.context.dry_run = true;
    let r = executor.call(
        "call_service",
        r#"{"service":"greet","input":{"name":"x"}}"#,
        &dry,
    );
    // A tool granted no commands is not run in a dry run at all; one
    // granted commands is run, and the import refuses with what it would
    // have sent.
    assert!(r.content.contains("nothing was run"), "{r:?}");
    let run_in_dry = self::executor("service:greet,commands");
    let r = run_in_dry.call(
        "call_service",
        r#"{"service":"greet","input":{"name":"x"}}"#,
        &dry,
    );
    let err = r.error.unwrap();
    assert_eq!(err.kind, ErrorKind::Denied);
    assert!(
        err.message
            .contains("dry run: service `greet` would be called"),
        "{}",
        err.message
    );
    let r = executor.call(
        "call_service",
        r#"{"service":"greet","input":{"name":"y"}}"#,
        &options(),
    );
    assert!(r.success, "{r:?}");
}

#[test]
fn services_are_named_and_registered_once() {
    let mut services = Services::new();
    let make = || {
        Service::new(
            "echo",
            "Echo.",
            json!({"type": "object"}),
            |c: ServiceCall| async move { Ok(c.input) },
        )
        .unwrap()
    };
    services.register(make()).unwrap();
    assert!(
        services
            .register(make())
            .unwrap_err()
            .contains("already offered")
    );
    let bad = Service::new(
        "x",
        "Bad schema.",
        json!({"type": 5}),
        |c: ServiceCall| async move { Ok(c.input) },
    );
    assert!(bad.unwrap_err().contains("input schema is not valid"));
}

/// A service that says it takes long (`Service::with_timeout`, as `spawn`
/// and `delegate_to_bot` do: a model loop) gives every tool granted it that
/// deadline when the caller sets none, on every surface (the agent loop,
/// MCP and the CLI set none); a tool not granted it keeps the runtime's.
#[test]
fn a_service_that_takes_long_gives_its_callers_its_deadline() {
    use toolhost::runtime::{CacheDir, Limits, Runtime, RuntimeConfig};
    let runtime = Arc::new(
        Runtime::new(RuntimeConfig {
            cache: CacheDir::At(crate::support::cache_dir()),
            cache_key: crate::support::cache_key(),
            limits: Limits {
                timeout: Duration::from_millis(700),
                ..Limits::default()
            },
            ..RuntimeConfig::default()
        })
        .unwrap(),
    );
    let patient = |name: &str| {
        Service::new(
            name,
            "Take a second and a half.",
            json!({"type": "object"}),
            |_: ServiceCall| async move {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                Ok(json!("done"))
            },
        )
        .unwrap()
    };
    let mut services = Services::new();
    services
        .register(patient("slow").with_timeout(Duration::from_secs(20)))
        .unwrap();
    services.register(patient("greet")).unwrap();
    let executor = |grant: &str| {
        Executor::new(runtime.clone(), fixture(&runtime))
            .with_mode(Mode::Yolo)
            .with_services(services.clone())
            .with_grant("call_service", Grant::parse_caps(grant).unwrap())
    };
    let both = executor("service:slow,service:greet");
    let r = both.call(
        "call_service",
        r#"{"service":"slow","input":{}}"#,
        &options(),
    );
    assert!(r.success, "{r:?}");
    assert_eq!(r.content, "\"done\"");
    // The caller's own deadline still wins.
    let r = both.call(
        "call_service",
        r#"{"service":"slow","input":{}}"#,
        &CallOptions {
            timeout: Some(Duration::from_millis(500)),
            ..options()
        },
    );
    assert_eq!(r.error.as_ref().unwrap().kind, ErrorKind::Timeout, "{r:?}");
    // The grant decides, not the service called (a guest's deadline is set
    // before it runs): a tool granted only services that ask for nothing
    // keeps the runtime's 0.7 s.
    let r = executor("service:greet").call(
        "call_service",
        r#"{"service":"greet","input":{}}"#,
        &options(),
    );
    assert_eq!(r.error.as_ref().unwrap().kind, ErrorKind::Timeout, "{r:?}");
}
