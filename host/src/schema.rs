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
    /// `{"name","title","description","inputSchema","annotations"}`: what
    /// `toolhost serve` lists by default, where a result is its text alone.
    Mcp,
    /// [`Mcp`](Self::Mcp) with each tool's `outputSchema`, for a server
    /// whose results also carry `structuredContent` (`serve
    /// --structured-output`).
    McpStructured,
}

impl SchemaFormat {
    /// MCP's listing: [`McpStructured`](Self::McpStructured) when the
    /// server answers structured output, else [`Mcp`](Self::Mcp).
    pub fn mcp(structured: bool) -> Self {
        if structured {
            Self::McpStructured
        } else {
            Self::Mcp
        }
    }
}

impl std::str::FromStr for SchemaFormat {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            "mcp" => Ok(Self::Mcp),
            "mcp-structured" => Ok(Self::McpStructured),
            _ => Err(ParseError::new(
                "schema format",
                s,
                "openai, anthropic, mcp or mcp-structured",
            )),
        }
    }
}

/// What a tool can do to the world with its effective grant, as the
/// executor computes it ([`Executor::effects`](crate::Executor::effects)):
/// the source of the MCP annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effects {
    /// What it can change.
    pub sensitivity: Sensitivity,
    /// It can reach hosts on the network (its own grant, or its commands').
    pub open_world: bool,
}

impl Effects {
    /// The MCP `annotations` of `info` with these effects: `readOnlyHint`
    /// when it changes nothing, `destructiveHint` when it can change files
    /// or run commands, `idempotentHint` when it changes nothing or says a
    /// repeat changes nothing more, `openWorldHint` when it reaches the
    /// network (local tools do not: the spec's default would say they do).
    /// The title is the tool's own `title`, not repeated here.
    pub fn annotations(self, info: &ToolInfo) -> Value {
        let read_only = self.sensitivity.read_only();
        json!({
            "readOnlyHint": read_only,
            "destructiveHint": self.sensitivity.destructive(),
            "idempotentHint": read_only || info.idempotent,
            "openWorldHint": self.open_world,
        })
    }
}

/// One tool's schema in `format`; MCP's carries the title and the
/// [`Effects::annotations`], and the output schema when structured.
pub fn tool_schema(info: &ToolInfo, effects: Effects, format: SchemaFormat) -> Value {
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
        SchemaFormat::Mcp | SchemaFormat::McpStructured => {
            let mut tool = json!({
                "name": info.name,
                "title": info.title,
                "description": info.description,
                "inputSchema": info.input_schema,
                "annotations": effects.annotations(info),
            });
            if format == SchemaFormat::McpStructured
                && let Some(out) = mcp_output_schema(info.output_schema.as_ref())
            {
                tool["outputSchema"] = out;
            }
            tool
        }
    }
}

/// The member of an MCP `structuredContent` that holds the result's text,
/// as `content` shows it.
pub const TEXT_MEMBER: &str = "text";

/// Whether MCP lists `schema` as an output schema: only object schemas.
fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// Whether a tool's output schema gets [`TEXT_MEMBER`] over MCP: an object
/// schema that does not use the name itself.
fn takes_text(schema: &Value) -> bool {
    is_object_schema(schema)
        && schema
            .get("properties")
            .is_none_or(|p| p.get(TEXT_MEMBER).is_none())
}

/// The `outputSchema` MCP lists for a tool's output schema: the tool's,
/// with the result's text as a required [`TEXT_MEMBER`], so a client that
/// gives the model `structuredContent` gives it everything. None when the
/// tool has none, or one that is not an object schema (MCP allows only
/// those).
pub fn mcp_output_schema(schema: Option<&Value>) -> Option<Value> {
    let schema = schema.filter(|s| is_object_schema(s))?;
    let mut out = schema.clone();
    if takes_text(schema) {
        out["properties"][TEXT_MEMBER] = json!({
            "type": "string",
            "description": "The result as the model reads it in `content`.",
        });
        match out.get_mut("required").and_then(Value::as_array_mut) {
            Some(required) => required.push(TEXT_MEMBER.into()),
            None => out["required"] = json!([TEXT_MEMBER]),
        }
    }
    Some(out)
}

/// The `structuredContent` of a successful MCP result, in step with
/// [`mcp_output_schema`]: the tool's structured data with the text beside
/// it. A tool that lists no output schema gets its structured data as it
/// is, when that is an object (MCP allows no other).
pub fn mcp_structured(
    schema: Option<&Value>,
    structured: Option<Value>,
    text: &str,
) -> Option<Value> {
    let Some(schema) = schema.filter(|s| is_object_schema(s)) else {
        return structured.filter(Value::is_object);
    };
    let mut out = match structured {
        Some(Value::Object(members)) => Value::Object(members),
        _ => json!({}),
    };
    if takes_text(schema) {
        out[TEXT_MEMBER] = text.into();
    }
    Some(out)
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
            title: "Read file".into(),
            idempotent: false,
        }
    }

    fn effects(sensitivity: Sensitivity) -> Effects {
        Effects {
            sensitivity,
            open_world: false,
        }
    }

    #[test]
    fn shapes() {
        let i = info();
        let o = tool_schema(&i, effects(Sensitivity::ReadOnly), SchemaFormat::OpenAi);
        assert_eq!(o["type"], "function");
        assert_eq!(o["function"]["parameters"]["type"], "object");
        let a = tool_schema(&i, effects(Sensitivity::ReadOnly), SchemaFormat::Anthropic);
        assert_eq!(a["input_schema"]["type"], "object");
        let m = tool_schema(&i, effects(Sensitivity::ReadOnly), SchemaFormat::Mcp);
        assert_eq!(m["inputSchema"]["type"], "object");
        assert_eq!(m["title"], "Read file");
        assert_eq!(
            m["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": false,
                   "idempotentHint": true, "openWorldHint": false})
        );
        assert!(m.get("outputSchema").is_none());
        let mut with_output = i.clone();
        with_output.output_schema = Some(json!({"type": "object", "properties": {}}));
        let plain = tool_schema(
            &with_output,
            effects(Sensitivity::ReadOnly),
            SchemaFormat::Mcp,
        );
        assert!(
            plain.get("outputSchema").is_none(),
            "text results list none"
        );
        let structured = tool_schema(
            &with_output,
            effects(Sensitivity::ReadOnly),
            SchemaFormat::McpStructured,
        );
        assert_eq!(structured["outputSchema"]["required"], json!(["text"]));
        assert_eq!("mcp-structured".parse(), Ok(SchemaFormat::McpStructured));
        let m = tool_schema(&i, effects(Sensitivity::OwnState), SchemaFormat::Mcp);
        assert_eq!(m["annotations"]["readOnlyHint"], false);
        assert_eq!(m["annotations"]["destructiveHint"], false);
        assert_eq!(m["annotations"]["idempotentHint"], false);
        let m = tool_schema(
            &i,
            Effects {
                sensitivity: Sensitivity::Commands,
                open_world: true,
            },
            SchemaFormat::Mcp,
        );
        assert_eq!(m["annotations"]["destructiveHint"], true);
        assert_eq!(m["annotations"]["openWorldHint"], true);
    }

    #[test]
    fn structured_content_carries_the_text_in_step_with_the_schema() {
        let schema = json!({"type": "object", "properties": {"hash": {"type": "string"}}, "required": ["hash"]});
        let listed = mcp_output_schema(Some(&schema)).unwrap();
        assert_eq!(listed["required"], json!(["hash", "text"]));
        assert_eq!(listed["properties"]["text"]["type"], "string");
        let out = mcp_structured(Some(&schema), Some(json!({"hash": "h"})), "1\thello").unwrap();
        assert_eq!(out, json!({"hash": "h", "text": "1\thello"}));
        assert!(jsonschema::is_valid(&listed, &out));
        // A tool that uses `text` itself keeps it; no schema, no structured content.
        let own = json!({"type": "object", "properties": {"text": {"type": "integer"}}});
        assert_eq!(mcp_output_schema(Some(&own)).unwrap(), own);
        assert_eq!(
            mcp_structured(Some(&own), Some(json!({"text": 3})), "three").unwrap(),
            json!({"text": 3})
        );
        assert_eq!(
            mcp_structured(None, Some(json!({"a": 1})), "x"),
            Some(json!({"a": 1}))
        );
        assert_eq!(mcp_structured(None, Some(json!([1])), "x"), None);
        // MCP lists only object output schemas.
        assert_eq!(mcp_output_schema(Some(&json!({"type": "array"}))), None);
    }
}
