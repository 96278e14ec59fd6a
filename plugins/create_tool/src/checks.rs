//! create_tool's checks of what an agent sends: name, description,
//! parameters, source, capabilities, scope and quota.

use crate::{Limits, MAX_DESCRIPTION, MAX_PARAMETERS_BYTES, Source};
use serde_json::Value;
use std::path::Path;
use toolhost_builtin::contract;
use toolhost_builtin::dynamic::{self, Kind, Meta, RESERVED_NAMES, Status};
use toolhost_builtin::grant::GrantItem;
use toolhost_sdk::ToolError;

/// The description, trimmed: plain text of a sensible length.
pub(crate) fn check_description(description: &str) -> Result<String, ToolError> {
    let description = description.trim().to_owned();
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
    Ok(description)
}

/// Refuse a new tool past the agent's quota (rejected tools do not count).
pub(crate) fn check_quota(
    stored: &[Meta],
    agent: Option<&str>,
    limits: &Limits,
) -> Result<(), ToolError> {
    let mine = stored
        .iter()
        .filter(|m| m.status != Status::Rejected && m.created_by.as_deref() == agent)
        .count();
    if mine >= limits.max_per_agent {
        return Err(ToolError::denied(format!(
            "you already have {mine} tools pending or approved, and the limit is {} per agent; ask a person to reject the ones you no longer need (`toolhost dynamic reject ID`)",
            limits.max_per_agent
        )));
    }
    Ok(())
}

/// A tool's source as it is stored.
pub(crate) struct Checked {
    /// Its arguments' JSON Schema (`null` for a component, which has its own).
    pub(crate) parameters: Value,
    /// What runs (for a typescript tool, the JavaScript its types left).
    pub(crate) source: Vec<u8>,
    /// What is kept for reading only: a typescript tool's TypeScript.
    pub(crate) original: Option<Vec<u8>>,
}

/// The tool's parameters schema and its source as stored, checked for its kind.
pub(crate) fn check_source(
    kind: Kind,
    parameters: Option<Value>,
    source: Source,
    limits: &Limits,
) -> Result<Checked, ToolError> {
    let (parameters, source) = match kind {
        Kind::Javascript | Kind::Typescript => {
            let parameters = check_parameters(parameters)?;
            let Source::Text(script) = source else {
                return Err(ToolError::invalid_input(format!(
                    "a {} tool's source is the script as one string defining `function run(args, ctx)`",
                    kind.as_str()
                )));
            };
            check_size(&script, limits)?;
            if kind == Kind::Typescript {
                let js = crate::ts::strip(&script)?;
                return Ok(Checked {
                    parameters,
                    source: js.into_bytes(),
                    original: Some(script.into_bytes()),
                });
            }
            (parameters, script.into_bytes())
        }
        Kind::Command => {
            let parameters = check_parameters(parameters)?;
            let template = match source {
                Source::Argv(items) => items,
                Source::Text(text) => serde_json::from_str(&text).map_err(|_| {
                    ToolError::invalid_input(
                        "a command tool's source is an argv template: a list of strings such as [\"git\", \"log\", \"-n\", \"{{count}}\"]",
                    )
                })?,
            };
            dynamic::check_template(&template, &parameters).map_err(ToolError::invalid_input)?;
            let text = serde_json::to_string_pretty(&template).unwrap_or_default();
            check_size(&text, limits)?;
            (parameters, text.into_bytes())
        }
        Kind::Component => {
            let Source::Text(path) = source else {
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
    Ok(Checked {
        parameters,
        source,
        original: None,
    })
}

/// The records already in the store (unreadable ones are skipped).
pub(crate) fn existing(store: &Path) -> Result<Vec<Meta>, ToolError> {
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

pub(crate) fn check_name(name: &str, limits: &Limits, stored: &[Meta]) -> Result<(), ToolError> {
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

pub(crate) fn check_parameters(parameters: Option<Value>) -> Result<Value, ToolError> {
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

pub(crate) fn check_size(source: &str, limits: &Limits) -> Result<(), ToolError> {
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

pub(crate) fn check_capabilities(kind: Kind, asked: Vec<String>) -> Result<Vec<String>, ToolError> {
    let mut out: Vec<String> = Vec::new();
    for cap in asked {
        let cap = cap.trim().to_owned();
        if !GrantItem::parse(&cap).is_some_and(|item| kind.can_use(&item)) {
            return Err(ToolError::invalid_input(format!(
                "`{cap}` is not a capability a {} tool can ask for; choose from {}",
                kind.as_str(),
                kind.usable()
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

pub(crate) fn check_scope(scope: Option<String>) -> Result<String, ToolError> {
    let scope = scope.map_or_else(|| "all".to_owned(), |s| s.trim().to_owned());
    if scope.is_empty() || scope.len() > 128 || scope.chars().any(char::is_control) {
        return Err(ToolError::invalid_input(
            "`scope` is `all` or one agent's id (at most 128 characters)",
        ));
    }
    Ok(scope)
}

/// What the reviewer should look at twice in `source`: a script's
/// constructs found by parsing it (one that does not parse is refused
/// here), a template's options that run code.
pub(crate) fn review_warnings(kind: Kind, source: &[u8]) -> Result<Vec<String>, ToolError> {
    match kind {
        // A typescript tool's warnings are about the JavaScript that runs.
        Kind::Javascript | Kind::Typescript => crate::js::check(&String::from_utf8_lossy(source)),
        Kind::Command => Ok(dynamic::template_warnings(
            &serde_json::from_slice::<Vec<String>>(source).unwrap_or_default(),
        )),
        Kind::Component => Ok(Vec::new()),
    }
}
