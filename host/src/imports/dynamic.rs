//! The `dynamic` import, for `create_tool`: check a component in the
//! workspace as `toolhost check` does and copy it into the dynamic-tool
//! store. Only a tool granted the store may use it.

use crate::bindings::dynamic;
use crate::dirs::{self, FileError};
use crate::runtime::MAX_COMPONENT_BYTES;
use crate::runtime::sandbox::CallState;
use std::path::Path;

/// The host side of the WIT `dynamic` interface, for `create_tool`.
impl dynamic::Host for CallState {
    fn check_component(&mut self, path: String, dest: String) -> Result<String, String> {
        use toolhost_shared::dynamic::{STORE, STORE_DIR_NAME};
        if !self.granted.may_write(STORE_DIR_NAME) || !dest.starts_with(&format!("{STORE}/")) {
            return Err(format!(
                "only a tool granted the dynamic-tool store may check components, and only into {STORE}/"
            ));
        }
        let workspace = self.env.workspace.clone().ok_or(
            "there is no workspace to read the component from; start toolhost with --workspace",
        )?;
        let runtime = self
            .env
            .runtime
            .clone()
            .ok_or("components cannot be checked from this sandbox")?;
        let given = Path::new(path.trim());
        let rel = given.strip_prefix(&workspace).unwrap_or(given);
        self.paths.check_read_beneath(&workspace, rel)?;
        let wasm = read_in(&workspace, &path)?;
        // Compiling is the host's work, not the tool's: its time is not
        // the call's.
        let started = std::time::Instant::now();
        let checked = runtime.check_component(&wasm);
        self.extend_deadline(started.elapsed());
        let (_, info, _) = checked?;
        self.put_file(dest, wasm)
            .map_err(|e| file_error_text(e, "cannot store the component"))?;
        serde_json::to_string(&info).map_err(|e| e.to_string())
    }
}

/// Read `path` (relative to `root`, or absolute under it) with cap-std, so
/// neither `..` nor a symlink leads outside `root`.
pub(crate) fn read_in(root: &Path, path: &str) -> Result<Vec<u8>, String> {
    let given = Path::new(path.trim());
    let rel = if given.has_root() {
        given
            .strip_prefix(root)
            .map_err(|_| format!("`{path}` is outside the workspace; give a path inside it"))?
    } else {
        given
    };
    let dir = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority())
        .map_err(|e| format!("cannot open the workspace: {e}"))?;
    // Non-blocking and regular files only: a FIFO cannot hang the host.
    dirs::read_whole(&dir, rel, path, MAX_COMPONENT_BYTES)
        .map_err(|e| file_error_text(e, "cannot read the component"))
}

/// A `files` error as one line, after `what`.
fn file_error_text(e: FileError, what: &str) -> String {
    match e {
        FileError::NotFound(m)
        | FileError::Denied(m)
        | FileError::Invalid(m)
        | FileError::TooLarge(m)
        | FileError::Failed(m) => format!("{what}: {m}"),
    }
}
