//! Dynamic tools as the built-ins that make and run them see them: the
//! store's record format and argv templates (shared with the host), and the
//! host's component check.

pub use toolhost_shared::dynamic::*;

use serde_json::Value;

/// Check the component at `path` (in the workspace) the way `toolhost
/// check` does and, if it conforms, have the host copy it to `dest` (under
/// [`STORE`]). Returns its tool-info, or every problem, one per line. Only a
/// tool granted the store gets an answer.
pub fn check_component(path: &str, dest: &str) -> Result<Value, String> {
    #[cfg(target_arch = "wasm32")]
    {
        let info = toolhost_sdk::__private::bindings::toolhost::plugin::dynamic::check_component(
            path, dest,
        )?;
        serde_json::from_str(&info).map_err(|e| format!("the host's answer is not JSON: {e}"))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = (path, dest);
        Err("components are checked only inside toolhost (this is a native run)".to_owned())
    }
}
