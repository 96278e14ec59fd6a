//! The global `toolhost` object a script calls: files through WASI,
//! commands through the host broker, log lines; each refused call throws.

use crate::{CALL, CallState, KIND_PROPERTY};
use rquickjs::function::Rest;
use rquickjs::object::Property;
use rquickjs::{Coerced, Ctx, Exception, FromJs, Function, Object, Value as JsValue};
use std::cell::Cell;
use toolhost_sdk::commands::{self, CommandError, Request};
use toolhost_sdk::serde_json::{self, json};
use toolhost_sdk::{ToolError, fs};

/// A `toolhost.*` function.
type HostFn = for<'js> fn(Ctx<'js>, Rest<JsValue<'js>>) -> rquickjs::Result<JsValue<'js>>;

/// The global `toolhost` object, read-only.
pub(crate) fn install(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    let functions: [(&str, HostFn, usize); 5] = [
        ("readFile", read_file, 1),
        ("writeFile", write_file, 2),
        ("listDir", list_dir, 1),
        ("run", run_command, 1),
        ("log", log, 0),
    ];
    let object = Object::new(ctx.clone())?;
    for (name, function, length) in functions {
        let function = Function::new(ctx.clone(), function)?.with_name(name)?;
        function.set_length(length)?;
        object.set(name, function)?;
    }
    ctx.globals().prop("toolhost", Property::from(object))?;
    // QuickJS seeds Math.random once, when the realm is made: in a
    // snapshot that would be once for every call.
    let math: Object = ctx.globals().get("Math")?;
    math.set(
        "random",
        Function::new(ctx.clone(), random)?.with_name("random")?,
    )
}

thread_local! {
    /// Math.random's state (xorshift64*), seeded by each call.
    static RANDOM: Cell<u64> = const { Cell::new(1) };
}

/// Seed Math.random for this call from the platform's random source (the
/// clock if it has none).
pub(crate) fn seed_random() {
    let seed = getrandom::u64().unwrap_or_else(|_| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    RANDOM.with(|state| state.set(seed | 1));
}

/// Math.random(): a double in [0, 1) from 52 random bits.
fn random() -> f64 {
    RANDOM.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 12) as f64 / (1u64 << 52) as f64
    })
}

/// Run a host operation for the current call; a refusal becomes a thrown
/// `Error` whose `toolhostKind` says which (`denied`, `retry`, ...).
fn host<T>(
    ctx: &Ctx<'_>,
    op: impl FnOnce(&mut CallState) -> Result<T, ToolError>,
) -> rquickjs::Result<T> {
    let result = CALL.with(|cell| cell.borrow_mut().as_mut().map(op));
    let Some(result) = result else {
        return Err(Exception::throw_message(
            ctx,
            "toolhost functions work only while `run` is called",
        ));
    };
    result.map_err(|e| {
        let kind = match e {
            ToolError::InvalidInput(_) => "invalid_input",
            ToolError::Retry(_) => "retry",
            ToolError::Denied(_) => "denied",
            _ => "failed",
        };
        let error = match Exception::from_message(ctx.clone(), &e.to_string()) {
            Ok(error) => error,
            Err(e) => return e,
        };
        // A fresh error object takes any property; if it did not, the kind
        // is lost and the call reports `failed`, which is still a refusal.
        let _ = error.as_object().set(KIND_PROPERTY, kind);
        error.throw()
    })
}

fn string_arg(
    ctx: &Ctx<'_>,
    args: &[JsValue<'_>],
    index: usize,
    usage: &str,
) -> rquickjs::Result<String> {
    match args.get(index).and_then(JsValue::as_string) {
        Some(s) => s.to_string(),
        None => Err(Exception::throw_type(
            ctx,
            &format!("{usage}: argument {} must be a string", index + 1),
        )),
    }
}

fn read_file<'js>(ctx: Ctx<'js>, args: Rest<JsValue<'js>>) -> rquickjs::Result<JsValue<'js>> {
    let path = string_arg(&ctx, &args, 0, "toolhost.readFile(path)")?;
    let text = host(&ctx, |state| {
        let resolved = fs::resolve(&path, &state.ctx)?;
        let bytes = fs::read_regular(&resolved)?;
        String::from_utf8(bytes)
            .map_err(|_| ToolError::invalid_input(format!("`{path}` is not UTF-8 text")))
    })?;
    Ok(rquickjs::String::from_str(ctx, &text)?.into_value())
}

fn write_file<'js>(ctx: Ctx<'js>, args: Rest<JsValue<'js>>) -> rquickjs::Result<JsValue<'js>> {
    let usage = "toolhost.writeFile(path, text)";
    let path = string_arg(&ctx, &args, 0, usage)?;
    let text = string_arg(&ctx, &args, 1, usage)?;
    host(&ctx, |state| {
        let resolved = fs::resolve(&path, &state.ctx)?;
        fs::write_atomic(&resolved, text.as_bytes())?;
        state.changed.push(resolved.shown().to_owned());
        Ok(())
    })?;
    Ok(JsValue::new_undefined(ctx))
}

fn list_dir<'js>(ctx: Ctx<'js>, args: Rest<JsValue<'js>>) -> rquickjs::Result<JsValue<'js>> {
    let path = match args.first() {
        None => ".".to_owned(),
        Some(_) => string_arg(&ctx, &args, 0, "toolhost.listDir(path)")?,
    };
    let names = host(&ctx, |state| {
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
    rquickjs::IntoJs::into_js(names, &ctx)
}

fn run_command<'js>(ctx: Ctx<'js>, args: Rest<JsValue<'js>>) -> rquickjs::Result<JsValue<'js>> {
    let usage = "toolhost.run(argv): argv must be an array of strings, e.g. [\"git\", \"status\"]";
    let argv: Vec<String> = args
        .first()
        .and_then(|v| ctx.json_stringify(v.clone()).ok().flatten())
        .and_then(|json| json.to_string().ok())
        .and_then(|json| serde_json::from_str(&json).ok())
        .filter(|argv: &Vec<String>| !argv.is_empty())
        .ok_or_else(|| Exception::throw_type(&ctx, usage))?;
    let result = host(&ctx, |_| match commands::run(&Request::argv(argv)) {
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
    ctx.json_parse(result.to_string())
}

fn log<'js>(ctx: Ctx<'js>, args: Rest<JsValue<'js>>) -> rquickjs::Result<JsValue<'js>> {
    let mut parts = Vec::with_capacity(args.len());
    for value in args.0 {
        parts.push(Coerced::<String>::from_js(&ctx, value)?.0);
    }
    toolhost_sdk::log::info(parts.join(" "));
    Ok(JsValue::new_undefined(ctx))
}
