//! Which files a search covers.

use super::Glob;
use super::walk::{WalkOptions, walk};
use crate::ToolError;
use crate::fs::{WorkspacePath, io_error};
use std::collections::HashSet;

/// The files a search covers, below one directory.
#[derive(Debug, Clone)]
pub struct Scope {
    /// Skip what `.gitignore`, `.ignore` and `.git/info/exclude` exclude
    /// (in any directory, whether or not it is a git repository).
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
    pub ignored: Vec<WorkspacePath>,
    /// Skipped only because they are hidden.
    pub hidden: Vec<WorkspacePath>,
}

impl Scope {
    /// Every file in scope below `base`, sorted by path. `.git` directories
    /// are never entered; symlinks are neither followed nor listed.
    pub fn files(&self, base: &WorkspacePath) -> Result<Vec<FileEntry>, ToolError> {
        self.walk(base, self.respect_ignore, self.hidden)
    }

    /// The files this scope leaves out because of ignore rules or hiding
    /// (empty when it already includes them).
    pub fn left_out(&self, base: &WorkspacePath) -> Result<LeftOut, ToolError> {
        let included: HashSet<String> = self
            .files(base)?
            .into_iter()
            .map(|f| f.path.shown().to_owned())
            .collect();
        let extra = |respect_ignore, hidden| -> Result<Vec<WorkspacePath>, ToolError> {
            Ok(self
                .walk(base, respect_ignore, hidden)?
                .into_iter()
                .map(|f| f.path)
                .filter(|p| !included.contains(p.shown()))
                .collect())
        };
        Ok(LeftOut {
            ignored: if self.respect_ignore {
                extra(false, self.hidden)?
            } else {
                Vec::new()
            },
            hidden: if self.hidden {
                Vec::new()
            } else {
                extra(self.respect_ignore, true)?
            },
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
        if !meta.is_dir() {
            // A single file is its own scope.
            return Ok(vec![FileEntry {
                path: base.clone(),
                size: meta.len(),
                modified_ns: 0,
            }]);
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
            .filter(|e| !e.is_dir && !e.is_symlink)
            .map(|e| FileEntry {
                path: base.join(&e.path),
                size: e.size,
                modified_ns: e.modified_ns,
            })
            .filter(|f| self.glob.as_ref().is_none_or(|g| g.matches(base, &f.path)))
            .collect())
    }
}
