//! Crash recovery with real processes: two `accord serve` workers on one durable store, one of
//! them killed with SIGKILL while it runs 200 tasks; the other finishes every task, exactly once.
//! Also: a subscriber on one worker follows a task running on the other, and resumes with
//! `Last-Event-ID` after a disconnect.

use std::sync::Arc;
use std::time::{Duration, Instant};

use accord_client::{Client, ListOptions, SendOptions, TaskAccess};
use accord_engine::task::{AccessToken, TaskEventKind, TaskId, TaskStore};
use accord_types::tasks::TaskStatus;
use futures_util::{StreamExt, TryStreamExt};
use serde_json::json;

const TASKS: usize = 1000;

mod support;

use support::Served;

/// A worker on `store` with a short execution lease and frequent recovery. One caller makes all
/// the tasks here, so the per-caller share is lifted.
fn worker(store: &str, id: &str) -> Served {
    Served::start(&[
        "--store",
        store,
        "--worker-id",
        id,
        "--lease-ttl",
        "1",
        "--recovery-interval",
        "0.25",
        "--max-active-per-owner",
        "0",
    ])
}

fn unique_token() -> String {
    format!("crash-test-{}", AccessToken::generate().expose())
}

/// Creates 1,000 slow tasks on worker a, kills a with SIGKILL mid-flight, and waits for worker b to
/// finish them all; then checks the store's logs: one result per task.
async fn kill_one_worker_mid_flight(store_url: &str, store: Arc<dyn TaskStore>) {
    let a = worker(store_url, "worker-a");
    let b = worker(store_url, "worker-b");
    let client = Client::new();
    let token = unique_token();
    let card_a = client.fetch_card(&a.url).await.expect("a's card");
    let ids: Vec<String> = futures_util::stream::iter(0..TASKS)
        .map(|_| {
            let (client, card, token) = (client.clone(), card_a.clone(), token.clone());
            async move {
                let options = SendOptions { access_token: Some(token), ..SendOptions::default() };
                client
                    .send_message(&card, "slow", json!({"seconds": 1.5}), options)
                    .await
                    .map(|sent| sent.access.task_id)
            }
        })
        .buffer_unordered(64)
        .try_collect()
        .await
        .expect("every task is created");
    assert_eq!(ids.len(), TASKS);

    // Worker a dies with its tasks running (so worker b has work to take over).
    let listing = ListOptions { limit: Some(1000), ..ListOptions::default() };
    let at_kill = client.list_tasks(&card_a, &token, &listing).await.expect("list on a");
    let running = at_kill.tasks.iter().filter(|task| task.status == TaskStatus::Running).count();
    assert!(running > 0, "the kill must catch tasks in flight");
    let mut a = a;
    a.kill();

    let card_b = client.fetch_card(&b.url).await.expect("b's card");
    let deadline = Instant::now() + Duration::from_secs(90);
    let options = ListOptions { limit: Some(1000), ..ListOptions::default() };
    loop {
        let page = client.list_tasks(&card_b, &token, &options).await.expect("list on b");
        let done = page.tasks.iter().filter(|task| task.status.is_terminal()).count();
        if done == TASKS {
            let other: Vec<_> = page
                .tasks
                .iter()
                .filter(|task| task.status != TaskStatus::Completed)
                .map(|task| (&task.task_id, task.status, &task.error))
                .collect();
            assert!(other.is_empty(), "every task completed; these did not: {other:?}");
            break;
        }
        assert!(Instant::now() < deadline, "only {done} of {TASKS} tasks ended");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    let owner = AccessToken::parse(&token).expect("token").owner();
    for id in &ids {
        let log = store.events_since(&TaskId::new(id.as_str()), &owner, 0).await.expect("log").expect("owned");
        let results = log.iter().filter(|event| matches!(event.kind, TaskEventKind::Result { .. })).count();
        assert_eq!(results, 1, "task {id} completed exactly once");
    }
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_sqlite_worker_loses_no_task() {
    let dir = std::env::temp_dir().join(format!("accord-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("tasks.db");
    let url = format!("sqlite://{}", path.display());
    // The schema exists before the workers start; the test reads the logs through this store.
    let store = accord_store_sqlite::SqliteStore::open(accord_store_sqlite::SqliteStoreConfig::new(&path))
        .await
        .expect("open the file");
    kill_one_worker_mid_flight(&url, Arc::new(store)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn pg_url() -> String {
    std::env::var("ACCORD_PG_URL")
        .expect("ACCORD_PG_URL is not set: run the tests through scripts/with-postgres (scripts/test does)")
}

async fn pg_store() -> Arc<dyn TaskStore> {
    let config = accord_store_postgres::PostgresStoreConfig::new(pg_url());
    Arc::new(accord_store_postgres::PostgresStore::connect(config).await.expect("connect"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_postgres_worker_loses_no_task() {
    let store = pg_store().await;
    kill_one_worker_mid_flight(&pg_url(), store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_on_another_worker_resumes_without_loss() {
    let url = pg_url();
    let a = worker(&url, "sub-a");
    let b = worker(&url, "sub-b");
    let client = Client::new();
    let token = unique_token();
    let card_a = client.fetch_card(&a.url).await.expect("a's card");
    let card_b = client.fetch_card(&b.url).await.expect("b's card");
    let options = SendOptions { access_token: Some(token.clone()), ..SendOptions::default() };
    let sent = client.send_message(&card_a, "slow", json!({"seconds": 1}), options).await.expect("sent to a");
    let access = TaskAccess { task_id: sent.access.task_id.clone(), access_token: token };

    // On b: read the first event, hang up.
    let mut first = client.subscribe_task(&card_b, &access, None).await.expect("subscribe on b");
    let seen = first.next().await.expect("an event").expect("ok");
    assert_eq!((seen.event.as_str(), seen.data.status), ("statusUpdate", Some(TaskStatus::Running)));
    let last_id = seen.id.clone().expect("an event id");
    drop(first);

    // Reconnect with Last-Event-ID: exactly what came after, ending with the result.
    let resumed: Vec<_> = client
        .subscribe_task(&card_b, &access, Some(&last_id))
        .await
        .expect("resubscribe on b")
        .try_collect()
        .await
        .expect("the events");
    let after: u64 = last_id.parse().expect("numeric id");
    assert!(
        resumed.iter().all(|event| event
            .id
            .as_deref()
            .and_then(|id| id.parse::<u64>().ok())
            .is_some_and(|id| id > after))
    );
    let last = resumed.last().expect("events after the first");
    assert_eq!((last.event.as_str(), last.data.status), ("resultUpdate", Some(TaskStatus::Completed)));
    let ids: Vec<u64> = resumed.iter().filter_map(|event| event.id.as_deref()?.parse().ok()).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "in order, none repeated: {ids:?}");
    drop((a, b));
}
