//! The environment and working directory of a command: the scrubbed
//! environment every command starts from, the checks on a request's own
//! variables, and its `cwd` resolved inside the workspace.

use super::CommandConfig;
use super::request::CommandError;
use std::path::{Path, PathBuf};

/// Request environment: valid names, no NUL bytes, and no command
/// substitutions, which bash would run when it evaluates the value.
pub(super) fn check_env(env: &[(String, String)]) -> Result<(), CommandError> {
    for (name, value) in env {
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            return Err(CommandError::Invalid(format!(
                "`{name}` is not a valid environment variable name (or its value holds a NUL byte)"
            )));
        }
        if ["$(", "`", "<(", ">("].iter().any(|s| value.contains(s)) {
            return Err(CommandError::Invalid(format!(
                "the value of `{name}` holds a command substitution, which bash could run; pass plain text"
            )));
        }
    }
    Ok(())
}

/// The documented minimum environment plus configured variables, for
/// commands whose temp dir is `temp` (`/tmp` in the namespaces, the
/// broker's own in the fallback). Caches go there too.
pub(super) fn base_env(
    config: &CommandConfig,
    temp: &Path,
    home: Option<&Path>,
) -> Vec<(String, String)> {
    let host = |name: &str| std::env::var(name).ok();
    let temp_text = temp.display().to_string();
    let mut env = vec![
        (
            "PATH".to_owned(),
            host("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".to_owned()),
        ),
        (
            "HOME".to_owned(),
            home.map_or_else(|| "/".to_owned(), |h| h.display().to_string()),
        ),
        (
            "LANG".to_owned(),
            host("LANG").unwrap_or_else(|| "C.UTF-8".to_owned()),
        ),
        ("TERM".to_owned(), "dumb".to_owned()),
        ("PAGER".to_owned(), "cat".to_owned()),
        ("GIT_PAGER".to_owned(), "cat".to_owned()),
        ("NO_COLOR".to_owned(), "1".to_owned()),
        ("XDG_CACHE_HOME".to_owned(), format!("{temp_text}/cache")),
        ("npm_config_cache".to_owned(), format!("{temp_text}/npm")),
    ];
    for name in ["TMPDIR", "TMP", "TEMP"] {
        env.push((name.to_owned(), temp_text.clone()));
    }
    for name in &config.pass_env {
        if let Some(value) = host(name) {
            env.push((name.clone(), value));
        }
    }
    env.extend(config.env.iter().cloned());
    env
}

/// `cwd` (relative to the workspace) resolved, and inside the workspace.
pub(super) fn resolve_cwd(workspace: &Path, cwd: Option<&str>) -> Result<PathBuf, CommandError> {
    let Some(cwd) = cwd.filter(|c| !c.is_empty() && *c != ".") else {
        return Ok(workspace.to_owned());
    };
    let joined = workspace.join(cwd.trim_start_matches("./"));
    let resolved = joined.canonicalize().map_err(|e| {
        CommandError::Invalid(format!(
            "the working directory `{cwd}` cannot be used ({e}); give a directory relative to the workspace root"
        ))
    })?;
    if !resolved.starts_with(workspace) {
        return Err(CommandError::Invalid(format!(
            "the working directory `{cwd}` is outside the workspace; commands run only inside it"
        )));
    }
    if !resolved.is_dir() {
        return Err(CommandError::Invalid(format!("`{cwd}` is not a directory")));
    }
    Ok(resolved)
}
