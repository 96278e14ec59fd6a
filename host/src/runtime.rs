//! The one wasmtime [`Engine`] and everything shared by all calls: the
//! pooling allocator, the epoch ticker, the linkers with WASI and the
//! toolhost imports (one per set of imports: `link.rs`), the compile cache
//! and the slot semaphore.
//!
//! `Runtime::link` turns wasm bytes into a pre-linked component (compiled
//! once, from the cache afterwards); [`sandbox`] makes a fresh store for one
//! call from it, and `fanout` runs a call's shares.

mod cache;
pub(crate) mod fanout;
mod link;
mod preinit;
pub mod sandbox;

use crate::bindings::ToolPluginPre;
use crate::types::tool_info::{Problem, Severity, ToolInfo, problems_of};
use cache::CompileCache;
use sandbox::CallState;
use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;
use wasmtime::component::Component;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Per-call limits. Every field is configurable; the defaults suit coding tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most linear memory one call may use, in bytes (default 256 MiB).
    pub memory_bytes: usize,
    /// Wall-clock deadline of one call (default 30 s).
    pub timeout: Duration,
    /// Most bytes a guest may pass to the host in one host call (default 64 MiB).
    pub hostcall_fuel: usize,
    /// Most host resources (files, streams, ...) alive at once (default 1024).
    pub max_resources: usize,
    /// Most bytes of output text kept from a call (default 1 MiB); more is cut with a note.
    pub max_output_bytes: usize,
    /// Most bytes of guest stdout and of stderr kept for logs (default 64 KiB each).
    pub max_captured_bytes: usize,
}

impl Limits {
    /// Refuse limits the sandbox cannot honour.
    pub fn check(&self) -> Result<(), RuntimeError> {
        let bad = |what: String| Err(RuntimeError::Limits(what));
        if self.memory_bytes == 0 || self.memory_bytes > MAX_MEMORY_BYTES {
            return bad(format!(
                "memory limit {} bytes is out of range; use 1 byte to 4 GiB (a wasm32 memory cannot be larger)",
                self.memory_bytes
            ));
        }
        if self.timeout.is_zero() || self.timeout > MAX_TIMEOUT {
            return bad(format!(
                "timeout {:?} is out of range; use more than 0 and at most 24 hours",
                self.timeout
            ));
        }
        if self.max_output_bytes == 0 || self.hostcall_fuel == 0 || self.max_resources == 0 {
            return bad("output, host-call and resource limits must be above 0".to_owned());
        }
        Ok(())
    }
}

/// The longest deadline a call may have.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 256 << 20,
            timeout: Duration::from_secs(30),
            hostcall_fuel: 64 << 20,
            max_resources: 1024,
            max_output_bytes: 1 << 20,
            max_captured_bytes: 64 << 10,
        }
    }
}

/// Where compiled components are cached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CacheDir {
    /// `$XDG_CACHE_HOME/toolhost` (or the platform's cache directory).
    #[default]
    Default,
    /// This directory.
    At(PathBuf),
    /// No disk cache: compile on every start.
    Disabled,
}

/// How to build a [`Runtime`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// The compile cache location.
    pub cache: CacheDir,
    /// Most calls running at once; the instance pool is sized to match and
    /// further calls wait for a slot (default 32).
    pub max_concurrent_calls: u32,
    /// Extra threads a call may fan out to with `parallel.run-shares`, shared
    /// by all calls (default `None`: the number of cores minus one, counted
    /// when the instance pool is sized or, without a pool, when a call
    /// first fans out).
    pub fanout_workers: Option<u32>,
    /// Epoch tick: how often deadlines and cancellation are checked (default 5 ms).
    pub epoch_tick: Duration,
    /// Default per-call limits.
    pub limits: Limits,
    /// Told when a component has to be compiled (none by default).
    pub progress: Option<CompileProgress>,
    /// Keep a pool of instances sized for `max_concurrent_calls`, set up
    /// once, so each call's fresh instance is cheap (default). Without it
    /// each instance is allocated when its call starts: what a process
    /// that makes one call (`toolhost call`) wants, as setting up and
    /// tearing down the pool would cost more than its one call. The
    /// per-component limits are the same either way.
    pub pool_instances: bool,
    /// Most bytes the compile cache directory keeps; storing a new entry
    /// evicts those used longest ago (default 1 GiB; see `runtime/cache.rs`).
    pub cache_max_bytes: u64,
}

/// What [`CompileProgress`] is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompileEvent<'a> {
    /// Cranelift starts compiling `what` (a tool name or a file), `bytes`
    /// long: the compile cache did not have it.
    Started {
        /// The tool or file.
        what: &'a str,
        /// The component's size.
        bytes: usize,
    },
    /// Compiling `what` ended (well or not).
    Finished {
        /// The tool or file.
        what: &'a str,
    },
}

/// A front end's hook for compile progress: the CLI shows a progress bar
/// while a first use compiles. Called on the compiling thread; several
/// compiles may overlap.
#[derive(Clone)]
pub struct CompileProgress(Arc<dyn Fn(CompileEvent<'_>) + Send + Sync>);

impl CompileProgress {
    /// Call `f` with every [`CompileEvent`].
    pub fn new(f: impl Fn(CompileEvent<'_>) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    fn report(&self, event: CompileEvent<'_>) {
        (self.0)(event);
    }
}

impl std::fmt::Debug for CompileProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompileProgress(..)")
    }
}

impl PartialEq for CompileProgress {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for CompileProgress {}

thread_local! {
    /// Set on a thread compiling ahead of use ([`Runtime::in_background`]):
    /// its compiles do not hold back the others.
    static IN_BACKGROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// One compile under way: reported to the progress hook, and counted while
/// a call waits for it. Dropping it ends both, however the compile ended.
struct Compiling<'a> {
    runtime: &'a Runtime,
    what: &'a str,
    foreground: bool,
}

impl<'a> Compiling<'a> {
    fn start(runtime: &'a Runtime, what: &'a str, bytes: usize) -> Self {
        let foreground = !IN_BACKGROUND.get();
        if foreground {
            *runtime
                .foreground
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner) += 1;
        }
        if let Some(progress) = &runtime.progress {
            progress.report(CompileEvent::Started { what, bytes });
        }
        Self {
            runtime,
            what,
            foreground,
        }
    }
}

impl Drop for Compiling<'_> {
    fn drop(&mut self) {
        if let Some(progress) = &self.runtime.progress {
            progress.report(CompileEvent::Finished { what: self.what });
        }
        if self.foreground {
            let (count, done) = &self.runtime.foreground;
            *count.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
            done.notify_all();
        }
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache: CacheDir::Default,
            max_concurrent_calls: 32,
            fanout_workers: None,
            epoch_tick: Duration::from_millis(5),
            limits: Limits::default(),
            pool_instances: true,
            progress: None,
            cache_max_bytes: cache::DEFAULT_CACHE_MAX_BYTES,
        }
    }
}

/// Fan-out workers: `configured`, or the cores minus one. Counting the
/// cores reads the cgroup's CPU quota from /proc and /sys, a tenth of a
/// millisecond that a one-shot `toolhost call` without a fan-out skips.
fn fanout_workers(configured: Option<u32>) -> u32 {
    configured
        .unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(0, |n| {
                u32::try_from(n.get()).unwrap_or(u32::MAX).saturating_sub(1)
            })
        })
        .min(MAX_CONCURRENT_CALLS)
}

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
    /// key: a reload or a new dynamic tool on the same runner reuses them.
    embedded: Mutex<HashMap<String, ToolPluginPre<CallState>>>,
    /// Cache keys of scripts whose preparing failed (see
    /// [`Runtime::prepare_failed`]).
    unprepared: Mutex<HashSet<String>>,
    progress: Option<CompileProgress>,
    /// Compiles a call is waiting for, and a signal when one ends.
    foreground: (Mutex<usize>, Condvar),
    /// Started when the first store is made (`Runtime::ticking`): a
    /// one-shot `toolhost call` loads its component before a second
    /// thread exists, so mapping the code stops no other core.
    ticker: OnceLock<Ticker>,
    epoch_tick: Duration,
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
            2 * slots + count
        } else {
            2 * slots
        };
        let engine = Engine::new(&engine_config(instances, config.pool_instances))
            .map_err(|e| RuntimeError::Engine(e.to_string()))?;
        let cache_dir = match config.cache {
            CacheDir::Default => CompileCache::default_dir(),
            CacheDir::At(dir) => Some(dir),
            CacheDir::Disabled => None,
        };
        Ok(Self {
            cache: CompileCache::new(cache_dir, &engine, config.cache_max_bytes),
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
            foreground: (Mutex::new(0), Condvar::new()),
        })
    }

    /// How many calls may run in a sandbox at once (the instance pool is
    /// sized for it).
    pub fn max_concurrent_calls(&self) -> usize {
        self.max_calls as usize
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
        make: impl FnOnce() -> Result<ToolPluginPre<CallState>, String>,
    ) -> Result<ToolPluginPre<CallState>, String> {
        let known = self
            .embedded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned();
        if let Some(pre) = known {
            return Ok(pre);
        }
        let pre = make()?;
        self.embedded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_owned(), pre.clone());
        Ok(pre)
    }

    /// Whether the compile cache holds the component keyed `key`, compiled
    /// as `linking` says (a prepared script: or the shared snapshot its
    /// calls fall back to): letting go of it loaded then costs only a load.
    pub(crate) fn holds_compiled(&self, key: &str, linking: Linking) -> bool {
        self.cache.holds(&stored_key(key, linking))
            || matches!(linking, Linking::Prepared(_))
                && self.holds_compiled(key, Linking::Preinitialised)
    }

    /// Whether the compile cache holds the snapshot of the component keyed
    /// `key` with `script` prepared.
    pub(crate) fn holds_prepared(&self, key: &str, script: &str) -> bool {
        self.cache
            .holds(&stored_key(key, Linking::Prepared(script)))
    }

    /// Forget the embedded component keyed `key` linked for this runtime
    /// ([`Runtime::link`] links it again when asked).
    pub(crate) fn forget_linked(&self, key: &str) {
        self.embedded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// Hold one of the `max_concurrent_calls` slots while a call runs. A
    /// thread that already holds one takes no second: a host function of a
    /// running call that instantiates another component (create_tool's
    /// component check) would otherwise wait forever once all are taken.
    pub(crate) fn slot(&self) -> SlotGuard<'_> {
        if HOLDING_SLOT.get() {
            return SlotGuard {
                slots: None,
                outer: false,
            };
        }
        let mut guard = self.slots.acquire();
        guard.outer = true;
        HOLDING_SLOT.set(true);
        guard
    }

    /// How many call slots were ever taken, and whether all are free now.
    pub(crate) fn activity(&self) -> (u64, bool) {
        let taken = self.slots.taken.load(std::sync::atomic::Ordering::Relaxed);
        (taken, self.slots.free() == self.max_concurrent_calls())
    }

    /// Make sure the epoch advances, so a store's deadline and cancellation
    /// are checked: every store is made after this. Fails only if the
    /// thread cannot start (tried again next time).
    pub(crate) fn ticking(&self) -> Result<(), RuntimeError> {
        if self.ticker.get().is_none() {
            // Two first stores at once may both start one; the second
            // is stopped at once.
            let _ = self
                .ticker
                .set(Ticker::start(self.engine.clone(), self.epoch_tick)?);
        }
        Ok(())
    }

    /// Up to `n` permits for extra fan-out threads, as many as are free now.
    pub(crate) fn extra_workers(&self, n: usize) -> Vec<SlotGuard<'_>> {
        let workers = self.workers();
        std::iter::from_fn(|| workers.try_acquire())
            .take(n)
            .collect()
    }

    /// How many fan-out permits are free now.
    pub(crate) fn free_workers(&self) -> usize {
        self.workers().free()
    }

    fn workers(&self) -> &Slots {
        self.workers
            .get_or_init(|| Slots::new(fanout_workers(self.fanout_workers)))
    }

    /// Run `f` as work ahead of use: its compiles do not count as ones a
    /// call waits for (see [`Runtime::wait_for_foreground_compiles`]).
    pub(crate) fn in_background<T>(&self, f: impl FnOnce() -> T) -> T {
        let was = IN_BACKGROUND.replace(true);
        let out = f();
        IN_BACKGROUND.set(was);
        out
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

    /// The cache key of a component whose content hash is `hash`.
    pub(crate) fn cache_key(&self, hash: &str) -> String {
        self.cache.key(hash)
    }

    /// The tool-info cached for `key`, if `describe()` ran before.
    pub(crate) fn cached_info(&self, key: &str) -> Option<ToolInfo> {
        self.cache.load_info(key)
    }

    /// Compile `wasm` (or load it from the cache) and pre-link it against
    /// the host's imports; an embedded component is linked once per runtime.
    pub(crate) fn link(
        &self,
        key: &str,
        wasm: &[u8],
        linking: Linking,
        label: &str,
    ) -> Result<ToolPluginPre<CallState>, String> {
        let make = || self.pre_link(&self.compiled(key, wasm, linking, label)?);
        match linking {
            Linking::Owned => make(),
            Linking::Embedded | Linking::Preinitialised => self.embedded(key, make),
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
        wasm: &[u8],
        script: &str,
        label: &str,
    ) -> Result<(ToolPluginPre<CallState>, bool), String> {
        let stored = stored_key(key, Linking::Prepared(script));
        if let Some(component) = self.cache.load(&self.engine, &stored) {
            return Ok((self.pre_link(&component)?, true));
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
        wasm: &[u8],
        linking: Linking,
        label: &str,
    ) -> Result<bool, String> {
        if !self.cache.is_kept() {
            return Ok(false);
        }
        let stored = stored_key(key, linking);
        // A prepared script's snapshot is never linked once per runtime.
        let linked = !matches!(linking, Linking::Prepared(_))
            && self
                .embedded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains_key(key);
        if !linked && !self.cache.holds(&stored) {
            drop(self.compiled(key, wasm, linking, label)?);
        }
        Ok(true)
    }

    /// `wasm` compiled, from the cache or by Cranelift (and then cached).
    /// A pre-initialised component is snapshotted first (see [`preinit`])
    /// and cached under a key of its own; if that fails, the component as
    /// it is (slower calls, never broken).
    fn compiled(
        &self,
        key: &str,
        wasm: &[u8],
        linking: Linking,
        label: &str,
    ) -> Result<Component, String> {
        let compiling = || Compiling::start(self, label, wasm.len());
        if let Linking::Preinitialised | Linking::Prepared(_) = linking {
            let script = match linking {
                Linking::Prepared(script) => Some(script),
                _ => None,
            };
            let snapshot =
                self.cache
                    .component(&self.engine, &stored_key(key, linking), compiling, || {
                        let snapshot = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            preinit::snapshot(self, key, wasm, script)
                        }))
                        .unwrap_or_else(|_| {
                            Err(wasmtime::Error::msg("pre-initialisation panicked"))
                        })?;
                        Component::new(&self.engine, snapshot)
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
                Component::new(&self.engine, wasm)
            })
            .map_err(|e| format!("not a valid wasm component: {e}"))
    }

    fn pre_link(&self, component: &Component) -> Result<ToolPluginPre<CallState>, String> {
        let linker = self
            .linkers
            .for_component(&self.engine, component)
            .map_err(|e| format!("cannot link it: {e}"))?;
        let pre = linker.instantiate_pre(component).map_err(|e| {
            format!("it needs an import this host does not provide (is it built for the toolhost:plugin@0.1.0 world?): {e}")
        })?;
        ToolPluginPre::new(pre)
            .map_err(|e| format!("it does not export toolhost:plugin/tool@0.1.0: {e}"))
    }

    /// What the component keyed `key` says it is: `describe()` run once in
    /// an empty sandbox, its answer cached for [`Runtime::cached_info`].
    pub(crate) fn describe(
        &self,
        key: &str,
        pre: &ToolPluginPre<CallState>,
    ) -> Result<ToolInfo, String> {
        let info = ToolInfo::from_wit(sandbox::describe(self, pre)?).map_err(|e| e.to_string())?;
        self.cache.store_info(key, &info);
        Ok(info)
    }

    /// Compile, link and describe `wasm`, then run every check of
    /// `toolhost check` on what it says it is. Returns its cache key, its
    /// tool-info and the linked component, or every error found, one per
    /// line.
    pub(crate) fn check_component(
        &self,
        wasm: &[u8],
    ) -> Result<(String, ToolInfo, ToolPluginPre<CallState>), String> {
        let (checked, problems) = self.check_wasm(wasm);
        let errors: Vec<String> = problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .map(ToString::to_string)
            .collect();
        match checked {
            Some(found) if errors.is_empty() => Ok(found),
            _ => Err(errors.join("\n")),
        }
    }

    /// Every problem of `wasm` (errors and warnings) as `toolhost check`
    /// reports them, and what it is when it loads.
    #[expect(clippy::type_complexity, reason = "crate-internal plumbing")]
    fn check_wasm(
        &self,
        wasm: &[u8],
    ) -> (
        Option<(String, ToolInfo, ToolPluginPre<CallState>)>,
        Vec<Problem>,
    ) {
        if wasm.len() as u64 > MAX_COMPONENT_BYTES {
            let problem = Problem::component(
                format!(
                    "the component is {} bytes; the limit is {MAX_COMPONENT_BYTES}",
                    wasm.len()
                ),
                "make it smaller: build in release mode and strip debug information",
            );
            return (None, vec![problem]);
        }
        let key = self.cache.key(&blake3::hash(wasm).to_hex());
        let pre = match self.link(&key, wasm, Linking::Owned, "the component") {
            Ok(pre) => pre,
            Err(e) => {
                let fix = "build it for wasm32-wasip2 against the `toolhost:plugin@0.1.0` WIT this host ships (the SDKs do)";
                return (None, vec![Problem::component(e, fix)]);
            }
        };
        // A component described before is checked from the cache's record
        // of its answer (one that loaded), not instantiated again.
        if let Some(info) = self.cached_info(&key) {
            let problems = problems_of(&(&info).into());
            return (Some((key, info, pre)), problems);
        }
        let raw = match sandbox::describe(self, &pre) {
            Ok(raw) => raw,
            Err(e) => {
                let fix = "`describe` must return without touching files, commands or the network";
                return (None, vec![Problem::component(e, fix)]);
            }
        };
        let problems = problems_of(&raw);
        let checked = ToolInfo::from_wit(raw).ok().map(|info| {
            self.cache.store_info(&key, &info);
            (key, info, pre)
        });
        (checked, problems)
    }

    /// `toolhost check` of one component: what it is (when it loads) and
    /// every problem found, errors and warnings, each with what to fix.
    pub fn check_report(&self, wasm: &[u8]) -> CheckReport {
        let (checked, problems) = self.check_wasm(wasm);
        CheckReport {
            info: checked.map(|(_, info, _)| info),
            problems,
        }
    }
}

/// Give the memory the allocator holds freed back to the system (glibc
/// keeps what many threads freed in their arenas: after compiling every
/// tool, well over 100 MB). Elsewhere, nothing to do.
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[expect(unsafe_code, reason = "a libc call with no pointer")]
    // SAFETY: malloc_trim only walks the allocator's own state, under its
    // locks; any thread may call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
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

/// How [`Runtime::link`] treats a component's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Linking<'a> {
    /// Loaded from a file or given by a caller: linked on each load.
    Owned,
    /// Embedded in the binary: linked once per runtime.
    Embedded,
    /// Embedded, and pre-initialised by its `wizer-initialize` export
    /// before it is compiled (see [`preinit`]).
    Preinitialised,
    /// Pre-initialised, then this script (a `javascript` tool's source)
    /// prepared in it: a snapshot per script, built only as work ahead of
    /// use; until one is cached, calls run in the `Preinitialised` one.
    Prepared(&'a str),
}

/// What `toolhost check` found in one component.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// What the component says it is, when its description could be read.
    pub info: Option<ToolInfo>,
    /// Errors and warnings, in the order found.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// No error (warnings allowed): the component loads.
    pub fn conforms(&self) -> bool {
        self.info.is_some() && self.problems.iter().all(|p| p.severity != Severity::Error)
    }
}

/// The largest component `check_component` (and so create_tool) accepts.
pub const MAX_COMPONENT_BYTES: u64 = 64 * 1024 * 1024;

/// Most calls at once; the pool reserves address space for each.
pub const MAX_CONCURRENT_CALLS: u32 = 1024;
/// The largest linear memory a 32-bit wasm memory can have.
pub const MAX_MEMORY_BYTES: usize = 4 << 30;
/// Most elements in one table; the pool reserves this much per table.
pub(crate) const MAX_TABLE_ELEMENTS: usize = 100_000;
/// Per component: core instances, memories, tables. A Rust wasm32-wasip2
/// component has one memory and a few small core instances (the program
/// plus wit-component's shims); these leave headroom. The pool is sized by
/// them, and each call's store limits its component to them (so a runtime
/// without a pool enforces the same).
pub(crate) const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
pub(crate) const MEMORIES_PER_COMPONENT: u32 = 2;
pub(crate) const TABLES_PER_COMPONENT: u32 = 8;

/// With `pooled`, the pool holds `slots` components, each at the
/// per-component maxima, so with the semaphores in front instantiation
/// never finds it exhausted; without, instances are allocated on demand.
fn engine_config(slots: u32, pooled: bool) -> Config {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_core_instances(slots * CORE_INSTANCES_PER_COMPONENT)
        .total_memories(slots * MEMORIES_PER_COMPONENT)
        .total_tables(slots * TABLES_PER_COMPONENT)
        .total_stacks(slots)
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        .max_memories_per_component(MEMORIES_PER_COMPONENT)
        .max_tables_per_component(TABLES_PER_COMPONENT)
        .max_component_instance_size(1 << 20)
        .max_core_instance_size(4 << 20)
        .table_elements(MAX_TABLE_ELEMENTS)
        // The per-call memory limit is enforced by the store's limiter, so a
        // denied growth is seen and reported as `out_of_memory`; the pool
        // only reserves address space (virtual, not resident).
        .max_memory_size(MAX_MEMORY_BYTES)
        // Keep recently used pages resident so a fresh instance per call is cheap.
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(64 << 10)
        .pagemap_scan(Enabled::Auto);
    let mut config = Config::new();
    config
        .allocation_strategy(if pooled {
            InstanceAllocationStrategy::Pooling(pool)
        } else {
            InstanceAllocationStrategy::OnDemand
        })
        .epoch_interruption(true)
        .wasm_backtrace_max_frames(std::num::NonZeroUsize::new(20));
    config
}

/// Advances the engine's epoch every tick so running calls check their
/// deadline and cancellation. Stops when dropped, at once: the thread
/// waits on a channel, not a sleep, so dropping the runtime (at the end of
/// every `toolhost call`) does not wait out the rest of a tick.
struct Ticker {
    /// Dropped to stop the thread.
    stop: Option<std::sync::mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Start the thread; without it no deadline would be enforced, so
    /// failing to start it fails the runtime.
    fn start(engine: Engine, tick: Duration) -> Result<Self, RuntimeError> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("toolhost-epoch".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(tick)
                {
                    engine.increment_epoch();
                }
            })
            .map_err(|e| RuntimeError::Engine(format!("cannot start the epoch thread: {e}")))?;
        Ok(Self {
            stop: Some(stop),
            handle: Some(handle),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// A counting semaphore over the instance pool's slots.
struct Slots {
    free: Mutex<u32>,
    freed: Condvar,
    /// Slots taken so far.
    taken: std::sync::atomic::AtomicU64,
}

pub(crate) struct SlotGuard<'a> {
    /// The slot held; none for a nested use on a thread already holding one.
    slots: Option<&'a Slots>,
    /// This guard marks its thread as holding a call slot.
    outer: bool,
}

thread_local! {
    /// Whether this thread holds a call slot (see [`Runtime::slot`]).
    static HOLDING_SLOT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Slots {
    fn new(n: u32) -> Self {
        Self {
            free: Mutex::new(n),
            freed: Condvar::new(),
            taken: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn try_acquire(&self) -> Option<SlotGuard<'_>> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        if *free == 0 {
            return None;
        }
        *free -= 1;
        self.taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(SlotGuard {
            slots: Some(self),
            outer: false,
        })
    }

    fn free(&self) -> usize {
        *self.free.lock().unwrap_or_else(PoisonError::into_inner) as usize
    }

    fn acquire(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        while *free == 0 {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *free -= 1;
        self.taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SlotGuard {
            slots: Some(self),
            outer: false,
        }
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        if self.outer {
            HOLDING_SLOT.set(false);
        }
        if let Some(slots) = self.slots {
            *slots.free.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            slots.freed.notify_one();
        }
    }
}
