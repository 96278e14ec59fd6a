//! The WIT doc comments a component carries, for its tools' descriptions.
//!
//! Compiling WIT into a component drops its comments; tools that keep them
//! store them in a `package-docs` custom section (a version byte, then
//! JSON, as wit-parser writes it for WIT packages and as Wassette's
//! `wit-docs-inject` adds it to a built component). Read here forgivingly:
//! a section that is missing or not understood gives no docs, never an
//! error.

use serde_json::Value;
use std::collections::HashMap;

/// The custom section's name.
const SECTION: &str = "package-docs";

/// The largest section read: docs are text, not data.
const MOST_BYTES: usize = 1 << 20;

/// Functions' doc comments: by (interface's short name, if any; function).
#[derive(Debug, Default)]
pub(crate) struct Docs {
    funcs: HashMap<(Option<String>, String), String>,
}

impl Docs {
    /// The docs of `component` (its bytes).
    pub(crate) fn of(component: &[u8]) -> Self {
        let mut docs = Self::default();
        for payload in wasmparser::Parser::new(0).parse_all(component) {
            let Ok(wasmparser::Payload::CustomSection(section)) = payload else {
                continue;
            };
            if section.name() == SECTION && section.data().len() <= MOST_BYTES {
                docs.read(section.data());
            }
        }
        docs
    }

    /// Add what a section's `data` holds.
    fn read(&mut self, data: &[u8]) {
        let Some((0 | 1, json)) = data.split_first() else {
            return;
        };
        let Ok(package) = serde_json::from_slice::<Value>(json) else {
            return;
        };
        for (interface, item) in entries(&package["interfaces"]) {
            self.interface(interface, item);
        }
        for (_, world) in entries(&package["worlds"]) {
            for key in ["funcs", "func_exports"] {
                for (name, func) in entries(&world[key]) {
                    self.add(None, name, func);
                }
            }
            for key in ["interfaces", "interface_exports"] {
                for (interface, item) in entries(&world[key]) {
                    self.interface(interface, item);
                }
            }
        }
    }

    fn interface(&mut self, interface: &str, item: &Value) {
        for (name, func) in entries(&item["funcs"]) {
            self.add(Some(interface), name, func);
        }
    }

    /// A function's docs: a string (the first format) or `{"docs": …}`.
    fn add(&mut self, interface: Option<&str>, name: &str, func: &Value) {
        let text = func.as_str().or_else(|| func["docs"].as_str());
        if let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) {
            self.funcs.insert(
                (interface.map(str::to_owned), name.to_owned()),
                text.to_owned(),
            );
        }
    }

    /// The docs of function `name`, exported by the component itself
    /// (`interface` `None`) or by the interface of that short name
    /// (`shelf` for `example:inventory/shelf@0.1.0`).
    pub(crate) fn function(&self, interface: Option<&str>, name: &str) -> Option<&str> {
        self.funcs
            .get(&(interface.map(str::to_owned), name.to_owned()))
            .map(String::as_str)
    }
}

fn entries(map: &Value) -> impl Iterator<Item = (&str, &Value)> {
    map.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_of_the_section_are_read_and_anything_else_ignored() {
        let mut docs = Docs::default();
        let v1 = serde_json::json!({
            "package": "example:inventory@0.1.0",
            "worlds": {"inventory": {"func_exports": {"greet": {"docs": " Say hello. "}}}},
            "interfaces": {"shelf": {"funcs": {"total": {"docs": "Count them."}, "bare": {}}}},
        });
        let mut data = vec![1];
        data.extend(v1.to_string().bytes());
        docs.read(&data);
        let v0 = serde_json::json!({"worlds": {"w": {"funcs": {"old": "From v0."}}}});
        let mut data = vec![0];
        data.extend(v0.to_string().bytes());
        docs.read(&data);
        docs.read(b"\x07{}");
        docs.read(b"\x01not json");
        docs.read(b"");
        assert_eq!(docs.function(None, "greet"), Some("Say hello."));
        assert_eq!(docs.function(Some("shelf"), "total"), Some("Count them."));
        assert_eq!(docs.function(None, "old"), Some("From v0."));
        assert_eq!(docs.function(Some("shelf"), "bare"), None);
        assert_eq!(docs.function(None, "total"), None);
    }
}
