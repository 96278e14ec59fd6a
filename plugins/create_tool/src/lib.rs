//! The `create_tool` tool (seed 001's dynamic tools, sandboxed): an agent
//! writes a new tool — a JavaScript function, an argv template or a
//! component — and it is stored in the dynamic-tool store as **pending**.
//! Its only grant is that store (read-write, at `/dynamic`); it cannot
//! approve anything. A person approves with `toolhost dynamic approve`,
//! and only then does the host load the tool.

use serde_json::Value;
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::dynamic::{
    self, Kind, META_FILE, Meta, RESERVED_NAMES, STORE, STORE_DIR_NAME, Status,
};
use toolhost_builtin::grant::GrantItem;
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
    /// What the tool does and when to use it, written for a model (at least
    /// 20 characters).
    pub description: String,
    /// `javascript`: `source` defines `function run(args, ctx)` returning a
    /// string or an object, and may call `toolhost.readFile/writeFile/listDir`
    /// (workspace grant), `toolhost.run(argv)` (commands grant) and
    /// `toolhost.log`. `command`: `source` is an argv template such as
    /// `["git", "log", "-n", "{{count}}", "--", "{{path}}"]`; each
    /// `{{param}}` item becomes that argument as one whole argument.
    /// `component`: `source` is the workspace path of a `.wasm` component
    /// implementing the toolhost `tool-plugin` world.
    pub kind: Kind,
    /// The script, the argv template (a list of strings) or the `.wasm` path.
    pub source: Source,
    /// JSON Schema of the new tool's arguments, an object schema such as
    /// `{"type": "object", "properties": {"path": {"type": "string"}},
    /// "required": ["path"]}`. Required for javascript and command; a
    /// component declares its own.
    #[serde(default)]
    pub parameters: Option<Value>,
    /// What the tool needs: `workspace:read`, `workspace:write`, `commands`
    /// (a component may also ask `network:HOST` or `env:NAME`). A person
    /// confirms or narrows this on approval.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Who may see and call it: `all` (the default) or one agent's id.
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
}

/// The `create_tool` tool.
pub struct CreateTool;

impl Tool for CreateTool {
    type Args = Args;
    const NAME: &'static str = contract::tool::CREATE_TOOL;
    const DESCRIPTION: &'static str = "Create a new tool when no existing tool does what you \
        need: a JavaScript function, an argv command template, or a WASM component. The tool is \
        stored as pending; a person must approve it (and decide what it may access) before it \
        appears in your tool list. It runs sandboxed with only what was approved. Give a \
        snake_case `name`, a `description` for a model, the `kind`, the `source`, the \
        `parameters` JSON Schema, and the `capabilities` it needs.";

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
    let description = args.description.trim().to_owned();
    if description
        .chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || dynamic::is_invisible(c))
    {
        return Err(ToolError::invalid_input(
            "the description holds control or invisible characters (escape codes, carriage returns, bidirectional or zero-width marks); use plain text",
        ));
    }
    if description.len() < contract::MIN_DESCRIPTION_CHARS || description.len() > MAX_DESCRIPTION {
        return Err(ToolError::invalid_input(format!(
            "the description must tell a model what the tool does and when to use it, in {} to {MAX_DESCRIPTION} characters (it has {})",
            contract::MIN_DESCRIPTION_CHARS,
            description.len()
        )));
    }
    let capabilities = check_capabilities(args.kind, args.capabilities)?;
    let scope = check_scope(args.scope)?;
    let mine = stored
        .iter()
        .filter(|m| m.status != Status::Rejected && m.created_by.as_deref() == ctx.agent())
        .count();
    if mine >= limits.max_per_agent {
        return Err(ToolError::denied(format!(
            "you already have {mine} tools pending or approved, and the limit is {} per agent; ask a person to reject the ones you no longer need (`toolhost dynamic reject ID`)",
            limits.max_per_agent
        )));
    }
    let (parameters, source) = match args.kind {
        Kind::Javascript => {
            let parameters = check_parameters(args.parameters)?;
            let Source::Text(script) = args.source else {
                return Err(ToolError::invalid_input(
                    "a javascript tool's source is the script as one string defining `function run(args, ctx)`",
                ));
            };
            check_size(&script, &limits)?;
            (parameters, script.into_bytes())
        }
        Kind::Command => {
            let parameters = check_parameters(args.parameters)?;
            let template = match args.source {
                Source::Argv(items) => items,
                Source::Text(text) => serde_json::from_str(&text).map_err(|_| {
                    ToolError::invalid_input(
                        "a command tool's source is an argv template: a list of strings such as [\"git\", \"log\", \"-n\", \"{{count}}\"]",
                    )
                })?,
            };
            dynamic::check_template(&template, &parameters).map_err(ToolError::invalid_input)?;
            let text = serde_json::to_string_pretty(&template).unwrap_or_default();
            check_size(&text, &limits)?;
            (parameters, text.into_bytes())
        }
        Kind::Component => {
            let Source::Text(path) = args.source else {
                return Err(ToolError::invalid_input(
                    "a component tool's source is the workspace path of its .wasm file",
                ));
            };
            if path.trim().is_empty() {
                return Err(ToolError::invalid_input(
                    "the source is empty; give the workspace path of the .wasm file",
                ));
            }
            (Value::Null, path.into_bytes())
        }
    };
    let (id, dir) = new_dir(store, &args.name)?;
    let written = write_tool(&dir, &id, args.kind, &source).and_then(|component_schema| {
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
    let text = format!(
        "Created `{name}` (id {id}) as a {kind} tool. It is PENDING: a person must approve it \
         before you can use it (`toolhost dynamic approve {id}`), and decides what it may \
         access. It is not in your tool list until then; you will see it appear when the \
         list changes.",
        name = args.name,
        kind = args.kind.as_str(),
    );
    Ok(Output::text(text).with_structured(Created {
        id,
        name: args.name,
        status: Status::Pending.as_str().to_owned(),
    }))
}

/// Write the source; for a component, have the host check and copy it.
/// Returns a component's own input schema.
fn write_tool(dir: &Path, id: &str, kind: Kind, source: &[u8]) -> Result<Option<Value>, ToolError> {
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
    Ok(None)
}

/// The records already in the store (unreadable ones are skipped).
fn existing(store: &Path) -> Result<Vec<Meta>, ToolError> {
    let entries = match std::fs::read_dir(store) {
        Ok(entries) => entries,
        Err(e) => {
            return Err(
                ToolError::failed(format!("cannot read the dynamic-tool store: {e}"))
                    .with_hint("a person must grant this tool the `dynamic` directory"),
            );
        }
    };
    Ok(entries
        .filter_map(Result::ok)
        .filter_map(|e| dynamic::read_meta(&e.path()).ok())
        .collect())
}

fn check_name(name: &str, limits: &Limits, stored: &[Meta]) -> Result<(), ToolError> {
    if !dynamic::is_snake_case(name) {
        return Err(ToolError::invalid_input(format!(
            "`{name}` is not a snake_case name: use lowercase letters, digits and `_`, starting with a letter (e.g. `count_words`), at most 64 characters"
        )));
    }
    if RESERVED_NAMES.contains(&name) || limits.reserved.iter().any(|r| r == name) {
        return Err(ToolError::invalid_input(format!(
            "`{name}` is reserved or already a tool; choose another name"
        )));
    }
    if let Some(taken) = stored
        .iter()
        .find(|m| m.name == name && m.status != Status::Rejected)
    {
        return Err(ToolError::invalid_input(format!(
            "a dynamic tool named `{name}` already exists ({}, {}); choose another name",
            taken.id,
            taken.status.as_str()
        )));
    }
    Ok(())
}

fn check_parameters(parameters: Option<Value>) -> Result<Value, ToolError> {
    let example =
        r#"{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}"#;
    let Some(parameters) = parameters else {
        return Err(ToolError::invalid_input(format!(
            "`parameters` is required: the JSON Schema of the tool's arguments, e.g. {example}"
        )));
    };
    if parameters.get("type").and_then(Value::as_str) != Some("object") {
        return Err(ToolError::invalid_input(format!(
            "`parameters` must be a JSON Schema object with \"type\": \"object\", e.g. {example}"
        )));
    }
    let size = parameters.to_string().len();
    if size > MAX_PARAMETERS_BYTES {
        return Err(ToolError::invalid_input(format!(
            "`parameters` is {size} bytes of JSON; the limit is {MAX_PARAMETERS_BYTES}"
        )));
    }
    // Compiling checks it against the meta-schema and also what the host
    // will need: no remote `$ref`, valid `pattern` regexes.
    if let Err(err) = jsonschema::validator_for(&parameters) {
        let at = err.instance_path().to_string();
        let at = if at.is_empty() {
            "the root".to_owned()
        } else {
            at
        };
        return Err(ToolError::invalid_input(format!(
            "`parameters` is not a valid JSON Schema: {err} (at {at})"
        )));
    }
    Ok(parameters)
}

fn check_size(source: &str, limits: &Limits) -> Result<(), ToolError> {
    if source.trim().is_empty() {
        return Err(ToolError::invalid_input("the source is empty"));
    }
    if source.len() > limits.max_source_bytes {
        return Err(ToolError::invalid_input(format!(
            "the source is {} bytes; the limit is {} — split the work or simplify it",
            source.len(),
            limits.max_source_bytes
        )));
    }
    Ok(())
}

fn check_capabilities(kind: Kind, asked: Vec<String>) -> Result<Vec<String>, ToolError> {
    let mut out: Vec<String> = Vec::new();
    for cap in asked {
        let cap = cap.trim().to_owned();
        let allowed = match (kind, GrantItem::parse(&cap)) {
            (_, None | Some(GrantItem::Nothing)) => false,
            (Kind::Command, Some(item)) => item == GrantItem::Commands,
            (Kind::Javascript, Some(item)) => matches!(
                item,
                GrantItem::WorkspaceRead | GrantItem::WorkspaceWrite | GrantItem::Commands
            ),
            (Kind::Component, Some(_)) => true,
        };
        if !allowed {
            let choices = match kind {
                Kind::Javascript => "workspace:read, workspace:write, commands",
                Kind::Command => "commands (a command tool needs nothing else)",
                Kind::Component => {
                    "workspace:read, workspace:write, commands, network:HOST, env:NAME"
                }
            };
            return Err(ToolError::invalid_input(format!(
                "`{cap}` is not a capability a {} tool can ask for; choose from {choices}",
                kind.as_str()
            )));
        }
        if !out.contains(&cap) {
            out.push(cap);
        }
    }
    if kind == Kind::Command && out.is_empty() {
        out.push("commands".to_owned());
    }
    Ok(out)
}

fn check_scope(scope: Option<String>) -> Result<String, ToolError> {
    let scope = scope.map_or_else(|| "all".to_owned(), |s| s.trim().to_owned());
    if scope.is_empty() || scope.len() > 128 || scope.chars().any(char::is_control) {
        return Err(ToolError::invalid_input(
            "`scope` is `all` or one agent's id (at most 128 characters)",
        ));
    }
    Ok(scope)
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
