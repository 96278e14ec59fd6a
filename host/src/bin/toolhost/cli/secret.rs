//! `toolhost secret`: the secrets a person stores for a tool's
//! environment variables (toolhost::secrets).

use super::settings::UsageError;
use std::io::Read as _;

/// What `toolhost secret` does.
#[derive(Debug, clap::Subcommand)]
pub enum SecretAction {
    /// Store a secret for TOOL as its variable NAME, read from stdin (one
    /// line, or all of it when piped), e.g. `toolhost secret set gh_issues
    /// GITHUB_TOKEN < token.txt`. The tool sees it only if it declares NAME
    /// and is granted `env:NAME`; its value is redacted from every result,
    /// log line and audit record.
    Set {
        /// The tool, as `toolhost tools` names it.
        tool: String,
        /// The variable, e.g. GITHUB_TOKEN.
        name: String,
    },
    /// List the tools with secrets and their names (never the values).
    List,
    /// Forget TOOL's secret NAME.
    Remove {
        /// The tool.
        tool: String,
        /// The variable.
        name: String,
    },
}

/// Run `action` on the user's secrets; what to print.
pub fn run(action: &SecretAction) -> anyhow::Result<String> {
    let secrets = toolhost::secrets::Secrets::user()?;
    let usage = |e: toolhost::secrets::SecretError| match e {
        toolhost::secrets::SecretError::BadName(why) => anyhow::Error::new(UsageError(why)),
        other => other.into(),
    };
    match action {
        SecretAction::Set { tool, name } => {
            let mut value = String::new();
            std::io::stdin().read_to_string(&mut value)?;
            let value = value.strip_suffix('\n').unwrap_or(&value);
            let value = value.strip_suffix('\r').unwrap_or(value);
            if value.is_empty() {
                return Err(UsageError(format!(
                    "no value on stdin: give it as `toolhost secret set {tool} {name} < FILE` \
                     (or type it and press Ctrl-D)"
                ))
                .into());
            }
            secrets.set(tool, name, value).map_err(usage)?;
            Ok(format!(
                "stored {name} for {tool} in {}; grant it with `--grant {tool}=env:{name}` (the \
                 tool must declare it)\n",
                secrets.dir().display()
            ))
        }
        SecretAction::List => {
            let all = secrets.list().map_err(usage)?;
            if all.is_empty() {
                return Ok(format!("no secrets in {}\n", secrets.dir().display()));
            }
            Ok(all
                .iter()
                .map(|(tool, names)| format!("{tool}: {}\n", names.join(", ")))
                .collect())
        }
        SecretAction::Remove { tool, name } => {
            if secrets.remove(tool, name).map_err(usage)? {
                Ok(format!("removed {name} of {tool}\n"))
            } else {
                Err(UsageError(format!(
                    "{tool} has no secret {name} (`toolhost secret list` shows them)"
                ))
                .into())
            }
        }
    }
}
