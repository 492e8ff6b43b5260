//! What the engine tells operators: metric names, the face a request came through, and the
//! instrumented store every [`TaskRuntime`](crate::task::TaskRuntime) runs over.
//!
//! Metrics go through the [`metrics`] facade: without a recorder installed (the library's default)
//! every emission is a no-op; `accord-server` installs a Prometheus recorder when its `/metrics`
//! route is on, and an application may install its own. Labels are low-cardinality only — an
//! operation, a state, a face — never a task id, an owner or a token. The full list, with types
//! and meanings, is in `docs/observability.md`.

use std::future::Future;
use std::time::Instant;

use async_trait::async_trait;

use crate::model::{Millis, TaskEvent, TaskEventKind, TaskId};
use crate::run::TaskState;
use crate::task::{
    CreateLimits, DeliverFrom, Durability, ListQuery, OwnerHash, PushDelivery, PushPut, PushSettle, StoreError,
    StoredPushConfig, StoredTask, TaskPage, TaskStore, TaskWakeups,
};

/// Histogram: seconds a [`TaskStore`] operation took, by `operation`.
pub const STORE_OPERATION_SECONDS: &str = "accord_store_operation_duration_seconds";
/// Counter: [`TaskStore`] operations that failed, by `operation`.
pub const STORE_ERRORS: &str = "accord_store_errors_total";
/// Counter: task state transitions, by the state entered (`to`).
pub const TASK_TRANSITIONS: &str = "accord_task_transitions_total";
/// Gauge: tasks in the store, by `state` (read from the store when scraped).
pub const TASKS: &str = "accord_tasks";
/// Gauge: tasks this process runs now, each under its active lease.
pub const ACTIVE_LEASES: &str = "accord_task_leases_active";
/// Counter: tasks this process took over from a worker whose lease lapsed.
pub const RECOVERIES: &str = "accord_task_recoveries_total";
/// Counter: a run's fenced writes the store refused because this worker no longer held the
/// task's lease (the task was cancelled, or another worker took it over), by `operation`:
/// `record` (a run's progress or outcome), `renew` (a lease renewal), `activate` (a claim lost
/// before the run started).
pub const FENCED_WRITES: &str = "accord_task_fenced_writes_total";
/// Histogram: how many writes one grouped commit of a durable store held, by `store`.
pub const COMMIT_BATCH_SIZE: &str = "accord_store_commit_batch_size";

tokio::task_local! {
    static FACE: &'static str;
}

/// Runs `work` as a request of `face` (`lucid`, `a2a_rest`, …): the task runs it starts carry
/// the face in their span. The HTTP faces call it for every request.
pub async fn with_face<F: Future>(face: &'static str, work: F) -> F::Output {
    FACE.scope(face, work).await
}

/// The face of the request being served, if any (`None` in a recovery pass or outside a request).
pub fn current_face() -> Option<&'static str> {
    FACE.try_with(|face| *face).ok()
}

/// A short, stable prefix of an owner's hash for logs and spans: enough to tell owners apart in
/// a trace, never the token (the hash is already SHA-256 of it) and never the whole hash.
pub fn owner_tag(owner: &OwnerHash) -> String {
    hex::encode(&owner.as_bytes()[..6])
}

/// Every state, in the order of [`TaskState`].
pub const STATES: [TaskState; 8] = TaskState::ALL;

/// The state an event puts its task in, if it sets one.
fn entered(event: &TaskEventKind) -> Option<TaskState> {
    match event {
        TaskEventKind::Status { state, .. } | TaskEventKind::Error { state, .. } => Some(*state),
        TaskEventKind::Result { .. } => Some(TaskState::Completed),
        _ => None,
    }
}

/// The [`STORE_OPERATION_SECONDS`] histogram of one operation, and its name: a literal label, so
/// the metric's key is static and timing a call allocates nothing.
macro_rules! store_op {
    ($operation:literal) => {
        (metrics::histogram!(STORE_OPERATION_SECONDS, "operation" => $operation), $operation)
    };
}

/// A [`TaskStore`] that times every operation, counts failures, transitions and refused fenced
/// writes, and otherwise passes every call through unchanged.
pub(crate) struct ObservedStore {
    inner: std::sync::Arc<dyn TaskStore>,
}

impl ObservedStore {
    pub(crate) fn new(inner: std::sync::Arc<dyn TaskStore>) -> Self {
        Self { inner }
    }

    /// Runs one store call, recording its latency and, when it fails, an error.
    async fn timed<T>(
        &self,
        (seconds, operation): (metrics::Histogram, &'static str),
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let started = Instant::now();
        // A child span per store call, at TRACE: free unless asked for (`ACCORD_LOG=accord_engine=trace`).
        let result = tracing::Instrument::instrument(call, tracing::trace_span!("store", operation)).await;
        seconds.record(started.elapsed().as_secs_f64());
        // A closed store is shutting down, not failing.
        if matches!(&result, Err(error) if !matches!(error, StoreError::Closed)) {
            metrics::counter!(STORE_ERRORS, "operation" => operation).increment(1);
        }
        result
    }
}

#[async_trait]
impl TaskStore for ObservedStore {
    fn durability(&self) -> Durability {
        self.inner.durability()
    }

    async fn create(&self, record: StoredTask, event: TaskEventKind) -> Result<TaskEvent, StoreError> {
        let state = entered(&event);
        let created = self.timed(store_op!("create"), self.inner.create(record, event)).await?;
        count_states(state.as_slice());
        Ok(created)
    }

    async fn create_with(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
    ) -> Result<StoredTask, StoreError> {
        let states: Vec<_> = std::iter::once(&event).chain(&then).filter_map(entered).collect();
        let created = self.timed(store_op!("create"), self.inner.create_with(record, event, then)).await?;
        count_states(&states);
        Ok(created)
    }

    async fn create_limited(
        &self,
        record: StoredTask,
        event: TaskEventKind,
        then: Vec<TaskEventKind>,
        limits: CreateLimits,
    ) -> Result<StoredTask, StoreError> {
        let states: Vec<_> = std::iter::once(&event).chain(&then).filter_map(entered).collect();
        let created = self.timed(store_op!("create"), self.inner.create_limited(record, event, then, limits)).await?;
        count_states(&states);
        Ok(created)
    }

    async fn get(&self, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        self.timed(store_op!("get"), self.inner.get(id)).await
    }

    async fn owner_of(&self, id: &TaskId) -> Result<Option<OwnerHash>, StoreError> {
        self.timed(store_op!("owner_of"), self.inner.owner_of(id)).await
    }

    async fn list(&self, owner: &OwnerHash, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.timed(store_op!("list"), self.inner.list(owner, query)).await
    }

    async fn count_by_state(&self) -> Result<Option<Vec<(TaskState, u64)>>, StoreError> {
        self.timed(store_op!("count_by_state"), self.inner.count_by_state()).await
    }

    async fn claim_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.timed(store_op!("claim_execution"), self.inner.claim_execution(id, worker, expires_at, now)).await
    }

    async fn take_over_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.timed(store_op!("take_over_execution"), self.inner.take_over_execution(id, worker, expires_at, now)).await
    }

    async fn renew_execution_claim(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.timed(store_op!("renew_execution_claim"), self.inner.renew_execution_claim(id, worker, expires_at, now))
            .await
    }

    async fn activate_execution(
        &self,
        id: &TaskId,
        worker: &str,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        let activated = self
            .timed(store_op!("activate_execution"), self.inner.activate_execution(id, worker, expires_at, now))
            .await?;
        if activated.is_none() {
            metrics::counter!(FENCED_WRITES, "operation" => "activate").increment(1);
        }
        Ok(activated)
    }

    async fn compare_and_set(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        event: TaskEventKind,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        let state = entered(&event);
        let written = self
            .timed(store_op!("append"), self.inner.compare_and_set(id, expected, event, execution_owner, now))
            .await?;
        if written.is_some() {
            count_states(state.as_slice());
        }
        Ok(written)
    }

    async fn append_all(
        &self,
        id: &TaskId,
        expected: &[TaskState],
        events: Vec<TaskEventKind>,
        execution_owner: Option<&str>,
        now: Millis,
    ) -> Result<Option<StoredTask>, StoreError> {
        let states: Vec<_> = events.iter().filter_map(entered).collect();
        let written =
            self.timed(store_op!("append"), self.inner.append_all(id, expected, events, execution_owner, now)).await?;
        if written.is_some() {
            count_states(&states);
        }
        Ok(written)
    }

    async fn reap_expired_admissions(&self, now: Millis) -> Result<usize, StoreError> {
        let reaped = self.timed(store_op!("reap_expired_admissions"), self.inner.reap_expired_admissions(now)).await?;
        if reaped > 0 {
            transitions(TaskState::Canceled).increment(reaped as u64);
        }
        Ok(reaped)
    }

    async fn expired_active_leases(&self, now: Millis, limit: usize) -> Result<Vec<TaskId>, StoreError> {
        self.timed(store_op!("expired_active_leases"), self.inner.expired_active_leases(now, limit)).await
    }

    async fn events_since(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        after: u64,
    ) -> Result<Option<Vec<TaskEvent>>, StoreError> {
        self.timed(store_op!("events_since"), self.inner.events_since(id, owner, after)).await
    }

    async fn subscribe(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<TaskWakeups>, StoreError> {
        self.timed(store_op!("subscribe"), self.inner.subscribe(id, owner)).await
    }

    async fn put_push_config(
        &self,
        owner: &OwnerHash,
        config: StoredPushConfig,
        from: DeliverFrom,
    ) -> Result<PushPut, StoreError> {
        self.timed(store_op!("put_push_config"), self.inner.put_push_config(owner, config, from)).await
    }

    async fn push_configs(&self, id: &TaskId, owner: &OwnerHash) -> Result<Option<Vec<StoredPushConfig>>, StoreError> {
        self.timed(store_op!("push_configs"), self.inner.push_configs(id, owner)).await
    }

    async fn delete_push_config(
        &self,
        id: &TaskId,
        owner: &OwnerHash,
        config_id: &str,
    ) -> Result<Option<bool>, StoreError> {
        self.timed(store_op!("delete_push_config"), self.inner.delete_push_config(id, owner, config_id)).await
    }

    async fn claim_push_deliveries(
        &self,
        worker: &str,
        now: Millis,
        lease_until: Millis,
        limit: usize,
        events: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        self.timed(
            store_op!("claim_push_deliveries"),
            self.inner.claim_push_deliveries(worker, now, lease_until, limit, events),
        )
        .await
    }

    async fn settle_push_delivery(
        &self,
        task_id: &TaskId,
        config_id: &str,
        worker: &str,
        settle: PushSettle,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.timed(
            store_op!("settle_push_delivery"),
            self.inner.settle_push_delivery(task_id, config_id, worker, settle, now),
        )
        .await
    }

    async fn close(&self) {
        self.inner.close().await;
    }
}

fn count_states(states: &[TaskState]) {
    for state in states {
        transitions(*state).increment(1);
    }
}

/// The [`TASK_TRANSITIONS`] counter of `state`. Each label is written out (and checked against
/// [`TaskState::as_str`] by a test), so the metric's key is static: a transition allocates
/// nothing to count itself.
fn transitions(state: TaskState) -> metrics::Counter {
    macro_rules! by_state {
        ($($state:ident => $label:literal),* $(,)?) => {
            match state {
                $(TaskState::$state => metrics::counter!(TASK_TRANSITIONS, "to" => $label),)*
            }
        };
    }
    by_state!(
        Submitted => "submitted",
        Working => "working",
        InputRequired => "input_required",
        AuthRequired => "auth_required",
        Completed => "completed",
        Failed => "failed",
        Canceled => "canceled",
        Rejected => "rejected",
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

    use super::*;

    /// A recorder that keeps the keys registered with it.
    #[derive(Default)]
    struct Keys(Mutex<Vec<Key>>);

    impl Keys {
        fn keep(&self, key: &Key) {
            self.0.lock().expect("keys").push(key.clone());
        }

        fn labels(&self) -> Vec<(String, Vec<(String, String)>)> {
            let keys = self.0.lock().expect("keys");
            keys.iter()
                .map(|key| {
                    let labels = key.labels().map(|label| (label.key().to_owned(), label.value().to_owned())).collect();
                    (key.name().to_owned(), labels)
                })
                .collect()
        }
    }

    impl Recorder for Keys {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            self.keep(key);
            Counter::noop()
        }

        fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
            self.keep(key);
            Gauge::noop()
        }

        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            self.keep(key);
            Histogram::noop()
        }
    }

    #[test]
    fn every_transition_is_counted_under_its_states_name() {
        let keys = Keys::default();
        metrics::with_local_recorder(&keys, || count_states(&STATES));
        let expected: Vec<_> = STATES
            .iter()
            .map(|state| (TASK_TRANSITIONS.to_owned(), vec![("to".to_owned(), state.as_str().to_owned())]))
            .collect();
        assert_eq!(keys.labels(), expected);
    }

    #[test]
    fn a_store_operation_is_timed_under_its_name() {
        let keys = Keys::default();
        let (_, name) = metrics::with_local_recorder(&keys, || store_op!("append_all"));
        assert_eq!(name, "append_all");
        assert_eq!(
            keys.labels(),
            vec![(STORE_OPERATION_SECONDS.to_owned(), vec![("operation".to_owned(), "append_all".to_owned())])]
        );
    }
}
