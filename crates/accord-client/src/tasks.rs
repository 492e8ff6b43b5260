//! The Lucid task operations: send a message (create a task), read, list, cancel, subscribe and
//! wait.
//!
//! Task creation is not idempotent on the server, so [`Client::send_message`] always sends a
//! caller-known access token and idempotency key, and returns both even when it fails
//! ([`ClientError::TaskNotCreated`] with a [`TaskCreationFailure`]): with the token a caller can list its tasks and find out whether the
//! interrupted creation happened before trying again.

use std::pin::Pin;
use std::time::{Duration, Instant};

use accord_types::card::AgentCard;
use accord_types::tasks::{TaskCapability, TaskList, TaskStatus, TaskUpdate, TaskView};
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use reqwest::header::ACCEPT;
use reqwest::{Method, Url};
use serde_json::{Value, json};

use crate::error::{ClientError, Operation, TaskCreationFailure};
use crate::lucid::{Client, directory, parse_url, read_answer, status_error};
use crate::payment::{Sent, Settlement, send_paying};

const TOKEN_HEADER: &str = "task-access-token";

/// A task and the token that owns it.
#[derive(Clone, PartialEq, Eq)]
pub struct TaskAccess {
    /// The task's id.
    pub task_id: String,
    /// The token that owns it. Keep it secret.
    pub access_token: String,
}

impl std::fmt::Debug for TaskAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskAccess").field("task_id", &self.task_id).field("access_token", &"<redacted>").finish()
    }
}

/// Options of [`Client::send_message`].
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// The conversation the task belongs to.
    pub context_id: Option<String>,
    /// Metadata kept with the task.
    pub metadata: Option<serde_json::Map<String, Value>>,
    /// The token to own the task (20–256 characters); reuse one token to list several tasks
    /// together. Generated when absent.
    pub access_token: Option<String>,
    /// The key a payment provider deduplicates on (20–256 characters). Generated when absent.
    pub idempotency_key: Option<String>,
}

/// What [`Client::send_message`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendMessageResponse {
    /// The task and its token.
    pub access: TaskAccess,
    /// The status the server reported.
    pub status: TaskStatus,
    /// The idempotency key that was sent.
    pub idempotency_key: String,
    /// Payment evidence, if any came back.
    pub settlement: Option<Settlement>,
}

/// Options of [`Client::list_tasks`].
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks with one of these statuses.
    pub status: Vec<TaskStatus>,
    /// Page size (server default 50, at most 1000).
    pub limit: Option<usize>,
    /// How many to skip.
    pub offset: Option<usize>,
}

/// One event of a task subscription.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskStreamEvent {
    /// The SSE id: the event's sequence in the task's log (send it back as `Last-Event-ID`).
    pub id: Option<String>,
    /// `statusUpdate`, `resultUpdate` or `error`.
    pub event: String,
    /// The update.
    pub data: TaskUpdate,
}

/// The events of a task subscription.
pub type TaskEventStream = Pin<Box<dyn Stream<Item = Result<TaskStreamEvent, ClientError>> + Send>>;

/// A token or key given by the caller, or a fresh one: 32 random bytes in hex.
fn key_or_generate(given: Option<&str>) -> Option<String> {
    match given {
        Some(key) => {
            let key = key.trim();
            (20..=256).contains(&key.chars().count()).then(|| key.to_owned())
        }
        None => {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).ok()?;
            Some(hex::encode(bytes))
        }
    }
}

fn tasks_url(card: &AgentCard, segments: &[&str]) -> Result<Url, ClientError> {
    let base = card.http_base_url().ok_or(ClientError::NoHttpInterface)?;
    let base = directory(&parse_url(base)?);
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| ClientError::InvalidUrl { url: base.to_string(), reason: "cannot be a base".into() })?
        .pop_if_empty()
        .push("tasks")
        .extend(segments);
    Ok(url)
}

fn checked_token(token: &str) -> Result<&str, ClientError> {
    let token = token.trim();
    if (20..=256).contains(&token.chars().count()) { Ok(token) } else { Err(ClientError::InvalidAccessToken) }
}

impl Client {
    /// Creates a task running `skill` on `input` and returns its capability.
    pub async fn send_message(
        &self,
        card: &AgentCard,
        skill: &str,
        input: Value,
        options: SendOptions,
    ) -> Result<SendMessageResponse, ClientError> {
        let access_token = key_or_generate(options.access_token.as_deref());
        let idempotency_key = key_or_generate(options.idempotency_key.as_deref());
        let fail = |message: String, cause: Option<ClientError>| TaskCreationFailure {
            message,
            access_token: access_token.clone().unwrap_or_default(),
            idempotency_key: idempotency_key.clone().unwrap_or_default(),
            status: None,
            body: None,
            task_id: None,
            task_status: None,
            settlement: None,
            cause: cause.map(Box::new),
        };
        let not_created = |failure: TaskCreationFailure| ClientError::TaskNotCreated(Box::new(failure));
        let (Some(token), Some(key)) = (access_token.clone(), idempotency_key.clone()) else {
            return Err(not_created(fail(
                "Access token and idempotency key must contain 20 to 256 characters".into(),
                None,
            )));
        };
        if card.skill(skill).is_none() {
            return Err(not_created(fail(format!("Skill \"{skill}\" not found in Agent Card"), None)));
        }
        let url = tasks_url(card, &[]).map_err(|error| not_created(fail(error.to_string(), Some(error))))?;
        let text = match input {
            Value::String(text) => text,
            other => other.to_string(),
        };
        let mut body = json!({"message": {"role": "user", "content": {"text": text}}, "skillId": skill});
        if let Some(context_id) = options.context_id {
            body["contextId"] = Value::String(context_id);
        }
        if let Some(metadata) = options.metadata {
            body["metadata"] = Value::Object(metadata);
        }
        let request =
            self.http.post(url.clone()).header(TOKEN_HEADER, &token).header("idempotency-key", &key).json(&body);
        let response = match send_paying(self.payments.as_ref(), request).await {
            Ok(Sent::Response(response)) => response,
            Ok(Sent::Declined(reason)) => {
                let cause = ClientError::PaymentDeclined { operation: Operation::SendMessage, reason };
                return Err(not_created(fail(format!("Task creation failed: {cause}"), Some(cause))));
            }
            Err(source) => {
                let cause = self.unreached(Operation::SendMessage, &url, source).await;
                return Err(not_created(fail("Task creation request failed".into(), Some(cause))));
            }
        };
        let status = response.status();
        let settlement = Settlement::from_headers(response.headers());
        let body = read_answer(Operation::SendMessage, response).await.map_err(|cause| {
            not_created(TaskCreationFailure {
                status: Some(status.as_u16()),
                settlement: settlement.clone(),
                ..fail("Task creation response could not be inspected".into(), Some(cause))
            })
        })?;
        let text = String::from_utf8_lossy(&body).into_owned();
        let parsed: Option<Value> = serde_json::from_str(&text).ok();
        let task_id = parsed.as_ref().and_then(|body| body.get("taskId")).and_then(Value::as_str).map(str::to_owned);
        let task_status =
            parsed.as_ref().and_then(|body| body.get("status")).and_then(Value::as_str).and_then(TaskStatus::parse);
        let enrich = |failure: TaskCreationFailure| {
            not_created(TaskCreationFailure {
                status: Some(status.as_u16()),
                body: Some(parsed.clone().unwrap_or_else(|| Value::String(text.clone()))),
                task_id: task_id.clone(),
                task_status,
                settlement: settlement.clone(),
                ..failure
            })
        };
        if !status.is_success() {
            let reason = status.canonical_reason().unwrap_or("");
            return Err(enrich(fail(format!("Task creation failed: {} {reason}", status.as_u16()), None)));
        }
        let capability: Option<TaskCapability> = parsed.clone().and_then(|body| serde_json::from_value(body).ok());
        let Some(capability) = capability else {
            return Err(enrich(fail("Task creation returned an invalid capability response".into(), None)));
        };
        if capability.access_token != token {
            return Err(enrich(fail("Task creation returned a mismatched owner capability".into(), None)));
        }
        Ok(SendMessageResponse {
            access: TaskAccess { task_id: capability.task_id, access_token: token },
            status: capability.status,
            idempotency_key: key,
            settlement,
        })
    }

    async fn task_call(
        &self,
        operation: Operation,
        method: Method,
        url: Url,
        token: &str,
    ) -> Result<reqwest::Response, ClientError> {
        let token = checked_token(token)?;
        let response = match self.http.request(method, url.clone()).header(TOKEN_HEADER, token).send().await {
            Ok(response) => response,
            Err(source) => return Err(self.unreached(operation, &url, source).await),
        };
        if !response.status().is_success() {
            return Err(status_error(operation, response).await);
        }
        Ok(response)
    }

    async fn decode<T: serde::de::DeserializeOwned>(
        operation: Operation,
        response: reqwest::Response,
    ) -> Result<T, ClientError> {
        let url = response.url().clone();
        let body = read_answer(operation, response).await?;
        serde_json::from_slice(&body).map_err(|error| ClientError::invalid(operation, url, error.to_string()))
    }

    /// Reads a task.
    pub async fn get_task(&self, card: &AgentCard, access: &TaskAccess) -> Result<TaskView, ClientError> {
        let url = tasks_url(card, &[&access.task_id])?;
        let response = self.task_call(Operation::GetTask, Method::GET, url, &access.access_token).await?;
        Self::decode(Operation::GetTask, response).await
    }

    /// Lists the tasks owned by `access_token`.
    pub async fn list_tasks(
        &self,
        card: &AgentCard,
        access_token: &str,
        options: &ListOptions,
    ) -> Result<TaskList, ClientError> {
        let mut url = tasks_url(card, &[])?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(context_id) = &options.context_id {
                query.append_pair("contextId", context_id);
            }
            if !options.status.is_empty() {
                let statuses: Vec<&str> = options.status.iter().map(|status| status.as_str()).collect();
                query.append_pair("status", &statuses.join(","));
            }
            if let Some(limit) = options.limit {
                query.append_pair("limit", &limit.to_string());
            }
            if let Some(offset) = options.offset {
                query.append_pair("offset", &offset.to_string());
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        let response = self.task_call(Operation::ListTasks, Method::GET, url, access_token).await?;
        Self::decode(Operation::ListTasks, response).await
    }

    /// Cancels a task and returns it as cancelled.
    pub async fn cancel_task(&self, card: &AgentCard, access: &TaskAccess) -> Result<TaskView, ClientError> {
        let url = tasks_url(card, &[&access.task_id, "cancel"])?;
        let response = self.task_call(Operation::CancelTask, Method::POST, url, &access.access_token).await?;
        Self::decode(Operation::CancelTask, response).await
    }

    /// Subscribes to a task's updates. With `last_event_id`, the stream resumes after that event;
    /// without, it starts with the task's current status. It ends after the terminal update.
    pub async fn subscribe_task(
        &self,
        card: &AgentCard,
        access: &TaskAccess,
        last_event_id: Option<&str>,
    ) -> Result<TaskEventStream, ClientError> {
        let operation = Operation::SubscribeTask;
        let token = checked_token(&access.access_token)?;
        let url = tasks_url(card, &[&access.task_id, "subscribe"])?;
        let mut request = self.http.get(url.clone()).header(TOKEN_HEADER, token).header(ACCEPT, "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(source) => return Err(self.unreached(operation, &url, source).await),
        };
        if !response.status().is_success() {
            return Err(status_error(operation, response).await);
        }
        let events = crate::http::bounded_sse(response.bytes_stream()).eventsource().map(move |item| {
            let event = item.map_err(|error| ClientError::invalid(operation, &url, error.to_string()))?;
            let data = serde_json::from_str(&event.data)
                .map_err(|error| ClientError::invalid(operation, &url, format!("event data: {error}")))?;
            Ok(TaskStreamEvent { id: (!event.id.is_empty()).then_some(event.id), event: event.event, data })
        });
        Ok(Box::pin(events))
    }

    /// Polls the task every 100 ms until it ends (completed, failed or cancelled) or `max_wait`
    /// passes.
    pub async fn wait_for_task(
        &self,
        card: &AgentCard,
        access: &TaskAccess,
        max_wait: Duration,
    ) -> Result<TaskView, ClientError> {
        let started = Instant::now();
        loop {
            let task = self.get_task(card, access).await?;
            if task.status.is_terminal() {
                return Ok(task);
            }
            if started.elapsed() >= max_wait {
                return Err(ClientError::WaitTimeout {
                    task_id: access.task_id.clone(),
                    waited_ms: max_wait.as_millis(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100).min(max_wait.saturating_sub(started.elapsed()))).await;
        }
    }
}
