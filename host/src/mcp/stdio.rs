//! MCP over stdio, framed by toolhost rather than rmcp's stdio transport,
//! for what JSON-RPC asks and rmcp leaves out:
//!
//! - A line that is not JSON gets a `-32700` parse error (id null), at
//!   most [`PARSE_ERRORS_PER_SECOND`] a second, so a peer that echoes
//!   garbage cannot start a storm. JSON that is no JSON-RPC message gets
//!   `-32600` with its id when it has one; a malformed notification gets
//!   nothing (JSON-RPC never answers notifications).
//! - A batch (a JSON array) is served when the negotiated protocol has
//!   batches (2025-03-26): each message runs as if sent alone, and the
//!   answers to its requests go back together as one array. Other
//!   versions dropped batches: the answer is one `-32600` saying so.
//!
//! Lines are read by a task of their own and handed over through a
//! channel, so `receive` (polled inside rmcp's `select!`) loses nothing
//! when it is cancelled.

use rmcp::RoleServer;
use rmcp::ServiceExt as _;
use rmcp::model::{ErrorData, JsonRpcMessage, NumberOrString, ProtocolVersion, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Deserialize as _;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The most parse errors answered in one second; more are logged only.
const PARSE_ERRORS_PER_SECOND: u32 = 10;
/// The longest line read (64 MiB); a longer one is an error, not memory.
const MAX_LINE: usize = 64 << 20;
/// Messages read ahead of the service.
const QUEUE: usize = 64;
/// How long a batch waits for the `initialize` answer it may follow.
const VERSION_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// The stdio transport: lines in, lines out.
pub(super) struct Stdio {
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    out: Arc<Out>,
}

/// What the reader and `send` share: the writer, the negotiated version
/// and the batches still waiting for answers.
struct Out {
    writer: tokio::sync::Mutex<Option<Writer>>,
    /// The protocol version of the `initialize` answer, once sent.
    version: tokio::sync::watch::Sender<Option<ProtocolVersion>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    batches: Vec<Batch>,
}

/// A batch whose requests are not all answered yet.
struct Batch {
    waiting: HashSet<NumberOrString>,
    answers: Vec<Value>,
}

impl Stdio {
    /// The transport over this process's stdin and stdout. When they are
    /// pipes (as an MCP client starts a server) they are read and written
    /// on tokio's reactor, non-blocking; otherwise (a file, a terminal, a
    /// socket) through tokio's stdin and stdout, which hand every read and
    /// write to a blocking-pool thread: at 50 calls in flight those
    /// hand-offs cost more CPU than the calls (docs/benchmarks.md).
    /// Non-blocking is a property of the pipe end, shared by every
    /// descriptor of it: stdout stays blocking when stderr is the same pipe
    /// (`2>&1`), where the logs are written without a reactor.
    pub(super) fn process() -> Self {
        use std::os::fd::AsFd as _;
        use tokio::net::unix::pipe;
        let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
        let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().ok();
        let read: Box<dyn AsyncRead + Send + Unpin> =
            match dup(stdin.as_fd()).map(pipe::Receiver::from_owned_fd) {
                Some(Ok(pipe)) => Box::new(pipe),
                _ => Box::new(tokio::io::stdin()),
            };
        let shared = same_file(stdout.as_fd(), std::io::stderr().as_fd());
        let write: Writer = match dup(stdout.as_fd())
            .filter(|_| !shared)
            .map(pipe::Sender::from_owned_fd)
        {
            Some(Ok(pipe)) => Box::new(pipe),
            _ => Box::new(tokio::io::stdout()),
        };
        Self::new(read, write)
    }

    /// A transport over `read` and `write` (stdin and stdout).
    pub(super) fn new(
        read: impl AsyncRead + Send + Unpin + 'static,
        write: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        let out = Arc::new(Out {
            writer: tokio::sync::Mutex::new(Some(Box::new(write))),
            version: tokio::sync::watch::channel(None).0,
            state: Mutex::new(State::default()),
        });
        let (tx, incoming) = mpsc::channel(QUEUE);
        tokio::spawn(read_lines(BufReader::new(read), tx, Arc::clone(&out)));
        Self { incoming, out }
    }
}

impl Transport<RoleServer> for Stdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = Arc::clone(&self.out);
        async move {
            let id = match &item {
                JsonRpcMessage::Response(r) => {
                    if let ServerResult::InitializeResult(init) = &r.result {
                        out.version
                            .send_replace(Some(init.protocol_version.clone()));
                    }
                    Some(r.id.clone())
                }
                JsonRpcMessage::Error(e) => e.id.clone(),
                _ => None,
            };
            match id.map_or(Filed::No, |id| out.answer_in_batch(&id, &item)) {
                Filed::No => out.write(to_line(&item)).await,
                Filed::Waiting => Ok(()),
                Filed::Complete(line) => out.write(line).await,
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        drop(self.out.writer.lock().await.take());
        Ok(())
    }
}

impl Out {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn write(&self, mut line: String) -> std::io::Result<()> {
        line.push('\n');
        let mut writer = self.writer.lock().await;
        let Some(w) = writer.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "the transport is closed",
            ));
        };
        w.write_all(line.as_bytes()).await?;
        w.flush().await
    }

    /// File the answer `item` to `id` if a batch waits for it.
    fn answer_in_batch(&self, id: &NumberOrString, item: &TxJsonRpcMessage<RoleServer>) -> Filed {
        let mut state = self.lock();
        let Some(at) = state.batches.iter().position(|b| b.waiting.contains(id)) else {
            return Filed::No;
        };
        let batch = &mut state.batches[at];
        batch.waiting.remove(id);
        batch
            .answers
            .push(serde_json::to_value(item).unwrap_or(Value::Null));
        if !batch.waiting.is_empty() {
            return Filed::Waiting;
        }
        let done = state.batches.remove(at);
        Filed::Complete(Value::Array(done.answers).to_string())
    }
}

/// Where an answer went.
enum Filed {
    /// No batch waits for it: it goes out alone.
    No,
    /// Its batch waits for more answers.
    Waiting,
    /// It completed its batch: the batch's line.
    Complete(String),
}

/// One message as a line of JSON.
fn to_line(item: &TxJsonRpcMessage<RoleServer>) -> String {
    serde_json::to_string(item).unwrap_or_else(|e| {
        let error = ErrorData::internal_error(format!("cannot encode a message: {e}"), None);
        error_answer(None, &error).to_string()
    })
}

/// A JSON-RPC error answer.
fn error_answer(id: Option<&Value>, error: &ErrorData) -> Value {
    json!({"jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": error})
}

/// Read lines until the peer closes stdin (or the service stops
/// listening), handing each message to the service.
async fn read_lines(
    mut read: BufReader<impl AsyncRead + Unpin>,
    tx: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    out: Arc<Out>,
) {
    let mut line = Vec::new();
    let mut limiter = Limiter::default();
    loop {
        line.clear();
        match (&mut read)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(%e, "cannot read stdin");
                return;
            }
        }
        if line.len() > MAX_LINE && !line.ends_with(b"\n") {
            tracing::warn!("a message longer than {MAX_LINE} bytes was dropped");
            if !skip_line(&mut read).await {
                return;
            }
            let too_long = ErrorData::invalid_request(
                format!("the message is longer than {MAX_LINE} bytes; it was dropped"),
                None,
            );
            let _ = out.write(error_answer(None, &too_long).to_string()).await;
            continue;
        }
        let text = trim(&line);
        if text.is_empty() {
            continue;
        }
        for message in messages(text, &out, &mut limiter).await {
            if tx.send(message).await.is_err() {
                return;
            }
        }
    }
}

/// Skip the rest of a line without keeping it; false at the end of input.
async fn skip_line(read: &mut BufReader<impl AsyncRead + Unpin>) -> bool {
    loop {
        let (used, done) = match read.fill_buf().await {
            Ok([]) | Err(_) => return false,
            Ok(buf) => match buf.iter().position(|b| *b == b'\n') {
                Some(at) => (at + 1, true),
                None => (buf.len(), false),
            },
        };
        read.consume(used);
        if done {
            return true;
        }
    }
}

/// The messages of one line; errors for what is not a message are
/// written here.
async fn messages(
    text: &[u8],
    out: &Out,
    limiter: &mut Limiter,
) -> Vec<RxJsonRpcMessage<RoleServer>> {
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(message) => return vec![message],
        Err(e) if e.is_syntax() || e.is_eof() => {
            if limiter.allow() {
                let error = ErrorData::parse_error(
                    format!(
                        "parse error: the line is not JSON ({e}); send one JSON-RPC message per line"
                    ),
                    None,
                );
                let _ = out.write(error_answer(None, &error).to_string()).await;
            } else {
                tracing::debug!("unparseable input (not answered: too many)");
            }
            return Vec::new();
        }
        Err(_) => {}
    }
    let Ok(value) = serde_json::from_slice::<Value>(text) else {
        return Vec::new();
    };
    match value {
        Value::Array(items) => batch(items, out).await,
        single => {
            if let Some(answer) = invalid_message(&single) {
                let _ = out.write(answer.to_string()).await;
            }
            Vec::new()
        }
    }
}

/// The error answer for JSON that is not a valid message, if it is owed
/// one (a request, or something with no method; never a notification).
fn invalid_message(value: &Value) -> Option<Value> {
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number());
    let notification = value.get("method").is_some() && id.is_none();
    if notification {
        tracing::debug!("a malformed notification was ignored");
        return None;
    }
    let error = ErrorData::invalid_request(
        "invalid request: not a JSON-RPC 2.0 request, response or notification this server knows",
        None,
    );
    Some(error_answer(id, &error))
}

/// A batch: served when the negotiated version has batches, else refused.
async fn batch(items: Vec<Value>, out: &Out) -> Vec<RxJsonRpcMessage<RoleServer>> {
    // The reader runs ahead of the service: a batch right behind the
    // `initialize` request waits (a little) for its answer.
    let mut negotiated = out.version.subscribe();
    let _ = tokio::time::timeout(VERSION_WAIT, negotiated.wait_for(Option::is_some)).await;
    let version = out.version.borrow().clone();
    if version.as_ref() != Some(&ProtocolVersion::V_2025_03_26) {
        let shown = version.map_or_else(|| "none yet".to_owned(), |v| v.to_string());
        let error = ErrorData::invalid_request(
            format!(
                "JSON-RPC batches are part of MCP 2025-03-26 only, and the negotiated version is \
                 {shown}; send each message on its own line"
            ),
            None,
        );
        let _ = out.write(error_answer(None, &error).to_string()).await;
        return Vec::new();
    }
    if items.is_empty() {
        let error = ErrorData::invalid_request("an empty batch", None);
        let _ = out.write(error_answer(None, &error).to_string()).await;
        return Vec::new();
    }
    let mut messages = Vec::new();
    let mut waiting = HashSet::new();
    let mut answers = Vec::new();
    for item in items {
        match RxJsonRpcMessage::<RoleServer>::deserialize(&item) {
            Ok(message) => {
                if let JsonRpcMessage::Request(r) = &message {
                    waiting.insert(r.id.clone());
                }
                messages.push(message);
            }
            Err(_) => answers.extend(invalid_message(&item)),
        }
    }
    if waiting.is_empty() {
        if !answers.is_empty() {
            let _ = out.write(Value::Array(answers).to_string()).await;
        }
    } else {
        out.lock().batches.push(Batch { waiting, answers });
    }
    messages
}

fn trim(line: &[u8]) -> &[u8] {
    let line = line
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(line);
    line.trim_ascii()
}

/// At most [`PARSE_ERRORS_PER_SECOND`] answers a second.
#[derive(Default)]
struct Limiter {
    window: Option<Instant>,
    count: u32,
}

impl Limiter {
    fn allow(&mut self) -> bool {
        let now = Instant::now();
        match self.window {
            Some(start) if now.duration_since(start).as_secs() < 1 => {
                self.count += 1;
                self.count <= PARSE_ERRORS_PER_SECOND
            }
            _ => {
                self.window = Some(now);
                self.count = 1;
                true
            }
        }
    }
}

/// Whether `a` and `b` are the same file (or pipe).
fn same_file(a: std::os::fd::BorrowedFd<'_>, b: std::os::fd::BorrowedFd<'_>) -> bool {
    match (rustix::fs::fstat(a), rustix::fs::fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}

/// The stdio transport fed `input` as its standard input, with `version`
/// already negotiated, every request passed on answered at once (an empty
/// result), as a server would: what it wrote to standard output.
/// For the fuzz target `mcp_stdio` and its regression tests.
pub(crate) async fn replay(input: Vec<u8>, version: ProtocolVersion) -> Vec<u8> {
    let (write, mut written) = tokio::io::duplex(1 << 16);
    let mut stdio = Stdio::new(std::io::Cursor::new(input), write);
    stdio.out.version.send_replace(Some(version));
    let drain = async {
        let mut bytes = Vec::new();
        let _ = written.read_to_end(&mut bytes).await;
        bytes
    };
    let serve = async {
        while let Some(message) = stdio.receive().await {
            if let JsonRpcMessage::Request(request) = message {
                let answer = ServerResult::EmptyResult(rmcp::model::EmptyResult {});
                let _ = stdio
                    .send(JsonRpcMessage::response(answer, request.id))
                    .await;
            }
        }
        let waiting = stdio.out.lock().batches.len();
        let _ = stdio.close().await;
        waiting
    };
    let (waiting, bytes) = tokio::join!(serve, drain);
    assert_eq!(
        waiting, 0,
        "a batch whose requests were all answered is still waiting"
    );
    bytes
}

/// Serve `executor` over stdin/stdout until the client closes the stream.
/// Stdout carries protocol frames only: plugin output is captured by the
/// sandbox and logs go to stderr.
pub async fn serve_stdio(
    executor: Arc<crate::executor::Executor>,
    options: super::ServeOptions,
) -> Result<(), super::ServeError> {
    let server = super::McpServer::new(executor, &options, "mcp-stdio");
    let running = server
        .clone()
        .serve(Stdio::process())
        .await
        .map_err(|e| super::ServeError::Transport(e.to_string()))?;
    let ended = running.waiting().await;
    // The client is gone: stop what it left running.
    server.cancel_all();
    ended.map_err(|e| super::ServeError::Transport(e.to_string()))?;
    Ok(())
}
