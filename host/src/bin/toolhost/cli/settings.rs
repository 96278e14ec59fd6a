//! Validated settings: the configuration found, loaded and overridden by the flags, and the executor built from it.

use super::*;

/// A usage error: the command line is wrong (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// What the settings are built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `toolhost serve`: many clients, calls at once.
    Serve,
    /// `toolhost call`: one call, then the process exits (no instance
    /// pool is set up for it).
    OneCall,
    /// `toolhost agent`: a person watches the terminal.
    Agent,
    /// Every other command.
    Other,
}

/// Validated settings: the objects the commands work with.
pub struct Settings {
    pub executor: Executor,
    /// The bots and agent services, to attach to the executor once shared.
    pub bots: toolhost::bots::Bots,
    /// The effective configuration.
    pub config: Config,
    /// The file it came from, if any.
    pub source: Option<PathBuf>,
    /// How many plugin or prompt files were skipped (warned about).
    pub problems: usize,
    /// What the person should know about the configuration (a server
    /// started with the defaults because the file is not trusted).
    pub notice: Option<String>,
}

impl Settings {
    /// Find and load the configuration, apply the profile and the flags
    /// over it, then build the runtime, plugins and executor it describes.
    ///
    /// When serving, no workspace is set unless one was given or
    /// configured (an MCP client's roots may supply it), and plugin files
    /// the compile cache does not know are loaded after the server starts.
    pub fn build(
        global: &GlobalArgs,
        mode: Option<Mode>,
        purpose: Purpose,
    ) -> anyhow::Result<Self> {
        let serving = purpose == Purpose::Serve;
        let start = start_dir(global)?;
        let (mut config, source, notice) = load_config(global, &start, serving)?;
        let origin = source
            .as_ref()
            .map_or_else(|| "configuration".to_owned(), |p| p.display().to_string());
        let cwd_refused = choose_workspace(global, &mut config, start, serving);
        config
            .plugin_dirs
            .extend(global.plugin_dirs.iter().cloned());
        // Components from registries, pinned in the user's toolhost.lock.
        plugin::resolve_sources(&mut config, &global.plugins)?;
        if global.audit.is_some() {
            config.audit_log.clone_from(&global.audit);
        }
        let profile = config
            .apply_profile(global.profile.as_deref())
            .map_err(|e| UsageError(e.to_string()))?;
        config.allow_delete |= global.allow_delete;
        global.commands.apply(&mut config.commands);
        if let Some(mode) = mode {
            config.mode = mode;
        }
        let grants = cli_grants(&global.grants)?;
        let cache = match (&global.cache_dir, global.no_cache) {
            (_, true) => CacheDir::Disabled,
            (Some(dir), false) => CacheDir::At(dir.clone()),
            (None, false) => CacheDir::Default,
        };
        // A server starts without compiling third-party plugins it has not
        // seen (they are added in the background); if the configuration or
        // a --grant names one of their tools, it waits for them after all.
        let options = BuildOptions {
            cache,
            profile,
            progress: crate::output::compile_progress(),
            defer_uncached: serving,
            one_call: purpose == Purpose::OneCall,
            cache_key: global.cache_key.clone(),
            terminal_messages: purpose == Purpose::Agent,
        };
        let mut built = config.executor(&origin, options.clone());
        // A grant naming a tool not loaded yet may name a deferred plugin
        // file: load them all, so what waits for a tool really does.
        let names_deferred = |b: &toolhost::config::Built| {
            b.deferred > 0
                && (!b.waiting_grants.is_empty()
                    || grants
                        .iter()
                        .any(|(_, tool, _)| !b.executor.registry().contains(tool)))
        };
        if serving && built.as_ref().map_or(true, names_deferred) {
            let options = BuildOptions {
                defer_uncached: false,
                ..options
            };
            built = config.executor(&origin, options);
        }
        let built = built.map_err(|e| UsageError(e.to_string()))?;
        for problem in &built.problems {
            crate::output::warn(&format!(
                "skipped {}: {}",
                problem.path.display(),
                problem.reason
            ));
        }
        for warning in built.waiting_grants.iter().chain(&built.grant_warnings) {
            crate::output::warn(warning);
        }
        let bots = built.bots;
        let executor = apply_grants(built.executor, grants, &mut config)?;
        let executor = executor.with_confirmer(Box::new(crate::output::TtyConfirmer));
        if let Some(why) = cwd_refused {
            executor.set_workspace_problem(why);
        }
        Ok(Self {
            executor,
            bots,
            config,
            source,
            problems: built.problems.len(),
            notice,
        })
    }
}

/// Where the configuration is looked for: `--workspace`, else the
/// current directory.
fn start_dir(global: &GlobalArgs) -> anyhow::Result<PathBuf> {
    match &global.workspace {
        Some(dir) if !dir.is_dir() => Err(UsageError(format!(
            "--workspace {}: not a directory; give an existing directory",
            dir.display()
        ))
        .into()),
        Some(dir) => Ok(dir.clone()),
        None => std::env::current_dir().context("cannot read the current directory"),
    }
}

/// The workspace: `--workspace`, else the configured one, else (unless
/// serving, where a client's roots may give it) the current directory if
/// it can be granted. Returns why the current directory could not be
/// (the home directory, `/`): calls that need a workspace are told, and
/// other commands still work.
fn choose_workspace(
    global: &GlobalArgs,
    config: &mut Config,
    start: PathBuf,
    serving: bool,
) -> Option<String> {
    if global.workspace.is_some() {
        config.workspace = Some(start);
    } else if config.workspace.is_none() && !serving {
        let real = start.canonicalize().unwrap_or_else(|_| start.clone());
        match toolhost::paths::unsafe_workspace(&real) {
            Some(why) => {
                return Some(format!(
                    "no workspace: the current directory {} {why}, so it cannot be the \
                     workspace; run toolhost from a project directory or pass --workspace DIR",
                    real.display()
                ));
            }
            None => config.workspace = Some(start),
        }
    }
    None
}

/// `grants` (from `--grant`) over the file's: each replaces the file's
/// grant for its tool, checked here so a typo is blamed on the flag, and
/// kept for a tool not loaded yet (a plugin dropped in later, which
/// `serve` reloads, gets it).
fn apply_grants(
    mut executor: Executor,
    grants: Vec<(String, String, Grant)>,
    config: &mut Config,
) -> anyhow::Result<Executor> {
    for (spec, tool, mut grant) in grants {
        let key = format!("--grant {spec}");
        match executor.registry().get(&tool) {
            Err(err) => {
                crate::output::warn(&toolhost::config::waiting_grant(&key, &err.to_string()))
            }
            Ok(plugin) => {
                if let Some(warning) = toolhost::config::undeclared_grant(&key, plugin, &grant) {
                    crate::output::warn(&warning);
                }
            }
        }
        if let Err(err) = executor.resolve_state_dirs(&mut grant) {
            return Err(UsageError(format!("--grant {spec}: {err}")).into());
        }
        config
            .grants
            .insert(tool.clone(), GrantSection::from(&grant));
        executor = executor.with_grant(tool, grant);
    }
    Ok(executor)
}

/// `--grant TOOL=CAPS` flags, parsed: (the flag, the tool, its grant).
pub(super) fn cli_grants(specs: &[String]) -> anyhow::Result<Vec<(String, String, Grant)>> {
    specs
        .iter()
        .map(|spec| {
            let (tool, caps) = spec.split_once('=').ok_or_else(|| {
                UsageError(format!(
                    "--grant `{spec}` must look like TOOL=CAPS, e.g. my_tool=workspace:read"
                ))
            })?;
            let grant =
                Grant::parse_caps(caps).map_err(|e| UsageError(format!("--grant {spec}: {e}")))?;
            Ok((spec.clone(), tool.to_owned(), grant))
        })
        .collect()
}

/// The configuration `--config` names, or the one found for the workspace
/// (which must be trusted), or the defaults.
///
/// A server (`serving`) whose workspace file is not trusted starts with the
/// defaults instead of stopping, and the notice says why: an MCP client
/// that launched it would otherwise see only "connection closed".
pub(super) fn load_config(
    global: &GlobalArgs,
    start: &Path,
    serving: bool,
) -> anyhow::Result<(Config, Option<PathBuf>, Option<String>)> {
    let loaded = match &global.config {
        Some(path) => Some((Config::load(path), path.clone())),
        None => Config::find(start).map(|(path, in_ws)| (Config::load_found(&path, in_ws), path)),
    };
    match loaded {
        Some((Ok(config), path)) => Ok((config, Some(path), None)),
        Some((Err(toolhost::config::ConfigError::Untrusted { path }), _)) if serving => {
            let notice = untrusted_notice(&path);
            crate::output::warn(&notice);
            Ok((Config::default(), None, Some(notice)))
        }
        Some((Err(err), _)) => Err(UsageError(err.to_string()).into()),
        None => Ok((Config::default(), None, None)),
    }
}

/// Why a server runs with the defaults: its workspace file is not trusted.
pub(super) fn untrusted_notice(path: &Path) -> String {
    format!(
        "{} is not trusted (new, or changed since it was trusted), so toolhost started with its safe defaults and none of that file's settings. To use it, review it, run `toolhost config trust` in {}, and restart the server.",
        path.display(),
        path.parent()
            .map_or_else(|| ".".into(), |p| p.display().to_string())
    )
}

/// `toolhost config trust`: trust the workspace's configuration file as it
/// is now.
pub fn trust_config(global: &GlobalArgs) -> anyhow::Result<String> {
    let path = match &global.config {
        Some(path) => path.clone(),
        None => {
            let start = match &global.workspace {
                Some(dir) => dir.clone(),
                None => std::env::current_dir().context("cannot read the current directory")?,
            };
            start.join(toolhost::config::FILE_NAME)
        }
    };
    let hash = Config::trust(&path).map_err(|e| UsageError(e.to_string()))?;
    // A symlink's target is what was trusted.
    let path = path.canonicalize().unwrap_or(path);
    Ok(format!(
        "trusted {} (blake3 {}); any change to it makes it untrusted again\n",
        path.display(),
        &hash[..16]
    ))
}
