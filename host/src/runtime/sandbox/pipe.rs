//! A guest stdout/stderr that keeps the first bytes written and discards the
//! rest without ever failing the guest's write (a failing `println!` would
//! panic the plugin).

use bytes::Bytes;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// How much a guest may write in one go; any positive size works.
const WRITE_BUDGET: usize = 64 * 1024;

/// Buffer output: the first `capacity` bytes and a count of what was dropped.
#[derive(Clone, Debug)]
pub(crate) struct CappedPipe {
    inner: Arc<Mutex<Buffer>>,
}

#[derive(Debug, Default)]
struct Buffer {
    bytes: Vec<u8>,
    capacity: usize,
    dropped: u64,
}

impl CappedPipe {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Buffer {
                capacity,
                ..Buffer::default()
            })),
        }
    }

    fn push(&self, data: &[u8]) {
        let mut c = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let room = c.capacity.saturating_sub(c.bytes.len());
        let keep = room.min(data.len());
        c.bytes.extend_from_slice(&data[..keep]);
        c.dropped += (data.len() - keep) as u64;
    }

    /// What was captured, lossily decoded, with a note if some was dropped.
    pub(crate) fn text(&self) -> String {
        let c = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut text = String::from_utf8_lossy(&c.bytes).into_owned();
        if c.dropped > 0 {
            text.push_str(&format!("\n[... {} more bytes dropped]", c.dropped));
        }
        text
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_BUDGET)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_head_and_counts_the_rest() {
        let pipe = CappedPipe::new(5);
        pipe.push(b"hello world");
        pipe.push(b"!");
        assert_eq!(pipe.text(), "hello\n[... 7 more bytes dropped]");
    }
}
