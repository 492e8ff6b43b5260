//! [`SqliteStoreConfig`]: where the file is and how it is synced, locked and bounded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use accord_engine::task::StoreError;

/// When SQLite waits for the disk (`PRAGMA synchronous`), in WAL mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Never syncs: a commit survives a crash of the process but not of the machine.
    Off,
    /// Syncs at checkpoints only (the default): a commit that returned survives a crash of the
    /// process; the last commits may be lost if the machine loses power or the kernel crashes.
    /// Writes of paid tasks are synced before they are answered all the same.
    #[default]
    Normal,
    /// Syncs the write-ahead log at every commit: a commit that returned survives a crash of the
    /// process or of the machine.
    Full,
    /// Like [`Synchronous::Full`], and also syncs the directory when the log is reset.
    Extra,
}

/// Settings of a [`SqliteStore`](crate::SqliteStore).
///
/// ```
/// use std::time::Duration;
///
/// use accord_store_sqlite::{SqliteStoreConfig, Synchronous};
///
/// let config = SqliteStoreConfig::new("tasks.db")
///     .max_active_tasks(Some(10_000))
///     .retention(Duration::from_secs(24 * 60 * 60));
/// assert_eq!(config.synchronous, Synchronous::Normal);
///
/// let config = SqliteStoreConfig::from_url("sqlite://data/tasks.db")?;
/// assert_eq!(config.path, std::path::Path::new("data/tasks.db"));
/// # Ok::<(), accord_engine::task::StoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteStoreConfig {
    /// The database file; created, with its directory, if missing.
    pub path: PathBuf,
    /// When commits wait for the disk (default [`Synchronous::Normal`]: every acknowledged write
    /// survives a crash of the process, and a paid task's writes a loss of power too).
    pub synchronous: Synchronous,
    /// How long a write waits for another connection's or process's write lock before the call
    /// fails with [`StoreError::Unavailable`] (default 5 s).
    pub busy_timeout: Duration,
    /// The most tasks that may be unfinished (not terminal) at once; `create` fails with
    /// [`StoreError::CapacityExhausted`] beyond it, after reaping expired admissions. Default:
    /// no limit.
    pub max_active_tasks: Option<usize>,
    /// How long a terminal task is kept after its last change before housekeeping deletes it
    /// with its event log (default 7 days).
    pub retention: Duration,
    /// The most connections the store opens for reads, which run in parallel (default 4; at
    /// least 1). Writes use one more connection of their own.
    pub max_connections: u32,
}

impl SqliteStoreConfig {
    /// The defaults, for the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(5),
            max_active_tasks: None,
            retention: Duration::from_secs(7 * 24 * 60 * 60),
            max_connections: 4,
        }
    }

    /// The defaults, for a `sqlite://PATH` or `sqlite:PATH` URL (`sqlite:///abs/path` for an
    /// absolute path). Query parameters and in-memory databases are refused: the store is a
    /// durable file.
    pub fn from_url(url: &str) -> Result<Self, StoreError> {
        let invalid = |why: &str| StoreError::Unavailable(format!("invalid SQLite store URL: {why}"));
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .ok_or_else(|| invalid("it must start with sqlite://"))?;
        if path.contains('?') {
            return Err(invalid("query parameters are not supported"));
        }
        if path.is_empty() || path == ":memory:" {
            return Err(invalid("it must name a database file"));
        }
        Ok(Self::new(Path::new(path)))
    }

    /// Sets [`SqliteStoreConfig::synchronous`].
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Sets [`SqliteStoreConfig::busy_timeout`].
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }

    /// Sets [`SqliteStoreConfig::max_active_tasks`].
    pub fn max_active_tasks(mut self, max_active_tasks: Option<usize>) -> Self {
        self.max_active_tasks = max_active_tasks;
        self
    }

    /// Sets [`SqliteStoreConfig::retention`].
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// Sets [`SqliteStoreConfig::max_connections`].
    pub fn max_connections(mut self, max_connections: u32) -> Self {
        self.max_connections = max_connections;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_file() {
        assert_eq!(SqliteStoreConfig::from_url("sqlite://a/b.db").map(|c| c.path), Ok(PathBuf::from("a/b.db")));
        assert_eq!(SqliteStoreConfig::from_url("sqlite:///tmp/x.db").map(|c| c.path), Ok(PathBuf::from("/tmp/x.db")));
        assert_eq!(SqliteStoreConfig::from_url("sqlite:x.db").map(|c| c.path), Ok(PathBuf::from("x.db")));
        assert!(SqliteStoreConfig::from_url("postgres://db").is_err());
        assert!(SqliteStoreConfig::from_url("sqlite::memory:").is_err());
        assert!(SqliteStoreConfig::from_url("sqlite://").is_err());
        assert!(SqliteStoreConfig::from_url("sqlite://x.db?mode=ro").is_err());
    }

    #[test]
    fn defaults_keep_the_durability_promise() {
        let config = SqliteStoreConfig::new("x.db");
        assert_eq!(config.synchronous, Synchronous::Normal);
        assert_eq!(config.busy_timeout, Duration::from_secs(5));
        assert_eq!(config.max_active_tasks, None);
        assert_eq!(config.retention, Duration::from_secs(604_800));
    }
}
