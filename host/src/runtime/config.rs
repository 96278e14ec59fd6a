//! The runtime's configuration: per-call limits, the compile cache's place, compile progress.

use super::*;

pub use engine::*;

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
    /// The file holding the key that signs the cache's compiled
    /// components (default `None`: `toolhost/compile-cache.key` in the data
    /// directory, which no command reaches); made if missing.
    pub cache_key: Option<PathBuf>,
    /// On threads that run work after their replies (the MCP server's
    /// call workers; [`crate::sandbox::runs_work_after_replies`]), for a
    /// component whose instantiation at a call took at least this long:
    /// drop a call's store after its reply, and make the next instance of
    /// a tool called twice running ahead, after the reply (default 50 µs:
    /// a JavaScript or Python tool, not a built-in). `None`: every store
    /// is dropped in place and each call instantiates its own
    /// (`TOOLHOST_SPARES=0` for the binary).
    pub spares: Option<Duration>,
}

/// What [`CompileProgress`] is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompileEvent<'a> {
    /// A compiler (Cranelift, or the baseline compiler for a first call)
    /// starts compiling `what` (a tool name or a file), `bytes` long: the
    /// compile cache did not have it.
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
    pub(super) static IN_BACKGROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// One compile under way: reported to the progress hook, and counted while
/// a call waits for it. Dropping it ends both, however the compile ended.
pub(super) struct Compiling<'a> {
    runtime: &'a Runtime,
    what: &'a str,
    foreground: bool,
}

impl<'a> Compiling<'a> {
    pub(super) fn start(runtime: &'a Runtime, what: &'a str, bytes: usize) -> Self {
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
            cache_key: None,
            spares: Some(Duration::from_micros(50)),
        }
    }
}

/// Fan-out workers: `configured`, or the cores minus one. Counting the
/// cores reads the cgroup's CPU quota from /proc and /sys, a tenth of a
/// millisecond that a one-shot `toolhost call` without a fan-out skips.
pub(super) fn fanout_workers(configured: Option<u32>) -> u32 {
    configured
        .unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(0, |n| {
                u32::try_from(n.get()).unwrap_or(u32::MAX).saturating_sub(1)
            })
        })
        .min(MAX_CONCURRENT_CALLS)
}
