//! The brokered command runner: the host side of the `commands` interface.
//!
//! A plugin never spawns a process; it asks the broker. Until the policy
//! engine and OS confinement land, the broker refuses every request, saying
//! whether the tool lacks the `commands` grant or the runner is unavailable,
//! so plugins built against the contract today keep working.

use crate::bindings::commands::{self, CommandError, CommandOutput, CommandRequest, SessionStatus};
use crate::sandbox::CallState;

impl CallState {
    fn refusal(&self) -> CommandError {
        if self.commands_granted {
            CommandError::Denied(
                "this toolhost build has no command runner enabled yet; nothing was run".to_owned(),
            )
        } else {
            CommandError::Denied(
                "this tool was not granted the `commands` capability; grant it with \
                 --grant TOOL=commands (or in the configuration) to let it run commands"
                    .to_owned(),
            )
        }
    }
}

impl commands::Host for CallState {
    fn run(&mut self, _request: CommandRequest) -> Result<CommandOutput, CommandError> {
        Err(self.refusal())
    }

    fn spawn(&mut self, _request: CommandRequest) -> Result<String, CommandError> {
        Err(self.refusal())
    }

    fn poll(&mut self, _id: String) -> Result<SessionStatus, CommandError> {
        Err(self.refusal())
    }

    fn write_stdin(&mut self, _id: String, _data: Vec<u8>) -> Result<(), CommandError> {
        Err(self.refusal())
    }

    fn kill(&mut self, _id: String) -> Result<(), CommandError> {
        Err(self.refusal())
    }

    fn sessions(&mut self) -> Vec<SessionStatus> {
        Vec::new()
    }

    fn clear(&mut self) -> u32 {
        0
    }

    fn output(&mut self, _output_id: String) -> Result<String, CommandError> {
        Err(self.refusal())
    }
}
