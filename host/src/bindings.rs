//! Host-side bindings of the `toolhost:plugin` WIT package, one module per
//! supported contract version (a released version is frozen; a change is a
//! new version and a new module here).

/// `toolhost:plugin@0.1.0`, the `tool-plugin` world.
pub(crate) mod v0_1_0 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "tool-plugin",
    });
}

pub(crate) use v0_1_0::ToolPluginPre;
pub(crate) use v0_1_0::toolhost::plugin::{
    commands, dynamic, files, log, parallel, services, types,
};
