//! The defaults the built-ins' arguments share, for
//! `#[serde(default = "...")]` (schemars shows them in the schema too).
//!
//! ```
//! #[derive(serde::Deserialize)]
//! struct Args {
//!     #[serde(default = "toolhost_builtin::defaults::dot")]
//!     path: String,
//!     #[serde(default = "toolhost_builtin::defaults::count::<200>")]
//!     limit: usize,
//! }
//! let args: Args = serde_json::from_str("{}").unwrap();
//! assert_eq!((args.path.as_str(), args.limit), (".", 200));
//! ```

/// `"."`: the workspace itself.
pub fn dot() -> String {
    ".".to_owned()
}

/// `"*"`: every file.
pub fn star() -> String {
    "*".to_owned()
}

/// `true`.
pub fn yes() -> bool {
    true
}

/// `N`, for counts and limits.
pub fn count<const N: usize>() -> usize {
    N
}
