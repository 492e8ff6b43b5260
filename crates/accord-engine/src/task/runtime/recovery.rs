//! Claims and recovery: the prepared claim a caller holds before a task runs
//! ([`PreparedExecution`]), the start of a task whose active lease this worker has taken, and
//! the loop that takes over tasks whose worker stopped and runs them again.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::model::{Task, TaskEventKind, TaskId, now_ms};
use crate::run::{Message, TaskState};
use crate::skill::SkillError;
use crate::task::store::StoredTask;

use super::drive::{heartbeat_loop, record_event, spawn_run};
use super::failure::{INTERRUPTED, TaskFailure, task_error};
use super::{RUNNING_STATES, RuntimeInner, TaskRuntime};

impl TaskRuntime {
    /// Looks once for tasks whose worker died — non-terminal tasks whose active lease lapsed —
    /// and runs each again here from its stored payload; abandoned reservations and prepared
    /// claims are reaped first. Returns how many tasks this worker took over. The old worker, if it
    /// is merely slow, is fenced out: its late writes are refused.
    pub async fn recover_expired(&self) -> Result<usize, TaskFailure> {
        self.ensure_open()?;
        let now = now_ms();
        self.inner.store.reap_expired_admissions(now).await?;
        let mut recovered = 0;
        let inner = &self.inner;
        let worker = &inner.config.worker_id;
        for id in inner.store.expired_active_leases(now, RECOVERY_BATCH).await? {
            // Straight to an active lease: a task that was running never passes through the
            // prepared phase again, whose lapse would cancel it if this worker died in turn.
            let now = now_ms();
            let Some(record) = inner.store.take_over_execution(&id, worker, inner.lease_until(now), now).await? else {
                // Another worker was faster.
                continue;
            };
            // A skill that must not run twice is not run again: the task ends, retryable —
            // unless its run saved a state to go on from (`Run::save_state`), which its handler
            // continues rather than repeats.
            if let Ok(skill) = inner.agent.skill(&record.task.skill)
                && !skill.is_safe_to_repeat()
                && record.task.backend_state.is_none()
            {
                tracing::warn!(
                    task = %id,
                    skill = %record.task.skill,
                    "a task was interrupted by the stop of its worker; its skill is not safe to run twice, so the task fails as interrupted"
                );
                let interrupted = SkillError {
                    code: INTERRUPTED.into(),
                    message: format!(
                        "the task was interrupted by the stop of the worker that ran it, and skill \"{}\" is not safe to run twice: it was not run again; send the request again if it should be",
                        record.task.skill
                    ),
                    retryable: Some(true),
                    details: None,
                };
                record_event(inner, &id, TaskEventKind::Error { state: TaskState::Failed, error: interrupted }).await;
                continue;
            }
            match run_claimed(inner, id.clone(), record, None).await {
                Ok(_) => {
                    recovered += 1;
                    metrics::counter!(crate::observe::RECOVERIES).increment(1);
                    tracing::info!(task = %id, %worker, "recovered a task whose worker stopped");
                }
                Err(TaskFailure::ClaimLost { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(recovered)
    }

    /// Takes the prepared execution claim on a reserved task; a heartbeat keeps it alive until
    /// the returned value is activated, released or dropped.
    pub async fn prepare(&self, id: &TaskId) -> Result<PreparedExecution, TaskFailure> {
        self.ensure_open()?;
        let now = now_ms();
        let worker = &self.inner.config.worker_id;
        self.inner
            .store
            .claim_execution(id, worker, self.inner.lease_until(now), now)
            .await?
            .ok_or_else(|| TaskFailure::ClaimLost { id: id.clone() })?;
        let heartbeat = CancellationToken::new();
        let first_beat = self.inner.heartbeat_every();
        tokio::spawn(heartbeat_loop(Arc::clone(&self.inner), id.clone(), first_beat, heartbeat.clone(), None));
        Ok(PreparedExecution { runtime: self.clone(), id: id.clone(), heartbeat: heartbeat.drop_guard() })
    }
}

/// How many expired leases one recovery pass takes on.
const RECOVERY_BATCH: usize = 32;

/// Recovers abandoned tasks every `interval` until the runtime closes or is dropped.
pub(super) async fn recovery_loop(inner: std::sync::Weak<RuntimeInner>, interval: Duration) {
    loop {
        let closing = match inner.upgrade() {
            Some(inner) => inner.closing.clone(),
            None => return,
        };
        tokio::select! {
            () = closing.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        let runtime = TaskRuntime { inner };
        match runtime.recover_expired().await {
            Ok(_) | Err(TaskFailure::Closed) => {}
            Err(error) => tracing::warn!(%error, "task recovery pass failed"),
        }
    }
}

/// A task whose execution this worker has claimed but not started.
pub struct PreparedExecution {
    runtime: TaskRuntime,
    id: TaskId,
    heartbeat: tokio_util::sync::DropGuard,
}

impl std::fmt::Debug for PreparedExecution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedExecution").field("id", &self.id).finish_non_exhaustive()
    }
}

impl PreparedExecution {
    /// The task.
    pub fn task_id(&self) -> &TaskId {
        &self.id
    }

    /// Renews the prepared claim now (the heartbeat also does).
    pub async fn renew(&self) -> Result<(), TaskFailure> {
        let inner = &self.runtime.inner;
        let now = now_ms();
        inner
            .store
            .renew_execution_claim(&self.id, &inner.config.worker_id, inner.lease_until(now), now)
            .await?
            .map(|_| ())
            .ok_or_else(|| TaskFailure::ClaimLost { id: self.id.clone() })
    }

    /// Activates the claim and starts the handler and its `max_run` timer. Returns the task as it
    /// is once running (or failed, when its stored input no longer fits the skill).
    pub async fn activate(self) -> Result<Task, TaskFailure> {
        self.activate_with(None).await
    }

    /// [`PreparedExecution::activate`], the task turning `working` with the agent's `status` as
    /// its status message when one is given (evidence gathered before the run, such as a
    /// payment's receipts). The run carries that message's metadata onto the message it closes
    /// with (the skill's own keys win), and closes with the message itself when the skill gives
    /// none — so the evidence stays on the task's final status, also when another worker
    /// recovers the run.
    pub async fn activate_with(self, status: Option<Message>) -> Result<Task, TaskFailure> {
        let PreparedExecution { runtime, id, heartbeat } = self;
        drop(heartbeat);
        let inner = Arc::clone(&runtime.inner);
        let worker = inner.config.worker_id.clone();
        let now = now_ms();
        let record = inner
            .store
            .activate_execution(&id, &worker, inner.lease_until(now), now)
            .await?
            .ok_or_else(|| TaskFailure::ClaimLost { id: id.clone() })?;
        run_claimed(&inner, id, record, status).await
    }

    /// Gives the claim up without running: the task is cancelled (used when admission fails
    /// before anything irreversible happened).
    pub async fn cancel(self) {
        let worker = self.runtime.inner.config.worker_id.clone();
        self.runtime.abandon(&self.id, Some(&worker)).await;
    }
}

/// Starts the handler of a task whose active lease this worker has just taken (`record`, as the
/// claim left it): a `submitted` task turns `working` (with `status` as its message when given),
/// and a task whose stored input no longer fits its skill fails instead.
async fn run_claimed(
    inner: &Arc<RuntimeInner>,
    id: TaskId,
    record: StoredTask,
    status: Option<Message>,
) -> Result<Task, TaskFailure> {
    let worker = inner.config.worker_id.as_str();
    let valid = match inner
        .agent
        .skill(&record.payload.skill)
        .and_then(|skill| skill.validate_input(record.payload.input.clone()))
    {
        Ok(valid) => valid,
        Err(error) => {
            let event = TaskEventKind::Error { state: TaskState::Failed, error: task_error(error) };
            let failed = inner.store.compare_and_set(&id, RUNNING_STATES, event, Some(worker), now_ms()).await?;
            return failed.map(|record| record.task).ok_or(TaskFailure::ClaimLost { id });
        }
    };
    // Without a status message only a `submitted` task changes: a recovered one keeps its
    // state and status message. With one, a task already `working` (its turn taken by a
    // follow-up) takes the message too.
    let expected: &[TaskState] =
        if status.is_some() { &[TaskState::Submitted, TaskState::Working] } else { &[TaskState::Submitted] };
    let status = status.map(|message| Message { role: crate::run::Role::Agent, ..message });
    let working = TaskEventKind::Status { state: TaskState::Working, message: status };
    let task = match inner.store.compare_and_set(&id, expected, working, Some(worker), now_ms()).await? {
        Some(record) => record.task,
        None => record.task,
    };
    spawn_run(inner, task.clone(), &record.owner, valid);
    Ok(task)
}
