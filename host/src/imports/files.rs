//! The `files` import: file operations WASI 0.2 cannot express or makes
//! slow — an atomic replace that keeps permissions, a whole file in one call,
//! a line-window scan and a tree walk — served beneath the directories the
//! calling tool was granted (dirs.rs does the work).

use crate::bindings::files::{self, Host};
use crate::dirs::{self, FileError, Op};
use crate::guard::Need;
use crate::runtime::sandbox::CallState;
use crate::types::grant::Access;
use std::os::fd::AsFd;
use std::path::Path;
use toolhost_shared::walk::{EntryKind, WalkOptions, walk_native_except};

impl Host for CallState {
    fn write_atomic(&mut self, path: String, data: Vec<u8>) -> Result<(), files::FileError> {
        Ok(self.put_file(path, data)?)
    }

    fn read(&mut self, path: String, max_bytes: u64) -> Result<Vec<u8>, files::FileError> {
        Ok(self.get_file(path, max_bytes)?)
    }

    fn scan(
        &mut self,
        path: String,
        first_line: u64,
        max_lines: u64,
        max_window: u64,
    ) -> Result<files::ScanResult, files::FileError> {
        Ok(self.scan_file(path, first_line, max_lines, max_window)?)
    }

    fn walk(
        &mut self,
        path: String,
        options: files::WalkOptions,
    ) -> Result<Vec<files::WalkEntry>, files::FileError> {
        Ok(self.walk_dir(path, options)?)
    }
}

impl From<FileError> for files::FileError {
    fn from(e: FileError) -> Self {
        match e {
            FileError::NotFound(m) => Self::NotFound(m),
            FileError::Denied(m) => Self::Denied(m),
            FileError::Invalid(m) => Self::Invalid(m),
            FileError::TooLarge(m) => Self::TooLarge(m),
            FileError::Failed(m) => Self::Failed(m),
        }
    }
}

impl CallState {
    /// `files.write-atomic`.
    pub(crate) fn put_file(&mut self, path: String, data: Vec<u8>) -> Result<(), FileError> {
        let (base, rel) = self.granted.resolve(&path, Access::Write)?;
        if rel.as_os_str().is_empty() {
            return Err(FileError::Invalid(format!(
                "`{path}` names a directory, not a file"
            )));
        }
        let base = base.to_owned();
        let dir = self.granted.open(&base)?;
        self.paths
            .check_at(dir.as_fd(), &rel.to_string_lossy(), true, Need::Write)
            .map_err(FileError::Denied)?;
        dirs::write_atomic(&dir, &rel, &data, dirs::sync_dir)
            .map_err(|e| dirs::to_file_error(e, &path, Op::Write))
    }

    /// `files.read`.
    fn get_file(&mut self, path: String, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        let (base, rel) = self.granted.resolve(&path, Access::Read)?;
        let base = base.to_owned();
        let dir = self.granted.open(&base)?;
        // The guest chooses `max_bytes`; the host allocates the buffer, so
        // it is bounded by what the guest could take in anyway.
        let cap = self.env.max_read_bytes;
        let (file, size) = self.open_unless_secret(&base, &dir, &rel, &path)?;
        dirs::read_sized(file, size, max_bytes.min(cap), &path)
    }

    /// `files.scan`.
    fn scan_file(
        &mut self,
        path: String,
        first_line: u64,
        max_lines: u64,
        max_window: u64,
    ) -> Result<files::ScanResult, FileError> {
        let (base, rel) = self.granted.resolve(&path, Access::Read)?;
        let base = base.to_owned();
        let dir = self.granted.open(&base)?;
        let (file, _) = self.open_unless_secret(&base, &dir, &rel, &path)?;
        let most = usize::try_from(max_window.min(MAX_SCAN_WINDOW)).unwrap_or(usize::MAX);
        let scan = toolhost_shared::scan::scan_reader(file, first_line, max_lines, most)
            .map_err(|e| dirs::to_file_error(e, &path, Op::Read))?;
        Ok(files::ScanResult {
            hash: scan.hash,
            size: scan.size,
            newlines: scan.newlines,
            last_byte: scan.last_byte,
            binary: scan.binary,
            window: scan.window,
            window_complete: scan.window_complete,
        })
    }

    /// `files.walk`.
    fn walk_dir(
        &mut self,
        path: String,
        options: files::WalkOptions,
    ) -> Result<Vec<files::WalkEntry>, FileError> {
        let (base, rel) = self.granted.resolve(&path, Access::Read)?;
        // The walk never follows symlinks, so only the starting directory
        // could lead elsewhere: it must resolve inside the granted one.
        let inside = |p: &Path| p.canonicalize();
        let (root, base) = (inside(&base.join(&rel)), inside(base));
        let root = match (root, base) {
            (Ok(root), Ok(base)) if root.starts_with(&base) => root,
            (Ok(_), Ok(_)) => {
                return Err(FileError::Denied(format!(
                    "`{path}` leads outside the granted directory (through a symlink)"
                )));
            }
            (Err(e), _) | (_, Err(e)) => return Err(dirs::to_file_error(e, &path, Op::Walk)),
        };
        let options = WalkOptions {
            respect_ignore: options.respect_ignore,
            hidden: options.hidden,
            max_depth: options.max_depth.map(|d| d as usize),
            metadata: options.metadata,
        };
        self.paths
            .check(&root, Need::Read)
            .map_err(FileError::Denied)?;
        // Secrets are left out as the walk meets them, on its own threads:
        // a secret directory counted once and nothing beneath it walked.
        let left_out = std::sync::Mutex::new(Vec::new());
        let walked = {
            let secret = self.paths.secret_test();
            let leave_out = |at: &Path| {
                let Some(rel) = secret(at) else {
                    return false;
                };
                left_out
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(rel);
                true
            };
            walk_native_except(&root, &options, &leave_out)
        };
        self.paths.left_out(
            left_out
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let entries = walked.map_err(|e| dirs::to_file_error(e, &path, Op::Walk))?;
        Ok(entries
            .into_iter()
            .map(|e| files::WalkEntry {
                path: e.path,
                kind: match e.kind {
                    EntryKind::File => files::EntryKind::File,
                    EntryKind::Directory => files::EntryKind::Directory,
                    EntryKind::Symlink => files::EntryKind::Symlink,
                    EntryKind::Other => files::EntryKind::Other,
                },
                size: e.size,
                modified_ns: e.modified_ns,
            })
            .collect())
    }
}

impl CallState {
    /// The regular file `rel` beneath the granted `base` (open as `dir`)
    /// and its size, unless it is a secret by name or by what it really is.
    fn open_unless_secret(
        &mut self,
        base: &Path,
        dir: &cap_std::fs::Dir,
        rel: &Path,
        path: &str,
    ) -> Result<(cap_std::fs::File, u64), FileError> {
        self.paths
            .check_named(base, rel, Need::Read)
            .map_err(FileError::Denied)?;
        // With no symlink on the way, what opened is what was judged by
        // name; otherwise it is judged again for what it really is.
        if let Some(opened) = dirs::open_regular_direct(dir, rel, path)? {
            return Ok(opened);
        }
        let (file, size) = dirs::open_regular(dir, rel, path)?;
        self.paths
            .check_fd(file.as_fd(), Need::Read)
            .map_err(FileError::Denied)?;
        Ok((file, size))
    }
}

/// The largest window `scan` returns.
const MAX_SCAN_WINDOW: u64 = 16 << 20;
