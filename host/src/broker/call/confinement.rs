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
        let found = broker.guarded(processes, workspace);
        if plan.namespaces {
            plan.found = &found;
        }
        // The default read list's entries inside the workspace (a
        // dotfiles repository) are in the view already, as the workspace.
        let read: Vec<PathBuf>;
        if broker.config.read == crate::broker::default_read() {
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
