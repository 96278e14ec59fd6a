//! What a plugin says about itself ([`ToolInfo`]), checked once at load.

use crate::bindings::types as wit;
use serde::{Deserialize, Serialize};
use toolhost_shared::contract::MIN_DESCRIPTION_CHARS;
use toolhost_shared::schema::make_portable;

pub use toolhost_shared::Capability;

impl From<wit::Capability> for Capability {
    fn from(c: wit::Capability) -> Self {
        match c {
            wit::Capability::WorkspaceRead => Self::WorkspaceRead,
            wit::Capability::WorkspaceWrite => Self::WorkspaceWrite,
            wit::Capability::Commands => Self::Commands,
            wit::Capability::Network(hosts) => Self::Network(hosts),
            wit::Capability::Directory(d) => Self::Directory {
                name: d.name,
                writable: d.writable,
            },
        }
    }
}

/// A tool's self-description, as returned by its `describe` export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Unique snake_case name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments (always an object schema).
    pub input_schema: serde_json::Value,
    /// JSON Schema of the structured output, if documented.
    pub output_schema: Option<serde_json::Value>,
    /// True if the tool changes state and is confirmed in `confirm-sensitive` mode.
    pub sensitive: bool,
    /// What the tool asks of the host.
    pub capabilities: Vec<Capability>,
    /// The tool's version.
    pub version: String,
    /// A short title for people (the plugin's, else made from the name).
    #[serde(default)]
    pub title: String,
    /// True if a second call with the same arguments changes nothing more.
    #[serde(default)]
    pub idempotent: bool,
}

/// Why a plugin's self-description was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InfoError {
    /// The name is not snake_case ASCII.
    #[error(
        "tool name `{0}` is not snake_case (lowercase letters, digits and `_`, starting with a letter, at most 64 characters)"
    )]
    BadName(String),
    /// A schema is not JSON.
    #[error("the {which} schema of `{name}` is not valid JSON: {source}")]
    SchemaNotJson {
        /// The tool.
        name: String,
        /// `input` or `output`.
        which: &'static str,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The input schema does not describe a JSON object.
    #[error("the input schema of `{0}` must be a JSON Schema object with \"type\": \"object\"")]
    InputNotObject(String),
}

impl ToolInfo {
    /// Convert and check what a plugin's `describe` returned.
    pub(crate) fn from_wit(info: wit::ToolInfo) -> Result<Self, InfoError> {
        if !is_snake_case(&info.name) {
            return Err(InfoError::BadName(info.name));
        }
        let parse = |text: &str, which| {
            serde_json::from_str::<serde_json::Value>(text).map_err(|source| {
                InfoError::SchemaNotJson {
                    name: info.name.clone(),
                    which,
                    source,
                }
            })
        };
        let mut input_schema = parse(&info.input_schema, "input")?;
        if input_schema.get("type").and_then(|t| t.as_str()) != Some("object") {
            return Err(InfoError::InputNotObject(info.name));
        }
        let mut output_schema = info
            .output_schema
            .as_deref()
            .map(|s| parse(s, "output"))
            .transpose()?;
        // Whatever wrote them, the schemas clients see are portable.
        make_portable(&mut input_schema);
        if let Some(out) = &mut output_schema {
            make_portable(out);
        }
        let title = info
            .title
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| title_from_name(&info.name));
        Ok(Self {
            title,
            idempotent: info.idempotent,
            input_schema,
            output_schema,
            capabilities: info.capabilities.into_iter().map(Into::into).collect(),
            name: info.name,
            description: info.description,
            sensitive: info.sensitive,
            version: info.version,
        })
    }

    /// What is wrong with this self-description for `toolhost check` and
    /// create_tool's component check (empty: nothing): a description too
    /// short to tell a model what the tool does, schemas that are not JSON
    /// Schema, an empty version.
    pub fn conformance_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.description.trim().len() < MIN_DESCRIPTION_CHARS {
            problems.push(format!(
                "`{}`: the description is too short to tell a model what the tool does (at least {MIN_DESCRIPTION_CHARS} characters)",
                self.name
            ));
        }
        if !jsonschema::meta::is_valid(&self.input_schema) {
            problems.push(format!(
                "`{}`: the input schema is not valid JSON Schema",
                self.name
            ));
        }
        if let Some(out) = &self.output_schema
            && !jsonschema::meta::is_valid(out)
        {
            problems.push(format!(
                "`{}`: the output schema is not valid JSON Schema",
                self.name
            ));
        }
        if self.version.trim().is_empty() {
            problems.push(format!("`{}`: the version is empty", self.name));
        }
        problems
    }
}

pub use toolhost_shared::dynamic::is_snake_case;

/// A title for a tool that gives none: `read_file` → `Read file`.
pub fn title_from_name(name: &str) -> String {
    let words = name.replace('_', " ");
    let mut chars = words.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_names() {
        for ok in ["read_file", "grep", "v2_tool", "a1"] {
            assert!(is_snake_case(ok), "{ok}");
        }
        for bad in [
            "",
            "ReadFile",
            "read-file",
            "_x",
            "x_",
            "a__b",
            "1abc",
            "réad",
        ] {
            assert!(!is_snake_case(bad), "{bad}");
        }
    }

    fn wit_info(name: &str, schema: &str) -> wit::ToolInfo {
        wit::ToolInfo {
            name: name.into(),
            description: "d".into(),
            input_schema: schema.into(),
            output_schema: None,
            sensitive: false,
            capabilities: vec![wit::Capability::WorkspaceRead],
            version: "1".into(),
            title: None,
            idempotent: false,
        }
    }

    #[test]
    fn titles_and_portable_schemas() {
        let info = ToolInfo::from_wit(wit_info(
            "read_file",
            r#"{"type":"object","properties":{"n":{"type":["integer","null"],"format":"uint32"}}}"#,
        ))
        .unwrap();
        assert_eq!(info.title, "Read file");
        assert_eq!(
            info.input_schema["properties"]["n"],
            serde_json::json!({"type": "integer", "minimum": 0, "maximum": 4294967295u64})
        );
        let mut given = wit_info("x", r#"{"type":"object"}"#);
        given.title = Some("Ex".into());
        assert_eq!(ToolInfo::from_wit(given).unwrap().title, "Ex");
    }

    #[test]
    fn info_is_checked() {
        assert!(ToolInfo::from_wit(wit_info("ok", r#"{"type":"object"}"#)).is_ok());
        assert!(matches!(
            ToolInfo::from_wit(wit_info("Bad", r#"{"type":"object"}"#)),
            Err(InfoError::BadName(_))
        ));
        assert!(matches!(
            ToolInfo::from_wit(wit_info("ok", "{")),
            Err(InfoError::SchemaNotJson { .. })
        ));
        assert!(matches!(
            ToolInfo::from_wit(wit_info("ok", r#"{"type":"string"}"#)),
            Err(InfoError::InputNotObject(_))
        ));
    }
}
