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
use boa_engine::object::builtins::JsPromise;
use boa_engine::{Context as Js, JsError, JsString, JsValue, Script, Source};
mod globals;

use globals::install;
use std::cell::RefCell;
use toolhost_builtin::contract;
use toolhost_sdk::serde_json::{Map, json};
use toolhost_sdk::{Capability, Context, Output, Tool, ToolError, Value, export_tool};

/// The deepest JavaScript recursion allowed (a clear error before the
/// component's stack runs out).
const RECURSION_LIMIT: usize = 400;

/// What the `toolhost.*` functions need during one call.
struct CallState {
    ctx: Context,
    /// Workspace paths the script wrote.
    changed: Vec<String>,
}

thread_local! {
    static CALL: RefCell<Option<CallState>> = const { RefCell::new(None) };
    /// The interpreter with its realm and the `toolhost` object, built by
    /// `wizer-initialize` when the host pre-initialises this component (the
    /// host snapshots the instance right after, so every call's fresh
    /// instance starts with it ready). Taken by the one call an instance
    /// serves; without it the call builds its own.
    static READY: RefCell<Option<Js>> = const { RefCell::new(None) };
    /// One tool's script parsed and compiled in that interpreter, with its
    /// source, when the host snapshots this component for that tool
    /// (`prepare-script`). A call given the same source evaluates it
    /// instead of parsing it: its top-level code still runs in every call.
    static PREPARED: RefCell<Option<(String, Script)>> = const { RefCell::new(None) };
}

/// The exports the host's pre-initialisation calls: `wizer-initialize`,
/// then, for a snapshot of one tool, `prepare-script` with its source.
#[expect(unsafe_code, reason = "the export glue wit-bindgen generates")]
mod preinit {
    wit_bindgen::generate!({
        inline: "package toolhost:js-runtime;
            world preinit {
                export wizer-initialize: func();
                export prepare-script: func(source: string) -> bool;
            }",
    });

    pub(crate) struct Preinit;

    impl Guest for Preinit {
        fn wizer_initialize() {
            // A failure here leaves nothing ready: each call then builds
            // its own interpreter and reports what fails.
            if let Ok(js) = super::interpreter() {
                super::READY.with(|ready| *ready.borrow_mut() = Some(js));
            }
        }

        fn prepare_script(source: String) -> bool {
            super::prepare(source)
        }
    }

    export!(Preinit);
}

/// Parse and compile `source` in the ready interpreter and keep it for the
/// call that runs it. False if there is no interpreter or the script does
/// not compile: its calls then parse it themselves and report why.
fn prepare(source: String) -> bool {
    READY.with(|ready| {
        let mut ready = ready.borrow_mut();
        let Some(js) = ready.as_mut() else {
            return false;
        };
        let Ok(script) = Script::parse(Source::from_bytes(&source), None, js) else {
            return false;
        };
        if script.codeblock(js).is_err() {
            return false;
        }
        PREPARED.with(|prepared| *prepared.borrow_mut() = Some((source, script)));
        true
    })
}

/// A new interpreter: a realm with the `toolhost` object.
fn interpreter() -> Result<Js, Thrown> {
    let mut js = Js::default();
    js.runtime_limits_mut().set_recursion_limit(RECURSION_LIMIT);
    install(&mut js).map_err(|e| Thrown::text(format!("cannot set up the interpreter: {e}")))?;
    Ok(js)
}

/// The `javascript` dynamic-tool runner.
pub struct JsRuntime;

impl Tool for JsRuntime {
    type Args = Map<String, Value>;
    const NAME: &'static str = contract::tool::JS_RUNTIME;
    const DESCRIPTION: &'static str = "Runs an approved script for a `javascript` dynamic tool; \
        the host shows each such tool under its own name and schema.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceWrite, Capability::Commands]
    }

    fn call(args: Self::Args, ctx: &Context) -> Result<Output, ToolError> {
        let source: String = ctx.setting(contract::setting::SOURCE).ok_or_else(|| {
            ToolError::failed("this runner was called without a `source` setting")
                .with_hint("call the dynamic tool by its own name; the host supplies the script")
        })?;
        CALL.with(|c| {
            *c.borrow_mut() = Some(CallState {
                ctx: ctx.clone(),
                changed: Vec::new(),
            });
        });
        let result = run_script(&source, Value::Object(args), ctx);
        let state = CALL.with(|c| c.borrow_mut().take());
        let changed = state.map(|s| s.changed).unwrap_or_default();
        let mut output = result.map_err(Thrown::into_error)?;
        for path in changed {
            output = output.changed(path);
        }
        Ok(output)
    }
}

/// The property a refused `toolhost.*` call's `Error` carries its kind in.
const KIND_PROPERTY: &str = "toolhostKind";

/// An uncaught exception or a script that cannot run: the text, and the
/// kind of a refused `toolhost.*` call the script did not catch.
struct Thrown(String, Option<String>);

impl Thrown {
    fn text(text: String) -> Self {
        Self(text, None)
    }

    /// An exception thrown out of `run`.
    fn from_js(error: &JsError, js: &mut Js) -> Self {
        let kind = error
            .as_opaque()
            .and_then(JsValue::as_object)
            .and_then(|o| o.get(JsString::from(KIND_PROPERTY), js).ok())
            .and_then(|v| v.as_string().map(|s| s.to_std_string_escaped()));
        Self(format!("the script threw: {error}"), kind)
    }

    /// A refusal left uncaught keeps its kind; anything else is `failed`.
    fn into_error(self) -> ToolError {
        let refused = |m: String| format!("the script's toolhost call was refused: {m}");
        match self.1.as_deref() {
            Some("denied") => ToolError::denied(refused(self.0)).with_hint(
                "a person decides what a dynamic tool may do: `toolhost dynamic approve ID --grant CAPS`",
            ),
            Some("invalid_input") => ToolError::invalid_input(refused(self.0)),
            Some("retry") => ToolError::retry(refused(self.0)),
            _ => ToolError::failed(self.0),
        }
    }
}

fn run_script(source: &str, args: Value, ctx: &Context) -> Result<Output, Thrown> {
    let ready = READY.with(|ready| ready.borrow_mut().take());
    let prepared = PREPARED.with(|prepared| prepared.borrow_mut().take());
    let (mut js, script) = match (ready, prepared) {
        (Some(js), None) => (js, None),
        (Some(js), Some((text, script))) if text == source => (js, Some(script)),
        // Nothing ready, or an interpreter that compiled another script
        // (its declarations are in its realm): a new one.
        _ => (interpreter()?, None),
    };
    run_in(&mut js, source, script, args, ctx)
}

/// Run `source` (already parsed and compiled as `script`, if given) in
/// `js`, then call its `run`.
fn run_in(
    js: &mut Js,
    source: &str,
    script: Option<Script>,
    args: Value,
    ctx: &Context,
) -> Result<Output, Thrown> {
    // What `eval` does (parse, compile, evaluate), minus what was prepared.
    match script {
        Some(script) => script.evaluate(js),
        None => js.eval(Source::from_bytes(source)),
    }
    .map_err(|e| Thrown::text(format!("the script does not load: {e}")))?;
    let run = js
        .global_object()
        .get(JsString::from("run"), js)
        .map_err(|e| Thrown::text(e.to_string()))?;
    let Some(run) = run.as_callable() else {
        return Err(Thrown::text(
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
        JsValue::from_json(&args, js).map_err(|e| Thrown::text(e.to_string()))?,
        JsValue::from_json(&call_ctx, js).map_err(|e| Thrown::text(e.to_string()))?,
    ];
    let mut out = match run.call(&JsValue::undefined(), &js_args, js) {
        Ok(out) => out,
        Err(e) => return Err(Thrown::from_js(&e, js)),
    };
    // `async function run`: settle the promise (there is no event loop
    // beyond the job queue; a promise waiting on nothing never settles).
    if let Some(promise) = out.as_object().and_then(|o| JsPromise::from_object(o).ok()) {
        js.run_jobs()
            .map_err(|e| Thrown::text(format!("the script threw: {e}")))?;
        out = match promise.state() {
            PromiseState::Fulfilled(value) => value,
            PromiseState::Rejected(reason) => {
                return Err(Thrown::from_js(&JsError::from_opaque(reason), js));
            }
            PromiseState::Pending => {
                return Err(Thrown::text(
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
        .to_json(js)
        .map_err(|e| Thrown::text(format!("the result is not JSON-able: {e}")))?
        .unwrap_or(Value::Null);
    // The TypeScript bot framework's result shape, `{success, content}`: `success: false` is
    // the tool failing, with `content` saying why.
    if let Some(success) = value.get("success").and_then(Value::as_bool)
        && let Some(content) = value.get("content")
    {
        let text = match content {
            Value::String(text) => text.clone(),
            other => toolhost_sdk::serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        if !success {
            return Err(Thrown(
                if text.trim().is_empty() {
                    "the tool reported a failure (`success: false`) without saying why".to_owned()
                } else {
                    text
                },
                Some("failed".to_owned()),
            ));
        }
        return Ok(Output::text(text).with_structured(value));
    }
    let text = toolhost_sdk::serde_json::to_string_pretty(&value).unwrap_or_default();
    Ok(Output::text(text).with_structured(value))
}

export_tool!(JsRuntime);

#[cfg(test)]
mod tests;
