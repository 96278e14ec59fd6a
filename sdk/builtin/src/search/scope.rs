//! Which files a search covers.

use super::Glob;
use super::walk::{EntryKind, WalkOptions, walk};
use std::collections::HashSet;
use toolhost_sdk::ToolError;
use toolhost_sdk::fs::{WorkspacePath, io_error};

/// The files a search covers, below one directory.
#[derive(Debug, Clone)]
pub struct Scope {
    /// Skip what `.gitignore`, `.ignore` and `.git/info/exclude` exclude,
    /// in the searched directory and below it (whether or not it is a git
    /// repository); ignore files above it are not read.
    pub respect_ignore: bool,
    /// Include dot-files and dot-directories.
    pub hidden: bool,
    /// Only files matching this.
    pub glob: Option<Glob>,
    /// Descend into subdirectories.
    pub recursive: bool,
    /// Fill in each file's size and modification time.
    pub metadata: bool,
}

/// A file in scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Where it is.
    pub path: WorkspacePath,
    /// Its size in bytes (0 unless the scope asks for metadata).
    pub size: u64,
    /// Last modification, in nanoseconds since the Unix epoch (0 if unknown,
    /// or unless the scope asks for metadata).
    pub modified_ns: u64,
}

/// Files a scope skipped, by reason.
#[derive(Debug, Clone, Default)]
pub struct LeftOut {
    /// Skipped only because ignore rules exclude them.
    pub ignored: Vec<FileEntry>,
    /// Skipped only because they are hidden.
    pub hidden: Vec<FileEntry>,
    /// Skipped because they are both hidden and ignored (e.g. `.venv/`,
    /// `.cache/`): only `respect_ignore=false` with `hidden=true` finds them.
    pub hidden_and_ignored: Vec<FileEntry>,
}

impl Scope {
    /// Every regular file in scope below `base`, sorted by path. `.git`
    /// directories are never entered; symlinks are neither followed nor
    /// listed; FIFOs, sockets and devices are left out (opening a FIFO
    /// would block). A `base` that is itself a regular file is its own
    /// scope.
    pub fn files(&self, base: &WorkspacePath) -> Result<Vec<FileEntry>, ToolError> {
        self.walk(base, self.respect_ignore, self.hidden)
    }

    /// The files this scope leaves out because of ignore rules, hiding or
    /// both (each list empty when the scope already includes them).
    pub fn left_out(&self, base: &WorkspacePath) -> Result<LeftOut, ToolError> {
        let mut seen: HashSet<String> = self
            .files(base)?
            .into_iter()
            .map(|f| f.path.shown().to_owned())
            .collect();
        // Each list takes what the earlier ones (and the scope) did not.
        let mut extra =
            |wanted: bool, respect_ignore, hidden| -> Result<Vec<FileEntry>, ToolError> {
                if !wanted {
                    return Ok(Vec::new());
                }
                Ok(self
                    .walk(base, respect_ignore, hidden)?
                    .into_iter()
                    .filter(|f| seen.insert(f.path.shown().to_owned()))
                    .collect())
            };
        let ignored = extra(self.respect_ignore, false, self.hidden)?;
        let hidden = extra(!self.hidden, self.respect_ignore, true)?;
        let hidden_and_ignored = extra(self.respect_ignore && !self.hidden, false, true)?;
        Ok(LeftOut {
            ignored,
            hidden,
            hidden_and_ignored,
        })
    }

    /// Files under `base` with these filters, sorted by path.
    fn walk(
        &self,
        base: &WorkspacePath,
        respect_ignore: bool,
        hidden: bool,
    ) -> Result<Vec<FileEntry>, ToolError> {
        let meta = std::fs::metadata(base).map_err(|e| io_error(e, base.shown()))?;
        if meta.is_file() {
            // A single file is its own scope.
            return Ok(vec![FileEntry {
                path: base.clone(),
                size: meta.len(),
                modified_ns: 0,
            }]);
        }
        if !meta.is_dir() {
            return Err(ToolError::retry(format!(
                "`{base}` is not a regular file or a directory (a FIFO, socket or device); give \
                 a file or directory to search"
            )));
        }
        let options = WalkOptions {
            respect_ignore,
            hidden,
            max_depth: (!self.recursive).then_some(1),
            metadata: self.metadata,
        };
        let entries = walk(base, &options).map_err(|e| io_error(e, base.shown()))?;
        Ok(entries
            .into_iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| FileEntry {
                path: base.join(&e.path),
                size: e.size,
                modified_ns: e.modified_ns,
            })
            .filter(|f| self.glob.as_ref().is_none_or(|g| g.matches(base, &f.path)))
            .collect())
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use toolhost_sdk::{Context, fs::resolve};

    fn names(files: &[FileEntry]) -> Vec<&str> {
        files.iter().map(|f| f.path.shown()).collect()
    }

    // Regression: files both hidden and ignored (`.venv/`, `.cache/`) were
    // in neither list, so "0 matches" gave no hint at all.
    #[test]
    fn left_out_files_are_ignored_hidden_or_both() {
        let ws = tempfile::tempdir().unwrap();
        for (f, text) in [
            (".gitignore", ".venv/\nbuild/\n"),
            ("src/a.rs", "x"),
            ("build/out.rs", "x"),
            (".env", "x"),
            (".venv/lib.py", "x"),
        ] {
            let p = ws.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let ctx = Context::for_workspace(ws.path().display().to_string());
        let base = resolve(".", &ctx).unwrap();
        let scope = Scope {
            respect_ignore: true,
            hidden: false,
            glob: None,
            recursive: true,
            metadata: false,
        };
        assert_eq!(names(&scope.files(&base).unwrap()), ["src/a.rs"]);
        let left = scope.left_out(&base).unwrap();
        assert_eq!(names(&left.ignored), ["build/out.rs"]);
        assert_eq!(names(&left.hidden), [".env", ".gitignore"]);
        assert_eq!(names(&left.hidden_and_ignored), [".venv/lib.py"]);
        let everything = Scope {
            respect_ignore: false,
            hidden: true,
            ..scope
        };
        let left = everything.left_out(&base).unwrap();
        assert!(left.ignored.is_empty() && left.hidden.is_empty());
        assert!(left.hidden_and_ignored.is_empty());
    }

    // Regression: a FIFO was searched like a file, and opening it hung.
    #[test]
    fn only_regular_files_are_in_scope() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a.txt"), "x").unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(ws.path().join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        let ctx = Context::for_workspace(ws.path().display().to_string());
        let scope = Scope {
            respect_ignore: true,
            hidden: false,
            glob: None,
            recursive: true,
            metadata: false,
        };
        let base = resolve(".", &ctx).unwrap();
        assert_eq!(names(&scope.files(&base).unwrap()), ["a.txt"]);
        let pipe = resolve("pipe", &ctx).unwrap();
        assert!(matches!(scope.files(&pipe), Err(ToolError::Retry(_))));
    }
}
