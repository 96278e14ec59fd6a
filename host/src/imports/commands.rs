//! The `commands` import: a plugin asks the broker to run a command, or to
//! start, poll, feed and kill a background one. Every request goes through
//! the call's [`BrokerCall`] (policy, confirmation, confinement); time spent
//! waiting is credited to the call's deadline.

use crate::bindings::commands::{self as wit, Host};
use crate::broker::background;
use crate::broker::{
    BackgroundStatus, BrokerCall, CommandError, CommandOutput, CommandRequest, Program,
};
use crate::runtime::sandbox::CallState;
use std::time::{Duration, Instant};

/// The most time one call may spend waiting on commands beyond its own
/// timeout (each command has its own timeout; this bounds a loop of them).
const MAX_WAITING: Duration = Duration::from_secs(20 * 60);

impl CallState {
    fn broker_call(&self) -> Result<&BrokerCall, CommandError> {
        match (&self.commands, self.commands_granted) {
            (Some(call), true) => Ok(call),
            (None, true) => Err(CommandError::Denied(
                "this host was set up without a command broker; nothing was run".to_owned(),
            )),
            (_, false) if !self.commands_declared => Err(CommandError::Denied(
                crate::types::grant::must_declare("commands"),
            )),
            (_, false) => Err(CommandError::Denied(format!(
                "this tool was not granted the `commands` capability; a person can grant it \
                 with `{}commands` to let it run commands",
                toolhost_shared::contract::GRANT_REMEDY
            ))),
        }
    }

    /// The broker's background commands and this call's owner (its MCP
    /// session): each client sees only its own.
    fn background_table(&self) -> Result<(&background::Background, &str), CommandError> {
        let call = self.broker_call()?;
        Ok((&call.broker.background, &call.owner))
    }

    /// A background command action, refused in a dry run (and confirmed as needed).
    fn touch_background(
        &self,
        action: &str,
        id: &str,
        input: Option<&[u8]>,
    ) -> Result<(&background::Background, &str), CommandError> {
        let call = self.broker_call()?;
        call.may_touch_background(action, id, input)?;
        Ok((&call.broker.background, &call.owner))
    }

    /// Run `wait` (which waits on a command or a person), crediting the
    /// time to the call's deadline, up to [`MAX_WAITING`] in all; unless
    /// the caller set the call's deadline itself, which nothing extends
    /// (the broker ends the command by then).
    fn waiting<T>(
        &mut self,
        wait: impl FnOnce(&BrokerCall) -> Result<T, CommandError>,
    ) -> Result<T, CommandError> {
        let started = Instant::now();
        let call = self.broker_call()?;
        let firm = call.until.is_some();
        let result = wait(call);
        if firm {
            return result;
        }
        let credit = started
            .elapsed()
            .min(MAX_WAITING.saturating_sub(self.waited));
        self.waited += credit;
        self.extend_deadline(credit);
        result
    }
}

impl Host for CallState {
    fn run(
        &mut self,
        request: wit::CommandRequest,
    ) -> Result<wit::CommandOutput, wit::CommandError> {
        let request = CommandRequest::from(request);
        let cancel = self.cancel_token().cloned();
        self.waiting(|call| call.run(&request, cancel.as_ref()))
            .map(Into::into)
            .map_err(Into::into)
    }

    fn spawn(&mut self, request: wit::CommandRequest) -> Result<String, wit::CommandError> {
        let request = CommandRequest::from(request);
        Ok(self.waiting(|call| call.spawn(&request))?)
    }

    fn poll(&mut self, id: String) -> Result<wit::BackgroundStatus, wit::CommandError> {
        let (table, owner) = self.background_table()?;
        let status = table.poll(owner, &id)?;
        Ok(status.into())
    }

    fn write_stdin(&mut self, id: String, data: Vec<u8>) -> Result<(), wit::CommandError> {
        Ok(self.waiting(|call| {
            call.may_touch_background("write to", &id, Some(&data))?;
            call.broker.background.write(&call.owner, &id, &data)
        })?)
    }

    fn kill(&mut self, id: String) -> Result<(), wit::CommandError> {
        let (table, owner) = self.touch_background("kill", &id, None)?;
        table.kill(owner, &id)?;
        Ok(())
    }

    fn list_background(&mut self) -> Vec<wit::BackgroundStatus> {
        self.background_table()
            .map(|(table, owner)| table.list(owner))
            .unwrap_or_default()
            .into_iter()
            .map(Into::into)
            .collect()
    }

    fn clear(&mut self) -> u32 {
        // A dry run forgets nothing.
        self.touch_background("clear", "(finished)", None)
            .map_or(0, |(table, owner)| table.clear(owner))
    }

    fn output(&mut self, output_id: String) -> Result<String, wit::CommandError> {
        let call = self.broker_call()?;
        call.broker.kept.get(&call.owner, &output_id).ok_or_else(|| {
            CommandError::Invalid(format!(
                "no output is kept under `{output_id}` (only the most recent cut outputs are kept); run the command again"
            ))
            .into()
        })
    }
}

impl From<wit::CommandRequest> for CommandRequest {
    fn from(r: wit::CommandRequest) -> Self {
        Self {
            program: match r.program {
                wit::Program::Argv(argv) => Program::Argv(argv),
                wit::Program::Shell(line) => Program::Shell(line),
            },
            cwd: r.cwd,
            timeout_ms: r.timeout_ms,
            env: r.env,
        }
    }
}

impl From<CommandOutput> for wit::CommandOutput {
    fn from(o: CommandOutput) -> Self {
        Self {
            exit_code: o.exit_code,
            stdout: o.stdout,
            stderr: o.stderr,
            timed_out: o.timed_out,
            truncated: o.truncated,
            output_id: o.output_id,
            duration_ms: o.duration_ms,
            confinement: o.confinement,
        }
    }
}

impl From<CommandError> for wit::CommandError {
    fn from(e: CommandError) -> Self {
        match e {
            CommandError::Denied(m) => Self::Denied(m),
            CommandError::NotConfirmed(m) => Self::NotConfirmed(m),
            CommandError::Invalid(m) => Self::Invalid(m),
            CommandError::Failed(m) => Self::Failed(m),
            CommandError::DryRun(m) => Self::DryRun(m),
        }
    }
}

impl From<BackgroundStatus> for wit::BackgroundStatus {
    fn from(s: BackgroundStatus) -> Self {
        Self {
            id: s.id,
            command: s.command,
            running: s.running,
            exit_code: s.exit_code,
            new_output: s.new_output,
            elapsed_ms: s.elapsed_ms,
        }
    }
}
