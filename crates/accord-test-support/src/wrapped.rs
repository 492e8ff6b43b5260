//! A [`TaskStore`] wrapped for a test: [`Wrapped`] passes every call to the store inside, and its
//! [`Tap`] sees (or changes) only the calls a test cares about — the durability it reports, the
//! records it reads, the creates, lease renewals and appends it passes on, its `close` — or only keeps
//! something alive beside the store (a scratch directory, dropped after it). One delegating store
//! for every test that needs one, so that a new `TaskStore` method is delegated once.

use std::sync::Arc;

use accord_engine::TaskState;
use accord_engine::task::{
    CreateLimits, DeliverFrom, Durability, ListQuery, Millis, OwnerHash, PushDelivery, PushPut, PushSettle, StoreError,
    StoredPushConfig, StoredTask, TaskEvent, TaskEventKind, TaskId, TaskPage, TaskStore, TaskWakeups,
};
use async_trait::async_trait;

/// What a test sees of, or changes in, the calls to a [`Wrapped`] store. Every method has a
/// default that changes nothing; a tap overrides the ones its test is about.
pub trait Tap: Send + Sync + 'static {
    /// The durability the store reports, given the inner store's.
    fn durability(&self, inner: Durability) -> Durability {
        inner
    }

    /// Called before a whole record is read (`get`).
    fn reading_record(&self, _id: &TaskId) {}

    /// A worker's lease renewal: `Err` keeps it from the inner store and answers it (a stalled
    /// worker whose heartbeats do not arrive).
    fn renewing(&self, _id: &TaskId, _worker: &str) -> Result<(), StoreError> {
        Ok(())
    }

    /// Called after the inner store answered a create: the entries after the first, and whether
    /// the store took the record (`false`: refused).
    fn created(&self, _then: &[TaskEventKind], _accepted: bool) {}

    /// Called after the inner store answered an append: the events, the worker that wrote them,
    /// and whether the store took them (`false`: refused as stale).
    fn appended(&self, _events: &[TaskEventKind], _worker: Option<&str>, _accepted: bool) {}

    /// Called when the store is closed; `false` keeps the close from the inner store (a worker
    /// process exiting while the shared database lives on).
    fn closing(&self) -> bool {
        true
    }
}

/// A store that passes every call to `inner`, showing the ones its [`Tap`] wants to it.
pub struct Wrapped<T: Tap> {
    // Declared first, so that the store is dropped before what the tap keeps alive.
    inner: Arc<dyn TaskStore>,
    tap: T,
}

impl<T: Tap> Wrapped<T> {
    /// `inner`, tapped by `tap`.
    pub fn new(inner: Arc<dyn TaskStore>, tap: T) -> Self {
        Self { inner, tap }
    }

    /// The tap, to read what it saw.
    pub fn tap(&self) -> &T {
        &self.tap
    }

    /// The store inside.
    pub fn inner(&self) -> &Arc<dyn TaskStore> {
        &self.inner
    }
}

#[async_trait]
impl<T: Tap> TaskStore for Wrapped<T> {
    fn durability(&self) -> Durability {
        self.tap.durability(self.inner.durability())
    }

    async fn create_limited(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
        limits: CreateLimits,
    ) -> Result<StoredTask, StoreError> {
        let created = self.inner.create_limited(record, event, then.clone(), limits).await;
        self.tap.created(&then, created.is_ok());
        created
    }

    async fn count_by_state(&self) -> Result<Option<Vec<(TaskState, u64)>>, StoreError> {
        self.inner.count_by_state().await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        self.tap.reading_record(id);
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

    async fn take_over_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.inner.take_over_execution(id, worker, expires_at, now).await
    }

    async fn renew_execution_claim(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.tap.renewing(id, worker)?;
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
        let written = self.inner.append_all(id, expected, events.clone(), execution_owner, now).await;
        if let Ok(record) = &written {
            self.tap.appended(&events, execution_owner, record.is_some());
        }
        written
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
        if self.tap.closing() {
            self.inner.close().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accord_engine::task::MemoryStore;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl Tap for Counting {
        fn durability(&self, _inner: Durability) -> Durability {
            Durability::Durable
        }

        fn reading_record(&self, _id: &TaskId) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn calls_reach_the_inner_store_and_the_tap_sees_its_own() {
        let memory: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
        let wrapped = Wrapped::new(Arc::clone(&memory), Counting::default());
        assert_eq!(memory.durability(), Durability::Process);
        assert_eq!(wrapped.durability(), Durability::Durable, "the tap's durability");
        let id = TaskId::generate();
        assert!(wrapped.get(&id).await.expect("get").is_none());
        assert!(wrapped.owner_of(&id).await.expect("owner").is_none(), "not a record read");
        assert_eq!(wrapped.tap().0.load(Ordering::SeqCst), 1);
    }
}
