//! wasi:http for a call: the store's view of the HTTP context, with every
//! outgoing request passed through the call's [`crate::net::NetHooks`]
//! (the grant's hosts, resolved-address checks, timeouts, a response cap).

use crate::runtime::sandbox::CallState;
use wasmtime_wasi::{WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let state = self.reached();
        WasiCtxView {
            ctx: &mut state.wasi,
            table: &mut state.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        let state = self.reached();
        WasiHttpCtxView {
            ctx: &mut state.http,
            table: &mut state.table,
            hooks: &mut state.net,
        }
    }
}
