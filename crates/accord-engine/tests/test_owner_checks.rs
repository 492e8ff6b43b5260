//! Refusing a caller who does not own a task does the same work whether the task exists or not:
//! the runtime reads only the task's owner (compared in constant time, against a stand-in for a
//! missing task) and never the record of a task that is not the caller's — so how long a refusal
//! takes tells neither that the task exists nor how large it is. (The timing itself is measured by
//! `scripts/timing-probe`, not asserted here.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use accord_engine::task::{
    AccessToken, CreateLimits, DeliverFrom, Durability, ListQuery, MemoryStore, Millis, OwnerHash, PushDelivery,
    PushPut, PushSettle, Reservation, RuntimeConfig, StoreError, StoredPushConfig, StoredTask, TaskEvent,
    TaskEventKind, TaskFailure, TaskId, TaskPage, TaskRuntime, TaskStore, TaskWakeups,
};
use accord_engine::{Agent, Completion, Message, Outcome, Run, Skill, TaskState};
use async_trait::async_trait;

/// A memory store that counts how many records are read.
struct CountingStore {
    inner: Arc<dyn TaskStore>,
    records_read: AtomicUsize,
}

#[async_trait]
impl TaskStore for CountingStore {
    fn durability(&self) -> Durability {
        self.inner.durability()
    }

    async fn create_limited(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
        limits: CreateLimits,
    ) -> Result<StoredTask, StoreError> {
        self.inner.create_limited(record, event, then, limits).await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        self.records_read.fetch_add(1, Ordering::SeqCst);
        self.inner.get(id).await
    }

    async fn owner_of(&self, id: &TaskId) -> Result<Option<OwnerHash>, StoreError> {
        self.inner.owner_of(id).await
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

    async fn append_all(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        events: Vec<TaskEventKind>,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.inner.append_all(id, expected, events, execution_owner, now).await
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

    async fn put_push_config(
        &self,
        owner: &OwnerHash,
        config: StoredPushConfig,
        from: DeliverFrom,
    ) -> Result<PushPut, StoreError> {
        self.inner.put_push_config(owner, config, from).await
    }

    async fn push_configs(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<Vec<StoredPushConfig>>, StoreError> {
        self.inner.push_configs(id, owner).await
    }

    async fn delete_push_config(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        config_id: &str,
    ) -> Result<Option<bool>, StoreError> {
        self.inner.delete_push_config(id, owner, config_id).await
    }

    async fn claim_push_deliveries(
        &self,
        worker: &str,
        now: Millis,
        lease_until: Millis,
        limit: usize,
        events: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        self.inner.claim_push_deliveries(worker, now, lease_until, limit, events).await
    }

    async fn settle_push_delivery(
        &self,
        task_id: &TaskId,
        config_id: &str,
        worker: &str,
        settle: PushSettle,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.inner.settle_push_delivery(task_id, config_id, worker, settle, now).await
    }

    async fn close(&self) {
        self.inner.close().await;
    }
}

fn agent() -> Agent {
    Agent::builder("owner-checks")
        .skill(Skill::builder("ask").invoke(|run: Run| async move {
            if run.message().is_some_and(|message| message.text() == "go") {
                Ok(Outcome::Completed(Completion::new(serde_json::json!("done"))))
            } else {
                Ok(Outcome::InputRequired(Message::agent_text("say go")))
            }
        }))
        .build()
        .expect("agent")
}

#[tokio::test]
async fn another_owners_task_is_refused_without_reading_its_record_like_a_missing_one() {
    let store = Arc::new(CountingStore { inner: Arc::new(MemoryStore::default()), records_read: AtomicUsize::new(0) });
    let runtime = TaskRuntime::new(agent(), Arc::clone(&store) as Arc<dyn TaskStore>, RuntimeConfig::default());
    let owner = AccessToken::generate().owner();
    let stranger = AccessToken::generate().owner();
    let skill = runtime.agent().skill("ask").expect("skill");
    let valid = skill.validate_input(serde_json::json!({})).expect("input");
    let started = runtime.start(Reservation::new(owner, valid)).await.expect("start");
    let mut waiting = started;
    for _ in 0..100 {
        if waiting.state == TaskState::InputRequired {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        waiting = runtime.get(&waiting.id, &owner).await.expect("the owner's task");
    }
    assert_eq!(waiting.state, TaskState::InputRequired);
    let (existing, missing) = (waiting.id.clone(), TaskId::generate());

    let read_before = store.records_read.load(Ordering::SeqCst);
    for id in [&existing, &missing] {
        let not_found = |result: Result<_, TaskFailure>| matches!(result, Err(TaskFailure::NotFound { .. }));
        assert!(not_found(runtime.get(id, &stranger).await.map(|_| ())), "get {id}");
        assert!(not_found(runtime.cancel(id, &stranger).await.map(|_| ())), "cancel {id}");
        assert!(not_found(runtime.awaiting_admission(id, &stranger).await.map(|_| ())), "awaiting_admission {id}");
        assert!(
            not_found(
                runtime
                    .resume(
                        id,
                        &stranger,
                        Message::new(accord_engine::Role::User, vec![accord_engine::Part::Text("go".into())])
                    )
                    .await
                    .map(|_| ())
            ),
            "resume {id}"
        );
        assert!(runtime.events(id, &stranger, 0).await.is_err(), "events {id}");
    }
    assert_eq!(store.records_read.load(Ordering::SeqCst), read_before, "no record read for a refusal");

    // The owner is not refused, and reading the task reads its record.
    assert_eq!(runtime.get(&existing, &owner).await.expect("the owner's task").state, TaskState::InputRequired);
    assert!(store.records_read.load(Ordering::SeqCst) > read_before);
    // A missing task is owned by nobody, not even by the stand-in the comparison uses for it.
    assert!(!owner.owns(None));
}
