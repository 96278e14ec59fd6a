//! What a tool asks of the host, converted to and from the WIT `capability`.

use crate::__private::bindings::toolhost::plugin::types as wit;

pub use toolhost_shared::Capability;

/// `value` as the WIT `capability`; `None` for an environment variable,
/// which the tool declares through its `environment` export instead.
pub(crate) fn to_wit(value: &Capability) -> Option<wit::Capability> {
    Some(match value.clone() {
        Capability::WorkspaceRead => wit::Capability::WorkspaceRead,
        Capability::WorkspaceWrite => wit::Capability::WorkspaceWrite,
        Capability::Commands => wit::Capability::Commands,
        Capability::Network(hosts) => wit::Capability::Network(hosts),
        Capability::Directory { name, writable } => {
            wit::Capability::Directory(wit::DirectoryAccess { name, writable })
        }
        Capability::Service(name) => wit::Capability::Service(name),
        Capability::Env(_) => return None,
    })
}
