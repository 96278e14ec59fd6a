//! MCP throughput: rmcp's client drives `tools/call` of the trivial `echo`
//! fixture on a real `toolhost serve` over stdio, then on `toolhost serve
//! --http` (streamable HTTP) in a 2025-11-25 session and statelessly at
//! 2026-07-28, then through HAProxy to one and to three replicas, with 1
//! and 50 requests in flight; the same calls through `Executor::call`
//! in-process are the baseline; then the same with a lean client
//! (tests/bench/lean.rs), whose figures are the server's rather than
//! rmcp's client's. Client and servers share the machine's cores.

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
        std::fs::write(ws.path().join("a.txt"), "hello\n").expect("a.txt");
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
        let command = crate::toolhost_serve(cache, ws.path(), home.path(), &[]);
        let stdio = crate::lean::Stdio::start(command.into()).await;
        lean_rows(crate::lean::Lean::Stdio(stdio), &served, n, baseline_calls_per_sec).await;
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
                lean_replicas(&cluster, n, baseline_calls_per_sec).await;
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
    let mut cmd = tokio::process::Command::from(crate::toolhost_serve(cache, ws, home, &[]));
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
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
        let (total, samples) = drive(peer, inflight, n).await;
        report(transport, inflight, total, samples, baseline_calls_per_sec);
    }
}

/// One row's figures.
#[derive(Clone, Copy, Default)]
struct Row {
    rate: f64,
    p50: Duration,
    p99: Duration,
}

/// Print a row of `samples` taken in `total` with `inflight` outstanding.
fn report(
    transport: &str,
    inflight: usize,
    total: Duration,
    mut samples: Vec<Duration>,
    baseline_calls_per_sec: f64,
) -> Row {
    samples.sort_unstable();
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    let n = samples.len();
    let row = Row {
        rate: n as f64 / total.as_secs_f64(),
        p50: p(0.50),
        p99: p(0.99),
    };
    println!(
        "{transport}, {inflight:>2} in flight: {:>8.0} calls/s   p50 {:>6.3} ms   p99 {:>6.3} ms  (n={n}; in-process executor {baseline_calls_per_sec:.0} calls/s = {:.1}x)",
        row.rate,
        ms(row.p50),
        ms(row.p99),
        baseline_calls_per_sec / row.rate,
    );
    row
}

/// The lean client (tests/bench/lean.rs) over stdio, in an HTTP session
/// and statelessly to `served`, in 3 interleaved rounds; then the median
/// ratios the issues set targets on.
async fn lean_rows(
    stdio: crate::lean::Lean,
    served: &crate::remote::Served,
    n: usize,
    baseline: f64,
) {
    use crate::lean::Lean;
    use std::sync::Arc;
    println!(
        "\n### The same calls from a lean client (JSON-RPC as text; hyper's HTTP/1.1 connections)"
    );
    let clients = [
        ("lean stdio (2025-11-25)", Arc::new(stdio)),
        (
            "lean HTTP 2025-11-25 session",
            Arc::new(Lean::http(served).session().await),
        ),
        (
            "lean HTTP 2026-07-28 stateless",
            Arc::new(Lean::http(served)),
        ),
    ];
    for (_, lean) in &clients {
        lean.wait_for_echo().await;
    }
    let rounds = lean_rounds(&clients, ("echo", None), n, baseline).await;
    let slower = |x: &Row, y: &Row| y.rate / x.rate;
    let p50 = |x: &Row, y: &Row| x.p50.as_secs_f64() / y.p50.as_secs_f64();
    let p99 = |x: &Row, y: &Row| x.p99.as_secs_f64() / y.p99.as_secs_f64();
    println!(
        "lean, stateless / session (target <= 1.2x): 1 in flight p50 {:.2}x, p99 {:.2}x; 50 in flight {:.2}x slower, p50 {:.2}x, p99 {:.2}x (medians of 3 rounds)",
        rounds.ratio(2, 1, &p50, 0),
        rounds.ratio(2, 1, &p99, 0),
        rounds.ratio(2, 1, &slower, 1),
        rounds.ratio(2, 1, &p50, 1),
        rounds.ratio(2, 1, &p99, 1),
    );
    for (b, what) in [(2, "stateless"), (1, "session")] {
        println!(
            "lean, HTTP {what} / stdio (targets: throughput >= 0.7x, p50 at 1 in flight <= 1.5x): 50 in flight {:.2}x the throughput; 1 in flight p50 {:.2}x",
            1.0 / rounds.ratio(b, 0, &slower, 1),
            rounds.ratio(b, 0, &p50, 0),
        );
    }
    // A tool that does a built-in's work (the echo fixture does nothing,
    // so above the transport is all there is to measure).
    println!("\n### `read_file` of a 6-byte file, the same lean clients");
    let read = lean_rounds(
        &clients,
        ("read_file", Some(r#"{"path":"a.txt"}"#)),
        n / 4,
        baseline,
    )
    .await;
    for (b, what) in [(2, "stateless"), (1, "session")] {
        println!(
            "lean read_file, HTTP {what} / stdio: 50 in flight {:.2}x the throughput; 1 in flight p50 {:.2}x (medians of 3 rounds)",
            1.0 / read.ratio(b, 0, &slower, 1),
            read.ratio(b, 0, &p50, 0),
        );
    }
}

/// The rows of interleaved rounds: per round, per client, 1 and 50 in
/// flight.
struct Rounds {
    figures: Vec<[Row; 2]>,
    clients: usize,
}

impl Rounds {
    /// The median over the rounds of `f` comparing clients `a` and `b`
    /// (by index) in `slot` (0: 1 in flight, 1: 50 in flight).
    fn ratio(&self, a: usize, b: usize, f: &dyn Fn(&Row, &Row) -> f64, slot: usize) -> f64 {
        let mut r: Vec<f64> = self
            .figures
            .chunks(self.clients)
            .map(|round| f(&round[a][slot], &round[b][slot]))
            .collect();
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    }
}

/// 3 interleaved rounds of `n` calls of `tool` by each of `clients`, at 1
/// and at 50 in flight, each row printed.
async fn lean_rounds(
    clients: &[(&str, std::sync::Arc<crate::lean::Lean>)],
    tool: (&'static str, Option<&'static str>),
    n: usize,
    baseline: f64,
) -> Rounds {
    let mut figures: Vec<[Row; 2]> = Vec::new(); // per round and client: 1, 50 in flight
    for _round in 0..3 {
        for (label, lean) in clients {
            crate::lean::drive_tool(lean, tool, 50, n / 10).await; // warm up
            let mut pair = [Row::default(); 2];
            for (slot, inflight) in [1, 50].into_iter().enumerate() {
                let (total, samples) = crate::lean::drive_tool(lean, tool, inflight, n).await;
                pair[slot] = report(label, inflight, total, samples, baseline);
            }
            figures.push(pair);
        }
    }
    Rounds {
        figures,
        clients: clients.len(),
    }
}

/// The lean client, stateless, through HAProxy to one replica and to
/// three, in 3 interleaved rounds; the median ratio of three to one.
async fn lean_replicas(cluster: &crate::replicas::Cluster, n: usize, baseline: f64) {
    use crate::lean::{Lean, drive};
    use std::sync::Arc;
    let through = |addr: &str| {
        Arc::new(Lean::http(&crate::remote::Served {
            url: format!("http://{addr}/mcp"),
            token: Some(crate::replicas::TOKEN.to_owned()),
        }))
    };
    let (one, all) = (through(&cluster.one), through(&cluster.all));
    let mut ratios = Vec::new();
    for _round in 0..3 {
        let mut rates = [0.0; 2];
        for (slot, (label, lean)) in [
            ("lean, HAProxy to 1 replica", &one),
            ("lean, HAProxy to 3 replicas", &all),
        ]
        .into_iter()
        .enumerate()
        {
            drive(lean, 50, n / 10).await; // warm up
            let (total, samples) = drive(lean, 50, n).await;
            rates[slot] = report(label, 50, total, samples, baseline).rate;
        }
        ratios.push(rates[1] / rates[0]);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "lean, 3 replicas / 1 at 50 in flight (target >= 2.5x, cores allowing): {:.2}x (median of 3 rounds)",
        ratios[1]
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `n` calls with `inflight` outstanding at any time; total time and each
/// call's latency.
async fn drive(peer: &Peer<RoleClient>, inflight: usize, n: usize) -> (Duration, Vec<Duration>) {
    let peer = peer.clone();
    crate::lean::drive_with(inflight, n, move |i| {
        let peer = peer.clone();
        async move {
            let mut args = serde_json::Map::new();
            args.insert("i".into(), i.into());
            let r = peer
                .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
                .await
                .expect("echo answers");
            assert_ne!(r.is_error, Some(true));
        }
    })
    .await
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
