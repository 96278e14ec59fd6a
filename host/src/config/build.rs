//! Building the [`Executor`] a configuration describes, with every value
//! checked first.

use super::{BuildOptions, Built, Config, ConfigError, GrantSection, invalid};
use crate::dynamic::Store;
use crate::executor::Executor;
use crate::executor::audit::AuditLog;
use crate::registry::{LoadProblem, Registry};
use crate::runtime::{
    Limits, MAX_CONCURRENT_CALLS, MAX_MEMORY_BYTES, MAX_TIMEOUT, Runtime, RuntimeConfig,
};
use crate::types::grant::is_env_name;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use toolhost_shared::contract::{dir, setting, tool};

/// The smallest compile cache budget: one build's built-ins and
/// js_runtime's snapshot take 150-200 MB (js_runtime's instrumented form,
/// kept for preparing scripts, ~18 MB more); less would evict and
/// recompile them on every start. Each `javascript` tool's own snapshot
/// adds ~18 MB.
const MIN_CACHE_MB: u64 = 256;

impl Config {
    /// Build the runtime, load the built-ins and plugin directories, and
    /// configure an executor as this file and `options` say. `origin`
    /// names the file in errors. Unknown tool names anywhere are errors
    /// that list near names.
    pub fn executor(&self, origin: &str, options: BuildOptions) -> Result<Built, ConfigError> {
        let BuildOptions {
            cache,
            profile,
            progress,
            defer_uncached,
            one_call,
            cache_key,
            terminal_messages,
        } = options;
        let bad = |message: String| invalid(origin, message);
        let at_origin = |e: ConfigError| match e {
            ConfigError::Invalid { message, .. } => bad(message),
            other => other,
        };
        let limits = self.limits().map_err(at_origin)?;
        self.check_commands().map_err(at_origin)?;
        self.agent.budget().map_err(at_origin)?;
        self.agent.api().map_err(at_origin)?;
        self.check_bots().map_err(at_origin)?;
        super::mcp_servers::check(&self.mcp_servers).map_err(at_origin)?;
        let runtime = Runtime::new(RuntimeConfig {
            cache,
            limits,
            max_concurrent_calls: self.limits.max_concurrent_calls,
            progress,
            pool_instances: !one_call,
            cache_max_bytes: self.limits.cache_max_mb << 20,
            cache_key,
            spares: RuntimeConfig::default()
                .spares
                .filter(|_| std::env::var_os("TOOLHOST_SPARES").is_none_or(|v| v != "0")),
            ..RuntimeConfig::default()
        })
        .map_err(|e| bad(e.to_string()))?;
        let mut executor = Executor::new(Arc::new(runtime), Registry::new())
            .with_plugin_dirs(self.plugin_dirs.clone())
            .with_mode(self.mode)
            .with_setting(setting::ALLOW_DELETE, self.allow_delete)
            .with_path_rules(&self.paths)
            .map_err(|e| bad(e.to_string()))?
            .with_commands(self.commands.to_command_config())
            .map_err(|e| bad(e.to_string()))?;
        // Secrets people stored for tools (`toolhost secret set`).
        if let Ok(secrets) = crate::secrets::Secrets::user() {
            executor = executor.with_secrets(secrets);
        }
        if let Some(tz) = &self.timezone {
            executor = executor.with_setting(setting::TIMEZONE, tz.clone());
        }
        if let Some(locale) = &self.locale {
            executor = executor.with_setting(setting::LOCALE, locale.clone());
        }
        executor = self.with_state_dirs(executor, &bad)?;
        #[cfg(feature = "mcp")]
        if !self.mcp_servers.is_empty() {
            let specs = super::mcp_servers::specs(&self.mcp_servers).map_err(at_origin)?;
            let servers = crate::remote::RemoteServers::new(specs)
                .map_err(|e| bad(format!("cannot start the MCP client's runtime: {e}")))?;
            executor = executor.with_remote_servers(servers);
        }
        let (executor_with, bots) = self.with_bots(executor, terminal_messages);
        executor = executor_with;
        // Built-ins, plugin directories, approved dynamic tools: what every
        // reload loads again.
        let (deferred, mut problems) = if defer_uncached {
            executor.load_known_plugins()
        } else {
            executor.reload_plugins().map(|(_, problems)| (0, problems))
        }
        .map_err(|e| bad(e.to_string()))?;
        executor = self.with_create_tool_settings(executor);
        if let Some(dir) = &self.workspace {
            executor = executor
                .with_workspace(dir)
                .map_err(|e| bad(e.to_string()))?;
        }
        executor = self.with_web_search(executor).map_err(at_origin)?;
        let mut waiting_grants = Vec::new();
        executor = self.with_tool_sections(executor, &mut problems, &mut waiting_grants, &bad)?;
        if let Some(profile) = profile {
            executor = executor
                .with_profile(profile)
                .map_err(|e| bad(e.to_string()))?;
        }
        executor = self.with_hooks_and_audit(executor, &bad)?;
        let grant_warnings = self.grant_warnings(&executor);
        Ok(Built {
            executor,
            problems,
            deferred,
            waiting_grants,
            grant_warnings,
            bots,
        })
    }

    /// What `[grants]` names that its (loaded) tools do not declare.
    fn grant_warnings(&self, executor: &Executor) -> Vec<String> {
        let registry = executor.registry();
        self.grants
            .iter()
            .filter_map(|(tool, section)| {
                let plugin = registry.get(tool).ok()?;
                undeclared_grant(&format!("grants.{tool}"), plugin, &section.to_grant())
            })
            .collect()
    }

    /// web_search's provider, as its settings and least grant (a
    /// `[grants.web_search]` section replaces the grant later), and the
    /// description that follows the section (a configured one,
    /// `[tools.web_search]` or prompts_dir, replaces it later).
    fn with_web_search(&self, executor: Executor) -> Result<Executor, ConfigError> {
        let Some(section) = &self.web_search else {
            return Ok(executor);
        };
        let endpoint = section.endpoint()?;
        executor
            .with_tool_settings(tool::WEB_SEARCH, section.settings(&endpoint))
            .with_grant(tool::WEB_SEARCH, section.grant(&endpoint))
            .with_description(tool::WEB_SEARCH, section.description())
            .map_err(|e| invalid("configuration", e.to_string()))
    }

    /// The post-edit hooks and the audit log.
    fn with_hooks_and_audit(
        &self,
        executor: Executor,
        bad: &impl Fn(String) -> ConfigError,
    ) -> Result<Executor, ConfigError> {
        let mut executor = executor
            .with_hooks(self.hooks.post_edit.clone())
            .map_err(|e| bad(format!("hooks.post_edit: {e}")))?;
        if let Some(path) = &self.audit_log {
            let log = AuditLog::open(path)
                .map_err(|e| bad(format!("audit_log {}: {e}", path.display())))?;
            executor = executor.with_audit(log);
        }
        Ok(executor)
    }

    /// The agent services, given before the tools are loaded (the ones
    /// offered as tools load with them).
    fn with_bots(&self, executor: Executor, terminal: bool) -> (Executor, crate::bots::Bots) {
        let bots = crate::bots::Bots::new(self);
        let services = bots.services(terminal);
        let executor = if services.is_empty() {
            executor
        } else {
            executor.with_services(services)
        };
        (executor, bots)
    }

    /// create_tool's settings, where agents may create tools: the names it
    /// may not take (every tool loaded now) and the `[dynamic]` limits.
    fn with_create_tool_settings(&self, executor: Executor) -> Executor {
        if executor.dynamic_store().is_none() {
            return executor;
        }
        let d = &self.dynamic;
        let reserved: Vec<String> = executor
            .registry()
            .list()
            .map(|p| p.name().to_owned())
            .collect();
        let mut settings = serde_json::Map::new();
        settings.insert(setting::RESERVED_NAMES.into(), reserved.into());
        settings.insert(setting::MAX_PER_AGENT.into(), d.max_per_agent.into());
        settings.insert(setting::MAX_SOURCE_BYTES.into(), d.max_source_bytes.into());
        executor
            .with_tool_settings(tool::LOAD_COMPONENT, settings.clone())
            .with_tool_settings(tool::CREATE_TOOL, settings)
    }

    /// The state directories the built-ins get (todo plans, page cache,
    /// memory, output schemas) and the dynamic-tool store.
    fn with_state_dirs(
        &self,
        mut executor: Executor,
        bad: &impl Fn(String) -> ConfigError,
    ) -> Result<Executor, ConfigError> {
        let state = self.state_home();
        if let Some(state) = &state {
            executor = executor
                .with_state_dir(dir::TODO, state.join(dir::TODO))
                .with_state_dir(dir::WEB_CACHE, state.join(dir::WEB_CACHE))
                .with_state_dir(dir::REACT, state.join(dir::REACT))
                .with_state_dir(dir::SEARCH_CACHE, state.join(dir::SEARCH_CACHE));
        }
        if let Some(dir) = self
            .dynamic
            .dir
            .clone()
            .or_else(|| state.as_ref().map(|s| s.join(dir::DYNAMIC)))
        {
            let d = &self.dynamic;
            in_range("dynamic.max_per_agent", d.max_per_agent.into(), 0, 10_000)?;
            in_range("dynamic.max_source_bytes", d.max_source_bytes, 1, 16 << 20)?;
            executor = executor.with_dynamic_store(Store::new(dir));
            #[cfg(feature = "oci")]
            {
                let mut options = crate::oci::Options::user();
                options.require_signature = self.signatures.require;
                options.keys.clone_from(&self.signatures.keys);
                executor = executor.with_registries(crate::oci::Oci::new(options));
            }
        }
        for (name, configured) in [(dir::MEMORY, &self.memory_dir), (dir::SOUL, &self.soul_dir)] {
            if let Some(path) = configured
                .clone()
                .or_else(|| state.as_ref().map(|s| s.join(name)))
            {
                executor = executor.with_state_dir(name, path);
            }
        }
        if let Some(schemas) = &self.schemas_dir {
            if !schemas.is_dir() {
                return Err(bad(format!(
                    "schemas_dir {} is not a directory; create it (one TYPE.json per output type) or remove the key",
                    schemas.display()
                )));
            }
            executor = executor.with_state_dir(dir::SCHEMAS, schemas.clone());
        }
        Ok(executor)
    }

    /// `[grants]`, `prompts_dir`, `[tools]` and the tools `[profiles]`
    /// name, each checked against the registered tools.
    fn with_tool_sections(
        &self,
        mut executor: Executor,
        problems: &mut Vec<LoadProblem>,
        waiting_grants: &mut Vec<String>,
        bad: &impl Fn(String) -> ConfigError,
    ) -> Result<Executor, ConfigError> {
        let known = |executor: &Executor, tool: &str, key: &str| {
            if executor.is_remote_tool(tool) {
                return Ok(());
            }
            executor
                .registry()
                .get(tool)
                .map(|_| ())
                .map_err(|e| bad(format!("{key}.{tool}: {e}")))
        };
        // A grant may wait for its tool: a plugin dropped in later is
        // granted as configured when it loads.
        let waiting = |executor: &Executor, tool: &str, key: &str| {
            executor
                .registry()
                .get(tool)
                .err()
                .filter(|_| !executor.is_remote_tool(tool))
                .map(|e| waiting_grant(key, &e.to_string()))
        };
        for (tool, section) in &self.grants {
            waiting_grants.extend(waiting(&executor, tool, &format!("grants.{tool}")));
            check_grant(tool, section).map_err(&bad)?;
            executor = executor.with_grant(tool, section.to_grant());
        }
        let mut group_texts = std::collections::BTreeMap::new();
        if let Some(dir) = &self.prompts_dir
            && dir.join("groups").is_dir()
        {
            let (texts, skipped) = read_prompts(&dir.join("groups")).map_err(&bad)?;
            problems.extend(skipped);
            for (group, path, text) in texts {
                if crate::guidance::GROUPS.iter().any(|g| g.name == group) {
                    group_texts.insert(group, text);
                } else {
                    let names: Vec<&str> = crate::guidance::GROUPS.iter().map(|g| g.name).collect();
                    problems.push(LoadProblem {
                        path,
                        reason: format!(
                            "no tool group is named `{group}` (groups: {})",
                            names.join(", ")
                        ),
                    });
                }
            }
        }
        executor = executor.with_guidance(self.prompt_mode, group_texts);
        if let Some(dir) = &self.prompts_dir {
            let (prompts, skipped) = read_prompts(dir).map_err(&bad)?;
            problems.extend(skipped);
            for (tool, path, text) in prompts {
                if executor.registry().contains(&tool) {
                    executor = executor
                        .with_description(&tool, text)
                        .map_err(|e| bad(e.to_string()))?;
                } else {
                    let reason = executor
                        .registry()
                        .get(&tool)
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                    problems.push(LoadProblem { path, reason });
                }
            }
        }
        for (tool, section) in &self.tools {
            known(&executor, tool, "tools")?;
            if let Some(text) = &section.description {
                executor = executor
                    .with_description(tool, text.clone())
                    .map_err(|e| bad(e.to_string()))?;
            }
            executor = executor.with_tool_settings(tool, section.settings.clone());
        }
        for (name, section) in &self.profiles {
            let listed = section.tools.iter().flatten().chain(&section.disabled);
            for tool in listed {
                known(&executor, tool, &format!("profiles.{name}"))?;
            }
            for tool in section.grants.keys() {
                let key = format!("profiles.{name}.grants.{tool}");
                waiting_grants.extend(waiting(&executor, tool, &key));
            }
        }
        Ok(executor)
    }

    /// The per-call limits, checked: each out-of-range value is named
    /// with its key and range.
    pub fn limits(&self) -> Result<Limits, ConfigError> {
        let section = &self.limits;
        in_range(
            "limits.memory_mb",
            section.memory_mb,
            1,
            (MAX_MEMORY_BYTES >> 20) as u64,
        )?;
        in_range(
            "limits.timeout_secs",
            section.timeout_secs,
            1,
            MAX_TIMEOUT.as_secs(),
        )?;
        in_range(
            "limits.max_output_bytes",
            section.max_output_bytes as u64,
            1,
            1 << 30,
        )?;
        in_range(
            "limits.max_concurrent_calls",
            section.max_concurrent_calls.into(),
            1,
            MAX_CONCURRENT_CALLS.into(),
        )?;
        in_range(
            "limits.cache_max_mb",
            section.cache_max_mb,
            MIN_CACHE_MB,
            1 << 20,
        )?;
        let limits = Limits {
            memory_bytes: usize::try_from(section.memory_mb << 20).unwrap_or(usize::MAX),
            timeout: Duration::from_secs(section.timeout_secs),
            max_output_bytes: section.max_output_bytes,
            ..Limits::default()
        };
        limits
            .check()
            .map_err(|e| invalid("limits", e.to_string()))?;
        Ok(limits)
    }

    /// The `[commands]` numbers, checked like the limits.
    pub(super) fn check_commands(&self) -> Result<(), ConfigError> {
        let c = &self.commands;
        if let Some(bad) = c.settable_env.iter().find(|n| !is_env_name(n)) {
            return Err(invalid(
                "configuration",
                format!(
                    "commands.settable_env: `{bad}` is not an environment variable name \
                     (letters, digits and `_`, not starting with a digit)"
                ),
            ));
        }
        in_range("commands.max_timeout_secs", c.max_timeout_secs, 1, 86_400)?;
        in_range(
            "commands.timeout_secs",
            c.timeout_secs,
            1,
            c.max_timeout_secs,
        )?;
        in_range(
            "commands.max_output_chars",
            c.max_output_chars as u64,
            1,
            1 << 30,
        )?;
        in_range("commands.max_background", c.max_background as u64, 1, 1000)?;
        in_range(
            "commands.max_background_total",
            c.max_background_total as u64,
            c.max_background as u64,
            10_000,
        )?;
        in_range(
            "commands.background_ttl_secs",
            c.background_ttl_secs,
            1,
            86_400 * 7,
        )?;
        in_range(
            "commands.background_buffer_chars",
            c.background_buffer_chars as u64,
            1024,
            1 << 30,
        )
    }
}

/// `value` of `key` within `min..=max`, or an error saying so.
pub(super) fn in_range(key: &str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(invalid(
            "configuration",
            format!("{key} is {value}; use {min} to {max}"),
        ))
    }
}

/// What to say about the grant at `key` whose tool is not loaded (`why`).
pub fn waiting_grant(key: &str, why: &str) -> String {
    format!("{key}: {why}; the grant is kept and applies when a tool of that name is loaded")
}

/// What to say about the grant at `key` for `plugin` if it names what the
/// tool does not declare: that part gives it nothing. (A built-in gets
/// the environment variables it is granted, declared or not.)
pub fn undeclared_grant(
    key: &str,
    plugin: &crate::plugin::Plugin,
    grant: &crate::types::grant::Grant,
) -> Option<String> {
    let tool = plugin.name();
    let builtin = *plugin.origin() == crate::plugin::Origin::Builtin;
    let mut extra = grant.undeclared(&plugin.info().capabilities);
    extra.retain(|e| !(builtin && e.starts_with("env:")));
    if extra.is_empty() {
        return None;
    }
    let named: Vec<String> = extra.iter().map(|e| format!("`{e}`")).collect();
    Some(format!(
        "{key}: `{tool}` does not declare {}, so that part of the grant gives it nothing (a tool \
         gets only what it declares and a person grants: the tool must declare it; `toolhost \
         describe {tool}` lists what it declares)",
        named.join(", ")
    ))
}

pub(super) fn check_grant(tool: &str, grant: &GrantSection) -> Result<(), String> {
    if let Some(key) = grant.env.iter().find(|k| !is_env_name(k)) {
        return Err(format!(
            "grants.{tool}.env: `{key}` is not an environment variable name"
        ));
    }
    if let Some(name) = grant
        .services
        .iter()
        .find(|n| !toolhost_shared::grant::is_service_name(n))
    {
        return Err(format!(
            "grants.{tool}.services: `{name}` is not a service name (lowercase letters, digits, \
             `_`, `-`, `.`)"
        ));
    }
    for dir in &grant.directories {
        let simple = !dir.guest.is_empty()
            && !dir.guest.contains(['/', '\\'])
            && dir.guest != "."
            && dir.guest != "..";
        if !simple {
            return Err(format!(
                "grants.{tool}.directories: guest `{}` must be a plain name (it is mounted at /NAME)",
                dir.guest
            ));
        }
        if !dir.host.is_dir() {
            return Err(format!(
                "grants.{tool}.directories: {} is not a directory; create it or fix the path",
                dir.host.display()
            ));
        }
    }
    Ok(())
}

/// Prompt files in `dir`: (tool, path, text) for every `NAME.md`, and the
/// files that could not be read.
type Prompts = (Vec<(String, PathBuf, String)>, Vec<LoadProblem>);

pub(super) fn read_prompts(dir: &Path) -> Result<Prompts, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("prompts_dir {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    paths.sort();
    let mut prompts = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        let Some(tool) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => {
                prompts.push((tool, path, text.trim_end().to_owned()));
            }
            Ok(_) => problems.push(LoadProblem {
                path,
                reason: "the prompt file is empty; the tool keeps its own description".to_owned(),
            }),
            Err(e) => problems.push(LoadProblem {
                path,
                reason: format!("cannot read the prompt: {e}"),
            }),
        }
    }
    Ok((prompts, problems))
}
