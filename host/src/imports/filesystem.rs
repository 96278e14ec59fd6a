//! `wasi:filesystem/types` with secrets and protected paths enforced:
//! every operation that names a path is judged by the call's
//! [`PathGuard`] (guard.rs) before wasmtime-wasi does it, every descriptor
//! it opens is judged again for what it really is, and listings leave
//! secrets out. Everything else is wasmtime-wasi's own implementation.
//!
//! `Runtime::new` links this over wasmtime-wasi's version of the interface
//! ([`Guarded`] is defined beside `CallState`, whose parts it borrows).

use crate::guard::Need;
use crate::runtime::sandbox::Guarded;
use std::fs::File;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Arc;
use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::sync::filesystem::types as fs;
use wasmtime_wasi::p2::bindings::sync::io::streams;
use wasmtime_wasi::p2::{FsError, FsResult};

fn refused() -> FsError {
    wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode::Access.into()
}

impl Guarded<'_> {
    /// The open file behind a descriptor.
    fn file(&self, fd: &Resource<Descriptor>) -> FsResult<Arc<File>> {
        Ok(match self.inner.table.get(fd)? {
            Descriptor::File(f) => Arc::clone(&f.file),
            Descriptor::Dir(d) => Arc::clone(&d.dir),
        })
    }

    /// Refuse `need` at `path` beneath the directory `fd`.
    fn check(
        &mut self,
        fd: &Resource<Descriptor>,
        path: &str,
        follow: bool,
        need: Need,
    ) -> FsResult<()> {
        let dir = self.file(fd)?;
        self.guard
            .check_at(dir.as_fd(), path, follow, need)
            .map_err(|_| refused())
    }
}

fn follows(flags: fs::PathFlags) -> bool {
    flags.contains(fs::PathFlags::SYMLINK_FOLLOW)
}

impl fs::Host for Guarded<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<fs::ErrorCode> {
        fs::Host::convert_error_code(&mut self.inner, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<streams::Error>,
    ) -> wasmtime::Result<Option<fs::ErrorCode>> {
        fs::Host::filesystem_error_code(&mut self.inner, err)
    }
}

impl fs::HostDescriptor for Guarded<'_> {
    fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
        len: fs::Filesize,
        advice: fs::Advice,
    ) -> FsResult<()> {
        fs::HostDescriptor::advise(&mut self.inner, fd, offset, len, advice)
    }

    fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        fs::HostDescriptor::sync_data(&mut self.inner, fd)
    }

    fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorFlags> {
        fs::HostDescriptor::get_flags(&mut self.inner, fd)
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorType> {
        fs::HostDescriptor::get_type(&mut self.inner, fd)
    }

    fn set_size(&mut self, fd: Resource<Descriptor>, size: fs::Filesize) -> FsResult<()> {
        fs::HostDescriptor::set_size(&mut self.inner, fd, size)
    }

    fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        fs::HostDescriptor::set_times(&mut self.inner, fd, atim, mtim)
    }

    fn read(
        &mut self,
        fd: Resource<Descriptor>,
        len: fs::Filesize,
        offset: fs::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        fs::HostDescriptor::read(&mut self.inner, fd, len, offset)
    }

    fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buf: Vec<u8>,
        offset: fs::Filesize,
    ) -> FsResult<fs::Filesize> {
        fs::HostDescriptor::write(&mut self.inner, fd, buf, offset)
    }

    fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<fs::DirectoryEntryStream>> {
        let dir = crate::guard::fd_path(self.file(&fd)?.as_fd());
        let stream = fs::HostDescriptor::read_directory(&mut self.inner, fd)?;
        match dir {
            Some(dir) => self.guard.listing_opened(stream.rep(), dir),
            None => {
                // Nothing in it can be judged: list nothing.
                self.guard.listing_opened(stream.rep(), PathBuf::new());
            }
        }
        Ok(stream)
    }

    fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        fs::HostDescriptor::sync(&mut self.inner, fd)
    }

    fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.check(&fd, &path, false, Need::Write)?;
        fs::HostDescriptor::create_directory_at(&mut self.inner, fd, path)
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorStat> {
        fs::HostDescriptor::stat(&mut self.inner, fd)
    }

    fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::DescriptorStat> {
        self.check(&fd, &path, follows(path_flags), Need::Read)?;
        fs::HostDescriptor::stat_at(&mut self.inner, fd, path_flags, path)
    }

    fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        self.check(&fd, &path, follows(path_flags), Need::Write)?;
        fs::HostDescriptor::set_times_at(&mut self.inner, fd, path_flags, path, atim, mtim)
    }

    fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: fs::PathFlags,
        old_path: String,
        new_descriptor: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        // A second name for a secret or a protected file would be neither.
        self.check(&fd, &old_path, follows(old_path_flags), Need::Write)?;
        self.check(&new_descriptor, &new_path, false, Need::Write)?;
        fs::HostDescriptor::link_at(
            &mut self.inner,
            fd,
            old_path_flags,
            old_path,
            new_descriptor,
            new_path,
        )
    }

    fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
        oflags: fs::OpenFlags,
        flags: fs::DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let changes = oflags.intersects(fs::OpenFlags::CREATE | fs::OpenFlags::TRUNCATE)
            || flags.intersects(fs::DescriptorFlags::WRITE | fs::DescriptorFlags::MUTATE_DIRECTORY);
        let need = if changes { Need::Write } else { Need::Read };
        // A read is judged once open, for what it really is (one system
        // call); a write before anything changes, then again.
        if changes {
            self.check(&fd, &path, follows(path_flags), need)?;
        }
        let opened =
            fs::HostDescriptor::open_at(&mut self.inner, fd, path_flags, path, oflags, flags)?;
        // Judged again for what was really opened.
        let file = self.file(&opened)?;
        if self.guard.check_fd(file.as_fd(), need).is_err() {
            fs::HostDescriptor::drop(&mut self.inner, opened).map_err(FsError::trap)?;
            return Err(refused());
        }
        Ok(opened)
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        fs::HostDescriptor::drop(&mut self.inner, fd)
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        self.check(&fd, &path, false, Need::Read)?;
        fs::HostDescriptor::readlink_at(&mut self.inner, fd, path)
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.check(&fd, &path, false, Need::Write)?;
        fs::HostDescriptor::remove_directory_at(&mut self.inner, fd, path)
    }

    fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.check(&fd, &old_path, false, Need::Write)?;
        self.check(&new_fd, &new_path, false, Need::Write)?;
        // What lies beneath moves with it: not a directory the lists
        // reach into (`.git`, `.docker`), either way.
        for (fd, path) in [(&fd, &old_path), (&new_fd, &new_path)] {
            let dir = self.file(fd)?;
            self.guard
                .check_move(dir.as_fd(), path)
                .map_err(|_| refused())?;
        }
        fs::HostDescriptor::rename_at(&mut self.inner, fd, old_path, new_fd, new_path)
    }

    fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        src_path: String,
        dest_path: String,
    ) -> FsResult<()> {
        self.check(&fd, &dest_path, false, Need::Write)?;
        fs::HostDescriptor::symlink_at(&mut self.inner, fd, src_path, dest_path)
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.check(&fd, &path, false, Need::Write)?;
        fs::HostDescriptor::unlink_file_at(&mut self.inner, fd, path)
    }

    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
    ) -> FsResult<Resource<streams::InputStream>> {
        fs::HostDescriptor::read_via_stream(&mut self.inner, fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
    ) -> FsResult<Resource<streams::OutputStream>> {
        fs::HostDescriptor::write_via_stream(&mut self.inner, fd, offset)
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<streams::OutputStream>> {
        fs::HostDescriptor::append_via_stream(&mut self.inner, fd)
    }

    fn is_same_object(
        &mut self,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        fs::HostDescriptor::is_same_object(&mut self.inner, a, b)
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::MetadataHashValue> {
        fs::HostDescriptor::metadata_hash(&mut self.inner, fd)
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::MetadataHashValue> {
        self.check(&fd, &path, follows(path_flags), Need::Read)?;
        fs::HostDescriptor::metadata_hash_at(&mut self.inner, fd, path_flags, path)
    }
}

impl fs::HostDirectoryEntryStream for Guarded<'_> {
    fn read_directory_entry(
        &mut self,
        stream: Resource<fs::DirectoryEntryStream>,
    ) -> FsResult<Option<fs::DirectoryEntry>> {
        let rep = stream.rep();
        loop {
            let entry = fs::HostDirectoryEntryStream::read_directory_entry(
                &mut self.inner,
                Resource::new_borrow(rep),
            )?;
            match entry {
                Some(e) if self.guard.listing_hides(rep, &e.name) => {}
                other => return Ok(other),
            }
        }
    }

    fn drop(&mut self, stream: Resource<fs::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.guard.listing_closed(stream.rep());
        fs::HostDirectoryEntryStream::drop(&mut self.inner, stream)
    }
}
