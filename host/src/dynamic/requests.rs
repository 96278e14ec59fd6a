//! `unload_component`: an agent asks a person to unload a tool it loaded
//! or created, or to take capabilities away from it. The request is kept
//! in the tool's record and shown on the review page; the tool keeps
//! running with its grant until a person decides: unload it (a
//! revocation), narrow its grant (an approval with less), or decline.

use super::decisions::{Decider, Decision, keep};
use super::{DynamicError, Entry, Request, Status, Store, parse_grant, write_meta};
use crate::plugin::{Forwarded, Origin, Plugin};
use crate::runtime::Runtime;
use crate::runtime::sandbox::{CallRequest, Outcome, PluginOutput};
use crate::types::result::{CallError, ErrorKind};
use crate::types::tool_info::{Capability, ToolInfo};
use serde_json::{Value, json};
use std::sync::Arc;
use toolhost_shared::contract::tool;
use toolhost_shared::dynamic::{Kind, STORE_DIR_NAME};

/// The `unload_component` tool over `store`.
pub(crate) fn unload_component(store: Store) -> Plugin {
    let info = ToolInfo {
        name: tool::UNLOAD_COMPONENT.to_owned(),
        description: "Ask a person to unload a tool that was loaded with load_component or made \
            with create_tool, or to take some of its capabilities away (`revoke`). It keeps \
            working as it is until they decide."
            .to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "tool": {"type": "string", "description": "The tool's name (one of a component's tools will do) or id."},
                "revoke": {"type": "array", "items": {"type": "string"}, "description": "Capabilities to take away (e.g. network:example.com); none: unload it."},
                "reason": {"type": "string"},
            },
            "required": ["tool"],
            "additionalProperties": false,
        }),
        output_schema: None,
        sensitive: false,
        capabilities: vec![Capability::Directory {
            name: STORE_DIR_NAME.to_owned(),
            writable: true,
        }],
        version: env!("CARGO_PKG_VERSION").to_owned(),
        title: "Ask to unload a tool".to_owned(),
        idempotent: true,
    };
    Plugin::forwarded(info, Origin::Builtin, Arc::new(Unloader { store }))
}

struct Unloader {
    store: Store,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    tool: String,
    #[serde(default)]
    revoke: Vec<String>,
    #[serde(default)]
    reason: Option<String>,
}

fn invalid(message: impl Into<String>) -> CallError {
    CallError::new(ErrorKind::InvalidInput, message)
}

impl Forwarded for Unloader {
    fn call(&self, runtime: &Arc<Runtime>, request: &CallRequest<'_>) -> Outcome {
        let args: Args = serde_json::from_str(request.args)
            .map_err(|e| invalid(format!("the arguments do not fit the schema: {e}")))?;
        let agent = request.context.agent.as_deref();
        let entry = self.find(runtime, args.tool.trim(), agent).ok_or_else(|| {
            invalid(format!(
                "no tool loaded with load_component or made with create_tool is named `{}`; \
                     a person configures the others",
                args.tool.trim()
            ))
        })?;
        let granted = entry.meta.grant.clone().unwrap_or_default();
        let revoke: Vec<String> = args.revoke.iter().map(|c| c.trim().to_owned()).collect();
        parse_grant(&revoke).map_err(|e| invalid(e.to_string()))?;
        if let Some(missing) = revoke.iter().find(|c| !granted.contains(c)) {
            return Err(invalid(format!(
                "`{}` is not granted `{missing}`; its grant: {}",
                entry.meta.name,
                super::caps_text(&granted)
            )));
        }
        let asked = Request {
            revoke,
            reason: args.reason.map(|r| r.trim().chars().take(500).collect()),
            by: agent.map(str::to_owned),
            at: super::now(),
        };
        let entry = self
            .store
            .ask(&entry.meta.id, asked)
            .map_err(|e| CallError::new(ErrorKind::Failed, e.to_string()))?;
        let what = match entry.meta.request.as_ref().map(|r| r.revoke.as_slice()) {
            Some([]) | None => "unload it".to_owned(),
            Some(caps) => format!("take away {}", caps.join(", ")),
        };
        Ok(PluginOutput {
            content: format!(
                "Asked a person to {what} for `{}` (id {}). It keeps working as it is until they \
                 decide on the review page (or with `toolhost dynamic`).",
                entry.meta.name, entry.meta.id
            ),
            structured: Some(json!({
                "id": entry.meta.id, "name": entry.meta.name, "request": entry.meta.request,
            })),
            changed_paths: Vec::new(),
        })
    }

    fn dry_run(&self, args: &Value) -> String {
        format!(
            "would ask a person to unload {} or narrow its grant",
            args["tool"]
        )
    }
}

impl Unloader {
    /// The approved tool `name` names, as `agent` may see it: by id, by
    /// record name, or one of a plain component's tools.
    fn find(&self, runtime: &Runtime, name: &str, agent: Option<&str>) -> Option<Entry> {
        let visible =
            |e: &&Entry| e.meta.status == Status::Approved && e.meta.visible_to(agent, None);
        let entries = self.store.list().0;
        if let Some(e) = entries
            .iter()
            .filter(visible)
            .find(|e| e.meta.id == name || e.meta.name == name)
        {
            return Some(e.clone());
        }
        // A plain component's tool: `{name}_{function}`, confirmed by
        // what the component would load as.
        entries
            .iter()
            .filter(visible)
            .filter(|e| e.meta.kind == Kind::Component)
            .filter(|e| name.starts_with(&format!("{}_", e.meta.name)))
            .find(|e| {
                std::fs::read(e.source_path()).is_ok_and(|wasm| {
                    super::inspect(runtime, &wasm, &e.meta.name)
                        .is_ok_and(|i| i.tools.iter().any(|t| t.name == name))
                })
            })
            .cloned()
    }
}

impl Store {
    /// Keep `request` in the record of the approved tool `id` (replacing
    /// an earlier one) for a person to decide.
    pub fn ask(&self, id: &str, request: Request) -> Result<Entry, DynamicError> {
        let mut entry = self.find(id)?;
        if entry.meta.status != Status::Approved {
            return Err(DynamicError::Refused(format!(
                "`{}` is not approved: nothing of it is loaded",
                entry.meta.id
            )));
        }
        entry.meta.request = Some(request);
        write_meta(&entry)?;
        Ok(entry)
    }

    /// Decline the request kept for `id_or_name`, on the record as
    /// `decider`'s: the tool stays as it is.
    pub fn decline_as(
        &self,
        id_or_name: &str,
        decider: &Decider,
    ) -> Result<(Entry, Decision), DynamicError> {
        let before = self.find(id_or_name)?;
        if before.meta.request.is_none() {
            return Err(DynamicError::Refused(format!(
                "nothing was asked about `{}`",
                before.meta.id
            )));
        }
        let decision = Decision::new("decline", &before, &before, decider);
        let mut after = before;
        after.meta.request = None;
        write_meta(&after)?;
        keep(&after, &decision);
        Ok((after, decision))
    }
}
