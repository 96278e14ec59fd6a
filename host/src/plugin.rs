//! A loaded plugin: its [`ToolInfo`] and, compiled on first use, its
//! pre-linked component (`InstancePre`), from which every call instantiates.

use crate::bindings::ToolPluginPre;
use crate::dynamic::Binding;
use crate::runtime::{Runtime, RuntimeError};
use crate::sandbox::{self, CallState};
use crate::tool_info::ToolInfo;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A built-in plugin embedded in the binary (see host/build.rs).
#[derive(Debug)]
pub struct Builtin {
    /// The crate it was built from.
    pub crate_name: &'static str,
    /// The component bytes.
    pub wasm: &'static [u8],
    /// blake3 of `wasm`, computed at build time.
    pub hash: &'static str,
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
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Builtin => f.write_str("built-in"),
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Dynamic(id) => write!(f, "dynamic tool {id}"),
        }
    }
}

#[derive(Debug)]
enum Wasm {
    Static(&'static [u8]),
    Owned(Arc<[u8]>),
}

/// A loaded plugin. Cheap to keep: compiling happens on first call unless
/// `describe()` had to run at load.
pub struct Plugin {
    info: ToolInfo,
    origin: Origin,
    key: String,
    wasm: Wasm,
    pre: OnceLock<Result<ToolPluginPre<CallState>, String>>,
    /// Set for a tool an agent created: its record, settings and grant.
    dynamic: Option<Arc<Binding>>,
    /// The settings its calls receive, as JSON text (the executor's, made once).
    settings: OnceLock<Arc<str>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.info.name)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    pub(crate) fn load(runtime: &Runtime, source: PluginSource) -> Result<Self, RuntimeError> {
        let (origin, wasm, hash) = match source {
            PluginSource::Builtin(b) => (Origin::Builtin, Wasm::Static(b.wasm), b.hash.to_owned()),
            PluginSource::File(path) => {
                let bytes = std::fs::read(&path).map_err(|e| load_error(&path, e.to_string()))?;
                return Self::load(runtime, PluginSource::Bytes(bytes.into(), path));
            }
            PluginSource::Bytes(bytes, path) => {
                let hash = blake3::hash(&bytes).to_hex().to_string();
                (Origin::File(path), Wasm::Owned(bytes), hash)
            }
        };
        let key = runtime.cache.key(&hash);
        let fail = |reason: String| RuntimeError::Load {
            origin: origin.to_string(),
            reason,
        };
        if let Some(info) = runtime.cache.load_info(&key) {
            return Ok(Self {
                info,
                origin,
                key,
                wasm,
                pre: OnceLock::new(),
                dynamic: None,
                settings: OnceLock::new(),
            });
        }
        let pre = link(runtime, &key, &wasm).map_err(&fail)?;
        let info = sandbox::describe(runtime, &pre).map_err(&fail)?;
        runtime.cache.store_info(&key, &info);
        Ok(Self {
            info,
            origin,
            key,
            wasm,
            pre: OnceLock::from(Ok(pre)),
            dynamic: None,
            settings: OnceLock::new(),
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
            info,
            origin: Origin::Dynamic(binding.meta.id.clone()),
            key: runtime.cache.key(b.hash),
            wasm: Wasm::Static(b.wasm),
            pre: OnceLock::new(),
            dynamic: Some(Arc::new(binding)),
            settings: OnceLock::new(),
        }
    }

    /// This (checked) component as the dynamic tool `binding` describes,
    /// shown as `info`.
    pub(crate) fn into_dynamic(self, info: ToolInfo, binding: Binding) -> Self {
        Self {
            info,
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
        &self.info
    }

    /// Replace the description schemas show (the configuration's prompt
    /// override); what the tool may do does not change.
    pub(crate) fn set_description(&mut self, description: String) {
        self.info.description = description;
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Where it came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The pre-linked component, compiled (or loaded from the cache) on first use.
    pub(crate) fn pre(&self, runtime: &Runtime) -> Result<&ToolPluginPre<CallState>, String> {
        self.pre
            .get_or_init(|| link(runtime, &self.key, &self.wasm))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Make sure the component is compiled and linked now rather than on the
    /// first call (used by benchmarks and `toolhost check`).
    pub fn warm_up(&self, runtime: &Runtime) -> Result<(), RuntimeError> {
        self.pre(runtime)
            .map(|_| ())
            .map_err(|reason| RuntimeError::Load {
                origin: self.origin.to_string(),
                reason,
            })
    }
}

fn load_error(path: &Path, reason: String) -> RuntimeError {
    RuntimeError::Load {
        origin: path.display().to_string(),
        reason,
    }
}

/// [`prepare`], once per runtime for an embedded component.
fn link(runtime: &Runtime, key: &str, wasm: &Wasm) -> Result<ToolPluginPre<CallState>, String> {
    match wasm {
        Wasm::Static(bytes) => runtime.embedded(key, || prepare(runtime, key, bytes)),
        Wasm::Owned(bytes) => prepare(runtime, key, bytes),
    }
}

/// Compile (or load from the cache) and pre-link against the host's imports.
fn prepare(runtime: &Runtime, key: &str, wasm: &[u8]) -> Result<ToolPluginPre<CallState>, String> {
    let component = runtime
        .cache
        .component(&runtime.engine, key, wasm)
        .map_err(|e| format!("not a valid wasm component: {e}"))?;
    let pre = runtime.linker.instantiate_pre(&component).map_err(|e| {
        format!("it needs an import this host does not provide (is it built for the toolhost:plugin@0.1.0 world?): {e}")
    })?;
    ToolPluginPre::new(pre)
        .map_err(|e| format!("it does not export toolhost:plugin/tool@0.1.0: {e}"))
}
