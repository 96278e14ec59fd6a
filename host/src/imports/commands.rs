//! The `commands` import: a plugin asks the broker to run a command, or to
//! start, poll, feed and kill a background one. Every request goes through
//! the call's [`BrokerCall`] (policy, confirmation, confinement); time spent
//! waiting is credited to the call's deadline.

use crate::bindings::commands::{
    self, BackgroundStatus, CommandError, CommandOutput, CommandRequest,
};
use crate::broker::BrokerCall;
use crate::broker::background;
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
    /// time to the call's deadline, up to [`MAX_WAITING`] in all.
    fn waiting<T>(
        &mut self,
        wait: impl FnOnce(&BrokerCall) -> Result<T, CommandError>,
    ) -> Result<T, CommandError> {
        let started = Instant::now();
        let result = wait(self.broker_call()?);
        let credit = started
            .elapsed()
            .min(MAX_WAITING.saturating_sub(self.waited));
        self.waited += credit;
        self.extend_deadline(credit);
        result
    }
}

impl commands::Host for CallState {
    fn run(&mut self, request: CommandRequest) -> Result<CommandOutput, CommandError> {
        let cancel = self.cancel_token().cloned();
        self.waiting(|call| call.run(&request, cancel.as_ref()))
    }

    fn spawn(&mut self, request: CommandRequest) -> Result<String, CommandError> {
        self.waiting(|call| call.spawn(&request))
    }

    fn poll(&mut self, id: String) -> Result<BackgroundStatus, CommandError> {
        let (table, owner) = self.background_table()?;
        table.poll(owner, &id).map_err(CommandError::Invalid)
    }

    fn write_stdin(&mut self, id: String, data: Vec<u8>) -> Result<(), CommandError> {
        self.waiting(|call| {
            call.may_touch_background("write to", &id, Some(&data))?;
            call.broker
                .background
                .write(&call.owner, &id, &data)
                .map_err(CommandError::Invalid)
        })
    }

    fn kill(&mut self, id: String) -> Result<(), CommandError> {
        let (table, owner) = self.touch_background("kill", &id, None)?;
        table
            .kill(owner, &id)
            .map(|_| ())
            .map_err(CommandError::Invalid)
    }

    fn list_background(&mut self) -> Vec<BackgroundStatus> {
        self.background_table()
            .map(|(table, owner)| table.list(owner))
            .unwrap_or_default()
    }

    fn clear(&mut self) -> u32 {
        // A dry run forgets nothing.
        self.touch_background("clear", "(finished)", None)
            .map_or(0, |(table, owner)| table.clear(owner))
    }

    fn output(&mut self, output_id: String) -> Result<String, CommandError> {
        let call = self.broker_call()?;
        call.broker.kept.get(&call.owner, &output_id).ok_or_else(|| {
            CommandError::Invalid(format!(
                "no output is kept under `{output_id}` (only the most recent cut outputs are kept); run the command again"
            ))
        })
    }
}
