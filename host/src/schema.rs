//! Tool schemas in the shapes model APIs expect: OpenAI function calling,
//! Anthropic tool use, and MCP `tools/list` entries.

use crate::types::names::ParseError;
use crate::types::sensitivity::Sensitivity;
use crate::types::tool_info::ToolInfo;
use serde_json::{Value, json};

/// A schema ecosystem.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SchemaFormat {
    /// `{"type":"function","function":{"name","description","parameters"}}`
    #[default]
    OpenAi,
    /// `{"name","description","input_schema"}`
    Anthropic,
    /// `{"name","description","inputSchema","outputSchema"?,"annotations"}`
    Mcp,
}

impl std::str::FromStr for SchemaFormat {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            "mcp" => Ok(Self::Mcp),
            _ => Err(ParseError::new(
                "schema format",
                s,
                "openai, anthropic or mcp",
            )),
        }
    }
}

/// One tool's schema in `format`.
///
/// MCP annotations come from the tool's [`Sensitivity`] (its effective
/// grant, as the executor computes it): `readOnlyHint` when it changes
/// nothing, `destructiveHint` when it can change files or run commands.
pub fn tool_schema(info: &ToolInfo, sensitivity: Sensitivity, format: SchemaFormat) -> Value {
    match format {
        SchemaFormat::OpenAi => json!({
            "type": "function",
            "function": {
                "name": info.name,
                "description": info.description,
                "parameters": info.input_schema,
            }
        }),
        SchemaFormat::Anthropic => json!({
            "name": info.name,
            "description": info.description,
            "input_schema": info.input_schema,
        }),
        SchemaFormat::Mcp => {
            let mut tool = json!({
                "name": info.name,
                "description": info.description,
                "inputSchema": info.input_schema,
                "annotations": {
                    "readOnlyHint": sensitivity.read_only(),
                    "destructiveHint": sensitivity.destructive(),
                },
            });
            if let Some(out) = &info.output_schema {
                tool["outputSchema"] = out.clone();
            }
            tool
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::tool_info::Capability;

    fn info() -> ToolInfo {
        ToolInfo {
            name: "read_file".into(),
            description: "Read a file.".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            output_schema: None,
            sensitive: false,
            capabilities: vec![Capability::WorkspaceRead],
            version: "0.1.0".into(),
        }
    }

    #[test]
    fn shapes() {
        let i = info();
        let o = tool_schema(&i, Sensitivity::ReadOnly, SchemaFormat::OpenAi);
        assert_eq!(o["type"], "function");
        assert_eq!(o["function"]["parameters"]["type"], "object");
        let a = tool_schema(&i, Sensitivity::ReadOnly, SchemaFormat::Anthropic);
        assert_eq!(a["input_schema"]["type"], "object");
        let m = tool_schema(&i, Sensitivity::ReadOnly, SchemaFormat::Mcp);
        assert_eq!(m["inputSchema"]["type"], "object");
        assert_eq!(m["annotations"]["readOnlyHint"], true);
        assert_eq!(m["annotations"]["destructiveHint"], false);
        assert!(m.get("outputSchema").is_none());
        let m = tool_schema(&i, Sensitivity::OwnState, SchemaFormat::Mcp);
        assert_eq!(m["annotations"]["readOnlyHint"], false);
        assert_eq!(m["annotations"]["destructiveHint"], false);
        let m = tool_schema(&i, Sensitivity::Commands, SchemaFormat::Mcp);
        assert_eq!(m["annotations"]["destructiveHint"], true);
    }
}
