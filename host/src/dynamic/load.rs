//! `load_component`: an agent asks for a WebAssembly component — a `.wasm`
//! in the workspace or an `oci://` reference — to be loaded as tools. The
//! host fetches it (a registry's by digest, its signatures checked),
//! inspects it as it would load it, and files it in the dynamic-tool
//! store as **pending** with the grant asked for. Nothing of it runs but
//! `describe` in an empty sandbox until a person approves it (the review
//! page, or `toolhost dynamic approve`), and then only with what they
//! grant.
//!
//! This tool is the host's own code, not a component: fetching from a
//! registry with the person's credentials and compiling are the host's
//! work, and the agent gets no more from it than a pending record.

use super::{Entry, Meta, Status, Store, inspect, parse_grant, write_meta};
use crate::plugin::{Forwarded, Origin, Plugin};
use crate::runtime::Runtime;
use crate::runtime::sandbox::{CallRequest, Outcome, PluginOutput};
use crate::types::grant::Access;
use crate::types::result::{CallError, ErrorKind};
use crate::types::tool_info::{Capability, ToolInfo, snake_case_suggestion};
use serde_json::{Value, json};
use std::sync::Arc;
use toolhost_shared::contract::{setting, tool};
use toolhost_shared::dynamic::{Kind, RESERVED_NAMES, is_snake_case};

/// Where components named by `oci://` come from, if this build has
/// registry support.
#[cfg(feature = "oci")]
pub type Registries = crate::oci::Oci;
/// Where components named by `oci://` come from: this build has none.
#[cfg(not(feature = "oci"))]
#[derive(Debug, Clone)]
pub struct Registries;

/// The `load_component` tool over `store`, fetching through `registries`.
pub(crate) fn load_component(store: Store, registries: Option<Registries>) -> Plugin {
    let info = ToolInfo {
        name: tool::LOAD_COMPONENT.to_owned(),
        description: "Ask a person to load a WebAssembly component (a `.wasm` in the workspace \
            or `oci://REGISTRY/REPOSITORY:TAG`) as tools: a toolhost plugin is one tool, any \
            other component one per exported function (`NAME_FUNCTION`). They appear once a \
            person approves them, with what they grant."
            .to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "source": {"type": "string", "description": "Workspace path of a .wasm, or oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST)."},
                "name": {"type": "string", "description": "snake_case name for its tools (default: its own)."},
                "capabilities": {"type": "array", "items": {"type": "string"}, "description": "What it needs: workspace:read, workspace:write, network:HOST, env:NAME (default: what its imports use)."},
                "scope": {"type": "string", "description": "`all` (default) or one agent's id."},
            },
            "required": ["source"],
            "additionalProperties": false,
        }),
        output_schema: None,
        sensitive: false,
        capabilities: vec![
            Capability::WorkspaceRead,
            Capability::Directory {
                name: toolhost_shared::dynamic::STORE_DIR_NAME.to_owned(),
                writable: true,
            },
        ],
        version: env!("CARGO_PKG_VERSION").to_owned(),
        title: "Load a component".to_owned(),
        idempotent: false,
    };
    Plugin::forwarded(
        info,
        Origin::Builtin,
        Arc::new(Loader { store, registries }),
    )
}

struct Loader {
    store: Store,
    registries: Option<Registries>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    source: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    capabilities: Option<Vec<String>>,
    #[serde(default)]
    scope: Option<String>,
}

fn invalid(message: impl Into<String>) -> CallError {
    CallError::new(ErrorKind::InvalidInput, message)
}

fn failed(message: impl Into<String>) -> CallError {
    CallError::new(ErrorKind::Failed, message)
}

/// A component fetched: its bytes, where it came from (as recorded), what
/// its signatures say, and the name it calls itself by.
struct Fetched {
    wasm: Vec<u8>,
    from: String,
    signature: Option<String>,
    stem: String,
}

impl Forwarded for Loader {
    fn call(&self, runtime: &Arc<Runtime>, request: &CallRequest<'_>) -> Outcome {
        let args: Args = serde_json::from_str(request.args)
            .map_err(|e| invalid(format!("the arguments do not fit the schema: {e}")))?;
        let settings: Value = serde_json::from_str(request.settings).unwrap_or(Value::Null);
        check_quota(&self.store, request, &settings)?;
        let fetched = self.fetch(args.source.trim(), request)?;
        let name = args
            .name
            .map_or_else(|| fetched.stem.clone(), |n| n.trim().to_owned());
        check_name(&name, &settings)?;
        let inspected = inspect(runtime, &fetched.wasm, &name).map_err(|why| {
            invalid(format!(
                "`{}` cannot be loaded as tools: {why}",
                args.source.trim()
            ))
        })?;
        let asked = match args.capabilities {
            Some(caps) => caps,
            None => default_capabilities(&inspected),
        };
        let grant = parse_grant(&asked).map_err(|e| invalid(e.to_string()))?;
        if grant.commands {
            return Err(invalid(
                "a component loaded this way never runs commands: leave `commands` out",
            ));
        }
        let scope = args
            .scope
            .map_or_else(|| "all".to_owned(), |s| s.trim().to_owned());
        if scope.is_empty() || scope.len() > 128 || scope.chars().any(char::is_control) {
            return Err(invalid(
                "`scope` is `all` or one agent's id (at most 128 characters)",
            ));
        }
        let description = match inspected.tools.as_slice() {
            [one] if !inspected.plain => one.description.clone(),
            tools => format!(
                "The WebAssembly component {} as {} tools: {}.",
                fetched.stem,
                tools.len(),
                tools
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let meta = Meta {
            id: String::new(),
            name,
            description,
            kind: Kind::Component,
            parameters: match inspected.tools.as_slice() {
                [one] if !inspected.plain => one.input_schema.clone(),
                _ => json!({"type": "object"}),
            },
            capabilities: asked,
            scope,
            created_by: request.context.agent.clone(),
            created_at: super::now(),
            status: Status::Pending,
            grant: None,
            decided_at: None,
            reason: None,
            warnings: warnings(&inspected, &grant),
            source: Some(fetched.from.clone()),
            request: None,
        };
        let entry = file(&self.store, meta, &fetched.wasm)?;
        Ok(answer(&entry, &inspected, fetched.signature.as_deref()))
    }

    fn dry_run(&self, args: &Value) -> String {
        format!(
            "would fetch and inspect {} and file it for a person to approve",
            args["source"]
        )
    }
}

impl Loader {
    fn fetch(&self, source: &str, request: &CallRequest<'_>) -> Result<Fetched, CallError> {
        if source.starts_with("oci://") {
            return self.fetch_oci(source);
        }
        let workspace = request
            .workspace
            .filter(|_| request.grant.workspace.is_some_and(|a| a >= Access::Read))
            .ok_or_else(|| {
                invalid("there is no workspace to read the component from: give an oci:// source")
            })?;
        let given = std::path::Path::new(source);
        let rel = given.strip_prefix(workspace).unwrap_or(given);
        let rules = request
            .paths
            .cloned()
            .unwrap_or_else(crate::types::paths::PathRules::shared_default);
        crate::guard::PathGuard::new(rules, Vec::new())
            .check_read_beneath(workspace, rel)
            .map_err(invalid)?;
        let wasm = crate::imports::dynamic::read_in(workspace, source).map_err(invalid)?;
        let stem = given.file_stem().map_or_else(
            || "component".to_owned(),
            |s| s.to_string_lossy().into_owned(),
        );
        Ok(Fetched {
            wasm,
            from: format!("workspace: {}", rel.display()),
            signature: None,
            stem: snake_case_suggestion(&stem),
        })
    }

    #[cfg(feature = "oci")]
    fn fetch_oci(&self, source: &str) -> Result<Fetched, CallError> {
        let oci = self
            .registries
            .as_ref()
            .ok_or_else(|| failed("this toolhost loads no component from registries"))?;
        let reviewed = oci.fetch_for_review(source).map_err(|e| match e {
            crate::oci::OciError::BadSource(_) => invalid(e.to_string()),
            other => failed(format!("cannot fetch {source}: {other}")),
        })?;
        let repo = source.trim_start_matches("oci://");
        let repo = repo.split(['@']).next().unwrap_or(repo);
        let last = repo.rsplit('/').next().unwrap_or(repo);
        let stem = last.split(':').next().unwrap_or(last);
        Ok(Fetched {
            wasm: reviewed.wasm,
            from: reviewed.by_digest,
            signature: Some(reviewed.signature),
            stem: snake_case_suggestion(stem),
        })
    }

    #[cfg(not(feature = "oci"))]
    fn fetch_oci(&self, _: &str) -> Result<Fetched, CallError> {
        let _ = &self.registries;
        Err(failed(
            "this build of toolhost has no registry support (the `oci` feature); give a workspace path",
        ))
    }
}

/// The most tools one agent may have pending or approved, counted as
/// create_tool counts them.
fn check_quota(
    store: &Store,
    request: &CallRequest<'_>,
    settings: &Value,
) -> Result<(), CallError> {
    let most = settings[setting::MAX_PER_AGENT]
        .as_u64()
        .unwrap_or(super::DEFAULT_MAX_PER_AGENT.into());
    let agent = request.context.agent.as_deref();
    let theirs = store
        .list()
        .0
        .iter()
        .filter(|e| e.meta.status != Status::Rejected && e.meta.created_by.as_deref() == agent)
        .count();
    if theirs as u64 >= most {
        return Err(invalid(format!(
            "you have {theirs} tools pending or approved, the most one agent may have; ask a \
             person to reject the ones you no longer need"
        )));
    }
    Ok(())
}

fn check_name(name: &str, settings: &Value) -> Result<(), CallError> {
    if !is_snake_case(name) {
        return Err(invalid(format!(
            "`{name}` is not a snake_case name (lowercase letters, digits and `_`); give `name`"
        )));
    }
    let taken = settings[setting::RESERVED_NAMES]
        .as_array()
        .is_some_and(|names| names.iter().any(|n| n == name));
    if taken || RESERVED_NAMES.contains(&name) {
        return Err(invalid(format!("`{name}` is taken; give another `name`")));
    }
    Ok(())
}

/// What the component's own imports use, in `--grant` spelling; never a
/// host it did not name (`network:*` is left for the agent to narrow).
fn default_capabilities(inspected: &super::Inspected) -> Vec<String> {
    let mut caps: Vec<String> = Vec::new();
    for tool in &inspected.tools {
        for cap in &tool.capabilities {
            let items = match cap {
                Capability::Network(hosts) => hosts
                    .iter()
                    .filter(|h| *h != "*")
                    .map(|h| format!("network:{h}"))
                    .collect(),
                Capability::Directory { .. } | Capability::Service(_) | Capability::Commands => {
                    Vec::new()
                }
                other => vec![other.to_string()],
            };
            for item in items {
                if !caps.contains(&item) {
                    caps.push(item);
                }
            }
        }
    }
    caps
}

/// What the reviewer should look at twice.
fn warnings(inspected: &super::Inspected, grant: &crate::types::grant::Grant) -> Vec<String> {
    let mut out = Vec::new();
    let http = inspected
        .imports
        .iter()
        .any(|i| i.starts_with("wasi:http/"));
    if http && grant.network.is_empty() {
        out.push("it imports wasi:http but asks for no host: it reaches none unless you grant `network:HOST`".to_owned());
    }
    if !grant.network.is_empty() && !http {
        out.push("it asks for the network but does not import wasi:http".to_owned());
    }
    if grant.workspace.is_some()
        && !inspected
            .imports
            .iter()
            .any(|i| i.starts_with("wasi:filesystem/"))
        && inspected.plain
    {
        out.push("it asks for the workspace but does not import wasi:filesystem".to_owned());
    }
    out
}

/// Write `<store>/<id>/tool.wasm`, then its record (a directory without
/// one is not a tool); nothing half-made stays behind.
fn file(store: &Store, mut meta: Meta, wasm: &[u8]) -> Result<Entry, CallError> {
    let cannot = |e: std::io::Error| {
        failed(format!(
            "cannot file the component in {}: {e}",
            store.dir().display()
        ))
    };
    std::fs::create_dir_all(store.dir()).map_err(cannot)?;
    let mut made = None;
    for _ in 0..8 {
        let id = format!("{}-{}", meta.name, crate::net::random_hex(4));
        let dir = store.dir().join(&id);
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                made = Some((id, dir));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(cannot(e)),
        }
    }
    let (id, dir) = made.ok_or_else(|| failed("cannot pick a free id in the store; try again"))?;
    meta.id = id;
    let entry = Entry { meta, dir };
    let written = std::fs::write(entry.source_path(), wasm)
        .map_err(cannot)
        .and_then(|()| write_meta(&entry).map_err(|e| failed(e.to_string())));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&entry.dir);
        return Err(e);
    }
    Ok(entry)
}

/// What the agent is told: pending, what it will be, and what it asked.
fn answer(entry: &Entry, inspected: &super::Inspected, signature: Option<&str>) -> PluginOutput {
    let m = &entry.meta;
    let tools: Vec<&str> = inspected.tools.iter().map(|t| t.name.as_str()).collect();
    let mut content = format!(
        "Filed `{}` (id {}) from {}: {} tool(s), {}. It is PENDING: a person must approve it \
         (the review page, or `toolhost dynamic approve {}`) and decides what it may access; \
         its tools appear in your list once approved.",
        m.name,
        m.id,
        m.source.as_deref().unwrap_or_default(),
        tools.len(),
        tools.join(", "),
        m.id,
    );
    if let Some(signature) = signature {
        content.push_str(&format!("\nSignature: {signature}."));
    }
    for w in &m.warnings {
        content.push_str(&format!("\nThe reviewer is warned: {w}."));
    }
    PluginOutput {
        content,
        structured: Some(json!({
            "id": m.id, "name": m.name, "status": m.status.as_str(), "tools": tools,
            "source": m.source, "signature": signature, "capabilities": m.capabilities,
        })),
        changed_paths: Vec::new(),
    }
}
