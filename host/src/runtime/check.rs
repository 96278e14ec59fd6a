//! `toolhost check` of one component: compiled, linked and described in
//! an empty sandbox, then every rule of the tool interface checked.

use super::*;

impl Runtime {
    /// Compile, link and describe `wasm`, then run every check of
    /// `toolhost check` on what it says it is. Returns its cache key, its
    /// tool-info and the linked component, or every error found, one per
    /// line.
    pub(crate) fn check_component(
        &self,
        wasm: &[u8],
    ) -> Result<(String, ToolInfo, ToolPluginPre<CallState>), String> {
        let (checked, problems) = self.check_wasm(wasm);
        let errors: Vec<String> = problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .map(ToString::to_string)
            .collect();
        match checked {
            Some(found) if errors.is_empty() => Ok(found),
            _ => Err(errors.join("\n")),
        }
    }

    /// Every problem of `wasm` (errors and warnings) as `toolhost check`
    /// reports them, and what it is when it loads.
    #[expect(clippy::type_complexity, reason = "crate-internal plumbing")]
    fn check_wasm(
        &self,
        wasm: &[u8],
    ) -> (
        Option<(String, ToolInfo, ToolPluginPre<CallState>)>,
        Vec<Problem>,
    ) {
        if wasm.len() as u64 > MAX_COMPONENT_BYTES {
            let problem = Problem::component(
                format!(
                    "the component is {} bytes; the limit is {MAX_COMPONENT_BYTES}",
                    wasm.len()
                ),
                "make it smaller: build in release mode and strip debug information",
            );
            return (None, vec![problem]);
        }
        let key = self.cache.key(&blake3::hash(wasm).to_hex());
        let bytes = WasmBytes::Plain(wasm);
        let pre = match self.link(&key, bytes, Linking::Owned, "the component") {
            Ok(pre) => pre,
            Err(e) => {
                let fix = "build it for wasm32-wasip2 against the `toolhost:plugin@0.1.0` WIT this host ships (the SDKs do)";
                return (None, vec![Problem::component(e, fix)]);
            }
        };
        // A component described before is checked from the cache's record
        // of its answer (one that loaded), not instantiated again.
        if let Some(info) = self.cached_info(&key) {
            let problems = problems_of(&(&info).into());
            return (Some((key, info, pre)), problems);
        }
        let (raw, env) = match sandbox::describe(self, &pre) {
            Ok(described) => described,
            Err(e) => {
                let fix = "`describe` must return without touching files, commands or the network";
                return (None, vec![Problem::component(e, fix)]);
            }
        };
        let mut problems = problems_of(&raw);
        problems.extend(env_problems(&env));
        let checked = ToolInfo::from_wit(raw).ok().map(|info| {
            let info = info.with_env(env);
            self.cache.store_info(&key, &info);
            (key, info, pre)
        });
        (checked, problems)
    }

    /// `toolhost check` of one component: what it is (when it loads) and
    /// every problem found, errors and warnings, each with what to fix.
    pub fn check_report(&self, wasm: &[u8]) -> CheckReport {
        let (checked, problems) = self.check_wasm(wasm);
        CheckReport {
            info: checked.map(|(_, info, _)| info),
            plain: Vec::new(),
            problems,
        }
    }
}

/// What `toolhost check` found in one component.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// What the component says it is, when its description could be read.
    pub info: Option<ToolInfo>,
    /// A plain WIT component's tools (one per exported function, their
    /// schemas derived from its types), when it is one.
    pub plain: Vec<ToolInfo>,
    /// Errors and warnings, in the order found.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// No error (warnings allowed): the component loads.
    pub fn conforms(&self) -> bool {
        (self.info.is_some() || !self.plain.is_empty())
            && self.problems.iter().all(|p| p.severity != Severity::Error)
    }
}
