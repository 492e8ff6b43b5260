//! The task service driven directly, as every face drives it: send (blocking and not), follow-ups,
//! subscriptions, lists, cancellation, the paid start and push configs — each with the error kind
//! a caller gets when it goes wrong. Real skills run on a real runtime over the in-memory store.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{
    AccessToken, Caller, DeliverFrom, Durability, ListQuery, ListShape, MAX_PUSH_CONFIGS_PER_TASK, MemoryStore, Millis,
    PageStart, PaidStart, PaymentFlow, PushConfig, RuntimeConfig, SendInput, SendRequest, ServiceConfig, SettleFailure,
    SubscribeFrom, Task, TaskEvent, TaskEventKind, TaskId, TaskLimits, TaskPage, TaskRuntime, TaskService, TaskStore,
    Wait,
};
use accord_engine::{
    Agent, Completion, Error, ErrorKind, Message, Outcome, Part, Pricing, Role, Run, Skill, SkillOperation, TaskState,
};
use accord_test_support::{Tap, Wrapped};
use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// Long enough for any run here to settle; a blocking send returns as soon as it does.
const SETTLE: Duration = Duration::from_secs(10);

/// The agent every test runs: `echo` answers its input, `count` takes `{"n": integer}`, `ask`
/// waits for the caller to say "go", `hold` runs until released (or cancelled), `paid` is priced.
fn agent(release: Arc<Notify>) -> Agent {
    let echo = Skill::builder("echo").invoke(|run: Run| async move { Ok(Completion::new(run.input().clone()).into()) });
    let count = Skill::builder("count")
        .input_schema(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        }))
        .invoke(|run: Run| async move {
            let n = run.input()["n"].as_i64().unwrap_or_default();
            Ok(Completion::new(json!(n + 1)).into())
        });
    let ask = Skill::builder("ask").invoke(|run: Run| async move {
        if run.message().is_some_and(|message| message.text() == "go") {
            Ok(Completion::new(json!("went")).into())
        } else {
            Ok(Outcome::InputRequired(Message::agent_text("say go")))
        }
    });
    let hold = Skill::builder("hold").invoke(move |run: Run| {
        let release = Arc::clone(&release);
        async move {
            tokio::select! {
                () = release.notified() => Ok(Completion::new(json!("released")).into()),
                () = run.cancelled() => Ok(Completion::new(json!("cancelled")).into()),
            }
        }
    });
    let pricing = Pricing { task: Some("5".into()), free: vec![SkillOperation::Invoke], ..Pricing::default() };
    let paid = Skill::builder("paid")
        .pricing(pricing)
        .invoke(|run: Run| async move { Ok(Completion::new(json!({"paid_for": run.input().clone()})).into()) });
    Agent::builder("service-tests").skill(echo).skill(count).skill(ask).skill(hold).skill(paid).build().expect("agent")
}

/// A service over a fresh memory store, with the `hold` skill's release.
struct Fixture {
    service: TaskService,
    release: Arc<Notify>,
}

impl Fixture {
    fn new() -> Self {
        Self::with(ServiceConfig::default(), Durability::Process)
    }

    fn with(config: ServiceConfig, durability: Durability) -> Self {
        let release = Arc::new(Notify::new());
        let memory = Arc::new(MemoryStore::default());
        let store: Arc<dyn TaskStore> = match durability {
            Durability::Durable => Arc::new(Wrapped::new(memory, SaysDurable)),
            _ => memory,
        };
        let runtime = TaskRuntime::new(agent(Arc::clone(&release)), store, RuntimeConfig::default());
        Self { service: TaskService::new(runtime, config), release }
    }

    async fn send(&self, caller: Caller, skill: &str, input: Value, wait: Wait) -> Result<Task, Error> {
        self.service.send(SendRequest::new(caller, SendInput::Candidates(vec![input])).skill(skill), wait).await
    }

    /// A task of `skill` for `caller`, as it stands once it has settled.
    async fn settled(&self, caller: Caller, skill: &str, input: Value) -> Task {
        self.send(caller, skill, input, Wait::Settled(SETTLE)).await.expect("sent")
    }

    /// A `hold` task for `caller`, running.
    async fn holding(&self, caller: Caller) -> Task {
        let task = self.send(caller, "hold", json!({}), Wait::Immediately).await.expect("sent");
        assert!(!task.state.is_terminal(), "{:?}", task.state);
        task
    }
}

fn caller() -> Caller {
    Caller::owner(AccessToken::generate().owner())
}

fn user_text(text: &str) -> Message {
    Message::new(Role::User, vec![Part::Text(text.into())])
}

fn follow_up(caller: Caller, id: &TaskId, text: &str) -> SendRequest {
    SendRequest::new(caller, SendInput::FromMessage).message(user_text(text)).follow_up(id.clone())
}

fn kind<T: std::fmt::Debug>(result: Result<T, Error>) -> ErrorKind {
    result.expect_err("an error").kind()
}

/// The events of a stream that ends, collected (bounded, so a stream that never ends fails).
async fn collect(events: accord_engine::task::TaskEvents) -> Vec<TaskEvent> {
    let all = events.map(|event| event.expect("an event")).collect::<Vec<_>>();
    tokio::time::timeout(SETTLE, all).await.expect("the stream ends")
}

mod send {
    use super::*;

    #[tokio::test]
    async fn a_blocking_send_answers_with_the_completed_task() {
        let fixture = Fixture::new();
        let task = fixture.settled(caller(), "count", json!({"n": 41})).await;
        assert_eq!(task.state, TaskState::Completed);
        assert_eq!(task.skill, "count");
        assert_eq!(task.result.expect("a result").output, json!(42));
    }

    #[tokio::test]
    async fn a_send_that_does_not_wait_answers_while_the_task_runs() {
        let fixture = Fixture::new();
        let caller = caller();
        let task = fixture.holding(caller.clone()).await;
        assert_eq!(task.state, TaskState::Working);
        fixture.release.notify_one();
        let done = fixture.service.wait_for(&caller, task, Wait::Settled(SETTLE)).await.expect("settled");
        assert_eq!(done.state, TaskState::Completed);
        assert_eq!(done.result.expect("a result").output, json!("released"));
    }

    #[tokio::test]
    async fn a_blocking_send_waits_no_longer_than_the_service_allows() {
        let config = ServiceConfig::default().max_wait(Duration::from_millis(50));
        let fixture = Fixture::with(config, Durability::Process);
        let started = tokio::time::Instant::now();
        let task =
            fixture.send(caller(), "hold", json!({}), Wait::Settled(Duration::from_secs(60))).await.expect("sent");
        assert_eq!(task.state, TaskState::Working, "answered while still running");
        assert!(started.elapsed() < SETTLE);
    }

    #[tokio::test]
    async fn the_input_comes_from_the_message_when_the_request_has_none() {
        let fixture = Fixture::new();
        let message = Message::new(Role::User, vec![Part::Data(json!({"n": 1}))]);
        let request = SendRequest::new(caller(), SendInput::FromMessage).skill("count").message(message);
        let task = fixture.service.send(request, Wait::Settled(SETTLE)).await.expect("sent");
        assert_eq!(task.result.expect("a result").output, json!(2));
    }

    #[tokio::test]
    async fn a_send_names_a_skill_that_exists_and_can_run() {
        let fixture = Fixture::new();
        assert_eq!(kind(fixture.send(caller(), "nope", json!({}), Wait::Immediately).await), ErrorKind::UnknownSkill);
    }

    #[tokio::test]
    async fn an_input_that_breaks_the_schema_is_refused_with_its_issues() {
        let fixture = Fixture::new();
        let refused =
            fixture.send(caller(), "count", json!({"n": "many"}), Wait::Immediately).await.expect_err("refused");
        assert_eq!(refused.kind(), ErrorKind::InvalidInput);
        assert!(!refused.issues().is_empty());
    }

    #[tokio::test]
    async fn inputs_and_messages_beyond_the_limits_are_too_large() {
        let limits = TaskLimits::default().max_input_bytes(32).max_message_bytes(64);
        let fixture = Fixture::with(ServiceConfig::default().limits(limits), Durability::Process);
        let input = json!({"text": "x".repeat(64)});
        assert_eq!(kind(fixture.send(caller(), "echo", input, Wait::Immediately).await), ErrorKind::TooLarge);
        let message = user_text(&"y".repeat(128));
        let request = SendRequest::new(caller(), SendInput::FromMessage).skill("echo").message(message);
        assert_eq!(kind(fixture.service.send(request, Wait::Immediately).await), ErrorKind::TooLarge);
        let fits = fixture.settled(caller(), "echo", json!({"a": 1})).await;
        assert_eq!(fits.state, TaskState::Completed);
    }

    #[tokio::test]
    async fn a_priced_skill_does_not_start_through_a_plain_send() {
        let fixture = Fixture::new();
        let caller = caller();
        assert_eq!(
            kind(fixture.send(caller.clone(), "paid", json!({}), Wait::Immediately).await),
            ErrorKind::PaymentRequired
        );
        let page = fixture.service.list(&caller, &ListQuery::default()).await.expect("list");
        assert_eq!(page.total, 0, "nothing was reserved");
    }
}

mod follow_ups {
    use super::*;

    #[tokio::test]
    async fn a_follow_up_resumes_a_task_waiting_for_input() {
        let fixture = Fixture::new();
        let caller = caller();
        let request = SendRequest::new(caller.clone(), SendInput::FromMessage).skill("ask").message(user_text("hello"));
        let waiting = fixture.service.send(request, Wait::Settled(SETTLE)).await.expect("sent");
        assert_eq!(waiting.state, TaskState::InputRequired);
        assert_eq!(waiting.status_message.as_ref().map(Message::text).as_deref(), Some("say go"));

        let resumed = fixture.service.send(follow_up(caller, &waiting.id, "go"), Wait::Settled(SETTLE)).await;
        let resumed = resumed.expect("resumed");
        assert_eq!(resumed.id, waiting.id);
        assert_eq!(resumed.state, TaskState::Completed);
        assert_eq!(resumed.result.expect("a result").output, json!("went"));
        let texts: Vec<String> = resumed.history.iter().map(Message::text).collect();
        assert!(texts.ends_with(&["say go".to_owned(), "go".to_owned()]), "{texts:?}");
    }

    #[tokio::test]
    async fn a_follow_up_is_refused_by_task_state_owner_and_context() {
        let fixture = Fixture::new();
        let caller = caller();
        let request = SendRequest::new(caller.clone(), SendInput::FromMessage).skill("ask").message(user_text("hello"));
        let waiting = fixture.service.send(request, Wait::Settled(SETTLE)).await.expect("sent");
        assert_eq!(waiting.state, TaskState::InputRequired);

        let stranger = follow_up(super::caller(), &waiting.id, "go");
        assert_eq!(kind(fixture.service.send(stranger, Wait::Immediately).await), ErrorKind::TaskNotFound);
        let elsewhere = follow_up(caller.clone(), &waiting.id, "go").context_id(Some("another-context".into()));
        assert_eq!(kind(fixture.service.send(elsewhere, Wait::Immediately).await), ErrorKind::InvalidRequest);
        let silent = SendRequest::new(caller.clone(), SendInput::FromMessage).follow_up(waiting.id.clone());
        assert_eq!(kind(fixture.service.send(silent, Wait::Immediately).await), ErrorKind::InvalidRequest);
        let unknown = follow_up(caller.clone(), &TaskId::generate(), "go");
        assert_eq!(kind(fixture.service.send(unknown, Wait::Immediately).await), ErrorKind::TaskNotFound);
        // None of these touched the task.
        let still = fixture.service.get(&caller, &waiting.id, None).await.expect("get");
        assert_eq!(still.state, TaskState::InputRequired);

        let running = fixture.holding(caller.clone()).await;
        let busy = follow_up(caller.clone(), &running.id, "go");
        assert_eq!(kind(fixture.service.send(busy, Wait::Immediately).await), ErrorKind::TaskRunning);

        let done = fixture.settled(caller.clone(), "echo", json!({})).await;
        let late = follow_up(caller, &done.id, "go");
        assert_eq!(kind(fixture.service.send(late, Wait::Immediately).await), ErrorKind::TaskEnded);
    }

    #[tokio::test]
    async fn a_follow_up_beyond_the_history_limit_is_too_large() {
        // The task's history holds its first message; the question and the answer would make 3.
        let limits = TaskLimits::default().max_history(2);
        let fixture = Fixture::with(ServiceConfig::default().limits(limits), Durability::Process);
        let caller = caller();
        let request = SendRequest::new(caller.clone(), SendInput::FromMessage).skill("ask").message(user_text("hello"));
        let waiting = fixture.service.send(request, Wait::Settled(SETTLE)).await.expect("sent");
        assert_eq!(waiting.state, TaskState::InputRequired);
        let refused = fixture.service.send(follow_up(caller.clone(), &waiting.id, "go"), Wait::Immediately).await;
        assert_eq!(kind(refused), ErrorKind::TooLarge);
        let still = fixture.service.get(&caller, &waiting.id, None).await.expect("get");
        assert_eq!(still.state, TaskState::InputRequired);
    }
}

mod subscribe {
    use super::*;

    #[tokio::test]
    async fn a_subscription_has_the_snapshot_then_live_updates_until_the_end() {
        let fixture = Fixture::new();
        let caller = caller();
        let task = fixture.holding(caller.clone()).await;
        let updates = fixture.service.subscribe(&caller, &task.id, SubscribeFrom::Snapshot).await.expect("subscribed");
        let snapshot = updates.snapshot.expect("a snapshot");
        assert_eq!((snapshot.id.clone(), snapshot.state), (task.id.clone(), TaskState::Working));
        fixture.release.notify_one();
        let events = collect(updates.events).await;
        let last = events.last().expect("events");
        assert_eq!(last.kind.state(), Some(TaskState::Completed));
        assert!(events.iter().all(|event| event.task_id == task.id));
        assert!(events.first().expect("events").sequence > snapshot.version + 1, "only what came after the snapshot");
    }

    #[tokio::test]
    async fn a_subscription_replays_the_log_from_a_point() {
        let fixture = Fixture::new();
        let caller = caller();
        let task = fixture.settled(caller.clone(), "echo", json!({"a": 1})).await;
        let whole = fixture.service.subscribe(&caller, &task.id, SubscribeFrom::Start).await.expect("subscribed");
        assert!(whole.snapshot.is_none());
        let whole = collect(whole.events).await;
        let sequences: Vec<u64> = whole.iter().map(|event| event.sequence).collect();
        assert_eq!(sequences, (1..=whole.len() as u64).collect::<Vec<_>>(), "the whole log, in order");
        assert_eq!(whole[0].kind, TaskEventKind::Status { state: TaskState::Submitted, message: None });
        assert_eq!(whole.last().expect("events").kind.state(), Some(TaskState::Completed));

        let after = fixture.service.subscribe(&caller, &task.id, SubscribeFrom::After(1)).await.expect("subscribed");
        let rest = collect(after.events).await;
        assert_eq!(rest, whole[1..].to_vec());
    }

    #[tokio::test]
    async fn a_subscription_is_refused_for_an_ended_task_and_another_owners() {
        let fixture = Fixture::new();
        let caller = caller();
        let done = fixture.settled(caller.clone(), "echo", json!({})).await;
        let ended = fixture.service.subscribe(&caller, &done.id, SubscribeFrom::Snapshot).await;
        assert_eq!(kind(ended), ErrorKind::TaskEnded);
        let running = fixture.holding(caller).await;
        let stranger = fixture.service.subscribe(&super::caller(), &running.id, SubscribeFrom::Start).await;
        assert_eq!(kind(stranger), ErrorKind::TaskNotFound);
    }

    #[tokio::test]
    async fn with_streaming_off_streams_are_refused_and_nothing_starts() {
        let fixture = Fixture::with(ServiceConfig::default().streaming(false), Durability::Process);
        let caller = caller();
        assert_eq!(kind(fixture.service.ensure_streaming()), ErrorKind::StreamingOff);
        let request = SendRequest::new(caller.clone(), SendInput::Candidates(vec![json!({})])).skill("echo");
        assert_eq!(kind(fixture.service.send_streaming(request).await), ErrorKind::StreamingOff);
        let page = fixture.service.list(&caller, &ListQuery::default()).await.expect("listed");
        assert!(page.tasks.is_empty(), "a refused streaming send starts no task");
        // A blocking send still works; its task cannot be subscribed to.
        let running = fixture.holding(caller.clone()).await;
        let subscribed = fixture.service.subscribe(&caller, &running.id, SubscribeFrom::Start).await;
        assert_eq!(kind(subscribed), ErrorKind::StreamingOff);
    }
}

mod list {
    use super::*;

    #[tokio::test]
    async fn a_list_shows_the_callers_tasks_only_newest_first() {
        let fixture = Fixture::new();
        let (mine, theirs) = (caller(), caller());
        let mut ids = Vec::new();
        for n in 0..3 {
            ids.push(fixture.settled(mine.clone(), "count", json!({"n": n})).await.id);
        }
        let other = fixture.settled(theirs.clone(), "echo", json!({})).await.id;

        let page = fixture.service.list(&mine, &ListQuery::default()).await.expect("list");
        assert_eq!(page.total, 3);
        assert!(!page.has_more);
        let listed: Vec<TaskId> = page.tasks.iter().map(|task| task.id.clone()).collect();
        let mut expected = ids.clone();
        expected.sort_by_key(|id| std::cmp::Reverse(fixture_created(&page, id)));
        assert_eq!(listed, expected);
        assert!(!listed.contains(&other));

        let page = fixture.service.list(&theirs, &ListQuery::default()).await.expect("list");
        assert_eq!(page.tasks.iter().map(|task| task.id.clone()).collect::<Vec<_>>(), vec![other]);
        let stranger = fixture.service.get(&theirs, &ids[0], None).await;
        assert_eq!(kind(stranger), ErrorKind::TaskNotFound);
    }

    /// A task's place in a list: newest first, ties broken by id (bytewise), descending.
    fn fixture_created(page: &TaskPage, id: &TaskId) -> (Millis, String) {
        let task = page.tasks.iter().find(|task| &task.id == id).expect("listed");
        (task.created_at, task.id.to_string())
    }

    #[tokio::test]
    async fn pages_visit_every_task_once() {
        let fixture = Fixture::new();
        let caller = caller();
        for n in 0..5 {
            fixture.settled(caller.clone(), "count", json!({"n": n})).await;
        }
        let mut query = ListQuery { limit: 2, ..ListQuery::default() };
        let mut seen = Vec::new();
        let mut pages = 0;
        loop {
            let page = fixture.service.list(&caller, &query).await.expect("list");
            pages += 1;
            assert_eq!(page.total, 5);
            assert!(page.tasks.len() <= 2);
            seen.extend(page.tasks.iter().map(|task| task.id.clone()));
            if !page.has_more {
                break;
            }
            query.page = PageStart::After(page.next.expect("where the next page starts"));
            assert!(pages < 5, "paging ends");
        }
        assert_eq!(pages, 3);
        let mut unique = seen.clone();
        unique.sort_by_key(ToString::to_string);
        unique.dedup();
        assert_eq!((seen.len(), unique.len()), (5, 5));
    }

    #[tokio::test]
    async fn a_page_stops_before_the_byte_budget() {
        let lists = accord_engine::task::ListLimits::default().max_page_bytes(1);
        let fixture = Fixture::with(ServiceConfig::default().lists(lists), Durability::Process);
        let caller = caller();
        for n in 0..2 {
            fixture.settled(caller.clone(), "count", json!({"n": n})).await;
        }
        let page = fixture.service.list_shaped(&caller, &ListQuery::default(), ListShape::default()).await;
        let page = page.expect("list");
        assert_eq!(page.tasks.len(), 1, "never empty, and no more than fits");
        assert!(page.has_more);
        assert_eq!(page.next.map(|next| next.id), Some(page.tasks[0].id.clone()));
    }

    #[tokio::test]
    async fn anonymous_callers_list_only_when_the_service_allows_it() {
        let fixture = Fixture::new();
        let anonymous = Caller::anonymous(AccessToken::generate().owner());
        fixture.settled(anonymous.clone(), "echo", json!({})).await;
        let refused = fixture.service.list(&anonymous, &ListQuery::default()).await;
        assert_eq!(kind(refused), ErrorKind::AnonymousNotAllowed);

        let config = ServiceConfig::default().anonymous(accord_engine::task::AnonymousAccess::ListShared);
        let fixture = Fixture::with(config, Durability::Process);
        fixture.settled(anonymous.clone(), "echo", json!({})).await;
        assert_eq!(fixture.service.list(&anonymous, &ListQuery::default()).await.expect("list").total, 1);
    }
}

mod cancel {
    use accord_engine::task::{OwnerHash, Reservation};
    use accord_engine::{BoxFuture, Handler, SkillError};
    use tokio::sync::mpsc;

    use super::*;

    /// Asks for input; saves `{"remote": "r-1"}` first unless its input is `"unsaved"`; says
    /// when it is told that a waiting task of its was cancelled.
    struct Remote(mpsc::UnboundedSender<Task>);

    impl Handler for Remote {
        fn call(&self, run: Run) -> BoxFuture<Result<Outcome, SkillError>> {
            Box::pin(async move {
                if run.message().is_some_and(|message| message.text() == "hold") {
                    run.cancelled().await;
                    return Ok(Completion::new(json!("cancelled")).into());
                }
                if run.input() != &json!("unsaved") {
                    run.save_state(json!({"remote": "r-1"})).await?;
                }
                Ok(Outcome::InputRequired(Message::agent_text("which one?")))
            })
        }

        fn waiting_task_cancelled(&self, task: Task) -> BoxFuture<()> {
            let told = self.0.clone();
            Box::pin(async move {
                let _ = told.send(task);
            })
        }
    }

    #[tokio::test]
    async fn a_waiting_task_cancelled_tells_its_handler_with_the_state_it_saved() {
        let (told, mut heard) = mpsc::unbounded_channel();
        let agent =
            Agent::builder("remote").skill(Skill::builder("remote").invoke(Remote(told))).build().expect("agent");
        let runtime = TaskRuntime::new(agent, Arc::new(MemoryStore::default()), RuntimeConfig::default());
        let service = TaskService::new(runtime, ServiceConfig::default());
        let caller = caller();
        let send = |input: Value| {
            let request = SendRequest::new(caller.clone(), SendInput::Candidates(vec![input])).skill("remote");
            service.send(request, Wait::Settled(SETTLE))
        };

        // Saved, then waiting: the cancel tells the handler once, with the task as cancelled.
        let waiting = send(json!("saved")).await.expect("sent");
        assert_eq!(waiting.state, TaskState::InputRequired);
        service.cancel(&caller, &waiting.id).await.expect("cancelled");
        let task = tokio::time::timeout(SETTLE, heard.recv()).await.expect("told in time").expect("told");
        assert_eq!((task.id.clone(), task.state), (waiting.id.clone(), TaskState::Canceled));
        assert_eq!(task.backend_state, Some(json!({"remote": "r-1"})));

        // Nothing saved, or a run in progress (it sees its own cancellation): not told.
        let unsaved = send(json!("unsaved")).await.expect("sent");
        service.cancel(&caller, &unsaved.id).await.expect("cancelled");
        let again = send(json!("saved")).await.expect("sent");
        let resumed = SendRequest::new(caller.clone(), SendInput::FromMessage)
            .message(user_text("hold"))
            .follow_up(again.id.clone());
        let running = service.send(resumed, Wait::Immediately).await.expect("resumed");
        assert_eq!(running.state, TaskState::Working);
        service.cancel(&caller, &again.id).await.expect("cancelled");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(heard.try_recv().is_err(), "told only of the waiting task that saved a state");
    }

    #[tokio::test]
    async fn a_running_task_is_cancelled_and_stays_so() {
        let fixture = Fixture::new();
        let caller = caller();
        let task = fixture.holding(caller.clone()).await;
        let cancelled = fixture.service.cancel(&caller, &task.id).await.expect("cancelled");
        assert_eq!(cancelled.state, TaskState::Canceled);
        // The handler's own end, which the cancellation let it reach, does not overwrite it.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let read = fixture.service.get(&caller, &task.id, None).await.expect("get");
        assert_eq!(read.state, TaskState::Canceled);
        assert!(read.result.is_none());
    }

    #[tokio::test]
    async fn an_ended_task_or_another_owners_is_not_cancelled() {
        let fixture = Fixture::new();
        let caller = caller();
        let done = fixture.settled(caller.clone(), "echo", json!({})).await;
        assert_eq!(kind(fixture.service.cancel(&caller, &done.id).await), ErrorKind::NotCancelable);
        let running = fixture.holding(caller.clone()).await;
        let stranger = fixture.service.cancel(&super::caller(), &running.id).await;
        assert_eq!(kind(stranger), ErrorKind::TaskNotFound);
        let still = fixture.service.get(&caller, &running.id, None).await.expect("get");
        assert_eq!(still.state, TaskState::Working);
        assert_eq!(kind(fixture.service.cancel(&caller, &TaskId::generate()).await), ErrorKind::TaskNotFound);
    }

    /// A runtime whose `watch` skill runs until it is cancelled, then says on `told` whether the
    /// server was stopping ([`Run::is_stopping`]); `started` is notified once it runs.
    fn watching(started: Arc<Notify>, told: mpsc::UnboundedSender<bool>) -> TaskRuntime {
        let watch = Skill::builder("watch").invoke(move |run: Run| {
            let (started, told) = (Arc::clone(&started), told.clone());
            async move {
                started.notify_one();
                run.cancelled().await;
                let _ = told.send(run.is_stopping());
                Ok(Completion::new(json!("stopped")).into())
            }
        });
        let agent = Agent::builder("watching").skill(watch).build().expect("agent");
        TaskRuntime::new(agent, Arc::new(MemoryStore::default()), RuntimeConfig::default())
    }

    /// A `watch` task started on `runtime`, once its handler runs, and its owner.
    async fn watched(runtime: &TaskRuntime, started: &Notify) -> (Task, OwnerHash) {
        let owner = AccessToken::generate().owner();
        let input = runtime.agent().skill("watch").expect("the skill").validate_input(json!({})).expect("input");
        let task = runtime.start(Reservation::new(owner, input)).await.expect("started");
        tokio::time::timeout(SETTLE, started.notified()).await.expect("the handler runs");
        (task, owner)
    }

    #[tokio::test]
    async fn a_run_its_caller_cancels_is_not_told_the_server_stops() {
        let started = Arc::new(Notify::new());
        let (told, mut stopping) = mpsc::unbounded_channel();
        let runtime = watching(Arc::clone(&started), told);
        let (task, owner) = watched(&runtime, &started).await;
        runtime.cancel(&task.id, &owner).await.expect("cancelled");
        let stopping = tokio::time::timeout(SETTLE, stopping.recv()).await.expect("the handler ends").expect("told");
        assert!(!stopping, "a caller's cancel is not the server stopping");
    }

    #[tokio::test]
    async fn a_run_the_closing_runtime_cancels_is_told_the_server_stops() {
        let started = Arc::new(Notify::new());
        let (told, mut stopping) = mpsc::unbounded_channel();
        let runtime = watching(Arc::clone(&started), told);
        watched(&runtime, &started).await;
        runtime.close().await;
        let stopping = tokio::time::timeout(SETTLE, stopping.recv()).await.expect("the handler ends").expect("told");
        assert!(stopping, "the runtime's close is the server stopping");
    }
}

/// Makes the memory store it taps say it is durable, so the paid start runs in-process.
struct SaysDurable;

impl Tap for SaysDurable {
    fn durability(&self, _inner: Durability) -> Durability {
        Durability::Durable
    }
}

mod paid {
    use super::*;

    /// How the test rail's settlement goes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Settles {
        Yes,
        Refused,
        Uncertain,
    }

    /// A payment flow that records each step the service takes, in order.
    #[derive(Debug)]
    struct TestPayment {
        accepts: bool,
        credential: bool,
        verifies: bool,
        settles: Settles,
        request: Option<Message>,
        steps: Vec<&'static str>,
    }

    impl TestPayment {
        fn paying() -> Self {
            Self {
                accepts: true,
                credential: true,
                verifies: true,
                settles: Settles::Yes,
                request: None,
                steps: Vec::new(),
            }
        }
    }

    #[async_trait]
    impl PaymentFlow for TestPayment {
        type Receipt = String;
        type Refusal = &'static str;

        fn accept(&mut self, skill: &Skill, amount: &str) -> Result<(), Self::Refusal> {
            self.steps.push("accept");
            assert_eq!((skill.key(), amount), ("paid", "5"));
            if self.accepts { Ok(()) } else { Err("not on this rail") }
        }

        fn has_credential(&self) -> bool {
            self.credential
        }

        async fn verify(&mut self) -> Result<(), Self::Refusal> {
            self.steps.push("verify");
            if self.verifies { Ok(()) } else { Err("bad signature") }
        }

        async fn settle(&mut self) -> Result<Self::Receipt, SettleFailure<Self::Receipt, Self::Refusal>> {
            self.steps.push("settle");
            match self.settles {
                Settles::Yes => Ok("receipt-1".into()),
                Settles::Refused => Err(SettleFailure::Refused("insufficient funds")),
                Settles::Uncertain => Err(SettleFailure::Uncertain("receipt-?".into())),
            }
        }

        async fn abort(&mut self) {
            self.steps.push("abort");
        }

        fn payment_request(&self) -> Option<Message> {
            self.request.clone()
        }

        fn payment_for(&mut self, task: &Task) {
            assert_eq!(task.state, TaskState::InputRequired);
            self.steps.push("payment_for");
        }
    }

    fn durable() -> Fixture {
        Fixture::with(ServiceConfig::default(), Durability::Durable)
    }

    fn paid_request(caller: Caller) -> SendRequest {
        SendRequest::new(caller, SendInput::Candidates(vec![json!({"item": 7})])).skill("paid")
    }

    async fn tasks_of(fixture: &Fixture, caller: &Caller) -> Vec<Task> {
        fixture.service.list(caller, &ListQuery::default()).await.expect("list").tasks
    }

    #[tokio::test]
    async fn a_paid_start_verifies_settles_then_runs_with_the_receipt() {
        let fixture = durable();
        let caller = caller();
        let mut payment = TestPayment::paying();
        let started = fixture.service.send_paid(paid_request(caller.clone()), &mut payment).await.expect("paid start");
        let PaidStart::Started { task, receipt } = started else { panic!("not started: {started:?}") };
        assert_eq!(receipt.as_deref(), Some("receipt-1"));
        assert_eq!(payment.steps, ["accept", "verify", "settle"]);
        let done = fixture.service.wait_for(&caller, task, Wait::Settled(SETTLE)).await.expect("settled");
        assert_eq!(done.state, TaskState::Completed);
        assert_eq!(done.result.expect("a result").output, json!({"paid_for": {"item": 7}}));
    }

    #[tokio::test]
    async fn without_a_credential_nothing_is_reserved() {
        let fixture = durable();
        let caller = caller();
        let mut payment = TestPayment { credential: false, ..TestPayment::paying() };
        let started = fixture.service.send_paid(paid_request(caller.clone()), &mut payment).await.expect("paid start");
        assert!(matches!(started, PaidStart::ChallengeNeeded), "{started:?}");
        assert_eq!(payment.steps, ["accept"]);
        assert!(tasks_of(&fixture, &caller).await.is_empty());
    }

    #[tokio::test]
    async fn a_rail_that_cannot_collect_refuses_before_anything_is_reserved() {
        let fixture = durable();
        let caller = caller();
        let mut payment = TestPayment { accepts: false, ..TestPayment::paying() };
        let started = fixture.service.send_paid(paid_request(caller.clone()), &mut payment).await.expect("paid start");
        assert!(matches!(started, PaidStart::Refused("not on this rail")), "{started:?}");
        assert!(tasks_of(&fixture, &caller).await.is_empty());
    }

    #[tokio::test]
    async fn a_refused_verification_or_settlement_charges_nothing_and_releases_the_reservation() {
        for (verifies, settles, steps) in [
            (false, Settles::Yes, &["accept", "verify"][..]),
            (true, Settles::Refused, &["accept", "verify", "settle"][..]),
        ] {
            let fixture = durable();
            let caller = caller();
            let mut payment = TestPayment { verifies, settles, ..TestPayment::paying() };
            let started =
                fixture.service.send_paid(paid_request(caller.clone()), &mut payment).await.expect("paid start");
            assert!(matches!(started, PaidStart::Refused(_)), "{started:?}");
            assert_eq!(payment.steps, steps);
            let tasks = tasks_of(&fixture, &caller).await;
            assert_eq!(tasks.len(), 1);
            assert_eq!(tasks[0].state, TaskState::Canceled, "the reservation is released, never run");
            assert!(tasks[0].result.is_none());
        }
    }

    #[tokio::test]
    async fn an_uncertain_settlement_ends_the_task_failed_and_keeps_the_receipt() {
        let fixture = durable();
        let caller = caller();
        let mut payment = TestPayment { settles: Settles::Uncertain, ..TestPayment::paying() };
        let started = fixture.service.send_paid(paid_request(caller), &mut payment).await.expect("paid start");
        let PaidStart::EndedAfterPayment { task, receipt } = started else { panic!("not ended: {started:?}") };
        assert_eq!(receipt, "receipt-?");
        assert_eq!(task.state, TaskState::Failed);
        assert_eq!(task.error.expect("an error").code, "settlement_uncertain");
        assert!(task.result.is_none(), "the skill never ran");
    }

    #[tokio::test]
    async fn paid_work_needs_a_durable_store() {
        let fixture = Fixture::new();
        let mut payment = TestPayment::paying();
        let refused = fixture.service.send_paid(paid_request(caller()), &mut payment).await;
        assert_eq!(kind(refused), ErrorKind::DurableStoreRequired);
        assert_eq!(payment.steps, ["accept"], "refused before any payment step");
    }

    #[tokio::test]
    async fn a_free_skill_starts_without_a_payment_and_bad_input_is_refused_first() {
        let fixture = durable();
        let caller = caller();
        let mut payment = TestPayment::paying();
        let free = SendRequest::new(caller.clone(), SendInput::Candidates(vec![json!({"n": 1})])).skill("count");
        let started = fixture.service.send_paid(free, &mut payment).await.expect("free start");
        let PaidStart::Started { task, receipt } = started else { panic!("not started: {started:?}") };
        assert!(receipt.is_none());
        assert_eq!(task.skill, "count");

        let invalid = SendRequest::new(caller, SendInput::Candidates(vec![json!({"n": "x"})])).skill("count");
        assert_eq!(kind(fixture.service.send_paid(invalid, &mut payment).await), ErrorKind::InvalidInput);
        assert!(payment.steps.is_empty(), "no payment step for a free skill or an invalid input");
    }

    #[tokio::test]
    async fn a_task_waiting_for_its_payment_runs_once_a_follow_up_pays() {
        let fixture = durable();
        let caller = caller();
        let request = Some(Message::agent_text("pay 5"));
        let mut asking = TestPayment { credential: false, request: request.clone(), ..TestPayment::paying() };
        let started = fixture.service.send_paid(paid_request(caller.clone()), &mut asking).await.expect("paid start");
        let PaidStart::AwaitingPayment { task } = started else { panic!("not awaiting: {started:?}") };
        assert_eq!(task.state, TaskState::InputRequired);
        assert_eq!(task.status_message.as_ref().map(Message::text).as_deref(), Some("pay 5"));

        // A follow-up without a credential leaves it waiting.
        let mut still_asking = TestPayment { credential: false, request, ..TestPayment::paying() };
        let again = fixture.service.send_paid(follow_up(caller.clone(), &task.id, "here"), &mut still_asking).await;
        assert!(matches!(again.expect("paid follow-up"), PaidStart::AwaitingPayment { .. }));
        assert_eq!(still_asking.steps, ["payment_for", "accept"]);

        let mut paying = TestPayment::paying();
        let paid = fixture.service.send_paid(follow_up(caller.clone(), &task.id, "paid"), &mut paying).await;
        let PaidStart::Started { task: running, receipt } = paid.expect("paid follow-up") else {
            panic!("not started")
        };
        assert_eq!(receipt.as_deref(), Some("receipt-1"));
        assert_eq!(paying.steps, ["payment_for", "accept", "verify", "settle"]);
        let done = fixture.service.wait_for(&caller, running, Wait::Settled(SETTLE)).await.expect("settled");
        assert_eq!(done.state, TaskState::Completed);
        assert_eq!(done.result.expect("a result").output, json!({"paid_for": {"item": 7}}), "the original input");
    }

    #[tokio::test]
    async fn a_refused_payment_for_a_waiting_task_ends_it_failed() {
        let fixture = durable();
        let caller = caller();
        let mut asking =
            TestPayment { credential: false, request: Some(Message::agent_text("pay")), ..TestPayment::paying() };
        let started = fixture.service.send_paid(paid_request(caller.clone()), &mut asking).await.expect("paid start");
        let PaidStart::AwaitingPayment { task } = started else { panic!("not awaiting: {started:?}") };

        let mut bad = TestPayment { verifies: false, ..TestPayment::paying() };
        let paid = fixture.service.send_paid(follow_up(caller, &task.id, "paid"), &mut bad).await;
        let PaidStart::PaymentFailed { task: failed, refusal } = paid.expect("paid follow-up") else {
            panic!("not failed")
        };
        assert_eq!(refusal, "bad signature");
        assert_eq!(failed.state, TaskState::Failed);
        assert_eq!(failed.error.expect("an error").code, "payment_refused");
        assert!(!bad.steps.contains(&"settle"));

        // A stranger's follow-up reads as a missing task.
        let mut payment = TestPayment::paying();
        let stranger = fixture.service.send_paid(follow_up(super::caller(), &task.id, "x"), &mut payment).await;
        assert_eq!(kind(stranger), ErrorKind::TaskNotFound);
    }
}

mod push {
    use super::*;

    fn config(id: &str) -> PushConfig {
        PushConfig { id: id.into(), url: format!("https://hooks.example/{id}"), token: None, authentication: None }
    }

    #[tokio::test]
    async fn push_configs_are_set_read_listed_and_deleted() {
        let fixture = Fixture::new();
        let caller = caller();
        let task = fixture.holding(caller.clone()).await;
        let service = &fixture.service;

        let kept = service.set_push_config(&caller, &task.id, config(""), DeliverFrom::Now).await.expect("set");
        assert!(!kept.id.is_empty(), "an id is generated");
        service.set_push_config(&caller, &task.id, config("b"), DeliverFrom::Now).await.expect("set");
        let mut replaced = config("b");
        replaced.url = "https://hooks.example/other".into();
        service.set_push_config(&caller, &task.id, replaced, DeliverFrom::Now).await.expect("replaced");

        let all = service.push_configs(&caller, &task.id).await.expect("list");
        assert_eq!(all.len(), 2);
        let b = service.push_config(&caller, &task.id, "b").await.expect("get");
        assert_eq!(b.url, "https://hooks.example/other");
        assert_eq!(service.push_config(&caller, &task.id, &kept.id).await.expect("get").url, kept.url);

        service.delete_push_config(&caller, &task.id, "b").await.expect("deleted");
        let gone = service.push_config(&caller, &task.id, "b").await.expect_err("deleted");
        assert_eq!((gone.kind(), gone.message()), (ErrorKind::PushConfigNotFound, "the task has no push config \"b\""));
        service.delete_push_config(&caller, &task.id, "b").await.expect("deleting again succeeds");
        assert_eq!(service.push_configs(&caller, &task.id).await.expect("list").len(), 1);
    }

    #[tokio::test]
    async fn another_owners_task_has_no_push_configs() {
        let fixture = Fixture::new();
        let (owner, stranger) = (caller(), caller());
        let task = fixture.holding(owner.clone()).await;
        let service = &fixture.service;
        service.set_push_config(&owner, &task.id, config("a"), DeliverFrom::Now).await.expect("set");

        let set = service.set_push_config(&stranger, &task.id, config("s"), DeliverFrom::Now).await;
        assert_eq!(kind(set), ErrorKind::TaskNotFound);
        assert_eq!(kind(service.push_configs(&stranger, &task.id).await), ErrorKind::TaskNotFound);
        assert_eq!(kind(service.push_config(&stranger, &task.id, "a").await), ErrorKind::TaskNotFound);
        assert_eq!(kind(service.delete_push_config(&stranger, &task.id, "a").await), ErrorKind::TaskNotFound);
        let missing = service.set_push_config(&owner, &TaskId::generate(), config("m"), DeliverFrom::Now).await;
        assert_eq!(kind(missing), ErrorKind::TaskNotFound);
        // The owner's config is untouched.
        let ids: Vec<String> =
            service.push_configs(&owner, &task.id).await.expect("list").into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["a"]);
    }

    #[tokio::test]
    async fn push_configs_are_bounded_in_number_and_size() {
        let fixture = Fixture::new();
        let caller = caller();
        let task = fixture.holding(caller.clone()).await;
        let service = &fixture.service;

        let mut url_less = config("u");
        url_less.url.clear();
        let refused = service.set_push_config(&caller, &task.id, url_less, DeliverFrom::Now).await;
        assert_eq!(kind(refused), ErrorKind::InvalidRequest);
        let long_id = config(&"i".repeat(129));
        assert_eq!(
            kind(service.set_push_config(&caller, &task.id, long_id, DeliverFrom::Now).await),
            ErrorKind::InvalidRequest
        );

        for n in 0..MAX_PUSH_CONFIGS_PER_TASK {
            service.set_push_config(&caller, &task.id, config(&format!("c{n}")), DeliverFrom::Now).await.expect("set");
        }
        let one_more = service.set_push_config(&caller, &task.id, config("extra"), DeliverFrom::Now).await;
        assert_eq!(kind(one_more), ErrorKind::InvalidRequest);
        service.set_push_config(&caller, &task.id, config("c0"), DeliverFrom::Now).await.expect("a replacement fits");
        assert_eq!(service.push_configs(&caller, &task.id).await.expect("list").len(), MAX_PUSH_CONFIGS_PER_TASK);
    }

    #[tokio::test]
    async fn a_send_registers_its_webhook_with_the_new_task() {
        let fixture = Fixture::new();
        let caller = caller();
        let request =
            SendRequest::new(caller.clone(), SendInput::Candidates(vec![json!({})])).skill("echo").push(config("w"));
        let task = fixture.service.send(request, Wait::Settled(SETTLE)).await.expect("sent");
        let configs = fixture.service.push_configs(&caller, &task.id).await.expect("list");
        assert_eq!(configs.into_iter().map(|c| c.url).collect::<Vec<_>>(), ["https://hooks.example/w"]);

        let mut bad = config("x");
        bad.url.clear();
        let request = SendRequest::new(caller.clone(), SendInput::Candidates(vec![json!({})])).skill("echo").push(bad);
        assert_eq!(kind(fixture.service.send(request, Wait::Immediately).await), ErrorKind::InvalidRequest);
        assert_eq!(
            fixture.service.list(&caller, &ListQuery::default()).await.expect("list").total,
            1,
            "no task for it"
        );
    }
}

/// A blocking send runs its new task's handler before the task is stored
/// (`TaskRuntime::start_inline`): what the store is asked to write, and what the caller gets.
mod inline {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use accord_engine::{Artifact, RunEvent};

    use super::*;

    /// What the store was asked to write: each create's entries after the first, and how many
    /// appends it took.
    #[derive(Default)]
    struct Writes {
        creates: Mutex<Vec<Vec<TaskEventKind>>>,
        refused_creates: AtomicUsize,
        appends: AtomicUsize,
    }

    /// The tap that counts into shared [`Writes`].
    struct Counting(Arc<Writes>);

    impl Tap for Counting {
        fn created(&self, then: &[TaskEventKind], accepted: bool) {
            if accepted {
                self.0.creates.lock().expect("creates").push(then.to_vec());
            } else {
                self.0.refused_creates.fetch_add(1, Ordering::SeqCst);
            }
        }

        fn appended(&self, _events: &[TaskEventKind], _worker: Option<&str>, accepted: bool) {
            if accepted {
                self.0.appends.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    impl Writes {
        fn creates(&self) -> Vec<Vec<TaskEventKind>> {
            self.creates.lock().expect("creates").clone()
        }

        fn appends(&self) -> usize {
            self.appends.load(Ordering::SeqCst)
        }
    }

    /// `echo` ends at once, `report` emits an artifact and then ends, `ask` waits for its caller,
    /// `linger` runs until released or cancelled (and says which), `big` returns an artifact
    /// beyond the budget of 256 bytes.
    struct Bench {
        service: TaskService,
        store: Arc<dyn TaskStore>,
        writes: Arc<Writes>,
        release: Arc<Notify>,
        cancelled: Arc<AtomicBool>,
    }

    fn text_artifact(id: &str, text: &str) -> Artifact {
        Artifact { artifact_id: id.into(), name: None, parts: vec![Part::Text(text.into())] }
    }

    impl Bench {
        fn new(window: Duration) -> Self {
            let release = Arc::new(Notify::new());
            let cancelled = Arc::new(AtomicBool::new(false));
            let echo = Skill::builder("echo")
                .invoke(|run: Run| async move { Ok(Completion::new(run.input().clone()).into()) });
            let report = Skill::builder("report").invoke(|run: Run| async move {
                let artifact = text_artifact("draft", "the draft");
                run.emit(RunEvent::Artifact { artifact, append: false, last_chunk: true }).await;
                Ok(Completion::new(json!("reported")).into())
            });
            let ask = Skill::builder("ask")
                .invoke(|_run: Run| async move { Ok(Outcome::InputRequired(Message::agent_text("say go"))) });
            let linger = {
                let (release, cancelled) = (Arc::clone(&release), Arc::clone(&cancelled));
                Skill::builder("linger").invoke(move |run: Run| {
                    let (release, cancelled) = (Arc::clone(&release), Arc::clone(&cancelled));
                    async move {
                        tokio::select! {
                            () = release.notified() => Ok(Completion::new(json!("released")).into()),
                            () = run.cancelled() => {
                                cancelled.store(true, Ordering::SeqCst);
                                Ok(Completion::new(json!("cancelled")).into())
                            }
                        }
                    }
                })
            };
            let big = Skill::builder("big").invoke(|_run: Run| async move {
                let artifacts = vec![text_artifact("huge", &"x".repeat(1024))];
                Ok(Completion { artifacts, ..Completion::new(json!("too much")) }.into())
            });
            let agent = Agent::builder("inline-tests")
                .skill(echo)
                .skill(report)
                .skill(ask)
                .skill(linger)
                .skill(big)
                .build()
                .expect("agent");
            let writes = Arc::new(Writes::default());
            let store: Arc<dyn TaskStore> =
                Arc::new(Wrapped::new(Arc::new(MemoryStore::default()), Counting(Arc::clone(&writes))));
            let config =
                RuntimeConfig::default().inline_window(window).max_active_per_owner(Some(1)).max_artifact_bytes(256);
            let runtime = TaskRuntime::new(agent, Arc::clone(&store), config);
            let service = TaskService::new(runtime, ServiceConfig::default());
            Self { service, store, writes, release, cancelled }
        }

        async fn send(&self, caller: Caller, skill: &str, wait: Wait) -> Result<Task, Error> {
            let request = SendRequest::new(caller, SendInput::Candidates(vec![json!({"say": skill})])).skill(skill);
            self.service.send(request, wait).await
        }

        /// A blocking send of `linger`, in a task of its own.
        fn lingering(self: &Arc<Self>, caller: Caller) -> tokio::task::JoinHandle<Result<Task, Error>> {
            let bench = Arc::clone(self);
            tokio::spawn(async move { bench.send(caller, "linger", Wait::Settled(SETTLE)).await })
        }

        /// The caller's first task in `state`, once the store lists one.
        async fn listed(&self, caller: &Caller, state: TaskState) -> Task {
            let found = tokio::time::timeout(SETTLE, async {
                loop {
                    let page = self.service.list(caller, &ListQuery::default()).await.expect("list");
                    if let Some(task) = page.tasks.into_iter().find(|task| task.state == state) {
                        return task;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
            found.await.unwrap_or_else(|_| panic!("no task was listed {state:?}"))
        }

        async fn log(&self, task: &Task, caller: &Caller) -> Vec<TaskEventKind> {
            let log = self.store.events_since(&task.id, caller.owner_hash(), 0).await.expect("log").expect("a log");
            log.into_iter().map(|event| event.kind).collect()
        }
    }

    fn states(events: &[TaskEventKind]) -> Vec<TaskState> {
        events.iter().filter_map(TaskEventKind::state).collect()
    }

    #[tokio::test]
    async fn a_fast_handler_has_its_task_written_once_already_ended() {
        let bench = Bench::new(Duration::from_secs(1));
        let caller = caller();
        let task = bench.send(caller.clone(), "echo", Wait::Settled(SETTLE)).await.expect("sent");
        assert_eq!(task.state, TaskState::Completed);
        assert_eq!(task.result.as_ref().map(|result| &result.output), Some(&json!({"say": "echo"})));
        let creates = bench.writes.creates();
        assert_eq!(creates.len(), 1, "one create");
        assert_eq!(states(&creates[0]), vec![TaskState::Working, TaskState::Completed], "holding the whole run");
        assert_eq!(bench.writes.appends(), 0, "and nothing after it");
        let read = bench.service.get(&caller, &task.id, None).await.expect("get");
        assert_eq!(read, task, "the answer is what was stored");
        assert_eq!(
            states(&bench.log(&task, &caller).await),
            vec![TaskState::Submitted, TaskState::Working, TaskState::Completed]
        );
    }

    #[tokio::test]
    async fn with_no_window_the_task_is_stored_before_its_handler_runs() {
        let bench = Bench::new(Duration::ZERO);
        let task = bench.send(caller(), "echo", Wait::Settled(SETTLE)).await.expect("sent");
        assert_eq!(task.state, TaskState::Completed);
        let creates = bench.writes.creates();
        assert_eq!(creates.iter().map(|then| states(then)).collect::<Vec<_>>(), vec![vec![TaskState::Working]]);
        assert_eq!(bench.writes.appends(), 1, "the end is a write of its own");
    }

    #[tokio::test]
    async fn a_send_that_does_not_wait_stores_its_task_first() {
        let bench = Bench::new(Duration::from_secs(1));
        let caller = caller();
        let task = bench.send(caller, "echo", Wait::Immediately).await.expect("sent");
        assert_eq!(task.state, TaskState::Working, "answered as soon as it runs");
        assert_eq!(states(&bench.writes.creates()[0]), vec![TaskState::Working]);
    }

    #[tokio::test]
    async fn what_a_fast_handler_emits_is_stored_in_order_with_its_end() {
        let bench = Bench::new(Duration::from_secs(1));
        let caller = caller();
        let task = bench.send(caller.clone(), "report", Wait::Settled(SETTLE)).await.expect("sent");
        assert_eq!(task.state, TaskState::Completed);
        assert_eq!(task.artifacts, vec![text_artifact("draft", "the draft")]);
        let log = bench.log(&task, &caller).await;
        assert!(matches!(log[2], TaskEventKind::Artifact { .. }), "the artifact before the end: {log:?}");
        assert!(matches!(log[3], TaskEventKind::Result { .. }), "{log:?}");
        assert_eq!((bench.writes.creates().len(), bench.writes.appends()), (1, 0));
    }

    #[tokio::test]
    async fn artifacts_beyond_the_budget_fail_the_task_in_its_one_write() {
        let bench = Bench::new(Duration::from_secs(1));
        let task = bench.send(caller(), "big", Wait::Settled(SETTLE)).await.expect("sent");
        assert_eq!(task.state, TaskState::Failed);
        assert_eq!(task.error.as_ref().map(|error| error.code.as_str()), Some("artifacts_too_large"));
        assert!(task.artifacts.is_empty(), "the artifact that did not fit is not stored");
        assert_eq!((bench.writes.creates().len(), bench.writes.appends()), (1, 0));
    }

    #[tokio::test]
    async fn a_handler_still_running_when_the_window_passes_is_stored_working_and_runs_on() {
        let bench = Arc::new(Bench::new(Duration::from_millis(20)));
        let caller = caller();
        let sending = bench.lingering(caller.clone());
        let stored = bench.listed(&caller, TaskState::Working).await;
        assert_eq!(bench.writes.appends(), 0);
        bench.release.notify_one();
        let task = sending.await.expect("joined").expect("sent");
        assert_eq!((task.id.clone(), task.state), (stored.id, TaskState::Completed));
        assert_eq!(task.result.map(|result| result.output), Some(json!("released")));
        assert_eq!((bench.writes.creates().len(), bench.writes.appends()), (1, 1), "created running, then ended");
        assert!(!bench.cancelled.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_task_whose_caller_goes_away_during_the_window_is_stored_and_runs_on() {
        let bench = Arc::new(Bench::new(Duration::from_secs(60)));
        let caller = caller();
        let sending = bench.lingering(caller.clone());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(bench.writes.creates().is_empty(), "still within its window");
        sending.abort();
        let stored = bench.listed(&caller, TaskState::Working).await;
        bench.release.notify_one();
        let ended = bench.listed(&caller, TaskState::Completed).await;
        assert_eq!(ended.id, stored.id);
        assert_eq!(ended.result.map(|result| result.output), Some(json!("released")), "its handler ran to its end");
        assert!(!bench.cancelled.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn the_owners_share_counts_what_is_stored_unfinished() {
        let bench = Bench::new(Duration::from_millis(20));
        let caller = caller();
        let held = bench.send(caller.clone(), "linger", Wait::Immediately).await.expect("the one place of the share");
        assert_eq!(held.state, TaskState::Working);

        let ended =
            bench.send(caller.clone(), "echo", Wait::Settled(SETTLE)).await.expect("an ended task takes no place");
        assert_eq!(ended.state, TaskState::Completed);
        let waiting = bench.send(caller.clone(), "ask", Wait::Settled(SETTLE)).await;
        assert_eq!(kind(waiting), ErrorKind::OwnerShareExhausted, "a task waiting for its caller takes a place");
        let running = bench.send(caller.clone(), "linger", Wait::Settled(SETTLE)).await;
        assert_eq!(kind(running), ErrorKind::OwnerShareExhausted, "so does one still running");
        assert_eq!(bench.writes.refused_creates.load(Ordering::SeqCst), 2);
        tokio::time::timeout(SETTLE, async {
            while !bench.cancelled.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the refused task's handler is told to stop");
        let page = bench.service.list(&caller, &ListQuery::default()).await.expect("list");
        let mut stored: Vec<_> = page.tasks.iter().map(|task| (task.id.clone(), task.state)).collect();
        stored.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        let mut expected = vec![(held.id, TaskState::Working), (ended.id, TaskState::Completed)];
        expected.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        assert_eq!(stored, expected, "nothing refused was stored");
    }
}

/// A skill's scope, held by the service for every way a task runs it (a new task, blocking or
/// not, streamed or not; a follow-up) and by the agent for direct runs.
mod scopes {
    use super::*;
    use accord_engine::RunError;
    use accord_engine::task::Scopes;

    const SCOPE: &str = "tasks:ask";

    /// The fixture's agent with `ask` and `echo` scoped, as a server gives them their scopes.
    fn scoped() -> TaskService {
        let agent = agent(Arc::new(Notify::new()))
            .with_skill_scope("ask", SCOPE)
            .and_then(|agent| agent.with_skill_scope("echo", SCOPE))
            .expect("both are skills");
        let runtime = TaskRuntime::new(agent, Arc::new(MemoryStore::default()), RuntimeConfig::default());
        TaskService::new(runtime, ServiceConfig::default())
    }

    fn granted(owner: &AccessToken) -> Caller {
        Caller::owner(owner.owner()).with_scopes(Scopes::new([SCOPE, "other:scope"]))
    }

    async fn listed(service: &TaskService, caller: &Caller) -> usize {
        service.list(caller, &ListQuery::default()).await.expect("a list").tasks.len()
    }

    fn ask(caller: Caller) -> SendRequest {
        SendRequest::new(caller, SendInput::Candidates(vec![json!({})])).skill("ask")
    }

    #[tokio::test]
    async fn a_new_task_needs_the_scope_and_nothing_is_stored_without_it() {
        let service = scoped();
        let token = AccessToken::generate();
        let bare = Caller::owner(token.owner());
        for wait in [Wait::Settled(SETTLE), Wait::Immediately] {
            let refused = service.send(ask(bare.clone()), wait).await;
            let error = refused.expect_err("refused without the scope");
            assert_eq!(error.kind(), ErrorKind::ScopeRequired);
            assert_eq!(error.message(), "scope 'tasks:ask' required for skill 'ask'");
        }
        assert_eq!(kind(service.send_streaming(ask(bare.clone())).await), ErrorKind::ScopeRequired);
        // Refused before its input is looked at: an invalid input is not reported to such a caller.
        let invalid = SendRequest::new(bare.clone(), SendInput::Candidates(vec![json!(5)])).skill("echo");
        assert_eq!(kind(service.send(invalid, Wait::Immediately).await), ErrorKind::ScopeRequired);
        assert_eq!(listed(&service, &bare).await, 0, "nothing was stored");
        // An anonymous caller never holds a scope, whatever it is given.
        let anonymous = Caller::anonymous(token.owner()).with_scopes(Scopes::new([SCOPE]));
        assert!(!anonymous.has_scope(SCOPE));
        assert_eq!(kind(service.send(ask(anonymous), Wait::Immediately).await), ErrorKind::ScopeRequired);
        let task = service.send(ask(granted(&token)), Wait::Settled(SETTLE)).await.expect("served with the scope");
        assert_eq!(task.state, TaskState::InputRequired);
        let echoed = SendRequest::new(granted(&token), SendInput::Candidates(vec![json!({"a": 1})])).skill("echo");
        let streamed = service.send_streaming(echoed).await.expect("a stream with the scope");
        assert!(streamed.snapshot.is_some());
        // A skill without a scope is open to everyone.
        let counted = SendRequest::new(bare, SendInput::Candidates(vec![json!({"n": 1})])).skill("count");
        assert_eq!(service.send(counted, Wait::Settled(SETTLE)).await.expect("open").state, TaskState::Completed);
    }

    #[tokio::test]
    async fn a_follow_up_needs_the_scope_too_and_the_waiting_task_is_left_as_it_was() {
        let service = scoped();
        let token = AccessToken::generate();
        let task = service.send(ask(granted(&token)), Wait::Settled(SETTLE)).await.expect("started");
        assert_eq!(task.state, TaskState::InputRequired);
        // The same owner, presenting fewer scopes now (a narrower token of the same subject).
        let narrower = Caller::owner(token.owner());
        let refused = service.send(follow_up(narrower.clone(), &task.id, "go"), Wait::Settled(SETTLE)).await;
        let error = refused.expect_err("refused without the scope");
        assert_eq!(error.kind(), ErrorKind::ScopeRequired);
        assert_eq!(error.task_id(), Some(&task.id));
        let unchanged = service.get(&narrower, &task.id, None).await.expect("still readable by its owner");
        assert_eq!((unchanged.state, unchanged.history.len()), (TaskState::InputRequired, task.history.len()));
        let done = service.send(follow_up(granted(&token), &task.id, "go"), Wait::Settled(SETTLE)).await;
        assert_eq!(done.expect("served with the scope").state, TaskState::Completed);
    }

    #[tokio::test]
    async fn direct_runs_need_the_scope() {
        let service = scoped();
        let agent = service.agent();
        let token = AccessToken::generate();
        let bare = Caller::owner(token.owner());
        let expected = RunError::ScopeRequired { key: "echo".into(), scope: SCOPE.into() };
        assert_eq!(agent.invocable("echo", &bare).map(|_| ()), Err(expected.clone()));
        // A skill that cannot stream says so first.
        assert!(matches!(agent.streamable("ask", &bare), Err(RunError::NotStreamable { .. })));
        assert!(agent.invocable("echo", &granted(&token)).is_ok());
        assert_eq!(agent.skill("echo").expect("echo").scope(), Some(SCOPE));
        assert_eq!(agent.skill("count").expect("count").scope(), None);
    }

    #[test]
    fn a_scope_is_set_on_a_skill_the_agent_has_and_an_empty_one_removes_it() {
        let agent = agent(Arc::new(Notify::new()));
        let error = agent.with_skill_scope("nosuch", SCOPE).expect_err("no such skill");
        assert!(error.to_string().contains("\"nosuch\""), "{error}");
        let scoped = agent.with_skill_scope("echo", SCOPE).expect("echo");
        assert_eq!(scoped.skill("echo").expect("echo").scope(), Some(SCOPE));
        assert_eq!(agent.skill("echo").expect("echo").scope(), None, "the agent it was made from is unchanged");
        let open = scoped.with_skill_scope("echo", "").expect("echo");
        assert_eq!(open.skill("echo").expect("echo").scope(), None);
        let built = Agent::builder("built")
            .skill(Skill::builder("s").scope(SCOPE).invoke(|_run: Run| async { Ok(Completion::new(json!(1)).into()) }))
            .build()
            .expect("agent");
        assert_eq!(built.skill("s").expect("s").scope(), Some(SCOPE));
    }
}

/// What a handler emits while it runs reaches the task's log: text deltas as the chunks of one
/// streamed artifact, progress as `working` status updates with their message, coalesced.
mod progress {
    use super::*;
    use accord_engine::RunEvent;
    use accord_engine::task::STREAM_ARTIFACT_ID;

    /// `chatty` says progress, streams three deltas a little apart, then completes.
    fn service(interval: Duration) -> TaskService {
        let chatty = Skill::builder("chatty").invoke(|run: Run| async move {
            for step in 1..=3 {
                let message = Some(Message::agent_text(format!("step {step} of 3")));
                run.emit(RunEvent::Status { state: TaskState::Working, message }).await;
                run.emit(RunEvent::Delta { delta: format!("part {step}. "), mime: None, is_final: step == 3 }).await;
                tokio::time::sleep(Duration::from_millis(60)).await;
            }
            Ok(Completion::new(json!("done")).into())
        });
        let burst = Skill::builder("burst").invoke(|run: Run| async move {
            for n in 0..500 {
                run.emit(RunEvent::Delta { delta: format!("{n} "), mime: None, is_final: false }).await;
                run.emit(RunEvent::Status {
                    state: TaskState::Working,
                    message: Some(Message::agent_text(format!("{n}"))),
                })
                .await;
            }
            Ok(Completion::new(json!("burst")).into())
        });
        let agent = Agent::builder("progress").skill(chatty).skill(burst).build().expect("agent");
        let config = RuntimeConfig::default().progress_interval(interval);
        TaskService::new(TaskRuntime::new(agent, Arc::new(MemoryStore::default()), config), ServiceConfig::default())
    }

    fn chunks(events: &[TaskEvent]) -> Vec<(String, String, bool, bool)> {
        events
            .iter()
            .filter_map(|event| match &event.kind {
                TaskEventKind::Artifact { artifact, append, last_chunk } => {
                    let text: String = artifact
                        .parts
                        .iter()
                        .map(|part| match part {
                            Part::Text(text) => text.as_str(),
                            _ => "",
                        })
                        .collect();
                    Some((artifact.artifact_id.clone(), text, *append, *last_chunk))
                }
                _ => None,
            })
            .collect()
    }

    fn progress_messages(events: &[TaskEvent]) -> Vec<String> {
        events
            .iter()
            .filter_map(|event| match &event.kind {
                TaskEventKind::Status { state: TaskState::Working, message: Some(message) } => Some(message.text()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn deltas_are_chunks_of_one_streamed_artifact_and_progress_is_working_updates_before_the_end() {
        let service = service(Duration::from_millis(10));
        let caller = caller();
        let streamed = SendRequest::new(caller.clone(), SendInput::Candidates(vec![json!({})])).skill("chatty");
        let updates = service.send_streaming(streamed).await.expect("a stream");
        let events = collect(updates.events).await;
        let chunks = chunks(&events);
        assert_eq!(chunks.len(), 3, "one chunk a delta, as they came apart: {chunks:?}");
        assert_eq!(
            chunks,
            [
                (STREAM_ARTIFACT_ID.to_owned(), "part 1. ".to_owned(), false, false),
                (STREAM_ARTIFACT_ID.to_owned(), "part 2. ".to_owned(), true, false),
                (STREAM_ARTIFACT_ID.to_owned(), "part 3. ".to_owned(), true, true),
            ]
        );
        assert_eq!(progress_messages(&events), ["step 1 of 3", "step 2 of 3", "step 3 of 3"]);
        let ended = events.iter().position(|event| event.kind.state().is_some_and(TaskState::is_terminal));
        let last_chunk = events.iter().rposition(|event| matches!(event.kind, TaskEventKind::Artifact { .. }));
        assert!(last_chunk < ended, "the chunks come before the end: {last_chunk:?} {ended:?}");
        // The task holds the artifact whole, once.
        let task = service.get(&caller, &events[0].task_id, None).await.expect("the task");
        assert_eq!(task.state, TaskState::Completed);
        let streams: Vec<_> = task.artifacts.iter().filter(|a| a.artifact_id == STREAM_ARTIFACT_ID).collect();
        assert_eq!(streams.len(), 1);
        let whole: String = streams[0]
            .parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => text.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(whole, "part 1. part 2. part 3. ");
    }

    #[tokio::test]
    async fn a_burst_of_progress_is_coalesced_and_loses_no_text() {
        let service = service(Duration::from_millis(100));
        let caller = caller();
        let task = service
            .send(
                SendRequest::new(caller.clone(), SendInput::Candidates(vec![json!({})])).skill("burst"),
                Wait::Settled(SETTLE),
            )
            .await
            .expect("sent");
        assert_eq!(task.state, TaskState::Completed);
        let log = collect(service.subscribe(&caller, &task.id, SubscribeFrom::Start).await.expect("log").events).await;
        let chunks = chunks(&log);
        let text: String = chunks.iter().map(|(_, text, _, _)| text.as_str()).collect();
        let expected: String = (0..500).map(|n| format!("{n} ")).collect();
        assert_eq!(text, expected, "every delta's text, in order");
        assert!(chunks.len() < 50, "1,000 emissions make few writes: {} chunks", chunks.len());
        let updates = progress_messages(&log);
        assert!(!updates.is_empty() && updates.len() < 50, "{} progress updates", updates.len());
        assert_eq!(updates.last().map(String::as_str), Some("499"), "the latest update is kept");
    }
}
