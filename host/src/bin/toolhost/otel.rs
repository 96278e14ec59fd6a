//! Traces over OTLP (OpenTelemetry) when `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set: one span per tool call
//! (target `toolhost::calls`, executor/pipeline.rs) with the tool, the
//! call id, the outcome and the duration, never an argument value. The
//! protocol (`http/protobuf` by default, or `http/json`), headers and
//! timeout come from the standard `OTEL_EXPORTER_OTLP_*` variables; the
//! service is `OTEL_SERVICE_NAME`, else `toolhost`. Spans are sent in
//! batches from a thread of the SDK's, and the last ones when the process
//! ends.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The exporting provider; the spans not yet sent go when it drops.
pub(crate) struct Traces(SdkTracerProvider);

impl Drop for Traces {
    fn drop(&mut self) {
        let _ = self.0.shutdown();
    }
}

/// The layer that exports call spans, if an OTLP endpoint is configured
/// (a warning, and none, if the exporter cannot be made).
pub(crate) fn layer<S>() -> Option<(Box<dyn Layer<S> + Send + Sync>, Traces)>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let configured = [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some_and(|e| !e.is_empty()));
    if !configured {
        return None;
    }
    // The HTTP client's TLS, for an https:// endpoint.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
    {
        Ok(exporter) => exporter,
        Err(err) => {
            crate::output::warn(&format!(
                "no traces are sent: the OTLP exporter cannot be made: {err}"
            ));
            return None;
        }
    };
    let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "toolhost".to_owned());
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service)
                .build(),
        )
        .build();
    let tracer = provider.tracer("toolhost");
    let calls = tracing_subscriber::filter::Targets::new()
        .with_target("toolhost::calls", tracing::Level::INFO);
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(calls)
        .boxed();
    Some((layer, Traces(provider)))
}
