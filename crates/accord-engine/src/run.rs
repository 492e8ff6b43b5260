//! Runs: the context a handler receives, what it returns, and the one event model.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use futures_util::Stream;
use serde::de::DeserializeOwned;

use serde_json::Value;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::model::SkillError;
pub use crate::model::{Artifact, EndStatus, Message, Part, Role, TaskState};

/// The context of one run of a skill, handed to its handler.
///
/// A run is cancelled when its caller goes away (a stream's connection drops, an invocation's
/// request is abandoned) or is cancelled explicitly, and a task's run also when the server stops
/// (its [`TaskRuntime`](crate::task::TaskRuntime) closes): [`Run::is_stopping`] tells the two
/// apart, for a handler that tells its own backend why it stops. Handlers that wait or loop should
/// watch [`Run::cancelled`]; the engine aborts a handler that ignores cancellation after a grace
/// period.
#[derive(Clone)]
pub struct Run {
    pub(crate) run_id: Arc<str>,
    pub(crate) skill: Arc<str>,
    pub(crate) input: Arc<Value>,
    pub(crate) cancel: CancellationToken,
    /// Fired when the server stops: the closing of the task runtime that runs this task (`None`
    /// for a direct invocation or stream).
    pub(crate) stopping: Option<CancellationToken>,
    pub(crate) sink: Option<Arc<EventSink>>,
    pub(crate) task: Option<Arc<crate::model::Task>>,
    /// The owner of the task run, if any; its pseudonym is made on the first
    /// [`Run::owner`] call (a SHA-256 most handlers never ask for).
    pub(crate) owner: Option<crate::task::OwnerHash>,
    pub(crate) pseudonym: std::sync::OnceLock<Box<str>>,
    /// Saves the run's state with its task (`None` for a direct invocation or stream).
    pub(crate) saver: Option<StateSaver>,
}

/// Saves a task run's state durably with its task ([`Run::save_state`]); the task runtime makes
/// one per run.
pub(crate) type StateSaver = Arc<
    dyn Fn(Value) -> Pin<Box<dyn std::future::Future<Output = Result<(), SkillError>> + Send>> + Send + Sync + 'static,
>;

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("run_id", &self.run_id)
            .field("skill", &self.skill)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Run {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The key of the skill being run.
    pub fn skill(&self) -> &str {
        &self.skill
    }

    /// The input, already validated against the skill's input schema.
    pub fn input(&self) -> &Value {
        &self.input
    }

    /// The task this run executes, as it was when the run started — its context id, its history
    /// (the caller's messages included) and its artifacts — or `None` for a direct invocation or
    /// stream.
    pub fn task(&self) -> Option<&crate::model::Task> {
        self.task.as_deref()
    }

    /// The owner of the task this run executes, as a pseudonym (64 hex digits; see
    /// [`OwnerHash::pseudonym`](crate::task::OwnerHash::pseudonym)): the same for every task of one
    /// caller, never its token. `None` for a direct invocation or stream, which have no owner.
    pub fn owner(&self) -> Option<&str> {
        let owner = self.owner.as_ref()?;
        Some(self.pseudonym.get_or_init(|| owner.pseudonym().into()))
    }

    /// The message this run answers: the latest message from the caller in the task's history
    /// (the one that created the task, or the follow-up that resumed it). `None` for a direct
    /// invocation or stream, and for a task created without a message.
    pub fn message(&self) -> Option<&Message> {
        self.task.as_deref()?.history.iter().rev().find(|message| message.role == Role::User)
    }

    /// The input decoded into a Rust type.
    pub fn input_as<T: DeserializeOwned>(&self) -> Result<T, SkillError> {
        T::deserialize(&*self.input)
            .map_err(|error| SkillError::new("invalid_input", format!("input does not decode: {error}")))
    }

    /// The run's cancellation token.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the run has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the run is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Whether the server is stopping: the run is cancelled because the
    /// [`TaskRuntime`](crate::task::TaskRuntime) that runs its task is closing, not because its
    /// caller cancelled the task, its time ran out or another worker took it over. The runtime
    /// says so before it cancels the run, so a handler that sees [`Run::cancelled`] fire can ask
    /// this to tell its backend why it stops. Always `false` for a direct invocation or stream.
    pub fn is_stopping(&self) -> bool {
        self.stopping.as_ref().is_some_and(CancellationToken::is_cancelled)
    }

    /// Saves `state` with the task this run executes, durably, before it returns: what the
    /// handler needs to go on with the task when it runs again — for a follow-up after it asked
    /// for input, or after its worker stopped. The next run of the task reads the latest saved
    /// value as [`Run::saved_state`]; a caller never sees it.
    ///
    /// A task whose run saved a state is run again after an interruption even when its skill is
    /// not safe to repeat ([`SkillBuilder::safe_to_repeat`](crate::SkillBuilder::safe_to_repeat)):
    /// its handler goes on from its state (a remote task is followed again, not sent again), and
    /// must itself refuse what it cannot continue. A direct invocation or stream, which no one runs
    /// again, saves nothing.
    ///
    /// Fails when the task was cancelled or taken over meanwhile, or when the store refuses the
    /// write.
    pub async fn save_state(&self, state: Value) -> Result<(), SkillError> {
        match &self.saver {
            Some(saver) => saver(state).await,
            None => Ok(()),
        }
    }

    /// The state a previous run of this task saved ([`Run::save_state`]), as it was when this run
    /// started; `None` for a direct invocation or stream, and before any save.
    pub fn saved_state(&self) -> Option<&Value> {
        self.task.as_deref()?.backend_state.as_ref()
    }

    /// Whether events emitted by this run reach anyone (true for streams, false for a direct
    /// invocation, whose caller only sees the outcome).
    pub fn is_observed(&self) -> bool {
        self.sink.is_some()
    }

    /// Emits an event to whoever watches the run. Waits while the watcher is slow (backpressure);
    /// returns at once when nobody watches.
    pub async fn emit(&self, event: RunEvent) {
        if let Some(sink) = &self.sink {
            sink.send(event).await;
        }
    }
}

/// Orders and numbers the events of one run.
pub(crate) struct EventSink {
    state: Mutex<(u64, mpsc::Sender<RunFrame>)>,
}

impl EventSink {
    pub(crate) fn new(sender: mpsc::Sender<RunFrame>) -> Self {
        Self { state: Mutex::new((0, sender)) }
    }

    /// Numbers and sends one event. The lock is held across the send so that sequence numbers
    /// and delivery order agree even when a handler emits from several tasks.
    pub(crate) async fn send(&self, event: RunEvent) {
        let mut state = self.state.lock().await;
        let frame = RunFrame { sequence: state.0, created_at: SystemTime::now(), event };
        if state.1.send(frame).await.is_ok() {
            state.0 += 1;
        }
    }
}

/// An event with its place in the run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFrame {
    /// Position in the run, from 0 (the run-start event).
    pub sequence: u64,
    /// When the event was made.
    pub created_at: SystemTime,
    /// The event.
    pub event: RunEvent,
}

/// The stream of a run's events, from [`RunEvent::RunStart`] to [`RunEvent::End`].
///
/// Dropping the stream cancels the run.
pub struct RunStream {
    pub(crate) run_id: Arc<str>,
    pub(crate) frames: mpsc::Receiver<RunFrame>,
    pub(crate) _cancel_on_drop: DropGuard,
}

impl std::fmt::Debug for RunStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunStream").field("run_id", &self.run_id).finish_non_exhaustive()
    }
}

impl RunStream {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
}

impl Stream for RunStream {
    type Item = RunFrame;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RunFrame>> {
        self.frames.poll_recv(cx)
    }
}

/// The result of a successful direct invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// The run's id.
    pub run_id: String,
    /// What the handler produced.
    pub completion: Completion,
}

/// What a handler returns when it is done.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// The skill produced its output.
    Completed(Completion),
    /// The skill needs more input from the caller before it can go on.
    InputRequired(Message),
    /// The skill needs the caller to authorize something before it can go on.
    AuthRequired(Message),
    /// The skill refuses this request.
    Rejected(Message),
    /// The skill answers with a message instead of an output: the A2A faces return this message
    /// itself (a direct Message reply) rather than a task; the Lucid faces see
    /// [`Completion::from_reply`]'s output. A task still records the exchange, completed, with the
    /// reply as its closing message.
    Reply(Message),
}

impl From<Completion> for Outcome {
    fn from(completion: Completion) -> Self {
        Self::Completed(completion)
    }
}

/// A completed run's result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// The output, matching the skill's output schema when it has one.
    pub output: Value,
    /// Artifacts the run produced.
    pub artifacts: Vec<Artifact>,
    /// Usage figures (tokens, calls, …), passed through as given.
    pub usage: Option<Value>,
    /// The model used, if any.
    pub model: Option<String>,
    /// The agent's closing words: a completed task's status message (or, for a reply, the reply).
    pub message: Option<Message>,
    /// Whether the run answered with a direct message ([`Outcome::Reply`]).
    pub reply: bool,
}

impl Completion {
    /// A completion with just an output.
    pub fn new(output: Value) -> Self {
        Self { output, ..Self::default() }
    }

    /// Adds the agent's closing message (a completed task's status message).
    pub fn with_message(mut self, message: Message) -> Self {
        self.message = Some(message);
        self
    }

    /// The completion of a direct reply: the output is the message's content — its one data
    /// part, else its text parts joined, else its parts as JSON — and the message is kept.
    pub fn from_reply(message: Message) -> Self {
        let data = message.data_parts();
        let has_text = message.parts.iter().any(|part| matches!(part, Part::Text(_)));
        let output = match data.as_slice() {
            [only] if !has_text => (*only).clone(),
            _ if has_text => Value::String(message.text()),
            _ => serde_json::to_value(&message.parts).unwrap_or(Value::Null),
        };
        Self { output, message: Some(message), reply: true, ..Self::default() }
    }
}

/// The one event model. Every face projects these onto its own wire: the Lucid stream into
/// `run-start … run-end`, task faces into status, artifact and message updates.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunEvent {
    /// The run started. The engine emits this; handlers do not.
    RunStart,
    /// The task's state changed (tasks only; a direct run has no state).
    Status {
        /// The new state.
        state: TaskState,
        /// What the agent says about it.
        message: Option<Message>,
    },
    /// A complete piece of text.
    Text {
        /// The text.
        text: String,
        /// Its media type.
        mime: Option<String>,
    },
    /// An increment of text.
    Delta {
        /// The increment.
        delta: String,
        /// Its media type.
        mime: Option<String>,
        /// Whether this is the last increment.
        is_final: bool,
    },
    /// A piece of an artifact.
    Artifact {
        /// The artifact (or the chunk of it).
        artifact: Artifact,
        /// Whether this chunk extends an artifact already sent.
        append: bool,
        /// Whether this is the artifact's last chunk.
        last_chunk: bool,
    },
    /// A file or blob.
    Asset(Asset),
    /// An application-defined control signal.
    Control {
        /// Its name.
        control: String,
        /// Its data.
        payload: Option<Value>,
    },
    /// A message from the agent.
    Message(Message),
    /// An error that does not by itself end the run (the engine follows a fatal one with
    /// [`RunEvent::End`]).
    Error(SkillError),
    /// The run ended. The engine emits this; handlers do not. (Boxed: it is the largest event by
    /// far and is sent once per run.)
    End(Box<RunEnd>),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    /// The kind of end.
    pub status: EndStatus,
    /// The completion, when the run succeeded.
    pub completion: Option<Completion>,
    /// The error, when it failed.
    pub error: Option<SkillError>,
    /// The agent's message, when it needs input, authorization or rejected the request.
    pub message: Option<Message>,
}

/// A file or blob sent in a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Asset {
    /// Its id.
    pub asset_id: String,
    /// Its media type.
    pub mime: String,
    /// A file name.
    pub name: Option<String>,
    /// Its size.
    pub size_bytes: Option<u64>,
    /// Its content or where to fetch it.
    pub transfer: AssetTransfer,
}

/// How an [`Asset`] travels.
#[derive(Debug, Clone, PartialEq)]
pub enum AssetTransfer {
    /// In the event itself.
    Inline {
        /// The data (base64 for binary).
        data: String,
    },
    /// By reference.
    External {
        /// Where to fetch it.
        href: String,
        /// Until when `href` is valid (ISO 8601).
        expires_at: Option<String>,
    },
}
