//! [`MemoryStore`]: the bounded, in-process task store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;

use super::push::{DeliverFrom, MAX_PUSH_CONFIGS_PER_TASK, PushDelivery, PushPut, PushSettle, StoredPushConfig};
use super::store::{
    CreateLimits, Durability, ListQuery, PageStart, StoreError, StoredTask, TaskPage, TaskStore, TaskWakeups,
    WakeupHub, apply_to_record,
};
use super::store::{as_created, claimable, holds_lease, lease_is_live, replayed};
use super::token::OwnerHash;
use crate::model::{ExecutionLease, LeasePhase, Millis, Task, TaskEvent, TaskEventKind, TaskId, now_ms};
use crate::run::TaskState;

/// Limits of a [`MemoryStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryStoreConfig {
    /// The most tasks kept at once (default 1,000). Must be at least 1.
    pub max_tasks: usize,
    /// The most bytes the tasks kept may take, as [`MemoryStore::bytes`] counts them (default
    /// 64 MiB): records, inputs, histories, artifacts, results and logs.
    pub max_bytes: usize,
    /// How long a terminal task is kept after its last change (default 24 h).
    pub retention: Duration,
}

impl Default for MemoryStoreConfig {
    fn default() -> Self {
        Self { max_tasks: 1000, max_bytes: 64 << 20, retention: Duration::from_secs(24 * 60 * 60) }
    }
}

/// What a record or a log entry is counted as, beyond its JSON form: its place in the maps and
/// indexes, and the fixed parts of its structures.
const RECORD_OVERHEAD: usize = 256;
const EVENT_OVERHEAD: usize = 64;

/// The length of `value`'s JSON form, without writing it anywhere: what a task's content is
/// counted as against the byte budget.
pub(crate) fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Counting never fails; a value that cannot be serialized counts what was written before.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// What a log entry adds: itself, and about as much again in the record it changes (a message
/// joins the history, an artifact the artifacts, a result the result).
fn event_bytes(kind: &TaskEventKind) -> usize {
    EVENT_OVERHEAD + 2 * json_len(kind)
}

/// The records, with an index of the terminal ones by last change: eviction and retention take
/// from its front in O(log n), instead of scanning (and cloning the id of) every record.
#[derive(Default)]
struct Entries {
    map: HashMap<TaskId, Entry>,
    /// Each task's push configs, by id, with where their delivery stands.
    push: HashMap<TaskId, Vec<PushState>>,
    terminal: std::collections::BTreeSet<(Millis, TaskId)>,
    /// The sum of every entry's `bytes`.
    bytes: usize,
    /// How many unfinished tasks each owner has (owners with none are absent): the per-owner
    /// share is checked against it without a scan.
    unfinished: HashMap<[u8; 32], usize>,
}

impl Entries {
    fn get(&self, id: &TaskId) -> Option<&Entry> {
        self.map.get(id)
    }

    fn values(&self) -> impl Iterator<Item = &Entry> {
        self.map.values()
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    /// How many unfinished tasks `owner` has.
    fn unfinished_of(&self, owner: &OwnerHash) -> usize {
        self.unfinished.get(owner.as_bytes()).copied().unwrap_or(0)
    }

    /// Counts a task of `owner` in or out of the unfinished ones.
    fn count_unfinished(&mut self, owner: OwnerHash, unfinished: bool) {
        if unfinished {
            *self.unfinished.entry(*owner.as_bytes()).or_default() += 1;
        } else if let Some(count) = self.unfinished.get_mut(owner.as_bytes()) {
            *count -= 1;
            if *count == 0 {
                self.unfinished.remove(owner.as_bytes());
            }
        }
    }

    fn contains_key(&self, id: &TaskId) -> bool {
        self.map.contains_key(id)
    }

    /// A live record to change without touching its state or last change (its lease, its
    /// expiries). `None` for a frozen (terminal) one, which has no lease to change.
    fn lease_mut(&mut self, id: &TaskId) -> Option<&mut StoredTask> {
        match &mut self.map.get_mut(id)?.body {
            Body::Live(live) => Some(&mut live.record),
            Body::Frozen(_) => None,
        }
    }

    /// Changes an entry through `change`, keeping the terminal index and the byte count right.
    fn change<R>(&mut self, id: &TaskId, change: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let entry = self.map.get_mut(id)?;
        let before = index_key(id, &entry.head);
        let bytes_before = entry.bytes;
        let result = change(entry);
        self.bytes = self.bytes - bytes_before + entry.bytes;
        let after = index_key(id, &entry.head);
        // A task that ends leaves its owner's unfinished count (a terminal task never reopens).
        let (owner, ended) = (entry.head.owner, before.is_none() && after.is_some());
        if ended {
            self.count_unfinished(owner, false);
        }
        if before != after {
            if let Some(key) = before {
                self.terminal.remove(&key);
            }
            if let Some(key) = after {
                self.terminal.insert(key);
            }
        }
        Some(result)
    }

    fn insert(&mut self, id: TaskId, entry: Entry) {
        if let Some(key) = index_key(&id, &entry.head) {
            self.terminal.insert(key);
        }
        self.bytes += entry.bytes;
        // A task created already ended is never counted (nor counted out).
        if !entry.head.state.is_terminal() {
            self.count_unfinished(entry.head.owner, true);
        }
        if let Some(old) = self.map.insert(id.clone(), entry) {
            self.bytes -= old.bytes;
            if let Some(key) = index_key(&id, &old.head) {
                self.terminal.remove(&key);
            } else {
                self.count_unfinished(old.head.owner, false);
            }
        }
    }

    fn remove(&mut self, id: &TaskId) {
        if let Some(entry) = self.map.remove(id) {
            self.bytes -= entry.bytes;
            if !entry.head.state.is_terminal() {
                self.count_unfinished(entry.head.owner, false);
            }
        }
        self.push.remove(id);
    }

    /// The task's push configs, when the task exists and is the owner's.
    fn owned_push(&mut self, id: &TaskId, owner: &OwnerHash) -> Option<&mut Vec<PushState>> {
        if !self.owns(id, owner) {
            return None;
        }
        Some(self.push.entry(id.clone()).or_default())
    }

    fn owns(&self, id: &TaskId, owner: &OwnerHash) -> bool {
        self.map.get(id).is_some_and(|entry| entry.head.owner == *owner)
    }

    /// Removes and returns the terminal task changed longest ago.
    fn evict_oldest_terminal(&mut self) -> Option<TaskId> {
        let (_, id) = self.terminal.pop_first()?;
        self.remove(&id);
        Some(id)
    }

    /// Removes the terminal tasks last changed at or before `cutoff`.
    fn purge_terminal_until(&mut self, cutoff: Millis) {
        while let Some((updated_at, _)) = self.terminal.first()
            && *updated_at <= cutoff
        {
            if let Some((_, id)) = self.terminal.pop_first() {
                self.remove(&id);
            }
        }
    }

    fn clear(&mut self) {
        self.map.clear();
        self.push.clear();
        self.terminal.clear();
        self.bytes = 0;
        self.unfinished.clear();
    }
}

/// An entry's key in the terminal index, when it is terminal.
fn index_key(id: &TaskId, head: &Head) -> Option<(Millis, TaskId)> {
    head.state.is_terminal().then(|| (head.updated_at, id.clone()))
}

/// A task's record and log.
///
/// A terminal task is kept *frozen*: what lists filter and sort on in a small [`Head`], the rest
/// (history, artifacts, result, input, log) as one compact JSON blob, decoded when read and thawed
/// when written to again. Most tasks a store holds have ended and are rarely read: frozen, each
/// takes a fraction of the memory of its live form (two allocations instead of dozens, no
/// small-map nodes) and is dropped in two frees when evicted.
struct Entry {
    head: Head,
    body: Body,
    /// What the entry counts against the byte budget.
    bytes: usize,
}

/// A push config and where its delivery stands.
struct PushState {
    config: StoredPushConfig,
    /// The last log sequence delivered (or given up on).
    delivered: u64,
    attempts: u32,
    next_attempt_at: Millis,
    /// The worker delivering it, and until when.
    lease: Option<(String, Millis)>,
}

/// What lists filter and sort on, and the owner: the same for live and frozen entries.
struct Head {
    owner: OwnerHash,
    /// The sequence of the latest log entry (the creation entry is logged, not applied, so it is
    /// the task's version plus one).
    last_sequence: u64,
    state: TaskState,
    created_at: Millis,
    updated_at: Millis,
    skill: Box<str>,
    context_id: Option<Box<str>>,
}

impl Head {
    fn of(record: &StoredTask) -> Self {
        let task = &record.task;
        Self {
            owner: record.owner,
            last_sequence: task.version + 1,
            state: task.state,
            created_at: task.created_at,
            updated_at: task.updated_at,
            skill: task.skill.as_str().into(),
            context_id: task.context_id.as_deref().map(Into::into),
        }
    }

    /// Brings the head up to date with a later state of its record: only what a write changes (a
    /// task's skill and context are set when it is created).
    fn refresh(&mut self, record: &StoredTask) {
        let task = &record.task;
        self.owner = record.owner;
        self.last_sequence = task.version + 1;
        self.state = task.state;
        self.created_at = task.created_at;
        self.updated_at = task.updated_at;
        debug_assert_eq!(&*self.skill, task.skill.as_str());
        debug_assert_eq!(self.context_id.as_deref(), task.context_id.as_deref());
    }
}

enum Body {
    Live(Box<Live>),
    Frozen(Box<[u8]>),
}

struct Live {
    record: StoredTask,
    events: Vec<TaskEvent>,
}

/// What a frozen entry's blob holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct Frozen {
    /// The task; with `replay`, the task as created, which its log after the first entry turns
    /// into the task as it is (so the blob holds a message, an artifact or a result once, not twice).
    task: Task,
    #[serde(default)]
    replay: bool,
    payload: crate::model::TaskPayload,
    admission_expires_at: Option<Millis>,
    lease: Option<ExecutionLease>,
    events: Vec<(u64, Millis, TaskEventKind)>,
}

impl Frozen {
    fn decode(blob: &[u8]) -> Result<Self, StoreError> {
        let Self { task, replay, payload, admission_expires_at, lease, events } = serde_json::from_slice(blob)
            .map_err(|error| StoreError::Unavailable(format!("an in-memory task could not be read back: {error}")))?;
        let task = if replay {
            replayed(task, events.iter().map(|(sequence, at, kind)| (*sequence, *at, kind)))
        } else {
            task
        };
        Ok(Self { task, replay: false, payload, admission_expires_at, lease, events })
    }

    fn into_live(self, owner: OwnerHash) -> Live {
        let id = self.task.id.clone();
        let events = self
            .events
            .into_iter()
            .map(|(sequence, at, kind)| TaskEvent { task_id: id.clone(), sequence, at, kind })
            .collect();
        let record = StoredTask {
            task: self.task,
            owner,
            payload: self.payload,
            admission_expires_at: self.admission_expires_at,
            lease: self.lease,
        };
        Live { record, events }
    }
}

impl Entry {
    fn live(live: Live, bytes: usize) -> Self {
        Self { head: Head::of(&live.record), body: Body::Live(Box::new(live)), bytes }
    }

    /// The live record and log, thawing a frozen entry first.
    fn live_mut(&mut self) -> Result<&mut Live, StoreError> {
        if let Body::Frozen(blob) = &self.body {
            let live = Frozen::decode(blob)?.into_live(self.head.owner);
            self.bytes = RECORD_OVERHEAD
                + json_len(&live.record.task)
                + json_len(&live.record.payload)
                + live.events.iter().map(|event| event_bytes(&event.kind)).sum::<usize>();
            self.body = Body::Live(Box::new(live));
        }
        match &mut self.body {
            Body::Live(live) => Ok(live),
            Body::Frozen(_) => Err(StoreError::Unavailable("an in-memory task could not be thawed".into())),
        }
    }

    /// The live record, if the entry is live.
    fn live_record(&self) -> Option<&StoredTask> {
        match &self.body {
            Body::Live(live) => Some(&live.record),
            Body::Frozen(_) => None,
        }
    }

    /// Brings the head up to date after the live record changed, and freezes the entry if the
    /// task has ended.
    fn settle(&mut self) {
        let Body::Live(live) = &mut self.body else { return };
        self.head.refresh(&live.record);
        if !self.head.state.is_terminal() {
            return;
        }
        let Live { record, events } = &**live;
        // Most tasks are what their log made of the task as created: only that is kept then.
        let created = as_created(&record.task);
        let log = || events.iter().map(|event| (event.sequence, event.at, &event.kind));
        let replay = replayed(created.clone(), log()) == record.task;
        // A finished task never runs again: its input goes (the history keeps what was said).
        let payload = record.payload.finished();
        let frozen = FrozenRef {
            task: if replay { &created } else { &record.task },
            replay,
            payload: &payload,
            admission_expires_at: record.admission_expires_at,
            lease: record.lease.as_ref(),
            events: events.iter().map(|event| (event.sequence, event.at, &event.kind)).collect(),
        };
        // Engine types always serialize; were one not to, the entry simply stays live.
        if let Ok(blob) = serde_json::to_vec(&frozen) {
            self.bytes = RECORD_OVERHEAD + blob.len();
            self.body = Body::Frozen(blob.into_boxed_slice());
        }
    }

    /// The whole record.
    fn full_record(&self) -> Result<StoredTask, StoreError> {
        match &self.body {
            Body::Live(live) => Ok(live.record.clone()),
            Body::Frozen(blob) => Ok(Frozen::decode(blob)?.into_live(self.head.owner).record),
        }
    }

    /// The whole task.
    fn full_task(&self) -> Result<Task, StoreError> {
        match &self.body {
            Body::Live(live) => Ok(live.record.task.clone()),
            Body::Frozen(blob) => Frozen::decode(blob).map(|frozen| frozen.task),
        }
    }

    /// The log entries after `after`.
    fn events_after(&self, after: u64) -> Result<Vec<TaskEvent>, StoreError> {
        match &self.body {
            Body::Live(live) => Ok(live.events.iter().filter(|event| event.sequence > after).cloned().collect()),
            Body::Frozen(blob) => {
                let mut events = Frozen::decode(blob)?.into_live(self.head.owner).events;
                events.retain(|event| event.sequence > after);
                Ok(events)
            }
        }
    }
}

/// [`Frozen`], borrowed, for writing the blob without cloning the record.
#[derive(serde::Serialize)]
struct FrozenRef<'a> {
    task: &'a Task,
    replay: bool,
    payload: &'a crate::model::TaskPayload,
    admission_expires_at: Option<Millis>,
    lease: Option<&'a ExecutionLease>,
    events: Vec<(u64, Millis, &'a TaskEventKind)>,
}

/// A task store in this process's memory (`durability = process`).
///
/// Bounded: at most [`MemoryStoreConfig::max_tasks`] tasks taking at most
/// [`MemoryStoreConfig::max_bytes`]; when a new task does not fit, the terminal tasks changed
/// longest ago are evicted until it does; when only unfinished tasks remain, it is refused
/// ([`StoreError::CapacityExhausted`], [`StoreError::BytesExhausted`]). A task admitted may grow
/// past the byte budget while it runs (its output is never refused): the next new task makes room
/// or is refused. Terminal tasks expire after the retention. Expired admissions are reaped before
/// capacity is enforced.
pub struct MemoryStore {
    config: MemoryStoreConfig,
    entries: Mutex<Entries>,
    /// Dropped on close, which releases every subscriber.
    wakeups: WakeupHub,
    closed: AtomicBool,
    /// No housekeeping is due before this time: the earliest admission expiry, prepared-lease
    /// expiry or retention end of any record. Only changed while `entries` is locked. It keeps
    /// every call from scanning every record.
    next_due: AtomicU64,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(MemoryStoreConfig::default())
    }
}

impl MemoryStore {
    /// A store with these limits (a `max_tasks` of 0 is raised to 1).
    pub fn new(config: MemoryStoreConfig) -> Self {
        let config = MemoryStoreConfig { max_tasks: config.max_tasks.max(1), ..config };
        Self {
            config,
            entries: Mutex::new(Entries::default()),
            wakeups: WakeupHub::new(),
            closed: AtomicBool::new(false),
            next_due: AtomicU64::new(Millis::MAX),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Entries>, StoreError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        // Every mutation below completes before the guard drops, so a poisoned map is still
        // consistent.
        Ok(self.entries.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn wake(&self, id: &TaskId) {
        self.wakeups.wake(id);
    }

    /// What the tasks kept take against [`MemoryStoreConfig::max_bytes`]: the length of their
    /// JSON forms (records and log entries, counting each entry's content twice, since the record
    /// holds it too) plus a fixed amount per record and per entry. An estimate of the memory
    /// they use, not a measure.
    pub fn bytes(&self) -> usize {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).bytes
    }

    /// How many tasks are kept.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether no task is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reaps expired admissions and purges terminal tasks past retention; returns the reaped ids.
    fn retention_ms(&self) -> Millis {
        self.config.retention.as_millis() as Millis
    }

    /// Notes that `record` may need housekeeping at its due time.
    fn note_due(&self, record: &StoredTask) {
        if let Some(due) = due_of(record, self.retention_ms()) {
            self.next_due.fetch_min(due, Ordering::AcqRel);
        }
    }

    /// Reaps expired admissions and purges terminal tasks past retention, when any is due; returns
    /// the reaped ids.
    fn housekeep(&self, entries: &mut Entries, now: Millis) -> Vec<TaskId> {
        if now < self.next_due.load(Ordering::Acquire) {
            return Vec::new();
        }
        let reaped = reap(entries, now);
        entries.purge_terminal_until(now.saturating_sub(self.retention_ms()));
        self.recompute_due(entries);
        reaped
    }

    fn recompute_due(&self, entries: &Entries) {
        let retention = self.retention_ms();
        let due = entries.values().filter_map(|entry| entry_due(entry, retention)).min().unwrap_or(Millis::MAX);
        self.next_due.store(due, Ordering::Release);
    }
}

/// When an entry next needs housekeeping ([`due_of`]; a frozen one is terminal).
fn entry_due(entry: &Entry, retention: Millis) -> Option<Millis> {
    match entry.live_record() {
        Some(record) => due_of(record, retention),
        None => Some(entry.head.updated_at.saturating_add(retention)),
    }
}

/// When a record next needs housekeeping: its admission expiry (unclaimed), its prepared lease's
/// expiry, or the end of its retention (terminal).
fn due_of(record: &StoredTask, retention: Millis) -> Option<Millis> {
    if record.task.state.is_terminal() {
        return Some(record.task.updated_at.saturating_add(retention));
    }
    match &record.lease {
        None => record.admission_expires_at,
        Some(lease) if lease.phase == LeasePhase::Prepared => Some(lease.expires_at),
        Some(_) => None,
    }
}

/// Appends to a live entry (its head is brought up to date by [`Entry::settle`]).
fn append(live: &mut Live, bytes: &mut usize, kind: TaskEventKind, now: Millis) {
    *bytes += event_bytes(&kind);
    apply_to_record(&mut live.record, &kind, now);
    let sequence = live.events.last().map_or(1, |last| last.sequence + 1);
    live.events.push(TaskEvent { task_id: live.record.task.id.clone(), sequence, at: now, kind });
}

/// Evicts terminal tasks, oldest change first, until there is room for one more task of `bytes`;
/// refuses when only unfinished tasks remain (or the task alone exceeds the budget).
fn make_room(entries: &mut Entries, config: &MemoryStoreConfig, bytes: usize) -> Result<(), StoreError> {
    if bytes > config.max_bytes {
        return Err(StoreError::BytesExhausted { budget: config.max_bytes });
    }
    while entries.len() >= config.max_tasks || entries.bytes + bytes > config.max_bytes {
        if entries.evict_oldest_terminal().is_none() {
            return Err(if entries.len() >= config.max_tasks {
                StoreError::CapacityExhausted { capacity: config.max_tasks }
            } else {
                StoreError::BytesExhausted { budget: config.max_bytes }
            });
        }
    }
    Ok(())
}

fn reap(entries: &mut Entries, now: Millis) -> Vec<TaskId> {
    let due: Vec<TaskId> = entries
        .values()
        .filter_map(Entry::live_record)
        .filter(|record| {
            let abandoned = record.lease.is_none() && record.admission_expires_at.is_some_and(|at| at <= now);
            let lapsed = record
                .lease
                .as_ref()
                .is_some_and(|lease| lease.phase == LeasePhase::Prepared && lease.expires_at <= now);
            !record.task.state.is_terminal() && (abandoned || lapsed)
        })
        .map(|record| record.task.id.clone())
        .collect();
    for id in &due {
        entries.change(id, |entry| {
            let Body::Live(live) = &mut entry.body else { return };
            append(live, &mut entry.bytes, TaskEventKind::Status { state: TaskState::Canceled, message: None }, now);
            live.record.lease = None;
            live.record.admission_expires_at = None;
            entry.settle();
        });
    }
    due
}

#[async_trait]
impl TaskStore for MemoryStore {
    fn durability(&self) -> Durability {
        Durability::Process
    }

    async fn create_limited(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
        limits: CreateLimits,
    ) -> Result<StoredTask, StoreError> {
        let now = now_ms();
        // Counted before the lock is taken.
        let bytes = RECORD_OVERHEAD
            + json_len(&record.task)
            + json_len(&record.payload)
            + EVENT_OVERHEAD
            + json_len(&event)
            + then.iter().map(event_bytes).sum::<usize>();
        let mut entries = self.lock()?;
        let reaped = self.housekeep(&mut entries, now);
        let admitted = if entries.contains_key(&record.task.id) {
            Err(StoreError::DuplicateId(record.task.id.clone()))
        } else if let Some(limit) = limits.max_active_per_owner
            && entries.unfinished_of(&record.owner) >= limit
        {
            Err(StoreError::OwnerShareExhausted { limit })
        } else {
            make_room(&mut entries, &self.config, bytes)
        };
        if let Err(error) = admitted {
            drop(entries);
            for reaped in reaped {
                self.wake(&reaped);
            }
            return Err(error);
        }
        let id = record.task.id.clone();
        let mut live = Live { record, events: Vec::with_capacity(1 + then.len()) };
        // The creation event describes the record as given; it is logged, not applied twice.
        let at = live.record.task.created_at;
        live.events.push(TaskEvent { task_id: id.clone(), sequence: 1, at, kind: event });
        let mut counted = 0;
        for kind in then {
            append(&mut live, &mut counted, kind, now);
        }
        let mut stored = live.record.clone();
        if stored.task.state.is_terminal() {
            // Created already ended: kept without its input, as the entry keeps it.
            stored.payload = stored.payload.finished();
        }
        let mut entry = Entry::live(live, bytes);
        entry.settle();
        self.note_due(&stored);
        entries.insert(id.clone(), entry);
        drop(entries);
        for reaped in reaped {
            self.wake(&reaped);
        }
        self.wake(&id);
        Ok(stored)
    }

    async fn owner_of(&self, id: &TaskId) -> Result<Option<OwnerHash>, StoreError> {
        Ok(self.lock()?.get(id).map(|entry| entry.head.owner))
    }

    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        let now = now_ms();
        let mut entries = self.lock()?;
        let reaped = self.housekeep(&mut entries, now);
        let record = entries.get(id).map(Entry::full_record).transpose();
        drop(entries);
        for reaped in reaped {
            self.wake(&reaped);
        }
        record
    }

    async fn count_by_state(&self) -> Result<Option<Vec<(TaskState, u64)>>, StoreError> {
        // The store is bounded (`max_tasks`), so one pass over the heads is cheap.
        let entries = self.lock()?;
        let mut counts = crate::observe::STATES.map(|state| (state, 0_u64));
        for entry in entries.values() {
            if let Some((_, count)) = counts.iter_mut().find(|(state, _)| *state == entry.head.state) {
                *count += 1;
            }
        }
        Ok(Some(counts.to_vec()))
    }

    async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let now = now_ms();
        let mut entries = self.lock()?;
        let reaped = self.housekeep(&mut entries, now);
        let mut matching: Vec<(&TaskId, &Entry)> = entries
            .map
            .iter()
            .filter(|(_, entry)| {
                let head = &entry.head;
                head.owner == *owner
                    && query.context_id.as_deref().is_none_or(|context| head.context_id.as_deref() == Some(context))
                    && query.states.as_ref().is_none_or(|states| states.contains(&head.state))
                    && query.skill.as_deref().is_none_or(|skill| *head.skill == *skill)
                    && query.updated_after.is_none_or(|after| head.updated_at >= after)
            })
            .collect();
        matching.sort_unstable_by(|(a_id, a), (b_id, b)| (b.head.created_at, *b_id).cmp(&(a.head.created_at, *a_id)));
        let total = matching.len();
        let start = match &query.page {
            PageStart::Offset(offset) => (*offset).min(total),
            // The tasks at or before the cursor in list order come first.
            PageStart::After(cursor) => {
                matching.partition_point(|(id, entry)| (entry.head.created_at, *id) >= (cursor.created_at, &cursor.id))
            }
        };
        let end = start.saturating_add(query.limit).min(total);
        // Only the page is copied (or decoded), under the lock.
        let tasks = matching[start..end].iter().map(|(_, entry)| entry.full_task()).collect::<Result<Vec<Task>, _>>();
        drop(entries);
        for reaped in reaped {
            self.wake(&reaped);
        }
        Ok(TaskPage::new(tasks?, total, end < total, &query.page))
    }

    async fn claim_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        let mut entries = self.lock()?;
        let Some(record) = entries.lease_mut(id) else { return Ok(None) };
        if !claimable(record.task.state)
            || lease_is_live(record.lease.as_ref(), now)
            || record.admission_expires_at.is_some_and(|at| at <= now)
        {
            return Ok(None);
        }
        record.lease = Some(ExecutionLease { owner_id: worker.to_owned(), expires_at, phase: LeasePhase::Prepared });
        record.admission_expires_at = None;
        self.note_due(record);
        Ok(Some(record.clone()))
    }

    async fn take_over_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        let mut entries = self.lock()?;
        let Some(record) = entries.lease_mut(id) else { return Ok(None) };
        let lapsed_active =
            record.lease.as_ref().is_some_and(|lease| lease.phase == LeasePhase::Active && lease.expires_at <= now);
        if !claimable(record.task.state) || !lapsed_active {
            return Ok(None);
        }
        record.lease = Some(ExecutionLease { owner_id: worker.to_owned(), expires_at, phase: LeasePhase::Active });
        record.admission_expires_at = None;
        self.note_due(record);
        Ok(Some(record.clone()))
    }

    async fn renew_execution_claim(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        let mut entries = self.lock()?;
        let Some(record) = entries.lease_mut(id) else { return Ok(None) };
        if record.task.state.is_terminal() || !holds_lease(record, worker, now, None) {
            return Ok(None);
        }
        if let Some(lease) = record.lease.as_mut() {
            lease.expires_at = expires_at;
        }
        self.note_due(record);
        Ok(Some(record.clone()))
    }

    async fn activate_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        let mut entries = self.lock()?;
        let Some(record) = entries.lease_mut(id) else { return Ok(None) };
        if record.task.state.is_terminal() || !holds_lease(record, worker, now, Some(LeasePhase::Prepared)) {
            return Ok(None);
        }
        record.lease = Some(ExecutionLease { owner_id: worker.to_owned(), expires_at, phase: LeasePhase::Active });
        Ok(Some(record.clone()))
    }

    async fn append_all(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        events: Vec<TaskEventKind>,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        let mut entries = self.lock()?;
        let reaped = self.housekeep(&mut entries, now);
        let allowed = entries.get(id).is_some_and(|entry| {
            expected.contains(&entry.head.state)
                && execution_owner.is_none_or(|owner| {
                    entry
                        .live_record()
                        .and_then(|record| record.lease.as_ref())
                        .is_some_and(|lease| lease.owner_id == owner)
                })
        });
        let changed = allowed && !events.is_empty();
        let result = if allowed {
            entries
                .change(id, |entry| {
                    if events.is_empty() {
                        return entry.full_record();
                    }
                    // Thawed first, so that the count starts from the live form.
                    entry.live_mut()?;
                    let mut bytes = entry.bytes;
                    let live = entry.live_mut()?;
                    for kind in events {
                        append(live, &mut bytes, kind, now);
                    }
                    let record = live.record.clone();
                    entry.bytes = bytes;
                    entry.settle();
                    Ok(record)
                })
                .transpose()?
        } else {
            None
        };
        if let Some(record) = &result {
            self.note_due(record);
        }
        drop(entries);
        for reaped in reaped {
            self.wake(&reaped);
        }
        if changed {
            self.wake(id);
        }
        Ok(result)
    }

    async fn reap_expired_admissions(&self, now: Millis) -> Result<usize, StoreError> {
        let mut entries = self.lock()?;
        // Nothing can have expired before the earliest due time: no scan (this runs before every
        // reservation).
        if now < self.next_due.load(Ordering::Acquire) {
            return Ok(0);
        }
        let reaped = reap(&mut entries, now);
        self.recompute_due(&entries);
        drop(entries);
        for id in &reaped {
            self.wake(id);
        }
        Ok(reaped.len())
    }

    async fn expired_active_leases(&self, now: Millis, limit: usize) -> Result<Vec<TaskId>, StoreError> {
        let entries = self.lock()?;
        let mut expired: Vec<_> = entries
            .values()
            .filter_map(Entry::live_record)
            .filter_map(|record| {
                let lease = record.lease.as_ref()?;
                (lease.phase == LeasePhase::Active && lease.expires_at <= now && claimable(record.task.state))
                    .then(|| (lease.expires_at, record.task.id.clone()))
            })
            .collect();
        expired.sort();
        Ok(expired.into_iter().take(limit).map(|(_, id)| id).collect())
    }

    async fn events_since(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        after: u64,
    ) -> Result<Option<Vec<TaskEvent>>, StoreError> {
        let entries = self.lock()?;
        Ok(entries
            .get(id)
            .filter(|entry| entry.head.owner == *owner)
            .map(|entry| entry.events_after(after))
            .transpose()?)
    }

    async fn subscribe(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<TaskWakeups>, StoreError> {
        let entries = self.lock()?;
        let owned = entries.get(id).is_some_and(|entry| entry.head.owner == *owner);
        if !owned {
            return Ok(None);
        }
        // Subscribed under the lock, so no change made after this point can be missed.
        self.wakeups.subscribe(id).map(Some).ok_or(StoreError::Closed)
    }

    async fn put_push_config(
        &self,
        owner: &OwnerHash,
        config: StoredPushConfig,
        from: DeliverFrom,
    ) -> Result<PushPut, StoreError> {
        let mut entries = self.lock()?;
        let task_id = config.task_id.clone();
        let Some(last_sequence) =
            entries.get(&task_id).filter(|entry| entry.head.owner == *owner).map(|entry| entry.head.last_sequence)
        else {
            return Ok(PushPut::TaskNotFound);
        };
        let Some(configs) = entries.owned_push(&task_id, owner) else { return Ok(PushPut::TaskNotFound) };
        match configs.binary_search_by(|state| state.config.id.as_str().cmp(&config.id)) {
            Ok(at) => {
                let created_at = configs[at].config.created_at;
                configs[at].config = StoredPushConfig { created_at, ..config };
            }
            Err(_) if configs.len() >= MAX_PUSH_CONFIGS_PER_TASK => return Ok(PushPut::TooMany),
            Err(at) => {
                let delivered = match from {
                    DeliverFrom::Now => last_sequence,
                    DeliverFrom::After(sequence) => sequence,
                };
                let next_attempt_at = config.created_at;
                configs.insert(at, PushState { config, delivered, attempts: 0, next_attempt_at, lease: None });
            }
        }
        Ok(PushPut::Stored)
    }

    async fn push_configs(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<Vec<StoredPushConfig>>, StoreError> {
        let entries = self.lock()?;
        if !entries.owns(id, owner) {
            return Ok(None);
        }
        let configs = entries.push.get(id).map(Vec::as_slice).unwrap_or_default();
        Ok(Some(configs.iter().map(|state| state.config.clone()).collect()))
    }

    async fn delete_push_config(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        config_id: &str,
    ) -> Result<Option<bool>, StoreError> {
        let mut entries = self.lock()?;
        if !entries.owns(id, owner) {
            return Ok(None);
        }
        let configs = entries.push.get_mut(id).map(std::mem::take).unwrap_or_default();
        let before = configs.len();
        let kept: Vec<PushState> = configs.into_iter().filter(|state| state.config.id != config_id).collect();
        let deleted = kept.len() != before;
        if !kept.is_empty() {
            entries.push.insert(id.clone(), kept);
        }
        Ok(Some(deleted))
    }

    async fn claim_push_deliveries(
        &self,
        worker: &str,
        now: Millis,
        lease_until: Millis,
        limit: usize,
        events: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        let mut entries = self.lock()?;
        let Entries { map, push, .. } = &mut *entries;
        let mut due: Vec<(Millis, TaskId, usize)> = Vec::new();
        for (id, configs) in push.iter() {
            let Some(entry) = map.get(id) else { continue };
            for (index, state) in configs.iter().enumerate() {
                let live_lease = state.lease.as_ref().is_some_and(|(_, until)| *until > now);
                if state.delivered < entry.head.last_sequence && state.next_attempt_at <= now && !live_lease {
                    due.push((state.next_attempt_at, id.clone(), index));
                }
            }
        }
        due.sort();
        due.truncate(limit);
        let mut deliveries = Vec::with_capacity(due.len());
        for (_, id, index) in due {
            let (Some(entry), Some(state)) =
                (map.get(&id), push.get_mut(&id).and_then(|configs| configs.get_mut(index)))
            else {
                continue;
            };
            let mut pending = entry.events_after(state.delivered)?;
            pending.truncate(events);
            state.lease = Some((worker.to_owned(), lease_until));
            deliveries.push(PushDelivery {
                config: state.config.clone(),
                context_id: entry.head.context_id.as_deref().map(str::to_owned),
                events: pending,
                attempts: state.attempts,
            });
        }
        Ok(deliveries)
    }

    async fn settle_push_delivery(
        &self,
        task_id: &TaskId,
        config_id: &str,
        worker: &str,
        settle: PushSettle,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let mut entries = self.lock()?;
        let Some(state) = entries
            .push
            .get_mut(task_id)
            .and_then(|configs| configs.iter_mut().find(|state| state.config.id == config_id))
            .filter(|state| state.lease.as_ref().is_some_and(|(holder, _)| holder == worker))
        else {
            return Ok(false);
        };
        state.delivered = state.delivered.max(settle.delivered_through);
        state.attempts = settle.attempts;
        state.next_attempt_at = settle.next_attempt_at;
        state.lease = None;
        let Some(dead_letter) = settle.dead_letter else { return Ok(true) };
        entries
            .change(task_id, |entry| {
                entry.live_mut()?;
                let mut bytes = entry.bytes;
                let live = entry.live_mut()?;
                append(live, &mut bytes, dead_letter, now);
                entry.bytes = bytes;
                entry.settle();
                Ok::<_, StoreError>(())
            })
            .transpose()?;
        drop(entries);
        self.wake(task_id);
        Ok(true)
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).clear();
        // Dropping the senders ends every subscriber's wait.
        self.wakeups.close();
    }
}
