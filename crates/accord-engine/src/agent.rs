//! The agent: its identity, its skills, and running them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{BuildError, RunError};
use crate::run::{Completion, EndStatus, EventSink, Invocation, Outcome, Run, RunEnd, RunEvent, RunStream};
use crate::skill::{Handler, Skill, SkillBuilder, SkillError, ValidInput};

/// An agent: a name, a version, a description and a set of skills.
///
/// Cheap to clone; clones share the same skills.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

struct AgentInner {
    name: String,
    version: String,
    description: Option<String>,
    skills: Vec<Arc<Skill>>,
    by_key: HashMap<Arc<str>, usize>,
    card_fields: Map<String, Value>,
    cancel_grace: Duration,
    stream_buffer: usize,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.inner.name)
            .field("version", &self.inner.version)
            .field("skills", &self.inner.skills)
            .finish_non_exhaustive()
    }
}

/// Card fields the card builder writes itself (some only when a face asks for them);
/// [`AgentBuilder::card_field`] cannot set them.
const CARD_FIELDS: &[&str] = &[
    "protocolVersion",
    "name",
    "description",
    "url",
    "preferredTransport",
    "supportedInterfaces",
    "version",
    "capabilities",
    "defaultInputModes",
    "defaultOutputModes",
    "skills",
    "signatures",
    "supportsAuthenticatedExtendedCard",
    "entrypoints",
    "payments",
];

/// Builds an [`Agent`].
#[must_use]
pub struct AgentBuilder {
    name: String,
    version: String,
    description: Option<String>,
    skills: Vec<SkillBuilder>,
    card_fields: Map<String, Value>,
    cancel_grace: Duration,
    stream_buffer: usize,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder").field("name", &self.name).finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// The agent's name, in place of the one it was started with (an agent file that fronts a
    /// remote agent takes its name from the remote card once it is read).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The agent's version (default `1.0.0`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// What the agent does.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds a skill.
    pub fn skill(mut self, skill: SkillBuilder) -> Self {
        self.skills.push(skill);
        self
    }

    /// Adds a field to the published card (`provider`, `iconUrl`, `documentationUrl`, …). Fields
    /// the engine writes itself are refused by [`AgentBuilder::build`].
    pub fn card_field(mut self, name: impl Into<String>, value: Value) -> Self {
        self.card_fields.insert(name.into(), value);
        self
    }

    /// How long a cancelled handler may go on before it is aborted (default 5 s). Handlers that
    /// watch [`Run::cancelled`] stop sooner.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// How many stream events may wait for a slow reader before the handler's `emit` waits
    /// (default 64).
    pub fn stream_buffer(mut self, events: usize) -> Self {
        self.stream_buffer = events.max(1);
        self
    }

    /// Checks everything and builds the agent.
    pub fn build(self) -> Result<Agent, BuildError> {
        if self.name.trim().is_empty() {
            return Err(BuildError::InvalidAgent { reason: "the name is empty".into() });
        }
        if let Some(field) = self.card_fields.keys().find(|field| CARD_FIELDS.contains(&field.as_str())) {
            return Err(BuildError::InvalidAgent {
                reason: format!("card field {field:?} is written by the card builder and cannot be set"),
            });
        }
        let mut skills = Vec::with_capacity(self.skills.len());
        let mut by_key = HashMap::new();
        for builder in self.skills {
            let skill = Arc::new(builder.build()?);
            if by_key.insert(Arc::clone(&skill.key), skills.len()).is_some() {
                return Err(BuildError::DuplicateSkill { key: skill.key.to_string() });
            }
            skills.push(skill);
        }
        Ok(Agent {
            inner: Arc::new(AgentInner {
                name: self.name,
                version: self.version,
                description: self.description,
                skills,
                by_key,
                card_fields: self.card_fields,
                cancel_grace: self.cancel_grace,
                stream_buffer: self.stream_buffer,
            }),
        })
    }
}

impl Agent {
    /// Starts building an agent.
    pub fn builder(name: impl Into<String>) -> AgentBuilder {
        AgentBuilder {
            name: name.into(),
            version: "1.0.0".into(),
            description: None,
            skills: Vec::new(),
            card_fields: Map::new(),
            cancel_grace: Duration::from_secs(5),
            stream_buffer: 64,
        }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The version.
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// The description.
    pub fn description(&self) -> Option<&str> {
        self.inner.description.as_deref()
    }

    /// The skills, in the order they were added.
    pub fn skills(&self) -> &[Arc<Skill>] {
        &self.inner.skills
    }

    /// The same agent with skill `key` requiring `scope` of its callers on every face
    /// ([`Skill::permits`]; it replaces a scope the skill was built with). The agent it is called
    /// on is unchanged: give the new one to the runtime and the server. An empty scope removes
    /// the requirement.
    pub fn with_skill_scope(&self, key: &str, scope: &str) -> Result<Agent, BuildError> {
        let index = *self.inner.by_key.get(key).ok_or_else(|| BuildError::InvalidAgent {
            reason: format!("a scope is set for skill {key:?}, which the agent does not have"),
        })?;
        let mut skill = Skill::clone(&self.inner.skills[index]);
        skill.scope = if scope.is_empty() { None } else { Some(scope.into()) };
        let mut skills = self.inner.skills.clone();
        skills[index] = Arc::new(skill);
        Ok(Agent {
            inner: Arc::new(AgentInner {
                name: self.inner.name.clone(),
                version: self.inner.version.clone(),
                description: self.inner.description.clone(),
                skills,
                by_key: self.inner.by_key.clone(),
                card_fields: self.inner.card_fields.clone(),
                cancel_grace: self.inner.cancel_grace,
                stream_buffer: self.inner.stream_buffer,
            }),
        })
    }

    /// Looks a skill up by key.
    pub fn skill(&self, key: &str) -> Result<&Arc<Skill>, RunError> {
        self.inner
            .by_key
            .get(key)
            .map(|&index| &self.inner.skills[index])
            .ok_or_else(|| RunError::UnknownSkill { key: key.to_owned() })
    }

    /// The fields added with [`AgentBuilder::card_field`], published on the card as given.
    pub fn card_fields(&self) -> &Map<String, Value> {
        &self.inner.card_fields
    }

    /// Runs a skill directly and waits for its output.
    ///
    /// Dropping the returned future cancels the run: the handler, which runs in a task of its
    /// own, sees [`Run::cancelled`] and has the agent's cancel grace to wind down. Must be called
    /// within a Tokio runtime.
    pub async fn invoke(&self, valid: ValidInput) -> Result<Invocation, RunError> {
        let handler =
            valid.skill.invoke.clone().ok_or_else(|| RunError::NotInvocable { key: valid.skill.key().to_owned() })?;
        let cancel = CancellationToken::new();
        let _cancel_on_drop = cancel.clone().drop_guard();
        let run = Run {
            run_id: uuid::Uuid::new_v4().to_string().into(),
            skill: Arc::clone(&valid.skill.key),
            input: Arc::new(valid.input),
            cancel,
            stopping: None,
            sink: None,
            task: None,
            owner: None,
            pseudonym: std::sync::OnceLock::new(),
            saver: None,
        };
        let run_id = run.run_id.to_string();
        let agent = self.clone();
        let skill = valid.skill;
        // Spawned, so that a caller that goes away leaves the handler its grace rather than
        // dropping it mid-step; a panic is caught inside `execute`, so the join fails only when
        // the runtime shuts down.
        let completion = match tokio::spawn(async move { agent.execute(&skill, handler, run).await }).await {
            Ok(result) => result?,
            Err(_shut_down) => return Err(RunError::Cancelled),
        };
        Ok(Invocation { run_id, completion })
    }

    /// Starts a skill as a stream of events, from [`RunEvent::RunStart`] to [`RunEvent::End`].
    ///
    /// A handler failure arrives as an [`RunEvent::Error`] followed by a failed end. Dropping the
    /// stream cancels the run. Must be called within a Tokio runtime.
    pub fn stream(&self, valid: ValidInput) -> Result<RunStream, RunError> {
        let handler =
            valid.skill.stream.clone().ok_or_else(|| RunError::NotStreamable { key: valid.skill.key().to_owned() })?;
        let (sender, frames) = mpsc::channel(self.inner.stream_buffer);
        let sink = Arc::new(EventSink::new(sender));
        let cancel = CancellationToken::new();
        let run_id: Arc<str> = uuid::Uuid::new_v4().to_string().into();
        let run = Run {
            run_id: Arc::clone(&run_id),
            skill: Arc::clone(&valid.skill.key),
            input: Arc::new(valid.input),
            cancel: cancel.clone(),
            stopping: None,
            sink: Some(Arc::clone(&sink)),
            task: None,
            owner: None,
            pseudonym: std::sync::OnceLock::new(),
            saver: None,
        };
        let agent = self.clone();
        let skill = valid.skill;
        tokio::spawn(async move {
            sink.send(RunEvent::RunStart).await;
            let result = agent.execute(&skill, handler, run).await;
            let end = match result {
                Ok(completion) => {
                    RunEnd { status: EndStatus::Succeeded, completion: Some(completion), error: None, message: None }
                }
                Err(RunError::Cancelled) => {
                    RunEnd { status: EndStatus::Cancelled, completion: None, error: None, message: None }
                }
                Err(RunError::Incomplete { status, message }) => {
                    RunEnd { status, completion: None, error: None, message }
                }
                Err(other) => {
                    let error = skill_error_of(other);
                    sink.send(RunEvent::Error(error.clone())).await;
                    RunEnd { status: EndStatus::Failed, completion: None, error: Some(error), message: None }
                }
            };
            sink.send(RunEvent::End(Box::new(end))).await;
        });
        Ok(RunStream { run_id, frames, _cancel_on_drop: cancel.drop_guard() })
    }

    /// Runs a skill's invoke handler for a task: the run id is the task id, the handler sees the
    /// task, the caller owns the cancellation token, `stopping` fires when the server stops
    /// ([`Run::is_stopping`]), events go to `sink` and a saved state to `saver`
    /// ([`Run::save_state`]).
    pub(crate) async fn run_for_task(
        &self,
        valid: ValidInput,
        task: Arc<crate::model::Task>,
        owner: &crate::task::OwnerHash,
        cancel: CancellationToken,
        stopping: CancellationToken,
        (sink, saver): (Arc<EventSink>, crate::run::StateSaver),
    ) -> Result<Completion, RunError> {
        let handler =
            valid.skill.invoke.clone().ok_or_else(|| RunError::NotInvocable { key: valid.skill.key().to_owned() })?;
        let run = Run {
            run_id: task.id.as_str().into(),
            skill: Arc::clone(&valid.skill.key),
            input: Arc::new(valid.input),
            cancel,
            stopping: Some(stopping),
            sink: Some(sink),
            task: Some(task),
            owner: Some(*owner),
            pseudonym: std::sync::OnceLock::new(),
            saver: Some(saver),
        };
        self.execute(&valid.skill, handler, run).await
    }

    /// Runs a handler (a panic in it is caught and becomes an internal error), drops it once the
    /// run has been cancelled for longer than the grace period, and checks its output.
    ///
    /// The handler is polled in the caller's task: catching the unwind contains a panic as a
    /// spawned task would. A caller whose own future may be dropped before the run ends (a
    /// direct invoke) spawns this, so that the handler still gets its grace.
    async fn execute(&self, skill: &Skill, handler: Arc<dyn Handler>, run: Run) -> Result<Completion, RunError> {
        use futures_util::FutureExt as _;
        let cancel = run.cancel.clone();
        let grace = self.inner.cancel_grace;
        // The handler's future is owned here and dropped on every path, never shared after a
        // panic: asserting unwind safety is sound.
        let call = std::panic::AssertUnwindSafe(handler.call(run)).catch_unwind();
        let result = tokio::select! {
            result = call => match result {
                Ok(result) => Some(result),
                Err(_panic) => {
                    tracing::error!(skill = %skill.key, "skill handler panicked");
                    Some(Err(SkillError::internal("the skill handler panicked")))
                }
            },
            () = async { cancel.cancelled().await; tokio::time::sleep(grace).await } => None,
        };
        // No result after a cancellation overrides it.
        if cancel.is_cancelled() {
            return Err(RunError::Cancelled);
        }
        match result {
            None => Err(RunError::Cancelled),
            Some(Err(error)) => Err(RunError::Failed(error)),
            Some(Ok(Outcome::Completed(completion))) => {
                skill.check_output(&completion.output).map_err(|issues| RunError::InvalidOutput { issues })?;
                Ok(completion)
            }
            Some(Ok(Outcome::InputRequired(message))) => {
                Err(RunError::Incomplete { status: EndStatus::InputRequired, message: Some(message) })
            }
            Some(Ok(Outcome::AuthRequired(message))) => {
                Err(RunError::Incomplete { status: EndStatus::AuthRequired, message: Some(message) })
            }
            Some(Ok(Outcome::Rejected(message))) => {
                Err(RunError::Incomplete { status: EndStatus::Rejected, message: Some(message) })
            }
            Some(Ok(Outcome::Reply(message))) => {
                let completion = Completion::from_reply(message);
                skill.check_output(&completion.output).map_err(|issues| RunError::InvalidOutput { issues })?;
                Ok(completion)
            }
        }
    }
}

/// The error a failed run reports to a stream.
fn skill_error_of(error: RunError) -> SkillError {
    match error {
        RunError::Failed(error) => error,
        RunError::InvalidOutput { issues } => SkillError {
            code: "invalid_output".into(),
            message: "the skill's output does not match its output schema".into(),
            retryable: None,
            details: serde_json::to_value(issues).ok(),
        },
        other => SkillError::internal(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use serde_json::json;

    fn agent() -> Agent {
        Agent::builder("t")
            .skill(
                Skill::builder("double")
                    .input_schema(
                        json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}),
                    )
                    .output_schema(json!({"type": "object", "required": ["n"]}))
                    .handler(|run: Run| async move {
                        let n = run.input()["n"].as_i64().unwrap_or_default();
                        if n < 0 {
                            return Err(SkillError::new("negative", "n is negative"));
                        }
                        if n == 0 {
                            return Ok(Outcome::Completed(Completion::new(json!({"wrong": true}))));
                        }
                        run.emit(RunEvent::Delta { delta: "half".into(), mime: None, is_final: false }).await;
                        Ok(Outcome::Completed(Completion::new(json!({"n": n * 2}))))
                    }),
            )
            .skill(Skill::builder("boom").invoke(|_run: Run| async move {
                if true {
                    panic!("boom");
                }
                Ok(Outcome::Completed(Completion::default()))
            }))
            .build()
            .expect("agent")
    }

    #[tokio::test]
    async fn invoke_validates_input_runs_and_checks_output() {
        let agent = agent();
        let skill = agent.skill("double").expect("skill");
        let invocation = agent.invoke(skill.validate_input(json!({"n": 2})).expect("valid")).await.expect("ok");
        assert_eq!(invocation.completion.output, json!({"n": 4}));
        match skill.validate_input(json!({"n": "x"})) {
            Err(RunError::InvalidInput { issues }) => {
                assert_eq!(issues[0].path, vec![json!("n")]);
                assert_eq!(issues[0].code, "type");
            }
            other => panic!("expected invalid input, got {other:?}"),
        }
        let failed = agent.invoke(skill.validate_input(json!({"n": -1})).expect("valid")).await;
        assert_eq!(failed, Err(RunError::Failed(SkillError::new("negative", "n is negative"))));
        let invalid = agent.invoke(skill.validate_input(json!({"n": 0})).expect("valid")).await;
        assert!(matches!(invalid, Err(RunError::InvalidOutput { .. })), "{invalid:?}");
    }

    #[tokio::test]
    async fn a_panicking_handler_is_a_failed_run() {
        let agent = agent();
        let skill = agent.skill("boom").expect("skill");
        let result = agent.invoke(skill.validate_input(json!({})).expect("valid")).await;
        assert!(matches!(result, Err(RunError::Failed(ref e)) if e.code == "internal_error"), "{result:?}");
        assert!(matches!(
            agent.stream(skill.validate_input(json!({})).expect("v")),
            Err(RunError::NotStreamable { .. })
        ));
    }

    /// The runtime that runs the handler shuts down under a pending `invoke`: the caller gets
    /// `Cancelled`, not a hang or a panic.
    #[test]
    fn an_invoke_whose_runtime_shuts_down_ends_cancelled() {
        let (started, handler_started) = std::sync::mpsc::channel::<()>();
        let started = std::sync::Mutex::new(Some(started));
        let agent = Agent::builder("t")
            .skill(Skill::builder("hang").invoke(move |_run: Run| {
                let started = started.lock().expect("lock").take();
                async move {
                    if let Some(started) = started {
                        let _ = started.send(());
                    }
                    std::future::pending::<()>().await;
                    Ok(Outcome::Completed(Completion::default()))
                }
            }))
            .build()
            .expect("agent");
        let valid = agent.skill("hang").expect("skill").validate_input(json!({})).expect("valid");
        // The handler is spawned on the runtime current when `invoke` is first polled: this one,
        // shut down from another thread once the handler runs. The caller's runtime goes on.
        let handlers = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().expect("a runtime");
        let handlers_handle = handlers.handle().clone();
        let stopper = std::thread::spawn(move || {
            handler_started.recv().expect("the handler starts");
            handlers.shutdown_background();
        });
        let caller = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let result = caller.block_on(async {
            let _spawn_there = handlers_handle.enter();
            agent.invoke(valid).await
        });
        stopper.join().expect("the runtime is shut down");
        assert!(matches!(result, Err(RunError::Cancelled)), "{result:?}");
    }

    #[tokio::test]
    async fn a_dropped_invoke_cancels_its_handler_which_sees_the_cancellation() {
        let (told, heard) = tokio::sync::oneshot::channel::<()>();
        let told = std::sync::Mutex::new(Some(told));
        let agent = Agent::builder("t")
            .skill(Skill::builder("wait").invoke(move |run: Run| {
                let told = told.lock().expect("lock").take();
                async move {
                    run.cancelled().await;
                    // Wind-down work after the cancellation: only a handler that is still
                    // polled gets here.
                    tokio::task::yield_now().await;
                    if let Some(told) = told {
                        let _ = told.send(());
                    }
                    Err(SkillError::new("cancelled", "cancelled"))
                }
            }))
            .build()
            .expect("agent");
        let valid = agent.skill("wait").expect("skill").validate_input(json!({})).expect("valid");
        let invoking = tokio::spawn({
            let agent = agent.clone();
            async move { agent.invoke(valid).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        invoking.abort();
        tokio::time::timeout(Duration::from_secs(10), heard)
            .await
            .expect("the handler winds down within the grace")
            .expect("the handler saw its cancellation");
    }

    #[tokio::test]
    async fn stream_frames_are_numbered_from_start_to_end() {
        let agent = agent();
        let skill = agent.skill("double").expect("skill");
        let frames: Vec<_> =
            agent.stream(skill.validate_input(json!({"n": 1})).expect("valid")).expect("stream").collect().await;
        let sequences: Vec<u64> = frames.iter().map(|frame| frame.sequence).collect();
        assert_eq!(sequences, vec![0, 1, 2]);
        assert_eq!(frames[0].event, RunEvent::RunStart);
        assert!(matches!(&frames[2].event, RunEvent::End(end) if end.status == EndStatus::Succeeded));

        let failed: Vec<_> =
            agent.stream(skill.validate_input(json!({"n": -1})).expect("valid")).expect("stream").collect().await;
        assert!(matches!(&failed[1].event, RunEvent::Error(error) if error.code == "negative"));
        assert!(matches!(&failed[2].event, RunEvent::End(end) if end.status == EndStatus::Failed));
    }

    #[test]
    fn build_refuses_bad_agents() {
        let dup = Agent::builder("t")
            .skill(Skill::builder("a").invoke(|_run: Run| async { Ok(Outcome::Completed(Completion::default())) }))
            .skill(Skill::builder("a").invoke(|_run: Run| async { Ok(Outcome::Completed(Completion::default())) }))
            .build();
        assert!(matches!(dup, Err(BuildError::DuplicateSkill { .. })));
        assert!(matches!(Agent::builder("t").skill(Skill::builder("a")).build(), Err(BuildError::NoHandler { .. })));
        let reserved = Agent::builder("t").card_field("skills", json!([])).build();
        assert!(matches!(reserved, Err(BuildError::InvalidAgent { .. })));
        let bad_schema = Agent::builder("t")
            .skill(
                Skill::builder("a")
                    .input_schema(json!({"type": 5}))
                    .invoke(|_run: Run| async { Ok(Outcome::Completed(Completion::default())) }),
            )
            .build();
        assert!(matches!(bad_schema, Err(BuildError::InvalidSchema { .. })));
    }
}
