//! A script compiled to QuickJS bytecode and not yet run: what a tool's
//! snapshot keeps (`prepare-script`), so its calls skip the parser.
//! rquickjs has no safe form of QuickJS's compile-only evaluation, so this
//! is the one place that calls QuickJS directly.
#![expect(
    unsafe_code,
    reason = "QuickJS's compile-only eval and EvalFunction, which rquickjs does not wrap"
)]

use rquickjs::context::EvalOptions;
use rquickjs::{Ctx, Value, qjs};
use std::ffi::CString;

/// The file name errors and stack traces give the script.
const FILE_NAME: &std::ffi::CStr = c"tool.js";

/// How a call evaluates a script it was not given compiled: as
/// [`Compiled::new`] compiles one (global code, not strict, `tool.js`).
pub(crate) fn options() -> EvalOptions {
    let mut options = EvalOptions::default();
    options.strict = false;
    options.filename = Some(FILE_NAME.to_string_lossy().into_owned());
    options
}

/// A compiled script of the engine it was compiled in, holding one
/// reference: [`Compiled::evaluate`] or [`Compiled::free`] releases it.
pub(crate) struct Compiled(qjs::JSValue);

impl Compiled {
    /// Compile `source` as global code without running it; `None` if it
    /// does not compile (the call then parses it itself and says why).
    pub(crate) fn new(ctx: &Ctx<'_>, source: &str) -> Option<Self> {
        let text = CString::new(source).ok()?;
        let flags = (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32;
        // SAFETY: the context is live for this call; `text` is a
        // NUL-terminated copy of `source.len()` bytes.
        let value = unsafe {
            qjs::JS_Eval(
                ctx.as_raw().as_ptr(),
                text.as_ptr(),
                source.len() as _,
                FILE_NAME.as_ptr(),
                flags,
            )
        };
        // SAFETY: a value QuickJS just returned.
        if unsafe { qjs::JS_IsException(value) } {
            drop(ctx.catch());
            return None;
        }
        Some(Self(value))
    }

    /// Run the script's top-level code in the engine it was compiled in.
    pub(crate) fn evaluate(self, ctx: &Ctx<'_>) -> rquickjs::Result<()> {
        // SAFETY: the bytecode was compiled in this context's runtime, and
        // EvalFunction takes over its reference.
        let result = unsafe { qjs::JS_EvalFunction(ctx.as_raw().as_ptr(), self.0) };
        // SAFETY: a value QuickJS just returned.
        if unsafe { qjs::JS_IsException(result) } {
            return Err(rquickjs::Error::Exception);
        }
        // SAFETY: an owned reference, released when the value drops.
        drop(unsafe { Value::from_raw(ctx.clone(), result) });
        Ok(())
    }

    /// Release the bytecode without running it.
    pub(crate) fn free(self, ctx: &Ctx<'_>) {
        // SAFETY: the reference this holds, in the context's runtime.
        drop(unsafe { Value::from_raw(ctx.clone(), self.0) });
    }
}
