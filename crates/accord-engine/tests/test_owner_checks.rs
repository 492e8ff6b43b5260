//! Refusing a caller who does not own a task does the same work whether the task exists or not:
//! the runtime reads only the task's owner (compared in constant time, against a stand-in for a
//! missing task) and never the record of a task that is not the caller's — so how long a refusal
//! takes tells neither that the task exists nor how large it is. (The timing itself is measured by
//! `scripts/timing-probe`, not asserted here.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use accord_engine::task::{
    AccessToken, MemoryStore, Reservation, RuntimeConfig, TaskFailure, TaskId, TaskRuntime, TaskStore,
};
use accord_engine::{Agent, Completion, Message, Outcome, Run, Skill, TaskState};
use accord_test_support::{Tap, Wrapped};

/// Counts how many whole records are read from the store it taps.
#[derive(Default)]
struct RecordsRead(AtomicUsize);

impl Tap for RecordsRead {
    fn reading_record(&self, _id: &TaskId) {
        self.0.fetch_add(1, Ordering::SeqCst);
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
    let store = Arc::new(Wrapped::new(Arc::new(MemoryStore::default()), RecordsRead::default()));
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

    let read_before = store.tap().0.load(Ordering::SeqCst);
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
    assert_eq!(store.tap().0.load(Ordering::SeqCst), read_before, "no record read for a refusal");

    // The owner is not refused, and reading the task reads its record.
    assert_eq!(runtime.get(&existing, &owner).await.expect("the owner's task").state, TaskState::InputRequired);
    assert!(store.tap().0.load(Ordering::SeqCst) > read_before);
    // A missing task is owned by nobody, not even by the stand-in the comparison uses for it.
    assert!(!owner.owns(None));
}
