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
    /// A JavaScript module on @toolhost/sdk, built with componentize-qjs.
    Javascript,
    /// A Python module on toolhost-sdk, built with componentize-py.
    Python,
}

impl Lang {
    /// The language's directory under toolhost's `sdk`, and a file that
    /// marks it.
    fn sdk_dir(self) -> (&'static str, &'static str) {
        match self {
            Self::Rust => ("rust", "Cargo.toml"),
            Self::Javascript => ("javascript", "package.json"),
            Self::Python => ("python", "pyproject.toml"),
        }
    }

    /// What the project's files are made from.
    fn templates(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Rust => &[
                ("Cargo.toml", include_str!("templates/rust/Cargo.toml")),
                ("src/lib.rs", include_str!("templates/rust/lib.rs.in")),
                ("README.md", include_str!("templates/rust/README.md")),
                ("tests/cases.json", CASES),
                (".gitignore", "/target\n"),
            ],
            Self::Javascript => &[
                (
                    "package.json",
                    include_str!("templates/javascript/package.json"),
                ),
                (".npmrc", include_str!("templates/javascript/npmrc")),
                ("{name}.js", include_str!("templates/javascript/tool.js")),
                (
                    "tests/tool.test.js",
                    include_str!("templates/javascript/tool.test.js"),
                ),
                ("README.md", include_str!("templates/javascript/README.md")),
                ("tests/cases.json", CASES),
                (".gitignore", "/node_modules\n/*.wasm\n"),
            ],
            Self::Python => &[
                ("{name}.py", include_str!("templates/python/tool.py")),
                ("requirements.txt", "{sdk_dependency}\n"),
                (
                    "test_{name}.py",
                    include_str!("templates/python/test_tool.py"),
                ),
                ("README.md", include_str!("templates/python/README.md")),
                ("tests/cases.json", CASES),
                (".gitignore", "/.venv\n/*.wasm\n__pycache__/\n"),
            ],
        }
    }

    /// How the project names the SDK: the directory `sdk` if there is one,
    /// else the package of this version on its registry (crates.io, npm,
    /// PyPI), any later patch release of it accepted.
    fn dependency(self, sdk: Option<&Path>) -> String {
        let version = env!("CARGO_PKG_VERSION");
        match (self, sdk) {
            (Self::Rust, Some(path)) => {
                format!(
                    "toolhost-sdk = {{ path = {:?} }}",
                    path.display().to_string()
                )
            }
            (Self::Rust, None) => format!("toolhost-sdk = \"{version}\""),
            (Self::Javascript, Some(path)) => format!("file:{}", path.display()),
            (Self::Javascript, None) => format!("^{version}"),
            (Self::Python, Some(path)) => path.display().to_string(),
            (Self::Python, None) => format!("toolhost-sdk~={version}"),
        }
    }

    /// What to tell the author once the project is written.
    fn next_steps(self, dir: &Path, name: &str) -> String {
        let dir = dir.display();
        let run = format!(
            "toolhost --plugin-dir {{plugins}} --grant {name}=workspace:read call {name} '{{\"path\":\"README.md\"}}'"
        );
        match self {
            Self::Rust => format!(
                "created {dir}: the tool `{name}` in Rust.\n\
                 build:  cd {dir} && cargo build --release --target wasm32-wasip2\n\
                 test:   cargo test --release; then, built: toolhost check target/wasm32-wasip2/release/{name}.wasm\n        \
                 and toolhost test target/wasm32-wasip2/release/{name}.wasm tests/cases.json\n\
                 run:    {}\n",
                run.replace("{plugins}", "target/wasm32-wasip2/release")
            ),
            Self::Javascript => format!(
                "created {dir}: the tool `{name}` in JavaScript.\n\
                 build:  cd {dir} && npm install && npm run build\n\
                 test:   toolhost check {name}.wasm && npm test\n\
                 run:    {}\n",
                run.replace("{plugins}", ".")
            ),
            Self::Python => format!(
                "created {dir}: the tool `{name}` in Python.\n\
                 build:  cd {dir} && python3 -m venv .venv && .venv/bin/pip install -r requirements.txt\n        \
                 and .venv/bin/toolhost-py build {name}.py\n\
                 test:   toolhost check {name}.wasm && .venv/bin/python -m unittest\n\
                 run:    {}\n",
                run.replace("{plugins}", ".")
            ),
        }
    }
}

/// The cases every new project's test runs through the real host.
const CASES: &str = include_str!("templates/cases.json");

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
    if let Some(why) = toolhost::builtin_name_taken(name) {
        return Err(UsageError(why).into());
    }
    let dir = dir.map_or_else(|| PathBuf::from(name), Path::to_owned);
    if dir.exists() && dir.read_dir().map_or(true, |mut d| d.next().is_some()) {
        return Err(UsageError(format!(
            "{} already exists and is not empty; choose another --dir",
            dir.display()
        ))
        .into());
    }
    let (sub, marker) = lang.sdk_dir();
    let language_sdk = match sdk {
        Some(path) => {
            let path = path.canonicalize().map_err(|e| {
                UsageError(format!(
                    "--sdk (or TOOLHOST_SDK) {}: {e}; give toolhost's `sdk` directory",
                    path.display()
                ))
            })?;
            if !path.join(sub).join(marker).is_file() {
                return Err(UsageError(format!(
                    "--sdk (or TOOLHOST_SDK) {}: no {sub}/{marker} there; give toolhost's `sdk` directory",
                    path.display()
                ))
                .into());
            }
            Some(path.join(sub))
        }
        None => None,
    };
    let sdk_dependency = lang.dependency(language_sdk.as_deref());
    let fill = |template: &str| {
        template
            .replace("{name}", name)
            .replace("{sdk_dependency}", &sdk_dependency)
    };
    for (file, template) in lang.templates() {
        let path = dir.join(fill(file));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, fill(template))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    // The versions the Rust SDK was tested with, trimmed by the first build.
    let lock = language_sdk
        .filter(|_| lang == Lang::Rust)
        .and_then(|rust| rust.ancestors().nth(2).map(|root| root.join("Cargo.lock")))
        .filter(|lock| lock.is_file());
    if let Some(lock) = lock {
        std::fs::copy(&lock, dir.join("Cargo.lock"))
            .with_context(|| format!("cannot copy {}", lock.display()))?;
    }
    Ok(lang.next_steps(&dir, name))
}
