//! What `/metrics` shows, in the Prometheus text format
//! (`prometheus-client`): calls by tool and outcome and their durations
//! (recorded by the pipeline's last step), compile cache hits and
//! compiles, the sandbox's spawn times, background commands, resident
//! memory, and what the serving front end counts (calls in flight,
//! sessions, principals).

use super::Executor;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use std::time::Duration;

/// A call's labels: the tool and how it ended (`success`, or the error
/// kind: `denied`, `timeout`, ...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    tool: String,
    outcome: String,
}

/// A tool's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Tool {
    tool: String,
}

/// The calls an executor has finished.
#[derive(Clone)]
pub(crate) struct CallMetrics {
    calls: Family<Outcome, Counter>,
    durations: Family<Tool, Histogram>,
}

impl Default for CallMetrics {
    fn default() -> Self {
        Self {
            calls: Family::default(),
            // 1 ms to about 65 s.
            durations: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 17))
            }),
        }
    }
}

impl CallMetrics {
    /// Count a finished call of `tool`.
    pub(crate) fn record(&self, tool: &str, outcome: &str, took: Duration) {
        self.calls
            .get_or_create(&Outcome {
                tool: tool.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
        self.durations
            .get_or_create(&Tool {
                tool: tool.to_owned(),
            })
            .observe(took.as_secs_f64());
    }
}

/// What the serving front end counts now, shown beside the executor's.
#[derive(Debug, Clone, Copy, Default)]
pub struct Serving {
    /// Calls running now.
    pub calls_in_flight: usize,
    /// Open sessions (of clients before 2026-07-28).
    pub sessions: usize,
    /// Credentials whose stateless requests hold state.
    pub principals: usize,
}

impl Executor {
    /// Every metric in the Prometheus text format, with `serving`'s
    /// figures. Built afresh each time from the live counters (cheap, and
    /// never stale when the runtime or broker was replaced).
    pub fn metrics_text(&self, serving: Serving) -> String {
        let mut registry = Registry::with_prefix("toolhost");
        let calls = &self.policy.metrics;
        registry.register(
            "calls",
            "Calls finished, by tool and outcome",
            calls.calls.clone(),
        );
        registry.register_with_unit(
            "call_duration",
            "How long calls took, by tool",
            Unit::Seconds,
            calls.durations.clone(),
        );
        let (hits, compiles) = self.runtime.cache_counters();
        registry.register(
            "compile_cache_hits",
            "Components loaded from the compile cache",
            hits,
        );
        registry.register(
            "compiles",
            "Components compiled (not found in the cache)",
            compiles,
        );
        registry.register_with_unit(
            "sandbox_spawn",
            "How long starting a command in its sandbox took",
            Unit::Seconds,
            self.broker.spawn_seconds.clone(),
        );
        let gauge = |value: usize| {
            let g = Gauge::<i64>::default();
            g.set(i64::try_from(value).unwrap_or(i64::MAX));
            g
        };
        registry.register(
            "background_commands",
            "Background commands running now",
            gauge(self.broker.background.running_total()),
        );
        registry.register(
            "calls_in_flight",
            "Calls running now",
            gauge(serving.calls_in_flight),
        );
        registry.register("sessions", "Open MCP sessions", gauge(serving.sessions));
        registry.register(
            "principals",
            "Credentials holding state of stateless requests",
            gauge(serving.principals),
        );
        registry.register_with_unit(
            "resident_memory",
            "Resident memory of the process",
            Unit::Bytes,
            gauge(resident_bytes()),
        );
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

/// This process's resident memory (`/proc/self/statm`), 0 if unknown.
fn resident_bytes() -> usize {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .unwrap_or(0);
    pages * rustix::param::page_size()
}
