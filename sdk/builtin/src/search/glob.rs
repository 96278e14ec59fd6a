//! File filters in globset syntax.

use std::path::Path;
use toolhost_sdk::ToolError;
use toolhost_sdk::fs::WorkspacePath;

/// A glob matched against a file's name, or — when it contains `/` or `**`
/// — against its path below the directory being searched.
///
/// ```
/// use toolhost_builtin::search::Glob;
/// assert!(!Glob::new("*.rs").unwrap().on_paths());
/// assert!(Glob::new("src/**/*.md").unwrap().on_paths());
/// assert!(Glob::new("a{b").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Glob {
    matcher: globset::GlobMatcher,
    on_paths: bool,
}

impl Glob {
    /// Compile `pattern`; a bad pattern is `invalid_input` naming the problem.
    pub fn new(pattern: &str) -> Result<Self, ToolError> {
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                ToolError::invalid_input(format!("invalid glob pattern `{pattern}`: {e}"))
            })?
            .compile_matcher();
        Ok(Self {
            matcher,
            on_paths: pattern.contains('/') || pattern.contains("**"),
        })
    }

    /// True if the pattern is matched against paths (so it implies
    /// descending into directories).
    pub fn on_paths(&self) -> bool {
        self.on_paths
    }

    /// Does `path` (inside `base`) match?
    pub fn matches(&self, base: &WorkspacePath, path: &WorkspacePath) -> bool {
        let path = Path::new(path.shown());
        if self.on_paths {
            let rel = if base.is_root() {
                path
            } else {
                path.strip_prefix(base.shown()).unwrap_or(path)
            };
            self.matcher.is_match(rel)
        } else {
            path.file_name().is_some_and(|n| self.matcher.is_match(n))
        }
    }
}
