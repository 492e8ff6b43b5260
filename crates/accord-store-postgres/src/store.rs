//! [`PostgresStore`]: the [`TaskStore`] contract on PostgreSQL.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use accord_engine::TaskState;
use accord_engine::task::{
    CreateLimits, DeliverFrom, Durability, ListQuery, MAX_PUSH_CONFIGS_PER_TASK, Millis, OwnerHash, PushDelivery,
    PushPut, PushSettle, StoreError, StoredPushConfig, StoredTask, TaskEvent, TaskEventKind, TaskId, TaskPage,
    TaskStore, TaskWakeups, apply_to_record, now_ms,
};
use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::types::Json;
use sqlx::{PgConnection, QueryBuilder, Row};
use tokio::task::JoinHandle;

use crate::config::{PostgresStoreConfig, SynchronousCommit, redact_url};
use crate::sql::{self, Changes, Locked, NewRow, TaskRow, count_to_db, to_db};
use crate::wakeups::{self, Wakeups};
use crate::writer::{self, Op, Outcome, Refusal, Settings, Writers, due_for_reaping};

/// How many tasks one reaping or purging transaction handles.
const BATCH: i64 = 256;
/// How many count changes one fold handles (see [`Shared::fold_counts`]).
const FOLD_BATCH: i64 = 65_536;
/// How often each worker folds the count changes into the counts.
const FOLD_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// Once a worker has folded at least this many count changes, it vacuums their table.
const FOLD_VACUUM_AFTER: usize = 1024;
/// The `application_name` of the store's connections, as `pg_stat_activity` shows them.
const APPLICATION_NAME: &str = "accord";
/// The `application_name` of the connection that listens for task events.
pub const LISTENER_APPLICATION_NAME: &str = "accord-listener";
/// The `application_name` of the writers' connections, which commit creates and appends.
pub const WRITER_APPLICATION_NAME: &str = "accord-writer";

/// What one round of [`PostgresStore::housekeep`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Housekeeping {
    /// Abandoned reservations and lapsed prepared leases cancelled.
    pub reaped: usize,
    /// Terminal tasks past their retention deleted, with their event logs.
    pub purged: usize,
    /// Changes of the per-owner task counts folded into the counts (the store also folds them
    /// every second by itself).
    pub folded: usize,
}

/// A durable task store on PostgreSQL, shareable by several workers (`durability = durable`).
///
/// See the [crate documentation](crate) for what it guarantees and how workers share it.
pub struct PostgresStore {
    shared: Arc<Shared>,
    background: Mutex<Vec<JoinHandle<()>>>,
}

/// What the store and its background tasks share.
struct Shared {
    config: PostgresStoreConfig,
    pool: PgPool,
    writers: Writers,
    /// What the writers know, shared with them.
    settings: Arc<Settings>,
    wakeups: Arc<Wakeups>,
    closed: AtomicBool,
    /// Count changes this worker folded since it last vacuumed their table.
    folded_unvacuumed: AtomicUsize,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("config", &self.shared.config)
            .field("closed", &self.shared.closed.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

/// Maps a database failure to the store's error: a message for operators naming the operation.
/// Parameters (owner hashes, payloads) never appear in it: statements only carry them as binds.
fn failed(operation: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |error| writer::store_error(operation, error)
}

impl PostgresStore {
    /// Connects to the database, applies the store's migrations (several workers may connect at
    /// once: the migrations run under an advisory lock, once), starts listening for task events
    /// and, when configured, background housekeeping.
    ///
    /// Fails with [`StoreError::Unavailable`] when the URL is invalid, the database cannot be
    /// reached or the schema cannot be migrated; the message never includes the password.
    pub async fn connect(config: PostgresStoreConfig) -> Result<Self, StoreError> {
        let where_to = redact_url(&config.url);
        if !(config.url.starts_with("postgres://") || config.url.starts_with("postgresql://")) {
            return Err(StoreError::Unavailable(format!(
                "invalid PostgreSQL URL {where_to}: it must start with postgres:// or postgresql://"
            )));
        }
        let options = PgConnectOptions::from_str(&config.url)
            .map_err(|error| StoreError::Unavailable(format!("invalid PostgreSQL URL {where_to}: {error}")))?;
        let timeout_ms = config.statement_timeout.as_millis().max(1).to_string();
        let mut settings = vec![
            ("statement_timeout", timeout_ms.clone()),
            ("lock_timeout", timeout_ms.clone()),
            ("idle_in_transaction_session_timeout", timeout_ms),
            // Every statement reads by key or a short index range. With statistics that lag
            // behind the table, the planner overestimated a list's cost at a million tasks, and
            // compiling it took 150 ms of a 1 ms query.
            ("jit", "off".to_owned()),
        ];
        if let Some(level) = config.synchronous_commit {
            settings.push(("synchronous_commit", level.as_str().to_owned()));
        }
        let options = options.options(settings);
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections.max(1))
            .acquire_timeout(config.acquire_timeout)
            .connect_with(options.clone().application_name(APPLICATION_NAME))
            .await
            .map_err(|error| StoreError::Unavailable(format!("cannot connect to PostgreSQL at {where_to}: {error}")))?;

        let mut migrator = sqlx::migrate!("./migrations");
        // A worker of an older release keeps running beside one that added a migration.
        migrator.set_ignore_missing(true);
        migrator.run(&pool).await.map_err(|error| {
            StoreError::Unavailable(format!("cannot migrate the task store schema at {where_to}: {error}"))
        })?;

        let listener_options = options.clone().application_name(LISTENER_APPLICATION_NAME);
        let listener = wakeups::open_listener(&listener_options).await.map_err(|error| {
            StoreError::Unavailable(format!("cannot listen for task events at {where_to}: {error}"))
        })?;

        let settings = Arc::new(Settings {
            options: writer_options(&options),
            capacity: config.max_active_tasks,
            sessions_flush: config.synchronous_commit.is_some_and(|level| level >= SynchronousCommit::On),
            #[cfg(test)]
            commit_levels: Mutex::new(None),
        });
        let writers = Writers::start(config.writers, Arc::clone(&settings));
        let shared = Arc::new(Shared {
            config,
            pool,
            writers,
            settings,
            wakeups: Arc::new(Wakeups::default()),
            closed: AtomicBool::new(false),
            folded_unvacuumed: AtomicUsize::new(0),
        });
        let mut background =
            vec![tokio::spawn(wakeups::forward(listener, listener_options, Arc::clone(&shared.wakeups)))];
        if let Some(interval) = shared.config.housekeeping_interval {
            background.push(tokio::spawn(housekeeping(Arc::clone(&shared), interval)));
        }
        background.push(tokio::spawn(folding(Arc::clone(&shared))));
        Ok(Self { shared, background: Mutex::new(background) })
    }

    /// The settings the store was connected with.
    pub fn config(&self) -> &PostgresStoreConfig {
        &self.shared.config
    }

    /// Reaps abandoned reservations and lapsed prepared leases at `now`, deletes terminal tasks
    /// (with their logs) last changed at least [`PostgresStoreConfig::retention`] before `now`,
    /// and folds the changes of the per-owner task counts. The store runs this every
    /// [`PostgresStoreConfig::housekeeping_interval`] (and folds the counts every second, whatever
    /// the interval); any worker may run it, as often as it likes.
    pub async fn housekeep(&self, now: Millis) -> Result<Housekeeping, StoreError> {
        self.shared.ensure_open()?;
        self.shared.housekeep(now).await
    }

    fn stop_background(&self) {
        let handles = std::mem::take(&mut *self.background.lock().unwrap_or_else(PoisonError::into_inner));
        for handle in handles {
            handle.abort();
        }
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        self.stop_background();
    }
}

/// Runs [`Shared::fold_counts`] every [`FOLD_INTERVAL`] until aborted.
async fn folding(shared: Arc<Shared>) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + FOLD_INTERVAL, FOLD_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match shared.fold_counts().await {
            Ok(_) => {}
            Err(StoreError::Closed) => return,
            Err(error) => tracing::warn!(%error, "folding the task counts failed"),
        }
    }
}

/// Runs [`Shared::housekeep`] every `interval` until aborted.
async fn housekeeping(shared: Arc<Shared>, interval: std::time::Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match shared.housekeep(now_ms()).await {
            Ok(done) if done != Housekeeping::default() => {
                tracing::debug!(reaped = done.reaped, purged = done.purged, "task store housekeeping");
            }
            Ok(_) => {}
            Err(StoreError::Closed) => return,
            Err(error) => tracing::warn!(%error, "task store housekeeping failed"),
        }
    }
}

impl Shared {
    fn ensure_open(&self) -> Result<(), StoreError> {
        if self.closed.load(Ordering::Acquire) { Err(StoreError::Closed) } else { Ok(()) }
    }

    async fn housekeep(&self, now: Millis) -> Result<Housekeeping, StoreError> {
        let reaped = self.reap(now).await?;
        let retention = Millis::try_from(self.config.retention.as_millis()).unwrap_or(Millis::MAX);
        let mut purged = 0;
        if let Some(cutoff) = now.checked_sub(retention) {
            loop {
                let deleted = sqlx::query(sql::PURGE)
                    .bind(to_db(cutoff))
                    .bind(BATCH)
                    .execute(&self.pool)
                    .await
                    .map_err(failed("purging terminal tasks"))?
                    .rows_affected();
                purged += usize::try_from(deleted).unwrap_or(usize::MAX);
                if deleted < BATCH as u64 {
                    break;
                }
            }
        }
        let folded = self.fold_counts().await?;
        Ok(Housekeeping { reaped, purged, folded })
    }

    /// Folds the changes the triggers add to the per-owner task counts (see the migrations) into
    /// the counts, [`FOLD_BATCH`] a transaction, until none are left; returns how many were
    /// folded. One worker folds at a time: when another is folding, this one does nothing.
    ///
    /// Folding changes no total (each transaction moves changes into the counts whole), it only
    /// keeps the rows a total sums few: about two changes are added per task that runs. Once it
    /// has folded [`FOLD_VACUUM_AFTER`] changes, the worker vacuums their table.
    async fn fold_counts(&self) -> Result<usize, StoreError> {
        const OPERATION: &str = "folding the task counts";
        self.ensure_open()?;
        let mut folded = 0;
        loop {
            let mut tx = self.pool.begin().await.map_err(failed(OPERATION))?;
            let ours: bool =
                sqlx::query_scalar(sql::TRY_LOCK_COUNT_FOLD).fetch_one(&mut *tx).await.map_err(failed(OPERATION))?;
            if !ours {
                break;
            }
            let (changes, owners, states): (i64, Vec<String>, Vec<String>) = sqlx::query_as(sql::FOLD_COUNTS)
                .bind(FOLD_BATCH)
                .fetch_one(&mut *tx)
                .await
                .map_err(failed(OPERATION))?;
            if !owners.is_empty() {
                sqlx::query(sql::DROP_EMPTY_COUNTS)
                    .bind(owners)
                    .bind(states)
                    .execute(&mut *tx)
                    .await
                    .map_err(failed(OPERATION))?;
            }
            tx.commit().await.map_err(failed(OPERATION))?;
            folded += usize::try_from(changes).unwrap_or(0);
            if changes < FOLD_BATCH {
                break;
            }
        }
        let unvacuumed = self.folded_unvacuumed.fetch_add(folded, Ordering::Relaxed).saturating_add(folded);
        if unvacuumed >= FOLD_VACUUM_AFTER {
            // The folded changes are dead rows, and their index entries stay until a vacuum: a
            // total read through them (19,000 after preloading a million tasks) took 1.5 ms
            // instead of 0.1. Autovacuum comes by once a minute at best; a vacuum of this small
            // table takes a few milliseconds. A failed vacuum is only logged: the fold is done.
            self.folded_unvacuumed.store(0, Ordering::Relaxed);
            if let Err(error) = sqlx::raw_sql(sql::VACUUM_COUNT_CHANGES).execute(&self.pool).await {
                let error = writer::store_error("vacuuming the task count changes", error);
                tracing::warn!(%error, "vacuuming the folded task count changes failed");
            }
        }
        Ok(folded)
    }

    /// Reaps every task due at `now`, a batch per transaction.
    async fn reap(&self, now: Millis) -> Result<usize, StoreError> {
        let mut reaped = 0;
        loop {
            let candidates: Vec<String> = sqlx::query_scalar(sql::REAP_CANDIDATES)
                .bind(to_db(now))
                .bind(BATCH)
                .fetch_all(&self.pool)
                .await
                .map_err(failed("finding abandoned tasks"))?;
            if candidates.is_empty() {
                return Ok(reaped);
            }
            let done = self.reap_these(&candidates, now).await?;
            reaped += done;
            if done == 0 {
                // Every candidate was changed by another worker meanwhile (or reaped by it).
                return Ok(reaped);
            }
        }
    }

    /// Reaps before a read or a capacity check. A failure here is only logged: the call goes on
    /// (and fails by itself if the database is down), so one unreadable row cannot block every
    /// listing.
    async fn reap_before(&self, operation: &str, now: Millis) -> Result<(), StoreError> {
        match self.reap(now).await {
            Ok(_) => Ok(()),
            Err(StoreError::Closed) => Err(StoreError::Closed),
            Err(error) => {
                tracing::warn!(%error, operation, "reaping abandoned tasks failed");
                Ok(())
            }
        }
    }

    /// Reaps those of `candidates` that are still due at `now`, in one transaction.
    async fn reap_these(&self, candidates: &[String], now: Millis) -> Result<usize, StoreError> {
        let mut tx = self.pool.begin().await.map_err(failed("reaping abandoned tasks"))?;
        let rows: Vec<TaskRow> = sqlx::query_as(sql::LOCK_REAPABLE)
            .bind(to_db(now))
            .bind(candidates)
            .fetch_all(&mut *tx)
            .await
            .map_err(failed("reaping abandoned tasks"))?;
        let mut changes = Changes::default();
        let mut reaped = 0;
        let mut paid = false;
        for row in rows {
            let mut locked = Locked::new(row)?;
            // The lock re-checked the row in SQL; the same rule in Rust decides.
            if due_for_reaping(&locked.record, now) {
                locked.reap(now)?;
                locked.keep_finished_once(&mut tx).await.map_err(failed("reaping abandoned tasks"))?;
                changes.push(&locked)?;
                paid |= locked.record.payload.paid;
                reaped += 1;
            }
        }
        if !changes.is_empty() {
            changes.statement().execute(&mut *tx).await.map_err(failed("reaping abandoned tasks"))?;
        }
        if paid && !self.settings.sessions_flush {
            sqlx::query(sql::RAISE_DURABILITY).execute(&mut *tx).await.map_err(failed("reaping abandoned tasks"))?;
        }
        tx.commit().await.map_err(failed("reaping abandoned tasks"))?;
        Ok(reaped)
    }

    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        let row: Option<TaskRow> = sqlx::query_as(sql::GET)
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("reading a task"))?;
        row.map(|row| row.into_record().map(|(record, _)| record)).transpose()
    }

    async fn create_limited(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
        limits: CreateLimits,
    ) -> Result<StoredTask, StoreError> {
        const OPERATION: &str = "creating a task";
        let now = now_ms();
        // Checked and encoded here, by the caller, so that the writer only binds and commits.
        // The row is stored as it is after `then`, with every entry in its log.
        let mut record = record;
        let mut kinds = Vec::with_capacity(1 + then.len());
        kinds.push(sql::encode_storable(&event, OPERATION)?);
        for kind in &then {
            kinds.push(sql::encode_storable(kind, OPERATION)?);
            apply_to_record(&mut record, kind, now);
        }
        // Created already ended (its handler ran before it was stored): kept as a task that ends
        // later is, its body in its log and without its input.
        let mut head = None;
        if record.task.state.is_terminal() {
            record.payload = record.payload.finished();
            let log = std::iter::once(&event).chain(&then).zip(1..).map(|(kind, sequence)| (sequence, kind));
            head = accord_engine::task::finished_head(&record.task, log);
        }
        let row = Box::new(NewRow::new(&record, head.as_ref(), kinds, now)?);
        let paid = record.payload.paid;
        let share = limits.max_active_per_owner;
        // With a capacity limit or a share, a create refused for want of room is tried once more
        // after abandoned reservations are reaped.
        let retry = (self.config.max_active_tasks.is_some() || share.is_some()).then(|| row.clone());
        let mut outcome = self.writers.submit(Op::Create { row, paid, share }, OPERATION).await?;
        if let (Outcome::Created(Err(Refusal::Full(_) | Refusal::Share(_))), Some(row)) = (&outcome, retry)
            && self.reap_for_room(now).await?
        {
            outcome = self.writers.submit(Op::Create { row, paid, share }, OPERATION).await?;
        }
        match outcome {
            Outcome::Created(Ok(())) => Ok(record),
            Outcome::Created(Err(Refusal::Duplicate)) => Err(StoreError::DuplicateId(record.task.id)),
            Outcome::Created(Err(Refusal::Full(capacity))) => Err(StoreError::CapacityExhausted { capacity }),
            Outcome::Created(Err(Refusal::Share(limit))) => Err(StoreError::OwnerShareExhausted { limit }),
            Outcome::Written(_) => {
                Err(StoreError::Unavailable(format!("{OPERATION}: the writer answered another write")))
            }
        }
    }

    /// Reaps abandoned work to make room for a create; whether any was reaped. A failure is only
    /// logged: the create is then refused for want of room.
    async fn reap_for_room(&self, now: Millis) -> Result<bool, StoreError> {
        match self.reap(now).await {
            Ok(reaped) => Ok(reaped > 0),
            Err(StoreError::Closed) => Err(StoreError::Closed),
            Err(error) => {
                tracing::warn!(%error, "reaping abandoned tasks to make room failed");
                Ok(false)
            }
        }
    }

    async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.reap_before("listing tasks", now_ms()).await?;
        let mut statement = QueryBuilder::new("");
        sql::push_list(&mut statement, owner, query);
        let rows = statement.build().fetch_all(&self.pool).await.map_err(failed("listing tasks"))?;
        let mut total = 0;
        let mut tasks = Vec::with_capacity(rows.len());
        for row in rows {
            let count: i64 = row.try_get("total").map_err(failed("listing tasks"))?;
            total = usize::try_from(count).unwrap_or(usize::MAX);
            let task: Option<Json<accord_engine::task::Task>> = row.try_get("task").map_err(failed("listing tasks"))?;
            type Log = Json<Vec<(i64, accord_engine::task::TaskEventKind)>>;
            let log: Option<Log> = row.try_get("log").map_err(failed("listing tasks"))?;
            tasks.extend(task.map(|Json(task)| match log {
                Some(Json(log)) => accord_engine::task::with_body_from_log(
                    task,
                    log.iter().map(|(sequence, kind)| (u64::try_from(*sequence).unwrap_or(0), kind)),
                ),
                None => task,
            }));
        }
        let has_more = tasks.len() > query.limit;
        tasks.truncate(query.limit);
        Ok(TaskPage::new(tasks, total, has_more, &query.page))
    }

    /// Runs a conditional lease update; `None` when its condition does not hold.
    async fn update_lease(
        &self,
        statement: &'static str,
        operation: &'static str,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        let row: Option<TaskRow> = sqlx::query_as(statement)
            .bind(id.as_str())
            .bind(worker)
            .bind(to_db(expires_at))
            .bind(to_db(now))
            .fetch_optional(&self.pool)
            .await
            .map_err(failed(operation))?;
        row.map(|row| row.into_record().map(|(record, _)| record)).transpose()
    }

    async fn append_all(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        events: Vec<TaskEventKind>,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        const OPERATION: &str = "updating a task";
        // Encoded here, by the caller; text PostgreSQL cannot store refuses the write only if
        // the condition holds (the writer decides).
        let events = events
            .into_iter()
            .map(|kind| {
                let encoded = sql::encode_storable(&kind, OPERATION);
                (kind, encoded)
            })
            .collect();
        let op = Op::Append {
            id: id.clone(),
            expected: expected.to_vec(),
            events,
            execution_owner: execution_owner.map(str::to_owned),
            now,
        };
        match self.writers.submit(op, OPERATION).await? {
            Outcome::Written(record) => Ok(record.map(|record| *record)),
            Outcome::Created(_) => {
                Err(StoreError::Unavailable(format!("{OPERATION}: the writer answered another write")))
            }
        }
    }

    async fn expired_active_leases(&self, now: Millis, count: usize) -> Result<Vec<TaskId>, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(sql::EXPIRED_ACTIVE_LEASES)
            .bind(to_db(now))
            .bind(sql::count_to_db(count))
            .fetch_all(&self.pool)
            .await
            .map_err(failed("finding tasks whose worker stopped"))?;
        Ok(ids.into_iter().map(TaskId::new).collect())
    }

    async fn events_since(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        after: u64,
    ) -> Result<Option<Vec<TaskEvent>>, StoreError> {
        const OPERATION: &str = "reading a task's events";
        let rows = sqlx::query(sql::EVENTS_SINCE)
            .bind(id.as_str())
            .bind(to_db(after))
            .fetch_all(&self.pool)
            .await
            .map_err(failed(OPERATION))?;
        let Some(first) = rows.first() else { return Ok(None) };
        let stored_owner: String = first.try_get("owner_hash").map_err(failed(OPERATION))?;
        if sql::parse_owner(&stored_owner)? != *owner {
            return Ok(None);
        }
        let mut events = Vec::with_capacity(rows.len());
        for row in rows {
            let sequence: Option<i64> = row.try_get("sequence").map_err(failed(OPERATION))?;
            let at: Option<i64> = row.try_get("at").map_err(failed(OPERATION))?;
            let kind: Option<Json<TaskEventKind>> = row.try_get("kind").map_err(failed(OPERATION))?;
            if let (Some(sequence), Some(at), Some(kind)) = (sequence, at, kind) {
                events.push(sql::event(id, sequence, at, kind));
            }
        }
        Ok(Some(events))
    }

    async fn subscribe(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<TaskWakeups>, StoreError> {
        // Subscribed before the task is read, so no change committed after this call is missed;
        // the last sequence read tells which changes the subscriber reads for itself.
        let (pending, receiver) = self.wakeups.subscribe(id).ok_or(StoreError::Closed)?;
        match self.owned_last_sequence(id, owner).await {
            Ok(Some(last_sequence)) => {
                self.wakeups.settle(pending, last_sequence);
                Ok(Some(TaskWakeups::new(id.clone(), receiver)))
            }
            refused => {
                self.wakeups.cancel(pending);
                refused.map(|_| None)
            }
        }
    }

    /// The sequence number of the last entry of the owner's task's log; `None` when the task does
    /// not exist or is another owner's.
    async fn owned_last_sequence(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<u64>, StoreError> {
        let found: Option<(String, i64)> = sqlx::query_as(sql::OWNER_AND_LAST_SEQUENCE)
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("subscribing to a task"))?;
        match found {
            Some((stored, last_sequence)) if sql::parse_owner(&stored)? == *owner => {
                Ok(Some(u64::try_from(last_sequence).unwrap_or(0)))
            }
            _ => Ok(None),
        }
    }

    /// Stores a push config in one transaction that locks its task's row first: the owner is
    /// checked, the cap counted and the cursor of a new config set ([`DeliverFrom::Now`]: the
    /// task's last sequence) while no other put and no append can change the task.
    async fn put_push_config(
        &self,
        owner: &OwnerHash,
        config: StoredPushConfig,
        from: DeliverFrom,
    ) -> Result<PushPut, StoreError> {
        const OPERATION: &str = "storing a push config";
        if config.id.contains('\0') {
            return Err(sql::nul_refused(OPERATION));
        }
        let mut tx = self.pool.begin().await.map_err(failed(OPERATION))?;
        let task: Option<(String, i64, bool)> = sqlx::query_as(sql::LOCK_FOR_PUSH_CONFIG)
            .bind(config.task_id.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed(OPERATION))?;
        let owned = match &task {
            Some((stored, _, _)) => sql::parse_owner(stored)? == *owner,
            None => false,
        };
        let Some((_, last_sequence, paid)) = task.filter(|_| owned) else {
            tx.rollback().await.map_err(failed(OPERATION))?;
            return Ok(PushPut::TaskNotFound);
        };
        let delivered = match from {
            DeliverFrom::Now => last_sequence,
            DeliverFrom::After(sequence) => to_db(sequence),
        };
        let stored: Option<String> = sqlx::query_scalar(sql::PUT_PUSH_CONFIG)
            .bind(config.task_id.as_str())
            .bind(config.id.as_str())
            .bind(config.sealed.as_slice())
            .bind(to_db(config.created_at))
            .bind(delivered)
            .bind(last_sequence)
            .bind(count_to_db(MAX_PUSH_CONFIGS_PER_TASK))
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed(OPERATION))?;
        if stored.is_none() {
            tx.rollback().await.map_err(failed(OPERATION))?;
            return Ok(PushPut::TooMany);
        }
        self.raise_durability_if(paid, &mut tx, OPERATION).await?;
        tx.commit().await.map_err(failed(OPERATION))?;
        Ok(PushPut::Stored)
    }

    /// Raises the transaction's commit to `synchronous_commit = on` when it writes for a paid
    /// task and the session's level is weaker.
    async fn raise_durability_if(
        &self,
        paid: bool,
        conn: &mut PgConnection,
        operation: &'static str,
    ) -> Result<(), StoreError> {
        if paid && !self.settings.sessions_flush {
            sqlx::query(sql::RAISE_DURABILITY).execute(conn).await.map_err(failed(operation))?;
        }
        Ok(())
    }

    async fn push_configs(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<Vec<StoredPushConfig>>, StoreError> {
        const OPERATION: &str = "reading a task's push configs";
        let rows =
            sqlx::query(sql::PUSH_CONFIGS).bind(id.as_str()).fetch_all(&self.pool).await.map_err(failed(OPERATION))?;
        let Some(first) = rows.first() else { return Ok(None) };
        let stored_owner: String = first.try_get("owner_hash").map_err(failed(OPERATION))?;
        if sql::parse_owner(&stored_owner)? != *owner {
            return Ok(None);
        }
        let mut configs = Vec::with_capacity(rows.len());
        for row in rows {
            let config_id: Option<String> = row.try_get("id").map_err(failed(OPERATION))?;
            let sealed: Option<Vec<u8>> = row.try_get("sealed").map_err(failed(OPERATION))?;
            let created_at: Option<i64> = row.try_get("created_at").map_err(failed(OPERATION))?;
            if let (Some(config_id), Some(sealed), Some(created_at)) = (config_id, sealed, created_at) {
                configs.push(StoredPushConfig {
                    task_id: id.clone(),
                    id: config_id,
                    sealed,
                    created_at: sql::from_db(created_at),
                });
            }
        }
        Ok(Some(configs))
    }

    async fn delete_push_config(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        config_id: &str,
    ) -> Result<Option<bool>, StoreError> {
        const OPERATION: &str = "deleting a push config";
        let stored: Option<(String, i64)> = sqlx::query_as(sql::OWNER_AND_LAST_SEQUENCE)
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(failed(OPERATION))?;
        match stored {
            Some((stored, _)) if sql::parse_owner(&stored)? == *owner => {}
            _ => return Ok(None),
        }
        // An id PostgreSQL cannot store names no stored config.
        if config_id.contains('\0') {
            return Ok(Some(false));
        }
        let deleted: Option<String> = sqlx::query_scalar(sql::DELETE_PUSH_CONFIG)
            .bind(id.as_str())
            .bind(config_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed(OPERATION))?;
        Ok(Some(deleted.is_some()))
    }

    /// Takes configs with updates to deliver: one statement ([`sql::CLAIM_PUSH_DELIVERIES`]), a
    /// transaction of its own on the pool.
    async fn claim_push_deliveries(
        &self,
        worker: &str,
        now: Millis,
        lease_until: Millis,
        limit: usize,
        events: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        const OPERATION: &str = "claiming push deliveries";
        if limit == 0 {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(sql::CLAIM_PUSH_DELIVERIES)
            .bind(worker)
            .bind(to_db(now))
            .bind(to_db(lease_until))
            .bind(count_to_db(limit))
            .bind(count_to_db(events))
            .fetch_all(&self.pool)
            .await
            .map_err(failed(OPERATION))?;
        let mut deliveries: Vec<PushDelivery> = Vec::new();
        for row in rows {
            let (task_id, config_id) = push_delivery_key(&row)?;
            let same = deliveries
                .last()
                .is_some_and(|last| last.config.task_id.as_str() == task_id && last.config.id == config_id);
            if !same {
                let sealed: Vec<u8> = row.try_get("sealed").map_err(failed(OPERATION))?;
                let created_at: i64 = row.try_get("created_at").map_err(failed(OPERATION))?;
                let attempts: i64 = row.try_get("attempts").map_err(failed(OPERATION))?;
                let context_id: Option<String> = row.try_get("context_id").map_err(failed(OPERATION))?;
                deliveries.push(PushDelivery {
                    config: StoredPushConfig {
                        task_id: TaskId::new(task_id),
                        id: config_id,
                        sealed,
                        created_at: sql::from_db(created_at),
                    },
                    context_id,
                    events: Vec::new(),
                    attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                });
            }
            let sequence: Option<i64> = row.try_get("sequence").map_err(failed(OPERATION))?;
            let at: Option<i64> = row.try_get("at").map_err(failed(OPERATION))?;
            let kind: Option<Json<TaskEventKind>> = row.try_get("kind").map_err(failed(OPERATION))?;
            if let (Some(delivery), Some(sequence), Some(at), Some(kind)) = (deliveries.last_mut(), sequence, at, kind)
            {
                let event = sql::event(&delivery.config.task_id, sequence, at, kind);
                delivery.events.push(event);
            }
        }
        Ok(deliveries)
    }

    /// Settles a delivery. Without a dead letter, one conditional `UPDATE` of the config. With
    /// one, a transaction that locks the task's row first (the order every writer and every put
    /// takes: task, then its configs), settles the config and appends the dead letter as any
    /// append is written ([`sql::WRITE_CHANGES`], which announces it).
    async fn settle_push_delivery(
        &self,
        task_id: &TaskId,
        config_id: &str,
        worker: &str,
        settle: PushSettle,
        now: Millis,
    ) -> Result<bool, StoreError> {
        const OPERATION: &str = "settling a push delivery";
        // Ids PostgreSQL cannot store name no stored config and no lease holder.
        if config_id.contains('\0') || worker.contains('\0') {
            return Ok(false);
        }
        let PushSettle { delivered_through, attempts, next_attempt_at, dead_letter } = settle;
        let settle_config = || {
            sqlx::query_scalar::<_, String>(sql::SETTLE_PUSH_DELIVERY)
                .bind(task_id.as_str())
                .bind(config_id)
                .bind(worker)
                .bind(to_db(delivered_through))
                .bind(i64::from(attempts))
                .bind(to_db(next_attempt_at))
        };
        let Some(dead_letter) = dead_letter else {
            let settled = settle_config().fetch_optional(&self.pool).await.map_err(failed(OPERATION))?;
            return Ok(settled.is_some());
        };
        let encoded = sql::encode_storable(&dead_letter, OPERATION)?;
        let mut tx = self.pool.begin().await.map_err(failed(OPERATION))?;
        let row: Option<TaskRow> = sqlx::query_as(sql::LOCK_ONE)
            .bind(task_id.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed(OPERATION))?;
        let settled = match row {
            Some(row) => settle_config().fetch_optional(&mut *tx).await.map_err(failed(OPERATION))?.map(|_| row),
            None => None,
        };
        let Some(row) = settled else {
            tx.rollback().await.map_err(failed(OPERATION))?;
            return Ok(false);
        };
        let mut locked = Locked::new(row)?;
        locked.append(&dead_letter, encoded, now);
        locked.keep_finished_once(&mut tx).await.map_err(failed(OPERATION))?;
        let mut changes = Changes::default();
        changes.push(&locked)?;
        changes.statement().execute(&mut *tx).await.map_err(failed(OPERATION))?;
        self.raise_durability_if(locked.record.payload.paid, &mut tx, OPERATION).await?;
        tx.commit().await.map_err(failed(OPERATION))?;
        Ok(true)
    }
}

/// The task id and config id of a row of [`sql::CLAIM_PUSH_DELIVERIES`].
fn push_delivery_key(row: &PgRow) -> Result<(String, String), StoreError> {
    let read = |column: &str| row.try_get::<String, _>(column).map_err(failed("claiming push deliveries"));
    Ok((read("task_id")?, read("id")?))
}

#[async_trait]
impl TaskStore for PostgresStore {
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
        self.shared.ensure_open()?;
        self.shared.create_limited(record, event, then, limits).await
    }

    /// Every state, summed from the per-owner counts the triggers keep (see the migrations): a few
    /// rows per owner, no task read.
    async fn count_by_state(&self) -> Result<Option<Vec<(TaskState, u64)>>, StoreError> {
        self.shared.ensure_open()?;
        let rows: Vec<(String, i64)> =
            sqlx::query_as(sql::COUNT_BY_STATE).fetch_all(&self.shared.pool).await.map_err(failed("counting tasks"))?;
        let counts = accord_engine::observe::STATES
            .iter()
            .copied()
            .map(|state| {
                let count = rows.iter().find(|(name, _)| name == state.as_str()).map_or(0, |(_, n)| *n);
                (state, u64::try_from(count).unwrap_or(0))
            })
            .collect();
        Ok(Some(counts))
    }

    async fn owner_of(&self, id: &TaskId) -> Result<Option<OwnerHash>, StoreError> {
        self.shared.ensure_open()?;
        // Always one row of the same shape — the owner, or a stand-in of the same length for a
        // missing task — so that both answers do the same work, down to the decoding.
        let (stored, found): (String, i64) = sqlx::query_as(sql::OWNER)
            .bind(id.as_str())
            .bind(sql::STAND_IN_OWNER)
            .fetch_one(&self.shared.pool)
            .await
            .map_err(failed("reading a task's owner"))?;
        let owner = sql::parse_owner(&stored)?;
        Ok((found > 0).then_some(owner))
    }

    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        self.shared.ensure_open()?;
        let now = now_ms();
        match self.shared.get(id).await? {
            // Abandoned work reads as what reaping makes of it, as in the in-memory store.
            Some(record) if due_for_reaping(&record, now) => {
                match self.shared.reap_these(&[id.as_str().to_owned()], now).await {
                    Ok(_) => self.shared.get(id).await,
                    Err(StoreError::Closed) => Err(StoreError::Closed),
                    Err(error) => {
                        tracing::warn!(%error, "reaping an abandoned task failed");
                        Ok(Some(record))
                    }
                }
            }
            found => Ok(found),
        }
    }

    async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.shared.ensure_open()?;
        self.shared.list(owner, query).await
    }

    async fn claim_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.update_lease(sql::CLAIM, "claiming a task", id, worker, expires_at, now).await
    }

    async fn take_over_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.update_lease(sql::TAKE_OVER, "taking a task over", id, worker, expires_at, now).await
    }

    async fn renew_execution_claim(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.update_lease(sql::RENEW, "renewing a task claim", id, worker, expires_at, now).await
    }

    async fn activate_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.update_lease(sql::ACTIVATE, "activating a task", id, worker, expires_at, now).await
    }

    async fn append_all(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        events: Vec<TaskEventKind>,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.append_all(id, expected, events, execution_owner, now).await
    }

    async fn reap_expired_admissions(&self, now: Millis) -> Result<usize, StoreError> {
        self.shared.ensure_open()?;
        self.shared.reap(now).await
    }

    async fn expired_active_leases(&self, now: Millis, limit: usize) -> Result<Vec<TaskId>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.expired_active_leases(now, limit).await
    }

    async fn events_since(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        after: u64,
    ) -> Result<Option<Vec<TaskEvent>>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.events_since(id, owner, after).await
    }

    async fn subscribe(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<TaskWakeups>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.subscribe(id, owner).await
    }

    async fn put_push_config(
        &self,
        owner: &OwnerHash,
        config: StoredPushConfig,
        from: DeliverFrom,
    ) -> Result<PushPut, StoreError> {
        self.shared.ensure_open()?;
        self.shared.put_push_config(owner, config, from).await
    }

    async fn push_configs(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<Vec<StoredPushConfig>>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.push_configs(id, owner).await
    }

    async fn delete_push_config(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        config_id: &str,
    ) -> Result<Option<bool>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.delete_push_config(id, owner, config_id).await
    }

    async fn claim_push_deliveries(
        &self,
        worker: &str,
        now: Millis,
        lease_until: Millis,
        limit: usize,
        events: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        self.shared.ensure_open()?;
        self.shared.claim_push_deliveries(worker, now, lease_until, limit, events).await
    }

    async fn settle_push_delivery(
        &self,
        task_id: &TaskId,
        config_id: &str,
        worker: &str,
        settle: PushSettle,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.shared.ensure_open()?;
        self.shared.settle_push_delivery(task_id, config_id, worker, settle, now).await
    }

    async fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
        self.stop_background();
        self.shared.writers.stop().await;
        self.shared.wakeups.close();
        self.shared.pool.close().await;
    }
}

/// The writer's connection settings: the store's, named for the writer, and kept to plain index
/// scans.
///
/// Every statement of the writer reads by key or by an index range, and the planner is told to
/// keep to them (`enable_seqscan = off` only makes a table scan the last resort). On a young or
/// fast-growing table PostgreSQL's statistics lag behind (they said nearly every task was
/// unfinished), and it counted the unfinished tasks for the capacity check by reading the whole
/// table at each create: about a millisecond per thousand tasks.
///
/// Nor does it take a bitmap scan (`enable_bitmapscan = off`): the counts of unfinished tasks
/// read the partial indexes of unfinished tasks, whose entries for tasks that ended stay until a
/// vacuum. An index scan marks the entries it finds dead so that later scans skip them; a bitmap
/// scan never does, and under load each count read thousands of them (1.5 ms, under the capacity
/// lock that every create waits for, to count 12 tasks; 0.05 ms with an index scan).
pub(crate) fn writer_options(options: &PgConnectOptions) -> PgConnectOptions {
    options
        .clone()
        .application_name(WRITER_APPLICATION_NAME)
        .options([("enable_seqscan", "off"), ("enable_bitmapscan", "off")])
}

#[cfg(test)]
impl PostgresStore {
    /// Starts recording, for each group the writers commit from now on, whether it wrote a paid
    /// task and the `synchronous_commit` level its transaction had just before `COMMIT`, as the
    /// server reports it.
    pub(crate) fn record_commit_levels(&self) {
        *self.shared.settings.commit_levels.lock().unwrap_or_else(PoisonError::into_inner) = Some(Vec::new());
    }

    /// The levels recorded since the last call.
    pub(crate) fn commit_levels(&self) -> Vec<(bool, String)> {
        let mut levels = self.shared.settings.commit_levels.lock().unwrap_or_else(PoisonError::into_inner);
        levels.as_mut().map(std::mem::take).unwrap_or_default()
    }
}
