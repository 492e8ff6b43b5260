//! Durable task creates per second for each task store, at several concurrency levels; and a
//! preload mode that fills a store with completed tasks, for the load harness's scale series.
//!
//! Run with: `cargo run --release -p store-bench` (PostgreSQL too when `ACCORD_PG_URL` is set, e.g.
//! `scripts/with-postgres cargo run --release -p store-bench`). Each create is a full
//! `TaskStore::create`: durable (committed, and for SQLite synced) before it returns.
//!
//! ```sh
//! store-bench [--stores memory,sqlite,postgres] [--concurrency 1,8,32] [--creates 2000] [--json]
//! store-bench preload --store sqlite://PATH|postgres://URL --tasks 100000 [--concurrency 256]
//!                     [--client-address 127.0.0.1]
//! ```
//!
//! `preload` writes completed `echo` tasks owned by the owner `accord serve` gives an anonymous
//! caller from `--client-address` (the load generator's address), so that its anonymous A2A
//! `ListTasks` (`accord serve --anonymous-list`) pages through all of them.

use std::sync::Arc;
use std::time::Instant;

use accord_engine::TaskState;
use accord_engine::task::{
    AccessToken, MemoryStore, MemoryStoreConfig, OwnerHash, StoredTask, Task, TaskEventKind, TaskId, TaskPayload,
    TaskResult, TaskStore, now_ms,
};
use clap::{Parser, Subcommand};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

#[derive(Debug, Parser)]
#[command(name = "store-bench", about = "Durable task creates per second for each task store.")]
struct Cli {
    /// Which stores to measure: memory, sqlite, postgres (postgres needs ACCORD_PG_URL).
    #[arg(long, value_delimiter = ',', default_value = "memory,sqlite,postgres")]
    stores: Vec<String>,
    /// Creates in flight, one run per value.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    concurrency: Vec<usize>,
    /// Creates per run.
    #[arg(long, default_value_t = 2_000)]
    creates: usize,
    /// One JSON object per run on standard output instead of text.
    #[arg(long)]
    json: bool,
    /// SQLite's durability level: `normal` (the store's default: survives a killed process) or
    /// `full` (survives a loss of power: the log is synced at every commit).
    #[arg(long, default_value = "normal", value_parser = ["normal", "full"])]
    sqlite_sync: String,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fill a store with completed tasks (owned by `accord serve`'s anonymous caller from
    /// `--client-address`).
    Preload {
        /// `sqlite://PATH` or `postgres://URL`.
        #[arg(long)]
        store: String,
        /// How many tasks to write.
        #[arg(long)]
        tasks: usize,
        /// Creates in flight.
        #[arg(long, default_value_t = 256)]
        concurrency: usize,
        /// The address the tasks' anonymous caller connects from.
        #[arg(long, default_value = "127.0.0.1")]
        client_address: std::net::IpAddr,
    },
}

/// A fresh submitted task, as the create benchmark writes it.
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

/// The owner `accord serve` gives an anonymous caller from `address`: the SHA-256 of
/// `accord:anonymous:` and the address (an IPv6 address cut to its /64), as the server's
/// authentication layer derives it. Should the two ever differ, the harness's scale series fails
/// loudly: its `ListTasks` checks the total it finds.
fn anonymous_owner(address: std::net::IpAddr) -> OwnerHash {
    let key = match address.to_canonical() {
        std::net::IpAddr::V6(v6) => std::net::IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        v4 => v4,
    };
    let digest: [u8; 32] = Sha256::digest(format!("accord:anonymous:{key}").as_bytes()).into();
    OwnerHash::from_digest(digest)
}

/// A completed `echo` task, as a finished run leaves it.
fn completed(owner: OwnerHash, index: usize) -> StoredTask {
    let now = now_ms();
    let text = format!("preload-{index}");
    let mut task = Task::submitted(TaskId::generate(), "echo", None, now);
    task.state = TaskState::Completed;
    task.result = Some(TaskResult { output: serde_json::json!({"text": text}), ..TaskResult::default() });
    StoredTask {
        task,
        owner,
        payload: TaskPayload::new("echo", serde_json::json!({"text": text})),
        admission_expires_at: None,
        lease: None,
    }
}

/// Creates `count` records with `concurrency` in flight; returns creates per second.
async fn create_all(
    store: &Arc<dyn TaskStore>,
    count: usize,
    concurrency: usize,
    make: impl Fn(usize) -> (StoredTask, TaskEventKind),
) -> Result<f64, String> {
    let started = Instant::now();
    let mut results = futures_util::stream::iter(0..count)
        .map(|index| {
            let store = Arc::clone(store);
            let (record, event) = make(index);
            async move { store.create(record, event).await }
        })
        .buffer_unordered(concurrency.max(1));
    let mut created = 0;
    while let Some(result) = results.next().await {
        result.map_err(|error| format!("create failed after {created}: {error}"))?;
        created += 1;
    }
    Ok(count as f64 / started.elapsed().as_secs_f64())
}

/// Creates per second with `concurrency` creates in flight.
async fn measure(store: &Arc<dyn TaskStore>, creates: usize, concurrency: usize) -> Result<f64, String> {
    create_all(store, creates, concurrency, |_| {
        (record(), TaskEventKind::Status { state: TaskState::Submitted, message: None })
    })
    .await
}

async fn report(name: &str, store: Arc<dyn TaskStore>, cli: &Cli) -> Result<(), String> {
    for &concurrency in &cli.concurrency {
        let rate = measure(&store, cli.creates, concurrency).await?;
        if cli.json {
            let line =
                serde_json::json!({"store": name, "concurrency": concurrency, "creates": cli.creates, "rate": rate});
            println!("{line}");
        } else {
            println!("{name:<10} concurrency {concurrency:>2}: {rate:>8.0} creates/s");
        }
    }
    store.close().await;
    Ok(())
}

async fn open(spec: &str) -> Result<Arc<dyn TaskStore>, String> {
    if let Some(path) = spec.strip_prefix("sqlite://") {
        let config = accord_store_sqlite::SqliteStoreConfig::new(path);
        let store = accord_store_sqlite::SqliteStore::open(config).await.map_err(|error| error.to_string())?;
        Ok(Arc::new(store))
    } else if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        let config = accord_store_postgres::PostgresStoreConfig::new(spec);
        let store = accord_store_postgres::PostgresStore::connect(config).await.map_err(|error| error.to_string())?;
        Ok(Arc::new(store))
    } else {
        Err(format!("unknown store {spec:?}: use sqlite://PATH or postgres://URL"))
    }
}

async fn preload(spec: &str, tasks: usize, concurrency: usize, address: std::net::IpAddr) -> Result<(), String> {
    let store = open(spec).await?;
    let owner = anonymous_owner(address);
    let rate = create_all(&store, tasks, concurrency, |index| {
        let result =
            TaskResult { output: serde_json::json!({"text": format!("preload-{index}")}), ..TaskResult::default() };
        (completed(owner, index), TaskEventKind::Result { result })
    })
    .await?;
    store.close().await;
    eprintln!("store-bench: preloaded {tasks} completed tasks ({rate:.0} creates/s)");
    Ok(())
}

async fn bench(cli: &Cli) -> Result<(), String> {
    let wants = |name: &str| cli.stores.iter().any(|store| store.trim() == name);
    let most = cli.concurrency.iter().copied().max().unwrap_or(1);
    if !cli.json {
        println!("{} durable creates per run", cli.creates);
    }
    if wants("memory") {
        let memory = MemoryStore::new(MemoryStoreConfig {
            max_tasks: cli.creates * cli.concurrency.len() + most + 1,
            ..MemoryStoreConfig::default()
        });
        report("memory", Arc::new(memory), cli).await?;
    }
    if wants("sqlite") {
        let dir = std::env::temp_dir().join(format!("accord-store-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|error| error.to_string())?;
        let synchronous = match cli.sqlite_sync.as_str() {
            "full" => accord_store_sqlite::Synchronous::Full,
            _ => accord_store_sqlite::Synchronous::Normal,
        };
        let config = accord_store_sqlite::SqliteStoreConfig::new(dir.join("bench.db")).synchronous(synchronous);
        let sqlite = accord_store_sqlite::SqliteStore::open(config).await.map_err(|error| error.to_string())?;
        let outcome = report("sqlite", Arc::new(sqlite), cli).await;
        std::fs::remove_dir_all(&dir).map_err(|error| error.to_string())?;
        outcome?;
    }
    if wants("postgres") {
        match std::env::var("ACCORD_PG_URL") {
            Ok(url) => report("postgres", open(&url).await?, cli).await?,
            Err(_) if cli.json => {}
            Err(_) => println!("postgres   skipped: set ACCORD_PG_URL (or run through scripts/with-postgres)"),
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Some(Command::Preload { store, tasks, concurrency, client_address }) => {
            preload(store, *tasks, *concurrency, *client_address).await
        }
        None => bench(&cli).await,
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("store-bench: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
