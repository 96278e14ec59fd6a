//! What the host and the built-in plugins must agree on, defined once: the
//! names of the state directories the host maps, the settings keys it
//! passes in the call context, and the limits both sides check. The host
//! compiles against these same constants (it depends on this crate), so
//! the two sides cannot drift apart.
//!
//! ```
//! use toolhost_shared::contract::{dir, guest_path};
//! assert_eq!(guest_path(dir::TODO), "/todo");
//! ```

/// Named directories (`dir:NAME:...` capabilities) the host maps to state
/// directories it owns; a plugin sees each at `/NAME`.
pub mod dir {
    /// todo_manager's plans, one file per session.
    pub const TODO: &str = "todo";
    /// The memory log save_memory writes and memory_search/memory_get read.
    pub const MEMORY: &str = "memory";
    /// web_fetch's page cache.
    pub const WEB_CACHE: &str = "web_cache";
    /// The output schemas validate_output reads (one `TYPE.json` each).
    pub const SCHEMAS: &str = "schemas";
    /// The dynamic-tool store create_tool writes.
    pub const DYNAMIC: &str = "dynamic";
    /// The persona (SOUL.md, IDENTITY.md, GOALS.md) update_soul,
    /// update_identity and manage_goals keep.
    pub const SOUL: &str = "soul";
    /// react's scratchpads, one file per session.
    pub const REACT: &str = "react";
    /// web_search's result cache.
    pub const SEARCH_CACHE: &str = "search_cache";
}

/// How refusals name the remedy for a missing grant: `--grant TOOL=CAPS`
/// (the host rewrites it for a tool an agent created, whose grant a person
/// changes with `toolhost dynamic approve ID --grant CAPS`).
pub const GRANT_REMEDY: &str = "--grant TOOL=";

/// Where a plugin sees each directory of [`dir`]: `/NAME`.
pub mod path {
    /// [`super::dir::TODO`] in the guest.
    pub const TODO: &str = "/todo";
    /// [`super::dir::MEMORY`] in the guest.
    pub const MEMORY: &str = "/memory";
    /// [`super::dir::WEB_CACHE`] in the guest.
    pub const WEB_CACHE: &str = "/web_cache";
    /// [`super::dir::SCHEMAS`] in the guest.
    pub const SCHEMAS: &str = "/schemas";
    /// [`super::dir::DYNAMIC`] in the guest.
    pub const DYNAMIC: &str = "/dynamic";
    /// [`super::dir::SOUL`] in the guest.
    pub const SOUL: &str = "/soul";
    /// [`super::dir::REACT`] in the guest.
    pub const REACT: &str = "/react";
    /// [`super::dir::SEARCH_CACHE`] in the guest.
    pub const SEARCH_CACHE: &str = "/search_cache";
}

/// The guest path of the named directory `name`: `/name`.
pub fn guest_path(name: &str) -> String {
    format!("/{name}")
}

/// Names of the components the host treats specially: the tool that
/// creates dynamic tools (it gets the registered names in its settings) and
/// the runners dynamic tools run in (found among the embedded components by
/// these names).
pub mod tool {
    /// The built-in that stores new dynamic tools.
    pub const CREATE_TOOL: &str = "create_tool";
    /// The runner of `javascript` dynamic tools.
    pub const JS_RUNTIME: &str = "js_runtime";
    /// The runner of `command` dynamic tools.
    pub const COMMAND_RUNNER: &str = "command_runner";
    /// The host's tool that files a component for a person to review.
    pub const LOAD_COMPONENT: &str = "load_component";
    /// The host's tool that asks a person to unload a component or narrow
    /// its grant.
    pub const UNLOAD_COMPONENT: &str = "unload_component";
    /// The built-in that searches the web through a configured provider.
    pub const WEB_SEARCH: &str = "web_search";
}

/// web_search's settings, set by the host from `[web_search]`.
pub mod search {
    /// `brave` or `searxng`.
    pub const PROVIDER: &str = "provider";
    /// The provider's search URL.
    pub const ENDPOINT: &str = "endpoint";
    /// The name of the environment variable the API key is granted as.
    pub const API_KEY_ENV: &str = "api_key_env";
    /// Results per query (1 to 20).
    pub const MAX_RESULTS: &str = "max_results";
    /// Seconds the provider has to answer.
    pub const TIMEOUT_SECS: &str = "timeout_secs";
    /// Seconds a result list is reused (0: no cache).
    pub const CACHE_TTL_SECS: &str = "cache_ttl_secs";
}

/// Keys of the settings object in the call context.
pub mod setting {
    /// Global: whether delete_file and apply_patch may delete (bool).
    pub const ALLOW_DELETE: &str = "allow_delete";
    /// Global: the default IANA time zone (string).
    pub const TIMEZONE: &str = "timezone";
    /// get_datetime's default locale for weekday and month names (`es-AR`).
    pub const LOCALE: &str = "locale";
    /// create_tool: the registered tool names a new tool may not take.
    pub const RESERVED_NAMES: &str = "reserved_names";
    /// create_tool: the most tools one agent may have (number).
    pub const MAX_PER_AGENT: &str = "max_per_agent";
    /// create_tool: the largest source accepted, in bytes (number).
    pub const MAX_SOURCE_BYTES: &str = "max_source_bytes";
    /// js_runtime: the script of a JavaScript dynamic tool (string).
    pub const SOURCE: &str = "source";
    /// command_runner: the argv template of a command dynamic tool.
    pub const TEMPLATE: &str = "template";
    /// web_fetch: how long a cached page is used, in seconds.
    pub const CACHE_TTL_SECS: &str = "cache_ttl_secs";
}

/// The shortest tool description that can tell a model what a tool does:
/// `toolhost check`, the host's load checks and create_tool all use it.
pub const MIN_DESCRIPTION_CHARS: usize = 20;

/// The longest description create_tool accepts.
pub const MAX_DESCRIPTION_CHARS: usize = 4000;

/// The most dynamic tools one agent may have pending or approved, unless
/// the host's `[dynamic] max_per_agent` says otherwise.
pub const DEFAULT_MAX_PER_AGENT: u32 = 20;

/// The largest dynamic-tool source (a script or a template), unless the
/// host's `[dynamic] max_source_bytes` says otherwise.
pub const DEFAULT_MAX_SOURCE_BYTES: u64 = 256 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_guest_path_is_its_directory_name() {
        for (name, path) in [
            (dir::TODO, path::TODO),
            (dir::MEMORY, path::MEMORY),
            (dir::WEB_CACHE, path::WEB_CACHE),
            (dir::SCHEMAS, path::SCHEMAS),
            (dir::DYNAMIC, path::DYNAMIC),
        ] {
            assert_eq!(guest_path(name), path);
        }
    }
}
