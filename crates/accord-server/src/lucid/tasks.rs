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
    AccessToken, Durability, ListQuery, OwnerHash, PageStart, Reservation, Task, TaskEvent, TaskEventKind, TaskFailure,
    TaskId, TaskRuntime,
};
use accord_engine::{SkillError, TaskState, time};
use accord_payments::{Operation, PaymentError, PaymentRequest};
use accord_types::tasks::{TaskCapability, TaskErrorView, TaskList, TaskResultView, TaskStatus, TaskUpdate, TaskView};
use axum::Json;
use axum::body::Body;
use axum::extract::{OriginalUri, Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{Map, Value};

use crate::State;
use crate::body;
use crate::error::LucidError;
use crate::payments;

const TOKEN_HEADER: &str = "task-access-token";

fn tasks_of(state: &crate::AppState) -> Result<&TaskRuntime, LucidError> {
    state.config.tasks.as_ref().ok_or_else(|| {
        LucidError::new(StatusCode::NOT_FOUND, "a2a_tasks_not_enabled", "Task operations are not enabled on this agent")
    })
}

/// The caller's token: required, or (for creation) generated when absent.
fn access_token(headers: &HeaderMap, generate_if_missing: bool) -> Result<AccessToken, LucidError> {
    let invalid =
        |status| LucidError::new(status, "task_access_required", "Task-Access-Token must contain 20 to 256 characters");
    match headers.get(TOKEN_HEADER) {
        None if generate_if_missing => Ok(AccessToken::generate()),
        None => Err(invalid(StatusCode::UNAUTHORIZED)),
        Some(value) => {
            let text = value.to_str().map_err(|_| invalid(StatusCode::BAD_REQUEST))?;
            AccessToken::parse(text).map_err(|_| invalid(StatusCode::BAD_REQUEST))
        }
    }
}

impl From<TaskFailure> for LucidError {
    fn from(failure: TaskFailure) -> Self {
        let message = failure.to_string();
        match failure {
            TaskFailure::NotFound { .. } => Self::new(StatusCode::NOT_FOUND, "task_not_found", message),
            TaskFailure::NotCancellable { .. } => Self::new(StatusCode::BAD_REQUEST, "invalid_state", message),
            TaskFailure::CancelRace { .. } => Self::new(StatusCode::CONFLICT, "invalid_state", message),
            TaskFailure::CapacityExhausted { .. } => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "task_capacity_exhausted", message)
            }
            TaskFailure::ClaimLost { .. } => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "task_execution_failed", "The task could not be started")
            }
            TaskFailure::Closed => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "task_creation_failed", "The task runtime is shutting down")
            }
            other => {
                tracing::error!(error = %other, "task store failure");
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "task_store_unavailable", "The task store is unavailable")
            }
        }
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

/// The parts of a `SendMessageRequest` the face uses, checked for shape.
struct SendMessage {
    skill_id: String,
    content: Value,
    context_id: Option<String>,
    metadata: Option<Map<String, Value>>,
}

fn parse_send_message(payload: &Value) -> Result<SendMessage, LucidError> {
    let object = payload.as_object().ok_or_else(invalid_body)?;
    let skill_id =
        object.get("skillId").and_then(Value::as_str).filter(|id| !id.trim().is_empty()).ok_or_else(invalid_body)?;
    let message = object.get("message").and_then(Value::as_object).ok_or_else(invalid_body)?;
    match message.get("role").and_then(Value::as_str) {
        Some("user" | "assistant" | "system") => {}
        _ => return Err(invalid_body()),
    }
    let content = message.get("content").and_then(Value::as_object).ok_or_else(invalid_body)?;
    let has_text = content.get("text").is_some_and(Value::is_string);
    let has_parts = content.get("parts").is_some_and(Value::is_array);
    if !has_text && !has_parts {
        return Err(invalid_body());
    }
    let context_id = match object.get("contextId") {
        None => None,
        Some(Value::String(context)) => Some(context.clone()),
        Some(_) => return Err(invalid_body()),
    };
    let metadata = match object.get("metadata") {
        None => None,
        Some(Value::Object(metadata)) => Some(metadata.clone()),
        Some(_) => return Err(invalid_body()),
    };
    Ok(SendMessage { skill_id: skill_id.to_owned(), content: Value::Object(content.clone()), context_id, metadata })
}

/// The skill input carried by a message: `text` parsed as JSON when it is JSON (else the string
/// itself), or the first part (its `text` when it has one).
fn message_input(content: &Value) -> Value {
    fn from_text(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
    }
    if let Some(text) = content.get("text").and_then(Value::as_str) {
        return from_text(text);
    }
    match content.get("parts").and_then(|parts| parts.get(0)) {
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
    headers: HeaderMap,
    body: Body,
) -> Result<Response, LucidError> {
    let runtime = tasks_of(&state)?;
    let bytes = body::read_limited(body, state.config.body_limit).await?;
    let payload: Value = serde_json::from_slice(&bytes).map_err(|_| LucidError::invalid_json())?;
    let request = parse_send_message(&payload)?;
    let skill = state.agent.skill(&request.skill_id).map_err(|_| {
        LucidError::new(StatusCode::NOT_FOUND, "skill_not_found", format!("Skill \"{}\" not found", request.skill_id))
    })?;
    if !skill.is_invocable() {
        return Err(LucidError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not_implemented",
            format!("Skill \"{}\" has no handler", request.skill_id),
        ));
    }
    let valid = skill.validate_input(message_input(&request.content))?;
    let priced = payments::priced(state.config.payments.as_ref(), skill, Operation::Task)?;
    // A paid task's owner must be known before any payment step: the caller supplies the token.
    let token = access_token(&headers, priced.is_none())?;
    let mut reservation = Reservation::new(token.owner(), valid);
    reservation.context_id = request.context_id;
    reservation.metadata = request.metadata.map(Value::Object);
    let Some(priced) = priced else {
        let task = runtime.start(reservation).await.map_err(creation_error)?;
        return Ok(capability(&task, &token).into_response());
    };
    if runtime.durability() != Durability::Durable {
        return Err(LucidError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "durable_task_store_required",
            "Paid tasks require a TaskStore with durability=\"durable\" so settlement cannot outlive the task capability.",
        ));
    }
    let resource = format!("{}{}", crate::card::origin(&headers, &uri), uri.path());
    let idempotency_key = headers.get("idempotency-key").and_then(|value| value.to_str().ok()).map(str::trim);
    let payment = PaymentRequest {
        resource: &resource,
        operation: Operation::Task,
        price: &priced.price,
        description: skill.description(),
        headers: &headers,
        idempotency_key,
    };
    if !priced.rail.has_credential(&headers) {
        // An initial challenge reserves nothing.
        return Ok(payments::challenge_response(priced.rail.challenge(&payment)));
    }
    paid_create(runtime, &priced, &payment, reservation, &token, state.config.payments.as_ref()).await
}

fn creation_error(failure: TaskFailure) -> LucidError {
    match failure {
        TaskFailure::Store(error) => {
            tracing::error!(%error, "task creation failed");
            LucidError::new(StatusCode::SERVICE_UNAVAILABLE, "task_creation_failed", "The task could not be created")
        }
        other => other.into(),
    }
}

fn capability(task: &Task, token: &AccessToken) -> Json<TaskCapability> {
    Json(TaskCapability {
        task_id: task.id.to_string(),
        access_token: token.expose().to_owned(),
        status: status_of(task.state),
    })
}

/// A paid task with a credential, in the profile's order: durable reservation with an admission
/// expiry and a prepared (heartbeated) claim *before* verification; verify; renew the claim;
/// settle; activate (which starts the handler and its timer). Before the payment commits, every
/// failure releases the reservation and the admission; after, every failure answers with a
/// terminal capability and the receipt — or `503 task_terminalization_failed` with the capability
/// when not even the terminal state can be confirmed. Never a `running` that is not.
async fn paid_create(
    runtime: &TaskRuntime,
    priced: &payments::Priced,
    payment: &PaymentRequest<'_>,
    mut reservation: Reservation,
    token: &AccessToken,
    config: Option<&crate::PaymentsConfig>,
) -> Result<Response, LucidError> {
    reservation.admission_ttl = config.map(|config| config.admission_ttl);
    let task = runtime.reserve(reservation).await.map_err(creation_error)?;
    let prepared = match runtime.prepare(&task.id).await {
        Ok(prepared) => prepared,
        Err(failure) => {
            release(runtime, &task.id, token).await;
            return Err(creation_error(failure));
        }
    };
    let mut admission = match priced.rail.verify(payment).await {
        Ok(admission) => admission,
        Err(error) => {
            prepared.cancel().await;
            return Ok(payments::payment_error_response(error));
        }
    };
    if let Err(failure) = prepared.renew().await {
        tracing::warn!(task = %task.id, %failure, "the prepared claim was lost before settlement");
        admission.abort().await;
        prepared.cancel().await;
        return Err(LucidError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "task_execution_failed",
            "The task could not be started; nothing was charged",
        ));
    }
    let receipt = match admission.finalize().await {
        Ok(receipt) => receipt,
        Err(PaymentError::Uncertain { message, receipt }) => {
            tracing::error!(task = %task.id, %message, "settlement uncertain; the task will not run");
            drop(prepared);
            let error = SkillError::new(
                "settlement_uncertain",
                "The payment's settlement could not be confirmed; the task was not started. Reconcile with the payment provider.",
            );
            return Ok(after_commit(runtime, &task.id, token, &receipt, error).await);
        }
        Err(error) => {
            prepared.cancel().await;
            return Ok(payments::payment_error_response(error));
        }
    };
    let mut response = match prepared.activate().await {
        Ok(task) => capability(&task, token).into_response(),
        Err(failure) => {
            tracing::error!(task = %task.id, %failure, "a paid task could not be activated after settlement");
            let error = SkillError::new("task_execution_failed", "The task could not be started after payment");
            return Ok(after_commit(runtime, &task.id, token, &receipt, error).await);
        }
    };
    payments::with_receipt(&mut response, &receipt);
    Ok(response)
}

/// Releases a reservation that will not be paid for (best effort: an unreleased one is reaped
/// when its admission expires).
async fn release(runtime: &TaskRuntime, id: &TaskId, token: &AccessToken) {
    if let Err(failure) = runtime.cancel(id, &token.owner()).await {
        tracing::warn!(task = %id, %failure, "could not release a task reservation; it will be reaped");
    }
}

/// After the payment committed and the task could not start: the task ends (failed, or whatever
/// terminal state it reached first) and the caller gets that terminal capability with the
/// receipt; when the end cannot be confirmed, `503 task_terminalization_failed` with the
/// capability and the receipt.
async fn after_commit(
    runtime: &TaskRuntime,
    id: &TaskId,
    token: &AccessToken,
    receipt: &accord_payments::Receipt,
    error: SkillError,
) -> Response {
    let mut response = match runtime.fail(id, error).await {
        Ok(task) if task.state.is_terminal() => capability(&task, token).into_response(),
        outcome => {
            if let Err(failure) = &outcome {
                tracing::error!(task = %id, %failure, "the terminal state of a paid task could not be recorded");
            }
            let body = serde_json::json!({
                "error": {
                    "code": "task_terminalization_failed",
                    "message": "Payment committed, but the terminal task state could not be confirmed. Retain this capability and query the task again.",
                },
                "taskId": id.to_string(),
                "accessToken": token.expose(),
            });
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
    };
    payments::with_receipt(&mut response, receipt);
    response
}

pub(crate) async fn get_task(
    axum::extract::State(state): State,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<TaskView>, LucidError> {
    let runtime = tasks_of(&state)?;
    let owner = access_token(&headers, false)?.owner();
    let task = runtime.get(&TaskId::new(id), &owner).await?;
    Ok(Json(view(&task)))
}

pub(crate) async fn cancel(
    axum::extract::State(state): State,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<TaskView>, LucidError> {
    let runtime = tasks_of(&state)?;
    let owner = access_token(&headers, false)?.owner();
    let task = runtime.cancel(&TaskId::new(id), &owner).await?;
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
    let runtime = tasks_of(&state)?;
    let owner = access_token(&headers, false)?.owner();
    let Query(params) = query.map_err(|_| invalid_query("Invalid query string"))?;
    let query = list_query(&params)?;
    let page = runtime.list(&owner, &query).await?;
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
    let runtime = tasks_of(&state)?;
    let owner: OwnerHash = access_token(&headers, false)?.owner();
    // `Last-Event-ID` resumes after the last event the client saw; otherwise the whole log is
    // replayed, which starts with the task's current status.
    let after = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let events = runtime.events(&TaskId::new(id), &owner, after).await?;
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
        .take_until(tokio::time::sleep(state.config.subscription_timeout));
    Ok(crate::lucid::stream::sse_response(Sse::new(frames).keep_alive(KeepAlive::default())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_input_parses_json_text_and_falls_back_to_the_string() {
        assert_eq!(message_input(&json!({"text": "{\"a\":1}"})), json!({"a": 1}));
        assert_eq!(message_input(&json!({"text": "plain words"})), json!("plain words"));
        assert_eq!(message_input(&json!({"parts": [{"text": "{\"b\":2}"}]})), json!({"b": 2}));
        assert_eq!(message_input(&json!({"parts": [{"data": 3}]})), json!({"data": 3}));
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
