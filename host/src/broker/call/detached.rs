//! Commands that outlive the request: background commands, and the stdio MCP servers the host talks to.

use super::*;

impl BrokerCall {
    /// Start a background command.
    pub(crate) fn spawn(&self, request: &CommandRequest) -> Result<String, CommandError> {
        self.logged(true, |record| self.spawn_background(request, record))
    }

    pub(super) fn spawn_background(
        &self,
        request: &CommandRequest,
        record: &mut CommandRecord,
    ) -> Result<String, CommandError> {
        if let Some(why) = &self.background_refused {
            record.command = shown(&request.program);
            return Err(CommandError::Denied(format!("{why}; nothing was run")));
        }
        let broker = self.broker();
        broker.background.check_room(&self.owner)?;
        let checked = self.check(request, true, record)?;
        let shown = checked.shown;
        let (child, watchdog) = self.spawn_checked(checked.launch, true, &shown)?;
        let cap = broker.config.background_buffer_chars.max(1024);
        let output = Arc::new(Mutex::new(process::Buffer::new(0, cap)));
        // Both streams into one buffer, as they interleave.
        process::pump_output(
            (child.stdout, child.stderr),
            Arc::clone(&output),
            Arc::clone(&output),
        );
        let stdin = child.stdin;
        if let Some(pipe) = &stdin {
            // Writes never block the broker: a full pipe is retried, then
            // reported.
            let _ = rustix::fs::fcntl_setfl(pipe, rustix::fs::OFlags::NONBLOCK);
        }
        let absent = checked.absent;
        let sweep_output = Arc::clone(&output);
        let after = move || {
            for note in absent.sweep() {
                sweep_output
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(format!("\n[toolhost: {note}]\n").as_bytes());
            }
        };
        let command = background::BackgroundCommand {
            command: shown,
            pgid: child.pid,
            started: Instant::now(),
            output,
            stdin,
            exited: process::reap(
                child.pid,
                watchdog,
                (child.cgroup, child.held),
                Some(Box::new(after)),
            ),
        };
        broker.background.add(&self.owner, command)
    }

    /// Start a command the host itself talks to (a stdio MCP server):
    /// checked, confirmed and confined like any command, with no timeout;
    /// its pipes go to the caller, and dropping the [`Piped`] kills its
    /// process group.
    #[cfg(feature = "mcp")]
    pub(crate) fn spawn_piped(&self, request: &CommandRequest) -> Result<Piped, CommandError> {
        self.logged(true, |record| {
            let Checked {
                shown,
                launch,
                absent,
                ..
            } = self.check(request, true, record)?;
            let (child, watchdog) = self.spawn_checked(launch, true, &shown)?;
            let after = move || {
                for note in absent.sweep() {
                    tracing::warn!(command = %shown, "{note}");
                }
            };
            let exited = process::reap(
                child.pid,
                watchdog,
                (child.cgroup, child.held),
                Some(Box::new(after)),
            );
            Ok(Piped {
                stdin: child.stdin,
                stdout: Some(child.stdout),
                stderr: Some(child.stderr),
                pgid: child.pid,
                exited,
            })
        })
    }

    /// Refuse to change a background command in a dry run; confirm writes in
    /// confirm-all mode (a person approved the command, not each input).
    pub(crate) fn may_touch_background(
        &self,
        action: &str,
        id: &str,
        input: Option<&[u8]>,
    ) -> Result<(), CommandError> {
        if self.dry_run {
            return Err(CommandError::DryRun(format!(
                "[dry run] would {action} background command {id}; nothing was done"
            )));
        }
        if let (Some(data), Mode::ConfirmAll) = (input, self.mode) {
            let text = String::from_utf8_lossy(data);
            let what = serde_json::json!({ "session_id": id, "input": text });
            self.confirm(
                &format!("writing to background command {id}"),
                &what,
                &format!("write to {id}"),
                ("run without --mode confirm-all", false),
            )?;
        }
        Ok(())
    }
}
