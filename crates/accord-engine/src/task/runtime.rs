//! [`TaskRuntime`]: drives tasks from reservation to a terminal state.
//!
//! The life of a task: **reserve** (a `submitted` record with an admission expiry) → **prepare**
//! (a renewable *prepared* lease, kept alive by a heartbeat while, for example, a payment is
//! authorized) → **activate** (the lease turns *active*, the task turns `working`, the handler and
//! its `max_run` timer start) → a **terminal** compare-and-set by the lease holder. Every write a
//! worker makes after activation is fenced by its worker id, so a worker that lost its lease
//! (because it stalled and another took the task over, or the task was cancelled) cannot
//! overwrite the outcome.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::Stream;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::progress::Progress;
use super::store::{
    CreateLimits, Durability, ListQuery, StoreError, StoredTask, TaskPage, TaskStore, TaskWakeups, apply_event,
};
use super::token::OwnerHash;
use crate::agent::Agent;
use crate::error::{Error, ErrorKind, RunError};
use crate::model::{
    ExecutionLease, LeasePhase, Millis, Task, TaskEvent, TaskEventKind, TaskId, TaskPayload, TaskResult, now_ms,
};
use crate::run::{EndStatus, EventSink, Message, RunFrame, TaskState};
use crate::skill::{SkillError, ValidInput};

/// The states in which a task still runs (or waits).
const ACTIVE_STATES: &[TaskState] =
    &[TaskState::Submitted, TaskState::Working, TaskState::InputRequired, TaskState::AuthRequired];
/// The states in which a worker's handler may be running.
const RUNNING_STATES: &[TaskState] = &[TaskState::Submitted, TaskState::Working];
/// The states in which a task waits for its caller.
const WAITING_STATES: &[TaskState] = &[TaskState::InputRequired, TaskState::AuthRequired];

/// Settings of a [`TaskRuntime`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RuntimeConfig {
    /// The longest a handler may run before the task fails with `task_timeout` (default 15 min).
    pub max_run: Duration,
    /// How long a lease lasts without renewal (default 30 s). Heartbeats renew it every third of
    /// that, so a crashed worker's tasks become recoverable within one lease.
    pub lease_ttl: Duration,
    /// How long a reservation may wait for its execution claim (default 5 min).
    pub admission_ttl: Duration,
    /// This worker's id, used to fence its writes (default: random).
    pub worker_id: String,
    /// How often this worker looks for tasks whose worker died (an active lease that lapsed)
    /// and runs them again from their stored payload. `None` turns recovery off. Default: every
    /// 10 s. Recovery only runs on a durable store.
    pub recovery_interval: Option<Duration>,
    /// The most unfinished tasks one owner may have at once (default 100; `None`: no limit
    /// besides the store's capacity). A new task beyond it is refused with
    /// [`TaskFailure::OwnerShareExhausted`], so one caller cannot take every place in the store
    /// and starve the others. Counted by the store in the same atomic step as the create, so the
    /// share holds across every worker on a shared store. All anonymous callers are one owner.
    pub max_active_per_owner: Option<usize>,
    /// The most bytes of artifacts a task may hold, as the length of their JSON, over all its runs
    /// (default 16 MiB). A handler that emits or returns more fails its task with
    /// `artifacts_too_large`: the artifact that goes beyond is not stored, and the handler is
    /// stopped.
    pub max_artifact_bytes: usize,
    /// How long a task whose caller waits for its end ([`TaskRuntime::start_inline`]) may run
    /// before it is first stored (default 5 ms; zero: every task is stored before its handler
    /// starts). A handler that ends within it has its task written once, already ended; one that
    /// runs longer has its task stored `working` when the window passes, and runs on as any other.
    pub inline_window: Duration,
    /// The least time between two writes of a run's progress alone — its text deltas and its
    /// `working` progress updates (default 100 ms; docs/behaviour.md, "What a running task
    /// says"): what arrives in between is written together, the deltas as one chunk, the
    /// updates as the latest. A
    /// message or an artifact of the handler's own is written at once, with the progress before
    /// it. Zero writes progress as soon as the previous write is done.
    pub progress_interval: Duration,
}

/// The default of [`RuntimeConfig::progress_interval`].
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// The default of [`RuntimeConfig::max_active_per_owner`].
pub const DEFAULT_MAX_ACTIVE_PER_OWNER: usize = 100;

/// The default of [`RuntimeConfig::inline_window`].
pub const DEFAULT_INLINE_WINDOW: Duration = Duration::from_millis(5);

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            max_run: Duration::from_secs(15 * 60),
            lease_ttl: Duration::from_secs(30),
            admission_ttl: Duration::from_secs(5 * 60),
            worker_id: format!("worker-{}", uuid::Uuid::new_v4()),
            recovery_interval: Some(Duration::from_secs(10)),
            max_active_per_owner: Some(DEFAULT_MAX_ACTIVE_PER_OWNER),
            max_artifact_bytes: 16 << 20,
            inline_window: DEFAULT_INLINE_WINDOW,
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
        }
    }
}

impl RuntimeConfig {
    /// Sets [`RuntimeConfig::max_run`].
    pub fn max_run(mut self, max_run: Duration) -> Self {
        self.max_run = max_run;
        self
    }

    /// Sets [`RuntimeConfig::lease_ttl`].
    pub fn lease_ttl(mut self, lease_ttl: Duration) -> Self {
        self.lease_ttl = lease_ttl;
        self
    }

    /// Sets [`RuntimeConfig::admission_ttl`].
    pub fn admission_ttl(mut self, admission_ttl: Duration) -> Self {
        self.admission_ttl = admission_ttl;
        self
    }

    /// Sets [`RuntimeConfig::recovery_interval`].
    pub fn recovery_interval(mut self, interval: Option<Duration>) -> Self {
        self.recovery_interval = interval;
        self
    }

    /// Sets [`RuntimeConfig::max_active_per_owner`] (`Some(0)` is raised to 1).
    pub fn max_active_per_owner(mut self, limit: Option<usize>) -> Self {
        self.max_active_per_owner = limit.map(|limit| limit.max(1));
        self
    }

    /// Sets [`RuntimeConfig::progress_interval`].
    pub fn progress_interval(mut self, interval: Duration) -> Self {
        self.progress_interval = interval;
        self
    }

    /// Sets [`RuntimeConfig::max_artifact_bytes`].
    pub fn max_artifact_bytes(mut self, bytes: usize) -> Self {
        self.max_artifact_bytes = bytes;
        self
    }

    /// Sets [`RuntimeConfig::inline_window`] (zero: every task is stored before it runs).
    pub fn inline_window(mut self, window: Duration) -> Self {
        self.inline_window = window;
        self
    }

    /// Sets [`RuntimeConfig::worker_id`].
    pub fn worker_id(mut self, worker_id: impl Into<String>) -> Self {
        self.worker_id = worker_id.into();
        self
    }
}

/// Why a task operation failed. Faces map these to their wire.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskFailure {
    /// No such task for this owner (a task owned by someone else reads the same).
    NotFound {
        /// The id asked for.
        id: TaskId,
    },
    /// The task has already ended and cannot be cancelled.
    NotCancellable {
        /// The id.
        id: TaskId,
        /// Its state.
        state: TaskState,
    },
    /// The task ended while the cancellation was being made.
    CancelRace {
        /// The id.
        id: TaskId,
    },
    /// The caller already has as many unfinished tasks as one owner may
    /// ([`RuntimeConfig::max_active_per_owner`]).
    OwnerShareExhausted {
        /// The share.
        limit: usize,
    },
    /// The store holds only unfinished tasks and cannot take another.
    CapacityExhausted {
        /// The store's capacity.
        capacity: usize,
    },
    /// The in-process store's byte budget is taken by unfinished tasks.
    BytesExhausted {
        /// The budget, in bytes.
        budget: usize,
    },
    /// The execution claim could not be taken or was lost.
    ClaimLost {
        /// The id.
        id: TaskId,
    },
    /// A follow-up message reached a task that is not waiting for one (it is running, or it
    /// has ended).
    NotWaiting {
        /// The id.
        id: TaskId,
        /// Its state.
        state: TaskState,
    },
    /// A follow-up message reached a task that waits for its admission (a paid task waiting for
    /// its payment): only the message that pays for it continues it.
    NotAdmitted {
        /// The id.
        id: TaskId,
    },
    /// The runtime is closed.
    Closed,
    /// The store failed.
    Store(StoreError),
}

impl std::fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotFound { id } => write!(f, "Task \"{id}\" not found"),
            Self::NotCancellable { id, .. } => write!(f, "Task \"{id}\" has ended and cannot be canceled"),
            Self::CancelRace { id } => write!(f, "Task \"{id}\" ended while it was being canceled"),
            Self::OwnerShareExhausted { limit } => {
                write!(
                    f,
                    "This caller already has {limit} unfinished tasks, as many as one caller may; retry when one ends"
                )
            }
            Self::CapacityExhausted { capacity } => {
                write!(f, "Task capacity ({capacity}) is exhausted by active tasks")
            }
            Self::BytesExhausted { budget } => {
                write!(f, "Task memory ({budget} bytes) is exhausted by active tasks")
            }
            Self::ClaimLost { id } => write!(f, "the execution claim on task {id} was lost"),
            Self::NotWaiting { id, state } if state.is_terminal() => {
                write!(f, "Task \"{id}\" has ended and takes no more messages")
            }
            Self::NotWaiting { id, .. } => write!(f, "Task \"{id}\" is not waiting for a message"),
            Self::NotAdmitted { id } => write!(f, "Task \"{id}\" waits for its payment"),
            Self::Closed => f.write_str("the task runtime is closed"),
            Self::Store(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for TaskFailure {}

impl From<StoreError> for TaskFailure {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::CapacityExhausted { capacity } => Self::CapacityExhausted { capacity },
            StoreError::OwnerShareExhausted { limit } => Self::OwnerShareExhausted { limit },
            StoreError::BytesExhausted { budget } => Self::BytesExhausted { budget },
            StoreError::Closed => Self::Closed,
            other => Self::Store(other),
        }
    }
}

/// A request to reserve a task.
#[derive(Debug, Clone)]
pub struct Reservation {
    /// Who will own the task.
    pub owner: OwnerHash,
    /// The validated input of the skill to run.
    pub input: ValidInput,
    /// The conversation it belongs to.
    pub context_id: Option<String>,
    /// The caller's metadata, kept with the task.
    pub metadata: Option<Value>,
    /// How long the reservation may wait for its claim (default: the runtime's admission TTL).
    pub admission_ttl: Option<Duration>,
    /// The caller's message that asked for the task, kept as the first entry of its history.
    pub message: Option<crate::run::Message>,
    /// Whether the task is paid for ([`TaskPayload::paid`]): every write of it is committed with
    /// the store's strongest durability.
    pub paid: bool,
}

impl Reservation {
    /// A reservation with no context, metadata or custom admission TTL.
    pub fn new(owner: OwnerHash, input: ValidInput) -> Self {
        Self { owner, input, context_id: None, metadata: None, admission_ttl: None, message: None, paid: false }
    }
}

/// The events of one task, as a lossless stream: entries of the task's log in order, ending
/// after the terminal event (or when the store closes).
pub type TaskEventStream = Pin<Box<dyn Stream<Item = Result<TaskEvent, TaskFailure>> + Send>>;

struct RuntimeInner {
    agent: Agent,
    store: Arc<dyn TaskStore>,
    config: RuntimeConfig,
    /// The runs on this worker, each with a number: a run that ends removes its own entry only,
    /// never that of a later run of the same task (a follow-up resumed on this worker).
    local: Mutex<HashMap<TaskId, LocalRun>>,
    runs: std::sync::atomic::AtomicU64,
    closing: CancellationToken,
}

impl RuntimeInner {
    fn lease_until(&self, now: Millis) -> Millis {
        now.saturating_add(self.config.lease_ttl.as_millis() as Millis)
    }

    fn heartbeat_every(&self) -> Duration {
        (self.config.lease_ttl / 3).max(Duration::from_millis(10))
    }

    fn local(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, LocalRun>> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the local run's watchers the task as this worker's write just stored it.
    fn publish(&self, task: Task) {
        if let Some(run) = self.local().get(&task.id) {
            run.latest.send_replace(Arc::new(task));
        }
    }
}

/// A run on this worker.
struct LocalRun {
    number: u64,
    cancel: CancellationToken,
    /// The task as this run's last committed write left it (shared, not copied, with the run
    /// and each watcher).
    latest: watch::Sender<Arc<Task>>,
}

/// Runs tasks for an agent over a [`TaskStore`]. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct TaskRuntime {
    inner: Arc<RuntimeInner>,
}

impl std::fmt::Debug for TaskRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRuntime")
            .field("worker_id", &self.inner.config.worker_id)
            .field("durability", &self.inner.store.durability())
            .finish_non_exhaustive()
    }
}

impl TaskRuntime {
    /// A runtime for `agent`'s skills over `store`.
    ///
    /// On a durable store, and when called within a Tokio runtime, this also starts the recovery
    /// loop ([`RuntimeConfig::recovery_interval`]), which stops when the runtime is closed.
    pub fn new(agent: Agent, store: Arc<dyn TaskStore>, config: RuntimeConfig) -> Self {
        // Every store call is timed and counted (`crate::observe`); a no-op without a recorder.
        let store: Arc<dyn TaskStore> = Arc::new(crate::observe::ObservedStore::new(store));
        let runtime = Self {
            inner: Arc::new(RuntimeInner {
                agent,
                store,
                config,
                local: Mutex::new(HashMap::new()),
                runs: std::sync::atomic::AtomicU64::new(0),
                closing: CancellationToken::new(),
            }),
        };
        if let (Durability::Durable, Some(interval), Ok(handle)) = (
            runtime.inner.store.durability(),
            runtime.inner.config.recovery_interval,
            tokio::runtime::Handle::try_current(),
        ) {
            handle.spawn(recovery_loop(Arc::downgrade(&runtime.inner), interval));
        }
        runtime
    }

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
            // A skill that must not run twice is not run again: the task ends, retryable.
            if let Ok(skill) = inner.agent.skill(&record.task.skill)
                && !skill.is_safe_to_repeat()
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

    /// The agent whose skills run here.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The store's durability.
    pub fn durability(&self) -> Durability {
        self.inner.store.durability()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.store
    }

    /// The settings.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    fn ensure_open(&self) -> Result<(), TaskFailure> {
        if self.inner.closing.is_cancelled() { Err(TaskFailure::Closed) } else { Ok(()) }
    }

    /// Creates a `submitted` task with an admission expiry, its caller's message (if any) first in
    /// its history — one durable step. Abandoned reservations are reaped before capacity is
    /// enforced (by the store's create).
    pub async fn reserve(&self, reservation: Reservation) -> Result<Task, TaskFailure> {
        self.ensure_open()?;
        let (record, then) = self.reservation_record(reservation, now_ms(), None);
        self.create(record, then).await
    }

    /// Stores a new task within the owner's share ([`RuntimeConfig::max_active_per_owner`]).
    async fn create(&self, record: StoredTask, then: Vec<TaskEventKind>) -> Result<Task, TaskFailure> {
        Ok(self.inner.store.create_limited(record, submitted(), then, self.share()).await?.task)
    }

    /// The limits of a new unfinished task: the owner's share.
    fn share(&self) -> CreateLimits {
        CreateLimits::none().max_active_per_owner(self.inner.config.max_active_per_owner)
    }

    /// The record a reservation creates, and the log entries that follow its creation (the
    /// caller's message). With a `lease`, the record is claimed for this worker from the start
    /// and has no admission expiry.
    fn reservation_record(
        &self,
        reservation: Reservation,
        now: Millis,
        lease: Option<ExecutionLease>,
    ) -> (StoredTask, Vec<TaskEventKind>) {
        let ttl = reservation.admission_ttl.unwrap_or(self.inner.config.admission_ttl);
        let skill = reservation.input.skill().key().to_owned();
        let mut task = Task::submitted(TaskId::generate(), skill.clone(), reservation.context_id, now);
        task.metadata = reservation.metadata;
        let admission_expires_at = lease.is_none().then(|| now.saturating_add(ttl.as_millis() as Millis));
        let record = StoredTask {
            task,
            owner: reservation.owner,
            payload: TaskPayload { skill, input: reservation.input.input().clone(), paid: reservation.paid },
            admission_expires_at,
            lease,
        };
        let then = reservation.message.map(|message| TaskEventKind::Message { message }).into_iter().collect();
        (record, then)
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

    /// Reserves, claims and activates in one durable step — the task is stored `working` under
    /// this worker's active lease, exactly as [`TaskRuntime::reserve`], [`TaskRuntime::prepare`]
    /// and [`PreparedExecution::activate`] would leave it — and starts its handler. The task is
    /// running when this returns; if this worker dies from then on, another recovers the task
    /// once the lease lapses.
    pub async fn start(&self, reservation: Reservation) -> Result<Task, TaskFailure> {
        self.ensure_open()?;
        let now = now_ms();
        let valid = reservation.input.clone();
        let owner = reservation.owner;
        let (record, then) = self.running_record(reservation, now);
        let task = self.create(record, then).await?;
        spawn_run(&self.inner, task.clone(), &owner, valid);
        Ok(task)
    }

    /// The record and log of a task reserved, claimed and activated at once: `working` under this
    /// worker's active lease, as [`TaskRuntime::start`] stores it.
    fn running_record(&self, reservation: Reservation, now: Millis) -> (StoredTask, Vec<TaskEventKind>) {
        let lease = ExecutionLease {
            owner_id: self.inner.config.worker_id.clone(),
            expires_at: self.inner.lease_until(now),
            phase: LeasePhase::Active,
        };
        let (record, mut then) = self.reservation_record(reservation, now, Some(lease));
        then.push(TaskEventKind::Status { state: TaskState::Working, message: None });
        (record, then)
    }

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
        let started = StartedRun::new(&self.inner, Arc::new(task), owner, valid, CancellationToken::new());
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
        match self.create(record, then).await {
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

    /// Reserves a task that waits for its caller before it may run at all (a paid task waiting
    /// for its payment): reserved as by [`TaskRuntime::reserve`], then `input-required` with the
    /// agent's `message` as its status message, unclaimed — one durable step. It is admitted only
    /// by [`TaskRuntime::take_turn`] followed by [`TaskRuntime::prepare`]; until then
    /// [`TaskRuntime::resume`] refuses it, and once its admission expires the store cancels it.
    pub async fn reserve_awaiting(&self, reservation: Reservation, message: Message) -> Result<Task, TaskFailure> {
        self.ensure_open()?;
        let (record, mut then) = self.reservation_record(reservation, now_ms(), None);
        let message = Message { role: crate::run::Role::Agent, ..message };
        then.push(TaskEventKind::Status { state: TaskState::InputRequired, message: Some(message) });
        self.create(record, then).await
    }

    /// The owner's task when it waits for its caller and was never admitted — reserved by
    /// [`TaskRuntime::reserve_awaiting`] and not claimed since (a paid task waiting for its
    /// payment); `None` for any other task of the owner.
    pub async fn awaiting_admission(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<Task>, TaskFailure> {
        self.check_owner(id, owner).await?;
        match self.inner.store.get(id).await? {
            Some(record) if record.owner == *owner => {
                // A claim clears the admission expiry, so a waiting task that still has one never ran.
                let awaiting = WAITING_STATES.contains(&record.task.state)
                    && record.admission_expires_at.is_some()
                    && record.lease.is_none();
                Ok(awaiting.then_some(record.task))
            }
            _ => Err(TaskFailure::NotFound { id: id.clone() }),
        }
    }

    /// Takes the turn on the owner's task that waits for input or authorization, without
    /// starting its handler: the agent's pending question (its status message) and then the
    /// caller's `message` join the history, and the task turns `working`. Returns the task as it
    /// is then. Of two callers racing for one waiting task, one takes the turn and the other is
    /// refused with [`TaskFailure::NotWaiting`], as is a caller reaching a task that is running
    /// or has ended.
    pub async fn take_turn(&self, id: &TaskId, owner: &OwnerHash, message: Message) -> Result<Task, TaskFailure> {
        self.ensure_open()?;
        let task = self.get(id, owner).await?;
        if !WAITING_STATES.contains(&task.state) {
            return Err(TaskFailure::NotWaiting { id: id.clone(), state: task.state });
        }
        // The turn is taken by whoever moves the task to `working` first; the history is written
        // in the same step, so nothing runs before it is complete. The question is filed, not
        // said again: the one update of this turn is `working`, with no status message.
        let working = TaskEventKind::Status { state: TaskState::Working, message: None };
        let question = task.status_message.map(|message| TaskEventKind::History { message });
        let events = std::iter::once(working).chain(question).chain([TaskEventKind::Message { message }]).collect();
        match self.inner.store.append_all(id, WAITING_STATES, events, None, now_ms()).await? {
            Some(record) => Ok(record.task),
            None => {
                let state = self.get(id, owner).await?.state;
                Err(TaskFailure::NotWaiting { id: id.clone(), state })
            }
        }
    }

    /// Resumes the owner's task that waits for input or authorization with the caller's
    /// follow-up `message`: the turn is taken ([`TaskRuntime::take_turn`]), and the skill's
    /// handler runs again on this worker — with the task's original input, and the task (history
    /// included) as [`Run::task`](crate::Run::task), so [`Run::message`](crate::Run::message) is
    /// `message`.
    ///
    /// A task that is running or has ended is refused with [`TaskFailure::NotWaiting`]; a task
    /// that was never admitted (waiting for its payment) with [`TaskFailure::NotAdmitted`]. Crash
    /// safety is that of any run: once `working`, a lapsed lease makes the task a recovery
    /// candidate, and a recovered run sees the same history. Of two follow-ups racing for one
    /// waiting task, one resumes it and the other is refused.
    pub async fn resume(&self, id: &TaskId, owner: &OwnerHash, message: Message) -> Result<Task, TaskFailure> {
        self.ensure_open()?;
        if self.awaiting_admission(id, owner).await?.is_some() {
            return Err(TaskFailure::NotAdmitted { id: id.clone() });
        }
        self.take_turn(id, owner, message).await?;
        match self.prepare(id).await {
            Ok(prepared) => prepared.activate().await,
            // Another worker's recovery took the task over between the two steps: it runs there.
            Err(TaskFailure::ClaimLost { .. }) => self.get(id, owner).await,
            Err(error) => Err(error),
        }
    }

    /// Ends a task as `failed` with `error`, unless it already ended: the way out for a caller
    /// that reserved a task, committed to something irreversible for it (a payment), and then could
    /// not start it. Returns the task as stored afterwards — failed by this call, or in whatever
    /// terminal state it reached first. A task still active in the answer means the end could not
    /// be recorded; the caller must not report it as running.
    pub async fn fail(&self, id: &TaskId, error: SkillError) -> Result<Task, TaskFailure> {
        self.end(id, TaskEventKind::Error { state: TaskState::Failed, error }).await
    }

    /// Ends a task as `failed` with the agent's `message` as its status message (the message says
    /// why; no error record is kept), unless it already ended — as [`TaskRuntime::fail`] does, for
    /// callers whose wire carries the reasons in a message (a payment's outcome, say).
    pub async fn fail_with_message(&self, id: &TaskId, message: Message) -> Result<Task, TaskFailure> {
        let message = Message { role: crate::run::Role::Agent, ..message };
        self.end(id, TaskEventKind::Status { state: TaskState::Failed, message: Some(message) }).await
    }

    /// Records a terminal `event` on a task that has not ended, and stops its local handler.
    async fn end(&self, id: &TaskId, event: TaskEventKind) -> Result<Task, TaskFailure> {
        if let Some(record) = self.inner.store.compare_and_set(id, ACTIVE_STATES, event, None, now_ms()).await? {
            if let Some(run) = self.inner.local().get(id) {
                run.cancel.cancel();
            }
            return Ok(record.task);
        }
        match self.inner.store.get(id).await? {
            Some(record) => Ok(record.task),
            None => Err(TaskFailure::NotFound { id: id.clone() }),
        }
    }

    /// Terminalizes a task this worker reserved but will not run.
    async fn abandon(&self, id: &TaskId, worker: Option<&str>) {
        let event = TaskEventKind::Status { state: TaskState::Canceled, message: None };
        if let Err(error) = self.inner.store.compare_and_set(id, ACTIVE_STATES, event, worker, now_ms()).await {
            tracing::warn!(task = %id, %error, "could not cancel an abandoned reservation");
        }
    }

    /// Refuses, as [`TaskFailure::NotFound`], a caller who does not own task `id` — before its
    /// record is read: only the owner is looked up and compared (in constant time, against a
    /// stand-in for a missing task), so another owner's task is refused at the cost of a missing
    /// one, and the time a refusal takes tells neither whether the task exists nor how large it is.
    async fn check_owner(&self, id: &TaskId, owner: &OwnerHash) -> Result<(), TaskFailure> {
        let stored = self.inner.store.owner_of(id).await?;
        if owner.owns(stored.as_ref()) { Ok(()) } else { Err(TaskFailure::NotFound { id: id.clone() }) }
    }

    /// The owner's task.
    pub async fn get(&self, id: &TaskId, owner: &OwnerHash) -> Result<Task, TaskFailure> {
        self.check_owner(id, owner).await?;
        match self.inner.store.get(id).await? {
            Some(record) if record.owner == *owner => Ok(record.task),
            _ => Err(TaskFailure::NotFound { id: id.clone() }),
        }
    }

    /// The owner's tasks.
    pub async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, TaskFailure> {
        Ok(self.inner.store.list(owner, query).await?)
    }

    /// Cancels the owner's task: the task turns `canceled` and its handler (on this worker) is
    /// told at once; a handler on another worker learns it at its next heartbeat. No result that
    /// arrives later overwrites the cancellation.
    pub async fn cancel(&self, id: &TaskId, owner: &OwnerHash) -> Result<Task, TaskFailure> {
        let task = self.get(id, owner).await?;
        if task.state.is_terminal() {
            return Err(TaskFailure::NotCancellable { id: id.clone(), state: task.state });
        }
        let event = TaskEventKind::Status { state: TaskState::Canceled, message: None };
        let Some(record) = self.inner.store.compare_and_set(id, ACTIVE_STATES, event, None, now_ms()).await? else {
            return Err(TaskFailure::CancelRace { id: id.clone() });
        };
        if let Some(run) = self.inner.local().get(id) {
            run.cancel.cancel();
        }
        Ok(record.task)
    }

    /// The task as the run on this worker leaves it with each write — `None` when the task does
    /// not run here. Every value is a committed state of the task; the channel closes when the
    /// run ends, whether or not its end was written by it (a cancellation is written by whoever
    /// cancels). A way to wait for a local run without reading the store; the log
    /// ([`TaskRuntime::events`]) remains the truth. The caller must already know the task is the
    /// owner's: this does not check.
    pub fn watch_local_run(&self, id: &TaskId) -> Option<watch::Receiver<Arc<Task>>> {
        self.inner.local().get(id).map(|run| run.latest.subscribe())
    }

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

    /// Stops this runtime: local handlers are aborted without touching their tasks, so a durable
    /// store keeps them `working`; their leases are given up, so that another worker's next
    /// recovery pass takes them over at once instead of after the lease's time to live. Then the
    /// store closes.
    pub async fn close(&self) {
        self.inner.closing.cancel();
        let runs: Vec<_> = self.inner.local().iter().map(|(id, run)| (id.clone(), run.cancel.clone())).collect();
        for (_, token) in &runs {
            token.cancel();
        }
        let worker = &self.inner.config.worker_id;
        for (id, _) in &runs {
            // Renewing a lease to now gives it up; a lease that is no longer ours is left alone.
            let now = now_ms();
            if let Err(error) = self.inner.store.renew_execution_claim(id, worker, now, now).await {
                tracing::debug!(task = %id, %error, "could not give up a lease at close");
            }
        }
        self.inner.store.close().await;
    }
}

/// How many expired leases one recovery pass takes on.
const RECOVERY_BATCH: usize = 32;

/// Recovers abandoned tasks every `interval` until the runtime closes or is dropped.
async fn recovery_loop(inner: std::sync::Weak<RuntimeInner>, interval: Duration) {
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

/// The first log entry of every task.
fn submitted() -> TaskEventKind {
    TaskEventKind::Status { state: TaskState::Submitted, message: None }
}

/// Starts the handler of a task this worker holds the active lease of, with a cancellation
/// token registered for it, in a task of its own.
fn spawn_run(inner: &Arc<RuntimeInner>, task: Task, owner: &OwnerHash, valid: ValidInput) {
    // One copy of the task, shared by the run's watchers and its handler.
    let task = Arc::new(task);
    let cancel = CancellationToken::new();
    let number = register_run(inner, &task, &cancel);
    let started = StartedRun::new(inner, task, *owner, valid, cancel);
    tokio::spawn(drive(Arc::clone(inner), started, number));
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
}

impl StartedRun {
    /// The handler of `task`'s skill, called with `valid` and not polled yet.
    fn new(
        inner: &Arc<RuntimeInner>,
        task: Arc<Task>,
        owner: OwnerHash,
        valid: ValidInput,
        cancel: CancellationToken,
    ) -> Self {
        let (sender, frames) = mpsc::channel(64);
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
        let run = async move { runtime.agent.run_for_task(valid, task, &owner, handler_cancel, Some(sink)).await };
        Self {
            id,
            run: Box::pin(tracing::Instrument::instrument(run, span)),
            frames,
            budget,
            cancel,
            started_under,
            started_at: tokio::time::Instant::now(),
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
async fn heartbeat_loop(
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
    let StartedRun { id, mut run, frames, budget, cancel, started_under, started_at } = started;
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
        let used = held.iter().map(super::memory::json_len).sum();
        Self { limit, used: std::sync::atomic::AtomicUsize::new(used), exceeded: CancellationToken::new() }
    }

    /// Takes room for `artifacts`; `false` (and the budget marked exceeded) when they do not fit.
    fn take(&self, artifacts: &[crate::run::Artifact]) -> bool {
        use std::sync::atomic::Ordering;
        let size: usize = artifacts.iter().map(super::memory::json_len).sum();
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

/// The code of a task that recovery found interrupted and did not run again (its skill is not
/// safe to repeat, [`crate::Skill::is_safe_to_repeat`]).
pub const INTERRUPTED: &str = "interrupted";

/// Records one event of this worker's (see [`record`]).
async fn record_event(inner: &RuntimeInner, id: &TaskId, event: TaskEventKind) {
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

/// Stores what a handler emits as its task's log says ([`super::progress`]): messages,
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

/// How a run error is stored on a failed task.
fn task_error(error: RunError) -> SkillError {
    match error {
        RunError::Failed(error) => error,
        RunError::InvalidInput { issues } => SkillError {
            code: "invalid_input".into(),
            message: "Invalid input".into(),
            retryable: None,
            details: serde_json::to_value(issues).ok(),
        },
        RunError::InvalidOutput { issues } => SkillError {
            code: "invalid_output".into(),
            message: "Invalid output".into(),
            retryable: None,
            details: serde_json::to_value(issues).ok(),
        },
        other => SkillError::internal(other.to_string()),
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

impl From<TaskFailure> for Error {
    fn from(failure: TaskFailure) -> Self {
        let message = failure.to_string();
        let task = match &failure {
            TaskFailure::NotFound { id }
            | TaskFailure::NotCancellable { id, .. }
            | TaskFailure::CancelRace { id }
            | TaskFailure::ClaimLost { id }
            | TaskFailure::NotWaiting { id, .. }
            | TaskFailure::NotAdmitted { id } => Some(id.clone()),
            _ => None,
        };
        let kind = match failure {
            TaskFailure::NotFound { .. } => ErrorKind::TaskNotFound,
            TaskFailure::NotCancellable { .. } => ErrorKind::NotCancelable,
            TaskFailure::CancelRace { .. } => ErrorKind::CancelConflict,
            TaskFailure::CapacityExhausted { .. } | TaskFailure::BytesExhausted { .. } => ErrorKind::CapacityExhausted,
            TaskFailure::OwnerShareExhausted { .. } => ErrorKind::OwnerShareExhausted,
            TaskFailure::ClaimLost { .. } => ErrorKind::StartFailed,
            TaskFailure::NotWaiting { state, .. } if state.is_terminal() => ErrorKind::TaskEnded,
            TaskFailure::NotWaiting { .. } => ErrorKind::TaskRunning,
            TaskFailure::NotAdmitted { .. } => ErrorKind::PaymentRequired,
            TaskFailure::Closed => ErrorKind::ShuttingDown,
            TaskFailure::Store(_) => ErrorKind::Unavailable,
        };
        let error = Error::new(kind, message);
        match task {
            Some(task) => error.about(&task),
            None => error,
        }
    }
}

impl From<StoreError> for Error {
    fn from(error: StoreError) -> Self {
        TaskFailure::from(error).into()
    }
}
