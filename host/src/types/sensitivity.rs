//! How much a call of a tool can change: the one rule behind what `tools`,
//! `describe`, the dry run and the MCP annotations show, and behind what the
//! executor asks a person to confirm.

use crate::types::confirm::Mode;
use crate::types::grant::{Access, Effective};
use std::path::Path;

/// What a tool can change with its effective grant, from least to most.
///
/// ```
/// use toolhost::{Mode, Sensitivity};
/// use toolhost::grant::{Access, Effective};
///
/// let reader = Effective { workspace: Some(Access::Read), ..Effective::default() };
/// assert_eq!(Sensitivity::of(false, &reader, |_| false), Sensitivity::ReadOnly);
/// let writer = Effective { workspace: Some(Access::Write), ..Effective::default() };
/// let s = Sensitivity::of(false, &writer, |_| false);
/// assert!(s.is_sensitive() && s.needs_confirmation(Mode::ConfirmSensitive));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sensitivity {
    /// Changes nothing: reads at most.
    ReadOnly,
    /// Writes only its own state directories (a plan, the memory log, a
    /// page cache), which the host created for it and nothing else reads
    /// as code or configuration: not confirmed, not destructive.
    OwnState,
    /// Runs commands and writes nothing else directly: the broker asks
    /// about each command by its class (safe, dev, dangerous) and the mode,
    /// so the call itself is not confirmed; destructive, since a command
    /// can change the workspace.
    Commands,
    /// Can change the workspace or a directory it was granted, can call an
    /// embedder's service (which may act outside: send a message, start an
    /// agent), or says it is sensitive: confirmed in `confirm-sensitive`
    /// mode, destructive.
    Writes,
}

impl Sensitivity {
    /// The sensitivity of a tool that declares `declared_sensitive` and
    /// gets `grant`, where `is_state_dir` tells the host's own state
    /// directories. A plugin cannot lower it by under-declaring: what it
    /// may write decides.
    pub fn of(
        declared_sensitive: bool,
        grant: &Effective,
        is_state_dir: impl Fn(&Path) -> bool,
    ) -> Self {
        let mut writable = grant
            .directories
            .iter()
            .filter(|d| d.access == Access::Write);
        let writes_files = grant.workspace == Some(Access::Write)
            || writable.clone().any(|d| !is_state_dir(&d.host_path));
        if declared_sensitive || writes_files || !grant.services.is_empty() {
            Self::Writes
        } else if grant.commands {
            Self::Commands
        } else if writable.next().is_some() {
            Self::OwnState
        } else {
            Self::ReadOnly
        }
    }

    /// Whether calls are "sensitive": asked about first in
    /// `confirm-sensitive` mode, and shown so.
    pub fn is_sensitive(self) -> bool {
        self == Self::Writes
    }

    /// Whether the executor asks a person before a call in `mode` (a tool
    /// that only runs commands is asked about one command at a time, by the
    /// broker, instead).
    pub fn needs_confirmation(self, mode: Mode) -> bool {
        self != Self::Commands && mode.needs_confirmation(self.is_sensitive())
    }

    /// MCP `readOnlyHint`: the tool changes nothing.
    pub fn read_only(self) -> bool {
        self == Self::ReadOnly
    }

    /// MCP `destructiveHint`: the tool may change or delete what is not its
    /// own (files, or anything a command can reach).
    pub fn destructive(self) -> bool {
        matches!(self, Self::Commands | Self::Writes)
    }

    /// The name listings show: `read-only`, `own-state`, `commands`, `writes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::OwnState => "own-state",
            Self::Commands => "commands",
            Self::Writes => "writes",
        }
    }
}

impl std::fmt::Display for Sensitivity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::grant::DirGrant;
    use std::path::PathBuf;

    fn dir(path: &str, access: Access) -> DirGrant {
        DirGrant {
            name: "d".into(),
            host_path: PathBuf::from(path),
            access,
        }
    }

    #[test]
    fn what_may_be_written_decides() {
        let state = |p: &Path| p == Path::new("/state");
        let of = |declared, grant: &Effective| Sensitivity::of(declared, grant, state);
        let mut g = Effective::default();
        assert_eq!(of(false, &g), Sensitivity::ReadOnly);
        assert_eq!(
            of(true, &g),
            Sensitivity::Writes,
            "a tool may say it is sensitive"
        );
        g.directories = vec![dir("/state", Access::Write)];
        assert_eq!(of(false, &g), Sensitivity::OwnState);
        g.commands = true;
        assert_eq!(of(false, &g), Sensitivity::Commands);
        g.directories.push(dir("/elsewhere", Access::Write));
        assert_eq!(
            of(false, &g),
            Sensitivity::Writes,
            "commands do not hide a write"
        );
        g.directories = vec![dir("/elsewhere", Access::Read)];
        g.commands = false;
        let services = Effective {
            services: vec!["message".to_owned()],
            ..Effective::default()
        };
        assert_eq!(
            of(false, &services),
            Sensitivity::Writes,
            "a service may act outside"
        );
        assert_eq!(of(false, &g), Sensitivity::ReadOnly);
        g.workspace = Some(Access::Write);
        assert_eq!(of(false, &g), Sensitivity::Writes);
    }

    #[test]
    fn every_surface_reads_the_same_value() {
        use Sensitivity::*;
        for s in [ReadOnly, OwnState, Commands, Writes] {
            assert_eq!(s.read_only(), s == ReadOnly);
            assert_eq!(s.destructive(), s >= Commands);
            assert_eq!(s.is_sensitive(), s == Writes);
            assert!(s.needs_confirmation(Mode::ConfirmAll) || s == Commands);
            assert!(!s.needs_confirmation(Mode::Yolo));
            assert_eq!(s.needs_confirmation(Mode::ConfirmSensitive), s == Writes);
        }
    }
}
