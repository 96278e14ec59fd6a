//! toolhost: a WebAssembly plugin host for sandboxed agent tools.
//!
//! Every tool is a WebAssembly component implementing the `toolhost:plugin`
//! WIT world. The flow of one call:
//!
//! - [`Executor`] (executor/) is the pipeline every front end uses (CLI,
//!   MCP, library): lookup in the [`Registry`] through the active profile,
//!   arguments checked against the tool's JSON Schema, confirmation per
//!   [`Mode`] and the tool's [`Sensitivity`], dry run, sandboxed run,
//!   post-edit hooks, logging and the audit record, and a [`ToolResult`]
//!   that is never a panic or an `Err`.
//! - [`Registry`] maps names to loaded [`Plugin`]s: the built-in tools
//!   embedded in the binary and `.wasm` files from plugin directories.
//! - [`Runtime`] (runtime/) owns the one wasmtime engine (pooling allocator,
//!   epoch ticker), the linker and the compile cache; its [`sandbox`] builds
//!   a fresh store per call from the tool's effective [`grant`] (its
//!   declared capabilities ∩ its configured [`Grant`]), with memory, time
//!   and host-call limits, and classifies every failure.
//! - imports/ serves every interface a guest imports (commands, files,
//!   parallel, dynamic, log, wasi:http) over the services of layer 1: the
//!   [`broker`] for commands, cap-std files beneath the granted
//!   directories, the network policy.
//! - [`schema`] renders tool schemas for OpenAI, Anthropic and MCP.
//! - [`config`] reads `toolhost.toml` and builds the executor it describes;
//!   `mcp` (feature `mcp`) serves the executor's tools over MCP.

// The layers, bottom to top; a module uses only modules of its own layer or
// below (tests/e2e/layers.rs checks it). docs/ARCHITECTURE.md has the map.
//
// 0: value types shared by every layer, and the generated WIT bindings
mod bindings;
pub mod types;
// 1: the services guests reach through imports, with no wasm in them, and
// the JSON Schema checks of their inputs
pub mod broker;
mod dirs;
mod guard;
mod net;
pub mod services;
mod validate;
// 2: the wasm runtime and the per-call sandbox
pub mod runtime;
// 3: every host implementation of a guest import, over the sandbox's state
mod imports;
// 4: loaded plugins, remote MCP servers' tools, schema shapes, guidance
pub mod guidance;
mod plain;
mod plugin;
#[cfg(feature = "mcp")]
pub mod remote;
pub mod schema;
// 5: the registry and the user's trust store
#[cfg(feature = "oci")]
pub mod oci;
mod registry;
pub mod secrets;
mod trust;
// 6: tools agents create, stored and approved
pub mod dynamic;
// 7: the executor: the 8-step call pipeline (hooks and audit are its steps)
mod executor;
// 8-9: front ends: configuration, the test harness, the tool loop, MCP,
// the review page
// (the CLI is the binary)
#[cfg(feature = "mcp")]
pub mod access;
pub mod agent;
pub mod bots;
pub mod config;
#[doc(hidden)]
pub mod fuzz;
pub mod harness;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "mcp")]
pub mod review;

pub use executor::{audit, hooks};
pub use runtime::sandbox;
pub use types::grant;
pub use types::paths;

pub use broker::{Broker, BrokerError, CommandConfig};
pub use executor::audit::AuditLog;
pub use executor::{CallOptions, Executor, Profile, Serving, UnknownStateDir, Upkeep};
pub use plain::check_component;
pub use plugin::{Binding, Builtin, Origin, Plugin, PluginSource, RECORDED_BUILTINS, Recorded};
pub use registry::{
    LoadProblem, Registry, RegistryError, builtin_name_taken, builtins, check_builtin_name, runners,
};
pub use runtime::{
    CacheDir, CheckReport, CompileEvent, CompileProgress, Limits, Runtime, RuntimeConfig,
    RuntimeError,
};
pub use types::confirm::{ConfirmRequest, Confirmer, Decision, Mode, NoConfirmer};
pub use types::context::{CallContext, CallId, CancelToken, Progress, ProgressState};
pub use types::grant::Grant;
pub use types::names::ParseError;
pub use types::result::{CallError, ErrorKind, ToolResult};
pub use types::sensitivity::Sensitivity;
pub use types::tool_info::{
    Capability, InfoError, Problem, Severity, ToolInfo, is_snake_case, snake_case_suggestion,
};
