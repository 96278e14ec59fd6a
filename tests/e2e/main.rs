//! End-to-end tests of toolhost: the real plugins in the real sandbox,
//! through the library and through the `toolhost` binary.

#![expect(
    clippy::unwrap_used,
    reason = "helpers fail the test loudly on an unexpected value"
)]

mod agent;
mod agent_runs;
mod apply_patch;
mod assistant_tools;
mod author_messages;
mod bots;
mod cli;
mod cold_start;
mod command_sandbox;
mod commands;
mod compile_helper;
mod config;
mod conformance;
mod deadlines;
mod deploy;
mod dynamic;
mod embedding;
mod executor;
mod fan_out;
mod file_tools;
mod interop;
mod layers;
mod line_endings;
mod load_component;
mod logging;
mod made_ahead;
mod mcp;
mod mcp_2026;
mod mcp_http;
mod mcp_protocol;
mod oci_registry;
mod output_schema;
mod persistence;
mod pipeline;
mod plain_components;
mod read_file;
mod registries;
mod remote;
mod replicas;
mod review;
mod sandbox;
mod scaffold;
mod search_tools;
mod secrets;
mod sensitivity;
mod services;
mod soak;
mod special_files;
mod support;
mod web_fetch;
mod web_search;
mod workspaces;
