//! The wasmtime [`Engine`] (and, once turned on, the baseline compiler's:
//! `quick.rs`) and everything shared by all calls: the pooling
//! allocator, the epoch ticker, the linkers with WASI and the
//! toolhost imports (one per set of imports: `link.rs`), the compile cache
//! and the slot semaphore.
//!
//! `Runtime::link` turns wasm bytes into a pre-linked component (compiled
//! once, from the cache afterwards); [`sandbox`] makes a fresh store for one
//! call from it, and `fanout` runs a call's shares.

pub(crate) mod bytes;
mod cache;
pub(crate) mod fanout;
mod helper;
mod link;
mod preinit;
mod quick;
pub mod sandbox;

use crate::bindings::ToolPluginPre;
use crate::types::tool_info::{Problem, Severity, ToolInfo, env_problems, problems_of};
pub(crate) use bytes::Linking;
use bytes::WasmBytes;
use cache::CompileCache;
use sandbox::CallState;
use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;
use wasmtime::component::{Component, InstancePre};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};
mod check;
mod config;
mod engine;
pub use check::CheckReport;
pub use config::*;
pub use helper::{COMPILE_AHEAD_ARG, compile_ahead_helper};

/// Why the runtime or a plugin could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// wasmtime refused the engine configuration.
    #[error("cannot create the wasm engine: {0}")]
    Engine(String),
    /// A limit is out of range.
    #[error("invalid limits: {0}")]
    Limits(String),
    /// A plugin could not be loaded.
    #[error("cannot load plugin {origin}: {reason}")]
    Load {
        /// Where the plugin came from.
        origin: String,
        /// Why.
        reason: String,
    },
}

/// The shared wasm runtime. `Send + Sync`: share it behind an `Arc`.
pub struct Runtime {
    pub(crate) engine: Engine,
    /// Linkers, each with the imports of the components linked with it,
    /// made on first need (runtime/link.rs).
    linkers: link::Linkers,
    cache: CompileCache,
    pub(crate) limits: Limits,
    slots: Slots,
    /// The slot count `slots` started with.
    max_calls: u32,
    /// Fan-out permits: counted at start with an instance pool (which is
    /// sized for them), else on the first fan-out.
    workers: OnceLock<Slots>,
    /// The configured fan-out workers, for counting them late.
    fanout_workers: Option<u32>,
    /// Embedded components (built-ins, runners) already linked, by cache
    /// key, with the key their compiled code is stored under: a reload or
    /// a new dynamic tool on the same runner reuses them.
    embedded: Mutex<HashMap<String, (String, ToolPluginPre<CallState>)>>,
    /// Cache keys of scripts whose preparing failed (see
    /// [`Runtime::prepare_failed`]).
    unprepared: Mutex<HashSet<String>>,
    progress: Option<CompileProgress>,
    /// The baseline compiler for first calls, once turned on (`quick.rs`);
    /// shared with the epoch ticker, which advances its engine's epoch too.
    quick: Arc<Mutex<quick::QuickSlot>>,
    /// Where work ahead of use runs, made on first use.
    background: OnceLock<Option<rayon::ThreadPool>>,
    /// The program that compiles ahead of use in helper processes, if set
    /// (`helper.rs`).
    helper: OnceLock<PathBuf>,
    /// Compiles a call is waiting for, and a signal when one ends.
    foreground: (Mutex<usize>, Condvar),
    /// Started when the first store is made (`Runtime::ticking`): a
    /// one-shot `toolhost call` loads its component before a second
    /// thread exists, so mapping the code stops no other core.
    ticker: OnceLock<Ticker>,
    epoch_tick: Duration,
    /// The instance made ahead for the next call, if any (sandbox/spare.rs).
    pub(crate) spares: sandbox::Spares,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cache", &self.cache)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Build the engine; a linker is made when a component is first linked
    /// (`link.rs`), and the epoch ticker starts with the first store
    /// (`Runtime::ticking`).
    pub fn new(config: RuntimeConfig) -> Result<Self, RuntimeError> {
        let slots = config.max_concurrent_calls.clamp(1, MAX_CONCURRENT_CALLS);
        config.limits.check()?;
        let workers = OnceLock::new();
        // Every call may run one share of a fan-out on its own thread, and
        // the workers more run on extra threads; only a pool needs to know
        // how many now.
        let instances = if config.pool_instances {
            let count = fanout_workers(config.fanout_workers);
            let _ = workers.set(Slots::new(count));
            2 * slots + count + sandbox::OUTSIDE_CALLS
        } else {
            2 * slots + sandbox::OUTSIDE_CALLS
        };
        let engine = Engine::new(&engine_config(instances, config.pool_instances))
            .map_err(|e| RuntimeError::Engine(e.to_string()))?;
        let cache_dir = match config.cache {
            CacheDir::Default => CompileCache::default_dir(),
            CacheDir::At(dir) => Some(dir),
            CacheDir::Disabled => None,
        };
        Ok(Self {
            cache: CompileCache::new(cache_dir, config.cache_key, &engine, config.cache_max_bytes),
            ticker: OnceLock::new(),
            epoch_tick: config.epoch_tick,
            engine,
            linkers: link::Linkers::default(),
            limits: config.limits,
            slots: Slots::new(slots),
            max_calls: slots,
            workers,
            fanout_workers: config.fanout_workers,
            embedded: Mutex::new(HashMap::new()),
            unprepared: Mutex::new(HashSet::new()),
            progress: config.progress,
            quick: Arc::default(),
            background: OnceLock::new(),
            helper: OnceLock::new(),
            foreground: (Mutex::new(0), Condvar::new()),
            spares: sandbox::Spares::new(config.spares),
        })
    }

    /// How many calls may run in a sandbox at once (the instance pool is
    /// sized for it).
    pub fn max_concurrent_calls(&self) -> usize {
        self.max_calls as usize
    }

    /// How many calls started on an instance made ahead for them (see
    /// [`sandbox::runs_work_after_replies`]).
    pub fn calls_made_ahead(&self) -> u64 {
        self.spares.used()
    }

    /// The default per-call limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The linked embedded component with cache key `key`, made with `make`
    /// once per runtime (a failure is not kept: the next use tries again).
    pub(crate) fn embedded(
        &self,
        key: &str,
        linking: Linking,
        make: impl FnOnce() -> Result<ToolPluginPre<CallState>, String>,
    ) -> Result<ToolPluginPre<CallState>, String> {
        let known = self
            .embedded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .map(|(_, pre)| pre.clone());
        // The baseline compiler's code, once work ahead of use compiled the
        // component with Cranelift, is a miss: the next links that.
        if let Some(pre) = known.filter(|pre| !self.is_quick(pre) || !self.replaced(key)) {
            return Ok(pre);
        }
        let pre = make()?;
        self.embedded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_owned(), (stored_key(key, linking), pre.clone()));
        Ok(pre)
    }

    /// Forget the embedded component keyed `key` linked for this runtime
    /// ([`Runtime::link`] links it again when asked).
    pub(crate) fn forget_linked(&self, key: &str) {
        self.embedded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// Forget every embedded component linked for this runtime whose
    /// compiled code the compile cache holds (the next use loads it from
    /// there): also those no tool holds any longer, such as a built-in
    /// whose tool a reload of the plugins replaced.
    pub(crate) fn forget_linked_held(&self) {
        self.embedded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, (stored, _)| !self.cache.holds(stored));
    }

    /// Run `f` as work ahead of use: its compiles do not count as ones a
    /// call waits for (see [`Runtime::wait_for_foreground_compiles`]), and
    /// Cranelift runs them on threads of their own ([`Runtime::compile`]).
    pub(crate) fn in_background<T>(&self, f: impl FnOnce() -> T) -> T {
        let was = IN_BACKGROUND.replace(true);
        let out = f();
        IN_BACKGROUND.set(was);
        out
    }

    /// Compile `wasm` with Cranelift; as work ahead of use, on its own
    /// threads ([`background_threads`]), so a call compiling its tool
    /// meanwhile is not queued behind it. Only the compile runs there: the
    /// rest of work ahead (snapshots, linking) stays on the caller's
    /// thread.
    pub(super) fn compile(&self, wasm: &[u8]) -> wasmtime::Result<Component> {
        let compile = || Component::new(&self.engine, wasm);
        match IN_BACKGROUND.get() {
            true => match self.background.get_or_init(background_threads) {
                Some(threads) => threads.install(compile),
                None => compile(),
            },
            false => compile(),
        }
    }

    /// Wait until no compile that a call waits for is under way, so work
    /// ahead of use never slows a first call down for long.
    pub(crate) fn wait_for_foreground_compiles(&self) {
        let (count, done) = &self.foreground;
        let mut count = count.lock().unwrap_or_else(PoisonError::into_inner);
        while *count > 0 {
            count = done.wait(count).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Compile `wasm` (or load it from the cache) and pre-link it against
    /// the host's imports; an embedded component is linked once per runtime.
    pub(crate) fn link(
        &self,
        key: &str,
        wasm: WasmBytes<'_>,
        linking: Linking,
        label: &str,
    ) -> Result<ToolPluginPre<CallState>, String> {
        let make = || match self.quickly(key, wasm, linking, label) {
            Some((component, quick)) => self.pre_link(&component, Some(&quick)),
            None => self.pre_link(&self.compiled(key, wasm, linking, label)?, None),
        };
        match linking {
            Linking::Owned => make(),
            Linking::Embedded | Linking::Preinitialised => self.embedded(key, linking, make),
            Linking::Prepared(script) => self
                .link_prepared(key, wasm, script, label)
                .map(|(pre, _)| pre),
        }
    }

    /// A `javascript` tool's runner: its own snapshot with `script`
    /// prepared if the cache holds one (work ahead of use builds it:
    /// [`Runtime::compile_into_cache`]), else the shared one. Never a
    /// compile of the script's snapshot here, so a call never waits for
    /// one. Each tool keeps its own (not linked once per runtime: a tool
    /// removed or edited lets go of it). True if it is the prepared one.
    pub(crate) fn link_prepared(
        &self,
        key: &str,
        wasm: WasmBytes<'_>,
        script: &str,
        label: &str,
    ) -> Result<(ToolPluginPre<CallState>, bool), String> {
        let stored = stored_key(key, Linking::Prepared(script));
        if let Some(component) = self.cache.load(&self.engine, &stored) {
            return Ok((self.pre_link(&component, None)?, true));
        }
        let shared = self.link(key, wasm, Linking::Preinitialised, label)?;
        Ok((shared, false))
    }

    /// Whether preparing `script` failed before in this runtime (it is not
    /// tried again until the runtime is new: one that does not compile
    /// would fail the same way).
    pub(crate) fn prepare_failed(&self, key: &str, script: &str) -> bool {
        self.unprepared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&stored_key(key, Linking::Prepared(script)))
    }

    /// Work ahead of use: make sure the compile cache holds `wasm` compiled,
    /// without loading it (a loaded component stays mapped, which an idle
    /// server pays for in memory; its first call loads it from the cache).
    /// False when there is no cache to hold it: only loading it helps then.
    pub(crate) fn compile_into_cache(
        &self,
        key: &str,
        wasm: WasmBytes<'_>,
        linking: Linking,
        label: &str,
    ) -> Result<bool, String> {
        if !self.cache.is_kept() {
            return Ok(false);
        }
        let stored = stored_key(key, linking);
        // A prepared script's snapshot is never linked once per runtime;
        // the baseline compiler's code is not what the cache keeps.
        let linked = !matches!(linking, Linking::Prepared(_))
            && self
                .embedded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(key)
                .is_some_and(|(_, pre)| !self.is_quick(pre));
        // A script is prepared by a helper process if there is one (the
        // rest goes to one in `compiled`, which then loads what it wrote).
        let by_helper = || {
            matches!(linking, Linking::Prepared(_))
                && IN_BACKGROUND.get()
                && self.compiled_by_helper(&stored, key, wasm, linking, label)
        };
        if !linked && !self.cache.holds(&stored) && !by_helper() {
            drop(self.compiled(key, wasm, linking, label)?);
        }
        self.replace_quick(key);
        Ok(true)
    }

    /// `wasm` compiled, from the cache or by Cranelift (and then cached).
    /// A pre-initialised component is snapshotted first (see [`preinit`])
    /// and cached under a key of its own; if that fails, the component as
    /// it is (slower calls, never broken).
    pub(super) fn compiled(
        &self,
        key: &str,
        wasm: WasmBytes<'_>,
        linking: Linking,
        label: &str,
    ) -> Result<Component, String> {
        let compiling = || Compiling::start(self, label, wasm.len());
        if IN_BACKGROUND.get() && !matches!(linking, Linking::Prepared(_)) {
            // Work ahead of use compiles in a helper process if there is
            // one; what it wrote is loaded below like any cache entry.
            let stored = stored_key(key, linking);
            if !self.cache.holds(&stored) {
                self.compiled_by_helper(&stored, key, wasm, linking, label);
            }
        }
        if let Linking::Preinitialised | Linking::Prepared(_) = linking {
            let script = match linking {
                Linking::Prepared(script) => Some(script),
                _ => None,
            };
            let snapshot =
                self.cache
                    .component(&self.engine, &stored_key(key, linking), compiling, || {
                        let snapshot = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            let bytes = wasm.unpacked().map_err(wasmtime::Error::msg)?;
                            preinit::snapshot(self, key, &bytes, script)
                        }))
                        .unwrap_or_else(|_| {
                            Err(wasmtime::Error::msg("pre-initialisation panicked"))
                        })?;
                        self.compile(&snapshot)
                    });
            match snapshot {
                Ok(component) => return Ok(component),
                Err(err) if script.is_some() => {
                    tracing::debug!(%label, %err, "cannot prepare its script; its calls parse it");
                    self.unprepared
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(stored_key(key, linking));
                    return self.compiled(key, wasm, Linking::Preinitialised, label);
                }
                Err(err) => {
                    tracing::warn!(%label, %err, "cannot pre-initialise; its calls start from scratch");
                }
            }
        }
        self.cache
            .component(&self.engine, key, compiling, || {
                self.compile(&wasm.unpacked().map_err(wasmtime::Error::msg)?)
            })
            .map_err(|e| format!("not a valid wasm component: {e}"))
    }

    /// `component` linked by the runtime's linkers, or by those of the
    /// baseline compiler's engine that compiled it.
    fn pre_link(
        &self,
        component: &Component,
        quick: Option<&quick::Quick>,
    ) -> Result<ToolPluginPre<CallState>, String> {
        ToolPluginPre::new(self.instance_pre(component, quick)?)
            .map_err(|e| format!("it does not export toolhost:plugin/tool@0.1.0: {e}"))
    }

    pub(super) fn instance_pre(
        &self,
        component: &Component,
        quick: Option<&quick::Quick>,
    ) -> Result<InstancePre<CallState>, String> {
        let linker = match quick {
            Some(quick) => quick.linkers.for_component(&quick.engine, component),
            None => self.linkers.for_component(&self.engine, component),
        };
        let linker = linker.map_err(|e| format!("cannot link it: {e}"))?;
        linker.instantiate_pre(component).map_err(|e| {
            format!("it needs an import this host does not provide (toolhost gives components WASI 0.2 and its own toolhost:plugin imports): {e}")
        })
    }

    /// What the component keyed `key` says it is: `describe()` run once in
    /// an empty sandbox, its answer cached for [`Runtime::cached_info`].
    pub(crate) fn describe(
        &self,
        key: &str,
        pre: &ToolPluginPre<CallState>,
    ) -> Result<ToolInfo, String> {
        let (raw, env) = sandbox::describe(self, pre)?;
        if let Some(problem) = env_problems(&env).into_iter().next() {
            return Err(problem.message);
        }
        let info = ToolInfo::from_wit(raw)
            .map_err(|e| e.to_string())?
            .with_env(env);
        self.cache.store_info(key, &info);
        Ok(info)
    }
}

/// Give the memory the allocator holds freed back to the system (glibc
/// keeps what many threads freed in their arenas: after compiling every
/// tool, well over 100 MB). Elsewhere, nothing to do.
pub(crate) fn release_freed_memory() {
    allocator(AllocatorAsk::Trim);
}

/// For a long-running server: have the allocator give freed memory back
/// as it goes. glibc raises its thresholds as large blocks come and go
/// (a first call's compile frees blocks of megabytes), and then keeps up
/// to twice the largest free at the top of each thread's arena, which
/// `malloc_trim` does not return: a server idled with 10 MB of such free
/// memory per busy arena (docs/benchmarks.md, "Memory"). Fixed
/// thresholds (blocks from 4 MB mapped on their own; an arena's free top
/// past 2 MB returned) keep it small, and calls measured no slower.
pub fn give_freed_memory_back() {
    allocator(AllocatorAsk::Thresholds);
}

/// Ask the kernel to reclaim the whole pages inside `bytes` now
/// (`MADV_PAGEOUT`). For the binary's embedded components: read only to
/// compile, they stay resident once read, as file-backed memory of the
/// binary. Their contents do not change: a page of a file is read again
/// from it when next touched (an anonymous one is swapped out, or left).
/// False if the kernel refused (before Linux 5.4 it has no such advice).
pub(crate) fn reclaim(bytes: &[u8]) -> bool {
    allocator(AllocatorAsk::Reclaim(bytes))
}

enum AllocatorAsk<'a> {
    Trim,
    Thresholds,
    Reclaim(&'a [u8]),
}

/// What the allocator and the kernel are asked, in the host's one place
/// for such calls; false if one was refused.
fn allocator(ask: AllocatorAsk<'_>) -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[expect(
        unsafe_code,
        reason = "libc calls: the allocator's, and madvise over whole pages of a borrow"
    )]
    // SAFETY: malloc_trim only walks the allocator's own state, under its
    // locks, and mallopt only sets its parameters, under its lock; any
    // thread may call them at any time. madvise gets whole pages inside
    // `bytes` (`whole_pages`), a live borrow, so mapped; MADV_PAGEOUT
    // keeps every page's contents, so no reference to them sees a change.
    let refused = unsafe {
        match ask {
            AllocatorAsk::Trim => {
                libc::malloc_trim(0);
                false
            }
            AllocatorAsk::Thresholds => {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20) == 0
                    || libc::mallopt(libc::M_TRIM_THRESHOLD, 2 << 20) == 0
            }
            AllocatorAsk::Reclaim(bytes) => {
                let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).unwrap_or(4096);
                whole_pages(bytes, page).is_some_and(|(first, len)| {
                    libc::madvise(first as *mut libc::c_void, len, libc::MADV_PAGEOUT) != 0
                })
            }
        }
    };
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let (refused, _) = (false, ask);
    if refused {
        let err = std::io::Error::last_os_error();
        tracing::debug!(%err, "the allocator or the kernel refused");
    }
    !refused
}

/// The whole pages of `page` bytes inside `bytes` (never one with a byte
/// outside): the first's address and their length; none if no page fits.
fn whole_pages(bytes: &[u8], page: usize) -> Option<(usize, usize)> {
    let start = bytes.as_ptr() as usize;
    let first = start.checked_next_multiple_of(page)?;
    let last = (start + bytes.len()) / page * page;
    (last > first).then(|| (first, last - first))
}

/// The cache key the component keyed `key` is compiled under, as `linking`
/// links it.
fn stored_key(key: &str, linking: Linking) -> String {
    match linking {
        Linking::Preinitialised => format!("{key}.preinit"),
        Linking::Prepared(script) => {
            let hash = blake3::hash(script.as_bytes()).to_hex();
            format!("{key}.preinit-{}", &hash[..32])
        }
        Linking::Owned | Linking::Embedded => key.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::whole_pages;

    /// The pages given to the kernel lie wholly inside the bytes: rounded
    /// inward at both ends, none for a span shorter than a page or empty.
    #[test]
    fn only_whole_pages_inside_the_bytes_are_reclaimed() {
        const PAGE: usize = 4096;
        let buffer = vec![0u8; 5 * PAGE];
        let base = buffer.as_ptr() as usize;
        let offset = base.next_multiple_of(PAGE) - base;
        let aligned = &buffer[offset..offset + 3 * PAGE];
        let start = aligned.as_ptr() as usize;
        assert_eq!(whole_pages(aligned, PAGE), Some((start, 3 * PAGE)));
        let inside = &aligned[1..3 * PAGE - 1];
        assert_eq!(whole_pages(inside, PAGE), Some((start + PAGE, PAGE)));
        assert_eq!(
            whole_pages(&aligned[1..PAGE + 1], PAGE),
            None,
            "no whole page"
        );
        assert_eq!(
            whole_pages(&aligned[..PAGE - 1], PAGE),
            None,
            "under a page"
        );
        assert_eq!(whole_pages(&aligned[..0], PAGE), None, "empty");
        assert_eq!(whole_pages(&[], PAGE), None, "empty, dangling");
    }
}
