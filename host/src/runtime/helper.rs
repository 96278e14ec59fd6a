//! Work ahead of use in a helper process: `toolhost serve` compiles each
//! tool into the compile cache in a child process of its own binary
//! (`toolhost __compile-ahead`), which exits when done. What compiling
//! leaves in a process (Cranelift's contexts, the allocator's arenas,
//! grown by threads that compiled tens of megabytes of code) goes with the
//! child, so a server that compiled every tool idles at the figure of one
//! that found them in the cache (docs/benchmarks.md, "Memory"). The
//! server then loads a tool from the cache file, mapped, on its first
//! call, as it would have anyway.
//!
//! The child is told, on its standard input, where the cache is (its
//! directory and the key that signs its entries), what the entry is
//! called, how the component is linked and its bytes; it compiles with an
//! engine of the same settings (it refuses if they differ) and writes the
//! entry as the server would. A helper that cannot start or fails leaves
//! the work to the server's own threads, as before: slower to give memory
//! back, never broken.

use super::*;
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// The argument that makes the `toolhost` binary a helper.
pub const COMPILE_AHEAD_ARG: &str = "__compile-ahead";

/// What a helper is asked: the first line of its standard input (JSON),
/// followed by the component's bytes (`wasm_len` of them), then the
/// script of a `prepared` link.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Request {
    cache_dir: PathBuf,
    cache_key: Option<PathBuf>,
    cache_max_bytes: u64,
    /// The server's engine's compatibility (see `cache.rs`): a helper
    /// whose engine differs would write entries the server cannot load.
    compat: u64,
    key: String,
    label: String,
    linking: Kind,
    wasm_len: usize,
    /// Compile with the baseline compiler (`quick.rs`) for a first call
    /// instead, and write the compiled component to this file, not to the
    /// cache.
    #[serde(default)]
    baseline_out: Option<PathBuf>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Owned,
    Embedded,
    Preinitialised,
    Prepared,
}

impl Runtime {
    /// Compile ahead of use in helper processes running `program` (the
    /// `toolhost` binary, which answers [`COMPILE_AHEAD_ARG`]). Only with
    /// a compile cache kept: a helper's work reaches the server through it.
    pub(crate) fn compile_ahead_in(&self, program: PathBuf) {
        if self.cache.is_kept() {
            let _ = self.helper.set(program);
        }
    }

    /// Work ahead of use in a helper: true if it compiled `wasm` into the
    /// cache as `stored`; false (and why, in the log) if it could not, and
    /// the caller compiles it itself. A script the helper could not prepare
    /// is not tried again (as [`Runtime::prepare_failed`] says).
    pub(super) fn compiled_by_helper(
        &self,
        stored: &str,
        key: &str,
        wasm: WasmBytes<'_>,
        linking: Linking,
        label: &str,
    ) -> bool {
        let Some(program) = self.helper.get() else {
            return false;
        };
        let _compiling = Compiling::start(self, label, wasm.len());
        let started = std::time::Instant::now();
        match self.ask_helper(program, key, wasm, linking, label) {
            Ok(()) => {
                tracing::debug!(%label, elapsed = ?started.elapsed(), "compiled ahead by a helper process");
                self.cache.compiles.inc();
                if matches!(linking, Linking::Prepared(_)) && !self.cache.holds(stored) {
                    self.unprepared
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(stored.to_owned());
                }
                true
            }
            Err(err) => {
                tracing::warn!(%label, %err, "a helper process could not compile it ahead; the server does");
                false
            }
        }
    }

    fn ask_helper(
        &self,
        program: &Path,
        key: &str,
        wasm: WasmBytes<'_>,
        linking: Linking,
        label: &str,
    ) -> Result<(), String> {
        let bytes = wasm.unpacked()?;
        let (kind, script) = match linking {
            Linking::Owned => (Kind::Owned, ""),
            Linking::Embedded => (Kind::Embedded, ""),
            Linking::Preinitialised => (Kind::Preinitialised, ""),
            Linking::Prepared(script) => (Kind::Prepared, script),
        };
        let request = self.request(key, label, kind, bytes.len())?;
        run_helper(program, &request, &bytes, script)
    }

    fn request(
        &self,
        key: &str,
        label: &str,
        linking: Kind,
        wasm_len: usize,
    ) -> Result<Request, String> {
        Ok(Request {
            cache_dir: self.cache.dir().ok_or("no compile cache")?.to_owned(),
            cache_key: self.cache.key_file.clone(),
            cache_max_bytes: self.cache.max_bytes,
            compat: self.cache.compat,
            key: key.to_owned(),
            label: label.to_owned(),
            linking,
            wasm_len,
            baseline_out: None,
        })
    }

    /// A first call's component compiled by the baseline compiler in a
    /// helper process (what compiling leaves goes with it) and loaded into
    /// `engine`, the baseline compiler's, from the file it wrote (mapped,
    /// so its code is file-backed); `None` (and why, in the log) if there
    /// is no helper or it failed, and the caller compiles it itself.
    pub(super) fn baseline_by_helper(
        &self,
        engine: &Engine,
        key: &str,
        wasm: &[u8],
        label: &str,
    ) -> Option<Component> {
        let program = self.helper.get()?;
        let started = std::time::Instant::now();
        let loaded = (|| {
            let dir = self.cache.dir().ok_or("no compile cache")?;
            // A temporary file of the cache's: private, and swept if a
            // crash abandons it.
            let out = tempfile::Builder::new()
                .prefix(".tmp-baseline-")
                .tempfile_in(dir)
                .map_err(|e| format!("cannot make a file for it: {e}"))?;
            let mut request = self.request(key, label, Kind::Owned, wasm.len())?;
            request.baseline_out = Some(out.path().to_owned());
            run_helper(program, &request, wasm, "")?;
            let component = cache::deserialize(engine, out.path())
                .map_err(|e| format!("cannot load it: {e}"))?;
            // Unlinked now, held open: later calls map it again.
            self.keep_baseline(key, out.into_file());
            Ok(component)
        })();
        loaded
            .inspect(|_| tracing::debug!(%label, elapsed = ?started.elapsed(), "compiled by the baseline compiler in a helper process"))
            .inspect_err(|err: &String| tracing::debug!(%label, %err, "a helper process could not compile it with the baseline compiler; the server does"))
            .ok()
    }
}

/// Most a helper may run: a compile past it is stopped, and the server
/// does the work (a helper that hangs must not stop work ahead of use).
const HELPER_TIME_LIMIT: Duration = Duration::from_secs(300);

/// Run `program` as a helper on `request`, its component `wasm` and
/// `script`; why not, if it failed (with the last line it said).
fn run_helper(program: &Path, request: &Request, wasm: &[u8], script: &str) -> Result<(), String> {
    let mut header = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    header.push(b'\n');
    let mut child = Command::new(program)
        .arg(COMPILE_AHEAD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let (stdin, stderr) = (child.stdin.take(), child.stderr.take());
    std::thread::scope(|threads| {
        // Fed and heard on threads of their own, so that a helper that
        // stops reading or fills its pipe is still stopped in time.
        let written = threads.spawn(move || {
            let mut stdin = stdin.ok_or_else(|| "its standard input was not open".to_owned())?;
            stdin
                .write_all(&header)
                .and_then(|()| stdin.write_all(wasm))
                .and_then(|()| stdin.write_all(script.as_bytes()))
                .map_err(|e| format!("cannot give it the component: {e}"))
        });
        let said = threads.spawn(move || {
            let mut said = String::new();
            if let Some(mut stderr) = stderr {
                let _ = stderr.read_to_string(&mut said);
            }
            said
        });
        let started = std::time::Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if started.elapsed() > HELPER_TIME_LIMIT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(format!(
                        "it ran past {} s and was stopped",
                        HELPER_TIME_LIMIT.as_secs()
                    ));
                }
                // Often at first (a first call waits), then less.
                Ok(None) => std::thread::sleep(
                    (started.elapsed() / 20)
                        .clamp(Duration::from_millis(1), Duration::from_millis(50)),
                ),
                Err(e) => break Err(format!("cannot wait for it: {e}")),
            }
        };
        let written = written
            .join()
            .unwrap_or_else(|_| Err("feeding it panicked".to_owned()));
        let said = said.join().unwrap_or_default();
        let said = said.lines().rev().find(|l| !l.trim().is_empty());
        match status? {
            status if !status.success() => Err(format!(
                "it ended with {status}: {}",
                said.unwrap_or("(it said nothing)")
            )),
            _ => written,
        }
    })
}

/// Be a helper: read a request from `input`, compile it into the cache it
/// names, and say why not if that fails. What `toolhost __compile-ahead`
/// runs.
pub fn compile_ahead_helper(input: impl Read) -> Result<(), String> {
    let mut input = std::io::BufReader::new(input);
    let mut header = String::new();
    input
        .read_line(&mut header)
        .map_err(|e| format!("cannot read the request: {e}"))?;
    let request: Request =
        serde_json::from_str(&header).map_err(|e| format!("not a compile request: {e}"))?;
    let mut wasm = vec![0; request.wasm_len];
    input
        .read_exact(&mut wasm)
        .map_err(|e| format!("cannot read the component: {e}"))?;
    let mut script = String::new();
    input
        .read_to_string(&mut script)
        .map_err(|e| format!("cannot read the script: {e}"))?;
    if let Some(out) = request.baseline_out {
        let engine = quick::Quick::new()
            .map_err(|e| format!("no baseline compiler: {e}"))?
            .engine;
        let compiled = Component::new(&engine, &wasm)
            .and_then(|component| component.serialize())
            .map_err(|e| format!("the baseline compiler cannot compile it: {e}"))?;
        return std::fs::write(&out, compiled)
            .map_err(|e| format!("cannot write {}: {e}", out.display()));
    }
    let runtime = Runtime::new(RuntimeConfig {
        cache: CacheDir::At(request.cache_dir),
        cache_key: request.cache_key,
        cache_max_bytes: request.cache_max_bytes,
        max_concurrent_calls: 1,
        pool_instances: false,
        ..RuntimeConfig::default()
    })
    .map_err(|e| e.to_string())?;
    if runtime.cache.compat != request.compat {
        return Err("its engine's settings differ from the server's".to_owned());
    }
    let linking = match request.linking {
        Kind::Owned => Linking::Owned,
        Kind::Embedded => Linking::Embedded,
        Kind::Preinitialised => Linking::Preinitialised,
        Kind::Prepared => Linking::Prepared(&script),
    };
    match runtime.compile_into_cache(
        &request.key,
        WasmBytes::Plain(&wasm),
        linking,
        &request.label,
    ) {
        Ok(true) => Ok(()),
        Ok(false) => Err("the compile cache is not usable here".to_owned()),
        Err(err) => Err(err),
    }
}
