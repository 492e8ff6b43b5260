//! The A2A 0.3 dialect of the JSON-RPC binding, on the same endpoint as 1.0: a request without
//! `A2A-Version`, or with `0.3`, lands here once the envelope is read.
//!
//! Each method reads its 0.3 params, converts them with [`accord_types::a2a::v03::convert`] into
//! the v1.0 request, calls the same [`A2aCore`] operation the 1.0 methods call (and so the same
//! task service), and converts the answer back. Nothing here decides anything about tasks.
//!
//! What is the dialect's own: the method names; a 0.3 stream ends after its status update with
//! `final: true` (the task ended or waits for its caller), where a 1.0 subscription stays open
//! through waiting states; `tasks/pushNotificationConfig/set` without a config id uses the task's
//! id (so that `…/get` without one finds it, as 0.3 clients expect); `…/list` returns every config
//! as a bare array and `…/delete` returns `null`; an agent without an extended card answers
//! `agent/getAuthenticatedExtendedCard` with -32007; extensions are read from `X-A2A-Extensions`
//! (0.3's header) as well as `A2A-Extensions`; errors are `{code, message, data}` objects
//! ([`v03::error_object`]). An error of a streaming method (`message/stream`,
//! `tasks/resubscribe`) is the single event of an event stream ([`stream_error`]), as the
//! official 0.3 servers send it and the only way the official 0.3 clients read one.

use std::convert::Infallible;

use accord_types::a2a::v03::{self, methods};
use accord_types::a2a::{self, A2aError, A2aErrorKind, JsonRpcRequest, Validate};
use accord_types::jsonrpc;
use axum::http::header;
use axum::response::Response;
use axum::response::sse::{Event, Sse};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::JsonRpcState;
use super::errors::{self, RpcDialect};
use crate::auth::{Principal, caller_of};

/// A 0.3 JSON-RPC error response ([`errors::rpc_error`]).
pub(crate) fn rpc_error(id: Value, error: &A2aError) -> Response {
    errors::rpc_error(RpcDialect::V0_3, id, error)
}

/// An error of a streaming method, as the official 0.3 servers answer one: `200
/// text/event-stream`, the JSON-RPC error response as the stream's one `data:` event, then the
/// end. The official 0.3 clients read a streaming method's answer only as an event stream (a JSON
/// body is "Invalid SSE response" to them). The unauthenticated error keeps its 401 JSON answer:
/// authentication is the transport's business, and the clients report the status.
pub(crate) fn stream_error(id: Value, error: &A2aError) -> Response {
    if error.kind == A2aErrorKind::Unauthenticated {
        return rpc_error(id, error);
    }
    let body = jsonrpc::Response::<Value>::failure(id, v03::error_object(error));
    let data = serde_json::to_string(&body).unwrap_or_else(|failure| {
        tracing::error!(%failure, "A2A 0.3 error does not serialize");
        String::from(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#)
    });
    let event = futures_util::stream::once(std::future::ready(Ok::<_, Infallible>(Event::default().data(data))));
    let mut response = crate::sse::sse_response(Sse::new(event));
    if let Some(seconds) = errors::retry_after_of(error) {
        crate::refusal::set_retry_after(&mut response, seconds);
    }
    response
}

/// Whether `method` is one of 0.3's streaming methods, whose errors are [`stream_error`]s.
pub(crate) fn is_streaming(method: &str) -> bool {
    matches!(method, methods::MESSAGE_STREAM | methods::TASKS_RESUBSCRIBE)
}

/// An error answering a 0.3 request for `method`: in an event stream for a streaming method,
/// a JSON-RPC response otherwise.
pub(crate) fn error_for(method: &str, id: Value, error: &A2aError) -> Response {
    if is_streaming(method) { stream_error(id, error) } else { rpc_error(id, error) }
}

fn rpc_result(id: Value, result: impl serde::Serialize) -> Response {
    errors::rpc_result(RpcDialect::V0_3, id, result)
}

/// The 0.3 params as their v1.0 request, validated as such (a violation names the field by its
/// v1.0 path, which is the 0.3 one for every field both have).
fn params<P: DeserializeOwned, R: From<P> + Validate>(request: &JsonRpcRequest) -> Result<R, A2aError> {
    let params: P = request.params_as()?;
    let converted = R::from(params);
    converted.validate()?;
    Ok(converted)
}

/// The headers with 0.3's `X-A2A-Extensions` read as `A2A-Extensions`.
pub(crate) fn extension_headers(headers: &http::HeaderMap) -> http::HeaderMap {
    let mut merged = headers.clone();
    for value in headers.get_all("x-a2a-extensions") {
        merged.append("a2a-extensions", value.clone());
    }
    merged
}

/// Serves one 0.3 request whose envelope has been read.
pub(crate) async fn handle(state: &JsonRpcState, parts: http::request::Parts, request: JsonRpcRequest) -> Response {
    let id = request.response_id();
    let activated = match super::negotiate_extensions(&extension_headers(&parts.headers), &state.core.extensions) {
        Ok(activated) => activated,
        Err(error) => return error_for(&request.method, id, &error),
    };
    let owner = caller_of(&parts.extensions);
    let resource = state.core.resource(&parts.headers, &parts.uri, &parts.extensions);
    let core = &state.core;
    let last_event_id = super::EventId::of_headers(&parts.headers);
    let outcome: Result<Response, A2aError> = async {
        Ok(match request.method.as_str() {
            methods::MESSAGE_SEND => {
                let send = params::<v03::MessageSendParams, a2a::SendMessageRequest>(&request)?;
                let response = core.send_message(send, owner, resource).await?;
                rpc_result(id.clone(), v03::SendMessageResult::from(response))
            }
            methods::MESSAGE_STREAM => {
                let send = params::<v03::MessageSendParams, a2a::SendMessageRequest>(&request)?;
                sse(id.clone(), core.send_streaming(send, owner, resource).await?)
            }
            methods::TASKS_GET => {
                let get = params::<v03::TaskQueryParams, a2a::GetTaskRequest>(&request)?;
                rpc_result(id.clone(), v03::Task::from(core.get_task(get, owner).await?))
            }
            methods::TASKS_CANCEL => {
                let cancel = params::<v03::TaskIdParams, a2a::CancelTaskRequest>(&request)?;
                rpc_result(id.clone(), v03::Task::from(core.cancel_task(cancel, owner).await?))
            }
            methods::TASKS_RESUBSCRIBE => {
                let subscribe = params::<v03::TaskIdParams, a2a::SubscribeToTaskRequest>(&request)?;
                sse(id.clone(), core.subscribe(subscribe, owner, last_event_id).await?)
            }
            methods::PUSH_CONFIG_SET => {
                let config = request.params_as::<v03::TaskPushNotificationConfig>()?.into_create();
                config.validate()?;
                let kept = core.create_push_config(config, owner).await?;
                rpc_result(id.clone(), v03::TaskPushNotificationConfig::from(kept))
            }
            methods::PUSH_CONFIG_GET => {
                let get = params::<v03::PushConfigParams, a2a::GetTaskPushNotificationConfigRequest>(&request)?;
                rpc_result(id.clone(), v03::TaskPushNotificationConfig::from(core.get_push_config(get, owner).await?))
            }
            methods::PUSH_CONFIG_LIST => {
                let list = params::<v03::TaskIdParams, a2a::ListTaskPushNotificationConfigsRequest>(&request)?;
                let configs = core.list_push_configs(list, owner).await?.configs;
                let configs: Vec<v03::TaskPushNotificationConfig> =
                    configs.into_iter().map(v03::TaskPushNotificationConfig::from).collect();
                rpc_result(id.clone(), configs)
            }
            methods::PUSH_CONFIG_DELETE => {
                let delete = params::<v03::PushConfigParams, a2a::DeleteTaskPushNotificationConfigRequest>(&request)?;
                core.delete_push_config(delete, owner).await?;
                rpc_result(id.clone(), Value::Null)
            }
            methods::GET_AUTHENTICATED_EXTENDED_CARD => extended_card(state, &parts, id.clone()),
            other if a2a::jsonrpc::methods::ALL.contains(&other) => {
                return Err(A2aError::new(A2aErrorKind::MethodNotFound).with_message(format!(
                    "Method not found: {other} is an A2A 1.0 method; send A2A-Version: 1.0 to use it"
                )));
            }
            other => {
                return Err(
                    A2aError::new(A2aErrorKind::MethodNotFound).with_message(format!("Method not found: {other}"))
                );
            }
        })
    }
    .await;
    let mut response = match outcome {
        Ok(response) => response,
        Err(error) => error_for(&request.method, id, &error),
    };
    super::echo_extensions(&mut response, &activated);
    response
}

/// `agent/getAuthenticatedExtendedCard`: the extended card, or -32007 when the agent declares none.
fn extended_card(state: &JsonRpcState, parts: &http::request::Parts, id: Value) -> Response {
    let uri = parts.extensions.get::<axum::extract::OriginalUri>().map_or(&parts.uri, |original| &original.0);
    let base_url = crate::card::base_url_before(&parts.headers, uri, &state.path);
    match state.card.extended(parts.extensions.get::<Principal>(), &base_url) {
        Ok(card) => rpc_result(id, card),
        Err((error, challenges)) => {
            let error = if error.kind == A2aErrorKind::UnsupportedOperation {
                A2aError::new(A2aErrorKind::ExtendedAgentCardNotConfigured)
                    .with_message(v03::default_message(A2aErrorKind::ExtendedAgentCardNotConfigured))
            } else {
                error
            };
            let mut response = rpc_error(id, &error);
            response.headers_mut().extend(challenges.into_iter().map(|value| (header::WWW_AUTHENTICATE, value)));
            response
        }
    }
}

/// A stream's events in 0.3, each with its log sequence, ending after the first status update
/// marked `final` (both 0.3 bindings end their streams there).
pub(crate) fn events(
    stream: super::A2aStream,
) -> impl futures_util::Stream<Item = (Option<super::EventId>, v03::StreamEvent)> + Send {
    stream.map(|(sequence, response)| (sequence, v03::StreamEvent::from(response))).scan(
        false,
        |ended, (sequence, event)| {
            if *ended {
                return std::future::ready(None);
            }
            *ended = matches!(&event, v03::StreamEvent::StatusUpdate(update) if update.is_final);
            std::future::ready(Some((sequence, event)))
        },
    )
}

/// A 0.3 event stream: each event converted, the stream ending after the first status update
/// marked `final`.
fn sse(id: Value, stream: super::A2aStream) -> Response {
    super::event_stream::rpc_sse(id, events(stream))
}
