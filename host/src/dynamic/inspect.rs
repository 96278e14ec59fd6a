//! What a component is, for the person deciding whether to load it:
//! its tools with their schemas, its exported functions as WIT, its
//! imports, its digest. Worked out from the component's bytes each time
//! it is shown (a record in the store says nothing a plugin could not
//! have written), by the same code that loads it.

use crate::runtime::{MAX_COMPONENT_BYTES, Runtime};
use crate::types::tool_info::{Severity, ToolInfo};

/// A component, inspected.
#[derive(Debug, Clone)]
pub struct Inspected {
    /// A plain WIT component (one tool per exported function), not a
    /// toolhost plugin.
    pub plain: bool,
    /// The tools it would be, named as it would be loaded.
    pub tools: Vec<ToolInfo>,
    /// Its exported functions as WIT signatures.
    pub functions: Vec<String>,
    /// The interfaces it imports (`wasi:filesystem/types@0.2.3`).
    pub imports: Vec<String>,
    /// The BLAKE3 digest of its bytes (what an approval is bound to).
    pub blake3: String,
    /// What `toolhost check` warns of (a toolhost plugin's; a plain
    /// component that loads has none).
    pub warnings: Vec<String>,
}

/// Inspect `wasm` as the component whose tools are named by `name` (a
/// toolhost plugin's tool; a plain component's `{name}_{function}`).
/// Compiles it (once: the compile cache keeps it); runs nothing of it but
/// `describe` (or the environment declaration), in an empty sandbox.
pub fn inspect(runtime: &Runtime, wasm: &[u8], name: &str) -> Result<Inspected, String> {
    if wasm.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(format!(
            "the component is {} bytes; toolhost loads at most {MAX_COMPONENT_BYTES}",
            wasm.len()
        ));
    }
    let blake3 = blake3::hash(wasm).to_hex().to_string();
    let key = runtime.cache_key(&blake3);
    let (component, plain) = runtime.link_plain(&key, wasm, "the component")?;
    let (functions, imports) = crate::plain::interface(&runtime.engine, &component);
    let mut warnings = Vec::new();
    let tools = match &plain {
        Some(pre) => crate::plain::tools(runtime, (&component, pre), wasm, name)?
            .into_iter()
            .map(|(info, _)| info)
            .collect(),
        None => {
            // One check gives both what it is and what it is warned of.
            let report = runtime.check_report(wasm);
            let (errors, warned): (Vec<_>, Vec<_>) = report
                .problems
                .iter()
                .partition(|p| p.severity == Severity::Error);
            let Some(mut info) = report.info.filter(|_| errors.is_empty()) else {
                let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
                return Err(errors.join("\n"));
            };
            info.name = name.to_owned();
            warnings = warned.iter().map(ToString::to_string).collect();
            vec![info]
        }
    };
    Ok(Inspected {
        plain: plain.is_some(),
        tools,
        functions,
        imports,
        blake3,
        warnings,
    })
}
