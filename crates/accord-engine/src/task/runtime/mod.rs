//! [`TaskRuntime`]: drives tasks from reservation to a terminal state.
//!
//! The life of a task: **reserve** (a `submitted` record with an admission expiry) → **prepare**
//! (a renewable *prepared* lease, kept alive by a heartbeat while, for example, a payment is
//! authorized) → **activate** (the lease turns *active*, the task turns `working`, the handler and
//! its `max_run` timer start) → a **terminal** compare-and-set by the lease holder. Every write a
//! worker makes after activation is fenced by its worker id, so a worker that lost its lease
//! (because it stalled and another took the task over, or the task was cancelled) cannot
//! overwrite the outcome.

mod drive;
mod events;
mod failure;
mod recovery;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::Stream;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::model::{ExecutionLease, LeasePhase, Millis, Task, TaskEvent, TaskEventKind, TaskId, TaskPayload, now_ms};
use crate::run::{Message, TaskState};
use crate::skill::{SkillError, ValidInput};
use crate::task::store::{CreateLimits, Durability, ListQuery, StoredTask, TaskPage, TaskStore};
use crate::task::token::OwnerHash;

pub use failure::{INTERRUPTED, TaskFailure};
pub use recovery::PreparedExecution;

use drive::spawn_run;
use recovery::recovery_loop;

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
        } else if WAITING_STATES.contains(&task.state) && record.task.backend_state.is_some() {
            self.tell_waiting_cancelled(&record.task);
        }
        Ok(record.task)
    }

    /// Tells the handler of a task cancelled while it waited for its caller, in the background
    /// ([`Handler::waiting_task_cancelled`](crate::Handler::waiting_task_cancelled)).
    fn tell_waiting_cancelled(&self, task: &Task) {
        let Some(handler) = self.inner.agent.skill(&task.skill).ok().and_then(|skill| skill.invoke.clone()) else {
            return;
        };
        let task = task.clone();
        tokio::spawn(async move {
            use futures_util::FutureExt as _;
            let id = task.id.clone();
            if std::panic::AssertUnwindSafe(handler.waiting_task_cancelled(task)).catch_unwind().await.is_err() {
                tracing::error!(task = %id, "a skill handler panicked when told its waiting task was cancelled");
            }
        });
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

    /// Stops this runtime: local handlers are aborted without touching their tasks, so a durable
    /// store keeps them `working`; their leases are given up, so that another worker's next
    /// recovery pass takes them over at once instead of after the lease's time to live. Then the
    /// store closes. A handler sees its run cancelled with [`Run::is_stopping`](crate::Run::is_stopping)
    /// true: the server stops, nobody cancelled its task.
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

/// The first log entry of every task.
fn submitted() -> TaskEventKind {
    TaskEventKind::Status { state: TaskState::Submitted, message: None }
}
