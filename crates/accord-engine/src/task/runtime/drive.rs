//! Runs: a handler started on a task, driven to its end with its lease's heartbeat, the
//! forwarding of what it emits to the task's log, and the record of its outcome.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::error::RunError;
use crate::model::{Task, TaskEventKind, TaskId, TaskResult, now_ms};
use crate::run::{EndStatus, EventSink, Message, RunFrame, TaskState};
use crate::skill::{SkillError, ValidInput};
use crate::task::progress::Progress;
use crate::task::store::{CreateLimits, StoreError, StoredTask, apply_event};
use crate::task::token::OwnerHash;

#[cfg(doc)]
use super::RuntimeConfig;
use super::failure::{TaskFailure, task_error};
use super::{LocalRun, RUNNING_STATES, Reservation, RuntimeInner, TaskRuntime, submitted};

impl TaskRuntime {
    /// Starts a task for a caller that waits for its end: as [`TaskRuntime::start`], except that
    /// its handler runs first, for up to [`RuntimeConfig::inline_window`], before anything is
    /// stored.
    ///
    /// - A handler that ends within the window has its task stored once: its whole log (created,
    ///   `working`, what the handler emitted, its end) in one durable step. The task returned has
    ///   ended, or waits for its caller.
    /// - A handler still running when the window passes has its task stored `working` under this
    ///   worker's lease, as [`TaskRuntime::start`] stores it (with what it emitted so far stored
    ///   right after), and it runs on as any other. The task returned is `working`.
    ///
    /// Until it is stored the task is known only to this call: nobody else can read, list or
    /// cancel it, and a crash loses it together with the caller's unanswered request (a retry
    /// starts it again, as a retry after a crash mid-run runs a handler again). The owner's share
    /// ([`RuntimeConfig::max_active_per_owner`]) is checked when the task is stored: a task stored
    /// already ended takes no place in it and is never refused for it. A task refused then (its
    /// owner's share, the store's capacity) has had its handler run for up to the window: a
    /// handler still running is cancelled, and the refusal returned.
    ///
    /// With a zero window this is [`TaskRuntime::start`].
    pub async fn start_inline(&self, reservation: Reservation) -> Result<Task, TaskFailure> {
        // A window past `max_run` would let the handler outlive it unseen.
        let window = self.inner.config.inline_window.min(self.inner.config.max_run);
        if window.is_zero() {
            return self.start(reservation).await;
        }
        self.ensure_open()?;
        let now = now_ms();
        let valid = reservation.input.clone();
        let owner = reservation.owner;
        let (record, then) = self.running_record(reservation, now);
        // The task as its handler sees it: as the store will hold it once `then` is applied.
        let mut task = record.task.clone();
        for event in &then {
            apply_event(&mut task, event, now);
        }
        // Not stored yet: a state the handler saves now is kept until the task is.
        let started = StartedRun::new(&self.inner, Arc::new(task), owner, valid, CancellationToken::new(), false);
        let mut inline = InlineRun { runtime: self.clone(), pending: Some((record, then, started)) };
        let ended = {
            let Some((_, _, started)) = inline.pending.as_mut() else { unreachable!("set above") };
            tokio::select! {
                biased;
                ended = &mut started.run => Some(ended),
                () = self.inner.closing.cancelled() => None,
                () = tokio::time::sleep(window) => None,
            }
        };
        let Some((record, then, mut started)) = inline.pending.take() else { unreachable!("set above") };
        let Some(ended) = ended else { return self.store_running(record, then, started).await };
        // Ended within the window: what it emitted, then its end, in the one write that creates it.
        let mut events = then;
        let mut progress = Progress::default();
        while let Ok(frame) = started.frames.try_recv() {
            progress.push(frame);
        }
        // The handler's state first: it saved it before it emitted anything that depends on it.
        events.extend(started.saved.take_pending().await);
        let mut emitted = progress.take();
        let fitted = within_budget(&mut emitted, &started.budget);
        events.append(&mut emitted);
        if fitted {
            events.extend(ended_events(ended, &started.budget, started.started_under.as_ref()));
        } else {
            events.push(started.budget.failure());
        }
        let finished = events.iter().rev().find_map(TaskEventKind::state).is_some_and(TaskState::is_terminal);
        let limits = if finished { CreateLimits::none() } else { self.share() };
        Ok(self.inner.store.create_limited(record, submitted(), events, limits).await?.task)
    }

    /// Stores a task whose handler is still running after the inline window — `working` under
    /// this worker's lease, within the owner's share — and hands its run to a task of its own.
    /// Refused (or closing), the handler is cancelled with the agent's grace.
    async fn store_running(
        &self,
        mut record: StoredTask,
        then: Vec<TaskEventKind>,
        started: StartedRun,
    ) -> Result<Task, TaskFailure> {
        if let Err(closed) = self.ensure_open() {
            started.abandon();
            return Err(closed);
        }
        if let Some(lease) = &mut record.lease {
            lease.expires_at = self.inner.lease_until(now_ms());
        }
        // A state the handler saved meanwhile is stored with the task; one it saves while the
        // task is being stored waits for it, then is written as every later one is.
        let saved = Arc::clone(&started.saved);
        let mut mode = saved.mode.lock().await;
        let mut then = then;
        if let SaveMode::Pending(pending) = &mut *mode {
            then.extend(pending.take().map(|state| TaskEventKind::BackendState { state }));
        }
        let created = self.create(record, then).await;
        if created.is_ok() {
            *mode = SaveMode::Stored;
        }
        drop(mode);
        match created {
            Ok(task) => {
                let number = register_run(&self.inner, &Arc::new(task.clone()), &started.cancel);
                tokio::spawn(drive(Arc::clone(&self.inner), started, number));
                Ok(task)
            }
            Err(refused) => {
                started.abandon();
                Err(refused)
            }
        }
    }
}

/// Starts the handler of a task this worker holds the active lease of, with a cancellation
/// token registered for it, in a task of its own.
pub(super) fn spawn_run(inner: &Arc<RuntimeInner>, task: Task, owner: &OwnerHash, valid: ValidInput) {
    // One copy of the task, shared by the run's watchers and its handler.
    let task = Arc::new(task);
    let cancel = CancellationToken::new();
    let number = register_run(inner, &task, &cancel);
    let started = StartedRun::new(inner, task, *owner, valid, cancel, true);
    tokio::spawn(drive(Arc::clone(inner), started, number));
}

/// Where a run's saved state goes ([`Run::save_state`](crate::Run::save_state)): into the
/// task's log, fenced by this worker's lease — or, while the task is not stored yet (a task run
/// inline), kept until it is.
pub(super) struct SavedState {
    inner: Arc<RuntimeInner>,
    id: TaskId,
    mode: tokio::sync::Mutex<SaveMode>,
}

enum SaveMode {
    /// The task is not stored yet: the latest state waits for it.
    Pending(Option<Value>),
    /// The task is stored: a state is written at once.
    Stored,
}

impl SavedState {
    async fn save(&self, state: Value) -> Result<(), SkillError> {
        let mut mode = self.mode.lock().await;
        if let SaveMode::Pending(pending) = &mut *mode {
            *pending = Some(state);
            return Ok(());
        }
        let inner = &self.inner;
        let event = TaskEventKind::BackendState { state };
        let worker = inner.config.worker_id.as_str();
        match inner.store.append_all(&self.id, RUNNING_STATES, vec![event], Some(worker), now_ms()).await {
            Ok(Some(record)) => {
                inner.publish(record.task);
                Ok(())
            }
            Ok(None) => Err(SkillError::new(
                "cancelled",
                "the task was cancelled or taken over by another worker: its state was not saved",
            )),
            Err(error) => {
                tracing::error!(task = %self.id, %error, "could not save a run's state");
                Err(SkillError::new("internal_error", "the task's state could not be stored").retryable(true))
            }
        }
    }

    /// The state saved while the task was not stored, as the event that stores it.
    async fn take_pending(&self) -> Option<TaskEventKind> {
        match &mut *self.mode.lock().await {
            SaveMode::Pending(pending) => pending.take().map(|state| TaskEventKind::BackendState { state }),
            SaveMode::Stored => None,
        }
    }
}

/// Registers a run of `task` on this worker — its cancellation token, and the channel its
/// watchers see each of its writes on — and returns the run's number.
fn register_run(inner: &RuntimeInner, task: &Arc<Task>, cancel: &CancellationToken) -> u64 {
    let number = inner.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (latest, _) = watch::channel(Arc::clone(task));
    let replaced = inner.local().insert(task.id.clone(), LocalRun { number, cancel: cancel.clone(), latest });
    if replaced.is_none() {
        metrics::gauge!(crate::observe::ACTIVE_LEASES).increment(1.0);
    }
    number
}

/// A handler that has started on a task and whose end is not recorded yet: its future, polled by
/// whoever drives the run (the request that waits for it during the inline window, then a task of
/// its own), the events it emits, and the budget of its artifacts.
struct StartedRun {
    id: TaskId,
    run: Pin<Box<dyn std::future::Future<Output = Result<crate::run::Completion, RunError>> + Send>>,
    frames: mpsc::Receiver<RunFrame>,
    budget: ArtifactBudget,
    cancel: CancellationToken,
    /// The status message the run starts under (set at activation, else none): it stays on the
    /// message the run closes with.
    started_under: Option<Message>,
    /// When the handler started: its `max_run` and its lease's first heartbeat count from here.
    started_at: tokio::time::Instant,
    /// Where the handler's saved state goes.
    saved: Arc<SavedState>,
}

impl StartedRun {
    /// The handler of `task`'s skill, called with `valid` and not polled yet.
    fn new(
        inner: &Arc<RuntimeInner>,
        task: Arc<Task>,
        owner: OwnerHash,
        valid: ValidInput,
        cancel: CancellationToken,
        stored: bool,
    ) -> Self {
        let (sender, frames) = mpsc::channel(64);
        let mode = if stored { SaveMode::Stored } else { SaveMode::Pending(None) };
        let saved =
            Arc::new(SavedState { inner: Arc::clone(inner), id: task.id.clone(), mode: tokio::sync::Mutex::new(mode) });
        let saver: crate::run::StateSaver = {
            let saved = Arc::clone(&saved);
            Arc::new(move |state| {
                let saved = Arc::clone(&saved);
                Box::pin(async move { saved.save(state).await })
            })
        };
        let sink = Arc::new(EventSink::new(sender));
        let budget = ArtifactBudget::new(inner.config.max_artifact_bytes, &task.artifacts);
        let started_under = task.status_message.clone();
        let id = task.id.clone();
        // A span of its own for the run (it outlives the request that started it), following
        // from that request's span; the owner appears as a short prefix of its hash, never its
        // token. DEBUG, under its own target (`accord::task`): off unless a subscriber asks for it.
        let span = tracing::debug_span!(
            target: "accord::task",
            parent: None,
            "task_run",
            task_id = %task.id,
            skill = %task.skill,
            face = crate::observe::current_face().unwrap_or("recovery"),
            owner = %crate::observe::owner_tag(&owner),
        );
        span.follows_from(tracing::Span::current());
        let runtime = Arc::clone(inner);
        let handler_cancel = cancel.clone();
        // The runtime's closing token: it fires before `close` cancels the run, so the handler
        // can tell the server's stop from its caller's cancel.
        let stopping = inner.closing.clone();
        let run = async move {
            runtime.agent.run_for_task(valid, task, &owner, handler_cancel, stopping, (sink, saver)).await
        };
        Self {
            id,
            run: Box::pin(tracing::Instrument::instrument(run, span)),
            frames,
            budget,
            cancel,
            started_under,
            started_at: tokio::time::Instant::now(),
            saved,
        }
    }

    /// Tells the handler to stop and gives it the agent's grace period to wind down, in a task of
    /// its own; nothing of it is recorded.
    fn abandon(self) {
        let Self { run, cancel, .. } = self;
        cancel.cancel();
        tokio::spawn(async move {
            let _ = run.await;
        });
    }
}

/// Renews a lease, first after `first_beat` and then every third of its life, until `stop` fires
/// or the lease is refused; on refusal cancels `on_loss` (the handler of a task that was cancelled
/// or taken over).
pub(super) async fn heartbeat_loop(
    inner: Arc<RuntimeInner>,
    id: TaskId,
    first_beat: Duration,
    stop: CancellationToken,
    on_loss: Option<CancellationToken>,
) {
    let worker = inner.config.worker_id.clone();
    let mut wait = first_beat;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        wait = inner.heartbeat_every();
        let now = now_ms();
        match inner.store.renew_execution_claim(&id, &worker, inner.lease_until(now), now).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                metrics::counter!(crate::observe::FENCED_WRITES, "operation" => "renew").increment(1);
                if let Some(token) = &on_loss {
                    token.cancel();
                }
                return;
            }
            Err(StoreError::Closed) => return,
            // A transient failure: the next beat tries again before the lease lapses.
            Err(error) => tracing::warn!(task = %id, %error, "lease renewal failed"),
        }
    }
}

/// A task run inline, during its window: not stored yet. Dropped while it still holds its run
/// (the request that waited for it went away), it goes on as a task whose window passed: stored
/// `working`, and run to its end in a task of its own.
struct InlineRun {
    runtime: TaskRuntime,
    pending: Option<(StoredTask, Vec<TaskEventKind>, StartedRun)>,
}

impl Drop for InlineRun {
    fn drop(&mut self) {
        let Some((record, then, started)) = self.pending.take() else { return };
        let runtime = self.runtime.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    if let Err(failure) = runtime.store_running(record, then, started).await {
                        tracing::debug!(%failure, "a task whose caller went away was not stored");
                    }
                });
            }
            // No runtime left to run it on: the handler is dropped with the rest.
            Err(_) => drop(started),
        }
    }
}

/// Runs a started handler to its end and records the outcome, fenced by this worker's id.
///
/// The handler, the forwarding of its events to the store and its end all run in this one task:
/// the forwarder is polled beside the handler, not spawned, and the lease's heartbeat is spawned
/// only when its first beat is due — a run shorter than a third of the lease costs neither.
async fn drive(inner: Arc<RuntimeInner>, started: StartedRun, run_number: u64) {
    let StartedRun { id, mut run, frames, budget, cancel, started_under, started_at, .. } = started;
    let worker = inner.config.worker_id.clone();
    let drain = CancellationToken::new();
    let forwarding = forward_events(&inner, &id, frames, &drain, &budget);

    let running = async {
        let deadline = tokio::time::sleep_until(started_at + inner.config.max_run);
        let first_beat = tokio::time::sleep_until(started_at + inner.heartbeat_every());
        tokio::pin!(deadline, first_beat);
        let mut heartbeat = None;
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break RunOutcome::Ended(outcome),
                () = &mut deadline => break RunOutcome::TimedOut,
                // A handler whose artifacts go beyond the budget is stopped at once, like a
                // timed-out one.
                () = budget.exceeded.cancelled() => break RunOutcome::OverBudget,
                () = &mut first_beat, if heartbeat.is_none() => {
                    let stop = CancellationToken::new();
                    let beats = heartbeat_loop(
                        Arc::clone(&inner),
                        id.clone(),
                        Duration::ZERO,
                        stop.clone(),
                        Some(cancel.clone()),
                    );
                    tokio::spawn(beats);
                    heartbeat = Some(stop.drop_guard());
                }
            }
        };
        drop(heartbeat);
        // Progress events already emitted are stored before the outcome, so the log stays in
        // order; a handler still running (after a timeout) can emit nothing more.
        drain.cancel();
        outcome
    };
    let (outcome, ()) = tokio::join!(running, forwarding);

    let still_running = !matches!(outcome, RunOutcome::Ended(_));
    if inner.closing.is_cancelled() {
        forget_run(&inner, &id, run_number);
        return;
    }
    let events = match outcome {
        _ if budget.exceeded.is_cancelled() => vec![budget.failure()],
        RunOutcome::OverBudget => vec![budget.failure()],
        RunOutcome::TimedOut => {
            let max_run = inner.config.max_run.as_millis();
            vec![TaskEventKind::Error {
                state: TaskState::Failed,
                error: SkillError::new("task_timeout", format!("Task exceeded its {max_run}ms execution limit")),
            }]
        }
        RunOutcome::Ended(ended) => ended_events(ended, &budget, started_under.as_ref()),
    };
    if !events.is_empty() {
        record(&inner, &id, events, &worker).await;
    }
    // The timeout fences first, then stops the handler.
    cancel.cancel();
    forget_run(&inner, &id, run_number);
    if still_running {
        // A handler stopped by its timeout or its budget sees its cancellation and has the
        // agent's grace period to wind down; then it is dropped.
        let _ = run.await;
    }
}

/// The log entries that end a run whose handler returned `ended`: its artifacts and result, or
/// the budget's failure when its artifacts do not fit.
fn ended_events(
    ended: Result<crate::run::Completion, RunError>,
    budget: &ArtifactBudget,
    started_under: Option<&Message>,
) -> Vec<TaskEventKind> {
    match ended {
        Ok(completion) if !budget.take(&completion.artifacts) => vec![budget.failure()],
        ended => outcome_events(ended, started_under),
    }
}

/// How a run's wait ended.
#[expect(clippy::large_enum_variant, reason = "one value a run, on the stack: a box would cost an allocation a run")]
enum RunOutcome {
    /// The handler returned (or failed, or was cancelled).
    Ended(Result<crate::run::Completion, RunError>),
    /// [`RuntimeConfig::max_run`] passed first.
    TimedOut,
    /// An artifact went beyond [`RuntimeConfig::max_artifact_bytes`].
    OverBudget,
}

/// The log entries that end a run whose handler returned `outcome` (none for a cancelled run: the
/// cancellation wrote the end).
fn outcome_events(
    outcome: Result<crate::run::Completion, RunError>,
    started_under: Option<&Message>,
) -> Vec<TaskEventKind> {
    match outcome {
        Ok(completion) => {
            // The artifacts and the result are one write: the whole end of the run.
            let mut events: Vec<TaskEventKind> = completion
                .artifacts
                .into_iter()
                .map(|artifact| TaskEventKind::Artifact { artifact, append: false, last_chunk: true })
                .collect();
            events.push(TaskEventKind::Result {
                result: TaskResult {
                    output: completion.output,
                    usage: completion.usage,
                    model: completion.model,
                    message: carry(completion.message, started_under),
                    reply: completion.reply,
                },
            });
            events
        }
        Err(RunError::Cancelled) => Vec::new(),
        Err(RunError::Incomplete { status, message }) => {
            // The agent's message travels whole (all parts, its id) into the log.
            let message = message.map(|message| Message {
                role: crate::run::Role::Agent,
                metadata: merged_metadata(message.metadata, started_under),
                ..message
            });
            vec![match status {
                EndStatus::InputRequired => {
                    // The store clears the lease with this write, so a follow-up can claim at once.
                    TaskEventKind::Status { state: TaskState::InputRequired, message }
                }
                EndStatus::AuthRequired => TaskEventKind::Status { state: TaskState::AuthRequired, message },
                _ => TaskEventKind::Error {
                    state: TaskState::Rejected,
                    error: SkillError::new("rejected", message.map_or_else(|| "rejected".to_owned(), |m| m.text())),
                },
            }]
        }
        Err(error) => vec![TaskEventKind::Error { state: TaskState::Failed, error: task_error(error) }],
    }
}

/// How many bytes of artifacts a task may still take ([`RuntimeConfig::max_artifact_bytes`]),
/// shared by a run's forwarder, which stores what the handler emits, and its end, which stores
/// what it returns.
struct ArtifactBudget {
    limit: usize,
    used: std::sync::atomic::AtomicUsize,
    /// Fired when an artifact did not fit: the run stops and its task fails.
    exceeded: CancellationToken,
}

impl ArtifactBudget {
    /// The budget of a task that already holds `held`.
    fn new(limit: usize, held: &[crate::run::Artifact]) -> Self {
        let used = held.iter().map(crate::task::memory::json_len).sum();
        Self { limit, used: std::sync::atomic::AtomicUsize::new(used), exceeded: CancellationToken::new() }
    }

    /// Takes room for `artifacts`; `false` (and the budget marked exceeded) when they do not fit.
    fn take(&self, artifacts: &[crate::run::Artifact]) -> bool {
        use std::sync::atomic::Ordering;
        let size: usize = artifacts.iter().map(crate::task::memory::json_len).sum();
        let before = self.used.fetch_add(size, Ordering::Relaxed);
        if before.saturating_add(size) > self.limit {
            self.exceeded.cancel();
            return false;
        }
        true
    }

    /// How the task ends when its artifacts went beyond the budget.
    fn failure(&self) -> TaskEventKind {
        let limit = self.limit;
        TaskEventKind::Error {
            state: TaskState::Failed,
            error: SkillError::new(
                "artifacts_too_large",
                format!("The task's artifacts exceed this agent's limit of {limit} bytes"),
            ),
        }
    }
}

/// The message a run closes with: the skill's, with the metadata of the status message the run
/// started under added beneath the skill's own keys; or, when the skill gives none, that status
/// message itself.
fn carry(closing: Option<Message>, started_under: Option<&Message>) -> Option<Message> {
    match closing {
        Some(mut message) => {
            message.metadata = merged_metadata(message.metadata.take(), started_under);
            Some(message)
        }
        None => started_under.cloned(),
    }
}

/// `own` over the metadata of `started_under`.
fn merged_metadata(
    own: Option<serde_json::Map<String, Value>>,
    started_under: Option<&Message>,
) -> Option<serde_json::Map<String, Value>> {
    let Some(inherited) = started_under.and_then(|message| message.metadata.clone()) else { return own };
    let mut merged = inherited;
    merged.extend(own.unwrap_or_default());
    Some(merged)
}

/// Removes this run's cancellation token, unless a later run of the task has replaced it.
fn forget_run(inner: &RuntimeInner, id: &TaskId, run: u64) {
    let mut local = inner.local();
    if local.get(id).is_some_and(|current| current.number == run) {
        local.remove(id);
        metrics::gauge!(crate::observe::ACTIVE_LEASES).decrement(1.0);
    }
}

/// Records one event of this worker's (see [`record`]).
pub(super) async fn record_event(inner: &RuntimeInner, id: &TaskId, event: TaskEventKind) {
    record(inner, id, vec![event], &inner.config.worker_id).await;
}

/// A fenced write of `events` (one atomic step) whose refusal is expected (the task was cancelled
/// or taken over) and whose failure is logged: the lease then lapses and the task is recovered or
/// reaped.
async fn record(inner: &RuntimeInner, id: &TaskId, events: Vec<TaskEventKind>, worker: &str) {
    match inner.store.append_all(id, RUNNING_STATES, events, Some(worker), now_ms()).await {
        Ok(Some(record)) => inner.publish(record.task),
        Ok(None) => {
            metrics::counter!(crate::observe::FENCED_WRITES, "operation" => "record").increment(1);
            tracing::debug!(task = %id, "outcome not recorded: the task was cancelled or taken over");
        }
        Err(error) => tracing::error!(task = %id, %error, "could not record the task outcome"),
    }
}

/// Stores what a handler emits as its task's log says ([`crate::task::progress`]): messages,
/// artifacts, text deltas as chunks of a streamed artifact, files, progress updates; control
/// signals stay on the direct stream. What the handler emitted while the previous write was in
/// flight is stored in one write, and progress alone waits for the progress interval.
async fn forward_events(
    inner: &RuntimeInner,
    id: &TaskId,
    mut frames: mpsc::Receiver<RunFrame>,
    drain: &CancellationToken,
    budget: &ArtifactBudget,
) {
    let worker = inner.config.worker_id.clone();
    let interval = inner.config.progress_interval;
    let mut progress = Progress::default();
    let mut last_progress: Option<tokio::time::Instant> = None;
    loop {
        let frame = tokio::select! {
            frame = frames.recv() => frame,
            () = drain.cancelled() => {
                // Takes what is queued, then stops even if the handler still holds a sender.
                frames.close();
                frames.recv().await
            }
        };
        let Some(frame) = frame else { break };
        progress.push(frame);
        while let Ok(frame) = frames.try_recv() {
            progress.push(frame);
        }
        // Progress alone waits for its interval, taking in what comes meanwhile; anything else,
        // the end of the run or the drain writes at once.
        if let Some(since) = last_progress
            && progress.only_progress()
        {
            let due = tokio::time::sleep_until(since + interval);
            tokio::pin!(due);
            while progress.only_progress() {
                tokio::select! {
                    biased;
                    frame = frames.recv() => match frame {
                        Some(frame) => progress.push(frame),
                        None => break,
                    },
                    () = &mut due => break,
                    () = drain.cancelled() => break,
                }
            }
        }
        if progress.only_progress() && !progress.is_empty() {
            last_progress = Some(tokio::time::Instant::now());
        }
        let mut batch = progress.take();
        if !within_budget(&mut batch, budget) {
            if !batch.is_empty() {
                record(inner, id, batch, &worker).await;
            }
            return;
        }
        if !batch.is_empty() {
            record(inner, id, std::mem::take(&mut batch), &worker).await;
        }
    }
}

/// Keeps of `batch` what fits the artifact budget: from the first artifact that does not (the
/// budget is then marked exceeded), nothing more. Whether everything fitted.
fn within_budget(batch: &mut Vec<TaskEventKind>, budget: &ArtifactBudget) -> bool {
    let over = batch.iter().position(|event| match event {
        TaskEventKind::Artifact { artifact, .. } => !budget.take(std::slice::from_ref(artifact)),
        _ => false,
    });
    match over {
        Some(over) => {
            batch.truncate(over);
            false
        }
        None => true,
    }
}
