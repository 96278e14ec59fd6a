//! The official Python MCP SDK (the `mcp` package from PyPI) against the
//! real `toolhost serve`, over stdio and streamable HTTP: tests/interop/
//! python_sdk.py lists the tools (no SDK warning, every schema valid draft
//! 2020-12), calls every built-in and validates its structuredContent
//! against its outputSchema, runs a command longer than its quiet limit
//! (only progress keeps it alive) and, over stdio, follows changed roots.
//!
//! .ci/run installs the SDK in a virtual environment and names its python
//! in `TOOLHOST_INTEROP_PYTHON`; then a missing SDK is a failure. Without
//! the variable, a `python3` that has the SDK is used, and the test is
//! skipped (saying so) when none does.

#![expect(
    clippy::print_stderr,
    reason = "a skipped run says so, and a passing one shows the script's summary"
)]

use crate::support::{cache_dir, warm_cache};
use std::path::Path;
use std::process::Command;

pub(crate) fn python() -> Option<String> {
    let (python, required) = match std::env::var("TOOLHOST_INTEROP_PYTHON") {
        Ok(python) => (python, true),
        Err(_) => ("python3".to_owned(), false),
    };
    let has_sdk = Command::new(&python)
        .args(["-c", "import mcp, jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_sdk || !required,
        "TOOLHOST_INTEROP_PYTHON={python} cannot import mcp and jsonschema; \
         install them with `{python} -m pip install mcp jsonschema`"
    );
    if !has_sdk {
        eprintln!(
            "skipped: no python3 with the `mcp` and `jsonschema` packages \
             (.ci/run installs them; or set TOOLHOST_INTEROP_PYTHON)"
        );
    }
    has_sdk.then_some(python)
}

fn run(transport: &str) {
    let Some(python) = python() else { return };
    // The script's servers use the shared compile cache, warm.
    warm_cache();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/python_sdk.py");
    let out = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .arg(transport)
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python SDK run over {transport} failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("tools checked"), "{stdout}\n{stderr}");
    eprintln!("{stdout}");
}

#[test]
fn the_official_python_sdk_over_stdio() {
    run("stdio");
}

#[test]
fn the_official_python_sdk_over_http() {
    run("http");
}
