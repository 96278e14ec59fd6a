//! First calls compiled by Winch, wasmtime's baseline compiler, while the
//! work ahead of use compiles the same component with Cranelift into the
//! compile cache.
//!
//! On an empty cache a tool's first call used to wait for Cranelift
//! (0.3 s for read_file alone, 1.8 s for search_code, 4.5 s for
//! create_tool, and longer while the background compile shares the
//! cores). Winch compiles the same component 4–7× sooner into code that
//! runs slower; that code serves the calls until the cache holds
//! Cranelift's, when the plugin lets go of it (`Plugin::compile_ahead`)
//! and its next call loads the optimised code.
//!
//! Only a runtime whose tools are compiled ahead of use turns it on
//! ([`Runtime::compile_first_calls_quickly`]): without that nothing would
//! ever replace the baseline code. Winch's code is never cached, and a
//! component Winch cannot compile (a feature it lacks) is compiled by
//! Cranelift as before. On x86-64 only, where wasmtime supports Winch at
//! its first tier; elsewhere first calls wait for Cranelift.

use super::*;

/// The baseline compiler's engine and its linkers (a linker belongs to
/// one engine). No instance pool: instances are allocated per call, and
/// the store's limiter holds them to the pool's per-component counts of
/// instances, memories and tables (not to its sizes of an instance's
/// state, which only a pool has: a component past those would run its
/// first calls and fail once Cranelift's code replaced them).
pub(super) struct Quick {
    pub(super) engine: Engine,
    pub(super) linkers: link::Linkers,
    /// Keys of components work ahead of use has compiled with Cranelift:
    /// their calls no longer use the baseline compiler, even if the cache
    /// did not keep Cranelift's code (a failed write, an eviction), so no
    /// tool stays on baseline code for the life of the process.
    replaced: Mutex<HashSet<String>>,
}

impl Quick {
    fn new() -> wasmtime::Result<Self> {
        let mut config = engine_config(1, false);
        config.strategy(wasmtime::Strategy::Winch);
        Ok(Self {
            engine: Engine::new(&config)?,
            linkers: link::Linkers::default(),
            replaced: Mutex::default(),
        })
    }
}

impl Runtime {
    /// From now on a first call compiles its tool with the baseline
    /// compiler when the compile cache does not hold it (see the module
    /// docs); for runtimes whose tools are compiled ahead of use. Without
    /// a compile cache, or where Winch cannot run, nothing changes.
    pub(crate) fn compile_first_calls_quickly(&self) {
        // Winch is a tier-1 compiler of wasmtime on x86-64 only.
        if !self.cache.is_kept() || !cfg!(target_arch = "x86_64") {
            return;
        }
        self.quick.get_or_init(|| match Quick::new() {
            Ok(quick) => Some(quick),
            Err(err) => {
                tracing::debug!(%err, "no baseline compiler: first calls wait for Cranelift");
                None
            }
        });
    }

    /// Work ahead of use has compiled the component keyed `key` with
    /// Cranelift: the baseline compiler is done with it.
    pub(super) fn replace_quick(&self, key: &str) {
        if let Some(Some(quick)) = self.quick.get() {
            quick
                .replaced
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key.to_owned());
        }
    }

    /// Whether work ahead of use has compiled the component keyed `key`
    /// with Cranelift.
    pub(super) fn replaced(&self, key: &str) -> bool {
        self.quick.get().is_some_and(|quick| {
            quick.as_ref().is_some_and(|quick| {
                quick
                    .replaced
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(key)
            })
        })
    }

    /// Whether `pre` runs code of the baseline compiler.
    pub(crate) fn is_quick(&self, pre: &ToolPluginPre<CallState>) -> bool {
        self.quick_engine()
            .is_some_and(|quick| Engine::same(quick, pre.instance_pre().engine()))
    }

    fn quick_engine(&self) -> Option<&Engine> {
        self.quick.get()?.as_ref().map(|quick| &quick.engine)
    }

    /// The linkers of the engine `component` was compiled by.
    pub(super) fn linkers_for(&self, component: &Component) -> (&Engine, &link::Linkers) {
        match self.quick.get() {
            Some(Some(quick)) if Engine::same(&quick.engine, component.engine()) => {
                (&quick.engine, &quick.linkers)
            }
            _ => (&self.engine, &self.linkers),
        }
    }

    /// `wasm` compiled by the baseline compiler, when a call (not work
    /// ahead of use) needs a plain or embedded component the cache does not
    /// hold; `None` to compile (or load) it as usual.
    pub(super) fn quickly(
        &self,
        key: &str,
        wasm: WasmBytes<'_>,
        linking: Linking,
        label: &str,
    ) -> Option<Component> {
        let quick = self.quick_engine()?;
        if IN_BACKGROUND.get()
            || !matches!(linking, Linking::Owned | Linking::Embedded)
            || self.cache.holds(key)
            || self.replaced(key)
        {
            return None;
        }
        let _compiling = Compiling::start(self, label, wasm.len());
        let compiled = wasm
            .unpacked()
            .map_err(wasmtime::Error::msg)
            .and_then(|bytes| Component::new(quick, bytes));
        compiled
            .inspect_err(|err| {
                tracing::debug!(%label, %err, "the baseline compiler cannot compile it; Cranelift does");
            })
            .ok()
    }
}
