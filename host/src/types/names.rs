//! Parsing the names people type (modes, schema formats, capabilities), with
//! errors that list the valid choices.

/// A name that is not one of the choices.
///
/// ```
/// let err = "sometimes".parse::<toolhost::Mode>().unwrap_err();
/// assert_eq!(err.to_string(), "unknown mode `sometimes`; use yolo, confirm-sensitive or confirm-all");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}`; use {choices}")]
pub struct ParseError {
    /// What was being parsed (`mode`, `schema format`, `capability`).
    pub what: &'static str,
    /// What was given.
    pub value: String,
    /// The valid choices, for the message.
    pub choices: &'static str,
}

impl ParseError {
    pub(crate) fn new(what: &'static str, value: &str, choices: &'static str) -> Self {
        Self {
            what,
            value: value.to_owned(),
            choices,
        }
    }
}
