//! The in-memory task store: the whole store conformance suite, then the limits only this store
//! has (bounded capacity, eviction of terminal tasks, retention).

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{
    AccessToken, Durability, ListQuery, MemoryStore, MemoryStoreConfig, Millis, OwnerHash, Reservation, RuntimeConfig,
    StoreError, StoredTask, Task, TaskEventKind, TaskFailure, TaskId, TaskPayload, TaskResult, TaskRuntime, TaskStore,
    now_ms,
};
use accord_engine::{Agent, Completion, Outcome, Run, Skill, TaskState};
use accord_test_support::store_conformance_tests;
use serde_json::json;

store_conformance_tests!(|| async { Arc::new(MemoryStore::default()) as Arc<dyn TaskStore> });

/// The limits of [`MemoryStore`], which the `TaskStore` contract leaves to each store.
mod memory_store {
    use super::*;

    const MINUTE: Millis = 60_000;

    fn owner(name: &str) -> OwnerHash {
        AccessToken::parse(&format!("memory-store-{name}-access-token")).expect("a valid test token").owner()
    }

    fn record(owner: OwnerHash, created_at: Millis, admission_expires_at: Option<Millis>) -> StoredTask {
        StoredTask {
            task: Task::submitted(TaskId::generate(), "work", None, created_at),
            owner,
            payload: TaskPayload::new("work", json!({})),
            admission_expires_at,
            lease: None,
        }
    }

    fn submitted() -> TaskEventKind {
        TaskEventKind::Status { state: TaskState::Submitted, message: None }
    }

    fn completed() -> TaskEventKind {
        TaskEventKind::Result { result: TaskResult { output: json!("done"), ..TaskResult::default() } }
    }

    fn bounded(max_tasks: usize) -> Arc<MemoryStore> {
        Arc::new(MemoryStore::new(MemoryStoreConfig { max_tasks, ..MemoryStoreConfig::default() }))
    }

    async fn create(store: &MemoryStore, record: StoredTask) -> TaskId {
        let id = record.task.id.clone();
        store.create(record, submitted()).await.expect("create");
        id
    }

    async fn complete(store: &MemoryStore, id: &TaskId, now: Millis) {
        let done = store.compare_and_set(id, &[TaskState::Submitted], completed(), None, now).await;
        done.expect("compare and set").expect("the task completes");
    }

    /// Completes the task with an output of about `bytes` bytes.
    async fn complete_with(store: &MemoryStore, id: &TaskId, now: Millis, bytes: usize) {
        let result = TaskEventKind::Result {
            result: TaskResult { output: json!({ "text": "r".repeat(bytes) }), ..TaskResult::default() },
        };
        let done = store.compare_and_set(id, &[TaskState::Submitted], result, None, now).await;
        done.expect("compare and set").expect("the task completes");
    }

    async fn exists(store: &MemoryStore, id: &TaskId) -> bool {
        store.get(id).await.expect("get").is_some()
    }

    fn runtime(store: Arc<MemoryStore>) -> TaskRuntime {
        let agent = Agent::builder("memory-store-test")
            .skill(
                Skill::builder("work").invoke(|_run: Run| async { Ok(Outcome::Completed(Completion::new(json!({})))) }),
            )
            .build()
            .expect("a valid test agent");
        TaskRuntime::new(agent, store, RuntimeConfig::default().worker_id("a"))
    }

    fn reservation(runtime: &TaskRuntime, owner: OwnerHash, admission_ttl: Option<Duration>) -> Reservation {
        let input = runtime.agent().skill("work").expect("the skill").validate_input(json!({})).expect("valid input");
        Reservation { admission_ttl, ..Reservation::new(owner, input) }
    }

    #[test]
    fn declares_process_durability() {
        assert_eq!(MemoryStore::default().durability(), Durability::Process);
    }

    #[tokio::test]
    async fn bounded_capacity_evicts_the_oldest_terminal_task() {
        let store = bounded(3);
        let alice = owner("alice");
        let base = now_ms();
        let first = create(&store, record(alice, base, None)).await;
        let second = create(&store, record(alice, base + 1, None)).await;
        let active = create(&store, record(alice, base + 2, None)).await;
        // The second task ends first, so it is the terminal task changed longest ago.
        complete(&store, &second, base + 1000).await;
        complete(&store, &first, base + 2000).await;

        let fourth = create(&store, record(alice, base + 3, None)).await;
        assert!(!exists(&store, &second).await, "the oldest terminal task is evicted");
        for kept in [&first, &active, &fourth] {
            assert!(exists(&store, kept).await);
        }

        let fifth = create(&store, record(alice, base + 4, None)).await;
        assert!(!exists(&store, &first).await, "then the next oldest terminal task");
        for kept in [&active, &fourth, &fifth] {
            assert!(exists(&store, kept).await, "active tasks are never evicted");
        }
    }

    #[tokio::test]
    async fn eviction_follows_the_order_of_last_change_at_any_size() {
        const SIZE: usize = 200;
        let store = bounded(SIZE);
        let alice = owner("alice");
        let base = now_ms();
        let mut ids = Vec::new();
        for n in 0..SIZE {
            ids.push(create(&store, record(alice, base + n as Millis, None)).await);
        }
        // They end in reverse order of creation, the even ones only; the odd ones stay active.
        let mut ended = Vec::new();
        for (rank, id) in ids.iter().rev().step_by(2).enumerate() {
            complete(&store, id, base + 10_000 + rank as Millis).await;
            ended.push(id.clone());
        }
        // Each new task evicts exactly the ended task changed longest ago, never an active one.
        for (n, victim) in ended.iter().enumerate() {
            create(&store, record(alice, base + 20_000 + n as Millis, None)).await;
            assert!(!exists(&store, victim).await, "eviction {n} takes the oldest ended task");
            if let Some(next) = ended.get(n + 1) {
                assert!(exists(&store, next).await, "and only that one");
            }
        }
        for active in ids.iter().rev().skip(1).step_by(2) {
            assert!(exists(&store, active).await, "active tasks are never evicted");
        }
        assert!(store.create(record(alice, base + 30_000, None), submitted()).await.is_err(), "then the store is full");
    }

    fn budgeted(max_bytes: usize) -> Arc<MemoryStore> {
        Arc::new(MemoryStore::new(MemoryStoreConfig { max_bytes, ..MemoryStoreConfig::default() }))
    }

    fn sized(owner: OwnerHash, created_at: Millis, bytes: usize) -> StoredTask {
        let mut record = record(owner, created_at, None);
        record.payload.input = json!({ "text": "x".repeat(bytes) });
        record
    }

    /// The byte budget counts what tasks hold: a task's input, and what its log adds (a running
    /// task's entries twice, since its record holds them too; an ended task's in its compact form,
    /// without its input, which a finished task no longer needs); when a new task does not fit,
    /// the terminal tasks changed longest ago are evicted until it does.
    #[tokio::test]
    async fn the_byte_budget_evicts_the_oldest_terminal_tasks_until_a_new_one_fits() {
        let store = budgeted(100_000);
        let alice = owner("alice");
        let now = now_ms();
        let first = create(&store, sized(alice, now, 35_000)).await;
        let after_one = store.bytes();
        assert!((35_000..36_000).contains(&after_one), "the input is counted: {after_one}");
        let second = create(&store, sized(alice, now, 35_000)).await;
        complete_with(&store, &first, now + 1, 35_000).await;
        complete_with(&store, &second, now + 2, 35_000).await;
        let ended = store.bytes();
        assert!((70_000..72_000).contains(&ended), "ended tasks count their compact form: {ended}");
        let big = TaskEventKind::Message { message: accord_engine::Message::agent_text("y".repeat(5_000)) };
        store.compare_and_set(&second, &[TaskState::Completed], big, None, now + 2).await.expect("append");
        assert!(store.bytes() >= ended + 5_000, "what the log adds is counted: {}", store.bytes());

        // 35,000 more do not fit beside both: the oldest terminal task makes room.
        let third = create(&store, sized(alice, now, 35_000)).await;
        assert!(!exists(&store, &first).await, "the oldest terminal task was evicted");
        assert!(exists(&store, &second).await && exists(&store, &third).await);
        assert!(store.bytes() <= 100_000, "within the budget: {}", store.bytes());
        assert_eq!(store.len(), 2);
    }

    /// Unfinished tasks are never evicted: a task that does not fit beside them is refused, as is
    /// a task larger than the whole budget; a refused task leaves nothing behind.
    #[tokio::test]
    async fn the_byte_budget_refuses_what_does_not_fit_beside_unfinished_tasks() {
        let store = budgeted(100_000);
        let alice = owner("alice");
        let now = now_ms();
        let running = create(&store, sized(alice, now, 60_000)).await;
        let refused = store.create(sized(alice, now, 60_000), submitted()).await;
        assert_eq!(refused.expect_err("it does not fit"), StoreError::BytesExhausted { budget: 100_000 });
        let huge = store.create(sized(alice, now, 200_000), submitted()).await;
        assert_eq!(huge.expect_err("larger than the budget"), StoreError::BytesExhausted { budget: 100_000 });
        assert_eq!(store.len(), 1);
        let before = store.bytes();

        // Once the running task ends, its input is released and its result counted; it is
        // evicted when the next one does not fit beside it.
        complete_with(&store, &running, now + 1, 50_000).await;
        let ended = store.bytes();
        assert!(ended < before && ended > 50_000, "the input goes, the result is counted: {ended} of {before}");
        create(&store, sized(alice, now, 60_000)).await;
        assert!(!exists(&store, &running).await);

        // Through the runtime, a full budget is the capacity failure every face reports.
        let store = budgeted(4_000);
        let runtime = runtime(Arc::clone(&store));
        let input = runtime
            .agent()
            .skill("work")
            .expect("the skill")
            .validate_input(json!({ "text": "z".repeat(5_000) }))
            .expect("valid input");
        let failure = runtime.reserve(Reservation::new(alice, input)).await.expect_err("too big for the store");
        assert!(matches!(failure, TaskFailure::BytesExhausted { budget: 4_000 }), "{failure:?}");
        assert!(failure.to_string().contains("4000 bytes"), "{failure}");
        assert!(store.is_empty());
    }

    /// A task that has ended is kept in a compact form; it reads back exactly as it was written,
    /// record and log, whether or not its log alone rebuilds it (a task created with content of
    /// its own keeps that content), and it is written to again as any other.
    #[tokio::test]
    async fn an_ended_task_reads_back_exactly_as_written() {
        let store = bounded(10);
        let alice = owner("alice");
        let now = now_ms();
        let mut with_content = record(alice, now, None);
        with_content.task.metadata = Some(json!({"origin": "test"}));
        with_content.task.history.push(accord_engine::Message::agent_text("created with a history"));
        for record in [record(alice, now, None), with_content] {
            let id = create(&store, record).await;
            let message = TaskEventKind::Message { message: accord_engine::Message::agent_text("a question") };
            let events = vec![message, completed()];
            let written = store
                .append_all(&id, &[TaskState::Submitted], events, None, now + 1)
                .await
                .expect("append all")
                .expect("written");
            assert_eq!(written.task.state, TaskState::Completed);
            let log = store.events_since(&id, &alice, 0).await.expect("events").expect("owned");
            // Whole, but for the input, which a finished task no longer needs.
            let kept = StoredTask { payload: written.payload.finished(), ..written.clone() };
            assert_eq!(store.get(&id).await.expect("get"), Some(kept), "the record reads back whole");
            let listed = store.list(&alice, &ListQuery::default()).await.expect("list");
            assert!(listed.tasks.contains(&written.task), "listed whole");
            assert_eq!(log.len(), 3);
            assert_eq!(store.events_since(&id, &alice, 2).await.expect("events").expect("owned"), log[2..].to_vec());

            let note = TaskEventKind::Message { message: accord_engine::Message::agent_text("a note") };
            let later = store.compare_and_set(&id, &[TaskState::Completed], note, None, now + 2).await;
            let later = later.expect("compare and set").expect("an ended task is written to again");
            assert_eq!(later.task.history.len(), written.task.history.len() + 1);
            assert_eq!(store.get(&id).await.expect("get"), Some(later));
            assert_eq!(store.events_since(&id, &alice, 0).await.expect("events").expect("owned").len(), 4);
        }
    }

    #[tokio::test]
    async fn capacity_refuses_new_work_when_every_task_is_active() {
        let store = bounded(2);
        let alice = owner("alice");
        let base = now_ms();
        let kept = [
            create(&store, record(alice, base, Some(base + 10 * MINUTE))).await,
            create(&store, record(alice, base + 1, None)).await,
        ];

        let refused = store.create(record(alice, base + 2, None), submitted()).await;
        assert_eq!(refused.expect_err("the store is full"), StoreError::CapacityExhausted { capacity: 2 });
        for id in &kept {
            assert!(exists(&store, id).await, "a refused create evicts nothing");
        }
        assert_eq!(store.list(&alice, &ListQuery::default()).await.expect("list").total, 2);

        let runtime = runtime(Arc::clone(&store));
        let refused = runtime.reserve(reservation(&runtime, alice, None)).await;
        assert_eq!(refused.expect_err("the runtime is refused too"), TaskFailure::CapacityExhausted { capacity: 2 });
    }

    #[tokio::test]
    async fn terminal_tasks_expire_after_the_retention() {
        let retention = Duration::from_millis(50);
        let store =
            Arc::new(MemoryStore::new(MemoryStoreConfig { max_tasks: 100, retention, ..MemoryStoreConfig::default() }));
        let alice = owner("alice");
        let base = now_ms();

        // Explicit time first: the task ends a minute in the wall clock's future, and a later write
        // on another task moves the store's clock to either side of the retention boundary.
        let finished = create(&store, record(alice, base, None)).await;
        let waiting = create(&store, record(alice, base, None)).await;
        let ended_at = base + MINUTE;
        complete(&store, &finished, ended_at).await;
        let touch = |now: Millis| {
            let (store, waiting) = (Arc::clone(&store), waiting.clone());
            async move {
                let note = TaskEventKind::Status { state: TaskState::Submitted, message: None };
                store
                    .compare_and_set(&waiting, &[TaskState::Submitted], note, None, now)
                    .await
                    .expect("cas")
                    .expect("ok");
            }
        };
        touch(ended_at + 49).await;
        assert!(exists(&store, &finished).await, "a terminal task is kept for its retention");
        touch(ended_at + 50).await;
        assert!(!exists(&store, &finished).await, "and purged once the retention has passed");
        assert!(exists(&store, &waiting).await, "a task that is not terminal never expires");

        // Then the wall clock: a task that ended now is gone from reads once the retention passed.
        let bob = owner("bob");
        let recent = create(&store, record(bob, now_ms(), None)).await;
        let ended_at = now_ms();
        complete(&store, &recent, ended_at).await;
        while now_ms() < ended_at + retention.as_millis() as Millis {
            tokio::time::sleep(retention / 5).await;
        }
        assert!(!exists(&store, &recent).await);
        assert_eq!(store.list(&bob, &ListQuery::default()).await.expect("list").total, 0);
    }

    #[tokio::test]
    async fn an_abandoned_admission_is_reaped_before_capacity_is_enforced() {
        let store = bounded(1);
        let alice = owner("alice");
        let base = now_ms();

        // A reservation whose admission has already expired, left by a worker that went away.
        let abandoned = create(&store, record(alice, base, Some(base))).await;
        let next = create(&store, record(alice, base + 1, Some(base + 10 * MINUTE))).await;
        assert!(!exists(&store, &abandoned).await, "the abandoned admission was reaped, then evicted as terminal");
        assert!(exists(&store, &next).await);

        // The live admission is not reaped, so the store is now full.
        let refused = store.create(record(alice, base + 2, None), submitted()).await;
        assert_eq!(refused.expect_err("full of live work"), StoreError::CapacityExhausted { capacity: 1 });
    }

    #[tokio::test]
    async fn the_runtime_reaps_an_abandoned_reservation_before_capacity_is_enforced() {
        let store = bounded(1);
        let alice = owner("alice");
        let runtime = runtime(Arc::clone(&store));

        let abandoned = runtime.reserve(reservation(&runtime, alice, Some(Duration::ZERO))).await.expect("reserve");
        let next = runtime.reserve(reservation(&runtime, alice, None)).await.expect("the abandoned slot is reused");
        assert_eq!(runtime.get(&abandoned.id, &alice).await, Err(TaskFailure::NotFound { id: abandoned.id.clone() }));
        assert_eq!(runtime.get(&next.id, &alice).await.expect("the new task").state, TaskState::Submitted);

        let refused = runtime.reserve(reservation(&runtime, alice, None)).await;
        assert_eq!(refused.expect_err("full of live work"), TaskFailure::CapacityExhausted { capacity: 1 });
    }
}
