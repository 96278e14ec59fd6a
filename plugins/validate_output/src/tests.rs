//! Unit tests of validate_output.

use super::*;
use serde_json::json;

fn dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("person.json"),
        json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"label": {"type": "string"}}}}
        }})
        .to_string(),
    )
    .unwrap();
    d
}

fn check(output_type: &str, data: Value, d: &Path) -> Result<Output, ToolError> {
    validate(
        Args {
            output_type: output_type.into(),
            data,
            schema: None,
        },
        d,
    )
}

#[test]
fn valid_data_with_warnings_for_undescribed_properties() {
    let d = dir();
    let out = check(
        "person",
        json!({"name": "Ada", "tags": [{"label": "x", "extra": 1}]}),
        d.path(),
    )
    .unwrap();
    let v = out.structured().unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["warnings"][0]["path"], "/tags/0/extra");
}

#[test]
fn invalid_data_has_pointer_paths() {
    let d = dir();
    let out = check("person", json!({"tags": [{"label": 5}]}), d.path()).unwrap();
    let v = out.structured().unwrap();
    assert_eq!(v["valid"], false);
    let paths: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/tags/0/label"), "{paths:?}");
    assert!(
        paths.contains(&""),
        "the missing `name` is at the root: {paths:?}"
    );
}

#[test]
fn an_unknown_type_lists_the_known_ones() {
    let d = dir();
    let err = check("persn", json!({}), d.path()).unwrap_err().to_string();
    assert!(
        err.contains("unknown outputType `persn`") && err.contains("person"),
        "{err}"
    );
    let err = check("../etc/passwd", json!({}), d.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown outputType"), "{err}");
    let none = tempfile::tempdir().unwrap();
    let err = check("x", json!({}), &none.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("inline"), "{err}");
}

#[test]
fn an_inline_schema_needs_no_directory() {
    let out = validate(
        Args {
            output_type: "count".into(),
            data: json!(3),
            schema: Some(json!({"type": "integer", "minimum": 5})),
        },
        Path::new("/no/such/dir"),
    )
    .unwrap();
    assert_eq!(out.structured().unwrap()["valid"], false);
}
