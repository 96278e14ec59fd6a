//! Workspace paths and filesystem errors, in the model's terms.
//!
//! The host mounts the workspace at `.` inside the sandbox, so every tool
//! works with workspace-relative paths. [`resolve`] turns what a model typed
//! (relative, `./x`, `a/../b`, or an absolute path inside the workspace) into
//! a [`WorkspacePath`], and refuses lexical escapes before any I/O. Symlinks
//! that lead outside are refused by the sandbox itself; [`io_error`] turns
//! that and every other `std::io::Error` into a [`ToolError`] that says what
//! to do next. [`walk`] lists a directory tree.

mod walk;

pub use toolhost_shared::scan::Scan;

pub use walk::{Entry, walk};

use crate::{Context, ToolError};
use std::io;
use std::path::{Component, Path, PathBuf};

/// A path inside the workspace: how the model sees it (workspace-relative)
/// and how I/O reaches it.
///
/// In the sandbox both are the same relative path (the workspace is mounted
/// at `.`). Natively — unit tests, benchmarks — I/O goes through the
/// context's workspace root, so a tool's logic runs unchanged on a
/// temporary directory.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
/// let path = toolhost_sdk::fs::resolve("./src/../notes.txt", &ctx).unwrap();
/// assert_eq!(path.shown(), "notes.txt");
/// assert!(toolhost_sdk::fs::resolve("../outside", &ctx).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePath {
    shown: String,
    io: PathBuf,
}

impl WorkspacePath {
    fn new(rel: PathBuf, _root: &str) -> Self {
        #[cfg(not(target_arch = "wasm32"))]
        let io = Path::new(_root).join(&rel);
        #[cfg(target_arch = "wasm32")]
        let io = rel.clone();
        Self {
            shown: rel.to_string_lossy().into_owned(),
            io,
        }
    }

    /// Workspace-relative, `.` for the root: for messages and changed paths.
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::for_workspace("/ws");
    /// let path = toolhost_sdk::fs::resolve("/ws/src/main.rs", &ctx).unwrap();
    /// assert_eq!(path.shown(), "src/main.rs");
    /// ```
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The path to give `std::fs`.
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::for_workspace("/ws");
    /// let path = toolhost_sdk::fs::resolve("a.txt", &ctx).unwrap();
    /// // Natively, I/O goes through the workspace root; in the sandbox it is `a.txt`.
    /// assert_eq!(path.io(), std::path::Path::new("/ws/a.txt"));
    /// ```
    pub fn io(&self) -> &Path {
        &self.io
    }

    /// True for the workspace root itself.
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::for_workspace("/ws");
    /// assert!(toolhost_sdk::fs::resolve(".", &ctx).unwrap().is_root());
    /// assert!(!toolhost_sdk::fs::resolve("src", &ctx).unwrap().is_root());
    /// ```
    pub fn is_root(&self) -> bool {
        self.shown == "."
    }

    /// The entry `name` (or relative path) inside this directory.
    ///
    /// ```
    /// let ctx = toolhost_sdk::Context::for_workspace("/ws");
    /// let src = toolhost_sdk::fs::resolve("src", &ctx).unwrap();
    /// assert_eq!(src.join("lib.rs").shown(), "src/lib.rs");
    /// ```
    pub fn join(&self, name: impl AsRef<Path>) -> Self {
        let name = name.as_ref();
        let shown = if self.is_root() {
            name.to_owned()
        } else {
            Path::new(&self.shown).join(name)
        };
        Self {
            shown: shown.to_string_lossy().into_owned(),
            io: self.io.join(name),
        }
    }
}

impl AsRef<Path> for WorkspacePath {
    fn as_ref(&self) -> &Path {
        &self.io
    }
}

impl std::fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Resolve a model-given path to a [`WorkspacePath`].
///
/// Accepts relative paths and absolute paths inside the workspace root (as
/// given by [`Context::workspace_root`]). Returns `.` for the root itself.
/// A tool that was not granted the workspace gets [`ToolError::Denied`].
///
/// ```
/// use toolhost_sdk::{Context, fs::resolve};
/// let ctx = Context::for_workspace("/home/me/proj");
/// assert_eq!(resolve("src/../Cargo.toml", &ctx).unwrap().shown(), "Cargo.toml");
/// assert_eq!(resolve("/home/me/proj/src/lib.rs", &ctx).unwrap().shown(), "src/lib.rs");
/// assert!(resolve("../secret", &ctx).is_err());
/// assert!(resolve("/etc/passwd", &ctx).is_err());
/// ```
pub fn resolve(path: &str, ctx: &Context) -> Result<WorkspacePath, ToolError> {
    let Some(root) = ctx.workspace_root() else {
        return Err(ToolError::denied(format!(
            "this tool was not granted access to the workspace; a person can grant it with \
             `{}workspace:read` (or workspace:write)",
            toolhost_shared::contract::GRANT_REMEDY
        )));
    };
    let trimmed = path.trim();
    if trimmed.is_empty() {
        return Err(ToolError::invalid_input(
            "the path is empty; give a path relative to the workspace root, e.g. `src/main.rs`",
        ));
    }
    // Already plain (`a/b.rs`: no root, `.`, `..` or empty part): as is,
    // without taking it apart (a search resolves every file it shares out).
    if trimmed.len() == path.len()
        && !trimmed.starts_with('/')
        && trimmed
            .split('/')
            .all(|part| !matches!(part, "" | "." | ".."))
    {
        return Ok(WorkspacePath::new(PathBuf::from(trimmed), root));
    }
    let given = Path::new(trimmed);
    let relative = if given.has_root() {
        let inside = given.strip_prefix(root).ok();
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
    Ok(WorkspacePath::new(out, root))
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
        // The file's permissions, or toolhost's path rules: the host adds
        // which, when it was its rules.
        K::PermissionDenied => ToolError::denied(format!("permission denied for `{path}`")),
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
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
/// std::fs::create_dir(dir.path().join("src")).unwrap();
/// let src = toolhost_sdk::fs::resolve("src", &ctx).unwrap();
/// let err = toolhost_sdk::fs::regular_file(&src).unwrap_err();
/// assert!(err.to_string().contains("is a directory"));
/// ```
pub fn regular_file(path: &WorkspacePath) -> Result<std::fs::Metadata, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(e, path.shown()))?;
    if meta.is_dir() {
        return Err(ToolError::retry(format!(
            "`{path}` is a directory, not a file; list it with list_files or list_dirs"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::retry(format!(
            "`{path}` is not a regular file (a FIFO, socket or device); only regular files can \
             be read or edited"
        )));
    }
    Ok(meta)
}

/// Read a whole regular file as UTF-8 text; other bytes are
/// [`ToolError::InvalidInput`] naming the file.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
/// std::fs::write(dir.path().join("a.txt"), "héllo").unwrap();
/// std::fs::write(dir.path().join("b.bin"), [0xff, 0xfe]).unwrap();
/// let read = |p| toolhost_sdk::fs::read_text(&toolhost_sdk::fs::resolve(p, &ctx).unwrap());
/// assert_eq!(read("a.txt").unwrap(), "héllo");
/// assert!(matches!(read("b.bin"), Err(toolhost_sdk::ToolError::InvalidInput(m)) if m == "`b.bin` is not UTF-8 text"));
/// ```
pub fn read_text(path: &WorkspacePath) -> Result<String, ToolError> {
    String::from_utf8(read_regular(path)?)
        .map_err(|_| ToolError::invalid_input(format!("`{}` is not UTF-8 text", path.shown())))
}

/// Read a whole regular file.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
/// std::fs::write(dir.path().join("a.txt"), "hi").unwrap();
/// let path = toolhost_sdk::fs::resolve("a.txt", &ctx).unwrap();
/// assert_eq!(toolhost_sdk::fs::read_regular(&path).unwrap(), b"hi");
/// ```
pub fn read_regular(path: &WorkspacePath) -> Result<Vec<u8>, ToolError> {
    regular_file(path)?;
    std::fs::read(path).map_err(|e| io_error(e, path.shown()))
}

/// The file's bytes, or `None` if nothing is there; a directory or special
/// file is an error.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
/// let path = toolhost_sdk::fs::resolve("new.txt", &ctx).unwrap();
/// assert_eq!(toolhost_sdk::fs::read_if_exists(&path).unwrap(), None);
/// ```
pub fn read_if_exists(path: &WorkspacePath) -> Result<Option<Vec<u8>>, ToolError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => read_regular(path).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(e, path.shown())),
    }
}

/// The whole content of a regular file, if it is at most `max_bytes` long;
/// `None` when it is larger (or the host's own cap is lower): stream it
/// instead. Anything that is not a regular file (a directory, FIFO, socket
/// or device) is an [`io::ErrorKind::InvalidInput`] error, and must not be
/// opened through WASI either: opening a FIFO blocks the call in a host
/// read that no deadline can stop. In the sandbox this is one host call
/// (the host opens the file non-blocking), where reading through WASI
/// takes an open, several reads and a close; worth it when reading many
/// small files.
///
/// ```no_run
/// # fn f(ctx: &toolhost_sdk::Context) -> Result<(), toolhost_sdk::ToolError> {
/// let path = toolhost_sdk::fs::resolve("src/lib.rs", ctx)?;
/// match toolhost_sdk::fs::read_up_to(&path, 1 << 20) {
///     Ok(Some(bytes)) => { /* the whole file */ }
///     Ok(None) => { /* larger: stream it with std::fs::File */ }
///     Err(e) => return Err(toolhost_sdk::fs::io_error(e, path.shown())),
/// }
/// # Ok(()) }
/// ```
pub fn read_up_to(path: &WorkspacePath, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::__private::bindings::toolhost::plugin::files::{self, FileError};
        match files::read(path.shown(), max_bytes) {
            Ok(data) => Ok(Some(data)),
            Err(FileError::TooLarge(_)) => Ok(None),
            Err(other) => Err(file_error(other)),
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let meta = std::fs::metadata(path)?;
        if !meta.is_file() {
            return Err(not_regular(path));
        }
        if meta.len() > max_bytes {
            return Ok(None);
        }
        std::fs::read(path).map(Some)
    }
}

/// A host `files` error as the `io::Error` a native run would give.
#[cfg(target_arch = "wasm32")]
fn file_error(e: crate::__private::bindings::toolhost::plugin::files::FileError) -> io::Error {
    use crate::__private::bindings::toolhost::plugin::files::FileError;
    match e {
        FileError::Invalid(m) => io::Error::new(io::ErrorKind::InvalidInput, m),
        FileError::NotFound(m) => io::Error::new(io::ErrorKind::NotFound, m),
        FileError::Denied(m) => io::Error::new(io::ErrorKind::PermissionDenied, m),
        FileError::TooLarge(m) => io::Error::new(io::ErrorKind::FileTooLarge, m),
        FileError::Failed(m) => io::Error::other(m),
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn not_regular(path: &WorkspacePath) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("`{path}` is not a regular file (a directory, FIFO, socket or device)"),
    )
}

/// One pass over the regular file at `path`: hash, size, line count and
/// up to `max_lines` lines from line `first_line` (at most `max_window`
/// bytes); see `toolhost_shared::scan::scan_reader`. In a plugin the host
/// does the pass natively (the `files.scan` import), which for a large file
/// is much faster than reading it through WASI.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
/// std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
/// let path = toolhost_sdk::fs::resolve("a.txt", &ctx).unwrap();
/// let scan = toolhost_sdk::fs::scan(&path, 2, 1, 1 << 20).unwrap();
/// assert_eq!((scan.newlines, scan.window.as_slice()), (3, &b"two\n"[..]));
/// ```
pub fn scan(
    path: &WorkspacePath,
    first_line: u64,
    max_lines: u64,
    max_window: u64,
) -> io::Result<Scan> {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::__private::bindings::toolhost::plugin::files;
        files::scan(path.shown(), first_line, max_lines, max_window)
            .map(|s| Scan {
                hash: s.hash,
                size: s.size,
                newlines: s.newlines,
                last_byte: s.last_byte,
                binary: s.binary,
                window: s.window,
                window_complete: s.window_complete,
            })
            .map_err(file_error)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let file = std::fs::File::open(path)?;
        if !file.metadata()?.is_file() {
            return Err(not_regular(path));
        }
        let most = usize::try_from(max_window).unwrap_or(usize::MAX);
        toolhost_shared::scan::scan_reader(file, first_line, max_lines, most)
    }
}

/// The setting that lets tools delete files. The toolhost CLI sets it with
/// `--allow-delete`; it is off unless a person turns it on.
///
/// ```
/// let ctx = toolhost_sdk::Context::default().with_setting(toolhost_sdk::fs::ALLOW_DELETE, true);
/// assert!(toolhost_sdk::fs::deletion_allowed(&ctx, "").is_ok());
/// ```
pub const ALLOW_DELETE: &str = toolhost_shared::contract::setting::ALLOW_DELETE;

/// Refuse a deletion unless a person enabled deleting files (the
/// [`ALLOW_DELETE`] setting). `outcome` says what the refusal means for
/// this call, e.g. "`a.txt` was not deleted". Every tool that deletes asks
/// here, so they all obey the same setting and say the same thing.
///
/// ```
/// use toolhost_sdk::{Context, ToolError, fs::deletion_allowed};
/// let off = Context::default();
/// let err = deletion_allowed(&off, "`a.txt` was not deleted").unwrap_err();
/// assert!(matches!(&err, ToolError::Denied(m) if m.contains("--allow-delete")));
/// assert!(deletion_allowed(&off.with_setting("allow_delete", true), "").is_ok());
/// ```
pub fn deletion_allowed(ctx: &Context, outcome: &str) -> Result<(), ToolError> {
    if ctx.setting::<bool>(ALLOW_DELETE).unwrap_or(false) {
        return Ok(());
    }
    Err(ToolError::denied(format!(
        "deleting files is disabled, so {outcome}; a person can enable it with the \
         `{ALLOW_DELETE}` setting (`--allow-delete` on the toolhost command line)"
    )))
}

/// `dir`, a named directory the tool needs (`/todo`, `/memory`), if the
/// host granted it; otherwise one clear failure naming it and the fix.
///
/// ```
/// let missing = std::path::Path::new("/no/such/todo");
/// let err = toolhost_sdk::fs::granted_dir(missing, "todo_manager").unwrap_err();
/// assert!(err.to_string().contains("did not grant `todo_manager` its `todo` directory"));
/// ```
pub fn granted_dir<'a>(dir: &'a Path, tool: &str) -> Result<&'a Path, ToolError> {
    if dir.is_dir() {
        return Ok(dir);
    }
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    Err(ToolError::failed(format!(
        "this host did not grant `{tool}` its `{name}` directory, so it cannot work here"
    ))
    .with_hint(
        "a person can configure state_dir, memory_dir, soul_dir or [dynamic] dir (docs/configuration.md)",
    ))
}

/// Replace or create the file at `path` with `data`, atomically: the host
/// writes a temporary file beside it, syncs it and renames it over the
/// target, keeping the old file's permissions; parent directories are
/// created. A reader, or a crash, sees the old content or the new, never a
/// mix. Needs write access to the workspace.
///
/// Natively (unit tests, benchmarks) there is no host: it writes directly.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
/// let path = toolhost_sdk::fs::resolve("out/report.md", &ctx).unwrap();
/// toolhost_sdk::fs::write_atomic(&path, b"# Report\n").unwrap();
/// assert_eq!(std::fs::read(dir.path().join("out/report.md")).unwrap(), b"# Report\n");
/// ```
pub fn write_atomic(path: &WorkspacePath, data: &[u8]) -> Result<(), ToolError> {
    write_atomic_at(path.shown(), path.io(), data)
}

/// [`write_atomic`] for a file in a named directory the tool was granted
/// (`/todo/plan.json`), with the same guarantees: concurrent calls never
/// share a temporary file, and a reader never sees half a file.
///
/// ```
/// let state = tempfile::tempdir().unwrap(); // `/todo` in the sandbox
/// let plan = state.path().join("plan.json");
/// toolhost_sdk::fs::write_atomic_in_dir(&plan, b"[]").unwrap();
/// assert_eq!(std::fs::read(&plan).unwrap(), b"[]");
/// ```
pub fn write_atomic_in_dir(path: &Path, data: &[u8]) -> Result<(), ToolError> {
    write_atomic_at(&path.to_string_lossy(), path, data)
}

/// `shown` is the path the host resolves; `io` the one a native run writes.
fn write_atomic_at(shown: &str, io: &Path, data: &[u8]) -> Result<(), ToolError> {
    #[cfg(target_arch = "wasm32")]
    {
        let _ = io;
        use crate::__private::bindings::toolhost::plugin::files::{self, FileError};
        files::write_atomic(shown, data).map_err(|e| match e {
            FileError::NotFound(m) => ToolError::retry(m),
            FileError::Denied(m) => ToolError::denied(m),
            FileError::Invalid(m) => ToolError::retry(m),
            FileError::TooLarge(m) | FileError::Failed(m) => ToolError::failed(m),
        })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        if let Some(parent) = io.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| write_error(e, shown))?;
        }
        std::fs::write(io, data).map_err(|e| write_error(e, shown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context::for_workspace("/ws/proj")
    }

    #[test]
    fn relative_paths_normalise() {
        let ok = |p: &str| resolve(p, &ctx()).unwrap().shown().to_owned();
        assert_eq!(ok("a/b.txt"), "a/b.txt");
        assert_eq!(ok("./a/./b.txt"), "a/b.txt");
        assert_eq!(ok("a/../b.txt"), "b.txt");
        assert_eq!(ok("."), ".");
        assert_eq!(ok("a/.."), ".");
        assert_eq!(ok("/ws/proj"), ".");
        assert_eq!(ok("/ws/proj/src/x.rs"), "src/x.rs");
        // Plain paths (taken as they are) and the same paths taken apart
        // give equal results, down to where I/O goes.
        for (plain, roundabout) in [
            ("a/b.txt", "./a//b.txt/"),
            ("x", " x "),
            ("a b/c", "a b/./c"),
        ] {
            assert_eq!(
                resolve(plain, &ctx()).unwrap(),
                resolve(roundabout, &ctx()).unwrap()
            );
        }
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
