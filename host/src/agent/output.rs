//! `--output json`: an answer that is one JSON value, taken out of the
//! model's text (which may wrap it in prose or a code fence) and checked
//! against a JSON Schema when one is given.

use crate::validate::ArgsSchema;
use serde_json::Value;

/// The most places in an answer tried as the start of its JSON value.
const MOST_STARTS: usize = 64;

/// What a JSON answer must be.
pub struct JsonOutput {
    schema: Option<(Value, ArgsSchema)>,
}

impl std::fmt::Debug for JsonOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonOutput")
            .field("schema", &self.schema.as_ref().map(|(s, _)| s))
            .finish()
    }
}

impl JsonOutput {
    /// Any one JSON value.
    pub fn any() -> Self {
        Self { schema: None }
    }

    /// One JSON value valid against `schema`; the error says why `schema`
    /// is not a usable JSON Schema.
    pub fn matching(schema: Value) -> Result<Self, String> {
        // `meta::is_valid` panics on a meta-schema it cannot resolve.
        match jsonschema::meta::validator_for(&schema) {
            Ok(meta) if meta.is_valid(&schema) => {}
            Ok(_) => return Err("it is not a valid JSON Schema".to_owned()),
            Err(e) => return Err(format!("its meta-schema is not one this host knows ({e})")),
        }
        let compiled = ArgsSchema::compile(&schema)?;
        Ok(Self {
            schema: Some((schema, compiled)),
        })
    }

    /// What the model is told in the system prompt.
    pub(super) fn instruction(&self) -> String {
        match &self.schema {
            None => "Answer with one JSON value and nothing else.".to_owned(),
            Some((schema, _)) => format!(
                "Answer with one JSON value and nothing else, valid against this JSON Schema: {schema}"
            ),
        }
    }

    /// What the model is told when its answer did not fit.
    pub(super) fn correction(&self, why: &str) -> String {
        format!(
            "Your answer is not usable: {why}. {} Answer again with only that JSON value.",
            self.instruction()
        )
    }

    /// The JSON value in `text`: all of it, or the first whole value
    /// starting at a `{` or `[` (past any prose or code fence), checked
    /// against the schema.
    pub(super) fn take(&self, text: &str) -> Result<Value, String> {
        let value = json_in(text).ok_or_else(|| "it holds no JSON value".to_owned())?;
        if let Some((_, schema)) = &self.schema
            && let Some(problems) = schema.problems(&value)
        {
            return Err(format!("its JSON does not match the schema: {problems}"));
        }
        Ok(value)
    }
}

/// The JSON value in `text`, if it holds one.
fn json_in(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(text.trim()) {
        return Some(value);
    }
    text.char_indices()
        .filter(|(_, c)| matches!(c, '{' | '['))
        .take(MOST_STARTS)
        .find_map(|(at, _)| {
            serde_json::Deserializer::from_str(&text[at..])
                .into_iter::<Value>()
                .next()?
                .ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_value_is_found_in_prose_and_fences_and_checked() {
        let any = JsonOutput::any();
        assert_eq!(any.take(" [1, 2] ").unwrap(), json!([1, 2]));
        assert_eq!(
            any.take("Here it is:\n```json\n{\"a\": {\"b\": 1}}\n```\nDone.")
                .unwrap(),
            json!({"a": {"b": 1}})
        );
        assert_eq!(any.take("{broken [3]").unwrap(), json!([3]));
        assert!(any.take("no json here").is_err());
        let typed = JsonOutput::matching(json!({"type": "object",
            "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
        .unwrap();
        assert_eq!(typed.take("{\"n\": 3}").unwrap(), json!({"n": 3}));
        let why = typed.take("{\"n\": \"three\"}").unwrap_err();
        assert!(why.contains("does not match"), "{why}");
        assert!(JsonOutput::matching(json!({"type": 5})).is_err());
    }
}
