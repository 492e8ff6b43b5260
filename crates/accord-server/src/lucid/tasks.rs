//! The Lucid profile's task routes: create, list, read, cancel and subscribe, each owned by the
//! holder of a `Task-Access-Token`.
//!
//! The face parses and checks the request in the profile's order, hands it to the
//! [`TaskRuntime`](accord_engine::task::TaskRuntime), and projects the engine's eight task states
//! onto the profile's four statuses: submitted, working, input-required and auth-required are
//! `running`; rejected is `failed`; canceled is `cancelled`.

use std::collections::HashSet;
use std::convert::Infallible;

use accord_engine::task::{
    AccessToken, Caller, ListQuery, ListShape, PageStart, PaidStart, SendInput, SendRequest, SubscribeFrom, Task,
    TaskEvent, TaskEventKind, TaskId, TaskService,
};
use accord_engine::{Error, ErrorKind, TaskState, time};
use accord_payments::Operation;
use accord_types::tasks::{
    CreateTaskRequest, TaskCapability, TaskErrorView, TaskList, TaskMessageContent, TaskResultView, TaskStatus,
    TaskUpdate, TaskView,
};
use axum::Json;
use axum::body::Body;
use axum::extract::{OriginalUri, Path, Query};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{Map, Value};

use super::body;
use super::error::LucidError;
use super::payments::HttpPayment;
use crate::State;
use crate::payments;

const TOKEN_HEADER: &str = "task-access-token";

fn tasks_of(state: &crate::AppState) -> Result<&TaskService, LucidError> {
    state.tasks.as_ref().ok_or_else(|| {
        LucidError::new(StatusCode::NOT_FOUND, "a2a_tasks_not_enabled", "Task operations are not enabled on this agent")
    })
}

fn token_error(status: StatusCode) -> LucidError {
    LucidError::new(status, "task_access_required", "Task-Access-Token must contain 20 to 256 characters")
}

/// The caller's token, if it sent one.
fn supplied_token(headers: &HeaderMap) -> Result<Option<AccessToken>, LucidError> {
    match headers.get(TOKEN_HEADER) {
        None => Ok(None),
        Some(value) => {
            let text = value.to_str().map_err(|_| token_error(StatusCode::BAD_REQUEST))?;
            AccessToken::parse(text).map(Some).map_err(|_| token_error(StatusCode::BAD_REQUEST))
        }
    }
}

/// The caller's token: required.
fn access_token(headers: &HeaderMap) -> Result<AccessToken, LucidError> {
    supplied_token(headers)?.ok_or_else(|| token_error(StatusCode::UNAUTHORIZED))
}

/// The caller as the task service sees it: the owner of the token.
fn caller(headers: &HeaderMap) -> Result<Caller, LucidError> {
    Ok(Caller::owner(access_token(headers)?.owner()))
}

/// The profile's error for an engine error (the messages the profile fixes are built here from
/// the error's task id; others are the engine's).
pub(crate) fn lucid_error(error: Error) -> LucidError {
    let id = error.task_id().map(ToString::to_string).unwrap_or_default();
    match error.kind() {
        ErrorKind::UnknownSkill => LucidError::new(StatusCode::NOT_FOUND, "skill_not_found", error.message()),
        ErrorKind::ScopeRequired => LucidError::new(StatusCode::FORBIDDEN, "scope_required", error.message()),
        ErrorKind::NotInvocable => LucidError::new(StatusCode::NOT_IMPLEMENTED, "not_implemented", error.message()),
        ErrorKind::InvalidInput => LucidError::with_issues(StatusCode::BAD_REQUEST, "invalid_input", error.issues()),
        ErrorKind::NoSkill | ErrorKind::InvalidRequest => {
            LucidError::new(StatusCode::BAD_REQUEST, "invalid_request", error.message())
        }
        ErrorKind::TooLarge => LucidError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", error.message()),
        ErrorKind::TaskNotFound => {
            LucidError::new(StatusCode::NOT_FOUND, "task_not_found", format!("Task \"{id}\" not found"))
        }
        ErrorKind::NotCancelable => {
            LucidError::new(StatusCode::BAD_REQUEST, "invalid_state", format!("Task \"{id}\" is not running"))
        }
        ErrorKind::CancelConflict => {
            LucidError::new(StatusCode::CONFLICT, "invalid_state", format!("Task \"{id}\" is not running"))
        }
        ErrorKind::CapacityExhausted => {
            LucidError::new(StatusCode::SERVICE_UNAVAILABLE, "task_capacity_exhausted", error.message())
                .with_header(header::RETRY_AFTER, HeaderValue::from(crate::CAPACITY_RETRY_AFTER_SECS))
        }
        ErrorKind::OwnerShareExhausted => {
            LucidError::new(StatusCode::TOO_MANY_REQUESTS, "owner_share_exhausted", error.message())
                .with_header(header::RETRY_AFTER, HeaderValue::from(crate::CAPACITY_RETRY_AFTER_SECS))
        }
        ErrorKind::StartFailed => {
            LucidError::new(StatusCode::SERVICE_UNAVAILABLE, "task_execution_failed", error.message())
        }
        ErrorKind::ShuttingDown => LucidError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "task_creation_failed",
            "The task runtime is shutting down",
        ),
        ErrorKind::DurableStoreRequired => {
            LucidError::new(StatusCode::SERVICE_UNAVAILABLE, "durable_task_store_required", error.message())
        }
        ErrorKind::PaymentRequired => {
            LucidError::new(StatusCode::PAYMENT_REQUIRED, "payment_required", error.message())
        }
        ErrorKind::StreamingOff => LucidError::code_only(StatusCode::BAD_REQUEST, "stream_not_supported"),
        ErrorKind::TaskRunning | ErrorKind::TaskEnded | ErrorKind::AnonymousNotAllowed => {
            LucidError::new(StatusCode::BAD_REQUEST, "invalid_state", error.message())
        }
        _ => {
            tracing::error!(%error, "task store failure");
            LucidError::new(StatusCode::SERVICE_UNAVAILABLE, "task_store_unavailable", "The task store is unavailable")
        }
    }
}

/// Creation reports a store failure as `task_creation_failed`.
fn creation_error(error: Error) -> LucidError {
    match error.kind() {
        ErrorKind::Unavailable | ErrorKind::Internal => {
            tracing::error!(%error, "task creation failed");
            LucidError::new(StatusCode::SERVICE_UNAVAILABLE, "task_creation_failed", "The task could not be created")
        }
        _ => lucid_error(error),
    }
}

/// The profile's status for an engine state.
pub(crate) fn status_of(state: TaskState) -> TaskStatus {
    match state {
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Failed | TaskState::Rejected => TaskStatus::Failed,
        TaskState::Canceled => TaskStatus::Cancelled,
        TaskState::Submitted | TaskState::Working | TaskState::InputRequired | TaskState::AuthRequired => {
            TaskStatus::Running
        }
    }
}

/// The engine states behind a profile status.
fn states_of(status: TaskStatus) -> &'static [TaskState] {
    match status {
        TaskStatus::Running => {
            &[TaskState::Submitted, TaskState::Working, TaskState::InputRequired, TaskState::AuthRequired]
        }
        TaskStatus::Completed => &[TaskState::Completed],
        TaskStatus::Failed => &[TaskState::Failed, TaskState::Rejected],
        TaskStatus::Cancelled => &[TaskState::Canceled],
    }
}

fn iso(ms: u64) -> String {
    time::iso_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
}

fn result_view(result: &accord_engine::task::TaskResult) -> TaskResultView {
    TaskResultView { output: result.output.clone(), usage: result.usage.clone(), model: result.model.clone() }
}

fn error_view(error: &accord_engine::SkillError) -> TaskErrorView {
    TaskErrorView { code: error.code.clone(), message: error.message.clone(), details: error.details.clone() }
}

pub(crate) fn view(task: &Task) -> TaskView {
    let status = status_of(task.state);
    TaskView {
        task_id: task.id.to_string(),
        status,
        context_id: task.context_id.clone(),
        created_at: iso(task.created_at),
        updated_at: iso(task.updated_at),
        result: (status == TaskStatus::Completed).then(|| task.result.as_ref().map(result_view)).flatten(),
        error: (status == TaskStatus::Failed).then(|| task.error.as_ref().map(error_view)).flatten(),
    }
}

fn invalid_body() -> LucidError {
    LucidError::new(StatusCode::BAD_REQUEST, "invalid_request", "Invalid request body")
}

/// The body of `POST /tasks`, as its schema ([`CreateTaskRequest`]) documents it: a non-blank
/// skill, a message whose content has `text` or `parts`; `null` optional members are absent.
fn parse_create(payload: Value) -> Result<CreateTaskRequest, LucidError> {
    let request: CreateTaskRequest = serde_json::from_value(payload).map_err(|_| invalid_body())?;
    if request.skill_id.trim().is_empty()
        || (request.message.content.text.is_none() && request.message.content.parts.is_none())
    {
        return Err(invalid_body());
    }
    Ok(request)
}

/// The skill input carried by a message: `text` parsed as JSON when it is JSON (else the string
/// itself), or the first part (its `text` when it has one).
fn message_input(content: &TaskMessageContent) -> Value {
    fn from_text(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
    }
    if let Some(text) = &content.text {
        return from_text(text);
    }
    match content.parts.as_ref().and_then(|parts| parts.first()) {
        Some(part) => match part.get("text").and_then(Value::as_str) {
            Some(text) => from_text(text),
            None => part.clone(),
        },
        None => Value::Object(Map::new()),
    }
}

pub(crate) async fn create(
    axum::extract::State(state): State,
    OriginalUri(uri): OriginalUri,
    crate::auth::RequestScopes(scopes): crate::auth::RequestScopes,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, LucidError> {
    let service = tasks_of(&state)?;
    body::require_json(&headers, &body)?;
    let bytes = body::read_limited(body, state.config.body_limit).await?;
    let payload: Value = serde_json::from_slice(&bytes).map_err(|_| LucidError::invalid_json())?;
    let request = parse_create(payload)?;
    // A free task without a token gets a fresh one; a paid task's owner must be known before any
    // payment step, so there the caller must supply it (the payment flow checks).
    let supplied = supplied_token(&headers)?;
    let token_supplied = supplied.is_some();
    let token = supplied.unwrap_or_else(AccessToken::generate);
    // The token owns the task; the request's principal, if any, says which skills it may run.
    let send = SendRequest::new(
        Caller::owner(token.owner()).with_scopes(scopes),
        SendInput::Candidates(vec![message_input(&request.message.content)]),
    )
    .skill(request.skill_id)
    .context_id(request.context_id)
    .metadata(request.metadata.map(Value::Object));
    let resource = format!("{}{}", crate::card::origin(&headers, &uri), uri.path());
    let idempotency_key = headers.get("idempotency-key").and_then(|value| value.to_str().ok()).map(str::trim);
    let mut payment =
        HttpPayment::new(state.config.payments.as_ref(), &headers, resource, Operation::Task, idempotency_key);
    if !token_supplied {
        payment = payment.payer_unknown(token_error(StatusCode::UNAUTHORIZED));
    }
    let started = service.send_paid(send, &mut payment).await.map_err(creation_error)?;
    Ok(match started {
        PaidStart::Started { task, receipt } => {
            let mut response = capability(&task, &token).into_response();
            if let Some(receipt) = receipt {
                payments::with_receipt(&mut response, &receipt);
            }
            response
        }
        PaidStart::ChallengeNeeded => payment.challenge(),
        PaidStart::Refused(response) => response,
        PaidStart::EndedAfterPayment { task, receipt } => {
            let mut response = capability(&task, &token).into_response();
            payments::with_receipt(&mut response, &receipt);
            response
        }
        PaidStart::Unconfirmed { task_id, receipt } => {
            let body = serde_json::json!({
                "error": {
                    "code": "task_terminalization_failed",
                    "message": "Payment committed, but the terminal task state could not be confirmed. Retain this capability and query the task again.",
                },
                "taskId": task_id.to_string(),
                "accessToken": token.expose(),
            });
            let mut response = (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
            payments::with_receipt(&mut response, &receipt);
            response
        }
        _ => LucidError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal error").into_response(),
    })
}

fn capability(task: &Task, token: &AccessToken) -> Json<TaskCapability> {
    Json(TaskCapability {
        task_id: task.id.to_string(),
        access_token: token.expose().to_owned(),
        status: status_of(task.state),
    })
}

pub(crate) async fn get_task(
    axum::extract::State(state): State,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<TaskView>, LucidError> {
    let service = tasks_of(&state)?;
    let task = service.get(&caller(&headers)?, &TaskId::new(id), None).await.map_err(lucid_error)?;
    Ok(Json(view(&task)))
}

pub(crate) async fn cancel(
    axum::extract::State(state): State,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<TaskView>, LucidError> {
    let service = tasks_of(&state)?;
    let task = service.cancel(&caller(&headers)?, &TaskId::new(id)).await.map_err(lucid_error)?;
    Ok(Json(view(&task)))
}

fn invalid_query(message: &str) -> LucidError {
    LucidError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
}

/// `GET /tasks` query: `contextId`, `status` (comma separated), `limit` (0–1000, default 50),
/// `offset` (≥ 0, default 0).
fn list_query(params: &std::collections::HashMap<String, String>) -> Result<ListQuery, LucidError> {
    let paging = "limit must be an integer from 0 to 1000 and offset must be a non-negative integer";
    let integer = |name: &str, default: usize| -> Result<usize, LucidError> {
        match params.get(name).map(|value| value.trim()) {
            None | Some("") => Ok(default),
            Some(text) if text.bytes().all(|b| b.is_ascii_digit()) => text.parse().map_err(|_| invalid_query(paging)),
            Some(_) => Err(invalid_query(paging)),
        }
    };
    let limit = integer("limit", 50)?;
    let offset = integer("offset", 0)?;
    if limit > 1000 || offset > 9_007_199_254_740_991 {
        return Err(invalid_query(paging));
    }
    let states = match params.get("status") {
        None => None,
        Some(list) => {
            let mut states = Vec::new();
            for name in list.split(',').map(str::trim).filter(|name| !name.is_empty()) {
                let status = TaskStatus::parse(name)
                    .ok_or_else(|| invalid_query("status contains an unsupported task state"))?;
                states.extend_from_slice(states_of(status));
            }
            (!states.is_empty()).then_some(states)
        }
    };
    Ok(ListQuery {
        context_id: params.get("contextId").cloned(),
        states,
        limit,
        page: PageStart::Offset(offset),
        ..ListQuery::default()
    })
}

pub(crate) async fn list(
    axum::extract::State(state): State,
    headers: HeaderMap,
    query: Result<Query<std::collections::HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<TaskList>, LucidError> {
    let service = tasks_of(&state)?;
    let caller = caller(&headers)?;
    let Query(params) = query.map_err(|_| invalid_query("Invalid query string"))?;
    let query = list_query(&params)?;
    // The profile's task view carries neither history nor artifacts: the page's byte bound counts
    // neither.
    let shape = ListShape::default().history_length(Some(0)).artifacts(false);
    let page = service.list_shaped(&caller, &query, shape).await.map_err(lucid_error)?;
    Ok(Json(TaskList {
        tasks: page.tasks.iter().map(view).collect(),
        total: Some(page.total),
        has_more: Some(page.has_more),
    }))
}

/// The SSE event for a log entry, or `None` for entries the profile has no event type for.
fn update_of(event: &TaskEvent) -> Option<(&'static str, TaskUpdate)> {
    let task_id = event.task_id.to_string();
    match &event.kind {
        TaskEventKind::Status { state, .. } => {
            Some(("statusUpdate", TaskUpdate { task_id, status: Some(status_of(*state)), result: None, error: None }))
        }
        TaskEventKind::Result { result } => Some((
            "resultUpdate",
            TaskUpdate { task_id, status: Some(TaskStatus::Completed), result: Some(result_view(result)), error: None },
        )),
        TaskEventKind::Error { state, error } => Some((
            "error",
            TaskUpdate { task_id, status: Some(status_of(*state)), result: None, error: Some(error_view(error)) },
        )),
        _ => None,
    }
}

pub(crate) async fn subscribe(
    axum::extract::State(state): State,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, LucidError> {
    let service = tasks_of(&state)?;
    let caller = caller(&headers)?;
    service.ensure_streaming().map_err(lucid_error)?;
    // `Last-Event-ID` resumes after the last event the client saw; otherwise the whole log is
    // replayed, which starts with the task's current status.
    let from = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map_or(SubscribeFrom::Start, SubscribeFrom::After);
    let events = service.subscribe(&caller, &TaskId::new(id), from).await.map_err(lucid_error)?.events;
    let mut seen = HashSet::new();
    let frames = events
        .filter_map(move |item| {
            let frame = match item {
                Ok(event) => update_of(&event).and_then(|(name, update)| {
                    let data = serde_json::to_string(&update).ok()?;
                    // The same update twice (e.g. submitted, then working: both `running`) is sent once.
                    seen.insert(format!("{name}{data}")).then(|| {
                        Ok::<_, Infallible>(Event::default().id(event.sequence.to_string()).event(name).data(data))
                    })
                }),
                Err(failure) => {
                    tracing::warn!(%failure, "task subscription ended by a store failure");
                    None
                }
            };
            std::future::ready(frame)
        })
        .take_until(tokio::time::sleep(state.config.lucid_subscription_timeout));
    Ok(crate::sse::sse_response(Sse::new(frames).keep_alive(KeepAlive::default())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input_of(content: Value) -> Value {
        message_input(&serde_json::from_value(content).expect("a message content"))
    }

    #[test]
    fn message_input_parses_json_text_and_falls_back_to_the_string() {
        assert_eq!(input_of(json!({"text": "{\"a\":1}"})), json!({"a": 1}));
        assert_eq!(input_of(json!({"text": "plain words"})), json!("plain words"));
        assert_eq!(input_of(json!({"parts": [{"text": "{\"b\":2}"}]})), json!({"b": 2}));
        assert_eq!(input_of(json!({"parts": [{"data": 3}]})), json!({"data": 3}));
    }

    #[test]
    fn the_create_body_is_read_as_its_schema() {
        let body = |value: Value| parse_create(value).map_err(|error| error.status.as_u16());
        let good = json!({"skillId": "echo", "message": {"role": "user", "content": {"text": "hi"}}});
        assert!(body(good).is_ok());
        let null_context =
            json!({"skillId": "e", "message": {"role": "user", "content": {"parts": []}}, "contextId": null});
        assert!(body(null_context).is_ok(), "a null optional member is absent");
        for bad in [
            json!([]),
            json!({"skillId": " ", "message": {"role": "user", "content": {"text": "hi"}}}),
            json!({"skillId": "e", "message": {"role": "robot", "content": {"text": "hi"}}}),
            json!({"skillId": "e", "message": {"role": "user", "content": {}}}),
            json!({"skillId": "e", "message": {"role": "user", "content": {"text": "hi"}}, "metadata": [1]}),
            json!({"skillId": "e", "message": {"role": "user", "content": {"text": "hi"}}, "contextId": 7}),
        ] {
            assert_eq!(body(bad.clone()), Err(400), "{bad}");
        }
    }

    #[test]
    fn every_engine_state_has_a_profile_status() {
        assert_eq!(status_of(TaskState::InputRequired), TaskStatus::Running);
        assert_eq!(status_of(TaskState::Rejected), TaskStatus::Failed);
        assert_eq!(status_of(TaskState::Canceled), TaskStatus::Cancelled);
        for status in TaskStatus::ALL {
            assert!(states_of(status).iter().all(|state| status_of(*state) == status));
        }
    }
}
