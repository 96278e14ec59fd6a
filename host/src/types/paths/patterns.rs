//! Compiled path lists: the globs of one list, matched in one pass, with the text a match needs picked out ahead.

use super::*;

/// A list of patterns, compiled on first use. A list configuration added
/// patterns to is compiled at once, so a bad one is blamed on the file;
/// the defaults are known to compile, and a one-shot `toolhost call` that
/// only reads never compiles the protected list.
#[derive(Debug, Clone)]
pub(super) struct List {
    key: &'static str,
    patterns: Vec<String>,
    beneath: bool,
    pub(super) compiled: OnceLock<Patterns>,
}

impl List {
    pub(super) fn new(
        key: &'static str,
        patterns: Vec<String>,
        beneath: bool,
        check_now: bool,
    ) -> Result<Self, PathPatternError> {
        let compiled = OnceLock::new();
        if check_now {
            let _ = compiled.set(Patterns::compile(key, &patterns, beneath, true)?);
        }
        Ok(Self {
            key,
            patterns,
            beneath,
            compiled,
        })
    }

    pub(super) fn get(&self) -> &Patterns {
        self.compiled.get_or_init(|| {
            Patterns::compile(self.key, &self.patterns, self.beneath, false)
                .expect("patterns not checked at once are the defaults, which parse")
        })
    }
}

/// A list of patterns, compiled: each as a glob, anchored at the root
/// with a leading `/` and matching at any depth otherwise, with `*` kept
/// within a path part. Case does not count (`.ENV` is `.env` on a
/// case-insensitive filesystem: macOS, ext4 casefold directories, vfat):
/// patterns and paths are both folded to ASCII lower case, the way a
/// case-insensitive glob would match, which keeps the plain globs
/// (`**/.env`, `**/*.pem`) hash lookups instead of regular expressions.
/// With `beneath`, a pattern also covers everything beneath what it
/// matches.
///
/// Asked about a few paths (a one-shot `toolhost call`), the list compiles
/// a glob only when the path holds the text every match of it holds
/// (`id_rsa` for `id_rsa*`), and walks the path's parents for what lies
/// beneath. Asked about many (a search's walk), it compiles all of them
/// together, with a second glob per pattern for what lies beneath
/// (`**/.ssh/**`), and answers in one pass. Globs like `id_rsa*` and
/// `**/.ssh/**` become regular expressions; compiling them up front was
/// most of what a one-shot call spent starting.
#[derive(Debug, Clone)]
pub(super) struct Patterns {
    globs: Vec<Entry>,
    pub(super) beneath: bool,
    pub(super) one_pass: Arc<OnePass>,
}

/// One pattern's glob.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    glob: Glob,
    /// Text every path it matches holds (none when that is not known).
    needs: Option<String>,
    /// The glob compiled alone, on first need.
    alone: OnceLock<GlobSet>,
}

/// A list's globs compiled together, once it has been asked enough.
#[derive(Debug, Default)]
pub(super) struct OnePass {
    /// The paths asked about so far, up to [`ONE_PASS_AFTER`].
    asked: AtomicUsize,
    pub(super) set: OnceLock<GlobSet>,
}

/// Paths a list answers glob by glob before it compiles the globs that
/// answer in one pass: compiling them costs about as much as answering a
/// few hundred paths glob by glob (docs/benchmarks.md).
pub(super) const ONE_PASS_AFTER: usize = 256;

impl Patterns {
    /// Parse `patterns`; `check_now` also compiles every glob, so that
    /// nothing is left to fail later.
    fn compile(
        key: &'static str,
        patterns: &[String],
        beneath: bool,
        check_now: bool,
    ) -> Result<Self, PathPatternError> {
        let mut globs = Vec::with_capacity(patterns.len());
        for pattern in patterns {
            let error = |reason: String| PathPatternError {
                key,
                pattern: pattern.clone(),
                reason,
            };
            let body = pattern.trim_end_matches('/').to_ascii_lowercase();
            let base = match body.strip_prefix('/') {
                Some(anchored) => anchored.to_owned(),
                None => format!("**/{body}"),
            };
            if body.is_empty() || base.ends_with("**/") {
                return Err(error("it is empty".to_owned()));
            }
            let glob = glob(&base).map_err(|e| error(e.kind().to_string()))?;
            let entry = Entry {
                needs: needed_text(&base),
                glob,
                alone: OnceLock::new(),
            };
            if check_now {
                let set = GlobSet::new([&entry.glob]).map_err(|e| error(e.to_string()))?;
                let _ = entry.alone.set(set);
            }
            globs.push(entry);
        }
        Ok(Self {
            globs,
            beneath,
            one_pass: Arc::default(),
        })
    }

    /// Whether a pattern matches the (folded) `path` or, `beneath`, one of
    /// its parent directories.
    pub(super) fn matches(&self, path: &Folded) -> bool {
        if self.globs.is_empty() {
            return false;
        }
        let path = path.path();
        if let Some(set) = self.one_pass() {
            return set.is_match(path);
        }
        self.glob_by_glob(path)
    }

    /// [`Self::matches`], compiling only the globs `path` may match.
    /// The parents walked are those of the path with `.` parts and a
    /// trailing `/` left out (`a/.ssh/.` is `a/.ssh`), which the one-pass
    /// set's `/**` globs cover as they stand.
    pub(super) fn glob_by_glob(&self, path: &Path) -> bool {
        let path: std::path::PathBuf = path.components().collect();
        let path = path.as_path();
        let bytes = path.as_os_str().as_encoded_bytes();
        self.globs
            .iter()
            .filter(|entry| {
                entry
                    .needs
                    .as_ref()
                    .is_none_or(|needs| bytes.windows(needs.len()).any(|w| w == needs.as_bytes()))
            })
            .any(|entry| {
                let set = entry.alone.get_or_init(|| {
                    GlobSet::new([&entry.glob])
                        .expect("globs not compiled at once are the defaults, which compile")
                });
                if self.beneath {
                    path.ancestors()
                        .take_while(|p| !p.as_os_str().is_empty())
                        .any(|p| set.is_match(p))
                } else {
                    set.is_match(path)
                }
            })
    }

    /// The globs compiled together, from the [`ONE_PASS_AFTER`]th
    /// question on; `None` before, or if they do not compile together
    /// (only past globset's size limits, which globs compiled one by one
    /// do not reach).
    fn one_pass(&self) -> Option<&GlobSet> {
        let one_pass = &*self.one_pass;
        if let Some(set) = one_pass.set.get() {
            return Some(set).filter(|set| !set.is_empty());
        }
        if one_pass.asked.fetch_add(1, Ordering::Relaxed) + 1 < ONE_PASS_AFTER {
            return None;
        }
        Some(one_pass.set.get_or_init(|| self.compile_one_pass())).filter(|set| !set.is_empty())
    }

    /// Every glob and, `beneath`, a second one for what lies beneath what
    /// it matches, as one set; empty if they do not compile together.
    pub(super) fn compile_one_pass(&self) -> GlobSet {
        let mut set = GlobSetBuilder::new();
        for entry in &self.globs {
            set.add(entry.glob.clone());
            if self.beneath {
                if let Ok(below) = glob(&format!("{}/**", entry.glob.glob())) {
                    set.add(below);
                } else {
                    return GlobSet::empty();
                }
            }
        }
        set.build().unwrap_or_else(|_| GlobSet::empty())
    }
}

/// `text` as a glob: `*` and `?` within a path part, a backslash escapes.
pub(super) fn glob(text: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(text)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

/// The longest text every path the glob `base` matches holds: its longest
/// run of plain characters, not counting the `/` a `**` may stand in for
/// (`**/.env` matches `.env`). `None` for globs with classes,
/// alternatives or escapes, which this does not read.
pub(super) fn needed_text(base: &str) -> Option<String> {
    if base.contains(['[', ']', '{', '}', '\\']) {
        return None;
    }
    base.split("**")
        .flat_map(|piece| piece.trim_matches('/').split(['*', '?']))
        .max_by_key(|run| run.len())
        .filter(|run| !run.is_empty())
        .map(str::to_owned)
}

/// A path folded to ASCII lower case, as the compiled patterns are.
/// Borrowed when it has no upper-case letter (most paths): checks on the
/// search walk's hot path allocate nothing then.
pub(super) struct Folded<'a>(std::borrow::Cow<'a, [u8]>);

impl<'a> Folded<'a> {
    pub(super) fn new(path: &'a Path) -> Self {
        let bytes = path.as_os_str().as_encoded_bytes();
        Self(if bytes.iter().any(u8::is_ascii_uppercase) {
            bytes.to_ascii_lowercase().into()
        } else {
            bytes.into()
        })
    }

    pub(super) fn path(&self) -> &Path {
        Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&self.0))
    }
}
