//! The log of one task as a stream ([`TaskRuntime::events`]).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::model::{TaskEvent, TaskId};
use crate::run::TaskState;
use crate::task::store::{StoreError, TaskStore, TaskWakeups};
use crate::task::token::OwnerHash;

use super::failure::TaskFailure;
use super::{TaskEventStream, TaskRuntime};

impl TaskRuntime {
    /// The owner's task's events after sequence `after` (0: from the start), then live ones,
    /// ending after the terminal event.
    pub async fn events(&self, id: &TaskId, owner: &OwnerHash, after: u64) -> Result<TaskEventStream, TaskFailure> {
        let wakeups =
            self.inner.store.subscribe(id, owner).await?.ok_or_else(|| TaskFailure::NotFound { id: id.clone() })?;
        let state = EventCursor {
            store: Arc::clone(&self.inner.store),
            id: id.clone(),
            owner: *owner,
            cursor: after,
            wakeups,
            pending: VecDeque::new(),
            done: false,
        };
        Ok(Box::pin(futures_util::stream::unfold(state, EventCursor::next)))
    }
}

/// The state behind [`TaskRuntime::events`].
struct EventCursor {
    store: Arc<dyn TaskStore>,
    id: TaskId,
    owner: OwnerHash,
    cursor: u64,
    wakeups: TaskWakeups,
    pending: VecDeque<TaskEvent>,
    done: bool,
}

impl EventCursor {
    async fn next(mut self) -> Option<(Result<TaskEvent, TaskFailure>, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.cursor = event.sequence;
                if event.kind.state().is_some_and(TaskState::is_terminal) {
                    self.done = true;
                    self.pending.clear();
                }
                return Some((Ok(event), self));
            }
            if self.done {
                return None;
            }
            match self.store.events_since(&self.id, &self.owner, self.cursor).await {
                Ok(Some(events)) if !events.is_empty() => {
                    self.pending.extend(events);
                    continue;
                }
                Ok(Some(_)) => {}
                Ok(None) => return None,
                Err(StoreError::Closed) => return None,
                Err(error) => {
                    self.done = true;
                    return Some((Err(error.into()), self));
                }
            }
            // Nothing new: a task that already ended will say nothing more — once the log has
            // been read again, since the final write may have landed between the two reads.
            match self.store.get(&self.id).await {
                Ok(Some(record)) if record.task.state.is_terminal() => {
                    match self.store.events_since(&self.id, &self.owner, self.cursor).await {
                        Ok(Some(events)) if !events.is_empty() => {
                            self.pending.extend(events);
                            continue;
                        }
                        _ => return None,
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return None,
            }
            // Until a wake-up, or the store's re-read interval where its wake-ups may miss a change.
            if !self.wakeups.next().await {
                return None;
            }
        }
    }
}
