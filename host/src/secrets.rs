//! Secrets a person stores for a tool (`toolhost secret set TOOL NAME`):
//! the values of environment variables the tool reads, kept out of every
//! configuration file.
//!
//! One file per tool, `TOOL.json` (`{"NAME": "value"}`), in a directory
//! only its owner may enter (0700), each file only its owner may read
//! (0600), written whole and renamed into place. The default directory is
//! `$XDG_DATA_HOME/toolhost/secrets`, beneath toolhost's data directory,
//! which no tool or command may reach (types/paths.rs `policy_dirs`).
//!
//! A tool gets a stored value as its environment variable only when it
//! declares the variable and its grant names it (`env:NAME`, see
//! [`crate::grant::Grant::env`]); the value then replaces the host's
//! variable of that name, and is redacted from the call's output, its
//! error, the tool's log lines and the audit record
//! ([`crate::grant::redact`]).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// Why a secret could not be read or kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// No data directory to keep secrets in.
    #[error("there is no data directory to keep secrets in (set HOME or XDG_DATA_HOME)")]
    NoDirectory,
    /// A name that is not a tool's or a variable's.
    #[error("{0}")]
    BadName(String),
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A file others may read, or one that is not JSON.
    #[error("{path}: {why}")]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What is wrong, and what to do.
        why: String,
    },
}

/// The secrets of every tool, kept in one directory.
#[derive(Debug, Clone)]
pub struct Secrets {
    dir: PathBuf,
}

impl Secrets {
    /// The user's secrets (`$XDG_DATA_HOME/toolhost/secrets`).
    pub fn user() -> Result<Self, SecretError> {
        let data = dirs::data_dir().ok_or(SecretError::NoDirectory)?;
        Ok(Self::at(data.join("toolhost").join("secrets")))
    }

    /// Secrets kept in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Where they are kept.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, tool: &str) -> Result<PathBuf, SecretError> {
        if !crate::types::tool_info::is_snake_case(tool) {
            return Err(SecretError::BadName(format!(
                "`{tool}` is not a tool's name (snake_case, as `toolhost tools` lists them)"
            )));
        }
        Ok(self.dir.join(format!("{tool}.json")))
    }

    /// The secrets stored for `tool`, by variable name.
    pub fn of(&self, tool: &str) -> Result<BTreeMap<String, String>, SecretError> {
        let path = self.file(tool)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(source) => return Err(SecretError::Io { path, source }),
        };
        let mode = std::fs::metadata(&path)
            .map_err(|source| SecretError::Io {
                path: path.clone(),
                source,
            })?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(SecretError::Unsafe {
                why: format!(
                    "others may read it (mode {:o}); run `chmod 600 {}`",
                    mode & 0o777,
                    path.display()
                ),
                path,
            });
        }
        serde_json::from_str(&text).map_err(|e| SecretError::Unsafe {
            why: format!(
                "not a JSON object of names and values ({e}); remove it and set them again"
            ),
            path,
        })
    }

    /// Store `value` as `tool`'s variable `name`, replacing any.
    pub fn set(&self, tool: &str, name: &str, value: &str) -> Result<(), SecretError> {
        if !toolhost_shared::grant::is_env_name(name) {
            return Err(SecretError::BadName(format!(
                "`{name}` is not an environment variable's name (ASCII letters, digits and `_`, \
                 not starting with a digit)"
            )));
        }
        let mut all = self.of(tool)?;
        all.insert(name.to_owned(), value.to_owned());
        self.write(tool, &all)
    }

    /// Forget `tool`'s variable `name`; true if there was one.
    pub fn remove(&self, tool: &str, name: &str) -> Result<bool, SecretError> {
        let mut all = self.of(tool)?;
        if all.remove(name).is_none() {
            return Ok(false);
        }
        if all.is_empty() {
            let path = self.file(tool)?;
            std::fs::remove_file(&path).map_err(|source| SecretError::Io { path, source })?;
            return Ok(true);
        }
        self.write(tool, &all).map(|()| true)
    }

    /// Every tool with secrets, and their names (never the values).
    pub fn list(&self) -> Result<Vec<(String, Vec<String>)>, SecretError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(SecretError::Io {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut tools: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".json").map(str::to_owned)
            })
            .filter(|t| crate::types::tool_info::is_snake_case(t))
            .collect();
        tools.sort();
        tools
            .into_iter()
            .map(|tool| Ok((tool.clone(), self.of(&tool)?.into_keys().collect())))
            .collect()
    }

    fn write(&self, tool: &str, all: &BTreeMap<String, String>) -> Result<(), SecretError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| SecretError::Io { path, source }
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(io(&self.dir))?;
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io(&self.dir))?;
        let path = self.file(tool)?;
        let temp = self
            .dir
            .join(format!(".{tool}.json.{}", std::process::id()));
        let text = serde_json::to_string_pretty(all).unwrap_or_default();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .map_err(io(&temp))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(io(&temp))?;
        std::fs::rename(&temp, &path).map_err(io(&path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_kept_per_tool_owner_only_and_listed_without_values() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = Secrets::at(dir.path().join("secrets"));
        secrets.set("gh_tool", "GITHUB_TOKEN", "ghp_abc").unwrap();
        secrets.set("gh_tool", "OTHER", "x").unwrap();
        assert_eq!(secrets.of("gh_tool").unwrap()["GITHUB_TOKEN"], "ghp_abc");
        assert!(secrets.of("other_tool").unwrap().is_empty());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(secrets.dir()), 0o700);
        assert_eq!(mode(&secrets.dir().join("gh_tool.json")), 0o600);
        assert_eq!(
            secrets.list().unwrap(),
            [(
                "gh_tool".to_owned(),
                vec!["GITHUB_TOKEN".to_owned(), "OTHER".to_owned()]
            )]
        );
        assert!(secrets.remove("gh_tool", "OTHER").unwrap());
        assert!(!secrets.remove("gh_tool", "OTHER").unwrap());
        assert!(secrets.set("gh_tool", "NOT-A-NAME", "x").is_err());
        assert!(secrets.set("../etc", "A", "x").is_err());
        // A file others may read is refused, saying how to fix it.
        let file = secrets.dir().join("gh_tool.json");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(
            secrets
                .of("gh_tool")
                .unwrap_err()
                .to_string()
                .contains("chmod 600")
        );
    }
}
