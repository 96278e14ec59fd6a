//! The directory walk under every search: in the sandbox the host walks
//! (its `files.walk` import); natively [`walk_native`] runs directly.

pub use toolhost_shared::walk::{EntryKind, WalkEntry, WalkOptions, walk_native};

/// Walk `base` in the sandbox (through the host) or natively.
pub(crate) fn walk(
    base: &toolhost_sdk::fs::WorkspacePath,
    options: &WalkOptions,
) -> std::io::Result<Vec<WalkEntry>> {
    #[cfg(target_arch = "wasm32")]
    {
        use toolhost_sdk::__private::bindings::toolhost::plugin::files::{
            self, EntryKind as WitKind, FileError, WalkOptions as Wit,
        };
        let wit = Wit {
            respect_ignore: options.respect_ignore,
            hidden: options.hidden,
            max_depth: options
                .max_depth
                .map(|d| u32::try_from(d).unwrap_or(u32::MAX)),
            metadata: options.metadata,
        };
        files::walk(base.shown(), wit)
            .map(|entries| {
                entries
                    .into_iter()
                    .map(|e| WalkEntry {
                        path: e.path,
                        kind: match e.kind {
                            WitKind::File => EntryKind::File,
                            WitKind::Directory => EntryKind::Directory,
                            WitKind::Symlink => EntryKind::Symlink,
                            WitKind::Other => EntryKind::Other,
                        },
                        size: e.size,
                        modified_ns: e.modified_ns,
                    })
                    .collect()
            })
            .map_err(|e| {
                use std::io::{Error, ErrorKind};
                match e {
                    FileError::NotFound(m) => Error::new(ErrorKind::NotFound, m),
                    FileError::Denied(m) => Error::new(ErrorKind::PermissionDenied, m),
                    FileError::Invalid(m) => Error::new(ErrorKind::NotADirectory, m),
                    FileError::TooLarge(m) | FileError::Failed(m) => Error::other(m),
                }
            })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        walk_native(base.io(), options)
    }
}
