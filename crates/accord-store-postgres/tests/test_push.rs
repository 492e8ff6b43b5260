//! Push configs and their outbox on PostgreSQL: what the conformance suite cannot show with one
//! store — several workers claiming deliveries from one database, configs purged with their task,
//! and a log written by a worker that knows nothing of push configs.
//!
//! Needs a server: `scripts/with-postgres cargo test -p accord-store-postgres`.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use accord_engine::TaskState;
use accord_engine::task::{
    DeliverFrom, Millis, PushAuthentication, PushConfig, PushKey, PushPut, PushSettle, StoredPushConfig, StoredTask,
    Task, TaskEventKind, TaskId, TaskPayload, TaskResult, TaskStore, now_ms,
};
use accord_store_postgres::PostgresStore;
use common::{TestDatabase, owner};
use serde_json::json;
use tokio::sync::Barrier;

const MINUTE: Millis = 60_000;
const HOUR: Millis = 60 * MINUTE;

fn record(created_at: Millis) -> StoredTask {
    StoredTask {
        task: Task::submitted(TaskId::generate(), "work", None, created_at),
        owner: owner("alice"),
        payload: TaskPayload::new("work", json!({"n": 1})),
        admission_expires_at: None,
        lease: None,
    }
}

async fn create(store: &PostgresStore, created_at: Millis) -> TaskId {
    let record = record(created_at);
    let id = record.task.id.clone();
    store.create(record, TaskEventKind::Status { state: TaskState::Submitted, message: None }).await.expect("create");
    id
}

fn sealed(key: &PushKey, task: &TaskId, id: &str, at: Millis) -> StoredPushConfig {
    let config = PushConfig {
        id: id.into(),
        url: format!("https://hooks.example/{id}"),
        token: Some("token".into()),
        authentication: Some(PushAuthentication { scheme: "Bearer".into(), credentials: Some("secret".into()) }),
    };
    key.stored(task, &config, at)
}

async fn put(store: &PostgresStore, config: StoredPushConfig, from: DeliverFrom) {
    let put = store.put_push_config(&owner("alice"), config, from).await.expect("put a push config");
    assert_eq!(put, PushPut::Stored);
}

async fn config_rows(database: &TestDatabase, task: &TaskId) -> i64 {
    let mut connection = database.connection().await;
    sqlx::query_scalar("SELECT count(*) FROM accord_push_configs WHERE task_id = $1")
        .bind(task.as_str())
        .fetch_one(&mut connection)
        .await
        .expect("count a task's push configs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_claiming_at_once_take_each_config_once() {
    const TASKS: usize = 30;
    const CONFIGS_PER_TASK: usize = 3;
    let database = TestDatabase::create().await;
    let workers = [Arc::new(database.store().await), Arc::new(database.store().await)];
    let key = PushKey::generate();
    let base = now_ms();
    let mut expected = Vec::new();
    for n in 0..TASKS {
        let task = create(&workers[n % 2], base).await;
        for c in 0..CONFIGS_PER_TASK {
            let id = format!("hook-{c}");
            put(&workers[(n + c) % 2], sealed(&key, &task, &id, base), DeliverFrom::After(0)).await;
            expected.push((task.as_str().to_owned(), id));
        }
    }
    expected.sort();

    // Each worker claims a few at a time, from the same instant, until nothing is left for it.
    let start = Arc::new(Barrier::new(workers.len()));
    let claims: Vec<_> = workers
        .iter()
        .enumerate()
        .map(|(n, store)| {
            let (store, start) = (Arc::clone(store), Arc::clone(&start));
            tokio::spawn(async move {
                let worker = format!("worker-{n}");
                start.wait().await;
                let mut taken = Vec::new();
                loop {
                    let claimed =
                        store.claim_push_deliveries(&worker, base, base + MINUTE, 4, 10).await.expect("claim");
                    if claimed.is_empty() {
                        return (worker, taken);
                    }
                    for delivery in claimed {
                        assert_eq!(
                            delivery.events.iter().map(|event| event.sequence).collect::<Vec<_>>(),
                            [1],
                            "the whole log after the cursor"
                        );
                        taken.push((delivery.config.task_id.as_str().to_owned(), delivery.config.id));
                    }
                }
            })
        })
        .collect();
    let mut by_worker = BTreeMap::new();
    let mut taken = Vec::new();
    for claim in claims {
        let (worker, mine) = claim.await.expect("the claims complete");
        by_worker.insert(worker.clone(), mine.len());
        taken.extend(mine.into_iter().map(|config| (config, worker.clone())));
    }
    let mut configs: Vec<_> = taken.iter().map(|(config, _)| config.clone()).collect();
    configs.sort();
    assert_eq!(configs, expected, "every config was taken exactly once ({by_worker:?})");

    // The database agrees on who holds each lease.
    let mut connection = database.connection().await;
    let leases: Vec<(String, String, String)> =
        sqlx::query_as("SELECT task_id, id, lease_worker FROM accord_push_configs ORDER BY task_id, id")
            .fetch_all(&mut connection)
            .await
            .expect("read the leases");
    let mut held: Vec<_> = taken.into_iter().map(|((task, id), worker)| (task, id, worker)).collect();
    held.sort();
    assert_eq!(leases, held);
    assert!(
        workers[0]
            .claim_push_deliveries("worker-2", base + MINUTE - 1, base + 2 * MINUTE, 100, 10)
            .await
            .expect("claim")
            .is_empty()
    );

    drop(connection);
    for store in &workers {
        store.close().await;
    }
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_configs_are_purged_with_their_task_after_its_retention() {
    let database = TestDatabase::create().await;
    let store = database.store_with(database.config().retention(Duration::from_millis(HOUR))).await;
    let key = PushKey::generate();
    let base = now_ms();
    let done = create(&store, base).await;
    let live = create(&store, base).await;
    for task in [&done, &live] {
        for id in ["a", "b"] {
            put(&store, sealed(&key, task, id, base), DeliverFrom::Now).await;
        }
    }
    let finished_at = base + 1000;
    let result = TaskEventKind::Result { result: TaskResult { output: json!(1), ..TaskResult::default() } };
    let all = [TaskState::Submitted, TaskState::Working];
    store.compare_and_set(&done, &all, result, None, finished_at).await.expect("finish").expect("accepted");

    assert_eq!(store.housekeep(finished_at + HOUR - 1).await.expect("housekeep").purged, 0);
    assert_eq!(config_rows(&database, &done).await, 2, "kept with the task during its retention");
    assert_eq!(store.housekeep(finished_at + HOUR).await.expect("housekeep").purged, 1);
    assert_eq!(config_rows(&database, &done).await, 0, "gone with the task");
    assert_eq!(store.push_configs(&done, &owner("alice")).await.expect("read"), None);
    assert_eq!(config_rows(&database, &live).await, 2, "another task's configs stay");
    assert_eq!(store.push_configs(&live, &owner("alice")).await.expect("read").expect("the task").len(), 2);

    store.close().await;
    database.drop_database().await;
}

/// A worker of a release that knows nothing of push configs appends to the log with its own
/// statements: the appended entries are still delivered (the database itself keeps each config's
/// copy of the task's last sequence).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_appended_by_a_worker_that_knows_no_push_configs_are_delivered() {
    let database = TestDatabase::create().await;
    let store = database.store().await;
    let key = PushKey::generate();
    let base = now_ms();
    let task = create(&store, base).await;
    put(&store, sealed(&key, &task, "hook", base), DeliverFrom::Now).await;
    assert!(store.claim_push_deliveries("w", base, base + MINUTE, 10, 10).await.expect("claim").is_empty());

    let mut connection = database.connection().await;
    let working = serde_json::to_string(&TaskEventKind::Status { state: TaskState::Working, message: None })
        .expect("an event serializes");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "BEGIN; \
         INSERT INTO accord_task_events (task_id, sequence, at, kind) VALUES ('{id}', 2, {base}, '{working}'); \
         UPDATE accord_tasks SET last_sequence = 2, state = 'working' WHERE id = '{id}'; \
         COMMIT;",
        id = task.as_str(),
    )))
    .execute(&mut connection)
    .await
    .expect("append as an older worker would");

    let claimed = store.claim_push_deliveries("w", base, base + MINUTE, 10, 10).await.expect("claim");
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].events.iter().map(|event| event.sequence).collect::<Vec<_>>(), [2]);
    let settle = PushSettle { delivered_through: 2, attempts: 0, next_attempt_at: base, dead_letter: None };
    assert!(store.settle_push_delivery(&task, "hook", "w", settle, base).await.expect("settle"));
    assert!(store.claim_push_deliveries("w", base, base + MINUTE, 10, 10).await.expect("claim").is_empty());

    drop(connection);
    store.close().await;
    database.drop_database().await;
}
