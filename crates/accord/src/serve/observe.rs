//! The observability flags: `/metrics` (on by default, or on a listener of its own),
//! the log format, and (with the `otlp` feature) OpenTelemetry export of the spans.

use std::net::SocketAddr;

use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The log filter without `ACCORD_LOG`: INFO, and the MCP SDK's own lines (every notification it
/// receives) only from WARN (`accord_backends::LOG_DIRECTIVES`).
#[cfg(feature = "backends")]
const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";
#[cfg(not(feature = "backends"))]
const DEFAULT_LOG_FILTER: &str = "info";

/// How logs are written to standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, with the fields of the event and of its spans.
    Json,
}

/// Metrics, logs and traces.
#[derive(Debug, Clone, clap::Args)]
pub struct ObserveArgs {
    /// Do not serve `/metrics` (by default it is served on the agent's listener, outside its
    /// authentication, like `/health`).
    #[arg(long, env = "ACCORD_NO_METRICS")]
    pub no_metrics: bool,
    /// Serve `/metrics` on this address only (e.g. `127.0.0.1:9464`), away from the agent's
    /// listener, so that it can stay private while the agent is public.
    #[arg(long, env = "ACCORD_METRICS_ADDR", conflicts_with = "no_metrics")]
    pub metrics_addr: Option<SocketAddr>,
    /// How logs are written to standard error: `text` or `json` (one object per line). What is
    /// logged is set with `ACCORD_LOG` (default `info`; `accord::request=debug` adds a line per
    /// request).
    #[arg(long, value_enum, default_value_t = LogFormat::Text, env = "ACCORD_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// Export spans with OpenTelemetry (OTLP over HTTP/protobuf) to this collector, e.g.
    /// `http://127.0.0.1:4318` (spans go to `/v1/traces` under it). Needs an `accord` built with
    /// the `otlp` feature; there `OTEL_EXPORTER_OTLP_ENDPOINT` sets it too.
    #[cfg_attr(feature = "otlp", arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT"))]
    #[cfg_attr(not(feature = "otlp"), arg(long))]
    pub otlp_endpoint: Option<String>,
}

/// Where `/metrics` is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsAt {
    /// Not at all.
    Off,
    /// On the agent's listener.
    AgentListener,
    /// On a listener of its own.
    Own(SocketAddr),
}

/// What must live as long as the server: the span exporter, flushed when dropped.
pub struct Telemetry {
    #[cfg(feature = "otlp")]
    otlp: Option<super::otlp::Exporter>,
}

impl Telemetry {
    /// Sends the spans still buffered (at shutdown).
    pub fn shutdown(self) {
        #[cfg(feature = "otlp")]
        if let Some(otlp) = self.otlp {
            otlp.shutdown();
        }
    }
}

/// The directive that turns on the `request` spans (and the access log's lines).
#[cfg(feature = "otlp")]
const REQUEST_SPANS: &str = "accord::request=debug";
/// The directive that turns on the `task_run` spans.
#[cfg(feature = "otlp")]
const TASK_SPANS: &str = "accord::task=debug";

impl ObserveArgs {
    /// Where `/metrics` is served.
    pub fn metrics_at(&self) -> MetricsAt {
        match (self.no_metrics, self.metrics_addr) {
            (true, _) => MetricsAt::Off,
            (false, Some(address)) => MetricsAt::Own(address),
            (false, None) => MetricsAt::AgentListener,
        }
    }

    /// Installs the process's log (and span) subscriber as the flags say, unless the application
    /// installed a global subscriber of its own first (then that one stays, and `--log-format`
    /// and `--otlp-endpoint` are the application's business). Errors are the flags' mistakes,
    /// worded for the user.
    pub fn init(&self) -> Result<Telemetry, String> {
        let filter = || {
            tracing_subscriber::EnvFilter::try_from_env("ACCORD_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER))
        };
        // Colours only on a terminal: a log file or a collector gets plain text (and the
        // formatter skips the escape codes' work on every span and event).
        let fmt = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
        let fmt = match self.log_format {
            LogFormat::Text => fmt.boxed(),
            LogFormat::Json => fmt.json().with_current_span(true).with_span_list(true).boxed(),
        };
        #[cfg(feature = "otlp")]
        {
            let otlp = match self.otlp_endpoint.as_deref().map(str::trim).filter(|endpoint| !endpoint.is_empty()) {
                Some(endpoint) => Some(super::otlp::Exporter::new(endpoint)?),
                None => None,
            };
            // The exporter gets what the log gets, and the request and task-run spans (DEBUG, so
            // that the log does not pay for them) whatever the log's level.
            let layer = otlp.as_ref().map(|otlp| {
                let spans = filter()
                    .add_directive(REQUEST_SPANS.parse().expect("a valid directive"))
                    .add_directive(TASK_SPANS.parse().expect("a valid directive"));
                otlp.layer().with_filter(spans)
            });
            let _ = tracing_subscriber::registry().with(fmt.with_filter(filter())).with(layer).try_init();
            Ok(Telemetry { otlp })
        }
        #[cfg(not(feature = "otlp"))]
        {
            if self.otlp_endpoint.is_some() {
                return Err("--otlp-endpoint needs an accord built with the `otlp` feature \
                            (the `otlp` cargo feature of accord or accord-cli)"
                    .into());
            }
            let _ = tracing_subscriber::registry().with(fmt.with_filter(filter())).try_init();
            Ok(Telemetry {})
        }
    }
}

#[cfg(all(test, feature = "backends"))]
mod log_filter_tests {
    #[test]
    fn the_default_filter_quiets_the_mcp_sdk_as_the_backends_ask() {
        assert_eq!(super::DEFAULT_LOG_FILTER, format!("info,{}", accord_backends::LOG_DIRECTIVES));
    }
}
