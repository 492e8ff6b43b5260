//! Owned, durable, cancellable tasks.
//!
//! A task is one run of a skill that outlives the request that started it. This module owns the
//! task record, its event log, the [`TaskStore`] contract every store implements, the bounded
//! in-process [`MemoryStore`], and the [`TaskRuntime`] that drives a task from reservation to a
//! terminal state. Every dialect (the Lucid `/tasks` routes, JSON-RPC tasks, official A2A) runs
//! its tasks through this module and projects the same record and events onto its own wire.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::run::{Artifact, Message, TaskState};
use crate::skill::SkillError;

mod memory;
mod runtime;
mod store;
pub mod token;

pub use memory::{MemoryStore, MemoryStoreConfig};
pub use runtime::{PreparedExecution, Reservation, RuntimeConfig, TaskEventStream, TaskFailure, TaskRuntime};
pub use store::{
    Durability, ListCursor, ListQuery, PageStart, StoreError, TaskPage, TaskStore, TaskWakeups, WakeupHub, apply_event,
    apply_to_record,
};
pub use token::{AccessToken, InvalidToken, OwnerHash};

/// Milliseconds since the Unix epoch: how task records keep time (portable across stores).
pub type Millis = u64;

/// The current time in [`Millis`].
pub fn now_ms() -> Millis {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_millis() as Millis)
}

/// A task's id (a UUID when Accord makes it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskId(String);

impl TaskId {
    /// A fresh random id.
    pub fn generate() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }

    /// Wraps an id received from a caller or a store.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The result of a completed task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskResult {
    /// The skill's output.
    pub output: Value,
    /// Usage figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// The model used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent's closing message (the completed task's status message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Whether the skill answered with a direct message (then `message` is that reply).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reply: bool,
}

/// A task as its owner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The id.
    pub id: TaskId,
    /// The conversation it belongs to, if the caller said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The skill it runs.
    pub skill: String,
    /// Its state.
    pub state: TaskState,
    /// What the agent last said about the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<Message>,
    /// When it was created.
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
    /// The result, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TaskResult>,
    /// The error, once failed or rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<SkillError>,
    /// Artifacts produced so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Messages exchanged so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// The caller's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Bumped by every stored change.
    #[serde(default)]
    pub version: u64,
}

impl Task {
    /// A new task in [`TaskState::Submitted`].
    pub fn submitted(id: TaskId, skill: impl Into<String>, context_id: Option<String>, now: Millis) -> Self {
        Self {
            id,
            context_id,
            skill: skill.into(),
            state: TaskState::Submitted,
            status_message: None,
            created_at: now,
            updated_at: now,
            result: None,
            error: None,
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
            version: 0,
        }
    }
}

/// What a task runs: enough to run it again on another worker after a crash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPayload {
    /// The skill key.
    pub skill: String,
    /// The validated input.
    pub input: Value,
}

/// The phase of an execution lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeasePhase {
    /// Claimed, the handler not yet started (authorization may still be finishing).
    Prepared,
    /// The handler is running.
    Active,
}

/// Which worker may execute a task, until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionLease {
    /// The worker's id.
    pub owner_id: String,
    /// When the lease lapses unless renewed.
    pub expires_at: Millis,
    /// Prepared or active.
    pub phase: LeasePhase,
}

/// A task record as a store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTask {
    /// The task.
    pub task: Task,
    /// The owner: the hash of its access token.
    pub owner: OwnerHash,
    /// What it runs.
    pub payload: TaskPayload,
    /// When an unclaimed reservation is abandoned.
    pub admission_expires_at: Option<Millis>,
    /// The current execution lease.
    pub lease: Option<ExecutionLease>,
}

/// What happened to a task, in its event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskEventKind {
    /// The state changed (also used for creation and cancellation).
    Status {
        /// The new state.
        state: TaskState,
        /// What the agent said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Message>,
    },
    /// The task completed with a result.
    Result {
        /// The result.
        result: TaskResult,
    },
    /// The task failed (or was rejected) with an error.
    Error {
        /// The terminal state (`failed` or `rejected`).
        state: TaskState,
        /// The error.
        error: SkillError,
    },
    /// The handler produced (a chunk of) an artifact.
    Artifact {
        /// The artifact or chunk.
        artifact: Artifact,
        /// Whether it extends an artifact already sent.
        append: bool,
        /// Whether it is the last chunk.
        last_chunk: bool,
    },
    /// The agent sent a message.
    Message {
        /// The message.
        message: Message,
    },
}

impl TaskEventKind {
    /// The task state after this event, when the event sets one.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            Self::Status { state, .. } | Self::Error { state, .. } => Some(*state),
            Self::Result { .. } => Some(TaskState::Completed),
            Self::Artifact { .. } | Self::Message { .. } => None,
        }
    }
}

/// One entry of a task's event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEvent {
    /// The task.
    pub task_id: TaskId,
    /// Position in the task's log, from 1.
    pub sequence: u64,
    /// When it was appended.
    pub at: Millis,
    /// What happened.
    pub kind: TaskEventKind,
}
