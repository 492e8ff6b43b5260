//! The store's single writer: every write of this process goes through one connection, and the
//! writes queued while a commit is in flight are grouped into the next transaction.
//!
//! A caller is answered only after the `COMMIT` that holds its write has returned, so grouping
//! keeps the durability promise while one commit (and, with `synchronous = FULL`, one disk sync)
//! serves many writes. The group's transaction is `BEGIN IMMEDIATE`. Each write reads and checks
//! everything it needs, and encodes everything it writes, before its first change: a write refused
//! or failing on its own data (a duplicate id, a corrupt row) changes nothing and is answered
//! alone, while the others of its group commit. A driver failure fails the whole group, none of
//! which is then committed. Lease updates, which change the row before they read it back, run in
//! a savepoint when they share a group.
//!
//! A write that touches a paid task ([`TaskPayload::paid`](accord_engine::task::TaskPayload)) is
//! committed with the strongest durability whatever the configured level: below
//! `synchronous = FULL`, the write-ahead log is synced to disk after the group's commit and before
//! anyone in the group is answered.
//!
//! The writer also removes lock contention inside the process: its connection is the only one
//! that asks for SQLite's write lock, so only other processes ever make it wait (up to the busy
//! timeout). It wakes the subscribers of every task it changed once the change is committed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use accord_engine::TaskState;
use accord_engine::task::{
    ExecutionLease, LeasePhase, Millis, StoreError, StoredTask, Task, TaskEventKind, TaskId, WakeupHub, apply_event,
    apply_to_record,
};
use sqlx::{Connection, QueryBuilder, Row, Sqlite, SqliteConnection};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::store_error;
use crate::rows::{Fault, decode_record, phase_name, record_columns, sql_time, state_name, to_json};

/// The most writes grouped into one transaction.
const MAX_GROUP: usize = 128;
/// How many writes may wait for the writer before callers wait to queue theirs.
const QUEUE: usize = 4096;

/// A write, decided inside the writer's transaction.
#[derive(Debug)]
pub(crate) enum Op {
    /// A new record, its first log entry, and the entries that follow it applied, unless the id
    /// exists or the store is full (after reaping expired admissions).
    Create { record: Box<StoredTask>, event: TaskEventKind, then: Vec<TaskEventKind>, now: Millis },
    /// The events appended and applied if the state and lease owner match.
    Append {
        id: TaskId,
        expected: Vec<TaskState>,
        events: Vec<TaskEventKind>,
        execution_owner: Option<String>,
        now: Millis,
    },
    /// One conditional lease `UPDATE … RETURNING` (`?1` id, `?2` worker, `?3` expiry, `?4` now).
    Lease { sql: &'static str, id: TaskId, worker: String, expires_at: Millis, now: Millis },
    /// Reaping expired admissions and lapsed prepared leases, and purging terminal tasks last
    /// changed at or before the cutoff (negative: none).
    Housekeep { now: Millis, purge_cutoff: i64 },
}

/// Why [`Op::Create`] refused a record.
#[derive(Debug)]
pub(crate) enum Refusal {
    Duplicate,
    Full(usize),
}

/// What a committed [`Op`] did.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// [`Op::Create`]: the record as stored, or why it was not.
    Created(Result<StoredTask, Refusal>),
    /// [`Op::Append`]: the record if the condition held.
    Written(Option<StoredTask>),
    /// [`Op::Lease`]: the record if the condition held.
    Leased(Option<StoredTask>),
    /// [`Op::Housekeep`]: how many tasks were reaped.
    Housekept(usize),
}

impl Outcome {
    /// Whether the write changed a paid task's row.
    fn paid(&self) -> bool {
        match self {
            Self::Created(Ok(record)) | Self::Written(Some(record)) | Self::Leased(Some(record)) => record.payload.paid,
            _ => false,
        }
    }
}

/// How the writer commits, and what it tells when it has.
pub(crate) struct Settings {
    pub(crate) busy_timeout: Duration,
    /// The most unfinished tasks (`None`: no limit).
    pub(crate) capacity: Option<usize>,
    /// How long terminal tasks are kept (for the store's next housekeeping time).
    pub(crate) retention: Duration,
    /// The write-ahead log to sync after a group that wrote a paid task; `None` when every
    /// commit syncs it already (`synchronous = FULL` or `EXTRA`).
    pub(crate) wal_to_sync: Option<PathBuf>,
    /// The store's subscribers.
    pub(crate) wakeups: Arc<WakeupHub>,
    /// The store's next housekeeping time, lowered for every expiry the writer stores.
    pub(crate) next_due: Arc<AtomicU64>,
    /// How many times the write-ahead log was synced for a paid task's write.
    pub(crate) paid_syncs: Arc<AtomicU64>,
}

impl Settings {
    /// Notes when `record` may next need housekeeping: its admission expiry (unclaimed), its
    /// prepared lease's expiry, or the end of its retention (terminal).
    fn note_due(&self, record: &StoredTask) {
        let due = if record.task.state.is_terminal() {
            Some(record.task.updated_at.saturating_add(self.retention.as_millis() as Millis))
        } else {
            match &record.lease {
                None => record.admission_expires_at,
                Some(lease) if lease.phase == LeasePhase::Prepared => Some(lease.expires_at),
                Some(_) => None,
            }
        };
        if let Some(due) = due {
            self.next_due.fetch_min(due, Ordering::AcqRel);
        }
    }
}

struct Job {
    op: Op,
    /// What the caller is doing, for error messages.
    what: &'static str,
    reply: oneshot::Sender<Result<Outcome, StoreError>>,
}

/// The handle to the writer task.
pub(crate) struct Writer {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    /// Starts the writer on its own connection.
    pub(crate) fn start(connection: SqliteConnection, settings: Settings) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let task = tokio::spawn(run(connection, queue, settings));
        Self { jobs: Mutex::new(Some(jobs)), task: Mutex::new(Some(task)) }
    }

    /// Runs `op` in the next group and waits until that group has committed.
    pub(crate) async fn submit(&self, op: Op, what: &'static str) -> Result<Outcome, StoreError> {
        let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner).clone().ok_or(StoreError::Closed)?;
        let (reply, answer) = oneshot::channel();
        // The queue and the answer only break when the writer task died (a bug).
        let stopped = || StoreError::Unavailable(format!("the SQLite store's writer stopped while {what}"));
        jobs.send(Job { op, what, reply }).await.map_err(|_| stopped())?;
        drop(jobs);
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// Lets the writer finish the writes already queued, then waits for it to close its
    /// connection.
    pub(crate) async fn stop(&self) {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner).take();
        let task = self.task.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(task) = task {
            // A writer that panicked has nothing left to finish.
            let _ = task.await;
        }
    }
}

async fn run(mut connection: SqliteConnection, mut queue: mpsc::Receiver<Job>, settings: Settings) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while queue.recv_many(&mut group, MAX_GROUP).await > 0 {
        let (ops, replies): (Vec<_>, Vec<_>) = group.drain(..).map(|job| ((job.op, job.what), job.reply)).unzip();
        let mut changed = Vec::new();
        let mut answers = commit_group(&mut connection, ops, &settings, &mut changed).await;
        if let Some(wal) = &settings.wal_to_sync
            && answers.iter().any(|answer| answer.as_ref().is_ok_and(Outcome::paid))
            && let Err(error) = sync_file(wal.clone(), &settings.paid_syncs).await
        {
            tracing::error!(target: "accord_store_sqlite", %error, "syncing the write-ahead log failed");
            for answer in answers.iter_mut().filter(|answer| answer.as_ref().is_ok_and(Outcome::paid)) {
                *answer = Err(StoreError::Unavailable(format!(
                    "a paid task's write was committed but syncing it to disk failed: {error}"
                )));
            }
        }
        for id in &changed {
            settings.wakeups.wake(id);
        }
        for (reply, answer) in replies.into_iter().zip(answers) {
            // A caller that stopped waiting no longer needs its answer.
            let _ = reply.send(answer);
        }
    }
    if let Err(error) = connection.close().await {
        tracing::warn!(target: "accord_store_sqlite", %error, "closing the SQLite writer connection failed");
    }
}

/// Syncs a file's data to disk, off the async threads, and counts it.
async fn sync_file(path: PathBuf, syncs: &AtomicU64) -> std::io::Result<()> {
    tokio::task::spawn_blocking(move || std::fs::File::open(path)?.sync_data())
        .await
        .unwrap_or_else(|error| Err(std::io::Error::other(error)))?;
    syncs.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Runs a group of writes in one transaction; one answer per write, in order. The ids of the tasks
/// whose logs grew go to `changed` once the group has committed.
async fn commit_group(
    connection: &mut SqliteConnection,
    ops: Vec<(Op, &'static str)>,
    settings: &Settings,
    changed: &mut Vec<TaskId>,
) -> Vec<Result<Outcome, StoreError>> {
    let count = ops.len();
    let busy_timeout = settings.busy_timeout;
    let fail_all = |error: StoreError| (0..count).map(|_| Err(error.clone())).collect();
    let what = match ops.as_slice() {
        [(_, what)] => what,
        _ => "committing a group of task writes",
    };
    let mut tx = match connection.begin_with("BEGIN IMMEDIATE").await {
        Ok(tx) => tx,
        Err(error) => return fail_all(store_error(error, what, busy_timeout)),
    };
    let mut answers = Vec::with_capacity(count);
    let mut grown = Vec::new();
    for (op, what) in ops {
        let attempt = match op {
            // Alone in its group, a lease update needs no savepoint: the transaction is its own.
            Op::Lease { .. } if count > 1 => in_savepoint(&mut tx, op, settings, &mut grown).await,
            op => execute(&mut tx, op, settings, &mut grown).await,
        };
        match attempt {
            Ok(outcome) => answers.push(Ok(outcome)),
            // The store's own refusal or a corrupt row: nothing of this write was changed.
            Err(Fault::Store(error)) => answers.push(Err(error)),
            Err(Fault::Driver(error)) => {
                // The transaction may be broken: commit nothing of the group.
                let error = store_error(error, what, busy_timeout);
                let _ = tx.rollback().await;
                return fail_all(error);
            }
        }
    }
    match tx.commit().await {
        Ok(()) => {
            changed.append(&mut grown);
            answers
        }
        Err(error) => fail_all(store_error(error, what, busy_timeout)),
    }
}

/// Runs `op` in a savepoint that is undone when the op fails on its own data.
async fn in_savepoint(
    connection: &mut SqliteConnection,
    op: Op,
    settings: &Settings,
    grown: &mut Vec<TaskId>,
) -> Result<Outcome, Fault> {
    let mut savepoint = connection.begin().await?;
    match execute(&mut savepoint, op, settings, grown).await {
        Ok(outcome) => {
            savepoint.commit().await?;
            Ok(outcome)
        }
        Err(Fault::Store(error)) => {
            savepoint.rollback().await?;
            Err(Fault::Store(error))
        }
        Err(fault) => Err(fault),
    }
}

async fn execute(
    connection: &mut SqliteConnection,
    op: Op,
    settings: &Settings,
    grown: &mut Vec<TaskId>,
) -> Result<Outcome, Fault> {
    match op {
        Op::Create { record, event, then, now } => create(connection, *record, event, then, now, settings, grown).await,
        Op::Append { id, expected, events, execution_owner, now } => {
            let record = append(connection, &id, &expected, events, execution_owner.as_deref(), now, grown).await?;
            if let Some(record) = &record {
                settings.note_due(record);
            }
            Ok(Outcome::Written(record))
        }
        Op::Lease { sql, id, worker, expires_at, now } => {
            let row = sqlx::query(sql)
                .bind(id.as_str())
                .bind(worker)
                .bind(sql_time(expires_at))
                .bind(sql_time(now))
                .fetch_optional(&mut *connection)
                .await?;
            let record = row.as_ref().map(decode_record).transpose()?;
            if let Some(record) = &record {
                settings.note_due(record);
            }
            Ok(Outcome::Leased(record))
        }
        Op::Housekeep { now, purge_cutoff } => {
            let reaped = reap(connection, now, grown).await?;
            purge(connection, purge_cutoff).await?;
            Ok(Outcome::Housekept(reaped))
        }
    }
}

async fn create(
    connection: &mut SqliteConnection,
    mut record: StoredTask,
    event: TaskEventKind,
    then: Vec<TaskEventKind>,
    now: Millis,
    settings: &Settings,
    grown: &mut Vec<TaskId>,
) -> Result<Outcome, Fault> {
    // Everything is encoded before the first change.
    let payload = to_json(serde_json::to_string(&record.payload), "payload")?;
    let mut kinds = Vec::with_capacity(1 + then.len());
    kinds.push(to_json(serde_json::to_string(&event), "task_events.kind")?);
    for kind in &then {
        kinds.push(to_json(serde_json::to_string(kind), "task_events.kind")?);
        apply_to_record(&mut record, kind, now);
    }
    let task = to_json(serde_json::to_string(&record.task), "task")?;
    if let Some(capacity) = settings.capacity
        && unfinished(connection).await? >= capacity
        // Abandoned reservations make room before the limit is enforced.
        && (reap(connection, now, grown).await? == 0 || unfinished(connection).await? >= capacity)
    {
        return Ok(Outcome::Created(Err(Refusal::Full(capacity))));
    }
    let id = &record.task.id;
    let lease = record.lease.as_ref();
    let inserted = sqlx::query(
        "INSERT INTO tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload,
                            admission_expires_at, lease_owner, lease_expires_at, lease_phase, last_sequence,
                            skill)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(id.as_str())
    .bind(record.owner.to_hex())
    .bind(record.task.context_id.as_deref())
    .bind(state_name(record.task.state))
    .bind(sql_time(record.task.created_at))
    .bind(sql_time(record.task.updated_at))
    .bind(task)
    .bind(payload)
    .bind(record.admission_expires_at.map(sql_time))
    .bind(lease.map(|lease| lease.owner_id.as_str()))
    .bind(lease.map(|lease| sql_time(lease.expires_at)))
    .bind(lease.map(|lease| phase_name(lease.phase)))
    .bind(i64::try_from(kinds.len()).unwrap_or(i64::MAX))
    .bind(record.task.skill.as_str())
    .execute(&mut *connection)
    .await?;
    if inserted.rows_affected() == 0 {
        return Ok(Outcome::Created(Err(Refusal::Duplicate)));
    }
    // The first entry is dated with the task's creation, the ones after it with the store's clock.
    insert_events(connection, id, 1, (record.task.created_at, now), kinds).await?;
    settings.note_due(&record);
    grown.push(id.clone());
    Ok(Outcome::Created(Ok(record)))
}

/// How many tasks have not ended.
async fn unfinished(connection: &mut SqliteConnection) -> Result<usize, Fault> {
    let count: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM tasks WHERE terminal = 0").fetch_one(&mut *connection).await?;
    Ok(usize::try_from(count).unwrap_or(usize::MAX))
}

async fn append(
    connection: &mut SqliteConnection,
    id: &TaskId,
    expected: &[TaskState],
    events: Vec<TaskEventKind>,
    execution_owner: Option<&str>,
    now: Millis,
    grown: &mut Vec<TaskId>,
) -> Result<Option<StoredTask>, Fault> {
    let row = sqlx::query(concat!("SELECT last_sequence, ", record_columns!(), " FROM tasks WHERE id = ?1"))
        .bind(id.as_str())
        .fetch_optional(&mut *connection)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let mut record = decode_record(&row)?;
    let owner_holds =
        execution_owner.is_none_or(|owner| record.lease.as_ref().is_some_and(|lease| lease.owner_id == owner));
    if !expected.contains(&record.task.state) || !owner_holds {
        return Ok(None);
    }
    if events.is_empty() {
        return Ok(Some(record));
    }
    let mut kinds = Vec::with_capacity(events.len());
    for event in &events {
        kinds.push(to_json(serde_json::to_string(event), "task_events.kind")?);
        apply_to_record(&mut record, event, now);
    }
    let first = row.try_get::<i64, _>("last_sequence")? + 1;
    write_change(connection, &record.task, record.lease.as_ref(), record.admission_expires_at, first, now, kinds)
        .await?;
    grown.push(id.clone());
    Ok(Some(record))
}

/// Cancels, with a status event each, the tasks whose admission expired without a claim and
/// those whose prepared lease lapsed; clears both fields. Returns how many.
async fn reap(connection: &mut SqliteConnection, now: Millis, grown: &mut Vec<TaskId>) -> Result<usize, Fault> {
    let rows = sqlx::query(
        "SELECT id, task, last_sequence FROM tasks
         WHERE admission_expires_at <= ?1 AND lease_owner IS NULL AND terminal = 0
         UNION ALL
         SELECT id, task, last_sequence FROM tasks
         WHERE lease_phase = 'prepared' AND lease_expires_at <= ?1 AND terminal = 0",
    )
    .bind(sql_time(now))
    .fetch_all(&mut *connection)
    .await?;
    let cancel = TaskEventKind::Status { state: TaskState::Canceled, message: None };
    let kind = to_json(serde_json::to_string(&cancel), "task_events.kind")?;
    // Decoded and encoded before the first change.
    let mut changes = Vec::with_capacity(rows.len());
    for row in rows {
        let id = TaskId::new(row.try_get::<String, _>("id")?);
        let mut task = crate::rows::decode_task(&row.try_get::<String, _>("task")?)?;
        apply_event(&mut task, &cancel, now);
        changes.push((id, task, row.try_get::<i64, _>("last_sequence")? + 1));
    }
    let reaped = changes.len();
    for (id, task, sequence) in changes {
        write_change(connection, &task, None, None, sequence, now, vec![kind.clone()]).await?;
        grown.push(id);
    }
    Ok(reaped)
}

/// Deletes terminal tasks last changed at or before `cutoff`, with their logs.
async fn purge(connection: &mut SqliteConnection, cutoff: i64) -> Result<(), Fault> {
    if cutoff >= 0 {
        sqlx::query("DELETE FROM tasks WHERE terminal = 1 AND updated_at <= ?1")
            .bind(cutoff)
            .execute(&mut *connection)
            .await?;
    }
    Ok(())
}

/// Writes a changed record and appends its events (already encoded), numbered from `first`.
async fn write_change(
    connection: &mut SqliteConnection,
    task: &Task,
    lease: Option<&ExecutionLease>,
    admission_expires_at: Option<Millis>,
    first: i64,
    at: Millis,
    kinds: Vec<String>,
) -> Result<(), Fault> {
    let task_json = to_json(serde_json::to_string(task), "task")?;
    let last = first + i64::try_from(kinds.len()).unwrap_or(i64::MAX) - 1;
    sqlx::query(
        "UPDATE tasks
         SET state = ?2, updated_at = ?3, task = ?4, admission_expires_at = ?5,
             lease_owner = ?6, lease_expires_at = ?7, lease_phase = ?8, last_sequence = ?9
         WHERE id = ?1",
    )
    .bind(task.id.as_str())
    .bind(state_name(task.state))
    .bind(sql_time(task.updated_at))
    .bind(task_json)
    .bind(admission_expires_at.map(sql_time))
    .bind(lease.map(|lease| lease.owner_id.as_str()))
    .bind(lease.map(|lease| sql_time(lease.expires_at)))
    .bind(lease.map(|lease| phase_name(lease.phase)))
    .bind(last)
    .execute(&mut *connection)
    .await?;
    insert_events(connection, &task.id, first, (at, at), kinds).await
}

/// Appends log entries (their kinds already encoded) numbered from `first`, in one statement: the
/// first dated `at.0`, the others `at.1`.
async fn insert_events(
    connection: &mut SqliteConnection,
    id: &TaskId,
    first: i64,
    (first_at, at): (Millis, Millis),
    kinds: Vec<String>,
) -> Result<(), Fault> {
    let mut insert = QueryBuilder::<Sqlite>::new("INSERT INTO task_events (task_id, sequence, at, kind) ");
    insert.push_values(kinds.into_iter().zip(first..), |mut row, (kind, sequence)| {
        let at = if sequence == first { first_at } else { at };
        row.push_bind(id.as_str().to_owned()).push_bind(sequence).push_bind(sql_time(at)).push_bind(kind);
    });
    insert.build().execute(&mut *connection).await?;
    Ok(())
}
