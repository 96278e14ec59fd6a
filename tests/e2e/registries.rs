//! The SDKs as their registries ship them: each packed as its authors
//! publish it (`cargo package`, `npm pack`, a wheel) and served the way
//! crates.io, npm and PyPI serve it, so that a project `toolhost new`
//! writes, naming the SDK of toolhost's version as it does for a user,
//! installs the package and not the checkout. A file the package leaves
//! out, a dependency it does not declare or a path into the checkout
//! fails the guide's tests (tests/e2e/scaffold.rs) that build on it.

use crate::support::{FakeHttp, HttpReply, run_in};
use base64::Engine as _;
use sha2::Digest as _;
use std::path::{Path, PathBuf};

/// A language's SDK, packed and served, for as long as it lives.
pub struct Published {
    /// What npm and pip are to be run with to find it.
    pub env: Vec<(String, String)>,
    _packed: tempfile::TempDir,
    registry: Option<FakeHttp>,
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Rust SDK's three crates packed by `cargo package` and unpacked as
/// cargo unpacks a download from crates.io; `base/.cargo/config.toml`
/// patches crates.io with them for every project under `base` (the
/// crates' other dependencies come from crates.io itself).
pub fn rust(base: &Path) -> Published {
    let packed = tempfile::tempdir().unwrap();
    let target = packed.path().join("target");
    let crates = ["toolhost-shared", "toolhost-sdk-macros", "toolhost-sdk"];
    let mut args = vec!["package", "--no-verify", "--allow-dirty", "--locked"];
    for name in crates {
        args.extend(["-p", name]);
    }
    args.extend(["--target-dir", target.to_str().unwrap()]);
    run_in(&root(), env!("CARGO"), &args);
    let mut patch = String::from("[patch.crates-io]\n");
    for name in crates {
        let file = format!("{name}-{}.crate", env!("CARGO_PKG_VERSION"));
        let crate_file = target.join("package").join(&file);
        run_in(
            packed.path(),
            "tar",
            &["-xzf", crate_file.to_str().unwrap()],
        );
        let unpacked = packed.path().join(file.trim_end_matches(".crate"));
        patch.push_str(&format!("{name} = {{ path = {:?} }}\n", unpacked));
    }
    crate::support::write(base, ".cargo/config.toml", patch);
    Published {
        env: Vec::new(),
        _packed: packed,
        registry: None,
    }
}

/// The JavaScript SDK packed by `npm pack` and served by a registry of the
/// `@toolhost` scope on 127.0.0.1 as npm's serves a package: its document
/// (every version's manifest, the tarball's address and integrity) and
/// the tarball. Everything else comes from npm's registry.
pub fn javascript() -> Published {
    let packed = tempfile::tempdir().unwrap();
    let dir = packed.path().to_str().unwrap();
    let sdk = root().join("sdk/javascript");
    let file = run_in(
        &sdk,
        "npm",
        &["pack", "--silent", "--pack-destination", dir],
    );
    let tarball = std::fs::read(packed.path().join(file.trim())).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sdk.join("package.json")).unwrap()).unwrap();
    let (name, version) = (manifest["name"].clone(), manifest["version"].clone());
    let integrity = format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(&tarball))
    );
    let document = std::sync::OnceLock::<String>::new();
    let registry = FakeHttp::start(move |request| {
        match request
            .path
            .replace("%2f", "/")
            .replace("%2F", "/")
            .as_str()
        {
            "/@toolhost/sdk" => HttpReply::json(document.get_or_init(|| {
                let host = request.header("host").unwrap_or_default();
                let mut manifest = manifest.clone();
                manifest["dist"] = serde_json::json!({
                    "tarball": format!("http://{host}/@toolhost/sdk/-/sdk.tgz"),
                    "integrity": integrity,
                });
                serde_json::json!({
                    "name": name,
                    "dist-tags": {"latest": version},
                    "versions": {version.as_str().unwrap(): manifest},
                })
                .to_string()
            })),
            "/@toolhost/sdk/-/sdk.tgz" => HttpReply {
                status: 200,
                body: tarball.clone(),
                ..HttpReply::default()
            },
            _ => HttpReply {
                status: 404,
                ..HttpReply::default()
            },
        }
    });
    let url = format!("http://127.0.0.1:{}/", registry.port);
    Published {
        env: vec![("npm_config_@toolhost:registry".into(), url)],
        _packed: packed,
        registry: Some(registry),
    }
}

/// The Python SDK built into a wheel, found by pip as it finds a wheel on
/// PyPI (with `--find-links` beside the index, as any links the machine
/// already gives pip).
pub fn python() -> Published {
    let packed = tempfile::tempdir().unwrap();
    // From a copy: building in place would leave build files in the
    // checkout, while other tests read it.
    let source = packed.path().join("source");
    let sdk = root().join("sdk/python");
    for file in ["pyproject.toml", "README.md"] {
        crate::support::write(&source, file, std::fs::read(sdk.join(file)).unwrap());
    }
    for entry in walk(&sdk.join("toolhost")) {
        let rel = entry.strip_prefix(&sdk).unwrap();
        crate::support::write(
            &source,
            rel.to_str().unwrap(),
            std::fs::read(&entry).unwrap(),
        );
    }
    let wheels = packed.path().join("wheels");
    run_in(
        packed.path(),
        "python3",
        &[
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            wheels.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    let links = std::iter::once(wheels.display().to_string())
        .chain(std::env::var("PIP_FIND_LINKS").ok())
        .collect::<Vec<_>>()
        .join(" ");
    Published {
        env: vec![("PIP_FIND_LINKS".into(), links)],
        _packed: packed,
        registry: None,
    }
}

impl Published {
    /// npm asked the registry here for the package (a JavaScript SDK's).
    pub fn npm_was_asked(&self) {
        let registry = self
            .registry
            .as_ref()
            .expect("the JavaScript SDK's registry");
        let asked = registry.requests();
        assert!(
            asked
                .iter()
                .any(|r| r.path.eq_ignore_ascii_case("/@toolhost%2fsdk")),
            "npm never asked the registry for @toolhost/sdk: {:?}",
            asked.iter().map(|r| &r.path).collect::<Vec<_>>()
        );
    }
}

/// The Rust project at `project` built on the unpacked packages: its lock
/// names no registry source for toolhost-sdk.
pub fn cargo_used_the_package(project: &Path) {
    let lock = std::fs::read_to_string(project.join("Cargo.lock")).unwrap();
    let entry = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"toolhost-sdk\"\n"))
        .expect("toolhost-sdk in Cargo.lock");
    assert!(!entry.contains("source ="), "not from the package: {entry}");
}

/// The project's manifest at `manifest` names the SDK by `prefix` and the
/// version of this toolhost, as only its registry can give it.
pub fn names_the_release(manifest: &Path, prefix: &str) {
    let text = std::fs::read_to_string(manifest).unwrap();
    let named = format!("{prefix}{}", env!("CARGO_PKG_VERSION"));
    assert!(
        text.contains(&named),
        "no `{named}` in {}:\n{text}",
        manifest.display()
    );
}

/// The files under `dir`, caches left out.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name() != "__pycache__" {
                files.extend(walk(&path));
            }
        } else {
            files.push(path);
        }
    }
    files
}
