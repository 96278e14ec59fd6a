//! What the toolhost host and its plugins must agree on, in one place both
//! compile against: the names and limits of the host–plugin contract
//! ([`contract`]), capabilities and grant items ([`Capability`],
//! [`grant::GrantItem`]), the dynamic-tool store's record format
//! ([`dynamic`]), the content hash and binary sniffing ([`text`]), the
//! one-pass file scan behind `files.scan` ([`scan`]), portable JSON Schemas
//! ([`schema`]), the markers around untrusted text ([`untrusted`]) and the
//! directory walk behind `files.walk` (`walk`, feature `walk`).
//!
//! Plugin authors use `toolhost-sdk`, which re-exports what they need from
//! here; nothing in this crate talks to the host.

pub mod contract;
#[cfg(feature = "credentials")]
pub mod credentials;
pub mod dynamic;
pub mod grant;
pub mod scan;
pub mod schema;
pub mod text;
pub mod untrusted;
#[cfg(feature = "walk")]
pub mod walk;

pub use grant::Capability;

/// `argv` shown as one shell-like line, each item quoted when a shell would
/// need it (for display; nothing runs it).
///
/// ```
/// let argv = ["echo", "--", "\"; rm -rf ~", "it's"].map(String::from);
/// assert_eq!(toolhost_shared::shell_words(&argv), r#"echo -- '"; rm -rf ~' 'it'\''s'"#);
/// ```
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
