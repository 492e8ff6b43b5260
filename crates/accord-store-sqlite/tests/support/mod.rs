//! Fresh SQLite files for tests: each store gets its own file in its own temporary directory,
//! removed when the store is dropped.

// Each test file uses a part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use accord_engine::TaskState;
use accord_engine::task::{
    CreateLimits, DeliverFrom, Durability, ListQuery, Millis, OwnerHash, PushDelivery, PushPut, PushSettle, StoreError,
    StoredPushConfig, StoredTask, TaskEvent, TaskEventKind, TaskId, TaskPage, TaskStore, TaskWakeups,
};
use accord_store_sqlite::{SqliteStore, SqliteStoreConfig};
use async_trait::async_trait;

/// A directory under the system's temporary directory, deleted with its contents on drop.
#[derive(Debug)]
pub(crate) struct ScratchDir(PathBuf);

impl ScratchDir {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = format!(
            "accord-store-sqlite-{}-{}-{}",
            std::process::id(),
            accord_engine::task::now_ms(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(&path).expect("create a scratch directory");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// The database file's path inside the directory.
    pub(crate) fn database(&self) -> PathBuf {
        self.0.join("tasks.db")
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A [`SqliteStore`] on a fresh file that is deleted when the store is dropped.
#[derive(Debug)]
pub(crate) struct ScratchStore {
    // Declared first so the store is dropped before its directory is removed.
    store: SqliteStore,
    _dir: ScratchDir,
}

impl ScratchStore {
    pub(crate) async fn open() -> Self {
        let dir = ScratchDir::new();
        let store = SqliteStore::open(SqliteStoreConfig::new(dir.database())).await.expect("open a fresh SQLite store");
        Self { store, _dir: dir }
    }

    pub(crate) async fn open_shared() -> Arc<dyn TaskStore> {
        Arc::new(Self::open().await)
    }
}

#[async_trait]
impl TaskStore for ScratchStore {
    fn durability(&self) -> Durability {
        self.store.durability()
    }

    async fn create_limited(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
        limits: CreateLimits,
    ) -> Result<StoredTask, StoreError> {
        self.store.create_limited(record, event, then, limits).await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        self.store.get(id).await
    }

    async fn owner_of(&self, id: &TaskId) -> Result<Option<OwnerHash>, StoreError> {
        self.store.owner_of(id).await
    }

    async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.store.list(owner, query).await
    }

    async fn claim_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.store.claim_execution(id, worker, expires_at, now).await
    }

    async fn renew_execution_claim(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.store.renew_execution_claim(id, worker, expires_at, now).await
    }

    async fn activate_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.store.activate_execution(id, worker, expires_at, now).await
    }

    async fn append_all(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        events: Vec<TaskEventKind>,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.store.append_all(id, expected, events, execution_owner, now).await
    }

    async fn reap_expired_admissions(&self, now: Millis) -> Result<usize, StoreError> {
        self.store.reap_expired_admissions(now).await
    }

    async fn expired_active_leases(&self, now: Millis, limit: usize) -> Result<Vec<TaskId>, StoreError> {
        self.store.expired_active_leases(now, limit).await
    }

    async fn events_since(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        after: u64,
    ) -> Result<Option<Vec<TaskEvent>>, StoreError> {
        self.store.events_since(id, owner, after).await
    }

    async fn subscribe(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<TaskWakeups>, StoreError> {
        self.store.subscribe(id, owner).await
    }

    async fn put_push_config(
        &self,
        owner: &OwnerHash,
        config: StoredPushConfig,
        from: DeliverFrom,
    ) -> Result<PushPut, StoreError> {
        self.store.put_push_config(owner, config, from).await
    }

    async fn push_configs(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<Vec<StoredPushConfig>>, StoreError> {
        self.store.push_configs(id, owner).await
    }

    async fn delete_push_config(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        config_id: &str,
    ) -> Result<Option<bool>, StoreError> {
        self.store.delete_push_config(id, owner, config_id).await
    }

    async fn claim_push_deliveries(
        &self,
        worker: &str,
        now: Millis,
        lease_until: Millis,
        limit: usize,
        events: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        self.store.claim_push_deliveries(worker, now, lease_until, limit, events).await
    }

    async fn settle_push_delivery(
        &self,
        task_id: &TaskId,
        config_id: &str,
        worker: &str,
        settle: PushSettle,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.store.settle_push_delivery(task_id, config_id, worker, settle, now).await
    }

    async fn close(&self) {
        self.store.close().await;
    }
}
