//! What one loop offers and shows the model, when it is not the executor's
//! whole view: a bot's own tools, prompt mode and persona (`[bots.NAME]`),
//! a sub-agent's tools without the ones that would go deeper, a
//! delegation's target without delegation tools.

use super::ToolLoop;
use crate::guidance::PromptMode;
use std::path::PathBuf;

/// How a loop differs from the executor's view. Each part narrows; none
/// widens what the executor shows the caller's agent.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    /// Only these tools (of those the executor shows), if set.
    pub tools: Option<Vec<String>>,
    /// Never these tools.
    pub without: Vec<String>,
    /// The prompt mode (its preamble, guidance and tools) instead of the
    /// executor's.
    pub prompt_mode: Option<PromptMode>,
    /// The soul directory whose persona the system prompt shows instead
    /// of the executor's.
    pub soul_dir: Option<PathBuf>,
}

impl ToolLoop<'_> {
    /// Narrow what this loop offers and shows ([`Shape`]).
    pub fn with_shape(mut self, shape: Shape) -> Self {
        self.shape = shape;
        self
    }

    /// The prompt mode this loop runs in.
    pub(super) fn mode(&self) -> PromptMode {
        self.shape
            .prompt_mode
            .unwrap_or_else(|| self.executor.prompt_mode())
    }

    /// The names of the tools this loop offers, sorted.
    pub(super) fn offered(&self) -> Vec<String> {
        let mode = self.mode();
        self.executor
            .tools_for(self.context.agent.as_deref())
            .iter()
            .map(|p| p.name().to_owned())
            .filter(|name| {
                mode.offers(name)
                    && !self.shape.without.contains(name)
                    && self
                        .shape
                        .tools
                        .as_ref()
                        .is_none_or(|only| only.contains(name))
            })
            .collect()
    }

    /// The persona block of the system prompt.
    pub(super) fn persona(&self) -> Option<String> {
        match &self.shape.soul_dir {
            Some(dir) => {
                crate::executor::persona::prompt(crate::executor::persona::persona_in(dir))
            }
            None => self.executor.persona_prompt(),
        }
    }

    /// The guidance about `offered` in this loop's mode.
    pub(super) fn guidance(&self, offered: &[String]) -> String {
        let names: Vec<&str> = offered.iter().map(String::as_str).collect();
        self.executor.instructions_in(&names, self.mode())
    }
}
