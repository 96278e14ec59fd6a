//! List a directory tree inside the workspace, for the list and search tools.

use super::WorkspacePath;
use crate::ToolError;
use std::io;

/// One entry found by [`walk`].
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let ctx = toolhost_sdk::Context::for_workspace(dir.path().display().to_string());
/// std::fs::create_dir(dir.path().join("src")).unwrap();
/// std::fs::write(dir.path().join("src/lib.rs"), "x").unwrap();
/// let root = toolhost_sdk::fs::resolve(".", &ctx).unwrap();
/// let entries = toolhost_sdk::fs::walk(&root, 2).unwrap();
/// let found: Vec<_> = entries.iter().map(|e| (e.path.shown(), e.depth, e.is_dir)).collect();
/// assert_eq!(found, [("src", 1, true), ("src/lib.rs", 2, false)]);
/// assert_eq!(entries[1].size, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Where it is.
    pub path: WorkspacePath,
    /// How deep below the starting directory (1 for its direct children).
    pub depth: usize,
    /// A directory (symlinks to directories count, but are not entered).
    pub is_dir: bool,
    /// The size in bytes, for files.
    pub size: u64,
}

/// Every file and directory under `base` down to `max_depth` levels, each
/// level in name order. Symlinks are followed for what they point at but
/// never entered (no loops, no leaving the workspace); `.git` is listed but
/// not entered; entries the sandbox refuses are skipped. An error reading
/// `base` itself is the error, for the model: `base` being a file is a
/// `retry` that says to read it instead.
///
/// ```no_run
/// # fn f(ctx: &toolhost_sdk::Context) -> Result<(), toolhost_sdk::ToolError> {
/// let src = toolhost_sdk::fs::resolve("src", ctx)?;
/// for entry in toolhost_sdk::fs::walk(&src, 2)? {
///     let _ = (entry.path.shown(), entry.size);
/// }
/// # Ok(()) }
/// ```
pub fn walk(base: &WorkspacePath, max_depth: usize) -> Result<Vec<Entry>, ToolError> {
    let mut out = Vec::new();
    walk_into(base, 1, max_depth, &mut out, true).map_err(|e| match e.kind() {
        io::ErrorKind::NotADirectory => ToolError::retry(format!(
            "`{base}` is a file, not a directory; read it with read_file"
        )),
        _ => super::io_error(e, base.shown()),
    })?;
    Ok(out)
}

fn walk_into(
    dir: &WorkspacePath,
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
        let path = dir.join(&name);
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
#[cfg(unix)]
mod tests {
    use super::*;
    use crate::{Context, fs::resolve};

    #[test]
    fn walks_sorted_to_the_depth_without_entering_git_or_symlinks() {
        let ws = tempfile::tempdir().unwrap();
        for d in ["a/b/c", ".git/objects", "z"] {
            std::fs::create_dir_all(ws.path().join(d)).unwrap();
        }
        std::fs::write(ws.path().join("a/f.txt"), "12345").unwrap();
        std::os::unix::fs::symlink(ws.path().join("a"), ws.path().join("loop")).unwrap();
        let ctx = Context::for_workspace(ws.path().display().to_string());
        let root = resolve(".", &ctx).unwrap();
        let list = |depth| -> Vec<String> {
            walk(&root, depth)
                .unwrap()
                .iter()
                .map(|e| format!("{}:{}:{}", e.path, e.depth, e.is_dir))
                .collect()
        };
        assert_eq!(
            list(1),
            [".git:1:true", "a:1:true", "loop:1:true", "z:1:true"]
        );
        let deep = list(3);
        assert!(deep.contains(&"a/f.txt:2:false".to_owned()), "{deep:?}");
        assert!(deep.contains(&"a/b/c:3:true".to_owned()), "{deep:?}");
        assert!(
            !deep
                .iter()
                .any(|e| e.starts_with(".git/") || e.starts_with("loop/")),
            "{deep:?}"
        );
        let file = walk(&root, 3)
            .unwrap()
            .into_iter()
            .find(|e| e.path.shown() == "a/f.txt")
            .unwrap();
        assert_eq!(file.size, 5);
        let err = walk(&resolve("a/f.txt", &ctx).unwrap(), 1).unwrap_err();
        assert!(
            matches!(&err, ToolError::Retry(m) if m.contains("is a file")),
            "{err}"
        );
    }
}
