//! The `services` import: a plugin calls the embedder's service of a name
//! it declares and was granted, JSON in and out. The input is checked
//! against the service's schema; the handler runs on the call thread's
//! runtime, stopped at the call's deadline or cancellation like every
//! wait of a guest on the host (imports/poll.rs): the call then ends with
//! `timeout` or `cancelled`.

use crate::bindings::services::{self, ServiceError, ServiceInfo};
use crate::runtime::sandbox::CallState;
use crate::services::{ServiceCall, ServiceError as Refused};

/// The answer for a granted service this host does not offer.
fn not_offered(name: &str) -> ServiceError {
    ServiceError::NotFound(format!(
        "this host offers no service `{name}`; it exists only where the application embedding \
         toolhost provides it"
    ))
}

/// Cancels a service call's token when the call's wait ends, however it
/// ends (a handler that finished sees nothing).
struct StopOnDrop(crate::types::context::CancelToken);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl services::Host for CallState {
    fn call(&mut self, name: String, input: String) -> Result<String, ServiceError> {
        // The grant first: a tool learns nothing of services it may not use.
        if !self.services_declared.contains(&name) {
            return Err(ServiceError::Denied(crate::types::grant::must_declare(
                &format!("service:{name}"),
            )));
        }
        if !self.services_granted.contains(&name) {
            return Err(ServiceError::Denied(format!(
                "this tool was not granted the service `{name}`; a person can grant it with \
                 `{}service:{name}`",
                toolhost_shared::contract::GRANT_REMEDY
            )));
        }
        let Some(services) = self.services.clone() else {
            return Err(not_offered(&name));
        };
        let Some(service) = services.get(&name).cloned() else {
            return Err(not_offered(&name));
        };
        let input: serde_json::Value = match serde_json::from_str(&input) {
            Ok(value) => value,
            Err(e) => {
                return Err(ServiceError::Invalid(format!(
                    "the input of service `{name}` is not JSON: {e}"
                )));
            }
        };
        if let Err(e) = service.check(&input) {
            return Err(ServiceError::Invalid(e.to_string()));
        }
        if self.context.dry_run {
            return Err(ServiceError::Denied(format!(
                "dry run: service `{name}` would be called with {input}; nothing was sent"
            )));
        }
        let runtime = services.runtime().map_err(|e| {
            ServiceError::Failed(format!("the services' runtime could not start: {e}"))
        })?;
        let cancel = crate::types::context::CancelToken::new();
        let call = ServiceCall {
            input,
            context: self.context.clone(),
            tool: self.tool.to_string(),
            cancel: cancel.clone(),
        };
        let task = runtime.spawn(service.start(call));
        let abort = task.abort_handle();
        // Whatever ends the wait early ends the handler's work too.
        let _stop = StopOnDrop(cancel);
        // Past the deadline or cancelled, the wait records why, the task is
        // aborted and the guest gets `failed`; the epoch check stops it as
        // it goes on, and the call ends with `timeout` or `cancelled`.
        match self.wait_limit().wait(task) {
            Ok(Ok(Ok(value))) => Ok(value.to_string()),
            Ok(Ok(Err(Refused::Denied(m)))) => Err(ServiceError::Denied(m)),
            Ok(Ok(Err(Refused::Invalid(m)))) => Err(ServiceError::Invalid(m)),
            Ok(Ok(Err(Refused::Failed(m)))) => Err(ServiceError::Failed(m)),
            Ok(Err(join)) => Err(ServiceError::Failed(if join.is_panic() {
                format!("service `{name}` failed unexpectedly (its handler panicked)")
            } else {
                format!("service `{name}` was stopped")
            })),
            Err(_) => {
                abort.abort();
                Err(ServiceError::Failed(format!(
                    "service `{name}` was stopped: the call ran out of time or was cancelled"
                )))
            }
        }
    }

    fn offered(&mut self) -> Vec<ServiceInfo> {
        let Some(services) = &self.services else {
            return Vec::new();
        };
        services
            .iter()
            .filter(|s| self.services_granted.iter().any(|g| g == s.name()))
            .map(|s| ServiceInfo {
                name: s.name().to_owned(),
                description: s.description().to_owned(),
                input_schema: s.input_schema().to_string(),
            })
            .collect()
    }
}
