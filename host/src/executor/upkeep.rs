//! The executor's upkeep threads, for any front end that keeps one
//! executor running (`toolhost serve`, an embedder): reload plugins when
//! their files change, compile every tool ahead of its first call, and let
//! go of loaded code when idle. Each holds only a weak reference and stops
//! by itself once the executor is gone; none needs a tokio runtime.

use super::Executor;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

/// What upkeep [`Executor::start_upkeep`] starts; by default, none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Upkeep {
    /// Look this often whether a plugin file appeared, disappeared or
    /// changed, or a dynamic tool was approved or rejected, and reload the
    /// tools then (`None`: never).
    pub reload_every: Option<Duration>,
    /// Load the plugin files left for later
    /// ([`Executor::load_known_plugins`]) and compile every tool ahead of
    /// its first call (and prepare each `javascript` tool's script), on a
    /// thread that gives way to calls and passes again whenever the tools
    /// change.
    pub compile_ahead: bool,
    /// After this long with no call, let go of every loaded tool's code and
    /// give freed memory back ([`Executor::unload_idle`]); the next call
    /// loads its tool again from the compile cache. `None`: never.
    pub unload_idle: Option<Duration>,
}

impl Executor {
    /// Start the threads `upkeep` asks for. Each stops on its own once
    /// this executor has gone (noticed at its next look).
    pub fn start_upkeep(self: &Arc<Self>, upkeep: &Upkeep) {
        if let Some(every) = upkeep.reload_every
            && (!self.plugin_dirs().is_empty() || self.dynamic_store().is_some())
        {
            start(
                "toolhost-plugin-watch",
                "plugins are not reloaded when they change",
                {
                    let executor = Arc::downgrade(self);
                    move || watch_plugins(&executor, every)
                },
            );
        }
        if let Some(after) = upkeep.unload_idle {
            start("toolhost-unload-idle", "loaded tools stay loaded", {
                let executor = Arc::downgrade(self);
                move || unload_when_idle(&executor, after)
            });
        }
        if upkeep.compile_ahead {
            let changes = self.changes();
            start("toolhost-compile-ahead", "tools compile on first call", {
                let executor = Arc::downgrade(self);
                move || compile_ahead(&executor, changes)
            });
        }
    }
}

fn start(name: &str, otherwise: &str, run: impl FnOnce() + Send + 'static) {
    if let Err(err) = std::thread::Builder::new().name(name.to_owned()).spawn(run) {
        tracing::warn!(%err, "cannot start {name}: {otherwise}");
    }
}

/// Reload the plugins when a file in a plugin directory appears,
/// disappears or changes, or a person approves or rejects a dynamic tool
/// (its meta.json changes).
fn watch_plugins(executor: &Weak<Executor>, every: Duration) {
    let state = |executor: &Executor| {
        (
            fingerprint(executor.plugin_dirs()),
            executor
                .dynamic_store()
                .map(crate::dynamic::Store::fingerprint),
        )
    };
    // Taken at once: a change in the first interval is a change.
    let mut seen = executor.upgrade().map(|e| state(&e));
    loop {
        std::thread::sleep(every);
        let Some(executor) = executor.upgrade() else {
            return;
        };
        let now = state(&executor);
        if seen.as_ref() != Some(&now) {
            match executor.reload_plugins() {
                Ok((changed, problems)) => {
                    for p in problems {
                        tracing::warn!(path = %p.path.display(), reason = %p.reason, "skipped plugin");
                    }
                    tracing::info!(changed, "plugins and dynamic tools reloaded");
                }
                Err(err) => tracing::warn!(%err, "cannot reload the plugins"),
            }
        }
        seen = Some(now);
    }
}

/// Names, sizes and modification times of the `.wasm` files in `dirs`.
fn fingerprint(dirs: &[PathBuf]) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "wasm")
                && let Ok(meta) = entry.metadata()
            {
                out.push((path, meta.len(), meta.modified().ok()));
            }
        }
    }
    out.sort();
    out
}

/// After a pass over every tool, wait for the tools to change (plugins
/// reloaded, a dynamic tool approved) and pass again over the new ones.
/// The sender of changes goes with the executor: then done.
fn compile_ahead(executor: &Weak<Executor>, mut changes: tokio::sync::watch::Receiver<u64>) {
    if let Some(executor) = executor.upgrade() {
        match executor.load_deferred_plugins() {
            Ok(problems) => {
                for p in problems {
                    tracing::warn!(path = %p.path.display(), reason = %p.reason, "skipped plugin");
                }
            }
            Err(err) => tracing::warn!(%err, "cannot load the plugins left for later"),
        }
    }
    // A watch channel needs no driver: a bare current-thread runtime waits.
    let Ok(waiter) = tokio::runtime::Builder::new_current_thread().build() else {
        tracing::warn!("cannot wait for tool changes: tools added later compile on first call");
        return;
    };
    loop {
        changes.mark_unchanged();
        while executor.upgrade().is_some_and(|e| e.warm_up_next()) {}
        crate::runtime::release_freed_memory();
        if waiter.block_on(changes.changed()).is_err() {
            return;
        }
    }
}

/// Look every `after` whether any call is running or began since the last
/// look, and unload once per idle stretch.
fn unload_when_idle(executor: &Weak<Executor>, after: Duration) {
    let mut seen = None;
    let mut unloaded = None;
    loop {
        std::thread::sleep(after);
        let Some(executor) = executor.upgrade() else {
            return;
        };
        let (now, none_running) = executor.activity();
        if none_running && seen == Some(now) && unloaded != Some(now) {
            let n = executor.unload_idle();
            tracing::debug!(tools = n, "idle: loaded tools let go");
            unloaded = Some(now);
        }
        // A reading while a call runs starts no idle stretch.
        seen = none_running.then_some(now);
    }
}
