//! Tasks, messages, parts, artifacts and the streaming events (proto `Task`, `TaskStatus`,
//! `TaskState`, `Message`, `Role`, `Part`, `Artifact`, `TaskStatusUpdateEvent`,
//! `TaskArtifactUpdateEvent`, `StreamResponse`, `SendMessageResponse`).

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::de::{null_as_default, present_value};
use super::validate::{self, FieldViolation, Validate};

/// Why a string is not a value of an A2A enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEnumValue {
    /// The enum (`TaskState`, `Role`).
    pub enum_name: &'static str,
    /// The value that was not recognised.
    pub value: String,
}

impl fmt::Display for UnknownEnumValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} value {:?}", self.enum_name, self.value)
    }
}

impl std::error::Error for UnknownEnumValue {}

/// The lifecycle state of a task (proto `TaskState`).
///
/// Written as the v1.0 names (`TASK_STATE_COMPLETED`). Read from the v1.0 names, the 0.3
/// spellings (`completed`, `input-required`, `unknown`, …) and the enum numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Unknown or indeterminate (0.3: `unknown`).
    Unspecified,
    /// Submitted and acknowledged.
    Submitted,
    /// Being processed.
    Working,
    /// Finished successfully; terminal.
    Completed,
    /// Finished with an error; terminal.
    Failed,
    /// Canceled before completion; terminal.
    Canceled,
    /// Waiting for more input from the user; interrupted.
    InputRequired,
    /// The agent declined the task; terminal.
    Rejected,
    /// Waiting for authentication; interrupted.
    AuthRequired,
}

impl TaskState {
    /// Every state, in proto number order.
    pub const ALL: [Self; 9] = [
        Self::Unspecified,
        Self::Submitted,
        Self::Working,
        Self::Completed,
        Self::Failed,
        Self::Canceled,
        Self::InputRequired,
        Self::Rejected,
        Self::AuthRequired,
    ];

    /// The v1.0 wire name, e.g. `TASK_STATE_INPUT_REQUIRED`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "TASK_STATE_UNSPECIFIED",
            Self::Submitted => "TASK_STATE_SUBMITTED",
            Self::Working => "TASK_STATE_WORKING",
            Self::Completed => "TASK_STATE_COMPLETED",
            Self::Failed => "TASK_STATE_FAILED",
            Self::Canceled => "TASK_STATE_CANCELED",
            Self::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            Self::Rejected => "TASK_STATE_REJECTED",
            Self::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// The A2A 0.3 spelling, e.g. `input-required` (`unknown` for [`TaskState::Unspecified`]).
    pub fn v03_name(self) -> &'static str {
        match self {
            Self::Unspecified => "unknown",
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::InputRequired => "input-required",
            Self::Rejected => "rejected",
            Self::AuthRequired => "auth-required",
        }
    }

    /// The proto enum number.
    pub fn number(self) -> i32 {
        match self {
            Self::Unspecified => 0,
            Self::Submitted => 1,
            Self::Working => 2,
            Self::Completed => 3,
            Self::Failed => 4,
            Self::Canceled => 5,
            Self::InputRequired => 6,
            Self::Rejected => 7,
            Self::AuthRequired => 8,
        }
    }

    /// The state with proto number `number`.
    pub fn from_number(number: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|state| i64::from(state.number()) == number)
    }

    /// Reads a v1.0 name or a 0.3 spelling.
    pub fn from_wire_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == name || state.v03_name() == name)
    }

    /// Completed, failed, canceled or rejected: the task never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled | Self::Rejected)
    }

    /// Input-required or auth-required: the task waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaskState {
    type Err = UnknownEnumValue;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::from_wire_name(text).ok_or_else(|| UnknownEnumValue { enum_name: "TaskState", value: text.to_owned() })
    }
}

impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnumVisitor {
            name: "TaskState",
            by_name: Self::from_wire_name,
            by_number: Self::from_number,
        })
    }
}

/// Who sent a message (proto `Role`). Written as `ROLE_USER` / `ROLE_AGENT`; read from those, the
/// 0.3 spellings `user` / `agent`, and the enum numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Not set; [`Validate`] rejects it on a message.
    Unspecified,
    /// From the client to the agent.
    User,
    /// From the agent to the client.
    Agent,
}

impl Role {
    /// Every role, in proto number order.
    pub const ALL: [Self; 3] = [Self::Unspecified, Self::User, Self::Agent];

    /// The v1.0 wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "ROLE_UNSPECIFIED",
            Self::User => "ROLE_USER",
            Self::Agent => "ROLE_AGENT",
        }
    }

    /// The A2A 0.3 spelling (`user`, `agent`; `unspecified` has none and reads as itself).
    pub fn v03_name(self) -> &'static str {
        match self {
            Self::Unspecified => "unspecified",
            Self::User => "user",
            Self::Agent => "agent",
        }
    }

    /// The proto enum number.
    pub fn number(self) -> i32 {
        match self {
            Self::Unspecified => 0,
            Self::User => 1,
            Self::Agent => 2,
        }
    }

    /// The role with proto number `number`.
    pub fn from_number(number: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|role| i64::from(role.number()) == number)
    }

    /// Reads a v1.0 name or a 0.3 spelling.
    pub fn from_wire_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.as_str() == name || role.v03_name() == name)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = UnknownEnumValue;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::from_wire_name(text).ok_or_else(|| UnknownEnumValue { enum_name: "Role", value: text.to_owned() })
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnumVisitor {
            name: "Role",
            by_name: Self::from_wire_name,
            by_number: Self::from_number,
        })
    }
}

/// Reads a proto enum from its name (any accepted spelling) or its number.
struct EnumVisitor<T> {
    name: &'static str,
    by_name: fn(&str) -> Option<T>,
    by_number: fn(i64) -> Option<T>,
}

impl<'de, T> Visitor<'de> for EnumVisitor<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "a {} name or number", self.name)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<T, E> {
        (self.by_name)(value).ok_or_else(|| E::custom(format!("unknown {} value {value:?}", self.name)))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<T, E> {
        (self.by_number)(value).ok_or_else(|| E::custom(format!("unknown {} number {value}", self.name)))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<T, E> {
        let number = i64::try_from(value).map_err(|_| E::custom(format!("unknown {} number {value}", self.name)))?;
        self.visit_i64(number)
    }
}

/// The content of a [`Part`]: the proto `oneof content`.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    /// `text`: a string.
    Text(String),
    /// `raw`: file bytes, kept as the base64 string of the wire (standard or URL-safe alphabet).
    Raw(String),
    /// `url`: where the file's content lives.
    Url(String),
    /// `data`: any JSON value (a `google.protobuf.Value`; `null` included).
    Data(Value),
}

impl PartContent {
    /// The ProtoJSON key of this member.
    pub fn member_name(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::Raw(_) => "raw",
            Self::Url(_) => "url",
            Self::Data(_) => "data",
        }
    }
}

/// A piece of message or artifact content (proto `Part`): exactly one of `text`, `raw`, `url`,
/// `data`, plus optional `metadata`, `filename` and `mediaType` on any kind. There is no `kind`
/// discriminator; a part with zero or several content members fails to deserialize.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The content.
    pub content: PartContent,
    /// Metadata of the part.
    pub metadata: Option<Map<String, Value>>,
    /// A file name, e.g. `document.pdf`.
    pub filename: Option<String>,
    /// The media type of the content, e.g. `text/plain`.
    pub media_type: Option<String>,
}

impl Part {
    /// A part with `content` and nothing else.
    pub fn new(content: PartContent) -> Self {
        Self { content, metadata: None, filename: None, media_type: None }
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(PartContent::Text(text.into()))
    }

    /// A raw part from an already base64-encoded string.
    pub fn raw_base64(base64: impl Into<String>) -> Self {
        Self::new(PartContent::Raw(base64.into()))
    }

    /// A URL part.
    pub fn url(url: impl Into<String>) -> Self {
        Self::new(PartContent::Url(url.into()))
    }

    /// A structured-data part.
    pub fn data(data: Value) -> Self {
        Self::new(PartContent::Data(data))
    }

    /// Sets the file name.
    pub fn with_filename(mut self, filename: impl Into<String>) -> Self {
        self.filename = Some(filename.into());
        self
    }

    /// Sets the media type.
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The text, when this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(text) => Some(text),
            _ => None,
        }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        match &self.content {
            PartContent::Text(text) => map.serialize_entry("text", text)?,
            PartContent::Raw(raw) => map.serialize_entry("raw", raw)?,
            PartContent::Url(url) => map.serialize_entry("url", url)?,
            PartContent::Data(data) => map.serialize_entry("data", data)?,
        }
        if let Some(metadata) = &self.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        if let Some(filename) = &self.filename {
            map.serialize_entry("filename", filename)?;
        }
        if let Some(media_type) = &self.media_type {
            map.serialize_entry("mediaType", media_type)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            #[serde(default)]
            text: Option<String>,
            #[serde(default)]
            raw: Option<String>,
            #[serde(default)]
            url: Option<String>,
            #[serde(default, deserialize_with = "present_value")]
            data: Option<Value>,
            #[serde(default)]
            metadata: Option<Map<String, Value>>,
            #[serde(default)]
            filename: Option<String>,
            #[serde(default, alias = "media_type")]
            media_type: Option<String>,
        }
        let wire = Wire::deserialize(deserializer)?;
        let mut found = Vec::new();
        if let Some(text) = wire.text {
            found.push(("text", PartContent::Text(text)));
        }
        if let Some(raw) = wire.raw {
            found.push(("raw", PartContent::Raw(raw)));
        }
        if let Some(url) = wire.url {
            found.push(("url", PartContent::Url(url)));
        }
        if let Some(data) = wire.data {
            found.push(("data", PartContent::Data(data)));
        }
        let content = super::oneof::exactly_one("Part", &["text", "raw", "url", "data"], found)?;
        Ok(Self { content, metadata: wire.metadata, filename: wire.filename, media_type: wire.media_type })
    }
}

impl Validate for Part {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        if let PartContent::Raw(raw) = &self.content
            && !validate::is_base64(raw)
        {
            out.push(FieldViolation::new(validate::field_path(path, "raw"), "must be base64-encoded bytes"));
        }
    }
}

/// One unit of communication between client and agent (proto `Message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique id, chosen by the message's creator. Required.
    #[serde(alias = "message_id")]
    pub message_id: String,
    /// The context the message belongs to.
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task the message belongs to.
    #[serde(default, alias = "task_id", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The sender. Required.
    pub role: Role,
    /// The content; required, with at least one part.
    pub parts: Vec<Part>,
    /// Metadata of the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of the extensions present in or contributing to this message.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Ids of tasks this message refers to for context.
    #[serde(
        default,
        alias = "reference_task_ids",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message with the given id, role and parts, and nothing else.
    pub fn new(message_id: impl Into<String>, role: Role, parts: Vec<Part>) -> Self {
        Self {
            message_id: message_id.into(),
            context_id: None,
            task_id: None,
            role,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }
}

impl Validate for Message {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "messageId", &self.message_id);
        if self.role == Role::Unspecified {
            out.push(FieldViolation::new(validate::field_path(path, "role"), "is required (ROLE_USER or ROLE_AGENT)"));
        }
        validate::required_list(out, path, "parts", &self.parts);
        validate::each(out, path, "parts", &self.parts);
    }
}

/// The status of a task (proto `TaskStatus`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state. Required.
    pub state: TaskState,
    /// A message that goes with the status (the question of an input-required task, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the status was recorded: RFC 3339 in UTC (see [`super::time`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// A status in `state` with no message and no timestamp.
    pub fn new(state: TaskState) -> Self {
        Self { state, message: None, timestamp: None }
    }
}

impl Validate for TaskStatus {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        if let Some(message) = &self.message {
            validate::nested(out, path, "message", message);
        }
        validate::timestamp(out, path, "timestamp", self.timestamp.as_deref());
    }
}

/// An output of a task (proto `Artifact`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task. Required.
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content; required, with at least one part.
    pub parts: Vec<Part>,
    /// Metadata of the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of the extensions present in or contributing to this artifact.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

impl Artifact {
    /// An artifact with the given id and parts, and nothing else.
    pub fn new(artifact_id: impl Into<String>, parts: Vec<Part>) -> Self {
        Self {
            artifact_id: artifact_id.into(),
            name: None,
            description: None,
            parts,
            metadata: None,
            extensions: Vec::new(),
        }
    }
}

impl Validate for Artifact {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "artifactId", &self.artifact_id);
        validate::required_list(out, path, "parts", &self.parts);
        validate::each(out, path, "parts", &self.parts);
    }
}

/// A unit of work (proto `Task`).
///
/// `artifacts` and `history` are left out of the JSON when empty, which is also how a face omits
/// `artifacts` for `ListTasks` without `includeArtifacts` (§3.1.4): clear the vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Unique id, generated by the server. Required.
    pub id: String,
    /// The context the task belongs to.
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The current status. Required.
    pub status: TaskStatus,
    /// The outputs so far.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged so far.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Metadata of the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Task {
    /// A task with an id, a context id and a status, and nothing else.
    pub fn new(id: impl Into<String>, context_id: impl Into<String>, status: TaskStatus) -> Self {
        Self {
            id: id.into(),
            context_id: Some(context_id.into()),
            status,
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
        }
    }
}

impl Validate for Task {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "id", &self.id);
        validate::nested(out, path, "status", &self.status);
        validate::each(out, path, "artifacts", &self.artifacts);
        validate::each(out, path, "history", &self.history);
    }
}

/// A change of a task's status, as streamed (proto `TaskStatusUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The task's context. Required.
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The new status. Required.
    pub status: TaskStatus,
    /// Metadata of the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Validate for TaskStatusUpdateEvent {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "taskId", &self.task_id);
        validate::required_str(out, path, "contextId", &self.context_id);
        validate::nested(out, path, "status", &self.status);
    }
}

/// A new artifact or artifact chunk, as streamed (proto `TaskArtifactUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The task's context. Required.
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The artifact or chunk. Required.
    pub artifact: Artifact,
    /// Whether the parts append to an artifact already sent with the same id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<bool>,
    /// Whether this is the artifact's last chunk.
    #[serde(default, alias = "last_chunk", skip_serializing_if = "Option::is_none")]
    pub last_chunk: Option<bool>,
    /// Metadata of the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Validate for TaskArtifactUpdateEvent {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "taskId", &self.task_id);
        validate::required_str(out, path, "contextId", &self.context_id);
        validate::nested(out, path, "artifact", &self.artifact);
    }
}

proto_oneof! {
    /// One event of a stream, and the body of a push notification (proto `StreamResponse`):
    /// `{"task":{…}}`, `{"message":{…}}`, `{"statusUpdate":{…}}` or `{"artifactUpdate":{…}}`.
    pub enum StreamResponse in "StreamResponse" {
        /// The task's current state.
        Task(Task) = "task",
        /// A message from the agent.
        Message(Message) = "message",
        /// A status change.
        StatusUpdate(TaskStatusUpdateEvent) = "statusUpdate" | "status_update",
        /// An artifact or chunk.
        ArtifactUpdate(TaskArtifactUpdateEvent) = "artifactUpdate" | "artifact_update",
    }
}

impl Validate for StreamResponse {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        let path = validate::field_path(path, self.member_name());
        match self {
            Self::Task(task) => task.collect_violations(&path, out),
            Self::Message(message) => message.collect_violations(&path, out),
            Self::StatusUpdate(update) => update.collect_violations(&path, out),
            Self::ArtifactUpdate(update) => update.collect_violations(&path, out),
        }
    }
}

proto_oneof! {
    /// The result of `SendMessage` (proto `SendMessageResponse`): `{"task":{…}}` or `{"message":{…}}`.
    pub enum SendMessageResponse in "SendMessageResponse" {
        /// The task created or updated by the message.
        Task(Task) = "task",
        /// A direct reply from the agent.
        Message(Message) = "message",
    }
}

impl Validate for SendMessageResponse {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        let path = validate::field_path(path, self.member_name());
        match self {
            Self::Task(task) => task.collect_violations(&path, out),
            Self::Message(message) => message.collect_violations(&path, out),
        }
    }
}
