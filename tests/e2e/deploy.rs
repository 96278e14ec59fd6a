//! The deployment manifests (deploy/kustomize/base): they validate offline
//! against the Kubernetes schemas (tests/deploy/check.py, with
//! `kubernetes-validate` from PyPI), and the real binary starts with the
//! Deployment's own arguments and the ConfigMap's configuration.

use crate::support::{toolhost_command, workspace};
use std::io::BufRead as _;
use std::path::Path;

#[test]
#[ignore = "needs python3 with the kubernetes-validate package (TOOLHOST_INTEROP_PYTHON); .ci/run runs it"]
fn the_manifests_validate_and_their_args_start_toolhost() {
    let python = std::env::var("TOOLHOST_INTEROP_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::process::Command::new(&python)
        .arg(root.join("tests/deploy/check.py"))
        .arg(root.join("deploy/kustomize/base"))
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}{}\n(needs `pip install kubernetes-validate==1.37.0` in {python}, or run without \
         --include-ignored)",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    // The container's arguments, with its paths made local and its port
    // free: the binary takes every one of them.
    let ws = workspace();
    let dir = workspace();
    let tokens = dir.path().join("tokens");
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(&tokens, "a-token-0123456789abcdef team\n").unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let config = dir.path().join("toolhost.toml");
    let text = found["config"]
        .as_str()
        .unwrap()
        .replace("/var/lib/toolhost", &dir.path().display().to_string());
    std::fs::write(&config, text).unwrap();
    let args: Vec<String> = found["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let a = a.as_str().unwrap();
            match a {
                "0.0.0.0:8080" => "127.0.0.1:0".to_owned(),
                "/run/toolhost/tokens" => tokens.display().to_string(),
                "/etc/toolhost/toolhost.toml" => config.display().to_string(),
                "/workspace" => ws.path().display().to_string(),
                other => other.to_owned(),
            }
        })
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Its environment: this replica's address and the cluster key.
    let key = dir.path().join("cluster.key");
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut command = toolhost_command(ws.path(), &args);
    for (name, value) in found["env"].as_object().unwrap() {
        let Some(value) = value.as_str() else {
            continue; // from the downward API
        };
        let value = value
            .replace("$(POD_IP)", "127.0.0.1")
            .replace("/run/toolhost/cluster.key", &key.display().to_string());
        command.env(name, value);
    }
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut said = Vec::new();
    let served = std::io::BufReader::new(stderr).lines().any(|line| {
        let line = line.unwrap_or_default();
        said.push(line.clone());
        line.contains("serving MCP on http://127.0.0.1:")
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        served,
        "toolhost {args:?} did not serve:\n{}",
        said.join("\n")
    );
}
