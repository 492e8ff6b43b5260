//! Accord's Prometheus recorder and the `/metrics` route that renders it (feature `prometheus`).

use std::sync::OnceLock;
use std::time::Duration;

use accord_engine::task::TaskRuntime;
use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::{
    GRPC_CALLS, HTTP_REQUEST_SECONDS, HTTP_REQUESTS, METRICS_PATH, PAYMENTS, PUSH_DELIVERIES, SSE_SUBSCRIBERS,
};

/// How often the recorder folds recorded histogram samples into its buckets, so that memory stays
/// flat between scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Bucket bounds, in seconds, of every `_seconds` histogram: from half a millisecond (an
/// in-process store call) to ten seconds (a blocking wait).
const SECONDS_BUCKETS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Bucket bounds of the group-commit batch sizes (the SQLite writer groups at most 256 writes).
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// The handle of Accord's Prometheus recorder, installed as the process's global recorder on the
/// first call. `None` when the application installed another global recorder first: Accord's
/// metrics then go to that one, and Accord serves no `/metrics` of its own.
pub fn prometheus_handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE.get_or_init(install).as_ref()
}

fn install() -> Option<PrometheusHandle> {
    let builder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
        .and_then(|builder| {
            builder
                .set_buckets_for_metric(Matcher::Full(accord_engine::observe::COMMIT_BATCH_SIZE.into()), BATCH_BUCKETS)
        });
    let recorder = match builder {
        Ok(builder) => builder.build_recorder(),
        Err(error) => {
            tracing::warn!(%error, "the metrics recorder could not be built");
            return None;
        }
    };
    let handle = recorder.handle();
    if metrics::set_global_recorder(recorder).is_err() {
        tracing::warn!("another metrics recorder is installed in this process: /metrics is not served");
        return None;
    }
    describe();
    let upkeep = handle.clone();
    let spawned = std::thread::Builder::new().name("accord-metrics-upkeep".into()).spawn(move || {
        loop {
            std::thread::sleep(UPKEEP_EVERY);
            upkeep.run_upkeep();
        }
    });
    if let Err(error) = spawned {
        tracing::warn!(%error, "the metrics upkeep thread could not start; histograms are folded at each scrape only");
    }
    Some(handle)
}

/// The `# HELP` lines.
fn describe() {
    use accord_engine::observe as engine;
    // Shown from the first scrape, at zero, though nothing has happened yet.
    metrics::counter!(engine::RECOVERIES).increment(0);
    metrics::gauge!(engine::ACTIVE_LEASES).increment(0.0);
    metrics::describe_counter!(HTTP_REQUESTS, "HTTP requests answered, by face, method, route template and status.");
    metrics::describe_histogram!(
        HTTP_REQUEST_SECONDS,
        metrics::Unit::Seconds,
        "Seconds until a request's response head was ready (an event stream: until it started)."
    );
    metrics::describe_gauge!(SSE_SUBSCRIBERS, "Server-sent event streams open now, by face.");
    metrics::describe_gauge!(
        crate::tls::CERTIFICATE_EXPIRY_GAUGE,
        "The notAfter of the TLS certificate new handshakes present, in seconds since the Unix epoch."
    );
    metrics::describe_counter!(
        GRPC_CALLS,
        "gRPC calls of the A2A binding, by method and status code (a stream: the code it started with)."
    );
    metrics::describe_counter!(PAYMENTS, "Payment steps, by rail and outcome.");
    metrics::describe_counter!(PUSH_DELIVERIES, "Push notification attempts, by outcome.");
    metrics::describe_histogram!(
        engine::STORE_OPERATION_SECONDS,
        metrics::Unit::Seconds,
        "Seconds a task store operation took, by operation."
    );
    metrics::describe_counter!(engine::STORE_ERRORS, "Task store operations that failed, by operation.");
    metrics::describe_counter!(engine::TASK_TRANSITIONS, "Task state transitions, by the state entered.");
    metrics::describe_gauge!(engine::TASKS, "Tasks in the store, by state (read from the store at each scrape).");
    metrics::describe_gauge!(engine::ACTIVE_LEASES, "Tasks this process runs now under an active lease.");
    metrics::describe_counter!(engine::RECOVERIES, "Tasks this process took over from a worker whose lease lapsed.");
    metrics::describe_counter!(
        engine::FENCED_WRITES,
        "Writes of a run refused because its worker no longer held the task's lease, by operation."
    );
    metrics::describe_histogram!(
        engine::COMMIT_BATCH_SIZE,
        metrics::Unit::Count,
        "Writes committed together in one transaction of a durable store, by store."
    );
}

/// `GET /metrics` alone, rendering Accord's recorder (with the task gauges read from `tasks`'
/// store): to serve on a listener of its own, away from the agent's routes. Empty when another
/// global recorder is installed ([`prometheus_handle`]).
pub fn metrics_router(tasks: Option<TaskRuntime>) -> Router {
    let Some(handle) = prometheus_handle() else { return Router::new() };
    Router::new().route(
        METRICS_PATH,
        axum::routing::get(move || {
            let tasks = tasks.clone();
            async move { render(handle, tasks.as_ref()).await }
        }),
    )
}

async fn render(handle: &PrometheusHandle, tasks: Option<&TaskRuntime>) -> Response {
    if let Some(runtime) = tasks {
        match runtime.store().count_by_state().await {
            Ok(Some(counts)) => {
                for (state, count) in counts {
                    let state = state.as_str();
                    metrics::gauge!(accord_engine::observe::TASKS, "state" => state).set(count as f64);
                }
            }
            Ok(None) => {}
            // The rest of the metrics are still worth serving; the store error is counted.
            Err(error) => tracing::warn!(%error, "the task counts could not be read for /metrics"),
        }
    }
    let mut response = handle.render().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    response
}
