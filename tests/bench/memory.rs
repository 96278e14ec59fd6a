//! Memory: the resident size of `toolhost serve` (stdio) right after it
//! starts, once every built-in has answered a call, and at its peak with a
//! call running in every slot (the looping fixture, cut at the 1 s limit):
//! the growth per call in flight. Targets: idle <= 40 MB, <= 8 MB per call
//! in flight.

use crate::soak_driver::{config, connect_stdio, held, status};
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// One valid call of each built-in the default configuration offers.
const CALLS: &[(&str, &str)] = &[
    ("read_file", r#"{"path":"a.txt"}"#),
    ("write_file", r#"{"path":"b.txt","content":"b"}"#),
    (
        "edit_file",
        r#"{"path":"b.txt","old_str":"b","new_str":"c"}"#,
    ),
    (
        "multi_edit",
        r#"{"path":"b.txt","edits":[{"old_str":"c","new_str":"d"}]}"#,
    ),
    (
        "apply_patch",
        r#"{"patch":"--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-d\n+e\n"}"#,
    ),
    ("list_dir", "{}"),
    ("list_files", "{}"),
    ("list_dirs", "{}"),
    ("find_files", r#"{"pattern":"*.txt"}"#),
    ("grep", r#"{"pattern":"hello"}"#),
    ("search_code", r#"{"pattern":"hello"}"#),
    ("run_command", r#"{"command":"true"}"#),
    ("process", r#"{"action":"list"}"#),
    ("get_datetime", "{}"),
    ("todo_manager", "{}"),
    ("react", r#"{"thought":"measure"}"#),
    ("save_memory", r#"{"fact":"the bench ran"}"#),
    ("memory_search", r#"{"query":"bench"}"#),
    ("manage_goals", r#"{"action":"list"}"#),
    (
        "validate_output",
        r#"{"outputType":"x","schema":{"type":"object"},"data":{}}"#,
    ),
];

/// Run the section: `slots` calls in flight at the peak; twice, the first
/// time on the bench's compile cache as it is (empty when the section runs
/// alone: the server is still compiling every tool ahead of use while it is
/// measured), the second after `fill_cache` has compiled every tool into it.
pub fn run(cache: &Path, slots: usize, fill_cache: impl FnOnce()) {
    println!("\n## Memory (toolhost serve over stdio, resident set)");
    first_start_without_calls();
    measure(cache, slots, "first start (compiling ahead)", true);
    fill_cache();
    measure(cache, slots, "warm compile cache", false);
}

/// A first start on an empty compile cache of its own that nobody calls:
/// what it idles at once its work ahead of use is done.
fn first_start_without_calls() {
    let runtime = crate::client_runtime(2);
    let cache = tempfile::tempdir().expect("temp");
    let ws = tempfile::tempdir().expect("temp");
    let home = tempfile::tempdir().expect("temp");
    let config = config(home.path());
    runtime.block_on(async {
        let command = crate::soak::command(cache.path(), ws.path(), &config);
        let (session, pid) = connect_stdio(command).await;
        let _ = session.peer().list_all_tools().await.expect("tools/list");
        let started = std::time::Instant::now();
        if compiled_ahead(cache.path(), pid).await {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            let (anon, file) = split(pid);
            println!(
                "first start, no call: idle once compiled ahead ({:.0} s) {:.1} MB ({:.1} anonymous, {:.1} file-backed; target <= 40 MB)",
                started.elapsed().as_secs_f64(),
                held(pid).rss_kib as f64 / 1024.0,
                anon as f64 / 1024.0,
                file as f64 / 1024.0
            );
        } else {
            println!("first start, no call: idle once compiled ahead: NOT MEASURED (work ahead of use did not finish within five minutes)");
        }
        session.cancel().await.expect("close");
    });
}

/// One pass of calls on `cache`; `compiling_ahead` when work ahead of use
/// still runs through it, so its idle figures before the end are not yet
/// the idle server's (the target applies once compiled ahead).
fn measure(cache: &Path, slots: usize, pass: &str, compiling_ahead: bool) {
    let runtime = crate::client_runtime(2);
    let ws = tempfile::tempdir().expect("temp");
    let home = tempfile::tempdir().expect("temp");
    std::fs::write(ws.path().join("a.txt"), "hello\n").expect("a.txt");
    let config = config(home.path());
    std::fs::write(
        &config,
        format!(
            "{}max_concurrent_calls = {slots}\n",
            std::fs::read_to_string(&config).expect("config")
        ),
    )
    .expect("config");
    runtime.block_on(async {
        let mut command = crate::soak::command(cache, ws.path(), &config);
        // Idle tools are let go after a second (60 by default).
        command.args(["--unload-idle-secs", "1"]);
        let (session, pid) = connect_stdio(command).await;
        let peer = session.peer().clone();
        let _ = peer.list_all_tools().await.expect("tools/list");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let started = held(pid).rss_kib;
        for (tool, args) in CALLS {
            let args: serde_json::Value = serde_json::from_str(args).expect("args");
            let r = peer
                .call_tool(
                    CallToolRequestParams::new(*tool)
                        .with_arguments(args.as_object().cloned().unwrap_or_default()),
                )
                .await
                .expect("answered");
            assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let idle = held(pid).rss_kib;
        // Two idle seconds: the server lets go of the tools it loaded.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let let_go = held(pid).rss_kib;
        let (let_go_anon, let_go_file) = split(pid);
        // Every slot busy: the looping fixture runs until the 1 s limit.
        let calls: Vec<_> = (0..slots)
            .map(|_| {
                let peer = peer.clone();
                tokio::spawn(async move {
                    peer.call_tool(
                        CallToolRequestParams::new("misbehave")
                            .with_arguments(json!({"action": "loop"}).as_object().cloned().unwrap_or_default()),
                    )
                    .await
                })
            })
            .collect();
        let mut peak = let_go;
        let until = std::time::Instant::now() + Duration::from_millis(1500);
        while std::time::Instant::now() < until {
            peak = peak.max(held(pid).rss_kib);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for call in calls {
            let _ = call.await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = held(pid).rss_kib;
        let mb = |kib: u64| kib as f64 / 1024.0;
        let (anon, file) = split(pid);
        let per_call = (peak.saturating_sub(let_go)) as f64 / 1024.0 / slots as f64;
        // Once the work ahead of use is done (every built-in in the cache)
        // and the tools it replaced let go: what a first start idles at.
        if compiled_ahead(cache, pid).await {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            let (anon, file) = split(pid);
            println!(
                "{pass}: idle once compiled ahead {:.1} MB ({:.1} anonymous, {:.1} file-backed; target <= 40 MB)",
                mb(held(pid).rss_kib),
                mb(anon),
                mb(file)
            );
        } else {
            println!(
                "{pass}: idle once compiled ahead: NOT MEASURED (work ahead of use did not finish within five minutes)"
            );
        }
        let let_go_target = if compiling_ahead {
            "work ahead of use still running: the idle target applies once compiled ahead"
        } else {
            "target <= 40 MB"
        };
        println!(
            "{pass}: after start {:.1} MB (target <= 40 MB); every built-in used once {:.1} MB, then idle with the tools let go {:.1} MB ({:.1} anonymous, {:.1} file-backed; {let_go_target}); {slots} calls in flight: peak {:.1} MB, {:.2} MB a call (target <= 8 MB); after they ended {:.1} MB ({:.1} MB anonymous, {:.1} MB file-backed: the binary and compiled code)",
            mb(started),
            mb(idle),
            mb(let_go),
            mb(let_go_anon),
            mb(let_go_file),
            mb(peak),
            per_call,
            mb(after),
            mb(anon),
            mb(file)
        );
        session.cancel().await.expect("close");
    });
}

/// A process's minor page faults and CPU time (user and system, in clock
/// ticks: 100 a second) so far, from `/proc/PID/stat`; zeros once it is
/// gone.
pub fn faults_and_cpu(pid: u32) -> (u64, u64) {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or((0, 0), |stat| {
        // After the name come the state (the file's 3rd field) and the
        // rest: minflt is its 10th, utime and stime its 14th and 15th.
        let after_name = stat.rsplit(')').next().unwrap_or_default();
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let at = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
        (
            at(7).unwrap_or(0),
            at(11).unwrap_or(0) + at(12).unwrap_or(0),
        )
    })
}

/// Wait (up to five minutes) until `cache` holds at least as many compiled
/// components as there are built-ins (the plugin directory's fixtures are
/// compiled too), no helper process compiles for the server `pid`, and it
/// used at most 5% of a core for two seconds (compiling takes a whole one;
/// an idle server's pool monitor and epoch ticker take about 2%): its work
/// ahead of use is done. False if that never came.
async fn compiled_ahead(cache: &Path, pid: u32) -> bool {
    let cpu = || faults_and_cpu(pid).1;
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let mut used = cpu();
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = cpu();
        if crate::startup::compiled(cache) >= toolhost::builtins().len()
            && now.saturating_sub(used) <= 10
            && helpers(pid) == 0
        {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        used = now;
    }
}

/// How many helper processes compile ahead of use for `pid` (its other
/// children, such as a command's spare namespace, do not count).
fn helpers(pid: u32) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|c| c.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|child| {
            std::fs::read(format!("/proc/{child}/cmdline"))
                .is_ok_and(|c| c.windows(15).any(|w| w == b"__compile-ahead"))
        })
        .count()
}

/// `pid`'s resident memory split: anonymous (heap, stacks, instances) and
/// file-backed (the binary, mapped compiled code), KiB.
fn split(pid: u32) -> (u64, u64) {
    let field = status(pid);
    (field("RssAnon:"), field("RssFile:") + field("RssShmem:"))
}
