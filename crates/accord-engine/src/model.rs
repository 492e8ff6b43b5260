//! The engine's shared nouns: what a task, a message, a state and an error are. Every other
//! module imports these and this module imports none of them, so the engine's files have no
//! cycles: runs, skills, tasks, stores and errors all speak of the same things without speaking
//! of each other.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Milliseconds since the Unix epoch: how task records keep time (portable across stores).
pub type Millis = u64;

/// The current time in [`Millis`].
pub fn now_ms() -> Millis {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_millis() as Millis)
}

/// A task's id (a UUID when Accord makes it). Shared, not copied, when cloned: an id is held by
/// its record, its log entries, indexes and wake-ups.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(std::sync::Arc<str>);

impl TaskId {
    /// A fresh id: a version 7 UUID (RFC 9562), whose first 48 bits are the time it was made in
    /// milliseconds and whose other 74 are random.
    ///
    /// Ids made close in time sort close together, so a durable store's indexes take new tasks
    /// at their end instead of at a random page each (fewer pages changed, and written to the
    /// log, per commit). An id tells when its task was made, which its `createdAt` tells its
    /// owner anyway. Where callers share an owner (anonymous callers of one address), an id is
    /// what keeps one caller's task from another: 74 random bits, which no caller can guess.
    ///
    /// The bits come from the thread's ChaCha12 generator (`rand::rng`), which the operating
    /// system's source seeds and reseeds every 64 KiB of output: a cryptographically secure
    /// source that costs no system call per id.
    pub fn generate() -> Self {
        let mut random = [0; 10];
        rand::fill(&mut random[..]);
        let id = uuid::Builder::from_unix_timestamp_millis(now_ms(), &random).into_uuid();
        let mut text = [0; uuid::fmt::Hyphenated::LENGTH];
        Self(std::sync::Arc::from(&*id.hyphenated().encode_lower(&mut text)))
    }

    /// Wraps an id received from a caller or a store.
    pub fn new(id: impl Into<String>) -> Self {
        Self(std::sync::Arc::from(id.into()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for TaskId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TaskId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::new)
    }
}

/// The result of a completed task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskResult {
    /// The skill's output.
    pub output: Value,
    /// Usage figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// The model used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent's closing message (the completed task's status message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Whether the skill answered with a direct message (then `message` is that reply).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reply: bool,
}

/// A task as its owner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The id.
    pub id: TaskId,
    /// The conversation it belongs to, if the caller said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The skill it runs.
    pub skill: String,
    /// Its state.
    pub state: TaskState,
    /// What the agent last said about the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<Message>,
    /// When it was created.
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
    /// The result, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TaskResult>,
    /// The error, once failed or rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<SkillError>,
    /// Artifacts produced so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Messages exchanged so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// The caller's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// What the skill's handler saved to go on with this task when it runs again
    /// ([`Run::save_state`](crate::Run::save_state)): a remote task's id, say. Kept with the
    /// task, never shown to a caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_state: Option<Value>,
    /// Bumped by every stored change.
    #[serde(default)]
    pub version: u64,
}

impl Task {
    /// A new task in [`TaskState::Submitted`].
    pub fn submitted(id: TaskId, skill: impl Into<String>, context_id: Option<String>, now: Millis) -> Self {
        Self {
            id,
            context_id,
            skill: skill.into(),
            state: TaskState::Submitted,
            status_message: None,
            created_at: now,
            updated_at: now,
            result: None,
            error: None,
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
            backend_state: None,
            version: 0,
        }
    }
}

/// The kinds of end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndStatus {
    /// The handler produced its output.
    Succeeded,
    /// The handler failed.
    Failed,
    /// The run was cancelled.
    Cancelled,
    /// The handler needs more input.
    InputRequired,
    /// The handler needs authorization.
    AuthRequired,
    /// The handler rejected the request.
    Rejected,
}

impl EndStatus {
    /// A stable snake_case name (`input_required`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::InputRequired => "input_required",
            Self::AuthRequired => "auth_required",
            Self::Rejected => "rejected",
        }
    }
}

/// The state of a task: the eight states of A2A. Other dialects project it (the Lucid profile's
/// four statuses are a view of these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Accepted, not yet running.
    Submitted,
    /// Running.
    Working,
    /// Waiting for the caller's input.
    InputRequired,
    /// Waiting for the caller's authorization.
    AuthRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled.
    Canceled,
    /// Refused by the agent.
    Rejected,
}

impl TaskState {
    /// Whether the state is final: a task in it never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled | Self::Rejected)
    }

    /// Every state, in declaration order.
    pub const ALL: [Self; 8] = [
        Self::Submitted,
        Self::Working,
        Self::InputRequired,
        Self::AuthRequired,
        Self::Completed,
        Self::Failed,
        Self::Canceled,
        Self::Rejected,
    ];

    /// The state's serde (JSON) name: what stores keep in their `state` column and metrics use as
    /// a label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::AuthRequired => "auth_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::Rejected => "rejected",
        }
    }
}

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The caller.
    User,
    /// The agent.
    Agent,
}

/// A message: a role and its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The message's id (chosen by whoever wrote it; Accord makes UUIDs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub parts: Vec<Part>,
    /// Data about the message that is not part of what is said (an extension's fields, such as
    /// payment requirements); kept and delivered unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

impl Message {
    /// A message with a fresh id.
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self { message_id: Some(uuid::Uuid::new_v4().to_string()), role, parts, metadata: None }
    }

    /// The same message with `metadata`.
    pub fn with_metadata(mut self, metadata: serde_json::Map<String, Value>) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// A message from the agent with one text part.
    pub fn agent_text(text: impl Into<String>) -> Self {
        Self::new(Role::Agent, vec![Part::Text(text.into())])
    }

    /// The data parts, in order.
    pub fn data_parts(&self) -> Vec<&Value> {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Data(data) => Some(data),
                _ => None,
            })
            .collect()
    }

    /// The text parts joined with newlines.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// One part of a message or an artifact. Stored as `{"text": …}`, `{"data": …}` or
/// `{"file": {…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Part {
    /// Text.
    Text(String),
    /// Structured data.
    Data(Value),
    /// A file, inline (base64) or by URI.
    File {
        /// A file name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Its media type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime: Option<String>,
        /// Base64 content, for an inline file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes_base64: Option<String>,
        /// Where to fetch it, for a file by reference.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uri: Option<String>,
    },
}

/// An output document of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// Its id, unique within the task.
    pub artifact_id: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its content.
    pub parts: Vec<Part>,
}

/// An error a handler reports: a stable code and a message meant for the caller.
///
/// The message travels to the caller, so it must not carry secrets or internal detail.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct SkillError {
    /// A stable snake_case code (`internal_error` unless the handler says otherwise).
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// Whether trying again may help.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    /// Structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl SkillError {
    /// An error with a code.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into(), retryable: None, details: None }
    }

    /// An `internal_error`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new("internal_error", message)
    }

    /// Marks the error as worth retrying (or not).
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = Some(retryable);
        self
    }
}

impl std::fmt::Display for SkillError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for SkillError {}

/// One schema violation, shaped like a Zod issue so that Lucid clients read it unchanged:
/// `{"code": <JSON Schema keyword>, "path": [...], "message": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// The JSON Schema keyword that failed (`type`, `required`, …).
    pub code: String,
    /// Where in the instance: object keys as strings, array indexes as numbers.
    pub path: Vec<Value>,
    /// What is wrong, in words.
    pub message: String,
}

/// What a task runs: enough to run it again on another worker after a crash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPayload {
    /// The skill key.
    pub skill: String,
    /// The validated input.
    pub input: Value,
    /// Whether a payment was taken (or is due) for the task. A durable store commits every write
    /// of a paid task with its strongest durability, whatever its configured level: a settled
    /// payment's task survives the loss of power, not only a crash of the process.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paid: bool,
}

impl TaskPayload {
    /// The payload of an unpaid task of `skill` with `input`.
    pub fn new(skill: impl Into<String>, input: Value) -> Self {
        Self { skill: skill.into(), input, paid: false }
    }

    /// What a store keeps of the payload of a finished task, which never runs again: the skill and
    /// whether it was paid, without the input (`null`). A store writes it when the task ends, so
    /// that a large input is not kept beside the history and artifacts that outlive the run.
    pub fn finished(&self) -> Self {
        Self { skill: self.skill.clone(), input: Value::Null, paid: self.paid }
    }
}

/// The phase of an execution lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeasePhase {
    /// Claimed, the handler not yet started (authorization may still be finishing).
    Prepared,
    /// The handler is running.
    Active,
}

/// Which worker may execute a task, until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionLease {
    /// The worker's id.
    pub owner_id: String,
    /// When the lease lapses unless renewed.
    pub expires_at: Millis,
    /// Prepared or active.
    pub phase: LeasePhase,
}

/// What happened to a task, in its event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskEventKind {
    /// The state changed (also used for creation and cancellation).
    Status {
        /// The new state.
        state: TaskState,
        /// What the agent said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Message>,
    },
    /// The task completed with a result.
    Result {
        /// The result.
        result: TaskResult,
    },
    /// The task failed (or was rejected) with an error.
    Error {
        /// The terminal state (`failed` or `rejected`).
        state: TaskState,
        /// The error.
        error: SkillError,
    },
    /// The handler produced (a chunk of) an artifact.
    Artifact {
        /// The artifact or chunk.
        artifact: Artifact,
        /// Whether it extends an artifact already sent.
        append: bool,
        /// Whether it is the last chunk.
        last_chunk: bool,
    },
    /// The agent sent a message.
    Message {
        /// The message.
        message: Message,
    },
    /// A message said earlier joins the task's history without being said again: the agent's
    /// pending question, filed when the caller answers it. Faces send no update for it (the
    /// official SDKs, too, move the status message into the history silently), so a resumed
    /// task's subscribers do not hear the old question a second time.
    History {
        /// The message.
        message: Message,
    },
    /// The handler saved its state ([`Run::save_state`](crate::Run::save_state)): the task keeps
    /// it as [`Task::backend_state`]. Not a change a caller sees: faces send nothing for it.
    BackendState {
        /// The state, as the handler gave it.
        state: Value,
    },
    /// A push notification was given up on after its last attempt. The task does not change;
    /// the entry records, in the task's own log, which update a webhook never received.
    PushDeadLetter {
        /// The push config.
        config_id: String,
        /// The log sequence of the update that was not delivered.
        sequence: u64,
        /// How many attempts were made.
        attempts: u32,
        /// The last attempt's failure (no URL, no credentials).
        reason: String,
    },
}

impl TaskEventKind {
    /// The task state after this event, when the event sets one.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            Self::Status { state, .. } | Self::Error { state, .. } => Some(*state),
            Self::Result { .. } => Some(TaskState::Completed),
            Self::Artifact { .. }
            | Self::Message { .. }
            | Self::History { .. }
            | Self::BackendState { .. }
            | Self::PushDeadLetter { .. } => None,
        }
    }
}

/// One entry of a task's event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEvent {
    /// The task.
    pub task_id: TaskId,
    /// Position in the task's log, from 1.
    pub sequence: u64,
    /// When it was appended.
    pub at: Millis,
    /// What happened.
    pub kind: TaskEventKind,
}

#[cfg(test)]
mod tests {
    use super::{TaskId, TaskState, now_ms};

    #[test]
    fn a_generated_id_is_a_time_ordered_uuid_with_random_bits() {
        let before = now_ms();
        let first = TaskId::generate();
        let parsed = uuid::Uuid::parse_str(first.as_str()).expect("a generated id is a UUID");
        assert_eq!(first.as_str(), parsed.hyphenated().to_string(), "lowercase and hyphenated");
        assert_eq!(parsed.get_version_num(), 7);
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
        let (seconds, nanos) = parsed.get_timestamp().expect("a version 7 UUID has a time").to_unix();
        let made = seconds * 1_000 + u64::from(nanos / 1_000_000);
        assert!((before..=now_ms()).contains(&made), "its time is when it was made");
        // Made in quick succession, many within one millisecond, ids still differ...
        let same_time: std::collections::HashSet<_> = (0..1_000).map(|_| TaskId::generate()).collect();
        assert_eq!(same_time.len(), 1_000);
        // ...and an id made a later millisecond sorts after, as text too.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let later = TaskId::generate();
        assert!(later > first && later.as_str() > first.as_str());
    }

    #[test]
    fn threads_draw_ids_from_generators_of_their_own_and_never_repeat_one() {
        // Each thread's generator is seeded by the operating system on its own: threads that make
        // ids in the same milliseconds still never make the same one.
        let threads: Vec<_> =
            (0..8).map(|_| std::thread::spawn(|| (0..2_000).map(|_| TaskId::generate()).collect::<Vec<_>>())).collect();
        let mut all = std::collections::HashSet::new();
        for thread in threads {
            for id in thread.join().expect("a thread makes its ids") {
                assert!(all.insert(id), "an id repeated across threads");
            }
        }
        assert_eq!(all.len(), 16_000);
    }

    #[test]
    fn a_states_name_is_its_json_name() {
        for state in TaskState::ALL {
            assert_eq!(serde_json::to_value(state).expect("a state serializes"), state.as_str());
            assert_eq!(serde_json::from_value::<TaskState>(state.as_str().into()).expect("a name parses"), state);
        }
    }
}
