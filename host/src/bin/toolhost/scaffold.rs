//! `toolhost new`: a tool project that builds, tests, checks and runs as it
//! is, for the author to change.

use anyhow::Context as _;
use std::path::{Path, PathBuf};

use crate::cli::UsageError;

/// The languages a project can be made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A Rust crate on toolhost-sdk, built with cargo for wasm32-wasip2.
    Rust,
}

/// Where the SDK this toolhost was built from lies, if it is still there.
fn own_sdk() -> Option<PathBuf> {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk");
    sdk.join("Cargo.toml")
        .is_file()
        .then(|| sdk.canonicalize().ok())
        .flatten()
}

/// Write the project for tool `name` into `dir` (default `./name`);
/// returns what to tell the author.
pub fn new_project(
    name: &str,
    lang: Lang,
    dir: Option<&Path>,
    sdk: Option<&Path>,
) -> anyhow::Result<String> {
    if !toolhost::is_snake_case(name) {
        return Err(UsageError(format!(
            "`{name}` cannot name a tool: use lowercase letters, digits and `_`, starting with a letter (at most 64 characters), e.g. `{}`",
            toolhost::snake_case_suggestion(name)
        ))
        .into());
    }
    let dir = dir.map_or_else(|| PathBuf::from(name), Path::to_owned);
    if dir.exists() && dir.read_dir().map_or(true, |mut d| d.next().is_some()) {
        return Err(UsageError(format!(
            "{} already exists and is not empty; choose another --dir",
            dir.display()
        ))
        .into());
    }
    let mut lock = None;
    let sdk_dependency = match sdk.map(Path::to_owned).or_else(own_sdk) {
        Some(path) => {
            let path = path.canonicalize().map_err(|e| {
                UsageError(format!(
                    "--sdk {}: {e}; give toolhost's `sdk` directory",
                    path.display()
                ))
            })?;
            if !path.join("Cargo.toml").is_file() {
                return Err(UsageError(format!(
                    "--sdk {}: no Cargo.toml there; give toolhost's `sdk` directory",
                    path.display()
                ))
                .into());
            }
            // The versions the SDK was tested with, trimmed by the first build.
            lock = path
                .parent()
                .map(|p| p.join("Cargo.lock"))
                .filter(|l| l.is_file());
            format!(
                "toolhost-sdk = {{ path = {:?} }}",
                path.display().to_string()
            )
        }
        None => format!("toolhost-sdk = \"{}\"", env!("CARGO_PKG_VERSION")),
    };
    let Lang::Rust = lang;
    let type_name = type_name(name);
    let fill = |template: &str| {
        template
            .replace("{name}", name)
            .replace("{Type}", &type_name)
            .replace("{sdk_dependency}", &sdk_dependency)
    };
    for sub in ["src", "tests"] {
        std::fs::create_dir_all(dir.join(sub))
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    for (file, template) in [
        ("Cargo.toml", RUST_CARGO),
        ("src/lib.rs", RUST_LIB),
        ("README.md", RUST_README),
        ("tests/cases.json", CASES),
        (".gitignore", "/target\n"),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, fill(template))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(lock) = lock {
        std::fs::copy(&lock, dir.join("Cargo.lock"))
            .with_context(|| format!("cannot copy {}", lock.display()))?;
    }
    Ok(format!(
        "created {dir}: the tool `{name}` in Rust.\n\
         build:  cd {dir} && cargo build --release --target wasm32-wasip2\n\
         test:   cargo test; then, built: toolhost check target/wasm32-wasip2/release/{name}.wasm\n        \
         and toolhost test target/wasm32-wasip2/release/{name}.wasm tests/cases.json\n\
         run:    toolhost --plugin-dir target/wasm32-wasip2/release --grant {name}=workspace:read call {name} '{{\"path\":\"README.md\"}}'\n",
        dir = dir.display()
    ))
}

/// `count_words` → `CountWords`.
fn type_name(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

const RUST_CARGO: &str = r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# cdylib: the component toolhost loads; rlib: the native tests.
crate-type = ["cdylib", "rlib"]

[dependencies]
{sdk_dependency}

# A workspace of its own, wherever the project lies.
[workspace]

[profile.release]
opt-level = "s"
lto = true
strip = true
"#;

const RUST_LIB: &str = r#"//! `{name}`: counts the lines, words and characters of a text file in the
//! workspace. Change `Args`, `Counts`, the description and `call` to make
//! it your tool.

use toolhost_sdk::schemars::JsonSchema;
use toolhost_sdk::serde::{Deserialize, Serialize};
use toolhost_sdk::{Capability, Context, Output, Tool, ToolError, Value, export_tool, fs};

/// Arguments of `{name}`: the model sees these doc comments.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "toolhost_sdk::serde", deny_unknown_fields)]
#[schemars(crate = "toolhost_sdk::schemars")]
pub struct Args {
    /// Workspace-relative path of the text file.
    pub path: String,
}

/// What `{name}` returns as its structured result.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
#[serde(crate = "toolhost_sdk::serde")]
#[schemars(crate = "toolhost_sdk::schemars")]
pub struct Counts {
    /// Lines in the file.
    pub lines: usize,
    /// Words: runs of characters between whitespace.
    pub words: usize,
    /// Characters (Unicode scalar values).
    pub chars: usize,
}

/// The tool.
pub struct {Type};

impl Tool for {Type} {
    type Args = Args;
    const NAME: &'static str = "{name}";
    const DESCRIPTION: &'static str =
        "Count the lines, words and characters of a UTF-8 text file in the workspace.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::WorkspaceRead]
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_sdk::json_schema::<Counts>())
    }

    fn call(args: Args, ctx: &Context) -> Result<Output, ToolError> {
        let path = fs::resolve(&args.path, ctx)?;
        let text = String::from_utf8(fs::read_regular(&path)?).map_err(|_| {
            ToolError::invalid_input(format!("`{}` is not UTF-8 text", path.shown()))
        })?;
        let counts = Counts {
            lines: text.lines().count(),
            words: text.split_whitespace().count(),
            chars: text.chars().count(),
        };
        let summary = format!(
            "{}: {} lines, {} words, {} characters",
            path.shown(),
            counts.lines,
            counts.words,
            counts.chars
        );
        Ok(Output::text(summary).with_structured(counts))
    }
}

export_tool!({Type});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_file_and_refuses_paths_outside_the_workspace() {
        let dir = std::env::temp_dir().join(format!("{name}-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "one two\nthree é\n").unwrap();
        let ctx = Context::for_workspace(dir.display().to_string());

        let out = {Type}::call(Args { path: "a.txt".into() }, &ctx).unwrap();
        assert_eq!(out.content(), "a.txt: 2 lines, 4 words, 16 characters");
        assert_eq!(out.structured().unwrap()["words"], 4);

        let outside = {Type}::call(Args { path: "../x".into() }, &ctx);
        assert!(matches!(outside, Err(ToolError::Denied(_))));
        let missing = {Type}::call(Args { path: "nope.txt".into() }, &ctx);
        assert!(matches!(missing, Err(ToolError::Retry(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
"#;

const CASES: &str = r#"[
  {
    "name": "counts the lines, words and characters of a file",
    "args": {"path": "notes.txt"},
    "grant": "workspace:read",
    "files": {"notes.txt": "one two\nthree\n"},
    "expect": {
      "success": true,
      "content": "notes.txt: 2 lines, 3 words, 14 characters",
      "structured": {"lines": 2, "words": 3, "chars": 14}
    }
  },
  {
    "name": "a missing file is one to look for again",
    "args": {"path": "nope.txt"},
    "grant": "workspace:read",
    "expect": {"error_kind": "retry"}
  },
  {
    "name": "without a grant it reaches nothing",
    "args": {"path": "notes.txt"},
    "files": {"notes.txt": "x"},
    "expect": {"error_kind": "denied"}
  },
  {
    "name": "a misspelt argument is refused",
    "args": {"pth": "notes.txt"},
    "grant": "workspace:read",
    "expect": {"error_kind": "invalid_input"}
  }
]
"#;

const RUST_README: &str = r#"# {name}

A toolhost tool: counts the lines, words and
characters of a text file in the workspace. It is a WebAssembly component
(wasm32-wasip2) built on `toolhost-sdk`.

## Build

```sh
rustup target add wasm32-wasip2     # once
cargo build --release --target wasm32-wasip2
```

The component is `target/wasm32-wasip2/release/{name}.wasm`.

## Test

```sh
cargo test                                              # the tool's logic, natively
toolhost check target/wasm32-wasip2/release/{name}.wasm # every problem, each with its fix
toolhost test target/wasm32-wasip2/release/{name}.wasm tests/cases.json
```

`toolhost test` runs each case of `tests/cases.json` through the real host:
a fresh workspace with the case's `files`, the case's `grant`, the call,
and the result compared with `expect` (`success`, `content`,
`content_contains`, `structured` members, `error_kind`, `files`).

## Run

A tool gets nothing until a person grants it what it asks for:

```sh
toolhost --plugin-dir target/wasm32-wasip2/release --grant {name}=workspace:read \
  call {name} '{"path":"README.md"}'
```

Over MCP: `toolhost serve --plugin-dir target/wasm32-wasip2/release
--grant {name}=workspace:read`.

## Make it yours

`src/lib.rs` holds everything: `Args` (the input schema is derived from
it, doc comments included), `Counts` (the output schema), the description
the model reads, the capabilities it asks for, and `call`. Return
`ToolError::invalid_input`, `retry`, `denied` or `failed(..).with_hint(..)`
so the model knows what to do next.
"#;
