//! A durable Accord task store in one SQLite file.
//!
//! [`SqliteStore`] implements the engine's [`TaskStore`](accord_engine::task::TaskStore)
//! contract with `durability() == Durability::Durable`: task records, their durable invocation
//! payloads, admission expiries, execution leases, results and errors, and their event logs
//! survive a restart of the process, and several processes may share the file.
//!
//! # Opening
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use accord_engine::task::TaskStore;
//! use accord_store_sqlite::{SqliteStore, SqliteStoreConfig};
//!
//! # async fn run() -> Result<(), accord_engine::task::StoreError> {
//! let store = SqliteStore::open(SqliteStoreConfig::new("accord-tasks.db")).await?;
//! let store: Arc<dyn TaskStore> = Arc::new(store);
//! # Ok(()) }
//! ```
//!
//! [`SqliteStore::open`] creates the file (and its directory) if missing, switches it to WAL
//! journaling, and applies the embedded migrations (`migrations/` in this crate) that it has
//! not applied yet; reopening is idempotent. No database URL or tool is needed at build time.
//!
//! # Guarantees
//!
//! - **Durable before return.** Every create, transition, lease change and reap is committed
//!   before the call returns. At the default `synchronous = NORMAL` ([`Synchronous::Normal`], in
//!   WAL mode) a change that returned survives a crash of the process (a SIGKILL, a panic, an
//!   out-of-memory kill); the last commits before a loss of power or a kernel crash may be lost.
//!   With [`Synchronous::Full`] (`accord serve --sync full`) the write-ahead log is synced at every
//!   commit, so a change that returned survives that too, at about a millisecond per commit
//!   (shared by the writes grouped in it). **Paid tasks** ([`TaskPayload::paid`](accord_engine::task::TaskPayload::paid)) are always
//!   committed as with `FULL`: below it, the store syncs the log after the group that holds a
//!   paid task's write and before anyone in that group is answered
//!   ([`SqliteStore::paid_syncs`] counts those syncs).
//! - **Atomic across processes.** Lease changes are single conditional
//!   `UPDATE … WHERE state, lease owner, lease expiry, admission … RETURNING` statements, and
//!   every write runs in a `BEGIN IMMEDIATE` transaction holding the database's write lock from
//!   its first read. Two processes sharing the file can therefore never both win a claim, and a
//!   stale worker's write is fenced by the lease owner it names.
//! - **The record is what its log says.** An event and the record it changes are written in one
//!   transaction, with the engine's [`apply_event`](accord_engine::task::apply_event).
//! - **Housekeeping.** Reservations whose admission expired without a claim and tasks whose
//!   prepared lease lapsed are cancelled, and terminal tasks past
//!   [`SqliteStoreConfig::retention`] (default 7 days) are deleted with their logs: when
//!   `reap_expired_admissions` is called (the runtime's recovery loop does, every 10 s), and
//!   before a `get` or `list` once something this process stored is due (or a second after the
//!   last look, for what other processes stored), so reads do not query for it each time.
//!   Capacity ([`SqliteStoreConfig::max_active_tasks`], unlimited by default) counts the tasks that
//!   have not ended; a create that would exceed it reaps first.
//! - **Push configs.** A task's push configs are kept beside it, their sealed bytes as given (never
//!   logged), and deleted with it (`ON DELETE CASCADE`, so retention's purge takes them). Storing,
//!   deleting, claiming and settling them are writes like the others, durable at the configured
//!   level before they return (not synced as paid work). A settlement's move of the cursor and
//!   its dead letter in the task's log are one transaction. Each config's copy of its task's
//!   latest log sequence is kept by a trigger in the transaction of every append, so a claim
//!   reads an index of the configs with something to deliver, whatever the number of idle ones.
//! - **Failures.** A write that waits longer than [`SqliteStoreConfig::busy_timeout`] for the
//!   lock, and any I/O or storage failure, fail with
//!   [`StoreError::Unavailable`](accord_engine::task::StoreError::Unavailable) and a message
//!   for operators that never contains an owner hash, a token or task data.
//! - **Wake-ups.** Subscribers in this process are woken after each committed change. For changes
//!   committed by another process sharing the file, each task with subscribers here is looked at
//!   every 2 seconds (its last log sequence, one primary-key read a task however many subscribe)
//!   and its subscribers are woken when it moved; they then re-read the event log, which is the
//!   source of truth. A subscriber waits for nothing else: idle subscriptions cost no reads.
//!
//! Only owner hashes (SHA-256 of access tokens) are stored, never tokens.
//!
//! # Concurrency and throughput
//!
//! Reads run in parallel on a pool of connections ([`SqliteStoreConfig::max_connections`]).
//! Writes of one store go to a single writer thread with its own connection, which groups the
//! writes queued while a commit is in flight into one `BEGIN IMMEDIATE` transaction and answers
//! each caller only after that transaction's `COMMIT` has returned: one commit (and one disk sync,
//! when there is one) serves many concurrent writes, and the durability promise is kept. Each
//! write checks and encodes everything before it changes anything, so a write refused or failing
//! on its own data is answered alone while the rest of its group commits; a driver or I/O failure
//! fails the whole group, none of which is committed. Copying the write-ahead log into the
//! database (checkpointing) runs on a thread of its own, beside the writes, 20 ms after a commit
//! (not at all while nothing is written), and never takes the write lock; once the log passes
//! 16 MiB, the writer copies the last of it between two groups so that the log starts over (a
//! pause of a few milliseconds, never a wait on a lock). Other processes' writers queue on
//! SQLite's write lock for up to the busy timeout.
//!
//! The runtime writes a task in as few steps as the contract allows: a task is reserved, claimed
//! and `working` in one write ([`TaskStore::create_with`](accord_engine::task::TaskStore)), and a
//! run's artifacts and result are one more
//! ([`TaskStore::append_all`](accord_engine::task::TaskStore)).
//!
//! The writer's connection is a synchronous one (`rusqlite`, linked to the same SQLite library as
//! the reads' `sqlx` pool), so that a whole group runs on the writer's thread in one hand-over;
//! through the async driver, each statement would be a hand-over between threads, which on a busy
//! server costs more than the statement.

mod config;
mod error;
mod rows;
mod store;
mod writer;

pub use config::{SqliteStoreConfig, Synchronous};
pub use store::SqliteStore;
