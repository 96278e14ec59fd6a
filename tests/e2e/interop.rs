//! The official Python MCP SDK (the `mcp` package from PyPI) against the
//! real `toolhost serve`, over stdio and streamable HTTP, pinned to
//! 2025-11-25 and at the SDK's default revision (2026-07-28): tests/interop/
//! python_sdk.py lists the tools (no SDK warning, every schema valid draft
//! 2020-12), calls every built-in and validates its structuredContent
//! against its outputSchema, runs a command longer than its quiet limit
//! (only progress keeps it alive) and, pinned over stdio, follows changed
//! roots; at 2026-07-28 it answers a confirmation through an input-required
//! round trip, polls a background command and reads a kept output.
//!
//! These tests are ignored by a plain `cargo test` (the reason names what
//! they need); `.ci/run` installs the SDK in a virtual environment, names
//! its python in `TOOLHOST_INTEROP_PYTHON` and runs them with
//! `--include-ignored`. Run that way, a missing SDK is a failure, never a
//! silent pass. Without the variable, `python3` is tried.

#![expect(
    clippy::print_stderr,
    reason = "a passing run shows the script's summary"
)]

use crate::support::{cache_dir, warm_cache};
use std::path::Path;
use std::process::Command;

/// The python that has the MCP SDK; a test that calls this fails, saying
/// how to install it, where none has.
pub(crate) fn python() -> String {
    let python = std::env::var("TOOLHOST_INTEROP_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let has_sdk = Command::new(&python)
        .args(["-c", "import mcp, jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_sdk,
        "{python} cannot import mcp and jsonschema: install them with \
         `{python} -m pip install mcp==2.3.0 jsonschema` (or point TOOLHOST_INTEROP_PYTHON \
         at a python that has them), or run without --include-ignored"
    );
    python
}

fn run(transport: &str, era: &str) {
    let python = python();
    // The script's servers use the shared compile cache, warm.
    warm_cache();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/python_sdk.py");
    let out = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .arg(transport)
        .arg(era)
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env(
            "TOOLHOST_CACHE_KEY",
            crate::support::cache_key().expect("a key file"),
        )
        // A component for load_component to file.
        .env(
            "TOOLHOST_INTEROP_COMPONENT",
            crate::support::fixtures_dir().join("fixture_echo.wasm"),
        )
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python SDK run over {transport} ({era}) failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("tools checked"), "{stdout}\n{stderr}");
    eprintln!("{stdout}");
}

#[test]
#[ignore = "needs python3 with the mcp and jsonschema packages (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
fn the_official_python_sdk_over_stdio() {
    run("stdio", "legacy");
}

#[test]
#[ignore = "needs python3 with the mcp and jsonschema packages (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
fn the_official_python_sdk_over_http() {
    run("http", "legacy");
}

#[test]
#[ignore = "needs python3 with the mcp and jsonschema packages (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
fn the_official_python_sdk_at_2026_07_28_over_stdio() {
    run("stdio", "current");
}

#[test]
#[ignore = "needs python3 with the mcp and jsonschema packages (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
fn the_official_python_sdk_at_2026_07_28_over_http() {
    run("http", "current");
}
