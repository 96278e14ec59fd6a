//! A component on the review page, as the host inspects it from its bytes
//! each time the page is drawn.

use super::*;

/// A component as the host inspects it from its bytes now (never from
/// what its record says): what it would load as, and where it came from.
#[derive(Serialize)]
pub(super) struct Component {
    bytes: usize,
    hash: String,
    /// `workspace: PATH` or `oci://…@sha256:…`, as recorded.
    from: Option<String>,
    /// What the signatures of a registry's component say, checked now.
    signature: Option<String>,
    plain: bool,
    functions: Vec<String>,
    imports: Vec<String>,
    tools: Vec<ToolView>,
    /// What `toolhost check` warns of.
    warnings: Vec<String>,
    /// Why it cannot be inspected (it would not load either).
    error: Option<String>,
}

/// One tool a component would be.
#[derive(Serialize)]
struct ToolView {
    name: String,
    description: String,
    input: String,
    output: Option<String>,
    /// What it declares it needs, as people write it.
    capabilities: String,
}

impl Component {
    pub(super) fn of(page: &Page, meta: &toolhost_shared::dynamic::Meta, bytes: &[u8]) -> Self {
        let runtime = page.executor.runtime();
        let mut component = Component {
            bytes: bytes.len(),
            hash: blake3::hash(bytes).to_hex().to_string(),
            from: meta.source.clone(),
            signature: meta
                .source
                .as_deref()
                .filter(|s| s.starts_with("oci://"))
                .map(|s| signature_of(page, s, bytes)),
            plain: false,
            functions: Vec::new(),
            imports: Vec::new(),
            tools: Vec::new(),
            warnings: Vec::new(),
            error: None,
        };
        match crate::dynamic::inspect(runtime, bytes, &meta.name) {
            Ok(inspected) => {
                component.plain = inspected.plain;
                component.functions = inspected.functions;
                component.imports = inspected.imports;
                let pretty =
                    |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
                component.tools = inspected
                    .tools
                    .iter()
                    .map(|t| ToolView {
                        name: t.name.clone(),
                        description: t.description.clone(),
                        input: pretty(&t.input_schema),
                        output: t.output_schema.as_ref().map(pretty),
                        capabilities: caps_text(
                            &t.capabilities
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>(),
                        ),
                    })
                    .collect();
                component.warnings = inspected.warnings;
            }
            Err(why) => component.error = Some(why),
        }
        component
    }
}

/// What the signatures of the registry component `by_digest` say about
/// `bytes`, checked now with the configured keys.
#[cfg(feature = "oci")]
fn signature_of(page: &Page, by_digest: &str, bytes: &[u8]) -> String {
    match page.executor.registries() {
        Some(oci) => oci.signature_for(by_digest, bytes),
        None => "not verified: this server fetches nothing from registries".to_owned(),
    }
}

#[cfg(not(feature = "oci"))]
fn signature_of(_: &Page, _: &str, _: &[u8]) -> String {
    "not verified: this build has no registry support".to_owned()
}
