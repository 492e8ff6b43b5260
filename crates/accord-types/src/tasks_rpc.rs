//! The JSON-RPC tasks dialect (`tasks/send`, `tasks/get`, `tasks/cancel`, `tasks/sendSubscribe`):
//! the keys its params carry and the patterns they must match, the params themselves, and the task
//! view and update its methods answer with. The face and the client both read and write these, so
//! the dialect's rules are written here once.
//!
//! The dialect's skill pattern (`^[a-zA-Z][a-zA-Z0-9._-]{0,63}$`) is narrower than the engine's
//! skill keys (1–128 characters, which may start with a digit): a skill whose key falls outside it
//! is served by the other faces and refused by name here, as the dialect's peers expect.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The pattern a skill key matches, as the dialect's errors quote it.
pub const SKILL_PATTERN: &str = "/^[a-zA-Z][a-zA-Z0-9._-]{0,63}$/";

/// The pattern a task id matches, as the dialect's errors quote it.
pub const TASK_ID_PATTERN: &str = "/^[A-Za-z0-9_-]{1,64}$/";

/// A skill key of this dialect: 1–64 characters, a letter first, then letters, digits, `.`, `_`
/// or `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct SkillKey(String);

impl SkillKey {
    /// The key, when `text` matches [`SKILL_PATTERN`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::is_valid(text).then(|| Self(text.to_owned()))
    }

    /// Whether `text` matches [`SKILL_PATTERN`].
    pub fn is_valid(text: &str) -> bool {
        let bytes = text.as_bytes();
        (1..=64).contains(&bytes.len())
            && bytes[0].is_ascii_alphabetic()
            && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SkillKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SkillKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("skill must match {SKILL_PATTERN}")))
    }
}

/// A task id of this dialect: 1–64 letters, digits, `_` or `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct TaskRef(String);

impl TaskRef {
    /// The id, when `text` matches [`TASK_ID_PATTERN`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::is_valid(text).then(|| Self(text.to_owned()))
    }

    /// Whether `text` matches [`TASK_ID_PATTERN`].
    pub fn is_valid(text: &str) -> bool {
        (1..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id, owned.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The params of `tasks/get` and `tasks/cancel` for `method`, read as the dialect reads them:
    /// the error is the `-32602` message the face answers with.
    pub fn from_params(method: &str, params: &Value) -> Result<Self, String> {
        let Some(params) = params.as_object() else { return Err(format!("{method}: params must be an object")) };
        params
            .get("taskId")
            .and_then(Value::as_str)
            .and_then(Self::parse)
            .ok_or_else(|| format!("{method}: params.taskId must match {TASK_ID_PATTERN}"))
    }

    /// These params (`{"taskId": …}`).
    pub fn to_params(&self) -> Value {
        serde_json::json!({ "taskId": self.0 })
    }
}

impl std::fmt::Display for TaskRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TaskRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("taskId must match {TASK_ID_PATTERN}")))
    }
}

/// The task of a `tasks/send` or `tasks/sendSubscribe`: a skill and its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// The skill key.
    pub skill: SkillKey,
    /// The input (an object; `{}` when the caller sent none, and not written when empty).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input: Map<String, Value>,
}

impl TaskSpec {
    /// The params of `tasks/send` and `tasks/sendSubscribe` for `method`, read as the dialect
    /// reads them: the error is the `-32602` message the face answers with.
    pub fn from_params(method: &str, params: &Value) -> Result<Self, String> {
        let Some(params) = params.as_object() else { return Err(format!("{method}: params must be an object")) };
        let task = params
            .get("task")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{method}: params.task must be a non-null object"))?;
        let skill = task
            .get("skill")
            .and_then(Value::as_str)
            .and_then(SkillKey::parse)
            .ok_or_else(|| format!("{method}: params.task.skill must match {SKILL_PATTERN}"))?;
        let input = match task.get("input") {
            None => Map::new(),
            Some(Value::Object(input)) => input.clone(),
            Some(_) => return Err(format!("{method}: params.task.input must be a non-null object")),
        };
        Ok(Self { skill, input })
    }

    /// These params (`{"task": {"skill", "input"}}`).
    pub fn to_params(&self) -> Value {
        serde_json::json!({ "task": self })
    }
}

/// Why a task ended without a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFailure {
    /// A stable code.
    pub code: String,
    /// What happened.
    pub message: String,
}

/// A task's state as this dialect writes it: the engine's eight states by their names
/// (`submitted`, `working`, `input_required`, `auth_required`, `completed`, `failed`, `canceled`,
/// `rejected`), or any other word a peer's handler chose (the dialect's vocabulary is free-form:
/// blamejs peers answer `queued`, for one).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskStatus {
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
    /// A word that is none of the above, kept as sent.
    Other(String),
}

impl TaskStatus {
    /// The status named `name`: one of the engine's states, else [`TaskStatus::Other`].
    pub fn from_name(name: &str) -> Self {
        match name {
            "submitted" => Self::Submitted,
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "auth_required" => Self::AuthRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "canceled" => Self::Canceled,
            "rejected" => Self::Rejected,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The status's name on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::AuthRequired => "auth_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::Rejected => "rejected",
            Self::Other(name) => name,
        }
    }

    /// Whether the task has ended (completed, failed, canceled or rejected); a word this dialect
    /// does not name is not known to be an end.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled | Self::Rejected)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TaskStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskStatus {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(Self::from_name(&name))
    }
}

/// Who speaks a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The caller.
    User,
    /// The agent.
    Agent,
}

/// One part of a [`Message`] or an [`Artifact`]: `{"text": …}`, `{"data": …}` or
/// `{"file": {…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// A message of a task: `{message_id?, role, parts, metadata?}` (the members keep the engine's
/// snake_case names on this dialect's wire).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The message's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub parts: Vec<Part>,
    /// Data about the message that is not part of what is said (an extension's fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// An artifact (or one chunk of it) a task produced: `{artifact_id, name?, parts}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// Its id, unique within the task; chunks of one artifact share it.
    pub artifact_id: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its content (this chunk's).
    pub parts: Vec<Part>,
}

/// What `tasks/send`, `tasks/get` and `tasks/cancel` answer: `{taskId, status, contextId?,
/// result?, error?}`. `result` is there when the task completed, `error` when it failed or was
/// rejected. A handler may answer more members than these (the dialect does not forbid it): they
/// travel in `extra`, and a peer's are kept there when read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    /// The task's id.
    pub task_id: String,
    /// Its state.
    pub status: TaskStatus,
    /// Its context, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Its result, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Its error, once failed or rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskFailure>,
    /// Members beyond the dialect's, as the handler wrote them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TaskView {
    /// The view of task `task_id` in `status`, with nothing else.
    pub fn new(task_id: impl Into<String>, status: TaskStatus) -> Self {
        Self { task_id: task_id.into(), status, context_id: None, result: None, error: None, extra: Map::new() }
    }
}

/// One update of a `tasks/sendSubscribe` stream: the task log entry `sequence` of `taskId`, with
/// what that entry says ([`UpdateEvent`], its kind written as `event`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskUpdate {
    /// The task's id.
    pub task_id: String,
    /// The log entry's sequence number.
    pub sequence: u64,
    /// What the entry says.
    #[serde(flatten)]
    pub event: UpdateEvent,
}

impl TaskUpdate {
    /// The update of log entry `sequence` of task `task_id`.
    pub fn new(task_id: impl Into<String>, sequence: u64, event: UpdateEvent) -> Self {
        Self { task_id: task_id.into(), sequence, event }
    }

    /// The state the task is in after this update, when the update says.
    pub fn status(&self) -> Option<&TaskStatus> {
        match &self.event {
            UpdateEvent::Status { status, .. }
            | UpdateEvent::Result { status, .. }
            | UpdateEvent::Error { status, .. } => Some(status),
            UpdateEvent::Artifact { .. } | UpdateEvent::Message { .. } | UpdateEvent::Other => None,
        }
    }
}

/// What one task log entry says, by kind: the `event` member of a [`TaskUpdate`] and the members
/// that kind carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum UpdateEvent {
    /// The state changed: `{"event": "status", "status", "message"?}`; the message is a progress
    /// update's words, or a waiting task's question.
    #[serde(rename_all = "camelCase")]
    Status {
        /// The new state.
        status: TaskStatus,
        /// What the agent said with it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Message>,
    },
    /// The task completed: `{"event": "result", "status": "completed", "result"}`.
    #[serde(rename_all = "camelCase")]
    Result {
        /// The state (`completed`).
        status: TaskStatus,
        /// The result (`{output, usage?, model?, message?}`).
        result: Value,
    },
    /// The task failed or was rejected: `{"event": "error", "status", "error"}`.
    #[serde(rename_all = "camelCase")]
    Error {
        /// The state (`failed` or `rejected`).
        status: TaskStatus,
        /// Why.
        error: TaskFailure,
    },
    /// The task produced an artifact, or a chunk of one: `{"event": "artifact", "artifact",
    /// "append", "lastChunk"}`.
    #[serde(rename_all = "camelCase")]
    Artifact {
        /// The artifact or chunk.
        artifact: Artifact,
        /// Whether its parts append to an earlier chunk of the same artifact.
        #[serde(default)]
        append: bool,
        /// Whether it is the artifact's last chunk.
        #[serde(default)]
        last_chunk: bool,
    },
    /// The agent sent a message: `{"event": "message", "message"}`.
    #[serde(rename_all = "camelCase")]
    Message {
        /// The message.
        message: Message,
    },
    /// An entry this dialect does not name (`{"event": "other"}`: a question filed into the
    /// history, a push given up on), and, when read, any kind a newer peer sends.
    #[serde(other)]
    Other,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_follow_the_dialects_patterns() {
        for good in ["a", "echo", "Echo.v2_beta-1", &"a".repeat(64)] {
            assert!(SkillKey::is_valid(good), "{good}");
        }
        for bad in ["", "1echo", "_echo", "ec ho", "ec/ho", &"a".repeat(65), "ékho"] {
            assert!(!SkillKey::is_valid(bad), "{bad}");
        }
        for good in ["t", "0", "abc-DEF_123", &"9".repeat(64)] {
            assert!(TaskRef::is_valid(good), "{good}");
        }
        for bad in ["", "a.b", "a b", "../x", &"a".repeat(65)] {
            assert!(!TaskRef::is_valid(bad), "{bad}");
        }
    }

    #[test]
    fn params_read_as_the_dialect_reads_them() {
        let spec = TaskSpec::from_params("tasks/send", &json!({"task": {"skill": "echo"}})).expect("spec");
        assert_eq!(spec.skill.as_str(), "echo");
        assert!(spec.input.is_empty(), "no input is an empty object");
        assert_eq!(spec.to_params(), json!({"task": {"skill": "echo"}}));
        assert_eq!(
            TaskSpec::from_params("tasks/send", &json!({"task": {"skill": "1x"}})),
            Err("tasks/send: params.task.skill must match /^[a-zA-Z][a-zA-Z0-9._-]{0,63}$/".into())
        );
        assert_eq!(
            TaskSpec::from_params("tasks/send", &json!({"task": {"skill": "x", "input": [1]}})),
            Err("tasks/send: params.task.input must be a non-null object".into())
        );
        assert_eq!(
            TaskSpec::from_params("tasks/sendSubscribe", &json!({"task": null})),
            Err("tasks/sendSubscribe: params.task must be a non-null object".into())
        );
        assert_eq!(TaskSpec::from_params("tasks/send", &json!([])), Err("tasks/send: params must be an object".into()));
        assert_eq!(TaskRef::from_params("tasks/get", &json!({"taskId": "t-1"})).expect("ref").as_str(), "t-1");
        assert_eq!(
            TaskRef::from_params("tasks/cancel", &json!({"taskId": "../x"})),
            Err("tasks/cancel: params.taskId must match /^[A-Za-z0-9_-]{1,64}$/".into())
        );
        assert!(serde_json::from_value::<TaskSpec>(json!({"skill": "9x"})).is_err(), "serde checks the key too");
    }

    #[test]
    fn views_omit_what_they_do_not_have() {
        let view = TaskView { result: Some(json!({"output": 1})), ..TaskView::new("t", TaskStatus::Completed) };
        assert_eq!(
            serde_json::to_value(&view).expect("json"),
            json!({"taskId": "t", "status": "completed", "result": {"output": 1}})
        );
        let artifact = Artifact { artifact_id: "a".into(), name: None, parts: vec![Part::Text("hi".into())] };
        let update = TaskUpdate::new("t", 3, UpdateEvent::Artifact { artifact, append: false, last_chunk: true });
        assert_eq!(
            serde_json::to_value(&update).expect("json"),
            json!({"taskId": "t", "sequence": 3, "event": "artifact", "artifact": {"artifact_id": "a", "parts": [{"text": "hi"}]},
                   "append": false, "lastChunk": true})
        );
    }

    #[test]
    fn updates_are_tagged_by_their_event_and_read_back() {
        let question = Message {
            message_id: Some("m".into()),
            role: Role::Agent,
            parts: vec![Part::Text("which one?".into())],
            metadata: None,
        };
        let file =
            Part::File { name: Some("a.txt".into()), mime: None, bytes_base64: None, uri: Some("https://x/a".into()) };
        let cases = [
            (
                UpdateEvent::Status { status: TaskStatus::InputRequired, message: Some(question.clone()) },
                json!({"taskId": "t", "sequence": 1, "event": "status", "status": "input_required",
                       "message": {"message_id": "m", "role": "agent", "parts": [{"text": "which one?"}]}}),
            ),
            (
                UpdateEvent::Status { status: TaskStatus::Working, message: None },
                json!({"taskId": "t", "sequence": 1, "event": "status", "status": "working"}),
            ),
            (
                UpdateEvent::Result { status: TaskStatus::Completed, result: json!({"output": {"k": 1}}) },
                json!({"taskId": "t", "sequence": 1, "event": "result", "status": "completed", "result": {"output": {"k": 1}}}),
            ),
            (
                UpdateEvent::Error {
                    status: TaskStatus::Rejected,
                    error: TaskFailure { code: "no".into(), message: "refused".into() },
                },
                json!({"taskId": "t", "sequence": 1, "event": "error", "status": "rejected",
                       "error": {"code": "no", "message": "refused"}}),
            ),
            (
                UpdateEvent::Artifact {
                    artifact: Artifact { artifact_id: "a".into(), name: Some("doc".into()), parts: vec![file] },
                    append: true,
                    last_chunk: false,
                },
                json!({"taskId": "t", "sequence": 1, "event": "artifact", "append": true, "lastChunk": false,
                       "artifact": {"artifact_id": "a", "name": "doc", "parts": [{"file": {"name": "a.txt", "uri": "https://x/a"}}]}}),
            ),
            (
                UpdateEvent::Message { message: Message { metadata: Some(Map::new()), ..question } },
                json!({"taskId": "t", "sequence": 1, "event": "message",
                       "message": {"message_id": "m", "role": "agent", "parts": [{"text": "which one?"}], "metadata": {}}}),
            ),
            (UpdateEvent::Other, json!({"taskId": "t", "sequence": 1, "event": "other"})),
        ];
        for (event, wire) in cases {
            let update = TaskUpdate::new("t", 1, event);
            assert_eq!(serde_json::to_value(&update).expect("json"), wire);
            assert_eq!(serde_json::from_value::<TaskUpdate>(wire).expect("reads back"), update);
        }
        let newer: TaskUpdate =
            serde_json::from_value(json!({"taskId": "t", "sequence": 9, "event": "progress", "percent": 50}))
                .expect("a kind this dialect does not name is read");
        assert_eq!((newer.sequence, &newer.event, newer.status()), (9, &UpdateEvent::Other, None));
        assert!(
            serde_json::from_value::<TaskUpdate>(json!({"taskId": "t", "sequence": 2, "event": "status"})).is_err(),
            "a named kind without its members is not that kind"
        );
    }

    #[test]
    fn statuses_are_the_engines_states_or_the_peers_own_words() {
        for status in [
            TaskStatus::Submitted,
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::AuthRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Canceled,
            TaskStatus::Rejected,
        ] {
            let wire = serde_json::to_value(&status).expect("json");
            assert_eq!(serde_json::from_value::<TaskStatus>(wire).expect("status"), status);
        }
        let queued: TaskStatus = serde_json::from_value(json!("queued")).expect("free-form");
        assert_eq!(queued, TaskStatus::Other("queued".into()));
        assert_eq!(serde_json::to_value(&queued).expect("json"), json!("queued"));
        assert!(!queued.is_terminal() && TaskStatus::Canceled.is_terminal());
        let answer = json!({"taskId": "t-1", "status": "queued", "skill": "plain", "subject": "alice"});
        let view: TaskView = serde_json::from_value(answer.clone()).expect("view");
        assert_eq!(view.extra.get("skill"), Some(&json!("plain")), "a handler's own members are kept");
        assert_eq!(serde_json::to_value(&view).expect("json"), answer);
    }
}
