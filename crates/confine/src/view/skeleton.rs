//! Skeletons: the directories on the host a view's root is bound from, made once per layout, with the masks that cover secrets.

use super::*;

/// A skeleton on the host: the view's root, and the masks that cover
/// secrets (an empty file and directory, mode 000).
#[derive(Debug)]
pub(crate) struct Skeleton {
    pub(crate) root: PathBuf,
    pub(crate) mask_file: CString,
    pub(crate) mask_dir: CString,
    /// Present once the skeleton is complete; gone if something cleaned
    /// the directory up, and then it is made again.
    pub(super) ready: PathBuf,
}

/// How many skeletons were made, and the current one of each set of
/// entries.
pub(super) type Made = (usize, HashMap<Vec<Entry>, Arc<Skeleton>>);

/// The skeletons of one broker, one per distinct set of entries, in a
/// private directory removed with it.
#[derive(Debug)]
pub struct Skeletons {
    /// Removed when the broker goes (after `Drop` opens the masks up).
    _dir: tempfile::TempDir,
    base: PathBuf,
    made: Mutex<Made>,
}

impl Skeletons {
    /// A directory for skeletons: in `$XDG_RUNTIME_DIR` (which no
    /// temp cleaner ages out) where there is one, else the temp dir.
    pub fn new() -> io::Result<Self> {
        let runtime = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|d| d.is_absolute() && d.is_dir());
        let builder = tempfile::Builder::new().prefix("toolhost-view-").clone();
        let dir = match runtime {
            Some(base) => builder.tempdir_in(base).or_else(|_| builder.tempdir())?,
            None => builder.tempdir()?,
        };
        // Canonical: masks and covers are placed through paths opened with
        // no symlink allowed anywhere on the way.
        let base = dir.path().canonicalize()?;
        Ok(Self {
            _dir: dir,
            base,
            made: Mutex::new((0, HashMap::new())),
        })
    }

    /// The directory holding the skeletons (canonical).
    pub(crate) fn base(&self) -> &Path {
        &self.base
    }

    /// The skeleton holding `entries`, made now if it does not exist.
    pub(crate) fn get(&self, entries: &[Entry]) -> io::Result<Arc<Skeleton>> {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(skeleton) = made.1.get(entries)
            && skeleton.ready.exists()
        {
            return Ok(Arc::clone(skeleton));
        }
        made.0 += 1;
        let at = self.base.join(made.0.to_string());
        let skeleton = Arc::new(make(&at, entries)?);
        made.1.insert(entries.to_vec(), Arc::clone(&skeleton));
        Ok(skeleton)
    }
}

impl Drop for Skeletons {
    fn drop(&mut self) {
        // A mode-000 mask directory cannot be listed, so the tree could
        // not be removed: open them up first.
        let (count, _) = *self.made.lock().unwrap_or_else(PoisonError::into_inner);
        for n in 1..=count {
            let mask = self.base.join(n.to_string()).join("mask-dir");
            let _ = fs::set_permissions(mask, fs::Permissions::from_mode(0o700));
        }
    }
}

/// Make a skeleton of `entries` in the new directory `at`.
pub(super) fn make(at: &Path, entries: &[Entry]) -> io::Result<Skeleton> {
    let root = at.join("root");
    fs::create_dir_all(&root)?;
    let inside = |p: &Path| root.join(p.strip_prefix("/").unwrap_or(p));
    for entry in entries {
        match entry {
            Entry::Dir(d) => fs::create_dir_all(inside(d))?,
            Entry::File(f) => {
                let f = inside(f);
                if let Some(parent) = f.parent() {
                    fs::create_dir_all(parent)?;
                }
                fs::OpenOptions::new().create(true).append(true).open(f)?;
            }
            Entry::Symlink { target, link } => {
                let link = inside(link);
                if let Some(parent) = link.parent() {
                    fs::create_dir_all(parent)?;
                }
                match std::os::unix::fs::symlink(target, &link) {
                    Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                    _ => {}
                }
            }
        }
    }
    let (mask_file, mask_dir) = (at.join("mask-file"), at.join("mask-dir"));
    fs::File::create(&mask_file)?;
    fs::set_permissions(&mask_file, fs::Permissions::from_mode(0o000))?;
    fs::create_dir(&mask_dir)?;
    fs::set_permissions(&mask_dir, fs::Permissions::from_mode(0o000))?;
    let ready = at.join("ready");
    fs::File::create(&ready)?;
    Ok(Skeleton {
        root,
        mask_file: host(&mask_file).map_err(io::Error::other)?,
        mask_dir: host(&mask_dir).map_err(io::Error::other)?,
        ready,
    })
}
