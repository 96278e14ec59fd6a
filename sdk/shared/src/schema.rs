//! JSON Schemas that every client reads the same way.
//!
//! schemars writes what Rust knows: formats such as `uint32` or `double`
//! (not JSON Schema formats: strict validators and the MCP SDKs warn about
//! each one) and `Option<T>` as `["T", "null"]` (some clients then send
//! numbers as strings). [`make_portable`] rewrites a schema into standard
//! draft 2020-12 with the same meaning for a model:
//!
//! - an integer format becomes `minimum`/`maximum` (unless the schema is
//!   already narrower), and every format outside the standard list is
//!   dropped;
//! - a property that is not `required` loses its `null` alternative (and a
//!   `default: null`): leaving it out is how it is omitted. Where a value
//!   is checked against such a schema, [`drop_absent_nulls`] first removes
//!   the `null` members the schema now leaves out.
//!
//! The SDK applies it to the schemas it derives; the host applies it to
//! every plugin's schemas at load, whatever wrote them.

use serde_json::{Map, Value};

/// The formats of JSON Schema draft 2020-12 (Validation, section 7.3).
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose values are data, not schemas: never rewritten.
const DATA_KEYWORDS: &[&str] = &["default", "const", "enum", "examples"];

/// Rewrite `schema` in place into portable draft 2020-12 (see the module
/// documentation).
///
/// ```
/// use serde_json::json;
/// let mut schema = json!({
///     "type": "object",
///     "properties": {
///         "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 1, "default": null},
///         "path": {"type": "string"}
///     },
///     "required": ["path"]
/// });
/// toolhost_shared::schema::make_portable(&mut schema);
/// assert_eq!(
///     schema["properties"]["limit"],
///     json!({"type": "integer", "minimum": 1, "maximum": 4294967295u64})
/// );
/// ```
pub fn make_portable(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    portable_format(obj);
    let required = required_names(obj.get("required"));
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.contains(name) {
                drop_null_alternative(prop);
            }
        }
    }
    each_subschema(obj, make_portable);
}

/// Apply `f` to every subschema of `obj` (not to data: `default`, `enum`
/// and the like).
fn each_subschema(obj: &mut Map<String, Value>, f: fn(&mut Value)) {
    for (key, value) in obj.iter_mut() {
        if DATA_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        match key.as_str() {
            // Maps from names to schemas.
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(map) = value {
                    map.values_mut().for_each(f);
                }
            }
            _ => match value {
                Value::Object(_) => f(value),
                Value::Array(items) => items.iter_mut().for_each(f),
                _ => {}
            },
        }
    }
}

/// Rewrite `schema` in place to say the same in fewer bytes, for the lists
/// a model reads on every turn: a choice among constants written as
/// `oneOf: [{"const": "a", "description": ..}, ..]` (what schemars derives
/// from a documented enum) becomes `enum: ["a", ..]`. The constants'
/// descriptions join the schema's own description as "`a`: ...; `b`: ...",
/// unless that description already names every constant (as a word). A
/// description's wrapped lines are joined, and its " (default 100)" goes
/// where `default` is 100.
///
/// ```
/// use serde_json::json;
/// let mut schema = json!({"type": "object", "properties": {"output": {
///     "description": "`content` (matching lines) or `files` (their paths).",
///     "oneOf": [
///         {"const": "content", "type": "string", "description": "Matching lines."},
///         {"const": "files", "type": "string", "description": "Paths of matching files."}
///     ]
/// }}});
/// toolhost_shared::schema::make_compact(&mut schema);
/// assert_eq!(schema["properties"]["output"], json!({
///     "description": "`content` (matching lines) or `files` (their paths).",
///     "type": "string",
///     "enum": ["content", "files"]
/// }));
/// ```
pub fn make_compact(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    constants_as_enum(obj);
    default_said_once(obj);
    each_subschema(obj, make_compact);
}

/// A description as one line per paragraph (a doc comment's line breaks
/// are spaces, and `\n` costs two bytes in JSON), without " (default V)"
/// where the schema's `default` is that boolean or number V: the keyword
/// says it.
fn default_said_once(obj: &mut Map<String, Value>) {
    let default = obj
        .get("default")
        .filter(|d| d.is_boolean() || d.is_number())
        .map(|d| format!(" (default {d})"));
    let Some(Value::String(description)) = obj.get_mut("description") else {
        return;
    };
    let mut text = description
        .split("\n\n")
        .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n");
    if let Some(said) = default
        && let Some(at) = text.find(&said)
    {
        text.replace_range(at..at + said.len(), "");
    }
    *description = text;
}

/// [`make_compact`]'s rewrite of one schema's `oneOf` of constants.
fn constants_as_enum(obj: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = obj.get("oneOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut notes = Vec::new();
    let mut kind: Option<&Value> = None;
    for alternative in alternatives {
        let Some(alt) = alternative.as_object() else {
            return;
        };
        let (Some(value), true) = (
            alt.get("const"),
            alt.keys()
                .all(|k| matches!(k.as_str(), "const" | "description" | "type")),
        ) else {
            return;
        };
        match (kind, alt.get("type")) {
            (_, None) => return,
            (None, Some(t)) => kind = Some(t),
            (Some(k), Some(t)) if k != t => return,
            _ => {}
        }
        if let Some(note) = alt.get("description").and_then(Value::as_str) {
            let name = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            notes.push((name, note.trim_end_matches('.').to_owned()));
        }
        values.push(value.clone());
    }
    let kind = kind.cloned();
    obj.remove("oneOf");
    let own = obj
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    // Named: as a whole word (`in_progress`, not `progress`).
    let named = |name: &str| {
        own.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .any(|word| word == name)
    };
    if !notes.is_empty() && !notes.iter().all(|(name, _)| named(name)) {
        let listed: Vec<String> = notes
            .iter()
            .map(|(name, note)| format!("`{name}`: {note}"))
            .collect();
        let joined = format!("{}.", listed.join("; "));
        let description = if own.is_empty() {
            joined
        } else {
            format!("{} {joined}", own.trim_end())
        };
        obj.insert("description".into(), description.into());
    }
    if let Some(kind) = kind {
        obj.entry("type").or_insert(kind);
    }
    obj.insert("enum".into(), Value::Array(values));
}

/// Remove the members of `value` that are `null` where `schema` (a portable
/// one) leaves the property out of `required`, following the schema down
/// wherever [`make_portable`] took `null` out: `properties`,
/// `additionalProperties`, `items`, `prefixItems`,
/// `allOf`/`anyOf`/`oneOf` and local `$ref`s (`#/$defs/...`). A
/// structured result so written validates against the portable schema.
///
/// ```
/// use serde_json::json;
/// let schema = json!({
///     "type": "object",
///     "properties": {"by_file": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Row"}}},
///     "$defs": {"Row": {"type": "object", "properties": {"note": {"type": "string"}}}}
/// });
/// let mut value = json!({"by_file": {"a": {"note": null}}});
/// toolhost_shared::schema::drop_absent_nulls(&mut value, &schema);
/// assert_eq!(value, json!({"by_file": {"a": {}}}));
/// ```
pub fn drop_absent_nulls(value: &mut Value, schema: &Value) {
    drop_nulls_at(value, schema, schema, 0);
}

/// How many schemas deep [`drop_absent_nulls`] follows without going
/// into the value (a `$ref` that leads back to itself).
const MAX_SCHEMA_HOPS: usize = 32;

fn drop_nulls_at(value: &mut Value, schema: &Value, root: &Value, hops: usize) {
    if hops > MAX_SCHEMA_HOPS {
        return;
    }
    // Schemas that apply to the same value.
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        drop_nulls_at(value, target, root, hops + 1);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for alternative in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            drop_nulls_at(value, alternative, root, hops + 1);
        }
    }
    match value {
        Value::Object(members) => {
            let props = schema.get("properties").and_then(Value::as_object);
            if props.is_some() {
                let required = required_names(schema.get("required"));
                members.retain(|name, v| !v.is_null() || required.contains(name));
            }
            let rest = schema.get("additionalProperties").filter(|s| s.is_object());
            for (name, v) in members.iter_mut() {
                let sub = props.and_then(|p| p.get(name)).or(rest);
                if let Some(sub) = sub {
                    drop_nulls_at(v, sub, root, 0);
                }
            }
        }
        Value::Array(items) => {
            let first = schema.get("prefixItems").and_then(Value::as_array);
            let rest = schema.get("items").filter(|s| s.is_object());
            for (i, v) in items.iter_mut().enumerate() {
                if let Some(sub) = first.and_then(|f| f.get(i)).or(rest) {
                    drop_nulls_at(v, sub, root, 0);
                }
            }
        }
        _ => {}
    }
}

fn required_names(required: Option<&Value>) -> Vec<String> {
    required
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// An integer format as bounds; any other non-standard format dropped.
fn portable_format(obj: &mut Map<String, Value>) {
    let Some(format) = obj.get("format").and_then(Value::as_str) else {
        return;
    };
    if STANDARD_FORMATS.contains(&format) {
        return;
    }
    let (min, max): (Option<i64>, Option<u64>) = match format {
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX as u64)),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX as u64)),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX as u64)),
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        // Beyond 2^53 a model's number is not exact anyway: a floor only.
        "uint" | "uint64" | "uint128" => (Some(0), None),
        _ => (None, None),
    };
    obj.remove("format");
    if let Some(min) = min {
        let narrower = obj
            .get("minimum")
            .and_then(Value::as_f64)
            .is_some_and(|m| m >= min as f64);
        if !narrower {
            obj.insert("minimum".into(), min.into());
        }
    }
    if let Some(max) = max {
        let narrower = obj
            .get("maximum")
            .and_then(Value::as_f64)
            .is_some_and(|m| m <= max as f64);
        if !narrower {
            obj.insert("maximum".into(), max.into());
        }
    }
}

/// `["T", "null"]` → `"T"`; `anyOf: [S, {"type": "null"}]` → `S`; and no
/// `default: null`.
fn drop_null_alternative(prop: &mut Value) {
    let Value::Object(obj) = prop else {
        return;
    };
    if obj.get("default").is_some_and(Value::is_null) {
        obj.remove("default");
    }
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            obj.insert("type".into(), only);
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alternatives)) = obj.get_mut(key) else {
            continue;
        };
        // Only a bare `{"type": "null"}` goes.
        alternatives.retain(|a| a != &serde_json::json!({"type": "null"}));
        if alternatives.len() == 1 {
            let Some(Value::Object(only)) = alternatives.pop() else {
                continue;
            };
            obj.remove(key);
            for (k, v) in only {
                obj.entry(k).or_insert(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_become_bounds_or_go() {
        let mut s = json!({"type": "object", "properties": {
            "a": {"type": "integer", "format": "uint"},
            "b": {"type": "integer", "format": "int32"},
            "c": {"type": "number", "format": "double"},
            "d": {"type": "integer", "format": "uint64", "minimum": 1},
            "e": {"type": "string", "format": "date-time"},
            "f": {"type": "integer", "format": "uint8", "maximum": 9},
            "format": {"type": "string", "description": "a property named format"},
        }, "required": ["a", "b", "c", "d", "e", "f", "format"]});
        make_portable(&mut s);
        let p = &s["properties"];
        assert_eq!(p["a"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(
            p["b"],
            json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX})
        );
        assert_eq!(p["c"], json!({"type": "number"}));
        assert_eq!(p["d"], json!({"type": "integer", "minimum": 1}));
        assert_eq!(p["e"]["format"], "date-time");
        assert_eq!(
            p["f"],
            json!({"type": "integer", "minimum": 0, "maximum": 9})
        );
        assert_eq!(p["format"]["type"], "string");
    }

    #[test]
    fn optional_properties_lose_null_and_required_ones_keep_it() {
        let mut s = json!({"type": "object", "properties": {
            "opt": {"type": ["integer", "null"], "default": null},
            "req": {"type": ["string", "null"]},
            "any": {"anyOf": [{"type": "object", "properties": {"x": {"type": "string"}}}, {"type": "null"}], "description": "d"},
            "nested": {"type": "object", "properties": {"deep": {"type": ["boolean", "null"]}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"h": {"type": ["string", "null"], "format": "double"}}}},
        }, "required": ["req"]});
        make_portable(&mut s);
        let p = &s["properties"];
        assert_eq!(p["opt"], json!({"type": "integer"}));
        assert_eq!(p["req"]["type"], json!(["string", "null"]));
        assert_eq!(p["any"]["type"], "object");
        assert_eq!(p["any"]["description"], "d");
        assert!(p["any"].get("anyOf").is_none());
        assert_eq!(p["nested"]["properties"]["deep"]["type"], "boolean");
        assert_eq!(
            p["list"]["items"]["properties"]["h"],
            json!({"type": "string"})
        );
    }

    #[test]
    fn data_is_not_rewritten() {
        let mut s =
            json!({"type": "object", "default": {"format": "uint"}, "enum": [{"format": "uint"}]});
        let before = s.clone();
        make_portable(&mut s);
        assert_eq!(s, before);
    }

    #[test]
    fn constants_become_an_enum_their_notes_kept_once() {
        let mut s = json!({"type": "object", "properties": {
            "named": {"description": "`a` or b.", "oneOf": [
                {"const": "a", "type": "string", "description": "First."},
                {"const": "b", "type": "string", "description": "Second."}]},
            "unnamed": {"description": "Which one: an apple.", "oneOf": [
                {"const": "a", "type": "string", "description": "First."},
                {"const": "b", "type": "string"}]},
            "bare": {"oneOf": [{"const": 1, "type": "integer", "description": "One."}]},
            "mixed": {"oneOf": [{"const": "a", "type": "string"}, {"const": 1, "type": "integer"}]},
            "schemas": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "list": {"type": "array", "items": {"oneOf": [{"const": "x", "type": "string"}]}},
            "flag": {"type": "boolean", "default": true, "description": "Match case (default true)."},
            "other": {"type": "boolean", "default": false, "description": "Off (default true)."},
            "wrapped": {"description": "One line\nand its wrap.\n\nA paragraph."},
        }});
        make_compact(&mut s);
        let p = &s["properties"];
        assert_eq!(
            p["named"],
            json!({"description": "`a` or b.", "type": "string", "enum": ["a", "b"]})
        );
        assert_eq!(
            p["unnamed"]["description"],
            "Which one: an apple. `a`: First."
        );
        assert_eq!(p["unnamed"]["enum"], json!(["a", "b"]));
        assert_eq!(
            p["bare"],
            json!({"description": "`1`: One.", "type": "integer", "enum": [1]})
        );
        assert!(p["mixed"]["oneOf"].is_array(), "different types stay");
        assert!(p["schemas"]["oneOf"].is_array(), "schemas stay");
        assert_eq!(p["list"]["items"], json!({"type": "string", "enum": ["x"]}));
        assert_eq!(p["flag"]["description"], "Match case.");
        assert_eq!(
            p["other"]["description"], "Off (default true).",
            "not what it says"
        );
        assert_eq!(
            p["wrapped"]["description"],
            "One line and its wrap.\n\nA paragraph."
        );
    }

    #[test]
    fn absent_nulls_are_dropped_where_the_schema_leaves_them_out() {
        let schema = json!({"type": "object", "properties": {
            "opt": {"type": "integer"},
            "req": {"type": ["integer", "null"]},
            "files": {"type": "array", "items": {"type": "object", "properties": {"hash": {"type": "string"}}}},
        }, "required": ["req"]});
        let mut v = json!({"opt": null, "req": null, "files": [{"hash": null, "path": "a"}], "other": null});
        drop_absent_nulls(&mut v, &schema);
        assert_eq!(v, json!({"req": null, "files": [{"path": "a"}]}));
    }
}
