//! Owned, durable, cancellable tasks.
//!
//! A task is one run of a skill that outlives the request that started it. This module owns the
//! task record, its event log, the [`TaskStore`] contract every store implements, the bounded
//! in-process [`MemoryStore`], and the [`TaskRuntime`] that drives a task from reservation to a
//! terminal state. Every dialect (the Lucid `/tasks` routes, JSON-RPC tasks, official A2A) runs
//! its tasks through this module and projects the same record and events onto its own wire.

pub use crate::model::{
    ExecutionLease, LeasePhase, Millis, Task, TaskEvent, TaskEventKind, TaskId, TaskPayload, TaskResult, now_ms,
};

mod memory;
mod progress;
pub mod push;
mod runtime;
pub mod service;
mod store;
pub mod token;

pub use memory::{MemoryStore, MemoryStoreConfig};
pub use progress::{MAX_PROGRESS_UPDATES, STREAM_ARTIFACT_ID};
pub use push::{
    DeliverFrom, MAX_PUSH_CONFIGS_PER_TASK, PushAuthentication, PushConfig, PushDelivery, PushKey, PushPut, PushSettle,
    StoredPushConfig,
};
pub use runtime::{
    DEFAULT_INLINE_WINDOW, DEFAULT_MAX_ACTIVE_PER_OWNER, DEFAULT_PROGRESS_INTERVAL, INTERRUPTED, PreparedExecution,
    Reservation, RuntimeConfig, TaskEventStream, TaskFailure, TaskRuntime,
};
pub use service::{
    AnonymousAccess, Caller, ListLimits, ListShape, PaidStart, PaymentFlow, PaymentOutcome, Scopes, SendInput,
    SendRequest, ServiceConfig, SettleFailure, SubscribeFrom, TaskEvents, TaskLimits, TaskService, TaskUpdates, Wait,
};
pub use store::{
    CreateLimits, DEFAULT_REREAD, Durability, ListCursor, ListQuery, PageStart, StoreError, StoredTask, TaskPage,
    TaskStore, TaskWakeups, WakeupHub, apply_event, apply_to_record, finished_head, with_body_from_log,
};
pub use token::{AccessToken, InvalidToken, OwnerHash};
