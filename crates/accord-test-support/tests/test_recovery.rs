//! A task whose worker stops renewing its lease is taken over by another worker, re-run from its
//! stored payload, and the first worker's late result is refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use accord_engine::task::{
    AccessToken, Durability, ListQuery, MemoryStore, Millis, OwnerHash, Reservation, RuntimeConfig, StoreError,
    StoredTask, TaskEvent, TaskEventKind, TaskId, TaskPage, TaskRuntime, TaskStore, TaskWakeups,
};
use accord_engine::{Agent, Completion, Outcome, Run, Skill, TaskState};
use async_trait::async_trait;
use serde_json::json;

/// A store whose renewals from one worker fail, as if that worker were cut off from the store.
struct PartitionedStore {
    inner: MemoryStore,
    cut_off: String,
    partitioned: AtomicBool,
}

#[async_trait]
impl TaskStore for PartitionedStore {
    fn durability(&self) -> Durability {
        self.inner.durability()
    }
    async fn create(&self, record: StoredTask, event: TaskEventKind) -> Result<TaskEvent, StoreError> {
        self.inner.create(record, event).await
    }
    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        self.inner.get(id).await
    }
    async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.inner.list(owner, query).await
    }
    async fn claim_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.inner.claim_execution(id, worker, expires_at, now).await
    }
    async fn renew_execution_claim(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        if worker == self.cut_off && self.partitioned.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("partitioned".into()));
        }
        self.inner.renew_execution_claim(id, worker, expires_at, now).await
    }
    async fn activate_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.inner.activate_execution(id, worker, expires_at, now).await
    }
    async fn compare_and_set(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        event: TaskEventKind,
        owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.inner.compare_and_set(id, expected, event, owner, now).await
    }
    async fn reap_expired_admissions(&self, now: Millis) -> Result<usize, StoreError> {
        self.inner.reap_expired_admissions(now).await
    }
    async fn expired_active_leases(&self, now: Millis, limit: usize) -> Result<Vec<TaskId>, StoreError> {
        self.inner.expired_active_leases(now, limit).await
    }
    async fn events_since(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        after: u64,
    ) -> Result<Option<Vec<TaskEvent>>, StoreError> {
        self.inner.events_since(id, owner, after).await
    }
    async fn subscribe(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<TaskWakeups>, StoreError> {
        self.inner.subscribe(id, owner).await
    }
    async fn close(&self) {
        self.inner.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_workers_task_is_recovered_and_its_late_result_refused() {
    let runs = Arc::new(AtomicUsize::new(0));
    let release_first = Arc::new(tokio::sync::Notify::new());
    let release_second = Arc::new(tokio::sync::Notify::new());
    let agent = {
        let runs = Arc::clone(&runs);
        let release_first = Arc::clone(&release_first);
        let release_second = Arc::clone(&release_second);
        Agent::builder("recovery")
            .skill(Skill::builder("work").invoke(move |run: Run| {
                let runs = Arc::clone(&runs);
                let release_first = Arc::clone(&release_first);
                let release_second = Arc::clone(&release_second);
                async move {
                    let attempt = runs.fetch_add(1, Ordering::SeqCst) + 1;
                    // Each attempt stalls (ignoring cancellation) until the test releases it.
                    if attempt == 1 {
                        release_first.notified().await;
                    } else {
                        release_second.notified().await;
                    }
                    let input = run.input().clone();
                    Ok(Outcome::Completed(Completion::new(json!({"attempt": attempt, "input": input}))))
                }
            }))
            .build()
            .expect("agent")
    };
    let store = Arc::new(PartitionedStore {
        inner: MemoryStore::default(),
        cut_off: "a".into(),
        partitioned: AtomicBool::new(false),
    });
    let lease = Duration::from_millis(300);
    let config = |worker: &str| RuntimeConfig::default().worker_id(worker).lease_ttl(lease).recovery_interval(None);
    let a = TaskRuntime::new(agent.clone(), store.clone(), config("a"));
    let b = TaskRuntime::new(agent.clone(), store.clone(), config("b"));

    let token = AccessToken::parse("recovery-token-0123456789").expect("token");
    let skill = agent.skill("work").expect("skill");
    let task = a
        .start(Reservation::new(token.owner(), skill.validate_input(json!({"n": 7})).expect("valid")))
        .await
        .expect("started");
    while runs.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(b.recover_expired().await.expect("recover"), 0, "a live lease is not taken over");

    // Worker a is cut off: its lease lapses.
    store.partitioned.store(true, Ordering::SeqCst);
    tokio::time::sleep(lease + Duration::from_millis(200)).await;
    assert_eq!(b.recover_expired().await.expect("recover"), 1);
    while runs.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Worker a wakes up and finishes while b still runs the task: a's result is fenced out.
    release_first.notify_one();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let meanwhile = b.get(&task.id, &token.owner()).await.expect("get");
    assert_eq!(meanwhile.state, TaskState::Working, "the stale worker's result was refused");
    assert_eq!(meanwhile.result, None);

    release_second.notify_one();
    let done = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let current = b.get(&task.id, &token.owner()).await.expect("get");
            if current.state.is_terminal() {
                return current;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("b finishes the task");
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(
        done.result.as_ref().map(|result| result.output.clone()),
        Some(json!({"attempt": 2, "input": {"n": 7}}))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let events = store.inner.events_since(&task.id, &token.owner(), 0).await.expect("events").expect("owned");
    let results = events.iter().filter(|event| matches!(event.kind, TaskEventKind::Result { .. })).count();
    assert_eq!(results, 1, "exactly one result in the log");
}
