//! The [`TaskStore`] contract.
//!
//! A store keeps task records, their execution leases and their event logs. The runtime makes
//! every decision; the store makes each change atomic and, for a durable store, durable before it
//! returns. Every method below states what a store must guarantee; the conformance suite in the
//! `accord-test-support` crate checks each guarantee against every store.
//!
//! State changes are expressed as events: [`TaskStore::compare_and_set`] takes the event to
//! append and applies it to the record with [`apply_event`], in the same atomic step. A store
//! therefore never overwrites a whole record with a stale copy, and the log and the record never
//! disagree.

use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::broadcast;

use super::push::{DeliverFrom, PushDelivery, PushPut, PushSettle, StoredPushConfig};
use super::token::OwnerHash;
use crate::model::{ExecutionLease, LeasePhase, Millis, Task, TaskEvent, TaskEventKind, TaskId, TaskPayload};
use crate::run::{Artifact, TaskState};

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

/// Whether a store's records and leases survive a restart of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Records live in this process only.
    Process,
    /// Records and lease changes are durable before each call returns.
    Durable,
}

impl Durability {
    /// `process` or `durable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Process => "process",
            Self::Durable => "durable",
        }
    }
}

/// Why a store call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// A task with this id exists already.
    DuplicateId(TaskId),
    /// The new task's owner already has as many unfinished tasks as
    /// [`CreateLimits::max_active_per_owner`] allows.
    OwnerShareExhausted {
        /// The share: the most unfinished tasks one owner may have.
        limit: usize,
    },
    /// The store is full of tasks that are not terminal.
    CapacityExhausted {
        /// The store's capacity.
        capacity: usize,
    },
    /// An in-process store's byte budget is taken by tasks that are not terminal (or the task
    /// alone is larger than the budget).
    BytesExhausted {
        /// The budget, in bytes.
        budget: usize,
    },
    /// The store has been closed.
    Closed,
    /// The backing storage failed; the message is for operators, not callers.
    Unavailable(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DuplicateId(id) => write!(f, "task {id} exists already"),
            Self::OwnerShareExhausted { limit } => {
                write!(f, "the owner already has {limit} unfinished tasks, its share of the store")
            }
            Self::CapacityExhausted { capacity } => {
                write!(f, "task capacity ({capacity}) is exhausted by active tasks")
            }
            Self::BytesExhausted { budget } => {
                write!(f, "the task store's byte budget ({budget} bytes) is exhausted by active tasks")
            }
            Self::Closed => f.write_str("the task store is closed"),
            Self::Unavailable(reason) => write!(f, "the task store is unavailable: {reason}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Limits a new task must fit within besides the store's own ([`TaskStore::create_limited`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateLimits {
    /// The most unfinished tasks (not in a terminal state) the new task's owner may have, the new
    /// one included (`None`: no limit). Keeps one caller from taking every place in the store.
    pub max_active_per_owner: Option<usize>,
}

impl CreateLimits {
    /// No limit besides the store's own.
    pub fn none() -> Self {
        Self::default()
    }

    /// At most `limit` unfinished tasks per owner (`None`: no limit).
    pub fn max_active_per_owner(mut self, limit: Option<usize>) -> Self {
        self.max_active_per_owner = limit;
        self
    }
}

/// Filters and paging of [`TaskStore::list`]. Every filter and the paging run in the store, so a
/// page is never short because of a filter and the total is exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in one of these states (`None`: any).
    pub states: Option<Vec<TaskState>>,
    /// Only tasks of this skill.
    pub skill: Option<String>,
    /// Only tasks whose last change (`updated_at`) is at or after this instant.
    pub updated_after: Option<Millis>,
    /// At most this many tasks (default 50).
    pub limit: usize,
    /// Where the page starts (default: at the first task).
    pub page: PageStart,
}

impl Default for ListQuery {
    fn default() -> Self {
        Self { context_id: None, states: None, skill: None, updated_after: None, limit: 50, page: PageStart::default() }
    }
}

/// Where a page of [`TaskStore::list`] starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageStart {
    /// After skipping this many matching tasks.
    Offset(usize),
    /// Right after this task in list order. Unlike an offset, exact while tasks are added or
    /// change: no task is skipped or repeated because another one came or went before it.
    After(ListCursor),
}

impl Default for PageStart {
    fn default() -> Self {
        Self::Offset(0)
    }
}

/// A keyset cursor: the last task of the previous page. Tasks are listed newest first by
/// `created_at`, ties broken by id (bytewise) descending, so `(created_at, id)` places a cursor
/// exactly between two tasks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListCursor {
    /// The task's creation time.
    pub created_at: Millis,
    /// The task's id.
    pub id: TaskId,
}

impl ListCursor {
    /// The cursor of `task`: a page that starts after it begins with the task listed next.
    pub fn of(task: &Task) -> Self {
        Self { created_at: task.created_at, id: task.id.clone() }
    }

    /// The cursor as opaque, URL-safe text (lowercase hex digits and one dot), for a caller to
    /// hand back as a page token; [`ListCursor::parse`] reads it back.
    pub fn to_token(&self) -> String {
        format!("{:x}.{}", self.created_at, hex::encode(self.id.as_str()))
    }

    /// Reads a token made by [`ListCursor::to_token`]; `None` for any other text.
    pub fn parse(token: &str) -> Option<Self> {
        let (created_at, id) = token.split_once('.')?;
        let hex = |text: &str| text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
        // Checked first: `from_str_radix` alone would also take a sign or upper case.
        if created_at.is_empty() || !hex(created_at) || !hex(id) || id.len() % 2 != 0 {
            return None;
        }
        let created_at = Millis::from_str_radix(created_at, 16).ok()?;
        let bytes = (0..id.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(&id[at..at + 2], 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        Some(Self { created_at, id: TaskId::new(String::from_utf8(bytes).ok()?) })
    }
}

/// One page of [`TaskStore::list`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    /// The tasks, newest first.
    pub tasks: Vec<Task>,
    /// How many tasks match the filters in all, wherever the page starts.
    pub total: usize,
    /// Whether more tasks follow this page.
    pub has_more: bool,
    /// Where the next page starts ([`PageStart::After`] this cursor) when more tasks follow: the
    /// last task of this page, or, for an empty page (a `limit` of 0) that started after a cursor,
    /// that cursor. `None` when nothing follows, and for an empty page that started at an offset.
    pub next: Option<ListCursor>,
}

impl TaskPage {
    /// A page of `tasks` (in list order) that started at `start`, out of `total` matching tasks,
    /// with [`TaskPage::next`] worked out.
    pub fn new(tasks: Vec<Task>, total: usize, has_more: bool, start: &PageStart) -> Self {
        let next = match (has_more, tasks.last(), start) {
            (false, _, _) | (true, None, PageStart::Offset(_)) => None,
            (true, Some(last), _) => Some(ListCursor::of(last)),
            (true, None, PageStart::After(cursor)) => Some(cursor.clone()),
        };
        Self { tasks, total, has_more, next }
    }
}

/// Wake-ups for one task: a signal that its log may have grown. The log read with
/// [`TaskStore::events_since`] is the truth; a wake-up only says when to read it, so a missed or
/// duplicated wake-up never loses or repeats an event.
///
/// A subscriber waits with [`TaskWakeups::next`]: until a wake-up or, when the store's wake-ups
/// may miss a change (one written by another process, a notification lost with its
/// connection), until its re-read interval has passed ([`TaskWakeups::with_reread`]).
#[derive(Debug)]
pub struct TaskWakeups {
    task_id: TaskId,
    receiver: broadcast::Receiver<TaskId>,
    reread: Option<Duration>,
}

/// The re-read interval of [`TaskWakeups::new`]: a change its wake-ups missed shows within it.
pub const DEFAULT_REREAD: Duration = Duration::from_secs(2);

impl TaskWakeups {
    /// Wake-ups for `task_id` from a store's broadcast of changed task ids, re-read every
    /// [`DEFAULT_REREAD`] without one.
    pub fn new(task_id: TaskId, receiver: broadcast::Receiver<TaskId>) -> Self {
        Self { task_id, receiver, reread: Some(DEFAULT_REREAD) }
    }

    /// How long [`TaskWakeups::next`] waits without a wake-up before it lets the subscriber
    /// re-read the log anyway; `None` for wake-ups that every change of the task sends.
    #[must_use]
    pub fn with_reread(mut self, reread: Option<Duration>) -> Self {
        self.reread = reread;
        self
    }

    /// Waits for the next wake-up, or for the re-read interval when there is one. Returns
    /// `false` when the store has closed.
    pub async fn next(&mut self) -> bool {
        match self.reread {
            Some(reread) => self.changed(reread).await,
            None => self.woken().await,
        }
    }

    /// Waits until the task may have changed, at most `timeout`. Returns `false` when the store
    /// has closed.
    pub async fn changed(&mut self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, self.woken()).await.unwrap_or(true)
    }

    async fn woken(&mut self) -> bool {
        loop {
            match self.receiver.recv().await {
                Ok(id) if id == self.task_id => return true,
                Ok(_) => {}
                // Missed wake-ups are harmless: the caller re-reads the log.
                Err(broadcast::error::RecvError::Lagged(_)) => return true,
                Err(broadcast::error::RecvError::Closed) => return false,
            }
        }
    }
}

/// Wake-up channels of an in-process store, one per task with subscribers: a change wakes only
/// the subscribers of the task that changed (a single store-wide broadcast would wake every
/// subscriber for every change, which costs quadratically with concurrent streams), with one
/// send however many they are. A subscriber holds only its receiver of the task's channel.
///
/// A task's channel is dropped when its task changes with no subscriber left, and swept out when
/// the registry has doubled since the last sweep, so an abandoned subscription to a task that
/// never changes again does not stay forever.
///
/// Its subscriptions have no re-read interval: every writer of the store is in this process and
/// wakes the hub. A store that others write too (another process on the same file) must wake it
/// for their changes as well, or set a re-read interval on its subscriptions.
#[derive(Debug)]
pub struct WakeupHub {
    state: std::sync::Mutex<Option<HubState>>,
}

#[derive(Debug, Default)]
struct HubState {
    subscribers: std::collections::HashMap<TaskId, broadcast::Sender<TaskId>>,
    live_after_sweep: usize,
}

/// Wake-ups a subscriber may miss before it re-reads the log anyway (a missed wake-up only means
/// an extra read).
const WAKEUPS_PER_TASK: usize = 8;

impl Default for WakeupHub {
    fn default() -> Self {
        Self::new()
    }
}

impl WakeupHub {
    /// An open hub.
    pub fn new() -> Self {
        Self { state: std::sync::Mutex::new(Some(HubState::default())) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Option<HubState>> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wake-ups for `id` from now on; `None` once the hub is closed.
    pub fn subscribe(&self, id: &TaskId) -> Option<TaskWakeups> {
        let mut guard = self.state();
        let state = guard.as_mut()?;
        let receiver = match state.subscribers.get(id) {
            Some(sender) => sender.subscribe(),
            None => {
                let (sender, receiver) = broadcast::channel(WAKEUPS_PER_TASK);
                state.subscribers.insert(id.clone(), sender);
                if state.subscribers.len() > 2 * state.live_after_sweep.max(64) {
                    state.subscribers.retain(|_, sender| sender.receiver_count() > 0);
                    state.live_after_sweep = state.subscribers.len();
                }
                receiver
            }
        };
        Some(TaskWakeups::new(id.clone(), receiver).with_reread(None))
    }

    /// Whether `id` has subscribers (`false` once the hub is closed).
    pub fn has_subscribers(&self, id: &TaskId) -> bool {
        self.state()
            .as_ref()
            .and_then(|state| state.subscribers.get(id))
            .is_some_and(|sender| sender.receiver_count() > 0)
    }

    /// Wakes the subscribers of `id`.
    pub fn wake(&self, id: &TaskId) {
        let mut guard = self.state();
        let Some(state) = guard.as_mut() else { return };
        // A send fails only when every subscription went away.
        if let Some(sender) = state.subscribers.get(id)
            && sender.send(id.clone()).is_err()
        {
            state.subscribers.remove(id);
        }
    }

    /// Closes the hub: every subscriber's wait ends, later subscriptions get `None`.
    pub fn close(&self) {
        self.state().take();
    }
}

/// Where tasks are kept. See the module documentation for the ground rules.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Whether records and lease changes survive a restart. Must be truthful: paid work is only
    /// accepted on a durable store.
    fn durability(&self) -> Durability;

    /// Stores a new record and appends `event` as its first log entry (sequence 1).
    ///
    /// Guarantees: durable before it returns; fails with [`StoreError::DuplicateId`] when the id
    /// exists; enforces capacity (after reaping expired admissions and, where the store evicts,
    /// evicting terminal tasks only), failing with [`StoreError::CapacityExhausted`] when only
    /// non-terminal tasks remain; wakes subscribers.
    ///
    /// Provided: [`TaskStore::create_with`] with nothing after the first entry.
    async fn create(&self, record: StoredTask, event: TaskEventKind) -> Result<TaskEvent, StoreError> {
        let task_id = record.task.id.clone();
        let created = self.create_with(record, event.clone(), Vec::new()).await?;
        Ok(TaskEvent { task_id, sequence: 1, at: created.task.created_at, kind: event })
    }

    /// Stores a new record with `event` as its first log entry (sequence 1, dated with the task's
    /// `created_at`, describing the record as given: logged, not applied), then appends each of
    /// `then` (dated with the store's clock) in order and applies
    /// it with [`apply_to_record`] — all in one atomic step, durable before it returns. Returns the
    /// record as stored (after `then`).
    ///
    /// This is how a task is reserved with its caller's message, or reserved *and claimed* in one
    /// step: a record given with an active lease and no admission expiry is a running task from
    /// its first durable moment, recovered like any other if its worker dies.
    ///
    /// Guarantees those of [`TaskStore::create`]: nothing is stored when the id exists or the
    /// store is full.
    ///
    /// Provided: [`TaskStore::create_limited`] with no limit of its own.
    async fn create_with(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
    ) -> Result<StoredTask, StoreError> {
        self.create_limited(record, event, then, CreateLimits::none()).await
    }

    /// [`TaskStore::create_with`] within `limits`: when the record's owner already has
    /// [`CreateLimits::max_active_per_owner`] unfinished tasks (after reaping expired admissions,
    /// as for capacity), nothing is stored and the call fails with
    /// [`StoreError::OwnerShareExhausted`]. The count and the insert are one atomic step across
    /// every process sharing the store: of two concurrent creates for the last place of an owner's
    /// share, at most one succeeds. A duplicate id is reported before the share, the share before
    /// the store's capacity (a caller at its share learns that, not that the store is full).
    async fn create_limited(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
        limits: CreateLimits,
    ) -> Result<StoredTask, StoreError>;

    /// How many tasks the store holds in each state, for the `accord_tasks` gauge; `Ok(None)`
    /// (the default) when the store cannot tell cheaply. Read when metrics are scraped, so it
    /// must not scan every task.
    async fn count_by_state(&self) -> Result<Option<Vec<(TaskState, u64)>>, StoreError> {
        Ok(None)
    }

    /// The record, if it exists (whoever owns it: callers check the owner).
    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError>;

    /// The owner of the task, if it exists: what an ownership check reads before the record, so
    /// that refusing another owner's task costs what refusing a missing one does (neither loads
    /// the record, whose size a caller could otherwise time). The default reads the record; a
    /// store answers from its owner column or index instead, without the housekeeping
    /// [`TaskStore::get`] may do.
    async fn owner_of(&self, id: &TaskId) -> Result<Option<OwnerHash>, StoreError> {
        Ok(self.get(id).await?.map(|record| record.owner))
    }

    /// The owner's tasks that match every filter of `query`, newest (`created_at`) first with ties
    /// broken by id (bytewise) descending: at most `limit` of them from the page start, with the
    /// count of every matching task (wherever the page starts) and whether and where the next
    /// page starts ([`TaskPage::new`]). A page that starts [`PageStart::After`] a cursor holds the
    /// tasks strictly after it in that order, whether or not the cursor's task still exists or
    /// matches. Never returns another owner's task.
    async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, StoreError>;

    /// Takes a *prepared* lease for `worker` until `expires_at`, and clears the admission expiry.
    ///
    /// Succeeds only when the task is `submitted` or `working`, its admission (if any) has not
    /// expired, and it has no live lease (a lease with `expires_at > now` blocks; an expired one,
    /// prepared or active, may be taken over). Returns the updated record, or `None` when the
    /// claim is refused. Atomic: of two concurrent claims at most one succeeds.
    async fn claim_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError>;

    /// Takes over a task whose *active* lease lapsed (its worker is presumed dead): the task gets
    /// an *active* lease for `worker` until `expires_at` at once, with no prepared phase between.
    /// This is how a recovering worker claims a task: the task had been accepted and running, so
    /// a recovering worker that dies in turn leaves it to the next recovery, never to
    /// [`TaskStore::reap_expired_admissions`] (which cancels lapsed *prepared* leases).
    ///
    /// Succeeds only when the task is `submitted` or `working` and its lease is active with
    /// `expires_at <= now`. Returns the updated record, or `None` when the take-over is refused.
    /// Atomic: of two concurrent take-overs at most one succeeds.
    async fn take_over_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError>;

    /// Extends `worker`'s live lease (prepared or active) to `expires_at`, keeping its phase.
    /// Refused (`None`) when the lease is another worker's, has lapsed, or the task is terminal.
    /// Renewing to `expires_at <= now` gives the lease up.
    async fn renew_execution_claim(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError>;

    /// Turns `worker`'s live *prepared* lease into an *active* one until `expires_at`, atomically.
    /// Refused (`None`) on the same conditions as renewal, or when the lease is not prepared.
    async fn activate_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError>;

    /// Appends `event` and applies it to the record with [`apply_event`], if the task's state is
    /// one of `expected` and, when `execution_owner` is given, the current lease belongs to it
    /// (this fences a stale worker out after another took the task over).
    ///
    /// A write that ends the execution clears the lease in the same atomic step
    /// ([`apply_to_record`]): a terminal result (which also clears the admission expiry), and a
    /// status that makes the task wait for its caller (`input_required` or `auth_required`). A
    /// worker's handler has returned when it writes that status, and the follow-up that resumes
    /// the task must be able to claim it at once: a lease given up by a later, separate call would
    /// refuse a follow-up that came between the two. A waiting write keeps an admission expiry: it
    /// marks a reserved task that never ran (a paid task waiting for its payment). Returns the
    /// updated record, or `None` when the condition does not hold. Atomic and, for a durable
    /// store, durable. Wakes subscribers.
    ///
    /// Provided: [`TaskStore::append_all`] with one event.
    async fn compare_and_set(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        event: TaskEventKind,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.append_all(id, expected, vec![event], execution_owner, now).await
    }

    /// [`TaskStore::compare_and_set`] for several events at once: the condition is checked once,
    /// before the first; then every event is appended and applied in order, all in one atomic
    /// (and, for a durable store, durable) step, or none when the condition does not hold. The
    /// whole end of a run — its artifacts and its result — is one write this way. An empty
    /// `events` changes nothing and returns the record when the condition holds.
    async fn append_all(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        events: Vec<TaskEventKind>,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError>;

    /// Terminalizes abandoned work and returns how many tasks it changed: tasks whose admission
    /// expired without a lease, and tasks whose *prepared* lease lapsed. Both become `canceled`
    /// with a status event; both fields are cleared.
    async fn reap_expired_admissions(&self, now: Millis) -> Result<usize, StoreError>;

    /// Tasks in `submitted` or `working` whose *active* lease lapsed (their worker is presumed
    /// dead), oldest lapse first, at most `limit`: candidates for [`TaskStore::take_over_execution`] by
    /// a recovering worker. Tasks waiting for input or authorization are never candidates: the
    /// write that made them wait cleared their lease.
    async fn expired_active_leases(&self, now: Millis, limit: usize) -> Result<Vec<TaskId>, StoreError>;

    /// The owner's task's log entries with a sequence greater than `after`, in order. `None` when
    /// the task does not exist or is not the owner's.
    async fn events_since(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        after: u64,
    ) -> Result<Option<Vec<TaskEvent>>, StoreError>;

    /// Wake-ups for the owner's task. `None` when the task does not exist or is not the owner's.
    async fn subscribe(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<TaskWakeups>, StoreError>;

    /// Stores a push config for the owner's task (see [`super::push`]): a new one, or in place of
    /// the config with the same id, keeping that one's delivery cursor and attempts. A new
    /// config's cursor starts as `from` says ([`DeliverFrom::Now`]: the task's latest log
    /// sequence). Refused ([`PushPut::TooMany`]) when the task has
    /// [`MAX_PUSH_CONFIGS_PER_TASK`](super::push::MAX_PUSH_CONFIGS_PER_TASK) configs besides it;
    /// [`PushPut::TaskNotFound`] when the task does not exist or is not the owner's. A task's
    /// configs go when the task goes (retention, eviction). Durable before it returns.
    async fn put_push_config(
        &self,
        owner: &OwnerHash,
        config: StoredPushConfig,
        from: DeliverFrom,
    ) -> Result<PushPut, StoreError>;

    /// The owner's task's push configs, by id (bytewise ascending). `None` when the task does not
    /// exist or is not the owner's.
    async fn push_configs(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<Vec<StoredPushConfig>>, StoreError>;

    /// Deletes one of the owner's task's push configs: `Some(true)` when it was there,
    /// `Some(false)` when it was not, `None` when the task does not exist or is not the owner's.
    async fn delete_push_config(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        config_id: &str,
    ) -> Result<Option<bool>, StoreError>;

    /// Takes up to `limit` push configs that have updates to deliver, for `worker`, until
    /// `lease_until`: configs whose cursor is behind their task's latest log sequence, whose
    /// `next_attempt_at` has come, and that no live delivery lease holds (a lease with
    /// `lease_until > now`, whoever holds it) — the longest-waiting first. Each comes with the log
    /// entries after its cursor, in order, at most `events` of them. Atomic: of two concurrent
    /// calls, a config goes to at most one. A config whose task is gone is not returned.
    async fn claim_push_deliveries(
        &self,
        worker: &str,
        now: Millis,
        lease_until: Millis,
        limit: usize,
        events: usize,
    ) -> Result<Vec<PushDelivery>, StoreError>;

    /// Ends `worker`'s delivery of a config: moves its cursor forward to
    /// `settle.delivered_through` (never back), records the attempts and when it may be taken
    /// again, gives up the delivery lease, and appends `settle.dead_letter` (if any) to the task's
    /// log — whatever the task's state, without changing the task — all in one atomic, durable
    /// step that wakes the task's subscribers when it appends. Refused (`false`, nothing changed)
    /// when the config is gone or another worker holds its lease.
    async fn settle_push_delivery(
        &self,
        task_id: &TaskId,
        config_id: &str,
        worker: &str,
        settle: PushSettle,
        now: Millis,
    ) -> Result<bool, StoreError>;

    /// Closes the store: later calls fail with [`StoreError::Closed`]; subscribers are released.
    async fn close(&self);
}

/// Applies an event written by [`TaskStore::compare_and_set`] to a stored record: the task changes
/// as [`apply_event`] says; a terminal write clears the lease and the admission expiry with it,
/// and a status that waits for the caller clears the lease. The one definition every store uses.
pub fn apply_to_record(record: &mut StoredTask, event: &TaskEventKind, now: Millis) {
    apply_event(&mut record.task, event, now);
    if record.task.state.is_terminal() {
        record.lease = None;
        record.admission_expires_at = None;
    } else if waits_for_caller(event) {
        // The lease goes; an admission expiry stays: it marks a task that was reserved and never
        // ran (a paid task waiting for its payment), which is reaped if nobody pays in time. A task
        // that ran lost its admission expiry when it was claimed.
        record.lease = None;
    }
}

/// Whether `event` makes the task wait for its caller (input or authorization).
fn waits_for_caller(event: &TaskEventKind) -> bool {
    matches!(event, TaskEventKind::Status { state: TaskState::InputRequired | TaskState::AuthRequired, .. })
}

/// Applies an event to a task: the one definition every store uses, so that the record is always
/// what its log says.
pub fn apply_event(task: &mut Task, event: &TaskEventKind, now: Millis) {
    match event {
        TaskEventKind::Status { state, message } => {
            task.state = *state;
            task.status_message.clone_from(message);
        }
        TaskEventKind::Result { result } => {
            task.state = TaskState::Completed;
            task.status_message.clone_from(&result.message);
            task.result = Some(result.clone());
        }
        TaskEventKind::Error { state, error } => {
            task.state = *state;
            task.error = Some(error.clone());
        }
        TaskEventKind::Artifact { artifact, append, .. } => merge_artifact(&mut task.artifacts, artifact, *append),
        TaskEventKind::Message { message } | TaskEventKind::History { message } => task.history.push(message.clone()),
        // Kept for the handler, invisible to callers: `updated_at` says when the task last
        // changed as a caller sees it.
        TaskEventKind::BackendState { state } => {
            task.backend_state = Some(state.clone());
            task.version += 1;
            return;
        }
        // A note about delivery, not a change of the task: only the log grows.
        TaskEventKind::PushDeadLetter { .. } => {
            task.version += 1;
            return;
        }
    }
    task.updated_at = now.max(task.updated_at);
    task.version += 1;
}

/// What a store may keep of a finished task: the task without the parts its log carries in full
/// (the status message, the result, the artifacts and the history), when the log rebuilds exactly
/// those parts; `None` when it does not, and the whole task must be kept.
///
/// `log` is the task's whole log, in order, as `(sequence, kind)`; the first entry (the creation)
/// is skipped, as the task as created already says what it says. A store that keeps the head reads
/// the task back with [`with_body_from_log`], so that a result, an artifact or a message of a
/// finished task is stored once (in its log entry), not twice.
pub fn finished_head<'a>(task: &Task, log: impl IntoIterator<Item = (u64, &'a TaskEventKind)>) -> Option<Task> {
    let rebuilt = body_from_log(task, log);
    let same = rebuilt.status_message == task.status_message
        && rebuilt.result == task.result
        && rebuilt.artifacts == task.artifacts
        && rebuilt.history == task.history;
    same.then(|| Task {
        status_message: None,
        result: None,
        artifacts: Vec::new(),
        history: Vec::new(),
        ..task.clone()
    })
}

/// A task a store kept as [`finished_head`] said, whole again: `log` (the task's whole log, in
/// order, as `(sequence, kind)`) rebuilds the parts the head leaves out.
pub fn with_body_from_log<'a>(head: Task, log: impl IntoIterator<Item = (u64, &'a TaskEventKind)>) -> Task {
    let body = body_from_log(&head, log);
    Task {
        status_message: body.status_message,
        result: body.result,
        artifacts: body.artifacts,
        history: body.history,
        ..head
    }
}

/// The task as created, with the log's entries after the first applied as the store applied them
/// (the body does not depend on when they were written).
fn body_from_log<'a>(task: &Task, log: impl IntoIterator<Item = (u64, &'a TaskEventKind)>) -> Task {
    replayed(as_created(task), log.into_iter().map(|(sequence, kind)| (sequence, task.created_at, kind)))
}

/// `task` with the log entries after the first applied, as the store applied them.
pub(crate) fn replayed<'a>(mut task: Task, events: impl IntoIterator<Item = (u64, Millis, &'a TaskEventKind)>) -> Task {
    for (sequence, at, kind) in events {
        if sequence > 1 {
            apply_event(&mut task, kind, at);
        }
    }
    task
}

/// The task as the runtime creates it (submitted, with its id, skill, context, creation time and
/// metadata), for a task whose log may rebuild the rest.
pub(crate) fn as_created(task: &Task) -> Task {
    let mut created = Task::submitted(task.id.clone(), task.skill.clone(), task.context_id.clone(), task.created_at);
    created.metadata.clone_from(&task.metadata);
    created
}

fn merge_artifact(artifacts: &mut Vec<Artifact>, artifact: &Artifact, append: bool) {
    match artifacts.iter_mut().find(|existing| existing.artifact_id == artifact.artifact_id) {
        Some(existing) if append => existing.parts.extend(artifact.parts.iter().cloned()),
        Some(existing) => *existing = artifact.clone(),
        None => artifacts.push(artifact.clone()),
    }
}

/// Whether a lease blocks a claim at `now`.
pub(crate) fn lease_is_live(lease: Option<&ExecutionLease>, now: Millis) -> bool {
    lease.is_some_and(|lease| lease.expires_at > now)
}

/// Whether `worker` holds a live lease (of `phase`, when given).
pub(crate) fn holds_lease(record: &StoredTask, worker: &str, now: Millis, phase: Option<LeasePhase>) -> bool {
    record.lease.as_ref().is_some_and(|lease| {
        lease.owner_id == worker && lease.expires_at > now && phase.is_none_or(|phase| lease.phase == phase)
    })
}

/// Whether a task in this state may be claimed for execution.
pub(crate) fn claimable(state: TaskState) -> bool {
    matches!(state, TaskState::Submitted | TaskState::Working)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub_channels(hub: &WakeupHub) -> usize {
        hub.state().as_ref().map_or(0, |state| state.subscribers.len())
    }

    #[tokio::test]
    async fn one_wake_reaches_every_subscriber_of_its_task_and_no_other() {
        let hub = WakeupHub::new();
        let (task, other) = (TaskId::new("t-1"), TaskId::new("t-2"));
        let mut first = hub.subscribe(&task).expect("open");
        let mut second = hub.subscribe(&task).expect("open");
        let mut elsewhere = hub.subscribe(&other).expect("open");
        assert_eq!(hub_channels(&hub), 2, "one channel a task, however many subscribe");
        hub.wake(&task);
        assert_eq!(first.receiver.try_recv(), Ok(task.clone()));
        assert_eq!(second.receiver.try_recv(), Ok(task.clone()));
        assert!(elsewhere.receiver.try_recv().is_err(), "another task's subscriber is not woken");
        // More wake-ups than the channel keeps: a subscriber that missed some is still woken.
        for _ in 0..3 * WAKEUPS_PER_TASK {
            hub.wake(&task);
        }
        assert!(first.changed(Duration::from_secs(5)).await);
        assert!(second.next().await, "the missed wake-ups leave one to take");
        hub.close();
        assert!(!elsewhere.changed(Duration::from_secs(5)).await, "a closed hub ends the wait");
        assert!(hub.subscribe(&task).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn in_process_wake_ups_need_no_re_read_and_others_re_read_on_their_interval() {
        let hub = WakeupHub::new();
        let task = TaskId::new("t-1");
        let mut complete = hub.subscribe(&task).expect("open");
        let waited = tokio::time::timeout(Duration::from_secs(3600), complete.next()).await;
        assert!(waited.is_err(), "no wake-up, no re-read: {waited:?}");
        let (sender, receiver) = broadcast::channel(1);
        let mut partial = TaskWakeups::new(task.clone(), receiver);
        let started = tokio::time::Instant::now();
        assert!(partial.next().await, "the interval lets the subscriber re-read");
        assert_eq!(started.elapsed(), DEFAULT_REREAD);
        drop(sender);
        assert!(!partial.next().await, "a closed channel ends the wait");
    }

    #[test]
    fn a_task_channel_goes_when_its_subscribers_have() {
        let hub = WakeupHub::new();
        let task = TaskId::new("t-1");
        let gone = hub.subscribe(&task).expect("open");
        let staying = hub.subscribe(&task).expect("open");
        drop(gone);
        hub.wake(&task);
        assert_eq!(hub_channels(&hub), 1, "a subscriber is left");
        drop(staying);
        hub.wake(&task);
        assert_eq!(hub_channels(&hub), 0, "woken with no subscriber, the channel is dropped");
        // Abandoned subscriptions to tasks that never change are swept as the registry grows.
        for n in 0..200 {
            drop(hub.subscribe(&TaskId::new(format!("idle-{n}"))));
        }
        assert!(hub_channels(&hub) < 200, "swept: {}", hub_channels(&hub));
    }

    #[test]
    fn a_cursor_token_reads_back_as_the_cursor() {
        let ids = ["3f2b5c1e-0000-4000-8000-000000000000", "", "a.b", "Grüße, 世界", "x".repeat(300).as_str()]
            .map(str::to_owned);
        for (created_at, id) in [0, 1, 1_700_000_000_123, Millis::MAX].into_iter().zip(ids.iter().cycle()) {
            let cursor = ListCursor { created_at, id: TaskId::new(id.clone()) };
            let token = cursor.to_token();
            assert!(token.bytes().all(|byte| byte.is_ascii_hexdigit() || byte == b'.'), "URL-safe: {token}");
            assert_eq!(ListCursor::parse(&token), Some(cursor));
        }
    }

    #[test]
    fn only_tokens_made_by_a_cursor_are_read() {
        let refused =
            ["", "forged", "offset:20", ".00", "1", "1.0", "1.zz", "A.00", "+1.00", "1.00.00", "1.ff", "-1.00"];
        for token in refused {
            assert_eq!(ListCursor::parse(token), None, "{token:?}");
        }
        let too_late = format!("1{}.00", "0".repeat(16));
        assert_eq!(ListCursor::parse(&too_late), None, "a time beyond the range of Millis");
    }

    #[test]
    fn the_next_page_starts_after_the_last_task() {
        let task = |n: u64| Task::submitted(TaskId::new(format!("task-{n}")), "work", None, n);
        let cursor = ListCursor { created_at: 9, id: TaskId::new("task-9") };
        let page = TaskPage::new(vec![task(3), task(2)], 5, true, &PageStart::Offset(0));
        assert_eq!(page.next, Some(ListCursor { created_at: 2, id: TaskId::new("task-2") }));
        let page = TaskPage::new(vec![task(1)], 5, false, &PageStart::After(cursor.clone()));
        assert_eq!(page.next, None, "nothing follows the last page");
        let page = TaskPage::new(Vec::new(), 5, true, &PageStart::After(cursor.clone()));
        assert_eq!(page.next, Some(cursor), "an empty page starts where it was asked to");
        let page = TaskPage::new(Vec::new(), 5, true, &PageStart::Offset(2));
        assert_eq!(page.next, None);
    }
}
