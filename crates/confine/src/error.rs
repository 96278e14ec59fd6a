//! Why a command's confinement could not be prepared.

use std::path::PathBuf;

/// Why a command's confinement could not be prepared; nothing ran.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A path of the plan holds a NUL byte (possible in a configuration,
    /// never on disk).
    #[error("`{}` holds a NUL byte, which no path can; remove it from the configuration", .0.display())]
    NulInPath(PathBuf),
    /// Without namespaces, a writable path holds toolhost's own policy.
    #[error(
        "`{}` is writable by commands and holds toolhost's own {what} ({}), which this sandbox \
         (no namespaces here) cannot hide; remove it from [commands] writable or use a narrower \
         directory",
        writable.display(),
        dir.display()
    )]
    PolicyDirWritable {
        /// The writable path.
        writable: PathBuf,
        /// What the directory holds.
        what: &'static str,
        /// toolhost's directory beneath it.
        dir: PathBuf,
    },
    /// A read or writable path lies inside the workspace or inside another
    /// writable path, where a command could put a link in its place.
    #[error(
        "`{}` (commands' {list} list) lies inside `{}`, which commands can write: a command \
         could replace it with a link to anything of yours, so it is refused. Remove it from \
         [commands] {list}; what is inside `{}` is already in every command's view",
        path.display(),
        holder.display(),
        holder.display()
    )]
    InsideWritable {
        /// The read or writable path.
        path: PathBuf,
        /// `read` or `writable`.
        list: &'static str,
        /// The workspace or writable path holding it.
        holder: PathBuf,
    },
    /// A writable path holds the views' skeletons.
    #[error(
        "`{}` is writable by commands and holds toolhost's sandbox directory `{}`; use a narrower \
         workspace or writable directory, or set XDG_RUNTIME_DIR or TMPDIR elsewhere",
        writable.display(),
        base.display()
    )]
    SkeletonsWritable {
        /// The writable path.
        writable: PathBuf,
        /// Where the skeletons are.
        base: PathBuf,
    },
    /// The namespace sandbox was asked for with no place for skeletons.
    #[error("no place to make the view's skeleton")]
    NoSkeletons,
    /// A skeleton could not be made.
    #[error("cannot make the view's skeleton: {0}")]
    Skeleton(#[source] std::io::Error),
    /// The Landlock ruleset could not be prepared.
    #[error("cannot prepare Landlock: {0}")]
    Landlock(String),
    /// The seccomp filters could not be built.
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(String),
}
