//! Plain WIT components as tools: a component that does not implement
//! `toolhost:plugin` (one built with wit-bindgen, componentize-js or
//! componentize-py for any host) is one tool per exported function, its
//! own or in an interface it exports.
//!
//! - Name: `{component}_{function}` in snake_case (the component's file
//!   name; `{component}_{interface}_{function}` when two interfaces
//!   export the same name).
//! - Input schema: an object of the parameters, each by its WIT type
//!   ([`values`]); output schema: a record result as it is, any other
//!   result as `{"value": …}`; a `result<T, E>` result is T on success and
//!   the tool's error (E's text) on failure.
//! - Capabilities: what its imports can use. Importing
//!   `wasi:filesystem` asks for the workspace (read or write, as granted),
//!   `wasi:http` for the network (the hosts granted); nothing else is
//!   granted, and a component importing what toolhost does not provide is
//!   refused, naming it. A plain component never runs commands.
//! - Every call is a fresh instance in the same sandbox as any tool's.
//!
//! All of it comes from the component's own types as wasmtime reads them:
//! no schema is written by hand.

mod docs;
mod values;
mod wit;

use crate::plugin::Forwarded;
use crate::runtime::sandbox::{self, CallRequest, CallState, Outcome, PluginOutput};
use crate::runtime::{CheckReport, Runtime};
use crate::types::result::{CallError, ErrorKind};
use crate::types::tool_info::Problem;
use crate::types::tool_info::{ToolInfo, snake_case_suggestion};
use serde_json::{Value, json};
use std::sync::Arc;
use wasmtime::Engine;
use wasmtime::component::types::{ComponentFunc, ComponentItem};
use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Type};

/// One exported function of a plain component, as a tool.
pub(crate) struct PlainFunc {
    tool: String,
    /// `greet`, or `example:inventory/shelf@0.1.0#total`.
    wit_name: String,
    pre: InstancePre<CallState>,
    export: ComponentExportIndex,
    params: Vec<(String, Type)>,
    result: Option<Type>,
}

/// An exported function found in a component: the interface holding it
/// (if any), its name, and where it is.
struct Found {
    interface: Option<String>,
    name: String,
    func: ComponentFunc,
    export: ComponentExportIndex,
}

/// The tools of the plain component `component` (linked as `pre`, its
/// bytes `wasm`), named after `stem` (its file name): one per exported
/// function, or why none.
pub(crate) fn tools(
    runtime: &Runtime,
    (component, pre): (&Component, &InstancePre<CallState>),
    wasm: &[u8],
    stem: &str,
) -> Result<Vec<(ToolInfo, Arc<PlainFunc>)>, String> {
    let docs = docs::Docs::of(wasm);
    let engine = &runtime.engine;
    let found = exported_functions(engine, component);
    if found.is_empty() {
        return Err(
            "it exports no function: a plain component is one tool per exported function \
             (or implement the toolhost:plugin world with a toolhost SDK)"
                .into(),
        );
    }
    let mut caps = capabilities(engine, component);
    caps.env = declared_env(runtime, component, pre)?;
    let prefix = snake_case_suggestion(stem);
    let mut tools = Vec::new();
    let mut refused = Vec::new();
    for f in &found {
        let clash = found
            .iter()
            .filter(|g| g.name == f.name && g.interface != f.interface)
            .count()
            > 0;
        let tool = match (&f.interface, clash) {
            (Some(iface), true) => format!(
                "{prefix}_{}_{}",
                snake_case_suggestion(short(iface)),
                snake_case_suggestion(&f.name)
            ),
            _ => format!("{prefix}_{}", snake_case_suggestion(&f.name)),
        };
        let wit_name = f
            .interface
            .as_ref()
            .map_or_else(|| f.name.clone(), |i| format!("{i}#{}", f.name));
        let doc = docs.function(f.interface.as_deref().map(short), &f.name);
        match describe(&tool, (&wit_name, doc), &f.func, &caps, stem) {
            Ok((info, params, result)) => tools.push((
                info,
                Arc::new(PlainFunc {
                    tool,
                    wit_name,
                    pre: pre.clone(),
                    export: f.export,
                    params,
                    result,
                }),
            )),
            Err(why) => refused.push(format!("`{wit_name}`: {why}")),
        }
    }
    if tools.is_empty() {
        return Err(format!(
            "none of its functions can be a tool: {}",
            refused.join("; ")
        ));
    }
    for why in &refused {
        tracing::warn!(component = stem, "a function left out: {why}");
    }
    Ok(tools)
}

/// What `component` exports and imports, as WIT for a person reviewing
/// it: each exported function's signature (`shelf@0.1.0#total: func(…)
/// -> …`) and each import's name (`wasi:filesystem/types@0.2.3`).
pub(crate) fn interface(engine: &Engine, component: &Component) -> (Vec<String>, Vec<String>) {
    let functions = exported_functions(engine, component)
        .iter()
        .map(|f| {
            let name = f
                .interface
                .as_ref()
                .map_or_else(|| f.name.clone(), |i| format!("{i}#{}", f.name));
            wit::signature(&name, &f.func)
        })
        .collect();
    let imports = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    (functions, imports)
}

/// The functions `component` exports, its own and its interfaces'.
fn exported_functions(engine: &Engine, component: &Component) -> Vec<Found> {
    let mut found = Vec::new();
    for (name, item) in component.component_type().exports(engine) {
        match item.ty {
            ComponentItem::ComponentFunc(func) => {
                if let Some(export) = component.get_export_index(None, name) {
                    found.push(Found {
                        interface: None,
                        name: name.to_owned(),
                        func,
                        export,
                    });
                }
            }
            // How it declares its environment, not a tool; nor is the
            // pre-initialisation hook componentize-py leaves in (`exports`,
            // whose `init` crashes once the interpreter runs).
            ComponentItem::ComponentInstance(_)
                if name == sandbox::ENVIRONMENT || name == "exports" => {}
            ComponentItem::ComponentInstance(instance) => {
                let Some(parent) = component.get_export_index(None, name) else {
                    continue;
                };
                for (fname, item) in instance.exports(engine) {
                    let ComponentItem::ComponentFunc(func) = item.ty else {
                        continue;
                    };
                    // A resource's methods and constructors are not tools.
                    if fname.starts_with('[') {
                        continue;
                    }
                    if let Some(export) = component.get_export_index(Some(&parent), fname) {
                        found.push(Found {
                            interface: Some(name.to_owned()),
                            name: fname.to_owned(),
                            func,
                            export,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// What the component's imports ask for.
struct Caps {
    files: bool,
    http: bool,
    /// The environment variables it declares.
    env: Vec<String>,
}

/// The environment variables the component declares through the WIT
/// `environment` interface, asked in an empty sandbox; checked.
fn declared_env(
    runtime: &Runtime,
    component: &Component,
    pre: &InstancePre<CallState>,
) -> Result<Vec<String>, String> {
    let exported = component
        .component_type()
        .exports(&runtime.engine)
        .any(|(name, _)| name == sandbox::ENVIRONMENT);
    if !exported {
        return Ok(Vec::new());
    }
    let engine = pre.engine();
    let names = sandbox::in_empty_sandbox(runtime, engine, "environment.variables()", |store| {
        let instance = pre.instantiate(&mut *store)?;
        sandbox::declared_env(store, &instance)
    })?;
    match crate::types::tool_info::env_problems(&names)
        .into_iter()
        .next()
    {
        Some(problem) => Err(problem.message),
        None => Ok(names),
    }
}

fn capabilities(engine: &Engine, component: &Component) -> Caps {
    let imports: Vec<String> = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    Caps {
        files: imports.iter().any(|n| n.starts_with("wasi:filesystem/")),
        http: imports.iter().any(|n| n.starts_with("wasi:http/")),
        env: Vec::new(),
    }
}

type Described = (ToolInfo, Vec<(String, Type)>, Option<Type>);

fn describe(
    tool: &str,
    (wit_name, doc): (&str, Option<&str>),
    func: &ComponentFunc,
    caps: &Caps,
    stem: &str,
) -> Result<Described, String> {
    let params: Vec<(String, Type)> = func.params().map(|(n, t)| (n.to_owned(), t)).collect();
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, ty) in &params {
        let schema = values::schema_of(ty).map_err(|e| format!("parameter `{name}` is {e}"))?;
        properties.insert(name.clone(), schema);
        if !matches!(ty, Type::Option(_)) {
            required.push(name.clone());
        }
    }
    let input = json!({
        "type": "object", "properties": properties, "required": required,
        "additionalProperties": false,
    });
    let mut results = func.results();
    let result = results.next();
    if results.next().is_some() {
        return Err("it returns more than one value".into());
    }
    let output = match result.as_ref().map(success_type) {
        None | Some(None) => None,
        Some(Some(ty)) => Some(output_schema(&ty).map_err(|e| format!("its result is {e}"))?),
    };
    let mut capabilities = Vec::new();
    if caps.files {
        capabilities.push(crate::types::tool_info::Capability::WorkspaceWrite);
    }
    if caps.http {
        capabilities.push(crate::types::tool_info::Capability::Network(vec![
            "*".into(),
        ]));
    }
    capabilities.extend(
        caps.env
            .iter()
            .cloned()
            .map(crate::types::tool_info::Capability::Env),
    );
    let version = wit_name
        .split_once('@')
        .and_then(|(_, v)| v.split('#').next())
        .filter(|v| !v.is_empty())
        .unwrap_or("0.0.0")
        .to_owned();
    let info = ToolInfo {
        name: tool.to_owned(),
        // The WIT doc comment, when the component carries its docs.
        description: doc.map_or_else(
            || {
                format!(
                    "Calls `{wit_name}` of the WebAssembly component {stem}: give its parameters \
                     as the input schema says; its result comes back as JSON.",
                )
            },
            str::to_owned,
        ),
        input_schema: input,
        output_schema: output,
        // Files it may write make it sensitive by its grant (as any
        // tool's); a request it may send could change anything.
        sensitive: caps.http,
        capabilities,
        version,
        title: crate::types::tool_info::title_from_name(tool),
        idempotent: false,
    };
    Ok((info, params, result))
}

/// What a result of type `ty` gives on success: a `result`'s ok type.
fn success_type(ty: &Type) -> Option<Type> {
    match ty {
        Type::Result(r) => r.ok(),
        other => Some(other.clone()),
    }
}

/// A success value's output schema: a record as it is, anything else
/// under `value`.
fn output_schema(ty: &Type) -> Result<Value, String> {
    let schema = values::schema_of(ty)?;
    Ok(match ty {
        Type::Record(_) => schema,
        _ => json!({
            "type": "object", "properties": {"value": schema}, "required": ["value"],
            "additionalProperties": false,
        }),
    })
}

/// `example:inventory/shelf@0.1.0` → `shelf`.
fn short(interface: &str) -> &str {
    let name = interface.split('@').next().unwrap_or(interface);
    name.rsplit(['/', ':']).next().unwrap_or(name)
}

/// `toolhost check` of the component `wasm` from `file`: a toolhost
/// plugin's checks ([`Runtime::check_report`]), or a plain component's
/// tools with their derived schemas.
pub fn check_component(runtime: &Runtime, wasm: &[u8], file: &std::path::Path) -> CheckReport {
    if wasm.len() as u64 > crate::runtime::MAX_COMPONENT_BYTES {
        return runtime.check_report(wasm);
    }
    let key = runtime.cache_key(&blake3::hash(wasm).to_hex());
    let Ok((component, Some(pre))) = runtime.link_plain(&key, wasm, "the component") else {
        // A toolhost plugin, or one that does not link: its checks say.
        return runtime.check_report(wasm);
    };
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
    match tools(
        runtime,
        (&component, &pre),
        wasm,
        stem.as_deref().unwrap_or("component"),
    ) {
        Ok(tools) => CheckReport {
            info: None,
            plain: tools.into_iter().map(|(info, _)| info).collect(),
            problems: Vec::new(),
        },
        Err(why) => CheckReport {
            info: None,
            plain: Vec::new(),
            problems: vec![Problem::component(
                why,
                "export functions whose parameters and results are WIT values (no resources),                  or implement the toolhost:plugin world with a toolhost SDK",
            )],
        },
    }
}

impl PlainFunc {
    fn params(&self, args: &str) -> Result<Vec<wasmtime::component::Val>, CallError> {
        let invalid = |message: String| CallError::new(ErrorKind::InvalidInput, message);
        let args: Value = serde_json::from_str(args)
            .map_err(|e| invalid(format!("the arguments are not JSON: {e}")))?;
        let Some(object) = args.as_object() else {
            return Err(invalid("the arguments must be a JSON object".into()));
        };
        if let Some(extra) = object
            .keys()
            .find(|k| !self.params.iter().any(|(n, _)| n == *k))
        {
            let names: Vec<&str> = self.params.iter().map(|(n, _)| n.as_str()).collect();
            return Err(invalid(format!(
                "`{extra}` is not a parameter of `{}` (its parameters: {})",
                self.tool,
                names.join(", ")
            )));
        }
        self.params
            .iter()
            .map(|(name, ty)| match (object.get(name), ty) {
                (None, Type::Option(_)) => Ok(wasmtime::component::Val::Option(None)),
                (None, _) => Err(invalid(format!("`{name}` is missing"))),
                (Some(v), ty) => values::to_val(ty, v, name).map_err(invalid),
            })
            .collect()
    }

    /// The call's outcome from the function's results.
    fn outcome(&self, results: Vec<wasmtime::component::Val>) -> Outcome {
        use wasmtime::component::Val;
        let value = match results.into_iter().next() {
            None => return Ok(text_only(format!("`{}` returned", self.wit_name))),
            Some(Val::Result(Err(e))) => {
                let message = match e.as_deref() {
                    Some(Val::String(s)) => s.clone(),
                    Some(other) => values::to_json(other).to_string(),
                    None => format!("`{}` failed", self.wit_name),
                };
                return Err(CallError::new(ErrorKind::Failed, message));
            }
            Some(Val::Result(Ok(None))) => {
                return Ok(text_only(format!("`{}` succeeded", self.wit_name)));
            }
            Some(Val::Result(Ok(Some(v)))) => *v,
            Some(v) => v,
        };
        let json = values::to_json(&value);
        let content = match &json {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let structured = match value {
            Val::Record(_) => json,
            _ => json!({ "value": json }),
        };
        Ok(PluginOutput {
            content,
            structured: Some(structured),
            changed_paths: Vec::new(),
        })
    }

    /// How many values the function returns.
    fn result_count(&self) -> usize {
        usize::from(self.result.is_some())
    }
}

fn text_only(content: String) -> PluginOutput {
    PluginOutput {
        content,
        structured: None,
        changed_paths: Vec::new(),
    }
}

impl Forwarded for PlainFunc {
    fn call(&self, runtime: &Arc<Runtime>, request: &CallRequest<'_>) -> Outcome {
        let params = self.params(request.args)?;
        sandbox::run_plain(
            runtime,
            &self.tool,
            (&self.pre, &self.export),
            (&params, self.result_count()),
            request,
            |results| self.outcome(results),
        )
    }

    fn dry_run(&self, args: &Value) -> String {
        format!("would call `{}` with {args}", self.wit_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_snake_case() {
        assert_eq!(snake_case_suggestion("count-lines"), "count_lines");
        assert_eq!(snake_case_suggestion("My Tool.v2"), "my_tool_v2");
        assert_eq!(short("example:inventory/shelf@0.1.0"), "shelf");
        assert_eq!(short("shelf"), "shelf");
    }
}
