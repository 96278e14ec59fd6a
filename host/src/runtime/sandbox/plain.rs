//! One call of a plain component's exported function (crate::plain): the
//! same fresh store, grant, limits and deadline as any tool's call, the
//! function called with component values.

use super::*;
use wasmtime::component::{ComponentExportIndex, Instance, InstancePre, Val};

/// The WIT interface a component declares the environment variables it
/// reads with (wit/plugin.wit).
pub(crate) const ENVIRONMENT: &str = "toolhost:plugin/environment@0.1.0";

/// The environment variables `instance` declares (its `environment`
/// export's `variables()`), none if it does not export it.
pub(crate) fn declared_env(
    store: &mut Store<CallState>,
    instance: &Instance,
) -> wasmtime::Result<Vec<String>> {
    let Some(interface) = instance.get_export_index(&mut *store, None, ENVIRONMENT) else {
        return Ok(Vec::new());
    };
    let Some(func) = instance.get_export_index(&mut *store, Some(&interface), "variables") else {
        return Ok(Vec::new());
    };
    let variables = instance.get_typed_func::<(), (Vec<String>,)>(&mut *store, &func)?;
    Ok(variables.call(&mut *store, ())?.0)
}

/// Call the function `export` of the component linked as `pre` with
/// `params` in a fresh sandbox built from `req`, holding a call slot;
/// `finish` reads its `results` values into the call's outcome.
pub(crate) fn run_plain(
    runtime: &Arc<Runtime>,
    tool: &str,
    (pre, export): (&InstancePre<CallState>, &ComponentExportIndex),
    (params, results): (&[Val], usize),
    req: &CallRequest<'_>,
    finish: impl FnOnce(Vec<Val>) -> Outcome,
) -> Outcome {
    let _slot = runtime.slot();
    let call = || {
        let (mut store, captured) =
            new_store(runtime, pre.engine(), Some(runtime), tool, req, None)?;
        let call_id = req.context.call_id.to_string();
        let instance = pre.instantiate(&mut store).map_err(|e| {
            let stderr = captured.finish(tool, &call_id);
            classify(&e, store.data(), req.limits, &stderr)
        })?;
        let func = instance.get_func(&mut store, export).ok_or_else(|| {
            CallError::new(
                ErrorKind::Failed,
                format!("the component of `{tool}` has no such function any more"),
            )
        })?;
        let mut values = vec![Val::Bool(false); results];
        let called = func.call(&mut store, params, &mut values);
        let stderr = captured.finish(tool, &call_id);
        match called {
            Ok(()) => match finish(values) {
                Ok(mut out) => {
                    // The output limit, as for any tool's output.
                    let max = req.limits.max_output_bytes;
                    if let Some(value) = &out.structured
                        && over_limit(&mut out.content, json_len(value), max, tool)
                    {
                        out.structured = None;
                    }
                    cut_content(&mut out.content, max);
                    note_hidden(&mut out, store.data().paths.hidden());
                    Ok(out)
                }
                Err(err) => Err(with_notes(err, store.data().paths.notes())),
            },
            Err(err) => Err(classify(&err, store.data(), req.limits, &stderr)),
        }
    };
    // As for a toolhost plugin's call (sandbox.rs `execute`).
    if !req.grant.network.is_empty() {
        return call();
    }
    CALL_RUNTIME.with(|rt| {
        let _ambient = rt.as_ref().map(tokio::runtime::Runtime::enter);
        call()
    })
}

/// How many bytes `value` takes as JSON text, counted, not written.
fn json_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
