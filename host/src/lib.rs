//! toolhost: a WebAssembly plugin host for sandboxed agent tools.
//!
//! Every tool is a WebAssembly component implementing the `toolhost:plugin`
//! WIT world. The flow of one call:
//!
//! - [`Executor`] (executor.rs) is the pipeline every front end uses (CLI,
//!   MCP, library): lookup in the [`Registry`] through the active profile,
//!   arguments checked against the tool's JSON Schema, confirmation per
//!   [`Mode`], dry run, sandboxed run, post-edit hooks, logging and the
//!   audit record, and a [`ToolResult`] that is never a panic or an `Err`.
//! - [`Registry`] (registry.rs) maps names to loaded [`Plugin`]s: the built-in
//!   tools embedded in the binary and `.wasm` files from plugin directories.
//! - [`Runtime`] (runtime.rs) owns the one wasmtime engine (pooling allocator,
//!   epoch ticker), the linker and the compile cache (cache.rs); a plugin is
//!   compiled once and loaded from the cache afterwards.
//! - The sandbox (sandbox.rs) builds a fresh store per call from the tool's
//!   effective [`grant`] (its declared capabilities ∩ its configured
//!   [`Grant`]), with memory, time and host-call limits, and classifies every
//!   failure.
//! - The broker (broker.rs) serves the plugin's `commands` imports; files.rs
//!   serves `files` (atomic replace inside the granted directories).
//! - [`schema`] renders tool schemas for OpenAI, Anthropic and MCP.
//! - [`config`] reads `toolhost.toml` and builds the executor it describes;
//!   `mcp` (feature `mcp`) serves the executor's tools over MCP.

pub mod audit;
mod bindings;
pub mod broker;
mod cache;
pub mod config;
pub mod dynamic;
mod executor;
mod files;
pub mod grant;
pub mod hooks;
#[cfg(feature = "mcp")]
pub mod mcp;
mod names;
mod net;
mod parallel;
mod plugin;
mod registry;
mod result;
mod runtime;
pub mod sandbox;
pub mod schema;
mod tool_info;
mod validate;

pub use audit::AuditLog;
pub use broker::{Broker, CommandConfig};
pub use executor::{
    CallOptions, ConfirmRequest, Confirmer, Decision, Executor, Mode, NoConfirmer, Profile,
};
pub use grant::Grant;
pub use names::ParseError;
pub use plugin::{Builtin, Origin, Plugin, PluginSource};
pub use registry::{LoadProblem, Registry, RegistryError, builtins};
pub use result::{CallError, ErrorKind, ToolResult};
pub use runtime::{CacheDir, Limits, Runtime, RuntimeConfig, RuntimeError};
pub use sandbox::{CallContext, CallId, CancelToken};
pub use tool_info::{Capability, InfoError, ToolInfo, is_snake_case};
