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
//! ever replace the baseline code. With a compile helper (`helper.rs`)
//! the baseline compile runs in one, so what compiling leaves goes with
//! it and the code is mapped from the file it wrote; else on the call's
//! thread. That file is unlinked at once and held open by the runtime
//! until work ahead of use replaces its code, and a tool lets go of its
//! baseline code when its call ends: the next call maps the file again
//! (0.4 ms) rather than every tool called on a first start holding
//! megabytes of code it may not run again. Winch's code is never cached,
//! and a component Winch cannot compile (a feature it lacks) is compiled by
//! Cranelift as before. On x86-64 only, where wasmtime supports Winch at
//! its first tier; elsewhere first calls wait for Cranelift.

use super::*;

/// The baseline compiler's engine and its linkers (a linker belongs to
/// one engine). No instance pool: instances are allocated per call, and
/// the store's limiter holds them to the pool's per-component counts of
/// instances, memories and tables (not to its sizes of an instance's
/// state, which only a pool has: a component past those would run its
/// first calls and fail once Cranelift's code replaced them).
pub(crate) struct Quick {
    pub(super) engine: Engine,
    pub(super) linkers: link::Linkers,
}

/// The baseline compiler of a runtime: on or not, its engine (made when a
/// first call needs it, let go of once work ahead of use has replaced
/// everything it compiled), and what it is done with.
#[derive(Default)]
pub(super) struct QuickSlot {
    on: bool,
    current: Option<Arc<Quick>>,
    /// Engines let go of whose code may still run a call: the epoch ticker
    /// advances them until the last of it is gone, so deadlines hold.
    let_go: Vec<wasmtime::EngineWeak>,
    /// Keys of components work ahead of use has compiled with Cranelift:
    /// their calls no longer use the baseline compiler, even if the cache
    /// did not keep Cranelift's code (a failed write, an eviction), so no
    /// tool stays on baseline code for the life of the process.
    replaced: HashSet<String>,
    /// The baseline code a helper wrote for each key, unlinked and held
    /// open (read-only) until work ahead of use replaces it, or passes
    /// over every tool without replacing it (see the module docs).
    kept: HashMap<String, Kept>,
    /// The kept code could not be mapped again (no `/proc`, or the file
    /// was not the one kept): from then on nothing is kept, and a tool
    /// holds its baseline code between calls, as it did before keeping.
    cannot_map_again: bool,
}

/// A file of baseline code the runtime keeps, and what it was when kept.
struct Kept {
    file: std::fs::File,
    stamp: Stamp,
}

/// What tells a kept file from any other: device, inode, size, and times
/// of modification and change.
#[derive(PartialEq, Eq, Debug, Clone, Copy)]
struct Stamp(u64, u64, u64, i64, i64, i64, i64);

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        Self(
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
        )
    }
}

/// The path by which a file known only by its descriptor is opened.
fn by_descriptor(file: &std::fs::File) -> PathBuf {
    use std::os::fd::AsRawFd as _;
    format!("/proc/self/fd/{}", file.as_raw_fd()).into()
}

impl QuickSlot {
    /// Advance the epoch of every engine of the baseline compiler still
    /// alive (the epoch ticker's work), forgetting those that are gone.
    pub(super) fn tick(&mut self) {
        if let Some(quick) = &self.current {
            quick.engine.increment_epoch();
        }
        self.let_go.retain(|weak| {
            weak.upgrade()
                .map(|engine| engine.increment_epoch())
                .is_some()
        });
    }
}

impl Quick {
    pub(super) fn new() -> wasmtime::Result<Self> {
        let mut config = engine_config(1, false);
        config.strategy(wasmtime::Strategy::Winch);
        Ok(Self {
            engine: Engine::new(&config)?,
            linkers: link::Linkers::default(),
        })
    }
}

impl Runtime {
    fn quick_slot(&self) -> std::sync::MutexGuard<'_, QuickSlot> {
        self.quick.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// From now on a first call compiles its tool with the baseline
    /// compiler when the compile cache does not hold it (see the module
    /// docs); for runtimes whose tools are compiled ahead of use. Without
    /// a compile cache, or where Winch cannot run, nothing changes.
    pub(crate) fn compile_first_calls_quickly(&self) {
        // Winch is a tier-1 compiler of wasmtime on x86-64 only.
        if self.cache.is_kept() && cfg!(target_arch = "x86_64") {
            self.quick_slot().on = true;
        }
    }

    /// Let go of the baseline compiler's engine, once work ahead of use
    /// has passed over every tool: what it compiled is replaced, and the
    /// engine holds its compiler's working memory (tens of megabytes after
    /// a few first calls). It is gone with the last of its code; a later
    /// first call makes a new one. So are the files of baseline code still
    /// kept: those of tools gone or changed before work ahead of use came
    /// to them, or that Cranelift could not compile (a later call of one
    /// compiles it again).
    pub(crate) fn let_go_of_the_baseline_compiler(&self) {
        let mut slot = self.quick_slot();
        if let Some(quick) = slot.current.take() {
            slot.let_go.push(quick.engine.weak());
        }
        slot.kept.clear();
    }

    /// How many engines of the baseline compiler are alive.
    #[cfg(test)]
    pub(crate) fn baseline_engines(&self) -> usize {
        let slot = self.quick_slot();
        usize::from(slot.current.is_some())
            + slot
                .let_go
                .iter()
                .filter(|weak| weak.upgrade().is_some())
                .count()
    }

    /// Work ahead of use has compiled the component keyed `key` with
    /// Cranelift: the baseline compiler is done with it, and the runtime
    /// forgets its code linked once per runtime (which a tool no longer
    /// holding it, after a reload of the plugins, would otherwise leave
    /// there, and with it the baseline compiler's engine).
    pub(super) fn replace_quick(&self, key: &str) {
        let mut slot = self.quick_slot();
        if slot.on {
            slot.replaced.insert(key.to_owned());
            slot.kept.remove(key);
            self.forget_linked_baseline(key);
        }
    }

    /// Forget the baseline code of `key` linked once per runtime, if that
    /// is what is linked.
    pub(crate) fn forget_linked_baseline(&self, key: &str) {
        let mut linked = self.embedded.lock().unwrap_or_else(PoisonError::into_inner);
        if linked.get(key).is_some_and(|(_, pre)| self.is_quick(pre)) {
            linked.remove(key);
        }
    }

    /// Keep `file`, the baseline code of `key` a helper wrote (unlinked),
    /// so later calls map it again instead of compiling it again. What is
    /// kept is the file opened again read-only, through `/proc`, as it will
    /// be mapped: if that cannot be done, nothing is kept and the tool
    /// holds its code between calls.
    pub(super) fn keep_baseline(&self, key: &str, file: std::fs::File) {
        let mut slot = self.quick_slot();
        if slot.replaced.contains(key) || slot.cannot_map_again {
            return;
        }
        let reopened = std::fs::File::open(by_descriptor(&file)).and_then(|read_only| {
            let stamp = Stamp::of(&read_only.metadata()?);
            let same = Stamp::of(&file.metadata()?) == stamp;
            Ok(same.then_some(Kept {
                file: read_only,
                stamp,
            }))
        });
        match reopened {
            Ok(Some(kept)) => {
                slot.kept.insert(key.to_owned(), kept);
            }
            Ok(None) => {
                tracing::debug!(
                    "the path to baseline code leads to another file: tools hold theirs"
                );
                slot.cannot_map_again = true;
            }
            Err(err) => {
                tracing::debug!(%err, "cannot open baseline code by its descriptor: tools hold theirs");
                slot.cannot_map_again = true;
            }
        }
    }

    /// Whether calls of `key` run baseline code mapped from a file the
    /// runtime keeps: a tool need not hold it between calls.
    pub(crate) fn keeps_baseline(&self, key: &str) -> bool {
        self.quick_slot().kept.contains_key(key)
    }

    /// The baseline code kept for `key`, mapped again into `engine`, if
    /// the path to it still leads to the file kept, unchanged. If not, the
    /// runtime stops keeping files (see [`QuickSlot::cannot_map_again`]).
    fn kept_baseline(&self, engine: &Engine, key: &str, label: &str) -> Option<Component> {
        let (file, stamp) = {
            let slot = self.quick_slot();
            let kept = slot.kept.get(key)?;
            (kept.file.try_clone(), kept.stamp)
        };
        // The file has no name left but its descriptor's; the duplicate
        // held meanwhile keeps that number from going to another file.
        // Both the descriptor and the path to it must show the stamp kept.
        let mapped = file.map_err(wasmtime::Error::from).and_then(|file| {
            let path = by_descriptor(&file);
            let same = Stamp::of(&file.metadata()?) == stamp
                && Stamp::of(&std::fs::metadata(&path)?) == stamp;
            if same {
                cache::deserialize(engine, &path)
            } else {
                Err(wasmtime::Error::msg(
                    "the kept file changed, or its path leads to another",
                ))
            }
        });
        mapped
            .inspect_err(|err| {
                tracing::debug!(%label, %err, "cannot map the baseline code again: tools hold theirs from now on");
                let mut slot = self.quick_slot();
                slot.kept.clear();
                slot.cannot_map_again = true;
            })
            .ok()
    }

    /// Whether work ahead of use has compiled the component keyed `key`
    /// with Cranelift.
    pub(super) fn replaced(&self, key: &str) -> bool {
        self.quick_slot().replaced.contains(key)
    }

    /// Whether `pre` runs code of the baseline compiler (of any engine it
    /// had: every engine but the runtime's own is one).
    pub(crate) fn is_quick(&self, pre: &ToolPluginPre<CallState>) -> bool {
        !Engine::same(&self.engine, pre.instance_pre().engine())
    }

    /// `wasm` compiled by the baseline compiler, with the engine and
    /// linkers it is to be linked by, when a call (not work ahead of use)
    /// needs a plain or embedded component the cache does not hold; `None`
    /// to compile (or load) it as usual.
    pub(super) fn quickly(
        &self,
        key: &str,
        wasm: WasmBytes<'_>,
        linking: Linking,
        label: &str,
    ) -> Option<(Component, Arc<Quick>)> {
        if IN_BACKGROUND.get()
            || !matches!(linking, Linking::Owned | Linking::Embedded)
            || self.cache.holds(key)
        {
            return None;
        }
        let quick = {
            let mut slot = self.quick_slot();
            if !slot.on || slot.replaced.contains(key) {
                return None;
            }
            match &slot.current {
                Some(quick) => Arc::clone(quick),
                None => match Quick::new() {
                    Ok(quick) => Arc::clone(slot.current.insert(Arc::new(quick))),
                    Err(err) => {
                        tracing::debug!(%err, "no baseline compiler: first calls wait for Cranelift");
                        slot.on = false;
                        return None;
                    }
                },
            }
        };
        if let Some(component) = self.kept_baseline(&quick.engine, key, label) {
            return Some((component, quick));
        }
        let _compiling = Compiling::start(self, label, wasm.len());
        // In a helper process if there is one: what compiling leaves in a
        // process goes with it.
        let compiled = wasm
            .unpacked()
            .map_err(wasmtime::Error::msg)
            .and_then(
                |bytes| match self.baseline_by_helper(&quick.engine, key, &bytes, label) {
                    Some(component) => Ok(component),
                    None => Component::new(&quick.engine, bytes),
                },
            );
        compiled
            .inspect_err(|err| {
                tracing::debug!(%label, %err, "the baseline compiler cannot compile it; Cranelift does");
            })
            .ok()
            .map(|component| (component, quick))
    }
}
