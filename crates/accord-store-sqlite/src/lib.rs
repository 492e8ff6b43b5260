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
//!   before the call returns; with the default `synchronous = FULL`
//!   ([`Synchronous::Full`]) the write-ahead log is synced to disk at every commit, so a change
//!   that returned survives a crash of the process or of the machine.
//! - **Atomic across processes.** Lease changes are single conditional
//!   `UPDATE … WHERE state, lease owner, lease expiry, admission … RETURNING` statements, and
//!   every write runs in a `BEGIN IMMEDIATE` transaction holding the database's write lock from
//!   its first read. Two processes sharing the file can therefore never both win a claim, and a
//!   stale worker's write is fenced by the lease owner it names.
//! - **The record is what its log says.** An event and the record it changes are written in one
//!   transaction, with the engine's [`apply_event`](accord_engine::task::apply_event).
//! - **Housekeeping.** Before `create`, `get`, `list` and `compare_and_set`, reservations whose
//!   admission expired without a claim and tasks whose prepared lease lapsed are cancelled, and
//!   terminal tasks past [`SqliteStoreConfig::retention`] (default 7 days) are deleted with their
//!   logs. Capacity ([`SqliteStoreConfig::max_active_tasks`], unlimited by default) counts the
//!   tasks that have not ended, after that reaping.
//! - **Failures.** A write that waits longer than [`SqliteStoreConfig::busy_timeout`] for the
//!   lock, and any I/O or storage failure, fail with
//!   [`StoreError::Unavailable`](accord_engine::task::StoreError::Unavailable) and a message
//!   for operators that never contains an owner hash, a token or task data.
//! - **Wake-ups.** Subscribers in this process are woken after each committed change. A change
//!   committed by another process wakes no one here: a subscriber notices it when its wait times
//!   out and it re-reads the event log, which is the source of truth.
//!
//! Only owner hashes (SHA-256 of access tokens) are stored, never tokens.
//!
//! # Concurrency and throughput
//!
//! Reads run in parallel on a pool of connections ([`SqliteStoreConfig::max_connections`]).
//! Writes of one store go to a single writer task with its own connection, which groups the
//! writes queued while a commit is in flight into one `BEGIN IMMEDIATE` transaction (each in
//! its own savepoint) and answers each caller only after that transaction's `COMMIT` has
//! returned: one disk sync serves many concurrent writes, and the durability promise is kept.
//! A write refused or failing on its own data is undone alone; a driver or I/O failure fails
//! the whole group, none of which is committed. Other processes' writers queue on SQLite's
//! write lock for up to the busy timeout.

mod config;
mod error;
mod rows;
mod store;
mod writer;

pub use config::{SqliteStoreConfig, Synchronous};
pub use store::SqliteStore;
