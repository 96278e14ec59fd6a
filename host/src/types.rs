//! The value types every layer shares, with no behaviour beyond their own:
//! who calls ([`context`]), who decides ([`confirm`]), what a tool is and
//! needs ([`tool_info`]), what it is granted ([`grant`]), what a call gives
//! back ([`result`]), which paths are secret or protected ([`paths`]),
//! and parse errors for the names people type
//! ([`names`]). Nothing here depends on another module of the crate except
//! the generated WIT types.

pub mod confirm;
pub mod context;
pub mod grant;
pub mod names;
pub mod paths;
pub mod result;
pub mod sensitivity;
pub mod tool_info;
