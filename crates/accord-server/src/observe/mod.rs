//! What the faces tell operators: one span and one set of metrics per request, SSE subscribers,
//! payment outcomes and push deliveries; and the `/metrics` route that renders them in the
//! Prometheus text format.
//!
//! Metrics go through the [`metrics`] facade (see `accord_engine::observe`). When
//! [`ServerConfig::metrics`](crate::ServerConfig::metrics) is on (and the `prometheus`
//! feature built in), the faces install Accord's Prometheus recorder as the process's global recorder ([`prometheus_handle`]); one recorder
//! serves every agent of the process. Labels are low-cardinality only: the face, the route
//! *template* (`/tasks/{id}`, never a task id), the method, the status code, a rail, an outcome.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;

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

#[cfg(feature = "prometheus")]
mod prometheus;
#[cfg(feature = "prometheus")]
pub use prometheus::{metrics_router, prometheus_handle};

/// Whether Accord's Prometheus recorder is the process's (installing it on the first call):
/// never without the `prometheus` feature.
pub(crate) fn recorder_installed() -> bool {
    #[cfg(feature = "prometheus")]
    return prometheus_handle().is_some();
    #[cfg(not(feature = "prometheus"))]
    false
}

/// Records one payment step.
pub(crate) fn payment(rail: &'static str, outcome: &'static str) {
    metrics::counter!(PAYMENTS, "rail" => rail, "outcome" => outcome).increment(1);
}

/// What [`observe`] is mounted with.
#[derive(Clone)]
pub(crate) struct Observed {
    /// The face's label.
    pub(crate) face: &'static str,
    /// For a face that counts its callers (rate limits, the anonymous callers' share): the
    /// proxies trusted to name the client, to put each request's
    /// [`ClientAddress`](crate::client_address::ClientAddress) into its extensions.
    pub(crate) trusted: Option<Arc<[ipnet::IpNet]>>,
}

/// The middleware every face is mounted with, outermost: a `request` span (face, method, route
/// template, then status and latency), the request metrics, the face for the task runs the
/// request starts, a gauge of the event streams it opens, and — for a face that counts its
/// callers — the request's client address.
pub(crate) async fn observe(
    axum::extract::State(observed): axum::extract::State<Observed>,
    mut request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let face = observed.face;
    if let Some(trusted) = &observed.trusted {
        crate::client_address::stamp(&mut request, trusted);
    }
    let method = method_label(request.method());
    let route = route_label(request.extensions().get::<MatchedPath>());
    // DEBUG, under the access log's target: a span no subscriber asked for costs nothing, and
    // `accord::request=debug` turns on the span and its line together.
    let span = tracing::debug_span!(
        target: "accord::request",
        "request",
        face,
        method,
        route,
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
    metrics::counter!(HTTP_REQUESTS, "face" => face, "method" => method, "route" => route, "status" => status_label(status))
        .increment(1);
    metrics::histogram!(HTTP_REQUEST_SECONDS, "face" => face, "method" => method, "route" => route)
        .record(elapsed.as_secs_f64());
    if is_event_stream(&response) { counted_stream(face, response) } else { response }
}

/// The route template of a request (`unmatched` without one), never the raw path: no task id or
/// other caller data in a label. Templates are the router's own, few and fixed for the process, so
/// each is kept once and every request's span and labels borrow it rather than copy it.
fn route_label(matched: Option<&MatchedPath>) -> &'static str {
    static ROUTES: OnceLock<RwLock<HashSet<&'static str>>> = OnceLock::new();
    let Some(matched) = matched else { return "unmatched" };
    let routes = ROUTES.get_or_init(Default::default);
    if let Some(route) = routes.read().unwrap_or_else(PoisonError::into_inner).get(matched.as_str()) {
        return route;
    }
    let mut routes = routes.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(route) = routes.get(matched.as_str()) {
        return route;
    }
    let route: &'static str = Box::leak(matched.as_str().into());
    routes.insert(route);
    route
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
