//! Following a stream: the events of a [`Connection`] as [`A2aEvent`]s, ending once the task
//! settles, and the reconnection policy (resubscribe after the last event id seen) when the
//! connection drops or stalls first.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use accord_types::a2a::{StreamResponse, SubscribeToTaskRequest};
use futures_util::{Stream, StreamExt};

use super::transport::{Connection, StreamFault, Streaming, Transport, settles, task_id_of};
use crate::error::ClientError;

/// How long a stream waits for the server to close it once the task has settled.
const SETTLED_GRACE: Duration = Duration::from_secs(5);

/// One event of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aEvent {
    /// The SSE `id`, when the server sent one (what `Last-Event-ID` resumes after).
    pub id: Option<String>,
    /// The stream response: a task, a message, a status or an artifact update.
    pub response: StreamResponse,
}

impl A2aEvent {
    /// The task the event is about (`None` for a message without a task).
    pub fn task_id(&self) -> Option<&str> {
        task_id_of(&self.response)
    }
}

/// The events of a stream, in order. Dropping it closes the connection.
pub type A2aEventStream = Pin<Box<dyn Stream<Item = Result<A2aEvent, ClientError>> + Send>>;

/// How a stream waits and reconnects (from the client's options).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    pub(crate) stream_idle_timeout: Duration,
    pub(crate) max_reconnects: u32,
    pub(crate) reconnect_delay: Duration,
}

/// Turns a connection into the stream of events, with the reconnection policy of the module
/// documentation; reconnections go through `transport`, the one that opened the stream.
pub(crate) fn follow(
    transport: Arc<dyn Transport>,
    policy: Policy,
    connection: Connection,
    task_id: Option<String>,
    last_event_id: Option<String>,
) -> A2aEventStream {
    let state = Follow {
        transport,
        policy,
        connection: Some(connection),
        task_id,
        last_event_id,
        attempts: 0,
        settled: false,
        done: false,
        last_reason: String::new(),
    };
    Box::pin(futures_util::stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    }))
}

/// The state of a followed stream.
struct Follow {
    /// The binding and version the stream speaks (its reconnections too).
    transport: Arc<dyn Transport>,
    policy: Policy,
    connection: Option<Connection>,
    task_id: Option<String>,
    last_event_id: Option<String>,
    /// Reconnections made since the last event.
    attempts: u32,
    /// The task reached a terminal or interrupted state (or a message came): the stream may end.
    settled: bool,
    done: bool,
    last_reason: String,
}

impl Follow {
    async fn next(&mut self) -> Option<Result<A2aEvent, ClientError>> {
        loop {
            if self.done {
                return None;
            }
            let Some(connection) = self.connection.as_mut() else {
                if self.settled {
                    self.done = true;
                    return None;
                }
                match self.reconnect().await {
                    Ok(()) => continue,
                    Err(error) => {
                        self.done = true;
                        return Some(Err(error));
                    }
                }
            };
            // Once the task settled, only a final snapshot may still come (§11.7): wait briefly.
            let idle = if self.settled {
                self.policy.stream_idle_timeout.min(SETTLED_GRACE)
            } else {
                self.policy.stream_idle_timeout
            };
            let site = connection.site.clone();
            let next = tokio::time::timeout(idle, connection.events.next()).await;
            match next {
                Err(_) => {
                    self.last_reason = "the stream stalled".into();
                    self.connection = None;
                    continue;
                }
                Ok(None) => {
                    self.last_reason = "the server closed the stream before the task settled".into();
                    self.connection = None;
                    continue;
                }
                Ok(Some(Err(StreamFault::Dropped(reason)))) => {
                    self.last_reason = reason;
                    self.connection = None;
                    continue;
                }
                Ok(Some(Err(StreamFault::Fatal(reason)))) => {
                    self.done = true;
                    self.connection = None;
                    return Some(Err(site.invalid(reason)));
                }
                Ok(Some(Err(StreamFault::Failed(error)))) => {
                    self.done = true;
                    self.connection = None;
                    return Some(Err(error));
                }
                Ok(Some(Ok((id, response)))) => {
                    self.attempts = 0;
                    return Some(Ok(self.seen(id, response)));
                }
            }
        }
    }

    /// Notes an event received (its id, its task, whether it settles the task).
    fn seen(&mut self, id: Option<String>, response: StreamResponse) -> A2aEvent {
        if id.is_some() {
            self.last_event_id.clone_from(&id);
        }
        if self.task_id.is_none() {
            self.task_id = task_id_of(&response).map(str::to_owned);
        }
        if settles(&response) {
            self.settled = true;
        }
        A2aEvent { id, response }
    }

    async fn reconnect(&mut self) -> Result<(), ClientError> {
        let interrupted = |state: &Self, reason: String| ClientError::StreamInterrupted {
            task_id: state.task_id.clone(),
            last_event_id: state.last_event_id.clone(),
            attempts: state.attempts,
            reason,
        };
        let Some(task_id) = self.task_id.clone() else {
            return Err(interrupted(self, format!("{}, and no task id is known to resubscribe", self.last_reason)));
        };
        loop {
            if self.attempts >= self.policy.max_reconnects {
                return Err(interrupted(self, self.last_reason.clone()));
            }
            self.attempts += 1;
            tokio::time::sleep(self.policy.reconnect_delay).await;
            let request = Streaming::Subscribe(SubscribeToTaskRequest { tenant: None, id: task_id.clone() });
            match self.transport.open(request, self.last_event_id.as_deref()).await {
                Ok(connection) => {
                    self.connection = Some(connection);
                    return Ok(());
                }
                Err(error) if error.is_retryable() => self.last_reason = error.to_string(),
                Err(error) => return Err(error),
            }
        }
    }
}
