//! The engine's configuration, its epoch ticker and the call slots that bound calls at once.

use super::*;

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
pub(super) fn engine_config(slots: u32, pooled: bool) -> Config {
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
        // Keep recently used pages resident so a fresh instance per call is
        // cheap: reset in place rather than faulted in again. A Rust
        // component's first 1 MiB is its stack; the heap above it is where
        // a snapshot's state lives (QuickJS's realm: with 1 MiB kept, a
        // trivial javascript tool's call was 46 µs, with 4 MiB 31 µs, the
        // same as with 16). Only the pages a call touched stay, at most
        // 4 MiB a warm slot (docs/benchmarks.md).
        .linear_memory_keep_resident(4 << 20)
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

/// Threads for work ahead of use, one per core. A compile a call waits
/// for runs on rayon's global threads instead (wasmtime compiles a
/// component's functions in parallel on the threads of the pool it is
/// called from): on the same pool it would queue behind the background's
/// jobs; on its own it shares the cores with them. Not a lower priority:
/// that is against every process on the machine, and on a busy one work
/// ahead at nice 10 took minutes. None if they cannot be started (work
/// ahead then runs on the global threads, as before).
pub(super) fn background_threads() -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("toolhost-ahead-{i}"))
        .build()
        .inspect_err(|err| tracing::debug!(%err, "no threads for work ahead of use"))
        .ok()
}

/// Advances the engine's epoch every tick so running calls check their
/// deadline and cancellation. Stops when dropped, at once: the thread
/// waits on a channel, not a sleep, so dropping the runtime (at the end of
/// every `toolhost call`) does not wait out the rest of a tick.
pub(super) struct Ticker {
    /// Dropped to stop the thread.
    stop: Option<std::sync::mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Start the thread, which calls `advance` (advancing the engines'
    /// epochs) every tick; without it no deadline would be enforced, so
    /// failing to start it fails the runtime.
    pub(super) fn start(
        tick: Duration,
        advance: impl Fn() + Send + 'static,
    ) -> Result<Self, RuntimeError> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("toolhost-epoch".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(tick)
                {
                    advance();
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
pub(super) struct Slots {
    free: Mutex<u32>,
    freed: Condvar,
    /// Slots taken so far.
    pub(super) taken: std::sync::atomic::AtomicU64,
}

pub(crate) struct SlotGuard<'a> {
    /// The slot held; none for a nested use on a thread already holding one.
    pub(super) slots: Option<&'a Slots>,
    /// This guard marks its thread as holding a call slot.
    pub(super) outer: bool,
}

thread_local! {
    /// Whether this thread holds a call slot (see [`Runtime::slot`]).
    pub(super) static HOLDING_SLOT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Slots {
    pub(super) fn new(n: u32) -> Self {
        Self {
            free: Mutex::new(n),
            freed: Condvar::new(),
            taken: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub(super) fn try_acquire(&self) -> Option<SlotGuard<'_>> {
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

    pub(super) fn free(&self) -> usize {
        *self.free.lock().unwrap_or_else(PoisonError::into_inner) as usize
    }

    pub(super) fn acquire(&self) -> SlotGuard<'_> {
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

/// A call's slot, fan-out permits and the epoch ticker.
impl Runtime {
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
            let (engine, quick) = (self.engine.clone(), Arc::clone(&self.quick));
            let _ = self.ticker.set(Ticker::start(self.epoch_tick, move || {
                engine.increment_epoch();
                quick.lock().unwrap_or_else(PoisonError::into_inner).tick();
            })?);
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
}
