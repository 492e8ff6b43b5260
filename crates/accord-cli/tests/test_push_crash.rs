//! Push delivery survives a crash, with real processes: worker a takes tasks with webhooks and is
//! killed with SIGKILL while its deliveries hang at the receiver; worker b, on the same durable
//! store and push key, delivers every update of every task — none lost — once a's delivery
//! leases lapse. Run on SQLite and on PostgreSQL.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use accord_engine::task::{OwnerHash, TaskEventKind, TaskId, TaskStore};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use tokio::sync::Notify;

const TASKS: usize = 40;

mod support;

use support::Served;

/// A worker on `store`, allowed to call loopback webhooks, with short delivery leases and retries.
fn worker(store: &str, id: &str, key_file: &std::path::Path) -> Served {
    let key_file = key_file.to_str().expect("a UTF-8 path");
    Served::start(&[
        "--store",
        store,
        "--worker-id",
        id,
        "--lease-ttl",
        "1",
        "--recovery-interval",
        "0.25",
        "--webhook-allow",
        "loopback",
        "--push-lease-ms",
        "1000",
        "--push-first-retry-ms",
        "100",
        "--push-key-file",
        key_file,
    ])
}

/// A webhook receiver that first holds every POST (until released, then answers 503), and then
/// accepts them, recording each update by task and delivery id.
#[derive(Default)]
struct Receiver {
    accepting: AtomicBool,
    held: AtomicUsize,
    release: Notify,
    /// Task id → the delivery ids received, and whether its completed status arrived.
    received: Mutex<HashMap<String, (BTreeSet<String>, bool)>>,
}

async fn receiver() -> (Arc<Receiver>, String, tokio::task::JoinHandle<()>) {
    let state = Arc::new(Receiver::default());
    let shared = Arc::clone(&state);
    let router = axum::Router::new().route(
        "/webhook",
        axum::routing::post(move |headers: HeaderMap, body: axum::Json<Value>| {
            let state = Arc::clone(&shared);
            async move {
                if headers.get("x-a2a-notification-token").and_then(|v| v.to_str().ok()) != Some("crash-hook") {
                    return StatusCode::UNAUTHORIZED;
                }
                if !state.accepting.load(Ordering::SeqCst) {
                    state.held.fetch_add(1, Ordering::SeqCst);
                    state.release.notified().await;
                    return StatusCode::SERVICE_UNAVAILABLE;
                }
                let id = headers.get("x-a2a-delivery-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
                let update = &body.0;
                let task = update["statusUpdate"]["taskId"]
                    .as_str()
                    .or_else(|| update["artifactUpdate"]["taskId"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                let completed = update["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED";
                let mut received = state.received.lock().expect("lock");
                let entry = received.entry(task).or_default();
                entry.0.insert(id);
                entry.1 |= completed;
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/webhook", listener.local_addr().expect("address"));
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (state, url, server)
}

async fn send_with_webhook(http: &reqwest::Client, worker: &Served, hook: &str, n: usize) -> String {
    let body = json!({"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {
        "message": {"messageId": format!("crash-{n}"), "role": "ROLE_USER",
            "parts": [{"data": {"seconds": 1.5}}], "metadata": {"skillId": "slow"}},
        "configuration": {"returnImmediately": true,
            "taskPushNotificationConfig": {"url": hook, "id": "hook", "token": "crash-hook"}},
    }});
    let answer: Value = http
        .post(format!("{}/a2a/jsonrpc", worker.url))
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    answer["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("a task: {answer}")).to_owned()
}

/// The sequences of `task`'s log entries that are updates for a webhook (state changes, results,
/// errors, artifacts).
async fn update_sequences(store: &Arc<dyn TaskStore>, task: &str) -> BTreeSet<u64> {
    let id = TaskId::new(task);
    let owner: OwnerHash = store.get(&id).await.expect("read").expect("the task exists").owner;
    let log = store.events_since(&id, &owner, 0).await.expect("log").expect("owned");
    log.iter()
        .filter(|event| {
            matches!(
                event.kind,
                TaskEventKind::Status { .. }
                    | TaskEventKind::Result { .. }
                    | TaskEventKind::Error { .. }
                    | TaskEventKind::Artifact { .. }
            )
        })
        .map(|event| event.sequence)
        .collect()
}

async fn kill_the_delivering_worker(store_url: &str, store: Arc<dyn TaskStore>, dir: &std::path::Path) {
    let key_file = dir.join("push.key");
    let (receiver, hook, _server) = receiver().await;
    let http = reqwest::Client::new();
    let mut a = worker(store_url, "push-a", &key_file);
    let mut ids = Vec::with_capacity(TASKS);
    for n in 0..TASKS {
        ids.push(send_with_webhook(&http, &a, &hook, n).await);
    }
    // Worker a holds deliveries at the receiver: it dies mid-delivery.
    let deadline = Instant::now() + Duration::from_secs(30);
    while receiver.held.load(Ordering::SeqCst) < 10 {
        assert!(Instant::now() < deadline, "worker a never started delivering");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let b = worker(store_url, "push-b", &key_file);
    a.kill();
    receiver.accepting.store(true, Ordering::SeqCst);
    receiver.release.notify_waiters();

    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let done = {
            let received = receiver.received.lock().expect("lock");
            ids.iter().filter(|id| received.get(*id).is_some_and(|(_, completed)| *completed)).count()
        };
        if done == TASKS {
            break;
        }
        assert!(Instant::now() < deadline, "only {done} of {TASKS} tasks' completions were delivered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // No update lost: every state change, artifact and result of every task was delivered.
    let received = receiver.received.lock().expect("lock").clone();
    for id in &ids {
        let expected = update_sequences(&store, id).await;
        let (delivered, _) = received.get(id).expect("deliveries");
        let sequences: BTreeSet<u64> = delivered
            .iter()
            .filter_map(|delivery| delivery.strip_prefix(&format!("{id}:hook:")))
            .filter_map(|rest| rest.split(':').next()?.parse().ok())
            .collect();
        assert!(expected.is_subset(&sequences), "task {id}: updates {expected:?}, delivered {sequences:?}");
    }
    drop(b);
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("accord-push-crash-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_delivering_sqlite_worker_loses_no_update() {
    let dir = scratch("sqlite");
    let path = dir.join("tasks.db");
    let url = format!("sqlite://{}", path.display());
    let store = accord_store_sqlite::SqliteStore::open(accord_store_sqlite::SqliteStoreConfig::new(&path))
        .await
        .expect("open the file");
    kill_the_delivering_worker(&url, Arc::new(store), &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_delivering_postgres_worker_loses_no_update() {
    let url = std::env::var("ACCORD_PG_URL")
        .expect("ACCORD_PG_URL is not set: run the tests through scripts/with-postgres (scripts/test does)");
    let config = accord_store_postgres::PostgresStoreConfig::new(url.clone());
    let store = Arc::new(accord_store_postgres::PostgresStore::connect(config).await.expect("connect"));
    let dir = scratch("postgres");
    kill_the_delivering_worker(&url, store, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
}
