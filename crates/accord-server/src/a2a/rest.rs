//! The A2A v1.0 HTTP+JSON binding: the REST routes of the spec under one base path, ProtoJSON
//! bodies, `google.rpc.Status` errors with the v1.0.1 HTTP mapping, SSE for the two streaming
//! operations (each `data:` a bare `StreamResponse`, the task log's sequence as the SSE `id`).
//!
//! Routes (relative to the binding's path): `POST /message:send`, `POST /message:stream`,
//! `GET /tasks`, `GET /tasks/{id}`, `POST /tasks/{id}:cancel`, `GET|POST /tasks/{id}:subscribe`,
//! the push-configuration routes (answered `PushNotificationNotSupportedError`) and
//! `GET /extendedAgentCard`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use accord_types::a2a::{self, A2aError, A2aErrorKind, ErrorMapping, Validate};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::A2aCore;
use super::jsonrpc::check_version;
use crate::auth::{Principal, owner_of};

/// What the routes need.
#[derive(Debug, Clone)]
pub(crate) struct RestState {
    pub(crate) core: A2aCore,
    pub(crate) body_limit: usize,
}

type Shared = State<Arc<RestState>>;

/// The binding's routes.
pub(crate) fn routes(state: Arc<RestState>) -> Router {
    Router::new()
        .route("/message:send", post(send))
        .route("/message:stream", post(stream))
        .route("/tasks", get(list))
        .route("/tasks/{task}", any(task_route))
        .route("/tasks/{task}/pushNotificationConfigs", any(push_unsupported))
        .route("/tasks/{task}/pushNotificationConfigs/{config}", any(push_unsupported))
        .route("/extendedAgentCard", get(extended_card))
        .with_state(state)
}

fn error(error: &A2aError) -> Response {
    let status =
        StatusCode::from_u16(error.http_status(ErrorMapping::V1_0_1)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(error.to_rest_body(ErrorMapping::V1_0_1))).into_response()
}

fn ok(value: impl serde::Serialize) -> Response {
    (StatusCode::OK, axum::Json(value)).into_response()
}

fn owner(request: &Request) -> accord_engine::task::OwnerHash {
    owner_of(request.extensions().get::<Principal>())
}

/// Version, then (for requests with a body) content type, size and ProtoJSON decoding.
async fn body_of<T: DeserializeOwned + Validate>(state: &RestState, request: Request) -> Result<T, A2aError> {
    let (parts, body) = request.into_parts();
    check_version(&parts.headers, parts.uri.query())?;
    let json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_ascii_lowercase)
        .is_some_and(|value| value.contains("application/json") || value.contains("application/a2a+json"));
    if !json {
        return Err(A2aError::new(A2aErrorKind::ContentTypeNotSupported)
            .with_message("Content-Type must be application/json or application/a2a+json"));
    }
    let bytes = axum::body::to_bytes(Body::new(body), state.body_limit).await.map_err(|_| {
        A2aError::new(A2aErrorKind::InvalidRequest)
            .with_message(format!("the request body exceeds {} bytes", state.body_limit))
    })?;
    let value: T = serde_json::from_slice(&bytes).map_err(|error| {
        A2aError::new(A2aErrorKind::InvalidParams).with_message(format!("invalid request body: {error}"))
    })?;
    value.validate()?;
    Ok(value)
}

/// A request decoded from the query string (camelCase names; snake_case accepted too).
fn from_query<T: DeserializeOwned + Validate>(
    query: &HashMap<String, String>,
    extra: &[(&str, Value)],
) -> Result<T, A2aError> {
    let mut object = Map::new();
    for (name, value) in query {
        if name.eq_ignore_ascii_case("a2a-version") {
            continue;
        }
        let value = match value.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            text => text.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(text.to_owned())),
        };
        object.insert(name.clone(), value);
    }
    for (name, value) in extra {
        object.insert((*name).to_owned(), value.clone());
    }
    let value: T = serde_json::from_value(Value::Object(object))
        .map_err(|error| A2aError::new(A2aErrorKind::InvalidParams).with_message(format!("invalid query: {error}")))?;
    value.validate()?;
    Ok(value)
}

async fn send(State(state): Shared, request: Request) -> Response {
    let owner = owner(&request);
    let result = async {
        let body: a2a::SendMessageRequest = body_of(&state, request).await?;
        state.core.send_message(body, owner).await
    };
    match result.await {
        Ok(response) => ok(response),
        Err(failure) => error(&failure),
    }
}

async fn stream(State(state): Shared, request: Request) -> Response {
    let owner = owner(&request);
    let result = async {
        let body: a2a::SendMessageRequest = body_of(&state, request).await?;
        state.core.send_streaming(body, owner).await
    };
    match result.await {
        Ok(stream) => sse(stream),
        Err(failure) => error(&failure),
    }
}

async fn list(
    State(state): Shared,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    principal: Option<axum::Extension<Principal>>,
) -> Response {
    let owner = owner_of(principal.as_ref().map(|axum::Extension(principal)| principal));
    let result = async {
        check_version(&headers, uri.query())?;
        let list: a2a::ListTasksRequest = from_query(&query, &[])?;
        state.core.list_tasks(list, owner).await
    };
    match result.await {
        Ok(list) => ok(list),
        Err(failure) => error(&failure),
    }
}

/// `/tasks/{id}`, `/tasks/{id}:cancel` and `/tasks/{id}:subscribe` share one path segment.
async fn task_route(
    State(state): Shared,
    Path(segment): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    request: Request,
) -> Response {
    let owner = owner(&request);
    let headers: HeaderMap = request.headers().clone();
    let method = request.method().clone();
    if let Err(failure) = check_version(&headers, request.uri().query()) {
        return error(&failure);
    }
    let (id, action) = match segment.rsplit_once(':') {
        Some((id, action)) => (id.to_owned(), Some(action.to_owned())),
        None => (segment, None),
    };
    let id_value = Value::String(id);
    match (method, action.as_deref()) {
        (Method::GET, None) => match from_query::<a2a::GetTaskRequest>(&query, &[("id", id_value)]) {
            Ok(get) => state.core.get_task(get, owner).await.map_or_else(|failure| error(&failure), ok),
            Err(failure) => error(&failure),
        },
        (Method::POST, Some("cancel")) => {
            match from_query::<a2a::CancelTaskRequest>(&HashMap::new(), &[("id", id_value)]) {
                Ok(cancel) => state.core.cancel_task(cancel, owner).await.map_or_else(|failure| error(&failure), ok),
                Err(failure) => error(&failure),
            }
        }
        (Method::GET | Method::POST, Some("subscribe")) => {
            let last_event_id = headers
                .get("last-event-id")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok());
            match from_query::<a2a::SubscribeToTaskRequest>(&HashMap::new(), &[("id", id_value)]) {
                Ok(subscribe) => match state.core.subscribe(subscribe, owner, last_event_id).await {
                    Ok(stream) => sse(stream),
                    Err(failure) => error(&failure),
                },
                Err(failure) => error(&failure),
            }
        }
        _ => error(&A2aError::new(A2aErrorKind::MethodNotFound).with_message("no such operation on a task")),
    }
}

async fn push_unsupported(request: Request) -> Response {
    if let Err(failure) = check_version(request.headers(), request.uri().query()) {
        return error(&failure);
    }
    error(&A2aError::new(A2aErrorKind::PushNotificationNotSupported))
}

async fn extended_card(request: Request) -> Response {
    if let Err(failure) = check_version(request.headers(), request.uri().query()) {
        return error(&failure);
    }
    error(
        &A2aError::new(A2aErrorKind::UnsupportedOperation)
            .with_message("this agent does not declare an extended agent card"),
    )
}

fn sse(stream: super::A2aStream) -> Response {
    let events = stream.map(|(sequence, response)| {
        let event = Event::default().data(serde_json::to_string(&response).unwrap_or_default());
        Ok::<_, Infallible>(match sequence {
            Some(sequence) => event.id(sequence.to_string()),
            None => event,
        })
    });
    crate::lucid::stream::sse_response(Sse::new(events).keep_alive(KeepAlive::default()))
}
