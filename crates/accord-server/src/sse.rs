//! Server-sent events framing, shared by every face that streams: the content type and the
//! headers that keep caches and proxies from holding a stream back.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

/// `sse` as a response with the event-stream headers.
pub(crate) fn sse_response(sse: impl IntoResponse) -> Response {
    let mut response = sse.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, no-transform"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    // Tells nginx-like proxies not to buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
