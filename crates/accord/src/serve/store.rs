//! Choosing the task store a server runs on: `memory`, `sqlite://PATH` (the default, a file in the
//! working directory) or `postgres://URL` (several servers on one database form a pool of
//! workers). The durable stores are cargo features: `sqlite` (default) and `postgres`.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{MemoryStore, MemoryStoreConfig, StoreError, TaskStore};
#[cfg(feature = "postgres")]
use accord_store_postgres::{PostgresStore, PostgresStoreConfig};
#[cfg(feature = "sqlite")]
use accord_store_sqlite::{SqliteStore, SqliteStoreConfig};

/// The store used when none is given.
pub const DEFAULT_STORE: &str = "sqlite://accord.db";

/// Where tasks are kept.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// In this process only (lost on restart).
    Memory,
    /// A SQLite file (`sqlite://PATH`; a relative path is relative to the working directory).
    Sqlite(String),
    /// A PostgreSQL database (`postgres://…` or `postgresql://…`).
    Postgres(String),
}

impl std::fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl StoreSpec {
    /// A description safe to print: a PostgreSQL URL's password is never shown.
    pub fn describe(&self) -> String {
        match self {
            Self::Memory => "memory".into(),
            Self::Sqlite(url) => url.clone(),
            Self::Postgres(url) => redact_password(url),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((credentials, host)) = rest.split_once('@') else { return url.to_owned() };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

impl FromStr for StoreSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text == "memory" {
            Ok(Self::Memory)
        } else if text.starts_with("sqlite:") {
            Ok(Self::Sqlite(text.to_owned()))
        } else if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Ok(Self::Postgres(text.to_owned()))
        } else {
            Err(format!("unknown store {text:?}: use memory, sqlite://PATH or postgres://URL"))
        }
    }
}

/// The settings of the store kinds beyond where they are.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// SQLite: when commits wait for the disk (default [`Synchronous::Normal`]).
    pub sync: Option<Synchronous>,
    /// The in-process store's limits.
    pub memory: MemoryStoreConfig,
    /// The durable stores' limits.
    pub durable: DurableLimits,
}

/// What a durable store (SQLite, PostgreSQL) may keep: without a cap and with a week's
/// retention, one caller could fill the disk with tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurableLimits {
    /// The most unfinished tasks at once (default 100,000; `None`: no limit). New tasks beyond are
    /// refused with a capacity error until some end.
    pub max_active_tasks: Option<usize>,
    /// How long an ended task is kept after its last change (default 24 h).
    pub retention: Duration,
}

impl Default for DurableLimits {
    fn default() -> Self {
        Self { max_active_tasks: Some(100_000), retention: Duration::from_secs(24 * 60 * 60) }
    }
}

impl StoreSpec {
    /// The file of a SQLite store (`sqlite://PATH`, its query left out); `None` for the others.
    pub fn sqlite_file(&self) -> Option<std::path::PathBuf> {
        let Self::Sqlite(url) = self else { return None };
        let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
        let file = rest.split('?').next().unwrap_or_default();
        (!file.is_empty() && file != ":memory:").then(|| std::path::PathBuf::from(file))
    }
}

/// Opens (and, for the durable stores, migrates) the store. A SQLite level given for another
/// kind of store is refused rather than ignored.
pub async fn open_store(spec: &StoreSpec, options: &StoreOptions) -> Result<Arc<dyn TaskStore>, StoreError> {
    if options.sync.is_some() && !matches!(spec, StoreSpec::Sqlite(_)) {
        return Err(StoreError::Unavailable("--sync sets how a SQLite store syncs; this store is not one".into()));
    }
    Ok(match spec {
        StoreSpec::Memory => Arc::new(MemoryStore::new(options.memory)),
        #[cfg(feature = "sqlite")]
        StoreSpec::Sqlite(url) => {
            let mut config = SqliteStoreConfig::from_url(url)?
                .max_active_tasks(options.durable.max_active_tasks)
                .retention(options.durable.retention);
            if let Some(sync) = options.sync {
                config = config.synchronous(match sync {
                    Synchronous::Normal => accord_store_sqlite::Synchronous::Normal,
                    Synchronous::Full => accord_store_sqlite::Synchronous::Full,
                });
            }
            Arc::new(SqliteStore::open(config).await?)
        }
        #[cfg(feature = "postgres")]
        StoreSpec::Postgres(url) => {
            let config = PostgresStoreConfig::new(url.clone())
                .max_active_tasks(options.durable.max_active_tasks)
                .retention(options.durable.retention);
            Arc::new(PostgresStore::connect(config).await?)
        }
        #[cfg(not(feature = "sqlite"))]
        StoreSpec::Sqlite(_) => {
            return Err(StoreError::Unavailable("this build has no SQLite store (the `sqlite` cargo feature)".into()));
        }
        #[cfg(not(feature = "postgres"))]
        StoreSpec::Postgres(_) => {
            return Err(StoreError::Unavailable(
                "this build has no PostgreSQL store (the `postgres` cargo feature)".into(),
            ));
        }
    })
}

/// When a SQLite store's commits wait for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Synchronous {
    /// Survives a killed process (the default).
    Normal,
    /// Also survives a loss of power, at about a millisecond per commit.
    Full,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_kinds_and_hides_passwords() {
        assert_eq!("memory".parse::<StoreSpec>(), Ok(StoreSpec::Memory));
        assert_eq!("sqlite://accord.db".parse::<StoreSpec>(), Ok(StoreSpec::Sqlite("sqlite://accord.db".into())));
        let pg: StoreSpec = "postgres://accord:hunter2@db:5432/accord".parse().expect("postgres");
        assert_eq!(pg.describe(), "postgres://accord:***@db:5432/accord");
        assert!(!format!("{pg:?}").contains("hunter2"));
        assert!("mysql://x".parse::<StoreSpec>().is_err());
    }
}
