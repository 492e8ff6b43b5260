//! What only a PostgreSQL store does: several workers on one database, reconnects, concurrent
//! migrations, the capacity limit across workers, retention, and operator-safe errors.
//!
//! Needs a server: `scripts/with-postgres cargo test -p accord-store-postgres`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{
    CreateLimits, ListQuery, Millis, Reservation, RuntimeConfig, StoreError, StoredTask, Task, TaskEvent,
    TaskEventKind, TaskId, TaskPayload, TaskResult, TaskRuntime, TaskStore, now_ms,
};
use accord_engine::{Agent, Completion, Message, Outcome, Run, RunEvent, Skill, TaskState};
use accord_store_postgres::{LISTENER_APPLICATION_NAME, PostgresStore, PostgresStoreConfig};
use common::{PATIENCE, TestDatabase, owner, woken};
use futures_util::StreamExt;
use serde_json::json;
use tokio::sync::{Barrier, Notify};

const MINUTE: Millis = 60_000;
const HOUR: Millis = 60 * MINUTE;
const RUNNING: &[TaskState] = &[TaskState::Submitted, TaskState::Working];
const ACTIVE: &[TaskState] =
    &[TaskState::Submitted, TaskState::Working, TaskState::InputRequired, TaskState::AuthRequired];

fn record(owner_name: &str, created_at: Millis, admission: Option<Millis>) -> StoredTask {
    StoredTask {
        task: Task::submitted(TaskId::generate(), "work", None, created_at),
        owner: owner(owner_name),
        payload: TaskPayload::new("work", json!({"n": 1})),
        admission_expires_at: admission,
        lease: None,
    }
}

fn submitted() -> TaskEventKind {
    TaskEventKind::Status { state: TaskState::Submitted, message: None }
}

fn status(state: TaskState) -> TaskEventKind {
    TaskEventKind::Status { state, message: None }
}

async fn create(store: &PostgresStore, record: StoredTask) -> TaskId {
    let id = record.task.id.clone();
    store.create(record, submitted()).await.expect("create a task");
    id
}

async fn set(store: &PostgresStore, id: &TaskId, event: TaskEventKind, now: Millis) -> StoredTask {
    store.compare_and_set(id, ACTIVE, event, None, now).await.expect("compare and set").expect("the write is accepted")
}

async fn log(store: &PostgresStore, id: &TaskId, owner_name: &str) -> Vec<TaskEvent> {
    store.events_since(id, &owner(owner_name), 0).await.expect("events since").expect("the owner's task has a log")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_committed_on_one_worker_wakes_a_subscriber_on_another() {
    let database = TestDatabase::create().await;
    let (a, b) = (database.store().await, database.store().await);
    let base = now_ms();
    let id = create(&a, record("alice", base, Some(base + 10 * MINUTE))).await;
    let mut wakeups = b.subscribe(&id, &owner("alice")).await.expect("subscribe").expect("the owner subscribes on b");

    let changes = [status(TaskState::Working), TaskEventKind::Message { message: Message::agent_text("halfway") }];
    for (sequence, change) in (2..).zip(changes) {
        set(&a, &id, change.clone(), base + sequence).await;
        woken(&mut wakeups).await;
        let new = b.events_since(&id, &owner("alice"), sequence - 1).await.expect("events since").expect("owned");
        assert_eq!(
            new.iter().map(|event| (event.sequence, &event.kind)).collect::<Vec<_>>(),
            vec![(sequence, &change)]
        );
    }

    a.close().await;
    b.close().await;
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_on_another_worker_streams_every_event_of_a_running_task_in_order() {
    let database = TestDatabase::create().await;
    let release = Arc::new(Notify::new());
    let skill = {
        let release = Arc::clone(&release);
        Skill::builder("work").invoke(move |run: Run| {
            let release = Arc::clone(&release);
            async move {
                run.emit(RunEvent::Message(Message::agent_text("one"))).await;
                release.notified().await;
                run.emit(RunEvent::Message(Message::agent_text("two"))).await;
                Ok(Outcome::Completed(Completion::new(json!({"done": true}))))
            }
        })
    };
    let agent = Agent::builder("postgres-test-agent").skill(skill).build().expect("a valid agent");
    let config = |worker: &str| RuntimeConfig::default().worker_id(worker).recovery_interval(None);
    let store_a: Arc<dyn TaskStore> = Arc::new(database.store().await);
    let store_b: Arc<dyn TaskStore> = Arc::new(database.store().await);
    let a = TaskRuntime::new(agent.clone(), Arc::clone(&store_a), config("a"));
    let b = TaskRuntime::new(agent, Arc::clone(&store_b), config("b"));

    let alice = owner("alice");
    let input = a.agent().skill("work").expect("the skill").validate_input(json!({})).expect("valid input");
    let task = a.start(Reservation::new(alice, input)).await.expect("worker a starts the task");
    let mut events = b.events(&task.id, &alice, 0).await.expect("worker b follows the task");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let event = tokio::time::timeout(PATIENCE, events.next()).await.expect("the next event in time");
        seen.push(event.expect("the stream goes on").expect("an event"));
    }
    release.notify_one();
    while let Some(event) = tokio::time::timeout(PATIENCE, events.next()).await.expect("the rest in time") {
        seen.push(event.expect("an event"));
    }

    // Messages get fresh ids, so the stream is compared by what each event says.
    let said: Vec<String> = seen
        .iter()
        .map(|event| match &event.kind {
            TaskEventKind::Status { state, .. } => format!("status {state:?}"),
            TaskEventKind::Message { message } => format!("message {}", message.text()),
            TaskEventKind::Result { result } => format!("result {}", result.output),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        said,
        ["status Submitted", "status Working", "message one", "message two", r#"result {"done":true}"#],
        "worker b streams what worker a wrote, in order, and ends after the result"
    );
    assert_eq!(seen, store_b.events_since(&task.id, &alice, 0).await.expect("events").expect("owned"));

    a.close().await;
    b.close().await;
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_racing_for_a_claim_have_exactly_one_winner() {
    const ROUNDS: usize = 20;
    let database = TestDatabase::create().await;
    let workers = [Arc::new(database.store().await), Arc::new(database.store().await)];
    let base = now_ms();
    for round in 0..ROUNDS {
        let id = create(&workers[round % 2], record("alice", base, Some(base + 10 * MINUTE))).await;
        let start = Arc::new(Barrier::new(workers.len()));
        let claims: Vec<_> = workers
            .iter()
            .enumerate()
            .map(|(n, store)| {
                let (store, id, start) = (Arc::clone(store), id.clone(), Arc::clone(&start));
                tokio::spawn(async move {
                    let worker = format!("worker-{n}");
                    start.wait().await;
                    let claim = store.claim_execution(&id, &worker, base + 5 * MINUTE, base).await.expect("claim");
                    claim.map(|record| (worker, record))
                })
            })
            .collect();
        let mut winners = Vec::new();
        for claim in claims {
            winners.extend(claim.await.expect("the claim completes"));
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one worker wins the claim");
        let (winner, granted) = &winners[0];
        let stored = workers[0].get(&id).await.expect("get").expect("the task exists");
        assert_eq!(stored.lease, granted.lease);
        assert_eq!(stored.lease.map(|lease| lease.owner_id), Some(winner.clone()));
    }
    for store in &workers {
        store.close().await;
    }
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_logs_and_leases_survive_a_reconnect() {
    let database = TestDatabase::create().await;
    let base = now_ms();
    let store = database.store().await;
    let finished = create(&store, record("alice", base, Some(base + 10 * MINUTE))).await;
    store.claim_execution(&finished, "a", base + 5 * MINUTE, base).await.expect("claim").expect("claimed");
    store.activate_execution(&finished, "a", base + 5 * MINUTE, base).await.expect("activate").expect("active");
    store.compare_and_set(&finished, RUNNING, status(TaskState::Working), Some("a"), base + 1).await.expect("cas");
    let result =
        TaskEventKind::Result { result: TaskResult { output: json!({"kept": true}), ..TaskResult::default() } };
    store.compare_and_set(&finished, RUNNING, result, Some("a"), base + 2).await.expect("cas").expect("completed");
    let running = create(&store, record("alice", base + 1, Some(base + 10 * MINUTE))).await;
    store.claim_execution(&running, "a", base + MINUTE, base).await.expect("claim").expect("claimed");
    store.activate_execution(&running, "a", base + MINUTE, base).await.expect("activate").expect("active");

    let before = (
        store.get(&finished).await.expect("get"),
        store.get(&running).await.expect("get"),
        log(&store, &finished, "alice").await,
        store.list(&owner("alice"), &ListQuery::default()).await.expect("list"),
    );
    // Closing the store closes its pool; the next worker connects afresh.
    store.close().await;
    drop(store);

    let store = database.store().await;
    let after = (
        store.get(&finished).await.expect("get"),
        store.get(&running).await.expect("get"),
        log(&store, &finished, "alice").await,
        store.list(&owner("alice"), &ListQuery::default()).await.expect("list"),
    );
    assert_eq!(after, before, "records, logs and lists read the same after a reconnect");
    assert_eq!(before.0.map(|record| record.task.state), Some(TaskState::Completed));
    assert_eq!(before.2.len(), 3);
    assert_eq!(store.expired_active_leases(base + MINUTE, 10).await.expect("expired"), vec![running.clone()]);
    let recovered = store.claim_execution(&running, "b", base + 3 * MINUTE, base + MINUTE).await.expect("claim");
    assert!(recovered.is_some(), "the lapsed active lease kept across the reconnect is recoverable");

    store.close().await;
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_connecting_at_once_migrate_the_schema_once() {
    const WORKERS: usize = 4;
    let database = TestDatabase::create().await;
    let connects: Vec<_> = (0..WORKERS)
        .map(|_| {
            let config = database.config();
            tokio::spawn(async move { PostgresStore::connect(config).await })
        })
        .collect();
    let mut stores = Vec::new();
    for connect in connects {
        stores.push(connect.await.expect("the connect completes").expect("every concurrent connect succeeds"));
    }

    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .expect("the migrations directory")
        .filter(|entry| entry.as_ref().is_ok_and(|entry| entry.path().extension().is_some_and(|ext| ext == "sql")))
        .count();
    let mut connection = database.connection().await;
    let (applied, all_succeeded): (i64, bool) =
        sqlx::query_as("SELECT count(*), coalesce(bool_and(success), false) FROM _sqlx_migrations")
            .fetch_one(&mut connection)
            .await
            .expect("read the migration history");
    assert_eq!((applied, all_succeeded), (i64::try_from(migrations).expect("a few migrations"), true));

    let base = now_ms();
    let id = create(&stores[0], record("alice", base, None)).await;
    for store in &stores {
        assert!(store.get(&id).await.expect("get").is_some(), "every worker sees the shared schema and data");
    }
    for store in &stores {
        store.close().await;
    }
    drop(connection);
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_listener_connection_wakes_every_subscriber_and_listening_resumes() {
    let database = TestDatabase::create().await;
    // The only store on this database so far: its listening connection is the only one.
    let b = database.store().await;
    let base = now_ms();
    let id = create(&b, record("alice", base, Some(base + 10 * MINUTE))).await;
    let mut before = b.subscribe(&id, &owner("alice")).await.expect("subscribe").expect("owned");

    let mut admin = database.connection().await;
    let terminated: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() \
         AND application_name = $1",
    )
    .bind(LISTENER_APPLICATION_NAME)
    .fetch_all(&mut admin)
    .await
    .expect("terminate the listening connection");
    assert_eq!(terminated, vec![true], "the store's listening connection is terminated");

    // Nothing was written: only the reconnect can wake this subscriber.
    woken(&mut before).await;

    // A subscription made after the reconnect is woken by a write through another worker.
    let mut after = b.subscribe(&id, &owner("alice")).await.expect("subscribe").expect("owned");
    let c = database.store().await;
    set(&c, &id, status(TaskState::Working), base + 1).await;
    woken(&mut after).await;
    let new = b.events_since(&id, &owner("alice"), 1).await.expect("events since").expect("owned");
    assert_eq!(new.iter().map(|event| &event.kind).collect::<Vec<_>>(), vec![&status(TaskState::Working)]);

    b.close().await;
    c.close().await;
    drop(admin);
    database.drop_database().await;
}

/// A database of the first release: connecting adds the `skill` column, filled from each task,
/// so `list` finds the old tasks by skill; so it does the tasks a worker of the first release
/// still writes afterwards, without the column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_stored_before_the_skill_column_are_listed_by_skill() {
    let database = TestDatabase::create().await;
    let connection = database.earlier_schema(1).await;
    // A row as the first release writes it: without the skill column.
    let insert_as_first_release = |record: StoredTask| {
        let url = database.url.clone();
        async move {
            let mut connection = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await.expect("connect");
            sqlx::query(
                "INSERT INTO accord_tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload, \
                 last_sequence) VALUES ($1, $2, $3, 'submitted', $4, $4, $5, $6, 1)",
            )
            .bind(record.task.id.as_str())
            .bind(record.owner.to_hex())
            .bind(record.task.context_id.clone())
            .bind(i64::try_from(record.task.created_at).expect("a time"))
            .bind(sqlx::types::Json(&record.task))
            .bind(sqlx::types::Json(&record.payload))
            .execute(&mut connection)
            .await
            .expect("insert a task as the first release does");
            record.task.id
        }
    };
    let base = now_ms();
    let mut old = record("alice", base, None);
    old.task.skill = "summarize".into();
    let old = insert_as_first_release(old).await;

    let store = database.store().await;
    let mut later = record("alice", base + 1, None);
    later.task.skill = "summarize".into();
    let later = insert_as_first_release(later).await;
    let new = create(&store, record("alice", base + 2, None)).await;
    let by_skill = |skill: &str| ListQuery { skill: Some(skill.into()), ..ListQuery::default() };
    let page = store.list(&owner("alice"), &by_skill("summarize")).await.expect("list");
    assert_eq!(page.tasks.into_iter().map(|task| task.id).collect::<Vec<_>>(), vec![later, old]);
    let page = store.list(&owner("alice"), &by_skill("work")).await.expect("list");
    assert_eq!((page.tasks.into_iter().map(|task| task.id).collect::<Vec<_>>(), page.total), (vec![new], 1));

    store.close().await;
    drop(connection);
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capacity_limit_counts_tasks_that_are_not_terminal_after_reaping() {
    let database = TestDatabase::create().await;
    let store = database.store_with(database.config().max_active_tasks(Some(2))).await;
    let base = now_ms();
    let first = create(&store, record("alice", base, Some(base + 10 * MINUTE))).await;
    // Admitted until a moment ago by the wall clock: abandoned.
    let abandoned = create(&store, record("alice", base, Some(base.saturating_sub(1)))).await;

    let third = create(&store, record("alice", base, Some(base + 10 * MINUTE))).await;
    let reaped = store.get(&abandoned).await.expect("get").expect("the task exists");
    assert_eq!(reaped.task.state, TaskState::Canceled, "the abandoned reservation was reaped to make room");
    assert_eq!(log(&store, &abandoned, "alice").await.len(), 2);

    let refused = store.create(record("alice", base, None), submitted()).await;
    assert_eq!(refused, Err(StoreError::CapacityExhausted { capacity: 2 }));
    set(&store, &first, status(TaskState::Canceled), base + 1).await;
    let fourth = create(&store, record("alice", base, None)).await;
    let page = store.list(&owner("alice"), &ListQuery { states: Some(ACTIVE.to_vec()), ..ListQuery::default() }).await;
    let mut active: Vec<TaskId> = page.expect("list").tasks.into_iter().map(|task| task.id).collect();
    active.sort();
    let mut expected = vec![third, fourth];
    expected.sort();
    assert_eq!(active, expected);

    store.close().await;
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_never_both_take_the_last_place() {
    const ROUNDS: usize = 10;
    let database = TestDatabase::create().await;
    let config = database.config().max_active_tasks(Some(1));
    let workers = [Arc::new(database.store_with(config.clone()).await), Arc::new(database.store_with(config).await)];
    let base = now_ms();
    for round in 0..ROUNDS {
        let start = Arc::new(Barrier::new(workers.len()));
        let creates: Vec<_> = workers
            .iter()
            .map(|store| {
                let (store, start) = (Arc::clone(store), Arc::clone(&start));
                tokio::spawn(async move {
                    let new = record("alice", base, None);
                    let id = new.task.id.clone();
                    start.wait().await;
                    store.create(new, submitted()).await.map(|_| id)
                })
            })
            .collect();
        let mut created = Vec::new();
        for outcome in creates {
            match outcome.await.expect("the create completes") {
                Ok(id) => created.push(id),
                Err(error) => assert_eq!(error, StoreError::CapacityExhausted { capacity: 1 }),
            }
        }
        assert_eq!(created.len(), 1, "round {round}: exactly one worker takes the only place");
        set(&workers[0], &created[0], status(TaskState::Canceled), base + 1).await;
    }
    for store in &workers {
        store.close().await;
    }
    database.drop_database().await;
}

/// The per-owner share holds across workers: of creates for one owner racing on two workers, no
/// more than the share are stored, and another owner still gets through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_never_exceed_an_owners_share() {
    const SHARE: usize = 2;
    const PER_WORKER: usize = 6;
    let database = TestDatabase::create().await;
    let workers = [Arc::new(database.store().await), Arc::new(database.store().await)];
    let limits = CreateLimits::none().max_active_per_owner(Some(SHARE));
    let base = now_ms();
    let start = Arc::new(Barrier::new(2 * PER_WORKER));
    let creates: Vec<_> = workers
        .iter()
        .flat_map(|store| std::iter::repeat_n(store, PER_WORKER))
        .map(|store| {
            let (store, start) = (Arc::clone(store), Arc::clone(&start));
            tokio::spawn(async move {
                let new = record("alice", base, Some(base + 10 * MINUTE));
                start.wait().await;
                store.create_limited(new, submitted(), Vec::new(), limits).await
            })
        })
        .collect();
    let mut created = 0;
    for outcome in creates {
        match outcome.await.expect("the create completes") {
            Ok(_) => created += 1,
            Err(error) => assert_eq!(error, StoreError::OwnerShareExhausted { limit: SHARE }),
        }
    }
    assert_eq!(created, SHARE, "the two workers together store exactly the share");
    let bob = record("bob", base, Some(base + 10 * MINUTE));
    workers[1].create_limited(bob, submitted(), Vec::new(), limits).await.expect("another owner gets through");
    for store in &workers {
        store.close().await;
    }
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn housekeeping_reaps_and_purges_terminal_tasks_after_their_retention() {
    let database = TestDatabase::create().await;
    let store = database.store_with(database.config().retention(Duration::from_millis(HOUR))).await;
    let base = now_ms();
    let done = create(&store, record("alice", base, Some(base + 10 * MINUTE))).await;
    set(&store, &done, status(TaskState::Working), base + 1).await;
    let finished_at = base + 1000;
    let result = TaskEventKind::Result { result: TaskResult { output: json!(1), ..TaskResult::default() } };
    set(&store, &done, result, finished_at).await;
    let live = create(&store, record("alice", base, None)).await;
    let abandoned = create(&store, record("alice", base, Some(base + MINUTE))).await;

    let kept = store.housekeep(finished_at + HOUR - 1).await.expect("housekeep");
    assert_eq!((kept.reaped, kept.purged), (1, 0), "within its retention a terminal task is kept");
    assert!(store.get(&done).await.expect("get").is_some());
    let reaped = store.get(&abandoned).await.expect("get").expect("the reaped task is kept");
    assert_eq!(reaped.task.state, TaskState::Canceled);

    let purged = store.housekeep(finished_at + HOUR).await.expect("housekeep");
    assert_eq!((purged.reaped, purged.purged), (0, 1));
    assert_eq!(store.get(&done).await.expect("get"), None, "the task is gone after its retention");
    assert_eq!(store.events_since(&done, &owner("alice"), 0).await.expect("events since"), None);
    let mut connection = database.connection().await;
    let orphans: i64 = sqlx::query_scalar("SELECT count(*) FROM accord_task_events WHERE task_id = $1")
        .bind(done.as_str())
        .fetch_one(&mut connection)
        .await
        .expect("count the purged task's events");
    assert_eq!(orphans, 0, "its event log went with it");
    assert!(store.get(&live).await.expect("get").is_some(), "a task that is not terminal is never purged");
    assert!(store.get(&abandoned).await.expect("get").is_some(), "the task reaped later has its own retention");

    store.close().await;
    drop(connection);
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_reads_abandoned_work_as_reaped() {
    let database = TestDatabase::create().await;
    let store = database.store().await;
    let base = now_ms();
    let abandoned = create(&store, record("alice", base, Some(base.saturating_sub(1)))).await;
    let mut wakeups = store.subscribe(&abandoned, &owner("alice")).await.expect("subscribe").expect("owned");

    let read = store.get(&abandoned).await.expect("get").expect("the task exists");
    assert_eq!((read.task.state, read.admission_expires_at), (TaskState::Canceled, None));
    woken(&mut wakeups).await;
    let log = log(&store, &abandoned, "alice").await;
    assert_eq!(
        log.iter().map(|event| (event.sequence, &event.kind)).collect::<Vec<_>>(),
        vec![(1, &submitted()), (2, &status(TaskState::Canceled))]
    );
    assert_eq!(store.reap_expired_admissions(now_ms()).await.expect("reap"), 0, "it was reaped once");

    store.close().await;
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_errors_name_the_server_but_never_the_password() {
    let config = PostgresStoreConfig::new("postgres://accord:s3cret-pw@127.0.0.1:1/accord")
        .acquire_timeout(Duration::from_millis(500));
    let error = PostgresStore::connect(config).await.expect_err("nothing listens on port 1");
    let StoreError::Unavailable(message) = &error else { panic!("an unavailable store, not {error:?}") };
    assert!(message.contains("127.0.0.1:1"), "the message says which server: {message}");
    assert!(!message.contains("s3cret-pw"), "the message never shows the password: {message}");

    let error = PostgresStore::connect(PostgresStoreConfig::new("mysql://accord:s3cret-pw@db/accord"))
        .await
        .expect_err("not a PostgreSQL URL");
    let StoreError::Unavailable(message) = &error else { panic!("an unavailable store, not {error:?}") };
    assert!(message.starts_with("invalid PostgreSQL URL"), "{message}");
    assert!(!message.contains("s3cret-pw"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_id_too_long_for_a_notification_still_wakes_its_subscribers() {
    let database = TestDatabase::create().await;
    let (a, b) = (database.store().await, database.store().await);
    let base = now_ms();
    let mut long = record("alice", base, None);
    long.task.id = TaskId::new("x".repeat(9000));
    let id = create(&a, long).await;
    let mut wakeups = b.subscribe(&id, &owner("alice")).await.expect("subscribe").expect("owned");
    set(&a, &id, status(TaskState::Working), base + 1).await;
    woken(&mut wakeups).await;
    assert_eq!(log(&b, &id, "alice").await.len(), 2);

    a.close().await;
    b.close().await;
    database.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_postgres_cannot_store_is_refused_with_an_operator_message() {
    let database = TestDatabase::create().await;
    let store = database.store().await;
    let mut nul = record("alice", now_ms(), None);
    nul.payload.input = json!({"text": "before\u{0}after"});
    let id = nul.task.id.clone();

    let refused = store.create(nul, submitted()).await.expect_err("JSONB cannot hold a NUL character");
    let StoreError::Unavailable(message) = &refused else { panic!("an unavailable store, not {refused:?}") };
    assert!(message.contains("NUL character"), "{message}");
    assert_eq!(store.get(&id).await.expect("get"), None, "nothing was stored");

    store.close().await;
    database.drop_database().await;
}

/// The bytes a task takes in the database (its row's task and payload, and its log, as JSON text),
/// and whether the row keeps the task's body in its log.
async fn stored_bytes(connection: &mut sqlx::PgConnection, id: &TaskId) -> (i64, bool) {
    sqlx::query_as(
        "SELECT (octet_length(task::text) + octet_length(payload::text)
                 + (SELECT COALESCE(SUM(octet_length(kind::text)), 0) FROM accord_task_events
                    WHERE task_id = accord_tasks.id))::bigint,
                body_in_log
         FROM accord_tasks WHERE id = $1",
    )
    .bind(id.as_str())
    .fetch_one(connection)
    .await
    .expect("the task's row")
}

/// A finished task keeps its input, its history and its output once each (docs/limits.md,
/// "Stored once"): a task whose input is also its first message, and whose result repeats it (an
/// echo), takes about two copies of the text, where the whole task beside its log and payload took
/// five. Read back whole by `get`, `list` and a second store.
#[tokio::test]
async fn a_finished_task_keeps_each_large_part_once() {
    let database = TestDatabase::create().await;
    let store = database.store().await;
    let base = now_ms();
    let text = "an echoed sentence ".repeat(16 * 1024);
    let mut created = record("alice", base, None);
    created.payload = TaskPayload::new("work", json!({"text": text}));
    let id = create(&store, created).await;
    let said = Message::new(accord_engine::Role::User, vec![accord_engine::Part::Text(text.clone())]);
    set(&store, &id, TaskEventKind::Message { message: said.clone() }, base + 1).await;
    set(&store, &id, status(TaskState::Working), base + 2).await;
    let mut connection = database.connection().await;
    let (running, whole) = stored_bytes(&mut connection, &id).await;
    assert!(!whole, "an unfinished task is kept whole");
    assert!(running > 3 * text.len() as i64, "input, history and its log entry: {running} bytes");

    let result =
        TaskEventKind::Result { result: TaskResult { output: json!({"text": text}), ..TaskResult::default() } };
    let finished = set(&store, &id, result.clone(), base + 3).await;
    let (bytes, in_log) = stored_bytes(&mut connection, &id).await;
    assert!(in_log, "a finished task keeps its body in its log");
    assert!(bytes < 2 * text.len() as i64 + 4096, "the message and the result once each: {bytes} bytes");

    let read = store.get(&id).await.expect("get").expect("the task");
    assert_eq!(read.task, finished.task);
    assert_eq!(read.task.history, vec![said.clone()]);
    assert_eq!(read.payload.input, serde_json::Value::Null);
    let listed = store.list(&owner("alice"), &ListQuery::default()).await.expect("list");
    assert_eq!(listed.tasks, vec![finished.task.clone()]);
    let other = database.store().await;
    assert_eq!(other.get(&id).await.expect("get").expect("the task").task, finished.task);

    // A task created already ended (its handler ran before it was stored) is kept the same way.
    let mut ended = record("alice", base, None);
    ended.payload = TaskPayload::new("work", json!({"text": text}));
    let then = vec![TaskEventKind::Message { message: said.clone() }, status(TaskState::Working), result];
    let created = store.create_with(ended, submitted(), then).await.expect("created ended");
    let (bytes, in_log) = stored_bytes(&mut connection, &created.task.id).await;
    assert!(in_log, "a task created ended keeps its body in its log");
    assert!(bytes < 2 * text.len() as i64 + 4096, "the message and the result once each: {bytes} bytes");
    assert_eq!(other.get(&created.task.id).await.expect("get").expect("the task").task, created.task);
    assert_eq!(
        other.get(&created.task.id).await.expect("get").expect("the task").payload.input,
        serde_json::Value::Null
    );

    other.close().await;
    store.close().await;
    drop(connection);
    database.drop_database().await;
}

/// The `accord_tasks` gauge's counts: every state, from the per-owner counts.
#[tokio::test]
async fn count_by_state_counts_every_state() {
    let database = TestDatabase::create().await;
    let store = database.store().await;
    let base = now_ms();
    create(&store, record("alice", base, None)).await;
    let working = create(&store, record("bob", base, None)).await;
    let done = create(&store, record("alice", base, None)).await;
    set(&store, &working, status(TaskState::Working), base + 1).await;
    let result = TaskEventKind::Result { result: TaskResult { output: json!(1), ..TaskResult::default() } };
    set(&store, &done, result, base + 2).await;
    let counts = store.count_by_state().await.expect("count").expect("counted");
    assert_eq!(
        counts,
        vec![
            (TaskState::Submitted, 1),
            (TaskState::Working, 1),
            (TaskState::InputRequired, 0),
            (TaskState::AuthRequired, 0),
            (TaskState::Completed, 1),
            (TaskState::Failed, 0),
            (TaskState::Canceled, 0),
            (TaskState::Rejected, 0)
        ]
    );
    store.housekeep(base + 3).await.expect("housekeep (folds the counts)");
    assert_eq!(store.count_by_state().await.expect("count").expect("counted"), counts, "folding changes no count");
    store.close().await;
    database.drop_database().await;
}

/// The totals `list` reads from the per-owner counts, for every list without a context, skill or
/// time filter, against a count of the rows themselves.
async fn assert_totals(store: &PostgresStore, connection: &mut sqlx::PgConnection, owners: &[&str], when: &str) {
    let filters: [Option<&[TaskState]>; 4] = [
        None,
        Some(&[TaskState::Submitted][..]),
        Some(&[TaskState::Working, TaskState::Completed][..]),
        Some(&[TaskState::Canceled][..]),
    ];
    for name in owners {
        for states in filters {
            let query = ListQuery { states: states.map(<[TaskState]>::to_vec), ..ListQuery::default() };
            let listed = store.list(&owner(name), &query).await.expect("list").total;
            let names: Vec<String> =
                states.unwrap_or(TaskState::ALL.as_slice()).iter().map(|s| s.as_str().into()).collect();
            let counted: i64 =
                sqlx::query_scalar("SELECT count(*) FROM accord_tasks WHERE owner_hash = $1 AND state = ANY($2)")
                    .bind(owner(name).to_hex())
                    .bind(names)
                    .fetch_one(&mut *connection)
                    .await
                    .expect("count the rows");
            assert_eq!(listed, usize::try_from(counted).expect("a count"), "{when}: {name}'s total in {states:?}");
        }
    }
}

/// A list's total over an owner's tasks (or those in some states) is summed from counts that
/// triggers keep as signed changes, which any worker folds: the totals stay exact through creates
/// on two workers at once, state changes, reaping, purging and folds that run meanwhile; a fold
/// leaves no change behind and no count of zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_totals_stay_exact_through_creates_changes_purges_and_folds() {
    const PER_WORKER: usize = 40;
    let database = TestDatabase::create().await;
    let config = database.config().retention(Duration::from_millis(HOUR));
    let workers = [Arc::new(database.store_with(config.clone()).await), Arc::new(database.store_with(config).await)];
    let mut connection = database.connection().await;
    let base = now_ms();

    // Both workers create for both owners while a third party folds, over and over.
    let folding = {
        let store = Arc::clone(&workers[1]);
        tokio::spawn(async move {
            let mut folded = 0;
            for _ in 0..20 {
                folded += store.housekeep(base).await.expect("housekeep").folded;
                tokio::task::yield_now().await;
            }
            folded
        })
    };
    let creating: Vec<_> = workers
        .iter()
        .map(|store| {
            let store = Arc::clone(store);
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for n in 0..PER_WORKER {
                    let name = if n % 4 == 0 { "bob" } else { "alice" };
                    let admission = (n % 10 == 0).then_some(base + MINUTE);
                    ids.push(create(&store, record(name, base, admission)).await);
                }
                ids
            })
        })
        .collect();
    let mut ids = Vec::new();
    for created in creating {
        ids.extend(created.await.expect("the creates complete"));
    }
    folding.await.expect("the folds complete");
    assert_totals(&workers[0], &mut connection, &["alice", "bob", "carol"], "after the creates").await;

    // Some work, some end; abandoned reservations are reaped (cancelled) on a read.
    let result = TaskEventKind::Result { result: TaskResult { output: json!(1), ..TaskResult::default() } };
    for (n, id) in ids.iter().enumerate() {
        let stored = workers[n % 2].get(id).await.expect("get").expect("the task");
        if stored.admission_expires_at.is_some() {
            // Left to be reaped.
            continue;
        }
        set(&workers[n % 2], id, status(TaskState::Working), base + 1).await;
        if n % 3 == 0 {
            set(&workers[(n + 1) % 2], id, result.clone(), base + 2).await;
        }
    }
    let unfolded: i64 = sqlx::query_scalar("SELECT count(*) FROM accord_task_count_changes")
        .fetch_one(&mut connection)
        .await
        .expect("count the changes");
    assert!(unfolded > 0, "the changes wait for a fold");
    assert_totals(&workers[1], &mut connection, &["alice", "bob"], "before a fold").await;
    let kept = workers[0].housekeep(base + 2 * MINUTE).await.expect("housekeep");
    assert!(kept.reaped > 0 && kept.folded > 0, "{kept:?}");
    assert_totals(&workers[0], &mut connection, &["alice", "bob"], "after reaping and a fold").await;
    let changes: i64 = sqlx::query_scalar("SELECT count(*) FROM accord_task_count_changes")
        .fetch_one(&mut connection)
        .await
        .expect("count the changes");
    assert_eq!(changes, 0, "a fold takes every change");

    // Everything ends; after the retention every task is purged and the counts empty.
    for id in &ids {
        let ended = workers[0].compare_and_set(id, ACTIVE, status(TaskState::Canceled), None, base + 3).await;
        ended.expect("compare and set");
    }
    assert_totals(&workers[1], &mut connection, &["alice", "bob"], "after the cancels").await;
    let purged = workers[1].housekeep(base + 2 * MINUTE + HOUR).await.expect("housekeep");
    assert_eq!(purged.purged, 2 * PER_WORKER);
    assert_totals(&workers[0], &mut connection, &["alice", "bob"], "after the purge").await;
    let (counts, changes): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM accord_task_counts), (SELECT count(*) FROM accord_task_count_changes)",
    )
    .fetch_one(&mut connection)
    .await
    .expect("count the counts");
    assert_eq!((counts, changes), (0, 0), "no count of zero is kept, no change is left");

    for store in &workers {
        store.close().await;
    }
    drop(connection);
    database.drop_database().await;
}

/// A database whose tasks were stored before the counts existed: connecting counts them (and a
/// worker of the earlier release writing afterwards is counted by the triggers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_stored_before_the_counts_have_exact_totals() {
    // The five migrations before the counts.
    let database = TestDatabase::create().await;
    let mut connection = database.earlier_schema(5).await;
    // Rows as an earlier release writes them, each with a task of its own id (the task's state
    // is not read: the totals count the rows' states).
    let model = record("alice", 1, None);
    let insert = |name: &'static str, state: &'static str, n: i64| {
        sqlx::query(
            "INSERT INTO accord_tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload, \
             last_sequence) SELECT t.id, $1, NULL, $2, t.g, t.g, jsonb_set($4, '{id}', to_jsonb(t.id)), $5, 1 \
             FROM (SELECT gen_random_uuid()::text AS id, g FROM generate_series(1, $3) AS g) AS t",
        )
        .bind(owner(name).to_hex())
        .bind(state)
        .bind(n)
        .bind(sqlx::types::Json(&model.task))
        .bind(sqlx::types::Json(&model.payload))
    };
    insert("alice", "completed", 30).execute(&mut connection).await.expect("tasks");
    insert("alice", "working", 4).execute(&mut connection).await.expect("tasks");
    insert("bob", "canceled", 7).execute(&mut connection).await.expect("tasks");

    let store = database.store().await;
    assert_totals(&store, &mut connection, &["alice", "bob"], "after the migration").await;
    insert("alice", "submitted", 3).execute(&mut connection).await.expect("tasks written by an earlier release");
    sqlx::query("UPDATE accord_tasks SET state = 'failed' WHERE state = 'working'")
        .execute(&mut connection)
        .await
        .expect("tasks changed by an earlier release");
    sqlx::query("DELETE FROM accord_tasks WHERE state = 'canceled'")
        .execute(&mut connection)
        .await
        .expect("tasks purged by an earlier release");
    assert_totals(&store, &mut connection, &["alice", "bob"], "after an earlier release's writes").await;
    let all = store.list(&owner("alice"), &ListQuery::default()).await.expect("list");
    assert_eq!(all.total, 37);

    store.close().await;
    drop(connection);
    database.drop_database().await;
}

/// A fold of many changes leaves them as dead rows; the worker that folded them vacuums their
/// table, so that the next totals do not read through them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_fold_vacuums_the_changes_it_folded() {
    let database = TestDatabase::create().await;
    let store = database.store().await;
    let mut connection = database.connection().await;
    let vacuums = "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'accord_task_count_changes'";
    let before: i64 = sqlx::query_scalar(vacuums).fetch_one(&mut connection).await.expect("vacuum count");
    // 3,000 changes that cancel out, as a task created and deleted 1,500 times would leave.
    sqlx::query(
        "INSERT INTO accord_task_count_changes (owner_hash, state, n) \
         SELECT $1, 'completed', CASE WHEN g % 2 = 0 THEN 1 ELSE -1 END FROM generate_series(1, 3000) AS g",
    )
    .bind(owner("alice").to_hex())
    .execute(&mut connection)
    .await
    .expect("changes");
    let done = store.housekeep(now_ms()).await.expect("housekeep");
    assert_eq!(done.folded, 3000);
    let after: i64 = sqlx::query_scalar(vacuums).fetch_one(&mut connection).await.expect("vacuum count");
    assert_eq!(after, before + 1, "the folded changes are vacuumed");
    let (counts, dead): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM accord_task_counts), \
         (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'accord_task_count_changes')",
    )
    .fetch_one(&mut connection)
    .await
    .expect("the tables");
    assert_eq!((counts, dead), (0, 0), "no count of zero is kept, and the vacuum removed the folded changes");
    assert_eq!(store.list(&owner("alice"), &ListQuery::default()).await.expect("list").total, 0);

    store.close().await;
    drop(connection);
    database.drop_database().await;
}
