//! The store's single writer: every write of this process goes through one connection, and the
//! writes queued while a commit is in flight are grouped into the next transaction.
//!
//! A caller is answered only after the `COMMIT` that holds its write has returned (with
//! `synchronous = FULL`, after the write-ahead log is synced), so grouping keeps the durability
//! promise while one disk sync serves many writes. Each write runs in its own savepoint inside the
//! group's `BEGIN IMMEDIATE` transaction: a write refused or failing on its own data is undone
//! alone, and a driver failure fails the whole group, none of which is then committed.
//!
//! The writer also removes lock contention inside the process: its connection is the only one
//! that asks for SQLite's write lock, so only other processes ever make it wait (up to the busy
//! timeout).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use accord_engine::TaskState;
use accord_engine::task::{
    ExecutionLease, Millis, StoreError, StoredTask, Task, TaskEventKind, TaskId, apply_event, apply_to_record,
};
use sqlx::{Connection, Row, SqliteConnection};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::store_error;
use crate::rows::{Fault, decode_record, decode_task, phase_name, record_columns, sql_time, state_name, to_json};

/// The most writes grouped into one transaction.
const MAX_GROUP: usize = 64;
/// How many writes may wait for the writer before callers wait to queue theirs.
const QUEUE: usize = 1024;

/// A write, decided inside the writer's transaction.
#[derive(Debug)]
pub(crate) enum Op {
    /// Housekeeping, then a new record with its creation event unless the id exists or the
    /// store is full.
    Create {
        record: Box<StoredTask>,
        event: TaskEventKind,
        now: Millis,
        /// Terminal tasks last changed at or before this are purged (negative: none).
        purge_cutoff: i64,
        capacity: Option<usize>,
    },
    /// Housekeeping, then the event appended and applied if the state and lease owner match.
    CompareAndSet {
        id: TaskId,
        expected: Vec<TaskState>,
        event: TaskEventKind,
        execution_owner: Option<String>,
        now: Millis,
        purge_cutoff: i64,
    },
    /// One conditional lease `UPDATE … RETURNING` (`?1` id, `?2` worker, `?3` expiry, `?4` now).
    Lease { sql: &'static str, id: TaskId, worker: String, expires_at: Millis, now: Millis },
    /// Reaping expired admissions and purging terminal tasks past retention.
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
    /// [`Op::Create`]: the reaped tasks, and the refusal if the record was not stored.
    Created { reaped: Vec<TaskId>, refusal: Option<Refusal> },
    /// [`Op::CompareAndSet`]: the reaped tasks, and the record if the write applied.
    Written { reaped: Vec<TaskId>, record: Option<StoredTask> },
    /// [`Op::Lease`]: the record if the condition held.
    Leased(Option<StoredTask>),
    /// [`Op::Housekeep`]: the reaped tasks.
    Housekept(Vec<TaskId>),
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
    pub(crate) fn start(connection: SqliteConnection, busy_timeout: Duration) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let task = tokio::spawn(run(connection, queue, busy_timeout));
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

async fn run(mut connection: SqliteConnection, mut queue: mpsc::Receiver<Job>, busy_timeout: Duration) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while queue.recv_many(&mut group, MAX_GROUP).await > 0 {
        let (ops, replies): (Vec<_>, Vec<_>) = group.drain(..).map(|job| ((job.op, job.what), job.reply)).unzip();
        let answers = commit_group(&mut connection, ops, busy_timeout).await;
        for (reply, answer) in replies.into_iter().zip(answers) {
            // A caller that stopped waiting no longer needs its answer.
            let _ = reply.send(answer);
        }
    }
    if let Err(error) = connection.close().await {
        tracing::warn!(target: "accord_store_sqlite", %error, "closing the SQLite writer connection failed");
    }
}

/// Runs a group of writes in one transaction; one answer per write, in order.
async fn commit_group(
    connection: &mut SqliteConnection,
    ops: Vec<(Op, &'static str)>,
    busy_timeout: Duration,
) -> Vec<Result<Outcome, StoreError>> {
    let count = ops.len();
    let fail_all = |error: StoreError| (0..count).map(|_| Err(error.clone())).collect();
    let what = match ops.as_slice() {
        [(_, what)] => what,
        _ => "committing a group of task writes",
    };
    let mut tx = match connection.begin_with("BEGIN IMMEDIATE").await {
        Ok(tx) => tx,
        Err(error) => return fail_all(store_error(error, what, busy_timeout)),
    };
    if count == 1 {
        // Alone in its group, a write needs no savepoint: the transaction is its own.
        let Some((op, what)) = ops.into_iter().next() else { return Vec::new() };
        let answer = match execute(&mut tx, op).await {
            Ok(outcome) => tx.commit().await.map(|()| outcome).map_err(|error| store_error(error, what, busy_timeout)),
            Err(fault) => {
                let _ = tx.rollback().await;
                Err(match fault {
                    Fault::Store(error) => error,
                    Fault::Driver(error) => store_error(error, what, busy_timeout),
                })
            }
        };
        return vec![answer];
    }
    let mut answers = Vec::with_capacity(count);
    for (op, what) in ops {
        let attempt = async {
            let mut savepoint = tx.begin().await?;
            match execute(&mut savepoint, op).await {
                Ok(outcome) => {
                    savepoint.commit().await?;
                    Ok(Ok(outcome))
                }
                // The store's own refusal or a corrupt row: undo this write only.
                Err(Fault::Store(error)) => {
                    savepoint.rollback().await?;
                    Ok(Err(error))
                }
                Err(Fault::Driver(error)) => Err(error),
            }
        };
        match attempt.await {
            Ok(answer) => answers.push(answer),
            Err(error) => {
                // The transaction may be broken: commit nothing of the group.
                let error = store_error(error, what, busy_timeout);
                let _ = tx.rollback().await;
                return fail_all(error);
            }
        }
    }
    match tx.commit().await {
        Ok(()) => answers,
        Err(error) => fail_all(store_error(error, what, busy_timeout)),
    }
}

async fn execute(connection: &mut SqliteConnection, op: Op) -> Result<Outcome, Fault> {
    match op {
        Op::Create { record, event, now, purge_cutoff, capacity } => {
            create(connection, *record, &event, now, purge_cutoff, capacity).await
        }
        Op::CompareAndSet { id, expected, event, execution_owner, now, purge_cutoff } => {
            let reaped = reap(connection, now).await?;
            purge(connection, purge_cutoff).await?;
            let record = compare_and_set(connection, &id, &expected, &event, execution_owner.as_deref(), now).await?;
            Ok(Outcome::Written { reaped, record })
        }
        Op::Lease { sql, id, worker, expires_at, now } => {
            let row = sqlx::query(sql)
                .bind(id.as_str())
                .bind(worker)
                .bind(sql_time(expires_at))
                .bind(sql_time(now))
                .fetch_optional(&mut *connection)
                .await?;
            Ok(Outcome::Leased(row.as_ref().map(decode_record).transpose()?))
        }
        Op::Housekeep { now, purge_cutoff } => {
            let reaped = reap(connection, now).await?;
            purge(connection, purge_cutoff).await?;
            Ok(Outcome::Housekept(reaped))
        }
    }
}

async fn create(
    connection: &mut SqliteConnection,
    record: StoredTask,
    event: &TaskEventKind,
    now: Millis,
    purge_cutoff: i64,
    capacity: Option<usize>,
) -> Result<Outcome, Fault> {
    let task = to_json(serde_json::to_string(&record.task), "task")?;
    let payload = to_json(serde_json::to_string(&record.payload), "payload")?;
    let kind = to_json(serde_json::to_string(event), "task_events.kind")?;
    let reaped = reap(connection, now).await?;
    purge(connection, purge_cutoff).await?;
    let id = &record.task.id;
    let exists =
        sqlx::query("SELECT 1 FROM tasks WHERE id = ?1").bind(id.as_str()).fetch_optional(&mut *connection).await?;
    let refusal = if exists.is_some() {
        Some(Refusal::Duplicate)
    } else if let Some(capacity) = capacity {
        let unfinished: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM tasks WHERE terminal = 0").fetch_one(&mut *connection).await?;
        (usize::try_from(unfinished).unwrap_or(usize::MAX) >= capacity).then_some(Refusal::Full(capacity))
    } else {
        None
    };
    if refusal.is_none() {
        let lease = record.lease.as_ref();
        sqlx::query(
            "INSERT INTO tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload,
                                admission_expires_at, lease_owner, lease_expires_at, lease_phase, last_sequence,
                                skill)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 1, ?13)",
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
        .bind(record.task.skill.as_str())
        .execute(&mut *connection)
        .await?;
        // The creation event describes the record as given; it is logged, not applied.
        insert_event(connection, id, 1, now, &kind).await?;
    }
    // Reaping and purging stand even when the record is refused.
    Ok(Outcome::Created { reaped, refusal })
}

async fn compare_and_set(
    connection: &mut SqliteConnection,
    id: &TaskId,
    expected: &[TaskState],
    event: &TaskEventKind,
    execution_owner: Option<&str>,
    now: Millis,
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
    apply_to_record(&mut record, event, now);
    let kind = to_json(serde_json::to_string(event), "task_events.kind")?;
    let sequence = row.try_get::<i64, _>("last_sequence")? + 1;
    write_change(connection, &record.task, record.lease.as_ref(), record.admission_expires_at, sequence, now, &kind)
        .await?;
    Ok(Some(record))
}

/// Cancels, with a status event each, the tasks whose admission expired without a claim and
/// those whose prepared lease lapsed; clears both fields. Returns their ids.
async fn reap(connection: &mut SqliteConnection, now: Millis) -> Result<Vec<TaskId>, Fault> {
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
    let mut reaped = Vec::with_capacity(rows.len());
    for row in rows {
        let id = TaskId::new(row.try_get::<String, _>("id")?);
        let mut task = decode_task(&row.try_get::<String, _>("task")?)?;
        apply_event(&mut task, &cancel, now);
        let sequence = row.try_get::<i64, _>("last_sequence")? + 1;
        write_change(connection, &task, None, None, sequence, now, &kind).await?;
        reaped.push(id);
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

/// Writes a changed record and appends its event with `sequence`.
async fn write_change(
    connection: &mut SqliteConnection,
    task: &Task,
    lease: Option<&ExecutionLease>,
    admission_expires_at: Option<Millis>,
    sequence: i64,
    at: Millis,
    kind: &str,
) -> Result<(), Fault> {
    let task_json = to_json(serde_json::to_string(task), "task")?;
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
    .bind(sequence)
    .execute(&mut *connection)
    .await?;
    insert_event(connection, &task.id, sequence, at, kind).await
}

async fn insert_event(
    connection: &mut SqliteConnection,
    id: &TaskId,
    sequence: i64,
    at: Millis,
    kind: &str,
) -> Result<(), Fault> {
    sqlx::query("INSERT INTO task_events (task_id, sequence, at, kind) VALUES (?1, ?2, ?3, ?4)")
        .bind(id.as_str())
        .bind(sequence)
        .bind(sql_time(at))
        .bind(kind)
        .execute(&mut *connection)
        .await?;
    Ok(())
}
