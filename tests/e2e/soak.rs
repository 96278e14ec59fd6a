//! Soak (issue 21): `toolhost serve` over stdio and over HTTP driven at 50
//! calls in flight with a mix of what clients really send — reads, greps,
//! edits, commands, calls that fail validation, calls that time out,
//! cancelled calls, background commands started and killed — and then
//! checked: every request answered, no file descriptor, process or thread
//! left behind, and resident memory flat between the first and the last
//! quarter of the run.
//!
//! The driver is shared with the bench (`cargo bench -p toolhost -- soak`,
//! 10,000+ calls); the test runs a short soak (2,000 calls a transport).

use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// What the server process holds at one moment (from /proc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// Open file descriptors but namespaces.
    pub fds: usize,
    /// Descriptors of network and mount namespaces: the broker keeps made
    /// ones ready and used ones in bounded pools (spawn/net.rs,
    /// spawn/ahead.rs), so they come and go; they must stay under
    /// [`NAMESPACE_FDS`].
    pub namespace_fds: usize,
    /// Threads.
    pub threads: usize,
    /// Processes below it (its children and theirs).
    pub descendants: usize,
    /// Resident memory, KiB.
    pub rss_kib: u64,
}

/// The most namespace descriptors the broker's pools may hold: 8 pooled
/// for their owners, 32 waiting to be torn down in one batch, spares made
/// ahead and views made ahead (spawn/net.rs, spawn/ahead.rs).
pub const NAMESPACE_FDS: usize = 48;

/// `pid`'s `/proc/PID/status`, as a lookup of one numeric field by its
/// name with the colon (`"VmRSS:"`); 0 for a field it lacks.
pub fn status(pid: u32) -> impl Fn(&str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    move |name| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    }
}

/// What `pid` holds now.
pub fn held(pid: u32) -> Held {
    let field = status(pid);
    let targets = fd_targets(pid);
    let namespaces = targets
        .iter()
        .filter(|t| *t == "net" || *t == "mnt")
        .count();
    Held {
        fds: targets.len() - namespaces,
        namespace_fds: namespaces,
        threads: usize::try_from(field("Threads:")).unwrap_or(0),
        descendants: descendants(pid),
        rss_kib: field("VmRSS:"),
    }
}

/// What `pid`'s file descriptors point at (`socket:[…]` as `socket`), for
/// a message that names what leaked.
pub fn fd_targets(pid: u32) -> Vec<String> {
    let mut targets: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|t| {
            let t = t.display().to_string();
            match t.split_once(":[") {
                Some((kind, _)) => kind.to_owned(),
                None => t,
            }
        })
        .collect();
    targets.sort();
    targets
}

/// How many processes have `pid` as an ancestor.
fn descendants(pid: u32) -> usize {
    let mut parents = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.insert(child, ppid);
        }
    }
    parents
        .keys()
        .filter(|&&p| {
            let mut at = p;
            for _ in 0..64 {
                match parents.get(&at) {
                    Some(&up) if up == pid => return true,
                    Some(&up) if up > 1 => at = up,
                    _ => return false,
                }
            }
            false
        })
        .count()
}

/// The calls of one soak, by what they were.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Answered with success where success was expected.
    pub ok: usize,
    /// Answered with the error expected (bad arguments, a timeout).
    pub refused: usize,
    /// Cancelled by the client (no answer is expected).
    pub cancelled: usize,
    /// Background commands started and killed.
    pub background: usize,
    /// Anything else: an unexpected error or no answer. Must stay 0.
    pub wrong: Vec<String>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.ok += other.ok;
        self.refused += other.refused;
        self.cancelled += other.cancelled;
        self.background += other.background;
        self.wrong.extend(other.wrong);
    }

    /// Every call accounted for.
    pub fn total(&self) -> usize {
        self.ok + self.refused + self.cancelled + self.background + self.wrong.len()
    }
}

/// The workspace the mix needs: a file to read and grep, one file per
/// worker to edit back and forth.
pub fn prepare(ws: &Path, inflight: usize) {
    std::fs::write(ws.join("a.txt"), "hello soak\nsecond line\n").expect("a.txt");
    for w in 0..inflight {
        std::fs::write(ws.join(format!("edit_{w}.txt")), "ping\n").expect("edit file");
    }
}

async fn call(
    peer: &Peer<RoleClient>,
    tool: &str,
    args: Value,
) -> Result<rmcp::model::CallToolResult, String> {
    let Value::Object(args) = args else {
        return Err("arguments must be an object".to_owned());
    };
    // A deadline of our own: a call that never answers is a failure, not a
    // hung test.
    match tokio::time::timeout(
        Duration::from_secs(60),
        peer.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args)),
    )
    .await
    {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(e)) => Err(format!("{tool}: {e}")),
        Err(_) => Err(format!("{tool}: no answer within 60 s")),
    }
}

/// The id a tool's text gives as `"FIELD": "ID"` (a background command's
/// `command_id`, a cut output's `output_id`): over MCP a result is its
/// text alone unless the server runs with `--structured-output`, so the
/// model, and a test, read ids there.
pub fn id_in_text(text: &str, field: &str) -> Option<String> {
    let key = format!("\"{field}\": \"");
    let start = text.find(&key)? + key.len();
    let len = text[start..].find('"')?;
    Some(text[start..start + len].to_owned())
}

fn text(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// One call of the mix: the `g`-th call overall, by worker `w`, whose edit
/// file says `ping` when `*ping`.
async fn one(peer: &Peer<RoleClient>, g: usize, w: usize, ping: &mut bool) -> Tally {
    let mut tally = Tally::default();
    let mut expect =
        |r: Result<rmcp::model::CallToolResult, String>, error: bool, what: &str| match r {
            Ok(r) if r.is_error.unwrap_or(false) == error => {
                if error {
                    tally.refused += 1;
                } else {
                    tally.ok += 1;
                }
            }
            Ok(r) => tally.wrong.push(format!("{what}: {}", text(&r))),
            Err(e) => tally.wrong.push(format!("{what}: {e}")),
        };
    match g % 200 {
        // A call that runs past the server's 1 s limit.
        33 => expect(
            call(peer, "misbehave", json!({"action": "loop"})).await,
            true,
            "loop",
        ),
        // A command past its own timeout (killed; the call answers).
        99 => expect(
            call(
                peer,
                "run_command",
                json!({"command": "sleep 5", "timeout": 1}),
            )
            .await,
            true,
            "timed-out command",
        ),
        // A call the client gives up on: rmcp sends notifications/cancelled.
        77 | 177 => {
            let abandoned = tokio::time::timeout(
                Duration::from_millis(30),
                peer.call_tool(
                    CallToolRequestParams::new("misbehave").with_arguments(
                        json!({"action": "loop"})
                            .as_object()
                            .cloned()
                            .unwrap_or_default(),
                    ),
                ),
            )
            .await;
            match abandoned {
                Err(_) => tally.cancelled += 1,
                Ok(r) => tally.wrong.push(format!("a looping call answered: {r:?}")),
            }
        }
        // A background command, started and killed.
        11 | 111 => {
            let started = call(
                peer,
                "run_command",
                json!({"command": "sleep 60", "background": true}),
            )
            .await;
            let id = started
                .as_ref()
                .ok()
                .and_then(|r| id_in_text(&text(r), "command_id"));
            match id {
                Some(id) => {
                    let killed =
                        call(peer, "process", json!({"action": "kill", "command_id": id})).await;
                    match killed {
                        Ok(r) if r.is_error != Some(true) => tally.background += 1,
                        other => tally.wrong.push(format!("kill: {other:?}")),
                    }
                }
                None => tally.wrong.push(format!("background start: {started:?}")),
            }
        }
        x => match x % 20 {
            0..=5 => expect(
                call(peer, "read_file", json!({"path": "a.txt"})).await,
                false,
                "read_file",
            ),
            6..=8 => expect(
                call(peer, "grep", json!({"pattern": "hello"})).await,
                false,
                "grep",
            ),
            9 | 10 => {
                let (old, new) = if *ping {
                    ("ping", "pong")
                } else {
                    ("pong", "ping")
                };
                let r = call(
                    peer,
                    "edit_file",
                    json!({"path": format!("edit_{w}.txt"), "old_str": old, "new_str": new}),
                )
                .await;
                if r.as_ref().is_ok_and(|r| r.is_error != Some(true)) {
                    *ping = !*ping;
                }
                expect(r, false, "edit_file");
            }
            11 | 12 => expect(
                call(peer, "run_command", json!({"command": "echo soak"})).await,
                false,
                "run_command",
            ),
            13..=15 => expect(
                call(peer, "read_file", json!({"path": 42})).await,
                true,
                "invalid arguments",
            ),
            _ => expect(call(peer, "list_dir", json!({})).await, false, "list_dir"),
        },
    }
    tally
}

/// `n` calls of the mix with `inflight` outstanding; the server's
/// resident memory is read at the end of each quarter.
pub async fn drive(
    peer: &Peer<RoleClient>,
    pid: u32,
    n: usize,
    inflight: usize,
) -> (Tally, [u64; 4]) {
    let quarter = n / 4;
    let mut tally = Tally::default();
    let mut rss = [0; 4];
    for (q, slot) in rss.iter_mut().enumerate() {
        let workers: Vec<_> = (0..inflight)
            .map(|w| {
                let peer = peer.clone();
                tokio::spawn(async move {
                    let mut tally = Tally::default();
                    let mut ping = true;
                    let mut i = w;
                    while i < quarter {
                        tally.add(one(&peer, q * quarter + i, w, &mut ping).await);
                        i += inflight;
                    }
                    // Leave the edit file as it was found.
                    if !ping {
                        let _ = call(
                            &peer,
                            "edit_file",
                            json!({"path": format!("edit_{w}.txt"), "old_str": "pong", "new_str": "ping"}),
                        )
                        .await;
                    }
                    tally
                })
            })
            .collect();
        for worker in workers {
            match worker.await {
                Ok(t) => tally.add(t),
                Err(e) => tally.wrong.push(format!("a worker failed: {e}")),
            }
        }
        *slot = held(pid).rss_kib;
    }
    (tally, rss)
}

/// Wait until what `pid` holds is back to `baseline` (or `within` ends);
/// what it holds then.
pub async fn settle(pid: u32, baseline: Held, within: Duration) -> Held {
    let started = Instant::now();
    loop {
        let now = held(pid);
        let back = now.fds <= baseline.fds
            && now.namespace_fds <= NAMESPACE_FDS
            && now.threads <= baseline.threads
            && now.descendants <= baseline.descendants;
        if back || started.elapsed() > within {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A soak of `n` calls on `peer` (the server is process `pid`): warm up
/// with half as many, take what the server holds, run, settle, and
/// check. Returns the figures for a report.
pub async fn soak(peer: &Peer<RoleClient>, pid: u32, n: usize, inflight: usize) -> Report {
    // A server compiles plugin files it has not seen after it starts: wait
    // for the fixture the mix calls.
    let listed = Instant::now();
    while !peer
        .list_all_tools()
        .await
        .is_ok_and(|tools| tools.iter().any(|t| t.name == "misbehave"))
    {
        assert!(
            listed.elapsed() < Duration::from_secs(120),
            "the misbehave fixture never loaded"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Long enough that every call thread has its allocator arena and every
    // pool its size: what grows after that is growth.
    let (warm, _) = drive(peer, pid, (n / 2).max(4 * inflight), inflight).await;
    assert!(warm.wrong.is_empty(), "warm-up: {:?}", warm.wrong);
    let before = settle(pid, held(pid), Duration::from_secs(2)).await;
    let fds_before = fd_targets(pid);
    let started = Instant::now();
    let (tally, rss) = drive(peer, pid, n, inflight).await;
    let elapsed = started.elapsed();
    let after = settle(pid, before, Duration::from_secs(15)).await;
    let mut new_fds: Vec<String> = fd_targets(pid)
        .into_iter()
        .filter(|t| t != "net" && t != "mnt")
        .collect();
    for old in &fds_before {
        if let Some(at) = new_fds.iter().position(|n| n == old) {
            new_fds.remove(at);
        }
    }
    Report {
        new_fds,
        tally,
        before,
        after,
        rss,
        elapsed,
        n: n / 4 * 4,
    }
}

/// What a soak saw.
#[derive(Debug)]
pub struct Report {
    /// What the descriptors opened during the run and still open point at.
    pub new_fds: Vec<String>,
    pub tally: Tally,
    pub before: Held,
    pub after: Held,
    pub rss: [u64; 4],
    pub elapsed: Duration,
    pub n: usize,
}

impl Report {
    /// Resident memory at the end of the last quarter over the first.
    pub fn rss_growth(&self) -> f64 {
        self.rss[3] as f64 / self.rss[0].max(1) as f64 - 1.0
    }

    /// Every promise of a soak, checked.
    pub fn check(&self, transport: &str) {
        let seen = self.line(transport);
        assert!(
            self.tally.wrong.is_empty(),
            "{seen}: {:?}",
            self.tally.wrong
        );
        assert_eq!(
            self.tally.total(),
            self.n,
            "every call accounted for: {seen}"
        );
        assert!(
            self.tally.cancelled > 0 && self.tally.background > 0,
            "the whole mix ran: {seen}"
        );
        assert!(
            self.after.fds <= self.before.fds,
            "file descriptors leaked ({:?}): {seen}",
            self.new_fds
        );
        assert!(
            self.after.namespace_fds <= NAMESPACE_FDS,
            "namespaces past the pools' bound: {seen}"
        );
        assert!(
            self.after.threads <= self.before.threads,
            "threads leaked: {seen}"
        );
        assert!(
            self.after.descendants <= self.before.descendants,
            "processes left behind: {seen}"
        );
        assert!(self.rss_growth() < 0.05, "memory grew: {seen}");
    }

    /// One line for a person.
    pub fn line(&self, transport: &str) -> String {
        format!(
            "{transport}: {} calls in {:.1} s ({:.0}/s): {} ok, {} refused as expected, {} cancelled, {} background started+killed; fds {}->{} (and {} namespaces, bound {NAMESPACE_FDS}), threads {}->{}, processes {}->{}, RSS {} -> {} KiB ({:+.1}% first to last quarter)",
            self.n,
            self.elapsed.as_secs_f64(),
            self.n as f64 / self.elapsed.as_secs_f64(),
            self.tally.ok,
            self.tally.refused,
            self.tally.cancelled,
            self.tally.background,
            self.before.fds,
            self.after.fds,
            self.after.namespace_fds,
            self.before.threads,
            self.after.threads,
            self.before.descendants,
            self.after.descendants,
            self.rss[0],
            self.rss[3],
            self.rss_growth() * 100.0
        )
    }
}

/// `command` (a `toolhost serve` over stdio) started and initialized by
/// rmcp's client; the session and the server's process id.
pub async fn connect_stdio(
    command: std::process::Command,
) -> (rmcp::service::RunningService<RoleClient, ()>, u32) {
    let (transport, _) =
        rmcp::transport::TokioChildProcess::builder(tokio::process::Command::from(command))
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn toolhost serve");
    let pid = transport.id().expect("pid");
    let session = rmcp::ServiceExt::serve((), transport)
        .await
        .expect("initialize");
    (session, pid)
}

/// The server's configuration for a soak: calls in yolo, a 1 s limit so
/// looping calls time out quickly.
pub fn config(dir: &Path) -> std::path::PathBuf {
    let config = dir.join("soak.toml");
    std::fs::write(
        &config,
        format!(
            "mode = \"yolo\"\nstate_dir = {:?}\n[limits]\ntimeout_secs = 1\n",
            dir.join("state")
        ),
    )
    .expect("soak config");
    config
}

/// 2,000 calls over stdio, 50 in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_over_stdio() {
    let ws = crate::support::workspace();
    let home = crate::support::workspace();
    prepare(ws.path(), 50);
    let config = config(home.path());
    let dir = ws.path().display().to_string();
    let fixtures = crate::support::fixtures_dir().display().to_string();
    let command = crate::support::toolhost_command(
        ws.path(),
        &[
            "--config",
            &config.display().to_string(),
            "serve",
            "--workspace",
            &dir,
            "--plugin-dir",
            &fixtures,
        ],
    );
    let (session, pid) = connect_stdio(command).await;
    let report = soak(session.peer(), pid, 2_000, 50).await;
    report.check("stdio");
    session.cancel().await.expect("close");
}

/// 2,000 calls over streamable HTTP, 50 in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_over_http() {
    let ws = crate::support::workspace();
    let home = crate::support::workspace();
    prepare(ws.path(), 50);
    let config = config(home.path());
    let fixtures = crate::support::fixtures_dir().display().to_string();
    let server = crate::mcp_http::http_server(
        ws.path(),
        &[
            "--config",
            &config.display().to_string(),
            "--plugin-dir",
            &fixtures,
        ],
    );
    let transport = crate::support::http_transport(format!("http://{}/mcp", server.addr));
    let session = rmcp::ServiceExt::serve((), transport)
        .await
        .expect("initialize over HTTP");
    let report = soak(session.peer(), server.pid(), 2_000, 50).await;
    report.check("http");
    session.cancel().await.expect("close");
}
