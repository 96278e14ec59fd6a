//! The services of the application embedding toolhost (sending a message,
//! starting a sub-agent, ...), JSON in and out. Declare
//! `Capability::Service("NAME".into())`; a person grants it with
//! `service:NAME`. Natively (in unit tests) there is no host: every call is
//! [`ToolError::Denied`].
//!
//! ```
//! use toolhost_sdk::{ToolError, json, services};
//! let sent = services::call("message", &json!({"content": "done"}));
//! assert!(matches!(sent, Err(ToolError::Denied(_)))); // natively: no host
//! ```

use crate::ToolError;
use serde_json::Value;

/// A service this host offers the tool, as the embedder describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Offered {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its input.
    pub input_schema: Value,
}

/// Call the service `name` with `input`; its answer. Refusals and a
/// missing grant are [`ToolError::Denied`], a service this host does not
/// offer [`ToolError::Retry`] (the model can do without it), input that
/// does not fit [`ToolError::InvalidInput`], the rest
/// [`ToolError::Failed`].
pub fn call(name: &str, input: &Value) -> Result<Value, ToolError> {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::__private::bindings::toolhost::plugin::services as wit;
        let answer = wit::call(name, &input.to_string()).map_err(|e| match e {
            wit::ServiceError::Denied(m) => ToolError::denied(m),
            wit::ServiceError::NotFound(m) => ToolError::retry(m),
            wit::ServiceError::Invalid(m) => ToolError::invalid_input(m),
            wit::ServiceError::Failed(m) => ToolError::failed(m),
        })?;
        serde_json::from_str(&answer).map_err(|e| {
            ToolError::failed(format!(
                "service `{name}` answered something that is not JSON: {e}"
            ))
        })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = input;
        Err(ToolError::denied(format!(
            "no host to call the service `{name}` (running natively)"
        )))
    }
}

/// The services this host offers that this tool is granted (none natively).
pub fn offered() -> Vec<Offered> {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::__private::bindings::toolhost::plugin::services as wit;
        wit::offered()
            .into_iter()
            .map(|s| Offered {
                input_schema: serde_json::from_str(&s.input_schema).unwrap_or(Value::Null),
                name: s.name,
                description: s.description,
            })
            .collect()
    }
    #[cfg(not(target_arch = "wasm32"))]
    Vec::new()
}
