//! Three `toolhost serve --http` replicas and HAProxy in front of them
//! (round robin, no affinity), for the MCP section: one frontend reaches
//! the first replica alone, another all three.

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The replicas' token.
pub const TOKEN: &str = "bench-token-0123456789abcdef";

/// The replicas and the balancer; all killed when dropped.
pub struct Cluster {
    children: Vec<Child>,
    /// The frontend that reaches the first replica alone.
    pub one: String,
    /// The frontend that reaches all three.
    pub all: String,
    /// The replicas themselves.
    pub replicas: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("127.0.0.1:{}", listener.local_addr().expect("addr").port())
}

fn private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

impl Cluster {
    /// Three replicas over `ws` with the fixtures, and HAProxy; why not,
    /// when HAProxy is not installed.
    pub fn start(cache: &Path, ws: &Path, home: &Path) -> Result<Self, String> {
        Command::new("haproxy")
            .arg("-v")
            .output()
            .map_err(|e| format!("haproxy: {e}; apt-get install haproxy"))?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let tokens = dir.path().join("tokens");
        private(&tokens, &format!("{TOKEN} bench\n"));
        let key = dir.path().join("cluster.key");
        private(&key, &"k".repeat(48));
        let mut children = Vec::new();
        let mut replicas = Vec::new();
        for _ in 0..3 {
            let addr = free_addr();
            let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
                .args(["serve", "--http", &addr, "--mode", "yolo", "--plugin-dir"])
                .arg(env!("TOOLHOST_FIXTURES_DIR"))
                .arg("--workspace")
                .arg(ws)
                .arg("--token-file")
                .arg(&tokens)
                .args(["--replica-addr", &addr, "--cluster-key-file"])
                .arg(&key)
                .env("TOOLHOST_CACHE_DIR", cache)
                .env("XDG_CONFIG_HOME", home.join("no-config"))
                .env("XDG_STATE_HOME", home.join("state"))
                .env_remove("TOOLHOST_CONFIG")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| e.to_string())?;
            let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
            crate::remote::served_at(&mut lines);
            std::thread::spawn(move || for _ in lines {});
            children.push(child);
            replicas.push(addr);
        }
        let (one, all) = (free_addr(), free_addr());
        let servers = |n: usize| -> String {
            replicas[..n]
                .iter()
                .enumerate()
                .map(|(i, r)| format!("  server r{i} {r}\n"))
                .collect()
        };
        let config = format!(
            "global\n  maxconn 1024\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  timeout server 60s\n\
             frontend one\n  bind {one}\n  default_backend one\n\
             frontend all\n  bind {all}\n  default_backend all\n\
             backend one\n  balance roundrobin\n{}\
             backend all\n  balance roundrobin\n{}",
            servers(1),
            servers(3)
        );
        let file = dir.path().join("haproxy.cfg");
        std::fs::write(&file, config).map_err(|e| e.to_string())?;
        let balancer = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        children.push(balancer);
        let until = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(&all).is_err()
            || std::net::TcpStream::connect(&one).is_err()
        {
            if Instant::now() > until {
                return Err("haproxy never listened".to_owned());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Self {
            children,
            one,
            all,
            replicas,
            _dir: dir,
        })
    }
}
