//! The bytes a model reads: `tools/list` of `toolhost serve` (its default
//! tools, no configuration) and of the MCP reference filesystem server
//! (`@modelcontextprotocol/server-filesystem`, installed from npm into the
//! bench's temporary directory), per tool, and the JSON of a file-reading
//! result (17 bytes and 100 KB of text) on each, as the ratio to the text.
//! Targets (issue 47): the list ≤ 30 KB; a `read_file` result ≤ 1.1× its
//! text plus a constant.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The reference server's version, pinned so figures compare across runs.
const REFERENCE: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

/// A stdio MCP server spoken to line by line, so bytes are counted as sent.
pub struct Raw {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next: u64,
}

impl Raw {
    pub fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        let mut raw = Self {
            child,
            input,
            output,
            next: 0,
        };
        raw.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").expect("write");
        self.input.flush().expect("flush");
    }

    /// The `result` of `method`, as compact JSON (how both servers write it).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.output.read_line(&mut line).expect("read");
            assert!(n > 0, "the server closed stdout before answering {method}");
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The compact JSON length of `value`.
fn bytes(value: &Value) -> usize {
    value.to_string().len()
}

/// What one server costs a model: its list, and a read of each file.
struct Figures {
    list: usize,
    tools: Vec<(String, usize)>,
    reads: Vec<(usize, usize)>,
}

/// `server`'s list and the reads of `files` (paths as it takes them) with
/// `tool`: each result's JSON against the text it carries for the model.
fn measure(server: &mut Raw, tool: &str, files: &[String]) -> Figures {
    let list = server.request("tools/list", json!({}));
    let mut tools: Vec<(String, usize)> = list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| (t["name"].as_str().unwrap_or("?").to_owned(), bytes(t)))
        .collect();
    tools.sort_by_key(|t| std::cmp::Reverse(t.1));
    let reads = files
        .iter()
        .map(|path| {
            let result = server.request(
                "tools/call",
                json!({"name": tool, "arguments": {"path": path}}),
            );
            assert_ne!(result["isError"], true, "{tool} {path}: {result}");
            let text = result["content"][0]["text"].as_str().map_or(0, str::len);
            (text, bytes(&result))
        })
        .collect();
    Figures {
        list: bytes(&list),
        tools,
        reads,
    }
}

/// The reference server installed under `dir`, or why not.
pub fn reference_server(dir: &Path, ws: &Path) -> Result<Command, String> {
    let installed = Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(dir)
        .arg(REFERENCE)
        .status()
        .map_err(|e| format!("npm: {e}"))?;
    if !installed.success() {
        return Err(format!("npm install {REFERENCE} failed"));
    }
    let mut command = Command::new("node");
    command
        .arg(dir.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"))
        .arg(ws);
    Ok(command)
}

pub fn run(cache: &Path) {
    println!("\n## Bytes a model reads (tools/list and a file read, compact JSON)");
    let ws = tempfile::tempdir().expect("temp");
    let home = tempfile::tempdir().expect("temp");
    let small = "a line of 17 bytes";
    std::fs::write(ws.path().join("small.txt"), &small[..17]).expect("small");
    // 100 KB of source-like lines (read_file's own limit is 100 KB).
    let line = "    let value = compute(&input, \"quoted\", 42); // a comment\n";
    let big: String = line.repeat(100 * 1024 / line.len() - 20);
    std::fs::write(ws.path().join("big.txt"), &big).expect("big");

    let serve = |extra: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        command
            .args(["serve", "--mode", "yolo", "--workspace"])
            .arg(ws.path())
            .args(extra)
            .env("TOOLHOST_CACHE_DIR", cache)
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_STATE_HOME", home.path().join("state"))
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env_remove("TOOLHOST_CONFIG");
        let files = ["small.txt".to_owned(), "big.txt".to_owned()];
        measure(&mut Raw::start(command), "read_file", &files)
    };
    let ours = serve(&[]);
    // What every client got before issue 47: output schemas, and the text
    // twice in each result.
    let structured = serve(&["--structured-output"]);

    let npm = tempfile::tempdir().expect("temp");
    let reference = reference_server(npm.path(), ws.path()).map(|command| {
        let mut server = Raw::start(command);
        let files = ["small.txt", "big.txt"].map(|f| ws.path().join(f).display().to_string());
        measure(&mut server, "read_text_file", &files)
    });

    println!(
        "| | tools | tools/list | {} B file: result (× its text, + bytes) | {} KB file: the same |",
        17,
        big.len() / 1024
    );
    println!("|---|---|---|---|---|");
    let row = |name: &str, f: &Figures| {
        let read = |(text, json): (usize, usize)| {
            format!(
                "{json} B ({:.2}×, +{} B)",
                json as f64 / text as f64,
                json.saturating_sub(text)
            )
        };
        println!(
            "| {name} | {} | {} B | {} | {} |",
            f.tools.len(),
            f.list,
            read(f.reads[0]),
            read(f.reads[1])
        );
    };
    row("toolhost serve (default)", &ours);
    row("toolhost serve --structured-output", &structured);
    match &reference {
        Ok(f) => {
            row(REFERENCE, f);
            println!(
                "tools/list: toolhost {:.2}× the reference server's bytes ({:.0} vs {:.0} B per tool)",
                ours.list as f64 / f.list as f64,
                ours.list as f64 / ours.tools.len() as f64,
                f.list as f64 / f.tools.len() as f64
            );
        }
        Err(why) => println!("reference server not measured: {why}"),
    }
    println!("\nbytes per tool, toolhost (largest first):");
    for (name, n) in &ours.tools {
        println!("  {name:<16} {n:>6} B");
    }
    if let Ok(f) = &reference {
        println!("bytes per tool, reference server:");
        for (name, n) in &f.tools {
            println!("  {name:<26} {n:>6} B");
        }
    }
}
