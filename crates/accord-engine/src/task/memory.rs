//! [`MemoryStore`]: the bounded, in-process task store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;

use super::store::{
    Durability, ListQuery, PageStart, StoreError, StoredTask, TaskPage, TaskStore, TaskWakeups, WakeupHub,
    apply_to_record,
};
use super::store::{claimable, holds_lease, lease_is_live};
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
fn json_len(value: &impl serde::Serialize) -> usize {
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
    terminal: std::collections::BTreeSet<(Millis, TaskId)>,
    /// The sum of every entry's `bytes`.
    bytes: usize,
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

    fn contains_key(&self, id: &TaskId) -> bool {
        self.map.contains_key(id)
    }

    /// A record to change without touching its state or last change (its lease, its expiries).
    fn lease_mut(&mut self, id: &TaskId) -> Option<&mut StoredTask> {
        self.map.get_mut(id).map(|entry| &mut entry.record)
    }

    /// Changes a record through `change`, keeping the terminal index and the byte count right.
    fn change<R>(&mut self, id: &TaskId, change: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let entry = self.map.get_mut(id)?;
        let before = index_key(&entry.record);
        let bytes_before = entry.bytes;
        let result = change(entry);
        self.bytes = self.bytes - bytes_before + entry.bytes;
        let after = index_key(&entry.record);
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
        if let Some(key) = index_key(&entry.record) {
            self.terminal.insert(key);
        }
        self.bytes += entry.bytes;
        if let Some(old) = self.map.insert(id, entry) {
            self.bytes -= old.bytes;
            if let Some(key) = index_key(&old.record) {
                self.terminal.remove(&key);
            }
        }
    }

    fn remove(&mut self, id: &TaskId) {
        if let Some(entry) = self.map.remove(id) {
            self.bytes -= entry.bytes;
        }
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
        self.terminal.clear();
        self.bytes = 0;
    }
}

/// A record's key in the terminal index, when it is terminal.
fn index_key(record: &StoredTask) -> Option<(Millis, TaskId)> {
    record.task.state.is_terminal().then(|| (record.task.updated_at, record.task.id.clone()))
}

struct Entry {
    record: StoredTask,
    events: Vec<TaskEvent>,
    /// What the entry counts against the byte budget.
    bytes: usize,
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
        let due = entries.values().filter_map(|entry| due_of(&entry.record, retention)).min().unwrap_or(Millis::MAX);
        self.next_due.store(due, Ordering::Release);
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

fn append(entry: &mut Entry, kind: TaskEventKind, now: Millis) {
    entry.bytes += event_bytes(&kind);
    apply_to_record(&mut entry.record, &kind, now);
    let sequence = entry.events.last().map_or(1, |last| last.sequence + 1);
    entry.events.push(TaskEvent { task_id: entry.record.task.id.clone(), sequence, at: now, kind });
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
        .filter(|entry| {
            let record = &entry.record;
            let abandoned = record.lease.is_none() && record.admission_expires_at.is_some_and(|at| at <= now);
            let lapsed = record
                .lease
                .as_ref()
                .is_some_and(|lease| lease.phase == LeasePhase::Prepared && lease.expires_at <= now);
            !record.task.state.is_terminal() && (abandoned || lapsed)
        })
        .map(|entry| entry.record.task.id.clone())
        .collect();
    for id in &due {
        entries.change(id, |entry| {
            append(entry, TaskEventKind::Status { state: TaskState::Canceled, message: None }, now);
            entry.record.lease = None;
            entry.record.admission_expires_at = None;
        });
    }
    due
}

#[async_trait]
impl TaskStore for MemoryStore {
    fn durability(&self) -> Durability {
        Durability::Process
    }

    async fn create_with(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
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
        let mut entry = Entry { record, events: Vec::with_capacity(1 + then.len()), bytes: 0 };
        // The creation event describes the record as given; it is logged, not applied twice.
        let at = entry.record.task.created_at;
        entry.events.push(TaskEvent { task_id: id.clone(), sequence: 1, at, kind: event });
        for kind in then {
            append(&mut entry, kind, now);
        }
        entry.bytes = bytes;
        let stored = entry.record.clone();
        self.note_due(&entry.record);
        entries.insert(id.clone(), entry);
        drop(entries);
        for reaped in reaped {
            self.wake(&reaped);
        }
        self.wake(&id);
        Ok(stored)
    }

    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        let now = now_ms();
        let mut entries = self.lock()?;
        let reaped = self.housekeep(&mut entries, now);
        let record = entries.get(id).map(|entry| entry.record.clone());
        drop(entries);
        for reaped in reaped {
            self.wake(&reaped);
        }
        Ok(record)
    }

    async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let now = now_ms();
        let mut entries = self.lock()?;
        let reaped = self.housekeep(&mut entries, now);
        let mut matching: Vec<&Task> = entries
            .values()
            .filter(|entry| entry.record.owner == *owner)
            .map(|entry| &entry.record.task)
            .filter(|task| query.context_id.as_ref().is_none_or(|context| task.context_id.as_ref() == Some(context)))
            .filter(|task| query.states.as_ref().is_none_or(|states| states.contains(&task.state)))
            .filter(|task| query.skill.as_ref().is_none_or(|skill| task.skill == *skill))
            .filter(|task| query.updated_after.is_none_or(|after| task.updated_at >= after))
            .collect();
        matching.sort_unstable_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        let total = matching.len();
        let start = match &query.page {
            PageStart::Offset(offset) => (*offset).min(total),
            // The tasks at or before the cursor in list order come first.
            PageStart::After(cursor) => {
                matching.partition_point(|task| (task.created_at, &task.id) >= (cursor.created_at, &cursor.id))
            }
        };
        let end = start.saturating_add(query.limit).min(total);
        // Only the page is copied, under the lock.
        let tasks: Vec<Task> = matching[start..end].iter().map(|task| (*task).clone()).collect();
        drop(entries);
        for reaped in reaped {
            self.wake(&reaped);
        }
        Ok(TaskPage::new(tasks, total, end < total, &query.page))
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
            expected.contains(&entry.record.task.state)
                && execution_owner
                    .is_none_or(|owner| entry.record.lease.as_ref().is_some_and(|lease| lease.owner_id == owner))
        });
        let changed = allowed && !events.is_empty();
        let result = if allowed {
            entries.change(id, |entry| {
                for kind in events {
                    append(entry, kind, now);
                }
                entry.record.clone()
            })
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
            .filter_map(|entry| {
                let lease = entry.record.lease.as_ref()?;
                (lease.phase == LeasePhase::Active && lease.expires_at <= now && claimable(entry.record.task.state))
                    .then(|| (lease.expires_at, entry.record.task.id.clone()))
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
            .filter(|entry| entry.record.owner == *owner)
            .map(|entry| entry.events.iter().filter(|event| event.sequence > after).cloned().collect()))
    }

    async fn subscribe(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<TaskWakeups>, StoreError> {
        let entries = self.lock()?;
        let owned = entries.get(id).is_some_and(|entry| entry.record.owner == *owner);
        if !owned {
            return Ok(None);
        }
        // Subscribed under the lock, so no change made after this point can be missed.
        self.wakeups.subscribe(id).map(Some).ok_or(StoreError::Closed)
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).clear();
        // Dropping the senders ends every subscriber's wait.
        self.wakeups.close();
    }
}
