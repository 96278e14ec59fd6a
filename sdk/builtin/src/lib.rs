//! What toolhost's built-in tools share, kept out of the plugin authors'
//! SDK (`toolhost-sdk`): engines and formats only the built-ins use.
//!
//! - [`text`]: the content hash, binary detection, and [`text::TextFile`],
//!   which keeps a file's BOM and line endings through an edit.
//! - [`edit`]: exact replacement with failures a model can act on (the
//!   closest region and what differs), and unified diffs.
//! - `search` (feature `search`): scopes, globs, literal and regex search on
//!   ripgrep's crates, fanned out, with "0 matches" explanations.
//! - `memory` (feature `memory`): the memory tools' daily logs and BM25 search.
//! - `http` (feature `http`): one request over wasi:http, refusals in words.
//! - [`defaults`]: the defaults the built-ins' arguments share.
//! - [`cache`]: a time-limited cache of JSON values in a state directory.
//! - [`lock`]: one call at a time over a state directory.
//! - [`session`]: a file per session in a state directory.
//! - `persona` (feature `persona`): the persona directory (SOUL.md,
//!   IDENTITY.md, GOALS.md) of update_soul, update_identity, manage_goals.
//! - [`dynamic`]: the dynamic-tool store's record format, argv templates and
//!   the host's component check.
//! - [`contract`] and [`grant`]: the names, limits and grant spellings the
//!   host compiles against too (from `toolhost-shared`).

pub mod cache;
pub mod defaults;
pub mod dynamic;
pub mod edit;
#[cfg(feature = "http")]
pub mod http;
pub mod lock;
#[cfg(feature = "memory")]
pub mod memory;
#[cfg(feature = "persona")]
pub mod persona;
#[cfg(feature = "search")]
pub mod search;
pub mod session;
pub mod text;

pub use toolhost_shared::{contract, grant};
