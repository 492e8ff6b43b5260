//! The JSON-RPC tasks face: `tasks/send`, `tasks/get`, `tasks/cancel` and `tasks/sendSubscribe`
//! over JSON-RPC 2.0, with per-skill scopes (the engine's: a skill's scope holds on every face).
//!
//! Usable two ways: [`TasksEndpoint`] wraps any [`TasksHandler`] into a router you mount on any
//! path; [`EngineTasks`] is the handler that runs the agent's skills as engine tasks (what
//! [`crate::ServerConfig::jsonrpc_tasks`] mounts at `/a2a/tasks`).
//!
//! Requests are checked in this order, each failure answered with its HTTP status and JSON-RPC
//! code: method not POST (405, `Allow: POST`, -32600); content type not JSON (415, -32600); body
//! over the cap (400, -32700, the rest is not read); unparsable JSON (400, -32700); not a JSON-RPC
//! 2.0 envelope (400, -32600); unknown method (200, -32601); invalid params (200, -32602); then the
//! handler (200, with its result, or its error code, or -32603). [`EngineTasks`] answers a skill
//! whose scope the caller does not hold ([`accord_engine::Skill::permits`]) with -32001 before
//! it looks at the input.
//! The response `id` echoes the request's, or is `null` when it could not be read. A JSON array is
//! a batch, which this face does not serve: it is refused as not an envelope (400, -32600, "batch
//! requests are not supported", `id: null`). The envelope is read and written by
//! [`accord_types::jsonrpc`], leniently: any id is echoed, and params are judged by the method.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{
    Caller, SendInput, SendRequest, SubscribeFrom, Task, TaskEvent, TaskEventKind, TaskId, TaskService, Wait,
};
use accord_engine::{Error, ErrorKind, TaskState};
use accord_types::jsonrpc::{self, ErrorObject, ParseErrorKind};
use accord_types::tasks_rpc;
use async_trait::async_trait;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use futures_util::{Stream, StreamExt};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::body::BodyFailure;
use crate::refusal::{Refusal, RefusalKind, Refusals};

/// The methods this face serves.
pub const METHODS: [&str; 4] = ["tasks/send", "tasks/get", "tasks/cancel", "tasks/sendSubscribe"];

/// An error answered to a JSON-RPC call.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC code.
    pub code: i64,
    /// What went wrong.
    pub message: String,
    /// Structured detail.
    pub data: Option<Value>,
}

impl RpcError {
    /// Invalid JSON (-32700).
    pub const PARSE_ERROR: i64 = jsonrpc::PARSE_ERROR;
    /// Not a valid request (-32600).
    pub const INVALID_REQUEST: i64 = jsonrpc::INVALID_REQUEST;
    /// Unknown method (-32601).
    pub const METHOD_NOT_FOUND: i64 = jsonrpc::METHOD_NOT_FOUND;
    /// Invalid params (-32602).
    pub const INVALID_PARAMS: i64 = jsonrpc::INVALID_PARAMS;
    /// A handler failure (-32603).
    pub const INTERNAL_ERROR: i64 = jsonrpc::INTERNAL_ERROR;
    /// A scope the skill requires is not granted (-32001).
    pub const SCOPE_REQUIRED: i64 = -32001;
    /// No such task (-32002).
    pub const TASK_NOT_FOUND: i64 = -32002;
    /// The task is past its cancellation point (-32003).
    pub const TASK_NOT_CANCELABLE: i64 = -32003;
    /// The task store is full: retry later (-32099; `data.reason` `TASK_CAPACITY_EXHAUSTED`,
    /// `data.retryAfter` in seconds, and the `Retry-After` header). The codes of the retryable
    /// refusals are the ones the A2A JSON-RPC face uses, from the far end of the
    /// implementation-defined server-error range.
    pub const TASK_CAPACITY_EXHAUSTED: i64 = -32099;
    /// The caller holds as many unfinished tasks as one caller may: retry when one ends (-32098;
    /// `data.reason` `OWNER_SHARE_EXHAUSTED`, `data.retryAfter`, `Retry-After`).
    pub const OWNER_SHARE_EXHAUSTED: i64 = -32098;
    /// The caller is over its rate limit (-32097; `data.reason` `RATE_LIMITED`, `data.retryAfter`,
    /// `Retry-After`; answered with HTTP 429 before the body is read).
    pub const RATE_LIMITED: i64 = -32097;
    /// The task store could not be reached or written (a database outage, a full disk): the
    /// server's trouble, usually passing (-32096; `data.reason` `UNAVAILABLE`, `data.retryAfter`,
    /// `Retry-After`).
    pub const UNAVAILABLE: i64 = -32096;

    /// An error with a code and message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// Adds structured detail.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl From<RpcError> for ErrorObject {
    fn from(error: RpcError) -> Self {
        Self { code: error.code, message: error.message, data: error.data }
    }
}

impl From<ErrorObject> for RpcError {
    fn from(error: ErrorObject) -> Self {
        Self { code: error.code, message: error.message, data: error.data }
    }
}

pub use accord_types::tasks_rpc::{
    SkillKey, TaskFailure, TaskRef, TaskSpec, TaskStatus, TaskUpdate, TaskView, UpdateEvent,
};

/// What a handler knows about the call.
#[derive(Debug, Clone)]
pub struct RpcContext {
    /// The authenticated caller, if any.
    pub principal: Option<Principal>,
    /// The caller as the task service sees it (an anonymous one owns tasks by its address).
    pub caller: Caller,
    /// The request headers.
    pub headers: HeaderMap,
}

/// The updates of a `tasks/sendSubscribe`, each answered as one JSON-RPC response event (its
/// `sequence` the SSE `id`).
pub type RpcStream = Pin<Box<dyn Stream<Item = Result<TaskUpdate, RpcError>> + Send>>;

/// Serves the JSON-RPC task methods. Implement the ones you serve; `tasks/sendSubscribe`
/// defaults to "not supported".
#[async_trait]
pub trait TasksHandler: Send + Sync + 'static {
    /// `tasks/send`: start a task; answers its view (`{taskId, status}`, and its result or error
    /// when it already ended).
    async fn send(&self, task: TaskSpec, context: RpcContext) -> Result<TaskView, RpcError>;
    /// `tasks/get`: the task's view, `{taskId, status, result?, error?}`.
    async fn get(&self, task_id: String, context: RpcContext) -> Result<TaskView, RpcError>;
    /// `tasks/cancel`: cancel the task; answers its view after the cancellation.
    async fn cancel(&self, task_id: String, context: RpcContext) -> Result<TaskView, RpcError>;
    /// `tasks/sendSubscribe`: start a task and stream its updates.
    async fn send_subscribe(&self, task: TaskSpec, context: RpcContext) -> Result<RpcStream, RpcError> {
        let _ = (task, context);
        Err(RpcError::new(RpcError::METHOD_NOT_FOUND, "method 'tasks/sendSubscribe' is not supported here"))
    }
}

/// The JSON-RPC tasks endpoint around a handler.
#[derive(Clone)]
pub struct TasksEndpoint {
    handler: Arc<dyn TasksHandler>,
    max_bytes: usize,
}

impl std::fmt::Debug for TasksEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TasksEndpoint").field("max_bytes", &self.max_bytes).finish_non_exhaustive()
    }
}

impl TasksEndpoint {
    /// An endpoint for `handler`, with a 1 MiB body cap.
    pub fn new(handler: impl TasksHandler) -> Self {
        Self::from_arc(Arc::new(handler))
    }

    /// An endpoint for a shared handler.
    pub fn from_arc(handler: Arc<dyn TasksHandler>) -> Self {
        Self { handler, max_bytes: 1024 * 1024 }
    }

    /// The body cap in bytes.
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// A router answering every method at its root: nest it, or merge it under a path with
    /// [`Router::nest`].
    pub fn router(self) -> Router {
        let endpoint = Arc::new(self);
        Router::new().route(
            "/",
            any(move |request: Request| {
                let endpoint = Arc::clone(&endpoint);
                async move { endpoint.handle(request).await }
            }),
        )
    }

    /// Answers one HTTP request.
    pub async fn handle(&self, request: Request) -> Response {
        let (parts, body) = request.into_parts();
        if parts.method != Method::POST {
            audit_rejected(405, RpcError::INVALID_REQUEST);
            let mut response = rpc_response(
                StatusCode::METHOD_NOT_ALLOWED,
                Some(Value::Null),
                Err(RpcError::new(RpcError::INVALID_REQUEST, "method must be POST")),
            );
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        // The media type itself must be JSON (`text/plain; x=application/json` is text, which a
        // web page may send cross-origin without a preflight).
        if !crate::body::is_json(&parts.headers) {
            audit_rejected(415, RpcError::INVALID_REQUEST);
            return rpc_response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Some(Value::Null),
                Err(RpcError::new(RpcError::INVALID_REQUEST, "Content-Type must be application/json")),
            );
        }
        let bytes = match crate::body::read_capped(body, self.max_bytes).await {
            Ok(bytes) => bytes,
            Err(failure) => {
                audit_rejected(400, RpcError::PARSE_ERROR);
                let message = match failure {
                    BodyFailure::TooLarge { limit } => {
                        format!("could not read request body: request body exceeded {limit} bytes")
                    }
                    BodyFailure::Broken => {
                        "could not read request body: it ended before its declared length or its framing is invalid"
                            .to_owned()
                    }
                };
                return rpc_response(
                    StatusCode::BAD_REQUEST,
                    Some(Value::Null),
                    Err(RpcError::new(RpcError::PARSE_ERROR, message)),
                );
            }
        };
        let envelope = match jsonrpc::Request::parse_lenient(&bytes) {
            Ok(envelope) => envelope,
            Err(error) => {
                let (id, message) = match error.kind {
                    ParseErrorKind::NotJson => (Some(Value::Null), "invalid JSON body"),
                    ParseErrorKind::Batch => (Some(Value::Null), error.kind.reason()),
                    // The request's id as sent; none at all leaves the member out.
                    _ => (error.id.clone(), "expected JSON-RPC 2.0 envelope { jsonrpc, id?, method, params? }"),
                };
                audit_rejected(400, error.code());
                return rpc_response(StatusCode::BAD_REQUEST, id, Err(RpcError::new(error.code(), message)));
            }
        };
        let id = envelope.response_id();
        let method = envelope.method.clone();
        if !METHODS.contains(&method.as_str()) {
            audit_rejected(200, RpcError::METHOD_NOT_FOUND);
            let error =
                RpcError::new(RpcError::METHOD_NOT_FOUND, format!("method '{method}' not in [{}]", METHODS.join(", ")));
            return rpc_response(StatusCode::OK, Some(id), Err(error));
        }
        let params = envelope.params_or_empty();
        let context = RpcContext {
            principal: parts.extensions.get::<Principal>().cloned(),
            caller: crate::auth::caller_of(&parts.extensions),
            headers: parts.headers,
        };
        let subject = context.principal.as_ref().map_or("anonymous", |principal| principal.subject.as_str()).to_owned();
        let call = match parse_call(&method, &params) {
            Ok(call) => call,
            Err(error) => {
                audit_rejected(200, error.code);
                return rpc_response(StatusCode::OK, Some(id), Err(error));
            }
        };
        let result = match call {
            Call::Send(task) => self.handler.send(task, context).await,
            Call::Get(task_id) => self.handler.get(task_id, context).await,
            Call::Cancel(task_id) => self.handler.cancel(task_id, context).await,
            Call::SendSubscribe(task) => match self.handler.send_subscribe(task, context).await {
                Ok(stream) => {
                    tracing::info!(target: "accord::audit", event = "a2a.tasks.handled", method = %method, subject = %subject);
                    return subscribe_response(id, stream);
                }
                Err(error) => Err(error),
            },
        };
        match &result {
            Ok(_) => {
                tracing::info!(target: "accord::audit", event = "a2a.tasks.handled", method = %method, subject = %subject)
            }
            Err(error) => {
                tracing::warn!(target: "accord::audit", event = "a2a.tasks.handler_error", method = %method, code = error.code, subject = %subject)
            }
        }
        let result = result.and_then(|view| answer_json(&view)).map_err(|error| {
            if error.message.is_empty() { RpcError { message: "handler error".into(), ..error } } else { error }
        });
        let retry_after = result.as_ref().err().and_then(retry_after_of);
        let mut response = rpc_response(StatusCode::OK, Some(id), result);
        if let Some(seconds) = retry_after {
            crate::refusal::set_retry_after(&mut response, seconds);
        }
        response
    }
}

/// How this face answers a layer's refusal: a JSON-RPC error with `id: null` (the body is not
/// read) — `-32000` for credentials, [`RpcError::RATE_LIMITED`] with `data.retryAfter` for a rate
/// — at the transport's status (401, 429), with `Retry-After` and the challenges.
pub(crate) fn refusals() -> Refusals {
    Refusals::new(|refusal: &Refusal| {
        let error = match refusal.kind {
            RefusalKind::Unauthenticated => ErrorObject::new(-32000, refusal.message.clone()),
            RefusalKind::RateLimited => ErrorObject::from(
                RpcError::new(RpcError::RATE_LIMITED, refusal.message.clone())
                    .with_data(json!({"reason": "RATE_LIMITED", "retryAfter": refusal.retry_after})),
            ),
            RefusalKind::Busy => ErrorObject::from(
                RpcError::new(RpcError::UNAVAILABLE, refusal.message.clone())
                    .with_data(json!({"reason": "UNAVAILABLE", "retryAfter": refusal.retry_after})),
            ),
            _ => ErrorObject::new(-32600, refusal.message.clone()),
        };
        let body = accord_types::jsonrpc::Response::<Value>::failure(Value::Null, error);
        refusal.finish_http(axum::Json(body).into_response())
    })
}

/// The seconds a retryable refusal says to wait (`data.retryAfter`), for its `Retry-After`.
fn retry_after_of(error: &RpcError) -> Option<u64> {
    let retryable = [
        RpcError::TASK_CAPACITY_EXHAUSTED,
        RpcError::OWNER_SHARE_EXHAUSTED,
        RpcError::RATE_LIMITED,
        RpcError::UNAVAILABLE,
    ];
    if !retryable.contains(&error.code) {
        return None;
    }
    let seconds = error.data.as_ref().and_then(|data| data.get("retryAfter")).and_then(Value::as_u64);
    Some(seconds.unwrap_or(crate::CAPACITY_RETRY_AFTER_SECS))
}

fn audit_rejected(status: u16, code: i64) {
    tracing::info!(target: "accord::audit", event = "a2a.tasks.rejected", status, code);
}

enum Call {
    Send(TaskSpec),
    Get(String),
    Cancel(String),
    SendSubscribe(TaskSpec),
}

fn parse_call(method: &str, params: &Value) -> Result<Call, RpcError> {
    let invalid = |message: String| RpcError::new(RpcError::INVALID_PARAMS, message);
    match method {
        "tasks/send" => TaskSpec::from_params(method, params).map(Call::Send).map_err(invalid),
        "tasks/sendSubscribe" => TaskSpec::from_params(method, params).map(Call::SendSubscribe).map_err(invalid),
        "tasks/get" => TaskRef::from_params(method, params).map(|task| Call::Get(task.into_string())).map_err(invalid),
        _ => TaskRef::from_params(method, params).map(|task| Call::Cancel(task.into_string())).map_err(invalid),
    }
}

/// A JSON-RPC response; `id: None` omits the member (for envelopes whose id was absent).
fn rpc_response(status: StatusCode, id: Option<Value>, result: Result<Value, RpcError>) -> Response {
    let Some(id) = id else {
        let mut body = serde_json::to_value(jsonrpc::Response::from_result(Value::Null, result)).unwrap_or_default();
        // This face documents an ill-formed envelope without id as answered without the member.
        if let Some(body) = body.as_object_mut() {
            body.remove("id");
        }
        return (status, axum::Json(body)).into_response();
    };
    (status, axum::Json(jsonrpc::Response::from_result(id, result))).into_response()
}

/// An answer as the JSON of a response's `result`. Written through a `Value`, whose members are
/// in name order, as this face has always written them.
fn answer_json(answer: &impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(answer).map_err(|error| {
        tracing::error!(%error, "a json-rpc tasks answer does not serialize");
        RpcError::new(RpcError::INTERNAL_ERROR, "the answer could not be written")
    })
}

fn subscribe_response(id: Value, stream: RpcStream) -> Response {
    let events = stream.map(move |item| {
        let sequence = item.as_ref().ok().map(|update| update.sequence);
        let body = jsonrpc::Response::from_result(id.clone(), item.and_then(|update| answer_json(&update)));
        let mut event = Event::default().data(serde_json::to_string(&body).unwrap_or_default());
        if let Some(sequence) = sequence {
            event = event.id(sequence.to_string());
        }
        Ok::<_, Infallible>(event)
    });
    crate::sse::sse_response(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// The built-in handler: runs the agent's skills as engine tasks, through the engine's
/// [`TaskService`].
///
/// Tasks are owned by the caller's [`Principal::owner`]; with [`crate::auth::BearerAuthLayer`] that
/// is the hash of the bearer token, so the same token used as `Task-Access-Token` on the Lucid
/// routes sees the same tasks, and tasks created there are readable here. Anonymous callers share
/// one owner: their task ids (random UUIDs) are their only capability.
#[derive(Debug, Clone)]
pub struct EngineTasks {
    service: TaskService,
    send_wait: Duration,
}

impl EngineTasks {
    /// A handler over `service`. `tasks/send` waits up to 2 s for the task to settle (end, or
    /// wait for input) and then answers its state; a longer task is answered as running.
    pub fn new(service: TaskService) -> Self {
        Self { service, send_wait: Duration::from_secs(2) }
    }

    /// How long `tasks/send` waits for the task to settle.
    pub fn send_wait(mut self, wait: Duration) -> Self {
        self.send_wait = wait;
        self
    }

    fn caller(context: &RpcContext) -> Caller {
        context.caller.clone()
    }

    fn request(task: TaskSpec, context: &RpcContext) -> SendRequest {
        SendRequest::new(Self::caller(context), SendInput::Candidates(vec![Value::Object(task.input)]))
            .skill(task.skill.as_str())
    }
}

/// The face's code for an engine error.
fn failure_error(error: Error) -> RpcError {
    match error.kind() {
        ErrorKind::TaskNotFound => RpcError::new(RpcError::TASK_NOT_FOUND, "task not found"),
        ErrorKind::ScopeRequired => RpcError::new(RpcError::SCOPE_REQUIRED, error.message()),
        ErrorKind::NotCancelable | ErrorKind::CancelConflict => {
            RpcError::new(RpcError::TASK_NOT_CANCELABLE, "task is not cancelable")
        }
        ErrorKind::InvalidInput => {
            RpcError::new(RpcError::INVALID_PARAMS, "invalid input").with_data(json!({"issues": error.issues()}))
        }
        ErrorKind::UnknownSkill
        | ErrorKind::NoSkill
        | ErrorKind::NotInvocable
        | ErrorKind::InvalidRequest
        | ErrorKind::TooLarge
        | ErrorKind::PaymentRequired => RpcError::new(RpcError::INVALID_PARAMS, error.message()),
        // As a handler that serves no streams answers (see `TasksHandler::send_subscribe`).
        ErrorKind::StreamingOff => {
            RpcError::new(RpcError::METHOD_NOT_FOUND, "method 'tasks/sendSubscribe' is not supported here")
        }
        ErrorKind::CapacityExhausted => RpcError::new(RpcError::TASK_CAPACITY_EXHAUSTED, error.message())
            .with_data(json!({"reason": "TASK_CAPACITY_EXHAUSTED", "retryAfter": crate::CAPACITY_RETRY_AFTER_SECS})),
        ErrorKind::OwnerShareExhausted => RpcError::new(RpcError::OWNER_SHARE_EXHAUSTED, error.message())
            .with_data(json!({"reason": "OWNER_SHARE_EXHAUSTED", "retryAfter": crate::CAPACITY_RETRY_AFTER_SECS})),
        ErrorKind::Unavailable | ErrorKind::ShuttingDown => {
            tracing::error!(%error, "the task store is unavailable");
            RpcError::new(RpcError::UNAVAILABLE, "the task store is unavailable; retry later")
                .with_data(json!({"reason": "UNAVAILABLE", "retryAfter": crate::CAPACITY_RETRY_AFTER_SECS}))
        }
        _ => {
            tracing::error!(%error, "json-rpc task operation failed");
            RpcError::new(RpcError::INTERNAL_ERROR, "the task could not be processed")
        }
    }
}

/// The dialect's status of an engine state (the same names: `submitted`, `working`, …).
fn status_of(state: TaskState) -> TaskStatus {
    match state {
        TaskState::Submitted => TaskStatus::Submitted,
        TaskState::Working => TaskStatus::Working,
        TaskState::InputRequired => TaskStatus::InputRequired,
        TaskState::AuthRequired => TaskStatus::AuthRequired,
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Failed => TaskStatus::Failed,
        TaskState::Canceled => TaskStatus::Canceled,
        TaskState::Rejected => TaskStatus::Rejected,
    }
}

/// An engine message in the dialect's types.
fn message_of(message: &accord_engine::Message) -> tasks_rpc::Message {
    tasks_rpc::Message {
        message_id: message.message_id.clone(),
        role: match message.role {
            accord_engine::Role::User => tasks_rpc::Role::User,
            accord_engine::Role::Agent => tasks_rpc::Role::Agent,
        },
        parts: message.parts.iter().map(part_of).collect(),
        metadata: message.metadata.clone(),
    }
}

/// An engine artifact (or chunk) in the dialect's types.
fn artifact_of(artifact: &accord_engine::Artifact) -> tasks_rpc::Artifact {
    tasks_rpc::Artifact {
        artifact_id: artifact.artifact_id.clone(),
        name: artifact.name.clone(),
        parts: artifact.parts.iter().map(part_of).collect(),
    }
}

/// An engine part in the dialect's types.
fn part_of(part: &accord_engine::Part) -> tasks_rpc::Part {
    match part {
        accord_engine::Part::Text(text) => tasks_rpc::Part::Text(text.clone()),
        accord_engine::Part::Data(data) => tasks_rpc::Part::Data(data.clone()),
        accord_engine::Part::File { name, mime, bytes_base64, uri } => tasks_rpc::Part::File {
            name: name.clone(),
            mime: mime.clone(),
            bytes_base64: bytes_base64.clone(),
            uri: uri.clone(),
        },
        // A kind of part the dialect does not name yet reaches its peers as the engine's JSON
        // of it, in a data part, rather than not at all.
        other => tasks_rpc::Part::Data(serde_json::to_value(other).unwrap_or(Value::Null)),
    }
}

/// The error a settled task reports, in this dialect's shape.
fn failure_of(error: &accord_engine::SkillError) -> TaskFailure {
    TaskFailure { code: error.code.clone(), message: error.message.clone() }
}

/// The [`TaskView`] of `task`.
fn task_view(task: &Task) -> TaskView {
    TaskView {
        context_id: task.context_id.clone(),
        result: match (task.state, &task.result) {
            (TaskState::Completed, Some(result)) => Some(serde_json::to_value(result).unwrap_or(Value::Null)),
            _ => None,
        },
        error: match (task.state, &task.error) {
            (TaskState::Failed | TaskState::Rejected, Some(error)) => Some(failure_of(error)),
            _ => None,
        },
        ..TaskView::new(task.id.as_str(), status_of(task.state))
    }
}

/// The [`TaskUpdate`] of one task log entry: a kind this dialect does not name (a question filed
/// into the history, a push given up on) is [`UpdateEvent::Other`].
fn task_update(event: &TaskEvent) -> TaskUpdate {
    let update = match &event.kind {
        // A progress update's words (and a waiting task's question).
        TaskEventKind::Status { state, message } => {
            UpdateEvent::Status { status: status_of(*state), message: message.as_ref().map(message_of) }
        }
        TaskEventKind::Result { result } => UpdateEvent::Result {
            status: status_of(TaskState::Completed),
            result: serde_json::to_value(result).unwrap_or(Value::Null),
        },
        TaskEventKind::Error { state, error } => {
            UpdateEvent::Error { status: status_of(*state), error: failure_of(error) }
        }
        TaskEventKind::Artifact { artifact, append, last_chunk } => {
            UpdateEvent::Artifact { artifact: artifact_of(artifact), append: *append, last_chunk: *last_chunk }
        }
        TaskEventKind::Message { message } => UpdateEvent::Message { message: message_of(message) },
        _ => UpdateEvent::Other,
    };
    TaskUpdate::new(event.task_id.as_str(), event.sequence, update)
}

#[async_trait]
impl TasksHandler for EngineTasks {
    async fn send(&self, task: TaskSpec, context: RpcContext) -> Result<TaskView, RpcError> {
        let request = Self::request(task, &context);
        let task = self.service.send(request, Wait::Settled(self.send_wait)).await.map_err(failure_error)?;
        Ok(task_view(&task))
    }

    async fn get(&self, task_id: String, context: RpcContext) -> Result<TaskView, RpcError> {
        let task =
            self.service.get(&Self::caller(&context), &TaskId::new(task_id), None).await.map_err(failure_error)?;
        Ok(task_view(&task))
    }

    async fn cancel(&self, task_id: String, context: RpcContext) -> Result<TaskView, RpcError> {
        let task = self.service.cancel(&Self::caller(&context), &TaskId::new(task_id)).await.map_err(failure_error)?;
        Ok(task_view(&task))
    }

    async fn send_subscribe(&self, task: TaskSpec, context: RpcContext) -> Result<RpcStream, RpcError> {
        // Refused before the task starts: the stream is built from a send and a subscription.
        self.service.ensure_streaming().map_err(failure_error)?;
        let caller = Self::caller(&context);
        let started =
            self.service.send(Self::request(task, &context), Wait::Immediately).await.map_err(failure_error)?;
        // The whole log, from the creation event, until the task ends.
        let updates =
            self.service.subscribe(&caller, &started.id, SubscribeFrom::Start).await.map_err(failure_error)?;
        let updates = updates.events.map(|item| item.map(|event| task_update(&event)).map_err(failure_error));
        Ok(Box::pin(updates))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_read_with_the_dialects_rules() {
        let send = parse_call("tasks/send", &json!({"task": {"skill": "summarize", "input": {"a": 1}}}));
        assert!(matches!(send, Ok(Call::Send(spec)) if spec.skill.as_str() == "summarize" && spec.input["a"] == 1));
        assert!(matches!(
            parse_call("tasks/sendSubscribe", &json!({"task": {"skill": "s"}})),
            Ok(Call::SendSubscribe(_))
        ));
        assert!(matches!(parse_call("tasks/get", &json!({"taskId": "t-1"})), Ok(Call::Get(id)) if id == "t-1"));
        assert!(matches!(parse_call("tasks/cancel", &json!({"taskId": "t_2"})), Ok(Call::Cancel(id)) if id == "t_2"));
        for (method, params, message) in [
            (
                "tasks/send",
                json!({"task": {"skill": "1abc"}}),
                "tasks/send: params.task.skill must match /^[a-zA-Z][a-zA-Z0-9._-]{0,63}$/",
            ),
            ("tasks/get", json!({"taskId": "a/b"}), "tasks/get: params.taskId must match /^[A-Za-z0-9_-]{1,64}$/"),
            ("tasks/cancel", json!([]), "tasks/cancel: params must be an object"),
        ] {
            let Err(error) = parse_call(method, &params) else { panic!("{method} {params} was accepted") };
            assert_eq!((error.code, error.message.as_str()), (RpcError::INVALID_PARAMS, message));
        }
    }
}
