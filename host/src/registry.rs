//! The registry: tool name → loaded [`Plugin`], sorted by name.

use crate::plugin::{Origin, Plugin, PluginSource};
use crate::runtime::CheckReport;
use crate::runtime::{Runtime, RuntimeError};
use crate::types::tool_info::Problem;
use crate::validate::ArgsSchema;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The built-in plugins embedded in this binary.
mod builtins {
    use crate::plugin::{Builtin, Recorded};
    use crate::runtime::bytes::Base;
    include!(concat!(env!("OUT_DIR"), "/builtins.rs"));
}

/// The built-in plugins embedded in this binary, in crate-name order.
pub fn builtins() -> &'static [crate::plugin::Builtin] {
    builtins::BUILTINS
}

/// The embedded runner components dynamic tools run in (`js_runtime`,
/// `command_runner`); they are not tools themselves.
pub fn runners() -> &'static [crate::plugin::Builtin] {
    builtins::RUNNERS
}

/// Have the kernel reclaim the pages of every embedded component's packed
/// bytes ([`crate::runtime::reclaim`]): read only to compile, they
/// otherwise stay resident once read (3–4 MB after a first start has
/// compiled every built-in ahead of use).
pub(crate) fn reclaim_embedded() {
    use crate::runtime::reclaim;
    for builtin in builtins().iter().chain(runners()) {
        reclaim(builtin.packed);
    }
    reclaim(builtins::BASE.packed);
}

/// Why a registry operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two plugins claim one name.
    #[error("{}", duplicate_message(.name, .existing, .new))]
    Duplicate {
        /// The contested name.
        name: String,
        /// The plugin already registered.
        existing: Origin,
        /// The plugin refused.
        new: Origin,
    },
    /// No tool has this name.
    #[error("{}", not_found_message(.name, .near))]
    NotFound {
        /// The name asked for.
        name: String,
        /// Registered names that look alike, best first.
        near: Vec<String>,
    },
    /// The tool is in use and cannot be changed now.
    #[error("the tool `{name}` is in use by a running call and cannot be changed now")]
    InUse {
        /// The tool.
        name: String,
    },
}

fn duplicate_message(name: &str, existing: &Origin, new: &Origin) -> String {
    if *existing == Origin::Builtin && *new != Origin::Builtin {
        return format!(
            "`{name}` is the name of a built-in tool, so the one from {new} was not added: \
             rename it, e.g. `{}`",
            builtin_rename(name)
        );
    }
    format!(
        "a tool named `{name}` is already registered (from {existing}); the one from {new} was not added — rename it or remove one of them"
    )
}

/// A name to suggest instead of the built-in's `name`.
fn builtin_rename(name: &str) -> String {
    let renamed = format!("my_{name}");
    if toolhost_shared::dynamic::is_snake_case(&renamed) {
        renamed
    } else {
        "my_tool".to_owned()
    }
}

/// If `name` is a built-in tool's, why a plugin may not take it, with a
/// name to use instead: the built-in keeps its name (a plugin file of that
/// name is not loaded).
///
/// ```
/// assert!(toolhost::builtin_name_taken("read_file").unwrap().contains("`my_read_file`"));
/// assert!(toolhost::builtin_name_taken("csv_stats").is_none());
/// ```
pub fn builtin_name_taken(name: &str) -> Option<String> {
    taken_by_builtin(name)
        .map(|why| format!("{why}; rename the tool, e.g. `{}`", builtin_rename(name)))
}

/// `toolhost check`'s word on the name of the component `wasm` (its
/// `report`): one taking a built-in tool's name, unless it is that
/// built-in, is an error, with a name to use instead.
pub fn check_builtin_name(report: &mut CheckReport, wasm: &[u8]) {
    let Some(name) = report.info.as_ref().map(|i| i.name.clone()) else {
        return;
    };
    let hash = blake3::hash(wasm).to_hex();
    if builtins().iter().any(|b| b.hash == hash.as_str()) {
        return;
    }
    if let Some(why) = taken_by_builtin(&name) {
        let fix = format!("rename the tool, e.g. `{}`", builtin_rename(&name));
        report.problems.push(Problem::error("name", why, fix));
    }
}

/// Why a plugin may not take `name`, if it is a built-in tool's.
fn taken_by_builtin(name: &str) -> Option<String> {
    let taken = builtins()
        .iter()
        .any(|b| b.recorded.as_ref().map_or(b.crate_name, |r| r.name) == name);
    taken.then(|| {
        format!(
            "`{name}` is the name of a built-in tool, which keeps it: a plugin of that name is \
             not loaded"
        )
    })
}

fn not_found_message(name: &str, near: &[String]) -> String {
    let mut msg = format!("no tool named `{name}`");
    if !near.is_empty() {
        let list: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
        msg.push_str(&format!("; did you mean {}?", list.join(" or ")));
    }
    msg
}

/// A plugin file that could not be added, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

/// Tool name → plugin, with each tool's schemas compiled once.
#[derive(Debug, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<Plugin>>,
    /// Each tool's compiled schemas, or why they do not compile; compiled
    /// on the tool's first call (a one-shot `toolhost call` needs one
    /// tool's, not all).
    schemas: HashMap<String, Arc<Schemas>>,
}

/// A tool's compiled schemas, each compiled when first asked for.
#[derive(Debug, Default)]
struct Schemas {
    input: OnceLock<Result<ArgsSchema, String>>,
    /// None for a tool without an output schema.
    output: OnceLock<Option<Result<ArgsSchema, String>>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a plugin. A name already taken is an error unless `allow_override`.
    pub fn register(&mut self, plugin: Plugin, allow_override: bool) -> Result<(), RegistryError> {
        if !allow_override && let Some(existing) = self.tools.get(plugin.name()) {
            return Err(RegistryError::Duplicate {
                name: plugin.name().to_owned(),
                existing: existing.origin().clone(),
                new: plugin.origin().clone(),
            });
        }
        self.schemas
            .insert(plugin.name().to_owned(), Arc::default());
        self.tools
            .insert(plugin.name().to_owned(), Arc::new(plugin));
        Ok(())
    }

    /// A copy holding only the tools `keep` keeps (nothing is compiled
    /// again).
    #[cfg_attr(
        not(feature = "mcp"),
        expect(dead_code, reason = "remote MCP servers come with the `mcp` feature")
    )]
    pub(crate) fn retained(&self, keep: impl Fn(&Plugin) -> bool) -> Self {
        let tools: BTreeMap<String, Arc<Plugin>> = self
            .tools
            .iter()
            .filter(|(_, p)| keep(p))
            .map(|(n, p)| (n.clone(), Arc::clone(p)))
            .collect();
        let schemas = tools
            .keys()
            .filter_map(|n| Some((n.clone(), Arc::clone(self.schemas.get(n)?))))
            .collect();
        Self { tools, schemas }
    }

    /// The compiled input schema of `name` (step 2 of the pipeline).
    pub(crate) fn args_schema(&self, name: &str) -> Option<&Result<ArgsSchema, String>> {
        let tool = self.tools.get(name)?;
        let schema = self.schemas.get(name)?;
        Some(
            schema
                .input
                .get_or_init(|| ArgsSchema::compile(&tool.info().input_schema)),
        )
    }

    /// The compiled output schema of `name` (steps 2 and 8 of the
    /// pipeline); None for an unknown tool or one without an output schema.
    pub(crate) fn output_schema(&self, name: &str) -> Option<&Result<ArgsSchema, String>> {
        let tool = self.tools.get(name)?;
        let schema = self.schemas.get(name)?;
        schema
            .output
            .get_or_init(|| {
                tool.info()
                    .output_schema
                    .as_ref()
                    .map(ArgsSchema::compile_output)
            })
            .as_ref()
    }

    /// The tool with this name; the error lists similar names.
    pub fn get(&self, name: &str) -> Result<&Arc<Plugin>, RegistryError> {
        self.tools.get(name).ok_or_else(|| RegistryError::NotFound {
            name: name.to_owned(),
            near: self.near(name),
        })
    }

    /// True if a tool has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Every tool, sorted by name.
    pub fn list(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.tools.values()
    }

    /// How many tools are registered.
    pub fn count(&self) -> usize {
        self.tools.len()
    }

    /// The named tools, in the order given; an unknown name is an error.
    pub fn filter_by_names<S: AsRef<str>>(
        &self,
        names: &[S],
    ) -> Result<Vec<&Arc<Plugin>>, RegistryError> {
        names.iter().map(|n| self.get(n.as_ref())).collect()
    }

    /// Replace the description `name` shows in schemas and listings (a
    /// prompt override from the configuration). Call it while building the
    /// registry: a plugin already shared with a running call is refused.
    pub fn set_description(
        &mut self,
        name: &str,
        description: impl Into<String>,
    ) -> Result<(), RegistryError> {
        let near = self.near(name);
        let plugin = self
            .tools
            .get_mut(name)
            .ok_or_else(|| RegistryError::NotFound {
                name: name.to_owned(),
                near,
            })?;
        match Arc::get_mut(plugin) {
            Some(plugin) => {
                plugin.set_description(description.into());
                Ok(())
            }
            None => Err(RegistryError::InUse {
                name: name.to_owned(),
            }),
        }
    }

    /// Registered names within a small edit distance of `name`, best first.
    pub(crate) fn near(&self, name: &str) -> Vec<String> {
        near_names(name, self.tools.keys())
    }

    /// Load and add every built-in plugin.
    pub fn load_builtins(&mut self, runtime: &Runtime) -> Result<(), RuntimeError> {
        for builtin in builtins() {
            let plugin = Plugin::load(runtime, PluginSource::Builtin(builtin))?;
            self.register(plugin, false)
                .map_err(|e| RuntimeError::Load {
                    origin: format!("built-in {}", builtin.crate_name),
                    reason: e.to_string(),
                })?;
        }
        Ok(())
    }

    /// Load every `*.wasm` file in `dir` (not recursive), in name order. Files
    /// that fail to load or clash with a registered name are skipped and
    /// reported; the others are added.
    pub fn load_dir(&mut self, runtime: &Runtime, dir: &Path) -> Vec<LoadProblem> {
        self.load_dir_as(runtime, dir, true).0
    }

    /// [`Registry::load_dir`] without compiling: files the compile cache
    /// does not describe yet are left out and returned (second), to load
    /// later with [`Registry::load_dir`].
    pub fn load_dir_known(
        &mut self,
        runtime: &Runtime,
        dir: &Path,
    ) -> (Vec<LoadProblem>, Vec<PathBuf>) {
        self.load_dir_as(runtime, dir, false)
    }

    fn load_dir_as(
        &mut self,
        runtime: &Runtime,
        dir: &Path,
        compile: bool,
    ) -> (Vec<LoadProblem>, Vec<PathBuf>) {
        let mut problems = Vec::new();
        let mut later = Vec::new();
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) => {
                problems.push(LoadProblem {
                    path: dir.to_owned(),
                    reason: format!("cannot read the plugin directory: {err}"),
                });
                return (problems, later);
            }
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
            .collect();
        files.sort();
        for path in files {
            let added = Plugin::load_file_as(runtime, &path, compile)
                .map_err(|e| match e {
                    RuntimeError::Load { reason, .. } => reason,
                    other => other.to_string(),
                })
                .and_then(|plugins| match plugins {
                    Some(plugins) => plugins
                        .into_iter()
                        .try_for_each(|plugin| self.register(plugin, false))
                        .map(|()| true)
                        .map_err(|e| e.to_string()),
                    None => Ok(false),
                });
            match added {
                Ok(true) => {}
                Ok(false) => later.push(path),
                Err(reason) => problems.push(LoadProblem { path, reason }),
            }
        }
        (problems, later)
    }
}

/// Up to three of `names` that look like `name` (a typo, a part of it),
/// closest first.
pub(crate) fn near_names<'a>(name: &str, names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut scored: Vec<(f64, &String)> = names
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, k)| *score > 0.8 || k.contains(name) || name.contains(k.as_str()))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(3).map(|(_, k)| k.clone()).collect()
}

#[cfg(test)]
mod tests {
    use crate::types::tool_info::ToolInfo;

    /// Reclaiming changes no byte: of the binary's embedded components
    /// (read again from the binary) or of anonymous memory (which has no
    /// file to be read from).
    #[test]
    fn reclaimed_bytes_read_the_same() {
        let heap: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
        let copy = heap.clone();
        let reclaimed = crate::runtime::reclaim(&heap);
        assert!(reclaimed, "MADV_PAGEOUT refused (it needs Linux 5.4)");
        assert_eq!(heap, copy);
        let builtin = &super::builtins()[0];
        let before = builtin.wasm().unwrap();
        super::reclaim_embedded();
        assert_eq!(builtin.wasm().unwrap(), before);
    }

    // A built-in's record is read on its first use (plugin.rs `Described`);
    // none may fail there, and each is recorded under its tool's name.
    #[test]
    fn every_recorded_description_reads_under_its_name() {
        for builtin in super::builtins() {
            let crate_name = builtin.crate_name;
            let recorded = builtin.recorded.unwrap_or_else(|| {
                panic!("host/builtins.json holds no record of {crate_name} (TOOLHOST_BLESS=1, see cold_start)")
            });
            let info: ToolInfo = serde_json::from_str(recorded.json)
                .unwrap_or_else(|e| panic!("the record of {crate_name} does not read: {e}"));
            assert_eq!(recorded.name, info.name, "{crate_name}");
            assert!(info.input_schema.is_object(), "{crate_name}");
        }
        assert!(
            super::runners().iter().all(|r| r.recorded.is_none()),
            "runners are not tools: nothing is recorded for them"
        );
    }
}
