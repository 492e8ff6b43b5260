//! Choosing the task store `accord serve` runs on: `memory`, `sqlite://PATH` (the default, a file
//! in the working directory) or `postgres://URL` (several `accord serve` processes on one database
//! form a pool of workers).

use std::str::FromStr;
use std::sync::Arc;

use accord_engine::task::{MemoryStore, StoreError, TaskStore};
use accord_store_postgres::{PostgresStore, PostgresStoreConfig};
use accord_store_sqlite::{SqliteStore, SqliteStoreConfig};

/// The store `accord serve` uses when none is given.
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

/// Opens (and, for the durable stores, migrates) the store.
pub async fn open_store(spec: &StoreSpec) -> Result<Arc<dyn TaskStore>, StoreError> {
    Ok(match spec {
        StoreSpec::Memory => Arc::new(MemoryStore::default()),
        StoreSpec::Sqlite(url) => Arc::new(SqliteStore::open(SqliteStoreConfig::from_url(url)?).await?),
        StoreSpec::Postgres(url) => Arc::new(PostgresStore::connect(PostgresStoreConfig::new(url.clone())).await?),
    })
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
