//! Remote MCP tools: `echo` of a real `toolhost serve --http` upstream,
//! called as `mcp_up_echo` through `Executor::call` (validation, the
//! pipeline, rmcp's client, HTTP, the upstream's own pipeline), against the
//! same upstream called directly by rmcp's client (what the network and
//! the upstream cost alone) and the local `echo` through the executor.

use crate::{echo_registry, percentiles, time_n, us};
use std::io::BufRead as _;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use toolhost::remote::{Connect, RemoteServers, ServerSpec, Transport};
use toolhost::{CallOptions, Executor, Mode, Runtime};

/// A `toolhost serve --http` on 127.0.0.1 with the fixtures, in yolo mode,
/// and the URL it serves MCP on.
/// Its configuration and state directories are under `home` (outside the
/// workspace: none of this machine's, none a tool could reach). With
/// `token`, clients need the token it makes (the default); without,
/// it serves with `--no-auth`.
pub fn serve_http(
    cache: &Path,
    ws: &Path,
    home: &Path,
    token: bool,
) -> (std::process::Child, Served) {
    let http: &[&str] = if token {
        &["--http", "127.0.0.1:0"]
    } else {
        &["--http", "127.0.0.1:0", "--no-auth"]
    };
    let mut server = crate::toolhost_serve(cache, ws, home, http)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolhost serve --http");
    let mut lines = std::io::BufReader::new(server.stderr.take().expect("stderr")).lines();
    let served = served_at(&mut lines);
    std::thread::spawn(move || for _ in lines {});
    (server, served)
}

/// Where a `toolhost serve --http` serves MCP, and the token it made, from
/// what it printed at start.
pub fn served_at(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> Served {
    let mut said = Vec::new();
    let mut token = None;
    loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("toolhost serve --http ended: {said:?}");
        };
        if let Some(rest) = line.split_once("MCP token: in ").map(|(_, r)| r) {
            let path = rest.split_once(" (").map_or(rest, |(p, _)| p);
            token = Some(
                std::fs::read_to_string(path)
                    .expect("the token file")
                    .trim()
                    .to_owned(),
            );
        }
        if let Some(rest) = line.strip_prefix("serving MCP on ") {
            return Served {
                url: rest.trim().to_owned(),
                token,
            };
        }
        said.push(line);
    }
}

/// A `toolhost serve --http`'s MCP endpoint and token.
pub struct Served {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// What clients send as `Authorization: Bearer`, if it needs one.
    pub token: Option<String>,
}

impl Served {
    /// rmcp's streamable HTTP client transport to it, with the token.
    pub fn transport(&self) -> rmcp::transport::StreamableHttpClientTransport<reqwest::Client> {
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.as_str());
        if let Some(token) = &self.token {
            config = config.auth_header(token.clone());
        }
        rmcp::transport::StreamableHttpClientTransport::from_config(config)
    }
}

/// rmcp's streamable HTTP client, connected to `served`.
pub async fn http_client(
    served: &Served,
) -> rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig> {
    use rmcp::ServiceExt as _;
    let info = rmcp::model::ClientConfig::new(
        rmcp::model::ClientCapabilities::default(),
        rmcp::model::Implementation::new("toolhost", "0.1.0"),
    )
    .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25);
    info.serve(served.transport()).await.expect("initialize")
}

/// Run the section: `n` calls per measurement.
pub fn run(runtime: &Arc<Runtime>, cache: &Path, n: usize) {
    println!("\n## Remote MCP tools (`echo` of a `toolhost serve --http` upstream)");
    let ws = tempfile::tempdir().expect("temp");
    let home = tempfile::tempdir().expect("temp");
    // Without a token: the client under test has no way to be given one
    // but the environment, which a running benchmark cannot change.
    let (mut upstream, served) = serve_http(cache, ws.path(), home.path(), false);

    let servers = RemoteServers::new(vec![ServerSpec {
        name: "up".to_owned(),
        transport: Transport::Http {
            url: served.url.clone(),
            bearer_token_env: None,
        },
        read_only: false,
        read_only_tools: Vec::new(),
        connect: Connect::Start,
        connect_timeout: std::time::Duration::from_secs(10),
        call_timeout: std::time::Duration::from_secs(60),
    }])
    .expect("client runtime");
    let executor = Executor::new(Arc::clone(runtime), echo_registry(runtime))
        .with_mode(Mode::Yolo)
        .with_remote_servers(servers);
    executor.connect_remote_servers();
    // The upstream compiles its plugin files after it starts; `echo` comes
    // with a tools/list_changed.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while executor.lookup("mcp_up_echo").is_err() {
        assert!(
            std::time::Instant::now() < until,
            "the upstream never listed echo"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let options = CallOptions::default();
    let call = |tool: &str| {
        let r = executor.call(tool, r#"{"n":1}"#, &options);
        assert!(r.success, "{tool}: {:?}", r.error);
    };
    for _ in 0..n / 10 {
        call("mcp_up_echo");
        call("echo");
    }
    let (mut local, _) = time_n(n, || call("echo"));
    let (mut remote, total) = time_n(n, || call("mcp_up_echo"));

    // The same upstream through rmcp's client alone.
    let tokio = crate::client_runtime(1);
    let mut direct = tokio.block_on(async {
        let client = http_client(&served).await;
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let mut args = serde_json::Map::new();
            args.insert("n".into(), 1.into());
            let t = std::time::Instant::now();
            let r = client
                .call_tool(rmcp::model::CallToolRequestParams::new("echo").with_arguments(args))
                .await
                .expect("echo");
            assert_ne!(r.is_error, Some(true));
            samples.push(t.elapsed());
        }
        client.cancel().await.expect("close");
        samples
    });
    let _ = upstream.kill();
    let _ = upstream.wait();

    let (l50, l99) = percentiles(&mut local);
    let (r50, r99) = percentiles(&mut remote);
    let (d50, d99) = percentiles(&mut direct);
    println!(
        "local echo (executor):           p50 {:>8.1} µs   p99 {:>8.1} µs",
        us(l50),
        us(l99)
    );
    println!(
        "rmcp client -> upstream directly: p50 {:>8.1} µs   p99 {:>8.1} µs",
        us(d50),
        us(d99)
    );
    println!(
        "mcp_up_echo (executor -> remote): p50 {:>8.1} µs   p99 {:>8.1} µs   {:>6.0} calls/s  (n={n}; {:.2}x the direct client, {:+.0} µs)",
        us(r50),
        us(r99),
        n as f64 / total.as_secs_f64(),
        r50.as_secs_f64() / d50.as_secs_f64(),
        us(r50) - us(d50)
    );
}
