//! The host crate's layers point one way: every module of host/src uses
//! only modules of its own layer or below. This reads the `crate::` paths
//! of every source file against the table below, so a new upward import, a
//! new module without a layer, or a path through a root re-export fails here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each top-level module of host/src and its layer, bottom (0) to top. Keep
/// it in step with lib.rs and docs/ARCHITECTURE.md.
const LAYERS: &[(&str, u8)] = &[
    // value types every layer shares, and the generated WIT bindings
    ("bindings", 0),
    ("types", 0),
    // the services guests reach through imports, with no wasm in them
    ("broker", 1),
    ("dirs", 1),
    ("net", 1),
    // the wasm runtime and the per-call sandbox
    ("runtime", 2),
    // every host implementation of a guest import
    ("imports", 3),
    // loaded plugins, schema shapes, argument validation
    ("plugin", 4),
    ("schema", 4),
    ("validate", 4),
    // the registry and the user's trust store
    ("registry", 5),
    ("trust", 5),
    // tools agents create
    ("dynamic", 6),
    // the call pipeline
    ("executor", 7),
    // front ends
    ("config", 8),
    ("mcp", 9),
];

/// Every `crate::NAME` a source text uses outside comments, with its line;
/// `use crate::{a, b::c}` counts `a` and `b`.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let preceded = rest[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !preceded {
                if let Some(group) = after.strip_prefix('{') {
                    let inner = group.split('}').next().unwrap_or_default();
                    for item in inner.split(',') {
                        let name = item.trim().split("::").next().unwrap_or_default();
                        if !name.is_empty() {
                            found.push((n + 1, name.trim().to_owned()));
                        }
                    }
                } else {
                    let name: String = after
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    found.push((n + 1, name));
                }
            }
            rest = after;
        }
    }
    found
}

/// Problems with one file of module `module`: paths to modules above its
/// layer, or to names the table does not list.
fn check_file(module: &str, file: &str, text: &str, layers: &BTreeMap<&str, u8>) -> Vec<String> {
    let Some(&own) = layers.get(module) else {
        return vec![format!("{file}: module `{module}` has no layer in LAYERS")];
    };
    let mut problems = Vec::new();
    for (line, name) in crate_paths(text) {
        match layers.get(name.as_str()) {
            None => problems.push(format!(
                "{file}:{line}: `crate::{name}` is not a module of the layer table; use the path of the module that defines it"
            )),
            Some(&theirs) if theirs > own => problems.push(format!(
                "{file}:{line}: `{module}` (layer {own}) uses `crate::{name}` (layer {theirs}), which is above it"
            )),
            Some(_) => {}
        }
    }
    problems
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read host/src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_uses_only_its_own_layer_or_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut problems = Vec::new();
    let mut checked = 0;
    for path in files {
        let rel = path.strip_prefix(&src).expect("under src");
        let first = rel.components().next().expect("a component");
        let first = first.as_os_str().to_string_lossy();
        // The binary is a client of the library's public API; lib.rs is the root.
        if first == "bin" || first == "lib.rs" {
            continue;
        }
        let module = first.trim_end_matches(".rs");
        let text = std::fs::read_to_string(&path).expect("read source");
        problems.extend(check_file(
            module,
            &rel.display().to_string(),
            &text,
            &layers,
        ));
        checked += 1;
    }
    assert!(
        checked > 40,
        "only {checked} files were read from {}",
        src.display()
    );
    assert!(
        problems.is_empty(),
        "layering broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn lib_declares_exactly_the_modules_of_the_table() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("read lib.rs");
    let mut declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l.strip_prefix("mod ")?.strip_suffix(';')
        })
        .collect();
    declared.sort_unstable();
    let mut table: Vec<&str> = LAYERS.iter().map(|(m, _)| *m).collect();
    table.sort_unstable();
    assert_eq!(declared, table, "lib.rs modules and the layer table differ");
}

// The checker itself: an upward path, a grouped one, an unknown name and a
// path in a comment.
#[test]
fn the_checker_finds_upward_and_unknown_paths() {
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let text = "use crate::types::grant::Grant;\n\
                use crate::{executor::Executor, bindings};\n\
                // crate::mcp in a comment does not count\n\
                let x = crate::Executor::new();\n\
                let y = mycrate::mcp::thing();\n";
    let problems = check_file("broker", "broker.rs", text, &layers);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].contains("broker.rs:2") && problems[0].contains("crate::executor"));
    assert!(problems[1].contains("broker.rs:4") && problems[1].contains("not a module"));
    assert!(check_file("nowhere", "nowhere.rs", "", &layers)[0].contains("no layer"));
}
