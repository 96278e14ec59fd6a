//! Services of the application embedding toolhost (PicoClaw's `message`
//! and `spawn`, the TypeScript bot framework's `delegate_to_bot`, `cron`, ...): what they do is
//! the embedder's; tools reach them through the WIT `services` import, JSON
//! in and out, and only the ones they declare (`service:NAME`) and are
//! granted. The embedder registers each with [`Services::register`] and
//! hands the set to the executor (`Executor::with_services`).
//!
//! A handler is async and gets the call's context (call id, session,
//! agent, channel, chat: the host sets the call id and the session; an MCP
//! client names its own agent, so a handler that authorises by agent must
//! know its clients). It runs as a task on the embedder's tokio runtime
//! (or toolhost's own), and the call waits for it bounded by its deadline
//! and cancellation like any other wait of a guest on the host: past them
//! the task is aborted. A handler must not block its thread (use
//! `spawn_blocking` for blocking work); a panic in it is a `failed` answer.

use crate::types::context::CallContext;
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// One call of a service, as its handler receives it.
#[derive(Debug, Clone)]
pub struct ServiceCall {
    /// The input, checked against the service's input schema.
    pub input: Value,
    /// The tool call it comes from: its id, agent, session, channel, chat.
    pub context: CallContext,
    /// The tool that called.
    pub tool: String,
    /// Cancelled when the call ends early (its deadline, the caller
    /// cancelling): a handler doing blocking work stops when it is.
    pub cancel: crate::types::context::CancelToken,
}

/// Why a service call did not succeed; the tool receives it as the WIT
/// `service-error` of the same name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// The service refused (a policy of the embedder).
    #[error("{0}")]
    Denied(String),
    /// The input is not what the service takes.
    #[error("{0}")]
    Invalid(String),
    /// The service failed.
    #[error("{0}")]
    Failed(String),
}

/// What a handler returns.
pub type ServiceFuture = Pin<Box<dyn Future<Output = Result<Value, ServiceError>> + Send>>;

type Handler = Arc<dyn Fn(ServiceCall) -> ServiceFuture + Send + Sync>;

/// A service an embedder offers.
#[derive(Clone)]
pub struct Service {
    name: String,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    /// The input schema, compiled once (the checker of tool arguments).
    checker: Arc<crate::validate::ArgsSchema>,
    handler: Handler,
    /// Offered as a tool of its own name too ([`Service::as_tool`]).
    tool: Option<AsTool>,
    /// The deadline of a call that reaches it ([`Service::with_timeout`]).
    timeout: Option<std::time::Duration>,
}

/// How a service is shown as a tool.
#[derive(Debug, Clone)]
pub(crate) struct AsTool {
    pub(crate) title: String,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// The service `name` (lowercase letters, digits, `_`, `-`, `.`),
    /// described for people and models, taking input valid against
    /// `input_schema`, answered by `handler`.
    ///
    /// ```
    /// use toolhost::services::{Service, ServiceCall};
    /// use serde_json::json;
    /// let echo = Service::new(
    ///     "echo",
    ///     "Answer with the input.",
    ///     json!({"type": "object"}),
    ///     |call: ServiceCall| async move { Ok(call.input) },
    /// )
    /// .unwrap();
    /// assert_eq!(echo.name(), "echo");
    /// assert!(Service::new("Bad Name", "x", json!({}), |c: ServiceCall| async move { Ok(c.input) }).is_err());
    /// ```
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Result<Self, String>
    where
        F: Fn(ServiceCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ServiceError>> + Send + 'static,
    {
        let name = name.into();
        if !toolhost_shared::grant::is_service_name(&name) {
            return Err(format!(
                "`{name}` cannot name a service: use lowercase letters, digits, `_`, `-` and `.`, \
                 starting with a letter"
            ));
        }
        let checker = crate::validate::ArgsSchema::compile(&input_schema)
            .map_err(|e| format!("service `{name}`: its input schema is not valid: {e}"))?;
        Ok(Self {
            name,
            description: description.into(),
            input_schema,
            output_schema: None,
            checker: Arc::new(checker),
            handler: Arc::new(move |call| Box::pin(handler(call))),
            tool: None,
            timeout: None,
        })
    }

    /// Offer it to models as a tool of its own name as well (its
    /// description, its input schema, the capability `service:NAME`),
    /// through the pipeline like any tool. Like every call granted a
    /// service, it is sensitive: asked about first in confirm-sensitive
    /// mode.
    pub fn as_tool(mut self, title: impl Into<String>) -> Self {
        self.tool = Some(AsTool {
            title: title.into(),
        });
        self
    }

    /// A call of any tool granted this service (its own tool too) gets
    /// `timeout` as its deadline when the caller sets none: a service that
    /// runs a model loop takes minutes, not the runtime's seconds. Of
    /// several granted services, the longest counts.
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The deadline it asks for, if any ([`Service::with_timeout`]).
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout
    }

    /// How it is shown as a tool, if it is.
    pub(crate) fn tool(&self) -> Option<&AsTool> {
        self.tool.as_ref()
    }

    /// The JSON Schema its answers follow, for documentation.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it does.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The JSON Schema of its input.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// The JSON Schema of its answers, if the embedder gave one.
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// Check `input` against the input schema, in the words tool
    /// arguments get (the field and what was expected).
    pub fn check(&self, input: &Value) -> Result<(), ServiceError> {
        match self.checker.problems(input) {
            None => Ok(()),
            Some(problems) => Err(ServiceError::Invalid(format!(
                "the input of service `{}` does not match its schema: {problems}",
                self.name
            ))),
        }
    }

    /// The handler's future for `call` (not checked; see [`Service::check`]).
    pub fn start(&self, call: ServiceCall) -> ServiceFuture {
        (self.handler)(call)
    }
}

/// The services an embedder offers, by name, and the tokio runtime their
/// handlers run on.
#[derive(Debug, Clone, Default)]
pub struct Services {
    by_name: BTreeMap<String, Arc<Service>>,
    runtime: Option<tokio::runtime::Handle>,
}

/// The runtime handlers run on when the embedder gives none: two workers,
/// every driver (I/O, time), made on first use.
static SHARED_RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> =
    std::sync::OnceLock::new();

impl Services {
    /// None.
    pub fn new() -> Self {
        Self::default()
    }

    /// Run the handlers on the embedder's own tokio runtime (a
    /// multi-thread one with the drivers they need). Without it they run on
    /// a runtime of toolhost's: two workers, I/O and time.
    pub fn with_runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// Where the handlers run.
    pub(crate) fn runtime(&self) -> Result<tokio::runtime::Handle, String> {
        if let Some(handle) = &self.runtime {
            return Ok(handle.clone());
        }
        SHARED_RUNTIME
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("toolhost-services")
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map(|rt| rt.handle().clone())
            .map_err(Clone::clone)
    }

    /// Offer `service`; a second one of the same name is refused.
    pub fn register(&mut self, service: Service) -> Result<(), String> {
        if self.by_name.contains_key(&service.name) {
            return Err(format!(
                "a service named `{}` is already offered",
                service.name
            ));
        }
        self.by_name.insert(service.name.clone(), Arc::new(service));
        Ok(())
    }

    /// The service `name`, if offered.
    pub fn get(&self, name: &str) -> Option<&Arc<Service>> {
        self.by_name.get(name)
    }

    /// Whether `name` is offered.
    pub fn offers(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Every service, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Service>> {
        self.by_name.values()
    }

    /// Whether none is offered.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}
