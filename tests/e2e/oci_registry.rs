//! Components from a real OCI registry (the distribution registry from the
//! system packages, `docker-registry`, started here on loopback with basic
//! auth): `toolhost plugin push`, pull by tag and by digest, the digest
//! pinned in toolhost.lock, a moved tag refused until `update`, credentials
//! from a Docker config file, a wrong password's error, cosign-style
//! signatures required, and a pinned start with the registry gone.

use crate::support::{fixtures_dir, stderr, stdout, toolhost_full, workspace};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) const USER: &str = "alice";
pub(crate) const PASSWORD: &str = "wonderland-7";

pub(crate) struct Registry {
    child: Child,
    pub(crate) addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Registry {
    pub(crate) fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let htpasswd = std::process::Command::new("htpasswd")
            .args(["-Bbn", USER, PASSWORD])
            .output()
            .unwrap_or_else(|e| panic!("cannot run htpasswd ({e}): apt-get install apache2-utils"));
        std::fs::write(dir.path().join("htpasswd"), &htpasswd.stdout).unwrap();
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {root}\n  \
             delete:\n    enabled: true\nhttp:\n  addr: {addr}\nauth:\n  htpasswd:\n    realm: test\n    \
             path: {pw}\n",
            root = dir.path().join("data").display(),
            pw = dir.path().join("htpasswd").display(),
        );
        std::fs::write(dir.path().join("config.yml"), config).unwrap();
        let child = std::process::Command::new("docker-registry")
            .arg("serve")
            .arg(dir.path().join("config.yml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run docker-registry ({e}): apt-get install docker-registry")
            });
        let until = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(
                Instant::now() < until,
                "the registry never listened on {addr}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            addr,
            _dir: dir,
        }
    }
}

/// `toolhost ARGS` in `ws` with Docker config `docker` (a directory) and
/// `stdin`.
pub(crate) fn run(ws: &Path, docker: &Path, args: &[&str], stdin: &str) -> Output {
    let (cache, config) = (ws.join(".cache"), ws.join(".config"));
    let env = [
        ("DOCKER_CONFIG", docker),
        ("XDG_CACHE_HOME", &cache),
        ("XDG_CONFIG_HOME", &config),
    ];
    toolhost_full(ws, args, stdin, &env)
}

pub(crate) fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}{}", stdout(out), stderr(out));
    stdout(out)
}

/// The user's lock, as `run` sets the user directories.
fn lock_of(ws: &Path) -> PathBuf {
    ws.join(".config/toolhost/toolhost.lock")
}

fn pinned_digest(ws: &Path) -> String {
    let lock = std::fs::read_to_string(lock_of(ws)).expect("a toolhost.lock");
    let value: toml::Value = toml::from_str(&lock).expect("TOML");
    value["component"][0]["digest"]
        .as_str()
        .expect("a digest")
        .to_owned()
}

/// A P-256 key pair as PEM files in `dir`: (private, public).
pub(crate) fn key_pair(dir: &Path, name: &str, seed: u8) -> (PathBuf, PathBuf) {
    use p256::pkcs8::{EncodePrivateKey as _, EncodePublicKey as _, LineEnding};
    let key = p256::ecdsa::SigningKey::from_bytes(&[seed; 32].into()).unwrap();
    let private = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub"));
    std::fs::write(
        &private,
        key.to_pkcs8_pem(LineEnding::LF).unwrap().as_bytes(),
    )
    .unwrap();
    let pem = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap();
    std::fs::write(&public, pem).unwrap();
    (private, public)
}

#[test]
#[ignore = "needs docker-registry and htpasswd (apt-get install docker-registry apache2-utils); .ci/run runs it"]
fn components_are_pulled_pinned_verified_and_kept_from_a_real_registry() {
    let registry = Registry::start();
    let ws = workspace();
    let ws = ws.path();
    let docker = workspace();
    let none = docker.path().join("none");
    std::fs::create_dir_all(&none).unwrap();
    let source = format!("oci://{}/tools/inventory:1.0", registry.addr);
    let inventory = fixtures_dir().join("plain/fixture_plain.wasm");
    let echo = fixtures_dir().join("fixture_echo.wasm");

    // Push with credentials given; pull with a wrong password.
    let push = [
        "plugin",
        "push",
        inventory.to_str().unwrap(),
        &source,
        "--username",
        USER,
        "--password-stdin",
    ];
    let said = ok(&run(ws, &none, &push, PASSWORD));
    assert!(said.contains("sha256:"), "{said}");
    let pull = [
        "plugin",
        "pull",
        &source,
        "--username",
        USER,
        "--password-stdin",
    ];
    let out = run(ws, &none, &pull, "not-the-password");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("refused the credentials") && err.contains(&registry.addr),
        "{err}"
    );
    assert!(
        !ws.join("toolhost.lock").exists(),
        "a failed pull pins nothing"
    );

    // Credentials from a Docker config file; the first use pins.
    let auth = base64_of(&format!("{USER}:{PASSWORD}"));
    let config = format!(
        r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
        registry.addr
    );
    std::fs::write(docker.path().join("config.json"), config).unwrap();
    let greet = |extra: &[&str]| {
        let mut args = vec!["--plugin", &source];
        args.extend_from_slice(extra);
        args.extend(["call", "inventory_greet", r#"{"name":"Ada"}"#]);
        run(ws, docker.path(), &args, "")
    };
    assert_eq!(ok(&greet(&[])).trim(), "hello, Ada");
    let digest = pinned_digest(ws);
    assert!(digest.starts_with("sha256:"), "{digest}");
    assert!(
        !ws.join("toolhost.lock").exists(),
        "nothing is written where toolhost starts"
    );
    // By digest too.
    let by_digest = format!("oci://{}/tools/inventory@{digest}", registry.addr);
    let pulled = ok(&run(ws, docker.path(), &["plugin", "pull", &by_digest], ""));
    assert!(pulled.contains(&digest), "{pulled}");

    // The tag moves: a pull is refused and nothing changes, the pinned
    // component still runs; `update` re-pins.
    ok(&run(
        ws,
        &none,
        &[
            "plugin",
            "push",
            echo.to_str().unwrap(),
            &source,
            "--username",
            USER,
            "--password-stdin",
        ],
        PASSWORD,
    ));
    let out = run(ws, docker.path(), &["plugin", "pull", &source], "");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("toolhost plugin update"),
        "{}",
        stderr(&out)
    );
    assert_eq!(pinned_digest(ws), digest);
    assert_eq!(ok(&greet(&[])).trim(), "hello, Ada");
    ok(&run(ws, docker.path(), &["plugin", "update", &source], ""));
    let moved = pinned_digest(ws);
    assert_ne!(moved, digest);
    let tools = ok(&run(ws, docker.path(), &["--plugin", &source, "tools"], ""));
    assert!(tools.lines().any(|l| l.starts_with("echo ")), "{tools}");
    ok(&run(ws, docker.path(), &["plugin", "update", &source], ""));
    // Back to the inventory for the rest.
    ok(&run(ws, &none, &push, PASSWORD));
    ok(&run(ws, docker.path(), &["plugin", "update", &source], ""));
    let digest = pinned_digest(ws);

    // Signatures required: unsigned is refused naming the digest and key;
    // signed with the key, it loads; with another key only, refused.
    let (private, public) = key_pair(ws, "publisher", 7);
    let (_, other) = key_pair(ws, "other", 9);
    let with_key = |key: &Path| {
        let file = ws.join("signed.toml");
        std::fs::write(
            &file,
            format!(
                "[signatures]\nrequire = true\nkeys = [\"{}\"]\n",
                key.display()
            ),
        )
        .unwrap();
        greet(&["--config", file.to_str().unwrap()])
    };
    let out = with_key(&public);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("has no signature") && err.contains(&digest),
        "{err}"
    );
    assert!(err.contains(public.to_str().unwrap()), "{err}");
    ok(&run(
        ws,
        docker.path(),
        &[
            "plugin",
            "sign",
            &source,
            "--key",
            private.to_str().unwrap(),
        ],
        "",
    ));
    assert_eq!(ok(&with_key(&public)).trim(), "hello, Ada");
    let out = with_key(&other);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no signature any of these keys made"),
        "{}",
        stderr(&out)
    );

    // With the registry gone, the pinned, kept, signed component still
    // loads: no network request.
    drop(registry);
    assert_eq!(ok(&with_key(&public)).trim(), "hello, Ada");
    let listed = ok(&run(ws, docker.path(), &["plugin", "list"], ""));
    assert!(listed.contains(&digest), "{listed}");

    // A component planted beside the kept one is never loaded with it.
    let kept = ws
        .join(".cache/toolhost/oci")
        .join(digest.replace(':', "-"));
    std::fs::copy(&echo, kept.join("aa_planted.wasm")).unwrap();
    let out = with_key(&public);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("holds other components"),
        "{}",
        stderr(&out)
    );
}

pub(crate) fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}
