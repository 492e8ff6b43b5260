//! The official A2A v1.0 faces (JSON-RPC today; HTTP+JSON next) over the engine's tasks.
//!
//! This module owns the mapping between A2A's wire model and the engine's: a message becomes a
//! task of one of the agent's skills, the task's state and log become A2A tasks and stream
//! responses. The bindings (`jsonrpc`) only parse, call [`A2aCore`] and write.
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
//! **Tenants.** A request's `tenant` (the REST path prefix, or the field in JSON-RPC params)
//! scopes the caller: the same caller under another tenant is another owner and sees none of the
//! first one's tasks.

use std::pin::Pin;
use std::time::Duration;

use accord_engine::task::{
    ListCursor, Millis, OwnerHash, PageStart, Reservation, Task, TaskEvent, TaskEventKind, TaskFailure, TaskId,
    TaskRuntime,
};
use accord_engine::{Message, Part, Role, RunError, Skill, TaskState};
use accord_types::a2a::{self, A2aError, A2aErrorKind, PartContent, StreamResponse};
use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value};

pub(crate) mod jsonrpc;
pub(crate) mod rest;

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
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.part {
            None => write!(f, "{}", self.sequence),
            Some(part) => write!(f, "{}:{part}", self.sequence),
        }
    }
}

/// Where a stream of a task starts.
enum Follow {
    /// With this snapshot of the task.
    Snapshot(Box<Task>),
    /// After this event (a `Last-Event-ID`), without a snapshot.
    After(EventId),
}

/// How long a blocking `SendMessage` waits before answering with the task as it is.
const BLOCKING_WAIT: Duration = Duration::from_secs(300);

/// The A2A operations over a task runtime, shared by every binding.
#[derive(Debug, Clone)]
pub(crate) struct A2aCore {
    pub(crate) runtime: TaskRuntime,
    pub(crate) default_skill: Option<String>,
    /// The extensions the agent declares (see [`negotiate_extensions`]).
    pub(crate) extensions: std::sync::Arc<[a2a::AgentExtension]>,
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
    fn skill_for(&self, request: &a2a::SendMessageRequest) -> Result<&std::sync::Arc<Skill>, A2aError> {
        let named = [request.message.metadata.as_ref(), request.metadata.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|metadata| metadata.get("skillId").and_then(Value::as_str));
        let key = named.or(self.default_skill.as_deref()).ok_or_else(|| {
            invalid_params("the message names no skill (metadata.skillId) and the agent has no default")
        })?;
        let skill = self.runtime.agent().skill(key).map_err(|_| invalid_params(&format!("unknown skill '{key}'")))?;
        if !skill.is_invocable() {
            return Err(invalid_params(&format!("skill '{key}' cannot run as a task")));
        }
        // The A2A faces have no payment step: a priced task is only created through the paid
        // Lucid route, never here for free.
        if skill.pricing().task.is_some() {
            return Err(A2aError::new(A2aErrorKind::UnsupportedOperation)
                .with_message(format!("skill '{key}' is priced; create the task through the paid /tasks route")));
        }
        Ok(skill)
    }

    /// Starts the task a new message asks for, or resumes the one it follows up.
    async fn start(&self, request: a2a::SendMessageRequest, owner: OwnerHash) -> Result<Task, A2aError> {
        // A webhook this agent would never call is refused rather than silently ignored.
        if request
            .configuration
            .as_ref()
            .is_some_and(|configuration| configuration.task_push_notification_config.is_some())
        {
            return Err(A2aError::new(A2aErrorKind::PushNotificationNotSupported).with_message(
                "this agent does not send push notifications (capabilities.pushNotifications is false)",
            ));
        }
        let owner = scoped(owner, request.tenant.as_deref());
        if request.message.task_id.as_deref().is_some_and(|id| !id.is_empty()) {
            return self.follow_up(&request, owner).await;
        }
        let skill = self.skill_for(&request)?;
        let valid = input_for(skill, &request.message)?;
        let context_id = request
            .message
            .context_id
            .clone()
            .filter(|context| !context.is_empty())
            .unwrap_or_else(|| TaskId::generate().to_string());
        let mut reservation = Reservation::new(owner, valid);
        reservation.context_id = Some(context_id);
        reservation.metadata = request.metadata.clone().map(Value::Object);
        reservation.message = Some(engine_message(&request.message));
        self.runtime.start(reservation).await.map_err(failure)
    }

    /// A message for an existing task: it must exist for the caller and share its context; a
    /// task waiting for input or authorization resumes, any other is refused.
    async fn follow_up(&self, request: &a2a::SendMessageRequest, owner: OwnerHash) -> Result<Task, A2aError> {
        let id = TaskId::new(request.message.task_id.clone().unwrap_or_default());
        let task = self.runtime.get(&id, &owner).await.map_err(failure)?;
        if let Some(context) = request.message.context_id.as_deref().filter(|context| !context.is_empty())
            && task.context_id.as_deref() != Some(context)
        {
            return Err(invalid_params("the message's contextId differs from the task's"));
        }
        self.runtime.resume(&id, &owner, engine_message(&request.message)).await.map_err(|refusal| match refusal {
            TaskFailure::NotWaiting { state, .. } => {
                let why = if state.is_terminal() {
                    "the task has ended and takes no more messages; send a new message in the same contextId"
                } else {
                    "the task is running; it takes a message only while it waits for input or authorization"
                };
                A2aError::new(A2aErrorKind::UnsupportedOperation).with_message(why)
            }
            other => failure(other),
        })
    }

    /// `SendMessage`: the task once it ends or waits for the caller (or at once with
    /// `returnImmediately`).
    pub(crate) async fn send_message(
        &self,
        request: a2a::SendMessageRequest,
        owner: OwnerHash,
    ) -> Result<a2a::SendMessageResponse, A2aError> {
        let configuration = request.configuration.clone().unwrap_or_default();
        let scoped_owner = scoped(owner, request.tenant.as_deref());
        let task = self.start(request, owner).await?;
        let task = if configuration.return_immediately == Some(true) {
            task
        } else {
            self.until_settled(&task, &scoped_owner).await?
        };
        if let Some(reply) = direct_reply(&task) {
            return Ok(a2a::SendMessageResponse::Message(reply));
        }
        Ok(a2a::SendMessageResponse::Task(a2a_task(&task, configuration.history_length, true)))
    }

    /// Waits until the task ends or is interrupted (input or authorization required), watching
    /// the log after the snapshot `task` reflects.
    async fn until_settled(&self, task: &Task, owner: &OwnerHash) -> Result<Task, A2aError> {
        if settled(task.state) {
            return Ok(task.clone());
        }
        let id = &task.id;
        let mut events = self.runtime.events(id, owner, task.version + 1).await.map_err(failure)?;
        let settle = async {
            while let Some(event) = events.next().await {
                let Ok(event) = event else { break };
                if event.kind.state().is_some_and(settled) {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(BLOCKING_WAIT, settle).await;
        self.runtime.get(id, owner).await.map_err(failure)
    }

    /// `SendStreamingMessage`: the task, then its updates until it ends or waits.
    pub(crate) async fn send_streaming(
        &self,
        request: a2a::SendMessageRequest,
        owner: OwnerHash,
    ) -> Result<A2aStream, A2aError> {
        let scoped_owner = scoped(owner, request.tenant.as_deref());
        let task = self.start(request, owner).await?;
        self.follow(task.id.clone(), scoped_owner, Follow::Snapshot(Box::new(task))).await
    }

    /// `SubscribeToTask`: the current task, then its updates (or, with `Last-Event-ID`, the
    /// updates after that event).
    pub(crate) async fn subscribe(
        &self,
        request: a2a::SubscribeToTaskRequest,
        owner: OwnerHash,
        last_event_id: Option<EventId>,
    ) -> Result<A2aStream, A2aError> {
        let owner = scoped(owner, request.tenant.as_deref());
        let id = TaskId::new(request.id);
        let task = self.runtime.get(&id, &owner).await.map_err(failure)?;
        if task.state.is_terminal() && last_event_id.is_none() {
            return Err(A2aError::new(A2aErrorKind::UnsupportedOperation)
                .with_message("the task has ended; read it with GetTask"));
        }
        let from = match last_event_id {
            Some(after) => Follow::After(after),
            None => Follow::Snapshot(Box::new(task)),
        };
        self.follow(id, owner, from).await
    }

    /// The stream of a task: the snapshot `from` (or, with `after`, no snapshot and the log after
    /// that sequence), then the updates the log records, closed right after the first terminal or
    /// interrupted state — without waiting for another event.
    async fn follow(&self, id: TaskId, owner: OwnerHash, from: Follow) -> Result<A2aStream, A2aError> {
        // `partial`: the entry whose first events the caller has already seen, and how many.
        let (first, cursor, partial) = match from {
            Follow::After(EventId { sequence, part: None }) => (None, sequence, None),
            Follow::After(EventId { sequence, part: Some(part) }) => {
                (None, sequence.saturating_sub(1), Some((sequence, part)))
            }
            Follow::Snapshot(task) => {
                // The record has every logged event applied but the creation event: it reflects
                // the log up to sequence `version + 1`.
                let cursor = task.version + 1;
                let id = EventId { sequence: cursor, part: None };
                (Some((Some(id), StreamResponse::Task(a2a_task(&task, None, true)))), cursor, None)
            }
        };
        let events = self.runtime.events(&id, &owner, cursor).await.map_err(failure)?;
        let context_id = self.runtime.get(&id, &owner).await.map_err(failure)?.context_id.unwrap_or_default();
        let head = futures_util::stream::iter(first);
        let updates = events
            .take_while(|event| std::future::ready(event.is_ok()))
            .filter_map(move |event| {
                let responses = event
                    .map(|event| {
                        let responses = stream_responses(&event, &context_id);
                        match partial {
                            Some((sequence, seen)) if event.sequence == sequence => {
                                responses.into_iter().skip(seen + 1).collect()
                            }
                            _ => responses,
                        }
                    })
                    .unwrap_or_default();
                std::future::ready(Some(futures_util::stream::iter(responses)))
            })
            .flatten();
        let items: A2aStream = Box::pin(head.chain(updates));
        let stream = futures_util::stream::unfold((items, false), |(mut items, finished)| async move {
            if finished {
                return None;
            }
            let (sequence, response) = items.next().await?;
            let last = match &response {
                StreamResponse::Task(task) => task.status.state.is_terminal() || task.status.state.is_interrupted(),
                StreamResponse::StatusUpdate(update) => {
                    update.status.state.is_terminal() || update.status.state.is_interrupted()
                }
                StreamResponse::Message(_) => true,
                StreamResponse::ArtifactUpdate(_) => false,
            };
            Some(((sequence, response), (items, last)))
        });
        Ok(Box::pin(stream))
    }

    /// `GetTask`.
    pub(crate) async fn get_task(&self, request: a2a::GetTaskRequest, owner: OwnerHash) -> Result<a2a::Task, A2aError> {
        let owner = scoped(owner, request.tenant.as_deref());
        let task = self.runtime.get(&TaskId::new(request.id), &owner).await.map_err(failure)?;
        Ok(a2a_task(&task, request.history_length, true))
    }

    /// `CancelTask`: a task that already ended (cancelled included) cannot be cancelled.
    pub(crate) async fn cancel_task(
        &self,
        request: a2a::CancelTaskRequest,
        owner: OwnerHash,
    ) -> Result<a2a::Task, A2aError> {
        let owner = scoped(owner, request.tenant.as_deref());
        let task = self.runtime.cancel(&TaskId::new(request.id), &owner).await.map_err(failure)?;
        Ok(a2a_task(&task, None, true))
    }

    /// `ListTasks`: the caller's tasks, newest first, in pages; `pageToken` is opaque.
    pub(crate) async fn list_tasks(
        &self,
        request: a2a::ListTasksRequest,
        owner: OwnerHash,
    ) -> Result<a2a::ListTasksResponse, A2aError> {
        let owner = scoped(owner, request.tenant.as_deref());
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
        let page = self.runtime.list(&owner, &query).await.map_err(failure)?;
        let include_artifacts = request.include_artifacts == Some(true);
        let tasks = page.tasks.iter().map(|task| a2a_task(task, request.history_length, include_artifacts)).collect();
        let next_page_token = page.next.as_ref().map(ListCursor::to_token).unwrap_or_default();
        Ok(a2a::ListTasksResponse {
            tasks,
            next_page_token,
            page_size,
            total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        })
    }
}

/// The caller as an owner inside `tenant` (itself without one).
pub(crate) fn scoped(owner: OwnerHash, tenant: Option<&str>) -> OwnerHash {
    match tenant.filter(|tenant| !tenant.is_empty()) {
        Some(tenant) => owner.within(tenant),
        None => owner,
    }
}

/// The Message a completed task answered with, when its skill replied directly.
fn direct_reply(task: &Task) -> Option<a2a::Message> {
    let result = task.result.as_ref().filter(|result| result.reply && task.state == TaskState::Completed)?;
    let reply = result.message.as_ref()?;
    Some(a2a_message(reply, task, usize::MAX))
}

/// Terminal or interrupted: where a blocking send answers and a stream closes.
fn settled(state: TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

pub(crate) fn invalid_params(message: &str) -> A2aError {
    A2aError::new(A2aErrorKind::InvalidParams).with_message(message)
}

/// The A2A error for a task failure. Another owner's task reads as not found.
pub(crate) fn failure(failure: TaskFailure) -> A2aError {
    match failure {
        TaskFailure::NotFound { id } => A2aError::task_not_found(id.as_str()),
        TaskFailure::NotCancellable { .. } | TaskFailure::CancelRace { .. } => {
            A2aError::new(A2aErrorKind::TaskNotCancelable)
                .with_message(failure.to_string().replace("is not running", "cannot be canceled"))
        }
        TaskFailure::CapacityExhausted { .. } => {
            A2aError::new(A2aErrorKind::Internal).with_message(failure.to_string())
        }
        other => {
            tracing::error!(error = %other, "A2A task operation failed");
            A2aError::new(A2aErrorKind::Internal)
        }
    }
}

/// The skill input a message carries (see the module documentation).
fn input_for(skill: &std::sync::Arc<Skill>, message: &a2a::Message) -> Result<accord_engine::ValidInput, A2aError> {
    let data: Vec<&Value> = message
        .parts
        .iter()
        .filter_map(|part| match &part.content {
            PartContent::Data(data) => Some(data),
            _ => None,
        })
        .collect();
    let text: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|part| match &part.content {
            PartContent::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let mut candidates = Vec::new();
    if let [only] = data.as_slice() {
        candidates.push((*only).clone());
    }
    if !text.is_empty() {
        let text = text.join("\n");
        if let Ok(parsed) = serde_json::from_str::<Value>(&text) {
            candidates.push(parsed);
        }
        candidates.push(Value::Object(Map::from_iter([("text".to_owned(), Value::String(text.clone()))])));
        candidates.push(Value::String(text));
    }
    if candidates.is_empty() {
        candidates.push(Value::Object(Map::new()));
    }
    let mut first_error = None;
    for candidate in candidates {
        match skill.validate_input(candidate) {
            Ok(valid) => return Ok(valid),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    let issues = match first_error {
        Some(RunError::InvalidInput { issues }) => issues,
        _ => Vec::new(),
    };
    let detail = issues.iter().map(|issue| issue.message.as_str()).collect::<Vec<_>>().join("; ");
    Err(invalid_params(&format!("the message is not valid input for skill '{}': {detail}", skill.key())))
}

fn engine_message(message: &a2a::Message) -> Message {
    let role = if message.role == a2a::Role::Agent { Role::Agent } else { Role::User };
    let parts = message.parts.iter().map(engine_part).collect();
    Message { message_id: Some(message.message_id.clone()), role, parts }
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
        metadata: None,
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
    let message = match (&task.status_message, &task.error) {
        (Some(message), _) => Some(a2a_message(message, task, usize::MAX)),
        (None, Some(error)) if matches!(task.state, TaskState::Failed | TaskState::Rejected) => {
            let message = Message::agent_text(format!("{}: {}", error.code, error.message));
            Some(a2a_message(&Message { message_id: Some(format!("{}-status", task.id)), ..message }, task, 0))
        }
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

/// The stream responses for one log entry.
fn stream_responses(event: &TaskEvent, context_id: &str) -> Vec<(Option<EventId>, StreamResponse)> {
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
        metadata: None,
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
