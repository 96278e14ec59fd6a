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
    ("guard", 1),
    ("services", 1),
    ("validate", 1),
    ("net", 1),
    // the wasm runtime and the per-call sandbox
    ("runtime", 2),
    // every host implementation of a guest import
    ("imports", 3),
    // loaded plugins, remote MCP servers' tools, schema shapes, guidance
    ("plugin", 4),
    ("plain", 4),
    ("remote", 4),
    ("guidance", 4),
    ("schema", 4),
    // the registry and the user's trust store
    ("registry", 5),
    ("trust", 5),
    ("secrets", 5),
    ("oci", 5),
    // tools agents create
    ("dynamic", 6),
    // the call pipeline
    ("executor", 7),
    // front ends
    ("config", 8),
    ("harness", 8),
    ("agent", 8),
    ("bots", 8),
    ("mcp", 9),
    ("review", 9),
    ("access", 9),
    // what the fuzz targets check, over every input path above
    ("fuzz", 10),
];

/// `text` with comments, string and char literals blanked out (newlines
/// kept, so offsets keep their line numbers).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        if c[i] == '/' && peek(&c, i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && peek(&c, i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && peek(&c, i + 1) == '*' {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && peek(&c, i + 1) == '/' {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (peek(&c, i + 1) == '"' || peek(&c, i + 1) == '#')
            && !ident(c.get(i.wrapping_sub(1)))
        {
            // A raw string: r"...", r#"..."#.
            let mut hashes = 0;
            let mut k = i + 1;
            while c.get(k) == Some(&'#') {
                hashes += 1;
                k += 1;
            }
            if c.get(k) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            out.extend(std::iter::repeat_n(' ', k + 1 - i));
            i = k + 1;
            while i < c.len() && !c[i..].starts_with(&close) {
                out.push(blank(c[i]));
                i += 1;
            }
            out.extend(std::iter::repeat_n(' ', close.len()));
            i += close.len();
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                let skip = if c[i] == '\\' { 2 } else { 1 };
                for _ in 0..skip {
                    if let Some(&ch) = c.get(i) {
                        out.push(blank(ch));
                    }
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' && (peek(&c, i + 1) == '\\' || peek(&c, i + 2) == '\'') {
            // A char literal ('x', '\n', '\''); a lifetime has no closing quote.
            let end = if peek(&c, i + 1) == '\\' {
                (i + 2..c.len())
                    .find(|&k| c[k] == '\'')
                    .unwrap_or(c.len() - 1)
            } else {
                i + 2
            };
            out.extend(std::iter::repeat_n(' ', end + 1 - i));
            i = end + 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn peek(c: &[char], at: usize) -> char {
    c.get(at).copied().unwrap_or('\0')
}

fn ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// The identifier at the start of `s`.
fn leading_ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of every item of a `{...}` group starting at
/// `s` (after the brace), at any line: `{a::B, c::{d, e}}` gives a and c.
fn group_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (at, ch) in s.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && !c.is_whitespace() => {
                item_start = false;
                heads.push(leading_ident(&s[at..]).to_owned());
            }
            _ => {}
        }
    }
    heads
}

/// Every top-level module a source text names outside comments and
/// strings, with its line: through `crate::NAME`, `use crate::{A, B::c}`
/// (over several lines too), or enough `super::` to reach the crate root
/// from `depth` (the file's module depth: 1 for `types.rs`, 2 for
/// `types/grant.rs`). `crate as ALIAS` is reported as `crate as`.
fn crate_paths(text: &str, depth: usize) -> Vec<(usize, String)> {
    let code = code_only(text);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate") {
        if ident(code[..at].chars().next_back().as_ref()) {
            continue;
        }
        let after = code[at + "crate".len()..].trim_start();
        if let Some(path) = after.strip_prefix("::") {
            let path = path.trim_start();
            match path.strip_prefix('{') {
                Some(group) => {
                    found.extend(group_heads(group).into_iter().map(|h| (line_of(at), h)))
                }
                None => found.push((line_of(at), leading_ident(path).to_owned())),
            }
        } else if after.starts_with("as ") {
            found.push((line_of(at), "crate as".to_owned()));
        }
    }
    for (at, _) in code.match_indices("super::") {
        if ident(code[..at].chars().next_back().as_ref()) || code[..at].ends_with("super::") {
            continue;
        }
        let mut rest = &code[at..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r.trim_start();
        }
        if ups >= depth {
            let name = leading_ident(rest);
            if !name.is_empty() {
                found.push((line_of(at), format!("super:{name}")));
            }
        }
    }
    found.sort();
    found
}

/// Problems with one file of module `module`: paths to modules above its
/// layer, or to names the table does not list.
fn check_file(
    module: &str,
    depth: usize,
    file: &str,
    text: &str,
    layers: &BTreeMap<&str, u8>,
) -> Vec<String> {
    let Some(&own) = layers.get(module) else {
        return vec![format!("{file}: module `{module}` has no layer in LAYERS")];
    };
    let mut problems = Vec::new();
    for (line, name) in crate_paths(text, depth) {
        if name == "crate as" {
            problems.push(format!(
                "{file}:{line}: an alias of `crate` hides paths from this check; name the module"
            ));
            continue;
        }
        // Reaching the root through `super::` counts like `crate::`, but a
        // name that is not a top-level module is the file's own (a test
        // module's `super::`).
        let name = match name.strip_prefix("super:") {
            Some(n) if layers.contains_key(n) => n.to_owned(),
            Some(_) => continue,
            None => name,
        };
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
        let depth = rel.components().count();
        let text = std::fs::read_to_string(&path).expect("read source");
        problems.extend(check_file(
            module,
            depth,
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
            let l = ["pub(crate) ", "pub "]
                .iter()
                .find_map(|v| l.strip_prefix(v))
                .unwrap_or(l);
            l.strip_prefix("mod ")?.strip_suffix(';')
        })
        .collect();
    declared.sort_unstable();
    let mut table: Vec<&str> = LAYERS.iter().map(|(m, _)| *m).collect();
    table.sort_unstable();
    assert_eq!(declared, table, "lib.rs modules and the layer table differ");
}

// The checker itself: upward paths in every form it reads, and what it must
// not count (comments, strings, a test module's `super::`).
#[test]
fn the_checker_finds_upward_and_unknown_paths() {
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let text = r##"use crate::types::grant::Grant;
use crate::{executor::Executor, bindings};
// crate::mcp in a comment does not count
let x = crate::Executor::new();
let y = mycrate::mcp::thing();
use crate::{
    types::{a, b},
    config::Config,
};
let s = "crate::mcp in a string"; let r = r#"crate::mcp"#; let q = '"'; /* crate::mcp */
use super::super::dynamic::Store;
mod tests { use super::*; use super::helper; }
use crate as root;
"##;
    let problems = check_file("broker", 2, "broker/x.rs", text, &layers);
    let lines: Vec<&str> = problems
        .iter()
        .map(|p| p.split(": ").next().unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            "broker/x.rs:2",  // executor, in a group
            "broker/x.rs:4",  // a root re-export, not a module
            "broker/x.rs:6",  // config, in a group over several lines
            "broker/x.rs:11", // dynamic, through super::super
            "broker/x.rs:13", // an alias of crate
        ],
        "{problems:#?}"
    );
    assert!(problems[0].contains("crate::executor"), "{problems:#?}");
    assert!(problems[2].contains("crate::config"), "{problems:#?}");
    assert!(problems[3].contains("crate::dynamic"), "{problems:#?}");
    assert!(check_file("nowhere", 1, "nowhere.rs", "", &layers)[0].contains("no layer"));
}

/// Each occurrence of the keyword `unsafe` in the code of `text` (not in
/// comments, strings or a longer name such as `unsafe_code`), by line.
fn unsafe_lines(text: &str) -> Vec<usize> {
    let code = code_only(text);
    code.match_indices("unsafe")
        .filter(|(at, w)| {
            !ident(code[..*at].chars().next_back().as_ref())
                && !ident(code[at + w.len()..].chars().next().as_ref())
        })
        .map(|(at, _)| code[..at].matches('\n').count() + 1)
        .collect()
}

fn crate_sources(rel: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    sources(&root.join(rel), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read source");
            let shown = p.strip_prefix(&root).unwrap_or(&p).display().to_string();
            (shown, text)
        })
        .collect()
}

/// The command policy and the OS sandbox are crates of their own below the
/// host (crates/policy, crates/confine): the host reaches them only from
/// its `broker` module, and neither depends on the host.
#[test]
fn the_sandbox_crates_are_reached_only_through_the_broker() {
    let mut problems = Vec::new();
    for (file, text) in crate_sources("host/src") {
        let code = code_only(&text);
        for name in ["toolhost_policy", "toolhost_confine"] {
            if code.contains(name) && !file.starts_with("host/src/broker") {
                problems.push(format!("{file} uses {name}; go through crate::broker"));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["crates/policy", "crates/confine"] {
        let manifest = std::fs::read_to_string(root.join(krate).join("Cargo.toml")).unwrap();
        let deps = manifest.split("[dependencies]").nth(1).unwrap_or("");
        if deps.lines().any(|l| l.trim_start().starts_with("toolhost")) {
            problems.push(format!("{krate}/Cargo.toml depends on a toolhost crate"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The policy is pure: no file system, process, network, thread or
/// `unsafe` anywhere in it (its one look at the host is `$HOME`, the home
/// directory `rm -rf` must never reach; brush-parser reads the line through
/// an in-memory `std::io::BufReader`), so it can be reviewed, fuzzed and
/// tested on data alone.
#[test]
fn the_policy_crate_does_no_io() {
    let sources = crate_sources("crates/policy/src");
    assert!(sources.len() > 5, "{sources:?}");
    let mut problems = Vec::new();
    for (file, text) in sources {
        let code = code_only(&text);
        for io in [
            "std::fs",
            "std::process",
            "std::net",
            "std::os",
            "std::thread",
            "std::io::std",
            "std::env::set",
        ] {
            if code.contains(io) {
                problems.push(format!("{file} uses {io}"));
            }
        }
        for line in unsafe_lines(&text) {
            problems.push(format!("{file}:{line}: unsafe"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// All the `unsafe` of the command sandbox is in crates/confine, each
/// block or function with a `SAFETY:` comment just above it; the host
/// keeps two, each inside a small safe function (`allocator`, behind
/// `release_freed_memory`, `give_freed_memory_back` and `reclaim`, and
/// the compile cache's `deserialize`).
#[test]
fn unsafe_lives_in_the_confine_crate_with_its_reasons() {
    let mut problems = Vec::new();
    let mut in_confine = 0;
    for (file, text) in crate_sources("crates/confine/src") {
        let lines: Vec<&str> = text.lines().collect();
        for line in unsafe_lines(&text) {
            in_confine += 1;
            // The comment sits in the lines just above (attributes and
            // the start of a statement may stand between).
            let from = line.saturating_sub(12);
            let said = lines[from..line].iter().any(|l| l.contains("SAFETY"));
            if !said {
                problems.push(format!(
                    "{file}:{line}: unsafe without a SAFETY comment above it"
                ));
            }
        }
    }
    assert!(
        in_confine > 20,
        "only {in_confine} unsafe found in crates/confine"
    );
    let mut in_host = Vec::new();
    for (file, text) in crate_sources("host/src") {
        in_host.extend(
            unsafe_lines(&text)
                .into_iter()
                .map(|l| format!("{file}:{l}")),
        );
    }
    let allowed = ["host/src/runtime.rs", "host/src/runtime/cache.rs"];
    for at in &in_host {
        if !allowed.iter().any(|a| at.starts_with(&format!("{a}:"))) {
            problems.push(format!("{at}: unsafe in the host outside its two wrappers"));
        }
    }
    assert!(
        in_host.len() <= 2,
        "the host holds {} unsafe: {in_host:?}",
        in_host.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_unsafe_counter_reads_only_code() {
    let text = "#[expect(unsafe_code)]\n// unsafe here\nlet s = \"unsafe\";\nunsafe { f() }\nunsafe fn g() {}\n";
    assert_eq!(unsafe_lines(text), [4, 5]);
}

/// The lines of `code` (from [`code_only`]) inside `#[cfg(test)]`
/// modules written inline, by 0-based line index.
fn test_module_lines(code: &str) -> std::collections::HashSet<usize> {
    let mut lines = std::collections::HashSet::new();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let rest = &code[at..];
        let Some(open) = rest.find('{') else { continue };
        let head = &rest[..open];
        if !head.contains("mod ") || head.contains(';') {
            continue;
        }
        if let Some(end) = matching_brace(code, at + open) {
            let first = code[..at].matches('\n').count();
            let last = code[..end].matches('\n').count();
            lines.extend(first..=last);
        }
    }
    lines
}

/// The offset of the `}` that closes the `{` at `open`.
fn matching_brace(code: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Each function with a body in `code`: its name, first line (1-based)
/// and length in lines.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        let before = code[..at].chars().next_back();
        if ident(before.as_ref()) {
            continue;
        }
        let name = leading_ident(&code[at + 3..]);
        if name.is_empty() {
            continue;
        }
        let rest = &code[at..];
        let (Some(open), semi) = (rest.find('{'), rest.find(';')) else {
            continue;
        };
        if semi.is_some_and(|s| s < open) {
            continue; // a declaration without a body
        }
        if let Some(end) = matching_brace(code, at + open) {
            let first = code[..at].matches('\n').count() + 1;
            let last = code[..end].matches('\n').count() + 1;
            found.push((name.to_owned(), first, last - first + 1));
        }
    }
    found
}

/// Sizes a maintainer can hold in their head: no source file over 600
/// lines of non-test code, no plugin lib.rs over 300, no function over
/// 100 lines. Test files and inline test modules do not count.
#[test]
fn files_and_functions_stay_small() {
    let mut offenders = Vec::new();
    let mut checked = 0;
    for dir in [
        "host/src",
        "crates",
        "plugins",
        "runners",
        "sdk/rust",
        "sdk/shared",
        "sdk/builtin",
    ] {
        for (file, text) in crate_sources(dir) {
            let tests_file = file.ends_with("/tests.rs") || file.contains("/tests/");
            if tests_file || file.contains("/target/") {
                continue;
            }
            checked += 1;
            let code = code_only(&text);
            let in_tests = test_module_lines(&code);
            let lines = code.lines().count() - in_tests.len();
            let plugin_lib = file.starts_with("plugins/") && file.ends_with("/src/lib.rs");
            let most = if plugin_lib { 300 } else { 600 };
            if lines > most {
                offenders.push(format!("{file}: {lines} non-test lines (at most {most})"));
            }
            for (name, first, len) in functions(&code) {
                if len > 100 && !in_tests.contains(&(first - 1)) {
                    offenders.push(format!(
                        "{file}:{first}: fn {name} is {len} lines (at most 100)"
                    ));
                }
            }
        }
    }
    assert!(checked > 150, "only {checked} files were read");
    assert!(
        offenders.is_empty(),
        "split these:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_size_checker_sees_functions_and_test_modules() {
    let text = "fn a() {\n    let s = \"}\";\n}\ntrait T { fn b(&self); }\n#[cfg(test)]\nmod tests {\n    fn c() {}\n}\n";
    let code = code_only(text);
    let fns = functions(&code);
    assert_eq!(
        fns,
        [("a".to_owned(), 1, 3), ("c".to_owned(), 7, 1)],
        "{fns:?}"
    );
    let lines = test_module_lines(&code);
    assert_eq!(lines.len(), 4, "{lines:?}");
}

/// The services guests reach (the broker, the granted directories) and
/// their users above (hooks, remote servers) speak their own types; only
/// imports/ converts to and from the guest's generated WIT types.
#[test]
fn services_take_no_wit_types() {
    let mut problems = Vec::new();
    for (file, text) in crate_sources("host/src") {
        let service = file.starts_with("host/src/broker")
            || file == "host/src/dirs.rs"
            || file.starts_with("host/src/executor")
            || file.starts_with("host/src/remote");
        if service && code_only(&text).contains("bindings::") {
            problems.push(format!(
                "{file} uses the generated bindings; convert in imports/"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
