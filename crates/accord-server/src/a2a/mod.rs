//! The official A2A faces (v1.0 JSON-RPC, HTTP+JSON and gRPC; 0.3 JSON-RPC and HTTP+JSON) over
//! the engine's tasks.
//!
//! This module owns the mapping between A2A's wire model and the engine's: a message becomes a
//! task of one of the agent's skills, the task's state and log become A2A tasks and stream
//! responses. The bindings (`jsonrpc`, `rest`, `grpc`, and the 0.3 ones) only parse, call [`A2aCore`]
//! and write.
//!
//! **Which skill, which input.** A message names its skill in `metadata.skillId` (on the message,
//! else on the request); without one it goes to the agent's default skill. Its input is read from
//! the parts: a single `data` part is the input itself; otherwise the text parts, joined, are tried
//! as JSON, then as `{"text": <text>}`, then as the plain string — the first the skill's input
//! schema accepts wins. A completed task carries its output as the artifact `result` (a `data` part,
//! or a `text` part when the output is a string; none when the output is `null`), after the
//! artifacts the skill produced, and the skill's closing message as its status message.
//!
//! **Follow-ups.** A message with the `taskId` of a task waiting for input or authorization
//! resumes it ([`TaskRuntime::resume`]): the skill runs again with the task's original input and
//! sees the follow-up as `Run::message`. A message to a running or ended task is refused
//! (`UnsupportedOperationError`).
//!
//! **Direct replies.** A skill that answers with `Outcome::Reply` makes a blocking `SendMessage`
//! return that Message instead of the task (which is still recorded, completed, so the exchange
//! stays listable). Streams and `returnImmediately` see the task.
//!
//! **Paid tasks.** A priced skill is paid through the x402 extension (see [`x402`]) when the
//! server collects with an x402 rail; otherwise it is refused (`UnsupportedOperationError`).
//!
//! **Tenants.** A request's `tenant` (the REST path prefix, or the field in JSON-RPC params)
//! scopes the caller: the same caller under another tenant is another owner and sees none of the
//! first one's tasks.

use std::pin::Pin;
use std::time::Duration;

use accord_engine::task::{
    Caller, ListCursor, ListShape, Millis, PageStart, PaidStart, SendInput, SendRequest, SubscribeFrom, Task,
    TaskEvent, TaskEventKind, TaskId, TaskService, TaskUpdates, Wait,
};
use accord_engine::{Error, ErrorKind, Message, Part, Role, TaskState};
use accord_types::a2a::{self, A2aError, A2aErrorKind, PartContent, StreamResponse};
use futures_util::{Stream, StreamExt};
use serde_json::Value;

mod errors;
mod event_stream;
#[cfg(feature = "grpc")]
pub(crate) mod grpc;
pub(crate) mod jsonrpc;
pub(crate) mod push;
pub(crate) mod rest;
mod v03;
mod v03_rest;
pub(crate) mod x402;

pub(crate) use v03_rest::routes as v03_rest_routes;

/// The events of a stream: each A2A stream response with the log sequence it reflects (the SSE
/// `id`, for `Last-Event-ID`).
pub(crate) type A2aStream = Pin<Box<dyn Stream<Item = (Option<EventId>, StreamResponse)> + Send>>;

/// The SSE `id` of a stream event: the sequence of the task log entry it comes from and, when
/// one entry makes several events (a result: its artifact, then the completed status), the
/// event's index within the entry for all but the last (`7:0`, then `7`). Sent back as
/// `Last-Event-ID`, it resumes exactly after that event: nothing skipped, nothing repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventId {
    pub(crate) sequence: u64,
    pub(crate) part: Option<usize>,
}

impl EventId {
    /// Reads `N` or `N:k`.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        match text.split_once(':') {
            None => Some(Self { sequence: text.parse().ok()?, part: None }),
            Some((sequence, part)) => Some(Self { sequence: sequence.parse().ok()?, part: Some(part.parse().ok()?) }),
        }
    }

    /// Where a subscription resuming after this event starts: the log sequence to read after
    /// and, when the event was one of several its entry makes, that entry's sequence and how many
    /// of its events the caller already has (they are skipped when the entry is read again).
    pub(crate) fn resume_point(self) -> (u64, Option<(u64, usize)>) {
        match self.part {
            None => (self.sequence, None),
            // Saturating: `N:<usize::MAX>` (a peer can send any part) means "all of entry N".
            Some(part) => (self.sequence.saturating_sub(1), Some((self.sequence, part.saturating_add(1)))),
        }
    }
}

impl EventId {
    /// The request's `Last-Event-ID`, when it is one of ours.
    pub(crate) fn of_headers(headers: &http::HeaderMap) -> Option<Self> {
        headers.get("last-event-id").and_then(|value| value.to_str().ok()).and_then(Self::parse)
    }
}

/// A request to one task of an HTTP+JSON binding, 1.0 or 0.3 (`/tasks/{id}`, `…:cancel`,
/// `…:subscribe`): who asks, which task, what of it, the path's tenant, the query and the
/// `Last-Event-ID`. An extractor: a handler takes `Result<TaskCall, TaskCallRefused>` and renders
/// the refusal in its own shape.
#[derive(Debug)]
pub(crate) struct TaskCall {
    pub(crate) owner: accord_engine::task::Caller,
    pub(crate) id: String,
    pub(crate) operation: TaskOperation,
    /// The path's tenant, where the route has one.
    pub(crate) tenant: Option<String>,
    pub(crate) query: std::collections::HashMap<String, String>,
    pub(crate) last_event_id: Option<EventId>,
}

/// Why a [`TaskCall`] could not be read: the A2A error its face renders.
#[derive(Debug)]
pub(crate) struct TaskCallRefused(pub(crate) A2aError);

impl axum::response::IntoResponse for TaskCallRefused {
    /// Only for a handler that takes a bare `TaskCall`: the 1.0 HTTP+JSON shape, current mapping.
    fn into_response(self) -> axum::response::Response {
        let mapping = a2a::ErrorMapping::V1_0_1;
        let status = http::StatusCode::from_u16(self.0.http_status(mapping)).unwrap_or(http::StatusCode::BAD_REQUEST);
        (status, axum::Json(self.0.to_rest_body(mapping))).into_response()
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for TaskCall {
    type Rejection = TaskCallRefused;

    async fn from_request_parts(parts: &mut http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        use axum::extract::{Path, Query};
        type Params = std::collections::HashMap<String, String>;
        let refused = |text: String| TaskCallRefused(invalid_params(&text));
        let Path(params) = Path::<Params>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| refused(rejection.body_text()))?;
        let Query(query) = Query::<Params>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| refused(rejection.body_text()))?;
        let (id, operation) = TaskOperation::of(&parts.method, &params).map_err(TaskCallRefused)?;
        Ok(Self {
            owner: crate::auth::caller_of(&parts.extensions),
            id,
            operation,
            tenant: params.get("tenant").cloned(),
            query,
            last_event_id: EventId::of_headers(&parts.headers),
        })
    }
}

/// What an HTTP+JSON request asks of one task. Both REST bindings (1.0 and 0.3) route
/// `/tasks/{task}`, whose segment is the task's id, optionally followed by `:cancel` or
/// `:subscribe` (`:` cannot split a path into two axum parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskOperation {
    /// `GET /tasks/{id}`.
    Get,
    /// `POST /tasks/{id}:cancel`.
    Cancel,
    /// `GET|POST /tasks/{id}:subscribe`.
    Subscribe,
}

impl TaskOperation {
    /// The task's id and the operation, read from the `task` path parameter and the method; a
    /// method and action that name no operation are `MethodNotFound`.
    pub(crate) fn of(
        method: &http::Method,
        params: &std::collections::HashMap<String, String>,
    ) -> Result<(String, Self), A2aError> {
        let segment = params.get("task").map_or("", String::as_str);
        let (id, action) = match segment.rsplit_once(':') {
            Some((id, action)) => (id, Some(action)),
            None => (segment, None),
        };
        let operation = match (method, action) {
            (&http::Method::GET, None) => Self::Get,
            (&http::Method::POST, Some("cancel")) => Self::Cancel,
            (&http::Method::GET | &http::Method::POST, Some("subscribe")) => Self::Subscribe,
            _ => {
                return Err(A2aError::new(A2aErrorKind::MethodNotFound).with_message("no such operation on a task"));
            }
        };
        Ok((id.to_owned(), operation))
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.part {
            None => write!(f, "{}", self.sequence),
            Some(part) => write!(f, "{}:{part}", self.sequence),
        }
    }
}

/// How long a blocking `SendMessage` waits before answering with the task as it is (the task
/// service caps it at its own limit).
const BLOCKING_WAIT: Duration = Duration::from_secs(300);

/// The A2A operations over the task service, shared by every binding: each parses its wire into
/// these calls and writes what they answer.
#[derive(Debug, Clone)]
pub(crate) struct A2aCore {
    pub(crate) service: TaskService,
    /// The extensions the agent declares (see [`negotiate_extensions`]).
    pub(crate) extensions: std::sync::Arc<[a2a::AgentExtension]>,
    /// How priced skills are paid (see [`x402`]).
    pub(crate) payments: Option<crate::PaymentsConfig>,
    /// Which webhook URLs are accepted; `None` when this server sends no push notifications.
    pub(crate) push: Option<std::sync::Arc<crate::push::guard::WebhookPolicy>>,
}

/// What the JSON-RPC endpoint needs, in both dialects ([`jsonrpc`], [`v03`]).
#[derive(Debug, Clone)]
pub(crate) struct JsonRpcState {
    pub(crate) core: A2aCore,
    pub(crate) body_limit: usize,
    /// The card's builder, for `GetExtendedAgentCard`.
    pub(crate) card: std::sync::Arc<crate::card::CardBuilder>,
    /// The binding's path, to find the agent's base URL from a request's.
    pub(crate) path: String,
    /// Whether requests without `A2A-Version`, or with `0.3`, are served in the 0.3 dialect
    /// ([`v03`]) rather than refused.
    pub(crate) v03: bool,
    /// Whether 1.0 is served (off: a 0.3-only peer).
    pub(crate) v10: bool,
}

/// The URL a request was made at, without its query: what a payment request names as the paid
/// resource.
pub(crate) fn resource_of(headers: &http::HeaderMap, uri: &http::Uri, extensions: &http::Extensions) -> String {
    // Nested routers see their own part of the path; the original URI has all of it.
    let uri = extensions.get::<axum::extract::OriginalUri>().map_or(uri, |original| &original.0);
    format!("{}{}", crate::card::origin(headers, uri), uri.path())
}

/// The `A2A-Extensions` service parameter (spec §3.2.6): the comma-separated URIs of the
/// extensions the client activates. Returns those this agent declares (in the agent's order),
/// which the response echoes; a declared `required` extension the client did not activate is
/// `ExtensionSupportRequiredError`. URIs the agent does not declare are ignored.
pub(crate) fn negotiate_extensions(
    headers: &http::HeaderMap,
    declared: &[a2a::AgentExtension],
) -> Result<Vec<String>, A2aError> {
    let requested: Vec<&str> = headers
        .get_all("a2a-extensions")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|uri| !uri.is_empty())
        .collect();
    let activated: Vec<String> = declared
        .iter()
        .filter_map(|extension| extension.uri.as_deref())
        .filter(|uri| requested.contains(uri))
        .map(str::to_owned)
        .collect();
    let missing = declared
        .iter()
        .filter(|extension| extension.required == Some(true))
        .filter_map(|extension| extension.uri.as_deref())
        .find(|uri| !activated.iter().any(|active| active == uri));
    match missing {
        Some(uri) => Err(A2aError::new(A2aErrorKind::ExtensionSupportRequired)
            .with_message(format!(
                "this agent requires the extension {uri}: activate it with the A2A-Extensions header"
            ))
            .with_metadata("extension", uri)),
        None => Ok(activated),
    }
}

/// Echoes the activated extensions on a response.
pub(crate) fn echo_extensions(response: &mut axum::response::Response, activated: &[String]) {
    if activated.is_empty() {
        return;
    }
    if let Ok(value) = http::HeaderValue::from_str(&activated.join(", ")) {
        response.headers_mut().insert("a2a-extensions", value);
    }
}

impl A2aCore {
    /// The task service's request for a `SendMessage`: the skill named in `metadata.skillId` (on
    /// the message, else on the request), the input read from the message's parts, and a
    /// follow-up when the message names a task.
    fn send_request(&self, mut request: a2a::SendMessageRequest, caller: Caller) -> Result<SendRequest, A2aError> {
        // A webhook set inline is checked like a created one, before anything starts.
        let push = match request
            .configuration
            .as_mut()
            .and_then(|configuration| configuration.task_push_notification_config.take())
        {
            Some(config) => Some(self.push_config_of(config)?),
            None => None,
        };
        let caller = caller.within(request.tenant.as_deref());
        let skill = [request.message.metadata.as_ref(), request.metadata.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|metadata| metadata.get("skillId").and_then(Value::as_str))
            .map(str::to_owned);
        let mut send = SendRequest::new(caller, SendInput::FromMessage)
            .message(engine_message(&request.message))
            .context_id(request.message.context_id.clone())
            .new_context()
            .metadata(request.metadata.map(Value::Object));
        send.skill = skill;
        if let Some(id) = request.message.task_id.as_deref().filter(|id| !id.is_empty()) {
            send = send.follow_up(TaskId::new(id));
        }
        if let Some(push) = push {
            send = send.push(push);
        }
        Ok(send)
    }

    /// `SendMessage`: the task once it ends or waits for the caller (or at once with
    /// `returnImmediately`). `resource` is the URL the request was made at.
    pub(crate) async fn send_message(
        &self,
        request: a2a::SendMessageRequest,
        caller: Caller,
        resource: String,
    ) -> Result<a2a::SendMessageResponse, A2aError> {
        let configuration = request.configuration.clone().unwrap_or_default();
        let wait = if configuration.return_immediately == Some(true) {
            Wait::Immediately
        } else {
            Wait::Settled(BLOCKING_WAIT)
        };
        let mut send = self.send_request(request, caller)?;
        if wait != Wait::Immediately {
            send = send.awaited();
        }
        let caller = send.caller.clone();
        let task = self.start(send, resource).await?;
        let task = self.service.wait_for(&caller, task, wait).await.map_err(a2a_error)?;
        if let Some(reply) = direct_reply(&task) {
            return Ok(a2a::SendMessageResponse::Message(reply));
        }
        Ok(a2a::SendMessageResponse::Task(a2a_task(&task, configuration.history_length, true)))
    }

    /// Refuses a streaming operation when the service serves no streams
    /// (`capabilities.streaming: false`), before the request is read any further.
    fn ensure_streaming(&self) -> Result<(), A2aError> {
        self.service.ensure_streaming().map_err(a2a_error)
    }

    /// `SendStreamingMessage`: the task, then its updates until it ends or waits.
    pub(crate) async fn send_streaming(
        &self,
        request: a2a::SendMessageRequest,
        caller: Caller,
        resource: String,
    ) -> Result<A2aStream, A2aError> {
        self.ensure_streaming()?;
        let send = self.send_request(request, caller)?;
        let caller = send.caller.clone();
        let task = self.start(send, resource).await?;
        let updates = self.service.follow(&caller, task).await.map_err(a2a_error)?;
        Ok(project(updates, String::new(), None))
    }

    /// Starts or continues the task a message asks for, paying for a priced skill through the
    /// x402 extension: the task as it is then (running, waiting for its payment, or ended by its
    /// payment's failure).
    /// The URL a payment is for ([`resource_of`]); empty when this face takes no payments, so
    /// that free requests do not build it.
    pub(crate) fn resource(&self, headers: &http::HeaderMap, uri: &http::Uri, extensions: &http::Extensions) -> String {
        if self.payments.is_some() { resource_of(headers, uri, extensions) } else { String::new() }
    }

    async fn start(&self, send: SendRequest, resource: String) -> Result<Task, A2aError> {
        let follow_up = send.task_id.is_some();
        let mut payment = x402::X402Payment::new(self.payments.as_ref(), resource, send.message.as_ref(), follow_up);
        let started = self.service.send_paid(send, &mut payment).await.map_err(a2a_error)?;
        match started {
            PaidStart::Started { task, .. }
            | PaidStart::AwaitingPayment { task }
            | PaidStart::PaymentFailed { task, .. }
            | PaidStart::EndedAfterPayment { task, .. } => Ok(task),
            PaidStart::Refused(x402::Refusal::Unpayable(error)) => Err(error),
            PaidStart::Unconfirmed { task_id, receipt } => {
                // The payment committed: the caller keeps the task id and the evidence.
                let receipts = accord_payments::x402::receipt_settlements(&receipt);
                Err(A2aError::new(A2aErrorKind::Internal)
                    .with_message("The payment committed but the task's end could not be recorded; read the task again")
                    .with_metadata("taskId", task_id.to_string())
                    .with_metadata(x402::RECEIPTS, serde_json::to_string(&receipts).unwrap_or_default()))
            }
            // A new message never carries a payment, so nothing else is refused or challenged.
            _ => Err(A2aError::new(A2aErrorKind::UnsupportedOperation)
                .with_message("the payment could not be requested for this skill")),
        }
    }

    /// `SubscribeToTask`: the current task, then its updates (or, with `Last-Event-ID`, the
    /// updates after that event), open through states that wait for the caller, until the task
    /// ends (spec §3.1.6).
    pub(crate) async fn subscribe(
        &self,
        request: a2a::SubscribeToTaskRequest,
        caller: Caller,
        last_event_id: Option<EventId>,
    ) -> Result<A2aStream, A2aError> {
        self.ensure_streaming()?;
        let caller = caller.within(request.tenant.as_deref());
        let id = TaskId::new(request.id);
        let (from, partial) = match last_event_id {
            None => (SubscribeFrom::Snapshot, None),
            Some(id) => {
                let (after, partial) = id.resume_point();
                (SubscribeFrom::After(after), partial)
            }
        };
        let updates = self.service.subscribe(&caller, &id, from).await.map_err(a2a_error)?;
        let context_id = match &updates.snapshot {
            Some(task) => task.context_id.clone().unwrap_or_default(),
            None => self.service.get(&caller, &id, Some(0)).await.map_err(a2a_error)?.context_id.unwrap_or_default(),
        };
        Ok(project(updates, context_id, partial))
    }

    /// `GetTask`.
    pub(crate) async fn get_task(&self, request: a2a::GetTaskRequest, caller: Caller) -> Result<a2a::Task, A2aError> {
        let caller = caller.within(request.tenant.as_deref());
        let history_length = request.history_length.map(|length| usize::try_from(length).unwrap_or(0));
        let task = self.service.get(&caller, &TaskId::new(request.id), history_length).await.map_err(a2a_error)?;
        Ok(a2a_task(&task, None, true))
    }

    /// `CancelTask`: a task that already ended (cancelled included) cannot be cancelled.
    pub(crate) async fn cancel_task(
        &self,
        request: a2a::CancelTaskRequest,
        caller: Caller,
    ) -> Result<a2a::Task, A2aError> {
        let caller = caller.within(request.tenant.as_deref());
        let task = self.service.cancel(&caller, &TaskId::new(request.id)).await.map_err(a2a_error)?;
        Ok(a2a_task(&task, None, true))
    }

    /// `ListTasks`: the caller's tasks, newest first, in pages; `pageToken` is opaque.
    pub(crate) async fn list_tasks(
        &self,
        request: a2a::ListTasksRequest,
        caller: Caller,
    ) -> Result<a2a::ListTasksResponse, A2aError> {
        let caller = caller.within(request.tenant.as_deref());
        let page_size = request.page_size.unwrap_or(a2a::requests::LIST_TASKS_DEFAULT_PAGE_SIZE);
        let page = match request.page_token.as_deref().filter(|token| !token.is_empty()) {
            None => PageStart::Offset(0),
            Some(token) => PageStart::After(
                ListCursor::parse(token).ok_or_else(|| invalid_params("pageToken is not a token this agent issued"))?,
            ),
        };
        let states = match request.status {
            None | Some(a2a::TaskState::Unspecified) => None,
            Some(state) => Some(vec![engine_state(state)]),
        };
        let updated_after = match request.status_timestamp_after.as_deref() {
            None => None,
            // An instant before the epoch: every task changed after it.
            Some(text) => Some(
                a2a::time::parse_rfc3339_utc(text)
                    .map(|after| Millis::try_from(after).unwrap_or(0))
                    .map_err(|_| invalid_params("statusTimestampAfter must be an RFC 3339 UTC timestamp"))?,
            ),
        };
        let query = accord_engine::task::ListQuery {
            context_id: request.context_id.clone().filter(|context| !context.is_empty()),
            states,
            skill: None,
            updated_after,
            limit: usize::try_from(page_size).unwrap_or(50),
            page,
        };
        let include_artifacts = request.include_artifacts == Some(true);
        // The service bounds the page in bytes as shaped here, and says how much history a
        // listed task carries (a default and a maximum, whatever the request asks).
        let shape = ListShape::default()
            .history_length(request.history_length.map(|length| usize::try_from(length).unwrap_or(0)))
            .artifacts(include_artifacts)
            // A result is carried only as an artifact.
            .result(include_artifacts);
        let page = self.service.list_shaped(&caller, &query, shape).await.map_err(a2a_error)?;
        let history_length = i32::try_from(self.service.list_history_length(&shape)).unwrap_or(i32::MAX);
        let tasks = page.tasks.iter().map(|task| a2a_task(task, Some(history_length), include_artifacts)).collect();
        let next_page_token = page.next.as_ref().map(ListCursor::to_token).unwrap_or_default();
        Ok(a2a::ListTasksResponse {
            tasks,
            next_page_token,
            page_size,
            total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        })
    }
}

/// The Message a completed task answered with, when its skill replied directly.
fn direct_reply(task: &Task) -> Option<a2a::Message> {
    let result = task.result.as_ref().filter(|result| result.reply && task.state == TaskState::Completed)?;
    let reply = result.message.as_ref()?;
    Some(a2a_message(reply, task, usize::MAX))
}

pub(crate) fn invalid_params(message: &str) -> A2aError {
    A2aError::new(A2aErrorKind::InvalidParams).with_message(message)
}

/// The A2A error for an engine error. Another owner's task reads as not found.
pub(crate) fn a2a_error(error: Error) -> A2aError {
    let id = error.task_id().map(ToString::to_string).unwrap_or_default();
    match error.kind() {
        ErrorKind::TaskNotFound => A2aError::task_not_found(&id),
        // The specification has no error of its own for it: the task's not-found error, saying
        // which config is missing.
        ErrorKind::PushConfigNotFound => A2aError::task_not_found(&id).with_message(error.message()),
        ErrorKind::NotCancelable | ErrorKind::CancelConflict => {
            A2aError::new(A2aErrorKind::TaskNotCancelable).with_message(error.message())
        }
        ErrorKind::TaskRunning
        | ErrorKind::TaskEnded
        | ErrorKind::PaymentRequired
        | ErrorKind::DurableStoreRequired
        | ErrorKind::StreamingOff => A2aError::new(A2aErrorKind::UnsupportedOperation).with_message(error.message()),
        ErrorKind::NoSkill
        | ErrorKind::UnknownSkill
        | ErrorKind::NotInvocable
        | ErrorKind::InvalidInput
        | ErrorKind::InvalidRequest
        | ErrorKind::TooLarge => invalid_params(error.message()),
        ErrorKind::AnonymousNotAllowed => A2aError::new(A2aErrorKind::InvalidRequest).with_message(error.message()),
        ErrorKind::ScopeRequired => A2aError::new(A2aErrorKind::PermissionDenied).with_message(error.message()),
        ErrorKind::CapacityExhausted => errors::retryable(
            A2aError::new(A2aErrorKind::TaskCapacityExhausted).with_message(error.message()),
            crate::CAPACITY_RETRY_AFTER_SECS,
        ),
        ErrorKind::OwnerShareExhausted => errors::retryable(
            A2aError::new(A2aErrorKind::OwnerShareExhausted).with_message(error.message()),
            crate::CAPACITY_RETRY_AFTER_SECS,
        ),
        // The store failed: the server's trouble, not the caller's, and usually passing (a
        // restarting database, a full disk). The message is for operators: it goes to the log.
        ErrorKind::Unavailable | ErrorKind::ShuttingDown => {
            tracing::error!(%error, "the task store is unavailable");
            errors::retryable(A2aError::new(A2aErrorKind::Unavailable), crate::CAPACITY_RETRY_AFTER_SECS)
        }
        _ => {
            tracing::error!(%error, "A2A task operation failed");
            A2aError::new(A2aErrorKind::Internal)
        }
    }
}

fn engine_message(message: &a2a::Message) -> Message {
    let role = if message.role == a2a::Role::Agent { Role::Agent } else { Role::User };
    let parts = message.parts.iter().map(engine_part).collect();
    Message { message_id: Some(message.message_id.clone()), role, parts, metadata: message.metadata.clone() }
}

fn engine_part(part: &a2a::Part) -> Part {
    match &part.content {
        PartContent::Text(text) => Part::Text(text.clone()),
        PartContent::Data(data) => Part::Data(data.clone()),
        PartContent::Raw(bytes) => Part::File {
            name: part.filename.clone(),
            mime: part.media_type.clone(),
            bytes_base64: Some(bytes.clone()),
            uri: None,
        },
        PartContent::Url(url) => Part::File {
            name: part.filename.clone(),
            mime: part.media_type.clone(),
            bytes_base64: None,
            uri: Some(url.clone()),
        },
    }
}

fn a2a_part(part: &Part) -> Option<a2a::Part> {
    Some(match part {
        Part::Text(text) => a2a::Part::new(PartContent::Text(text.clone())),
        Part::Data(data) => a2a::Part::new(PartContent::Data(data.clone())),
        Part::File { name, mime, bytes_base64, uri } => {
            let content = match (bytes_base64, uri) {
                (Some(bytes), _) => PartContent::Raw(bytes.clone()),
                (None, Some(uri)) => PartContent::Url(uri.clone()),
                (None, None) => return None,
            };
            a2a::Part { content, metadata: None, filename: name.clone(), media_type: mime.clone() }
        }
        _ => return None,
    })
}

pub(crate) fn a2a_state(state: TaskState) -> a2a::TaskState {
    match state {
        TaskState::Submitted => a2a::TaskState::Submitted,
        TaskState::Working => a2a::TaskState::Working,
        TaskState::InputRequired => a2a::TaskState::InputRequired,
        TaskState::AuthRequired => a2a::TaskState::AuthRequired,
        TaskState::Completed => a2a::TaskState::Completed,
        TaskState::Failed => a2a::TaskState::Failed,
        TaskState::Canceled => a2a::TaskState::Canceled,
        TaskState::Rejected => a2a::TaskState::Rejected,
    }
}

fn engine_state(state: a2a::TaskState) -> TaskState {
    match state {
        a2a::TaskState::Working => TaskState::Working,
        a2a::TaskState::InputRequired => TaskState::InputRequired,
        a2a::TaskState::AuthRequired => TaskState::AuthRequired,
        a2a::TaskState::Completed => TaskState::Completed,
        a2a::TaskState::Failed => TaskState::Failed,
        a2a::TaskState::Canceled => TaskState::Canceled,
        a2a::TaskState::Rejected => TaskState::Rejected,
        a2a::TaskState::Submitted | a2a::TaskState::Unspecified => TaskState::Submitted,
    }
}

fn a2a_message(message: &Message, task: &Task, index: usize) -> a2a::Message {
    a2a::Message {
        message_id: message.message_id.clone().unwrap_or_else(|| format!("{}-{index}", task.id)),
        context_id: task.context_id.clone(),
        task_id: Some(task.id.to_string()),
        role: match message.role {
            Role::User => a2a::Role::User,
            Role::Agent => a2a::Role::Agent,
        },
        parts: message.parts.iter().filter_map(a2a_part).collect(),
        metadata: message.metadata.clone(),
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    }
}

/// The artifact that carries a completed task's output: none for a direct reply (the reply is
/// the answer) or a `null` output.
fn result_artifact(result: &accord_engine::task::TaskResult) -> Option<a2a::Artifact> {
    let part = match &result.output {
        _ if result.reply => return None,
        Value::Null => return None,
        Value::String(text) => a2a::Part::new(PartContent::Text(text.clone())),
        other => a2a::Part::new(PartContent::Data(other.clone())),
    };
    Some(a2a::Artifact {
        artifact_id: "result".into(),
        name: Some("result".into()),
        description: None,
        parts: vec![part],
        metadata: None,
        extensions: Vec::new(),
    })
}

fn a2a_artifact(artifact: &accord_engine::Artifact) -> a2a::Artifact {
    a2a::Artifact {
        artifact_id: artifact.artifact_id.clone(),
        name: artifact.name.clone(),
        description: None,
        parts: artifact.parts.iter().filter_map(a2a_part).collect(),
        metadata: None,
        extensions: Vec::new(),
    }
}

fn a2a_status(task: &Task) -> a2a::TaskStatus {
    let failed = matches!(task.state, TaskState::Failed | TaskState::Rejected);
    let message = match (&task.status_message, &task.error) {
        // A run that failed after starting under a status message (a paid run, whose message
        // holds the receipts): the error says what happened, the metadata stays.
        (status, Some(error)) if failed => {
            let message = Message::agent_text(format!("{}: {}", error.code, error.message));
            let message = Message {
                message_id: Some(format!("{}-status", task.id)),
                metadata: status.as_ref().and_then(|status| status.metadata.clone()),
                ..message
            };
            Some(a2a_message(&message, task, 0))
        }
        (Some(message), _) => Some(a2a_message(message, task, usize::MAX)),
        _ => None,
    };
    a2a::TaskStatus {
        state: a2a_state(task.state),
        message,
        timestamp: Some(a2a::time::format_unix_millis(i64::try_from(task.updated_at).unwrap_or(i64::MAX))),
    }
}

/// The A2A view of an engine task.
pub(crate) fn a2a_task(task: &Task, history_length: Option<i32>, include_artifacts: bool) -> a2a::Task {
    let mut history: Vec<a2a::Message> =
        task.history.iter().enumerate().map(|(index, message)| a2a_message(message, task, index)).collect();
    if let Some(keep) = history_length.and_then(|length| usize::try_from(length).ok()) {
        let skip = history.len().saturating_sub(keep);
        history.drain(..skip);
    }
    let mut artifacts: Vec<a2a::Artifact> =
        if include_artifacts { task.artifacts.iter().map(a2a_artifact).collect() } else { Vec::new() };
    if include_artifacts
        && let Some(result) = task.result.as_ref().filter(|_| task.state == TaskState::Completed)
        && let Some(artifact) = result_artifact(result)
    {
        artifacts.push(artifact);
    }
    a2a::Task {
        id: task.id.to_string(),
        context_id: task.context_id.clone(),
        status: a2a_status(task),
        artifacts,
        history,
        metadata: task.metadata.as_ref().and_then(Value::as_object).cloned(),
    }
}

/// The A2A stream of a task's updates: the snapshot as a `Task`, then the stream responses of
/// each log entry. It ends where the task service's stream ends (a send's once the task settles,
/// a subscription's once it ends). `partial` is the entry whose first events the caller has
/// already seen, and how many of them to skip.
fn project(updates: TaskUpdates, context_id: String, partial: Option<(u64, usize)>) -> A2aStream {
    let context_id = updates.snapshot.as_ref().and_then(|task| task.context_id.clone()).unwrap_or(context_id);
    let head = updates.snapshot.map(|task| {
        let id = EventId { sequence: accord_engine::task::service::after_snapshot(&task), part: None };
        (Some(id), StreamResponse::Task(a2a_task(&task, None, true)))
    });
    let updates = updates.events.take_while(|event| std::future::ready(event.is_ok())).flat_map(move |event| {
        let responses = event
            .map(|event| {
                let responses = stream_responses(&event, &context_id);
                match partial {
                    Some((sequence, skip)) if event.sequence == sequence => responses.into_iter().skip(skip).collect(),
                    _ => responses,
                }
            })
            .unwrap_or_default();
        futures_util::stream::iter(responses)
    });
    Box::pin(futures_util::stream::iter(head).chain(updates))
}

/// The stream responses for one log entry.
pub(crate) fn stream_responses(event: &TaskEvent, context_id: &str) -> Vec<(Option<EventId>, StreamResponse)> {
    let task_id = event.task_id.to_string();
    let at = Some(a2a::time::format_unix_millis(i64::try_from(event.at).unwrap_or(i64::MAX)));
    let status = |state: TaskState, message: Option<a2a::Message>| {
        StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
            task_id: task_id.clone(),
            context_id: context_id.to_owned(),
            status: a2a::TaskStatus { state: a2a_state(state), message, timestamp: at.clone() },
            metadata: None,
        })
    };
    let artifact = |artifact: a2a::Artifact, append: bool, last_chunk: bool| {
        StreamResponse::ArtifactUpdate(a2a::TaskArtifactUpdateEvent {
            task_id: task_id.clone(),
            context_id: context_id.to_owned(),
            artifact,
            append: Some(append),
            last_chunk: Some(last_chunk),
            metadata: None,
        })
    };
    let agent_message = |message: &Message| a2a::Message {
        message_id: message.message_id.clone().unwrap_or_else(|| format!("{task_id}-{}", event.sequence)),
        context_id: Some(context_id.to_owned()),
        task_id: Some(task_id.clone()),
        role: a2a::Role::Agent,
        parts: message.parts.iter().filter_map(a2a_part).collect(),
        metadata: message.metadata.clone(),
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    };
    let sequence = Some(EventId { sequence: event.sequence, part: None });
    let mut responses = match &event.kind {
        TaskEventKind::Status { state, message } => {
            vec![(sequence, status(*state, message.as_ref().map(agent_message)))]
        }
        TaskEventKind::Result { result } => result_artifact(result)
            .map(|output| (sequence, artifact(output, false, true)))
            .into_iter()
            .chain([(sequence, status(TaskState::Completed, result.message.as_ref().map(agent_message)))])
            .collect(),
        TaskEventKind::Error { state, error } => {
            let message = agent_message(&Message::agent_text(format!("{}: {}", error.code, error.message)));
            vec![(sequence, status(*state, Some(message)))]
        }
        TaskEventKind::Artifact { artifact: chunk, append, last_chunk } => {
            vec![(sequence, artifact(a2a_artifact(chunk), *append, *last_chunk))]
        }
        // The caller's own messages are not echoed; the agent's are status messages.
        TaskEventKind::Message { message } if message.role == Role::Agent => {
            vec![(sequence, status(TaskState::Working, Some(agent_message(message))))]
        }
        _ => Vec::new(),
    };
    // One log entry may make several responses (a result: its artifact, then the completed
    // status); all but the last are told apart by their index (see `EventId`).
    let last = responses.len().saturating_sub(1);
    for (index, (id, _)) in responses.iter_mut().enumerate() {
        if index != last
            && let Some(id) = id
        {
            id.part = Some(index);
        }
    }
    responses
}

#[cfg(test)]
mod tests {
    use super::EventId;

    #[test]
    fn event_ids_read_back_and_resume_after_any_part() {
        for text in ["0", "7", "7:0", "7:3", "18446744073709551615:18446744073709551615"] {
            let id = EventId::parse(text).expect(text);
            assert_eq!(EventId::parse(&id.to_string()), Some(id), "{text}");
        }
        assert_eq!(EventId::parse("7:x"), None);
        assert_eq!(EventId::parse(":1"), None);
        // Found by the `sse_events` fuzz target: the largest part overflowed when counting the
        // events to skip.
        let id = EventId::parse("5:18446744073709551615").expect("an id");
        assert_eq!(id.resume_point(), (4, Some((5, usize::MAX))));
        assert_eq!(EventId::parse("0:0").expect("an id").resume_point(), (0, Some((0, 1))));
        assert_eq!(EventId::parse("9").expect("an id").resume_point(), (9, None));
    }
}
