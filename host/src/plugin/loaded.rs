//! A plugin's code loaded on first use, and what was recorded of the built-ins at build time.

use super::*;

/// A plugin's component once loaded (compiled or read from the compile
/// cache, and pre-linked), or why it could not be; empty before the first
/// call and after an unload.
#[derive(Default)]
pub(super) struct Loaded(RwLock<Option<Result<ToolPluginPre<CallState>, String>>>);

impl Loaded {
    pub(super) fn with(pre: ToolPluginPre<CallState>) -> Self {
        Self(RwLock::new(Some(Ok(pre))))
    }

    /// What was loaded, if anything (cloned: a few reference counts).
    pub(super) fn get(&self) -> Option<Result<ToolPluginPre<CallState>, String>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What was loaded, or `load` it now (one thread loads, the others wait
    /// for it).
    pub(super) fn get_or_load(
        &self,
        load: impl FnOnce() -> Result<ToolPluginPre<CallState>, String>,
    ) -> Result<ToolPluginPre<CallState>, String> {
        if let Some(loaded) = self.get() {
            return loaded;
        }
        let mut slot = self.0.write().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert_with(load).clone()
    }

    /// Drop a loaded component (not a failure); true if there was one.
    pub(super) fn unload(&self) -> bool {
        self.unload_if(|_| true)
    }

    /// Drop the loaded component if `which` says so; true if it did.
    pub(super) fn unload_if(&self, which: impl FnOnce(&ToolPluginPre<CallState>) -> bool) -> bool {
        let mut slot = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if slot
            .as_ref()
            .is_some_and(|loaded| loaded.as_ref().is_ok_and(which))
        {
            *slot = None;
            return true;
        }
        false
    }
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.get() {
            None => "not loaded",
            Some(Ok(_)) => "loaded",
            Some(Err(_)) => "failed",
        };
        f.write_str(state)
    }
}

pub(super) fn load_error(path: &Path, reason: String) -> RuntimeError {
    RuntimeError::Load {
        origin: path.display().to_string(),
        reason,
    }
}

/// Compile and pre-link `wasm` (`label` names it in compile progress); an
/// embedded component once per runtime.
pub(super) fn link(
    runtime: &Runtime,
    key: &str,
    wasm: &Wasm,
    label: &str,
) -> Result<ToolPluginPre<CallState>, String> {
    let (bytes, linking) = wasm.linking();
    runtime.link(key, bytes, linking, label)
}

impl Wasm {
    /// The bytes, and how the runtime links them.
    pub(super) fn linking(&self) -> (WasmBytes<'_>, Linking<'_>) {
        match self {
            Wasm::Static(bytes) => (*bytes, Linking::Embedded),
            Wasm::Preinitialised(bytes) => (*bytes, Linking::Preinitialised),
            Wasm::Prepared(bytes, script) => (*bytes, Linking::Prepared(script)),
            Wasm::Owned(bytes) => (WasmBytes::Plain(bytes), Linking::Owned),
            Wasm::File { path, hash, len } => (
                WasmBytes::File {
                    path,
                    hash,
                    len: *len,
                },
                Linking::Owned,
            ),
        }
    }
}

/// The path of the recorded `describe()` answers of the built-ins, relative
/// to the host crate.
pub const RECORDED_BUILTINS: &str = "builtins.json";

/// What a plugin is (its `describe()` answer). A built-in's was recorded
/// at build time (host/builtins.json, split by host/build.rs) and is read
/// on first use: loading the built-ins takes only their names, and a
/// one-shot `toolhost call` reads its own tool's record alone.
pub(super) struct Described {
    pub(super) name: String,
    pub(super) info: OnceLock<ToolInfo>,
    /// The built-in's record, as JSON text.
    pub(super) recorded: Option<&'static str>,
}

impl From<ToolInfo> for Described {
    fn from(info: ToolInfo) -> Self {
        Self {
            name: info.name.clone(),
            info: OnceLock::from(info),
            recorded: None,
        }
    }
}

impl Described {
    /// A built-in as it answered `describe()` when host/builtins.json was
    /// last recorded (one not recorded is described by running it).
    /// Listing the built-ins needs no compile at all, so a first start
    /// answers `tools/list` at once and each built-in is compiled on its
    /// first call. The e2e test
    /// `cold_start::the_recorded_descriptions_are_what_the_components_say`
    /// keeps the file in step with the components (`TOOLHOST_BLESS=1`
    /// rewrites it).
    pub(super) fn recorded(recorded: Recorded) -> Self {
        Self {
            name: recorded.name.to_owned(),
            info: OnceLock::new(),
            recorded: Some(recorded.json),
        }
    }

    pub(super) fn get(&self) -> &ToolInfo {
        self.info.get_or_init(|| {
            let recorded = self.recorded.unwrap_or_default();
            serde_json::from_str(recorded).unwrap_or_else(|err| {
                // Never seen: the test that keeps host/builtins.json current
                // reads every record. Fail closed: it asks for nothing, so
                // it is granted nothing, and its description says why.
                tracing::error!(tool = %self.name, %err, "the built-in's recorded description is unreadable");
                ToolInfo::unreadable(&self.name, &err.to_string())
            })
        })
    }
}
