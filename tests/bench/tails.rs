//! Tails at one call in flight over stdio: `read_file` of a small file and
//! `list_dir` of a directory of 19 entries on `toolhost serve`, against the
//! MCP reference filesystem server's `read_text_file` and
//! `list_directory` on the same files, rounds interleaved (a round of
//! each server in turn), one client for both speaking JSON lines.
//! Targets (issue 47): `read_file` p99 ≤ 2 ms; `list_dir` no slower than
//! `list_directory` (p50 and p99 ratios ≤ 1).

use crate::bytes::{Raw, reference_server};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// p50 and p99 of `n` calls of `tool` with `args`, one at a time.
fn percentiles(server: &mut Raw, tool: &str, args: &Value, n: usize) -> (Duration, Duration) {
    let mut samples: Vec<Duration> = (0..n)
        .map(|_| {
            let started = Instant::now();
            let result = server.request("tools/call", json!({"name": tool, "arguments": args}));
            let elapsed = started.elapsed();
            assert_ne!(result["isError"], true, "{tool}: {result}");
            elapsed
        })
        .collect();
    samples.sort_unstable();
    (samples[n / 2], samples[n * 99 / 100])
}

/// One server's two calls, as it names them.
struct Side {
    name: &'static str,
    server: Raw,
    read: (&'static str, Value),
    list: (&'static str, Value),
    rounds: Vec<[(Duration, Duration); 2]>,
}

impl Side {
    fn round(&mut self, n: usize) {
        let read = percentiles(&mut self.server, self.read.0, &self.read.1, n);
        let list = percentiles(&mut self.server, self.list.0, &self.list.1, n);
        self.rounds.push([read, list]);
    }

    /// The median over rounds of call `i`'s p50 and p99.
    fn medians(&self, i: usize) -> (Duration, Duration) {
        let mut p50: Vec<Duration> = self.rounds.iter().map(|r| r[i].0).collect();
        let mut p99: Vec<Duration> = self.rounds.iter().map(|r| r[i].1).collect();
        p50.sort_unstable();
        p99.sort_unstable();
        (p50[p50.len() / 2], p99[p99.len() / 2])
    }
}

pub fn run(cache: &Path, rounds: usize, n: usize) {
    println!("\n## Tails at one call in flight (stdio, {rounds} interleaved rounds of {n} calls)");
    let ws = tempfile::tempdir().expect("temp");
    let home = tempfile::tempdir().expect("temp");
    std::fs::write(ws.path().join("a.txt"), "hello, tails\n").expect("a.txt");
    let dir = ws.path().join("dir");
    std::fs::create_dir(&dir).expect("dir");
    for i in 0..16 {
        std::fs::write(dir.join(format!("file{i:02}.rs")), "fn main() {}\n").expect("file");
    }
    for sub in ["src", "tests", "docs"] {
        std::fs::create_dir(dir.join(sub)).expect("subdir");
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .args(["serve", "--mode", "yolo", "--workspace"])
        .arg(ws.path())
        .env("TOOLHOST_CACHE_DIR", cache)
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env_remove("TOOLHOST_CONFIG");
    let mut sides = vec![Side {
        name: "toolhost serve",
        server: Raw::start(command),
        read: ("read_file", json!({"path": "a.txt"})),
        list: ("list_dir", json!({"path": "dir"})),
        rounds: Vec::new(),
    }];
    let npm = tempfile::tempdir().expect("temp");
    match reference_server(npm.path(), ws.path()) {
        Ok(command) => sides.push(Side {
            name: "reference server",
            server: Raw::start(command),
            read: (
                "read_text_file",
                json!({"path": ws.path().join("a.txt").display().to_string()}),
            ),
            list: ("list_directory", json!({"path": dir.display().to_string()})),
            rounds: Vec::new(),
        }),
        Err(why) => println!("reference server not measured: {why}"),
    }
    // Warm both (the first calls load code, fill caches, JIT-compile).
    for side in &mut sides {
        side.round(n / 4);
        side.rounds.clear();
    }
    for _ in 0..rounds {
        for side in &mut sides {
            side.round(n);
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| server | call | p50 (median of rounds) | p99 (median) | p99 per round |");
    println!("|---|---|---|---|---|");
    for side in &sides {
        for (i, (tool, _)) in [&side.read, &side.list].into_iter().enumerate() {
            let (p50, p99) = side.medians(i);
            let each: Vec<String> = side
                .rounds
                .iter()
                .map(|r| format!("{:.2}", ms(r[i].1)))
                .collect();
            println!(
                "| {} | {tool} | {:.3} ms | {:.3} ms | {} |",
                side.name,
                ms(p50),
                ms(p99),
                each.join(", ")
            );
        }
    }
    let (read_p50, read_p99) = sides[0].medians(0);
    println!(
        "read_file p99 {:.3} ms (target <= 2 ms), p50 {:.3} ms",
        ms(read_p99),
        ms(read_p50)
    );
    if let Some(reference) = sides.get(1) {
        let (ours50, ours99) = sides[0].medians(1);
        let (theirs50, theirs99) = reference.medians(1);
        let (r50, r99) = reference.medians(0);
        println!(
            "list_dir against list_directory: p50 {:.2}×, p99 {:.2}× (target <= 1); read_file against read_text_file: p50 {:.2}×, p99 {:.2}×",
            ours50.as_secs_f64() / theirs50.as_secs_f64(),
            ours99.as_secs_f64() / theirs99.as_secs_f64(),
            read_p50.as_secs_f64() / r50.as_secs_f64(),
            read_p99.as_secs_f64() / r99.as_secs_f64(),
        );
    }
}
