//! A service offered as a tool of its own name ([`Service::as_tool`]): no
//! component, the pipeline around it as for any tool (lookup, arguments
//! against its input schema, confirmation, audit), and the run step
//! waiting for its handler within the call's deadline and cancellation.

use crate::plugin::{Forwarded, Origin, Plugin};
use crate::runtime::Runtime;
use crate::runtime::sandbox::{CallRequest, Outcome, PluginOutput};
use crate::services::{Service, ServiceCall, ServiceError};
use crate::types::context::CancelToken;
use crate::types::result::{CallError, ErrorKind};
use crate::types::tool_info::{Capability, ToolInfo};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tool `service` is offered as, if it is.
pub(crate) fn tool_of(service: &Arc<Service>) -> Option<Plugin> {
    let shown = service.tool()?;
    let info = ToolInfo {
        name: service.name().to_owned(),
        description: service.description().to_owned(),
        input_schema: service.input_schema().clone(),
        output_schema: service.output_schema().cloned(),
        sensitive: true,
        capabilities: vec![Capability::Service(service.name().to_owned())],
        version: env!("CARGO_PKG_VERSION").to_owned(),
        title: shown.title.clone(),
        idempotent: false,
    };
    Some(Plugin::forwarded(
        info,
        Origin::Builtin,
        Arc::new(ServiceTool(Arc::clone(service))),
    ))
}

struct ServiceTool(Arc<Service>);

impl Forwarded for ServiceTool {
    fn call(&self, _: &Arc<Runtime>, request: &CallRequest<'_>) -> Outcome {
        let name = self.0.name();
        if !request.grant.services.iter().any(|s| s == name) {
            return Err(CallError::new(
                ErrorKind::Denied,
                format!("this call was not granted the service `{name}`; nothing was run"),
            ));
        }
        let services = request.services.ok_or_else(|| {
            CallError::new(
                ErrorKind::Denied,
                format!("this host offers no service `{name}`"),
            )
        })?;
        let input: serde_json::Value = serde_json::from_str(request.args)
            .map_err(|e| CallError::new(ErrorKind::InvalidInput, e.to_string()))?;
        self.0
            .check(&input)
            .map_err(|e| CallError::new(ErrorKind::InvalidInput, e.to_string()))?;
        let runtime = services
            .runtime()
            .map_err(|e| CallError::new(ErrorKind::Failed, e))?;
        let cancel = CancelToken::new();
        let task = runtime.spawn(self.0.start(ServiceCall {
            input,
            context: request.context.clone(),
            tool: name.to_owned(),
            cancel: cancel.clone(),
        }));
        let until = Instant::now() + request.limits.timeout;
        let stopped = |kind: ErrorKind, why: &str| {
            cancel.cancel();
            task.abort();
            Err(CallError::new(kind, format!("`{name}` {why}")))
        };
        while !task.is_finished() {
            if request.cancel.is_some_and(CancelToken::is_cancelled) {
                return stopped(ErrorKind::Cancelled, "was cancelled");
            }
            if Instant::now() >= until {
                return stopped(
                    ErrorKind::Timeout,
                    &format!(
                        "ran past its deadline of {} s and was stopped",
                        request.limits.timeout.as_secs()
                    ),
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let answer = runtime.block_on(task).map_err(|e| {
            CallError::new(
                ErrorKind::Failed,
                if e.is_panic() {
                    format!("`{name}` failed unexpectedly (its handler panicked)")
                } else {
                    format!("`{name}` was stopped")
                },
            )
        })?;
        match answer {
            Ok(value) => Ok(PluginOutput {
                content: match value.get("text").and_then(serde_json::Value::as_str) {
                    Some(text) => text.to_owned(),
                    None => value.to_string(),
                },
                structured: Some(value),
                changed_paths: Vec::new(),
            }),
            Err(ServiceError::Denied(m)) => Err(CallError::new(ErrorKind::Denied, m)),
            Err(ServiceError::Invalid(m)) => Err(CallError::new(ErrorKind::InvalidInput, m)),
            Err(ServiceError::Failed(m)) => Err(CallError::new(ErrorKind::Failed, m)),
        }
    }

    fn dry_run(&self, args: &serde_json::Value) -> String {
        format!(
            "dry run: `{}` would be asked with {args}; nothing was sent",
            self.0.name()
        )
    }
}
