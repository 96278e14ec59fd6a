//! MCP throughput: rmcp's client drives `tools/call` of the trivial `echo`
//! fixture on a real `toolhost serve` over stdio, then on `toolhost serve
//! --http` (streamable HTTP) in a 2025-11-25 session and statelessly at
//! 2026-07-28, then through HAProxy to one and to three replicas, with 1
//! and 50 requests in flight; the same calls through `Executor::call`
//! in-process are the baseline. Client and servers share the machine's
//! cores.

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::TokioChildProcess;
use std::path::Path;
use std::time::{Duration, Instant};

/// Run the section: `n` calls per measurement.
pub fn run(cache: &Path, baseline_calls_per_sec: f64, n: usize) {
    println!("\n## MCP throughput (stdio, then streamable HTTP; rmcp client, trivial `echo` tool)");
    let runtime = crate::client_runtime(2);
    runtime.block_on(async {
        let ws = tempfile::tempdir().expect("temp");
        let home = tempfile::tempdir().expect("temp");
        let client = serve(cache, ws.path(), home.path(), None).await;
        let peer = client.peer().clone();
        rows("stdio", &peer, n, baseline_calls_per_sec).await;
        client.cancel().await.expect("close");
        // The same over streamable HTTP (`serve --http`, rmcp's client).
        let (mut server, served) = crate::remote::serve_http(cache, ws.path(), home.path(), true);
        let http = crate::remote::http_client(&served).await;
        let peer = http.peer().clone();
        // The server compiles its plugin files after it starts.
        wait_for_echo(&peer).await;
        rows("HTTP 2025-11-25 session", &peer, n, baseline_calls_per_sec).await;
        http.cancel().await.expect("close");
        let stateless = stateless_client(&served).await;
        rows("HTTP 2026-07-28 stateless", stateless.peer(), n, baseline_calls_per_sec).await;
        stateless.cancel().await.expect("close");
        let _ = server.kill();
        let _ = server.wait();
        match crate::replicas::Cluster::start(cache, ws.path(), home.path()) {
            Ok(cluster) => {
                // Each replica compiles its plugin files after it starts.
                for replica in &cluster.replicas {
                    let served = crate::remote::Served {
                        url: format!("http://{replica}/mcp"),
                        token: Some(crate::replicas::TOKEN.to_owned()),
                    };
                    let client = stateless_client(&served).await;
                    wait_for_echo(client.peer()).await;
                    client.cancel().await.expect("close");
                }
                for (label, addr) in [("1 replica", &cluster.one), ("3 replicas", &cluster.all)] {
                    let served = crate::remote::Served {
                        url: format!("http://{addr}/mcp"),
                        token: Some(crate::replicas::TOKEN.to_owned()),
                    };
                    let client = stateless_client(&served).await;
                    let label = format!("HAProxy to {label} (2026-07-28)");
                    rows(&label, client.peer(), n, baseline_calls_per_sec).await;
                    client.cancel().await.expect("close");
                }
                println!(
                    "replicas: {} cores on this machine, shared by the client, HAProxy and the replicas",
                    std::thread::available_parallelism().map_or(0, std::num::NonZero::get)
                );
            }
            Err(why) => println!("replicas: skipped ({why})"),
        }
        // One call at a time: the next call waits until the cancelled loop
        // has really stopped and freed the only slot.
        std::fs::write(
            home.path().join("one.toml"),
            "mode = \"yolo\"\n[limits]\nmax_concurrent_calls = 1\n",
        )
        .expect("config");
        let one = serve(cache, ws.path(), home.path(), Some(&home.path().join("one.toml"))).await;
        let mut samples = Vec::new();
        for _ in 0..20 {
            samples.push(cancel_latency(one.peer()).await);
        }
        samples.sort_unstable();
        println!(
            "cancel: from the cancel of a looping call to the answer of the next call (1 slot): p50 {:.1} ms, max {:.1} ms (target <= 100 ms)",
            ms(samples[samples.len() / 2]),
            ms(samples[samples.len() - 1])
        );
        one.cancel().await.expect("close");
    });
}

/// `toolhost serve` over stdio with the fixtures, in yolo mode.
async fn serve(
    cache: &Path,
    ws: &Path,
    home: &Path,
    config: Option<&Path>,
) -> rmcp::service::RunningService<RoleClient, ()> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    cmd.args([
        "serve",
        "--mode",
        "yolo",
        "--plugin-dir",
        env!("TOOLHOST_FIXTURES_DIR"),
    ])
    .arg("--workspace")
    .arg(ws)
    .env("TOOLHOST_CACHE_DIR", cache)
    // No user configuration or state from this machine.
    .env("XDG_CONFIG_HOME", home.join("no-config"))
    .env("XDG_STATE_HOME", home.join("state"))
    .env_remove("TOOLHOST_CONFIG");
    ().serve(TokioChildProcess::new(cmd).expect("spawn toolhost serve"))
        .await
        .expect("initialize")
}

/// Until the server `peer` talks to lists the `echo` fixture.
async fn wait_for_echo(peer: &Peer<RoleClient>) {
    let until = Instant::now() + Duration::from_secs(120);
    while !peer
        .list_all_tools()
        .await
        .expect("tools/list")
        .iter()
        .any(|t| t.name == "echo")
    {
        assert!(Instant::now() < until, "serve --http never listed echo");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// rmcp's client at 2026-07-28 (`server/discover`, then requests with
/// their own `_meta`, no session) to `served`.
async fn stateless_client(
    served: &crate::remote::Served,
) -> rmcp::service::RunningService<RoleClient, ()> {
    use rmcp::model::ProtocolVersion;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    ().serve_with_lifecycle(served.transport(), lifecycle)
        .await
        .expect("discover")
}

/// A warm-up, then `n` calls at 1 and at 50 in flight over `transport`,
/// each row beside the in-process baseline.
async fn rows(transport: &str, peer: &Peer<RoleClient>, n: usize, baseline_calls_per_sec: f64) {
    drive(peer, 50, n / 10).await; // warm up: pool, page cache
    for inflight in [1, 50] {
        let (total, mut samples) = drive(peer, inflight, n).await;
        samples.sort_unstable();
        let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
        let rate = n as f64 / total.as_secs_f64();
        println!(
            "{transport}, {inflight:>2} in flight: {rate:>8.0} calls/s   p50 {:>6.3} ms   p99 {:>6.3} ms  (n={n}; in-process executor {:.0} calls/s = {:.1}x)",
            ms(p(0.50)),
            ms(p(0.99)),
            baseline_calls_per_sec,
            baseline_calls_per_sec / rate,
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `n` calls with `inflight` outstanding at any time; total time and each
/// call's latency.
async fn drive(peer: &Peer<RoleClient>, inflight: usize, n: usize) -> (Duration, Vec<Duration>) {
    let per_worker = n / inflight;
    let started = Instant::now();
    let workers: Vec<_> = (0..inflight)
        .map(|w| {
            let peer = peer.clone();
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_worker);
                for i in 0..per_worker {
                    let mut args = serde_json::Map::new();
                    args.insert("w".into(), w.into());
                    args.insert("i".into(), i.into());
                    let t = Instant::now();
                    let r = peer
                        .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
                        .await
                        .expect("echo answers");
                    assert_ne!(r.is_error, Some(true));
                    samples.push(t.elapsed());
                }
                samples
            })
        })
        .collect();
    let mut all = Vec::with_capacity(n);
    for w in workers {
        all.extend(w.await.expect("worker"));
    }
    (started.elapsed(), all)
}

/// Cancel a looping call after 50 ms, then time the next call from the
/// moment of cancelling.
async fn cancel_latency(peer: &Peer<RoleClient>) -> Duration {
    let mut args = serde_json::Map::new();
    args.insert("action".into(), "loop".into());
    let looping = tokio::time::timeout(
        Duration::from_millis(50),
        peer.call_tool(CallToolRequestParams::new("misbehave").with_arguments(args)),
    )
    .await;
    assert!(looping.is_err(), "the loop runs until cancelled");
    let t = Instant::now();
    peer.call_tool(CallToolRequestParams::new("echo"))
        .await
        .expect("answered");
    t.elapsed()
}
