//! What only a file-backed store must show: data that outlives the store that wrote it, several
//! stores (as several processes would) sharing one file, migrations, capacity and retention, push
//! configs kept with their tasks, and failures reported as `Unavailable` rather than panics.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{
    AccessToken, DeliverFrom, Durability, ExecutionLease, LeasePhase, ListCursor, ListQuery, Millis, OwnerHash,
    PageStart, PushAuthentication, PushConfig, PushDelivery, PushKey, PushPut, PushSettle, StoreError,
    StoredPushConfig, StoredTask, Task, TaskEvent, TaskEventKind, TaskId, TaskPayload, TaskResult, TaskStore, now_ms,
};
use accord_engine::{Artifact, Message, Part, SkillError, TaskState};
use accord_store_sqlite::{SqliteStore, SqliteStoreConfig, Synchronous};
use serde_json::json;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use sqlx::{Connection, SqliteConnection};
use tokio::sync::Barrier;

use support::ScratchDir;

const MINUTE: Millis = 60_000;
const HOUR: Millis = 60 * MINUTE;
const ACTIVE_STATES: &[TaskState] =
    &[TaskState::Submitted, TaskState::Working, TaskState::InputRequired, TaskState::AuthRequired];
const RUNNING_STATES: &[TaskState] = &[TaskState::Submitted, TaskState::Working];

fn owner(name: &str) -> OwnerHash {
    AccessToken::parse(&format!("sqlite-test-{name}-access-token")).expect("a valid test token").owner()
}

fn record(owner: OwnerHash, created_at: Millis, admission: Option<Millis>) -> StoredTask {
    let mut task = Task::submitted(TaskId::generate(), "summarize", Some("context-7".into()), created_at);
    task.metadata = Some(json!({"origin": "test_sqlite"}));
    StoredTask {
        task,
        owner,
        payload: TaskPayload::new("summarize", json!({"text": "a long text", "max_words": 12})),
        admission_expires_at: admission,
        lease: None,
    }
}

fn status(state: TaskState) -> TaskEventKind {
    TaskEventKind::Status { state, message: None }
}

fn completed(output: serde_json::Value) -> TaskEventKind {
    TaskEventKind::Result {
        result: TaskResult {
            output,
            usage: Some(json!({"tokens": 3})),
            model: Some("m".into()),
            ..TaskResult::default()
        },
    }
}

async fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(SqliteStoreConfig::new(path)).await.expect("open the SQLite store")
}

async fn create(store: &SqliteStore, record: StoredTask) -> TaskId {
    let id = record.task.id.clone();
    store.create(record, status(TaskState::Submitted)).await.expect("create a task");
    id
}

async fn write(
    store: &SqliteStore,
    id: &TaskId,
    event: TaskEventKind,
    worker: Option<&str>,
    now: Millis,
) -> StoredTask {
    store
        .compare_and_set(id, ACTIVE_STATES, event, worker, now)
        .await
        .expect("compare and set")
        .expect("the write is accepted")
}

async fn log(store: &SqliteStore, id: &TaskId, owner: &OwnerHash) -> Vec<TaskEvent> {
    store.events_since(id, owner, 0).await.expect("events since").expect("the owner's task has a log")
}

/// A connection of its own to the file, as another process (or an operator) would have.
async fn raw_connection(path: &Path) -> SqliteConnection {
    SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(path)).await.expect("a raw connection")
}

async fn raw_pool(path: &Path) -> SqlitePool {
    SqlitePool::connect_with(SqliteConnectOptions::new().filename(path)).await.expect("a raw pool")
}

/// A raw pool on the scratch file, whose schema is an earlier release's: only the first `count`
/// migrations applied.
async fn earlier_schema(dir: &ScratchDir, count: usize) -> SqlitePool {
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let mut names: Vec<_> = std::fs::read_dir(&migrations)
        .expect("the migrations directory")
        .map(|entry| entry.expect("a migration").file_name())
        .collect();
    names.sort();
    let earlier = dir.path().join("earlier-migrations");
    std::fs::create_dir_all(&earlier).expect("a directory for the earlier migrations");
    for name in &names[..count] {
        std::fs::copy(migrations.join(name), earlier.join(name)).expect("copy an earlier migration");
    }
    let options = SqliteConnectOptions::new().filename(dir.database()).create_if_missing(true);
    let pool = SqlitePool::connect_with(options).await.expect("a raw pool");
    let migrator = sqlx::migrate::Migrator::new(earlier.as_path()).await.expect("the earlier migrations resolve");
    migrator.run(&pool).await.expect("the earlier schema");
    pool
}

// ---------------------------------------------------------------------------------------------
// Durability across reopening
// ---------------------------------------------------------------------------------------------

/// Everything a task record holds (payload, admission, lease, result, error, event log) is read
/// back unchanged by a store opened on the file later, after a clean close and after a drop
/// without close.
#[tokio::test]
async fn everything_survives_closing_and_reopening_the_file() {
    let dir = ScratchDir::new();
    let path = dir.database();
    let alice = owner("alice");
    let base = now_ms();

    let store = open(&path).await;
    assert_eq!(store.durability(), Durability::Durable);
    let running = create(&store, record(alice, base, Some(base + 10 * MINUTE))).await;
    let reserved = create(&store, record(alice, base + 1, Some(base + 10 * MINUTE))).await;
    let done = create(&store, record(alice, base + 2, None)).await;
    let failed = create(&store, record(alice, base + 3, None)).await;

    store.claim_execution(&running, "worker-1", base + 5 * MINUTE, base).await.expect("claim").expect("claimed");
    store.activate_execution(&running, "worker-1", base + 6 * MINUTE, base).await.expect("activate").expect("active");
    write(&store, &running, status(TaskState::Working), Some("worker-1"), base + 10).await;
    write(&store, &running, TaskEventKind::Message { message: Message::agent_text("halfway") }, None, base + 20).await;
    let artifact =
        Artifact { artifact_id: "report".into(), name: Some("Report".into()), parts: vec![Part::Text("a".into())] };
    write(&store, &running, TaskEventKind::Artifact { artifact, append: false, last_chunk: false }, None, base + 30)
        .await;
    write(&store, &done, completed(json!({"summary": "short"})), None, base + 40).await;
    let error = SkillError::new("upstream_failed", "the model did not answer");
    write(&store, &failed, TaskEventKind::Error { state: TaskState::Failed, error }, None, base + 50).await;

    let mut before = Vec::new();
    for id in [&running, &reserved, &done, &failed] {
        before.push((store.get(id).await.expect("get").expect("exists"), log(&store, id, &alice).await));
    }
    let listed = store.list(&alice, &ListQuery::default()).await.expect("list");
    store.close().await;

    let store = open(&path).await;
    for (id, (record, events)) in [&running, &reserved, &done, &failed].into_iter().zip(&before) {
        assert_eq!(&store.get(id).await.expect("get").expect("still there"), record, "the record survives");
        assert_eq!(&log(&store, id, &alice).await, events, "the event log survives");
    }
    assert_eq!(store.list(&alice, &ListQuery::default()).await.expect("list"), listed);
    let running_record = &before[0].0;
    assert_eq!(
        running_record.lease,
        Some(ExecutionLease { owner_id: "worker-1".into(), expires_at: base + 6 * MINUTE, phase: LeasePhase::Active })
    );
    assert_eq!(running_record.payload.input, json!({"text": "a long text", "max_words": 12}));
    assert_eq!(running_record.task.artifacts.len(), 1);
    assert_eq!(before[1].0.admission_expires_at, Some(base + 10 * MINUTE));
    assert_eq!(before[2].0.task.result.as_ref().map(|result| &result.output), Some(&json!({"summary": "short"})));
    assert_eq!(before[3].0.task.error.as_ref().map(|error| error.code.as_str()), Some("upstream_failed"));

    // The log goes on where it stopped, and the stale lease still fences.
    let finished = store
        .compare_and_set(&running, RUNNING_STATES, completed(json!("after restart")), Some("worker-1"), base + 60)
        .await
        .expect("compare and set")
        .expect("the lease holder finishes after the restart");
    assert_eq!(finished.lease, None);
    let events = log(&store, &running, &alice).await;
    assert_eq!(events.iter().map(|event| event.sequence).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);

    // A store dropped without `close` (as a killed process would leave it) loses nothing either.
    drop(store);
    let store = open(&path).await;
    // A finished task never runs again: its input is not kept (docs/limits.md, "Stored once").
    let kept = StoredTask { payload: finished.payload.finished(), ..finished.clone() };
    assert_eq!(store.get(&running).await.expect("get").expect("still there"), kept);
    assert_eq!(log(&store, &running, &alice).await, events);
    store.close().await;
}

/// The bytes a task takes in the file: its row's task and payload, and its log.
async fn stored_bytes(path: &Path, id: &TaskId) -> (i64, bool) {
    let mut connection = raw_connection(path).await;
    let (bytes, body_in_log): (i64, i64) = sqlx::query_as(
        "SELECT length(task) + length(payload)
                + (SELECT COALESCE(SUM(length(kind)), 0) FROM task_events WHERE task_id = tasks.id),
                body_in_log
         FROM tasks WHERE id = ?1",
    )
    .bind(id.as_str())
    .fetch_one(&mut connection)
    .await
    .expect("the task's row");
    (bytes, body_in_log == 1)
}

/// A finished task keeps its input, its history and its output once each (docs/limits.md,
/// "Stored once"): a task whose input is also its first message, and whose result repeats it (an
/// echo), takes about two copies of the text, where the whole task beside its log and payload took
/// five.
#[tokio::test]
async fn a_finished_task_keeps_each_large_part_once() {
    let dir = ScratchDir::new();
    let path = dir.database();
    let alice = owner("alice");
    let base = now_ms();
    let store = open(&path).await;
    let text = "an echoed sentence ".repeat(16 * 1024);
    let mut created = record(alice, base, None);
    created.payload = TaskPayload::new("summarize", json!({"text": text}));
    let id = create(&store, created).await;
    let said = Message::new(accord_engine::Role::User, vec![Part::Text(text.clone())]);
    write(&store, &id, TaskEventKind::Message { message: said.clone() }, None, base + 1).await;
    write(&store, &id, status(TaskState::Working), None, base + 2).await;
    let (running, whole) = stored_bytes(&path, &id).await;
    assert!(!whole, "an unfinished task is kept whole");
    assert!(running > 3 * text.len() as i64, "input, history and its log entry: {running} bytes");

    let finished = write(&store, &id, completed(json!({"text": text})), None, base + 3).await;
    let (bytes, in_log) = stored_bytes(&path, &id).await;
    assert!(in_log, "a finished task keeps its body in its log");
    assert!(bytes < 2 * text.len() as i64 + 4096, "the message and the result once each: {bytes} bytes");

    let read = store.get(&id).await.expect("get").expect("the task");
    assert_eq!(read.task, finished.task);
    assert_eq!(read.task.history, vec![said.clone()]);
    assert_eq!(read.payload.input, serde_json::Value::Null);
    // A task created already ended (its handler ran before it was stored) is kept the same way.
    let mut ended = record(alice, base, None);
    ended.payload = TaskPayload::new("summarize", json!({"text": text}));
    let then = vec![
        TaskEventKind::Message { message: said.clone() },
        status(TaskState::Working),
        completed(json!({"text": text})),
    ];
    let created = store.create_with(ended, status(TaskState::Submitted), then).await.expect("created ended");
    let (bytes, in_log) = stored_bytes(&path, &created.task.id).await;
    assert!(in_log, "a task created ended keeps its body in its log");
    assert!(bytes < 2 * text.len() as i64 + 4096, "the message and the result once each: {bytes} bytes");
    store.close().await;
    // And after reopening the file.
    let store = open(&path).await;
    assert_eq!(store.get(&id).await.expect("get").expect("the task").task, finished.task);
    assert_eq!(store.get(&created.task.id).await.expect("get").expect("the task").task, created.task);
    store.close().await;
}

// ---------------------------------------------------------------------------------------------
// Several stores on one file
// ---------------------------------------------------------------------------------------------

/// Two stores with their own connection pools on one file (two processes, in effect) racing to
/// claim the same task: exactly one claim wins, and both stores then read the winner's lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_race_claims_with_exactly_one_winner() {
    const ROUNDS: usize = 20;
    let dir = ScratchDir::new();
    let (first, second) = (Arc::new(open(&dir.database()).await), Arc::new(open(&dir.database()).await));
    let alice = owner("alice");
    let base = now_ms();
    for _ in 0..ROUNDS {
        let id = create(&first, record(alice, base, Some(base + 10 * MINUTE))).await;
        let start = Arc::new(Barrier::new(4));
        let claims: Vec<_> = (0..4)
            .map(|n| {
                let store = Arc::clone(if n % 2 == 0 { &first } else { &second });
                let (id, start) = (id.clone(), Arc::clone(&start));
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
            winners.extend(claim.await.expect("the claim task completes"));
        }
        assert_eq!(winners.len(), 1, "exactly one of the racing claims wins");
        let (worker, granted) = &winners[0];
        assert_eq!(granted.lease.as_ref().map(|lease| lease.owner_id.as_str()), Some(worker.as_str()));
        for store in [&first, &second] {
            assert_eq!(store.get(&id).await.expect("get").expect("exists").lease, granted.lease);
        }
    }
    first.close().await;
    second.close().await;
}

/// A cancellation through one store racing the lease holder's completion through another:
/// exactly one terminal state wins, and the log holds exactly one terminal event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_race_cancel_and_completion() {
    const ROUNDS: usize = 20;
    let dir = ScratchDir::new();
    let (first, second) = (Arc::new(open(&dir.database()).await), Arc::new(open(&dir.database()).await));
    let alice = owner("alice");
    let base = now_ms();
    for round in 0..ROUNDS {
        let id = create(&first, record(alice, base, None)).await;
        first.claim_execution(&id, "w", base + 5 * MINUTE, base).await.expect("claim").expect("claimed");
        let start = Arc::new(Barrier::new(2));
        let cancel = {
            let (store, id, start) = (Arc::clone(&first), id.clone(), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                store.compare_and_set(&id, ACTIVE_STATES, status(TaskState::Canceled), None, base + 1).await
            })
        };
        let complete = {
            let (store, id, start) = (Arc::clone(&second), id.clone(), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                store
                    .compare_and_set(&id, RUNNING_STATES, completed(json!({"round": round})), Some("w"), base + 1)
                    .await
            })
        };
        let cancelled = cancel.await.expect("the cancel task completes").expect("compare and set");
        let finished = complete.await.expect("the completion task completes").expect("compare and set");
        let winner = match (cancelled, finished) {
            (Some(_), None) => TaskState::Canceled,
            (None, Some(_)) => TaskState::Completed,
            (cancelled, finished) => panic!("round {round}: cancel {cancelled:?} and completion {finished:?}"),
        };
        assert_eq!(second.get(&id).await.expect("get").expect("exists").task.state, winner);
        let events = log(&first, &id, &alice).await;
        let terminal = events.iter().filter(|event| event.kind.state().is_some_and(TaskState::is_terminal)).count();
        assert_eq!((events.len(), terminal), (2, 1));
    }
    first.close().await;
    second.close().await;
}

/// Writers on two stores appending to the same tasks at once all succeed (they queue on the
/// write lock rather than fail), and each log is numbered 1, 2, 3 … without gaps or repeats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_on_two_stores_keep_each_log_gapless() {
    const WRITES: usize = 20;
    let dir = ScratchDir::new();
    let (first, second) = (Arc::new(open(&dir.database()).await), Arc::new(open(&dir.database()).await));
    let alice = owner("alice");
    let base = now_ms();
    let tasks = [create(&first, record(alice, base, None)).await, create(&second, record(alice, base, None)).await];

    let mut writers = Vec::new();
    for (n, store) in [&first, &second, &first, &second].into_iter().enumerate() {
        let (store, tasks) = (Arc::clone(store), tasks.clone());
        writers.push(tokio::spawn(async move {
            for write in 0..WRITES {
                let message = Message::agent_text(format!("writer {n} message {write}"));
                let id = &tasks[write % 2];
                store
                    .compare_and_set(id, ACTIVE_STATES, TaskEventKind::Message { message }, None, base + 1)
                    .await
                    .expect("a concurrent write succeeds")
                    .expect("the write is accepted");
            }
        }));
    }
    for writer in writers {
        writer.await.expect("the writer completes");
    }

    for id in &tasks {
        let events = log(&first, id, &alice).await;
        let expected: Vec<u64> = (1..=(1 + 2 * WRITES as u64)).collect();
        assert_eq!(events.iter().map(|event| event.sequence).collect::<Vec<_>>(), expected);
        let record = second.get(id).await.expect("get").expect("exists");
        assert_eq!(record.task.history.len(), 2 * WRITES, "the record holds every message of its log");
        assert_eq!(record.task.version, 2 * WRITES as u64);
    }
    first.close().await;
    second.close().await;
}

// ---------------------------------------------------------------------------------------------
// Migrations and the file
// ---------------------------------------------------------------------------------------------

/// The embedded migrations run once: reopening the file, or two stores opening a new file at
/// the same moment, applies nothing twice and fails nothing. The file is in WAL mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_applied_once_and_reopening_is_idempotent() {
    let migrations = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations"))
        .expect("the migrations directory")
        .count();

    let dir = ScratchDir::new();
    let path = dir.database();
    let store = open(&path).await;
    let id = create(&store, record(owner("alice"), now_ms(), None)).await;
    store.close().await;
    for _ in 0..2 {
        let store = open(&path).await;
        assert!(store.get(&id).await.expect("get").is_some(), "reopening keeps the data");
        store.close().await;
    }
    let pool = raw_pool(&path).await;
    let applied: Vec<(i64, bool)> = sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&pool)
        .await
        .expect("read the migration history");
    assert_eq!(applied.len(), migrations, "each migration is recorded once");
    assert!(applied.iter().all(|(_, success)| *success));
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&pool).await.expect("journal mode");
    assert_eq!(mode, "wal");
    pool.close().await;

    // Four stores open a new file at the same moment, as four worker processes starting together.
    let fresh = ScratchDir::new();
    let start = Arc::new(Barrier::new(4));
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let (path, start) = (fresh.database(), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                SqliteStore::open(SqliteStoreConfig::new(path)).await
            })
        })
        .collect();
    let mut stores = Vec::new();
    for opener in openers {
        stores.push(opener.await.expect("the opener completes").expect("every concurrent open succeeds"));
    }
    let pool = raw_pool(&fresh.database()).await;
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations").fetch_one(&pool).await.expect("count");
    assert_eq!(count, migrations as i64, "concurrent opens record each migration once");
    pool.close().await;
    for store in stores {
        store.close().await;
    }
}

/// A file written before tasks had a `skill` column: opening it adds the column and fills it from
/// each task, so `list` finds the old tasks by skill like the new ones.
#[tokio::test]
async fn tasks_stored_before_the_skill_column_are_listed_by_skill() {
    let dir = ScratchDir::new();
    let path = dir.database();
    let pool = earlier_schema(&dir, 1).await;
    let alice = owner("alice");
    let base = now_ms();
    let old = record(alice, base, None);
    // The row as the first release wrote it.
    sqlx::query(
        "INSERT INTO tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload, last_sequence)
         VALUES (?1, ?2, ?3, 'submitted', ?4, ?4, ?5, ?6, 1)",
    )
    .bind(old.task.id.as_str())
    .bind(alice.to_hex())
    .bind(old.task.context_id.as_deref())
    .bind(i64::try_from(base).expect("a time"))
    .bind(serde_json::to_string(&old.task).expect("the task as JSON"))
    .bind(serde_json::to_string(&old.payload).expect("the payload as JSON"))
    .execute(&pool)
    .await
    .expect("insert a task of the first release");
    pool.close().await;

    let store = open(&path).await;
    assert_eq!(store.get(&old.task.id).await.expect("get"), Some(old.clone()), "the old task reads as it was");
    let mut other = record(alice, base + 1, None);
    other.task.skill = "translate".into();
    let other = create(&store, other).await;
    let by_skill = |skill: &str| ListQuery { skill: Some(skill.into()), ..ListQuery::default() };
    let page = store.list(&alice, &by_skill("summarize")).await.expect("list");
    assert_eq!(page.tasks.iter().map(|task| &task.id).collect::<Vec<_>>(), vec![&old.task.id]);
    assert_eq!(page.total, 1);
    let page = store.list(&alice, &by_skill("translate")).await.expect("list");
    assert_eq!(page.tasks.iter().map(|task| &task.id).collect::<Vec<_>>(), vec![&other]);
    // The counts behind unfiltered totals include the tasks stored before they existed.
    assert_eq!(store.list(&alice, &ListQuery::default()).await.expect("list").total, 2);
    let submitted = ListQuery { states: Some(vec![TaskState::Submitted]), ..ListQuery::default() };
    assert_eq!(store.list(&alice, &submitted).await.expect("list").total, 2);
    write(&store, &old.task.id, completed(json!("done")), None, now_ms()).await;
    assert_eq!(store.list(&alice, &submitted).await.expect("list").total, 1, "a change of state moves the count");
    assert_eq!(store.list(&alice, &ListQuery::default()).await.expect("list").total, 2);
    store.close().await;
}

/// A `sqlite://` URL opens (and creates) the file it names, making missing directories.
#[tokio::test]
async fn a_url_opens_the_file_it_names() {
    let dir = ScratchDir::new();
    let path = dir.path().join("nested").join("deeper").join("tasks.db");
    let config = SqliteStoreConfig::from_url(&format!("sqlite://{}", path.display())).expect("a valid URL");
    let store = SqliteStore::open(config).await.expect("open from a URL");
    create(&store, record(owner("alice"), now_ms(), None)).await;
    store.close().await;
    assert!(path.is_file(), "the database file exists at the URL's path");
}

// ---------------------------------------------------------------------------------------------
// Durability levels
// ---------------------------------------------------------------------------------------------

/// At the default `synchronous = NORMAL`, ordinary writes are not synced one by one, but every
/// write of a paid task (its create, its lease changes, its appends) is synced to disk before it
/// is answered; a refused write of a paid task syncs nothing. At `FULL`, SQLite syncs every commit
/// itself and the store adds no sync of its own.
#[tokio::test]
async fn paid_tasks_are_synced_at_every_write_whatever_the_level() {
    let dir = ScratchDir::new();
    let store = open(&dir.database()).await;
    assert_eq!(store.config().synchronous, Synchronous::Normal, "the default level");
    let alice = owner("alice");
    let now = now_ms();

    let unpaid = create(&store, record(alice, now, Some(now + MINUTE))).await;
    write(&store, &unpaid, status(TaskState::Working), None, now).await;
    assert_eq!(store.paid_syncs(), 0, "unpaid writes are committed without a sync of their own");

    let mut paid = record(alice, now, Some(now + MINUTE));
    paid.payload.paid = true;
    let paid = create(&store, paid).await;
    assert_eq!(store.paid_syncs(), 1, "the paid task's creation is synced");
    assert!(store.claim_execution(&paid, "w", now + MINUTE, now).await.expect("claim").is_some());
    assert_eq!(store.paid_syncs(), 2, "so is its claim");
    write(&store, &paid, completed(json!("paid for")), Some("w"), now).await;
    assert_eq!(store.paid_syncs(), 3, "and its result");
    let refused = store.compare_and_set(&paid, ACTIVE_STATES, status(TaskState::Working), None, now).await;
    assert_eq!(refused.expect("compare and set"), None);
    assert_eq!(store.paid_syncs(), 3, "a refused write changed nothing to sync");
    store.close().await;

    let reopened = open(&dir.database()).await;
    let stored = reopened.get(&paid).await.expect("get").expect("the paid task survives");
    assert!(stored.payload.paid, "the mark is stored with the payload");
    reopened.close().await;

    let dir = ScratchDir::new();
    let config = SqliteStoreConfig::new(dir.database()).synchronous(Synchronous::Full);
    let full = SqliteStore::open(config).await.expect("open at FULL");
    let mut paid = record(alice, now, Some(now + MINUTE));
    paid.payload.paid = true;
    create(&full, paid).await;
    assert_eq!(full.paid_syncs(), 0, "at FULL every commit is synced by SQLite already");
    full.close().await;
}

// ---------------------------------------------------------------------------------------------
// Capacity and retention
// ---------------------------------------------------------------------------------------------

/// With `max_active_tasks`, creation is refused while that many tasks are unfinished; an
/// abandoned reservation is reaped before the limit is enforced, and terminal tasks do not count.
#[tokio::test]
async fn capacity_counts_unfinished_tasks_after_reaping_abandoned_ones() {
    let dir = ScratchDir::new();
    let config = SqliteStoreConfig::new(dir.database()).max_active_tasks(Some(2));
    let store = SqliteStore::open(config).await.expect("open");
    let alice = owner("alice");
    let now = now_ms();

    let kept = create(&store, record(alice, now, Some(now + 10 * MINUTE))).await;
    // Its admission has already expired: the next create reaps it before counting.
    let abandoned = create(&store, record(alice, now, Some(now.saturating_sub(1)))).await;
    let third = create(&store, record(alice, now, None)).await;
    let abandoned_record = store.get(&abandoned).await.expect("get").expect("exists");
    assert_eq!(abandoned_record.task.state, TaskState::Canceled);
    assert_eq!(
        log(&store, &abandoned, &alice).await.last().map(|event| &event.kind),
        Some(&status(TaskState::Canceled))
    );

    let refused = store.create(record(alice, now, None), status(TaskState::Submitted)).await;
    assert_eq!(
        refused.expect_err("two unfinished tasks fill the store"),
        StoreError::CapacityExhausted { capacity: 2 }
    );

    write(&store, &third, completed(json!("done")), None, now_ms()).await;
    create(&store, record(alice, now, None)).await;
    assert_eq!(store.get(&kept).await.expect("get").expect("exists").task.state, TaskState::Submitted);
    store.close().await;
}

/// Terminal tasks last changed longer ago than the retention are deleted with their logs by
/// housekeeping; recent terminal tasks and unfinished tasks, however old, are kept.
#[tokio::test]
async fn terminal_tasks_past_retention_are_purged_with_their_logs() {
    let dir = ScratchDir::new();
    let config = SqliteStoreConfig::new(dir.database()).retention(Duration::from_millis(HOUR));
    let store = SqliteStore::open(config).await.expect("open");
    let alice = owner("alice");
    let now = now_ms();

    let old_done = create(&store, record(alice, now - 3 * HOUR, None)).await;
    write(&store, &old_done, completed(json!("old")), None, now - 2 * HOUR).await;
    let recent_done = create(&store, record(alice, now - 3 * HOUR, None)).await;
    write(&store, &recent_done, completed(json!("recent")), None, now - 10 * MINUTE).await;
    let old_unfinished = create(&store, record(alice, now - 3 * HOUR, None)).await;

    let page = store.list(&alice, &ListQuery::default()).await.expect("list");
    let mut listed: Vec<TaskId> = page.tasks.iter().map(|task| task.id.clone()).collect();
    listed.sort();
    let mut expected = vec![recent_done.clone(), old_unfinished.clone()];
    expected.sort();
    assert_eq!((listed, page.total), (expected, 2));
    assert_eq!(store.get(&old_done).await.expect("get"), None);
    assert_eq!(store.events_since(&old_done, &alice, 0).await.expect("events since"), None);

    let pool = raw_pool(&dir.database()).await;
    let orphans: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM task_events WHERE task_id = ?1")
        .bind(old_done.as_str())
        .fetch_one(&pool)
        .await
        .expect("count events");
    assert_eq!(orphans, 0, "the purged task's log is deleted with it");
    pool.close().await;
    store.close().await;
}

// ---------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------

/// While another process holds the write lock past the busy timeout, writes fail with
/// `Unavailable` (naming no owner), reads go on, and writes succeed again once it lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_lock_held_past_the_busy_timeout_makes_writes_unavailable() {
    let dir = ScratchDir::new();
    let config = SqliteStoreConfig::new(dir.database()).busy_timeout(Duration::from_millis(200));
    let store = SqliteStore::open(config).await.expect("open");
    let alice = owner("alice");
    let now = now_ms();
    let id = create(&store, record(alice, now, Some(now + 10 * MINUTE))).await;

    let mut other = raw_connection(&dir.database()).await;
    sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.expect("another process takes the write lock");

    let refused = store.create(record(alice, now, None), status(TaskState::Submitted)).await;
    let Err(StoreError::Unavailable(message)) = refused else {
        panic!("a create blocked past the busy timeout is unavailable, got {refused:?}");
    };
    assert!(message.contains("busy timeout"), "the message says why: {message}");
    assert!(!message.contains(&alice.to_hex()), "the message names no owner: {message}");
    let claim = store.claim_execution(&id, "w", now + MINUTE, now).await;
    assert!(matches!(claim, Err(StoreError::Unavailable(_))), "a blocked claim is unavailable, got {claim:?}");
    let cas = store.compare_and_set(&id, ACTIVE_STATES, status(TaskState::Working), None, now).await;
    assert!(matches!(cas, Err(StoreError::Unavailable(_))), "a blocked write is unavailable, got {cas:?}");
    let read = store.get(&id).await.expect("reads go on while another process writes");
    assert_eq!(read.map(|record| record.task.state), Some(TaskState::Submitted));

    sqlx::query("ROLLBACK").execute(&mut other).await.expect("the other process lets go");
    other.close().await.expect("close the raw connection");
    assert!(store.claim_execution(&id, "w", now + MINUTE, now).await.expect("claim").is_some());
    create(&store, record(alice, now, None)).await;
    store.close().await;
}

/// A row damaged on disk reads as `Unavailable` with an operator message, never as a panic or
/// as another task.
#[tokio::test]
async fn a_corrupt_row_is_unavailable() {
    let dir = ScratchDir::new();
    let store = open(&dir.database()).await;
    let alice = owner("alice");
    let id = create(&store, record(alice, now_ms(), None)).await;
    let mut other = raw_connection(&dir.database()).await;
    sqlx::query("UPDATE tasks SET task = '{\"id\": ' WHERE id = ?1")
        .bind(id.as_str())
        .execute(&mut other)
        .await
        .expect("damage the row");
    other.close().await.expect("close the raw connection");

    let Err(StoreError::Unavailable(message)) = store.get(&id).await else {
        panic!("a corrupt row is unavailable");
    };
    assert!(message.contains("corrupt"), "{message}");
    assert!(!message.contains(&alice.to_hex()), "{message}");
    store.close().await;
}

/// Closing the store releases subscribers: their wait ends with `false` at once.
#[tokio::test]
async fn close_releases_subscribers() {
    let dir = ScratchDir::new();
    let store = open(&dir.database()).await;
    let alice = owner("alice");
    let id = create(&store, record(alice, now_ms(), None)).await;
    let mut wakeups = store.subscribe(&id, &alice).await.expect("subscribe").expect("the owner subscribes");
    store.close().await;
    let woke = tokio::time::timeout(Duration::from_secs(10), wakeups.changed(Duration::from_secs(3600))).await;
    assert_eq!(woke, Ok(false), "a closed store tells its subscribers it has closed");
}

/// A change another process commits to the shared file wakes this process's subscribers of the
/// task (one watch a task, not a re-read by each subscriber), and a subscriber whose task changes
/// nowhere is not woken at all.
#[tokio::test]
async fn another_processs_change_wakes_the_subscribers_here() {
    let dir = ScratchDir::new();
    let here = open(&dir.database()).await;
    let there = open(&dir.database()).await;
    let alice = owner("alice");
    let changing = create(&here, record(alice, now_ms(), None)).await;
    let quiet = create(&here, record(alice, now_ms(), None)).await;
    let mut first = here.subscribe(&changing, &alice).await.expect("subscribe").expect("the owner subscribes");
    let mut second = here.subscribe(&changing, &alice).await.expect("subscribe").expect("the owner subscribes");
    let mut unchanged = here.subscribe(&quiet, &alice).await.expect("subscribe").expect("the owner subscribes");
    write(&there, &changing, status(TaskState::Working), None, now_ms()).await;
    for wakeups in [&mut first, &mut second] {
        let woke = tokio::time::timeout(Duration::from_secs(10), wakeups.next()).await;
        assert_eq!(woke, Ok(true), "the other process's change is seen here");
    }
    let events = here.events_since(&changing, &alice, 1).await.expect("read").expect("owned");
    assert_eq!(events.len(), 1, "{events:?}");
    let idle = tokio::time::timeout(Duration::from_secs(5), unchanged.next()).await;
    assert!(idle.is_err(), "a task that changed nowhere wakes no one: {idle:?}");
    there.close().await;
    here.close().await;
    let ended = tokio::time::timeout(Duration::from_secs(10), unchanged.next()).await;
    assert_eq!(ended, Ok(false), "a closed store ends the wait");
}

// ---------------------------------------------------------------------------------------------
// Grouped commits
// ---------------------------------------------------------------------------------------------

/// Writes that queue while another process holds the write lock are committed together once it
/// lets go, and each is still answered on its own: a write on a corrupt row fails alone, a
/// duplicate id is refused alone, and every other write is applied and durable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_queued_behind_the_lock_commit_together_and_fail_alone() {
    let dir = ScratchDir::new();
    let path = dir.database();
    let config = SqliteStoreConfig::new(&path).busy_timeout(Duration::from_secs(30));
    let store = Arc::new(SqliteStore::open(config.clone()).await.expect("open"));
    let alice = owner("alice");
    let now = now_ms();
    let mut healthy = Vec::new();
    for _ in 0..8 {
        healthy.push(create(&store, record(alice, now, None)).await);
    }
    let corrupt = create(&store, record(alice, now, None)).await;
    let mut other = raw_connection(&path).await;
    sqlx::query("UPDATE tasks SET payload = 'not json' WHERE id = ?1")
        .bind(corrupt.as_str())
        .execute(&mut other)
        .await
        .expect("damage one row");

    sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.expect("another process takes the write lock");
    let working = |id: &TaskId| {
        let (store, id) = (Arc::clone(&store), id.clone());
        tokio::spawn(
            async move { store.compare_and_set(&id, ACTIVE_STATES, status(TaskState::Working), None, now).await },
        )
    };
    let writes: Vec<_> = healthy.iter().map(working).collect();
    let broken = working(&corrupt);
    let duplicate = {
        let (store, mut twin) = (Arc::clone(&store), record(alice, now, None));
        twin.task.id = healthy[0].clone();
        tokio::spawn(async move { store.create(twin, status(TaskState::Submitted)).await })
    };
    let fresh = record(alice, now, None);
    let fresh_id = fresh.task.id.clone();
    let created = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.create(fresh, status(TaskState::Submitted)).await })
    };
    // Let the writes queue up behind the lock, then let go.
    tokio::time::sleep(Duration::from_millis(200)).await;
    sqlx::query("ROLLBACK").execute(&mut other).await.expect("the other process lets go");
    other.close().await.expect("close the raw connection");

    for write in writes {
        let written = write.await.expect("the write completes").expect("compare and set");
        assert_eq!(written.map(|record| record.task.state), Some(TaskState::Working));
    }
    let broken = broken.await.expect("the write completes");
    assert!(
        matches!(&broken, Err(StoreError::Unavailable(message)) if message.contains("corrupt")),
        "the write on the corrupt row fails on its own: {broken:?}"
    );
    let duplicate = duplicate.await.expect("the create completes");
    assert_eq!(duplicate.expect_err("the duplicate is refused"), StoreError::DuplicateId(healthy[0].clone()));
    created.await.expect("the create completes").expect("the fresh task is created");
    store.close().await;

    let store = SqliteStore::open(config).await.expect("reopen");
    for id in &healthy {
        let events = log(&store, id, &alice).await;
        assert_eq!(
            events.iter().map(|event| &event.kind).collect::<Vec<_>>(),
            vec![&status(TaskState::Submitted), &status(TaskState::Working)]
        );
    }
    assert_eq!(log(&store, &corrupt, &alice).await.len(), 1, "nothing was appended to the corrupt task");
    assert_eq!(log(&store, &fresh_id, &alice).await.len(), 1);
    store.close().await;
}

/// Writes queued when the store closes are still committed and answered; only calls made after
/// `close` fail with `Closed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_commits_the_writes_already_queued() {
    let dir = ScratchDir::new();
    let path = dir.database();
    let store = Arc::new(open(&path).await);
    let alice = owner("alice");
    let now = now_ms();
    let id = create(&store, record(alice, now, None)).await;

    let mut other = raw_connection(&path).await;
    sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.expect("another process takes the write lock");
    let writes: Vec<_> = (0..5)
        .map(|n| {
            let (store, id) = (Arc::clone(&store), id.clone());
            tokio::spawn(async move {
                let message = Message::agent_text(format!("queued {n}"));
                store.compare_and_set(&id, ACTIVE_STATES, TaskEventKind::Message { message }, None, now).await
            })
        })
        .collect();
    // Let the writes queue up behind the lock before closing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let closing = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.close().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    sqlx::query("ROLLBACK").execute(&mut other).await.expect("the other process lets go");
    other.close().await.expect("close the raw connection");
    closing.await.expect("close completes");

    for write in writes {
        assert!(write.await.expect("the write completes").expect("a queued write commits").is_some());
    }
    assert_eq!(store.get(&id).await, Err(StoreError::Closed));

    let store = open(&path).await;
    assert_eq!(log(&store, &id, &alice).await.len(), 6, "the creation and the five queued messages");
    store.close().await;
}

// ---------------------------------------------------------------------------------------------
// Push configs
// ---------------------------------------------------------------------------------------------

/// A sealed push config for `task`, with secrets in its token and credentials.
fn push_config(key: &PushKey, task: &TaskId, id: &str, at: Millis) -> StoredPushConfig {
    let config = PushConfig {
        id: id.into(),
        url: format!("https://hooks.example/{id}?secret=s3cr3t"),
        token: Some("push-token".into()),
        authentication: Some(PushAuthentication { scheme: "Bearer".into(), credentials: Some("push-cred".into()) }),
    };
    key.stored(task, &config, at)
}

fn sequences(delivery: &PushDelivery) -> Vec<u64> {
    delivery.events.iter().map(|event| event.sequence).collect()
}

/// Push configs, their cursors, attempts and next attempts outlive the store that wrote them; the
/// sealed bytes are stored exactly as given; a terminal task purged by retention takes its configs
/// with it.
#[tokio::test]
async fn push_configs_and_cursors_survive_reopening_and_go_with_their_task() {
    let dir = ScratchDir::new();
    let path = dir.database();
    let config = || SqliteStoreConfig::new(&path).retention(Duration::from_millis(HOUR));
    let key = PushKey::generate();
    let alice = owner("alice");
    let now = now_ms();

    let store = SqliteStore::open(config()).await.expect("open");
    let kept = create(&store, record(alice, now - 3 * HOUR, None)).await;
    write(&store, &kept, status(TaskState::Working), None, now - 3 * HOUR).await;
    let old_done = create(&store, record(alice, now - 3 * HOUR, None)).await;
    let hook = push_config(&key, &kept, "hook", now);
    let other = push_config(&key, &kept, "other", now);
    for stored in [hook.clone(), other.clone(), push_config(&key, &old_done, "hook", now)] {
        assert_eq!(store.put_push_config(&alice, stored, DeliverFrom::After(0)).await.expect("put"), PushPut::Stored);
    }
    // `hook` fails at its second entry and waits for its next attempt; `other` stays leased.
    let claimed = store.claim_push_deliveries("d", now, now + MINUTE, 10, 1).await.expect("claim");
    assert_eq!(claimed.len(), 3, "every config has its task's log to deliver");
    let retry = PushSettle { delivered_through: 1, attempts: 3, next_attempt_at: now + 1, dead_letter: None };
    assert!(store.settle_push_delivery(&kept, "hook", "d", retry.clone(), now).await.expect("settle"));
    // Ended long ago: past retention when the file is next read.
    write(&store, &old_done, completed(json!("old")), None, now - 2 * HOUR).await;
    store.close().await;

    let store = SqliteStore::open(config()).await.expect("reopen");
    assert_eq!(store.get(&old_done).await.expect("get"), None, "purged by retention");
    let configs = store.push_configs(&kept, &alice).await.expect("configs").expect("the owner's task");
    assert_eq!(configs, vec![hook.clone(), other], "stored as given, by id");
    assert_eq!(key.open(&configs[0]).expect("opens").url, "https://hooks.example/hook?secret=s3cr3t");
    assert!(store.claim_push_deliveries("e", now, now + MINUTE, 10, 100).await.expect("claim").is_empty());
    let mut claimed = store.claim_push_deliveries("e", now + 1, now + MINUTE, 10, 100).await.expect("claim");
    assert_eq!(claimed.len(), 1, "`other` is still leased: {claimed:?}");
    let delivery = claimed.remove(0);
    assert_eq!((delivery.config.id.as_str(), delivery.attempts), ("hook", 3));
    assert_eq!(sequences(&delivery), [2], "the cursor survived");
    assert_eq!(delivery.context_id.as_deref(), Some("context-7"));
    assert!(
        !store.settle_push_delivery(&kept, "other", "e", retry, now).await.expect("settle"),
        "the lease taken before the restart is still `d`'s"
    );
    store.close().await;

    let pool = raw_pool(&path).await;
    let orphans: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM push_configs WHERE task_id = ?1")
        .bind(old_done.as_str())
        .fetch_one(&pool)
        .await
        .expect("count configs");
    assert_eq!(orphans, 0, "the purged task's configs are deleted with it");
    let sealed: Vec<u8> = sqlx::query_scalar("SELECT sealed FROM push_configs WHERE task_id = ?1 AND id = 'hook'")
        .bind(kept.as_str())
        .fetch_one(&pool)
        .await
        .expect("the sealed bytes");
    assert_eq!(sealed, hook.sealed);
    pool.close().await;
}

/// A file written before push notifications: opening it adds the configs' table, and the tasks
/// stored before it take configs whose deliveries follow their logs like any other task's.
#[tokio::test]
async fn tasks_stored_before_push_configs_take_configs() {
    const EARLIER: usize = 4;
    let dir = ScratchDir::new();
    let path = dir.database();
    let pool = earlier_schema(&dir, EARLIER).await;
    let alice = owner("alice");
    let base = now_ms();
    let old = record(alice, base, None);
    // The task and its two-entry log as the earlier release wrote them.
    sqlx::query(
        "INSERT INTO tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload, last_sequence,
                            skill)
         VALUES (?1, ?2, ?3, 'submitted', ?4, ?4, ?5, ?6, 2, ?7)",
    )
    .bind(old.task.id.as_str())
    .bind(alice.to_hex())
    .bind(old.task.context_id.as_deref())
    .bind(i64::try_from(base).expect("a time"))
    .bind(serde_json::to_string(&old.task).expect("the task as JSON"))
    .bind(serde_json::to_string(&old.payload).expect("the payload as JSON"))
    .bind(old.task.skill.as_str())
    .execute(&pool)
    .await
    .expect("insert a task of the earlier release");
    for sequence in 1..=2_i64 {
        let message = Message::agent_text(format!("entry {sequence}"));
        sqlx::query("INSERT INTO task_events (task_id, sequence, at, kind) VALUES (?1, ?2, ?3, ?4)")
            .bind(old.task.id.as_str())
            .bind(sequence)
            .bind(i64::try_from(base).expect("a time"))
            .bind(serde_json::to_string(&TaskEventKind::Message { message }).expect("the event as JSON"))
            .execute(&pool)
            .await
            .expect("insert an event of the earlier release");
    }
    pool.close().await;

    let store = open(&path).await;
    let key = PushKey::generate();
    let id = &old.task.id;
    let from_start = push_config(&key, id, "all", base);
    let from_now = push_config(&key, id, "new", base);
    assert_eq!(store.put_push_config(&alice, from_start, DeliverFrom::After(0)).await.expect("put"), PushPut::Stored);
    assert_eq!(store.put_push_config(&alice, from_now, DeliverFrom::Now).await.expect("put"), PushPut::Stored);
    let claimed = store.claim_push_deliveries("d", base, base + MINUTE, 10, 100).await.expect("claim");
    assert_eq!(
        claimed.iter().map(|delivery| (delivery.config.id.as_str(), sequences(delivery))).collect::<Vec<_>>(),
        [("all", vec![1, 2])]
    );
    let done = PushSettle { delivered_through: 2, attempts: 0, next_attempt_at: base, dead_letter: None };
    assert!(store.settle_push_delivery(id, "all", "d", done, base).await.expect("settle"));
    write(&store, id, status(TaskState::Working), None, base + 1).await;
    let mut claimed: Vec<_> = store
        .claim_push_deliveries("d", base + 1, base + MINUTE, 10, 100)
        .await
        .expect("claim")
        .iter()
        .map(|delivery| (delivery.config.id.clone(), sequences(delivery)))
        .collect();
    claimed.sort();
    assert_eq!(claimed, [("all".to_owned(), vec![3]), ("new".to_owned(), vec![3])], "the new entry is pending");
    store.close().await;
}

/// Two stores on one file (two processes, in effect) claiming deliveries at the same moment never
/// take the same config, and between them take every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_never_claim_the_same_config() {
    let dir = ScratchDir::new();
    let path = dir.database();
    let (first, second) = (Arc::new(open(&path).await), Arc::new(open(&path).await));
    let key = PushKey::generate();
    let alice = owner("alice");
    let now = now_ms();
    for n in 0..8 {
        let id = create(&first, record(alice, now + n, None)).await;
        let config = push_config(&key, &id, "hook", now);
        assert_eq!(first.put_push_config(&alice, config, DeliverFrom::After(0)).await.expect("put"), PushPut::Stored);
    }
    let start = Arc::new(Barrier::new(2));
    let claims: Vec<_> = [(Arc::clone(&first), "a"), (Arc::clone(&second), "b")]
        .into_iter()
        .map(|(store, worker)| {
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let mut taken = Vec::new();
                for _ in 0..4 {
                    let claimed = store.claim_push_deliveries(worker, now, now + MINUTE, 2, 10).await.expect("claim");
                    taken.extend(claimed.into_iter().map(|delivery| delivery.config.task_id));
                }
                taken
            })
        })
        .collect();
    let mut taken = Vec::new();
    for claim in claims {
        taken.extend(claim.await.expect("the claims complete"));
    }
    assert_eq!(taken.len(), 8, "every config was taken once: {taken:?}");
    taken.sort();
    taken.dedup();
    assert_eq!(taken.len(), 8, "no config went to both stores");
    first.close().await;
    second.close().await;
}

/// A file written before the list indexes were ascending and `terminal` was computed without an
/// `IN` list (migrations 7 and 8): its tasks still list newest first, `terminal` still tells the
/// ended ones, and retention still purges those ended long ago.
#[tokio::test]
async fn tasks_stored_before_the_index_and_terminal_changes_list_and_purge_as_before() {
    const EARLIER: usize = 6;
    let dir = ScratchDir::new();
    let path = dir.database();
    let pool = earlier_schema(&dir, EARLIER).await;
    let alice = owner("alice");
    let now = now_ms();
    let mut rows = Vec::new();
    for (offset, state, updated_at) in [
        (0, TaskState::Completed, now - 2 * HOUR),
        (1, TaskState::Canceled, now - 10 * MINUTE),
        (2, TaskState::Submitted, now - 3 * HOUR + 2),
    ] {
        let mut old = record(alice, now - 3 * HOUR + offset, None);
        old.task.state = state;
        old.task.updated_at = updated_at;
        sqlx::query(
            "INSERT INTO tasks (id, owner_hash, context_id, state, created_at, updated_at, task, payload,
                                last_sequence, skill)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9)",
        )
        .bind(old.task.id.as_str())
        .bind(alice.to_hex())
        .bind(old.task.context_id.as_deref())
        .bind(state.as_str())
        .bind(i64::try_from(old.task.created_at).expect("a time"))
        .bind(i64::try_from(updated_at).expect("a time"))
        .bind(serde_json::to_string(&old.task).expect("the task as JSON"))
        .bind(serde_json::to_string(&old.payload).expect("the payload as JSON"))
        .bind(old.task.skill.as_str())
        .execute(&pool)
        .await
        .expect("insert a task of the earlier release");
        rows.push(old.task.id);
    }
    pool.close().await;
    let [old_done, recent_done, unfinished] = <[TaskId; 3]>::try_from(rows).expect("three tasks");

    let config = SqliteStoreConfig::new(&path).retention(Duration::from_millis(HOUR));
    let store = SqliteStore::open(config).await.expect("open");
    let page = store.list(&alice, &ListQuery::default()).await.expect("list");
    let listed: Vec<&TaskId> = page.tasks.iter().map(|task| &task.id).collect();
    assert_eq!((listed, page.total), (vec![&unfinished, &recent_done], 2), "newest first, the old ended task purged");
    assert_eq!(store.get(&old_done).await.expect("get"), None);
    let by_skill = ListQuery { skill: Some("summarize".into()), limit: 1, ..ListQuery::default() };
    let first = store.list(&alice, &by_skill).await.expect("list");
    assert_eq!(first.tasks.iter().map(|task| &task.id).collect::<Vec<_>>(), [&unfinished]);
    let cursor = PageStart::After(ListCursor::of(&first.tasks[0]));
    let second = store.list(&alice, &ListQuery { page: cursor, ..by_skill }).await.expect("list");
    assert_eq!(second.tasks.iter().map(|task| &task.id).collect::<Vec<_>>(), [&recent_done]);
    store.close().await;

    let pool = raw_pool(&path).await;
    let terminal: Vec<(String, i64)> =
        sqlx::query_as("SELECT id, terminal FROM tasks ORDER BY created_at").fetch_all(&pool).await.expect("read");
    assert_eq!(terminal, [(recent_done.to_string(), 1), (unfinished.to_string(), 0)]);
    pool.close().await;
}
