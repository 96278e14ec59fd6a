//! Pre-initialisation of embedded components (wizer): run a component's
//! `wizer-initialize` export once, then snapshot its memories and globals
//! into a new component whose instances start in that state.
//!
//! `js_runtime` builds its interpreter and realm there, so a `javascript`
//! tool's call instantiates a fresh instance with them ready instead of
//! building them (most of such a call's time). Every call still gets its own
//! instance of the snapshot: nothing one call does reaches the next.
//!
//! A snapshot may also be made for one `javascript` tool: after
//! `wizer-initialize`, its `prepare-script` export parses and compiles the
//! tool's script, so that tool's calls skip that too (the script's
//! top-level code still runs in each call; nothing of it runs here).
//!
//! The initialiser runs in an empty sandbox, as `describe()` does (no files,
//! no commands, no network, the describe deadline). What it leaves behind is
//! only what it put in its own memory; WASI resources it might have opened
//! are not part of a snapshot. The snapshot is compiled and cached like any
//! component (under its own key), so this runs once per toolhost build (and
//! script) and cache, not once per start.

use super::Runtime;
use super::sandbox::{CallState, in_empty_sandbox};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use wasmtime::component::{Instance, WasmList};
use wasmtime::{Store, error::Context as _};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

/// The export run once before the snapshot.
pub(crate) const INIT_EXPORT: &str = "wizer-initialize";

/// The export that prepares one tool's script, run after [`INIT_EXPORT`];
/// it answers whether the script compiled.
pub(crate) const PREPARE_EXPORT: &str = "prepare-script";

/// `wasm` (cached as `key`) pre-initialised: a component whose instances
/// start where `wizer-initialize` left one, with `script` prepared by
/// [`PREPARE_EXPORT`] if given.
pub(crate) fn snapshot(
    runtime: &Runtime,
    key: &str,
    wasm: &[u8],
    script: Option<&str>,
) -> wasmtime::Result<Vec<u8>> {
    let mut wizer = Wizer::new();
    // Removing the export leaves wizer 48's rewritten component invalid
    // (its lift still names it: wasmtime issue #13186); nothing calls it.
    wizer.init_func(INIT_EXPORT).keep_init_func(true);
    let (cx, instrumented) = wizer.instrument_component(wasm)?;
    // Compiled once and cached: each script's snapshot starts from it.
    let component = runtime
        .cache
        .component(
            &runtime.engine,
            &format!("{key}.instrumented"),
            || (),
            || runtime.compile(&instrumented),
        )
        .context("compiling the component to pre-initialise")?;
    in_empty_sandbox(runtime, &runtime.engine, "pre-initialisation", |store| {
        let instance = runtime
            .linkers
            .for_component(&runtime.engine, &component)?
            .instantiate(&mut *store, &component)?;
        instance
            .get_typed_func::<(), ()>(&mut *store, INIT_EXPORT)?
            .call(&mut *store, ())?;
        if let Some(script) = script {
            let (prepared,) = instance
                .get_typed_func::<(&str,), (bool,)>(&mut *store, PREPARE_EXPORT)?
                .call(&mut *store, (script,))?;
            if !prepared {
                wasmtime::bail!("the script does not compile; its calls say why");
            }
        }
        ready(wizer.snapshot_component(&cx, &mut Snapshotting { store, instance }))?
    })
    .map_err(wasmtime::Error::msg)
}

/// The instance being snapshotted, read through the accessors wizer's
/// instrumentation exported.
struct Snapshotting<'a> {
    store: &'a mut Store<CallState>,
    instance: Instance,
}

impl Snapshotting<'_> {
    fn read<R, O>(
        &mut self,
        instance: &str,
        func: &str,
        with: impl FnOnce(&Store<CallState>, R) -> O,
    ) -> O
    where
        R: wasmtime::component::Lift + 'static,
    {
        // wizer only asks for accessors its instrumentation added, so one
        // missing is a bug in it; its trait gives no way to report one.
        let (_, exported) = self
            .instance
            .get_export(&mut *self.store, None, instance)
            .expect("wizer's accessor instance is exported");
        let (_, func) = self
            .instance
            .get_export(&mut *self.store, Some(&exported), func)
            .expect("wizer's accessor is exported");
        let value = self
            .instance
            .get_typed_func::<(), (R,)>(&mut *self.store, func)
            .and_then(|f| f.call(&mut *self.store, ()))
            .expect("wizer's accessor returns what it declares")
            .0;
        with(self.store, value)
    }
}

impl ComponentInstanceState for Snapshotting<'_> {
    async fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) {
        self.read(instance, func, |store, list: WasmList<u8>| {
            contents(list.as_le_slice(store));
        });
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.read(instance, func, |_, v| v)
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.read(instance, func, |_, v| v)
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.read(instance, func, |_, v: f32| v.to_bits())
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.read(instance, func, |_, v: f64| v.to_bits())
    }
}

/// The value of a future that never waits: wizer's snapshot is `async`
/// for async stores, and every accessor here answers at once.
fn ready<T>(future: impl Future<Output = T>) -> wasmtime::Result<T> {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => Ok(value),
        Poll::Pending => Err(wasmtime::Error::msg(
            "the snapshot waited on something (nothing here ever makes it wait)",
        )),
    }
}
