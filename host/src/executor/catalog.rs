//! The executor's tools: a registry snapshot that a reload swaps whole,
//! description overrides that survive reloads, the active profile's view
//! (lookup, listing, schemas), and change notifications.

use super::Executor;
use crate::plugin::Plugin;
use crate::registry::{LoadProblem, Registry, RegistryError};
use crate::runtime::RuntimeError;
use crate::schema::{SchemaFormat, schemas_of, tool_schema};
use std::path::PathBuf;
use std::sync::{Arc, PoisonError};

impl Executor {
    /// Replace the description `tool` shows (a prompt override).
    pub fn with_description(
        mut self,
        tool: &str,
        description: impl Into<String>,
    ) -> Result<Self, RegistryError> {
        let description = description.into();
        let registry = self
            .registry
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        match Arc::get_mut(registry) {
            Some(registry) => registry.set_description(tool, description.clone())?,
            None => {
                return Err(RegistryError::InUse {
                    name: tool.to_owned(),
                });
            }
        }
        self.descriptions.insert(tool.to_owned(), description);
        Ok(self)
    }

    /// Remember the third-party plugin directories, so
    /// [`Executor::reload_plugins`] loads them again.
    pub fn with_plugin_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.plugin_dirs = dirs;
        self
    }

    /// A snapshot of the registered tools (a reload replaces it; calls
    /// already running keep theirs).
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Replace the registered tools (the configured descriptions are applied
    /// to it). Returns true, and notifies [`Executor::changes`], when what
    /// callers can see changed: names, descriptions, schemas or versions.
    pub fn replace_registry(&self, mut registry: Registry) -> bool {
        for (tool, text) in &self.descriptions {
            // A tool that went away keeps no override; nothing to do.
            let _ = registry.set_description(tool, text.clone());
        }
        let visible = |r: &Registry| -> Vec<serde_json::Value> {
            r.list()
                .filter(|p| self.shows(p.name()))
                .map(|p| tool_schema(p.info(), SchemaFormat::Mcp))
                .collect()
        };
        let mut slot = self
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let changed = visible(&slot) != visible(&registry);
        *slot = Arc::new(registry);
        drop(slot);
        if changed {
            self.changes.send_modify(|n| *n += 1);
        }
        changed
    }

    /// Load the built-ins and the plugin directories again and swap them in
    /// (see [`Executor::replace_registry`]). Returns whether the visible
    /// tools changed and the files that were skipped.
    pub fn reload_plugins(&self) -> Result<(bool, Vec<LoadProblem>), RuntimeError> {
        let mut registry = Registry::new();
        registry.load_builtins(&self.runtime)?;
        let mut problems = Vec::new();
        for dir in &self.plugin_dirs {
            problems.extend(registry.load_dir(&self.runtime, dir));
        }
        Ok((self.replace_registry(registry), problems))
    }

    /// The plugin directories given to [`Executor::with_plugin_dirs`].
    pub fn plugin_dirs(&self) -> &[PathBuf] {
        &self.plugin_dirs
    }

    /// A receiver that sees a new value each time the visible tools change.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The tool `name` if the active profile shows it; the error lists
    /// near names.
    pub fn lookup(&self, name: &str) -> Result<Arc<Plugin>, RegistryError> {
        self.lookup_in(&self.registry(), name)
    }

    pub(super) fn lookup_in(
        &self,
        registry: &Registry,
        name: &str,
    ) -> Result<Arc<Plugin>, RegistryError> {
        match registry.get(name) {
            Ok(plugin) if self.shows(name) => Ok(Arc::clone(plugin)),
            _ => Err(RegistryError::NotFound {
                name: name.to_owned(),
                near: registry
                    .near(name)
                    .into_iter()
                    .filter(|n| self.shows(n))
                    .collect(),
            }),
        }
    }

    /// Whether the active profile (if any) shows `tool`.
    pub(super) fn shows(&self, tool: &str) -> bool {
        self.profile.as_ref().is_none_or(|p| p.shows(tool))
    }

    /// The tools the active profile shows, sorted by name.
    pub fn tools(&self) -> Vec<Arc<Plugin>> {
        self.registry()
            .list()
            .filter(|p| self.shows(p.name()))
            .cloned()
            .collect()
    }

    /// Schemas in `format` for the visible tools named in `allowed`, or for
    /// every visible tool; an unknown or hidden name is an error.
    pub fn schemas<S: AsRef<str>>(
        &self,
        allowed: Option<&[S]>,
        format: SchemaFormat,
    ) -> Result<Vec<serde_json::Value>, RegistryError> {
        let plugins = match allowed {
            Some(names) => names
                .iter()
                .map(|n| self.lookup(n.as_ref()))
                .collect::<Result<Vec<_>, _>>()?,
            None => self.tools(),
        };
        Ok(schemas_of(&plugins, format))
    }
}
