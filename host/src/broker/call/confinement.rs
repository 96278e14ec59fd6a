//! Where a command runs and what confines it, and what a dry run
//! answers instead of running it.

use super::*;

impl BrokerCall {
    /// Where the command runs and the OS confinement prepared for it;
    /// refused when `require_sandbox` asks for what this system lacks.
    pub(super) fn confinement(
        &self,
        request: &CommandRequest,
    ) -> Result<(PathBuf, Prepared, Found), CommandError> {
        let broker = self.broker();
        let Some(workspace) = &self.workspace else {
            return Err(CommandError::Denied(
                "commands run in the workspace, and no workspace is set; start toolhost with --workspace DIR".to_owned(),
            ));
        };
        let cwd = resolve_cwd(workspace, request.cwd.as_deref())?;
        let processes = broker.processes()?;
        let none = Found::default();
        let mut plan = broker.plan(processes, workspace, self.network, &none);
        // The fallback has no view to cover paths in, but its sweep
        // checks the pinned directories all the same.
        let mut found = broker.guarded(processes, workspace);
        if plan.namespaces {
            found.redacted = redacted_git_configs(&found.protected, processes.temp.path());
            // What a person's tools run from inside the writable
            // directories (`~/.cargo/bin`, `config.toml`): read-only.
            found
                .protected
                .extend(broker.config.writable.iter().flat_map(|dir| {
                    sweep::WRITABLE_GUARDED
                        .iter()
                        .map(|name| dir.join(name))
                        .filter(|p| std::fs::symlink_metadata(p).is_ok())
                }));
            plan.found = &found;
        }
        // The default read list's entries inside the workspace (a
        // dotfiles repository) are in the view already, as the workspace.
        let read: Vec<PathBuf>;
        if processes.default_read {
            read = (processes.read.iter())
                .filter(|p| !p.starts_with(workspace))
                .cloned()
                .collect();
            plan.read = &read;
        }
        let prepared = Prepared::new(&plan, confine::Support::get())
            .map_err(|e| CommandError::Failed(e.to_string()))?;
        if let Some(layer) = prepared.missing()
            && broker.config.require_sandbox
        {
            let missing = match layer {
                confine::Layer::Namespaces => format!(
                    "its namespaces ({})",
                    broker.without_namespaces().unwrap_or_default()
                ),
                confine::Layer::Landlock => "Landlock".to_owned(),
                confine::Layer::Seccomp => "its seccomp filter".to_owned(),
            };
            return Err(CommandError::Denied(format!(
                "the sandbox is required (--require-sandbox) and this system cannot build {missing}; nothing was run"
            )));
        }
        Ok((cwd, prepared, found))
    }

    /// What a dry run answers instead of running the command.
    pub(super) fn dry_run_verdict(
        &self,
        request: &CommandRequest,
        background: bool,
        shown: &str,
        assessment: &Assessment,
        needs: bool,
        prepared: &Prepared,
    ) -> CommandError {
        let confirm = if needs {
            "would ask for confirmation"
        } else {
            "would run without asking"
        };
        let how = if background {
            "start in the background"
        } else {
            "run"
        };
        let dir = request
            .cwd
            .as_deref()
            .filter(|c| !c.is_empty())
            .unwrap_or(".");
        CommandError::DryRun(format!(
            "[dry run] would {how} `{shown}` in `{dir}`: {} ({}); in mode {} it {confirm}; confined by {}; nothing was run",
            assessment.class,
            assessment.reason,
            self.mode.as_str(),
            prepared.enforced.join(", ")
        ))
    }
}

/// The repositories' configuration files among `protected` that hold a
/// credential (a token in a remote's URL), each with a copy redacted, made
/// in `temp`, for the view to show instead: (the copy, the file).
fn redacted_git_configs(protected: &[PathBuf], temp: &Path) -> Vec<(PathBuf, PathBuf)> {
    const MAX_CONFIG_BYTES: u64 = 1 << 20;
    let is_git_config = |p: &Path| {
        p.file_name().is_some_and(|n| n == "config")
            && p.components().any(|c| c.as_os_str() == ".git")
    };
    protected
        .iter()
        .filter(|p| is_git_config(p))
        .filter_map(|path| {
            let file = std::fs::File::open(path).ok()?;
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut std::io::Read::take(file, MAX_CONFIG_BYTES),
                &mut text,
            )
            .ok()?;
            let redacted = toolhost_shared::credentials::redact(&text);
            if redacted == text {
                return None;
            }
            let mut hasher = blake3::Hasher::new();
            hasher.update(path.as_os_str().as_encoded_bytes());
            hasher.update(redacted.as_bytes());
            let copy = temp.join(format!("redacted-{}", &hasher.finalize().to_hex()[..32]));
            if !copy.exists() {
                let made = tempfile::NamedTempFile::new_in(temp)
                    .and_then(|mut tmp| {
                        std::io::Write::write_all(&mut tmp, redacted.as_bytes())?;
                        Ok(tmp)
                    })
                    .and_then(|tmp| tmp.persist(&copy).map_err(|e| e.error));
                if let Err(e) = made {
                    tracing::warn!(path = %path.display(), %e, "cannot make a redacted copy");
                    return None;
                }
            }
            Some((copy, path.clone()))
        })
        .collect()
}
