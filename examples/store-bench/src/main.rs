//! Durable task creates per second for each task store, at several concurrency levels.
//!
//! Run with: `cargo run --release -p store-bench` (PostgreSQL too when `ACCORD_PG_URL` is set, e.g.
//! `scripts/with-postgres cargo run --release -p store-bench`). Each create is a full
//! `TaskStore::create`: durable (committed, and for SQLite synced) before it returns.

use std::sync::Arc;
use std::time::Instant;

use accord_engine::TaskState;
use accord_engine::task::{
    AccessToken, MemoryStore, MemoryStoreConfig, StoredTask, Task, TaskEventKind, TaskId, TaskPayload, TaskStore,
    now_ms,
};
use futures_util::StreamExt;

const CREATES: usize = 2_000;
const CONCURRENCY: [usize; 3] = [1, 8, 32];

fn record() -> StoredTask {
    let now = now_ms();
    StoredTask {
        task: Task::submitted(TaskId::generate(), "bench", None, now),
        owner: AccessToken::generate().owner(),
        payload: TaskPayload::new("bench", serde_json::json!({"n": 1})),
        admission_expires_at: Some(now + 300_000),
        lease: None,
    }
}

/// Creates per second with `concurrency` creates in flight.
async fn measure(store: &Arc<dyn TaskStore>, concurrency: usize) -> f64 {
    let started = Instant::now();
    let created =
        futures_util::stream::iter(0..CREATES)
            .map(|_| {
                let store = Arc::clone(store);
                async move {
                    store.create(record(), TaskEventKind::Status { state: TaskState::Submitted, message: None }).await
                }
            })
            .buffer_unordered(concurrency)
            .filter(|result| std::future::ready(result.is_ok()))
            .count()
            .await;
    assert_eq!(created, CREATES, "every create succeeded");
    CREATES as f64 / started.elapsed().as_secs_f64()
}

async fn report(name: &str, store: Arc<dyn TaskStore>) {
    for concurrency in CONCURRENCY {
        let rate = measure(&store, concurrency).await;
        println!("{name:<10} concurrency {concurrency:>2}: {rate:>8.0} creates/s");
    }
    store.close().await;
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("{CREATES} durable creates per run");
    let memory = MemoryStore::new(MemoryStoreConfig {
        max_tasks: CREATES * CONCURRENCY.len() + 1,
        ..MemoryStoreConfig::default()
    });
    report("memory", Arc::new(memory)).await;

    let dir = std::env::temp_dir().join(format!("accord-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let sqlite =
        accord_store_sqlite::SqliteStore::open(accord_store_sqlite::SqliteStoreConfig::new(dir.join("bench.db")))
            .await?;
    report("sqlite", Arc::new(sqlite)).await;
    std::fs::remove_dir_all(&dir)?;

    match std::env::var("ACCORD_PG_URL") {
        Ok(url) => {
            let postgres =
                accord_store_postgres::PostgresStore::connect(accord_store_postgres::PostgresStoreConfig::new(url))
                    .await?;
            report("postgres", Arc::new(postgres)).await;
        }
        Err(_) => println!("postgres   skipped: set ACCORD_PG_URL (or run through scripts/with-postgres)"),
    }
    Ok(())
}
