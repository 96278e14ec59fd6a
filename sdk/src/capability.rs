//! What a tool asks of the host, converted to and from the WIT `capability`.

use crate::__private::bindings::toolhost::plugin::types as wit;

/// Something a tool needs from the host.
///
/// The host grants at most what the tool declares, and only what its
/// configuration allows: a read-only tool cannot write, because its workspace
/// preopen is read-only.
///
/// ```
/// use toolhost_sdk::Capability;
/// let needs = vec![Capability::WorkspaceRead, Capability::Network(vec!["example.com".into()])];
/// assert_eq!(needs.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capability {
    /// Read the workspace (preopened read-only at `.`).
    WorkspaceRead,
    /// Read and write the workspace (preopened read-write at `.`).
    WorkspaceWrite,
    /// Ask the host broker to run commands.
    Commands,
    /// Make HTTP requests to these hosts; `*` means any public host.
    Network(Vec<String>),
    /// A host-configured directory, mounted at `/<name>`.
    Directory {
        /// The name the host maps to a real directory.
        name: String,
        /// Whether the tool writes there.
        writable: bool,
    },
}

impl From<Capability> for wit::Capability {
    fn from(value: Capability) -> Self {
        match value {
            Capability::WorkspaceRead => wit::Capability::WorkspaceRead,
            Capability::WorkspaceWrite => wit::Capability::WorkspaceWrite,
            Capability::Commands => wit::Capability::Commands,
            Capability::Network(hosts) => wit::Capability::Network(hosts),
            Capability::Directory { name, writable } => {
                wit::Capability::Directory(wit::DirectoryAccess { name, writable })
            }
        }
    }
}
