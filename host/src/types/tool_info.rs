//! What a plugin says about itself ([`ToolInfo`]), checked once at load.

use crate::bindings::types as wit;
use serde::{Deserialize, Serialize};
use toolhost_shared::contract::MIN_DESCRIPTION_CHARS;
use toolhost_shared::schema::{make_compact, make_portable};

mod schema_check;

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
            wit::Capability::Service(name) => Self::Service(name),
        }
    }
}

/// A capability as the WIT `capability` spells it; `None` for an
/// environment variable, which a tool declares through its `environment`
/// export instead.
fn to_wit(c: &Capability) -> Option<wit::Capability> {
    Some(match c {
        Capability::WorkspaceRead => wit::Capability::WorkspaceRead,
        Capability::WorkspaceWrite => wit::Capability::WorkspaceWrite,
        Capability::Commands => wit::Capability::Commands,
        Capability::Network(hosts) => wit::Capability::Network(hosts.clone()),
        Capability::Directory { name, writable } => {
            wit::Capability::Directory(wit::DirectoryAccess {
                name: name.clone(),
                writable: *writable,
            })
        }
        Capability::Service(name) => wit::Capability::Service(name.clone()),
        Capability::Env(_) => return None,
    })
}

/// What a plugin said about itself, from what was kept of it (the
/// compile cache's record), for the checks that read the raw answer.
impl From<&ToolInfo> for wit::ToolInfo {
    fn from(info: &ToolInfo) -> Self {
        Self {
            name: info.name.clone(),
            description: info.description.clone(),
            input_schema: info.input_schema.to_string(),
            output_schema: info.output_schema.as_ref().map(ToString::to_string),
            sensitive: info.sensitive,
            capabilities: info.capabilities.iter().filter_map(to_wit).collect(),
            version: info.version.clone(),
            title: Some(info.title.clone()),
            idempotent: info.idempotent,
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
    /// What stands for a tool whose description cannot be read: it asks
    /// for nothing (so it is granted nothing), counts as sensitive, and its
    /// description says what is wrong.
    pub(crate) fn unreadable(name: &str, why: &str) -> Self {
        Self {
            name: name.to_owned(),
            description: format!(
                "The description of `{name}` cannot be read ({why}); this toolhost build is broken: rebuild or reinstall it."
            ),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            sensitive: true,
            capabilities: Vec::new(),
            version: String::new(),
            title: String::new(),
            idempotent: false,
        }
    }

    /// This tool-info with the environment variables `names` declared
    /// (its `environment` export), checked by [`env_problems`].
    pub(crate) fn with_env(mut self, names: Vec<String>) -> Self {
        for name in names {
            let cap = Capability::Env(name);
            if !self.capabilities.contains(&cap) {
                self.capabilities.push(cap);
            }
        }
        self
    }

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
        // Whatever wrote them, the schemas clients see are portable, and
        // no longer than they need be.
        for schema in std::iter::once(&mut input_schema).chain(output_schema.as_mut()) {
            make_portable(schema);
            make_compact(schema);
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
}

/// How much a [`Problem`] matters: an error keeps the tool from loading; a
/// warning is advice and changes no exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The component does not load.
    Error,
    /// It loads; clients or people get less than they could.
    Warning,
}

/// One thing wrong with a component, for `toolhost check`: where, what, and
/// what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Error or warning.
    pub severity: Severity,
    /// What it is about: `component`, `name`, `description`,
    /// `input_schema`, `output_schema`, `version`, `capabilities`.
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
    /// What to change.
    pub fix: String,
}

impl Problem {
    pub(crate) fn error(field: &'static str, message: String, fix: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            field,
            message,
            fix: fix.into(),
        }
    }

    fn warning(field: &'static str, message: String, fix: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            field,
            message,
            fix: fix.into(),
        }
    }

    /// The component itself could not be loaded (not a component, built
    /// for another world, `describe` failed): nothing else can be checked.
    pub(crate) fn component(message: String, fix: impl Into<String>) -> Self {
        Self::error("component", message, fix)
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}; fix: {}", self.field, self.message, self.fix)
    }
}

/// Everything wrong with what a component's `describe` returned, errors
/// and warnings, all at once (the checks behind loading stop at the
/// first; these go on).
/// What is wrong with the environment variables a tool declares.
pub(crate) fn env_problems(names: &[String]) -> Vec<Problem> {
    names
        .iter()
        .filter(|n| !toolhost_shared::grant::is_env_name(n))
        .map(|n| {
            Problem::error(
                "environment",
                format!("`{n}` is not an environment variable's name"),
                "name variables with ASCII letters, digits and `_`, not starting with a digit",
            )
        })
        .collect()
}

pub(crate) fn problems_of(info: &wit::ToolInfo) -> Vec<Problem> {
    let mut problems = Vec::new();
    let name = &info.name;
    if !is_snake_case(name) {
        let suggestion = snake_case_suggestion(name);
        problems.push(Problem::error(
            "name",
            format!(
                "tool name `{name}` is not snake_case (lowercase letters, digits and `_`, starting with a letter, at most 64 characters)"
            ),
            format!("name it `{suggestion}`"),
        ));
    }
    if info.description.trim().chars().count() < MIN_DESCRIPTION_CHARS {
        problems.push(Problem::error(
            "description",
            format!(
                "the description is too short to tell a model what the tool does ({} characters; at least {MIN_DESCRIPTION_CHARS})",
                info.description.trim().chars().count()
            ),
            "say what the tool does, what it needs and what it returns, in a sentence or two",
        ));
    }
    match serde_json::from_str::<serde_json::Value>(&info.input_schema) {
        Err(e) => problems.push(Problem::error(
            "input_schema",
            format!("the input schema is not valid JSON: {e}"),
            "return the schema as JSON text (in Rust it is derived from the `Args` type)",
        )),
        Ok(schema) => {
            if schema.get("type").and_then(|t| t.as_str()) != Some("object") {
                problems.push(Problem::error(
                    "input_schema",
                    "the input schema must describe a JSON object".to_owned(),
                    "give it \"type\": \"object\" with the arguments under \"properties\"",
                ));
            }
            problems.extend(schema_check::schema_problems(
                "input_schema",
                "input schema",
                &schema,
            ));
        }
    }
    match info.output_schema.as_deref() {
        None => problems.push(Problem::warning(
            "output_schema",
            "there is no output schema: MCP clients get no outputSchema and no structured result"
                .to_owned(),
            "declare one for the structured output (in Rust, `Tool::output_schema`)",
        )),
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Err(e) => problems.push(Problem::error(
                "output_schema",
                format!("the output schema is not valid JSON: {e}"),
                "return the schema as JSON text, or none",
            )),
            Ok(schema) => problems.extend(schema_check::schema_problems(
                "output_schema",
                "output schema",
                &schema,
            )),
        },
    }
    let version = info.version.trim();
    if version.is_empty() {
        problems.push(Problem::error(
            "version",
            "the version is empty".to_owned(),
            "give the tool a version such as `0.1.0` (in Rust, the crate's version)",
        ));
    } else if !is_semver(version) {
        problems.push(Problem::warning(
            "version",
            format!("the version `{version}` is not MAJOR.MINOR.PATCH"),
            "use a semantic version such as `0.1.0`",
        ));
    }
    for cap in &info.capabilities {
        if let wit::Capability::Network(hosts) = cap {
            if hosts.is_empty() {
                problems.push(Problem::error(
                    "capabilities",
                    "the network capability names no host".to_owned(),
                    "list the hosts the tool connects to",
                ));
            } else if hosts.iter().any(|h| h == "*") {
                problems.push(Problem::warning(
                    "capabilities",
                    "the network capability asks for every host (`*`)".to_owned(),
                    "list the hosts the tool connects to: a person grants what it asks for",
                ));
            }
        }
    }
    problems
}

/// `MAJOR.MINOR.PATCH`, with an optional `-pre` or `+build` tail.
fn is_semver(version: &str) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A snake_case name close to `name`: `CountWords` and `count-words` both
/// give `count_words`.
pub fn snake_case_suggestion(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
            prev_lower = true;
        } else {
            out.push('_');
            prev_lower = false;
        }
    }
    let mut name = out
        .split('_')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name.insert_str(0, "tool_");
    }
    name.truncate(64);
    name.trim_end_matches('_').to_owned()
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
        for (bad, good) in [
            ("CountWords", "count_words"),
            ("count-words", "count_words"),
            ("Count-Words", "count_words"),
            ("2fast", "tool_2fast"),
            ("__x__", "x"),
        ] {
            assert_eq!(snake_case_suggestion(bad), good);
            assert!(is_snake_case(good), "{good}");
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
