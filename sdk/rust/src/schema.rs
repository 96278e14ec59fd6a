//! JSON Schema of a tool's arguments, derived from the Rust type.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The input schema for `A`: a JSON Schema with `"type": "object"` at the top
/// (arguments are always a JSON object, and model APIs require it, even for
/// an internally tagged enum or a free-form `Value`), every subschema inlined
/// (no `$ref`), and no `$schema`/`title`, which model APIs ignore or reject.
/// `A`'s own doc comment is not in it: the tool's description says what the
/// tool does, and a model reads the list on every turn.
pub(crate) fn input_schema<A: JsonSchema>() -> Value {
    let mut schema = json_schema::<A>();
    if schema.is_boolean() {
        schema = serde_json::json!({});
    }
    if let Some(obj) = schema.as_object_mut() {
        obj.entry("type").or_insert_with(|| "object".into());
        obj.remove("description");
    }
    schema
}

/// The JSON Schema of `T` as toolhost shows schemas: portable draft 2020-12
/// ([`toolhost_shared::schema::make_portable`]: standard formats only, an
/// optional property is left out rather than `null`), every subschema
/// inlined (no `$ref`), without `$schema` and `title`. Use it for
/// [`Tool::output_schema`](crate::Tool::output_schema).
///
/// ```
/// #[derive(toolhost_sdk::JsonSchema)]
/// struct Report {
///     /// How many.
///     count: u32,
/// }
/// let schema = toolhost_sdk::json_schema::<Report>();
/// assert_eq!(schema["type"], "object");
/// assert!(schema.get("title").is_none());
/// ```
pub fn json_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("title");
        obj.remove("$schema");
    }
    toolhost_shared::schema::make_portable(&mut schema);
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_form_and_tagged_args_are_objects() {
        assert_eq!(input_schema::<Value>()["type"], "object");
        let tagged = input_schema::<Tagged>();
        assert_eq!(tagged["type"], "object");
        assert!(tagged["oneOf"].is_array(), "{tagged}");
    }

    /// A tagged enum of arguments.
    #[derive(JsonSchema, serde::Deserialize)]
    #[expect(dead_code, reason = "only the schema is used")]
    #[serde(tag = "action", rename_all = "snake_case")]
    enum Tagged {
        Ping,
        Say {
            /// What to say.
            text: String,
        },
    }

    /// Arguments used to check schema generation.
    #[derive(JsonSchema, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "only the schema is used")]
    struct Args {
        /// Where to look.
        path: String,
        /// How many.
        #[serde(default)]
        limit: Option<u32>,
        mode: Mode,
    }

    #[derive(JsonSchema, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Slow,
    }

    #[test]
    fn schema_is_a_plain_object_schema() {
        let schema = input_schema::<Args>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            schema["properties"]["path"]["description"],
            "Where to look."
        );
        assert_eq!(schema["required"], serde_json::json!(["path", "mode"]));
        assert!(schema.get("title").is_none());
        assert!(
            schema.get("description").is_none(),
            "the tool's description says it"
        );
        assert!(schema.get("$schema").is_none());
        assert!(!schema.to_string().contains("$ref"), "{schema}");
    }
}
