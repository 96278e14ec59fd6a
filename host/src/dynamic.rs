//! Dynamic tools: tools an agent creates at run time with `create_tool`.
//!
//! `create_tool` (a plugin whose only grant is the store directory) writes
//! `<store>/<id>/meta.json` and the source with status `pending`. Only a
//! person approves, with `toolhost dynamic approve` ([`Store::approve`]):
//! that records the grant in meta.json **and** an approval digest (of the
//! name, schema, scope, grant and source) in the user's trust store, which
//! no plugin can write. [`Store::load_into`] registers only approved tools
//! whose digest still matches, so editing the store (by hand or by a
//! compromised plugin) can never approve or widen anything.
//!
//! Every kind runs as a WASM component: `javascript` in the embedded
//! `js_runtime` component (the script in its settings), `command` in the
//! embedded `command_runner` (the argv template in its settings, each
//! `{{param}}` one whole argv item, run through the broker), and
//! `component` as its own `.wasm`, checked like `toolhost check`.

pub use crate::plugin::Binding;
pub use crate::runtime::MAX_COMPONENT_BYTES;

use crate::plugin::Plugin;
use crate::registry::{LoadProblem, Registry};
use crate::runtime::Runtime;
use crate::trust;
use crate::types::grant::Grant;
use crate::types::names::ParseError;
use crate::types::tool_info::{Capability, ToolInfo};
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use toolhost_shared::contract::{setting, tool};
mod changes;
mod decisions;
mod inspect;
mod load;
mod requests;
pub use changes::Since;
pub(crate) use changes::unified_diff;
pub use decisions::{Decider, Decision};
pub use inspect::{Inspected, inspect};
pub use load::Registries;
pub(crate) use load::load_component;
pub(crate) use requests::unload_component;
pub use toolhost_shared::dynamic::{
    Kind, META_FILE, Meta, RESERVED_NAMES, Request, Status, read_meta,
};

/// The most agent-made tools one agent may have pending or approved.
pub const DEFAULT_MAX_PER_AGENT: u32 = toolhost_shared::contract::DEFAULT_MAX_PER_AGENT;

/// The largest source `create_tool` accepts (a script or a template).
pub const DEFAULT_MAX_SOURCE_BYTES: u64 = toolhost_shared::contract::DEFAULT_MAX_SOURCE_BYTES;

/// Why a dynamic-tool operation failed, by kind; the message says what to
/// do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DynamicError {
    /// No stored tool has this id or (not rejected) name.
    #[error("no dynamic tool has the id or name `{query}` in {}; `toolhost dynamic list` shows them", store.display())]
    NotFound {
        /// The id or name asked for.
        query: String,
        /// The store searched.
        store: PathBuf,
    },
    /// Several stored tools have this name.
    #[error(
        "more than one stored tool is named `{0}`; give its id (`toolhost dynamic list` shows ids)"
    )]
    Ambiguous(String),
    /// Approving it would break a rule (rejected already, a name taken).
    #[error("{0}")]
    Refused(String),
    /// The tool does not build: its source, template, schema or component.
    #[error("{0}")]
    Invalid(String),
    /// The grant is not in `--grant` spelling.
    #[error(transparent)]
    Grant(#[from] ParseError),
    /// Reading or writing the store or the trust store failed.
    #[error("cannot {what}: {source}")]
    Io {
        /// What was being done (`read …`, `record the approval`).
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DynamicError {
    let what = what.into();
    move |source| DynamicError::Io { what, source }
}

/// One stored tool.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its record.
    pub meta: Meta,
    /// Its directory, `<store>/<id>`.
    pub dir: PathBuf,
}

impl Entry {
    /// The source file's path.
    pub fn source_path(&self) -> PathBuf {
        self.dir.join(self.meta.kind.source_file())
    }

    /// What is kept for reading beside the source, if its kind keeps
    /// anything: a typescript tool's TypeScript (never what runs).
    pub fn original_path(&self) -> Option<PathBuf> {
        self.meta
            .kind
            .original_file()
            .map(|name| self.dir.join(name))
    }
}

/// The dynamic-tool store: one directory per tool.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store at `dir` (it need not exist yet).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every stored tool, oldest first, and the entries that cannot be read.
    pub fn list(&self) -> (Vec<Entry>, Vec<LoadProblem>) {
        let mut entries = Vec::new();
        let mut problems = Vec::new();
        let Ok(dirs) = std::fs::read_dir(&self.dir) else {
            return (entries, problems);
        };
        for dir in dirs.filter_map(Result::ok).map(|e| e.path()) {
            // A directory without a record is a creation that did not finish
            // (create_tool writes the record last): not a tool.
            if !dir.is_dir() || !dir.join(META_FILE).exists() {
                continue;
            }
            match read_meta(&dir) {
                Ok(meta) => entries.push(Entry { meta, dir }),
                Err(reason) => problems.push(LoadProblem { path: dir, reason }),
            }
        }
        entries.sort_by(|a, b| {
            (&a.meta.created_at, &a.meta.id).cmp(&(&b.meta.created_at, &b.meta.id))
        });
        (entries, problems)
    }

    /// The tool with this id, or the one not rejected with this name.
    pub fn find(&self, id_or_name: &str) -> Result<Entry, DynamicError> {
        self.find_in(&self.list().0, id_or_name)
    }

    fn find_in(&self, entries: &[Entry], id_or_name: &str) -> Result<Entry, DynamicError> {
        if let Some(e) = entries.iter().find(|e| e.meta.id == id_or_name) {
            return Ok(e.clone());
        }
        let mut by_name = entries
            .iter()
            .filter(|e| e.meta.name == id_or_name && e.meta.status != Status::Rejected);
        match (by_name.next(), by_name.next()) {
            (Some(e), None) => Ok(e.clone()),
            (Some(_), Some(_)) => Err(DynamicError::Ambiguous(id_or_name.to_owned())),
            (None, _) => Err(DynamicError::NotFound {
                query: id_or_name.to_owned(),
                store: self.dir.clone(),
            }),
        }
    }

    /// Approve `id_or_name` with `grant` (`--grant` spelling; `None`: what it
    /// asked for). The tool is checked as it would be loaded — its name
    /// against `registry`, its template or component, the grant's syntax —
    /// before anything is written.
    pub fn approve(
        &self,
        runtime: &Runtime,
        registry: &Registry,
        id_or_name: &str,
        grant: Option<Vec<String>>,
    ) -> Result<Entry, DynamicError> {
        self.approve_seen(runtime, registry, id_or_name, grant, None)
    }

    /// [`Store::approve`], refused unless the tool is still what a person
    /// reviewed: `seen` is the [`review_digest`] of what they were shown
    /// (the review page sends it with the approval), so a record or source
    /// changed after the page was drawn is not approved unseen.
    pub fn approve_seen(
        &self,
        runtime: &Runtime,
        registry: &Registry,
        id_or_name: &str,
        grant: Option<Vec<String>>,
        seen: Option<&str>,
    ) -> Result<Entry, DynamicError> {
        let (entries, _) = self.list();
        let mut entry = self.find_in(&entries, id_or_name)?;
        if entry.meta.status == Status::Rejected {
            return Err(DynamicError::Refused(format!(
                "`{}` was rejected and its source removed; the agent must create it again",
                entry.meta.id
            )));
        }
        let source = std::fs::read(entry.source_path())
            .map_err(io(format!("read {}", entry.source_path().display())))?;
        if let Some(seen) = seen
            && review_digest(&entry.meta, &source) != seen
        {
            return Err(DynamicError::Refused(format!(
                "`{}` changed after it was shown to you (its record or source); look at it again \
                 before approving",
                entry.meta.id
            )));
        }
        let grant = grant.unwrap_or_else(|| entry.meta.capabilities.clone());
        parse_grant(&grant)?;
        let kind = entry.meta.kind;
        if let Some(unusable) = grant.iter().flat_map(|g| g.split(',')).find(|item| {
            toolhost_shared::grant::GrantItem::parse(item.trim()).is_some_and(|parsed| {
                parsed != toolhost_shared::grant::GrantItem::Nothing && !kind.can_use(&parsed)
            })
        }) {
            return Err(DynamicError::Refused(format!(
                "a {} tool cannot use `{unusable}`; grant from {}",
                kind.as_str(),
                kind.usable()
            )));
        }
        entry.meta.grant = Some(grant.clone());
        let built = plugins(runtime, &entry, &source)?;
        for tool in &built {
            if let Some(existing) = registry.list().find(|p| p.name() == tool.name())
                && existing
                    .dynamic()
                    .is_none_or(|b| b.meta.id != entry.meta.id)
            {
                return Err(DynamicError::Refused(format!(
                    "a tool named `{}` is already registered (from {}); reject this one",
                    tool.name(),
                    existing.origin()
                )));
            }
            crate::validate::ArgsSchema::compile(&tool.info().input_schema).map_err(|e| {
                DynamicError::Invalid(format!("its parameters schema cannot be used: {e}"))
            })?;
        }
        // Two creations racing past create_tool's check: one name, one tool.
        if let Some(twin) = entries.iter().find(|e| {
            e.meta.name == entry.meta.name
                && e.meta.id != entry.meta.id
                && e.meta.status == Status::Approved
        }) {
            return Err(DynamicError::Refused(format!(
                "another approved tool, {}, is named `{}`; reject one of them",
                twin.meta.id, entry.meta.name
            )));
        }
        entry.meta.status = Status::Approved;
        entry.meta.decided_at = Some(now());
        entry.meta.reason = None;
        entry.meta.request = None;
        trust::trust_content(&entry.dir, &approval_digest(&entry.meta, &source))
            .map_err(io("record the approval"))?;
        changes::keep_approved(&entry, &source);
        write_meta(&entry)?;
        Ok(entry)
    }

    /// Reject `id_or_name`: remove its source and its approval, and keep the
    /// record (status `rejected`, with `reason`) so the agent can be told.
    pub fn reject(&self, id_or_name: &str, reason: Option<String>) -> Result<Entry, DynamicError> {
        let mut entry = self.find(id_or_name)?;
        trust::forget(&entry.dir).map_err(io("remove the approval"))?;
        for path in std::iter::once(entry.source_path()).chain(entry.original_path()) {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("remove the source")(e)),
            }
        }
        entry.meta.status = Status::Rejected;
        entry.meta.grant = None;
        entry.meta.request = None;
        entry.meta.decided_at = Some(now());
        entry.meta.reason = reason;
        write_meta(&entry)?;
        Ok(entry)
    }

    /// Register every approved tool whose approval still matches. Tools
    /// that cannot be loaded (changed since approval, a name taken) are
    /// skipped and reported.
    pub fn load_into(&self, runtime: &Runtime, registry: &mut Registry) -> Vec<LoadProblem> {
        let (entries, mut problems) = self.list();
        for entry in entries {
            if entry.meta.status != Status::Approved {
                continue;
            }
            let loaded = std::fs::read(entry.source_path())
                .map_err(|e| format!("cannot read its source: {e}"))
                .and_then(|source| {
                    if trust::is_trusted(&entry.dir, &approval_digest(&entry.meta, &source)) {
                        plugins(runtime, &entry, &source).map_err(|e| e.to_string())
                    } else {
                        Err("it changed since a person approved it (or was never approved with `toolhost dynamic approve`); approve it again".to_owned())
                    }
                })
                .and_then(|tools| {
                    // All of a component's tools, or none.
                    if let Some(taken) = tools.iter().find(|p| registry.contains(p.name())) {
                        return Err(format!("a tool named `{}` is loaded already", taken.name()));
                    }
                    tools.into_iter().try_for_each(|plugin| {
                        registry.register(plugin, false).map_err(|e| e.to_string())
                    })
                });
            if let Err(reason) = loaded {
                problems.push(LoadProblem {
                    path: entry.dir,
                    reason,
                });
            }
        }
        problems
    }

    /// What a watcher compares to notice approvals, rejections and removals:
    /// each tool's record, hashed (records are small; a re-approval within
    /// one timestamp tick still changes the hash).
    pub fn fingerprint(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        if let Ok(dirs) = std::fs::read_dir(&self.dir) {
            for dir in dirs.filter_map(Result::ok) {
                let path = dir.path().join(META_FILE);
                if let Ok(bytes) = std::fs::read(&path) {
                    out.push((path, blake3::hash(&bytes).to_hex().to_string()));
                }
            }
        }
        out.sort();
        out
    }
}

fn write_meta(entry: &Entry) -> Result<(), DynamicError> {
    let what = || format!("write {}", entry.dir.join(META_FILE).display());
    let text = serde_json::to_string_pretty(&entry.meta).map_err(|e| io(what())(e.into()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(&entry.dir).map_err(io(what()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(io(what()))?;
    tmp.persist(entry.dir.join(META_FILE))
        .map_err(|e| io(what())(e.error))?;
    Ok(())
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// What a person reviewing `meta` and `source` was shown, as one digest:
/// the whole record and the source's bytes.
pub fn review_digest(meta: &Meta, source: &[u8]) -> String {
    // An agent's request changes what is asked, not what is decided on: a
    // request made again cannot make a person's decision stale.
    let decided = Meta {
        request: None,
        ..meta.clone()
    };
    let mut hasher = blake3::Hasher::new();
    hasher.update(
        serde_json::to_string(&decided)
            .unwrap_or_default()
            .as_bytes(),
    );
    hasher.update(&[0]);
    hasher.update(source);
    hasher.finalize().to_hex().to_string()
}

/// A capability list as people read it: `workspace:read, commands`, or
/// `nothing`.
pub fn caps_text(caps: &[String]) -> String {
    if caps.is_empty() {
        "nothing".to_owned()
    } else {
        caps.join(", ")
    }
}

/// Parse a grant in `--grant` spelling. A tool an agent created gets no
/// directory of the host's (`dir:` items are refused).
pub fn parse_grant(items: &[String]) -> Result<Grant, ParseError> {
    let grant = Grant::parse_caps(&items.join(","))?;
    match grant.state_dirs.first() {
        Some((name, _)) => Err(ParseError::new(
            "capability for a dynamic tool",
            &format!("dir:{name}"),
            "workspace:read, workspace:write, commands, network:HOST, env:NAME or none",
        )),
        None => Ok(grant),
    }
}

/// What a person approved, as the bytes whose digest the trust store keeps.
pub(crate) fn approval_digest(meta: &Meta, source: &[u8]) -> Vec<u8> {
    let mut approved = serde_json::json!({
        "id": meta.id,
        "name": meta.name,
        "description": meta.description,
        "kind": meta.kind,
        "parameters": meta.parameters,
        "scope": meta.scope,
        "grant": meta.grant,
        "source": blake3::hash(source).to_hex().as_str(),
    });
    // Where a component came from, once there is a record of it.
    if let Some(from) = &meta.source {
        approved["from"] = from.as_str().into();
    }
    approved.to_string().into_bytes()
}

/// The capabilities a grant amounts to, for a runner's tool-info.
fn grant_capabilities(grant: &Grant) -> Vec<Capability> {
    let mut caps = Vec::new();
    match grant.workspace {
        Some(crate::types::grant::Access::Write) => caps.push(Capability::WorkspaceWrite),
        Some(crate::types::grant::Access::Read) => caps.push(Capability::WorkspaceRead),
        None => {}
    }
    if grant.commands {
        caps.push(Capability::Commands);
    }
    if !grant.network.is_empty() {
        caps.push(Capability::Network(grant.network.clone()));
    }
    caps.extend(grant.env.iter().cloned().map(Capability::Env));
    caps
}

/// The plugin a stored tool runs as, from its record (its `grant` is what
/// it gets) and its source. [`Store::load_into`] calls this only for a
/// record a person approved; a library embedding toolhost may build one
/// itself, as it may register any plugin with any grant.
pub fn plugin(runtime: &Runtime, entry: &Entry, source: &[u8]) -> Result<Plugin, DynamicError> {
    let meta = &entry.meta;
    let grant = parse_grant(meta.grant.as_deref().unwrap_or_default())?;
    let binding = |settings| Binding {
        meta: meta.clone(),
        settings,
        grant: grant.clone(),
    };
    match meta.kind {
        Kind::Javascript | Kind::Typescript | Kind::Command => {
            let text = std::str::from_utf8(source)
                .map_err(|_| DynamicError::Invalid("its source is not UTF-8 text".to_owned()))?;
            let mut settings = serde_json::Map::new();
            let runner = if meta.kind.is_script() {
                settings.insert(setting::SOURCE.into(), text.into());
                tool::JS_RUNTIME
            } else {
                let template: Vec<String> = serde_json::from_str(text).map_err(|e| {
                    DynamicError::Invalid(format!(
                        "its template is not a JSON array of strings: {e}"
                    ))
                })?;
                toolhost_shared::dynamic::check_template(&template, &meta.parameters)
                    .map_err(DynamicError::Invalid)?;
                settings.insert(setting::TEMPLATE.into(), template.into());
                tool::COMMAND_RUNNER
            };
            let builtin = crate::registry::runners()
                .iter()
                .find(|b| b.crate_name == runner)
                .ok_or_else(|| {
                    DynamicError::Invalid(format!("this build has no {runner} component"))
                })?;
            let info = ToolInfo {
                name: meta.name.clone(),
                description: meta.description.clone(),
                input_schema: {
                    let mut schema = meta.parameters.clone();
                    toolhost_shared::schema::make_portable(&mut schema);
                    schema
                },
                output_schema: None,
                sensitive: false,
                capabilities: grant_capabilities(&grant),
                version: "dynamic".to_owned(),
                title: crate::types::tool_info::title_from_name(&meta.name),
                idempotent: false,
            };
            Ok(Plugin::runner(runtime, builtin, info, binding(settings)))
        }
        Kind::Component => {
            let plugin = check_component(runtime, source.to_vec(), &entry.source_path())?;
            let mut info = plugin.info().clone();
            if info.title == crate::types::tool_info::title_from_name(&info.name) {
                info.title = crate::types::tool_info::title_from_name(&meta.name);
            }
            info.name = meta.name.clone();
            if !meta.description.trim().is_empty() {
                info.description = meta.description.clone();
            }
            Ok(plugin.into_dynamic(info, binding(serde_json::Map::new())))
        }
    }
}

/// The tools a stored tool runs as: [`plugin`]'s one, or a plain
/// component's one per exported function (`{name}_{function}`), each with
/// the tool's grant.
pub fn plugins(
    runtime: &Runtime,
    entry: &Entry,
    source: &[u8],
) -> Result<Vec<Plugin>, DynamicError> {
    if entry.meta.kind != Kind::Component {
        return plugin(runtime, entry, source).map(|p| vec![p]);
    }
    let meta = &entry.meta;
    let key = runtime.cache_key(&blake3::hash(source).to_hex());
    let label = entry.source_path().display().to_string();
    let (component, plain) = runtime
        .link_plain(&key, source, &label)
        .map_err(DynamicError::Invalid)?;
    let Some(pre) = plain else {
        return plugin(runtime, entry, source).map(|p| vec![p]);
    };
    let grant = parse_grant(meta.grant.as_deref().unwrap_or_default())?;
    let tools = crate::plain::tools(runtime, (&component, &pre), source, &meta.name)
        .map_err(DynamicError::Invalid)?;
    Ok(tools
        .into_iter()
        .map(|(info, call)| {
            let binding = Binding {
                meta: meta.clone(),
                settings: serde_json::Map::new(),
                grant: grant.clone(),
            };
            Plugin::forwarded(
                info.clone(),
                crate::plugin::Origin::Dynamic(meta.id.clone()),
                call,
            )
            .into_dynamic(info, binding)
        })
        .collect())
}

/// Load `wasm` and run the conformance checks of `toolhost check`: it
/// compiles and links against this host's world, `describe` answers with a
/// valid name and schemas, and the description says something. Returns the
/// plugin, or every problem found, one per line.
pub fn check_component(
    runtime: &Runtime,
    wasm: Vec<u8>,
    origin: &Path,
) -> Result<Plugin, DynamicError> {
    Plugin::checked(runtime, wasm, origin).map_err(DynamicError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    // An agent's tool is never granted one of the host's directories (the
    // memory or the dynamic store itself), whatever a grant says.
    #[test]
    fn a_dynamic_grant_refuses_host_directories() {
        let items = |s: &[&str]| s.iter().map(|i| (*i).to_owned()).collect::<Vec<_>>();
        for bad in ["dir:memory:read", "dir:dynamic:write", "dir:todo:write"] {
            let err = parse_grant(&items(&["workspace:read", bad])).unwrap_err();
            assert!(
                err.to_string()
                    .contains(bad.rsplitn(2, ':').last().unwrap()),
                "{err}"
            );
        }
        let ok = parse_grant(&items(&["workspace:read", "network:example.com"])).unwrap();
        assert!(ok.state_dirs.is_empty() && ok.directories.is_empty());
    }
}
