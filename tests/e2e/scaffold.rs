//! `toolhost new` in Rust, JavaScript and Python, run as docs/plugin-guide.md
//! says (its shell blocks are executed as written), on the SDK's package as
//! its registry serves it (tests/e2e/registries.rs): the project builds a
//! wasm32-wasip2 component, its own test passes, `toolhost check` accepts it
//! without a warning, its cases pass through `toolhost test` in the real
//! host, and `toolhost call` and `toolhost serve` run it with the grant its
//! README gives. Every code block of the guide is exercised here.

use crate::registries::{self, Published};
use crate::support::{json, stderr, stdout, toolhost, workspace, write};
use std::path::Path;
use std::process::Command;

/// toolhost's `sdk` directory: rust/, javascript/ and python/.
fn sdk_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../sdk")
        .canonicalize()
        .unwrap()
}

/// `program ARGS` in `dir` with what `toolhost` needs to run as the tests
/// run it (the binary first on the PATH; `TOOLHOST` names it for the SDKs'
/// test helpers); fails the test, with its output, unless it succeeds.
fn run_ok(dir: &Path, program: &str, args: &[&str]) -> String {
    run_ok_with(dir, program, args, &[])
}

/// [`run_ok`] with `env` set too (where an SDK's package is served).
fn run_ok_with(dir: &Path, program: &str, args: &[&str], env: &[(String, String)]) -> String {
    let model = crate::support::toolhost_command(dir, &[]);
    let binary = Path::new(model.get_program());
    let path = std::env::join_paths(std::iter::once(binary.parent().unwrap().to_owned()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .env("TOOLHOST", binary)
        .env("PATH", path)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove("CARGO_TARGET_DIR");
    for (key, value) in model.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{program} {args:?} in {}:\n{text}",
        dir.display()
    );
    text
}

/// The fenced code blocks of docs/plugin-guide.md: the `## ` section each
/// is in, its language and its text.
fn guide_blocks() -> Vec<(String, String, String)> {
    let guide = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/plugin-guide.md"),
    )
    .unwrap();
    let mut blocks = Vec::new();
    let mut section = String::new();
    let mut open: Option<(String, String)> = None;
    for line in guide.lines() {
        match &mut open {
            Some((lang, text)) if line == "```" => {
                blocks.push((section.clone(), std::mem::take(lang), std::mem::take(text)));
                open = None;
            }
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
            None if line.starts_with("```") => {
                open = Some((line.trim_start_matches('`').to_owned(), String::new()));
            }
            None => {
                if let Some(heading) = line.strip_prefix("## ") {
                    section = heading.to_owned();
                }
            }
        }
    }
    assert!(open.is_none(), "an unclosed code block in the guide");
    blocks
}

/// The guide's block of `lang` in section `section`.
fn guide_block(section: &str, lang: &str) -> String {
    guide_blocks()
        .into_iter()
        .find(|(s, l, _)| s == section && l == lang)
        .unwrap_or_else(|| panic!("no {lang} block in the guide's `## {section}`"))
        .2
}

/// Run the guide's shell block of `section` with bash in `dir`, as a
/// person would type it, the SDK served as `sdk` says; its output.
fn run_guide(dir: &Path, section: &str, sdk: &Published) -> String {
    let script = guide_block(section, "sh");
    run_ok_with(dir, "bash", &["-euo", "pipefail", "-c", &script], &sdk.env)
}

/// The code the guide shows for a language is what `toolhost new` wrote.
fn guide_shows(section: &str, lang: &str, written: &Path) {
    let shown = guide_block(section, lang);
    let written = std::fs::read_to_string(written).unwrap();
    assert!(
        written.contains(&shown),
        "the guide's {lang} code differs from what `toolhost new` writes:\n{shown}"
    );
}

/// `toolhost check` accepts the component without a warning.
fn conforms(wasm: &Path, name: &str) {
    let check = toolhost(wasm.parent().unwrap(), &["check", wasm.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    assert!(
        stdout(&check).contains(&format!("`{name}` 0.1.0, asks for: workspace:read")),
        "{}",
        stdout(&check)
    );
    assert!(!stderr(&check).contains("warning"), "{}", stderr(&check));
}

/// The guide's section for a language, run as written in `base` on the
/// SDK's package as `sdk` serves it: its shell block's output shows each
/// of `said`; the code it shows is what
/// `toolhost new` wrote at `source`; the component at `wasm` (in the
/// project) conforms and runs as its README says. The project's directory.
fn guide_project(
    base: &Path,
    sdk: &Published,
    section: &str,
    fence: &str,
    source: &str,
    wasm: &str,
    said: &[&str],
) -> std::path::PathBuf {
    let output = run_guide(base, section, sdk);
    for expected in said.iter().chain(&["README.md: "]) {
        assert!(output.contains(expected), "no `{expected}` in:\n{output}");
    }
    let project = base.join("count_words");
    guide_shows(section, fence, &project.join(source));
    let wasm = project.join(wasm);
    conforms(&wasm, "count_words");
    runs_as_its_readme_says(&wasm, "count_words");
    project
}

/// tests/sdk/`file` (a tool that walks through an SDK), copied into
/// `project` and built there with `build` (`FILE` stands for it): it passes
/// tests/sdk/sdk_tour.json, the same cases, so the same behaviour, in every
/// language.
fn tour_passes(project: &Path, file: &str, build: &[&str]) {
    let sdk_tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/sdk");
    builds_and_passes(
        project,
        &sdk_tests.join(file),
        build,
        &sdk_tests.join("sdk_tour.json"),
        "sdk_tour: 16 passed, 0 failed",
    );
}

/// examples/csv_stats/`file`, built in `project` with `build`: it passes
/// the cases the three languages share.
fn csv_stats_passes(project: &Path, file: &str, build: &[&str]) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/csv_stats");
    builds_and_passes(
        project,
        &example.join(file),
        build,
        &example.join("cases.json"),
        "csv_stats: 4 passed, 0 failed",
    );
}

/// `source` copied into `project` and built there with `build` (`FILE`
/// stands for its name; it writes `TOOL.wasm`, TOOL as `summary` names
/// it): `toolhost test` of it with `cases` says `summary`.
fn builds_and_passes(project: &Path, source: &Path, build: &[&str], cases: &Path, summary: &str) {
    let file = source.file_name().unwrap().to_str().unwrap();
    std::fs::copy(source, project.join(file)).unwrap();
    let args: Vec<&str> = build[1..]
        .iter()
        .map(|a| if *a == "FILE" { file } else { a })
        .collect();
    run_ok(project, build[0], &args);
    test_passes(project, cases, summary);
}

/// `toolhost test` of `TOOL.wasm` in `project` (TOOL as `summary` names
/// it) with `cases` succeeds and says `summary`.
fn test_passes(project: &Path, cases: &Path, summary: &str) {
    let tool = summary.split(':').next().unwrap();
    let wasm = project.join(format!("{tool}.wasm"));
    let out = toolhost(
        project,
        &["test", wasm.to_str().unwrap(), cases.to_str().unwrap()],
    );
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains(summary), "{said}");
}

/// The guide's JavaScript section: `toolhost new --lang javascript`, npm
/// install, build, `toolhost check`, `npm test` (the harness, through the
/// SDK's helper) and a call; then MCP, the guide's grant in
/// `toolhost.toml`, its example case, and the SDK tour.
#[test]
fn a_new_javascript_tool_builds_tests_checks_and_runs() {
    let base = workspace();
    let npm = registries::javascript();
    let project = guide_project(
        base.path(),
        &npm,
        "JavaScript",
        "js",
        "count_words.js",
        "count_words.wasm",
        &["# pass 1", "# fail 0"],
    );
    registries::names_the_release(&project.join("package.json"), r#""@toolhost/sdk": "^"#);
    npm.npm_was_asked();
    let wasm = project.join("count_words.wasm");

    // The guide's grant, in toolhost.toml beside the component.
    write(&project, "toolhost.toml", guide_block("Grants", "toml"));
    let said = run_guide(&project, "Grants", &npm);
    assert!(said.contains("\nREADME.md: "), "{said}");
    // The guide's example case.
    let case = guide_block("Test the built component", "json");
    write(base.path(), "case.json", format!("[{case}]"));
    let out = toolhost(base.path(), &["test", wasm.to_str().unwrap(), "case.json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("ok: counts a file"),
        "{}",
        stdout(&out)
    );

    tour_passes(
        &project,
        "sdk_tour.js",
        &["npx", "toolhost-js", "build", "FILE", "-o", "sdk_tour.wasm"],
    );

    // A package from npm, and a CommonJS one: installing it keeps the
    // build working (the SDK declares what its build needs), and the
    // bundle holds it.
    run_ok_with(&project, "npm", &["install", "papaparse@5.7.1"], &npm.env);
    write(&project, "csv_rows.js", CSV_ROWS);
    run_ok(
        &project,
        "npx",
        &["toolhost-js", "build", "csv_rows.js", "-o", "csv_rows.wasm"],
    );
    write(&project, "t.csv", "a,b,c\n1,2,3\n4,5,6\n");
    let plugins = project.display().to_string();
    let out = toolhost(
        &project,
        &[
            "--plugin-dir",
            &plugins,
            "--grant",
            "csv_rows=workspace:read",
            "call",
            "csv_rows",
            r#"{"path":"t.csv"}"#,
        ],
    );
    assert_eq!(stdout(&out).trim(), "2 rows, 3 columns", "{}", stderr(&out));
    // Every call starts from the snapshot the build took: the SDK makes
    // Math.random and performance.now each call's own.
    write(&project, "draw.js", DRAW);
    run_ok(
        &project,
        "npx",
        &["toolhost-js", "build", "draw.js", "-o", "draw.wasm"],
    );
    let draw = || {
        let out = toolhost(&project, &["--plugin-dir", &plugins, "call", "draw", "{}"]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).trim().to_owned()
    };
    let (first, second) = (draw(), draw());
    assert_ne!(first, second, "two calls drew the same numbers");
    let since = |said: &str| -> f64 { said.split(' ').next_back().unwrap().parse().unwrap() };
    assert!((0.0..1000.0).contains(&since(&first)), "{first}");
    csv_stats_passes(
        &project,
        "javascript/csv_stats.js",
        &[
            "npx",
            "toolhost-js",
            "build",
            "FILE",
            "-o",
            "csv_stats.wasm",
        ],
    );
    // An import that resolves to nothing stops the build in one line.
    write(
        &project,
        "csv_rows.js",
        CSV_ROWS.replace("'papaparse'", "'papaparse-missing'"),
    );
    let out = Command::new("npx")
        .args(["toolhost-js", "build", "csv_rows.js", "-o", "csv_rows.wasm"])
        .current_dir(&project)
        .output()
        .expect("npx runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("error: cannot bundle `papaparse-missing`: not found from "),
        "{}",
        stderr(&out)
    );
}

/// A JavaScript tool that draws two random numbers and says how long
/// its call has run (`performance.now()`, in milliseconds).
const DRAW: &str = r#"import { defineTool, s } from '@toolhost/sdk';

export const tool = defineTool({
  name: 'draw',
  description: 'Draw two random numbers.',
  input: s.object({}),
  run: () => `${Math.random()} ${Math.random()} ${performance.now()}`,
});
"#;

/// A JavaScript tool built on papaparse, a CommonJS package from npm.
const CSV_ROWS: &str = r#"import { defineTool, s } from '@toolhost/sdk';
import Papa from 'papaparse';

export const tool = defineTool({
  name: 'csv_rows',
  description: 'Count the rows and columns of a CSV file in the workspace.',
  input: s.object({ path: s.string('Workspace-relative path of the CSV file.') }),
  output: s.object({ rows: s.integer('Rows.'), columns: s.integer('Columns.') }),
  capabilities: ['workspace:read'],
  run({ path }, ctx) {
    const parsed = Papa.parse(ctx.readText(path).trim(), { header: true });
    const counts = { rows: parsed.data.length, columns: parsed.meta.fields.length };
    return { content: `${counts.rows} rows, ${counts.columns} columns`, structured: counts };
  },
});
"#;

/// The guide's Python section: `toolhost new --lang python`, a venv with
/// requirements.txt, `toolhost-py build`, `toolhost check`, its unittest
/// (the harness, through the SDK's helper) and a call; then MCP and the
/// SDK tour.
#[test]
fn a_new_python_tool_builds_tests_checks_and_runs() {
    let base = workspace();
    let project = guide_project(
        base.path(),
        &registries::python(),
        "Python",
        "python",
        "count_words.py",
        "count_words.wasm",
        &["Ran 1 test", "\nOK"],
    );
    registries::names_the_release(&project.join("requirements.txt"), "toolhost-sdk~=");
    tour_passes(
        &project,
        "sdk_tour.py",
        &[
            ".venv/bin/toolhost-py",
            "build",
            "FILE",
            "-o",
            "sdk_tour.wasm",
        ],
    );
    // Python's own: the heap the build snapshotted is frozen.
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/sdk/sdk_tour_python.json");
    test_passes(&project, &cases, "sdk_tour: 1 passed, 0 failed");
    csv_stats_passes(
        &project,
        "python/csv_stats.py",
        &[
            ".venv/bin/toolhost-py",
            "build",
            "FILE",
            "-o",
            "csv_stats.wasm",
        ],
    );
}

/// examples/csv_stats in Rust, built as the built-ins are (a member of the
/// workspace, the same profile and target directory), passes the cases
/// the three languages share.
#[test]
fn the_rust_csv_stats_example_passes_the_shared_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let binary = Path::new(env!("CARGO_BIN_EXE_toolhost"));
    let target = binary.parent().and_then(Path::parent).unwrap().join("wasm");
    let out = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args(["build", "-p", "csv_stats", "--target", "wasm32-wasip2"])
        .args(["--profile", "plugin", "--locked", "--target-dir"])
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wasm = target.join("wasm32-wasip2/plugin/csv_stats.wasm");
    let cases = root.join("examples/csv_stats/cases.json");
    let ws = workspace();
    let out = toolhost(
        ws.path(),
        &["test", wasm.to_str().unwrap(), cases.to_str().unwrap()],
    );
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("csv_stats: 4 passed, 0 failed"), "{said}");
}

/// The guide's Rust section: `toolhost new`, cargo build for
/// wasm32-wasip2, `cargo test`, `toolhost check`, `toolhost test` and a
/// call; then bad names, a second `new` over the project, wrong and broken
/// cases, and MCP.
#[test]
fn a_new_rust_tool_builds_tests_checks_and_runs() {
    let base = workspace();
    let crates = registries::rust(base.path());
    let project = guide_project(
        base.path(),
        &crates,
        "Rust",
        "rust",
        "src/lib.rs",
        "target/wasm32-wasip2/release/count_words.wasm",
        &[
            "test result: ok. 1 passed",
            "count_words: 4 passed, 0 failed",
        ],
    );
    registries::names_the_release(&project.join("Cargo.toml"), "toolhost-sdk = \"");
    registries::cargo_used_the_package(&project);
    for file in ["Cargo.toml", "README.md", "Cargo.lock", "tests/cases.json"] {
        assert!(project.join(file).is_file(), "{file}");
    }
    let wasm = project.join("target/wasm32-wasip2/release/count_words.wasm");

    // A bad name gets a valid one to use, and nothing is written.
    let sdk = sdk_dir();
    let sdk = sdk.to_str().unwrap();
    let out = toolhost(base.path(), &["new", "Count-Words", "--sdk", sdk]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("e.g. `count_words`"),
        "{}",
        stderr(&out)
    );
    assert!(!base.path().join("Count-Words").exists());
    // Never over an author's files; an --sdk without the language's SDK is named.
    let again = toolhost(base.path(), &["new", "count_words", "--sdk", sdk]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));
    let out = toolhost(
        base.path(),
        &[
            "new",
            "other",
            "--lang",
            "python",
            "--sdk",
            base.path().to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no python/pyproject.toml there"),
        "{}",
        stderr(&out)
    );
    // With --sdk, each language's project names the checkout's SDK (and a
    // Rust one gets the checkout's lock).
    for (lang, manifest, named) in [
        (
            "rust",
            "Cargo.toml",
            format!("toolhost-sdk = {{ path = {:?} }}", format!("{sdk}/rust")),
        ),
        (
            "javascript",
            "package.json",
            format!("\"@toolhost/sdk\": \"file:{sdk}/javascript\""),
        ),
        ("python", "requirements.txt", format!("{sdk}/python\n")),
    ] {
        let dir = base.path().join(format!("with-sdk-{lang}"));
        let dir_arg = dir.to_str().unwrap();
        let out = toolhost(
            base.path(),
            &[
                "new", "other", "--lang", lang, "--dir", dir_arg, "--sdk", sdk,
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = std::fs::read_to_string(dir.join(manifest)).unwrap();
        assert!(text.contains(&named), "no `{named}` in {manifest}:\n{text}");
        assert_eq!(dir.join("Cargo.lock").is_file(), lang == "rust", "{lang}");
    }
    // TOOLHOST_SDK is --sdk for every `new`.
    let out = crate::support::toolhost_with_env(
        base.path(),
        &["new", "other"],
        &[("TOOLHOST_SDK", base.path())],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no rust/Cargo.toml there"),
        "{}",
        stderr(&out)
    );

    let wasm_arg = wasm.to_str().unwrap();
    // A wrong expectation fails and says what differed; cases that are
    // not JSON are a usage error.
    write(
        base.path(),
        "wrong.json",
        r#"[{"args": {"path": "a.txt"}, "grant": "workspace:read", "files": {"a.txt": "x"},
            "expect": {"structured": {"words": 5}}}]"#,
    );
    let out = toolhost(base.path(), &["test", wasm_arg, "wrong.json", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let outcomes = json(&out);
    assert_eq!(outcomes[0]["name"], "case 1");
    assert_eq!(
        outcomes[0]["failures"][0],
        "structured at `/words`: expected 5, got 1"
    );
    write(base.path(), "broken.json", "{not json");
    let out = toolhost(base.path(), &["test", wasm_arg, "broken.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("JSON array of cases"),
        "{}",
        stderr(&out)
    );
}

/// The component `wasm` of tool `name`, run as every project's README
/// says: `toolhost call` and `toolhost serve` with the grant, on a file of
/// a workspace; without the grant it reaches nothing.
fn runs_as_its_readme_says(wasm: &Path, name: &str) {
    let grant = format!("{name}=workspace:read");
    // Run as the README says, on a file of a workspace.
    let ws = workspace();
    write(ws.path(), "notes.txt", "one two\nthree\n");
    let plugins = workspace();
    std::fs::copy(wasm, plugins.path().join(format!("{name}.wasm"))).unwrap();
    let plugin_dir = plugins.path().to_str().unwrap();
    let out = toolhost(
        ws.path(),
        &[
            "--plugin-dir",
            plugin_dir,
            "--grant",
            &grant,
            "call",
            name,
            r#"{"path":"notes.txt"}"#,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = json(&out);
    assert_eq!(
        result["content"],
        "notes.txt: 2 lines, 3 words, 14 characters"
    );
    assert_eq!(
        result["structured"],
        serde_json::json!({"lines": 2, "words": 3, "chars": 14})
    );
    // Over MCP, as the README says.
    let dir = ws.path().to_str().unwrap();
    let mut server = crate::mcp::RawServer::start(
        ws.path(),
        &[
            "serve",
            "--workspace",
            dir,
            "--plugin-dir",
            plugin_dir,
            "--grant",
            &grant,
            "--structured-output",
        ],
    );
    let answer = server.call(2, name, serde_json::json!({"path": "notes.txt"}));
    assert_eq!(
        answer["result"]["structuredContent"]["words"], 3,
        "{answer}"
    );
    server.close();
    // Without the grant it reaches nothing, and says how to grant it.
    let out = toolhost(
        ws.path(),
        &[
            "--plugin-dir",
            plugin_dir,
            "call",
            name,
            r#"{"path":"notes.txt"}"#,
            "--json",
        ],
    );
    assert_eq!(json(&out)["error"]["kind"], "denied", "{}", stdout(&out));
}

/// Every SDK ships the WIT it was built for: `wit/plugin.wit` at the top
/// of the repository is the one source (the host is built against it);
/// the Rust crate's package holds a byte-identical `wit/plugin.wit`, and
/// so do the JavaScript and Python packages (npm's package list shows it;
/// the Python test above builds from an installed wheel).
/// `.ci/run` also runs `cargo package` on the crate in full.
#[test]
fn every_sdk_package_holds_its_wit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO"))
        .args(["package", "-p", "toolhost-sdk", "--list", "--allow-dirty"])
        .current_dir(&root)
        .output()
        .expect("cargo runs");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(listed.lines().any(|l| l == "wit/plugin.wit"), "{listed}");
    let wit = std::fs::read(root.join("wit/plugin.wit")).unwrap();
    for copy in [
        "sdk/rust/wit/plugin.wit",
        "sdk/javascript/wit/plugin.wit",
        "sdk/python/toolhost/wit/plugin.wit",
    ] {
        assert!(
            std::fs::read(root.join(copy)).unwrap() == wit,
            "{copy} differs from wit/plugin.wit, the one source: `cp wit/plugin.wit {copy}`"
        );
    }
    let packed = run_ok(
        &root.join("sdk/javascript"),
        "npm",
        &["pack", "--dry-run", "--json"],
    );
    assert!(packed.contains("\"wit/plugin.wit\""), "{packed}");
    assert!(!root.join("sdk/wit").exists());
}

/// The JavaScript and Python SDKs' own unit tests (schemas, argument
/// checks, paths), natively.
#[test]
fn the_javascript_and_python_sdks_pass_their_unit_tests() {
    let sdk = sdk_dir();
    let js = run_ok(&sdk.join("javascript"), "npm", &["test"]);
    assert!(js.contains("# fail 0") && !js.contains("# pass 0"), "{js}");
    let py = run_ok(
        &sdk.join("python"),
        "python3",
        &["-B", "-m", "unittest", "discover", "-s", "tests"],
    );
    assert!(py.contains("\nOK"), "{py}");
}

/// The guide shows examples/csv_stats in each language as it is, with
/// its length.
#[test]
fn the_guide_shows_csv_stats_in_three_languages() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/csv_stats");
    let guide = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/plugin-guide.md"),
    )
    .unwrap();
    for (label, fence, file) in [
        ("Rust", "rust", "rust/src/lib.rs"),
        ("JavaScript", "js", "javascript/csv_stats.js"),
        ("Python", "python", "python/csv_stats.py"),
    ] {
        let written = std::fs::read_to_string(example.join(file)).unwrap();
        let shown = guide_block("One tool in three languages", fence);
        assert_eq!(
            shown, written,
            "the guide's {label} csv_stats differs from {file}"
        );
        let section = &guide[guide.find("## One tool in three languages").unwrap()..];
        let said = format!("{label} ({} lines", written.lines().count());
        assert!(section.contains(&said), "the guide does not say `{said}`");
    }
}

/// Every code block of the guide is one the tests above run or compare:
/// a new one must be exercised too.
#[test]
fn every_code_block_of_the_guide_is_exercised() {
    let exercised = [
        ("Rust", "sh"),
        ("Rust", "rust"),
        ("JavaScript", "sh"),
        ("JavaScript", "js"),
        ("Python", "sh"),
        ("Python", "python"),
        ("Grants", "toml"),
        ("Grants", "sh"),
        ("Test the built component", "json"),
        ("One tool in three languages", "rust"),
        ("One tool in three languages", "js"),
        ("One tool in three languages", "python"),
    ];
    let blocks = guide_blocks();
    for (section, lang, _) in &blocks {
        assert!(
            exercised.contains(&(section.as_str(), lang.as_str())),
            "the guide's {lang} block in `## {section}` is not exercised: run or compare it in tests/e2e/scaffold.rs"
        );
    }
    assert_eq!(
        blocks.len(),
        exercised.len(),
        "one block per section and language"
    );
}
