//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`): the client's handling of
//! event streams, driven from bytes instead of a connection so a target reaches exactly the code
//! a server's stream reaches. Not a stable API; nothing else may use it.

use accord_types::a2a::StreamResponse;
use eventsource_stream::Eventsource;
use futures_util::{FutureExt, StreamExt};
use serde_json::Value;

use crate::a2a::jsonrpc::stream_rpc_item;
use crate::a2a::rest::stream_rest_item;
use crate::a2a::transport::{settles, task_id_of};
use crate::error::{Operation, Site};
use crate::http::bounded_sse;
use crate::lucid::StreamEvent;

/// One event of an A2A stream as the client reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aStreamItem {
    /// The SSE `id`, when sent (what a reconnection sends as `Last-Event-ID`).
    pub id: Option<String>,
    /// The stream response the event carries.
    pub response: StreamResponse,
    /// The task it names, if any.
    pub task_id: Option<String>,
    /// Whether nothing may follow it (a terminal or interrupted state, or a message).
    pub settles: bool,
}

/// Reads an A2A event stream that arrived in `chunks` the way the client does: the per-event
/// size bound, SSE parsing, then each event's `data` as a JSON-RPC response (`json_rpc`, checked
/// against `rpc_id`) or a bare HTTP+JSON stream response. An error ends the list, as it ends the
/// client's stream.
pub fn a2a_stream(chunks: Vec<Vec<u8>>, json_rpc: bool, rpc_id: Option<&Value>) -> Vec<Result<A2aStreamItem, String>> {
    let bytes = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, reqwest::Error>));
    let events = bounded_sse(bytes).eventsource().collect::<Vec<_>>().now_or_never().unwrap_or_default();
    let site = Site::new(Operation::SubscribeTask, "fuzz");
    let mut items = Vec::new();
    for event in events {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                items.push(Err(error.to_string()));
                break;
            }
        };
        let parsed = if json_rpc {
            stream_rpc_item(&site, &event.data, rpc_id)
        } else {
            stream_rest_item(&site, &event.event, &event.data)
        };
        match parsed {
            Ok(response) => items.push(Ok(A2aStreamItem {
                id: (!event.id.is_empty()).then_some(event.id),
                task_id: task_id_of(&response).map(str::to_owned),
                settles: settles(&response),
                response,
            })),
            Err(error) => {
                items.push(Err(error.to_string()));
                break;
            }
        }
    }
    items
}

/// Reads a Lucid event stream that arrived in `chunks` the way [`crate::Client::stream`] does.
pub fn lucid_stream(chunks: Vec<Vec<u8>>) -> Vec<Result<StreamEvent, String>> {
    let bytes = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::convert::Infallible>));
    let events = bytes.eventsource().collect::<Vec<_>>().now_or_never().unwrap_or_default();
    events.into_iter().map(|event| event.map(StreamEvent::from_sse).map_err(|error| error.to_string())).collect()
}
