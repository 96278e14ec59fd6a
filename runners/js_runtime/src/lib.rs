//! The runner of `javascript` dynamic tools: a JavaScript interpreter
//! (boa, pure Rust) compiled into this component, so a script is confined
//! exactly like any plugin — same preopens, same memory and time limits (an
//! endless loop is interrupted by the host's epoch deadline).
//!
//! The host gives the script in the setting `source`. It must define
//! `function run(args, ctx)` returning a string or a JSON-able value. The
//! global `toolhost` object is its only way out, and each function goes
//! through what the tool was granted:
//!
//! - `toolhost.readFile(path)`, `toolhost.writeFile(path, text)`,
//!   `toolhost.listDir(path)`: WASI files in the workspace, only with a
//!   workspace grant (write only with `workspace:write`);
//! - `toolhost.run(argv)`: the host broker, only with the `commands` grant,
//!   under the full command policy; returns `{exitCode, stdout, stderr,
//!   timedOut}` (in a dry run nothing runs: `dryRun` says what would have);
//! - `toolhost.log(...values)`: a log line to the host.
//!
//! A refused `toolhost.*` call throws; left uncaught, the call fails with
//! the refusal's own kind (e.g. `denied`).

use boa_engine::builtins::promise::PromiseState;
use boa_engine::object::ObjectInitializer;
use boa_engine::object::builtins::{JsArray, JsPromise};
use boa_engine::property::Attribute;
use boa_engine::{
    Context as Js, JsNativeError, JsResult, JsString, JsValue, NativeFunction, Source,
};
use std::cell::RefCell;
use toolhost_sdk::commands::{self, CommandError, Request};
use toolhost_sdk::serde_json::{Map, json};
use toolhost_sdk::{Capability, Context, Output, Tool, ToolError, Value, export_tool, fs};

/// The deepest JavaScript recursion allowed (a clear error before the
/// component's stack runs out).
const RECURSION_LIMIT: usize = 400;

/// What the `toolhost.*` functions need during one call.
struct CallState {
    ctx: Context,
    /// Workspace paths the script wrote.
    changed: Vec<String>,
    /// The last refused `toolhost.*` call, to report its kind if uncaught.
    refusal: Option<ToolError>,
}

thread_local! {
    static CALL: RefCell<Option<CallState>> = const { RefCell::new(None) };
}

/// The `javascript` dynamic-tool runner.
pub struct JsRuntime;

impl Tool for JsRuntime {
    type Args = Map<String, Value>;
    const NAME: &'static str = "js_runtime";
    const DESCRIPTION: &'static str = "Runs an approved script for a `javascript` dynamic tool; \
        the host shows each such tool under its own name and schema.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceWrite, Capability::Commands]
    }

    fn call(args: Self::Args, ctx: &Context) -> Result<Output, ToolError> {
        let source: String = ctx.setting("source").ok_or_else(|| {
            ToolError::failed("this runner was called without a `source` setting")
                .with_hint("call the dynamic tool by its own name; the host supplies the script")
        })?;
        CALL.with(|c| {
            *c.borrow_mut() = Some(CallState {
                ctx: ctx.clone(),
                changed: Vec::new(),
                refusal: None,
            });
        });
        let result = run_script(&source, Value::Object(args), ctx);
        let state = CALL.with(|c| c.borrow_mut().take());
        let (changed, refusal) = state.map_or((Vec::new(), None), |s| (s.changed, s.refusal));
        match result {
            Ok(mut output) => {
                for path in changed {
                    output = output.changed(path);
                }
                Ok(output)
            }
            // A refusal the script did not catch keeps its kind.
            Err(Thrown(text)) => Err(match refusal {
                Some(refusal) if text.contains(&refusal.to_string()) => {
                    let denied = matches!(refusal, ToolError::Denied(_));
                    let refusal = refusal.context("the script's toolhost call was refused");
                    if denied {
                        refusal.with_hint(
                            "a person decides what a dynamic tool may do: `toolhost dynamic approve ID --grant CAPS`",
                        )
                    } else {
                        refusal
                    }
                }
                _ => ToolError::failed(text),
            }),
        }
    }
}

/// An uncaught exception or a script that cannot run, as text.
struct Thrown(String);

fn run_script(source: &str, args: Value, ctx: &Context) -> Result<Output, Thrown> {
    let mut js = Js::default();
    js.runtime_limits_mut().set_recursion_limit(RECURSION_LIMIT);
    install(&mut js).map_err(|e| Thrown(format!("cannot set up the interpreter: {e}")))?;
    js.eval(Source::from_bytes(source))
        .map_err(|e| Thrown(format!("the script does not load: {e}")))?;
    let run = js
        .global_object()
        .get(JsString::from("run"), &mut js)
        .map_err(|e| Thrown(e.to_string()))?;
    let Some(run) = run.as_callable() else {
        return Err(Thrown(
            "the script defines no `function run(args, ctx)`; the tool's author must add it"
                .to_owned(),
        ));
    };
    let call_ctx = json!({
        "callId": ctx.call_id(),
        "agent": ctx.agent(),
        "session": ctx.session(),
        "channel": ctx.channel(),
        "workspaceRoot": ctx.workspace_root(),
        "dryRun": ctx.dry_run(),
    });
    let js_args = [
        JsValue::from_json(&args, &mut js).map_err(|e| Thrown(e.to_string()))?,
        JsValue::from_json(&call_ctx, &mut js).map_err(|e| Thrown(e.to_string()))?,
    ];
    let mut out = run
        .call(&JsValue::undefined(), &js_args, &mut js)
        .map_err(|e| Thrown(format!("the script threw: {e}")))?;
    // `async function run`: settle the promise (there is no event loop
    // beyond the job queue; a promise waiting on nothing never settles).
    if let Some(promise) = out.as_object().and_then(|o| JsPromise::from_object(o).ok()) {
        js.run_jobs()
            .map_err(|e| Thrown(format!("the script threw: {e}")))?;
        out = match promise.state() {
            PromiseState::Fulfilled(value) => value,
            PromiseState::Rejected(reason) => {
                let reason = reason
                    .to_string(&mut js)
                    .map_or_else(|e| e.to_string(), |s| s.to_std_string_escaped());
                return Err(Thrown(format!("the script threw: {reason}")));
            }
            PromiseState::Pending => {
                return Err(Thrown(
                    "`run` returned a promise that never settles (nothing here resolves it)"
                        .to_owned(),
                ));
            }
        };
    }
    if let Some(text) = out.as_string() {
        return Ok(Output::text(text.to_std_string_escaped()));
    }
    if out.is_undefined() || out.is_null() {
        return Ok(Output::text("(the script returned nothing)"));
    }
    let value = out
        .to_json(&mut js)
        .map_err(|e| Thrown(format!("the result is not JSON-able: {e}")))?
        .unwrap_or(Value::Null);
    let text = toolhost_sdk::serde_json::to_string_pretty(&value).unwrap_or_default();
    Ok(Output::text(text).with_structured(value))
}

/// A `toolhost.*` function.
type HostFn = fn(&JsValue, &[JsValue], &mut Js) -> JsResult<JsValue>;

/// The global `toolhost` object.
fn install(js: &mut Js) -> JsResult<()> {
    let functions: [(&str, HostFn, usize); 5] = [
        ("readFile", read_file, 1),
        ("writeFile", write_file, 2),
        ("listDir", list_dir, 1),
        ("run", run_command, 1),
        ("log", log, 0),
    ];
    let mut object = ObjectInitializer::new(js);
    for (name, function, length) in functions {
        object.function(
            NativeFunction::from_fn_ptr(function),
            JsString::from(name),
            length,
        );
    }
    let object = object.build();
    js.register_global_property(JsString::from("toolhost"), object, Attribute::READONLY)
}

/// Run a host operation for the current call; a refusal becomes a thrown
/// `Error` (and is remembered, for its kind).
fn host<T>(op: impl FnOnce(&mut CallState) -> Result<T, ToolError>) -> JsResult<T> {
    CALL.with(|cell| {
        let mut cell = cell.borrow_mut();
        let Some(state) = cell.as_mut() else {
            return Err(JsNativeError::error()
                .with_message("toolhost functions work only while `run` is called")
                .into());
        };
        op(state).map_err(|e| {
            let message = e.to_string();
            state.refusal = Some(e);
            JsNativeError::error().with_message(message).into()
        })
    })
}

fn string_arg(args: &[JsValue], index: usize, usage: &str) -> JsResult<String> {
    match args.get(index).and_then(JsValue::as_string) {
        Some(s) => Ok(s.to_std_string_escaped()),
        None => Err(JsNativeError::typ()
            .with_message(format!("{usage}: argument {} must be a string", index + 1))
            .into()),
    }
}

fn read_file(_: &JsValue, args: &[JsValue], _: &mut Js) -> JsResult<JsValue> {
    let path = string_arg(args, 0, "toolhost.readFile(path)")?;
    let text = host(|state| {
        let resolved = fs::resolve(&path, &state.ctx)?;
        let bytes = fs::read_regular(&resolved)?;
        String::from_utf8(bytes)
            .map_err(|_| ToolError::invalid_input(format!("`{path}` is not UTF-8 text")))
    })?;
    Ok(JsString::from(text.as_str()).into())
}

fn write_file(_: &JsValue, args: &[JsValue], _: &mut Js) -> JsResult<JsValue> {
    let usage = "toolhost.writeFile(path, text)";
    let path = string_arg(args, 0, usage)?;
    let text = string_arg(args, 1, usage)?;
    host(|state| {
        let resolved = fs::resolve(&path, &state.ctx)?;
        fs::write_atomic(&resolved, text.as_bytes())?;
        state.changed.push(resolved.shown().to_owned());
        Ok(())
    })?;
    Ok(JsValue::undefined())
}

fn list_dir(_: &JsValue, args: &[JsValue], js: &mut Js) -> JsResult<JsValue> {
    let path = match args.first() {
        None => ".".to_owned(),
        Some(_) => string_arg(args, 0, "toolhost.listDir(path)")?,
    };
    let names = host(|state| {
        let resolved = fs::resolve(&path, &state.ctx)?;
        Ok(fs::walk(&resolved, 1)?
            .into_iter()
            .map(|e| {
                let name = e
                    .path
                    .io()
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy();
                if e.is_dir {
                    format!("{name}/")
                } else {
                    name.into_owned()
                }
            })
            .collect::<Vec<_>>())
    })?;
    let values = names.iter().map(|n| JsString::from(n.as_str()).into());
    Ok(JsArray::from_iter(values, js).into())
}

fn run_command(_: &JsValue, args: &[JsValue], js: &mut Js) -> JsResult<JsValue> {
    let usage = "toolhost.run(argv): argv must be an array of strings, e.g. [\"git\", \"status\"]";
    let argv: Vec<String> = args
        .first()
        .map(|v| v.to_json(js))
        .transpose()?
        .flatten()
        .and_then(|v| toolhost_sdk::serde_json::from_value(v).ok())
        .filter(|argv: &Vec<String>| !argv.is_empty())
        .ok_or_else(|| JsNativeError::typ().with_message(usage))?;
    let result = host(|_| match commands::run(&Request::argv(argv)) {
        Ok(done) => Ok(json!({
            "exitCode": done.exit_code,
            "stdout": done.stdout,
            "stderr": done.stderr,
            "timedOut": done.timed_out,
        })),
        // A dry run: nothing ran; the script sees what would have.
        Err(CommandError::DryRun(text)) => Ok(json!({
            "exitCode": null,
            "stdout": "",
            "stderr": "",
            "timedOut": false,
            "dryRun": text,
        })),
        Err(e) => Err(e.into()),
    })?;
    JsValue::from_json(&result, js)
}

fn log(_: &JsValue, args: &[JsValue], js: &mut Js) -> JsResult<JsValue> {
    let mut parts = Vec::with_capacity(args.len());
    for value in args {
        parts.push(match value.as_string() {
            Some(s) => s.to_std_string_escaped(),
            None => value.to_string(js)?.to_std_string_escaped(),
        });
    }
    toolhost_sdk::log::info(parts.join(" "));
    Ok(JsValue::undefined())
}

export_tool!(JsRuntime);

#[cfg(test)]
mod tests {
    use super::*;

    fn call(source: &str, args: Value) -> Result<Output, ToolError> {
        let ctx = Context::default().with_setting("source", source);
        let Value::Object(args) = args else {
            panic!("args must be an object")
        };
        JsRuntime::call(args, &ctx)
    }

    #[test]
    fn returns_text_or_structured_values() {
        let out = call(
            "function run(a) { return 'hi ' + a.name }",
            json!({"name": "bo"}),
        )
        .unwrap();
        assert_eq!(out.content(), "hi bo");
        let out = call(
            "function run(a) { return {n: a.n * 2, ok: true} }",
            json!({"n": 21}),
        )
        .unwrap();
        assert_eq!(out.structured(), Some(&json!({"n": 42, "ok": true})));
    }

    #[test]
    fn async_run_is_awaited() {
        let out = call(
            "async function run(a) { return 'late ' + a.n }",
            json!({"n": 1}),
        )
        .unwrap();
        assert_eq!(out.content(), "late 1");
        let err = call(
            "async function run() { throw new Error('nope') }",
            json!({}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
        let err = call("function run() { return new Promise(() => {}) }", json!({})).unwrap_err();
        assert!(err.to_string().contains("never settles"), "{err}");
    }

    #[test]
    fn scripts_that_cannot_run_say_why() {
        let err = call("let x = 1;", json!({})).unwrap_err();
        assert!(err.to_string().contains("function run"), "{err}");
        let err = call("function run( {", json!({})).unwrap_err();
        assert!(err.to_string().contains("does not load"), "{err}");
        let err = call("function run() { throw new Error('boom') }", json!({})).unwrap_err();
        assert!(err.to_string().contains("boom"), "{err}");
        let err = call("function run() { return run() }", json!({})).unwrap_err();
        assert!(err.to_string().contains("threw"), "{err}");
    }

    #[test]
    fn no_workspace_grant_is_a_refusal() {
        let err = call(
            "function run() { return toolhost.readFile('a.txt') }",
            json!({}),
        )
        .unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
        // Caught, the script decides.
        let out = call(
            "function run() { try { toolhost.readFile('a.txt') } catch (e) { return 'caught' } }",
            json!({}),
        )
        .unwrap();
        assert_eq!(out.content(), "caught");
    }
}
