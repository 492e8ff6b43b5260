//! Fresh databases for the PostgreSQL store's tests, on the server named by `ACCORD_PG_URL`
//! (which `scripts/with-postgres` starts and sets).

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use accord_engine::task::{AccessToken, OwnerHash, TaskWakeups};
use accord_store_postgres::{PostgresStore, PostgresStoreConfig};
use sqlx::{AssertSqlSafe, Connection, PgConnection};

/// How long a test waits for something that should happen promptly: a guard against hanging,
/// not a speed requirement.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// The server's URL. Without it the tests fail: they must never pass by not running.
pub(crate) fn admin_url() -> String {
    match std::env::var("ACCORD_PG_URL") {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!(
            "ACCORD_PG_URL is not set, so the PostgreSQL store tests have no server. Run them through \
             scripts/with-postgres, which starts a throwaway PostgreSQL and sets it: \
             `scripts/with-postgres cargo test -p accord-store-postgres`"
        ),
    }
}

/// `url` with its database replaced by `database`.
pub(crate) fn database_url(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |at| at + 3);
    let server = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}

async fn admin() -> PgConnection {
    PgConnection::connect(&admin_url()).await.expect("connect to the PostgreSQL server named by ACCORD_PG_URL")
}

/// A database of its own for one test.
pub(crate) struct TestDatabase {
    pub(crate) name: String,
    pub(crate) url: String,
}

impl TestDatabase {
    pub(crate) async fn create() -> Self {
        let name = format!("accord_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = admin().await;
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .expect("create a test database");
        let _ = admin.close().await;
        Self { url: database_url(&admin_url(), &name), name }
    }

    /// The store settings for this database: a small pool, no background housekeeping.
    pub(crate) fn config(&self) -> PostgresStoreConfig {
        PostgresStoreConfig::new(self.url.clone()).max_connections(4).housekeeping_interval(None)
    }

    /// A store (a worker) on this database.
    pub(crate) async fn store(&self) -> PostgresStore {
        self.store_with(self.config()).await
    }

    pub(crate) async fn store_with(&self, config: PostgresStoreConfig) -> PostgresStore {
        PostgresStore::connect(config).await.expect("connect a store to the test database")
    }

    /// A plain connection to this database, to look at its tables.
    pub(crate) async fn connection(&self) -> PgConnection {
        PgConnection::connect(&self.url).await.expect("connect to the test database")
    }

    /// Applies the store's first `count` migrations, as a worker of an earlier release left the
    /// schema; returns the connection that applied them.
    pub(crate) async fn earlier_schema(&self, count: usize) -> PgConnection {
        let earlier = std::env::temp_dir().join(format!("accord-pg-earlier-schema-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&earlier).expect("a directory for the earlier migrations");
        let migrations = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let mut files: Vec<_> = std::fs::read_dir(&migrations)
            .expect("the migrations")
            .map(|entry| entry.expect("a migration").file_name())
            .collect();
        files.sort();
        assert!(files.len() > count, "a later migration follows the first {count}");
        for file in &files[..count] {
            std::fs::copy(migrations.join(file), earlier.join(file)).expect("copy a migration");
        }
        let mut connection = self.connection().await;
        let migrator = sqlx::migrate::Migrator::new(earlier.as_path()).await.expect("the earlier migrations resolve");
        migrator.run(&mut connection).await.expect("the earlier schema");
        std::fs::remove_dir_all(&earlier).expect("remove the copies");
        connection
    }

    /// Drops the database, disconnecting whoever is still connected.
    pub(crate) async fn drop_database(self) {
        drop_database(&self.name).await;
    }
}

async fn drop_database(name: &str) {
    let mut admin = admin().await;
    sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
        .execute(&mut admin)
        .await
        .expect("drop a test database");
    let _ = admin.close().await;
}

/// The databases of the stores [`fresh_store`] made, to drop once nobody holds their store.
static MADE: Mutex<Vec<(String, Weak<PostgresStore>)>> = Mutex::new(Vec::new());

/// A store on a new, empty database. The databases of earlier stores that are no longer in use
/// are dropped first (the suite hands stores to code that keeps them until its test ends).
pub(crate) async fn fresh_store() -> Arc<PostgresStore> {
    let abandoned: Vec<String> = {
        let mut made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
        let (gone, live): (Vec<_>, Vec<_>) = made.drain(..).partition(|(_, store)| store.strong_count() == 0);
        *made = live;
        gone.into_iter().map(|(name, _)| name).collect()
    };
    for name in abandoned {
        drop_database(&name).await;
    }
    let database = TestDatabase::create().await;
    let store = Arc::new(database.store().await);
    MADE.lock().unwrap_or_else(PoisonError::into_inner).push((database.name, Arc::downgrade(&store)));
    store
}

pub(crate) fn owner(name: &str) -> OwnerHash {
    AccessToken::parse(&format!("postgres-store-{name}-access-token")).expect("a valid test token").owner()
}

/// Waits for a wake-up: `changed` is given a long timeout of its own and bounded from outside,
/// so only a real wake-up returns in time.
pub(crate) async fn woken(wakeups: &mut TaskWakeups) {
    let woke = tokio::time::timeout(PATIENCE, wakeups.changed(Duration::from_secs(3600))).await;
    assert_eq!(woke, Ok(true), "the subscriber is woken");
}

#[test]
fn database_urls_swap_only_the_database() {
    assert_eq!(database_url("postgres://u@h:1/postgres", "t"), "postgres://u@h:1/t");
    assert_eq!(database_url("postgres://u@h:1", "t"), "postgres://u@h:1/t");
    assert_eq!(database_url("postgres://u:p@h/db?sslmode=disable", "t"), "postgres://u:p@h/t?sslmode=disable");
}
