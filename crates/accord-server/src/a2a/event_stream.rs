//! The SSE framing every HTTP binding gives its stream events: each event is one `data:` line of
//! JSON, with the task log's sequence as the SSE `id` (for `Last-Event-ID`), kept alive while
//! idle. What an event *is* (a 1.0 `StreamResponse`, a 0.3 event, wrapped in a JSON-RPC response
//! or bare) is the binding's projection, passed in already made.

use std::convert::Infallible;

use accord_types::jsonrpc;
use axum::response::Response;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};
use serde::Serialize;
use serde_json::Value;

use super::EventId;

/// An event stream of `events`, each serialized as the `data:` of one SSE event whose `id` is
/// the event's log sequence (none when the event reflects no log entry).
pub(crate) fn sse<T: Serialize>(events: impl Stream<Item = (Option<EventId>, T)> + Send + 'static) -> Response {
    let events = events.map(|(sequence, body)| {
        let event = Event::default().data(serde_json::to_string(&body).unwrap_or_default());
        Ok::<_, Infallible>(match sequence {
            Some(sequence) => event.id(sequence.to_string()),
            None => event,
        })
    });
    crate::sse::sse_response(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// A JSON-RPC binding's event stream: each event (already projected to the binding's dialect) is
/// the `result` of a JSON-RPC success response carrying the request's `id`.
pub(crate) fn rpc_sse<T: Serialize + Send + 'static>(
    id: Value,
    events: impl Stream<Item = (Option<EventId>, T)> + Send + 'static,
) -> Response {
    sse(events.map(move |(sequence, event)| (sequence, jsonrpc::Response::success(id.clone(), event))))
}
