//! Every host implementation of an interface the guests import, one file
//! per interface, all served on the one per-call state
//! ([`crate::runtime::sandbox::CallState`]):
//!
//! - [`commands`]: the broker's front (run, background commands);
//! - [`files`]: atomic replace, whole-file read, line scan, tree walk;
//! - [`filesystem`]: `wasi:filesystem/types` with secrets hidden and
//!   protected paths kept read-only (guard.rs judges);
//! - [`parallel`]: fan-out to fresh instances of the calling tool;
//! - [`poll`]: `wasi:io/poll` with every wait ended by the call's deadline
//!   or cancellation;
//! - [`dynamic`]: create_tool's component check;
//! - [`log`]: log lines to tracing;
//! - [`services`]: the embedder's services, bounded by the call's deadline;
//! - [`http`]: WASI (filesystem, clocks...) and wasi:http views, requests
//!   checked by [`crate::net`].
//!
//! The work behind each lives below this layer (broker, dirs, net,
//! runtime); these files only translate between WIT and it.

pub(crate) mod commands;
pub(crate) mod dynamic;
pub(crate) mod files;
pub(crate) mod filesystem;
pub(crate) mod http;
pub(crate) mod log;
pub(crate) mod parallel;
pub(crate) mod poll;
pub(crate) mod services;

use crate::bindings::types;
use crate::runtime::sandbox::CallState;

// The `types` interface defines types only; the linker still wants a host.
impl types::Host for CallState {}
