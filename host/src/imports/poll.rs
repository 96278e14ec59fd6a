//! `wasi:io/poll` over wasmtime-wasi's, with every wait bounded: a guest
//! blocked on the host (a timer, an HTTP response or body, any pollable)
//! is stopped at the call's deadline with `timeout`, or at once when the
//! call is cancelled, exactly as a guest spinning in wasm is by the epoch
//! ticker, which cannot reach a guest that is not running.
//!
//! A wait that is not over at once runs on the thread's call runtime
//! ([`with_call_runtime`]), whose `block_on` drives its timers and the
//! tasks spawned on it: guest timers work in every call, and a request of
//! a call granted no host, spawned there, runs and is refused at once.

use crate::runtime::sandbox::{WaitLimit, Waiting, with_call_runtime};
use crate::types::result::ErrorKind;
use std::future::Future;
use std::time::{Duration, Instant};
use wasmtime::Trap;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::bindings::sync::io::poll;
use wasmtime_wasi_io::bindings::wasi::io::poll as async_poll;
use wasmtime_wasi_io::poll::DynPollable;

/// How often a wait looks at the cancel token.
const CANCEL_CHECK: Duration = Duration::from_millis(50);

impl WaitLimit<'_> {
    /// `fut`'s output, unless the deadline passes or the call is cancelled
    /// first: then the call is marked interrupted and the guest trapped.
    pub(crate) fn wait<F: Future>(&mut self, fut: F) -> wasmtime::Result<F::Output> {
        let mut fut = std::pin::pin!(fut);
        if let Some(out) = wasmtime_wasi::runtime::poll_noop(fut.as_mut()) {
            return Ok(out);
        }
        let (deadline, cancel) = (self.deadline, self.cancel);
        let ended = with_call_runtime(|rt| {
            rt.map(|rt| {
                rt.block_on(async {
                    loop {
                        if cancel.is_some_and(|c| c.is_cancelled()) {
                            return Err(ErrorKind::Cancelled);
                        }
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            return Err(ErrorKind::Timeout);
                        }
                        let slice = if cancel.is_some() {
                            left.min(CANCEL_CHECK)
                        } else {
                            left
                        };
                        if let Ok(out) = tokio::time::timeout(slice, fut.as_mut()).await {
                            return Ok(out);
                        }
                    }
                })
            })
        });
        match ended {
            Some(Ok(out)) => Ok(out),
            Some(Err(kind)) => {
                *self.interrupted = Some(kind);
                Err(Trap::Interrupt.into())
            }
            None => Err(wasmtime::Error::msg(
                "toolhost could not start the runtime that waits for the host",
            )),
        }
    }
}

impl poll::Host for Waiting<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        let table = &mut *self.table;
        self.limit.wait(async_poll::Host::poll(table, pollables))?
    }
}

impl poll::HostPollable for Waiting<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        poll::HostPollable::ready(&mut *self.table, pollable)
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        let table = &mut *self.table;
        self.limit
            .wait(async_poll::HostPollable::block(table, pollable))?
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        poll::HostPollable::drop(&mut *self.table, pollable)
    }
}
