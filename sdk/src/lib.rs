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
//! The modules hold what several plugins share:
//!
//! - [`fs`]: model-given paths ([`fs::resolve`], [`fs::WorkspacePath`]),
//!   `std::io::Error`s in the model's terms, a directory walk, regular-file
//!   reads ([`fs::read_up_to`]: one host call), atomic writes through the
//!   host ([`fs::write_atomic`]), and the `allow_delete` check
//!   ([`fs::deletion_allowed`]).
//! - [`text`]: the content hash read tools report and edit tools check,
//!   binary detection, and [`text::TextFile`], which keeps a file's BOM and
//!   line endings through an edit.
//! - [`edit`]: exact replacement with failures a model can act on (the
//!   closest region and what differs), and unified diffs.
//! - [`parallel`]: fan a call's work out over the host's cores
//!   ([`parallel::run_shares`], [`parallel::fan_out`]).
//! - `search` (feature `search`): scopes, globs, literal and regex search on
//!   ripgrep's crates, fanned out, with "0 matches" explanations.
//! - [`log`]: log lines forwarded to the host.
//! - [`dynamic`]: the dynamic-tool store's record format and argv templates.
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

pub mod capability;
pub mod commands;
mod context;
pub mod contract;
pub mod dynamic;
pub mod edit;
pub mod fs;
pub mod log;
#[cfg(feature = "memory")]
pub mod memory;
mod output;
pub mod parallel;
mod schema;
#[cfg(feature = "search")]
pub mod search;
pub mod text;

#[doc(hidden)]
pub mod __private;

pub use capability::Capability;
pub use context::Context;
pub use output::{Output, Stop, ToolError};
pub use schema::json_schema;
pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize, Serialize};
pub use serde_json::{self, Value, json};

/// A tool: a name, a description for the model, typed arguments and a `call`.
///
/// Only `Args`, `NAME`, `DESCRIPTION` and [`Tool::call`] are required; the rest
/// have defaults: not sensitive, no capabilities, no output schema.
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
/// ```ignore
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

            $crate::__private::bindings::__toolhost_export!(
                ToolhostExport with_types_in $crate::__private::bindings
            );
        };
    };
}
