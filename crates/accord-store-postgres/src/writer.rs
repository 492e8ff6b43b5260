//! The store's writers: creates and appends are queued, and each writer takes every write queued
//! when it is free and commits them together, in one transaction on its own connection.
//!
//! A caller is answered only after the `COMMIT` that holds its write has returned, so grouping
//! keeps the durability promise while one commit (one flush of the write-ahead log) serves many
//! writes. A group costs a fixed number of statements whatever its size: the creates are one
//! multi-row `INSERT … ON CONFLICT (id) DO NOTHING RETURNING id` (with their first log entries),
//! and the appends one `SELECT … FOR UPDATE` of every task they touch (in id order, so groups on
//! several workers never deadlock) and one statement that writes the changed records and their
//! new log entries. A group of creates alone, without a capacity limit, is a single statement: a
//! transaction of its own.
//!
//! Each write is checked and encoded before the group changes anything: a write refused on its
//! own data (a duplicate id, a condition that does not hold, text PostgreSQL cannot store, a row
//! that does not decode) is answered alone while the rest of its group commits. Should a
//! statement fail all the same, the group is rolled back and each of its writes is tried again
//! alone, so that only the write at fault fails. A failure of the connection fails the whole
//! group (nothing of it was committed, or — when the connection breaks during `COMMIT` — it is
//! unknown, as for any lost commit) and the writer opens a new connection for the next group.
//!
//! Several writers share one queue: while one waits for its commit to reach the disk, the next
//! takes what has been queued meanwhile.
//!
//! A group that writes a paid task ([`TaskPayload::paid`](accord_engine::task::TaskPayload))
//! commits with `synchronous_commit` at `on` or stronger, whatever the session's level.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use accord_engine::TaskState;
use accord_engine::task::{LeasePhase, Millis, StoreError, StoredTask, TaskEventKind, TaskId};
use sqlx::postgres::{PgConnectOptions, PgDatabaseError, PgSeverity};
use sqlx::{Connection, PgConnection};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::sql::{self, Changes, Locked, NewRow, NewRows, TaskRow};

/// The most writes grouped into one transaction.
const MAX_GROUP: usize = 256;
/// How many writes may wait for a writer before callers wait to queue theirs.
const QUEUE: usize = 4096;

/// A write, decided inside a writer's transaction.
pub(crate) enum Op {
    /// A new record with its log (checked and encoded), unless the id exists, its owner has
    /// `share` unfinished tasks already, or the store is full.
    Create { row: Box<NewRow>, paid: bool, share: Option<usize> },
    /// The events (with their encodings) appended and applied if the state and lease owner
    /// match.
    Append {
        id: TaskId,
        expected: Vec<TaskState>,
        events: Vec<(TaskEventKind, Result<String, StoreError>)>,
        execution_owner: Option<String>,
        now: Millis,
    },
}

/// Why a create was refused.
#[derive(Debug)]
pub(crate) enum Refusal {
    Duplicate,
    Full(usize),
    /// The owner has this many unfinished tasks already, its share.
    Share(usize),
}

/// What a committed [`Op`] did.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// [`Op::Create`]: whether the record was stored.
    Created(Result<(), Refusal>),
    /// [`Op::Append`]: the record if the condition held.
    Written(Option<Box<StoredTask>>),
}

/// How the writers connect and commit.
pub(crate) struct Settings {
    pub(crate) options: PgConnectOptions,
    /// The most tasks that are not terminal (`None`: no limit).
    pub(crate) capacity: Option<usize>,
    /// Whether every session commits at `synchronous_commit = on` or stronger already, so that
    /// a paid task's write needs nothing more.
    pub(crate) sessions_flush: bool,
    /// The level each group committed with, and whether it wrote a paid task (tests only).
    #[cfg(test)]
    pub(crate) commit_levels: Mutex<Option<Vec<(bool, String)>>>,
}

struct Job {
    op: Op,
    /// What the caller is doing, for error messages.
    what: &'static str,
    reply: oneshot::Sender<Result<Outcome, StoreError>>,
}

type Answer = Result<Outcome, StoreError>;

/// The handle to the writer tasks.
pub(crate) struct Writers {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Writers {
    /// Starts `count` writers, each of which opens its connection when it first has work.
    pub(crate) fn start(count: usize, settings: Arc<Settings>) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let queue = Arc::new(tokio::sync::Mutex::new(queue));
        let tasks = (0..count.max(1)).map(|_| tokio::spawn(run(Arc::clone(&queue), Arc::clone(&settings)))).collect();
        Self { jobs: Mutex::new(Some(jobs)), tasks: Mutex::new(tasks) }
    }

    /// Runs `op` in the next group and waits until that group has committed.
    pub(crate) async fn submit(&self, op: Op, what: &'static str) -> Answer {
        let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner).clone().ok_or(StoreError::Closed)?;
        let (reply, answer) = oneshot::channel();
        // The queue closes when the store does; the answer only breaks when a writer task died.
        jobs.send(Job { op, what, reply }).await.map_err(|_| StoreError::Closed)?;
        drop(jobs);
        answer
            .await
            .unwrap_or_else(|_| Err(StoreError::Unavailable(format!("the store's writer stopped while {what}"))))
    }

    /// Lets the writers finish the writes already queued, then waits for them to close their
    /// connections.
    pub(crate) async fn stop(&self) {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner).take();
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        for task in tasks {
            // A writer that panicked has nothing left to finish.
            let _ = task.await;
        }
    }
}

async fn run(queue: Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>, settings: Arc<Settings>) {
    let mut connection: Option<PgConnection> = None;
    let mut group = Vec::with_capacity(MAX_GROUP);
    loop {
        // Whoever holds the queue waits for the next writes; the others wait for the queue.
        let received = queue.lock().await.recv_many(&mut group, MAX_GROUP).await;
        if received == 0 {
            break;
        }
        metrics::histogram!(accord_engine::observe::COMMIT_BATCH_SIZE, "store" => "postgres").record(received as f64);
        let (ops, replies): (Vec<_>, Vec<_>) = group.drain(..).map(|job| ((job.op, job.what), job.reply)).unzip();
        let answers = serve(&mut connection, &ops, &settings).await;
        for (reply, answer) in replies.into_iter().zip(answers) {
            // A caller that stopped waiting no longer needs its answer.
            let _ = reply.send(answer);
        }
    }
    if let Some(connection) = connection
        && let Err(error) = connection.close().await
    {
        tracing::debug!(%error, "closing a task store writer connection failed");
    }
}

/// Commits a group on the writer's connection (opened first if needed); one answer per write.
async fn serve(connection: &mut Option<PgConnection>, ops: &[(Op, &'static str)], settings: &Settings) -> Vec<Answer> {
    let what = match ops {
        [(_, what)] => what,
        _ => "committing a group of task writes",
    };
    let fail_all = |error: StoreError| ops.iter().map(|_| Err(error.clone())).collect();
    let conn = match connection {
        Some(conn) => conn,
        None => match PgConnection::connect_with(&settings.options).await {
            Ok(conn) => connection.insert(conn),
            Err(error) => return fail_all(store_error(what, error)),
        },
    };
    let failure = match commit_group(conn, ops, settings).await {
        Ok(answers) => return answers,
        Err(failure) => failure,
    };
    if failure.broken || ops.len() == 1 {
        if failure.broken {
            *connection = None;
        }
        return fail_all(store_error(what, failure.error));
    }
    // A statement failed: find the write at fault by trying each alone.
    tracing::debug!(error = %failure.error, writes = ops.len(), "a group of task writes failed; retrying each alone");
    let mut answers = Vec::with_capacity(ops.len());
    for (at, op) in ops.iter().enumerate() {
        match commit_group(conn, std::slice::from_ref(op), settings).await {
            Ok(mut answer) => answers.append(&mut answer),
            Err(failure) if failure.broken => {
                *connection = None;
                let error = store_error(what, failure.error);
                answers.extend((at..ops.len()).map(|_| Err(error.clone())));
                return answers;
            }
            Err(failure) => answers.push(Err(store_error(op.1, failure.error))),
        }
    }
    answers
}

/// Maps a database failure to the store's error: a message for operators naming the operation.
pub(crate) fn store_error(operation: &str, error: sqlx::Error) -> StoreError {
    match error {
        sqlx::Error::PoolClosed => StoreError::Closed,
        sqlx::Error::Database(database) if database.code().as_deref() == Some("22P05") => sql::nul_refused(operation),
        other => StoreError::Unavailable(format!("{operation} failed: {other}")),
    }
}

/// A group that did not commit.
struct Failure {
    error: sqlx::Error,
    /// Whether the connection is unusable (or its state unknown) afterwards.
    broken: bool,
}

/// Whether the connection is lost after `error`: anything but an error the server reported for
/// one statement (which leaves the connection usable once the transaction is rolled back).
fn breaks_connection(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(database) => database
            .try_downcast_ref::<PgDatabaseError>()
            .is_none_or(|error| matches!(error.severity(), PgSeverity::Fatal | PgSeverity::Panic)),
        _ => true,
    }
}

/// Runs a group in one transaction. Returns one answer per write, or the failure that rolled
/// the whole group back.
async fn commit_group(
    conn: &mut PgConnection,
    ops: &[(Op, &'static str)],
    settings: &Settings,
) -> Result<Vec<Answer>, Failure> {
    let creates_paid = ops.iter().any(|(op, _)| matches!(op, Op::Create { paid: true, .. }));
    let appends = ops.iter().any(|(op, _)| matches!(op, Op::Append { .. }));
    // A group of creates alone is one statement, atomic by itself: no transaction around it.
    // A share is counted under a lock held until the commit: that needs a transaction too.
    let shares = ops.iter().any(|(op, _)| matches!(op, Op::Create { share: Some(_), .. }));
    let alone = !appends && !shares && settings.capacity.is_none() && (settings.sessions_flush || !creates_paid);
    #[cfg(test)]
    let alone = alone && settings.commit_levels.lock().unwrap_or_else(PoisonError::into_inner).is_none();
    if alone {
        let mut answers: Vec<Option<Answer>> = ops.iter().map(|_| None).collect();
        return match write_creates(conn, ops, settings, &mut answers).await {
            Ok(_) => Ok(answers.into_iter().map(|answer| answer.unwrap_or_else(unanswered)).collect()),
            Err(error) => Err(Failure { broken: breaks_connection(&error), error }),
        };
    }
    let mut tx = conn.begin().await.map_err(|error| Failure { error, broken: true })?;
    match write_group(&mut tx, ops, settings).await {
        Ok(answers) => match tx.commit().await {
            Ok(()) => Ok(answers),
            // The commit may or may not have happened: the connection cannot tell any more.
            Err(error) => Err(Failure { error, broken: true }),
        },
        Err(error) => {
            let broken = breaks_connection(&error) || tx.rollback().await.is_err();
            Err(Failure { error, broken })
        }
    }
}

fn unanswered() -> Answer {
    Err(StoreError::Unavailable("a task write was left unanswered by its group (a bug)".to_owned()))
}

/// The statements of a group, inside its transaction.
async fn write_group(
    conn: &mut PgConnection,
    ops: &[(Op, &'static str)],
    settings: &Settings,
) -> Result<Vec<Answer>, sqlx::Error> {
    let mut answers: Vec<Option<Answer>> = ops.iter().map(|_| None).collect();
    let appended_paid = write_appends(conn, ops, &mut answers).await?;
    let created_paid = write_creates(conn, ops, settings, &mut answers).await?;
    let paid = appended_paid || created_paid;
    if paid && !settings.sessions_flush {
        let level: String = sqlx::query_scalar(sql::RAISE_DURABILITY).fetch_one(&mut *conn).await?;
        tracing::trace!(%level, "a group writing a paid task commits at synchronous_commit = on or stronger");
        #[cfg(test)]
        note_commit_level(settings, true, level);
    } else {
        #[cfg(test)]
        if settings.commit_levels.lock().unwrap_or_else(PoisonError::into_inner).is_some() {
            let level: String = sqlx::query_scalar(sql::COMMIT_LEVEL).fetch_one(&mut *conn).await?;
            note_commit_level(settings, paid, level);
        }
    }
    Ok(answers.into_iter().map(|answer| answer.unwrap_or_else(unanswered)).collect())
}

#[cfg(test)]
fn note_commit_level(settings: &Settings, paid: bool, level: String) {
    if let Some(levels) = settings.commit_levels.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
        levels.push((paid, level));
    }
}

/// Whether `record` is due for reaping at `now`: an admission that expired without a lease, or a
/// prepared lease that lapsed.
pub(crate) fn due_for_reaping(record: &StoredTask, now: Millis) -> bool {
    if record.task.state.is_terminal() {
        return false;
    }
    let abandoned = record.lease.is_none() && record.admission_expires_at.is_some_and(|at| at <= now);
    let lapsed =
        record.lease.as_ref().is_some_and(|lease| lease.phase == LeasePhase::Prepared && lease.expires_at <= now);
    abandoned || lapsed
}

/// The row read for a write, with its id.
#[derive(sqlx::FromRow)]
struct LockedRow {
    id: String,
    #[sqlx(flatten)]
    row: TaskRow,
}

/// Locks and reads every task the group appends to, decides each append in order, and writes
/// the changed records with their new entries in one statement. Answers the appends; returns
/// whether a paid task was written.
async fn write_appends(
    conn: &mut PgConnection,
    ops: &[(Op, &'static str)],
    answers: &mut [Option<Answer>],
) -> Result<bool, sqlx::Error> {
    let mut ids: Vec<&str> = ops
        .iter()
        .filter_map(|(op, _)| match op {
            Op::Append { id, .. } => Some(id.as_str()),
            Op::Create { .. } => None,
        })
        .collect();
    if ids.is_empty() {
        return Ok(false);
    }
    ids.sort_unstable();
    ids.dedup();
    let rows: Vec<LockedRow> = sqlx::query_as(sql::LOCK_FOR_WRITE).bind(ids.as_slice()).fetch_all(&mut *conn).await?;
    let mut locked: HashMap<String, Result<Locked, StoreError>> =
        rows.into_iter().map(|row| (row.id, Locked::new(row.row))).collect();

    for ((op, _), answer) in ops.iter().zip(answers.iter_mut()) {
        let Op::Append { id, expected, events, execution_owner, now } = op else { continue };
        *answer = Some(match locked.get_mut(id.as_str()) {
            None => Ok(Outcome::Written(None)),
            Some(Err(error)) => Err(error.clone()),
            Some(Ok(task)) => append(task, expected, events, execution_owner.as_deref(), *now),
        });
    }

    for task in locked.values_mut().flatten() {
        task.keep_finished_once(&mut *conn).await?;
    }
    let mut changes = Changes::default();
    let mut paid = false;
    let mut unwritable: HashMap<&str, StoreError> = HashMap::new();
    for (id, task) in &locked {
        let Ok(task) = task else { continue };
        if task.appended.is_empty() {
            continue;
        }
        match changes.push(task) {
            Ok(()) => paid |= task.record.payload.paid,
            Err(error) => {
                unwritable.insert(id.as_str(), error);
            }
        }
    }
    if !unwritable.is_empty() {
        // A record that could not be encoded is not written: its writes fail, alone.
        for ((op, _), answer) in ops.iter().zip(answers.iter_mut()) {
            if let Op::Append { id, .. } = op
                && let Some(error) = unwritable.get(id.as_str())
            {
                *answer = Some(Err(error.clone()));
            }
        }
    }
    if !changes.is_empty() {
        changes.statement().execute(&mut *conn).await?;
    }
    Ok(paid)
}

/// Decides one append on its locked record: reaps abandoned work first, as the in-memory store
/// does (a lapsed prepared claim cannot be written through), then checks the condition and, when
/// it holds, appends and applies the events. A write whose events PostgreSQL cannot store
/// changes nothing.
fn append(
    task: &mut Locked,
    expected: &[TaskState],
    events: &[(TaskEventKind, Result<String, StoreError>)],
    execution_owner: Option<&str>,
    now: Millis,
) -> Answer {
    let reaped = due_for_reaping(&task.record, now);
    let (state, lease) =
        if reaped { (TaskState::Canceled, None) } else { (task.record.task.state, task.record.lease.as_ref()) };
    let accepted = expected.contains(&state)
        && execution_owner.is_none_or(|owner| lease.is_some_and(|lease| lease.owner_id == owner));
    if accepted && let Some((_, Err(error))) = events.iter().find(|(_, encoded)| encoded.is_err()) {
        return Err(error.clone());
    }
    if reaped {
        task.reap(now)?;
    }
    if !accepted {
        return Ok(Outcome::Written(None));
    }
    for (kind, encoded) in events {
        if let Ok(encoded) = encoded {
            task.append(kind, encoded.clone(), now);
        }
    }
    Ok(Outcome::Written(Some(Box::new(task.record.clone()))))
}

/// Stores the group's new records in one statement: with a capacity limit, under the capacity
/// lock and only as many as there is room for. Answers the creates; returns whether a paid task
/// was stored.
async fn write_creates(
    conn: &mut PgConnection,
    ops: &[(Op, &'static str)],
    settings: &Settings,
    answers: &mut [Option<Answer>],
) -> Result<bool, sqlx::Error> {
    let creates: Vec<(usize, bool, &NewRow, Option<usize>)> = ops
        .iter()
        .enumerate()
        .filter_map(|(at, (op, _))| match op {
            Op::Create { row, paid, share } => Some((at, *paid, &**row, *share)),
            Op::Append { .. } => None,
        })
        .collect();
    if creates.is_empty() {
        return Ok(false);
    }
    // Two creates of one id in one group: the first is the one that may be stored.
    let mut seen = HashSet::with_capacity(creates.len());
    let mut candidates = Vec::with_capacity(creates.len());
    for (at, paid, row, share) in creates {
        if seen.insert(row.id()) {
            candidates.push((at, paid, row, share));
        } else {
            answers[at] = Some(Ok(Outcome::Created(Err(Refusal::Duplicate))));
        }
    }
    // The owners whose share is enforced, each locked (after the capacity lock, in key order, so
    // that groups on several workers never deadlock) before its unfinished tasks are counted.
    let mut shared: Vec<&str> =
        candidates.iter().filter(|(_, _, _, share)| share.is_some()).map(|(_, _, row, _)| row.owner_hash()).collect();
    shared.sort_unstable();
    shared.dedup();
    if settings.capacity.is_some() || !shared.is_empty() {
        let ids: Vec<&str> = candidates.iter().map(|(_, _, row, _)| row.id()).collect();
        let mut room = usize::MAX;
        let existing: HashSet<String> = if let Some(capacity) = settings.capacity {
            sqlx::query(sql::LOCK_CAPACITY).execute(&mut *conn).await?;
            let (active, existing): (i64, Vec<String>) =
                sqlx::query_as(sql::ACTIVE_AND_EXISTING).bind(ids.as_slice()).fetch_one(&mut *conn).await?;
            room = capacity.saturating_sub(usize::try_from(active).unwrap_or(usize::MAX));
            existing.into_iter().collect()
        } else {
            sqlx::query_scalar(sql::EXISTING).bind(ids.as_slice()).fetch_all(&mut *conn).await?.into_iter().collect()
        };
        let mut owned: HashMap<String, usize> = HashMap::new();
        if !shared.is_empty() {
            let mut keys: Vec<i64> = shared.iter().map(|owner| sql::owner_lock_key(owner)).collect();
            keys.sort_unstable();
            keys.dedup();
            sqlx::query(sql::LOCK_OWNERS).bind(keys.as_slice()).execute(&mut *conn).await?;
            let counts: Vec<(String, i64)> =
                sqlx::query_as(sql::UNFINISHED_OF_OWNERS).bind(shared.as_slice()).fetch_all(&mut *conn).await?;
            owned = counts.into_iter().map(|(owner, n)| (owner, usize::try_from(n).unwrap_or(usize::MAX))).collect();
        }
        candidates.retain(|(at, _, row, share)| {
            let unfinished = owned.get(row.owner_hash()).copied().unwrap_or(0);
            let refusal = if existing.contains(row.id()) {
                Refusal::Duplicate
            } else if let Some(share) = *share
                && unfinished >= share
            {
                Refusal::Share(share)
            } else if room == 0 {
                Refusal::Full(settings.capacity.unwrap_or(usize::MAX))
            } else {
                room = room.saturating_sub(1);
                *owned.entry(row.owner_hash().to_owned()).or_default() += 1;
                return true;
            };
            answers[*at] = Some(Ok(Outcome::Created(Err(refusal))));
            false
        });
        if candidates.is_empty() {
            return Ok(false);
        }
    }
    let mut rows = NewRows::default();
    for (_, _, row, _) in &candidates {
        rows.push(row);
    }
    let stored: HashSet<String> = rows.statement().fetch_all(&mut *conn).await?.into_iter().collect();
    let mut paid = false;
    for (at, paid_task, row, _) in candidates {
        answers[at] = Some(Ok(Outcome::Created(if stored.contains(row.id()) {
            paid |= paid_task;
            Ok(())
        } else {
            Err(Refusal::Duplicate)
        })));
    }
    Ok(paid)
}

/// Paid tasks' writes commit at `synchronous_commit = on` even when the store's connections are
/// set to `off`: the level is read from the server inside each group's transaction, just before
/// it commits, and from the lease statements' own answers.
#[cfg(test)]
mod durability {
    use accord_engine::task::{AccessToken, Task, TaskPayload, TaskStore, now_ms};
    use sqlx::{AssertSqlSafe, Connection, PgConnection, Row};

    use super::*;
    use crate::{PostgresStore, PostgresStoreConfig, SynchronousCommit};

    fn server_url() -> String {
        match std::env::var("ACCORD_PG_URL") {
            Ok(url) if !url.trim().is_empty() => url,
            _ => panic!(
                "ACCORD_PG_URL is not set, so the durability test has no server. Run the tests through \
                 scripts/with-postgres: `scripts/with-postgres cargo test -p accord-store-postgres`"
            ),
        }
    }

    /// `url` with its database replaced by `database`.
    fn database_url(url: &str, database: &str) -> String {
        let (base, query) = url.split_once('?').map_or((url, None), |(base, query)| (base, Some(query)));
        let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
        match query {
            Some(query) => format!("{server}/{database}?{query}"),
            None => format!("{server}/{database}"),
        }
    }

    fn record(paid: bool) -> StoredTask {
        let now = now_ms();
        let mut payload = TaskPayload::new("work", serde_json::json!({}));
        payload.paid = paid;
        StoredTask {
            task: Task::submitted(TaskId::generate(), "work", None, now),
            owner: AccessToken::generate().owner(),
            payload,
            admission_expires_at: Some(now + 60_000),
            lease: None,
        }
    }

    fn submitted() -> TaskEventKind {
        TaskEventKind::Status { state: TaskState::Submitted, message: None }
    }

    async fn create(store: &PostgresStore, paid: bool) -> TaskId {
        let record = record(paid);
        let id = record.task.id.clone();
        store.create(record, submitted()).await.expect("create");
        id
    }

    async fn append(store: &PostgresStore, id: &TaskId) {
        let working = TaskEventKind::Status { state: TaskState::Working, message: None };
        let all = [TaskState::Submitted, TaskState::Working];
        store.compare_and_set(id, &all, working, None, now_ms()).await.expect("cas").expect("accepted");
    }

    fn levels(pairs: &[(bool, &str)]) -> Vec<(bool, String)> {
        pairs.iter().map(|(paid, level)| (*paid, (*level).to_owned())).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_paid_write_commits_at_synchronous_commit_on_when_sessions_are_off() {
        let server = server_url();
        let name = format!("accord_durability_{}", std::process::id());
        let mut admin = PgConnection::connect(&server).await.expect("connect to ACCORD_PG_URL");
        for statement in [format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), format!("CREATE DATABASE {name}")] {
            sqlx::raw_sql(AssertSqlSafe(statement)).execute(&mut admin).await.expect("make a scratch database");
        }
        let url = database_url(&server, &name);
        let config = PostgresStoreConfig::new(url.clone())
            .housekeeping_interval(None)
            .synchronous_commit(Some(SynchronousCommit::Off));
        let store = PostgresStore::connect(config).await.expect("connect");
        store.record_commit_levels();

        let unpaid = create(&store, false).await;
        let paid = create(&store, true).await;
        append(&store, &unpaid).await;
        append(&store, &paid).await;
        append(&store, &unpaid).await;
        assert_eq!(
            store.commit_levels(),
            levels(&[(false, "off"), (true, "on"), (false, "off"), (true, "on"), (false, "off")]),
            "only the paid task's writes are raised to on, and only for their own transaction"
        );

        // A lease update is a statement of its own: it raises its own commit for a paid task.
        let mut connection = PgConnection::connect(&url).await.expect("connect");
        sqlx::raw_sql("SET synchronous_commit = off").execute(&mut connection).await.expect("set");
        for (id, expected) in [(&unpaid, "off"), (&paid, "on")] {
            store.claim_execution(id, "worker", now_ms() + 60_000, now_ms()).await.expect("claim").expect("claimed");
            let now = i64::try_from(now_ms()).expect("a time");
            let row = sqlx::query(sql::RENEW)
                .bind(id.as_str())
                .bind("worker")
                .bind(now + 60_000)
                .bind(now)
                .fetch_one(&mut connection)
                .await
                .expect("renew the lease");
            let level: String = row.try_get("commit_level").expect("the level of the renewal's commit");
            assert_eq!(level, expected);
        }
        let level: String =
            sqlx::query_scalar(sql::COMMIT_LEVEL).fetch_one(&mut connection).await.expect("the session's level");
        assert_eq!(level, "off", "the raise lasted for its own transaction only");

        // With the default configuration every session commits at on already.
        let default =
            PostgresStore::connect(PostgresStoreConfig::new(url).housekeeping_interval(None)).await.expect("connect");
        default.record_commit_levels();
        let task = create(&default, false).await;
        create(&default, true).await;
        append(&default, &task).await;
        assert_eq!(default.commit_levels(), levels(&[(false, "on"), (true, "on"), (false, "on")]));

        store.close().await;
        default.close().await;
        drop(connection);
        sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
            .execute(&mut admin)
            .await
            .expect("drop the scratch database");
    }
}
