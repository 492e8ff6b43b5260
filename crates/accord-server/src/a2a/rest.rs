//! The A2A v1.0 HTTP+JSON binding: the REST routes of the spec under one base path, ProtoJSON
//! bodies, `google.rpc.Status` errors with the v1.0.1 HTTP mapping, SSE for the two streaming
//! operations (each `data:` a bare `StreamResponse`, the task log's sequence as the SSE `id`).
//!
//! Routes (relative to the binding's path): `POST /message:send`, `POST /message:stream`,
//! `GET /tasks`, `GET /tasks/{id}`, `POST /tasks/{id}:cancel`, `GET|POST /tasks/{id}:subscribe`,
//! the push-configuration routes and
//! `GET /extendedAgentCard` — each also under a `/{tenant}` prefix, which scopes the caller (see
//! the parent module). A body's own `tenant`, when present, must agree with the path's.

use std::collections::HashMap;
use std::sync::Arc;

use accord_types::a2a::{self, A2aError, A2aErrorKind, ErrorMapping, Validate};
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, any, get, post};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::A2aCore;
use crate::auth::{Principal, caller_of};
use crate::openapi::{Routes, describe};
use crate::refusal::{Refusal, Refusals};

/// What the routes need.
#[derive(Debug, Clone)]
pub(crate) struct RestState {
    pub(crate) core: A2aCore,
    pub(crate) body_limit: usize,
    pub(crate) mapping: ErrorMapping,
    /// The card's builder, for `GET /extendedAgentCard`.
    pub(crate) card: Arc<crate::card::CardBuilder>,
    /// The binding's base path, to find the agent's base URL from a request's.
    pub(crate) path: String,
    /// Whether 1.0 is served (off: every request to these routes is refused).
    pub(crate) v10: bool,
}

type Shared = State<Arc<RestState>>;

/// The path parameters of a route (`tenant`, `task`), none for the unprefixed routes.
type Params = Option<Path<HashMap<String, String>>>;

/// The binding's routes, plain and under `/{tenant}`, with their operations.
pub(crate) fn routes(state: Arc<RestState>) -> Routes {
    let with = |handler: MethodRouter<Arc<RestState>>| handler.with_state(Arc::clone(&state));
    let operations = Routes::new()
        .route("/message:send", with(post(send)), describe::rest_send())
        .route("/message:stream", with(post(stream)), describe::rest_stream())
        .route("/tasks", with(get(list)), describe::rest_list())
        .route("/tasks/{task}", with(any(task_route)), describe::rest_task())
        .route(
            "/tasks/{task}/pushNotificationConfigs",
            with(post(create_push).get(list_push)),
            describe::rest_push_configs(),
        )
        .route(
            "/tasks/{task}/pushNotificationConfigs/{config}",
            with(get(get_push).delete(delete_push)),
            describe::rest_push_config(),
        )
        .route("/extendedAgentCard", with(get(extended_card)), describe::rest_extended_card())
        .map_router(|router| {
            router
                .route_layer(axum::middleware::from_fn_with_state(Arc::clone(&state), extensions))
                // Outermost: the version is this binding's first check.
                .route_layer(axum::middleware::from_fn_with_state(
                    (refusals(state.mapping), state.v10),
                    crate::version::refuse,
                ))
        });
    let tenanted = operations
        .clone()
        .nest("/{tenant}")
        .with_path_param("tenant", "The tenant the caller acts within")
        .rename_operations(|id| format!("{id}ForTenant"));
    operations.merge(tenanted)
}

/// `A2A-Extensions` for every operation (after the version layer): a required extension not
/// activated is refused, the activated ones are echoed.
async fn extensions(State(state): Shared, request: Request, next: axum::middleware::Next) -> Response {
    match super::negotiate_extensions(request.headers(), &state.core.extensions) {
        Ok(activated) => {
            let mut response = next.run(request).await;
            super::echo_extensions(&mut response, &activated);
            response
        }
        Err(failure) => error_with(state.mapping, &failure),
    }
}

/// How this binding answers a layer's refusal: a `google.rpc.Status` body with the configured
/// HTTP mapping, at the transport's status (401, 429) when it has one, with `Retry-After` and the
/// challenges.
pub(crate) fn refusals(mapping: ErrorMapping) -> Refusals {
    Refusals::new(move |refusal: &Refusal| {
        refusal.finish_http(error_with(mapping, &super::errors::refusal_error(refusal)))
    })
}

/// Renders an error with the configured HTTP mapping (and `Retry-After` when it is retryable).
pub(crate) fn error_with(mapping: ErrorMapping, error: &A2aError) -> Response {
    let status = StatusCode::from_u16(error.http_status(mapping)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(error.to_rest_body(mapping))).into_response();
    if let Some(seconds) = super::errors::retry_after_of(error) {
        crate::refusal::set_retry_after(&mut response, seconds);
    }
    response
}

fn tenant_of(params: &Params) -> Option<String> {
    params.as_ref().and_then(|Path(params)| params.get("tenant").cloned())
}

/// Puts the path's tenant into a body's `tenant`, refusing a body that names another.
fn with_tenant(body: Option<String>, path: Option<String>) -> Result<Option<String>, A2aError> {
    match (body, path) {
        (Some(body), Some(path)) if !body.is_empty() && body != path => {
            Err(super::invalid_params("the body's tenant differs from the path's"))
        }
        (_, Some(path)) => Ok(Some(path)),
        (body, None) => Ok(body),
    }
}

fn ok(value: impl serde::Serialize) -> Response {
    (StatusCode::OK, axum::Json(value)).into_response()
}

fn owner(request: &Request) -> accord_engine::task::Caller {
    caller_of(request.extensions())
}

/// Content type, size and ProtoJSON decoding (the version layer has already run).
async fn body_of<T: DeserializeOwned + Validate>(state: &RestState, request: Request) -> Result<T, A2aError> {
    let (parts, body) = request.into_parts();
    if !crate::body::is_json(&parts.headers) {
        return Err(A2aError::new(A2aErrorKind::ContentTypeNotSupported)
            .with_message("Content-Type must be application/json or application/a2a+json"));
    }
    let bytes = crate::body::read_capped(Body::new(body), state.body_limit)
        .await
        .map_err(|failure| A2aError::new(A2aErrorKind::InvalidRequest).with_message(failure.message()))?;
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

async fn send(State(state): Shared, params: Params, request: Request) -> Response {
    let owner = owner(&request);
    let resource = state.core.resource(request.headers(), request.uri(), request.extensions());
    let result = async {
        let mut body: a2a::SendMessageRequest = body_of(&state, request).await?;
        body.tenant = with_tenant(body.tenant.take(), tenant_of(&params))?;
        state.core.send_message(body, owner, resource).await
    };
    match result.await {
        Ok(response) => ok(response),
        Err(failure) => error_with(state.mapping, &failure),
    }
}

async fn stream(State(state): Shared, params: Params, request: Request) -> Response {
    let owner = owner(&request);
    let resource = state.core.resource(request.headers(), request.uri(), request.extensions());
    let result = async {
        let mut body: a2a::SendMessageRequest = body_of(&state, request).await?;
        body.tenant = with_tenant(body.tenant.take(), tenant_of(&params))?;
        state.core.send_streaming(body, owner, resource).await
    };
    match result.await {
        Ok(stream) => sse(stream),
        Err(failure) => error_with(state.mapping, &failure),
    }
}

async fn list(
    State(state): Shared,
    params: Params,
    Query(query): Query<HashMap<String, String>>,
    extensions: http::Extensions,
) -> Response {
    let owner = caller_of(&extensions);
    let result = async {
        let mut list: a2a::ListTasksRequest = from_query(&query, &[])?;
        list.tenant = with_tenant(list.tenant.take(), tenant_of(&params))?;
        state.core.list_tasks(list, owner).await
    };
    match result.await {
        Ok(list) => ok(list),
        Err(failure) => error_with(state.mapping, &failure),
    }
}

/// `/tasks/{id}`, `/tasks/{id}:cancel` and `/tasks/{id}:subscribe` share one path segment.
async fn task_route(State(state): Shared, call: Result<super::TaskCall, super::TaskCallRefused>) -> Response {
    let error = |failure: &A2aError| error_with(state.mapping, failure);
    let super::TaskCall { owner, id, operation, tenant, mut query, last_event_id } = match call {
        Ok(call) => call,
        Err(refused) => return error(&refused.0),
    };
    let tenant = tenant.map(|tenant| ("tenant", Value::String(tenant)));
    query.remove("tenant");
    let path_fields: Vec<(&str, Value)> = [Some(("id", Value::String(id))), tenant].into_iter().flatten().collect();
    match operation {
        super::TaskOperation::Get => match from_query::<a2a::GetTaskRequest>(&query, &path_fields) {
            Ok(get) => state.core.get_task(get, owner).await.map_or_else(|failure| error(&failure), ok),
            Err(failure) => error(&failure),
        },
        super::TaskOperation::Cancel => match from_query::<a2a::CancelTaskRequest>(&HashMap::new(), &path_fields) {
            Ok(cancel) => state.core.cancel_task(cancel, owner).await.map_or_else(|failure| error(&failure), ok),
            Err(failure) => error(&failure),
        },
        super::TaskOperation::Subscribe => {
            match from_query::<a2a::SubscribeToTaskRequest>(&HashMap::new(), &path_fields) {
                Ok(subscribe) => match state.core.subscribe(subscribe, owner, last_event_id).await {
                    Ok(stream) => sse(stream),
                    Err(failure) => error(&failure),
                },
                Err(failure) => error(&failure),
            }
        }
    }
}

/// `POST /tasks/{task}/pushNotificationConfigs`: the body is the config without its task (a
/// body naming another task is refused).
async fn create_push(State(state): Shared, Path(params): Path<HashMap<String, String>>, request: Request) -> Response {
    let error = |failure: &A2aError| error_with(state.mapping, failure);
    let owner = owner(&request);
    let task = params.get("task").cloned().unwrap_or_default();
    let mut config = match body_of::<a2a::TaskPushNotificationConfig>(&state, request).await {
        Ok(config) => config,
        Err(failure) => return error(&failure),
    };
    if config.task_id.as_deref().is_some_and(|named| !named.is_empty() && named != task) {
        return error(&super::invalid_params("the body's taskId differs from the path's"));
    }
    config.task_id = Some(task);
    config.tenant = match with_tenant(config.tenant.take(), params.get("tenant").cloned()) {
        Ok(tenant) => tenant,
        Err(failure) => return error(&failure),
    };
    state.core.create_push_config(config, owner).await.map_or_else(|failure| error(&failure), ok)
}

/// The path's task (and tenant) as request fields.
fn push_path_fields(params: &HashMap<String, String>) -> Vec<(&'static str, Value)> {
    let mut fields = vec![("taskId", Value::String(params.get("task").cloned().unwrap_or_default()))];
    if let Some(config) = params.get("config") {
        fields.push(("id", Value::String(config.clone())));
    }
    if let Some(tenant) = params.get("tenant") {
        fields.push(("tenant", Value::String(tenant.clone())));
    }
    fields
}

/// `GET /tasks/{task}/pushNotificationConfigs`.
async fn list_push(
    State(state): Shared,
    Path(params): Path<HashMap<String, String>>,
    Query(mut query): Query<HashMap<String, String>>,
    request: Request,
) -> Response {
    let error = |failure: &A2aError| error_with(state.mapping, failure);
    query.remove("tenant");
    let mut fields = push_path_fields(&params);
    // A token is text even when it looks like a number.
    for name in ["pageToken", "page_token"] {
        if let Some(token) = query.remove(name) {
            fields.push(("pageToken", Value::String(token)));
        }
    }
    match from_query::<a2a::ListTaskPushNotificationConfigsRequest>(&query, &fields) {
        Ok(list) => {
            state.core.list_push_configs(list, owner(&request)).await.map_or_else(|failure| error(&failure), ok)
        }
        Err(failure) => error(&failure),
    }
}

/// `GET /tasks/{task}/pushNotificationConfigs/{config}`.
async fn get_push(State(state): Shared, Path(params): Path<HashMap<String, String>>, request: Request) -> Response {
    let error = |failure: &A2aError| error_with(state.mapping, failure);
    match from_query::<a2a::GetTaskPushNotificationConfigRequest>(&HashMap::new(), &push_path_fields(&params)) {
        Ok(get) => state.core.get_push_config(get, owner(&request)).await.map_or_else(|failure| error(&failure), ok),
        Err(failure) => error(&failure),
    }
}

/// `DELETE /tasks/{task}/pushNotificationConfigs/{config}`.
async fn delete_push(State(state): Shared, Path(params): Path<HashMap<String, String>>, request: Request) -> Response {
    let error = |failure: &A2aError| error_with(state.mapping, failure);
    match from_query::<a2a::DeleteTaskPushNotificationConfigRequest>(&HashMap::new(), &push_path_fields(&params)) {
        Ok(delete) => {
            state.core.delete_push_config(delete, owner(&request)).await.map_or_else(|failure| error(&failure), ok)
        }
        Err(failure) => error(&failure),
    }
}

async fn extended_card(
    State(state): Shared,
    params: Params,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    headers: HeaderMap,
    principal: Option<axum::Extension<Principal>>,
) -> Response {
    let suffix = match tenant_of(&params) {
        Some(tenant) => format!("{}/{tenant}/extendedAgentCard", state.path.trim_end_matches('/')),
        None => format!("{}/extendedAgentCard", state.path.trim_end_matches('/')),
    };
    let base_url = crate::card::base_url_before(&headers, &uri, &suffix);
    match state.card.extended(principal.as_ref().map(|axum::Extension(principal)| principal), &base_url) {
        Ok(card) => ok(card),
        Err((failure, challenges)) => {
            let mut response = error_with(state.mapping, &failure);
            response.headers_mut().extend(challenges.into_iter().map(|value| (header::WWW_AUTHENTICATE, value)));
            response
        }
    }
}

/// A 1.0 REST stream: each `data:` a bare `StreamResponse`.
fn sse(stream: super::A2aStream) -> Response {
    super::event_stream::sse(stream)
}
