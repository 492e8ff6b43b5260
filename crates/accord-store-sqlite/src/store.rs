//! [`SqliteStore`]: the [`TaskStore`] contract over one SQLite file.
//!
//! Reads run on a pool of connections. Every write goes to the [`Writer`], which runs it in a
//! `BEGIN IMMEDIATE` transaction: the transaction takes the database's write lock before its
//! first read, so the row it reads cannot change before it writes, across connections and
//! processes, and no read lock ever has to be upgraded (the upgrade is what fails with
//! `SQLITE_BUSY` instead of waiting). Lease changes are single conditional
//! `UPDATE … WHERE … RETURNING` statements; changes that append to a task's log read the row,
//! apply the event with [`apply_event`](accord_engine::task::apply_event) and write the row and
//! the event.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use accord_engine::TaskState;
use accord_engine::task::{
    CreateLimits, DeliverFrom, Durability, ListQuery, Millis, OwnerHash, PageStart, PushDelivery, PushPut, PushSettle,
    StoreError, StoredPushConfig, StoredTask, TaskEvent, TaskEventKind, TaskId, TaskPage, TaskStore, TaskWakeups,
    WakeupHub, now_ms,
};
use async_trait::async_trait;
use sqlx::sqlite::{Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, QueryBuilder, Row};

use crate::config::{SqliteStoreConfig, Synchronous};
use crate::error::store_error;
use crate::rows::{Fault, decode_kind, decode_record, decode_task_with_log, record_columns, sql_time, unsigned};
use crate::writer::{CheckpointTiming, Op, Outcome, Refusal, Settings, Writer};

/// The longest reads go without looking for housekeeping due, in case another process sharing the
/// file stored an expiry this one does not know of.
const FOREIGN_DUE_CHECK: Millis = 1_000;

/// The schema, embedded at build time from `migrations/`.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// A durable task store in one SQLite file (`durability = durable`).
///
/// See the [crate documentation](crate) for what it guarantees and how to open it.
pub struct SqliteStore {
    /// Reads.
    pool: SqlitePool,
    /// Writes.
    writer: Writer,
    config: SqliteStoreConfig,
    /// Changed task ids, for this process's subscribers; closed on close to release them.
    wakeups: Arc<WakeupHub>,
    /// The tasks with subscribers in this process whose log is watched for other processes'
    /// changes ([`watch_other_writers`]).
    watched: Arc<std::sync::Mutex<std::collections::HashSet<TaskId>>>,
    closed: AtomicBool,
    /// No housekeeping is due before this time, as far as this process knows: the earliest
    /// admission expiry, prepared-lease expiry or retention end it stored, and at most
    /// [`FOREIGN_DUE_CHECK`] ahead. It keeps reads from querying for housekeeping each time.
    next_due: Arc<AtomicU64>,
    /// See [`SqliteStore::paid_syncs`].
    paid_syncs: Arc<AtomicU64>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("config", &self.config).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the database file, switches it to WAL, and applies the
    /// embedded migrations that it lacks. Several stores, in this process or others, may open
    /// the same file at once: migrations run under the write lock, so each is applied once.
    ///
    /// Call it inside a Tokio runtime: it starts the store's writer task.
    pub async fn open(config: SqliteStoreConfig) -> Result<Self, StoreError> {
        Self::open_timed(config, CheckpointTiming::default()).await
    }

    /// [`SqliteStore::open`] with the write-ahead log checkpointed on `checkpoints`' timing.
    pub(crate) async fn open_timed(
        config: SqliteStoreConfig,
        checkpoints: CheckpointTiming,
    ) -> Result<Self, StoreError> {
        let config = SqliteStoreConfig { max_connections: config.max_connections.max(1), ..config };
        if let Some(directory) = config.path.parent().filter(|directory| !directory.as_os_str().is_empty()) {
            std::fs::create_dir_all(directory).map_err(|error| {
                StoreError::Unavailable(format!(
                    "cannot create the directory {} of the SQLite task store: {error}",
                    directory.display()
                ))
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(&config.path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match config.synchronous {
                Synchronous::Off => SqliteSynchronous::Off,
                Synchronous::Normal => SqliteSynchronous::Normal,
                Synchronous::Full => SqliteSynchronous::Full,
                Synchronous::Extra => SqliteSynchronous::Extra,
            })
            .busy_timeout(config.busy_timeout)
            .foreign_keys(true);
        let opening = format!("opening the SQLite task store {}", config.path.display());
        // A connection's set-up pragmas (the journal mode first) meet a lock held by another opener
        // migrating the same new file without waiting for it: tried again within the busy timeout.
        let deadline = tokio::time::Instant::now() + config.busy_timeout;
        let pool = loop {
            match SqlitePoolOptions::new().max_connections(config.max_connections).connect_with(options.clone()).await {
                Ok(pool) => break pool,
                Err(error) if crate::error::is_busy(&error) && tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                Err(error) => return Err(store_error(error, &opening, config.busy_timeout)),
            }
        };
        if let Err(error) = migrate(&pool).await {
            pool.close().await;
            return Err(match error {
                Fault::Driver(error) => store_error(error, &opening, config.busy_timeout),
                Fault::Store(error) => error,
            });
        }
        let wakeups = Arc::new(WakeupHub::new());
        let next_due = Arc::new(AtomicU64::new(0));
        let paid_syncs = Arc::new(AtomicU64::new(0));
        let settings = Settings {
            busy_timeout: config.busy_timeout,
            synchronous: match config.synchronous {
                Synchronous::Off => "OFF",
                Synchronous::Normal => "NORMAL",
                Synchronous::Full => "FULL",
                Synchronous::Extra => "EXTRA",
            },
            capacity: config.max_active_tasks,
            retention: config.retention,
            wal_to_sync: matches!(config.synchronous, Synchronous::Off | Synchronous::Normal)
                .then(|| wal_path(&config.path)),
            wakeups: Arc::clone(&wakeups),
            next_due: Arc::clone(&next_due),
            paid_syncs: Arc::clone(&paid_syncs),
            checkpoints,
        };
        let writer = match Writer::start(&config.path, settings) {
            Ok(writer) => writer,
            Err(error) => {
                pool.close().await;
                return Err(error);
            }
        };
        tracing::debug!(target: "accord_store_sqlite", path = %config.path.display(), "SQLite task store open");
        Ok(Self {
            pool,
            writer,
            config,
            wakeups,
            watched: Arc::default(),
            closed: AtomicBool::new(false),
            next_due,
            paid_syncs,
        })
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &SqliteStoreConfig {
        &self.config
    }

    /// How many times this store synced the write-ahead log to disk after a commit because the
    /// commit held a paid task's write (below [`Synchronous::Full`]; at `FULL` every commit is
    /// synced by SQLite itself and this stays 0).
    pub fn paid_syncs(&self) -> u64 {
        self.paid_syncs.load(Ordering::Relaxed)
    }

    fn ensure_open(&self) -> Result<(), StoreError> {
        if self.closed.load(Ordering::Acquire) { Err(StoreError::Closed) } else { Ok(()) }
    }

    /// Maps a failed step of the call doing `what`.
    fn fail(&self, fault: Fault, what: &str) -> StoreError {
        match fault {
            Fault::Driver(error) => store_error(error, what, self.config.busy_timeout),
            Fault::Store(error) => error,
        }
    }

    /// The oldest `updated_at` a terminal task may have and still be kept at `now`.
    fn purge_cutoff(&self, now: Millis) -> i64 {
        let retention = i64::try_from(self.config.retention.as_millis()).unwrap_or(i64::MAX);
        // Negative when `now` is within the retention of the epoch: nothing is that old.
        sql_time(now).saturating_sub(retention)
    }

    /// Reaps expired admissions and deletes terminal tasks past retention, when this process
    /// knows of any due by `now` or has not looked for [`FOREIGN_DUE_CHECK`]: what reads do, so
    /// that they rarely query for it.
    async fn housekeep_if_due(&self, now: Millis, what: &'static str) -> Result<usize, StoreError> {
        if now < self.next_due.load(Ordering::Acquire) {
            return Ok(0);
        }
        self.housekeep(now, what).await
    }

    /// Reaps expired admissions and deletes terminal tasks past retention, waking the reaped
    /// tasks' subscribers; then works out when housekeeping is next due. Reads first, and writes
    /// only when there is something to do, so that reads do not queue behind writes.
    async fn housekeep(&self, now: Millis, what: &'static str) -> Result<usize, StoreError> {
        // Raised first: an expiry the writer stores from now on lowers it again.
        self.next_due.store(now_ms().saturating_add(FOREIGN_DUE_CHECK), Ordering::Release);
        let purge_cutoff = self.purge_cutoff(now);
        let due: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM tasks
                            WHERE admission_expires_at <= ?1 AND lease_owner IS NULL AND terminal = 0)
                 OR EXISTS (SELECT 1 FROM tasks
                            WHERE lease_phase = 'prepared' AND lease_expires_at <= ?1 AND terminal = 0)
                 OR EXISTS (SELECT 1 FROM tasks WHERE terminal = 1 AND updated_at <= ?2)",
        )
        .bind(sql_time(now))
        .bind(purge_cutoff)
        .fetch_one(&self.pool)
        .await
        .map_err(|error| self.fail(error.into(), what))?;
        let reaped = if due {
            match self.writer.submit(Op::Housekeep { now, purge_cutoff }, what).await {
                Ok(Outcome::Housekept(reaped)) => reaped,
                Ok(other) => return Err(unexpected(&other)),
                Err(error) => {
                    self.next_due.store(0, Ordering::Release);
                    return Err(error);
                }
            }
        } else {
            0
        };
        let next: Option<i64> = sqlx::query_scalar(
            "SELECT MIN(due) FROM (
                 SELECT MIN(admission_expires_at) AS due FROM tasks
                 WHERE admission_expires_at IS NOT NULL AND lease_owner IS NULL AND terminal = 0
                 UNION ALL
                 SELECT MIN(lease_expires_at) FROM tasks WHERE lease_phase = 'prepared' AND terminal = 0
                 UNION ALL
                 SELECT MIN(updated_at) + ?1 FROM tasks WHERE terminal = 1
             )",
        )
        .bind(i64::try_from(self.config.retention.as_millis()).unwrap_or(i64::MAX))
        .fetch_one(&self.pool)
        .await
        .map_err(|error| self.fail(error.into(), what))?;
        if let Some(next) = next {
            self.next_due.fetch_min(unsigned(next), Ordering::AcqRel);
        }
        Ok(reaped)
    }

    /// One conditional lease update; the record when its condition held.
    async fn update_lease(
        &self,
        sql: &'static str,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
        what: &'static str,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.ensure_open()?;
        let op = Op::Lease { sql, id: id.clone(), worker: worker.to_owned(), expires_at, now };
        match self.writer.submit(op, what).await? {
            Outcome::Leased(record) => Ok(record),
            other => Err(unexpected(&other)),
        }
    }
}

/// The writer answered a write with the outcome of another kind of write: a bug, reported
/// rather than panicking.
fn unexpected(outcome: &Outcome) -> StoreError {
    // Named, not shown: an outcome holds task data and sealed push configs.
    let message = format!("the SQLite store's writer answered with an unexpected outcome: {}", outcome.name());
    tracing::error!(target: "accord_store_sqlite", %message);
    StoreError::Unavailable(message)
}

/// The write-ahead log of the database at `path`: its name with `-wal` appended.
fn wal_path(path: &std::path::Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    std::path::PathBuf::from(name)
}

/// A count or offset as SQLite binds it (clamped, like times).
fn sql_count(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The `WHERE` clause of `list`: the owner and each filter of `query` in use, every value bound.
/// A filter not in use adds nothing, so that SQLite plans each combination with the index that
/// serves it.
fn push_list_filters(sql: &mut QueryBuilder<Sqlite>, owner: &str, query: &ListQuery) {
    sql.push(" WHERE owner_hash = ").push_bind(owner.to_owned());
    if let Some(context) = &query.context_id {
        sql.push(" AND context_id = ").push_bind(context.clone());
    }
    if let Some(states) = &query.states {
        sql.push(" AND state IN (");
        let mut names = sql.separated(", ");
        for state in states {
            names.push_bind(state.as_str());
        }
        sql.push(")");
    }
    if let Some(skill) = &query.skill {
        sql.push(" AND skill = ").push_bind(skill.clone());
    }
    if let Some(after) = query.updated_after {
        sql.push(" AND updated_at >= ").push_bind(sql_time(after));
    }
}

/// The query of a page of `list`: the owner's tasks that pass the filters, newest first, from the
/// page's start, one more than asked for (whether it exists says whether more follow).
fn page_query(owner: &str, query: &ListQuery) -> QueryBuilder<Sqlite> {
    let mut page =
        QueryBuilder::<Sqlite>::new(concat!("SELECT task, ", crate::rows::task_log!(), " AS log FROM tasks"));
    push_list_filters(&mut page, owner, query);
    if let PageStart::After(cursor) = &query.page {
        page.push(" AND (created_at, id) < (")
            .push_bind(sql_time(cursor.created_at))
            .push(", ")
            .push_bind(cursor.id.as_str().to_owned())
            .push(")");
    }
    page.push(" ORDER BY created_at DESC, id DESC LIMIT ").push_bind(sql_count(query.limit.saturating_add(1)));
    if let PageStart::Offset(offset) = query.page {
        page.push(" OFFSET ").push_bind(sql_count(offset));
    }
    page
}

/// Applies the embedded migrations under the write lock, so that concurrent openers of a new
/// file do not both try to create the schema.
async fn migrate(pool: &SqlitePool) -> Result<(), Fault> {
    let mut connection = pool.acquire().await?;
    let mut tx = connection.begin_with("BEGIN IMMEDIATE").await?;
    // `run_direct` is sqlx's own way around `Migrator::run`'s "`Acquire` is not general enough"
    // error for a borrowed connection inside a `Send` future.
    MIGRATOR.run_direct(None, &mut *tx, false).await.map_err(|error| {
        Fault::Store(StoreError::Unavailable(format!("the SQLite task store's schema migration failed: {error}")))
    })?;
    tx.commit().await?;
    Ok(())
}

/// The owner hash decoded in place of a missing task's (64 hex digits, as stored).
const STAND_IN_OWNER: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How often a task with subscribers in this process is looked at for changes that other
/// processes sharing the file committed (they wake no one here).
pub(crate) const OTHER_WRITERS_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// Wakes the subscribers of `id` in this process when its log's last sequence has moved since
/// the last look, every [`OTHER_WRITERS_INTERVAL`], until the task has no subscriber left here or
/// the store closes. One look a task however many subscribe to it, instead of a re-read of the
/// log by each of them. A change this process made is woken for at once by the writer and once
/// more here: a wake-up only says when to re-read the log.
///
/// `seen` is the last sequence read when the watch started, before its first subscriber read the
/// log. A subscriber that joins a running watch is woken by the next look if anything changed
/// since the previous one.
async fn watch_other_writers(
    pool: SqlitePool,
    hub: Arc<WakeupHub>,
    watched: Arc<std::sync::Mutex<std::collections::HashSet<TaskId>>>,
    id: TaskId,
    seen: i64,
) {
    let mut seen = Some(seen);
    loop {
        tokio::time::sleep(OTHER_WRITERS_INTERVAL).await;
        {
            // Under the lock a subscription takes too: a subscriber that comes after this check
            // finds the task unwatched and starts a new watch.
            let mut watched = watched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !hub.has_subscribers(&id) || pool.is_closed() {
                watched.remove(&id);
                return;
            }
        }
        let latest: Result<Option<i64>, sqlx::Error> =
            sqlx::query_scalar("SELECT last_sequence FROM tasks WHERE id = ?1")
                .bind(id.as_str())
                .fetch_optional(&pool)
                .await;
        match latest {
            Ok(latest) => {
                // A task deleted since counts as a change: its subscribers find it gone.
                if latest != seen {
                    hub.wake(&id);
                }
                seen = latest;
            }
            Err(error) => {
                tracing::debug!(target: "accord_store_sqlite", task = %id, %error, "watching a task for other processes' changes");
            }
        }
    }
}

#[async_trait]
impl TaskStore for SqliteStore {
    fn durability(&self) -> Durability {
        Durability::Durable
    }

    async fn create_limited(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
        limits: CreateLimits,
    ) -> Result<StoredTask, StoreError> {
        self.ensure_open()?;
        let id = record.task.id.clone();
        let share = limits.max_active_per_owner;
        let op = Op::Create { record: Box::new(record), event, then, now: now_ms(), share };
        match self.writer.submit(op, "creating a task").await? {
            Outcome::Created(Ok(record)) => Ok(record),
            Outcome::Created(Err(Refusal::Duplicate)) => Err(StoreError::DuplicateId(id)),
            Outcome::Created(Err(Refusal::Full(capacity))) => Err(StoreError::CapacityExhausted { capacity }),
            Outcome::Created(Err(Refusal::Share(limit))) => Err(StoreError::OwnerShareExhausted { limit }),
            other => Err(unexpected(&other)),
        }
    }

    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        self.ensure_open()?;
        self.housekeep_if_due(now_ms(), "reading a task").await?;
        let record = async {
            let row = sqlx::query(concat!("SELECT ", record_columns!(), " FROM tasks WHERE id = ?1"))
                .bind(id.as_str())
                .fetch_optional(&self.pool)
                .await?;
            row.as_ref().map(decode_record).transpose()
        };
        record.await.map_err(|fault| self.fail(fault, "reading a task"))
    }

    async fn owner_of(&self, id: &TaskId) -> Result<Option<OwnerHash>, StoreError> {
        self.ensure_open()?;
        // Always one row of the same shape — the owner, or a stand-in of the same length for a
        // missing task — so that both answers do the same work, down to the decoding.
        let (stored, found): (String, i64) =
            sqlx::query_as("SELECT COALESCE(MAX(owner_hash), ?2), COUNT(*) FROM tasks WHERE id = ?1")
                .bind(id.as_str())
                .bind(STAND_IN_OWNER)
                .fetch_one(&self.pool)
                .await
                .map_err(|error| self.fail(error.into(), "reading a task's owner"))?;
        Ok(OwnerHash::from_hex(&stored).filter(|_| found > 0))
    }

    async fn count_by_state(&self) -> Result<Option<Vec<(TaskState, u64)>>, StoreError> {
        self.ensure_open()?;
        // The counts the triggers keep (see the migrations): a few rows per owner, no task scan.
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT state, COALESCE(SUM(n), 0) FROM task_counts GROUP BY state")
                .fetch_all(&self.pool)
                .await
                .map_err(|error| self.fail(error.into(), "counting tasks"))?;
        let counts = accord_engine::observe::STATES
            .iter()
            .map(|state| {
                let name = state.as_str();
                let count = rows.iter().find(|(row, _)| row == name).map_or(0, |(_, n)| unsigned(*n));
                (*state, count)
            })
            .collect();
        Ok(Some(counts))
    }

    async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.ensure_open()?;
        self.housekeep_if_due(now_ms(), "listing tasks").await?;
        if query.states.as_ref().is_some_and(Vec::is_empty) {
            return Ok(TaskPage::new(Vec::new(), 0, false, &query.page));
        }
        let owner = owner.to_hex();
        let mut count = if query.context_id.is_none() && query.skill.is_none() && query.updated_after.is_none() {
            // Only the owner and states: the counts the triggers keep (see the migrations).
            let mut count = QueryBuilder::<Sqlite>::new("SELECT COALESCE(SUM(n), 0) FROM task_counts");
            count.push(" WHERE owner_hash = ").push_bind(owner.clone());
            if let Some(states) = &query.states {
                count.push(" AND state IN (");
                let mut names = count.separated(", ");
                for state in states {
                    names.push_bind(state.as_str());
                }
                count.push(")");
            }
            count
        } else {
            let mut count = QueryBuilder::<Sqlite>::new("SELECT COUNT(*) FROM tasks");
            push_list_filters(&mut count, &owner, query);
            count
        };
        let mut page = page_query(&owner, query);
        let listed = async {
            // One read transaction: the page and the total come from the same snapshot.
            let mut tx = self.pool.begin().await?;
            let total: i64 = count.build_query_scalar().fetch_one(&mut *tx).await?;
            let rows = page.build().fetch_all(&mut *tx).await?;
            tx.commit().await?;
            let mut tasks = Vec::with_capacity(rows.len());
            for row in rows {
                let task: String = row.try_get("task")?;
                let log: Option<String> = row.try_get("log")?;
                tasks.push(decode_task_with_log(&task, log.as_deref())?);
            }
            Ok::<_, Fault>((tasks, usize::try_from(total).unwrap_or(0)))
        };
        let (mut tasks, total) = listed.await.map_err(|fault| self.fail(fault, "listing tasks"))?;
        let has_more = tasks.len() > query.limit;
        tasks.truncate(query.limit);
        Ok(TaskPage::new(tasks, total, has_more, &query.page))
    }

    async fn claim_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        const CLAIM: &str = concat!(
            "UPDATE tasks
             SET lease_owner = ?2, lease_expires_at = ?3, lease_phase = 'prepared', admission_expires_at = NULL
             WHERE id = ?1
               AND state IN ('submitted', 'working')
               AND (lease_expires_at IS NULL OR lease_expires_at <= ?4)
               AND (admission_expires_at IS NULL OR admission_expires_at > ?4)
             RETURNING ",
            record_columns!()
        );
        self.update_lease(CLAIM, id, worker, expires_at, now, "claiming a task").await
    }

    async fn take_over_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        const TAKE_OVER: &str = concat!(
            "UPDATE tasks
             SET lease_owner = ?2, lease_expires_at = ?3, lease_phase = 'active', admission_expires_at = NULL
             WHERE id = ?1
               AND state IN ('submitted', 'working')
               AND lease_phase = 'active' AND lease_expires_at <= ?4
             RETURNING ",
            record_columns!()
        );
        self.update_lease(TAKE_OVER, id, worker, expires_at, now, "taking a task over").await
    }

    async fn renew_execution_claim(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        const RENEW: &str = concat!(
            "UPDATE tasks
             SET lease_expires_at = ?3
             WHERE id = ?1 AND terminal = 0 AND lease_owner = ?2 AND lease_expires_at > ?4
             RETURNING ",
            record_columns!()
        );
        self.update_lease(RENEW, id, worker, expires_at, now, "renewing a task's lease").await
    }

    async fn activate_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        const ACTIVATE: &str = concat!(
            "UPDATE tasks
             SET lease_expires_at = ?3, lease_phase = 'active'
             WHERE id = ?1 AND terminal = 0 AND lease_owner = ?2 AND lease_expires_at > ?4
               AND lease_phase = 'prepared'
             RETURNING ",
            record_columns!()
        );
        self.update_lease(ACTIVATE, id, worker, expires_at, now, "activating a task's lease").await
    }

    async fn append_all(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        events: Vec<TaskEventKind>,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.ensure_open()?;
        let op = Op::Append {
            id: id.clone(),
            expected: expected.to_vec(),
            events,
            execution_owner: execution_owner.map(str::to_owned),
            now,
        };
        match self.writer.submit(op, "updating a task").await? {
            Outcome::Written(record) => Ok(record),
            other => Err(unexpected(&other)),
        }
    }

    async fn reap_expired_admissions(&self, now: Millis) -> Result<usize, StoreError> {
        self.ensure_open()?;
        self.housekeep(now, "reaping expired admissions").await
    }

    async fn expired_active_leases(&self, now: Millis, limit: usize) -> Result<Vec<TaskId>, StoreError> {
        self.ensure_open()?;
        let ids = sqlx::query_scalar::<_, String>(
            "SELECT id FROM tasks
             WHERE lease_phase = 'active' AND lease_expires_at <= ?1 AND state IN ('submitted', 'working')
             ORDER BY lease_expires_at, id
             LIMIT ?2",
        )
        .bind(sql_time(now))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(|error| self.fail(error.into(), "listing expired leases"))?;
        Ok(ids.into_iter().map(TaskId::new).collect())
    }

    async fn events_since(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        after: u64,
    ) -> Result<Option<Vec<TaskEvent>>, StoreError> {
        self.ensure_open()?;
        let events = async {
            // One statement, so one snapshot: the owner and the entries after `after` (none: a
            // single row of NULLs beside the owner; no row: no such task).
            let rows = sqlx::query(
                "SELECT t.owner_hash, e.sequence, e.at, e.kind
                 FROM tasks t LEFT JOIN task_events e ON e.task_id = t.id AND e.sequence > ?2
                 WHERE t.id = ?1
                 ORDER BY e.sequence",
            )
            .bind(id.as_str())
            .bind(i64::try_from(after).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await?;
            let Some(first) = rows.first() else { return Ok(None) };
            // Compared as hashes, in constant time.
            let stored_owner: String = first.try_get("owner_hash")?;
            if OwnerHash::from_hex(&stored_owner).is_none_or(|stored| stored != *owner) {
                return Ok(None);
            }
            let mut events = Vec::with_capacity(rows.len());
            for row in rows {
                let Some(sequence) = row.try_get::<Option<i64>, _>("sequence")? else { continue };
                let kind: String = row.try_get("kind")?;
                events.push(TaskEvent {
                    task_id: id.clone(),
                    sequence: unsigned(sequence),
                    at: unsigned(row.try_get("at")?),
                    kind: decode_kind(&kind)?,
                });
            }
            Ok::<_, Fault>(Some(events))
        };
        events.await.map_err(|fault| self.fail(fault, "reading a task's events"))
    }

    async fn subscribe(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<TaskWakeups>, StoreError> {
        self.ensure_open()?;
        // Subscribed before the ownership check, so no change committed after it can be missed.
        let wakeups = self.wakeups.subscribe(id).ok_or(StoreError::Closed)?;
        let stored: Option<(String, i64)> = sqlx::query_as("SELECT owner_hash, last_sequence FROM tasks WHERE id = ?1")
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(|error| self.fail(error.into(), "subscribing to a task"))?;
        let Some((stored_owner, last_sequence)) = stored else { return Ok(None) };
        if OwnerHash::from_hex(&stored_owner) != Some(*owner) {
            return Ok(None);
        }
        // Read before the subscriber's first read of the log: a change after it moves the
        // sequence past what the watch starts from.
        let mut watched = self.watched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if watched.insert(id.clone()) {
            tokio::spawn(watch_other_writers(
                self.pool.clone(),
                Arc::clone(&self.wakeups),
                Arc::clone(&self.watched),
                id.clone(),
                last_sequence,
            ));
        }
        Ok(Some(wakeups))
    }

    async fn put_push_config(
        &self,
        owner: &OwnerHash,
        config: StoredPushConfig,
        from: DeliverFrom,
    ) -> Result<PushPut, StoreError> {
        self.ensure_open()?;
        match self.writer.submit(Op::PutPush { owner: *owner, config, from }, "storing a push config").await? {
            Outcome::PushPut(put) => Ok(put),
            other => Err(unexpected(&other)),
        }
    }

    async fn push_configs(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<Vec<StoredPushConfig>>, StoreError> {
        self.ensure_open()?;
        let configs = async {
            // One statement, so one snapshot: the owner and the task's configs (none: a single row
            // of NULLs beside the owner; no row: no such task).
            let rows = sqlx::query(
                "SELECT t.owner_hash, p.id, p.sealed, p.created_at
                 FROM tasks t LEFT JOIN push_configs p ON p.task_id = t.id
                 WHERE t.id = ?1
                 ORDER BY p.id",
            )
            .bind(id.as_str())
            .fetch_all(&self.pool)
            .await?;
            let Some(first) = rows.first() else { return Ok(None) };
            // Compared as hashes, in constant time.
            let stored_owner: String = first.try_get("owner_hash")?;
            if OwnerHash::from_hex(&stored_owner).is_none_or(|stored| stored != *owner) {
                return Ok(None);
            }
            let mut configs = Vec::with_capacity(rows.len());
            for row in rows {
                // Ids compare bytewise (SQLite's `BINARY` collation), as the contract orders them.
                let Some(config_id) = row.try_get::<Option<String>, _>("id")? else { continue };
                configs.push(StoredPushConfig {
                    task_id: id.clone(),
                    id: config_id,
                    sealed: row.try_get("sealed")?,
                    created_at: unsigned(row.try_get("created_at")?),
                });
            }
            Ok::<_, Fault>(Some(configs))
        };
        configs.await.map_err(|fault| self.fail(fault, "reading a task's push configs"))
    }

    async fn delete_push_config(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        config_id: &str,
    ) -> Result<Option<bool>, StoreError> {
        self.ensure_open()?;
        let op = Op::DeletePush { id: id.clone(), owner: *owner, config_id: config_id.to_owned() };
        match self.writer.submit(op, "deleting a push config").await? {
            Outcome::PushDeleted(deleted) => Ok(deleted),
            other => Err(unexpected(&other)),
        }
    }

    async fn claim_push_deliveries(
        &self,
        worker: &str,
        now: Millis,
        lease_until: Millis,
        limit: usize,
        events: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        self.ensure_open()?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let op = Op::ClaimPush { worker: worker.to_owned(), now, lease_until, limit, events };
        match self.writer.submit(op, "claiming push deliveries").await? {
            Outcome::PushClaimed(deliveries) => Ok(deliveries),
            other => Err(unexpected(&other)),
        }
    }

    async fn settle_push_delivery(
        &self,
        task_id: &TaskId,
        config_id: &str,
        worker: &str,
        settle: PushSettle,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.ensure_open()?;
        let op = Op::SettlePush {
            task_id: task_id.clone(),
            config_id: config_id.to_owned(),
            worker: worker.to_owned(),
            settle,
            now,
        };
        match self.writer.submit(op, "settling a push delivery").await? {
            Outcome::PushSettled(settled) => Ok(settled),
            other => Err(unexpected(&other)),
        }
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        // Dropping the senders ends every subscriber's wait.
        self.wakeups.close();
        // Writes already queued are committed and answered before the writer stops.
        self.writer.stop().await;
        // Waits for connections in use to come back, then closes them, checkpointing the WAL.
        self.pool.close().await;
    }
}

#[cfg(test)]
mod tests {
    use accord_engine::TaskState;
    use accord_engine::task::{ListCursor, ListQuery, PageStart, TaskId, TaskStore};

    use super::{SqliteStore, page_query};
    use crate::SqliteStoreConfig;

    /// A store on a new file in a directory of its own, and a connection of its own to the file.
    async fn scratch_store(name: &str) -> (std::path::PathBuf, SqliteStore, rusqlite::Connection) {
        let dir = std::env::temp_dir().join(format!("accord-store-sqlite-{name}-{}", std::process::id()));
        let path = dir.join("tasks.db");
        let store = SqliteStore::open(SqliteStoreConfig::new(&path)).await.expect("open the store");
        let connection = rusqlite::Connection::open(&path).expect("open the file");
        (dir, store, connection)
    }

    async fn close(dir: std::path::PathBuf, store: SqliteStore, connection: rusqlite::Connection) {
        drop(connection);
        store.close().await;
        std::fs::remove_dir_all(&dir).expect("remove the test's directory");
    }

    /// How SQLite plans `sql` on `connection`: the plan's lines, its parameters unbound.
    fn plan(connection: &rusqlite::Connection, sql: &str) -> Vec<String> {
        let mut statement = connection.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).expect("a plannable query");
        // Unbound parameters plan as nulls.
        let mut rows = statement.raw_query();
        let mut lines = Vec::new();
        while let Some(row) = rows.next().expect("a line of the plan") {
            lines.push(row.get::<_, String>("detail").expect("the line's text"));
        }
        lines
    }

    /// Each page of a list walks an index of the owner's tasks in list order, newest first,
    /// without sorting what it found, whichever of the filters it uses (but the time of last
    /// change, which has an index of its own ordered by that time).
    #[tokio::test]
    async fn a_list_page_reads_an_index_in_list_order() {
        let (dir, store, connection) = scratch_store("plan").await;
        let after = PageStart::After(ListCursor { created_at: 7, id: TaskId::new("a-task") });
        let queries = [
            ListQuery::default(),
            ListQuery { page: after.clone(), ..ListQuery::default() },
            ListQuery { page: PageStart::Offset(100), ..ListQuery::default() },
            ListQuery { states: Some(vec![TaskState::Working, TaskState::Completed]), ..ListQuery::default() },
            ListQuery { context_id: Some("a-context".into()), page: after.clone(), ..ListQuery::default() },
            ListQuery { skill: Some("echo".into()), page: after, ..ListQuery::default() },
        ];
        for query in &queries {
            let lines = plan(&connection, page_query("an-owner", query).sql().as_str());
            assert!(lines.iter().any(|line| line.contains("USING INDEX tasks_by_owner")), "{query:?}: {lines:?}");
            assert!(!lines.iter().any(|line| line.contains("TEMP B-TREE")), "{query:?} sorts: {lines:?}");
        }
        let by_change = ListQuery { updated_after: Some(7), ..ListQuery::default() };
        let lines = plan(&connection, page_query("an-owner", &by_change).sql().as_str());
        assert!(lines.iter().any(|line| line.contains("USING INDEX tasks_by_owner_updated")), "{lines:?}");
        close(dir, store, connection).await;
    }

    /// Writing a task builds no temporary table: SQLite builds one to evaluate an `IN` of more
    /// than two constants, as `terminal` (read by a partial index at every insert and update of a
    /// task) once did.
    #[tokio::test]
    async fn writing_a_task_builds_no_temporary_table() {
        let (dir, store, connection) = scratch_store("ephemeral").await;
        for sql in [
            "INSERT INTO tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload, last_sequence,
                                skill)
             VALUES ('t', 'o', 'c', 'working', 1, 1, '{}', '{}', 1, 's')",
            "UPDATE tasks SET state = 'completed', updated_at = 2, last_sequence = 2 WHERE id = 't'",
            "SELECT state, n FROM task_counts WHERE owner_hash = 'o'",
        ] {
            let mut program = connection.prepare(&format!("EXPLAIN {sql}")).expect("a statement");
            let mut rows = program.raw_query();
            while let Some(row) = rows.next().expect("a step of the program") {
                let opcode: String = row.get("opcode").expect("its opcode");
                assert_ne!(opcode, "OpenEphemeral", "{sql}");
            }
        }
        close(dir, store, connection).await;
    }
}

/// How the write-ahead log starts over under writes that never pause.
#[cfg(test)]
mod checkpoints {
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use accord_engine::TaskState;
    use accord_engine::task::{AccessToken, StoredTask, Task, TaskEventKind, TaskId, TaskPayload, TaskStore, now_ms};

    use super::{SqliteStore, wal_path};
    use crate::writer::CheckpointTiming;
    use crate::{SqliteStoreConfig, Synchronous};

    /// How many times the log has started over: the checkpoint sequence number of its header
    /// (bytes 12 to 15, big-endian), which SQLite counts up at each start; 0 before the first
    /// write.
    fn log_starts(database: &Path) -> u32 {
        use std::io::Read;
        let mut header = [0; 16];
        let read = std::fs::File::open(wal_path(database)).and_then(|mut log| log.read_exact(&mut header));
        read.map_or(0, |()| u32::from_be_bytes([header[12], header[13], header[14], header[15]]))
    }

    /// With the log past its restart size at every checkpoint and writes queued back to back, the
    /// log keeps starting over, the writer copying the last of it, and no write ever meets the
    /// write lock taken: the busy timeout is zero, so one that did would fail. A checkpointer that
    /// restarted the log itself would hold that lock while it copied and synced.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_starts_over_under_steady_writes_and_no_write_waits_for_it() {
        let dir = std::env::temp_dir().join(format!("accord-store-sqlite-restart-{}", std::process::id()));
        let path = dir.join("tasks.db");
        // No disk syncs: a checkpoint's copy then takes as long on a loaded machine as on an idle
        // one (a sync on a busy disk can take longer than many writes, which land meanwhile).
        let config = SqliteStoreConfig::new(&path).busy_timeout(Duration::ZERO).synchronous(Synchronous::Off);
        let timing = CheckpointTiming { every: Duration::from_millis(10), restart_pages: 8 };
        let store = Arc::new(SqliteStore::open_timed(config, timing).await.expect("open the store"));
        let owner = AccessToken::parse("sqlite-restart-test-access-token").expect("a token").owner();
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..8)
            .map(|_| {
                let (store, stop, owner) = (Arc::clone(&store), Arc::clone(&stop), owner);
                tokio::spawn(async move {
                    let mut written = 0_usize;
                    while !stop.load(Ordering::Relaxed) {
                        let task = Task::submitted(TaskId::generate(), "echo", None, now_ms());
                        let record = StoredTask {
                            task,
                            owner,
                            payload: TaskPayload::new("echo", serde_json::json!({"text": "x".repeat(2_000)})),
                            admission_expires_at: None,
                            lease: None,
                        };
                        let submitted = TaskEventKind::Status { state: TaskState::Submitted, message: None };
                        store.create(record, submitted).await?;
                        written += 1;
                    }
                    Ok::<_, accord_engine::task::StoreError>(written)
                })
            })
            .collect();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let mut largest_log = 0;
        while log_starts(&path) < 20
            && tokio::time::Instant::now() < deadline
            && !writers.iter().any(|w| w.is_finished())
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
            largest_log = largest_log.max(std::fs::metadata(wal_path(&path)).map_or(0, |meta| meta.len()));
        }
        stop.store(true, Ordering::Relaxed);
        let mut written = 0;
        for writer in writers {
            written += writer.await.expect("a writer task").expect("every write commits without waiting");
        }
        let starts = log_starts(&path);
        assert!(starts >= 20, "the log started over {starts} times in {written} writes");
        // Without syncs a checkpointer's copy is quick, and the log may start over after one of
        // them too: the writer's part is counted.
        let catch_ups = store.writer.log_catch_ups();
        assert!(catch_ups > 0, "the writer never copied the last of the log ({starts} starts, {written} writes)");
        assert!(largest_log < 64 << 20, "the log grew to {largest_log} bytes in {written} writes");
        Arc::into_inner(store).expect("the writers are done").close().await;
        std::fs::remove_dir_all(&dir).expect("remove the test's directory");
    }
}
