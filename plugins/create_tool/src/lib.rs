//! The `create_tool` tool (the TypeScript bot framework's dynamic tools, sandboxed): an agent
//! writes a new tool — a JavaScript function, an argv template or a
//! component — and it is stored in the dynamic-tool store as **pending**.
//! Its only grant is that store (read-write, at `/dynamic`); it cannot
//! approve anything. A person approves with `toolhost dynamic approve`,
//! and only then does the host load the tool.

mod checks;
mod js;
mod ts;

use checks::{
    check_capabilities, check_description, check_name, check_quota, check_scope, check_source,
    existing, review_warnings,
};
use serde_json::Value;
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::dynamic::{self, Kind, META_FILE, Meta, STORE, STORE_DIR_NAME, Status};
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError, export_tool,
};

/// The most tools one agent may have pending or approved, unless the host
/// configures `max_per_agent`.
const DEFAULT_MAX_PER_AGENT: usize = contract::DEFAULT_MAX_PER_AGENT as usize;

/// The largest script or template, unless the host configures `max_source_bytes`.
const DEFAULT_MAX_SOURCE_BYTES: usize = contract::DEFAULT_MAX_SOURCE_BYTES as usize;

/// The largest `parameters` schema, as JSON text.
const MAX_PARAMETERS_BYTES: usize = 64 * 1024;

/// The longest description.
const MAX_DESCRIPTION: usize = contract::MAX_DESCRIPTION_CHARS;

/// The source: a script or a path as text, or an argv template as a list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Source {
    /// A script, a component's path, or a template as JSON text.
    Text(String),
    /// An argv template.
    Argv(Vec<String>),
}

/// Arguments of `create_tool`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The new tool's name: snake_case (`count_words`), not used by any tool.
    pub name: String,
    /// What it does and when to use it, for a model (20 characters or more).
    pub description: String,
    /// `javascript`: `source` defines `function run(args, ctx)` returning a
    /// string or an object; it may call `toolhost.readFile/writeFile/listDir`,
    /// `toolhost.run(argv)` and `toolhost.log`. `typescript`: the same, types
    /// removed. `command`: `source` is an argv template (`["git", "log",
    /// "{{path}}"]`), each `{{param}}` one whole argument. `component`:
    /// `source` is a `.wasm` path in the workspace.
    pub kind: Kind,
    /// The script, the argv template (a list of strings) or the `.wasm` path.
    pub source: Source,
    /// The JSON Schema (an object schema) of its arguments; a component
    /// declares its own.
    #[serde(default)]
    pub parameters: Option<Value>,
    /// What it needs: `workspace:read`, `workspace:write`, `commands` (a
    /// component also `network:HOST`, `env:NAME`); a person may narrow it.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// `all` (the default) or an agent's id: only it (and you) may call it.
    #[serde(default)]
    pub scope: Option<String>,
}

/// What was stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Created {
    /// The id a person approves it by.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Always `pending`.
    pub status: String,
    /// What the reviewer is asked to look at twice (`line N: uses eval`).
    pub warnings: Vec<String>,
}

/// The `create_tool` tool.
pub struct CreateTool;

impl Tool for CreateTool {
    type Args = Args;
    const NAME: &'static str = contract::tool::CREATE_TOOL;
    const TITLE: Option<&'static str> = Some("Create a tool");
    const DESCRIPTION: &'static str = "Create a tool when no existing tool does what you need: \
        a JavaScript or TypeScript function, an argv command template, or a WASM component. It \
        waits until a person approves it and what it may access; then it appears in your tool \
        list and runs sandboxed with only that.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: STORE_DIR_NAME.to_owned(),
            writable: true,
        }]
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_sdk::json_schema::<Created>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        create(args, ctx, Path::new(STORE))
    }
}

/// The limits and names the host passes in the settings.
struct Limits {
    max_per_agent: usize,
    max_source_bytes: usize,
    reserved: Vec<String>,
}

impl Limits {
    fn from(ctx: &Context) -> Self {
        Self {
            max_per_agent: ctx
                .setting(contract::setting::MAX_PER_AGENT)
                .unwrap_or(DEFAULT_MAX_PER_AGENT),
            max_source_bytes: ctx
                .setting(contract::setting::MAX_SOURCE_BYTES)
                .unwrap_or(DEFAULT_MAX_SOURCE_BYTES),
            reserved: ctx
                .setting(contract::setting::RESERVED_NAMES)
                .unwrap_or_default(),
        }
    }
}

/// The body of [`CreateTool::call`], over the store at `store`.
pub fn create(args: Args, ctx: &Context, store: &Path) -> Result<Output, ToolError> {
    let store = toolhost_sdk::fs::granted_dir(store, contract::tool::CREATE_TOOL)?;
    let limits = Limits::from(ctx);
    let stored = existing(store)?;
    check_name(&args.name, &limits, &stored)?;
    let description = check_description(&args.description)?;
    let capabilities = check_capabilities(args.kind, args.capabilities)?;
    let scope = check_scope(args.scope)?;
    check_quota(&stored, ctx.agent(), &limits)?;
    let checked = check_source(args.kind, args.parameters, args.source, &limits)?;
    let parameters = checked.parameters;
    let warnings = review_warnings(args.kind, &checked.source)?;
    let (id, dir) = new_dir(store, &args.name)?;
    let written = write_tool(
        &dir,
        &id,
        args.kind,
        &checked.source,
        checked.original.as_deref(),
    )
    .and_then(|component_schema| {
        let meta = Meta {
            id: id.clone(),
            name: args.name.clone(),
            description,
            kind: args.kind,
            parameters: component_schema.unwrap_or(parameters),
            capabilities,
            scope,
            created_by: ctx.agent().map(str::to_owned),
            created_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            status: Status::Pending,
            grant: None,
            decided_at: None,
            reason: None,
            warnings: warnings.clone(),
            source: None,
            request: None,
        };
        let text = serde_json::to_string_pretty(&meta).unwrap_or_default();
        toolhost_sdk::fs::write_atomic_in_dir(&dir.join(META_FILE), text.as_bytes())
            .map_err(|e| e.context("cannot write the tool's record"))
    });
    if let Err(err) = written {
        // Nothing half-made stays behind.
        let _ = std::fs::remove_dir_all(&dir);
        return Err(err);
    }
    let mut text = format!(
        "Created `{name}` (id {id}) as a {kind} tool. It is PENDING: a person must approve it \
         before you can use it (`toolhost dynamic approve {id}`), and decides what it may \
         access. It is not in your tool list until then; you will see it appear when the \
         list changes.",
        name = args.name,
        kind = args.kind.as_str(),
    );
    if !warnings.is_empty() {
        text.push_str(
            "\nThe reviewer is shown these warnings (a tool without them is easier to approve):\n",
        );
        for w in &warnings {
            text.push_str(&format!("- {w}\n"));
        }
    }
    Ok(Output::text(text).with_structured(Created {
        id,
        name: args.name,
        status: Status::Pending.as_str().to_owned(),
        warnings,
    }))
}

/// Write the source (and what is kept for reading beside it); for a
/// component, have the host check and copy it. Returns a component's own
/// input schema.
fn write_tool(
    dir: &Path,
    id: &str,
    kind: Kind,
    source: &[u8],
    original: Option<&[u8]>,
) -> Result<Option<Value>, ToolError> {
    if kind == Kind::Component {
        let path = String::from_utf8_lossy(source);
        let dest = format!("{STORE}/{id}/{}", kind.source_file());
        let info = dynamic::check_component(path.trim(), &dest).map_err(|why| {
            ToolError::invalid_input(format!(
                "`{}` is not a conforming toolhost component:\n{why}",
                path.trim()
            ))
        })?;
        return Ok(Some(
            info.get("input_schema").cloned().unwrap_or(Value::Null),
        ));
    }
    std::fs::write(dir.join(kind.source_file()), source)
        .map_err(|e| ToolError::failed(format!("cannot write the tool's source: {e}")))?;
    if let (Some(name), Some(original)) = (kind.original_file(), original) {
        std::fs::write(dir.join(name), original)
            .map_err(|e| ToolError::failed(format!("cannot write the tool's source: {e}")))?;
    }
    Ok(None)
}

/// Create the new tool's directory, `<store>/<id>`: never an existing one
/// (another tool's files stay untouched), so a clash picks another id.
fn new_dir(store: &Path, name: &str) -> Result<(String, std::path::PathBuf), ToolError> {
    let mut last = None;
    for _ in 0..8 {
        let id = new_id(name);
        let dir = store.join(&id);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok((id, dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(ToolError::failed(format!(
                    "cannot create {}: {e}",
                    dir.display()
                )));
            }
        }
    }
    Err(ToolError::failed(format!(
        "cannot find a free id for `{name}` in the store ({})",
        last.map(|e| e.to_string()).unwrap_or_default()
    )))
}

/// `<name>-<8 hex>`: the name, for people, and a random part so a name
/// used again after a rejection gets a fresh directory.
fn new_id(name: &str) -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write(name.as_bytes());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    format!("{name}-{:08x}", hasher.finish() as u32)
}

export_tool!(CreateTool);

#[cfg(test)]
mod tests;
