//! The store conformance suite: every guarantee of the [`TaskStore`] contract, checked the same
//! way against every store.
//!
//! Each scenario is a public async function that takes a [`StoreFactory`] (something that makes a
//! fresh, empty store: a new in-memory store, a new SQLite file, a new PostgreSQL database) and
//! panics when the store breaks a guarantee. Store scenarios call the trait directly and pass
//! explicit times, placed minutes away from the wall clock, so that a store which also keeps time
//! itself never sees a deadline lapse mid-test. Runtime scenarios run one or two
//! [`TaskRuntime`]s over one store, as several workers would; a worker whose lease must lapse has
//! a 300 ms lease, so those scenarios wait for the wall clock that long.
//!
//! Limits that only some stores have (the in-memory store's capacity, eviction and retention) are
//! not part of the contract and are tested by that store's own tests.
//!
//! A store crate runs the whole suite with one line in a test file (its tests need `tokio` with
//! the `macros` and `rt-multi-thread` features):
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use accord_engine::task::{MemoryStore, TaskStore};
//!
//! accord_test_support::store_conformance_tests!(|| async { Arc::new(MemoryStore::default()) as Arc<dyn TaskStore> });
//! # fn main() {}
//! ```

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use accord_engine::task::{
    AccessToken, CreateLimits, DeliverFrom, ExecutionLease, LeasePhase, ListCursor, ListQuery,
    MAX_PUSH_CONFIGS_PER_TASK, Millis, OwnerHash, PageStart, PushAuthentication, PushConfig, PushDelivery, PushKey,
    PushPut, PushSettle, Reservation, RuntimeConfig, StoreError, StoredPushConfig, StoredTask, Task, TaskEvent,
    TaskEventKind, TaskFailure, TaskId, TaskPage, TaskPayload, TaskResult, TaskRuntime, TaskStore, TaskWakeups,
    apply_event, now_ms,
};
use accord_engine::{
    Agent, Artifact, BoxFuture, Completion, Message, Outcome, Part, Run, RunEvent, Skill, SkillBuilder, SkillError,
    TaskState,
};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify};

use crate::probe::Probe;
use crate::wrapped::{Tap, Wrapped};

/// Makes a fresh, empty store for one scenario.
///
/// Implemented for every `Fn() -> impl Future<Output = Arc<dyn TaskStore>>`, so a closure such as
/// `|| async { Arc::new(MemoryStore::default()) as Arc<dyn TaskStore> }` is a factory.
pub trait StoreFactory: Send + Sync {
    /// A new store that holds no task and shares nothing with stores made before.
    fn fresh(&self) -> BoxFuture<Arc<dyn TaskStore>>;
}

impl<F, Fut> StoreFactory for F
where
    F: Fn() -> Fut + Send + Sync,
    Fut: Future<Output = Arc<dyn TaskStore>> + Send + 'static,
{
    fn fresh(&self) -> BoxFuture<Arc<dyn TaskStore>> {
        Box::pin(self())
    }
}

/// Expands to one `#[tokio::test]` per conformance scenario, in a module `store_conformance`,
/// each running the scenario on a store made by `$factory` (an expression evaluated once per
/// test, for example a closure; see [`conformance`](crate::conformance)). Items of the invoking
/// module are visible to the expression.
#[macro_export]
macro_rules! store_conformance_tests {
    (@scenarios $factory:expr; $($scenario:ident),+ $(,)?) => {
        /// The store conformance suite of `accord_test_support::conformance`.
        mod store_conformance {
            #[allow(unused_imports)]
            use super::*;

            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    $crate::conformance::$scenario($factory).await;
                }
            )+
        }
    };
    ($factory:expr $(,)?) => {
        $crate::store_conformance_tests! { @scenarios $factory;
            create_is_readable_as_soon_as_it_returns,
            create_rejects_a_duplicate_id,
            create_logs_the_first_event_with_sequence_one,
            create_with_stores_a_running_task_in_one_step,
            create_with_stores_nothing_when_refused,
            create_with_stores_a_task_that_ended_before_it_was_stored,
            create_limited_refuses_an_owner_at_its_share_only,
            create_limited_reaps_abandoned_work_before_refusing_a_share,
            create_limited_holds_the_share_under_concurrent_creates,
            append_all_checks_once_and_appends_every_event_or_none,
            append_all_is_atomic_against_a_racing_cancel,
            events_since_returns_the_log_in_order,
            get_returns_the_owner_for_the_caller_to_check,
            list_never_returns_another_owners_task,
            events_since_is_owner_isolated,
            subscribe_is_owner_isolated,
            list_filters_by_context_and_state,
            list_orders_newest_first,
            list_pages_with_total_and_has_more,
            list_filters_by_skill,
            list_filters_by_last_change,
            list_combines_every_filter_in_every_page,
            list_pages_with_a_cursor_visits_every_task_once,
            claim_takes_a_prepared_lease_and_clears_the_admission,
            a_live_lease_blocks_a_claim,
            an_expired_prepared_lease_can_be_taken_over,
            an_expired_active_lease_can_be_taken_over,
            a_claim_is_refused_after_the_admission_expired,
            a_claim_is_refused_unless_submitted_or_working,
            concurrent_claims_have_exactly_one_winner,
            renewal_extends_only_the_owners_live_lease,
            renewing_to_now_gives_the_lease_up,
            activation_turns_only_the_owners_live_prepared_lease_active,
            compare_and_set_checks_the_expected_state,
            compare_and_set_appends_and_applies_the_event,
            a_finished_task_reads_back_whole_without_its_input,
            compare_and_set_fences_a_stale_execution_owner,
            a_terminal_write_clears_the_lease_and_the_admission,
            a_waiting_write_clears_the_lease_so_a_follow_up_claims_at_once,
            cancel_racing_completion_has_exactly_one_winner,
            reaping_cancels_abandoned_admissions_and_lapsed_prepared_leases,
            reaping_leaves_live_work_alone,
            expired_active_leases_lists_only_lapsed_active_leases,
            take_over_turns_only_a_lapsed_active_lease_into_an_active_one,
            concurrent_take_overs_have_exactly_one_winner,
            subscribe_wakes_after_a_change,
            close_makes_later_calls_fail,
            close_releases_subscribers,
            runtime_claim_is_atomic_across_two_runtimes,
            runtime_recovers_an_expired_lease_and_fences_the_stale_worker,
            runtime_recovers_a_task_from_its_saved_state_even_when_not_safe_to_repeat,
            runtime_cancel_is_never_overwritten_by_a_late_result,
            runtime_timeout_fails_the_task_and_cancels_the_handler,
            runtime_persists_a_handler_error,
            runtime_close_leaves_a_running_task_recoverable,
            runtime_events_stream_yields_the_log_in_order_and_ends,
            runtime_resumes_a_waiting_task_with_the_follow_up,
            runtime_recovers_a_resumed_task_with_its_follow_up,
            runtime_immediate_follow_ups_never_hang,
            push_configs_are_stored_listed_replaced_and_deleted,
            push_configs_are_capped_per_task,
            push_deliveries_follow_the_log_after_the_cursor,
            push_retries_wait_for_their_time_and_keep_the_cursor,
            push_delivery_leases_fence_a_stale_worker,
            push_dead_letters_are_logged_without_changing_the_task,
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// The unit of explicit time: far enough from the wall clock that no store's own clock reaches a
/// deadline during a scenario.
const MINUTE: Millis = 60_000;
/// How long a scenario waits for something that should happen promptly before it gives up. A
/// guard against hanging, not a speed requirement.
const PATIENCE: Duration = Duration::from_secs(10);
/// The lease of a worker whose lease a runtime scenario lets lapse (a stalled or stopped worker):
/// short, so the scenario waits little for the lapse.
const SHORT_LEASE: Duration = Duration::from_millis(300);
/// The lease of every other worker: long enough that a slow store's heartbeats never let it lapse.
const STEADY_LEASE: Duration = Duration::from_secs(10);
/// The skill every test task runs.
const SKILL: &str = "work";
/// States a task may be cancelled from (the runtime's `cancel`).
const ACTIVE_STATES: &[TaskState] =
    &[TaskState::Submitted, TaskState::Working, TaskState::InputRequired, TaskState::AuthRequired];
/// States in which a worker's handler may run (the runtime's fenced writes).
const RUNNING_STATES: &[TaskState] = &[TaskState::Submitted, TaskState::Working];

fn owner(name: &str) -> OwnerHash {
    AccessToken::parse(&format!("conformance-{name}-access-token")).expect("a valid test token").owner()
}

fn new_record(owner: OwnerHash, created_at: Millis, context_id: Option<&str>, admission: Option<Millis>) -> StoredTask {
    let mut task = Task::submitted(TaskId::generate(), SKILL, context_id.map(str::to_owned), created_at);
    task.metadata = Some(json!({"suite": "conformance"}));
    StoredTask {
        task,
        owner,
        payload: TaskPayload::new(SKILL, json!({"n": 1})),
        admission_expires_at: admission,
        lease: None,
    }
}

/// [`new_record`] of another skill.
fn skilled(owner: OwnerHash, created_at: Millis, context_id: Option<&str>, skill: &str) -> StoredTask {
    let mut record = new_record(owner, created_at, context_id, None);
    record.task.skill = skill.into();
    record.payload.skill = skill.into();
    record
}

fn submitted() -> TaskEventKind {
    status(TaskState::Submitted)
}

fn status(state: TaskState) -> TaskEventKind {
    TaskEventKind::Status { state, message: None }
}

fn result(output: Value) -> TaskEventKind {
    TaskEventKind::Result { result: TaskResult { output, ..TaskResult::default() } }
}

fn failure(state: TaskState, code: &str) -> TaskEventKind {
    TaskEventKind::Error { state, error: SkillError::new(code, "failed in a conformance scenario") }
}

/// An agent message whose id is derived from its text, so that equal texts compare equal.
fn agent_message(text: &str) -> Message {
    Message { message_id: Some(format!("msg-{text}")), ..Message::agent_text(text) }
}

fn message(text: &str) -> TaskEventKind {
    TaskEventKind::Message { message: agent_message(text) }
}

fn artifact(id: &str, text: &str, append: bool) -> TaskEventKind {
    TaskEventKind::Artifact {
        artifact: Artifact { artifact_id: id.into(), name: None, parts: vec![Part::Text(text.into())] },
        append,
        last_chunk: !append,
    }
}

fn lease(worker: &str, expires_at: Millis, phase: LeasePhase) -> Option<ExecutionLease> {
    Some(ExecutionLease { owner_id: worker.into(), expires_at, phase })
}

fn ids(page: &TaskPage) -> Vec<TaskId> {
    page.tasks.iter().map(|task| task.id.clone()).collect()
}

/// The ids of `tasks` in list order: newest `created_at` first, ties by id descending.
fn in_list_order(mut tasks: Vec<(Millis, TaskId)>) -> Vec<TaskId> {
    tasks.sort_by(|a, b| b.cmp(a));
    tasks.into_iter().map(|(_, id)| id).collect()
}

fn is_terminal_event(event: &TaskEvent) -> bool {
    event.kind.state().is_some_and(TaskState::is_terminal)
}

/// One fresh store and the instant its scenario's explicit times count from.
struct Bench {
    store: Arc<dyn TaskStore>,
    base: Millis,
}

impl Bench {
    async fn new(factory: &impl StoreFactory) -> Self {
        Self { store: factory.fresh().await, base: now_ms() }
    }

    fn at(&self, offset: Millis) -> Millis {
        self.base + offset
    }

    async fn create(&self, record: StoredTask) -> TaskId {
        let id = record.task.id.clone();
        self.store.create(record, submitted()).await.expect("create a task");
        id
    }

    /// A `submitted` task whose admission lasts ten minutes.
    async fn reserve(&self, owner: OwnerHash) -> TaskId {
        self.create(new_record(owner, self.base, None, Some(self.at(10 * MINUTE)))).await
    }

    /// A reserved task with `worker`'s prepared lease until `until`, claimed at `base`.
    async fn claimed(&self, owner: OwnerHash, worker: &str, until: Millis) -> TaskId {
        let id = self.reserve(owner).await;
        self.store.claim_execution(&id, worker, until, self.base).await.expect("claim").expect("the claim is granted");
        id
    }

    /// A `working` task with `worker`'s active lease until `until`, activated at `base`.
    async fn running(&self, owner: OwnerHash, worker: &str, until: Millis) -> TaskId {
        self.run(new_record(owner, self.base, None, Some(self.at(10 * MINUTE))), worker, until, self.base).await
    }

    /// Creates `record`, then claims, activates and turns it `working` for `worker` at `now`.
    async fn run(&self, record: StoredTask, worker: &str, until: Millis, now: Millis) -> TaskId {
        let id = self.create(record).await;
        self.store.claim_execution(&id, worker, until, now).await.expect("claim").expect("the claim is granted");
        self.store.activate_execution(&id, worker, until, now).await.expect("activate").expect("activated");
        self.store
            .compare_and_set(&id, &[TaskState::Submitted], status(TaskState::Working), Some(worker), now)
            .await
            .expect("compare and set")
            .expect("the task turns working");
        id
    }

    async fn set(&self, id: &TaskId, event: TaskEventKind, now: Millis) -> StoredTask {
        self.store
            .compare_and_set(id, ACTIVE_STATES, event, None, now)
            .await
            .expect("compare and set")
            .expect("the write is accepted")
    }

    async fn record(&self, id: &TaskId) -> StoredTask {
        self.store.get(id).await.expect("get").expect("the task exists")
    }

    async fn log(&self, id: &TaskId, owner: &OwnerHash) -> Vec<TaskEvent> {
        self.store.events_since(id, owner, 0).await.expect("events since").expect("the owner's task has a log")
    }

    async fn list(&self, owner: &OwnerHash, query: ListQuery) -> TaskPage {
        self.store.list(owner, &query).await.expect("list")
    }
}

// ---------------------------------------------------------------------------------------------
// create, get, the event log and owner isolation
// ---------------------------------------------------------------------------------------------

/// `create` is durable before it returns: a `get` right after it returns the record as given.
pub async fn create_is_readable_as_soon_as_it_returns(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let record = new_record(owner("alice"), bench.base, Some("context-1"), Some(bench.at(10 * MINUTE)));
    bench.store.create(record.clone(), submitted()).await.expect("create");

    let stored = bench.store.get(&record.task.id).await.expect("get");
    assert_eq!(stored, Some(record), "get right after create returns the record exactly as created");
    assert_eq!(bench.store.get(&TaskId::generate()).await.expect("get"), None, "an unknown id reads as absent");
}

/// `create` refuses an id that exists, and leaves the existing task untouched.
pub async fn create_rejects_a_duplicate_id(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, mallory) = (owner("alice"), owner("mallory"));
    let original = new_record(alice, bench.base, None, Some(bench.at(10 * MINUTE)));
    let id = bench.create(original.clone()).await;

    let mut impostor = new_record(mallory, bench.at(1), Some("other"), None);
    impostor.task.id = id.clone();
    let refused = bench.store.create(impostor, submitted()).await.expect_err("a duplicate id is refused");
    assert_eq!(refused, StoreError::DuplicateId(id.clone()));

    assert_eq!(bench.record(&id).await, original, "the existing record is unchanged");
    assert_eq!(bench.log(&id, &alice).await.len(), 1, "the existing log is unchanged");
    assert_eq!(bench.store.events_since(&id, &mallory, 0).await.expect("events since"), None);
}

/// `create` appends the creation event as the log's first entry, sequence 1.
pub async fn create_logs_the_first_event_with_sequence_one(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let record = new_record(alice, bench.base, None, None);
    let id = record.task.id.clone();
    let created = bench.store.create(record, submitted()).await.expect("create");

    assert_eq!(created.task_id, id);
    assert_eq!(created.sequence, 1);
    assert_eq!(created.kind, submitted());
    assert_eq!(bench.log(&id, &alice).await, vec![created], "the log holds exactly the creation event");
}

/// `create_with` stores a record, its first entry and the entries after it in one step: a task
/// reserved, claimed and `working` at once, with the caller's message in its history. Its active
/// lease blocks other claims, and once it lapses the task is a recovery candidate like any other.
pub async fn create_with_stores_a_running_task_in_one_step(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let mut record = new_record(alice, bench.base, Some("context-1"), None);
    record.lease = lease("a", bench.at(MINUTE), LeasePhase::Active);
    let id = record.task.id.clone();
    let asked = message("do the work");
    let then = vec![asked.clone(), status(TaskState::Working)];
    let stored = bench.store.create_with(record.clone(), submitted(), then).await.expect("create with");

    assert_eq!(stored.task.state, TaskState::Working);
    assert_eq!(stored.task.history, vec![agent_message("do the work")]);
    assert_eq!(stored.task.version, record.task.version + 2, "each entry after the first is applied once");
    assert_eq!((stored.lease.clone(), stored.admission_expires_at), (record.lease.clone(), None));
    assert_eq!(bench.record(&id).await, stored, "what it returns is what is stored");
    let log = bench.log(&id, &alice).await;
    let kinds: Vec<_> = log.iter().map(|event| (event.sequence, event.kind.clone())).collect();
    assert_eq!(kinds, vec![(1, submitted()), (2, asked), (3, status(TaskState::Working))]);
    assert_eq!(log[0].at, bench.base, "the first entry is dated with the task's creation");

    let claim = bench.store.claim_execution(&id, "b", bench.at(2 * MINUTE), bench.at(1)).await.expect("claim");
    assert_eq!(claim, None, "the live active lease blocks another worker");
    assert_eq!(bench.store.expired_active_leases(bench.at(1), 10).await.expect("expired"), Vec::<TaskId>::new());
    assert_eq!(bench.store.reap_expired_admissions(bench.at(2 * MINUTE)).await.expect("reap"), 0, "not reaped");
    let lapsed = bench.store.expired_active_leases(bench.at(2 * MINUTE), 10).await.expect("expired");
    assert_eq!(lapsed, vec![id.clone()], "recovered like any task whose worker died");
    let taken = bench.store.claim_execution(&id, "b", bench.at(3 * MINUTE), bench.at(2 * MINUTE)).await;
    assert!(taken.expect("claim").is_some(), "another worker takes it over once the lease lapsed");
}

/// `create_with` stores a task whose whole run happened before it was stored (a handler that
/// ended within the runtime's inline window): created with an active lease, `working`, what the
/// handler emitted and its end in one step. It is stored ended — without its lease or its input
/// — reads back whole, logs every entry in order, lists under its end state, and takes no place
/// of its owner's share.
pub async fn create_with_stores_a_task_that_ended_before_it_was_stored(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let open = bench.reserve(alice).await;
    let mut record = new_record(alice, bench.base, None, None);
    record.lease = lease("a", bench.at(MINUTE), LeasePhase::Active);
    let id = record.task.id.clone();
    let then = vec![
        message("do the work"),
        status(TaskState::Working),
        artifact("report", "the report", false),
        result(json!({"done": true})),
    ];
    let stored = bench.store.create_with(record, submitted(), then.clone()).await.expect("create with");

    assert_eq!(stored.task.state, TaskState::Completed);
    assert_eq!((stored.lease.clone(), stored.admission_expires_at), (None, None), "an ended task holds no lease");
    assert_eq!(stored.task.history, vec![agent_message("do the work")]);
    assert_eq!(stored.task.artifacts.len(), 1);
    assert_eq!(stored.task.result.as_ref().map(|result| &result.output), Some(&json!({"done": true})));
    let read = bench.record(&id).await;
    assert_eq!(read.task, stored.task, "it reads back whole, as it was returned");
    assert_eq!(read.payload.input, Value::Null, "its input went with its run");
    assert_eq!(read.payload, stored.payload);
    let kinds: Vec<_> = bench.log(&id, &alice).await.into_iter().map(|event| (event.sequence, event.kind)).collect();
    let expected: Vec<_> = (1..).zip(std::iter::once(submitted()).chain(then)).collect();
    assert_eq!(kinds, expected, "every entry is logged, in order");
    let completed = ListQuery { states: Some(vec![TaskState::Completed]), ..ListQuery::default() };
    assert_eq!(ids(&bench.list(&alice, completed).await), vec![id.clone()]);
    assert_eq!(
        bench.store.expired_active_leases(bench.at(2 * MINUTE), 10).await.expect("expired"),
        Vec::<TaskId>::new()
    );

    let share = CreateLimits::none().max_active_per_owner(Some(2));
    let create = || {
        let record = new_record(alice, bench.base, None, Some(bench.at(10 * MINUTE)));
        bench.store.create_limited(record, submitted(), Vec::new(), share)
    };
    create().await.expect("the ended task took no place");
    let refused = create().await.expect_err("the two unfinished tasks still count");
    assert_eq!(refused, StoreError::OwnerShareExhausted { limit: 2 });
    assert_eq!(bench.record(&open).await.task.state, TaskState::Submitted);
}

/// A `create_with` refused (a duplicate id) stores none of its entries and leaves the existing
/// task as it was.
pub async fn create_with_stores_nothing_when_refused(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let original = new_record(alice, bench.base, None, Some(bench.at(10 * MINUTE)));
    let id = bench.create(original.clone()).await;
    let mut twin = new_record(alice, bench.at(1), None, None);
    twin.task.id = id.clone();
    let then = vec![message("again"), status(TaskState::Working)];
    let refused = bench.store.create_with(twin, submitted(), then).await.expect_err("a duplicate id is refused");
    assert_eq!(refused, StoreError::DuplicateId(id.clone()));
    assert_eq!(bench.record(&id).await, original);
    assert_eq!(bench.log(&id, &alice).await.len(), 1);
}

/// With a per-owner share, an owner that has that many unfinished tasks (waiting ones included)
/// is refused and nothing is stored, while another owner still gets through; once one of its
/// tasks ends, the owner gets a place again. A duplicate id is reported as such, not as the share.
pub async fn create_limited_refuses_an_owner_at_its_share_only(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let limits = CreateLimits::none().max_active_per_owner(Some(2));
    let create = |owner: OwnerHash| {
        let store = Arc::clone(&bench.store);
        let record = new_record(owner, bench.base, None, Some(bench.at(10 * MINUTE)));
        async move { store.create_limited(record, submitted(), Vec::new(), limits).await }
    };
    let first = create(alice).await.expect("alice's first task").task.id;
    let waiting = create(alice).await.expect("alice's second task").task.id;
    bench.set(&waiting, status(TaskState::InputRequired), bench.at(1)).await;
    assert_eq!(
        create(alice).await.expect_err("alice is at her share"),
        StoreError::OwnerShareExhausted { limit: 2 },
        "a task waiting for input still counts"
    );
    assert_eq!(bench.list(&alice, ListQuery::default()).await.total, 2, "nothing is stored");
    create(bob).await.expect("bob still gets through");
    let mut twin = new_record(alice, bench.base, None, None);
    twin.task.id = first.clone();
    let refused = bench.store.create_limited(twin, submitted(), Vec::new(), limits).await;
    assert_eq!(refused.expect_err("a duplicate"), StoreError::DuplicateId(first.clone()));
    assert!(
        bench.store.create(new_record(alice, bench.base, None, None), submitted()).await.is_ok(),
        "a create without the limit is not held to it"
    );
    bench.set(&first, status(TaskState::Canceled), bench.at(2)).await;
    bench.set(&waiting, status(TaskState::Canceled), bench.at(2)).await;
    create(alice).await.expect("a place freed by a task that ended");
}

/// An owner at its share whose tasks include an abandoned reservation (an admission that
/// expired unclaimed) has it reaped before it is refused, as for the store's capacity.
pub async fn create_limited_reaps_abandoned_work_before_refusing_a_share(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let limits = CreateLimits::none().max_active_per_owner(Some(1));
    // Expired by the store's own clock, which is what a create reaps by.
    let abandoned = new_record(alice, bench.base - 2 * MINUTE, None, Some(bench.base - MINUTE));
    let abandoned_id = bench.create(abandoned).await;
    let record = new_record(alice, bench.base, None, Some(bench.at(10 * MINUTE)));
    bench.store.create_limited(record, submitted(), Vec::new(), limits).await.expect("the abandoned one made room");
    assert_eq!(bench.record(&abandoned_id).await.task.state, TaskState::Canceled);
    let record = new_record(alice, bench.base, None, Some(bench.at(10 * MINUTE)));
    let refused = bench.store.create_limited(record, submitted(), Vec::new(), limits).await;
    assert_eq!(refused.expect_err("live work is not reaped"), StoreError::OwnerShareExhausted { limit: 1 });
}

/// Concurrent creates for one owner never take more places than its share: the count and the
/// insert are one atomic step.
pub async fn create_limited_holds_the_share_under_concurrent_creates(factory: impl StoreFactory) {
    const SHARE: usize = 3;
    const CREATES: usize = 16;
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let limits = CreateLimits::none().max_active_per_owner(Some(SHARE));
    let start = Arc::new(Barrier::new(CREATES));
    let creates: Vec<_> = (0..CREATES)
        .map(|_| {
            let (store, start) = (Arc::clone(&bench.store), Arc::clone(&start));
            let record = new_record(alice, bench.base, None, Some(bench.at(10 * MINUTE)));
            tokio::spawn(async move {
                start.wait().await;
                store.create_limited(record, submitted(), Vec::new(), limits).await
            })
        })
        .collect();
    let mut created = 0;
    for create in creates {
        match create.await.expect("the create completes") {
            Ok(_) => created += 1,
            Err(error) => assert_eq!(error, StoreError::OwnerShareExhausted { limit: SHARE }),
        }
    }
    assert_eq!(created, SHARE, "exactly the share is taken");
    assert_eq!(bench.list(&alice, ListQuery::default()).await.total, SHARE);
}

/// `append_all` checks its condition once and then appends every event, in order, applying each;
/// when the condition fails it appends none. A run's whole end (artifacts, then the result) is
/// one write, fenced like any other; an empty batch changes nothing.
pub async fn append_all_checks_once_and_appends_every_event_or_none(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.running(alice, "a", bench.at(10 * MINUTE)).await;
    let before = bench.log(&id, &alice).await.len();
    let end = vec![artifact("a1", "part one", false), artifact("a2", "part two", false), result(json!({"ok": true}))];

    let stale = bench.store.append_all(&id, RUNNING_STATES, end.clone(), Some("b"), bench.at(1)).await;
    assert_eq!(stale.expect("append all"), None, "a worker without the lease writes nothing");
    let unchanged = bench.store.append_all(&id, RUNNING_STATES, Vec::new(), Some("a"), bench.at(1)).await;
    let unchanged = unchanged.expect("append all").expect("the condition holds");
    assert_eq!(bench.log(&id, &alice).await.len(), before, "an empty batch appends nothing");
    assert_eq!(unchanged, bench.record(&id).await);

    let ended = bench.store.append_all(&id, RUNNING_STATES, end.clone(), Some("a"), bench.at(2)).await;
    let ended = ended.expect("append all").expect("the lease holder ends the run");
    assert_eq!(ended.task.state, TaskState::Completed);
    assert_eq!(ended.task.artifacts.len(), 2);
    assert_eq!(ended.lease, None, "the terminal entry clears the lease, even as the last of a batch");
    assert_eq!(ended.task.version, unchanged.task.version + 3);
    let log = bench.log(&id, &alice).await;
    let tail: Vec<_> = log[before..].iter().map(|event| (event.sequence, event.kind.clone())).collect();
    let sequences = (before as u64 + 1..).zip(end.clone()).collect::<Vec<_>>();
    assert_eq!(tail, sequences, "every event, in order, numbered without gaps");

    // A batch on a task that has ended is refused whole.
    let late = bench.store.append_all(&id, RUNNING_STATES, end, None, bench.at(3)).await;
    assert_eq!(late.expect("append all"), None);
    assert_eq!(bench.log(&id, &alice).await.len(), log.len(), "nothing of a refused batch is appended");
}

/// A cancellation racing a run's final batch (artifacts and result) has exactly one winner, and
/// the log never holds part of the batch: either the whole end of the run, or the cancellation
/// and none of it.
pub async fn append_all_is_atomic_against_a_racing_cancel(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    for round in 0..10 {
        let id = bench.running(alice, "a", bench.at(10 * MINUTE)).await;
        let end = vec![artifact("a1", "one", false), artifact("a2", "two", false), result(json!(round))];
        let (store, batch_id) = (Arc::clone(&bench.store), id.clone());
        let batch = tokio::spawn(async move {
            store.append_all(&batch_id, RUNNING_STATES, end, Some("a"), now_ms()).await.expect("append all")
        });
        let (store, cancel_id) = (Arc::clone(&bench.store), id.clone());
        let cancel = tokio::spawn(async move {
            store
                .compare_and_set(&cancel_id, ACTIVE_STATES, status(TaskState::Canceled), None, now_ms())
                .await
                .expect("compare and set")
        });
        let (batch, cancel) = (batch.await.expect("batch task"), cancel.await.expect("cancel task"));
        assert!(batch.is_some() != cancel.is_some(), "exactly one wins in round {round}");
        let kinds: Vec<_> = bench.log(&id, &alice).await.into_iter().map(|event| event.kind).collect();
        let artifacts = kinds.iter().filter(|kind| matches!(kind, TaskEventKind::Artifact { .. })).count();
        match batch {
            Some(record) => {
                assert_eq!(artifacts, 2);
                assert_eq!(record.task.state, TaskState::Completed);
                assert!(kinds.last().is_some_and(|kind| matches!(kind, TaskEventKind::Result { .. })));
            }
            None => {
                assert_eq!(artifacts, 0, "no part of the losing batch is in the log");
                assert_eq!(kinds.last(), Some(&status(TaskState::Canceled)));
            }
        }
    }
}

/// `events_since` returns the entries after a sequence number, in order, numbered without gaps.
pub async fn events_since_returns_the_log_in_order(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.reserve(alice).await;
    let changes = vec![
        status(TaskState::Working),
        message("one"),
        artifact("report", "part one", false),
        message("two"),
        result(json!({"answer": 42})),
    ];
    for (offset, change) in (1..).zip(&changes) {
        bench.set(&id, change.clone(), bench.at(offset)).await;
    }

    let log = bench.log(&id, &alice).await;
    let sequences: Vec<u64> = log.iter().map(|event| event.sequence).collect();
    assert_eq!(sequences, vec![1, 2, 3, 4, 5, 6]);
    let kinds: Vec<TaskEventKind> = log.iter().map(|event| event.kind.clone()).collect();
    let mut expected = vec![submitted()];
    expected.extend(changes);
    assert_eq!(kinds, expected, "the log holds every change in the order it was made");
    assert!(log.iter().all(|event| event.task_id == id));

    let tail = bench.store.events_since(&id, &alice, 3).await.expect("events since").expect("the owner's task");
    assert_eq!(tail, log[3..].to_vec(), "events after sequence 3 are 4, 5 and 6");
    let none = bench.store.events_since(&id, &alice, 6).await.expect("events since").expect("the owner's task");
    assert!(none.is_empty(), "nothing follows the last event");
    let beyond = bench.store.events_since(&id, &alice, 100).await.expect("events since").expect("the owner's task");
    assert!(beyond.is_empty());
}

/// `get` returns any record with its persisted owner, which the caller (the runtime) checks;
/// `owner_of` returns that owner alone, and nothing for a missing task.
pub async fn get_returns_the_owner_for_the_caller_to_check(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let alices = bench.reserve(alice).await;
    let bobs = bench.reserve(bob).await;

    let record = bench.record(&alices).await;
    assert_eq!(record.owner, alice);
    assert_ne!(record.owner, bob);
    assert_eq!(bench.record(&bobs).await.owner, bob);
    // The owner alone, as an ownership check reads it before the record.
    assert_eq!(bench.store.owner_of(&alices).await.expect("owner_of"), Some(alice));
    assert_eq!(bench.store.owner_of(&bobs).await.expect("owner_of"), Some(bob));
    assert_eq!(bench.store.owner_of(&TaskId::generate()).await.expect("owner_of"), None);
}

/// `list` returns only the caller's tasks.
pub async fn list_never_returns_another_owners_task(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, bob, carol) = (owner("alice"), owner("bob"), owner("carol"));
    let first = bench.create(new_record(alice, bench.at(1), None, None)).await;
    let second = bench.create(new_record(alice, bench.at(2), None, None)).await;
    let bobs = bench.create(new_record(bob, bench.at(3), None, None)).await;

    let page = bench.list(&alice, ListQuery::default()).await;
    assert_eq!(ids(&page), vec![second, first]);
    assert_eq!((page.total, page.has_more), (2, false));
    let page = bench.list(&bob, ListQuery::default()).await;
    assert_eq!(ids(&page), vec![bobs]);
    assert_eq!(page.total, 1);
    let page = bench.list(&carol, ListQuery::default()).await;
    assert_eq!(page, TaskPage { tasks: Vec::new(), total: 0, has_more: false, next: None });
}

/// `events_since` answers `None` for another owner's task, exactly as for a missing one.
pub async fn events_since_is_owner_isolated(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let id = bench.reserve(alice).await;

    assert_eq!(bench.store.events_since(&id, &bob, 0).await.expect("events since"), None);
    assert_eq!(bench.store.events_since(&TaskId::generate(), &alice, 0).await.expect("events since"), None);
    assert_eq!(bench.log(&id, &alice).await.len(), 1);
}

/// `subscribe` answers `None` for another owner's task, exactly as for a missing one.
pub async fn subscribe_is_owner_isolated(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let id = bench.reserve(alice).await;

    assert!(bench.store.subscribe(&id, &bob).await.expect("subscribe").is_none());
    assert!(bench.store.subscribe(&TaskId::generate(), &alice).await.expect("subscribe").is_none());
    assert!(bench.store.subscribe(&id, &alice).await.expect("subscribe").is_some());
}

// ---------------------------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------------------------

/// `list` filters by context id and by a set of states, alone and together.
pub async fn list_filters_by_context_and_state(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let waiting = bench.create(new_record(alice, bench.at(1), Some("context-a"), None)).await;
    let working = bench.create(new_record(alice, bench.at(2), Some("context-a"), None)).await;
    let completed = bench.create(new_record(alice, bench.at(3), Some("context-b"), None)).await;
    let canceled = bench.create(new_record(alice, bench.at(4), None, None)).await;
    let bobs = bench.create(new_record(bob, bench.at(5), Some("context-a"), None)).await;
    bench.set(&working, status(TaskState::Working), bench.at(10)).await;
    bench.set(&completed, result(json!("done")), bench.at(11)).await;
    bench.set(&canceled, status(TaskState::Canceled), bench.at(12)).await;
    bench.set(&bobs, status(TaskState::Working), bench.at(13)).await;

    let by_context = |context: &str| ListQuery { context_id: Some(context.into()), ..ListQuery::default() };
    let by_states = |states: &[TaskState]| ListQuery { states: Some(states.to_vec()), ..ListQuery::default() };

    let page = bench.list(&alice, by_context("context-a")).await;
    assert_eq!(ids(&page), vec![working.clone(), waiting.clone()]);
    assert_eq!(page.total, 2);
    let page = bench.list(&alice, by_states(&[TaskState::Completed, TaskState::Canceled])).await;
    assert_eq!(ids(&page), vec![canceled, completed]);
    assert_eq!(page.total, 2);
    let page =
        bench.list(&alice, ListQuery { states: Some(vec![TaskState::Working]), ..by_context("context-a") }).await;
    assert_eq!(ids(&page), vec![working]);
    assert_eq!(page.total, 1);
    let page = bench.list(&alice, by_states(&[TaskState::Submitted])).await;
    assert_eq!(ids(&page), vec![waiting]);
    let page = bench.list(&alice, by_context("context-unknown")).await;
    assert_eq!(page, TaskPage { tasks: Vec::new(), total: 0, has_more: false, next: None });
    let page = bench.list(&alice, by_states(&[TaskState::Failed])).await;
    assert_eq!((page.tasks.len(), page.total), (0, 0));
}

/// `list` orders tasks by creation time, newest first, whatever the order of creation calls.
pub async fn list_orders_newest_first(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let mut created = Vec::new();
    for offset in [3, 1, 4, 2, 0] {
        created.push((offset, bench.create(new_record(alice, bench.at(offset), None, None)).await));
    }
    created.sort_by_key(|(offset, _)| std::cmp::Reverse(*offset));

    let page = bench.list(&alice, ListQuery::default()).await;
    let expected: Vec<TaskId> = created.into_iter().map(|(_, id)| id).collect();
    assert_eq!(ids(&page), expected);
    let times: Vec<Millis> = page.tasks.iter().map(|task| task.created_at).collect();
    assert_eq!(times, vec![bench.at(4), bench.at(3), bench.at(2), bench.at(1), bench.at(0)]);
}

/// `list` pages with `limit` and an offset, reporting the total of all matches, whether more
/// follow and where the next page starts.
pub async fn list_pages_with_total_and_has_more(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let mut newest_first = Vec::new();
    for offset in 0..5 {
        newest_first.insert(0, bench.create(new_record(alice, bench.at(offset), None, None)).await);
    }
    let page_of =
        |limit: usize, offset: usize| ListQuery { limit, page: PageStart::Offset(offset), ..ListQuery::default() };

    let page = bench.list(&alice, page_of(2, 0)).await;
    assert_eq!((ids(&page), page.total, page.has_more), (newest_first[0..2].to_vec(), 5, true));
    let next = page.next.expect("more follow");
    assert_eq!((next.created_at, &next.id), (bench.at(3), &newest_first[1]), "the next page starts after this one");
    let page = bench.list(&alice, page_of(2, 2)).await;
    assert_eq!((ids(&page), page.total, page.has_more), (newest_first[2..4].to_vec(), 5, true));
    let page = bench.list(&alice, page_of(2, 4)).await;
    assert_eq!((ids(&page), page.total, page.has_more), (newest_first[4..5].to_vec(), 5, false));
    assert_eq!(page.next, None, "nothing follows the last page");
    let page = bench.list(&alice, page_of(2, 5)).await;
    assert_eq!((page.tasks.len(), page.total, page.has_more), (0, 5, false));
    let page = bench.list(&alice, page_of(10, 9)).await;
    assert_eq!((page.tasks.len(), page.total, page.has_more), (0, 5, false));
    let page = bench.list(&alice, page_of(0, 0)).await;
    assert_eq!((page.tasks.len(), page.total, page.has_more), (0, 5, true));
    let page = bench.list(&alice, ListQuery::default()).await;
    assert_eq!((ids(&page), page.total, page.has_more), (newest_first.clone(), 5, false));

    // The total counts the filtered set, not every task of the owner.
    bench.set(&newest_first[0], status(TaskState::Canceled), bench.at(10)).await;
    bench.set(&newest_first[3], status(TaskState::Canceled), bench.at(11)).await;
    let page = bench.list(&alice, ListQuery { states: Some(vec![TaskState::Submitted]), ..page_of(2, 0) }).await;
    assert_eq!((ids(&page), page.total, page.has_more), (newest_first[1..3].to_vec(), 3, true));
}

/// `list` filters by skill: exactly that skill, of the caller's tasks only.
pub async fn list_filters_by_skill(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let older = bench.create(skilled(alice, bench.at(1), None, "summarize")).await;
    let translation = bench.create(skilled(alice, bench.at(2), Some("context-a"), "translate")).await;
    let newer = bench.create(skilled(alice, bench.at(3), Some("context-a"), "summarize")).await;
    let bobs = bench.create(skilled(bob, bench.at(4), None, "summarize")).await;
    bench.set(&older, result(json!("done")), bench.at(10)).await;
    let by_skill = |skill: &str| ListQuery { skill: Some(skill.into()), ..ListQuery::default() };

    let page = bench.list(&alice, by_skill("summarize")).await;
    assert_eq!((ids(&page), page.total, page.has_more), (vec![newer.clone(), older], 2, false));
    let page = bench.list(&alice, by_skill("translate")).await;
    assert_eq!((ids(&page), page.total), (vec![translation], 1));
    let page = bench.list(&alice, ListQuery { limit: 1, ..by_skill("summarize") }).await;
    assert_eq!((ids(&page), page.total, page.has_more), (vec![newer], 2, true), "the total counts the skill's tasks");
    for other in [SKILL, "summ", "Summarize", ""] {
        let page = bench.list(&alice, by_skill(other)).await;
        assert_eq!((page.tasks.len(), page.total), (0, 0), "no task of skill {other:?}: the match is exact");
    }
    assert_eq!(ids(&bench.list(&bob, by_skill("summarize")).await), vec![bobs]);
}

/// `list` filters by last change: the tasks whose `updated_at` is at or after the instant.
pub async fn list_filters_by_last_change(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let mut tasks = Vec::new();
    for offset in 1..=4 {
        tasks.push(bench.create(new_record(alice, bench.at(offset), None, None)).await);
    }
    let bobs = bench.create(new_record(bob, bench.at(5), None, None)).await;
    // Last changes: 100, 50, 3 (never changed since its creation), 100 (twice changed, last at 100).
    bench.set(&tasks[0], status(TaskState::Working), bench.at(100)).await;
    bench.set(&tasks[1], message("progress"), bench.at(50)).await;
    bench.set(&tasks[3], message("progress"), bench.at(20)).await;
    bench.set(&tasks[3], result(json!("done")), bench.at(100)).await;
    bench.set(&bobs, message("progress"), bench.at(100)).await;
    let changed_since = |at: Millis| ListQuery { updated_after: Some(at), ..ListQuery::default() };

    let page = bench.list(&alice, changed_since(bench.at(50))).await;
    assert_eq!((ids(&page), page.total), (vec![tasks[3].clone(), tasks[1].clone(), tasks[0].clone()], 3));
    let page = bench.list(&alice, changed_since(bench.at(51))).await;
    assert_eq!((ids(&page), page.total), (vec![tasks[3].clone(), tasks[0].clone()], 2), "the bound is inclusive");
    let page = bench.list(&alice, changed_since(bench.at(3))).await;
    assert_eq!(page.total, 4, "a task never changed since its creation counts from its creation");
    let page = bench.list(&alice, ListQuery { limit: 1, ..changed_since(bench.at(50)) }).await;
    assert_eq!((ids(&page), page.total, page.has_more), (vec![tasks[3].clone()], 3, true));
    let page = bench.list(&alice, changed_since(bench.at(101))).await;
    assert_eq!((page.tasks.len(), page.total, page.has_more), (0, 0, false));
    assert_eq!(bench.list(&alice, changed_since(0)).await.total, 4);
}

/// Every combination of the filters (context, states, skill, last change), each alone and
/// together, selects exactly the matching tasks in list order, with the exact total on every
/// page; paged by cursor or by offset, every page is full until the last, and the pages together
/// are the whole list.
pub async fn list_combines_every_filter_in_every_page(factory: impl StoreFactory) {
    const TASKS: u64 = 24;
    const PAGE: usize = 3;
    let bench = Bench::new(&factory).await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let contexts = [Some("context-a"), Some("context-b"), None];
    let skills = ["summarize", "summarize", "translate"];
    let mut model = Vec::new();
    for n in 0..TASKS {
        let n_usize = usize::try_from(n).expect("a small number");
        let (context, skill) = (contexts[n_usize % 3], skills[n_usize % 5 % 3]);
        // Pairs of tasks share their creation time, so ties are broken by id.
        let created_at = bench.at(n / 2);
        let id = bench.create(skilled(alice, created_at, context, skill)).await;
        let changed_at = bench.at(100 + (n * 7) % 13);
        let change = match n % 4 {
            0 => message("progress"),
            1 => status(TaskState::Working),
            2 => result(json!("done")),
            _ => status(TaskState::InputRequired),
        };
        let record = bench.set(&id, change, changed_at).await;
        assert_eq!(record.task.updated_at, changed_at);
        model.push(record.task);
        // Another owner's twin, which no filter may let through.
        bench.create(skilled(bob, created_at, context, skill)).await;
    }

    for combination in 0..16_u32 {
        let query = ListQuery {
            context_id: (combination & 1 != 0).then(|| "context-a".to_owned()),
            states: (combination & 2 != 0).then(|| vec![TaskState::Submitted, TaskState::Completed]),
            skill: (combination & 4 != 0).then(|| "summarize".to_owned()),
            updated_after: (combination & 8 != 0).then(|| bench.at(106)),
            ..ListQuery::default()
        };
        let expected = in_list_order(
            model
                .iter()
                .filter(|task| query.context_id.is_none() || task.context_id == query.context_id)
                .filter(|task| query.states.as_ref().is_none_or(|states| states.contains(&task.state)))
                .filter(|task| query.skill.as_ref().is_none_or(|skill| task.skill == *skill))
                .filter(|task| query.updated_after.is_none_or(|after| task.updated_at >= after))
                .map(|task| (task.created_at, task.id.clone()))
                .collect(),
        );
        assert!(!expected.is_empty(), "combination {combination} selects some task");
        let whole = bench.list(&alice, ListQuery { limit: 100, ..query.clone() }).await;
        assert_eq!((ids(&whole), whole.total, whole.has_more), (expected.clone(), expected.len(), false), "{query:?}");

        for by_cursor in [true, false] {
            let mut seen = Vec::new();
            let mut start = PageStart::Offset(0);
            loop {
                let page = bench.list(&alice, ListQuery { limit: PAGE, page: start.clone(), ..query.clone() }).await;
                assert_eq!(page.total, expected.len(), "the total on every page: {query:?}");
                let rest = expected.len() - seen.len();
                assert_eq!(page.tasks.len(), rest.min(PAGE), "pages are full until the last: {query:?}");
                assert_eq!(page.has_more, rest > PAGE);
                seen.extend(ids(&page));
                if !page.has_more {
                    assert_eq!(page.next, None);
                    break;
                }
                start = if by_cursor {
                    PageStart::After(page.next.expect("the next page's cursor"))
                } else {
                    PageStart::Offset(seen.len())
                };
            }
            assert_eq!(seen, expected, "the pages are the whole list, each task once: {query:?}");
        }
    }
}

/// Paging with the cursor of each page (as an opaque token, as a client would hand it back)
/// visits every task exactly once, in list order, ties between equal creation times broken by id;
/// tasks created meanwhile do not shift the pages; a cursor places a page exactly, whatever task
/// it names.
pub async fn list_pages_with_a_cursor_visits_every_task_once(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let mut created = Vec::new();
    for n in 0..25 {
        // Three tasks to a creation time.
        let created_at = bench.at(n / 3);
        created.push((created_at, bench.create(new_record(alice, created_at, None, None)).await));
        bench.create(new_record(bob, created_at, None, None)).await;
    }
    let expected = in_list_order(created.clone());
    let pages_of = |page: PageStart| ListQuery { limit: 10, page, ..ListQuery::default() };

    let mut seen = Vec::new();
    let mut start = PageStart::Offset(0);
    let mut sizes = Vec::new();
    loop {
        let page = bench.list(&alice, pages_of(start)).await;
        // The task created after the first page counts in the total, but no page shifts.
        assert_eq!(page.total, if seen.is_empty() { 25 } else { 26 }, "the total on every page");
        sizes.push(page.tasks.len());
        seen.extend(ids(&page));
        if sizes.len() == 1 {
            bench.create(new_record(alice, bench.at(100), None, None)).await;
        }
        let Some(next) = page.next else {
            assert!(!page.has_more);
            break;
        };
        assert!(page.has_more);
        assert_eq!(&next.id, seen.last().expect("a page with a next one is not empty"));
        let token = next.to_token();
        start = PageStart::After(ListCursor::parse(&token).expect("a token reads back"));
    }
    assert_eq!(sizes, vec![10, 10, 5]);
    assert_eq!(seen, expected, "every task once, in list order");

    // A cursor needs no task of its own: it places the page by creation time, then by id.
    let at_time =
        |offset: Millis, id: &str| PageStart::After(ListCursor { created_at: bench.at(offset), id: TaskId::new(id) });
    let page = bench.list(&alice, pages_of(at_time(5, ""))).await;
    let older: Vec<TaskId> =
        expected.iter().filter(|id| created.iter().any(|(at, c)| c == *id && *at < bench.at(5))).cloned().collect();
    assert_eq!(ids(&page), older[..10].to_vec(), "only older tasks follow a cursor below every id");
    let page = bench.list(&alice, pages_of(at_time(5, "~"))).await;
    let from_five: Vec<TaskId> =
        expected.iter().filter(|id| created.iter().any(|(at, c)| c == *id && *at <= bench.at(5))).cloned().collect();
    assert_eq!(ids(&page), from_five[..10].to_vec(), "a cursor above every id keeps its own creation time");
    let page = bench.list(&alice, pages_of(at_time(0, ""))).await;
    assert_eq!((page.tasks.len(), page.total, page.has_more, page.next), (0, 26, false, None));

    // An empty page (a limit of 0) starts and ends at its cursor.
    let cursor = ListCursor::of(&bench.record(&expected[4]).await.task);
    let page = bench
        .list(&alice, ListQuery { limit: 0, page: PageStart::After(cursor.clone()), ..ListQuery::default() })
        .await;
    assert_eq!((page.tasks.len(), page.total, page.has_more, page.next), (0, 26, true, Some(cursor)));
}

// ---------------------------------------------------------------------------------------------
// claim_execution
// ---------------------------------------------------------------------------------------------

/// A claim on a reserved task takes a prepared lease and clears the admission expiry.
pub async fn claim_takes_a_prepared_lease_and_clears_the_admission(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let id = bench.reserve(owner("alice")).await;

    let claimed = bench.store.claim_execution(&id, "a", bench.at(5 * MINUTE), bench.base).await.expect("claim");
    let claimed = claimed.expect("a claim on a reserved task without a lease is granted");
    assert_eq!(claimed.lease, lease("a", bench.at(5 * MINUTE), LeasePhase::Prepared));
    assert_eq!(claimed.admission_expires_at, None);
    assert_eq!(claimed.task.state, TaskState::Submitted, "a claim is preparation, not a state change");

    let stored = bench.record(&id).await;
    assert_eq!((stored.lease, stored.admission_expires_at), (claimed.lease, None));
}

/// A live lease, prepared or active, blocks every claim, including its own worker's.
pub async fn a_live_lease_blocks_a_claim(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let id = bench.claimed(owner("alice"), "a", bench.at(5 * MINUTE)).await;

    let claim = |worker: &'static str, now: Millis| {
        let (store, id) = (Arc::clone(&bench.store), id.clone());
        async move { store.claim_execution(&id, worker, now + 10 * MINUTE, now).await.expect("claim") }
    };
    assert_eq!(claim("b", bench.at(5 * MINUTE - 1)).await, None, "a prepared lease is live until it expires");
    assert_eq!(claim("a", bench.at(MINUTE)).await, None, "a live lease blocks its own worker too");
    assert_eq!(bench.record(&id).await.lease, lease("a", bench.at(5 * MINUTE), LeasePhase::Prepared));

    bench.store.activate_execution(&id, "a", bench.at(5 * MINUTE), bench.at(MINUTE)).await.expect("activate");
    assert_eq!(claim("b", bench.at(2 * MINUTE)).await, None, "an active lease is live until it expires");
    assert_eq!(bench.record(&id).await.lease, lease("a", bench.at(5 * MINUTE), LeasePhase::Active));
}

/// A prepared lease that lapsed may be taken over; its former holder then holds nothing.
pub async fn an_expired_prepared_lease_can_be_taken_over(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let id = bench.claimed(owner("alice"), "a", bench.at(MINUTE)).await;

    let taken = bench.store.claim_execution(&id, "b", bench.at(3 * MINUTE), bench.at(MINUTE)).await.expect("claim");
    let taken = taken.expect("a lease whose expiry has come is no longer live");
    assert_eq!(taken.lease, lease("b", bench.at(3 * MINUTE), LeasePhase::Prepared));

    let now = bench.at(MINUTE + 1);
    assert_eq!(bench.store.renew_execution_claim(&id, "a", bench.at(4 * MINUTE), now).await.expect("renew"), None);
    assert_eq!(bench.store.activate_execution(&id, "a", bench.at(4 * MINUTE), now).await.expect("activate"), None);
    assert_eq!(bench.record(&id).await.lease, lease("b", bench.at(3 * MINUTE), LeasePhase::Prepared));
}

/// An active lease that lapsed (its worker presumed dead) may be taken over for recovery.
pub async fn an_expired_active_lease_can_be_taken_over(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let id = bench.running(owner("alice"), "a", bench.at(MINUTE)).await;

    let early = bench.store.claim_execution(&id, "b", bench.at(3 * MINUTE), bench.at(MINUTE - 1)).await;
    assert_eq!(early.expect("claim"), None, "the active lease is live until its expiry");
    let taken = bench.store.claim_execution(&id, "b", bench.at(3 * MINUTE), bench.at(MINUTE)).await.expect("claim");
    let taken = taken.expect("a lapsed active lease may be recovered");
    assert_eq!(taken.lease, lease("b", bench.at(3 * MINUTE), LeasePhase::Prepared));
    assert_eq!(taken.task.state, TaskState::Working, "a recovered task keeps its state");
}

/// A reservation whose admission expired is never prepared.
pub async fn a_claim_is_refused_after_the_admission_expired(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let late = bench.create(new_record(alice, bench.base, None, Some(bench.at(MINUTE)))).await;
    let in_time = bench.create(new_record(alice, bench.base, None, Some(bench.at(MINUTE)))).await;

    let refused = bench.store.claim_execution(&late, "a", bench.at(3 * MINUTE), bench.at(MINUTE)).await;
    assert_eq!(refused.expect("claim"), None, "the admission expires at its expiry instant");
    let record = bench.record(&late).await;
    assert_eq!((record.lease, record.admission_expires_at), (None, Some(bench.at(MINUTE))));

    let granted = bench.store.claim_execution(&in_time, "a", bench.at(3 * MINUTE), bench.at(MINUTE - 1)).await;
    assert!(granted.expect("claim").is_some(), "a claim just before the admission expiry is granted");
}

/// Only `submitted` and `working` tasks may be claimed: never a waiting or terminal one.
pub async fn a_claim_is_refused_unless_submitted_or_working(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let refused = [
        status(TaskState::InputRequired),
        status(TaskState::AuthRequired),
        result(json!("done")),
        failure(TaskState::Failed, "boom"),
        status(TaskState::Canceled),
        failure(TaskState::Rejected, "refused"),
    ];
    for change in refused {
        let id = bench.reserve(alice).await;
        let state = bench.set(&id, change, bench.at(1)).await.task.state;
        let claim = bench.store.claim_execution(&id, "a", bench.at(5 * MINUTE), bench.at(2)).await.expect("claim");
        assert_eq!(claim, None, "a {state:?} task cannot be claimed");
        assert_eq!(bench.record(&id).await.lease, None);
    }

    let working = bench.reserve(alice).await;
    bench.set(&working, status(TaskState::Working), bench.at(1)).await;
    let claim = bench.store.claim_execution(&working, "a", bench.at(5 * MINUTE), bench.at(2)).await.expect("claim");
    assert!(claim.is_some(), "a working task without a live lease can be claimed");
}

/// Of several concurrent claims on one task, exactly one wins, and the stored lease is the
/// winner's.
pub async fn concurrent_claims_have_exactly_one_winner(factory: impl StoreFactory) {
    const ROUNDS: usize = 16;
    const CONTENDERS: usize = 4;
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    for _ in 0..ROUNDS {
        let id = bench.reserve(alice).await;
        let start = Arc::new(Barrier::new(CONTENDERS));
        let claims: Vec<_> = (0..CONTENDERS)
            .map(|n| {
                let (store, id, start) = (Arc::clone(&bench.store), id.clone(), Arc::clone(&start));
                let (until, now) = (bench.at(5 * MINUTE), bench.base);
                tokio::spawn(async move {
                    let worker = format!("worker-{n}");
                    start.wait().await;
                    let claim = store.claim_execution(&id, &worker, until, now).await.expect("claim");
                    claim.map(|record| (worker, record))
                })
            })
            .collect();
        let mut winners = Vec::new();
        for claim in claims {
            winners.extend(claim.await.expect("the claim task completes"));
        }

        assert_eq!(winners.len(), 1, "exactly one of {CONTENDERS} concurrent claims wins");
        let (winner, granted) = &winners[0];
        assert_eq!(granted.lease, lease(winner, bench.at(5 * MINUTE), LeasePhase::Prepared));
        assert_eq!(bench.record(&id).await.lease, granted.lease, "the stored lease is the winner's");
    }
}

// ---------------------------------------------------------------------------------------------
// renew_execution_claim and activate_execution
// ---------------------------------------------------------------------------------------------

/// Renewal extends only the holder's live lease, keeps its phase, and is refused once the lease
/// lapsed or the task ended.
pub async fn renewal_extends_only_the_owners_live_lease(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.claimed(alice, "a", bench.at(2 * MINUTE)).await;
    let renew = |worker: &'static str, until: Millis, now: Millis| {
        let (store, id) = (Arc::clone(&bench.store), id.clone());
        async move { store.renew_execution_claim(&id, worker, until, now).await.expect("renew") }
    };

    assert_eq!(renew("b", bench.at(3 * MINUTE), bench.at(MINUTE)).await, None, "another worker cannot renew");
    assert_eq!(bench.record(&id).await.lease, lease("a", bench.at(2 * MINUTE), LeasePhase::Prepared));

    let renewed = renew("a", bench.at(4 * MINUTE), bench.at(MINUTE)).await.expect("the holder renews");
    assert_eq!(renewed.lease, lease("a", bench.at(4 * MINUTE), LeasePhase::Prepared));
    assert_eq!(bench.record(&id).await.lease, renewed.lease);

    bench.store.activate_execution(&id, "a", bench.at(5 * MINUTE), bench.at(MINUTE)).await.expect("activate");
    let renewed = renew("a", bench.at(6 * MINUTE), bench.at(2 * MINUTE)).await.expect("an active lease renews");
    assert_eq!(renewed.lease, lease("a", bench.at(6 * MINUTE), LeasePhase::Active), "renewal keeps the phase");

    assert_eq!(renew("a", bench.at(9 * MINUTE), bench.at(6 * MINUTE)).await, None, "a lapsed lease cannot renew");
    assert_eq!(bench.record(&id).await.lease, lease("a", bench.at(6 * MINUTE), LeasePhase::Active));

    let ended = bench.claimed(alice, "a", bench.at(2 * MINUTE)).await;
    bench.set(&ended, status(TaskState::Canceled), bench.at(1)).await;
    let refused = bench.store.renew_execution_claim(&ended, "a", bench.at(3 * MINUTE), bench.at(2)).await;
    assert_eq!(refused.expect("renew"), None, "a terminal task's lease cannot be renewed");
}

/// Renewing to `now` gives the lease up: another worker can claim at once and the former holder
/// can no longer renew or activate.
pub async fn renewing_to_now_gives_the_lease_up(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let now = bench.at(MINUTE);

    let prepared = bench.claimed(alice, "a", bench.at(5 * MINUTE)).await;
    bench.store.renew_execution_claim(&prepared, "a", now, now).await.expect("renew");
    assert_eq!(
        bench.store.renew_execution_claim(&prepared, "a", bench.at(5 * MINUTE), now).await.expect("renew"),
        None
    );
    assert_eq!(
        bench.store.activate_execution(&prepared, "a", bench.at(5 * MINUTE), now).await.expect("activate"),
        None
    );
    let taken = bench.store.claim_execution(&prepared, "b", bench.at(5 * MINUTE), now).await.expect("claim");
    assert_eq!(
        taken.expect("a given-up lease does not block").lease,
        lease("b", bench.at(5 * MINUTE), LeasePhase::Prepared)
    );

    let active = bench.running(alice, "a", bench.at(5 * MINUTE)).await;
    bench.store.renew_execution_claim(&active, "a", now, now).await.expect("renew");
    let taken = bench.store.claim_execution(&active, "b", bench.at(5 * MINUTE), now).await.expect("claim");
    assert!(taken.is_some(), "a given-up active lease does not block either");
}

/// Activation turns only the holder's live prepared lease active; it is refused for another
/// worker, a lapsed or already active lease, and a terminal task.
pub async fn activation_turns_only_the_owners_live_prepared_lease_active(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.claimed(alice, "a", bench.at(2 * MINUTE)).await;
    let activate = |id: &TaskId, worker: &'static str, until: Millis, now: Millis| {
        let (store, id) = (Arc::clone(&bench.store), id.clone());
        async move { store.activate_execution(&id, worker, until, now).await.expect("activate") }
    };

    assert_eq!(activate(&id, "b", bench.at(5 * MINUTE), bench.at(MINUTE)).await, None);
    assert_eq!(bench.record(&id).await.lease, lease("a", bench.at(2 * MINUTE), LeasePhase::Prepared));

    let active = activate(&id, "a", bench.at(5 * MINUTE), bench.at(MINUTE)).await.expect("the holder activates");
    assert_eq!(active.lease, lease("a", bench.at(5 * MINUTE), LeasePhase::Active));
    assert_eq!(bench.record(&id).await.lease, active.lease);
    assert_eq!(
        activate(&id, "a", bench.at(9 * MINUTE), bench.at(MINUTE)).await,
        None,
        "an active lease is not prepared"
    );
    assert_eq!(bench.record(&id).await.lease, lease("a", bench.at(5 * MINUTE), LeasePhase::Active));

    let lapsed = bench.claimed(alice, "a", bench.at(MINUTE)).await;
    assert_eq!(activate(&lapsed, "a", bench.at(5 * MINUTE), bench.at(MINUTE)).await, None, "a lapsed lease is refused");
    assert_eq!(bench.record(&lapsed).await.lease, lease("a", bench.at(MINUTE), LeasePhase::Prepared));

    let ended = bench.claimed(alice, "a", bench.at(2 * MINUTE)).await;
    bench.set(&ended, status(TaskState::Canceled), bench.at(1)).await;
    assert_eq!(activate(&ended, "a", bench.at(5 * MINUTE), bench.at(2)).await, None, "a terminal task is refused");
}

// ---------------------------------------------------------------------------------------------
// compare_and_set
// ---------------------------------------------------------------------------------------------

/// A write applies only when the task's state is one of the expected states.
pub async fn compare_and_set_checks_the_expected_state(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.reserve(alice).await;
    let before = bench.record(&id).await;

    let refused = bench
        .store
        .compare_and_set(&id, &[TaskState::Working], status(TaskState::InputRequired), None, bench.at(1))
        .await
        .expect("compare and set");
    assert_eq!(refused, None, "a submitted task is not in [working]");
    assert_eq!(bench.record(&id).await, before, "a refused write changes nothing");
    assert_eq!(bench.log(&id, &alice).await.len(), 1, "a refused write appends nothing");

    let accepted = bench
        .store
        .compare_and_set(&id, RUNNING_STATES, status(TaskState::Working), None, bench.at(2))
        .await
        .expect("compare and set");
    assert_eq!(accepted.expect("submitted is expected").task.state, TaskState::Working);
    let stale = bench
        .store
        .compare_and_set(&id, &[TaskState::Submitted], status(TaskState::Canceled), None, bench.at(3))
        .await
        .expect("compare and set");
    assert_eq!(stale, None, "the state moved on");
    assert_eq!(bench.record(&id).await.task.state, TaskState::Working);
    assert_eq!(
        bench.store.compare_and_set(&TaskId::generate(), ACTIVE_STATES, message("x"), None, bench.at(4)).await,
        Ok(None)
    );
}

/// An accepted write appends its event to the log and applies it to the record with
/// [`apply_event`] in the same step: the record always says what its log says.
pub async fn compare_and_set_appends_and_applies_the_event(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.reserve(alice).await;
    let mut expected = bench.record(&id).await.task;
    let changes = [
        status(TaskState::Working),
        message("hello"),
        artifact("report", "part one", false),
        artifact("report", " and part two", true),
        result(json!({"answer": 42})),
    ];
    for (offset, change) in (1..).zip(changes) {
        let now = bench.at(offset * 1000);
        apply_event(&mut expected, &change, now);
        let written = bench.set(&id, change.clone(), now).await;
        assert_eq!(written.task, expected, "the returned record is the previous one with the event applied");
        assert_eq!(bench.record(&id).await.task, expected, "the stored record is the returned one");
        let log = bench.log(&id, &alice).await;
        let last = log.last().expect("the log is not empty");
        assert_eq!((log.len() as u64, last.sequence, &last.kind), (offset + 1, offset + 1, &change));
    }

    assert_eq!(expected.state, TaskState::Completed);
    assert_eq!(expected.updated_at, bench.at(5000));
    assert_eq!(expected.version, 5, "every accepted write bumps the version");
    assert_eq!(expected.history, vec![agent_message("hello")]);
    let parts = &expected.artifacts.first().expect("one artifact").parts;
    assert_eq!(parts, &vec![Part::Text("part one".into()), Part::Text(" and part two".into())]);
}

/// A finished task reads back whole — status message, result, artifacts (chunks merged) and
/// history — through `get` and `list`, also after a later note about delivery; its payload keeps
/// the skill and whether it was paid, not the input (a finished task never runs again). A task
/// created with a history of its own, which its log does not rebuild, reads back whole too.
pub async fn a_finished_task_reads_back_whole_without_its_input(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.reserve(alice).await;
    let payload = bench.record(&id).await.payload;
    let large = "a large part ".repeat(8 * 1024);
    let said = TaskEventKind::Status { state: TaskState::Working, message: Some(agent_message("almost there")) };
    let changes = [
        status(TaskState::Working),
        message(&large),
        artifact("report", &large, false),
        artifact("report", " and the end", true),
        said,
        result(json!({"text": large})),
    ];
    let mut finished = None;
    for (offset, change) in (1..).zip(changes) {
        finished = Some(bench.set(&id, change, bench.at(offset * 1000)).await);
    }
    let finished = finished.expect("written").task;
    assert_eq!(finished.history, vec![agent_message(&large)]);
    assert_eq!(finished.artifacts.first().map(|artifact| artifact.parts.len()), Some(2));

    let stored = bench.record(&id).await;
    assert_eq!(stored.task, finished, "a finished task reads back whole");
    assert_eq!(stored.payload, payload.finished(), "its payload keeps the skill, not the input");
    assert_eq!(stored.payload.input, Value::Null);
    let page = bench.list(&alice, ListQuery::default()).await;
    assert_eq!(page.tasks, vec![finished.clone()], "and lists whole");

    let note =
        TaskEventKind::PushDeadLetter { config_id: "hook".into(), sequence: 3, attempts: 8, reason: "gone".into() };
    let noted = bench
        .store
        .compare_and_set(&id, &[TaskState::Completed], note, None, bench.at(9000))
        .await
        .expect("compare and set")
        .expect("a note is appended to a finished task");
    assert_eq!(noted.task.version, finished.version + 1);
    let mut expected = finished.clone();
    expected.version += 1;
    assert_eq!(bench.record(&id).await.task, expected, "a note leaves the task whole");
    assert_eq!(bench.log(&id, &alice).await.len(), 8);

    let mut record = new_record(alice, bench.base, None, None);
    record.task.history = vec![agent_message("said before the task was stored")];
    let own = bench.create(record).await;
    bench.set(&own, result(json!({"done": true})), bench.at(1000)).await;
    let stored = bench.record(&own).await;
    assert_eq!(stored.task.history, vec![agent_message("said before the task was stored")]);
    assert_eq!(stored.task.result.map(|result| result.output), Some(json!({"done": true})));
}

/// An expired lease is recovered and the stale owner is fenced: a write that names an execution
/// owner applies only while the lease is that owner's.
pub async fn compare_and_set_fences_a_stale_execution_owner(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.running(alice, "a", bench.at(MINUTE)).await;

    let fenced = bench.store.compare_and_set(&id, RUNNING_STATES, message("hi"), Some("b"), bench.at(1)).await;
    assert_eq!(fenced.expect("compare and set"), None, "b does not hold the lease");

    let recovery_at = bench.at(MINUTE);
    bench.store.claim_execution(&id, "b", bench.at(3 * MINUTE), recovery_at).await.expect("claim").expect("recovered");
    bench
        .store
        .activate_execution(&id, "b", bench.at(3 * MINUTE), recovery_at)
        .await
        .expect("activate")
        .expect("active");

    let stale = bench
        .store
        .compare_and_set(&id, RUNNING_STATES, result(json!({"worker": "a"})), Some("a"), recovery_at + 1)
        .await;
    assert_eq!(stale.expect("compare and set"), None, "the stale worker's result is refused");
    let stale = bench.store.compare_and_set(&id, RUNNING_STATES, message("late"), Some("a"), recovery_at + 2).await;
    assert_eq!(stale.expect("compare and set"), None, "so is any other write of the stale worker");

    let done = bench
        .store
        .compare_and_set(&id, RUNNING_STATES, result(json!({"worker": "b"})), Some("b"), recovery_at + 3)
        .await
        .expect("compare and set")
        .expect("the recovering worker's result is accepted");
    assert_eq!(done.task.result.map(|result| result.output), Some(json!({"worker": "b"})));
    let log = bench.log(&id, &alice).await;
    assert_eq!(log.iter().filter(|event| matches!(event.kind, TaskEventKind::Result { .. })).count(), 1);
    assert!(!log.iter().any(|event| event.kind == message("late")));

    let unleased = bench.reserve(alice).await;
    let fenced = bench
        .store
        .compare_and_set(&unleased, RUNNING_STATES, status(TaskState::Working), Some("a"), bench.at(1))
        .await;
    assert_eq!(fenced.expect("compare and set"), None, "a task without a lease has no execution owner");
}

/// A terminal write clears the lease and the admission expiry; progress keeps them.
pub async fn a_terminal_write_clears_the_lease_and_the_admission(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");

    let reserved = bench.reserve(alice).await;
    let written = bench.set(&reserved, status(TaskState::Canceled), bench.at(1)).await;
    assert_eq!((written.lease, written.admission_expires_at), (None, None));
    let stored = bench.record(&reserved).await;
    assert_eq!((stored.lease, stored.admission_expires_at), (None, None));

    let running = bench.running(alice, "a", bench.at(5 * MINUTE)).await;
    let progress =
        bench.store.compare_and_set(&running, RUNNING_STATES, message("halfway"), Some("a"), bench.at(1)).await;
    let progress = progress.expect("compare and set").expect("the holder's write is accepted");
    assert_eq!(progress.lease, lease("a", bench.at(5 * MINUTE), LeasePhase::Active), "progress keeps the lease");
    let done = bench
        .store
        .compare_and_set(&running, RUNNING_STATES, result(json!("done")), Some("a"), bench.at(2))
        .await
        .expect("compare and set")
        .expect("the holder's result is accepted");
    assert_eq!(done.lease, None);
    assert_eq!(bench.record(&running).await.lease, None);

    let prepared = bench.claimed(alice, "a", bench.at(5 * MINUTE)).await;
    let failed = bench
        .store
        .compare_and_set(&prepared, ACTIVE_STATES, failure(TaskState::Failed, "boom"), Some("a"), bench.at(1))
        .await
        .expect("compare and set")
        .expect("the holder's failure is accepted");
    assert_eq!((failed.lease, failed.admission_expires_at), (None, None));
    assert_eq!(bench.record(&prepared).await.lease, None);
}

/// A write that makes the task wait for its caller (input or authorization) clears the lease and
/// the admission expiry in the same step, as a terminal write does: once the follow-up turns the
/// task `working` again (as `TaskRuntime::resume` does), another worker's claim is granted at
/// once, long before the old lease would have lapsed, and the former holder is fenced out.
pub async fn a_waiting_write_clears_the_lease_so_a_follow_up_claims_at_once(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    for waiting in [TaskState::InputRequired, TaskState::AuthRequired] {
        let id = bench.running(alice, "a", bench.at(5 * MINUTE)).await;
        let written = bench
            .store
            .compare_and_set(&id, RUNNING_STATES, status(waiting), Some("a"), bench.at(1))
            .await
            .expect("compare and set")
            .expect("the holder's write is accepted");
        assert_eq!((written.task.state, written.lease, written.admission_expires_at), (waiting, None, None));
        let stored = bench.record(&id).await;
        assert_eq!((stored.lease, stored.admission_expires_at), (None, None), "{waiting:?} holds no lease");

        let now = bench.at(2);
        let renewed = bench.store.renew_execution_claim(&id, "a", bench.at(6 * MINUTE), now).await;
        assert_eq!(renewed.expect("renew"), None, "the former holder has no lease to renew");
        let late = bench.store.compare_and_set(&id, &[waiting], message("late"), Some("a"), now).await;
        assert_eq!(late.expect("compare and set"), None, "nor an execution to write for");

        // The follow-up, as the runtime's resume makes it: back to working, then a claim.
        bench
            .store
            .compare_and_set(&id, &[waiting], status(TaskState::Working), None, bench.at(3))
            .await
            .expect("compare and set")
            .expect("the follow-up resumes the task");
        let claimed = bench.store.claim_execution(&id, "b", bench.at(5 * MINUTE), bench.at(3)).await.expect("claim");
        let claimed = claimed.expect("the follow-up's claim is granted at once");
        assert_eq!(claimed.lease, lease("b", bench.at(5 * MINUTE), LeasePhase::Prepared));
        bench.store.activate_execution(&id, "b", bench.at(5 * MINUTE), bench.at(3)).await.expect("activate");
        let done = bench
            .store
            .compare_and_set(&id, RUNNING_STATES, result(json!("done")), Some("b"), bench.at(4))
            .await
            .expect("compare and set");
        assert_eq!(done.expect("the new holder's result is accepted").task.state, TaskState::Completed);
    }

    // A task that waits straight from its reservation keeps its admission expiry: it never ran
    // (a paid task waiting for its payment), and it is reaped when nobody comes in time.
    let reserved = bench.reserve(alice).await;
    let admission = bench.record(&reserved).await.admission_expires_at;
    assert!(admission.is_some());
    let waiting = bench.set(&reserved, status(TaskState::InputRequired), bench.at(1)).await;
    assert_eq!((waiting.lease, waiting.admission_expires_at), (None, admission));
    assert_eq!(bench.record(&reserved).await.admission_expires_at, admission);
    let reaped = bench.store.reap_expired_admissions(admission.expect("admission") + 1).await.expect("reap");
    assert_eq!(reaped, 1, "an unpaid wait is reaped at its admission expiry");
    assert_eq!(bench.record(&reserved).await.task.state, TaskState::Canceled);
}

/// A cancellation racing a fenced completion: exactly one terminal state wins, the log holds
/// exactly one terminal event, and every later write is refused.
pub async fn cancel_racing_completion_has_exactly_one_winner(factory: impl StoreFactory) {
    const ROUNDS: usize = 16;
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    for round in 0..ROUNDS {
        let id = bench.running(alice, "a", bench.at(5 * MINUTE)).await;
        let now = bench.at(1);
        let start = Arc::new(Barrier::new(2));
        let cancel = {
            let (store, id, start) = (Arc::clone(&bench.store), id.clone(), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                store.compare_and_set(&id, ACTIVE_STATES, status(TaskState::Canceled), None, now).await
            })
        };
        let complete = {
            let (store, id, start) = (Arc::clone(&bench.store), id.clone(), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                store.compare_and_set(&id, RUNNING_STATES, result(json!({"round": round})), Some("a"), now).await
            })
        };
        let cancelled = cancel.await.expect("the cancel task completes").expect("compare and set");
        let completed = complete.await.expect("the completion task completes").expect("compare and set");

        let winner = match (&cancelled, &completed) {
            (Some(_), None) => TaskState::Canceled,
            (None, Some(_)) => TaskState::Completed,
            _ => panic!("round {round}: exactly one of the racing writes must win"),
        };
        assert_eq!(bench.record(&id).await.task.state, winner);
        let log = bench.log(&id, &alice).await;
        assert_eq!(log.iter().filter(|event| is_terminal_event(event)).count(), 1);
        assert!(log.last().is_some_and(is_terminal_event), "nothing follows the terminal event");

        let late =
            bench.store.compare_and_set(&id, ACTIVE_STATES, status(TaskState::Canceled), None, bench.at(2)).await;
        assert_eq!(late.expect("compare and set"), None, "a terminal task is not cancelled again");
        let late =
            bench.store.compare_and_set(&id, RUNNING_STATES, result(json!("late")), Some("a"), bench.at(2)).await;
        assert_eq!(late.expect("compare and set"), None, "a terminal task takes no later result");
        assert_eq!(bench.log(&id, &alice).await.len(), log.len());
    }
}

// ---------------------------------------------------------------------------------------------
// reap_expired_admissions and expired_active_leases
// ---------------------------------------------------------------------------------------------

/// Reaping cancels reservations abandoned without a claim and tasks whose prepared lease lapsed,
/// with a status event each, clears both fields, and counts them.
pub async fn reaping_cancels_abandoned_admissions_and_lapsed_prepared_leases(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let abandoned = bench.create(new_record(alice, bench.base, None, Some(bench.at(MINUTE)))).await;
    let lapsed = bench.claimed(alice, "a", bench.at(MINUTE)).await;

    assert_eq!(bench.store.reap_expired_admissions(bench.at(MINUTE)).await.expect("reap"), 2);
    for id in [&abandoned, &lapsed] {
        let record = bench.record(id).await;
        assert_eq!(record.task.state, TaskState::Canceled);
        assert_eq!((record.lease, record.admission_expires_at), (None, None));
        let log = bench.log(id, &alice).await;
        assert_eq!(log.len(), 2);
        assert_eq!((log[1].sequence, &log[1].kind), (2, &status(TaskState::Canceled)));
    }

    assert_eq!(bench.store.reap_expired_admissions(bench.at(MINUTE)).await.expect("reap"), 0, "reaping is done once");
    assert_eq!(bench.store.reap_expired_admissions(bench.at(2 * MINUTE)).await.expect("reap"), 0);
    let claim = bench.store.claim_execution(&abandoned, "b", bench.at(3 * MINUTE), bench.at(MINUTE)).await;
    assert_eq!(claim.expect("claim"), None, "a reaped task is never run");
}

/// Reaping leaves alone: a reservation still in time, a task without admission expiry, a live
/// prepared lease, an active lease (even a lapsed one: it is recovered, not reaped) and a
/// terminal task.
pub async fn reaping_leaves_live_work_alone(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let reap_at = bench.at(MINUTE);
    let in_time = bench.create(new_record(alice, bench.base, None, Some(bench.at(2 * MINUTE)))).await;
    let unbounded = bench.create(new_record(alice, bench.base, None, None)).await;
    let prepared = bench.claimed(alice, "a", bench.at(2 * MINUTE)).await;
    let active = bench.running(alice, "b", bench.at(MINUTE)).await;
    let finished = bench.create(new_record(alice, bench.base, None, Some(bench.at(MINUTE)))).await;
    bench.set(&finished, result(json!("done")), bench.at(1)).await;

    let tasks = [in_time, unbounded, prepared, active, finished];
    let mut before = Vec::new();
    for id in &tasks {
        before.push(bench.record(id).await);
    }
    assert_eq!(bench.store.reap_expired_admissions(reap_at).await.expect("reap"), 0);
    for (id, before) in tasks.iter().zip(before) {
        assert_eq!(bench.record(id).await, before, "reaping changed a task it must leave alone");
    }
}

/// `expired_active_leases` lists the non-terminal tasks whose active lease lapsed, oldest first,
/// at most `limit`; never a prepared or live lease.
pub async fn expired_active_leases_lists_only_lapsed_active_leases(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    // The first task is older than the second by creation, by last change and by lease expiry,
    // so every reading of "oldest first" orders them the same way.
    let older = new_record(alice, bench.base, None, None);
    let first = bench.run(older, "a", bench.at(MINUTE), bench.base).await;
    let newer = new_record(alice, bench.at(1), None, None);
    let second = bench.run(newer, "b", bench.at(2 * MINUTE), bench.at(1)).await;
    let _prepared = bench.claimed(alice, "c", bench.at(MINUTE / 2)).await;
    let _reserved = bench.reserve(alice).await;
    let _live = bench.running(alice, "e", bench.at(5 * MINUTE)).await;
    let finished = bench.running(alice, "d", bench.at(MINUTE)).await;
    bench
        .store
        .compare_and_set(&finished, RUNNING_STATES, result(json!("done")), Some("d"), bench.at(1))
        .await
        .expect("compare and set")
        .expect("completed");
    // A task waiting for input holds no lease (its worker's waiting write cleared it): not a candidate.
    let waiting = bench.running(alice, "w", bench.at(MINUTE / 4)).await;
    bench
        .store
        .compare_and_set(&waiting, RUNNING_STATES, status(TaskState::InputRequired), Some("w"), bench.at(1))
        .await
        .expect("compare and set")
        .expect("input required");

    let expired = |now: Millis, limit: usize| {
        let store = Arc::clone(&bench.store);
        async move { store.expired_active_leases(now, limit).await.expect("expired active leases") }
    };
    assert_eq!(expired(bench.at(2 * MINUTE), 10).await, vec![first.clone(), second.clone()]);
    assert_eq!(expired(bench.at(2 * MINUTE), 1).await, vec![first.clone()], "the limit keeps the first lapsed");
    assert_eq!(expired(bench.at(MINUTE), 10).await, vec![first], "a lease lapses at its expiry instant");
    assert_eq!(expired(bench.at(MINUTE - 1), 10).await, Vec::<TaskId>::new());
}

/// `take_over_execution` gives a task whose *active* lease lapsed an active lease at once (no
/// prepared phase, so the recovering worker's own death leaves the task to the next recovery,
/// never to the reaper), and refuses every other task: a live lease, a lapsed prepared lease, a
/// reservation without a lease, a waiting or a finished task.
pub async fn take_over_turns_only_a_lapsed_active_lease_into_an_active_one(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let running = bench.running(alice, "a", bench.at(MINUTE)).await;
    let prepared = bench.claimed(alice, "a", bench.at(MINUTE)).await;
    let reserved = bench.reserve(alice).await;
    let waiting = bench.running(alice, "a", bench.at(MINUTE)).await;
    bench
        .store
        .compare_and_set(&waiting, RUNNING_STATES, status(TaskState::InputRequired), Some("a"), bench.at(1))
        .await
        .expect("compare and set")
        .expect("input required");
    let finished = bench.running(alice, "a", bench.at(MINUTE)).await;
    bench
        .store
        .compare_and_set(&finished, RUNNING_STATES, result(json!("done")), Some("a"), bench.at(1))
        .await
        .expect("compare and set")
        .expect("completed");
    let take_over = |id: &TaskId, worker: &'static str, until: Millis, now: Millis| {
        let (store, id) = (Arc::clone(&bench.store), id.clone());
        async move { store.take_over_execution(&id, worker, until, now).await.expect("take over") }
    };

    let early = take_over(&running, "b", bench.at(3 * MINUTE), bench.at(MINUTE - 1)).await;
    assert_eq!(early, None, "the active lease is live until its expiry");
    for (id, what) in [
        (&prepared, "a lapsed prepared lease"),
        (&reserved, "a reservation"),
        (&waiting, "a waiting task"),
        (&finished, "a finished task"),
    ] {
        let before = bench.record(id).await;
        assert_eq!(
            take_over(id, "b", bench.at(3 * MINUTE), bench.at(2 * MINUTE)).await,
            None,
            "{what} is not taken over"
        );
        assert_eq!(bench.record(id).await, before, "a refused take-over changes nothing on {what}");
    }

    let taken = take_over(&running, "b", bench.at(3 * MINUTE), bench.at(MINUTE)).await;
    let taken = taken.expect("a lapsed active lease is taken over at its expiry instant");
    assert_eq!(taken.lease, lease("b", bench.at(3 * MINUTE), LeasePhase::Active), "straight to an active lease");
    assert_eq!(taken.task.state, TaskState::Working, "a recovered task keeps its state");
    assert_eq!(bench.record(&running).await, taken, "the stored record is the answer");
    let fenced =
        bench.store.compare_and_set(&running, RUNNING_STATES, result(json!("late")), Some("a"), bench.at(MINUTE)).await;
    assert_eq!(fenced.expect("compare and set"), None, "the old worker is fenced out");

    // The recovering worker dies too: its lapsed lease is for the next recovery, not the reaper.
    let later = bench.at(4 * MINUTE);
    bench.store.reap_expired_admissions(later).await.expect("reap");
    assert_eq!(bench.record(&running).await.task.state, TaskState::Working, "the reaper leaves it alone");
    assert!(bench.store.expired_active_leases(later, 10).await.expect("expired").contains(&running));
    let again = take_over(&running, "c", bench.at(5 * MINUTE), later).await.expect("a second recovery");
    assert_eq!(again.lease, lease("c", bench.at(5 * MINUTE), LeasePhase::Active));
}

/// Of several workers that take the same lapsed task over at once, exactly one wins.
pub async fn concurrent_take_overs_have_exactly_one_winner(factory: impl StoreFactory) {
    const ROUNDS: usize = 8;
    const CONTENDERS: usize = 4;
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    for _ in 0..ROUNDS {
        let id = bench.running(alice, "dead", bench.at(MINUTE)).await;
        let start = Arc::new(Barrier::new(CONTENDERS));
        let take_overs: Vec<_> = (0..CONTENDERS)
            .map(|n| {
                let (store, id, start) = (Arc::clone(&bench.store), id.clone(), Arc::clone(&start));
                let (until, now) = (bench.at(5 * MINUTE), bench.at(2 * MINUTE));
                tokio::spawn(async move {
                    let worker = format!("worker-{n}");
                    start.wait().await;
                    let taken = store.take_over_execution(&id, &worker, until, now).await.expect("take over");
                    taken.map(|record| (worker, record))
                })
            })
            .collect();
        let mut winners = Vec::new();
        for take_over in take_overs {
            winners.extend(take_over.await.expect("the take-over task completes"));
        }
        assert_eq!(winners.len(), 1, "exactly one of {CONTENDERS} concurrent take-overs wins");
        let (winner, granted) = &winners[0];
        assert_eq!(granted.lease, lease(winner, bench.at(5 * MINUTE), LeasePhase::Active));
        assert_eq!(bench.record(&id).await.lease, granted.lease, "the stored lease is the winner's");
    }
}

// ---------------------------------------------------------------------------------------------
// subscribe and close
// ---------------------------------------------------------------------------------------------

/// A subscriber is woken after a write to its task, and the log then holds the new event.
pub async fn subscribe_wakes_after_a_change(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.reserve(alice).await;
    let mut wakeups = bench.store.subscribe(&id, &alice).await.expect("subscribe").expect("the owner subscribes");

    for (sequence, change) in [(2, status(TaskState::Working)), (3, result(json!("done")))] {
        bench.set(&id, change.clone(), bench.at(sequence)).await;
        woken(&mut wakeups).await;
        let new = bench.store.events_since(&id, &alice, sequence - 1).await.expect("events since").expect("owned");
        assert_eq!(
            new.iter().map(|event| (event.sequence, &event.kind)).collect::<Vec<_>>(),
            vec![(sequence, &change)]
        );
    }
}

/// Waits for a wake-up. [`TaskWakeups::changed`] also returns `true` at its own timeout, so it is
/// given a long one and bounded from outside: only a real wake-up returns in time.
async fn woken(wakeups: &mut TaskWakeups) {
    let woke = tokio::time::timeout(PATIENCE, wakeups.changed(Duration::from_secs(3600))).await;
    assert_eq!(woke, Ok(true), "a subscriber is woken after a write to its task");
}

/// Closing the store releases its subscribers: a waiting subscriber is told at once.
pub async fn close_releases_subscribers(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.reserve(alice).await;
    let mut wakeups = bench.store.subscribe(&id, &alice).await.expect("subscribe").expect("the owner subscribes");
    bench.store.close().await;
    let released = tokio::time::timeout(PATIENCE, wakeups.changed(Duration::from_secs(3600))).await;
    assert_eq!(released, Ok(false), "a closed store releases its subscribers");
}

/// After `close`, every call fails with [`StoreError::Closed`]; closing twice is harmless.
pub async fn close_makes_later_calls_fail(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.reserve(alice).await;
    bench.store.close().await;

    let (until, now) = (bench.at(5 * MINUTE), bench.base);
    let store = &bench.store;
    let record = new_record(alice, bench.base, None, None);
    assert_eq!(store.create(record, submitted()).await.expect_err("create after close"), StoreError::Closed);
    assert_eq!(store.get(&id).await, Err(StoreError::Closed));
    assert_eq!(store.list(&alice, &ListQuery::default()).await, Err(StoreError::Closed));
    assert_eq!(store.claim_execution(&id, "a", until, now).await, Err(StoreError::Closed));
    assert_eq!(store.renew_execution_claim(&id, "a", until, now).await, Err(StoreError::Closed));
    assert_eq!(store.activate_execution(&id, "a", until, now).await, Err(StoreError::Closed));
    assert_eq!(store.compare_and_set(&id, ACTIVE_STATES, message("x"), None, now).await, Err(StoreError::Closed));
    assert_eq!(store.reap_expired_admissions(now).await, Err(StoreError::Closed));
    assert_eq!(store.expired_active_leases(now, 10).await, Err(StoreError::Closed));
    assert_eq!(store.events_since(&id, &alice, 0).await, Err(StoreError::Closed));
    assert_eq!(store.subscribe(&id, &alice).await.expect_err("subscribe after close"), StoreError::Closed);
    store.close().await;
}

// ---------------------------------------------------------------------------------------------
// Runtimes over one store
// ---------------------------------------------------------------------------------------------

fn agent(skill: SkillBuilder) -> Agent {
    Agent::builder("conformance-agent").skill(skill).build().expect("a valid test agent")
}

/// A worker's settings. Its background recovery is off: the scenarios decide who recovers what,
/// and when.
fn runtime_config(worker: &str) -> RuntimeConfig {
    RuntimeConfig::default().worker_id(worker).lease_ttl(STEADY_LEASE).recovery_interval(None)
}

fn runtime_on(store: Arc<dyn TaskStore>, agent: Agent, worker: &str) -> TaskRuntime {
    TaskRuntime::new(agent, store, runtime_config(worker))
}

fn reservation(runtime: &TaskRuntime, skill: &str, owner: OwnerHash) -> Reservation {
    let skill = runtime.agent().skill(skill).expect("the test skill exists");
    Reservation::new(owner, skill.validate_input(json!({})).expect("the test input is valid"))
}

/// A skill that completes at once with `{"worker": worker}`.
fn finishing(worker: &'static str) -> SkillBuilder {
    Skill::builder(SKILL)
        .invoke(move |_run: Run| async move { Ok(Outcome::Completed(Completion::new(json!({"worker": worker})))) })
}

/// A skill that waits for `release`, ignoring cancellation, then completes with
/// `{"worker": worker}`: the handler of a worker that does not notice it lost its task.
fn oblivious(worker: &'static str, probe: Arc<Probe>, release: Arc<Notify>) -> SkillBuilder {
    Skill::builder(SKILL).invoke(move |_run: Run| {
        let (probe, release) = (Arc::clone(&probe), Arc::clone(&release));
        async move {
            probe.started();
            release.notified().await;
            Ok(Outcome::Completed(Completion::new(json!({"worker": worker}))))
        }
    })
}

/// A skill that runs until cancelled and records that it saw the cancellation.
fn until_cancelled(probe: Arc<Probe>) -> SkillBuilder {
    Skill::builder(SKILL).invoke(move |run: Run| {
        let probe = Arc::clone(&probe);
        async move {
            probe.started();
            run.cancelled().await;
            probe.cancelled();
            Ok(Outcome::Completed(Completion::new(json!({"cancelled": true}))))
        }
    })
}

async fn patiently<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, future).await.unwrap_or_else(|_| panic!("{what} did not happen within {PATIENCE:?}"))
}

/// Follows the task's events until the runtime says it ended, then returns the stored record.
async fn until_terminal(runtime: &TaskRuntime, id: &TaskId, owner: &OwnerHash) -> StoredTask {
    let events = runtime.events(id, owner, 0).await.expect("the owner's task has events");
    patiently("the task's end", events.for_each(|_| async {})).await;
    let record = runtime.store().get(id).await.expect("get").expect("the task exists");
    assert!(record.task.state.is_terminal(), "the events of task {id} ended while it is {:?}", record.task.state);
    record
}

/// Waits, by the wall clock, until the task's active lease has lapsed.
async fn until_active_lease_lapses(store: &Arc<dyn TaskStore>, id: &TaskId) {
    patiently("the active lease's lapse", async {
        while !store.expired_active_leases(now_ms(), 1000).await.expect("expired active leases").contains(id) {
            tokio::time::sleep(SHORT_LEASE / 10).await;
        }
    })
    .await;
}

/// Polls the record until `done` holds for it.
async fn until_record(store: &Arc<dyn TaskStore>, id: &TaskId, done: impl Fn(&StoredTask) -> bool) -> StoredTask {
    patiently("the awaited task change", async {
        loop {
            let record = store.get(id).await.expect("get").expect("the task exists");
            if done(&record) {
                return record;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

fn results(log: &[TaskEvent]) -> Vec<Value> {
    log.iter()
        .filter_map(|event| match &event.kind {
            TaskEventKind::Result { result } => Some(result.output.clone()),
            _ => None,
        })
        .collect()
}

/// A skill that asks for input until the message it answers says `more`, then completes with
/// `{"worker": worker, "got": <that text>, "history": <history length>}`. When `hang` is given,
/// the resumed run waits for it instead (ignoring cancellation): a worker that dies mid-run.
fn asking(worker: &'static str, hang: Option<Arc<Notify>>) -> SkillBuilder {
    Skill::builder(SKILL).invoke(move |run: Run| {
        let hang = hang.clone();
        async move {
            let text = run.message().map(Message::text).unwrap_or_default();
            if text != "more" {
                return Ok(Outcome::InputRequired(Message::agent_text("need more")));
            }
            if let Some(hang) = hang {
                hang.notified().await;
            }
            let history = run.task().map_or(0, |task| task.history.len());
            Ok(Outcome::Completed(Completion::new(json!({"worker": worker, "got": text, "history": history}))))
        }
    })
}

fn user_text(text: &str) -> Message {
    Message::new(accord_engine::Role::User, vec![Part::Text(text.into())])
}

/// A task waits for input; the caller's follow-up resumes it: the agent's question and the
/// follow-up join the history, the handler runs again and sees the follow-up as its message. A
/// follow-up to a running or an ended task is refused.
pub async fn runtime_resumes_a_waiting_task_with_the_follow_up(factory: impl StoreFactory) {
    let store = factory.fresh().await;
    let alice = owner("alice");
    let runtime = runtime_on(Arc::clone(&store), agent(asking("a", None)), "a");
    let mut first = reservation(&runtime, SKILL, alice);
    first.message = Some(user_text("hello"));
    let task = runtime.start(first).await.expect("start");
    let waiting = until_record(&store, &task.id, |record| record.task.state == TaskState::InputRequired).await;
    assert_eq!(waiting.task.status_message.as_ref().map(Message::text).as_deref(), Some("need more"));

    let resumed = runtime.resume(&task.id, &alice, user_text("more")).await.expect("resume");
    assert!(!resumed.state.is_terminal() && resumed.state != TaskState::InputRequired, "{:?}", resumed.state);
    let done = until_terminal(&runtime, &task.id, &alice).await;
    assert_eq!(done.task.state, TaskState::Completed);
    assert_eq!(done.task.result.map(|result| result.output), Some(json!({"worker": "a", "got": "more", "history": 3})));
    let texts: Vec<String> = done.task.history.iter().map(Message::text).collect();
    assert_eq!(texts, ["hello", "need more", "more"]);
    let roles: Vec<_> = done.task.history.iter().map(|message| message.role).collect();
    assert_eq!(roles, [accord_engine::Role::User, accord_engine::Role::Agent, accord_engine::Role::User]);

    let refused = runtime.resume(&task.id, &alice, user_text("more")).await.expect_err("ended");
    assert_eq!(refused, TaskFailure::NotWaiting { id: task.id.clone(), state: TaskState::Completed });
    let bob = owner("bob");
    assert_eq!(
        runtime.resume(&task.id, &bob, user_text("more")).await.expect_err("another owner's task"),
        TaskFailure::NotFound { id: task.id.clone() }
    );

    // A running task takes no follow-up.
    let hang = Arc::new(Notify::new());
    let busy = runtime_on(Arc::clone(&store), agent(asking("b", Some(Arc::clone(&hang)))), "b");
    let mut running = reservation(&busy, SKILL, alice);
    running.message = Some(user_text("more"));
    let running = busy.start(running).await.expect("start");
    let refused = busy.resume(&running.id, &alice, user_text("more")).await.expect_err("running");
    assert!(matches!(refused, TaskFailure::NotWaiting { state: TaskState::Working | TaskState::Submitted, .. }));
    hang.notify_one();
    assert_eq!(until_terminal(&busy, &running.id, &alice).await.task.state, TaskState::Completed);
}

/// A resumed task's worker stalls mid-run; another worker recovers it once the lease lapses, and
/// the recovered run sees the same follow-up: nothing the caller said is lost.
pub async fn runtime_recovers_a_resumed_task_with_its_follow_up(factory: impl StoreFactory) {
    let store = factory.fresh().await;
    let alice = owner("alice");
    let stalled = Worker::view(Arc::clone(&store), true, false);
    let hang = Arc::new(Notify::new());
    let a = TaskRuntime::new(
        agent(asking("a", Some(Arc::clone(&hang)))),
        stalled.clone(),
        runtime_config("a").lease_ttl(SHORT_LEASE),
    );
    let b = runtime_on(Arc::clone(&store), agent(asking("b", None)), "b");
    let mut first = reservation(&a, SKILL, alice);
    first.message = Some(user_text("hello"));
    let task = a.start(first).await.expect("start");
    until_record(&store, &task.id, |record| record.task.state == TaskState::InputRequired).await;
    // Waiting for input holds no live lease, so there is nothing to recover.
    assert_eq!(b.recover_expired().await, Ok(0));

    a.resume(&task.id, &alice, user_text("more")).await.expect("resume");
    until_active_lease_lapses(&store, &task.id).await;
    assert_eq!(b.recover_expired().await, Ok(1), "b takes the resumed task over");
    let done = until_terminal(&b, &task.id, &alice).await;
    assert_eq!(done.task.result.map(|result| result.output), Some(json!({"worker": "b", "got": "more", "history": 3})));
    hang.notify_one();
}

/// How long a task in the follow-up race may stay silent before it counts as hung. A guard
/// against hanging, not a speed requirement: a hung task never speaks again.
const HANG: Duration = Duration::from_secs(30);
/// How many tasks of the follow-up race are in flight at once.
const IN_FLIGHT: usize = 32;

/// Immediate follow-ups never race the lease: 100 tasks ask for input 100 times each, and every
/// follow-up is sent the moment its task waits — 10,000 follow-ups, 32 tasks at a time. None is
/// refused or lost, and no task hangs `working` (as one did when the worker gave its lease up
/// after the waiting write, and a follow-up came between the two). See
/// [`runtime_immediate_follow_ups_never_hang_with`] for other counts.
pub async fn runtime_immediate_follow_ups_never_hang(factory: impl StoreFactory) {
    runtime_immediate_follow_ups_never_hang_with(factory, 100, 100).await;
}

/// [`runtime_immediate_follow_ups_never_hang`] with `tasks` tasks of `rounds` follow-ups each.
pub async fn runtime_immediate_follow_ups_never_hang_with(factory: impl StoreFactory, tasks: usize, rounds: usize) {
    let store = factory.fresh().await;
    let alice = owner("alice");
    // Asks for input until the history holds `rounds` follow-ups, then completes.
    let skill = Skill::builder(SKILL).invoke(move |run: Run| async move {
        let follow_ups = run
            .task()
            .map_or(0, |task| task.history.iter().filter(|message| message.role == accord_engine::Role::User).count());
        if follow_ups < rounds {
            return Ok(Outcome::InputRequired(Message::agent_text("need more")));
        }
        Ok(Outcome::Completed(Completion::new(json!({"follow_ups": follow_ups}))))
    });
    let runtime = runtime_on(Arc::clone(&store), agent(skill), "a");
    let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let runs: Vec<_> = (0..tasks)
        .map(|_| {
            let (runtime, slots) = (runtime.clone(), Arc::clone(&slots));
            tokio::spawn(async move {
                let _slot = slots.acquire_owned().await.expect("the semaphore stays open");
                follow_up_race(&runtime, alice, rounds).await
            })
        })
        .collect();
    let mut failures = Vec::new();
    let mut done = Vec::new();
    for run in runs {
        match run.await.expect("a follow-up race task completes") {
            Ok(id) => done.push(id),
            Err(failure) => failures.push(failure),
        }
    }
    assert!(failures.is_empty(), "{} of {tasks} tasks failed; the first: {}", failures.len(), failures[0]);

    let expected: Vec<String> =
        (0..rounds).flat_map(|round| ["need more".to_owned(), format!("follow-up {round}")]).collect();
    for id in &done {
        let record = store.get(id).await.expect("get").expect("the task exists");
        assert_eq!(record.task.state, TaskState::Completed, "task {id}");
        assert_eq!(record.task.result.map(|result| result.output), Some(json!({"follow_ups": rounds})), "task {id}");
        let texts: Vec<String> = record.task.history.iter().map(Message::text).collect();
        assert_eq!(texts, expected, "task {id} holds every follow-up once, in order");
    }
    assert_eq!(done.len(), tasks);
}

/// Runs one task of the follow-up race: follows its events and answers every request for input at
/// once. The task's id, or what went wrong.
async fn follow_up_race(runtime: &TaskRuntime, owner: OwnerHash, rounds: usize) -> Result<TaskId, String> {
    let task = runtime.start(reservation(runtime, SKILL, owner)).await.map_err(|error| format!("start: {error}"))?;
    let id = task.id;
    let mut events = runtime.events(&id, &owner, 0).await.map_err(|error| format!("events of {id}: {error}"))?;
    let mut sent = 0;
    loop {
        let event = match tokio::time::timeout(HANG, events.next()).await {
            Ok(Some(Ok(event))) => event,
            Ok(Some(Err(error))) => return Err(format!("task {id}: the event stream failed: {error}")),
            Ok(None) => return Err(format!("task {id}: the event stream ended before the task completed")),
            Err(_) => {
                let state = runtime.get(&id, &owner).await.map(|task| task.state);
                return Err(format!(
                    "task {id} hung: no event for {HANG:?} after {sent} of {rounds} follow-ups (state {state:?})"
                ));
            }
        };
        match event.kind {
            TaskEventKind::Status { state: TaskState::InputRequired, .. } if sent < rounds => {
                let follow_up = user_text(&format!("follow-up {sent}"));
                runtime
                    .resume(&id, &owner, follow_up)
                    .await
                    .map_err(|error| format!("task {id}: follow-up {sent} was refused: {error}"))?;
                sent += 1;
            }
            TaskEventKind::Result { .. } if sent == rounds => return Ok(id),
            kind if kind.state().is_some_and(|state| state.is_terminal() || state == TaskState::InputRequired) => {
                return Err(format!("task {id}: unexpected {kind:?} after {sent} of {rounds} follow-ups"));
            }
            _ => {}
        }
    }
}

/// Two runtimes prepare the same reserved task at once: exactly one succeeds, the other gets
/// [`TaskFailure::ClaimLost`], and the skill runs exactly once.
pub async fn runtime_claim_is_atomic_across_two_runtimes(factory: impl StoreFactory) {
    const ROUNDS: usize = 6;
    let store = factory.fresh().await;
    let alice = owner("alice");
    let runs = Arc::new(AtomicUsize::new(0));
    let counting = || {
        let runs = Arc::clone(&runs);
        Skill::builder(SKILL).invoke(move |_run: Run| {
            let runs = Arc::clone(&runs);
            async move {
                let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(Outcome::Completed(Completion::new(json!({"run": run}))))
            }
        })
    };
    let a = runtime_on(Arc::clone(&store), agent(counting()), "a");
    let b = runtime_on(Arc::clone(&store), agent(counting()), "b");

    for round in 1..=ROUNDS {
        let task = a.reserve(reservation(&a, SKILL, alice)).await.expect("reserve");
        let start = Arc::new(Barrier::new(2));
        let prepare = |runtime: &TaskRuntime| {
            let (runtime, id, start) = (runtime.clone(), task.id.clone(), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                runtime.prepare(&id).await
            })
        };
        let (from_a, from_b) = (prepare(&a), prepare(&b));
        let outcomes = [from_a.await.expect("a's prepare completes"), from_b.await.expect("b's prepare completes")];
        let (won, lost): (Vec<_>, Vec<_>) = outcomes.into_iter().partition(Result::is_ok);
        assert_eq!((won.len(), lost.len()), (1, 1), "exactly one runtime prepares the task");
        for loss in lost {
            assert_eq!(loss.expect_err("the loser"), TaskFailure::ClaimLost { id: task.id.clone() });
        }
        for prepared in won {
            prepared.expect("the winner").activate().await.expect("the winner activates");
        }

        let done = until_terminal(&a, &task.id, &alice).await;
        assert_eq!(done.task.state, TaskState::Completed);
        assert_eq!(runs.load(Ordering::SeqCst), round, "the skill ran exactly once for this task");
    }
}

/// A worker stalls (its lease renewals stop reaching the store) while its handler still runs;
/// another worker recovers the task once the lease lapses; the stalled worker's late result is
/// refused because the lease is no longer its own, and the recovering worker's result stands.
pub async fn runtime_recovers_an_expired_lease_and_fences_the_stale_worker(factory: impl StoreFactory) {
    let store = factory.fresh().await;
    let alice = owner("alice");
    let (probe_a, release_a) = (Probe::new(), Arc::new(Notify::new()));
    let (probe_b, release_b) = (Probe::new(), Arc::new(Notify::new()));
    let stalled = Worker::view(Arc::clone(&store), true, false);
    let handler_a = agent(oblivious("a", Arc::clone(&probe_a), Arc::clone(&release_a)));
    let a = TaskRuntime::new(handler_a, stalled.clone(), runtime_config("a").lease_ttl(SHORT_LEASE));
    let b = runtime_on(Arc::clone(&store), agent(oblivious("b", Arc::clone(&probe_b), Arc::clone(&release_b))), "b");

    let task = a.start(reservation(&a, SKILL, alice)).await.expect("a starts the task");
    patiently("a's handler start", probe_a.on_start.notified()).await;
    until_active_lease_lapses(&store, &task.id).await;

    // The recovery pass finds the lapsed lease and runs the task again from its stored payload.
    assert_eq!(b.recover_expired().await, Ok(1), "b takes the task over");
    patiently("b's handler start", probe_b.on_start.notified()).await;
    let recovered = store.get(&task.id).await.expect("get").expect("the task exists");
    assert_eq!(recovered.task.state, TaskState::Working);

    // Both handlers now run; the stale one finishes first, while the task is still working.
    release_a.notify_one();
    let late = stalled.tap().write_of("a", |kind| matches!(kind, TaskEventKind::Result { .. })).await;
    assert!(!late.accepted, "the stale worker's result is refused");
    let record = store.get(&task.id).await.expect("get").expect("the task exists");
    assert_eq!(record.task.state, TaskState::Working);
    assert_eq!(
        record.lease.map(|lease| lease.owner_id),
        Some("b".to_owned()),
        "the lease stays the recovering worker's"
    );

    release_b.notify_one();
    let done = until_terminal(&b, &task.id, &alice).await;
    assert_eq!(done.task.result.map(|result| result.output), Some(json!({"worker": "b"})));
    let log = store.events_since(&task.id, &alice, 0).await.expect("events since").expect("owned");
    assert_eq!(results(&log), vec![json!({"worker": "b"})], "one result, the recovering worker's");
    assert_eq!((probe_a.starts(), probe_b.starts()), (1, 1));
}

/// A skill that is not safe to repeat: worker a's run saves a state (`Run::save_state`) and
/// then stalls; its lease lapses. Recovery runs the task again on b (a task without a saved
/// state would end `interrupted`), and b's handler reads the state a saved. The state is the
/// task's, never an event a caller sees.
pub async fn runtime_recovers_a_task_from_its_saved_state_even_when_not_safe_to_repeat(factory: impl StoreFactory) {
    let store = factory.fresh().await;
    let alice = owner("alice");
    let (probe, release) = (Probe::new(), Arc::new(Notify::new()));
    let saving = {
        let (probe, release) = (Arc::clone(&probe), Arc::clone(&release));
        Skill::builder(SKILL).safe_to_repeat(false).invoke(move |run: Run| {
            let (probe, release) = (Arc::clone(&probe), Arc::clone(&release));
            async move {
                run.save_state(json!({"remote": "r-1"})).await?;
                probe.started();
                release.notified().await;
                Ok(Outcome::Completed(Completion::new(json!({"worker": "a"}))))
            }
        })
    };
    let going_on = Skill::builder(SKILL).safe_to_repeat(false).invoke(|run: Run| async move {
        let saved = run.saved_state().cloned().unwrap_or(Value::Null);
        Ok(Outcome::Completed(Completion::new(json!({"worker": "b", "saved": saved}))))
    });
    // a's lease renewals stall (the worker froze), so its lease lapses.
    let stalled = Worker::view(Arc::clone(&store), true, false);
    let a = TaskRuntime::new(agent(saving), stalled, runtime_config("a").lease_ttl(SHORT_LEASE));
    let b = runtime_on(Arc::clone(&store), agent(going_on), "b");

    let task = a.start(reservation(&a, SKILL, alice)).await.expect("a starts the task");
    patiently("a's handler start", probe.on_start.notified()).await;
    let record = store.get(&task.id).await.expect("get").expect("the task exists");
    assert_eq!(record.task.backend_state, Some(json!({"remote": "r-1"})), "saved before save_state returned");
    until_active_lease_lapses(&store, &task.id).await;

    assert_eq!(b.recover_expired().await, Ok(1), "b takes the task over");
    let done = until_terminal(&b, &task.id, &alice).await;
    assert_eq!(done.task.state, TaskState::Completed);
    assert_eq!(
        done.task.result.map(|result| result.output),
        Some(json!({"worker": "b", "saved": {"remote": "r-1"}})),
        "b went on from a's state"
    );
    let log = store.events_since(&task.id, &alice, 0).await.expect("events since").expect("owned");
    let saved: Vec<&TaskEventKind> =
        log.iter().map(|event| &event.kind).filter(|kind| matches!(kind, TaskEventKind::BackendState { .. })).collect();
    assert_eq!(saved.len(), 1, "{log:?}");
    release.notify_one();
}

/// A task is cancelled (through another runtime) while its handler runs; the handler then
/// returns a result, which its worker tries to record and the store refuses: the cancellation
/// stands.
pub async fn runtime_cancel_is_never_overwritten_by_a_late_result(factory: impl StoreFactory) {
    let store = factory.fresh().await;
    let alice = owner("alice");
    let (probe, release) = (Probe::new(), Arc::new(Notify::new()));
    let observed = Worker::view(Arc::clone(&store), false, false);
    // A long lease: the running worker learns of the cancellation only from its refused write.
    let config = runtime_config("a").lease_ttl(Duration::from_secs(60));
    let a = TaskRuntime::new(agent(oblivious("a", Arc::clone(&probe), Arc::clone(&release))), observed.clone(), config);
    let b = runtime_on(Arc::clone(&store), agent(finishing("b")), "b");

    let task = a.start(reservation(&a, SKILL, alice)).await.expect("start");
    patiently("the handler start", probe.on_start.notified()).await;
    let cancelled = b.cancel(&task.id, &alice).await.expect("the running task is cancelled");
    assert_eq!(cancelled.state, TaskState::Canceled);

    release.notify_one();
    let late = observed.tap().write_of("a", |kind| matches!(kind, TaskEventKind::Result { .. })).await;
    assert!(!late.accepted, "the result that arrives after the cancellation is refused");
    let record = store.get(&task.id).await.expect("get").expect("the task exists");
    assert_eq!((record.task.state, record.task.result), (TaskState::Canceled, None));
    let log = store.events_since(&task.id, &alice, 0).await.expect("events since").expect("owned");
    assert_eq!(log.last().map(|event| &event.kind), Some(&status(TaskState::Canceled)));
    assert_eq!(log.iter().filter(|event| is_terminal_event(event)).count(), 1);
    assert_eq!(
        b.cancel(&task.id, &alice).await,
        Err(TaskFailure::NotCancellable { id: task.id, state: TaskState::Canceled })
    );
}

/// A handler that outlives `max_run`: the task fails with `task_timeout` first, then the handler
/// is told to stop.
pub async fn runtime_timeout_fails_the_task_and_cancels_the_handler(factory: impl StoreFactory) {
    let store = factory.fresh().await;
    let alice = owner("alice");
    let probe = Probe::new();
    let config = runtime_config("a").max_run(Duration::from_millis(150));
    let a = TaskRuntime::new(agent(until_cancelled(Arc::clone(&probe))), Arc::clone(&store), config);

    let task = a.start(reservation(&a, SKILL, alice)).await.expect("start");
    patiently("the handler's cancellation", probe.on_cancel.notified()).await;

    // The failure is recorded before the handler is cancelled, so it is there now.
    let record = store.get(&task.id).await.expect("get").expect("the task exists");
    let timeout = SkillError::new("task_timeout", "Task exceeded its 150ms execution limit");
    assert_eq!(record.task.state, TaskState::Failed);
    assert_eq!(record.task.error.as_ref(), Some(&timeout));
    assert_eq!(record.lease, None);
    let log = store.events_since(&task.id, &alice, 0).await.expect("events since").expect("owned");
    let failed = TaskEventKind::Error { state: TaskState::Failed, error: timeout };
    assert_eq!(log.last().map(|event| &event.kind), Some(&failed));
    assert_eq!((probe.starts(), probe.cancellations()), (1, 1));
}

/// A handler's error, and a mapped failure (an output that breaks the skill's schema), are
/// persisted as the task's error.
pub async fn runtime_persists_a_handler_error(factory: impl StoreFactory) {
    let store = factory.fresh().await;
    let alice = owner("alice");
    let boom = SkillError::new("boom", "failed on purpose").retryable(false);
    let failing = {
        let boom = boom.clone();
        Skill::builder(SKILL).invoke(move |_run: Run| {
            let boom = boom.clone();
            async move { Err(boom) }
        })
    };
    let bad_output = Skill::builder("bad-output")
        .output_schema(json!({"type": "object", "required": ["answer"]}))
        .invoke(|_run: Run| async { Ok(Outcome::Completed(Completion::new(json!({"nope": 1})))) });
    let agent = Agent::builder("conformance-agent").skill(failing).skill(bad_output).build().expect("a valid agent");
    let a = runtime_on(Arc::clone(&store), agent, "a");

    let task = a.start(reservation(&a, SKILL, alice)).await.expect("start");
    let record = until_terminal(&a, &task.id, &alice).await;
    assert_eq!((record.task.state, record.task.error.as_ref()), (TaskState::Failed, Some(&boom)));
    let log = store.events_since(&task.id, &alice, 0).await.expect("events since").expect("owned");
    assert_eq!(
        log.last().map(|event| &event.kind),
        Some(&TaskEventKind::Error { state: TaskState::Failed, error: boom })
    );

    let task = a.start(reservation(&a, "bad-output", alice)).await.expect("start");
    let record = until_terminal(&a, &task.id, &alice).await;
    assert_eq!(record.task.state, TaskState::Failed);
    let error = record.task.error.expect("the failure is stored");
    assert_eq!((error.code.as_str(), error.message.as_str()), ("invalid_output", "Invalid output"));
    assert_eq!(record.task.result, None);
}

/// Closing a runtime aborts its handler but leaves the task `working` with its active lease (a
/// worker process exiting while the database lives on), so another worker recovers it later.
pub async fn runtime_close_leaves_a_running_task_recoverable(factory: impl StoreFactory) {
    let store = factory.fresh().await;
    let alice = owner("alice");
    let probe = Probe::new();
    let process = Worker::view(Arc::clone(&store), false, true);
    let config = runtime_config("a").lease_ttl(SHORT_LEASE);
    let a = TaskRuntime::new(agent(until_cancelled(Arc::clone(&probe))), process.clone(), config);

    let task = a.start(reservation(&a, SKILL, alice)).await.expect("start");
    patiently("the handler start", probe.on_start.notified()).await;
    a.close().await;
    assert!(process.tap().close_called.load(Ordering::SeqCst), "closing the runtime closes its store");
    patiently("the handler's cancellation", probe.on_cancel.notified()).await;
    assert_eq!(a.reserve(reservation(&a, SKILL, alice)).await.expect_err("a closed runtime"), TaskFailure::Closed);

    let left = store.get(&task.id).await.expect("get").expect("the task exists");
    assert_eq!(left.task.state, TaskState::Working, "closing does not end the task");
    let left_lease = left.lease.expect("the task keeps its lease");
    assert_eq!((left_lease.owner_id.as_str(), left_lease.phase), ("a", LeasePhase::Active));

    until_active_lease_lapses(&store, &task.id).await;
    let b = runtime_on(Arc::clone(&store), agent(finishing("b")), "b");
    b.prepare(&task.id).await.expect("b recovers the task").activate().await.expect("b activates");
    let done = until_terminal(&b, &task.id, &alice).await;
    assert_eq!(done.task.state, TaskState::Completed);
    assert_eq!(done.task.result.map(|result| result.output), Some(json!({"worker": "b"})));
    let log = store.events_since(&task.id, &alice, 0).await.expect("events since").expect("owned");
    assert!(!log.iter().any(|event| event.kind == status(TaskState::Canceled)), "the closed worker cancelled nothing");
}

/// `TaskRuntime::events` yields the task's log in order, live, and ends after the terminal event;
/// it can resume after a sequence number and is owner-isolated.
pub async fn runtime_events_stream_yields_the_log_in_order_and_ends(factory: impl StoreFactory) {
    let store = factory.fresh().await;
    let (alice, bob) = (owner("alice"), owner("bob"));
    let release = Arc::new(Notify::new());
    let report =
        Artifact { artifact_id: "report".into(), name: Some("report".into()), parts: vec![Part::Text("done".into())] };
    let skill = {
        let (release, report) = (Arc::clone(&release), report.clone());
        Skill::builder(SKILL).invoke(move |run: Run| {
            let (release, report) = (Arc::clone(&release), report.clone());
            async move {
                run.emit(RunEvent::Message(agent_message("halfway"))).await;
                release.notified().await;
                Ok(Outcome::Completed(Completion {
                    output: json!({"ok": true}),
                    artifacts: vec![report],
                    ..Completion::default()
                }))
            }
        })
    };
    let a = runtime_on(Arc::clone(&store), agent(skill), "a");

    let task = a.start(reservation(&a, SKILL, alice)).await.expect("start");
    let mut events = a.events(&task.id, &alice, 0).await.expect("the owner follows the task");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let event = patiently("the next live event", events.next()).await.expect("the stream goes on");
        seen.push(event.expect("an event"));
    }
    let live: Vec<_> = seen.iter().map(|event| (event.sequence, event.kind.clone())).collect();
    assert_eq!(live, vec![(1, submitted()), (2, status(TaskState::Working)), (3, message("halfway"))]);

    // The end is read after the task has ended, so the stream's own end-of-task check cannot race
    // the final write.
    release.notify_one();
    until_record(&store, &task.id, |record| record.task.state.is_terminal()).await;
    while let Some(event) = patiently("the rest of the stream", events.next()).await {
        seen.push(event.expect("an event"));
    }
    let completed = result(json!({"ok": true}));
    let tail: Vec<_> = seen[3..].iter().map(|event| (event.sequence, event.kind.clone())).collect();
    let stored_artifact = TaskEventKind::Artifact { artifact: report, append: false, last_chunk: true };
    assert_eq!(tail, vec![(4, stored_artifact), (5, completed)], "the stream ends after the terminal event");
    let log = store.events_since(&task.id, &alice, 0).await.expect("events since").expect("owned");
    assert_eq!(seen, log, "the stream is the log");

    let resumed = a.events(&task.id, &alice, 2).await.expect("resume");
    let resumed: Vec<TaskEvent> =
        patiently("the resumed stream's end", resumed.map(|event| event.expect("an event")).collect()).await;
    assert_eq!(resumed, log[2..].to_vec(), "a resumed stream starts after the given sequence");
    assert_eq!(
        a.events(&task.id, &bob, 0).await.err(),
        Some(TaskFailure::NotFound { id: task.id.clone() }),
        "another owner's request reads as a missing task"
    );
}

// ---------------------------------------------------------------------------------------------
// A store as one worker sees it
// ---------------------------------------------------------------------------------------------

/// A write a worker made through a [`WorkerView`].
#[derive(Debug, Clone)]
struct Write {
    worker: Option<String>,
    kind: TaskEventKind,
    accepted: bool,
}

/// A shared store as one worker reaches it: the shared store tapped by the worker ([`Worker`]).
type WorkerView = Wrapped<Worker>;

/// What one worker does to the shared store: records its writes, can lose its lease renewals (a
/// stalled worker whose heartbeats do not arrive) and can keep its `close` from reaching the
/// shared store (a worker process exiting while the database lives on).
struct Worker {
    stall_renewals: bool,
    shield_close: bool,
    close_called: AtomicBool,
    writes: Mutex<Vec<Write>>,
    wrote: Notify,
}

impl Worker {
    fn view(inner: Arc<dyn TaskStore>, stall_renewals: bool, shield_close: bool) -> Arc<WorkerView> {
        let worker = Self {
            stall_renewals,
            shield_close,
            close_called: AtomicBool::new(false),
            writes: Mutex::new(Vec::new()),
            wrote: Notify::new(),
        };
        Arc::new(Wrapped::new(inner, worker))
    }

    fn writes(&self) -> MutexGuard<'_, Vec<Write>> {
        self.writes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a write by `worker` whose event matches.
    async fn write_of(&self, worker: &str, matches: impl Fn(&TaskEventKind) -> bool) -> Write {
        patiently("the worker's write", async {
            loop {
                let notified = self.wrote.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let found = self
                    .writes()
                    .iter()
                    .find(|write| write.worker.as_deref() == Some(worker) && matches(&write.kind))
                    .cloned();
                if let Some(write) = found {
                    return write;
                }
                notified.await;
            }
        })
        .await
    }
}

impl Tap for Worker {
    fn renewing(&self, _id: &TaskId, _worker: &str) -> Result<(), StoreError> {
        if self.stall_renewals {
            return Err(StoreError::Unavailable("the worker's renewal did not arrive".into()));
        }
        Ok(())
    }

    fn appended(&self, events: &[TaskEventKind], worker: Option<&str>, accepted: bool) {
        let worker = worker.map(str::to_owned);
        self.writes().extend(events.iter().map(|kind| Write { worker: worker.clone(), kind: kind.clone(), accepted }));
        self.wrote.notify_waiters();
    }

    fn closing(&self) -> bool {
        self.close_called.store(true, Ordering::SeqCst);
        !self.shield_close
    }
}

// ---------------------------------------------------------------------------------------------
// Push configs and their outbox
// ---------------------------------------------------------------------------------------------

fn push_key() -> &'static PushKey {
    static KEY: std::sync::OnceLock<PushKey> = std::sync::OnceLock::new();
    KEY.get_or_init(PushKey::generate)
}

fn push_config(task: &TaskId, id: &str, url: &str, at: Millis) -> StoredPushConfig {
    let config = PushConfig {
        id: id.into(),
        url: url.into(),
        token: Some(format!("token-{id}")),
        authentication: Some(PushAuthentication { scheme: "Bearer".into(), credentials: Some("secret".into()) }),
    };
    push_key().stored(task, &config, at)
}

fn opened(configs: &[StoredPushConfig]) -> Vec<(String, String)> {
    configs
        .iter()
        .map(|stored| {
            let config = push_key().open(stored).expect("a stored config opens with the key that sealed it");
            (config.id, config.url)
        })
        .collect()
}

fn sequences(delivery: &PushDelivery) -> Vec<u64> {
    delivery.events.iter().map(|event| event.sequence).collect()
}

fn settled(through: u64, next_attempt_at: Millis) -> PushSettle {
    PushSettle { delivered_through: through, attempts: 0, next_attempt_at, dead_letter: None }
}

impl Bench {
    async fn put_push(&self, owner: &OwnerHash, config: StoredPushConfig, from: DeliverFrom) -> PushPut {
        self.store.put_push_config(owner, config, from).await.expect("put a push config")
    }

    async fn push_configs(&self, id: &TaskId, owner: &OwnerHash) -> Option<Vec<StoredPushConfig>> {
        self.store.push_configs(id, owner).await.expect("read push configs")
    }

    async fn claim_push(&self, worker: &str, now: Millis, limit: usize, events: usize) -> Vec<PushDelivery> {
        self.store.claim_push_deliveries(worker, now, now + MINUTE, limit, events).await.expect("claim deliveries")
    }

    async fn settle_push(&self, delivery: &PushDelivery, worker: &str, settle: PushSettle, now: Millis) -> bool {
        let config = &delivery.config;
        self.store.settle_push_delivery(&config.task_id, &config.id, worker, settle, now).await.expect("settle")
    }
}

/// Push configs are kept per task and owner: listed by id, replaced by id, deleted (a second
/// delete finds nothing), and invisible to another owner, who is answered as for a task that
/// does not exist.
pub async fn push_configs_are_stored_listed_replaced_and_deleted(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let (alice, mallory) = (owner("alice"), owner("mallory"));
    let id = bench.reserve(alice).await;
    let now = bench.at(1);
    assert_eq!(bench.push_configs(&id, &alice).await, Some(Vec::new()), "a task starts with no config");
    for (config, url) in [("b", "https://b.example/hook"), ("a", "https://a.example/hook")] {
        let put = bench.put_push(&alice, push_config(&id, config, url, now), DeliverFrom::Now).await;
        assert_eq!(put, PushPut::Stored);
    }
    let listed = bench.push_configs(&id, &alice).await.expect("the owner's task");
    assert_eq!(
        opened(&listed),
        [("a".to_owned(), "https://a.example/hook".to_owned()), ("b".to_owned(), "https://b.example/hook".to_owned())],
        "by id, each opening to what was stored"
    );
    let replacement = push_config(&id, "a", "https://a2.example/hook", bench.at(2));
    assert_eq!(bench.put_push(&alice, replacement, DeliverFrom::Now).await, PushPut::Stored);
    let listed = bench.push_configs(&id, &alice).await.expect("the owner's task");
    assert_eq!(opened(&listed)[0], ("a".to_owned(), "https://a2.example/hook".to_owned()), "replaced in place");
    assert_eq!(listed.len(), 2);

    // Another owner, or no task at all: nothing to read, change or delete.
    let theirs = push_config(&id, "m", "https://m.example/hook", now);
    assert_eq!(bench.put_push(&mallory, theirs, DeliverFrom::Now).await, PushPut::TaskNotFound);
    assert_eq!(bench.push_configs(&id, &mallory).await, None);
    assert_eq!(bench.store.delete_push_config(&id, &mallory, "a").await.expect("delete"), None);
    let missing = TaskId::generate();
    let orphan = push_config(&missing, "x", "https://x.example/hook", now);
    assert_eq!(bench.put_push(&alice, orphan, DeliverFrom::Now).await, PushPut::TaskNotFound);
    assert_eq!(bench.push_configs(&missing, &alice).await, None);
    assert_eq!(bench.push_configs(&id, &alice).await.expect("unchanged").len(), 2, "nothing of theirs was stored");

    assert_eq!(bench.store.delete_push_config(&id, &alice, "a").await.expect("delete"), Some(true));
    assert_eq!(bench.store.delete_push_config(&id, &alice, "a").await.expect("delete"), Some(false), "idempotent");
    assert_eq!(opened(&bench.push_configs(&id, &alice).await.expect("the owner's task")).len(), 1);
}

/// A task holds at most `MAX_PUSH_CONFIGS_PER_TASK` configs; replacing one of them is still
/// accepted when the task is full.
pub async fn push_configs_are_capped_per_task(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.reserve(alice).await;
    for n in 0..MAX_PUSH_CONFIGS_PER_TASK {
        let config = push_config(&id, &format!("c{n:02}"), "https://example.com/hook", bench.at(1));
        assert_eq!(bench.put_push(&alice, config, DeliverFrom::Now).await, PushPut::Stored);
    }
    let one_more = push_config(&id, "extra", "https://example.com/hook", bench.at(1));
    assert_eq!(bench.put_push(&alice, one_more, DeliverFrom::Now).await, PushPut::TooMany);
    let again = push_config(&id, "c00", "https://example.com/other", bench.at(2));
    assert_eq!(bench.put_push(&alice, again, DeliverFrom::Now).await, PushPut::Stored, "a replacement fits");
    assert_eq!(bench.push_configs(&id, &alice).await.expect("configs").len(), MAX_PUSH_CONFIGS_PER_TASK);
}

/// A config's pending updates are the log entries after its cursor: claimed in order (at most
/// the number asked for), held by the claim's lease, and gone once settled; a later update is
/// pending again. A config from `Now` starts after the latest entry.
pub async fn push_deliveries_follow_the_log_after_the_cursor(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.running(alice, "w", bench.at(10 * MINUTE)).await;
    assert_eq!(bench.log(&id, &alice).await.len(), 2, "submitted, then working");
    let now = bench.at(1);
    let all = push_config(&id, "all", "https://a.example/", now);
    assert_eq!(bench.put_push(&alice, all, DeliverFrom::After(0)).await, PushPut::Stored);
    let new = push_config(&id, "new", "https://n.example/", now);
    assert_eq!(bench.put_push(&alice, new, DeliverFrom::Now).await, PushPut::Stored);

    let mut claimed = bench.claim_push("d1", bench.at(2), 10, 1).await;
    assert_eq!(claimed.len(), 1, "only `all` has pending updates: {claimed:?}");
    let delivery = claimed.remove(0);
    assert_eq!(delivery.config.id, "all");
    assert_eq!(sequences(&delivery), [1], "in order, at most as many as asked for");
    assert_eq!(delivery.attempts, 0);
    assert_eq!(delivery.context_id, bench.record(&id).await.task.context_id);
    assert!(bench.claim_push("d2", bench.at(3), 10, 100).await.is_empty(), "a live lease holds the config");

    assert!(bench.settle_push(&delivery, "d1", settled(1, bench.at(3)), bench.at(3)).await);
    bench.set(&id, message("more"), bench.at(4)).await;
    let claimed = bench.claim_push("d2", bench.at(5), 10, 100).await;
    let mut by_config: Vec<_> =
        claimed.iter().map(|delivery| (delivery.config.id.clone(), sequences(delivery))).collect();
    by_config.sort();
    assert_eq!(by_config, [("all".to_owned(), vec![2, 3]), ("new".to_owned(), vec![3])]);
    for delivery in &claimed {
        let through = delivery.events.last().expect("events").sequence;
        assert!(bench.settle_push(delivery, "d2", settled(through, bench.at(6)), bench.at(6)).await);
    }
    assert!(bench.claim_push("d1", bench.at(7), 10, 100).await.is_empty(), "everything was delivered");
}

/// A settled failure keeps the cursor and its attempts and holds the config until its next
/// attempt; a cursor never moves back; replacing a config keeps where its delivery stands.
pub async fn push_retries_wait_for_their_time_and_keep_the_cursor(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.running(alice, "w", bench.at(10 * MINUTE)).await;
    let latest = bench.log(&id, &alice).await.len() as u64;
    bench.put_push(&alice, push_config(&id, "hook", "https://h.example/", bench.at(1)), DeliverFrom::After(0)).await;
    let delivery = bench.claim_push("d", bench.at(2), 10, 100).await.remove(0);
    let retry = PushSettle { delivered_through: 1, attempts: 2, next_attempt_at: bench.at(100), dead_letter: None };
    assert!(bench.settle_push(&delivery, "d", retry, bench.at(3)).await);
    assert!(bench.claim_push("d", bench.at(99), 10, 100).await.is_empty(), "not before its next attempt");

    // Replaced while waiting: the new URL, the same place in the log.
    bench.put_push(&alice, push_config(&id, "hook", "https://h2.example/", bench.at(50)), DeliverFrom::After(0)).await;
    let delivery = bench.claim_push("d", bench.at(100), 10, 100).await.remove(0);
    assert_eq!(delivery.attempts, 2);
    assert_eq!(sequences(&delivery), (2..=latest).collect::<Vec<_>>());
    assert_eq!(opened(std::slice::from_ref(&delivery.config))[0].1, "https://h2.example/");
    assert!(bench.settle_push(&delivery, "d", settled(0, bench.at(101)), bench.at(101)).await);
    let again = bench.claim_push("d", bench.at(102), 10, 100).await.remove(0);
    assert_eq!(sequences(&again)[0], 2, "the cursor did not move back");
}

/// A delivery lease that lapses lets another worker take the config; the first worker's late
/// settlement is then refused and changes nothing. Two concurrent claims never share a config.
pub async fn push_delivery_leases_fence_a_stale_worker(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let mut tasks = Vec::new();
    for n in 0..6 {
        let id = bench.running(alice, "w", bench.at(10 * MINUTE)).await;
        bench
            .put_push(
                &alice,
                push_config(&id, &format!("h{n}"), "https://h.example/", bench.at(1)),
                DeliverFrom::After(0),
            )
            .await;
        tasks.push(id);
    }
    let (first, second) =
        tokio::join!(bench.claim_push("a", bench.at(2), 4, 100), bench.claim_push("b", bench.at(2), 4, 100));
    let mut taken: Vec<_> = first.iter().chain(&second).map(|delivery| delivery.config.task_id.clone()).collect();
    assert_eq!(taken.len(), 6, "the two claims took every config: {} + {}", first.len(), second.len());
    taken.sort();
    taken.dedup();
    assert_eq!(taken.len(), 6, "no config went to both");

    let delivery = first.first().or(second.first()).expect("a delivery").clone();
    let holder = if first.contains(&delivery) { "a" } else { "b" };
    let lapsed = bench.at(2) + MINUTE;
    assert!(bench.claim_push("c", lapsed - 1, 10, 100).await.is_empty(), "leases are live until they lapse");
    let taken_over = bench.claim_push("c", lapsed, 10, 100).await;
    assert_eq!(taken_over.len(), 6, "lapsed leases are taken over");
    let through = delivery.events.last().expect("events").sequence;
    assert!(
        !bench.settle_push(&delivery, holder, settled(through, lapsed), lapsed).await,
        "the stale worker is fenced"
    );
    let theirs = taken_over.iter().find(|other| other.config.task_id == delivery.config.task_id).expect("taken over");
    assert_eq!(theirs.events, delivery.events, "the cursor did not move for the stale worker");
    assert!(bench.settle_push(theirs, "c", settled(through, lapsed), lapsed).await);

    // A deleted config is settled by nobody and claimed by nobody.
    let other = taken_over.iter().find(|other| other.config.task_id != delivery.config.task_id).expect("another");
    let deleted = bench.store.delete_push_config(&other.config.task_id, &alice, &other.config.id).await;
    assert_eq!(deleted.expect("delete"), Some(true));
    assert!(!bench.settle_push(other, "c", settled(1, lapsed), lapsed).await);
    let rest = bench.claim_push("d", lapsed + 2 * MINUTE, 10, 100).await;
    assert_eq!(rest.len(), 4, "neither the delivered nor the deleted config is pending: {rest:?}");
}

/// A dead letter is appended to the task's log with the settlement, whatever the task's state,
/// without changing the task; it wakes subscribers.
pub async fn push_dead_letters_are_logged_without_changing_the_task(factory: impl StoreFactory) {
    let bench = Bench::new(&factory).await;
    let alice = owner("alice");
    let id = bench.running(alice, "w", bench.at(10 * MINUTE)).await;
    bench.set(&id, result(json!({"done": true})), bench.at(1)).await;
    let before = bench.record(&id).await;
    let log = bench.log(&id, &alice).await;
    bench.put_push(&alice, push_config(&id, "hook", "https://h.example/", bench.at(2)), DeliverFrom::After(0)).await;
    let delivery = bench.claim_push("d", bench.at(3), 10, 1).await.remove(0);
    assert_eq!(sequences(&delivery), [1]);
    let mut wakeups = bench.store.subscribe(&id, &alice).await.expect("subscribe").expect("the owner's task");
    let dead =
        TaskEventKind::PushDeadLetter { config_id: "hook".into(), sequence: 1, attempts: 5, reason: "HTTP 500".into() };
    let settle =
        PushSettle { delivered_through: 1, attempts: 0, next_attempt_at: bench.at(4), dead_letter: Some(dead.clone()) };
    assert!(bench.settle_push(&delivery, "d", settle, bench.at(4)).await);
    woken(&mut wakeups).await;

    let after = bench.record(&id).await;
    assert_eq!(after.task.state, TaskState::Completed);
    assert_eq!(after.task.updated_at, before.task.updated_at, "the task did not change");
    assert_eq!(after.task.result, before.task.result);
    assert_eq!(after.task.version, before.task.version + 1, "the log grew by one entry");
    let now_log = bench.log(&id, &alice).await;
    assert_eq!(now_log.len(), log.len() + 1);
    let last = now_log.last().expect("an entry");
    assert_eq!((last.sequence, &last.kind), (log.len() as u64 + 1, &dead));
    let pending = bench.claim_push("d", bench.at(5), 10, 100).await.remove(0);
    assert_eq!(
        sequences(&pending),
        (2..=log.len() as u64 + 1).collect::<Vec<_>>(),
        "the rest, then the dead letter itself"
    );
}
