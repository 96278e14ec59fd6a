//! `toolhost check` of a tool's JSON Schemas: every place the schema breaks
//! the 2020-12 meta-schema, and every keyword JSON Schema does not know
//! (`requierd`: a validator ignores it, so the rule it was meant to be
//! never holds), each named by its JSON pointer.

use super::Problem;
use serde_json::Value;

/// The most meta-schema errors listed for one schema.
const MAX_ERRORS: usize = 5;

/// The keywords of JSON Schema 2020-12 (and of the drafts before it whose
/// schemas validators still read), annotations included.
const KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "$recursiveRef",
    "$recursiveAnchor",
    "id",
    "definitions",
    "dependencies",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "prefixItems",
    "items",
    "additionalItems",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
];

/// Keywords whose value is one schema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
    "additionalItems",
    "items",
];

/// Keywords whose value maps names to schemas.
const NAMED_SCHEMAS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Keywords whose value is a list of schemas.
const LISTED_SCHEMAS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// Everything wrong with `schema`, the tool's `field` (`input_schema`,
/// `output_schema`; `what` names it in a sentence).
pub(crate) fn schema_problems(field: &'static str, what: &str, schema: &Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    match jsonschema::meta::validator_for(schema) {
        Err(e) => problems.push(Problem::error(
            field,
            format!("the {what} names a meta-schema this host does not know: {e}"),
            "leave out `$schema`, or name https://json-schema.org/draft/2020-12/schema",
        )),
        Ok(meta) => {
            let errors: Vec<String> = meta
                .iter_errors(schema)
                .take(MAX_ERRORS)
                .map(|e| format!("at `{}`: {e}", shown(e.instance_path().as_str())))
                .collect();
            if !errors.is_empty() {
                problems.push(Problem::error(
                    field,
                    format!("the {what} is not valid JSON Schema: {}", errors.join("; ")),
                    "check it against the JSON Schema 2020-12 meta-schema at those places",
                ));
            }
        }
    }
    let mut unknown = Vec::new();
    unknown_keywords(schema, "", &mut unknown);
    for (at, key) in unknown {
        let fix = match closest(&key) {
            Some(known) => {
                format!("did you mean `{known}`? (an extension of your own starts with `x-`)")
            }
            None => "remove it, or start an extension of your own with `x-`".to_owned(),
        };
        problems.push(Problem::error(
            field,
            format!(
                "at `{}`: `{key}` is not a JSON Schema keyword, so validators ignore it",
                shown(&at)
            ),
            fix,
        ));
    }
    problems
}

/// A pointer as shown: the empty one is the whole schema.
fn shown(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

/// One step of a JSON pointer.
fn step(at: &str, key: &str) -> String {
    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Every (pointer of the schema object, keyword) below `schema` that is
/// not a keyword; data (`default`, `enum`, `examples`, ...) is not looked
/// into, nor are the names under `properties`.
fn unknown_keywords(schema: &Value, at: &str, out: &mut Vec<(String, String)>) {
    let Value::Object(members) = schema else {
        return;
    };
    for (key, value) in members {
        let here = step(at, key);
        if NAMED_SCHEMAS.contains(&key.as_str())
            && let Value::Object(named) = value
        {
            for (name, sub) in named {
                unknown_keywords(sub, &step(&here, name), out);
            }
        } else if LISTED_SCHEMAS.contains(&key.as_str())
            && let Value::Array(list) = value
        {
            for (i, sub) in list.iter().enumerate() {
                unknown_keywords(sub, &format!("{here}/{i}"), out);
            }
        } else if ONE_SCHEMA.contains(&key.as_str()) {
            unknown_keywords(value, &here, out);
        } else if !KEYWORDS.contains(&key.as_str()) && !key.starts_with("x-") {
            out.push((at.to_owned(), key.clone()));
        }
    }
}

/// The keyword `key` was most likely meant to be, if one is close.
fn closest(key: &str) -> Option<&'static str> {
    KEYWORDS
        .iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&key.to_lowercase(), &k.to_lowercase()),
                *k,
            )
        })
        .filter(|(distance, k)| *distance <= 2.max(k.len() / 4))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keywords_are_found_where_they_are_and_named_with_a_guess() {
        let schema = json!({
            "type": "object",
            "requierd": ["path"],
            "x-vendor": 1,
            "properties": {
                "requierd": {"type": "string", "nullable": true},
                "rows": {"type": "array", "items": {"type": "integer", "minimun": 0}},
                "choice": {"oneOf": [{"const": 1, "descripton": "one"}]}
            },
            "default": {"anything": "goes"},
            "$defs": {"a/b": {"typ": "string"}}
        });
        let problems = schema_problems("input_schema", "input schema", &schema);
        let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let expect = [
            "at `/$defs/a~1b`: `typ` is not a JSON Schema keyword",
            "at `/properties/choice/oneOf/0`: `descripton` is not a JSON Schema keyword",
            "at `/properties/requierd`: `nullable` is not a JSON Schema keyword",
            "at `/properties/rows/items`: `minimun` is not a JSON Schema keyword",
            "at `/`: `requierd` is not a JSON Schema keyword",
        ];
        assert_eq!(said.len(), expect.len(), "{said:#?}");
        for e in expect {
            assert!(said.iter().any(|s| s.contains(e)), "{e} not in {said:#?}");
        }
        assert!(
            said.iter()
                .any(|s| s.contains("`requierd`") && s.contains("did you mean `required`?")),
            "{said:#?}"
        );
        assert!(
            said.iter()
                .any(|s| s.contains("`minimun`") && s.contains("did you mean `minimum`?")),
            "{said:#?}"
        );
        assert!(
            said.iter()
                .any(|s| s.contains("`nullable`") && s.contains("remove it")),
            "{said:#?}"
        );
    }

    #[test]
    fn meta_schema_errors_name_where_they_are() {
        let schema = json!({"type": "object", "properties": {"rows": {"type": "integr"}, "n": {"minimum": "0"}}});
        let problems = schema_problems("output_schema", "output schema", &schema);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let said = problems[0].to_string();
        assert!(
            said.starts_with("output_schema: the output schema is not valid JSON Schema: "),
            "{said}"
        );
        assert!(said.contains("at `/properties/rows/type`"), "{said}");
        assert!(said.contains("at `/properties/n/minimum`"), "{said}");
        // A meta-schema it cannot know is a problem, not a panic.
        let unknown = json!({"$schema": "https://example.invalid/schema", "type": "object"});
        let problems = schema_problems("input_schema", "input schema", &unknown);
        assert!(
            problems[0].message.contains("does not know"),
            "{problems:?}"
        );
        // What schemars writes passes.
        let fine = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "A", "type": "object",
            "properties": {"a": {"type": ["integer", "null"], "format": "uint", "minimum": 0, "default": null}},
            "required": [], "additionalProperties": false});
        assert!(schema_problems("input_schema", "input schema", &fine).is_empty());
    }
}
