//! The A2A 0.3 dialect of the HTTP+JSON binding: the 0.3 routes under `/v1/` of the REST base
//! path (a 0.3 client appends `/v1/message:send` … to the interface URL on the card), bodies in
//! the ProtoJSON of the 0.3 proto ([`accord_types::a2a::v03::proto`]).
//!
//! Routes: `POST /v1/message:send`, `POST /v1/message:stream`, `GET /v1/tasks/{id}`,
//! `POST /v1/tasks/{id}:cancel`, `GET|POST /v1/tasks/{id}:subscribe`,
//! `POST|GET /v1/tasks/{id}/pushNotificationConfigs`,
//! `GET|DELETE /v1/tasks/{id}/pushNotificationConfigs/{config}` and `GET /v1/card`.
//!
//! The 1.0 binding serves `/{tenant}/message:send` …, so these paths are also 1.0 paths for the
//! tenant `v1`: a layer reads the version first and hands a 1.0 request (`A2A-Version: 1.0`) to
//! the 1.0 routes untouched; no version, or `0.3`, is served here; another `0.x` is refused in the
//! 0.3 shape. Each handler converts the body into the v1.0 request, calls the same [`A2aCore`]
//! operation as every other binding, and converts the answer back. Errors are `{code, message,
//! data}` — the 0.3 JSON-RPC error object ([`v03::error_object`]), which the 0.3 SDKs' REST
//! transports read — with the HTTP status of the binding's configured mapping. Streams end after
//! the status update marked `final`, as on 0.3 JSON-RPC. A stream refused before its first event
//! is answered with that error's status and body, not an event stream (unlike 0.3 JSON-RPC):
//! that is what the official 0.3 JS SDK's REST server answers, and what the 0.3 SDKs' REST
//! clients read, by the status, before they read a stream.

use std::collections::HashMap;
use std::sync::Arc;

use accord_types::a2a::v03::{self, proto};
use accord_types::a2a::{self, A2aError, A2aErrorKind, ErrorMapping, Validate};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, any, get, post};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use tower::ServiceExt;

use super::rest::RestState;
use crate::auth::{Principal, caller_of};
use crate::openapi::{Routes, describe};
use crate::version::Requested;

type Shared = State<Arc<RestState>>;

/// What the version layer needs: the 1.0 routes, for requests that are not 0.3.
#[derive(Clone)]
struct Dispatch {
    v10: Router,
    state: Arc<RestState>,
}

/// The 0.3 routes, relative to the REST base path; `v10` is the 1.0 binding's router (relative
/// too), which serves the same paths for 1.0 requests.
pub(crate) fn routes(state: Arc<RestState>, v10: Router) -> Routes {
    let with = |handler: MethodRouter<Arc<RestState>>| handler.with_state(Arc::clone(&state));
    let dispatch = Dispatch { v10, state: Arc::clone(&state) };
    Routes::new()
        .route(proto::paths::MESSAGE_SEND, with(post(send)), describe::v03_rest_send())
        .route(proto::paths::MESSAGE_STREAM, with(post(stream)), describe::v03_rest_stream())
        .route("/v1/tasks/{task}", with(any(task_route)), describe::v03_rest_task())
        .route(
            "/v1/tasks/{task}/pushNotificationConfigs",
            with(post(create_push).get(list_push)),
            describe::v03_rest_push_configs(),
        )
        .route(
            "/v1/tasks/{task}/pushNotificationConfigs/{config}",
            with(get(get_push).delete(delete_push)),
            describe::v03_rest_push_config(),
        )
        .route(proto::paths::CARD, with(get(extended_card)), describe::v03_rest_card())
        .map_router(|router| router.route_layer(axum::middleware::from_fn_with_state(dispatch, by_version)))
}

/// Sends a request to the dialect it asks for: 0.3 here (after the extensions check), 1.0 to the
/// 1.0 routes, another 0.x refused in the 0.3 shape.
async fn by_version(State(dispatch): State<Dispatch>, request: Request, next: Next) -> Response {
    let requested = Requested::of(request.headers(), request.uri().query());
    let mapping = dispatch.state.mapping;
    match requested {
        Requested::V0_3 => {}
        ref other if other.is_legacy() => return error(mapping, &other.refusal_in(dispatch.state.v10, true)),
        _ if request.uri().path() == proto::paths::CARD => {
            // No 1.0 route has this path; answer as the 1.0 binding answers an unknown operation.
            let failure = A2aError::new(A2aErrorKind::MethodNotFound)
                .with_message("GET /v1/card is an A2A 0.3 operation; A2A 1.0 has /extendedAgentCard");
            return super::rest::error_with(mapping, &failure);
        }
        _ => {
            return match dispatch.v10.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
        }
    }
    let headers = super::v03::extension_headers(request.headers());
    match super::negotiate_extensions(&headers, &dispatch.state.core.extensions) {
        Ok(activated) => {
            let mut response = next.run(request).await;
            super::echo_extensions(&mut response, &activated);
            response
        }
        Err(failure) => error(mapping, &failure),
    }
}

/// The HTTP status of an error on 0.3 REST: the 0.3 SDK servers' table for the 0.3 catalogue
/// (404 task not found, 409 not cancelable, 415 content type, 501 unsupported, 502 invalid agent
/// response, 404 no extended card; 400 for invalid params, as the JS SDK and 1.0 answer), the
/// binding's 1.0 mapping for the rest (401, 429, version and extension errors, Accord's own).
fn status_of(mapping: ErrorMapping, failure: &A2aError) -> StatusCode {
    let status = match failure.kind {
        A2aErrorKind::TaskNotFound | A2aErrorKind::MethodNotFound => 404,
        A2aErrorKind::TaskNotCancelable => 409,
        A2aErrorKind::ContentTypeNotSupported => 415,
        A2aErrorKind::PushNotificationNotSupported | A2aErrorKind::UnsupportedOperation => 501,
        A2aErrorKind::InvalidAgentResponse => 502,
        A2aErrorKind::ExtendedAgentCardNotConfigured => 404,
        A2aErrorKind::InvalidParams | A2aErrorKind::InvalidRequest | A2aErrorKind::JsonParse => 400,
        _ => failure.http_status(mapping),
    };
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// A 0.3 REST error: the 0.3 error object as the body, the HTTP status of [`status_of`], and
/// `Retry-After` when it is retryable.
pub(crate) fn error(mapping: ErrorMapping, failure: &A2aError) -> Response {
    let status = status_of(mapping, failure);
    let mut response = (status, axum::Json(v03::error_object(failure))).into_response();
    if let Some(seconds) = super::errors::retry_after_of(failure) {
        crate::refusal::set_retry_after(&mut response, seconds);
    }
    response
}

fn ok(value: impl serde::Serialize) -> Response {
    (StatusCode::OK, axum::Json(value)).into_response()
}

fn owner(request: &Request) -> accord_engine::task::Caller {
    caller_of(request.extensions())
}

/// Content type, size and ProtoJSON decoding of a body.
async fn body_of<T: DeserializeOwned>(state: &RestState, request: Request) -> Result<T, A2aError> {
    let (parts, body) = request.into_parts();
    if !crate::body::is_json(&parts.headers) {
        return Err(
            A2aError::new(A2aErrorKind::ContentTypeNotSupported).with_message("Content-Type must be application/json")
        );
    }
    let bytes = crate::body::read_capped(Body::new(body), state.body_limit)
        .await
        .map_err(|failure| A2aError::new(A2aErrorKind::InvalidRequest).with_message(failure.message()))?;
    serde_json::from_slice(&bytes).map_err(|failure| {
        A2aError::new(A2aErrorKind::InvalidParams).with_message(format!("invalid request body: {failure}"))
    })
}

/// A send's body as the v1.0 request, validated.
async fn send_request(state: &RestState, request: Request) -> Result<a2a::SendMessageRequest, A2aError> {
    let body: proto::SendMessageRequest = body_of(state, request).await?;
    let send = a2a::SendMessageRequest::from(v03::MessageSendParams::from(body));
    send.validate()?;
    Ok(send)
}

fn task_of(task: v03::Task) -> proto::Task {
    proto::Task::from(task)
}

async fn send(State(state): Shared, request: Request) -> Response {
    let owner = owner(&request);
    let resource = state.core.resource(request.headers(), request.uri(), request.extensions());
    let result = async {
        let send = send_request(&state, request).await?;
        state.core.send_message(send, owner, resource).await
    };
    match result.await {
        Ok(response) => ok(proto::SendMessageResponse::from(v03::SendMessageResult::from(response))),
        Err(failure) => error(state.mapping, &failure),
    }
}

async fn stream(State(state): Shared, request: Request) -> Response {
    let owner = owner(&request);
    let resource = state.core.resource(request.headers(), request.uri(), request.extensions());
    let result = async {
        let send = send_request(&state, request).await?;
        state.core.send_streaming(send, owner, resource).await
    };
    match result.await {
        Ok(events) => sse(events),
        Err(failure) => error(state.mapping, &failure),
    }
}

/// `GET /v1/tasks/{id}` (`historyLength` in the query), `POST …:cancel`, `GET|POST …:subscribe`:
/// one path segment.
async fn task_route(State(state): Shared, call: Result<super::TaskCall, super::TaskCallRefused>) -> Response {
    let fail = |failure: &A2aError| error(state.mapping, failure);
    let super::TaskCall { owner, id, operation, query, last_event_id, .. } = match call {
        Ok(call) => call,
        Err(refused) => return fail(&refused.0),
    };
    match operation {
        super::TaskOperation::Get => {
            let history = query.get("historyLength").or_else(|| query.get("history_length"));
            let history_length = match history.map(|text| text.trim().parse::<i32>()) {
                None => None,
                Some(Ok(length)) => Some(length),
                Some(Err(_)) => return fail(&super::invalid_params("historyLength must be an integer")),
            };
            let get = a2a::GetTaskRequest { tenant: None, id, history_length };
            if let Err(failure) = get.validate() {
                return fail(&failure.into());
            }
            match state.core.get_task(get, owner).await {
                Ok(task) => ok(task_of(task.into())),
                Err(failure) => fail(&failure),
            }
        }
        super::TaskOperation::Cancel => {
            let cancel = a2a::CancelTaskRequest { tenant: None, id, metadata: None };
            if let Err(failure) = cancel.validate() {
                return fail(&failure.into());
            }
            match state.core.cancel_task(cancel, owner).await {
                Ok(task) => ok(task_of(task.into())),
                Err(failure) => fail(&failure),
            }
        }
        super::TaskOperation::Subscribe => {
            let subscribe = a2a::SubscribeToTaskRequest { tenant: None, id };
            if let Err(failure) = subscribe.validate() {
                return fail(&failure.into());
            }
            match state.core.subscribe(subscribe, owner, last_event_id).await {
                Ok(events) => sse(events),
                Err(failure) => fail(&failure),
            }
        }
    }
}

/// `POST /v1/tasks/{task}/pushNotificationConfigs`: the body is a create request (`{parent,
/// configId, config}`, what the 0.3 Python SDK sends) or the config itself (`{name,
/// pushNotificationConfig}`, what the 0.3 JS SDK sends). The config's id is `configId`, else the
/// config's own, else the one in its `name`, else the task's (as on 0.3 JSON-RPC).
async fn create_push(State(state): Shared, Path(params): Path<HashMap<String, String>>, request: Request) -> Response {
    let fail = |failure: &A2aError| error(state.mapping, failure);
    let owner = owner(&request);
    let task = params.get("task").cloned().unwrap_or_default();
    let body: serde_json::Value = match body_of(&state, request).await {
        Ok(body) => body,
        Err(failure) => return fail(&failure),
    };
    let parsed = if body.get("config").is_some() {
        serde_json::from_value::<proto::CreateTaskPushNotificationConfigRequest>(body)
    } else {
        serde_json::from_value::<proto::TaskPushNotificationConfig>(body).map(|config| {
            proto::CreateTaskPushNotificationConfigRequest { parent: String::new(), config_id: String::new(), config }
        })
    };
    let create = match parsed {
        Ok(create) => create,
        Err(failure) => {
            return fail(
                &A2aError::new(A2aErrorKind::InvalidParams).with_message(format!("invalid request body: {failure}")),
            );
        }
    };
    let named_task = proto::name_parts(&create.parent).0.or(create.config.name_parts().0);
    if named_task.is_some_and(|named| named != task) {
        return fail(&super::invalid_params("the body's task differs from the path's"));
    }
    let config_id = Some(create.config_id.clone()).filter(|id| !id.is_empty());
    let mut config = v03::TaskPushNotificationConfig::from(create.config);
    config.task_id.clone_from(&task);
    if let Some(id) = config_id {
        config.push_notification_config.id = Some(id);
    }
    let config = config.into_create();
    if let Err(failure) = config.validate() {
        return fail(&failure.into());
    }
    match state.core.create_push_config(config, owner).await {
        Ok(kept) => ok(proto::TaskPushNotificationConfig::from(v03::TaskPushNotificationConfig::from(kept))),
        Err(failure) => fail(&failure),
    }
}

/// `GET /v1/tasks/{task}/pushNotificationConfigs`: every config, one page.
async fn list_push(State(state): Shared, Path(params): Path<HashMap<String, String>>, request: Request) -> Response {
    let list = a2a::ListTaskPushNotificationConfigsRequest {
        tenant: None,
        task_id: params.get("task").cloned().unwrap_or_default(),
        page_size: None,
        page_token: None,
    };
    let owner = owner(&request);
    let result = async {
        list.validate()?;
        state.core.list_push_configs(list, owner).await
    };
    match result.await {
        Ok(list) => {
            let configs: Vec<v03::TaskPushNotificationConfig> =
                list.configs.into_iter().map(v03::TaskPushNotificationConfig::from).collect();
            ok(proto::ListTaskPushNotificationConfigResponse::from(configs))
        }
        Err(failure) => error(state.mapping, &failure),
    }
}

fn push_params(params: &HashMap<String, String>) -> v03::PushConfigParams {
    v03::PushConfigParams {
        id: params.get("task").cloned().unwrap_or_default(),
        push_notification_config_id: params.get("config").cloned(),
        metadata: None,
    }
}

/// `GET /v1/tasks/{task}/pushNotificationConfigs/{config}`.
async fn get_push(State(state): Shared, Path(params): Path<HashMap<String, String>>, request: Request) -> Response {
    let get = a2a::GetTaskPushNotificationConfigRequest::from(push_params(&params));
    let owner = owner(&request);
    let result = async {
        get.validate()?;
        state.core.get_push_config(get, owner).await
    };
    match result.await {
        Ok(config) => ok(proto::TaskPushNotificationConfig::from(v03::TaskPushNotificationConfig::from(config))),
        Err(failure) => error(state.mapping, &failure),
    }
}

/// `DELETE /v1/tasks/{task}/pushNotificationConfigs/{config}`: `{}` (the proto's `Empty`).
async fn delete_push(State(state): Shared, Path(params): Path<HashMap<String, String>>, request: Request) -> Response {
    let delete = a2a::DeleteTaskPushNotificationConfigRequest::from(push_params(&params));
    let owner = owner(&request);
    let result = async {
        delete.validate()?;
        state.core.delete_push_config(delete, owner).await
    };
    match result.await {
        Ok(_) => ok(serde_json::json!({})),
        Err(failure) => error(state.mapping, &failure),
    }
}

/// `GET /v1/card`: the extended card, or -32007 (404) when the agent declares none.
async fn extended_card(
    State(state): Shared,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    headers: http::HeaderMap,
    principal: Option<axum::Extension<Principal>>,
) -> Response {
    let suffix = format!("{}{}", state.path.trim_end_matches('/'), proto::paths::CARD);
    let base_url = crate::card::base_url_before(&headers, &uri, &suffix);
    match state.card.extended(principal.as_ref().map(|axum::Extension(principal)| principal), &base_url) {
        Ok(card) => ok(card),
        Err((failure, challenges)) => {
            let failure = if failure.kind == A2aErrorKind::UnsupportedOperation {
                A2aError::new(A2aErrorKind::ExtendedAgentCardNotConfigured)
                    .with_message(v03::default_message(A2aErrorKind::ExtendedAgentCardNotConfigured))
            } else {
                failure
            };
            let mut response = error(state.mapping, &failure);
            response.headers_mut().extend(challenges.into_iter().map(|value| (header::WWW_AUTHENTICATE, value)));
            response
        }
    }
}

/// A 0.3 REST stream: each `data:` a bare proto `StreamResponse`, the log sequence as the SSE
/// `id`, ending after the `final` status update.
fn sse(stream: super::A2aStream) -> Response {
    let events = super::v03::events(stream).map(|(sequence, event)| (sequence, proto::StreamResponse::from(event)));
    super::event_stream::sse(events)
}
