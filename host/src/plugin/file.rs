//! A plugin file's tools: loaded on what the compile cache remembers of
//! it, its bytes read only when it has to be compiled.

use super::{Described, Origin, Plugin, Wasm, load_error};
use crate::runtime::{Linking, Runtime, RuntimeError};
use std::path::Path;

impl Plugin {
    /// The tools of the component file `path`: a toolhost plugin's one, or
    /// a plain component's one per exported function (crate::plain).
    /// `None` when `compile` is false and what it is cannot be known
    /// without compiling it.
    pub(crate) fn load_file_as(
        runtime: &Runtime,
        path: &Path,
        compile: bool,
    ) -> Result<Option<Vec<Self>>, RuntimeError> {
        let file = runtime
            .file_hash(path)
            .map_err(|e| load_error(path, e.to_string()))?;
        let key = runtime.cache_key(&file.hash);
        let len = usize::try_from(file.len).unwrap_or(usize::MAX);
        let unread = Wasm::File {
            path: path.to_owned(),
            hash: file.hash,
            len,
        };
        // A toolhost plugin described before is known from the cache, and
        // its bytes are read only if it has to be compiled; a plain
        // component is known from its compiled code, if the cache holds it
        // (read, not compiled).
        let known = runtime.cached_info(&key).map(Described::from);
        if known.is_none() && !compile && !runtime.holds_compiled(&key, Linking::Owned) {
            return Ok(None);
        }
        let wasm = match (file.bytes, known.is_some()) {
            (Some(bytes), _) => Wasm::Owned(bytes),
            (None, true) => unread,
            (None, false) => Wasm::Owned(
                unread
                    .linking()
                    .0
                    .unpacked()
                    .map_err(|reason| load_error(path, reason))?
                    .into(),
            ),
        };
        if let (None, Wasm::Owned(bytes)) = (&known, &wasm) {
            let label = path.display().to_string();
            let (component, plain) = runtime
                .link_plain(&key, bytes, &label)
                .map_err(|reason| load_error(path, reason))?;
            if let Some(pre) = plain {
                let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
                let tools = crate::plain::tools(
                    runtime,
                    (&component, &pre),
                    bytes,
                    stem.as_deref().unwrap_or("component"),
                )
                .map_err(|reason| load_error(path, reason))?;
                let origin = Origin::File(path.to_owned());
                return Ok(Some(
                    tools
                        .into_iter()
                        .map(|(info, f)| Self::forwarded(info, origin.clone(), f))
                        .collect(),
                ));
            }
        }
        let parts = (Origin::File(path.to_owned()), wasm, key);
        Ok(Self::keyed(runtime, parts, known, compile)?.map(|plugin| vec![plugin]))
    }
}
