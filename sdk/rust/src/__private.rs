//! Glue behind [`export_tool!`](crate::export_tool): the WIT bindings and the
//! conversions between them and the SDK's types. Not a public API.

#[expect(missing_docs, reason = "generated WIT bindings")]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "tool-plugin-env",
        pub_export_macro: true,
        export_macro_name: "__toolhost_export",
        default_bindings_module: "toolhost_sdk::__private::bindings",
    });
}

use crate::{Context, Tool, schema};
pub use bindings::exports::toolhost::plugin::environment::Guest as EnvGuest;
pub use bindings::exports::toolhost::plugin::tool::Guest;
use bindings::toolhost::plugin::types as wit;
pub use std::string::String;
pub use wit::{CallContext, ToolError as WitToolError, ToolInfo, ToolOutput};

/// The `describe` export for tool `T`.
pub fn describe<T: Tool>(version: &str) -> ToolInfo {
    ToolInfo {
        name: T::NAME.to_owned(),
        description: T::DESCRIPTION.to_owned(),
        input_schema: schema::input_schema::<T::Args>().to_string(),
        output_schema: T::output_schema().map(|s| s.to_string()),
        sensitive: T::SENSITIVE,
        capabilities: T::capabilities()
            .iter()
            .filter_map(crate::capability::to_wit)
            .collect(),
        version: version.to_owned(),
        title: T::TITLE.map(str::to_owned),
        idempotent: T::IDEMPOTENT,
    }
}

/// The `environment` export for tool `T`: the variables it declares.
pub fn variables<T: Tool>() -> Vec<String> {
    T::capabilities()
        .into_iter()
        .filter_map(|c| match c {
            crate::Capability::Env(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// The `call` export for tool `T`: parse, run, convert.
pub fn call<T: Tool>(args: String, ctx: CallContext) -> Result<ToolOutput, WitToolError> {
    let ctx = Context::from(ctx);
    let args = parse_args::<T::Args>(&args).map_err(WitToolError::from)?;
    T::call(args, &ctx).map(Into::into).map_err(Into::into)
}

/// Parse the call's JSON into typed arguments; an error names the field.
pub(crate) fn parse_args<A: serde::de::DeserializeOwned>(
    args: &str,
) -> Result<A, crate::ToolError> {
    let text = if args.trim().is_empty() { "{}" } else { args };
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = without_position(&err.into_inner().to_string());
        let message = if path == "." || path.is_empty() {
            format!("invalid arguments: {inner}")
        } else {
            format!("invalid argument `{path}`: {inner}")
        };
        crate::ToolError::invalid_input(message)
    })
}

/// serde_json ends messages with " at line 1 column 9", which means nothing
/// to a model that sent one line of JSON.
fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) if message[i..].contains(" column ") => message[..i].to_owned(),
        _ => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct ReadsToken;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}

    impl Tool for ReadsToken {
        type Args = NoArgs;
        const NAME: &'static str = "reads_token";
        const DESCRIPTION: &'static str = "Reads a token from its environment.";

        fn capabilities() -> Vec<crate::Capability> {
            vec![
                crate::Capability::Network(vec!["api.github.com".into()]),
                crate::Capability::Env("GITHUB_TOKEN".into()),
            ]
        }

        fn call(_: NoArgs, _: &Context) -> Result<crate::Output, crate::ToolError> {
            Ok(crate::Output::text("ok"))
        }
    }

    // A variable is declared through the `environment` export, never as a
    // WIT capability (which has no such case).
    #[test]
    fn env_capabilities_are_declared_through_the_environment_export() {
        assert_eq!(variables::<ReadsToken>(), ["GITHUB_TOKEN"]);
        let info = describe::<ReadsToken>("1.0.0");
        assert_eq!(info.capabilities.len(), 1);
        assert!(matches!(info.capabilities[0], wit::Capability::Network(_)));
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Args {
        #[expect(dead_code, reason = "only parsed")]
        path: String,
        #[serde(default)]
        #[expect(dead_code, reason = "only parsed")]
        limit: Option<u32>,
    }

    #[test]
    fn parse_error_names_the_field() {
        let err = parse_args::<Args>(r#"{"path":"a","limit":"x"}"#).unwrap_err();
        let crate::ToolError::InvalidInput(msg) = err else {
            panic!("wrong kind: {err:?}");
        };
        assert!(msg.contains("`limit`"), "{msg}");
    }

    #[test]
    fn empty_args_are_an_empty_object() {
        let err = parse_args::<Args>("").unwrap_err();
        assert!(err.to_string().contains("missing field `path`"), "{err}");
    }

    #[test]
    fn unknown_field_is_refused() {
        let err = parse_args::<Args>(r#"{"path":"a","pathh":1}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `pathh`"), "{err}");
    }
}
