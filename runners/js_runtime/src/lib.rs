//! The runner of `javascript` dynamic tools: a JavaScript engine
//! (QuickJS, through rquickjs) compiled into this component, so a script is confined
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

mod compiled;
mod globals;
mod split;

use compiled::Compiled;
use globals::install;
use rquickjs::{Context as Js, Ctx, Runtime, Value as JsValue};
use std::cell::RefCell;
use toolhost_builtin::contract;
use toolhost_sdk::serde_json::{self, Map, json};
use toolhost_sdk::{Capability, Context, Output, Tool, ToolError, Value, export_tool};

/// What the `toolhost.*` functions need during one call.
struct CallState {
    ctx: Context,
    /// Workspace paths the script wrote.
    changed: Vec<String>,
}

thread_local! {
    static CALL: RefCell<Option<CallState>> = const { RefCell::new(None) };
    /// The engine with its realm and the `toolhost` object, built by
    /// `wizer-initialize` when the host pre-initialises this component (the
    /// host snapshots the instance right after, so every call's fresh
    /// instance starts with it ready). Taken by the one call an instance
    /// serves; without it the call builds its own.
    static READY: RefCell<Option<Js>> = const { RefCell::new(None) };
    /// One tool's script compiled to bytecode in that engine, with its
    /// source, when the host snapshots this component for that tool
    /// (`prepare-script`). A call given the same source evaluates it
    /// instead of parsing it: its top-level code still runs in every call.
    static PREPARED: RefCell<Option<(String, Compiled)>> = const { RefCell::new(None) };
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

/// Parse and compile `source` in the ready engine and keep it for the
/// call that runs it. False if there is no engine or the script does not
/// compile: its calls then parse it themselves and report why.
fn prepare(source: String) -> bool {
    READY.with(|ready| {
        let ready = ready.borrow();
        let Some(js) = ready.as_ref() else {
            return false;
        };
        let Some(compiled) = js.with(|ctx| Compiled::new(&ctx, &source)) else {
            return false;
        };
        PREPARED.with(|prepared| *prepared.borrow_mut() = Some((source, compiled)));
        true
    })
}

/// A new engine: a runtime and a realm with the `toolhost` object.
fn interpreter() -> Result<Js, Thrown> {
    let cannot = |e: rquickjs::Error| Thrown::text(format!("cannot set up the interpreter: {e}"));
    let runtime = Runtime::new().map_err(cannot)?;
    let js = Js::full(&runtime).map_err(cannot)?;
    js.with(|ctx| {
        install(&ctx)?;
        let install_split: rquickjs::Function = ctx.eval(SPLIT)?;
        let spaces =
            rquickjs::Function::new(ctx.clone(), split::spaces)?.with_name("splitSpaces")?;
        install_split.call::<_, ()>((spaces,))
    })
    .map_err(cannot)?;
    Ok(js)
}

/// A faster `RegExp.prototype[Symbol.split]` for plain RegExps (split.js):
/// a function of the native `splitSpaces` that installs it.
const SPLIT: &str = include_str!("split.js");

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
        globals::seed_random();
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
    fn from_js(ctx: &Ctx<'_>, error: rquickjs::Error) -> Self {
        let (text, kind) = caught(ctx, error);
        Self(format!("the script threw: {text}"), kind)
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

/// What `error` says, with the thrown value's `toolhostKind` if it is an
/// exception carrying one.
fn caught(ctx: &Ctx<'_>, error: rquickjs::Error) -> (String, Option<String>) {
    if !error.is_exception() {
        return (error.to_string(), None);
    }
    let thrown = ctx.catch();
    let Some(object) = thrown.as_object() else {
        return (shown(ctx, &thrown), None);
    };
    let kind = object
        .get::<_, Option<String>>(KIND_PROPERTY)
        .ok()
        .flatten();
    let name = object.get::<_, Option<String>>("name").ok().flatten();
    let message = object.get::<_, Option<String>>("message").ok().flatten();
    let mut text = match (name, message) {
        (Some(name), Some(message)) if !message.is_empty() => format!("{name}: {message}"),
        (Some(name), _) => name,
        (None, _) => shown(ctx, &thrown),
    };
    // Where: the innermost frame of the stack QuickJS recorded.
    let stack = object.get::<_, Option<String>>("stack").ok().flatten();
    if let Some(at) = stack
        .as_deref()
        .and_then(|s| s.lines().map(str::trim).find(|l| !l.is_empty()))
    {
        text = format!("{text} ({at})");
    }
    (text, kind)
}

/// A thrown value that is not an `Error`, as JSON where it can be.
fn shown<'js>(ctx: &Ctx<'js>, value: &JsValue<'js>) -> String {
    if let Some(text) = value.as_string().and_then(|s| s.to_string().ok()) {
        return text;
    }
    match ctx.json_stringify(value.clone()) {
        Ok(Some(json)) => json.to_string().unwrap_or_default(),
        _ => value.type_name().to_owned(),
    }
}

fn run_script(source: &str, args: Value, ctx: &Context) -> Result<Output, Thrown> {
    let ready = READY.with(|ready| ready.borrow_mut().take());
    let prepared = PREPARED.with(|prepared| prepared.borrow_mut().take());
    let (js, compiled) = match (ready, prepared) {
        (Some(js), None) => (js, None),
        (Some(js), Some((text, compiled))) if text == source => (js, Some(compiled)),
        // Nothing ready, or an engine that compiled another script (its
        // bytecode would run in place of this one): a new one.
        (ready, prepared) => {
            if let (Some(js), Some((_, compiled))) = (&ready, prepared) {
                js.with(|ctx| compiled.free(&ctx));
            }
            (interpreter()?, None)
        }
    };
    let result = js.with(|js| run_in(&js, source, compiled, args, ctx));
    // The instance serves this one call and is then dropped whole: freeing
    // the engine object by object first would only touch every page of
    // its heap (most of a short call's time).
    std::mem::forget(js);
    result
}

/// Run `source` (already compiled, if given) in `js`, then call its `run`.
fn run_in(
    js: &Ctx<'_>,
    source: &str,
    compiled: Option<Compiled>,
    args: Value,
    ctx: &Context,
) -> Result<Output, Thrown> {
    let loaded = match compiled {
        Some(compiled) => compiled.evaluate(js),
        None => js.eval_with_options::<(), _>(source, compiled::options()),
    };
    loaded.map_err(|e| Thrown::text(format!("the script does not load: {}", caught(js, e).0)))?;
    let run: JsValue = js
        .globals()
        .get("run")
        .map_err(|e| Thrown::text(caught(js, e).0))?;
    let Some(run) = run.as_function() else {
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
    let from_json = |value: &Value| {
        js.json_parse(value.to_string())
            .map_err(|e| Thrown::text(caught(js, e).0))
    };
    let js_args = (from_json(&args)?, from_json(&call_ctx)?);
    let out: JsValue = run.call(js_args).map_err(|e| Thrown::from_js(js, e))?;
    let out = settled(js, out)?;
    if out.is_string() {
        return Ok(Output::text(well_formed(js, out)?));
    }
    if out.is_undefined() || out.is_null() {
        return Ok(Output::text("(the script returned nothing)"));
    }
    finish(json_of(js, out)?)
}

/// A result as JSON (`JSON.stringify`'s).
fn json_of<'js>(js: &Ctx<'js>, out: JsValue<'js>) -> Result<Value, Thrown> {
    let not_json = |why: String| Thrown::text(format!("the result is not JSON-able: {why}"));
    let text = |json: rquickjs::Result<Option<rquickjs::String<'js>>>| match json {
        Ok(Some(json)) => well_formed(js, json.into_value()).map(Some),
        Ok(None) => Ok(None),
        Err(e) => Err(not_json(caught(js, e).0)),
    };
    let Some(json) = text(js.json_stringify(out.clone()))? else {
        return Ok(Value::Null);
    };
    let refused = match serde_json::from_str(&json) {
        Ok(value) => return Ok(value),
        Err(refused) => refused,
    };
    // JSON.stringify escapes a lone surrogate, which serde_json refuses:
    // again, with every string made well-formed.
    let replacer: rquickjs::Function = js
        .eval("(k, v) => typeof v === 'string' ? String.prototype.toWellFormed.call(v) : v")
        .map_err(|e| not_json(caught(js, e).0))?;
    let json = text(js.json_stringify_replacer(out, replacer))?.unwrap_or_default();
    serde_json::from_str(&json).map_err(|_| not_json(refused.to_string()))
}

/// A JavaScript string as Rust text: one with a lone surrogate (which
/// UTF-8 cannot hold) has it replaced by U+FFFD, as `toWellFormed` does.
fn well_formed<'js>(js: &Ctx<'js>, text: JsValue<'js>) -> Result<String, Thrown> {
    let fail =
        |e: rquickjs::Error| Thrown::text(format!("the result is not text: {}", caught(js, e).0));
    if let Some(Ok(text)) = text.as_string().map(rquickjs::String::to_string) {
        return Ok(text);
    }
    let fix: rquickjs::Function = js
        .eval("(s) => String.prototype.toWellFormed.call(s)")
        .map_err(fail)?;
    fix.call::<_, rquickjs::String>((text,))
        .and_then(|s| s.to_string())
        .map_err(fail)
}

/// `out`, or what it settles to if it is a promise (`async function run`),
/// once the job queue is empty: there is no event loop beyond it, so work
/// the script started without awaiting it still runs before the call
/// ends, and a promise waiting on nothing never settles.
fn settled<'js>(js: &Ctx<'js>, out: JsValue<'js>) -> Result<JsValue<'js>, Thrown> {
    while js.execute_pending_job() {}
    let Some(promise) = out.as_promise() else {
        return Ok(out);
    };
    match promise.result::<JsValue>() {
        Some(Ok(value)) => Ok(value),
        Some(Err(e)) => Err(Thrown::from_js(js, e)),
        None => Err(Thrown::text(
            "`run` returned a promise that never settles (nothing here resolves it)".to_owned(),
        )),
    }
}

/// A JSON result: data, or the TypeScript bot framework's result shape,
/// `{success, content}`, where `success: false` is the tool failing, with
/// `content` saying why.
fn finish(value: Value) -> Result<Output, Thrown> {
    if let Some(success) = value.get("success").and_then(Value::as_bool)
        && let Some(content) = value.get("content")
    {
        let text = match content {
            Value::String(text) => text.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
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
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    Ok(Output::text(text).with_structured(value))
}

export_tool!(JsRuntime);

#[cfg(test)]
mod tests;
