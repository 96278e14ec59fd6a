//! A loaded plugin: its [`ToolInfo`] and, compiled on first use, its
//! pre-linked component (`InstancePre`), from which every call instantiates.

use crate::bindings::ToolPluginPre;
use crate::runtime::bytes::WasmBytes;
use crate::runtime::sandbox::{self, CallRequest, CallState, Outcome};
use crate::runtime::{Linking, Runtime, RuntimeError};
use crate::types::grant::Grant;
use crate::types::result::{CallError, ErrorKind};
use crate::types::tool_info::ToolInfo;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use toolhost_shared::contract::setting;
use toolhost_shared::dynamic::Meta;
mod file;
mod loaded;
pub use loaded::*;

/// What a dynamic tool is bound to at run time: its record, the settings its
/// runner component receives, and what a person granted.
#[derive(Debug)]
pub struct Binding {
    /// The stored record.
    pub meta: Meta,
    /// Settings the runner receives over the configured ones (`source`,
    /// `template`).
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// What a person granted on approval.
    pub grant: Grant,
}

/// A built-in plugin embedded in the binary (see host/build.rs).
#[derive(Debug)]
pub struct Builtin {
    /// The crate it was built from.
    pub crate_name: &'static str,
    /// The component, packed with zstd (see [`Builtin::wasm`]).
    pub packed: &'static [u8],
    /// Its size unpacked.
    pub len: usize,
    /// blake3 of the component (unpacked), computed at build time.
    pub hash: &'static str,
    /// Pre-initialised by its `wizer-initialize` export before it is
    /// compiled (see host/build.rs `PREINITIALISED`).
    pub preinit: bool,
    /// The component it is packed against (host/build.rs `BASE`), which
    /// unpacks it; `None` for that one.
    pub(crate) base: Option<&'static crate::runtime::bytes::Base<'static>>,
    /// Its `describe()` answer as recorded in host/builtins.json when this
    /// binary was built (`None` for runners, and for a built-in not
    /// recorded yet: it is described by running it).
    pub recorded: Option<Recorded>,
}

impl Builtin {
    /// The component's bytes, unpacked (a quarter of the binary's size
    /// would otherwise be the built-ins): what `toolhost check` and a
    /// copy of the built-in would read.
    pub fn wasm(&self) -> Result<Vec<u8>, String> {
        self.bytes().unpacked().map(std::borrow::Cow::into_owned)
    }

    /// Its bytes as the runtime takes them: unpacked only to compile.
    pub(crate) fn bytes(&self) -> WasmBytes<'static> {
        WasmBytes::Packed {
            packed: self.packed,
            len: self.len,
            base: self.base.copied(),
        }
    }
}

/// A built-in's recorded `describe()` answer, split out of
/// host/builtins.json by host/build.rs: a start reads none of it until a
/// tool's own record is needed.
#[derive(Debug, Clone, Copy)]
pub struct Recorded {
    /// The tool's name.
    pub name: &'static str,
    /// The whole answer, as JSON.
    pub json: &'static str,
}

/// Where a plugin's bytes come from.
#[derive(Debug, Clone)]
pub enum PluginSource {
    /// Embedded in the binary.
    Builtin(&'static Builtin),
    /// A `.wasm` file on disk.
    File(PathBuf),
    /// Component bytes already read from the file they came from.
    Bytes(Arc<[u8]>, PathBuf),
}

/// Where a loaded plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A built-in tool.
    Builtin,
    /// A third-party `.wasm` file.
    File(PathBuf),
    /// A tool an agent created and a person approved (its id).
    Dynamic(String),
    /// A tool of the remote MCP server of this name (`[mcp_servers]`).
    Remote(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Builtin => f.write_str("built-in"),
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Dynamic(id) => write!(f, "dynamic tool {id}"),
            Self::Remote(server) => write!(f, "MCP server {server}"),
        }
    }
}

/// A tool whose calls go somewhere other than a toolhost plugin's `call`:
/// a remote MCP server's tool (remote.rs), or a function of a plain
/// component (plain.rs). The pipeline around its run step is the same as
/// for any tool.
pub(crate) trait Forwarded: Send + Sync {
    /// Run one call (the run step, with the call's deadline, cancellation
    /// and output limit) on `runtime`.
    fn call(&self, runtime: &Arc<Runtime>, request: &CallRequest<'_>) -> Outcome;
    /// What a dry run says the call would send.
    fn dry_run(&self, args: &serde_json::Value) -> String;
}

#[derive(Debug)]
enum Wasm {
    Static(WasmBytes<'static>),
    /// Embedded and pre-initialised before compiling (`js_runtime`).
    Preinitialised(WasmBytes<'static>),
    /// Pre-initialised with this script prepared in it (a `javascript`
    /// tool's runner and source).
    Prepared(WasmBytes<'static>, Arc<str>),
    Owned(Arc<[u8]>),
    /// A plugin file not read yet (its compiled code is cached): read, and
    /// checked against `hash`, only to compile.
    File {
        path: PathBuf,
        hash: String,
        len: usize,
    },
}

/// A loaded plugin. Cheap to keep: compiling happens on first call unless
/// `describe()` had to run at load.
pub struct Plugin {
    info: Described,
    origin: Origin,
    key: String,
    wasm: Wasm,
    pre: Loaded,
    /// Set for a tool an agent created: its record, settings and grant.
    dynamic: Option<Arc<Binding>>,
    /// The settings its calls receive, as JSON text (the executor's, made once).
    settings: OnceLock<Arc<str>>,
    /// Set once [`Plugin::compile_ahead`] has run.
    ahead: OnceLock<()>,
    /// Set when what `pre` holds is a `javascript` tool's own snapshot.
    prepared: AtomicBool,
    /// Set for a tool whose calls go elsewhere (a remote MCP server's).
    forwarded: Option<Arc<dyn Forwarded>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name())
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// Load a plugin: compile it (or load it from the cache) and learn what
    /// it is (from the cached `describe()` or by calling it once).
    pub fn load(runtime: &Runtime, source: PluginSource) -> Result<Self, RuntimeError> {
        Self::load_as(runtime, source, true).map(|loaded| loaded.expect("compiling is allowed"))
    }

    /// [`Plugin::load`] only if what the plugin is can be known without
    /// compiling it (a built-in, or a component whose `describe()` answer is
    /// in the compile cache); `None` otherwise.
    pub fn load_known(
        runtime: &Runtime,
        source: PluginSource,
    ) -> Result<Option<Self>, RuntimeError> {
        Self::load_as(runtime, source, false)
    }

    pub(crate) fn load_as(
        runtime: &Runtime,
        source: PluginSource,
        compile: bool,
    ) -> Result<Option<Self>, RuntimeError> {
        let mut recorded = None;
        let (origin, wasm, hash) = match source {
            PluginSource::Builtin(b) => {
                recorded = b.recorded.map(Described::recorded);
                (Origin::Builtin, Wasm::Static(b.bytes()), b.hash.to_owned())
            }
            PluginSource::File(path) => {
                let bytes = std::fs::read(&path).map_err(|e| load_error(&path, e.to_string()))?;
                return Self::load_as(runtime, PluginSource::Bytes(bytes.into(), path), compile);
            }
            PluginSource::Bytes(bytes, path) => {
                let hash = blake3::hash(&bytes).to_hex().to_string();
                (Origin::File(path), Wasm::Owned(bytes), hash)
            }
        };
        let key = runtime.cache_key(&hash);
        let described = recorded.or_else(|| runtime.cached_info(&key).map(Described::from));
        Self::keyed(runtime, (origin, wasm, key), described, compile)
    }

    /// The plugin `wasm` from `origin` under the cache key `key`, described
    /// by `described` if known (else, with `compile`, by running it).
    fn keyed(
        runtime: &Runtime,
        (origin, wasm, key): (Origin, Wasm, String),
        described: Option<Described>,
        compile: bool,
    ) -> Result<Option<Self>, RuntimeError> {
        let fail = |reason: String| RuntimeError::Load {
            origin: origin.to_string(),
            reason,
        };
        let (info, pre) = match described {
            Some(info) => (info, Loaded::default()),
            None if !compile => return Ok(None),
            None => {
                let label = origin.to_string();
                let pre = link(runtime, &key, &wasm, &label).map_err(&fail)?;
                let info = runtime.describe(&key, &pre).map_err(&fail)?;
                (info.into(), Loaded::with(pre))
            }
        };
        Ok(Some(Self {
            info,
            origin,
            key,
            wasm,
            pre,
            dynamic: None,
            settings: OnceLock::new(),
            ahead: OnceLock::new(),
            prepared: AtomicBool::new(false),
            forwarded: None,
        }))
    }

    /// Check `wasm` as `toolhost check` does (see
    /// [`Runtime::check_component`]) and load it as the plugin from `origin`.
    pub(crate) fn checked(runtime: &Runtime, wasm: Vec<u8>, origin: &Path) -> Result<Self, String> {
        let (key, info, pre) = runtime.check_component(&wasm)?;
        Ok(Self {
            info: info.into(),
            origin: Origin::File(origin.to_owned()),
            key,
            wasm: Wasm::Owned(wasm.into()),
            pre: Loaded::with(pre),
            dynamic: None,
            settings: OnceLock::new(),
            ahead: OnceLock::new(),
            prepared: AtomicBool::new(false),
            forwarded: None,
        })
    }

    /// A dynamic tool that runs in the embedded runner component `b`: its
    /// tool-info comes from its record, not from the runner's `describe`.
    pub(crate) fn runner(
        runtime: &Runtime,
        b: &'static Builtin,
        info: ToolInfo,
        binding: Binding,
    ) -> Self {
        Self {
            info: info.into(),
            origin: Origin::Dynamic(binding.meta.id.clone()),
            key: runtime.cache_key(b.hash),
            wasm: match binding.settings.get(setting::SOURCE) {
                Some(serde_json::Value::String(source)) if b.preinit => {
                    Wasm::Prepared(b.bytes(), source.as_str().into())
                }
                _ if b.preinit => Wasm::Preinitialised(b.bytes()),
                _ => Wasm::Static(b.bytes()),
            },
            pre: Loaded::default(),
            dynamic: Some(Arc::new(binding)),
            settings: OnceLock::new(),
            ahead: OnceLock::new(),
            prepared: AtomicBool::new(false),
            forwarded: None,
        }
    }

    /// A tool described by `info` whose calls `forwarded` serves.
    pub(crate) fn forwarded(info: ToolInfo, origin: Origin, forwarded: Arc<dyn Forwarded>) -> Self {
        Self {
            info: info.into(),
            origin,
            key: String::new(),
            wasm: Wasm::Static(WasmBytes::Plain(&[])),
            pre: Loaded::default(),
            dynamic: None,
            settings: OnceLock::new(),
            ahead: OnceLock::new(),
            prepared: AtomicBool::new(false),
            forwarded: Some(forwarded),
        }
    }

    /// What a dry run of a forwarded tool says it would send (`None`: a
    /// component).
    pub(crate) fn forwarded_dry_run(&self, args: &serde_json::Value) -> Option<String> {
        self.forwarded.as_ref().map(|f| f.dry_run(args))
    }

    /// This (checked) component as the dynamic tool `binding` describes,
    /// shown as `info`.
    pub(crate) fn into_dynamic(self, info: ToolInfo, binding: Binding) -> Self {
        Self {
            info: info.into(),
            origin: Origin::Dynamic(binding.meta.id.clone()),
            dynamic: Some(Arc::new(binding)),
            ..self
        }
    }

    /// The settings text its calls receive, made by `make` on first use.
    pub(crate) fn settings_text(&self, make: impl FnOnce() -> String) -> Arc<str> {
        Arc::clone(self.settings.get_or_init(|| make().into()))
    }

    /// The record, settings and grant of a tool an agent created.
    pub fn dynamic(&self) -> Option<&Binding> {
        self.dynamic.as_deref()
    }

    /// What the tool says about itself.
    pub fn info(&self) -> &ToolInfo {
        self.info.get()
    }

    /// Replace the description schemas show (the configuration's prompt
    /// override); what the tool may do does not change.
    pub(crate) fn set_description(&mut self, description: String) {
        let mut info = self.info.get().clone();
        info.description = description;
        self.info = info.into();
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Where it came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The pre-linked component, compiled (or loaded from the cache) on first
    /// use, and again after [`Plugin::unload`].
    pub(crate) fn pre(&self, runtime: &Runtime) -> Result<ToolPluginPre<CallState>, String> {
        self.pre.get_or_load(|| match &self.wasm {
            Wasm::Prepared(bytes, script) => {
                let (pre, prepared) =
                    runtime.link_prepared(&self.key, *bytes, script, self.name())?;
                self.prepared.store(prepared, Ordering::Relaxed);
                Ok(pre)
            }
            _ => link(runtime, &self.key, &self.wasm, self.name()),
        })
    }

    /// Whether this `javascript` tool's calls run with its script prepared
    /// in a snapshot of its own (see [`Plugin::warm_up`]): it is loaded,
    /// and from that snapshot.
    pub fn script_prepared(&self) -> bool {
        self.prepared.load(Ordering::Relaxed) && self.pre.get().is_some_and(|r| r.is_ok())
    }

    /// Let go of the loaded component if the compile cache holds it
    /// compiled (without a cache, or when pre-initialising failed, loading
    /// it again would mean compiling): a call in progress keeps its own
    /// hold, and the next call loads it again. A failed load is kept, so
    /// calls still report it. True if something was let go.
    pub(crate) fn unload(&self, runtime: &Runtime) -> bool {
        let (_, linking) = self.wasm.linking();
        if self.forwarded.is_some()
            || !runtime.holds_compiled(&self.key, linking)
            || !self.pre.unload()
        {
            return false;
        }
        runtime.forget_linked(&self.key);
        true
    }

    /// Make sure the component is compiled and linked now rather than on the
    /// first call (used by benchmarks and `toolhost check`); a `javascript`
    /// tool's script prepared first (see `Plugin::prepare`).
    pub fn warm_up(&self, runtime: &Runtime) -> Result<(), RuntimeError> {
        if self.forwarded.is_some() {
            return Ok(());
        }
        self.prepare(runtime);
        self.pre(runtime)
            .map(|_| ())
            .map_err(|reason| RuntimeError::Load {
                origin: self.origin.to_string(),
                reason,
            })
    }

    /// Work ahead of use (a call that has to compile meanwhile does not
    /// count it as a compile to wait for): the component compiled into the
    /// compile cache but not loaded, so an idle server does not keep every
    /// tool's code mapped; its first call loads it (a fraction of a
    /// millisecond). With no cache to keep it in, it is loaded now
    /// ([`Plugin::warm_up`]).
    pub(crate) fn compile_ahead(&self, runtime: &Runtime) -> Result<(), RuntimeError> {
        let done = self.work_ahead(runtime);
        // Once, whatever came of it: a call reports a failure again.
        let _ = self.ahead.set(());
        done
    }

    fn work_ahead(&self, runtime: &Runtime) -> Result<(), RuntimeError> {
        runtime.in_background(|| self.prepare(runtime));
        if self.forwarded.is_some() || self.pre.get().is_some() && !self.loaded_quick(runtime) {
            // Loaded, or failed: nothing left to do ahead of use.
            return Ok(());
        }
        let (bytes, linking) = self.wasm.linking();
        let cached = runtime
            .in_background(|| runtime.compile_into_cache(&self.key, bytes, linking, self.name()));
        match cached {
            Ok(true) => {
                // A first call ran meanwhile on the baseline compiler's
                // code: let go of it, so the next loads Cranelift's from
                // the cache (or, if the cache did not keep it, compiles it
                // with Cranelift: the baseline compiler is done with it).
                if self.loaded_quick(runtime) && self.pre.unload() {
                    runtime.forget_linked(&self.key);
                }
                Ok(())
            }
            Ok(false) => runtime.in_background(|| self.warm_up(runtime)),
            Err(reason) => Err(RuntimeError::Load {
                origin: self.origin.to_string(),
                reason,
            }),
        }
    }

    /// A `javascript` tool's own snapshot, its script parsed and compiled
    /// in it, built into the compile cache if it is not there (a few
    /// seconds of compiling, once per script and cache; without a cache,
    /// never: each would hold its code in memory). A runner loaded before
    /// it was there is let go, so the next call loads it. If the script
    /// does not compile, its calls keep the shared snapshot (and say why).
    fn prepare(&self, runtime: &Runtime) {
        let (bytes, linking @ Linking::Prepared(script)) = self.wasm.linking() else {
            return;
        };
        if !runtime.holds_prepared(&self.key, script) {
            if runtime.prepare_failed(&self.key, script) {
                return;
            }
            if let Err(err) = runtime.compile_into_cache(&self.key, bytes, linking, self.name()) {
                tracing::debug!(%err, tool = self.name(), "cannot prepare its script");
            }
            if !runtime.holds_prepared(&self.key, script) {
                return;
            }
        }
        if !self.prepared.load(Ordering::Relaxed) {
            // Loaded from the shared snapshot (or not loaded: a no-op).
            self.pre.unload();
        }
    }

    /// Whether [`Plugin::compile_ahead`] has nothing (more) to do (a
    /// `javascript` tool a call loaded first still has its script to
    /// prepare; one a first call loaded compiled by the baseline compiler,
    /// its Cranelift compile).
    pub(crate) fn compiled_ahead(&self, runtime: &Runtime) -> bool {
        self.ahead.get().is_some()
            || self.forwarded.is_some()
            || self.pre.get().is_some()
                && !matches!(self.wasm, Wasm::Prepared(..))
                && !self.loaded_quick(runtime)
    }

    /// Whether the tool's calls run the baseline compiler's code (see
    /// runtime/quick.rs): loaded, or kept by the runtime to map again.
    pub(crate) fn loaded_quick(&self, runtime: &Runtime) -> bool {
        runtime.keeps_baseline(&self.key)
            || self
                .pre
                .get()
                .is_some_and(|loaded| loaded.is_ok_and(|pre| runtime.is_quick(&pre)))
    }

    /// The component's size in bytes (unpacked).
    pub(crate) fn wasm_len(&self) -> usize {
        self.wasm.linking().0.len()
    }

    /// Whether compiling or linking the component failed (a call would get
    /// the error again).
    pub(crate) fn warm_up_failed(&self) -> bool {
        self.pre.get().is_some_and(|r| r.is_err())
    }

    /// Whether the component is compiled and linked already (a call would
    /// not have to wait for Cranelift or the compile cache).
    pub fn is_warm(&self) -> bool {
        self.forwarded.is_some() || self.pre.get().is_some_and(|r| r.is_ok())
    }

    /// Run `describe()` now, whatever answer was recorded or cached: what
    /// the component itself says (the test that keeps host/builtins.json
    /// current compares the two).
    pub fn describe_now(&self, runtime: &Runtime) -> Result<ToolInfo, RuntimeError> {
        if self.forwarded.is_some() {
            return Ok(self.info().clone());
        }
        let fail = |reason: String| RuntimeError::Load {
            origin: self.origin.to_string(),
            reason,
        };
        let pre = self.pre(runtime).map_err(fail)?;
        runtime.describe(&self.key, &pre).map_err(fail)
    }

    /// Run one call in a fresh sandbox: the bare sandbox step, which
    /// [`crate::Executor`] wraps in the whole pipeline (lookup, validation,
    /// confirmation, dry run, hooks, audit).
    pub fn run(&self, runtime: &Arc<Runtime>, request: &CallRequest<'_>) -> Outcome {
        if let Some(forwarded) = &self.forwarded {
            // A remote tool runs no wasm and takes no slot; a plain
            // component's function takes its own.
            return forwarded.call(runtime, request);
        }
        // The slot bounds compiling on first use too (sandbox::run's own
        // take of it is then a no-op on this thread).
        let _slot = runtime.slot();
        let pre = self.pre(runtime).map_err(|e| {
            CallError::new(
                ErrorKind::Failed,
                format!("cannot load tool `{}`: {e}", self.name()),
            )
        })?;
        let outcome = sandbox::run(runtime, self.name(), &pre, request);
        if runtime.is_quick(&pre) && runtime.keeps_baseline(&self.key) {
            // The next call maps it again (runtime/quick.rs).
            self.pre.unload_if(|loaded| runtime.is_quick(loaded));
            runtime.forget_linked_baseline(&self.key);
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Were a record unreadable after all, the tool asks for nothing (so it
    // is granted nothing), counts as sensitive, and says why.
    #[test]
    fn an_unreadable_record_fails_closed() {
        let described = Described {
            name: "read_file".to_owned(),
            info: OnceLock::new(),
            recorded: Some(r#"{"name": "read_file", "capabilities": "everything"}"#),
        };
        let info = described.get();
        assert_eq!(info.name, "read_file");
        assert!(info.capabilities.is_empty() && info.sensitive);
        assert!(
            info.description.contains("cannot be read"),
            "{}",
            info.description
        );
    }
}
