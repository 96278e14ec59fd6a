//! The global `toolhost` object a script calls: files through WASI,
//! commands through the host broker, log lines; each refused call throws.

use crate::{CALL, CallState, KIND_PROPERTY};
use boa_engine::object::ObjectInitializer;
use boa_engine::object::builtins::JsArray;
use boa_engine::property::Attribute;
use boa_engine::{
    Context as Js, JsError, JsNativeError, JsResult, JsString, JsValue, NativeFunction,
};
use toolhost_sdk::commands::{self, CommandError, Request};
use toolhost_sdk::serde_json::json;
use toolhost_sdk::{ToolError, fs};

/// A `toolhost.*` function.
type HostFn = fn(&JsValue, &[JsValue], &mut Js) -> JsResult<JsValue>;

/// The global `toolhost` object.
pub(crate) fn install(js: &mut Js) -> JsResult<()> {
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
/// `Error` whose `toolhostKind` says which (`denied`, `retry`, ...).
fn host<T>(js: &mut Js, op: impl FnOnce(&mut CallState) -> Result<T, ToolError>) -> JsResult<T> {
    let result = CALL.with(|cell| cell.borrow_mut().as_mut().map(op));
    let Some(result) = result else {
        return Err(JsNativeError::error()
            .with_message("toolhost functions work only while `run` is called")
            .into());
    };
    result.map_err(|e| {
        let kind = match e {
            ToolError::InvalidInput(_) => "invalid_input",
            ToolError::Retry(_) => "retry",
            ToolError::Denied(_) => "denied",
            _ => "failed",
        };
        let error = JsNativeError::error()
            .with_message(e.to_string())
            .to_opaque(js);
        // A fresh error object takes any property; if it did not, the kind
        // is lost and the call reports `failed`, which is still a refusal.
        let _ = error.set(
            JsString::from(KIND_PROPERTY),
            JsString::from(kind),
            false,
            js,
        );
        JsError::from_opaque(error.into())
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

fn read_file(_: &JsValue, args: &[JsValue], js: &mut Js) -> JsResult<JsValue> {
    let path = string_arg(args, 0, "toolhost.readFile(path)")?;
    let text = host(js, |state| {
        let resolved = fs::resolve(&path, &state.ctx)?;
        let bytes = fs::read_regular(&resolved)?;
        String::from_utf8(bytes)
            .map_err(|_| ToolError::invalid_input(format!("`{path}` is not UTF-8 text")))
    })?;
    // As UTF-16, even when it is ASCII: boa (0.21) copies a Latin-1 string
    // whole into UTF-16 at every regular-expression match, so
    // `text.split(/\s+/)` on a Latin-1 text takes time quadratic in its
    // length (400 kB: 4.5 s; as UTF-16: 0.36 s).
    let units: Vec<u16> = text.encode_utf16().collect();
    Ok(JsString::from(units.as_slice()).into())
}

fn write_file(_: &JsValue, args: &[JsValue], js: &mut Js) -> JsResult<JsValue> {
    let usage = "toolhost.writeFile(path, text)";
    let path = string_arg(args, 0, usage)?;
    let text = string_arg(args, 1, usage)?;
    host(js, |state| {
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
    let names = host(js, |state| {
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
    let result = host(js, |_| match commands::run(&Request::argv(argv)) {
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
