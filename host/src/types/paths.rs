//! The one list of secret paths (hidden from every tool and every command)
//! and of protected paths (read-only for every tool and every command,
//! because a person's tools run what they hold), with their defaults and
//! how trusted configuration widens or narrows them.
//!
//! Patterns follow a small part of gitignore's syntax:
//! - a pattern matches at any depth (`.env` matches `.env` and `app/.env`),
//!   unless it starts with `/`, which anchors it at the root (the
//!   workspace);
//! - `*`, `?` and `[...]` do not cross `/`; `**` does;
//! - a pattern also covers everything beneath what it matches (`.ssh/`
//!   hides the directory and its files); a trailing `/` only documents that
//!   the pattern names a directory.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};
mod patterns;
use patterns::*;

/// Secret paths by default: credentials, keys and tokens. Their content is
/// never shown to a tool or a command.
pub const DEFAULT_SECRETS: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".ssh/",
    ".aws/",
    ".gnupg/",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".docker/config.json",
    "credentials*.json",
    "*.p12",
    "*.pfx",
    "token.json",
    ".kube/config",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    // PostgreSQL's and MySQL's password files.
    ".pgpass",
    ".my.cnf",
    // HashiCorp Vault's token; Terraform state, which holds every
    // secret of the resources it manages.
    ".vault-token",
    "*.tfstate",
    "*.tfstate.backup",
    // Google Cloud's application default credentials and service-account
    // keys; the GitHub CLI's tokens (~/.config/gh/hosts.yml).
    "application_default_credentials.json",
    "service-account*.json",
    "gh/hosts.yml",
    // Yarn 2+'s configuration, which holds registry tokens.
    ".yarnrc.yml",
    // Web server password files; a copy of the system's password hashes.
    ".htpasswd",
    "shadow",
    // Files named for what they hold.
    "*.secret",
    "credentials",
];

/// Protected paths by default: configuration that git, editors, agents,
/// shells and build tools load and run code from, outside any sandbox.
/// Tools and commands may read them, never write them.
pub const DEFAULT_PROTECTED: &[&str] = &[
    // Inside a `.git` directory, every entry but git's own state is
    // protected as well ([`GIT_STATE`]); these are named so that a
    // command that creates one is swept.
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/hooks/",
    ".git/info/",
    ".git/modules/**/config",
    ".git/modules/**/config.worktree",
    ".git/modules/**/commondir",
    ".git/modules/**/hooks/",
    ".git/modules/**/info/",
    ".git/worktrees/*/config",
    ".git/worktrees/*/config.worktree",
    ".git/worktrees/*/commondir",
    ".git/worktrees/*/gitdir",
    ".gitmodules",
    "toolhost.toml",
    // Which registry components run (oci.rs).
    "toolhost.lock",
    ".mcp.json",
    ".vscode/",
    ".idea/",
    ".claude/",
    ".cursor/",
    ".envrc",
    ".cargo/config",
    ".cargo/config.toml",
    // Maven reads JVM options and extensions from here on every run.
    ".mvn/",
    ".npmrc",
    ".gitconfig",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".ripgreprc",
];

/// What git itself writes directly in a `.git` directory while it works
/// (commits, merges, rebases, fetches, garbage collection): the only
/// entries there a tool or command may create or change. Every other one
/// (`config`, `commondir`, `hooks/`, anything new) is protected, so no
/// command can point the person's next `git` at code of its choosing.
pub const GIT_STATE: &[&str] = &[
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "MERGE_RR",
    "AUTO_MERGE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "REBASE_HEAD",
    "BISECT_LOG",
    "BISECT_START",
    "BISECT_TERMS",
    "BISECT_NAMES",
    "BISECT_EXPECTED_REV",
    "BISECT_ANCESTORS_OK",
    "BISECT_RUN",
    "COMMIT_EDITMSG",
    "TAG_EDITMSG",
    "SQUASH_MSG",
    "NOTES_EDITMSG",
    "NOTES_MERGE_PARTIAL",
    "NOTES_MERGE_REF",
    "description",
    "index",
    "packed-refs",
    "shallow",
    "gc.pid",
    "gc.log",
    "objects",
    "refs",
    "logs",
    "modules",
    "worktrees",
    "rebase-merge",
    "rebase-apply",
    "sequencer",
    "rr-cache",
    "lfs",
];

/// toolhost's own directories, by what they hold: the user configuration,
/// the data directory (the trust store, dynamic tools), state and cache.
/// No tool or command may reach them, and no workspace may hold them.
/// Canonical where they exist.
pub fn own_dirs() -> Vec<(&'static str, std::path::PathBuf)> {
    let mut all = policy_dirs();
    all.extend(
        [("state", dirs::state_dir()), ("cache", dirs::cache_dir())]
            .into_iter()
            .filter_map(|(what, dir)| Some((what, dir?.join("toolhost"))))
            .map(|(what, dir)| (what, dir.canonicalize().unwrap_or(dir))),
    );
    all
}

/// Of [`own_dirs`], the ones that decide policy: the user configuration
/// and the data directory holding the trust store. A command that could
/// write them could grant itself anything, so where they cannot be hidden
/// from it, it does not run.
pub fn policy_dirs() -> Vec<(&'static str, std::path::PathBuf)> {
    [
        ("configuration", dirs::config_dir()),
        ("trust store and data", dirs::data_dir()),
    ]
    .into_iter()
    .filter_map(|(what, dir)| Some((what, dir?.join("toolhost"))))
    .map(|(what, dir)| (what, dir.canonicalize().unwrap_or(dir)))
    .collect()
}

/// Why the canonical directory `dir` must not be a workspace (a grant of
/// everything beneath it), or `None` if it may be.
///
/// ```
/// use toolhost::paths::unsafe_workspace;
/// assert!(unsafe_workspace(std::path::Path::new("/")).is_some());
/// ```
pub fn unsafe_workspace(dir: &Path) -> Option<String> {
    if dir.parent().is_none() {
        return Some("is the root of the file system".to_owned());
    }
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_owned());
    if dirs::home_dir().is_some_and(|home| real(&home) == dir) {
        return Some("is your home directory".to_owned());
    }
    own_dirs().into_iter().find_map(|(what, own)| {
        own.starts_with(dir).then(|| {
            format!(
                "holds toolhost's own {what} ({}), which no tool may reach",
                own.display()
            )
        })
    })
}

/// How trusted configuration changes the defaults (`[paths]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PathRulesConfig {
    /// More secret patterns.
    pub secret: Vec<String>,
    /// Paths that are not secret here, although a secret pattern matches
    /// them (e.g. `.env.example`).
    pub not_secret: Vec<String>,
    /// More protected patterns.
    pub protected: Vec<String>,
    /// Paths tools and commands may write here, although a protected
    /// pattern matches them (e.g. `.vscode/`).
    pub writable: Vec<String>,
}

/// What a pattern list says about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Hidden: not found by reads and listings, not created or overwritten.
    Secret,
    /// Readable, never written.
    Protected,
}

/// A pattern that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("paths.{key}: `{pattern}` is not a valid pattern: {reason}")]
pub struct PathPatternError {
    /// The configuration key.
    pub key: &'static str,
    /// The pattern.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The secret and protected lists, compiled.
///
/// ```
/// use toolhost::paths::{Guard, PathRules, PathRulesConfig};
/// use std::path::Path;
///
/// let rules = PathRules::default();
/// assert_eq!(rules.guard(Path::new("app/.env")), Some(Guard::Secret));
/// assert_eq!(rules.guard(Path::new(".ssh/id_ed25519")), Some(Guard::Secret));
/// assert_eq!(rules.guard(Path::new(".git/hooks/pre-commit")), Some(Guard::Protected));
/// assert_eq!(rules.guard(Path::new("src/main.rs")), None);
/// // Case does not count: on a case-insensitive filesystem it is the same file.
/// assert_eq!(rules.guard(Path::new("APP/.ENV")), Some(Guard::Secret));
///
/// let config = PathRulesConfig { not_secret: vec![".env.example".into()], ..Default::default() };
/// let rules = PathRules::new(&config).unwrap();
/// assert_eq!(rules.guard(Path::new(".env.example")), None);
/// ```
#[derive(Debug, Clone)]
pub struct PathRules {
    secret: List,
    not_secret: List,
    /// Only writes ask.
    protected: List,
    writable: List,
    /// The directories patterns reach beneath ([`Self::shelters`]): only a
    /// rename asks.
    shelters: List,
    /// Those the protected patterns reach beneath ([`Self::pins`]).
    pins: List,
    /// Protected patterns without wildcards, relative to the root, with
    /// whether they name a directory: the paths a command could create.
    literals: Vec<(String, bool)>,
    config: PathRulesConfig,
}

impl Default for PathRules {
    fn default() -> Self {
        Self::new(&PathRulesConfig::default()).expect("the default patterns compile")
    }
}

impl PathRules {
    /// The default rules, compiled once per process and shared.
    pub fn shared_default() -> Arc<Self> {
        static DEFAULT: LazyLock<Arc<PathRules>> = LazyLock::new(|| Arc::new(PathRules::default()));
        Arc::clone(&DEFAULT)
    }

    /// The defaults changed by `config`, shared: the defaults themselves
    /// are parsed once per process, and each list compiled as far as it is
    /// used (see `Patterns`).
    pub fn shared(config: &PathRulesConfig) -> Result<Arc<Self>, PathPatternError> {
        if *config == PathRulesConfig::default() {
            Ok(Self::shared_default())
        } else {
            Self::new(config).map(Arc::new)
        }
    }

    /// The defaults changed by `config`.
    pub fn new(config: &PathRulesConfig) -> Result<Self, PathPatternError> {
        let defaults = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let mut secret = defaults(DEFAULT_SECRETS);
        secret.extend(config.secret.iter().cloned());
        let mut protected = defaults(DEFAULT_PROTECTED);
        protected.extend(config.protected.iter().cloned());
        let literals = protected
            .iter()
            .filter(|p| !p.contains(['*', '?', '[']))
            .map(|p| {
                let dir = p.ends_with('/');
                (p.trim_matches('/').to_owned(), dir)
            })
            .collect();
        let shelters = shelter_patterns(secret.iter().chain(&protected));
        let pins = shelter_patterns(protected.iter());
        let configured = |list: &[String]| !list.is_empty();
        Ok(Self {
            shelters: List::new(
                "secret/protected",
                shelters,
                false,
                configured(&config.secret) || configured(&config.protected),
            )?,
            pins: List::new("protected", pins, false, configured(&config.protected))?,
            secret: List::new("secret", secret, true, configured(&config.secret))?,
            not_secret: List::new("not_secret", config.not_secret.clone(), true, true)?,
            protected: List::new("protected", protected, true, configured(&config.protected))?,
            writable: List::new("writable", config.writable.clone(), true, true)?,
            literals,
            config: config.clone(),
        })
    }

    /// The configuration these rules were built from.
    pub fn config(&self) -> &PathRulesConfig {
        &self.config
    }

    /// Whether `path` (relative to the root it lives in) is secret or
    /// protected; secret wins.
    pub fn guard(&self, path: &Path) -> Option<Guard> {
        let path = Folded::new(path);
        if self.secret_folded(&path) {
            Some(Guard::Secret)
        } else if (self.protected.get().matches(&path) || outside_git_state(&path))
            && !self.writable.get().matches(&path)
        {
            Some(Guard::Protected)
        } else {
            None
        }
    }

    /// Whether the directory at `path` (relative to its root) holds what a
    /// pattern guards beneath it (`.git` for `.git/hooks/`, `app/.docker`
    /// for `.docker/config.json`): renaming it, or giving another directory
    /// its place, would move guarded paths out of the lists or plain ones
    /// in.
    ///
    /// ```
    /// use std::path::Path;
    /// let rules = toolhost::paths::PathRules::default();
    /// assert!(rules.shelters(Path::new(".git")) && rules.shelters(Path::new("app/.docker")));
    /// assert!(rules.shelters(Path::new(".git/modules")));
    /// assert!(!rules.shelters(Path::new("src")) && !rules.shelters(Path::new("src/modules")));
    /// ```
    pub fn shelters(&self, path: &Path) -> bool {
        self.shelters.get().matches(&Folded::new(path))
    }

    /// Whether `path` is a directory the protected patterns reach beneath
    /// (`.git`, `app/.cargo`, `.git/modules`): a command's view pins each
    /// one present (a mount point cannot be renamed or removed), so no
    /// command can put another in its place, and nothing may exist there
    /// but a directory (a `.git` file points git elsewhere).
    ///
    /// ```
    /// use std::path::Path;
    /// let rules = toolhost::paths::PathRules::default();
    /// assert!(rules.pins(Path::new("nested/.git")) && rules.pins(Path::new(".cargo")));
    /// assert!(!rules.pins(Path::new("gh")), "secrets are masked, not pinned");
    /// ```
    pub fn pins(&self, path: &Path) -> bool {
        self.pins.get().matches(&Folded::new(path))
    }

    /// The pinned directories without wildcards, relative to the root
    /// (`.git`, `.cargo`): the ones a command could create at the top.
    pub fn pin_literals(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .literals
            .iter()
            .filter_map(|(p, _)| p.split('/').next())
            .filter(|top| self.pins(Path::new(top)))
            .map(str::to_owned)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Whether `path` is secret.
    pub fn is_secret(&self, path: &Path) -> bool {
        self.secret_folded(&Folded::new(path))
    }

    /// A secret pattern matches and no `not_secret` one does.
    fn secret_folded(&self, path: &Folded) -> bool {
        self.secret.get().matches(path) && !self.not_secret.get().matches(path)
    }

    /// Protected paths without wildcards, relative to the root (`.git/hooks`,
    /// `.vscode`, `.envrc`), with whether each names a directory, unless
    /// configuration made them writable.
    pub fn protected_literals(&self) -> impl Iterator<Item = (&str, bool)> {
        self.literals
            .iter()
            .filter(|(p, _)| self.guard(Path::new(p)) == Some(Guard::Protected))
            .map(|(p, dir)| (p.as_str(), *dir))
    }
}

/// Whether `path` is an entry directly inside a `.git` directory that git
/// does not write as it works ([`GIT_STATE`]); `*.lock` files are its
/// transient state.
fn outside_git_state(path: &Folded) -> bool {
    let path = path.path();
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    path.parent()
        .and_then(Path::file_name)
        .is_some_and(|dir| dir == ".git")
        && !name.ends_with(".lock")
        && !GIT_STATE.iter().any(|s| s.eq_ignore_ascii_case(name))
}

/// Every directory a pattern reaches beneath, as a pattern of its own: the
/// pattern's leading parts (`.git` and `.git/modules` of
/// `.git/modules/**/config`), anchored (`/…`) or not as the pattern is.
fn shelter_patterns<'a>(patterns: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = patterns
        .flat_map(|p| {
            let body = p.trim_end_matches('/');
            let (anchored, body) = match body.strip_prefix('/') {
                Some(rest) => (true, rest),
                None => (false, body),
            };
            let parts: Vec<&str> = body.split('/').collect();
            (1..parts.len())
                .map(|n| parts[..n].join("/"))
                .filter(|prefix| {
                    prefix
                        .split('/')
                        .any(|part| part != "**" && !part.is_empty())
                })
                .map(|prefix| {
                    if anchored {
                        format!("/{prefix}")
                    } else {
                        prefix
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(rules: &PathRules, path: &str) -> Option<Guard> {
        rules.guard(Path::new(path))
    }

    #[test]
    fn defaults_hide_secrets_at_any_depth() {
        let rules = PathRules::default();
        for secret in [
            ".env",
            ".env.production",
            "deploy/.env",
            "certs/server.pem",
            "id_rsa",
            "keys/id_ed25519.pub",
            ".ssh/config",
            "home/.aws/credentials",
            ".gnupg/private-keys-v1.d/x.key",
            ".git-credentials",
            ".docker/config.json",
            "gcp/credentials-prod.json",
            "token.json",
            ".kube/config",
            ".cargo/credentials.toml",
        ] {
            assert_eq!(guard(&rules, secret), Some(Guard::Secret), "{secret}");
        }
        for plain in [
            "src/env.rs",
            "environment",
            "docs/keys.md",
            "my.env.rs",
            "kube/config",
        ] {
            assert_eq!(guard(&rules, plain), None, "{plain}");
        }
    }

    #[test]
    fn defaults_protect_what_runs_code() {
        let rules = PathRules::default();
        for path in [
            ".git/config",
            ".git/hooks/pre-commit",
            ".git/info/attributes",
            ".git/modules/sub/config",
            ".git/modules/a/b/hooks/post-checkout",
            ".vscode/tasks.json",
            ".claude/settings.json",
            "toolhost.toml",
            "toolhost.lock",
            ".cargo/config.toml",
            "pkg/.envrc",
        ] {
            assert_eq!(guard(&rules, path), Some(Guard::Protected), "{path}");
        }
        for path in [
            ".git/objects/ab/cd",
            ".git/HEAD",
            ".git/index",
            ".git/index.lock",
            ".git/refs/heads/main",
            "sub/.git/packed-refs",
            ".git/modules/x/HEAD",
            ".git/worktrees/w/HEAD",
        ] {
            assert_eq!(guard(&rules, path), None, "{path}");
        }
    }

    /// Inside `.git`, only git's own state may change: each way the
    /// person's next `git` could be pointed elsewhere is protected.
    #[test]
    fn only_git_state_is_writable_inside_dot_git() {
        let rules = PathRules::default();
        for path in [
            ".git/commondir",
            ".git/config.worktree",
            ".git/anything-new",
            "nested/.git/commondir",
            ".git/worktrees/w/commondir",
            ".git/worktrees/w/config",
            ".git/modules/a/b/commondir",
            ".git/modules/a/info/exclude",
            ".mvn/jvm.config",
        ] {
            assert_eq!(guard(&rules, path), Some(Guard::Protected), "{path}");
        }
        assert_eq!(rules.pin_literals(), [".cargo", ".git"]);
        assert!(rules.pins(Path::new("a/.git/worktrees")));
        assert!(!rules.pins(Path::new(".git/objects")));
    }

    #[test]
    fn patterns_cover_everything_beneath_in_any_case() {
        let rules = PathRules::default();
        for (path, want) in [
            (".SSH/a/b/c/known_hosts", Some(Guard::Secret)),
            ("deep/x/.Aws/sso/cache/token", Some(Guard::Secret)),
            ("KEYS/Id_Ed25519.PUB", Some(Guard::Secret)),
            ("a/.Git/Modules/x/y/HOOKS/pre-push", Some(Guard::Protected)),
            (".git/modules/x/y/refs/heads/main", None),
            ("a/.Docker/CONFIG.json", Some(Guard::Secret)),
            ("a/.docker/other.json", None),
            ("ssh/id.pub", None),
        ] {
            assert_eq!(guard(&rules, path), want, "{path}");
        }
        assert!(rules.shelters(Path::new("X/.GIT")));
        assert!(!rules.shelters(Path::new(".git/objects")));
        let anchored = PathRules::new(&PathRulesConfig {
            secret: vec!["/Data/*.SQLite".into()],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            guard(&anchored, "data/app.sqlite/wal/x"),
            Some(Guard::Secret)
        );
        assert_eq!(guard(&anchored, "x/data/app.sqlite"), None);
        assert_eq!(
            guard(&anchored, "data/sub/app.sqlite"),
            None,
            "* stays in a part"
        );
    }

    // The leading directories of configured patterns are compiled when the
    // rules are built, so one that does not compile is blamed on the file
    // there and never panics later, when a rename asks; the defaults' (and
    // those of rules that add no secret or protected pattern) are compiled
    // on first use.
    /// Glob by glob (a few questions) and in one pass (many), a list gives
    /// the same answer for every path built from the names the
    /// defaults and some configured patterns talk about, at every depth
    /// up to four.
    #[test]
    fn glob_by_glob_and_one_pass_agree() {
        let config = PathRulesConfig {
            secret: vec![
                "/data/*.sqlite".into(),
                "vault/**/key?".into(),
                "[c-d]ata/{app,x}.*".into(),
            ],
            not_secret: vec![".env.example".into()],
            protected: vec!["/ci/".into()],
            writable: vec![".vscode/settings.json".into()],
        };
        let rules = PathRules::new(&config).unwrap();
        let names = [
            "a",
            ".ssh",
            ".env",
            ".env.example",
            ".env.d",
            "x.pem",
            "id_rsa.pub",
            ".git",
            "hooks",
            "modules",
            "config",
            ".docker",
            "config.json",
            "data",
            "app.sqlite",
            "vault",
            "key1",
            "credentials-x.json",
            "app.x",
            "ci",
            ".vscode",
            "settings.json",
        ];
        let mut paths = vec![String::new()];
        let mut all = Vec::new();
        for _ in 0..4 {
            paths = paths
                .iter()
                .flat_map(|p| {
                    names.iter().map(move |n| {
                        if p.is_empty() {
                            (*n).to_owned()
                        } else {
                            format!("{p}/{n}")
                        }
                    })
                })
                .collect();
            all.extend(paths.iter().cloned());
        }
        let lists = [
            ("secret", rules.secret.get()),
            ("not_secret", rules.not_secret.get()),
            ("protected", rules.protected.get()),
            ("writable", rules.writable.get()),
        ];
        let mut matched = 0;
        for (name, list) in lists {
            assert!(list.beneath, "{name} reaches beneath");
            let one_pass = list.compile_one_pass();
            assert!(!one_pass.is_empty(), "{name}");
            for path in &all {
                let folded = Folded::new(Path::new(path));
                let walked = list.glob_by_glob(folded.path());
                assert_eq!(walked, one_pass.is_match(folded.path()), "{name}: {path}");
                matched += usize::from(walked);
            }
        }
        assert!(
            matched > 10_000,
            "the names match often enough to compare: {matched}"
        );
    }

    /// A list answers glob by glob until it has been asked
    /// [`ONE_PASS_AFTER`] times, then in one pass, the same way.
    #[test]
    fn many_questions_switch_to_one_pass() {
        let rules = PathRules::new(&PathRulesConfig::default()).unwrap();
        let one_pass = &rules.secret.get().one_pass;
        for n in 0..ONE_PASS_AFTER - 1 {
            assert_eq!(
                guard(&rules, &format!("src/{n}/.ssh/id")),
                Some(Guard::Secret)
            );
            assert!(one_pass.set.get().is_none(), "glob by glob after {n}");
        }
        assert_eq!(guard(&rules, "a/.ssh/b/c"), Some(Guard::Secret));
        assert!(one_pass.set.get().is_some(), "one pass from now on");
        assert_eq!(guard(&rules, "a/.ssh/b/c"), Some(Guard::Secret));
        assert_eq!(guard(&rules, "a/ssh/b/c"), None);
    }

    /// A path that is not normalized (a trailing `/`, `.` parts) is
    /// judged as the path it names, glob by glob as in one pass.
    #[test]
    fn paths_with_dot_parts_and_trailing_slashes_are_judged_as_named() {
        let rules = PathRules::new(&PathRulesConfig {
            secret: vec!["secrets/*".into()],
            ..Default::default()
        })
        .unwrap();
        for path in [
            ".ssh/",
            "a/.ssh/.",
            "a/./.ssh/x",
            "secrets/./token",
            "./.env",
        ] {
            assert_eq!(guard(&rules, path), Some(Guard::Secret), "{path}");
            let folded = Folded::new(Path::new(path));
            let list = rules.secret.get();
            assert!(list.glob_by_glob(folded.path()), "glob by glob: {path}");
            assert!(
                list.compile_one_pass().is_match(folded.path()),
                "one pass: {path}"
            );
        }
        assert_eq!(guard(&rules, ".vscode/"), Some(Guard::Protected));
    }

    #[test]
    fn the_text_a_glob_needs() {
        for (glob, want) in [
            ("**/.env", Some(".env")),
            ("**/id_rsa*", Some("id_rsa")),
            ("**/credentials*.json", Some("credentials")),
            ("**/.git/modules/**/config", Some(".git/modules")),
            ("data/*.sqlite", Some(".sqlite")),
            ("**/*", None),
            ("**/[ab]c", None),
            ("**/{a,b}", None),
            ("**/a\\*", None),
        ] {
            assert_eq!(needed_text(glob).as_deref(), want, "{glob}");
        }
    }

    /// A read asks whether a path is secret, never whether it is
    /// protected: the protected list waits for the first write's question,
    /// unless configuration added to it.
    #[test]
    fn the_protected_list_compiles_when_a_write_asks() {
        let rules = PathRules::default();
        assert!(rules.is_secret(Path::new("a/.env")));
        assert!(!rules.is_secret(Path::new(".git/config")));
        assert!(rules.secret.compiled.get().is_some());
        assert!(
            rules.protected.compiled.get().is_none(),
            "reads do not compile it"
        );
        assert_eq!(guard(&rules, ".git/config"), Some(Guard::Protected));
        assert!(rules.protected.compiled.get().is_some());
        let configured = PathRules::new(&PathRulesConfig {
            protected: vec!["deploy/".into()],
            ..Default::default()
        })
        .unwrap();
        assert!(
            configured.protected.compiled.get().is_some(),
            "checked at once"
        );
        assert!(configured.secret.compiled.get().is_none());
        let bad = PathRules::new(&PathRulesConfig {
            protected: vec!["deploy/[".into()],
            ..Default::default()
        })
        .expect_err("an unclosed class");
        assert_eq!((bad.key, bad.pattern.as_str()), ("protected", "deploy/["));
    }

    #[test]
    fn shelters_compile_on_first_use_and_configured_ones_are_checked_at_once() {
        let rules = PathRules::default();
        assert!(
            rules.shelters.compiled.get().is_none(),
            "not compiled before a rename asks"
        );
        assert!(rules.shelters(Path::new("app/.docker")));
        let narrowed = PathRules::new(&PathRulesConfig {
            not_secret: vec![".env.example".into()],
            ..Default::default()
        })
        .unwrap();
        assert!(narrowed.shelters.compiled.get().is_none());
        assert!(narrowed.shelters(Path::new(".git")));
        // Each whole pattern compiles, but a leading directory of it does
        // not (`x[a` of `x[a/b]y/z`): only compiling the shelters catches it.
        for odd in ["x[a/b]y/z", "a{b/c}/d", "{a/b,c}/d"] {
            for config in [
                PathRulesConfig {
                    secret: vec![odd.into()],
                    ..Default::default()
                },
                PathRulesConfig {
                    protected: vec![odd.into()],
                    ..Default::default()
                },
            ] {
                let err = PathRules::new(&config).expect_err(odd);
                assert_eq!(err.key, "secret/protected", "{odd}: {err}");
            }
        }
        let deep = PathRules::new(&PathRulesConfig {
            secret: vec!["a/**/b/c".into()],
            ..Default::default()
        })
        .unwrap();
        assert!(
            deep.shelters.compiled.get().is_some(),
            "configured: compiled at once"
        );
        assert!(deep.shelters(Path::new("a/x/b")) && !deep.shelters(Path::new("x/b")));
    }

    #[test]
    fn configuration_widens_and_narrows() {
        let config = PathRulesConfig {
            secret: vec!["/data/*.sqlite".into()],
            not_secret: vec![".env.example".into()],
            protected: vec!["deploy/".into()],
            writable: vec![".vscode/".into()],
        };
        let rules = PathRules::new(&config).unwrap();
        assert_eq!(guard(&rules, "data/app.sqlite"), Some(Guard::Secret));
        assert_eq!(guard(&rules, "x/data/app.sqlite"), None, "anchored");
        assert_eq!(guard(&rules, ".env.example"), None);
        assert_eq!(guard(&rules, ".env.local"), Some(Guard::Secret));
        assert_eq!(guard(&rules, "deploy/run.sh"), Some(Guard::Protected));
        assert_eq!(guard(&rules, ".vscode/tasks.json"), None);
        assert!(rules.protected_literals().all(|(p, _)| p != ".vscode"));
        assert!(
            rules
                .protected_literals()
                .any(|(p, dir)| p == "deploy" && dir)
        );
    }

    #[test]
    fn bad_patterns_name_their_key() {
        let config = PathRulesConfig {
            protected: vec!["a[".into()],
            ..PathRulesConfig::default()
        };
        let err = PathRules::new(&config).unwrap_err();
        assert_eq!(err.key, "protected");
        assert!(err.to_string().contains("`a[`"), "{err}");
    }
}
