//! Instances made ahead (host/src/runtime/sandbox/spare.rs): on a thread
//! that runs work after its replies, as the MCP server's call threads do,
//! a tool called twice running gets its next instance made after the
//! reply. A call that starts on one is as fresh as any other, and runs in
//! its own sandbox, not the empty one the instance was made in.

use crate::support::{cache_dir, cache_key, fixtures_dir, workspace, write};
use std::sync::Arc;
use std::time::Duration;
use toolhost::grant::Access;
use toolhost::sandbox::{after_reply, runs_work_after_replies};
use toolhost::{
    CacheDir, CallContext, CallOptions, Executor, Grant, Mode, Registry, Runtime, RuntimeConfig,
    ToolResult,
};

/// A runtime of the test's own, so its count of calls made ahead is this
/// test's alone.
fn own_runtime() -> Arc<Runtime> {
    runtime_with(Some(Duration::ZERO))
}

/// Spares for components whose instantiation takes at least `spares`
/// (`None`: for none).
fn runtime_with(spares: Option<Duration>) -> Arc<Runtime> {
    Arc::new(
        Runtime::new(RuntimeConfig {
            cache: CacheDir::At(cache_dir()),
            cache_key: cache_key(),
            spares,
            ..RuntimeConfig::default()
        })
        .expect("runtime"),
    )
}

/// An executor over `ws` in yolo mode with the fixture plugins.
fn fixtures(runtime: &Arc<Runtime>, ws: &std::path::Path) -> Executor {
    let mut registry = Registry::new();
    let problems = registry.load_dir(runtime, &fixtures_dir());
    assert!(problems.is_empty(), "{problems:?}");
    Executor::new(Arc::clone(runtime), registry)
        .with_workspace(ws)
        .expect("workspace")
        .with_mode(Mode::Yolo)
}

fn misbehave(ex: &Executor, args: serde_json::Value, options: &CallOptions) -> ToolResult {
    let r = ex.call("misbehave", &args.to_string(), options);
    after_reply();
    r
}

#[test]
fn a_call_on_an_instance_made_ahead_is_fresh_and_in_its_own_sandbox() {
    let ws = workspace();
    write(ws.path(), "mine.txt", "only this workspace has it");
    let runtime = own_runtime();
    let ex = fixtures(&runtime, ws.path()).with_grant(
        "misbehave",
        Grant {
            workspace: Some(Access::Read),
            ..Grant::none()
        },
    );
    let on_call_thread = std::thread::spawn(move || {
        runs_work_after_replies();
        let options = CallOptions::default();
        for i in 0..8 {
            let r = misbehave(&ex, serde_json::json!({"action": "count"}), &options);
            assert!(r.success, "{r:?}");
            // Nothing one call leaves is seen by the next.
            assert_eq!(r.content, "call 1 of this instance");
            // Each call's own context, never the empty sandbox's.
            let agent = format!("agent {i}");
            let own = CallOptions {
                context: CallContext {
                    agent: Some(agent.clone()),
                    ..CallContext::new()
                },
                ..CallOptions::default()
            };
            let r = misbehave(&ex, serde_json::json!({"action": "context"}), &own);
            let seen: serde_json::Value = serde_json::from_str(&r.content).expect("JSON");
            assert_eq!(seen["agent"], agent.as_str(), "{r:?}");
            assert_eq!(seen["call_id"], own.context.call_id.to_string(), "{r:?}");
        }
        let made_ahead = runtime.calls_made_ahead();
        // Its own grant: the workspace it may read.
        let r = misbehave(
            &ex,
            serde_json::json!({"action": "read", "path": "mine.txt"}),
            &options,
        );
        assert!(r.success, "{r:?}");
        assert!(r.content.contains("only this workspace has it"), "{r:?}");
        assert!(runtime.calls_made_ahead() > made_ahead);
        // Other limits: an instance of its own, made at the call.
        let other = CallOptions {
            timeout: Some(Duration::from_secs(7)),
            ..CallOptions::default()
        };
        let before = runtime.calls_made_ahead();
        let r = misbehave(&ex, serde_json::json!({"action": "count"}), &other);
        assert_eq!(r.content, "call 1 of this instance", "{r:?}");
        assert_eq!(runtime.calls_made_ahead(), before);
        made_ahead
    });
    let made_ahead = on_call_thread.join().expect("the calls ran");
    // 16 calls alternating between two actions of one tool: all but the
    // first two may start on an instance made ahead (fewer if work ahead
    // of use replaced the component's code meanwhile).
    assert!(made_ahead >= 8, "only {made_ahead} calls started ahead");
}

/// Off such a thread (the CLI, the library), with spares turned off
/// (`TOOLHOST_SPARES=0`), or for a component quicker to instantiate than
/// the threshold (as the built-ins are in a release build; here the
/// fixture, against a threshold of an hour), nothing is made ahead.
#[test]
fn nothing_is_made_ahead_off_a_call_thread_or_when_turned_off() {
    let ws = workspace();
    let count = |ex: &Executor| {
        for _ in 0..4 {
            let r = misbehave(
                ex,
                serde_json::json!({"action": "count"}),
                &CallOptions::default(),
            );
            assert_eq!(r.content, "call 1 of this instance", "{r:?}");
        }
    };
    let runtime = own_runtime();
    count(&fixtures(&runtime, ws.path()));
    assert_eq!(runtime.calls_made_ahead(), 0, "off a call thread");
    for (spares, what) in [
        (None, "turned off"),
        (Some(Duration::from_secs(3600)), "light"),
    ] {
        let off = runtime_with(spares);
        let ex = fixtures(&off, ws.path());
        std::thread::spawn(move || {
            runs_work_after_replies();
            count(&ex);
        })
        .join()
        .expect("the calls ran");
        assert_eq!(off.calls_made_ahead(), 0, "{what}");
    }
}
