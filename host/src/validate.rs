//! Step 2 of the pipeline: a call's arguments checked against the tool's
//! JSON Schema before anything runs; and step 8's check of a result's
//! structured output against the tool's output schema. Each tool's
//! validators are compiled once.
//!
//! Messages name the field (`edits[0].old_text`) and what was expected, in
//! words a model can act on; for an output, its JSON pointer (`/rows`), in
//! words the tool's author can act on.

use crate::types::result::{CallError, ErrorKind};
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

/// The most problems listed in one error.
const MAX_PROBLEMS: usize = 5;

/// A compiled input (or output) schema.
pub(crate) struct ArgsSchema {
    validator: jsonschema::Validator,
    /// How a problem names where it is.
    style: Style,
    /// The top-level property names, listed when an unknown field is sent.
    fields: Vec<String>,
    /// The required ones.
    required: Vec<String>,
    /// The fields with their types, for the hint: `path (string, required)`.
    summary: String,
}

impl std::fmt::Debug for ArgsSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgsSchema")
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

/// How a problem names where in the value it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// As a field of the arguments, for the model: `edits[0].old_text`.
    Field,
    /// As a JSON pointer into a tool's output, for its author: `/edits/0`.
    Pointer,
}

impl ArgsSchema {
    /// Compile the output schema `schema`: its problems name JSON pointers.
    pub(crate) fn compile_output(schema: &Value) -> Result<Self, String> {
        Ok(Self {
            style: Style::Pointer,
            ..Self::compile(schema)?
        })
    }

    /// Compile `schema`; the error says why it is not a usable schema.
    pub(crate) fn compile(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
        let mut fields: Vec<String> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        fields.sort();
        let required: Vec<String> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let summary = fields
            .iter()
            .map(|name| {
                let mut about: Vec<String> = schema["properties"][name]
                    .get("type")
                    .map(|t| match t {
                        Value::Array(types) => types
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(" or "),
                        other => other.as_str().unwrap_or("any").to_owned(),
                    })
                    .into_iter()
                    .collect();
                if required.contains(name) {
                    about.push("required".into());
                }
                if about.is_empty() {
                    name.clone()
                } else {
                    format!("{name} ({})", about.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        Ok(Self {
            validator,
            style: Style::Field,
            fields,
            required,
            summary,
        })
    }

    /// Check `args` (a JSON object) for the tool `tool`. A `null` for a
    /// field that is not required counts as leaving it out: schemas list
    /// optional fields without `null`, and some clients send it anyway.
    ///
    /// The hint says what the model can do, in terms of the call (the
    /// fields and their types), never a CLI command: it may be read over
    /// MCP. The CLI adds its own.
    pub(crate) fn check(&self, tool: &str, args: &Value) -> Result<(), CallError> {
        let absent_null =
            |(name, v): (&String, &Value)| v.is_null() && !self.required.contains(name);
        let without_nulls;
        let args = match args.as_object() {
            Some(members) if members.iter().any(absent_null) => {
                let mut kept = members.clone();
                kept.retain(|name, v| !absent_null((name, v)));
                without_nulls = Value::Object(kept);
                &without_nulls
            }
            _ => args,
        };
        let Some(problems) = self.problems(args) else {
            return Ok(());
        };
        let message = format!("invalid arguments for `{tool}`: {problems}");
        let hint = if self.summary.is_empty() {
            format!("call `{tool}` again with no arguments")
        } else {
            format!(
                "call `{tool}` again with fields as its input schema says: {}",
                self.summary
            )
        };
        Err(CallError::new(ErrorKind::InvalidInput, message).with_hint(hint))
    }

    /// What is wrong with `value`, if anything: at most a few problems,
    /// each naming the field and what was expected, `; `-separated.
    pub(crate) fn problems(&self, value: &Value) -> Option<String> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(value)
            .take(MAX_PROBLEMS + 1)
            .map(|e| describe(&e, &self.fields, self.style))
            .collect();
        if problems.is_empty() {
            return None;
        }
        let mut text = problems[..problems.len().min(MAX_PROBLEMS)].join("; ");
        if problems.len() > MAX_PROBLEMS {
            text.push_str("; and more");
        }
        Some(text)
    }
}

/// One problem, in words.
fn describe(err: &jsonschema::ValidationError<'_>, fields: &[String], style: Style) -> String {
    let pointer = err.instance_path().as_str();
    let at = match style {
        Style::Field => field_path(pointer),
        Style::Pointer => pointer.to_owned(),
    };
    let joined = |parent: &str, name: &str| match style {
        Style::Field => join_field(parent, name),
        Style::Pointer => format!("{parent}/{}", name.replace('~', "~0").replace('/', "~1")),
    };
    let shown = |at: &str| -> String {
        match (style, at.is_empty()) {
            (Style::Field, true) => "(arguments)".to_owned(),
            (Style::Pointer, true) => "(the whole output)".to_owned(),
            (_, false) => at.to_owned(),
        }
    };
    let value = err.instance();
    match err.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            format!("missing required field `{}`", joined(&at, &name))
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => with_article(&t.to_string()),
                // `null` in a list only marks the field optional: leave it out.
                TypeKind::Multiple(set) => {
                    let names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
                    let shown: Vec<String> = names
                        .iter()
                        .filter(|n| names.len() == 1 || *n != "null" || style == Style::Pointer)
                        .map(|n| with_article(n))
                        .collect();
                    shown.join(" or ")
                }
            };
            format!(
                "`{}` must be {expected}, not {} ({})",
                shown(&at),
                kind_of(value),
                preview(value)
            )
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let names: Vec<String> = unexpected
                .iter()
                .map(|u| format!("`{}`", joined(&at, u)))
                .collect();
            let noun = if names.len() == 1 { "field" } else { "fields" };
            let mut text = format!("unknown {noun} {}", names.join(", "));
            if at.is_empty() && !fields.is_empty() && style == Style::Field {
                text.push_str(&format!(" (this tool takes: {})", fields.join(", ")));
            }
            text
        }
        ValidationErrorKind::Enum { options } => format!(
            "`{}` must be one of {}, not {}",
            shown(&at),
            options_list(options),
            preview(value)
        ),
        ValidationErrorKind::Constant { expected_value } => format!(
            "`{}` must be {}, not {}",
            shown(&at),
            expected_value,
            preview(value)
        ),
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
            match const_choices(context) {
                Some(choices) => format!(
                    "`{}` must be one of {}, not {}",
                    shown(&at),
                    choices.join(", "),
                    preview(value)
                ),
                None => format!(
                    "`{}` matches none of the forms this field accepts ({})",
                    shown(&at),
                    preview(value)
                ),
            }
        }
        // The error's own words, which quote the value: cut to a line.
        _ => format!("`{}`: {}", shown(&at), cut(&err.to_string(), 200)),
    }
}

/// The values of a `oneOf`/`anyOf` whose every branch is a `const` (what
/// schemars makes of an enum with documented variants), if it is one.
fn const_choices(branches: &[Vec<jsonschema::ValidationError<'static>>]) -> Option<Vec<String>> {
    branches
        .iter()
        .map(|errors| {
            errors.iter().find_map(|e| match e.kind() {
                ValidationErrorKind::Constant { expected_value } => {
                    Some(expected_value.to_string())
                }
                _ => None,
            })
        })
        .collect()
}

/// `/edits/0/old_text` → `edits[0].old_text`.
fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for raw in pointer.split('/').skip(1) {
        let part = raw.replace("~1", "/").replace("~0", "~");
        if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    out
}

fn join_field(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

fn with_article(type_name: &str) -> String {
    match type_name {
        "integer" | "array" | "object" => format!("an {type_name}"),
        "null" => "null".to_owned(),
        other => format!("a {other}"),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The value as JSON, cut to a readable length.
fn preview(value: &Value) -> String {
    cut(&value.to_string(), 60)
}

/// `text` cut to `most` characters, with `…` if it was.
fn cut(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn options_list(options: &Value) -> String {
    match options.as_array() {
        Some(list) => list
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        None => options.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> ArgsSchema {
        ArgsSchema::compile(&json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": ["integer", "null"], "minimum": 1},
                "format": {"enum": ["text", "json"]},
                "mode": {"oneOf": [
                    {"type": "string", "const": "append", "description": "Add at the end."},
                    {"type": "string", "const": "replace", "description": "Replace it."}
                ]},
                "edits": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"old_text": {"type": "string"}},
                    "required": ["old_text"]
                }}
            },
            "required": ["path"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    fn message(args: Value) -> String {
        schema().check("t", &args).unwrap_err().message
    }

    #[test]
    fn valid_arguments_pass() {
        assert!(
            schema()
                .check("t", &json!({"path": "a", "limit": 3}))
                .is_ok()
        );
    }

    #[test]
    fn wrong_type_names_field_and_type() {
        let m = message(json!({"path": "a", "limit": "ten"}));
        assert!(
            m.contains("`limit` must be an integer, not a string (\"ten\")"),
            "{m}"
        );
    }

    #[test]
    fn missing_field_is_named() {
        let m = message(json!({}));
        assert!(m.contains("missing required field `path`"), "{m}");
    }

    #[test]
    fn extra_field_lists_the_real_ones() {
        let m = message(json!({"path": "a", "lmit": 3}));
        assert!(m.contains("unknown field `lmit`"), "{m}");
        assert!(
            m.contains("this tool takes: edits, format, limit, mode, path"),
            "{m}"
        );
    }

    #[test]
    fn nested_fields_read_as_paths() {
        let m = message(json!({"path": "a", "edits": [{"old_text": 1}, {}]}));
        assert!(m.contains("`edits[0].old_text` must be a string"), "{m}");
        assert!(
            m.contains("missing required field `edits[1].old_text`"),
            "{m}"
        );
    }

    #[test]
    fn enums_list_choices_and_other_errors_keep_the_field() {
        let m = message(json!({"path": "a", "format": "xml"}));
        assert!(
            m.contains("`format` must be one of \"text\", \"json\""),
            "{m}"
        );
        let m = message(json!({"path": "a", "mode": "prepend"}));
        assert!(
            m.contains("`mode` must be one of \"append\", \"replace\", not \"prepend\""),
            "{m}"
        );
        let m = message(json!({"path": "a", "mode": 3}));
        assert!(m.contains("`mode` must be one of"), "{m}");
        let m = message(json!({"path": "a", "limit": 0}));
        assert!(m.starts_with("invalid arguments for `t`: `limit`:"), "{m}");
    }

    #[test]
    fn null_for_an_optional_field_is_leaving_it_out_but_not_for_a_required_one() {
        let portable = ArgsSchema::compile(&json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        }))
        .unwrap();
        assert!(
            portable
                .check("t", &json!({"path": "a", "limit": null}))
                .is_ok()
        );
        let err = portable.check("t", &json!({"path": null})).unwrap_err();
        assert!(
            err.message.contains("`path` must be a string"),
            "{}",
            err.message
        );
    }

    #[test]
    fn the_hint_names_the_fields_not_a_command() {
        let err = schema().check("t", &json!({"path": 1})).unwrap_err();
        let hint = err.hint.unwrap();
        assert!(
            hint.contains(
                "edits (array), format, limit (integer or null), mode, path (string, required)"
            ),
            "{hint}"
        );
        assert!(!hint.contains("toolhost "), "{hint}");
    }

    #[test]
    fn bad_schema_is_reported() {
        assert!(ArgsSchema::compile(&json!({"type": 12})).is_err());
    }
}
