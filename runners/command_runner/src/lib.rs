//! The runner of `command` dynamic tools. The host gives it the tool's argv
//! template in the setting `template`; each item `{{param}}` becomes that
//! argument as one whole argv item ([`fill_template`]), and the result runs
//! through the host broker, which applies the full command policy. There is
//! no shell anywhere, so no value can become a second argument or a command.

use toolhost_builtin::contract;
use toolhost_builtin::dynamic::fill_template;
use toolhost_sdk::commands::{self, CommandError, Request};
use toolhost_sdk::serde_json::Map;
use toolhost_sdk::{Capability, Context, Output, Tool, ToolError, Value, export_tool};

/// The `command` dynamic-tool runner.
pub struct CommandRunner;

impl Tool for CommandRunner {
    type Args = Map<String, Value>;
    const NAME: &'static str = contract::tool::COMMAND_RUNNER;
    const DESCRIPTION: &'static str = "Runs an approved argv template for a `command` dynamic \
        tool; the host shows each such tool under its own name and schema.";

    fn capabilities() -> Vec<Capability> {
        vec![Capability::Commands]
    }

    fn call(args: Self::Args, ctx: &Context) -> Result<Output, ToolError> {
        let template: Vec<String> = ctx.setting(contract::setting::TEMPLATE).ok_or_else(|| {
            ToolError::failed("this runner was called without a `template` setting")
                .with_hint("call the dynamic tool by its own name; the host supplies the template")
        })?;
        let argv = fill_template(&template, &args).map_err(ToolError::invalid_input)?;
        let shown = commands::shell_words(&argv);
        match commands::run(&Request::argv(argv)) {
            Ok(done) if done.timed_out => Err(ToolError::failed(format!(
                "`{shown}` ran past its timeout and was killed. Output so far:\n{}",
                done.render(&shown)
            ))),
            Ok(done) => Ok(Output::text(done.render(&shown))),
            Err(CommandError::DryRun(text)) => Ok(Output::text(text)),
            Err(e) => Err(e.into()),
        }
    }
}

export_tool!(CommandRunner);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_template_is_a_clear_failure() {
        let err = CommandRunner::call(Map::new(), &Context::default()).unwrap_err();
        assert!(err.to_string().contains("template"), "{err}");
    }
}
