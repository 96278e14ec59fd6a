//! Log lines forwarded to the host, which writes them to its log (stderr),
//! tagged with the tool and call id. Never use stdout for logs: the host
//! captures it and it is not shown to anyone by default.
//!
//! ```no_run
//! toolhost_sdk::log::info("scanning 120 files");
//! ```

#[cfg(target_arch = "wasm32")]
use crate::__private::bindings::toolhost::plugin::log as wit;

macro_rules! level_fn {
    ($(#[$doc:meta])* $name:ident => $level:ident) => {
        $(#[$doc])*
        pub fn $name(message: impl AsRef<str>) {
            #[cfg(target_arch = "wasm32")]
            wit::log(wit::Level::$level, message.as_ref());
            // Natively (unit tests, benchmarks) there is no host to log to.
            #[cfg(not(target_arch = "wasm32"))]
            let _ = message;
        }
    };
}

level_fn!(
    /// Very detailed diagnostics.
    trace => Trace
);
level_fn!(
    /// Diagnostics for developers.
    debug => Debug
);
level_fn!(
    /// Normal progress.
    info => Info
);
level_fn!(
    /// Something unexpected the tool recovered from.
    warn => Warn
);
level_fn!(
    /// Something failed.
    error => Error
);
