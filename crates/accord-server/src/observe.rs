//! What the faces tell operators: one span and one set of metrics per request, SSE subscribers,
//! payment outcomes and push deliveries; and the `/metrics` route that renders them in the
//! Prometheus text format.
//!
//! Metrics go through the [`metrics`] facade (see `accord_engine::observe`). When
//! [`ServerConfig::metrics`](crate::ServerConfig::metrics) is on, the faces install Accord's
//! Prometheus recorder as the process's global recorder ([`prometheus_handle`]); one recorder
//! serves every agent of the process. Labels are low-cardinality only: the face, the route
//! *template* (`/tasks/{id}`, never a task id), the method, the status code, a rail, an outcome.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use accord_engine::task::TaskRuntime;
use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Where the metrics are served.
pub const METRICS_PATH: &str = "/metrics";

/// Counter: HTTP requests answered, by `face`, `method`, `route` (the route template) and `status`.
pub const HTTP_REQUESTS: &str = "accord_http_requests_total";
/// Histogram: seconds until a request's response head was ready, by `face`, `method` and `route`.
/// For a server-sent event stream that is when the stream starts, not when it ends.
pub const HTTP_REQUEST_SECONDS: &str = "accord_http_request_duration_seconds";
/// Gauge: server-sent event streams open now, by `face`.
pub const SSE_SUBSCRIBERS: &str = "accord_sse_subscribers";
/// Counter: gRPC calls answered by the A2A gRPC binding, by `method` and `code` (the gRPC status
/// a unary call ended with, or a stream started with).
pub const GRPC_CALLS: &str = "accord_grpc_calls_total";
/// Counter: payment steps, by `rail` (`x402`, `mpp`, `local`) and `outcome`.
pub const PAYMENTS: &str = "accord_payments_total";
/// Counter: push notification attempts, by `outcome` (`delivered`, `retry`, `dead_letter`).
pub const PUSH_DELIVERIES: &str = "accord_push_deliveries_total";

/// How often the recorder folds recorded histogram samples into its buckets, so that memory stays
/// flat between scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Bucket bounds, in seconds, of every `_seconds` histogram: from half a millisecond (an
/// in-process store call) to ten seconds (a blocking wait).
const SECONDS_BUCKETS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Bucket bounds of the group-commit batch sizes (the SQLite writer groups at most 256 writes).
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// Records one payment step.
pub(crate) fn payment(rail: &'static str, outcome: &'static str) {
    metrics::counter!(PAYMENTS, "rail" => rail, "outcome" => outcome).increment(1);
}

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

/// The middleware every face is mounted with: a `request` span (face, method, route template,
/// then status and latency), the request metrics, the face for the task runs the request starts,
/// and a gauge of the event streams it opens.
pub(crate) async fn observe(
    axum::extract::State(face): axum::extract::State<&'static str>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    // The route template, never the raw path: no task id or other caller data in a label.
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str).to_owned();
    let span = tracing::info_span!(
        "request",
        face,
        method,
        route = %route,
        status = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
    );
    let response =
        tracing::Instrument::instrument(accord_engine::observe::with_face(face, next.run(request)), span.clone()).await;
    let elapsed = started.elapsed();
    let status = response.status();
    span.record("status", status.as_u16());
    span.record("latency_ms", elapsed.as_secs_f64() * 1000.0);
    span.in_scope(|| {
        tracing::debug!(target: "accord::request", status = status.as_u16(), latency_ms = elapsed.as_secs_f64() * 1000.0, "request");
    });
    metrics::counter!(HTTP_REQUESTS, "face" => face, "method" => method, "route" => route.clone(), "status" => status_label(status))
        .increment(1);
    metrics::histogram!(HTTP_REQUEST_SECONDS, "face" => face, "method" => method, "route" => route)
        .record(elapsed.as_secs_f64());
    if is_event_stream(&response) { counted_stream(face, response) } else { response }
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        // Any other method is one label: a caller cannot mint new series.
        _ => "other",
    }
}

fn status_label(status: StatusCode) -> &'static str {
    // `as_str` borrows the status; the label must outlive it, and codes are few.
    match status.as_u16() {
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        304 => "304",
        400 => "400",
        401 => "401",
        402 => "402",
        403 => "403",
        404 => "404",
        405 => "405",
        406 => "406",
        408 => "408",
        409 => "409",
        413 => "413",
        415 => "415",
        422 => "422",
        429 => "429",
        500 => "500",
        501 => "501",
        502 => "502",
        503 => "503",
        504 => "504",
        code if code < 200 => "1xx",
        code if code < 300 => "2xx",
        code if code < 400 => "3xx",
        code if code < 500 => "4xx",
        _ => "5xx",
    }
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// The response with its body counted in [`SSE_SUBSCRIBERS`] until the stream ends or the client
/// goes away (the body is dropped either way).
fn counted_stream(face: &'static str, response: Response) -> Response {
    struct Open(&'static str);
    impl Drop for Open {
        fn drop(&mut self) {
            metrics::gauge!(SSE_SUBSCRIBERS, "face" => self.0).decrement(1.0);
        }
    }
    metrics::gauge!(SSE_SUBSCRIBERS, "face" => face).increment(1.0);
    let open = Open(face);
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _ = &open;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}
