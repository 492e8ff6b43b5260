//! The A2A v1.0 JSON-RPC binding: one POST endpoint (its URL with or without a trailing `/`),
//! the eleven methods, SSE for the two streaming ones.
//!
//! Checks, in order: content type (`-32005` unless it is `application/json` or
//! `application/a2a+json`), body size, JSON (`-32700`), envelope (`-32600`; a JSON array is a
//! batch, which is not supported: refused whole, `id: null`), `A2A-Version` (`-32009`), method
//! (`-32601`), params (`-32602`). Every error carries a `google.rpc.ErrorInfo` in `data` when the
//! spec names a reason. Errors before a stream's first event are plain JSON-RPC responses, which
//! the official 1.x clients read as the error (a 0.3 request's are in an event stream:
//! [`super::v03::stream_error`]); a stream's events are `data: {"jsonrpc":"2.0","id":…,"result":…}`
//! with the task log's sequence as the SSE `id`. The envelope is read and written by
//! [`accord_types::jsonrpc`], strictly as the specification says.

use std::sync::Arc;

use accord_types::a2a::jsonrpc::methods;
use accord_types::a2a::{self, A2aError, A2aErrorKind, JsonRpcRequest, Validate};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::Response;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::JsonRpcState;
use super::errors::{self, RpcDialect};
use crate::auth::{Principal, caller_of};
use crate::body::BodyFailure;
use crate::refusal::{Refusal, Refusals};

/// A 1.0 JSON-RPC error response ([`errors::rpc_error`]).
pub(crate) fn rpc_error(id: Value, error: &A2aError) -> Response {
    errors::rpc_error(RpcDialect::V1_0, id, error)
}

/// How this binding answers a layer's refusal: a 1.0 JSON-RPC error with `id: null` (the body is
/// not read), at the transport's status (401, 429), with `Retry-After` and the challenges.
pub(crate) fn refusals() -> Refusals {
    Refusals::new(|refusal: &Refusal| refusal.finish_http(rpc_error(Value::Null, &errors::refusal_error(refusal))))
}

fn rpc_result(id: Value, result: impl serde::Serialize) -> Response {
    errors::rpc_result(RpcDialect::V1_0, id, result)
}

fn params<T: DeserializeOwned + Validate>(request: &JsonRpcRequest) -> Result<T, A2aError> {
    request.params_validated()
}

pub(crate) async fn handle(State(state): State<Arc<JsonRpcState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    // Errors before the dialect is settled are written in the shape the request asked for.
    let legacy = state.v03 && crate::version::requested(&parts.extensions).is_ok_and(|requested| requested.is_legacy());
    let rpc_error = |id: Value, error: &A2aError| {
        if legacy { super::v03::rpc_error(id, error) } else { rpc_error(id, error) }
    };
    if !crate::body::is_json(&parts.headers) {
        return rpc_error(
            Value::Null,
            &A2aError::new(A2aErrorKind::ContentTypeNotSupported)
                .with_message("Content-Type must be application/json (or application/a2a+json)"),
        );
    }
    let bytes = match crate::body::read_capped(Body::new(body), state.body_limit).await {
        Ok(bytes) => bytes,
        Err(failure) => {
            let error = A2aError::new(A2aErrorKind::InvalidRequest).with_message(failure.message());
            let mut response = rpc_error(Value::Null, &error);
            *response.status_mut() = match failure {
                BodyFailure::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
                BodyFailure::Broken => StatusCode::BAD_REQUEST,
            };
            return response;
        }
    };
    let request = match JsonRpcRequest::parse(&bytes) {
        Ok(request) => request,
        Err(error) => return rpc_error(error.id, &error.error),
    };
    let id = request.response_id();
    // Negotiated once by the version layer; reported here, after the envelope, so that the
    // answer carries the request's id.
    match crate::version::requested(&parts.extensions) {
        Ok(crate::version::Requested::V1_0) if state.v10 => {}
        Ok(crate::version::Requested::V0_3) if state.v03 => return super::v03::handle(&state, parts, request).await,
        Ok(requested) => {
            let refusal = requested.refusal_in(state.v10, state.v03);
            // A 0.x request's streaming method is refused inside an event stream, as 0.3 does.
            return if legacy { super::v03::error_for(&request.method, id, &refusal) } else { rpc_error(id, &refusal) };
        }
        Err(error) => return rpc_error(id, &error),
    }
    let activated = match super::negotiate_extensions(&parts.headers, &state.core.extensions) {
        Ok(activated) => activated,
        Err(error) => return rpc_error(id, &error),
    };
    let owner = caller_of(&parts.extensions);
    let resource = state.core.resource(&parts.headers, &parts.uri, &parts.extensions);
    let core = &state.core;
    let last_event_id = super::EventId::of_headers(&parts.headers);
    let outcome = match request.method.as_str() {
        methods::SEND_MESSAGE => match params::<a2a::SendMessageRequest>(&request) {
            Ok(params) => {
                core.send_message(params, owner, resource).await.map(|response| rpc_result(id.clone(), response))
            }
            Err(error) => Err(error),
        },
        methods::SEND_STREAMING_MESSAGE => match params::<a2a::SendMessageRequest>(&request) {
            Ok(params) => core.send_streaming(params, owner, resource).await.map(|stream| sse(id.clone(), stream)),
            Err(error) => Err(error),
        },
        methods::GET_TASK => match params::<a2a::GetTaskRequest>(&request) {
            Ok(params) => core.get_task(params, owner).await.map(|task| rpc_result(id.clone(), task)),
            Err(error) => Err(error),
        },
        methods::LIST_TASKS => match params::<a2a::ListTasksRequest>(&request) {
            Ok(params) => core.list_tasks(params, owner).await.map(|list| rpc_result(id.clone(), list)),
            Err(error) => Err(error),
        },
        methods::CANCEL_TASK => match params::<a2a::CancelTaskRequest>(&request) {
            Ok(params) => core.cancel_task(params, owner).await.map(|task| rpc_result(id.clone(), task)),
            Err(error) => Err(error),
        },
        methods::SUBSCRIBE_TO_TASK => match params::<a2a::SubscribeToTaskRequest>(&request) {
            Ok(params) => core.subscribe(params, owner, last_event_id).await.map(|stream| sse(id.clone(), stream)),
            Err(error) => Err(error),
        },
        methods::GET_EXTENDED_AGENT_CARD => {
            let uri = parts.extensions.get::<axum::extract::OriginalUri>().map_or(&parts.uri, |original| &original.0);
            let base_url = crate::card::base_url_before(&parts.headers, uri, &state.path);
            match state.card.extended(parts.extensions.get::<Principal>(), &base_url) {
                Ok(card) => Ok(rpc_result(id.clone(), card)),
                Err((error, challenges)) => {
                    let mut response = rpc_error(id.clone(), &error);
                    response
                        .headers_mut()
                        .extend(challenges.into_iter().map(|value| (header::WWW_AUTHENTICATE, value)));
                    Ok(response)
                }
            }
        }
        methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => match params::<a2a::TaskPushNotificationConfig>(&request) {
            Ok(params) => core.create_push_config(params, owner).await.map(|config| rpc_result(id.clone(), config)),
            Err(error) => Err(error),
        },
        methods::GET_TASK_PUSH_NOTIFICATION_CONFIG => {
            match params::<a2a::GetTaskPushNotificationConfigRequest>(&request) {
                Ok(params) => core.get_push_config(params, owner).await.map(|config| rpc_result(id.clone(), config)),
                Err(error) => Err(error),
            }
        }
        methods::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => {
            match params::<a2a::ListTaskPushNotificationConfigsRequest>(&request) {
                Ok(params) => core.list_push_configs(params, owner).await.map(|list| rpc_result(id.clone(), list)),
                Err(error) => Err(error),
            }
        }
        methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => {
            match params::<a2a::DeleteTaskPushNotificationConfigRequest>(&request) {
                Ok(params) => core.delete_push_config(params, owner).await.map(|empty| rpc_result(id.clone(), empty)),
                Err(error) => Err(error),
            }
        }
        other => Err(A2aError::new(A2aErrorKind::MethodNotFound).with_message(format!("Method not found: {other}"))),
    };
    let mut response = match outcome {
        Ok(response) => response,
        Err(error) => rpc_error(id, &error),
    };
    super::echo_extensions(&mut response, &activated);
    response
}

/// A 1.0 event stream: each `StreamResponse` as it is.
fn sse(id: Value, stream: super::A2aStream) -> Response {
    super::event_stream::rpc_sse(id, stream)
}
