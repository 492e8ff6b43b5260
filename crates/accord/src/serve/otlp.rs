//! OpenTelemetry export of the server's spans (feature `otlp`): OTLP over HTTP/protobuf to
//! `<endpoint>/v1/traces`, batched on the exporter's own thread.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::registry::LookupSpan;

/// The span exporter: its tracer provider, shut down (and so flushed) at the end.
pub(crate) struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// An exporter to the collector at `endpoint` (the OTLP base URL, as in
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: spans go to `/v1/traces` under it).
    pub(crate) fn new(endpoint: &str) -> Result<Self, String> {
        let base = url::Url::parse(endpoint)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| format!("--otlp-endpoint {endpoint:?} is not an http(s) URL"))?;
        let traces = format!("{}/v1/traces", base.as_str().trim_end_matches('/'));
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(traces)
            .build()
            .map_err(|error| format!("--otlp-endpoint: {error}"))?;
        let resource = opentelemetry_sdk::Resource::builder().with_service_name("accord").build();
        let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
        Ok(Self { provider })
    }

    /// The tracing layer that hands spans to the exporter.
    pub(crate) fn layer<S>(&self) -> tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.provider.tracer("accord"))
    }

    /// Sends what is still buffered and stops the exporter.
    pub(crate) fn shutdown(self) {
        if let Err(error) = self.provider.shutdown() {
            eprintln!("warning: the OTLP exporter did not shut down cleanly: {error}");
        }
    }
}
