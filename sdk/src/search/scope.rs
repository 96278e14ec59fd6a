//! Which files a search covers.

use super::Glob;
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
    /// are never entered; symlinks are not followed.
    pub fn files(&self, base: &WorkspacePath) -> Result<Vec<WorkspacePath>, ToolError> {
        let mut files = self.walk(base, self.respect_ignore, self.hidden)?;
        files.sort_by(|a, b| a.shown().cmp(b.shown()));
        Ok(files)
    }

    /// The files this scope leaves out because of ignore rules or hiding
    /// (empty when it already includes them).
    pub fn left_out(&self, base: &WorkspacePath) -> Result<LeftOut, ToolError> {
        let included: HashSet<String> = self
            .walk(base, self.respect_ignore, self.hidden)?
            .into_iter()
            .map(|p| p.shown().to_owned())
            .collect();
        let extra = |respect_ignore, hidden| -> Result<Vec<WorkspacePath>, ToolError> {
            let mut more: Vec<WorkspacePath> = self
                .walk(base, respect_ignore, hidden)?
                .into_iter()
                .filter(|p| !included.contains(p.shown()))
                .collect();
            more.sort_by(|a, b| a.shown().cmp(b.shown()));
            Ok(more)
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

    fn walk(
        &self,
        base: &WorkspacePath,
        respect_ignore: bool,
        hidden: bool,
    ) -> Result<Vec<WorkspacePath>, ToolError> {
        let meta = std::fs::metadata(base).map_err(|e| io_error(e, base.shown()))?;
        if !meta.is_dir() {
            // A single file is its own scope.
            return Ok(vec![base.clone()]);
        }
        let mut walker = ignore::WalkBuilder::new(base.io());
        walker
            .standard_filters(false)
            .hidden(!hidden)
            .ignore(respect_ignore)
            .git_ignore(respect_ignore)
            .git_exclude(respect_ignore)
            .parents(respect_ignore)
            .require_git(false)
            .follow_links(false)
            .max_depth(if self.recursive { None } else { Some(1) })
            .filter_entry(|e| e.file_name() != ".git");
        let mut files = Vec::new();
        for entry in walker.build() {
            // Unreadable entries (refused by the sandbox, vanished) are skipped.
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let rel = entry.path().strip_prefix(base.io()).unwrap_or(entry.path());
            let path = base.join(rel);
            if self.glob.as_ref().is_none_or(|g| g.matches(base, &path)) {
                files.push(path);
            }
        }
        Ok(files)
    }
}
