//! Write toolhost tool plugins in Rust.
//!
//! A tool is a type that implements [`Tool`]: it names itself, declares the
//! [`Capability`]s it needs, takes typed [`Tool::Args`] (serde + schemars, so
//! the JSON Schema the model sees is derived from the Rust type and its doc
//! comments), and returns an [`Output`] or a [`ToolError`]. [`export_tool!`]
//! turns that type into a WebAssembly component export of the
//! `toolhost:plugin` world; build it with `cargo build --target wasm32-wasip2`.
//!
//! The flow of one call: the host calls the component's `call` export with
//! JSON text and a call context; the SDK parses the JSON into `Args` (a bad
//! field becomes [`ToolError::InvalidInput`] naming the field), builds a
//! [`Context`], runs [`Tool::call`], and converts the result back to the WIT
//! types.
//!
//! Beside the trait, the macro and the context, output and error types,
//! four modules hold the helpers a tool needs from the host:
//!
//! - [`fs`]: model-given paths ([`fs::resolve`], [`fs::WorkspacePath`]),
//!   `std::io::Error`s in the model's terms, a directory walk, regular-file
//!   reads ([`fs::read_up_to`]: one host call), atomic writes through the
//!   host ([`fs::write_atomic`]), and the `allow_delete` check
//!   ([`fs::deletion_allowed`]).
//! - [`commands`]: run commands through the host's broker ([`commands::run`],
//!   background commands with [`commands::spawn`]).
//! - [`parallel`]: fan a call's work out over the host's cores
//!   ([`parallel::fan_out`]).
//! - [`log`]: log lines forwarded to the host.
//!
//! The engines the built-in tools share (search, edit, memory, dynamic
//! tools) live in `toolhost-builtin`, not here.
//!
//! ```no_run
//! use toolhost_sdk::{Context, Output, Tool, ToolError, export_tool};
//! use toolhost_sdk::{Deserialize, JsonSchema};
//!
//! /// Arguments of `shout`.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct Args {
//!     /// The text to shout.
//!     text: String,
//! }
//!
//! struct Shout;
//!
//! impl Tool for Shout {
//!     type Args = Args;
//!     const NAME: &'static str = "shout";
//!     const DESCRIPTION: &'static str = "Return the given text in upper case.";
//!
//!     fn call(args: Args, _ctx: &Context) -> Result<Output, ToolError> {
//!         Ok(Output::text(args.text.to_uppercase()))
//!     }
//! }
//!
//! export_tool!(Shout);
//! ```

mod capability;
pub mod commands;
mod context;
pub mod fs;
pub mod log;
mod output;
pub mod parallel;
mod schema;
pub mod services;

#[doc(hidden)]
pub mod __private;

pub use context::Context;
pub use output::{Output, Stop, ToolError};
pub use schema::json_schema;
pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize, Serialize};
pub use serde_json::{self, Value, json};
/// A tool from one function: its parameters are the arguments (the input
/// schema is derived from their types; a `&Context` parameter gets the
/// call's context; `Option<T>` ones may be left out), its doc comment is the
/// description, and the doc's `# Arguments` list describes each argument
/// (with no heading, a list that ends the doc and describes only
/// parameters does the same). It writes the [`Tool`] implementation (a unit struct named after the
/// function in CamelCase, with an `Args` struct beside it) and
/// [`export_tool!`]; the function stays as it is, for native tests.
///
/// Options: `capabilities = [WorkspaceRead, ...]` (variants of
/// [`Capability`], or expressions of that type), `output = Type` (the
/// structured result, for the output schema), `sensitive`, `idempotent`,
/// `title = "..."`, `name = "..."` (default: the function's name).
///
/// ```
/// use toolhost_sdk::{Context, Output, Tool, ToolError, fs, tool};
///
/// /// Say how long a text file of the workspace is.
/// ///
/// /// # Arguments
/// ///
/// /// * `path` - Workspace-relative path of the file.
/// /// * `unit` - `bytes` (the default) or `chars`.
/// #[tool(capabilities = [WorkspaceRead], idempotent)]
/// pub fn file_length(ctx: &Context, path: String, unit: Option<String>) -> Result<Output, ToolError> {
///     let text = fs::read_text(&fs::resolve(&path, ctx)?)?;
///     let n = if unit.as_deref() == Some("chars") { text.chars().count() } else { text.len() };
///     Ok(Output::text(n.to_string()))
/// }
///
/// assert_eq!(FileLength::NAME, "file_length");
/// assert_eq!(FileLength::DESCRIPTION, "Say how long a text file of the workspace is.");
/// let schema = toolhost_sdk::json_schema::<FileLengthArgs>();
/// assert_eq!(schema["properties"]["path"]["description"], "Workspace-relative path of the file.");
/// assert_eq!(schema["required"], toolhost_sdk::json!(["path"]));
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a.txt"), "héllo").unwrap();
/// let ctx = Context::for_workspace(dir.path().display().to_string());
/// let out = file_length(&ctx, "a.txt".into(), Some("chars".into())).unwrap();
/// assert_eq!(out.content(), "5");
/// let args = serde_json::from_str(r#"{"path": "a.txt"}"#).unwrap();
/// assert_eq!(FileLength::call(args, &ctx).unwrap().content(), "6");
/// ```
pub use toolhost_sdk_macros::tool;
pub use toolhost_shared::Capability;

/// A tool: a name, a description for the model, typed arguments and a `call`.
///
/// Only `Args`, `NAME`, `DESCRIPTION` and [`Tool::call`] are required; the rest
/// have defaults: a title made from the name, not idempotent, not
/// sensitive, no capabilities, no output schema.
///
/// ```
/// use toolhost_sdk::{Capability, Context, Output, Tool, ToolError};
/// use toolhost_sdk::{Deserialize, JsonSchema};
///
/// /// Arguments of `count_lines`.
/// #[derive(Deserialize, JsonSchema)]
/// struct Args {
///     /// Workspace-relative path of the file.
///     path: String,
/// }
///
/// struct CountLines;
///
/// impl Tool for CountLines {
///     type Args = Args;
///     const NAME: &'static str = "count_lines";
///     const DESCRIPTION: &'static str = "Count the lines of a text file in the workspace.";
///
///     fn capabilities() -> Vec<Capability> {
///         vec![Capability::WorkspaceRead]
///     }
///
///     fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
///         let path = toolhost_sdk::fs::resolve(&args.path, ctx)?;
///         let text = std::fs::read_to_string(&path)
///             .map_err(|e| toolhost_sdk::fs::io_error(e, &args.path))?;
///         Ok(Output::text(text.lines().count().to_string()))
///     }
/// }
/// ```
pub trait Tool {
    /// The arguments, parsed from the call's JSON. Derive `Deserialize` and
    /// `JsonSchema`; doc comments on fields become descriptions in the schema.
    /// Add `#[serde(deny_unknown_fields)]` so a misspelt field is an error.
    type Args: serde::de::DeserializeOwned + JsonSchema;

    /// Unique snake_case name, e.g. `read_file`.
    const NAME: &'static str;

    /// What the tool does and when to use it, written for a model.
    const DESCRIPTION: &'static str;

    /// A short title for people, e.g. `Read a file` (MCP clients show it in
    /// their tool lists). `None`: the host makes one from [`Tool::NAME`].
    const TITLE: Option<&'static str> = None;

    /// True if a second call with the same arguments changes nothing more
    /// than the first (overwriting a file with given text: yes; appending a
    /// line: no). Clients may retry such a call freely. A tool that changes
    /// nothing is idempotent whatever this says.
    const IDEMPOTENT: bool = false;

    /// True if calls should be confirmed as a whole in `confirm-sensitive`
    /// mode even though the tool's grant lets it write nothing outside its
    /// own state (a tool that may write files is confirmed anyway; one that
    /// only runs commands otherwise leaves confirming to the broker, command
    /// by command).
    const SENSITIVE: bool = false;

    /// What the tool needs from the host. The host grants at most this.
    fn capabilities() -> Vec<Capability> {
        Vec::new()
    }

    /// JSON Schema of [`Output::with_structured`] data, if the tool documents
    /// it; usually `Some(json_schema::<MyReport>())`.
    fn output_schema() -> Option<Value> {
        None
    }

    /// Run the tool once.
    fn call(args: Self::Args, ctx: &Context) -> Result<Output, ToolError>;
}

/// Export a [`Tool`] as the component's `toolhost:plugin/tool` interface.
///
/// Use it once per plugin crate, at the crate root. On targets other than
/// wasm32 it expands to nothing, so the tool's logic can be unit-tested and
/// benchmarked natively.
///
/// ```no_run
/// # use toolhost_sdk::{Context, Output, Tool, ToolError};
/// # struct MyTool;
/// # impl Tool for MyTool {
/// #     type Args = toolhost_sdk::Value;
/// #     const NAME: &'static str = "my_tool";
/// #     const DESCRIPTION: &'static str = "Does one thing.";
/// #     fn call(_: Self::Args, _: &Context) -> Result<Output, ToolError> {
/// #         Ok(Output::text("done"))
/// #     }
/// # }
/// toolhost_sdk::export_tool!(MyTool);
/// ```
#[macro_export]
macro_rules! export_tool {
    ($tool:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct ToolhostExport;

            impl $crate::__private::Guest for ToolhostExport {
                fn describe() -> $crate::__private::ToolInfo {
                    $crate::__private::describe::<$tool>(env!("CARGO_PKG_VERSION"))
                }

                fn call(
                    args: $crate::__private::String,
                    ctx: $crate::__private::CallContext,
                ) -> ::core::result::Result<
                    $crate::__private::ToolOutput,
                    $crate::__private::WitToolError,
                > {
                    $crate::__private::call::<$tool>(args, ctx)
                }
            }

            impl $crate::__private::EnvGuest for ToolhostExport {
                fn variables() -> ::std::vec::Vec<$crate::__private::String> {
                    $crate::__private::variables::<$tool>()
                }
            }

            $crate::__private::bindings::__toolhost_export!(
                ToolhostExport with_types_in $crate::__private::bindings
            );
        };
    };
}

/// Refuse the call as [`ToolError::InvalidInput`] unless `condition`
/// holds: the rest is the message, as `format!` takes it (say what is
/// wrong and what to give instead); without one, the condition's text.
/// The error converts into the function's (`?`'s `From`).
///
/// ```
/// use toolhost_sdk::{ToolError, ensure};
///
/// fn columns(header: &[&str], row: &[&str]) -> Result<usize, ToolError> {
///     let (n, of) = (row.len(), header.len());
///     ensure!(n == of, "the row has {n} fields; the header has {of}");
///     Ok(n)
/// }
/// assert_eq!(columns(&["a"], &["1"]), Ok(1));
/// let e = columns(&["a", "b"], &["1"]).unwrap_err();
/// assert_eq!(e, ToolError::invalid_input("the row has 1 fields; the header has 2"));
///
/// fn positive(n: i64) -> Result<i64, ToolError> {
///     ensure!(n > 0);
///     Ok(n)
/// }
/// assert_eq!(positive(0), Err(ToolError::invalid_input("not so: n > 0")));
/// ```
#[macro_export]
macro_rules! ensure {
    ($condition:expr $(,)?) => {
        $crate::ensure!($condition, "not so: {}", ::core::stringify!($condition))
    };
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return ::core::result::Result::Err(::core::convert::From::from(
                $crate::ToolError::invalid_input(::std::format!($($message)+)),
            ));
        }
    };
}
