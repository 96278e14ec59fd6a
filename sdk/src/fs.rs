//! Workspace paths and filesystem errors, in the model's terms.
//!
//! The host mounts the workspace at `.` inside the sandbox, so every tool
//! works with workspace-relative paths. [`resolve`] turns what a model typed
//! (relative, `./x`, `a/../b`, or an absolute path inside the workspace) into
//! such a path, and refuses lexical escapes before any I/O. Symlinks that
//! lead outside are refused by the sandbox itself; [`io_error`] turns that and
//! every other `std::io::Error` into a [`ToolError`] that says what to do next.

use crate::{Context, ToolError};
use std::io;
use std::path::{Component, Path, PathBuf};

/// Resolve a model-given path to a workspace-relative path.
///
/// Accepts relative paths and absolute paths inside the workspace root (as
/// given by [`Context::workspace_root`]). Returns `.` for the root itself.
/// A tool that was not granted the workspace gets [`ToolError::Denied`].
///
/// ```
/// use toolhost_sdk::{Context, fs::resolve};
/// let ctx = Context::for_workspace("/home/me/proj");
/// assert_eq!(resolve("src/../Cargo.toml", &ctx).unwrap().to_str(), Some("Cargo.toml"));
/// assert_eq!(resolve("/home/me/proj/src/lib.rs", &ctx).unwrap().to_str(), Some("src/lib.rs"));
/// assert!(resolve("../secret", &ctx).is_err());
/// assert!(resolve("/etc/passwd", &ctx).is_err());
/// ```
pub fn resolve(path: &str, ctx: &Context) -> Result<PathBuf, ToolError> {
    if ctx.workspace_root().is_none() {
        return Err(ToolError::denied(
            "this tool was not granted access to the workspace; a person can grant it with \
             `--grant TOOL=workspace:read` (or workspace:write)",
        ));
    }
    let trimmed = path.trim();
    if trimmed.is_empty() {
        return Err(ToolError::invalid_input(
            "the path is empty; give a path relative to the workspace root, e.g. `src/main.rs`",
        ));
    }
    let given = Path::new(trimmed);
    let relative = if given.has_root() {
        let inside = ctx
            .workspace_root()
            .and_then(|root| given.strip_prefix(root).ok());
        match inside {
            Some(rest) => rest,
            None => {
                return Err(ToolError::denied(format!(
                    "`{trimmed}` is outside the workspace; this tool can only reach files under the \
                     workspace root, so give a path relative to it"
                )));
            }
        }
    } else {
        given
    };

    let mut out = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return Err(ToolError::denied(format!(
                        "`{trimmed}` leads outside the workspace; only paths under the workspace \
                         root are allowed"
                    )));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::denied(format!(
                    "`{trimmed}` is outside the workspace; give a path relative to the workspace root"
                )));
            }
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    Ok(out)
}

/// Turn an I/O error while reading `path` into a model-friendly [`ToolError`].
///
/// Not found becomes [`ToolError::Retry`] with a hint to look the path up;
/// a refusal by the sandbox (a symlink leading outside the workspace) or by
/// the file's permissions becomes [`ToolError::Denied`]; the rest is
/// [`ToolError::Failed`]. Use [`write_error`] for writes.
///
/// Call [`resolve`] first: a tool with no workspace grant sees no
/// directory at all, and without `resolve` a read then fails as "not found"
/// rather than as a refusal.
///
/// ```
/// use toolhost_sdk::{ToolError, fs::io_error};
/// let err = io_error(std::io::Error::from(std::io::ErrorKind::NotFound), "src/mian.rs");
/// assert!(matches!(err, ToolError::Retry(_)));
/// ```
pub fn io_error(err: io::Error, path: &str) -> ToolError {
    classify(err, path, Op::Read)
}

/// Like [`io_error`], for an error while creating, writing or deleting
/// `path`: a sandbox refusal then also covers a read-only grant.
///
/// ```
/// use toolhost_sdk::{ToolError, fs::write_error};
/// let err = write_error(std::io::Error::from(std::io::ErrorKind::ReadOnlyFilesystem), "a.txt");
/// assert!(matches!(err, ToolError::Denied(_)));
/// ```
pub fn write_error(err: io::Error, path: &str) -> ToolError {
    classify(err, path, Op::Write)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Read,
    Write,
}

fn classify(err: io::Error, path: &str, op: Op) -> ToolError {
    use io::ErrorKind as K;
    if is_sandbox_refusal(&err) {
        return ToolError::denied(match op {
            Op::Read => format!(
                "access to `{path}` was refused: it may lead outside the workspace (for example \
                 through a symlink), into a directory this tool was not granted, or the file \
                 does not permit it"
            ),
            Op::Write => format!(
                "changing `{path}` was refused: this tool's grant may be read-only, the path may \
                 lead outside the workspace (for example through a symlink), or the file does \
                 not permit it"
            ),
        });
    }
    match err.kind() {
        K::NotFound => ToolError::retry(format!(
            "`{path}` does not exist; check the spelling, or locate the file with find_files or \
             list_files"
        )),
        K::IsADirectory => ToolError::retry(format!(
            "`{path}` is a directory, not a file; list its contents with list_files or list_dirs"
        )),
        K::NotADirectory => ToolError::retry(format!(
            "a parent of `{path}` is a file, not a directory; check the path"
        )),
        K::AlreadyExists => ToolError::retry(format!("`{path}` already exists")),
        K::ReadOnlyFilesystem => ToolError::denied(format!(
            "cannot change `{path}`: this tool has read-only access to the workspace"
        )),
        K::PermissionDenied => ToolError::denied(format!(
            "permission denied for `{path}`: the file's permissions do not allow this access"
        )),
        K::InvalidData => ToolError::failed(format!("`{path}` could not be decoded: {err}")),
        _ => ToolError::failed(format!("cannot access `{path}`: {err}")),
    }
}

/// True for the WASI error numbers the sandbox uses to refuse an access
/// (EPERM, EROFS, ENOTCAPABLE). They differ from the host's errno values,
/// so this only holds inside the component.
#[cfg(target_os = "wasi")]
fn is_sandbox_refusal(err: &io::Error) -> bool {
    const EPERM: i32 = 63;
    const EROFS: i32 = 69;
    const ENOTCAPABLE: i32 = 76;
    matches!(err.raw_os_error(), Some(EPERM | EROFS | ENOTCAPABLE))
}

#[cfg(not(target_os = "wasi"))]
fn is_sandbox_refusal(_err: &io::Error) -> bool {
    false
}

/// The metadata of `path` if it is a regular file. A directory is a retry
/// pointing to the list tools; a FIFO, socket or device is refused before it
/// is opened (opening a FIFO would block in a host read no deadline can stop).
pub fn regular_file(path: &Path, shown: &str) -> Result<std::fs::Metadata, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(e, shown))?;
    if meta.is_dir() {
        return Err(ToolError::retry(format!(
            "`{shown}` is a directory, not a file; list it with list_files or list_dirs"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::retry(format!(
            "`{shown}` is not a regular file (a FIFO, socket or device); only regular files can \
             be read or edited"
        )));
    }
    Ok(meta)
}

/// Read a whole regular file.
pub fn read_regular(path: &Path, shown: &str) -> Result<Vec<u8>, ToolError> {
    regular_file(path, shown)?;
    std::fs::read(path).map_err(|e| io_error(e, shown))
}

/// Replace or create the file at `path` (workspace-relative, as returned by
/// [`resolve`]) with `data`, atomically: the host writes a temporary file
/// beside it, syncs it and renames it over the target, keeping the old
/// file's permissions; parent directories are created. A reader, or a crash,
/// sees the old content or the new, never a mix. Needs write access to the
/// workspace.
///
/// Natively (unit tests, benchmarks) there is no host: it writes directly.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), ToolError> {
    let shown = path.to_string_lossy();
    #[cfg(target_arch = "wasm32")]
    {
        use crate::__private::bindings::toolhost::plugin::files::{self, FileError};
        files::write_atomic(&shown, data).map_err(|e| match e {
            FileError::NotFound(m) => ToolError::retry(m),
            FileError::Denied(m) => ToolError::denied(m),
            FileError::Invalid(m) => ToolError::retry(m),
            FileError::Failed(m) => ToolError::failed(m),
        })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| write_error(e, &shown))?;
        }
        std::fs::write(path, data).map_err(|e| write_error(e, &shown))
    }
}

/// One entry found by [`walk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path, as `base` joined with the entry's path below it.
    pub path: PathBuf,
    /// How deep below `base` (1 for its direct children).
    pub depth: usize,
    /// A directory (symlinks to directories count, but are not entered).
    pub is_dir: bool,
    /// The size in bytes, for files.
    pub size: u64,
}

/// Every file and directory under `base` down to `max_depth` levels, in
/// sorted order, depth first. Symlinks are followed for what they point at
/// but never entered (no loops, no leaving the workspace); `.git` is listed
/// but not entered; entries the sandbox refuses are skipped.
///
/// ```no_run
/// for entry in toolhost_sdk::fs::walk(std::path::Path::new("src"), 2).unwrap() {
///     println!("{} {}", entry.path.display(), entry.size);
/// }
/// ```
pub fn walk(base: &Path, max_depth: usize) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    walk_into(base, 1, max_depth, &mut out, true)?;
    Ok(out)
}

fn walk_into(
    dir: &Path,
    depth: usize,
    max: usize,
    out: &mut Vec<Entry>,
    top: bool,
) -> io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        // Only the starting directory's errors matter to the caller.
        Err(e) if top => return Err(e),
        Err(_) => return Ok(()),
    };
    let mut children: Vec<(std::ffi::OsString, std::fs::FileType)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
        .collect();
    children.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in children {
        let path = if dir == Path::new(".") {
            PathBuf::from(&name)
        } else {
            dir.join(&name)
        };
        let (is_dir, size, enter) = if kind.is_symlink() {
            match std::fs::metadata(&path) {
                Ok(meta) => (meta.is_dir(), meta.len(), false),
                Err(_) => continue,
            }
        } else if kind.is_dir() {
            (true, 0, name != ".git")
        } else if kind.is_file() {
            (
                false,
                std::fs::metadata(&path).map_or(0, |m| m.len()),
                false,
            )
        } else {
            continue;
        };
        out.push(Entry {
            path: path.clone(),
            depth,
            is_dir,
            size,
        });
        if enter && depth < max {
            walk_into(&path, depth + 1, max, out, false)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context::for_workspace("/ws/proj")
    }

    #[test]
    fn relative_paths_normalise() {
        let ok = |p: &str| resolve(p, &ctx()).unwrap().to_string_lossy().into_owned();
        assert_eq!(ok("a/b.txt"), "a/b.txt");
        assert_eq!(ok("./a/./b.txt"), "a/b.txt");
        assert_eq!(ok("a/../b.txt"), "b.txt");
        assert_eq!(ok("."), ".");
        assert_eq!(ok("a/.."), ".");
        assert_eq!(ok("/ws/proj"), ".");
        assert_eq!(ok("/ws/proj/src/x.rs"), "src/x.rs");
    }

    #[test]
    fn escapes_are_denied() {
        for p in [
            "..",
            "../x",
            "a/../../x",
            "/etc/passwd",
            "/ws/projx/a",
            "/ws/proj/../x",
        ] {
            let err = resolve(p, &ctx()).unwrap_err();
            assert!(matches!(err, ToolError::Denied(_)), "{p}: {err:?}");
        }
    }

    #[test]
    fn no_workspace_grant_is_denied() {
        let err = resolve("a.txt", &Context::default()).unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
    }

    #[test]
    fn empty_path_is_invalid_input() {
        assert!(matches!(
            resolve("  ", &ctx()),
            Err(ToolError::InvalidInput(_))
        ));
    }

    #[test]
    fn io_errors_are_classified() {
        let e = |k| io_error(io::Error::from(k), "x");
        assert!(matches!(e(io::ErrorKind::NotFound), ToolError::Retry(_)));
        assert!(matches!(
            e(io::ErrorKind::PermissionDenied),
            ToolError::Denied(_)
        ));
        assert!(matches!(
            e(io::ErrorKind::IsADirectory),
            ToolError::Retry(_)
        ));
        assert!(matches!(e(io::ErrorKind::Other), ToolError::Failed { .. }));
    }
}
