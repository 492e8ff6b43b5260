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
//!
//! The writer is a thread of its own with a synchronous connection (`rusqlite`, over the same
//! SQLite library as the reads' `sqlx` pool): a whole group — its transaction and every statement
//! of every write in it — runs in one hand-over from the async callers to the thread and back.
//! Through an async driver each statement is such a hand-over between threads, and on a busy
//! server those cost more than the statements themselves.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use accord_engine::TaskState;
use accord_engine::task::{
    DeliverFrom, ExecutionLease, LeasePhase, MAX_PUSH_CONFIGS_PER_TASK, Millis, OwnerHash, PushDelivery, PushPut,
    PushSettle, StoreError, StoredPushConfig, StoredTask, Task, TaskEvent, TaskEventKind, TaskId, WakeupHub,
    apply_event, apply_to_record, finished_head,
};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use crate::error::writer_error;
use crate::rows::{
    RecordColumns, decode_kind, phase_name, record_columns, record_from_columns, sql_time, to_json, unsigned,
};

/// The most writes grouped into one transaction.
const MAX_GROUP: usize = 128;
/// How many writes may wait for the writer before callers wait to queue theirs.
const QUEUE: usize = 4096;

/// A write, decided inside the writer's transaction.
#[derive(Debug)]
pub(crate) enum Op {
    /// A new record, its first log entry, and the entries that follow it applied, unless the id
    /// exists or the store is full (after reaping expired admissions).
    Create {
        record: Box<StoredTask>,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
        now: Millis,
        share: Option<usize>,
    },
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
    /// A push config stored for the owner's task, new or in place of the one with its id.
    PutPush { owner: OwnerHash, config: StoredPushConfig, from: DeliverFrom },
    /// One of the owner's task's push configs deleted.
    DeletePush { id: TaskId, owner: OwnerHash, config_id: String },
    /// Up to `limit` configs with updates to deliver taken for `worker` until `lease_until`, each
    /// with at most `events` log entries after its cursor.
    ClaimPush { worker: String, now: Millis, lease_until: Millis, limit: usize, events: usize },
    /// `worker`'s delivery of a config ended: its cursor, attempts and next attempt recorded, its
    /// lease given up, and a dead letter (if any) appended to the task's log.
    SettlePush { task_id: TaskId, config_id: String, worker: String, settle: PushSettle, now: Millis },
}

/// Why [`Op::Create`] refused a record.
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
    /// [`Op::Create`]: the record as stored, or why it was not.
    Created(Result<StoredTask, Refusal>),
    /// [`Op::Append`]: the record if the condition held.
    Written(Option<StoredTask>),
    /// [`Op::Lease`]: the record if the condition held.
    Leased(Option<StoredTask>),
    /// [`Op::Housekeep`]: how many tasks were reaped.
    Housekept(usize),
    /// [`Op::PutPush`]: whether the config was stored.
    PushPut(PushPut),
    /// [`Op::DeletePush`]: whether the config was there (`None`: not the owner's task).
    PushDeleted(Option<bool>),
    /// [`Op::ClaimPush`]: the deliveries taken.
    PushClaimed(Vec<PushDelivery>),
    /// [`Op::SettlePush`]: whether the worker held the config's lease.
    PushSettled(bool),
}

impl Outcome {
    /// Whether the write changed a paid task's row.
    fn paid(&self) -> bool {
        match self {
            Self::Created(Ok(record)) | Self::Written(Some(record)) | Self::Leased(Some(record)) => record.payload.paid,
            // Push configs and deliveries are not paid work: a dead letter lost with the last
            // commits before a power loss is lost with the settlement that wrote it, and the
            // delivery is tried (and given up on) again.
            _ => false,
        }
    }

    /// The kind of outcome, for reporting one that answered the wrong write without its data
    /// (a record's task data, a config's sealed bytes).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Created(_) => "created",
            Self::Written(_) => "written",
            Self::Leased(_) => "leased",
            Self::Housekept(_) => "housekept",
            Self::PushPut(_) => "push config stored",
            Self::PushDeleted(_) => "push config deleted",
            Self::PushClaimed(_) => "push deliveries claimed",
            Self::PushSettled(_) => "push delivery settled",
        }
    }
}

/// How the writer commits, and what it tells when it has.
pub(crate) struct Settings {
    pub(crate) busy_timeout: Duration,
    /// The `PRAGMA synchronous` level of the writer's connection.
    pub(crate) synchronous: &'static str,
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
    /// When the write-ahead log is copied into the database.
    pub(crate) checkpoints: CheckpointTiming,
}

/// When the write-ahead log is copied into the database: [`CHECKPOINT_EVERY`] and
/// [`RESTART_PAGES`] by default, tighter in tests.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CheckpointTiming {
    /// How long after a commit the checkpointer runs (it sleeps while nothing is written).
    pub(crate) every: Duration,
    /// The log size (in pages) past which the writer finishes a checkpoint.
    pub(crate) restart_pages: i64,
}

impl Default for CheckpointTiming {
    fn default() -> Self {
        Self { every: CHECKPOINT_EVERY, restart_pages: RESTART_PAGES }
    }
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

/// How long after a commit the checkpointer copies the write-ahead log into the database. Short,
/// so that each copy is short: on a server whose threads share one core, the requests behind a
/// copy wait for it, and a copy of 200 ms of writes ran for up to 5 ms at a time.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(20);
/// The log size (in pages) past which the writer finishes a checkpoint itself, so that the log
/// starts over: it only does once a checkpoint has copied all of it, which under steady writes
/// the checkpointer, copying beside them, never does.
const RESTART_PAGES: i64 = 4_096;
/// The log size (in pages) at which the writer checkpoints by itself: only when the checkpointer
/// falls far behind.
const WRITER_CHECKPOINT_PAGES: u32 = 65_536;
/// The page cache of the writer's connection, in KiB (SQLite's negative `cache_size`).
const WRITER_CACHE_KIB: i64 = 8_192;

/// The handle to the writer thread and its checkpointer.
pub(crate) struct Writer {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// What the checkpointer and the writer share.
    checkpoints: Arc<Checkpoints>,
    checkpointer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Why a write failed, before it is mapped to a [`StoreError`] with the name of the call.
enum Fault {
    /// A failure of the store's own (a corrupt row, a value that does not encode): this write
    /// changed nothing.
    Store(StoreError),
    /// SQLite failed: the group's transaction may be broken.
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for Fault {
    fn from(error: rusqlite::Error) -> Self {
        Self::Sqlite(error)
    }
}

impl From<StoreError> for Fault {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

impl Writer {
    /// Opens the writer's connection to the database at `path` and starts its thread.
    ///
    /// The writer leaves copying the write-ahead log into the database (checkpoints) to a thread
    /// of its own, which runs one [`CheckpointTiming::every`] after a commit on its own connection
    /// without blocking writes. When that thread finds the log past
    /// [`CheckpointTiming::restart_pages`], the writer copies what it left between two groups,
    /// so that the log starts over (see [`catch_up`]); SQLite's own checkpoint at
    /// [`WRITER_CHECKPOINT_PAGES`] stays as a backstop.
    pub(crate) fn start(path: &Path, settings: Settings) -> Result<Self, StoreError> {
        let opening = "opening the SQLite task store's writer";
        let failed = |error: rusqlite::Error| writer_error(&error, opening, settings.busy_timeout);
        let connection = open(path, &settings).map_err(failed)?;
        connection.pragma_update(None, "cache_size", -WRITER_CACHE_KIB).map_err(failed)?;
        connection.pragma_update(None, "wal_autocheckpoint", WRITER_CHECKPOINT_PAGES).map_err(failed)?;
        // A statement of a group that changes many pages keeps their old contents (to undo it
        // alone) in a statement journal, which SQLite otherwise spills to a temporary file once
        // it outgrows 64 KiB: a file created, written and deleted a few times a second.
        connection.pragma_update(None, "temp_store", "MEMORY").map_err(failed)?;
        let checkpointing = open(path, &settings).map_err(failed)?;
        let unable =
            |error: std::io::Error| StoreError::Unavailable(format!("cannot start the SQLite store's writer: {error}"));
        let checkpoints = Arc::new(Checkpoints {
            timing: settings.checkpoints,
            restart_due: AtomicBool::new(false),
            caught_up: AtomicU64::new(0),
            signal: CheckpointSignal::default(),
        });
        let checkpointer = {
            let checkpoints = Arc::clone(&checkpoints);
            std::thread::Builder::new()
                .name("accord-sqlite-checkpoint".into())
                .spawn(move || checkpoint_until_stopped(&checkpointing, &checkpoints))
                .map_err(unable)?
        };
        let (jobs, queue) = mpsc::channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("accord-sqlite-writer".into())
            .spawn({
                let checkpoints = Arc::clone(&checkpoints);
                move || run(connection, queue, &settings, &checkpoints)
            })
            .map_err(unable);
        let thread = match thread {
            Ok(thread) => thread,
            Err(error) => {
                checkpoints.signal.stop();
                return Err(error);
            }
        };
        Ok(Self {
            jobs: Mutex::new(Some(jobs)),
            thread: Mutex::new(Some(thread)),
            checkpoints,
            checkpointer: Mutex::new(Some(checkpointer)),
        })
    }

    /// Runs `op` in the next group and waits until that group has committed.
    pub(crate) async fn submit(&self, op: Op, what: &'static str) -> Result<Outcome, StoreError> {
        let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner).clone().ok_or(StoreError::Closed)?;
        let (reply, answer) = oneshot::channel();
        // The queue and the answer only break when the writer thread died (a bug).
        let stopped = || StoreError::Unavailable(format!("the SQLite store's writer stopped while {what}"));
        jobs.send(Job { op, what, reply }).await.map_err(|_| stopped())?;
        drop(jobs);
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// How many times the writer copied the last of the write-ahead log (see [`catch_up`]).
    #[cfg(test)]
    pub(crate) fn log_catch_ups(&self) -> u64 {
        self.checkpoints.caught_up.load(Ordering::Relaxed)
    }

    /// Lets the writer finish the writes already queued, then waits for it to close its
    /// connection.
    pub(crate) async fn stop(&self) {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner).take();
        let thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.checkpoints.signal.stop();
        let checkpointer = self.checkpointer.lock().unwrap_or_else(PoisonError::into_inner).take();
        let _ = tokio::task::spawn_blocking(move || {
            // A thread that panicked has nothing left to finish.
            if let Some(thread) = thread {
                let _ = thread.join();
            }
            if let Some(checkpointer) = checkpointer {
                let _ = checkpointer.join();
            }
        })
        .await;
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.checkpoints.signal.stop();
    }
}

/// What wakes the checkpointer (a commit) or stops it.
#[derive(Default)]
struct CheckpointSignal {
    state: Mutex<SignalState>,
    changed: Condvar,
}

#[derive(Default)]
struct SignalState {
    /// Something was committed since the checkpointer last ran.
    written: bool,
    stopped: bool,
}

impl CheckpointSignal {
    /// Called by the writer after each commit: wakes the checkpointer if it sleeps.
    fn written(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !state.written {
            state.written = true;
            self.changed.notify_one();
        }
    }

    fn stop(&self) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).stopped = true;
        self.changed.notify_all();
    }

    /// Waits for a commit, then `every` more, unless stopped: whether to run.
    fn wait(&self, every: Duration) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = self.changed.wait_while(state, |state| !state.written && !state.stopped);
        let state = state.unwrap_or_else(PoisonError::into_inner);
        let (mut state, _) = self
            .changed
            .wait_timeout_while(state, every, |state| !state.stopped)
            .unwrap_or_else(PoisonError::into_inner);
        state.written = false;
        !state.stopped
    }
}

/// What the checkpointer does, and how it tells the writer that the log should start over.
struct Checkpoints {
    timing: CheckpointTiming,
    /// Set when the log has grown past the timing's `restart_pages`; cleared by the writer once
    /// it has copied all of it.
    restart_due: AtomicBool,
    /// How many times the writer copied the last of the log.
    caught_up: AtomicU64,
    signal: CheckpointSignal,
}

/// Until stopped, [`CheckpointTiming::every`] after a commit (sleeping while nothing is written):
/// a passive checkpoint, which copies the log into the database and syncs it beside the writes,
/// never taking the write lock. Under steady writes it never copies all of the log (new writes
/// land while it runs), so the log, which only starts over from its beginning once all of it is
/// copied, would grow without end: past [`CheckpointTiming::restart_pages`] the checkpointer asks
/// the writer to copy the rest (see [`catch_up`]). A checkpoint that fails is logged and tried
/// again next time.
///
/// A `RESTART` checkpoint here would do the same, but it holds the write lock while it copies
/// and syncs, and the writer, finding it taken, sleeps in SQLite's busy handler in steps of 1,
/// 2, 5 and 10 ms: a stall of 8 to 18 ms for a checkpoint of 4 to 6 ms.
fn checkpoint_until_stopped(connection: &Connection, checkpoints: &Checkpoints) {
    while checkpoints.signal.wait(checkpoints.timing.every) {
        match passive_checkpoint(connection) {
            Ok(pass) if pass.log > checkpoints.timing.restart_pages => {
                checkpoints.restart_due.store(true, Ordering::Release);
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(target: "accord_store_sqlite", %error, "a write-ahead log checkpoint failed"),
        }
    }
}

/// What a checkpoint found and did.
struct Pass {
    /// Another connection's checkpoint was running: this one did nothing.
    busy: bool,
    /// Pages in the log.
    log: i64,
    /// Pages of the log now copied into the database.
    copied: i64,
}

impl Pass {
    /// Whether all of the log is in the database, so that the next write starts the log over.
    fn complete(&self) -> bool {
        !self.busy && self.log >= 0 && self.copied == self.log
    }
}

/// `PRAGMA wal_checkpoint(PASSIVE)`: copies as much of the log as no reader still needs and
/// syncs the database, without waiting for any lock.
fn passive_checkpoint(connection: &Connection) -> rusqlite::Result<Pass> {
    connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok(Pass { busy: row.get::<_, i64>(0)? != 0, log: row.get(1)?, copied: row.get(2)? })
    })
}

/// The writer's part of restarting the log, between two groups when the checkpointer asked for
/// it: a passive checkpoint on the writer's connection. With no write in flight it copies all of
/// the log that the checkpointer left (what was written since its last pass began) unless a
/// reader still reads an older snapshot; then the next group's write starts the log over. The
/// writer pauses for that copy and its two syncs (a few milliseconds) but never waits for a lock.
/// When it could not copy everything (a reader, or the checkpointer running), it tries again
/// after the next group.
fn catch_up(connection: &Connection, checkpoints: &Checkpoints) {
    match passive_checkpoint(connection) {
        Ok(pass) if pass.complete() => {
            checkpoints.restart_due.store(false, Ordering::Release);
            checkpoints.caught_up.fetch_add(1, Ordering::Relaxed);
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(target: "accord_store_sqlite", %error, "a write-ahead log checkpoint failed"),
    }
}

/// The writer's connection, set up as the reads' pool is.
fn open(path: &Path, settings: &Settings) -> Result<Connection, rusqlite::Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags)?;
    connection.busy_timeout(settings.busy_timeout)?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", settings.synchronous)?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    connection.set_prepared_statement_cache_capacity(64);
    Ok(connection)
}

fn run(mut connection: Connection, mut queue: mpsc::Receiver<Job>, settings: &Settings, checkpoints: &Checkpoints) {
    while let Some(first) = queue.blocking_recv() {
        let mut group = Vec::with_capacity(MAX_GROUP);
        group.push(first);
        if queue.is_empty() {
            // Alone so far: let the threads that are about to queue a write (the callers the
            // last group answered, say) run first, so that their writes join this group instead
            // of each waiting for a commit of its own. Where they run on other cores this costs
            // one system call; where they share this thread's core (the harness's runs), it made
            // a third fewer commits, nearly none of them of a single write.
            std::thread::yield_now();
        }
        while group.len() < MAX_GROUP
            && let Ok(job) = queue.try_recv()
        {
            group.push(job);
        }
        metrics::histogram!(accord_engine::observe::COMMIT_BATCH_SIZE, "store" => "sqlite").record(group.len() as f64);
        let (ops, replies): (Vec<_>, Vec<_>) = group.into_iter().map(|job| ((job.op, job.what), job.reply)).unzip();
        let mut changed = Vec::new();
        let mut answers = commit_group(&mut connection, ops, settings, &mut changed);
        if let Some(wal) = &settings.wal_to_sync
            && answers.iter().any(|answer| answer.as_ref().is_ok_and(Outcome::paid))
            && let Err(error) = sync_file(wal, &settings.paid_syncs)
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
        checkpoints.signal.written();
        if checkpoints.restart_due.load(Ordering::Acquire) {
            catch_up(&connection, checkpoints);
        }
    }
    if let Err((_, error)) = connection.close() {
        tracing::warn!(target: "accord_store_sqlite", %error, "closing the SQLite writer connection failed");
    }
}

/// Syncs a file's data to disk, and counts it.
fn sync_file(path: &Path, syncs: &AtomicU64) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_data()?;
    syncs.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Runs a group of writes in one transaction; one answer per write, in order. The ids of the tasks
/// whose logs grew go to `changed` once the group has committed.
fn commit_group(
    connection: &mut Connection,
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
    let mut tx = match connection.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(error) => return fail_all(writer_error(&error, what, busy_timeout)),
    };
    let mut answers = Vec::with_capacity(count);
    let mut grown = Vec::new();
    for (op, what) in ops {
        let attempt = match op {
            // Alone in its group, a lease update needs no savepoint: the transaction is its own.
            Op::Lease { .. } if count > 1 => in_savepoint(&mut tx, op, settings, &mut grown),
            op => execute(&tx, op, settings, &mut grown),
        };
        match attempt {
            Ok(outcome) => answers.push(Ok(outcome)),
            // The store's own refusal or a corrupt row: nothing of this write was changed.
            Err(Fault::Store(error)) => answers.push(Err(error)),
            // The transaction may be broken: commit nothing of the group (dropping it rolls back).
            Err(Fault::Sqlite(error)) => return fail_all(writer_error(&error, what, busy_timeout)),
        }
    }
    match tx.commit() {
        Ok(()) => {
            changed.append(&mut grown);
            answers
        }
        Err(error) => fail_all(writer_error(&error, what, busy_timeout)),
    }
}

/// Runs `op` in a savepoint that is undone when the op fails on its own data.
fn in_savepoint(
    connection: &mut rusqlite::Transaction<'_>,
    op: Op,
    settings: &Settings,
    grown: &mut Vec<TaskId>,
) -> Result<Outcome, Fault> {
    let savepoint = connection.savepoint()?;
    match execute(&savepoint, op, settings, grown) {
        Ok(outcome) => {
            savepoint.commit()?;
            Ok(outcome)
        }
        // Dropping the savepoint rolls it back.
        Err(fault) => Err(fault),
    }
}

fn execute(connection: &Connection, op: Op, settings: &Settings, grown: &mut Vec<TaskId>) -> Result<Outcome, Fault> {
    match op {
        Op::Create { record, event, then, now, share } => {
            create(connection, *record, &event, &then, now, share, settings, grown)
        }
        Op::Append { id, expected, events, execution_owner, now } => {
            let record = append(connection, &id, &expected, events, execution_owner.as_deref(), now, grown)?;
            if let Some(record) = &record {
                settings.note_due(record);
            }
            Ok(Outcome::Written(record))
        }
        Op::Lease { sql, id, worker, expires_at, now } => {
            let mut statement = connection.prepare_cached(sql)?;
            let columns = statement
                .query_row((id.as_str(), worker.as_str(), sql_time(expires_at), sql_time(now)), record_row)
                .optional()?;
            let record = columns.map(record_from_columns).transpose()?;
            if let Some(record) = &record {
                settings.note_due(record);
            }
            Ok(Outcome::Leased(record))
        }
        Op::Housekeep { now, purge_cutoff } => {
            let reaped = reap(connection, now, grown)?;
            purge(connection, purge_cutoff)?;
            Ok(Outcome::Housekept(reaped))
        }
        Op::PutPush { owner, config, from } => Ok(Outcome::PushPut(put_push(connection, &owner, config, from)?)),
        Op::DeletePush { id, owner, config_id } => {
            Ok(Outcome::PushDeleted(delete_push(connection, &id, &owner, &config_id)?))
        }
        Op::ClaimPush { worker, now, lease_until, limit, events } => {
            Ok(Outcome::PushClaimed(claim_push(connection, &worker, now, lease_until, limit, events)?))
        }
        Op::SettlePush { task_id, config_id, worker, settle, now } => Ok(Outcome::PushSettled(settle_push(
            connection, &task_id, &config_id, &worker, settle, now, settings, grown,
        )?)),
    }
}

/// The columns of [`record_columns`] from a row.
fn record_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RecordColumns> {
    Ok(RecordColumns {
        owner: row.get("owner_hash")?,
        task: row.get("task")?,
        payload: row.get("payload")?,
        admission: row.get("admission_expires_at")?,
        lease_owner: row.get("lease_owner")?,
        lease_expires_at: row.get("lease_expires_at")?,
        lease_phase: row.get("lease_phase")?,
        log: row.get("log")?,
    })
}

/// The `task` column of a task about to be written with `new` appended to its log (numbered from
/// `first`), and whether the row keeps the task's body in its log: a finished task whose log
/// rebuilds its status message, result, artifacts and history keeps only the rest
/// ([`finished_head`]), so that each is stored once; any other task is kept whole.
fn stored_task(
    connection: &Connection,
    task: &Task,
    new: &[TaskEventKind],
    first: i64,
) -> Result<(String, bool), Fault> {
    if !task.state.is_terminal() {
        return Ok((encode(task, "task")?, false));
    }
    let stored = connection
        .prepare_cached("SELECT sequence, kind FROM task_events WHERE task_id = ?1 ORDER BY sequence")?
        .query_map([task.id.as_str()], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    let mut logged = Vec::with_capacity(stored.len());
    for (sequence, kind) in &stored {
        logged.push((unsigned(*sequence), decode_kind(kind)?));
    }
    let log = logged
        .iter()
        .map(|(sequence, kind)| (*sequence, kind))
        .chain(new.iter().zip(first..).map(|(kind, sequence)| (unsigned(sequence), kind)));
    Ok(match finished_head(task, log) {
        Some(head) => (encode(&head, "task")?, true),
        None => (encode(task, "task")?, false),
    })
}

fn encode(value: &impl serde::Serialize, column: &str) -> Result<String, Fault> {
    Ok(to_json(serde_json::to_string(value), column)?)
}

#[allow(clippy::too_many_arguments)]
fn create(
    connection: &Connection,
    mut record: StoredTask,
    event: &TaskEventKind,
    then: &[TaskEventKind],
    now: Millis,
    share: Option<usize>,
    settings: &Settings,
    grown: &mut Vec<TaskId>,
) -> Result<Outcome, Fault> {
    // Everything is encoded before the first change.
    let mut kinds = Vec::with_capacity(1 + then.len());
    kinds.push(encode(event, "task_events.kind")?);
    for kind in then {
        kinds.push(encode(kind, "task_events.kind")?);
        apply_to_record(&mut record, kind, now);
    }
    // A task created already ended (its handler ran before it was stored) keeps its body in its
    // log, as a task that ends later does.
    let log = std::iter::once(event).chain(then).zip(1..).map(|(kind, sequence)| (sequence, kind));
    let (task, body_in_log) = match record.task.state.is_terminal().then(|| finished_head(&record.task, log)).flatten()
    {
        Some(head) => (encode(&head, "task")?, true),
        None => (encode(&record.task, "task")?, false),
    };
    // A finished task's input goes with its body, as in `write_change`.
    if body_in_log {
        record.payload.input = serde_json::Value::Null;
    }
    let payload = encode(&record.payload, "payload")?;
    let owner = record.owner.to_hex();
    // The id is checked first: a duplicate is a duplicate whatever the room.
    let exists = connection
        .prepare_cached("SELECT 1 FROM tasks WHERE id = ?1")?
        .query_row([record.task.id.as_str()], |_| Ok(()))
        .optional()?
        .is_some();
    if exists {
        return Ok(Outcome::Created(Err(Refusal::Duplicate)));
    }
    if let Some(share) = share
        && unfinished_of(connection, &owner)? >= share
        // Abandoned reservations make room before the share is enforced, as for capacity.
        && (reap(connection, now, grown)? == 0 || unfinished_of(connection, &owner)? >= share)
    {
        return Ok(Outcome::Created(Err(Refusal::Share(share))));
    }
    if let Some(capacity) = settings.capacity
        && unfinished(connection)? >= capacity
        // Abandoned reservations make room before the limit is enforced.
        && (reap(connection, now, grown)? == 0 || unfinished(connection)? >= capacity)
    {
        return Ok(Outcome::Created(Err(Refusal::Full(capacity))));
    }
    let id = &record.task.id;
    let lease = record.lease.as_ref();
    let inserted = connection
        .prepare_cached(
            "INSERT INTO tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload,
                                admission_expires_at, lease_owner, lease_expires_at, lease_phase, last_sequence,
                                skill, body_in_log)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
             ON CONFLICT (id) DO NOTHING",
        )?
        .execute(rusqlite::params![
            id.as_str(),
            owner,
            record.task.context_id.as_deref(),
            record.task.state.as_str(),
            sql_time(record.task.created_at),
            sql_time(record.task.updated_at),
            task,
            payload,
            record.admission_expires_at.map(sql_time),
            lease.map(|lease| lease.owner_id.as_str()),
            lease.map(|lease| sql_time(lease.expires_at)),
            lease.map(|lease| phase_name(lease.phase)),
            i64::try_from(kinds.len()).unwrap_or(i64::MAX),
            record.task.skill.as_str(),
            body_in_log,
        ])?;
    if inserted == 0 {
        return Ok(Outcome::Created(Err(Refusal::Duplicate)));
    }
    // The first entry is dated with the task's creation, the ones after it with the store's clock.
    insert_events(connection, id, 1, (record.task.created_at, now), kinds)?;
    settings.note_due(&record);
    grown.push(id.clone());
    Ok(Outcome::Created(Ok(record)))
}

/// How many tasks have not ended (from the counts the triggers keep).
fn unfinished(connection: &Connection) -> Result<usize, Fault> {
    sum_unfinished(connection.prepare_cached("SELECT state, n FROM task_counts")?.query([])?)
}

/// How many tasks of `owner` (its hex hash) have not ended (from the counts the triggers keep).
fn unfinished_of(connection: &Connection, owner: &str) -> Result<usize, Fault> {
    sum_unfinished(connection.prepare_cached("SELECT state, n FROM task_counts WHERE owner_hash = ?1")?.query([owner])?)
}

/// The sum of the counts of unfinished states among `(state, n)` rows. Added up here rather than
/// by the query: SQLite builds a temporary table for each `state IN (…)` of more than two names,
/// at each run of the statement, which would cost more than the handful of rows read here.
fn sum_unfinished(mut rows: rusqlite::Rows<'_>) -> Result<usize, Fault> {
    const UNFINISHED: [&str; 4] = ["submitted", "working", "input_required", "auth_required"];
    let mut sum: i64 = 0;
    while let Some(row) = rows.next()? {
        if UNFINISHED.contains(&row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?) {
            sum = sum.saturating_add(row.get::<_, i64>(1)?);
        }
    }
    Ok(usize::try_from(sum).unwrap_or(usize::MAX))
}

fn append(
    connection: &Connection,
    id: &TaskId,
    expected: &[TaskState],
    events: Vec<TaskEventKind>,
    execution_owner: Option<&str>,
    now: Millis,
    grown: &mut Vec<TaskId>,
) -> Result<Option<StoredTask>, Fault> {
    let row = connection
        .prepare_cached(concat!("SELECT last_sequence, ", record_columns!(), " FROM tasks WHERE id = ?1"))?
        .query_row([id.as_str()], |row| Ok((row.get::<_, i64>("last_sequence")?, record_row(row)?)))
        .optional()?;
    let Some((last_sequence, columns)) = row else { return Ok(None) };
    let mut record = record_from_columns(columns)?;
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
        kinds.push(encode(event, "task_events.kind")?);
        apply_to_record(&mut record, event, now);
    }
    let (task, body_in_log) = stored_task(connection, &record.task, &events, last_sequence + 1)?;
    write_change(
        connection,
        &record.task,
        (&task, body_in_log),
        record.lease.as_ref(),
        record.admission_expires_at,
        last_sequence + 1,
        now,
        kinds,
    )?;
    grown.push(id.clone());
    Ok(Some(record))
}

/// Cancels, with a status event each, the tasks whose admission expired without a claim and
/// those whose prepared lease lapsed; clears both fields. Returns how many.
fn reap(connection: &Connection, now: Millis, grown: &mut Vec<TaskId>) -> Result<usize, Fault> {
    let rows = connection
        .prepare_cached(
            "SELECT id, task, last_sequence FROM tasks
             WHERE admission_expires_at <= ?1 AND lease_owner IS NULL AND terminal = 0
             UNION ALL
             SELECT id, task, last_sequence FROM tasks
             WHERE lease_phase = 'prepared' AND lease_expires_at <= ?1 AND terminal = 0",
        )?
        .query_map([sql_time(now)], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, i64>(2)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let cancel = TaskEventKind::Status { state: TaskState::Canceled, message: None };
    let kind = encode(&cancel, "task_events.kind")?;
    // Decoded and encoded before the first change.
    let mut changes = Vec::with_capacity(rows.len());
    for (id, task, last_sequence) in rows {
        let mut task = crate::rows::decode_task(&task)?;
        apply_event(&mut task, &cancel, now);
        let json = stored_task(connection, &task, std::slice::from_ref(&cancel), last_sequence + 1)?;
        changes.push((TaskId::new(id), task, json, last_sequence + 1));
    }
    let reaped = changes.len();
    for (id, task, (json, body_in_log), sequence) in changes {
        write_change(connection, &task, (&json, body_in_log), None, None, sequence, now, vec![kind.clone()])?;
        grown.push(id);
    }
    Ok(reaped)
}

/// Deletes terminal tasks last changed at or before `cutoff`, with their logs and push configs
/// (both go by `ON DELETE CASCADE`).
fn purge(connection: &Connection, cutoff: i64) -> Result<(), Fault> {
    if cutoff >= 0 {
        connection.prepare_cached("DELETE FROM tasks WHERE terminal = 1 AND updated_at <= ?1")?.execute([cutoff])?;
    }
    Ok(())
}

/// A count or sequence number as SQLite binds it (clamped, like times).
fn sql_integer(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// The task's latest log sequence, when the task exists and is `owner`'s.
fn owned_task(connection: &Connection, id: &TaskId, owner: &OwnerHash) -> Result<Option<i64>, Fault> {
    let row = connection
        .prepare_cached("SELECT owner_hash, last_sequence FROM tasks WHERE id = ?1")?
        .query_row([id.as_str()], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))
        .optional()?;
    // Compared as hashes, in constant time.
    Ok(row.and_then(|(stored, latest)| {
        OwnerHash::from_hex(&stored).is_some_and(|stored| stored == *owner).then_some(latest)
    }))
}

/// Stores `config` for the owner's task: in place of the config with its id (whose creation time,
/// cursor, attempts, next attempt and lease stay), or as a new one whose cursor starts as `from`
/// says and which may be taken at once. Every refusal is decided before the first change.
fn put_push(
    connection: &Connection,
    owner: &OwnerHash,
    config: StoredPushConfig,
    from: DeliverFrom,
) -> Result<PushPut, Fault> {
    let Some(latest) = owned_task(connection, &config.task_id, owner)? else { return Ok(PushPut::TaskNotFound) };
    let task_id = config.task_id.as_str();
    let replaced = connection
        .prepare_cached("UPDATE push_configs SET sealed = ?3 WHERE task_id = ?1 AND id = ?2")?
        .execute(rusqlite::params![task_id, config.id, config.sealed])?;
    if replaced > 0 {
        return Ok(PushPut::Stored);
    }
    let count: i64 = connection
        .prepare_cached("SELECT COUNT(*) FROM push_configs WHERE task_id = ?1")?
        .query_row([task_id], |row| row.get(0))?;
    if usize::try_from(count).unwrap_or(usize::MAX) >= MAX_PUSH_CONFIGS_PER_TASK {
        return Ok(PushPut::TooMany);
    }
    let delivered = match from {
        DeliverFrom::Now => latest,
        DeliverFrom::After(sequence) => sql_integer(sequence),
    };
    connection
        .prepare_cached(
            "INSERT INTO push_configs (task_id, id, sealed, created_at, delivered, latest, attempts, next_attempt_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?4)",
        )?
        .execute(rusqlite::params![
            task_id,
            config.id,
            config.sealed,
            sql_time(config.created_at),
            delivered,
            latest
        ])?;
    Ok(PushPut::Stored)
}

/// Deletes one of the owner's task's push configs: whether it was there, `None` when the task is
/// not the owner's.
fn delete_push(
    connection: &Connection,
    id: &TaskId,
    owner: &OwnerHash,
    config_id: &str,
) -> Result<Option<bool>, Fault> {
    if owned_task(connection, id, owner)?.is_none() {
        return Ok(None);
    }
    let deleted = connection
        .prepare_cached("DELETE FROM push_configs WHERE task_id = ?1 AND id = ?2")?
        .execute([id.as_str(), config_id])?;
    Ok(Some(deleted > 0))
}

/// A config with updates to deliver, as [`claim_push`] reads it.
struct Due {
    config: StoredPushConfig,
    context_id: Option<String>,
    delivered: i64,
    attempts: i64,
}

/// Takes up to `limit` configs with updates to deliver for `worker` until `lease_until`: behind
/// their task's log, due, and held by no live lease, longest-waiting first (the pending index
/// holds only the configs behind their log). Each comes with at most `events` entries after its
/// cursor. Everything is read and decoded before the first lease is written.
fn claim_push(
    connection: &Connection,
    worker: &str,
    now: Millis,
    lease_until: Millis,
    limit: usize,
    events: usize,
) -> Result<Vec<PushDelivery>, Fault> {
    let due = connection
        .prepare_cached(
            "SELECT p.task_id, p.id, p.sealed, p.created_at, p.delivered, p.attempts, t.context_id
             FROM push_configs p JOIN tasks t ON t.id = p.task_id
             WHERE p.delivered < p.latest AND p.next_attempt_at <= ?1
               AND (p.lease_until IS NULL OR p.lease_until <= ?1)
             ORDER BY p.next_attempt_at, p.task_id, p.id
             LIMIT ?2",
        )?
        .query_map(rusqlite::params![sql_time(now), sql_integer(limit)], |row| {
            Ok(Due {
                config: StoredPushConfig {
                    task_id: TaskId::new(row.get::<_, String>(0)?),
                    id: row.get(1)?,
                    sealed: row.get(2)?,
                    created_at: unsigned(row.get(3)?),
                },
                delivered: row.get(4)?,
                attempts: row.get(5)?,
                context_id: row.get(6)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut deliveries = Vec::with_capacity(due.len());
    let mut pending = connection.prepare_cached(
        "SELECT sequence, at, kind FROM task_events WHERE task_id = ?1 AND sequence > ?2 ORDER BY sequence LIMIT ?3",
    )?;
    for Due { config, context_id, delivered, attempts } in due {
        let rows = pending
            .query_map(rusqlite::params![config.task_id.as_str(), delivered, sql_integer(events)], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get::<_, String>(2)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut entries = Vec::with_capacity(rows.len());
        for (sequence, at, kind) in rows {
            entries.push(TaskEvent {
                task_id: config.task_id.clone(),
                sequence: unsigned(sequence),
                at: unsigned(at),
                kind: decode_kind(&kind)?,
            });
        }
        let attempts = u32::try_from(attempts.max(0)).unwrap_or(u32::MAX);
        deliveries.push(PushDelivery { config, context_id, events: entries, attempts });
    }
    let mut lease = connection
        .prepare_cached("UPDATE push_configs SET lease_worker = ?3, lease_until = ?4 WHERE task_id = ?1 AND id = ?2")?;
    for delivery in &deliveries {
        let config = &delivery.config;
        lease.execute(rusqlite::params![config.task_id.as_str(), config.id, worker, sql_time(lease_until)])?;
    }
    Ok(deliveries)
}

/// Ends `worker`'s delivery of a config: its cursor moves forward to `delivered_through` (never
/// back), its attempts and next attempt are recorded and its lease goes; a dead letter is appended
/// to the task's log and applied with [`apply_to_record`] (only the task's version changes).
/// Refused (`false`, nothing changed) when the config is gone or `worker` does not hold its
/// lease. The dead letter's change is worked out and encoded before the first change.
#[allow(clippy::too_many_arguments)]
fn settle_push(
    connection: &Connection,
    task_id: &TaskId,
    config_id: &str,
    worker: &str,
    settle: PushSettle,
    now: Millis,
    settings: &Settings,
    grown: &mut Vec<TaskId>,
) -> Result<bool, Fault> {
    let held = connection
        .prepare_cached("SELECT 1 FROM push_configs WHERE task_id = ?1 AND id = ?2 AND lease_worker = ?3")?
        .query_row([task_id.as_str(), config_id, worker], |_| Ok(()))
        .optional()?
        .is_some();
    if !held {
        return Ok(false);
    }
    let dead_letter = match &settle.dead_letter {
        None => None,
        Some(dead_letter) => {
            let row = connection
                .prepare_cached(concat!("SELECT last_sequence, ", record_columns!(), " FROM tasks WHERE id = ?1"))?
                .query_row([task_id.as_str()], |row| Ok((row.get::<_, i64>("last_sequence")?, record_row(row)?)))
                .optional()?;
            // A config goes with its task: a config without one is as good as gone.
            let Some((last_sequence, columns)) = row else { return Ok(false) };
            let mut record = record_from_columns(columns)?;
            let kind = encode(dead_letter, "task_events.kind")?;
            apply_to_record(&mut record, dead_letter, now);
            let task = stored_task(connection, &record.task, std::slice::from_ref(dead_letter), last_sequence + 1)?;
            Some((record, task, kind, last_sequence + 1))
        }
    };
    connection
        .prepare_cached(
            "UPDATE push_configs
             SET delivered = MAX(delivered, ?3), attempts = ?4, next_attempt_at = ?5,
                 lease_worker = NULL, lease_until = NULL
             WHERE task_id = ?1 AND id = ?2",
        )?
        .execute(rusqlite::params![
            task_id.as_str(),
            config_id,
            sql_integer(settle.delivered_through),
            settle.attempts,
            sql_time(settle.next_attempt_at),
        ])?;
    if let Some((record, task, kind, sequence)) = dead_letter {
        write_change(
            connection,
            &record.task,
            (&task.0, task.1),
            record.lease.as_ref(),
            record.admission_expires_at,
            sequence,
            now,
            vec![kind],
        )?;
        settings.note_due(&record);
        grown.push(task_id.clone());
    }
    Ok(true)
}

/// Writes a changed record (its task already encoded as `task_json`) and appends its events
/// (already encoded), numbered from `first`.
#[allow(clippy::too_many_arguments)]
fn write_change(
    connection: &Connection,
    task: &Task,
    (task_json, body_in_log): (&str, bool),
    lease: Option<&ExecutionLease>,
    admission_expires_at: Option<Millis>,
    first: i64,
    at: Millis,
    kinds: Vec<String>,
) -> Result<(), Fault> {
    let last = first + i64::try_from(kinds.len()).unwrap_or(i64::MAX) - 1;
    // A row that keeps its body in its log is a finished task's: its input goes with it.
    connection
        .prepare_cached(
            "UPDATE tasks
             SET state = ?2, updated_at = ?3, task = ?4, admission_expires_at = ?5,
                 lease_owner = ?6, lease_expires_at = ?7, lease_phase = ?8, last_sequence = ?9,
                 body_in_log = ?10,
                 payload = CASE WHEN ?10 = 1 THEN json_replace(payload, '$.input', json('null')) ELSE payload END
             WHERE id = ?1",
        )?
        .execute(rusqlite::params![
            task.id.as_str(),
            task.state.as_str(),
            sql_time(task.updated_at),
            task_json,
            admission_expires_at.map(sql_time),
            lease.map(|lease| lease.owner_id.as_str()),
            lease.map(|lease| sql_time(lease.expires_at)),
            lease.map(|lease| phase_name(lease.phase)),
            last,
            body_in_log,
        ])?;
    insert_events(connection, &task.id, first, (at, at), kinds)
}

/// Appends log entries (their kinds already encoded) numbered from `first`, in one statement: the
/// first dated `at.0`, the others `at.1`.
fn insert_events(
    connection: &Connection,
    id: &TaskId,
    first: i64,
    (first_at, at): (Millis, Millis),
    kinds: Vec<String>,
) -> Result<(), Fault> {
    let mut sql = String::from("INSERT INTO task_events (task_id, sequence, at, kind) VALUES ");
    let mut values = Vec::with_capacity(4 * kinds.len());
    for (index, (kind, sequence)) in kinds.into_iter().zip(first..).enumerate() {
        sql.push_str(if index == 0 { "(?, ?, ?, ?)" } else { ", (?, ?, ?, ?)" });
        let at = if index == 0 { first_at } else { at };
        values.extend([
            SqlValue::Text(id.as_str().to_owned()),
            SqlValue::Integer(sequence),
            SqlValue::Integer(sql_time(at)),
            SqlValue::Text(kind),
        ]);
    }
    connection.prepare_cached(&sql)?.execute(rusqlite::params_from_iter(values))?;
    Ok(())
}
