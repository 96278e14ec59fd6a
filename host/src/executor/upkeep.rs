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
    /// its first call (and prepare each `javascript` tool's script), on
    /// threads of its own that give way to calls, passing again
    /// whenever the tools change; meanwhile a first call compiles its tool
    /// with the baseline compiler (runtime/quick.rs), whose code this
    /// replaces.
    pub compile_ahead: bool,
    /// Compile ahead in helper processes running this program, which must
    /// be the `toolhost` binary (it answers
    /// [`crate::runtime::COMPILE_AHEAD_ARG`]): what compiling leaves in a
    /// process goes with each helper (runtime/helper.rs). `None`: on this
    /// process's own threads.
    pub compile_helper: Option<PathBuf>,
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
            // What compiles ahead also replaces the baseline compiler's
            // code a first call ran on (runtime/quick.rs).
            self.runtime.compile_first_calls_quickly();
            if let Some(program) = &upkeep.compile_helper {
                self.runtime.compile_ahead_in(program.clone());
            }
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
        // Work ahead of use: compiled as such (in a helper, if any).
        match executor
            .runtime
            .in_background(|| executor.load_deferred_plugins())
        {
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
        // Every tool is compiled ahead: what the baseline compiler
        // compiled is replaced, and its engine only holds memory.
        if let Some(executor) = executor.upgrade() {
            executor.runtime.let_go_of_the_baseline_compiler();
        }
        crate::runtime::release_freed_memory();
        // What compiling read of the embedded components, until more is.
        crate::registry::reclaim_embedded();
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

/// The baseline compiler for first calls (runtime/quick.rs), which only
/// a runtime compiling ahead turns on.
#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use crate::executor::{CallOptions, Executor};
    use crate::plugin::{Plugin, PluginSource};
    use crate::registry::{Registry, builtins};
    use crate::runtime::{CacheDir, Runtime, RuntimeConfig};
    use crate::types::confirm::Mode;
    use crate::types::result::ErrorKind;
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    /// A runtime with a compile cache in `dir` and the baseline compiler on
    /// (runtime/quick.rs), as `Executor::start_upkeep` turns it on.
    fn quick_runtime(dir: &Path) -> Arc<Runtime> {
        let runtime = Runtime::new(RuntimeConfig {
            cache: CacheDir::At(dir.join("cache")),
            cache_key: Some(dir.join("cache.key")),
            ..RuntimeConfig::default()
        })
        .expect("runtime");
        runtime.compile_first_calls_quickly();
        Arc::new(runtime)
    }

    /// An executor in yolo mode over `dir` (holding `a.txt`) with read_file
    /// and the misbehaving fixture.
    fn executor(runtime: &Arc<Runtime>, dir: &Path) -> Executor {
        let mut registry = Registry::new();
        let read_file = builtins()
            .iter()
            .find(|b| b.crate_name == "read_file")
            .expect("read_file");
        let misbehave = Path::new(env!("TOOLHOST_FIXTURES_DIR")).join("fixture_misbehave.wasm");
        for source in [
            PluginSource::Builtin(read_file),
            PluginSource::File(misbehave),
        ] {
            let plugin = Plugin::load(runtime, source).expect("load");
            registry.register(plugin, false).expect("register");
        }
        std::fs::write(dir.join("a.txt"), "hello\n").expect("write");
        Executor::new(Arc::clone(runtime), registry)
            .with_workspace(dir)
            .expect("workspace")
            .with_mode(Mode::Yolo)
    }

    /// A registry of the one built-in `name`, loaded anew.
    fn only(runtime: &Arc<Runtime>, name: &str) -> Registry {
        let builtin = builtins()
            .iter()
            .find(|b| b.crate_name == name)
            .expect("a built-in");
        let mut registry = Registry::new();
        let plugin = Plugin::load(runtime, PluginSource::Builtin(builtin)).expect("load");
        registry.register(plugin, false).expect("register");
        registry
    }

    fn cached(dir: &Path) -> usize {
        std::fs::read_dir(dir.join("cache")).map_or(0, |entries| {
            entries
                .filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                })
                .count()
        })
    }

    /// Whether the tool `name` is loaded from the baseline compiler's code.
    fn quick(executor: &Executor, runtime: &Runtime, name: &str) -> bool {
        let tools = executor.tools();
        let plugin = tools.iter().find(|p| p.name() == name).expect("tool");
        assert!(plugin.is_warm(), "{name} is loaded");
        runtime.is_quick(&plugin.pre(runtime).expect("loaded"))
    }

    /// On an empty cache a first call runs code of the baseline compiler,
    /// which is not cached; compiling ahead puts Cranelift's in the cache
    /// and lets go of the baseline code, and the next call runs
    /// Cranelift's, with the same answer.
    #[test]
    fn a_first_call_runs_baseline_code_until_the_cache_holds_cranelifts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = quick_runtime(dir.path());
        let executor = executor(&runtime, dir.path());
        let read = || executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
        let first = read();
        assert!(
            first.success && first.content.contains("hello"),
            "{first:?}"
        );
        assert!(quick(&executor, &runtime, "read_file"));
        assert_eq!(cached(dir.path()), 0, "the baseline code is not cached");

        while executor.warm_up_next() {}
        assert_eq!(cached(dir.path()), 2, "both tools compiled by Cranelift");
        let tools = executor.tools();
        assert!(
            tools.iter().all(|p| !p.is_warm()),
            "the baseline code let go"
        );

        let again = read();
        assert_eq!(again.content, first.content);
        assert!(!quick(&executor, &runtime, "read_file"));
    }

    /// A reload (what loading the plugin directories after start does)
    /// gives a built-in a new tool that has loaded nothing: the baseline
    /// code a first call linked once per runtime is let go of all the same
    /// once work ahead of use compiled it, and with it the baseline
    /// compiler's engine.
    #[test]
    fn baseline_code_a_reload_left_behind_is_let_go_of_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = quick_runtime(dir.path());
        let executor = executor(&runtime, dir.path());
        let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
        assert!(r.success, "{r:?}");
        assert!(quick(&executor, &runtime, "read_file"));
        executor.replace_registry(only(&runtime, "read_file"));
        assert!(!executor.tools()[0].is_warm(), "a new tool");
        while executor.warm_up_next() {}
        runtime.let_go_of_the_baseline_compiler();
        assert_eq!(runtime.baseline_engines(), 0, "gone with its code");
    }

    /// Another plugin of the same component (a reload makes new ones; two
    /// dynamic tools share a runner) compiled ahead never gets the baseline
    /// code a first call linked for the first; and a tool whose Cranelift
    /// code the cache lost (evicted, or never written) is compiled by
    /// Cranelift again, never left on baseline code.
    #[test]
    fn once_compiled_ahead_a_component_never_runs_baseline_code_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = quick_runtime(dir.path());
        let read = |executor: &Executor| {
            let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
            assert!(r.success && r.content.contains("hello"), "{r:?}");
        };
        let first = executor(&runtime, dir.path());
        read(&first);
        assert!(quick(&first, &runtime, "read_file"));
        let second = executor(&runtime, dir.path());
        while second.warm_up_next() {}
        read(&second);
        assert!(
            !quick(&second, &runtime, "read_file"),
            "the linked baseline code was passed on"
        );

        // The first plugin let go of its baseline code when compiled ahead;
        // the cache then loses Cranelift's.
        while first.warm_up_next() {}
        for entry in std::fs::read_dir(dir.path().join("cache")).expect("cache") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|x| x == "cwasm") {
                std::fs::remove_file(path).expect("remove");
            }
        }
        read(&first);
        assert!(
            !quick(&first, &runtime, "read_file"),
            "compiled by Cranelift again"
        );
        assert_eq!(cached(dir.path()), 1, "and cached again");
    }

    /// The baseline compiler's code runs in the same sandbox: the deadline
    /// stops a loop (the epoch ticker advances its engine too), the memory
    /// limit holds, a trap is a failed call, and the next call works.
    #[test]
    fn baseline_code_keeps_the_deadline_and_the_memory_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = quick_runtime(dir.path());
        let executor = executor(&runtime, dir.path());
        let options = CallOptions {
            timeout: Some(Duration::from_secs(1)),
            ..CallOptions::default()
        };
        // On a thread of its own: were the deadline not kept, the test
        // fails instead of spinning forever.
        let executor = Arc::new(executor);
        let (sent, looped) = std::sync::mpsc::channel();
        std::thread::spawn({
            let (executor, options) = (Arc::clone(&executor), options.clone());
            move || {
                let r = executor.call("misbehave", r#"{"action":"loop"}"#, &options);
                let _ = sent.send(r);
            }
        });
        let r = looped
            .recv_timeout(Duration::from_secs(5))
            .expect("a loop in baseline code stopped at its 1 s deadline");
        assert_eq!(r.error_kind(), Some(ErrorKind::Timeout), "{r:?}");
        assert!(quick(&executor, &runtime, "misbehave"));

        let r = executor.call("misbehave", r#"{"action":"alloc","mib":1024}"#, &options);
        assert_eq!(r.error_kind(), Some(ErrorKind::OutOfMemory), "{r:?}");
        let r = executor.call("misbehave", r#"{"action":"panic"}"#, &options);
        assert!(!r.success, "{r:?}");
        let r = executor.call("misbehave", r#"{"action":"alloc","mib":16}"#, &options);
        assert!(r.success, "{r:?}");
        assert!(quick(&executor, &runtime, "misbehave"));
    }

    /// Once work ahead of use has passed over every tool, the runtime lets
    /// go of the baseline compiler's engine: a call still running its code
    /// keeps its deadline (the ticker advances it while it lives), the
    /// engine is gone with the last of its code, and a later first call
    /// of a tool not yet compiled makes a new one.
    #[test]
    fn the_baseline_compiler_is_let_go_of_once_compiled_ahead() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = quick_runtime(dir.path());
        let executor = Arc::new(executor(&runtime, dir.path()));
        let (sent, looped) = std::sync::mpsc::channel();
        std::thread::spawn({
            let executor = Arc::clone(&executor);
            move || {
                let options = CallOptions {
                    timeout: Some(Duration::from_secs(2)),
                    ..CallOptions::default()
                };
                let _ = sent.send(executor.call("misbehave", r#"{"action":"loop"}"#, &options));
            }
        });
        std::thread::sleep(Duration::from_millis(1000));
        assert!(
            quick(&executor, &runtime, "misbehave"),
            "looping in baseline code"
        );
        runtime.let_go_of_the_baseline_compiler();
        let r = looped
            .recv_timeout(Duration::from_secs(10))
            .expect("the loop stopped at its deadline");
        assert_eq!(r.error_kind(), Some(ErrorKind::Timeout), "{r:?}");

        while executor.warm_up_next() {}
        runtime.let_go_of_the_baseline_compiler();
        assert_eq!(runtime.baseline_engines(), 0, "gone with its code");
        let r = executor.call(
            "misbehave",
            r#"{"action":"alloc","mib":1}"#,
            &CallOptions::default(),
        );
        assert!(r.success, "{r:?}");
        assert!(!quick(&executor, &runtime, "misbehave"));

        // A tool no work ahead of use has reached yet.
        let later = Executor::new(Arc::clone(&runtime), only(&runtime, "get_datetime"))
            .with_mode(Mode::Yolo);
        let r = later.call("get_datetime", "{}", &CallOptions::default());
        assert!(r.success, "{r:?}");
        assert!(quick(&later, &runtime, "get_datetime"));
        assert_eq!(runtime.baseline_engines(), 1, "a new one");
    }
}
