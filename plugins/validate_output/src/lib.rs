//! The `validate_output` tool (as in the agent tool contracts): check data against the JSON Schema
//! registered for its output type (`/schemas/TYPE.json`, a directory the
//! host grants read-only) or given inline.

use serde_json::Value;
use std::path::Path;
use toolhost_builtin::contract;
use toolhost_sdk::export_tool;
use toolhost_sdk::{
    Capability, Context, Deserialize, JsonSchema, Output, Serialize, Tool, ToolError,
};

/// Where the schemas are mounted in the sandbox.
pub const SCHEMAS_DIR: &str = contract::path::SCHEMAS;

/// The most errors reported.
const MAX_ERRORS: usize = 50;

/// Arguments of `validate_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The output type: the name of a schema in the schemas directory
    /// (`report` for `report.json`), or a label when `schema` is given.
    #[serde(rename = "outputType")]
    pub output_type: String,
    /// The data to check.
    pub data: Value,
    /// A JSON Schema to use instead of the registered one.
    #[serde(default)]
    pub schema: Option<Value>,
}

/// One problem.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Problem {
    /// JSON pointer to the value (`/items/0/name`; empty for the root).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// The verdict.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Verdict {
    /// True when the data is valid.
    pub valid: bool,
    /// Why not, with JSON-pointer paths.
    pub errors: Vec<Problem>,
    /// Valid but suspicious: properties the schema does not describe.
    pub warnings: Vec<Problem>,
}

/// The `validate_output` tool.
pub struct ValidateOutput;

impl Tool for ValidateOutput {
    type Args = Args;
    const NAME: &'static str = "validate_output";
    const TITLE: Option<&'static str> = Some("Validate output");
    const DESCRIPTION: &'static str = "Check data you produced against the JSON Schema of its \
        output type before returning it: `outputType` names a registered schema (or pass \
        `schema`), `data` is the value. Returns the errors with JSON-pointer paths and \
        warnings for undescribed properties; fix and check again.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Directory {
            name: contract::dir::SCHEMAS.to_owned(),
            writable: false,
        }]
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_sdk::json_schema::<Verdict>())
    }

    fn call(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
        validate(args, Path::new(SCHEMAS_DIR))
    }
}

export_tool!(ValidateOutput);

/// Check `args.data` with the schema from `args.schema` or from `dir`.
pub fn validate(args: Args, dir: &Path) -> Result<Output, ToolError> {
    let registered = args.schema.is_none();
    let schema = match args.schema {
        Some(schema) => schema,
        None => load(&args.output_type, dir)?,
    };
    let validator = jsonschema::validator_for(&schema).map_err(|e| {
        let message = format!(
            "the schema for `{}` is not a valid JSON Schema: {e}",
            args.output_type
        );
        // A broken registered schema is the host's to fix, not the model's.
        if registered {
            ToolError::failed(message).with_hint("fix the file in the host's schemas_dir")
        } else {
            ToolError::invalid_input(message)
        }
    })?;
    let errors: Vec<Problem> = validator
        .iter_errors(&args.data)
        .take(MAX_ERRORS)
        .map(|e| Problem {
            path: e.instance_path().as_str().to_owned(),
            message: e.to_string(),
        })
        .collect();
    let mut warnings = Vec::new();
    undescribed(&schema, &args.data, "", &mut warnings);
    let verdict = Verdict {
        valid: errors.is_empty(),
        errors,
        warnings,
    };
    let mut text = if verdict.valid {
        format!("valid: the data matches `{}`.\n", args.output_type)
    } else {
        format!(
            "invalid: {} problem(s) against `{}`:\n",
            verdict.errors.len(),
            args.output_type
        )
    };
    for e in &verdict.errors {
        text.push_str(&format!("  {}: {}\n", shown(&e.path), e.message));
    }
    for w in &verdict.warnings {
        text.push_str(&format!("  warning {}: {}\n", shown(&w.path), w.message));
    }
    Ok(Output::text(text).with_structured(&verdict))
}

fn shown(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    }
}

/// The registered schema `name` from `dir`; an unknown name lists the known.
fn load(name: &str, dir: &Path) -> Result<Value, ToolError> {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !name.starts_with('.');
    let text = if plain {
        match std::fs::read_to_string(dir.join(format!("{name}.json"))) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ToolError::failed(format!(
                    "cannot read the schema for `{name}`: {e}"
                )));
            }
        }
    } else {
        None
    };
    // Only an unknown name pays for listing the directory.
    let Some(text) = text else {
        let known = known_types(dir);
        let listed = if known.is_empty() {
            "no output types are registered (the host's schemas_dir is unset or empty); pass the schema inline with `schema`".to_owned()
        } else {
            format!("the known output types are: {}", known.join(", "))
        };
        return Err(ToolError::invalid_input(format!(
            "unknown outputType `{name}`; {listed}"
        )));
    };
    serde_json::from_str(&text).map_err(|e| {
        ToolError::failed(format!("the schema file for `{name}` is not JSON: {e}"))
            .with_hint("fix the file in the host's schemas_dir")
    })
}

fn known_types(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".json").map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Properties of `data` that an object schema with `properties` (and no
/// `additionalProperties` rule) does not describe, at any depth.
fn undescribed(schema: &Value, data: &Value, at: &str, out: &mut Vec<Problem>) {
    match (schema.get("properties").and_then(Value::as_object), data) {
        (Some(props), Value::Object(fields)) => {
            let open = schema.get("additionalProperties").is_none()
                && schema.get("patternProperties").is_none();
            for (key, value) in fields {
                let path = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                match props.get(key) {
                    Some(sub) => undescribed(sub, value, &path, out),
                    None if open => out.push(Problem {
                        path,
                        message: "this property is not described by the schema".to_owned(),
                    }),
                    None => {}
                }
            }
        }
        (_, Value::Array(items)) => {
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                for (i, item) in items.iter().enumerate() {
                    undescribed(item_schema, item, &format!("{at}/{i}"), out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
