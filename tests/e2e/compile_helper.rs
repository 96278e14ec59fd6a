//! `toolhost serve` compiles ahead of use in helper processes of its own
//! binary (`toolhost __compile-ahead`, runtime/helper.rs), so what
//! compiling leaves in a process goes with them; what they write the
//! server loads; a helper that fails leaves the work to the server.

use crate::cold_start::{compiled_files, counting_runtime, two_builtins};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{CallOptions, Executor, Upkeep};

/// A helper program: a script that notes each run in `runs`, then does
/// `then` (the real binary by default).
fn helper(dir: &Path, then: &str) -> (PathBuf, PathBuf) {
    let runs = dir.join("runs");
    let script = dir.join("helper.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n{then}\n", runs.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, runs)
}

fn real_binary() -> String {
    format!("exec '{}' \"$@\"", env!("CARGO_BIN_EXE_toolhost"))
}

/// Compile ahead with `program` as the helper until both tools are in the
/// cache, and give the executor back.
fn compile_ahead(executor: Executor, program: &Path, cache: &Path) -> Arc<Executor> {
    let executor = Arc::new(executor);
    executor.start_upkeep(&Upkeep {
        compile_ahead: true,
        compile_helper: Some(program.to_owned()),
        ..Upkeep::default()
    });
    until_both_compiled(cache);
    executor
}

/// A temporary directory, the compile cache in it, and the executor of
/// two built-ins on a runtime using that cache (with its workspace).
fn two_builtins_cached() -> (tempfile::TempDir, PathBuf, Executor, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (runtime, _compiled) = counting_runtime(&cache);
    let (executor, ws) = two_builtins(runtime);
    (dir, cache, executor, ws)
}

/// `executor` with work ahead of use in helpers that run `then` (see
/// [`helper`]), after a first call of read_file that succeeded.
fn first_call_with_helper(executor: Executor, dir: &Path, then: &str) -> Arc<Executor> {
    let (program, _runs) = helper(dir, then);
    let executor = Arc::new(executor);
    executor.start_upkeep(&Upkeep {
        compile_ahead: true,
        compile_helper: Some(program),
        ..Upkeep::default()
    });
    let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(r.success && r.content.contains("hello"), "{r:?}");
    executor
}

/// A helper's `then` (see [`helper`]) that notes the kind of each request
/// (`baseline` or `ahead`) in the file it also returns, and runs `wait`
/// before work ahead of use; then the real binary.
fn noting_kinds(dir: &Path, wait: &str) -> (String, PathBuf) {
    let kinds = dir.join("kinds");
    let then = format!(
        "req=$(mktemp -p '{dir}')\ncat > \"$req\"\n\
         if head -n1 \"$req\" | grep -q '\"baseline_out\":\"'; then echo baseline >> '{kinds}';\n\
         else echo ahead >> '{kinds}'; {wait}; fi\n\
         exec '{bin}' \"$@\" < \"$req\"",
        dir = dir.display(),
        kinds = kinds.display(),
        bin = env!("CARGO_BIN_EXE_toolhost"),
    );
    (then, kinds)
}

/// The kinds [`noting_kinds`] noted, in order.
fn kinds_noted(kinds: &Path) -> Vec<String> {
    let noted = std::fs::read_to_string(kinds).unwrap();
    noted.lines().map(str::to_owned).collect()
}

/// The temporary files left in the compile cache `cache`.
fn temporaries(cache: &Path) -> Vec<String> {
    std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".tmp"))
        .collect()
}

/// Wait until the cache holds both tools compiled.
fn until_both_compiled(cache: &Path) {
    let started = Instant::now();
    while compiled_files(cache) < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "never compiled ahead"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn helpers_compile_ahead_and_the_server_loads_what_they_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (runtime, compiled) = counting_runtime(&cache);
    let (executor, _ws) = two_builtins(runtime);
    let (program, runs) = helper(dir.path(), &real_binary());
    let executor = compile_ahead(executor, &program, &cache);
    let runs = std::fs::read_to_string(&runs).unwrap();
    assert_eq!(
        runs.lines().collect::<Vec<_>>(),
        ["__compile-ahead"; 2],
        "one helper per tool"
    );
    let mut names = compiled.lock().unwrap().clone();
    names.sort();
    assert_eq!(names, ["get_datetime", "read_file"]);
    assert!(
        executor.tools().iter().all(|p| !p.is_warm()),
        "nothing loaded"
    );
    // The server loads the helpers' entries: signed with its key, by an
    // engine of its settings. Nothing is compiled again.
    let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(r.success && r.content.contains("hello"), "{r:?}");
    let r = executor.call("get_datetime", "{}", &CallOptions::default());
    assert!(r.success, "{r:?}");
    assert_eq!(
        compiled.lock().unwrap().len(),
        2,
        "the calls compiled nothing"
    );
}

#[test]
fn a_helper_that_fails_leaves_the_work_to_the_server() {
    let (dir, cache, executor, _ws) = two_builtins_cached();
    let (program, runs) = helper(dir.path(), "echo 'out of luck' >&2; exit 3");
    let executor = compile_ahead(executor, &program, &cache);
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 2);
    let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(r.success && r.content.contains("hello"), "{r:?}");
}

/// What is not a compile request, or asks for a cache the helper's engine
/// would not suit, is refused with a reason and writes nothing.
#[test]
fn a_helper_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let ask = |input: &[u8]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("__compile-ahead")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = ask(b"compile this please\n");
    assert!(said.contains("not a compile request"), "{said}");
    let request = |compat: u64, wasm_len: usize| {
        let mut line = serde_json::to_vec(&serde_json::json!({
            "cache_dir": dir.path().join("cache"),
            "cache_key": dir.path().join("key"),
            "cache_max_bytes": 1u64 << 30,
            "compat": compat,
            "key": "0123456789abcdef0123456789abcdef",
            "label": "nothing",
            "linking": "owned",
            "wasm_len": wasm_len,
        }))
        .unwrap();
        line.push(b'\n');
        line
    };
    let said = ask(&request(7, 0));
    assert!(said.contains("settings differ"), "{said}");
    let mut short = request(7, 100);
    short.extend_from_slice(b"\0asm");
    let said = ask(&short);
    assert!(said.contains("cannot read the component"), "{said}");
    let cache = dir.path().join("cache");
    let written = std::fs::read_dir(&cache).map_or(0, |d| {
        d.filter(|e| !e.as_ref().unwrap().path().ends_with("key"))
            .count()
    });
    assert_eq!(written, 0, "nothing written to the cache");
}

/// A first call that comes before work ahead of use has reached its tool
/// is compiled by the baseline compiler in a helper too (runtime/quick.rs),
/// which leaves nothing behind in the cache; work ahead of use then
/// compiles the tool as before, and the next call loads that.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_first_call_compiles_in_a_helper_too() {
    let (dir, cache, executor, _ws) = two_builtins_cached();
    // Work ahead held back, so the call comes first.
    let (then, kinds) = noting_kinds(dir.path(), "sleep 2");
    let executor = first_call_with_helper(executor, dir.path(), &then);
    until_both_compiled(&cache);
    let mut kinds = kinds_noted(&kinds);
    kinds.sort();
    assert_eq!(kinds, ["ahead", "ahead", "baseline"]);
    let left = temporaries(&cache);
    assert!(left.is_empty(), "the baseline's file is left: {left:?}");
    let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(r.success && r.content.contains("hello"), "{r:?}");
}

/// A helper that answers a first call's baseline request with something
/// that is not compiled code (a helper gone wrong, or a file swapped in
/// the cache meanwhile): the server refuses to load it, compiles the tool
/// itself, and the call succeeds; the file is gone.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_baseline_artifact_that_is_not_code_is_refused() {
    let (dir, cache, executor, _ws) = two_builtins_cached();
    let junk = dir.path().join("junk");
    let then = format!(
        "req=$(mktemp -p '{dir}')\ncat > \"$req\"\n\
         out=$(head -n1 \"$req\" | sed -n 's/.*\"baseline_out\":\"\\([^\"]*\\)\".*/\\1/p')\n\
         if [ -n \"$out\" ]; then printf '\\177ELF not code' > \"$out\"; echo done >> '{junk}'; exit 0; fi\n\
         sleep 2; exec '{bin}' \"$@\" < \"$req\"",
        dir = dir.path().display(),
        junk = junk.display(),
        bin = env!("CARGO_BIN_EXE_toolhost"),
    );
    let _executor = first_call_with_helper(executor, dir.path(), &then);
    assert_eq!(
        std::fs::read_to_string(&junk).unwrap().lines().count(),
        1,
        "the helper wrote junk for the first call"
    );
    until_both_compiled(&cache);
    let left = temporaries(&cache);
    assert!(left.is_empty(), "the junk file is left: {left:?}");
}

/// The baseline code's files of the compile cache `cache` this process
/// holds open (unlinked: only a descriptor names them).
fn baseline_files_held(cache: &Path) -> usize {
    baseline_descriptors(cache).len()
}

/// This process's descriptors of files of baseline code in `cache`, by
/// their paths under `/proc/self/fd`.
fn baseline_descriptors(cache: &Path) -> Vec<PathBuf> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| {
            let path = e.ok()?.path();
            let target = std::fs::read_link(&path).ok()?;
            (target.starts_with(cache) && target.to_string_lossy().contains(".tmp-baseline-"))
                .then_some(path)
        })
        .collect()
}

/// `executor` after a first call of read_file with helpers, whose work
/// ahead of use waits until the file returned first exists (so the calls
/// come first); also the file of kinds noted (see [`noting_kinds`]).
fn first_call_before_work_ahead(
    executor: Executor,
    dir: &Path,
) -> (PathBuf, PathBuf, Arc<Executor>) {
    let go = dir.join("go");
    let wait = format!("while [ ! -e '{}' ]; do sleep 0.05; done", go.display());
    let (then, kinds) = noting_kinds(dir, &wait);
    let executor = first_call_with_helper(executor, dir, &then);
    (go, kinds, executor)
}

/// Whether the tool `name` holds its code between calls.
fn holds_its_code(executor: &Executor, name: &str) -> bool {
    let tools = executor.tools();
    tools.iter().find(|p| p.name() == name).unwrap().is_warm()
}

/// A tool does not hold its baseline code between calls (on a first start
/// that was megabytes per tool called): the runtime keeps the file the
/// helper wrote, unlinked, and the next call maps it again instead of
/// compiling it again; once work ahead of use has compiled the tool, the
/// file is let go of too.
#[cfg(target_arch = "x86_64")]
#[test]
fn baseline_code_is_not_held_between_calls_nor_compiled_twice() {
    let (dir, cache, executor, _ws) = two_builtins_cached();
    let (go, kinds, executor) = first_call_before_work_ahead(executor, dir.path());
    let read_file = || holds_its_code(&executor, "read_file");
    assert!(!read_file(), "the tool let go of its baseline code");
    assert_eq!(baseline_files_held(&cache), 1, "the runtime keeps its file");
    for _ in 0..3 {
        let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
        assert!(r.success && r.content.contains("hello"), "{r:?}");
        assert!(!read_file());
    }
    let baselines = kinds_noted(&kinds)
        .iter()
        .filter(|k| *k == "baseline")
        .count();
    assert_eq!(baselines, 1, "mapped again, not compiled again");
    assert!(temporaries(&cache).is_empty(), "no name left in the cache");

    std::fs::write(&go, "").unwrap();
    until_both_compiled(&cache);
    let started = Instant::now();
    while baseline_files_held(&cache) > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the file is still held"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
    assert!(r.success && r.content.contains("hello"), "{r:?}");
    assert!(read_file(), "Cranelift's code is held between calls");
}

/// A kept file of baseline code that changed after it was kept (written
/// here through its descriptor, which only this process can do; the
/// bytes are the same, so only the check can tell) is not mapped: the
/// next call compiles the tool again, and from then on the tool holds its
/// baseline code between calls, as where `/proc` cannot be used, rather
/// than compiling it for every call.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_changed_baseline_file_is_not_mapped_nor_compiled_for_every_call() {
    use std::os::unix::fs::FileExt as _;
    let (dir, cache, executor, _ws) = two_builtins_cached();
    let (go, kinds, executor) = first_call_before_work_ahead(executor, dir.path());
    let held = || holds_its_code(&executor, "read_file");
    assert!(!held(), "the tool let go of its baseline code");
    let kept = baseline_descriptors(&cache);
    assert_eq!(kept.len(), 1, "the runtime keeps its file");
    let changed = std::fs::read_link(&kept[0]).unwrap();
    // One byte written over with itself: the code is the same, the file
    // is not the one kept (its modification time moved).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&kept[0])
        .expect("the kept file opened through its descriptor");
    let middle = file.metadata().unwrap().len() / 2;
    let mut byte = [0];
    std::thread::sleep(Duration::from_millis(20));
    file.read_exact_at(&mut byte, middle)
        .and_then(|()| file.write_all_at(&byte, middle))
        .expect("the kept file written through its descriptor");
    drop(file);
    for _ in 0..3 {
        let r = executor.call("read_file", r#"{"path":"a.txt"}"#, &CallOptions::default());
        assert!(r.success && r.content.contains("hello"), "{r:?}");
        assert!(held(), "the tool holds its baseline code now");
    }
    let baselines = kinds_noted(&kinds)
        .iter()
        .filter(|k| *k == "baseline")
        .count();
    assert_eq!(baselines, 2, "compiled again once, not for every call");
    // What is held now is the tool's own mapping of its new code.
    let held_files: Vec<_> = baseline_descriptors(&cache)
        .iter()
        .filter_map(|fd| std::fs::read_link(fd).ok())
        .collect();
    assert!(
        !held_files.contains(&changed),
        "the changed file let go of: {held_files:?}"
    );
    std::fs::write(&go, "").unwrap();
    until_both_compiled(&cache);
}
