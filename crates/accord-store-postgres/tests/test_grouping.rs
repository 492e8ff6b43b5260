//! What grouping adds: writes queued together commit in one transaction, each answered as if it
//! were alone; workers racing grouped writes on the same tasks neither lose nor duplicate a log
//! entry and never deadlock; a lost connection fails only its group.
//!
//! A writer is held back deterministically by locking a task's row from another connection: the
//! writes queued behind it meanwhile make up its next group. Which rows a transaction wrote is
//! read from PostgreSQL itself (`xmin`, the id of the transaction that wrote a row).
//!
//! Needs a server: `scripts/with-postgres cargo test -p accord-store-postgres`.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{
    Millis, StoreError, StoredTask, Task, TaskEventKind, TaskId, TaskPayload, TaskStore, now_ms,
};
use accord_engine::{Message, TaskState};
use accord_store_postgres::{PostgresStore, WRITER_APPLICATION_NAME};
use common::{PATIENCE, TestDatabase, owner};
use serde_json::json;
use sqlx::{Connection, PgConnection};

const MINUTE: Millis = 60_000;
const ACTIVE: &[TaskState] =
    &[TaskState::Submitted, TaskState::Working, TaskState::InputRequired, TaskState::AuthRequired];

fn record() -> StoredTask {
    let now = now_ms();
    StoredTask {
        task: Task::submitted(TaskId::generate(), "work", None, now),
        owner: owner("alice"),
        payload: TaskPayload::new("work", json!({"n": 1})),
        admission_expires_at: Some(now + 10 * MINUTE),
        lease: None,
    }
}

fn submitted() -> TaskEventKind {
    TaskEventKind::Status { state: TaskState::Submitted, message: None }
}

fn status(state: TaskState) -> TaskEventKind {
    TaskEventKind::Status { state, message: None }
}

fn said(text: &str) -> TaskEventKind {
    TaskEventKind::Message { message: Message::agent_text(text) }
}

async fn created(store: &PostgresStore) -> TaskId {
    let record = record();
    let id = record.task.id.clone();
    store.create(record, submitted()).await.expect("create a task");
    id
}

async fn sequences(store: &PostgresStore, id: &TaskId) -> Vec<u64> {
    let log = store.events_since(id, &owner("alice"), 0).await.expect("events since").expect("the task's log");
    log.into_iter().map(|event| event.sequence).collect()
}

/// A row lock held by another connection: the writer group that appends to the task waits for it.
struct Blocker {
    connection: PgConnection,
}

impl Blocker {
    async fn lock(database: &TestDatabase, id: &TaskId) -> Self {
        let mut connection = database.connection().await;
        sqlx::raw_sql("BEGIN").execute(&mut connection).await.expect("begin");
        sqlx::query("SELECT 1 FROM accord_tasks WHERE id = $1 FOR UPDATE")
            .bind(id.as_str())
            .execute(&mut connection)
            .await
            .expect("lock the task's row");
        Self { connection }
    }

    async fn release(mut self) {
        sqlx::raw_sql("ROLLBACK").execute(&mut self.connection).await.expect("release the row lock");
        let _ = self.connection.close().await;
    }
}

/// Waits until one of the store's writers waits for a row lock.
async fn until_a_writer_waits(admin: &mut PgConnection) {
    let waiting = async {
        loop {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND application_name = $1 AND wait_event_type = 'Lock'",
            )
            .bind(WRITER_APPLICATION_NAME)
            .fetch_one(&mut *admin)
            .await
            .expect("read pg_stat_activity");
            if waiting > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, waiting).await.expect("a writer waits for the locked row");
}

/// Lets spawned writes reach the writers' queue (queueing takes microseconds; this is ample).
async fn until_queued() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// Terminates the store's writer connections; one `true` per connection terminated.
async fn terminate_writers(admin: &mut PgConnection) -> Vec<bool> {
    sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() \
         AND application_name = $1",
    )
    .bind(WRITER_APPLICATION_NAME)
    .fetch_all(admin)
    .await
    .expect("terminate the writer's connection")
}

/// The ids of the transactions that wrote the tasks' rows.
async fn writers_of(admin: &mut PgConnection, ids: &[TaskId]) -> BTreeSet<String> {
    let ids: Vec<&str> = ids.iter().map(TaskId::as_str).collect();
    let xmins: Vec<String> = sqlx::query_scalar("SELECT xmin::text FROM accord_tasks WHERE id = ANY($1)")
        .bind(ids.as_slice())
        .fetch_all(&mut *admin)
        .await
        .expect("read the rows' transaction ids");
    xmins.into_iter().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_and_appends_share_one_transaction_and_each_is_answered() {
    const EACH: usize = 100;
    let database = TestDatabase::create().await;
    let store = Arc::new(database.store_with(database.config().writers(1)).await);
    let mut admin = database.connection().await;
    let blocker_id = created(&store).await;
    let mut existing = Vec::new();
    for _ in 0..EACH {
        existing.push(created(&store).await);
    }

    let blocker = Blocker::lock(&database, &blocker_id).await;
    let held = {
        let (store, id) = (Arc::clone(&store), blocker_id.clone());
        tokio::spawn(
            async move { store.compare_and_set(&id, ACTIVE, status(TaskState::Working), None, now_ms()).await },
        )
    };
    until_a_writer_waits(&mut admin).await;
    let creates: Vec<_> = (0..EACH)
        .map(|_| {
            let store = Arc::clone(&store);
            let record = record();
            tokio::spawn(async move { (record.clone(), store.create_with(record, submitted(), Vec::new()).await) })
        })
        .collect();
    let appends: Vec<_> = existing
        .iter()
        .enumerate()
        .map(|(n, id)| {
            let (store, id) = (Arc::clone(&store), id.clone());
            let events = vec![status(TaskState::Working), said(&format!("task {n}"))];
            tokio::spawn(async move { store.append_all(&id, &[TaskState::Submitted], events, None, now_ms()).await })
        })
        .collect();
    until_queued().await;
    blocker.release().await;

    let first = held.await.expect("the held write completes").expect("cas").expect("accepted");
    assert_eq!(first.task.state, TaskState::Working);
    let mut new_ids = Vec::new();
    for create in creates {
        let (given, answer) = create.await.expect("the create completes");
        let stored = answer.expect("every create is stored");
        assert_eq!(stored, given, "the create answers the record as stored");
        assert_eq!(store.get(&given.task.id).await.expect("get"), Some(given.clone()));
        new_ids.push(given.task.id);
    }
    for (n, (append, id)) in appends.into_iter().zip(&existing).enumerate() {
        let written = append.await.expect("the append completes").expect("append").expect("accepted");
        assert_eq!(written.task.id, *id, "each append answers its own task");
        assert_eq!(written.task.state, TaskState::Working);
        assert_eq!(written.task.history.last().map(Message::text), Some(format!("task {n}")));
        assert_eq!(store.get(id).await.expect("get"), Some(written));
        assert_eq!(sequences(&store, id).await, vec![1, 2, 3]);
    }
    let mut everything = new_ids.clone();
    everything.extend(existing.iter().cloned());
    assert_eq!(
        writers_of(&mut admin, &everything).await.len(),
        1,
        "the writes queued behind the held group committed in one transaction"
    );

    store.close().await;
    drop(admin);
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_group_a_duplicate_and_a_failed_condition_are_refused_alone() {
    let database = TestDatabase::create().await;
    let store = Arc::new(database.store_with(database.config().writers(1)).await);
    let mut admin = database.connection().await;
    let blocker_id = created(&store).await;
    let existing = created(&store).await;
    let (unmet, met, fenced) = (created(&store).await, created(&store).await, created(&store).await);
    store.claim_execution(&fenced, "worker-a", now_ms() + MINUTE, now_ms()).await.expect("claim").expect("claimed");

    let blocker = Blocker::lock(&database, &blocker_id).await;
    let held = {
        let (store, id) = (Arc::clone(&store), blocker_id.clone());
        tokio::spawn(
            async move { store.compare_and_set(&id, ACTIVE, status(TaskState::Working), None, now_ms()).await },
        )
    };
    until_a_writer_waits(&mut admin).await;

    let create = |record: StoredTask| {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.create(record, submitted()).await.map(|_| ()) })
    };
    let append = |id: &TaskId, expected: &'static [TaskState], owner: Option<&'static str>| {
        let (store, id) = (Arc::clone(&store), id.clone());
        tokio::spawn(async move { store.compare_and_set(&id, expected, said("hello"), owner, now_ms()).await })
    };
    let mut duplicate = record();
    duplicate.task.id = existing.clone();
    let new = record();
    let new_id = new.task.id.clone();
    let twice = record();
    let twice_id = twice.task.id.clone();
    let mut nul = record();
    nul.payload.input = json!({"text": "before\u{0}after"});
    let nul_id = nul.task.id.clone();

    let duplicate = create(duplicate);
    let new = create(new);
    let twice = [create(twice.clone()), create(twice)];
    let nul = create(nul);
    let unmet_answer = append(&unmet, &[TaskState::Working], None);
    let met_answer = append(&met, &[TaskState::Submitted], None);
    let fenced_answer = append(&fenced, ACTIVE, Some("worker-b"));
    until_queued().await;
    blocker.release().await;
    held.await.expect("the held write completes").expect("cas").expect("accepted");

    assert_eq!(duplicate.await.expect("completes"), Err(StoreError::DuplicateId(existing.clone())));
    assert_eq!(new.await.expect("completes"), Ok(()));
    let mut twice_answers = Vec::new();
    for answer in twice {
        twice_answers.push(answer.await.expect("completes"));
    }
    twice_answers.sort_by_key(Result::is_err);
    assert_eq!(twice_answers, vec![Ok(()), Err(StoreError::DuplicateId(twice_id.clone()))]);
    let refused = nul.await.expect("completes").expect_err("JSONB cannot hold a NUL character");
    assert!(matches!(&refused, StoreError::Unavailable(message) if message.contains("NUL character")), "{refused:?}");
    assert_eq!(unmet_answer.await.expect("completes"), Ok(None), "the condition does not hold");
    assert_eq!(fenced_answer.await.expect("completes"), Ok(None), "another worker holds the lease");
    let written = met_answer.await.expect("completes").expect("cas").expect("the condition holds");
    assert_eq!(written.task.history.len(), 1);

    assert_eq!(store.get(&nul_id).await.expect("get"), None, "nothing of the refused create was stored");
    assert_eq!(sequences(&store, &existing).await, vec![1], "the duplicate changed nothing");
    assert_eq!(sequences(&store, &unmet).await, vec![1]);
    assert_eq!(sequences(&store, &fenced).await, vec![1]);
    assert_eq!(sequences(&store, &met).await, vec![1, 2]);
    assert_eq!(
        writers_of(&mut admin, &[new_id, twice_id.clone(), met]).await.len(),
        1,
        "the writes that were not refused committed together"
    );

    store.close().await;
    drop(admin);
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_racing_grouped_appends_on_the_same_tasks_keep_every_log_gapless() {
    const TASKS: usize = 6;
    const WRITERS: usize = 24;
    const ROUNDS: usize = 12;
    let database = TestDatabase::create().await;
    let workers = [Arc::new(database.store().await), Arc::new(database.store().await)];
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        tasks.push(created(&workers[0]).await);
    }

    let racers: Vec<_> = (0..2 * WRITERS)
        .map(|racer| {
            let store = Arc::clone(&workers[racer % 2]);
            let tasks = tasks.clone();
            tokio::spawn(async move {
                let mut appended: HashMap<TaskId, u64> = HashMap::new();
                for round in 0..ROUNDS {
                    // Every racer visits the tasks in its own order, one or two entries at a time.
                    let id = &tasks[(racer * 7 + round * 5) % TASKS];
                    let events = if (racer + round) % 3 == 0 {
                        vec![said(&format!("{racer}/{round}a")), said(&format!("{racer}/{round}b"))]
                    } else {
                        vec![said(&format!("{racer}/{round}"))]
                    };
                    let count = events.len() as u64;
                    let written = store.append_all(id, ACTIVE, events, None, now_ms()).await;
                    assert!(matches!(written, Ok(Some(_))), "racer {racer} round {round}: {written:?}");
                    *appended.entry(id.clone()).or_default() += count;
                }
                appended
            })
        })
        .collect();
    let mut appended: HashMap<TaskId, u64> = HashMap::new();
    let all = async {
        for racer in racers {
            for (id, count) in racer.await.expect("the racer completes") {
                *appended.entry(id).or_default() += count;
            }
        }
    };
    tokio::time::timeout(PATIENCE * 3, all).await.expect("the racing workers never deadlock");

    for id in &tasks {
        let expected = 1 + appended.get(id).copied().unwrap_or(0);
        assert_eq!(sequences(&workers[1], id).await, (1..=expected).collect::<Vec<_>>(), "gapless and complete");
        let record = workers[0].get(id).await.expect("get").expect("the task");
        assert_eq!(record.task.history.len() as u64, expected - 1, "the record holds every appended message");
    }
    for store in &workers {
        store.close().await;
    }
    // Closed backends have reported their statistics.
    let mut admin = database.connection().await;
    let deadlocks = async {
        loop {
            sqlx::query("SELECT pg_stat_clear_snapshot()").execute(&mut admin).await.expect("fresh statistics");
            let (backends, deadlocks): (i32, i64) = sqlx::query_as(
                "SELECT numbackends, deadlocks FROM pg_stat_database WHERE datname = current_database()",
            )
            .fetch_one(&mut admin)
            .await
            .expect("read the database's statistics");
            if backends <= 1 {
                return deadlocks;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let deadlocks = tokio::time::timeout(PATIENCE, deadlocks).await.expect("the stores' connections close");
    assert_eq!(deadlocks, 0, "PostgreSQL detected no deadlock");
    drop(admin);
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_lost_mid_group_fails_that_group_and_the_store_recovers() {
    let database = TestDatabase::create().await;
    let store = Arc::new(database.store_with(database.config().writers(1)).await);
    let mut admin = database.connection().await;
    let (locked, other) = (created(&store).await, created(&store).await);

    let blocker = Blocker::lock(&database, &locked).await;
    let append = |id: &TaskId| {
        let (store, id) = (Arc::clone(&store), id.clone());
        tokio::spawn(async move { store.compare_and_set(&id, ACTIVE, said("hello"), None, now_ms()).await })
    };
    let first = append(&locked);
    until_a_writer_waits(&mut admin).await;
    // Queued behind the first group: the next group, which waits for the same row.
    let new = record();
    let new_id = new.task.id.clone();
    let second = [
        {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.create(new, submitted()).await.map(|_| None) })
        },
        append(&other),
        append(&locked),
    ];
    until_queued().await;
    assert_eq!(terminate_writers(&mut admin).await, vec![true]);
    let failed = first.await.expect("the first group's write completes");
    assert!(matches!(failed, Err(StoreError::Unavailable(_))), "{failed:?}");

    until_a_writer_waits(&mut admin).await;
    assert_eq!(terminate_writers(&mut admin).await, vec![true], "the writer reconnected for its next group");
    for answer in second {
        let answer = answer.await.expect("the second group's write completes");
        assert!(matches!(answer, Err(StoreError::Unavailable(_))), "every write of the group fails: {answer:?}");
    }
    blocker.release().await;

    assert_eq!(store.get(&new_id).await.expect("get"), None, "nothing of the failed groups was committed");
    assert_eq!(sequences(&store, &locked).await, vec![1]);
    assert_eq!(sequences(&store, &other).await, vec![1]);
    let later = created(&store).await;
    store.compare_and_set(&other, ACTIVE, said("again"), None, now_ms()).await.expect("cas").expect("accepted");
    assert_eq!(sequences(&store, &other).await, vec![1, 2], "the store writes again");
    assert_eq!(sequences(&store, &later).await, vec![1]);

    store.close().await;
    drop(admin);
    database.drop_database().await;
}
