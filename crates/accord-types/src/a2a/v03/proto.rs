//! The A2A 0.3 HTTP+JSON binding's bodies: the ProtoJSON of the 0.3 protobuf (package `a2a.v1`
//! of A2A v0.3.0), a third spelling of the same facts, and the one conversion between it and the
//! 0.3 JSON-RPC shapes of the parent module (and so, through [`super::convert`], v1.0).
//!
//! How it differs from the 0.3 JSON-RPC shapes:
//!
//! - **No `kind`.** Parts are a oneof: `{"text"}`, `{"file": {fileWithUri | fileWithBytes,
//!   mimeType, name}}`, `{"data": {"data": {…}}}`; results and events are wrapped in the name of
//!   their case: `{"task": …}`, `{"message": …}`, `{"statusUpdate": …}`, `{"artifactUpdate": …}`.
//! - **Enums** are the proto names: `TASK_STATE_WORKING`, `TASK_STATE_CANCELLED` (two Ls, unlike
//!   v1.0's `TASK_STATE_CANCELED`), `ROLE_USER`; read from the names or the numbers.
//! - A message's parts are `content`; a message has no `referenceTaskIds`.
//! - **Proto3 defaults.** An absent string, number or boolean is the empty string, 0 or `false`,
//!   and the writer leaves those out: an empty context id reads as none, `historyLength: 0` as
//!   unset, `append` / `lastChunk` / `final` absent as `false`, and — the one that changes meaning
//!   — a `configuration` without `blocking` is *not* blocking (a 0.3 REST client that wants to wait
//!   sends `blocking: true`; a send without any `configuration` waits, as in JSON-RPC). Written,
//!   a send always has a configuration with `blocking` set, so that every reader agrees.
//! - **Push configs** are named by resource path: `{"name": "tasks/{task}/pushNotificationConfigs/
//!   {config}", "pushNotificationConfig": {id, url, token, authentication}}`; a create request is
//!   `{"parent": "tasks/{task}", "configId", "config": …}`.
//!
//! Names are written as the proto's `json_name` and read as that or the proto field name
//! (`context_id`, `request`, `update`, `msg`), as ProtoJSON readers do. Shapes only: no I/O.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{FileBody, FileContent};
use crate::a2a::de::{i32_or_zero, null_as_default};
use crate::a2a::task::{Role, TaskState};

/// The 0.3 HTTP+JSON routes, relative to the binding's URL (the card's interface URL).
pub mod paths {
    /// `POST`: `SendMessageRequest` → `SendMessageResponse`.
    pub const MESSAGE_SEND: &str = "/v1/message:send";
    /// `POST`: `SendMessageRequest` → SSE of `StreamResponse`.
    pub const MESSAGE_STREAM: &str = "/v1/message:stream";
    /// `GET`: the authenticated extended card.
    pub const CARD: &str = "/v1/card";

    /// `GET` (the task), `POST …:cancel`, `GET|POST …:subscribe`.
    pub fn task(id: &str) -> String {
        format!("/v1/tasks/{id}")
    }

    /// `POST` (create) and `GET` (list) a task's push configs.
    pub fn push_configs(task: &str) -> String {
        format!("/v1/tasks/{task}/pushNotificationConfigs")
    }

    /// `GET` and `DELETE` one push config.
    pub fn push_config(task: &str, config: &str) -> String {
        format!("/v1/tasks/{task}/pushNotificationConfigs/{config}")
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// The proto name of a state (`TASK_STATE_CANCELLED` with two Ls).
pub fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Canceled => "TASK_STATE_CANCELLED",
        other => other.as_str(),
    }
}

/// A state's number in the 0.3 proto.
fn state_number(state: TaskState) -> i64 {
    match state {
        TaskState::Unspecified => 0,
        TaskState::Submitted => 1,
        TaskState::Working => 2,
        TaskState::Completed => 3,
        TaskState::Failed => 4,
        TaskState::Canceled => 5,
        TaskState::InputRequired => 6,
        TaskState::Rejected => 7,
        TaskState::AuthRequired => 8,
    }
}

/// serde for a [`TaskState`] as the 0.3 proto enum.
pub mod proto_state {
    use super::*;

    /// Writes the proto name.
    pub fn serialize<S: Serializer>(state: &TaskState, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(state_name(*state))
    }

    /// Reads the proto name or number (`null`: unspecified).
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<TaskState, D::Error> {
        let found = match Value::deserialize(deserializer)? {
            Value::Null => Some(TaskState::Unspecified),
            Value::String(name) => TaskState::ALL.into_iter().find(|state| state_name(*state) == name),
            Value::Number(number) => {
                number.as_i64().and_then(|number| TaskState::ALL.into_iter().find(|s| state_number(*s) == number))
            }
            _ => None,
        };
        found
            .ok_or_else(|| de::Error::custom("unknown 0.3 task state (expected TASK_STATE_…, e.g. TASK_STATE_WORKING)"))
    }
}

/// serde for a [`Role`] as the 0.3 proto enum.
pub mod proto_role {
    use super::*;

    /// Writes `ROLE_USER`, `ROLE_AGENT` or `ROLE_UNSPECIFIED`.
    pub fn serialize<S: Serializer>(role: &Role, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(role.as_str())
    }

    /// Reads the proto name or number (`null`: unspecified).
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Role, D::Error> {
        let found = match Value::deserialize(deserializer)? {
            Value::Null => Some(Role::Unspecified),
            Value::String(name) => Role::ALL.into_iter().find(|role| role.as_str() == name),
            Value::Number(number) => number.as_u64().and_then(|n| Role::ALL.get(usize::try_from(n).ok()?).copied()),
            _ => None,
        };
        found.ok_or_else(|| de::Error::custom("unknown 0.3 role (expected ROLE_USER or ROLE_AGENT)"))
    }
}

/// A part: the 0.3 JSON-RPC [`super::Part`], written as the proto oneof.
#[derive(Debug, Clone, PartialEq)]
pub struct Part(pub super::Part);

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        let metadata = match &self.0 {
            super::Part::Text { text, metadata } => {
                map.serialize_entry("text", text)?;
                metadata
            }
            super::Part::File { file, metadata } => {
                let mut object = Map::new();
                match &file.body {
                    FileBody::Uri(uri) => object.insert("fileWithUri".into(), Value::String(uri.clone())),
                    FileBody::Bytes(bytes) => object.insert("fileWithBytes".into(), Value::String(bytes.clone())),
                };
                if let Some(mime_type) = file.mime_type.as_ref().filter(|value| !value.is_empty()) {
                    object.insert("mimeType".into(), Value::String(mime_type.clone()));
                }
                if let Some(name) = file.name.as_ref().filter(|value| !value.is_empty()) {
                    object.insert("name".into(), Value::String(name.clone()));
                }
                map.serialize_entry("file", &object)?;
                metadata
            }
            super::Part::Data { data, metadata } => {
                map.serialize_entry("data", &serde_json::json!({ "data": data }))?;
                metadata
            }
        };
        if let Some(metadata) = metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct FileWire {
            #[serde(default, alias = "file_with_uri")]
            #[serde(rename = "fileWithUri")]
            uri: Option<String>,
            #[serde(default, alias = "file_with_bytes")]
            #[serde(rename = "fileWithBytes")]
            bytes: Option<String>,
            #[serde(default, alias = "mime_type", rename = "mimeType")]
            mime_type: Option<String>,
            #[serde(default)]
            name: Option<String>,
        }
        #[derive(Deserialize)]
        struct DataWire {
            #[serde(default)]
            data: Option<Map<String, Value>>,
        }
        #[derive(Deserialize)]
        struct Wire {
            #[serde(default)]
            text: Option<String>,
            #[serde(default)]
            file: Option<FileWire>,
            #[serde(default)]
            data: Option<DataWire>,
            #[serde(default)]
            metadata: Option<Map<String, Value>>,
        }
        let wire = Wire::deserialize(deserializer)?;
        let metadata = wire.metadata;
        let non_empty = |value: Option<String>| value.filter(|value| !value.is_empty());
        let part = match (wire.text, wire.file, wire.data) {
            (Some(text), None, None) => super::Part::Text { text, metadata },
            (None, Some(file), None) => {
                let body = match (file.uri, file.bytes) {
                    (Some(uri), None) => FileBody::Uri(uri),
                    (None, Some(bytes)) => FileBody::Bytes(bytes),
                    _ => return Err(de::Error::custom("a file part needs exactly one of fileWithUri, fileWithBytes")),
                };
                let file = FileContent { name: non_empty(file.name), mime_type: non_empty(file.mime_type), body };
                super::Part::File { file, metadata }
            }
            (None, None, Some(data)) => super::Part::Data { data: data.data.unwrap_or_default(), metadata },
            _ => return Err(de::Error::custom("Part: expected exactly one of text, file, data")),
        };
        Ok(Self(part))
    }
}

/// A message (proto `Message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique id, chosen by the message's creator.
    #[serde(default, alias = "message_id", deserialize_with = "null_as_default")]
    pub message_id: String,
    /// The context (empty: none).
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// The task (empty: none).
    #[serde(
        default,
        alias = "task_id",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    /// `ROLE_USER` or `ROLE_AGENT`.
    #[serde(default = "unspecified_role", with = "proto_role")]
    pub role: Role,
    /// The parts.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<Part>,
    /// Metadata of the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of the extensions present in the message.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

fn unspecified_role() -> Role {
    Role::Unspecified
}

/// A task status (proto `TaskStatus`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    /// The state.
    #[serde(default = "unspecified_state", with = "proto_state")]
    pub state: TaskState,
    /// A message that goes with the status (proto field `update`).
    #[serde(default, alias = "update", skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the status was recorded (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

fn unspecified_state() -> TaskState {
    TaskState::Unspecified
}

/// An artifact (proto `Artifact`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task.
    #[serde(default, alias = "artifact_id", deserialize_with = "null_as_default")]
    pub artifact_id: String,
    /// A human-readable name (empty: none).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// A human-readable description (empty: none).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The content.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    /// Metadata of the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of the extensions present in the artifact.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A task (proto `Task`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// The task's context (empty: none).
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// The current status.
    #[serde(default = "unknown_status")]
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

fn unknown_status() -> TaskStatus {
    TaskStatus { state: TaskState::Unspecified, message: None, timestamp: None }
}

/// A status update (proto `TaskStatusUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    #[serde(default, alias = "task_id", deserialize_with = "null_as_default")]
    pub task_id: String,
    /// The task's context.
    #[serde(default, alias = "context_id", deserialize_with = "null_as_default")]
    pub context_id: String,
    /// The new status.
    #[serde(default = "unknown_status")]
    pub status: TaskStatus,
    /// Whether this is the last event of the stream.
    #[serde(rename = "final", default, deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    pub is_final: bool,
    /// Metadata of the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// An artifact update (proto `TaskArtifactUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    #[serde(default, alias = "task_id", deserialize_with = "null_as_default")]
    pub task_id: String,
    /// The task's context.
    #[serde(default, alias = "context_id", deserialize_with = "null_as_default")]
    pub context_id: String,
    /// The artifact or chunk.
    pub artifact: Artifact,
    /// Whether the parts append to an artifact already sent with the same id.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    pub append: bool,
    /// Whether this is the artifact's last chunk.
    #[serde(default, alias = "last_chunk", deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    /// Metadata of the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// How a push notification authenticates to the webhook (proto `AuthenticationInfo`). `{}` (no
/// schemes) is no authentication; credentials without a scheme, or an empty scheme name, are
/// refused when read, as on 0.3 JSON-RPC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "AuthenticationFields")]
pub struct AuthenticationInfo {
    /// The schemes (`Bearer`, …). Empty: no authentication.
    #[serde(default, deserialize_with = "null_as_default")]
    pub schemes: Vec<String>,
    /// The credentials (empty: none).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub credentials: String,
}

/// [`AuthenticationInfo`] as read, before its rule is checked.
#[derive(Deserialize)]
struct AuthenticationFields {
    #[serde(default, deserialize_with = "null_as_default")]
    schemes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    credentials: String,
}

impl TryFrom<AuthenticationFields> for AuthenticationInfo {
    type Error = String;

    fn try_from(fields: AuthenticationFields) -> Result<Self, String> {
        super::check_authentication(&fields.schemes, Some(fields.credentials.as_str()))?;
        Ok(Self { schemes: fields.schemes, credentials: fields.credentials })
    }
}

/// A webhook (proto `PushNotificationConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushNotificationConfig {
    /// The config's id (empty: none).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Where notifications are POSTed.
    #[serde(default, deserialize_with = "null_as_default")]
    pub url: String,
    /// A token echoed to the webhook (empty: none).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// How to authenticate to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// A task's webhook (proto `TaskPushNotificationConfig`): named
/// `tasks/{task}/pushNotificationConfigs/{config}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// `tasks/{task}/pushNotificationConfigs/{config}`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// The webhook.
    #[serde(alias = "push_notification_config")]
    pub push_notification_config: PushNotificationConfig,
}

impl TaskPushNotificationConfig {
    /// The task and the config id the `name` holds (`tasks/{task}[/pushNotificationConfigs/{config}]`).
    pub fn name_parts(&self) -> (Option<&str>, Option<&str>) {
        name_parts(&self.name)
    }
}

/// The task and config id of a resource name `tasks/{task}[/pushNotificationConfigs/{config}]`.
pub fn name_parts(name: &str) -> (Option<&str>, Option<&str>) {
    let Some(rest) = name.strip_prefix("tasks/") else { return (None, None) };
    match rest.split_once("/pushNotificationConfigs/") {
        Some((task, config)) => (Some(task).filter(|t| !t.is_empty()), Some(config).filter(|c| !c.is_empty())),
        None => (Some(rest.trim_end_matches("/pushNotificationConfigs")).filter(|t| !t.is_empty()), None),
    }
}

/// The body of `POST /v1/tasks/{task}/pushNotificationConfigs` (proto
/// `CreateTaskPushNotificationConfigRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskPushNotificationConfigRequest {
    /// `tasks/{task}`.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub parent: String,
    /// The id the config gets (empty: the one in `config`, else the task's).
    #[serde(
        default,
        alias = "config_id",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub config_id: String,
    /// The config.
    pub config: TaskPushNotificationConfig,
}

/// Options of a send (proto `SendMessageConfiguration`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts.
    #[serde(
        default,
        alias = "accepted_output_modes",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    /// A webhook to register for the task.
    #[serde(default, alias = "push_notification", skip_serializing_if = "Option::is_none")]
    pub push_notification: Option<PushNotificationConfig>,
    /// At most this many recent messages in the returned task's history (0: unset).
    #[serde(default, alias = "history_length", deserialize_with = "i32_or_zero", skip_serializing_if = "is_zero")]
    pub history_length: i32,
    /// Wait for the task to end or to need the caller (absent: `false`, proto3's default).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    pub blocking: bool,
}

/// The body of `POST /v1/message:send` and `…:stream` (proto `SendMessageRequest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendMessageRequest {
    /// The message (proto field `request`).
    #[serde(alias = "request")]
    pub message: Message,
    /// Options of the send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Metadata of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// The answer of `POST /v1/message:send` (proto `SendMessageResponse`): `{"task": …}` or
/// `{"message": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// `{"task": …}`.
    Task(Task),
    /// `{"message": …}` (proto field `msg`).
    #[serde(alias = "msg")]
    Message(Message),
}

/// One event of a 0.3 REST stream (proto `StreamResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// `{"task": …}`.
    Task(Task),
    /// `{"message": …}` (proto field `msg`).
    #[serde(alias = "msg")]
    Message(Message),
    /// `{"statusUpdate": …}`.
    #[serde(alias = "status_update")]
    StatusUpdate(TaskStatusUpdateEvent),
    /// `{"artifactUpdate": …}`.
    #[serde(alias = "artifact_update")]
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// The answer of `GET /v1/tasks/{task}/pushNotificationConfigs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigResponse {
    /// The configs.
    #[serde(default, deserialize_with = "null_as_default")]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// The next page (empty: none).
    #[serde(
        default,
        alias = "next_page_token",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub next_page_token: String,
}

// ---- The conversion: proto ⇄ the 0.3 JSON-RPC shapes. ----

fn none_if_empty(value: String) -> Option<String> {
    (!value.is_empty()).then_some(value)
}

impl From<super::Message> for Message {
    /// `referenceTaskIds` has no proto field in 0.3: dropped.
    fn from(message: super::Message) -> Self {
        Self {
            message_id: message.message_id,
            context_id: message.context_id.unwrap_or_default(),
            task_id: message.task_id.unwrap_or_default(),
            role: message.role,
            content: message.parts.into_iter().map(Part).collect(),
            metadata: message.metadata,
            extensions: message.extensions,
        }
    }
}

impl From<Message> for super::Message {
    fn from(message: Message) -> Self {
        Self {
            kind: super::MessageKind,
            message_id: message.message_id,
            context_id: none_if_empty(message.context_id),
            task_id: none_if_empty(message.task_id),
            role: message.role,
            parts: message.content.into_iter().map(|part| part.0).collect(),
            metadata: message.metadata,
            extensions: message.extensions,
            reference_task_ids: Vec::new(),
        }
    }
}

impl From<super::TaskStatus> for TaskStatus {
    fn from(status: super::TaskStatus) -> Self {
        Self { state: status.state, message: status.message.map(Message::from), timestamp: status.timestamp }
    }
}

impl From<TaskStatus> for super::TaskStatus {
    fn from(status: TaskStatus) -> Self {
        Self { state: status.state, message: status.message.map(super::Message::from), timestamp: status.timestamp }
    }
}

impl From<super::Artifact> for Artifact {
    fn from(artifact: super::Artifact) -> Self {
        Self {
            artifact_id: artifact.artifact_id,
            name: artifact.name.unwrap_or_default(),
            description: artifact.description.unwrap_or_default(),
            parts: artifact.parts.into_iter().map(Part).collect(),
            metadata: artifact.metadata,
            extensions: artifact.extensions,
        }
    }
}

impl From<Artifact> for super::Artifact {
    fn from(artifact: Artifact) -> Self {
        Self {
            artifact_id: artifact.artifact_id,
            name: none_if_empty(artifact.name),
            description: none_if_empty(artifact.description),
            parts: artifact.parts.into_iter().map(|part| part.0).collect(),
            metadata: artifact.metadata,
            extensions: artifact.extensions,
        }
    }
}

impl From<super::Task> for Task {
    fn from(task: super::Task) -> Self {
        Self {
            id: task.id,
            context_id: task.context_id,
            status: task.status.into(),
            artifacts: task.artifacts.into_iter().map(Artifact::from).collect(),
            history: task.history.into_iter().map(Message::from).collect(),
            metadata: task.metadata,
        }
    }
}

impl From<Task> for super::Task {
    fn from(task: Task) -> Self {
        Self {
            kind: super::TaskKind,
            id: task.id,
            context_id: task.context_id,
            status: task.status.into(),
            artifacts: task.artifacts.into_iter().map(super::Artifact::from).collect(),
            history: task.history.into_iter().map(super::Message::from).collect(),
            metadata: task.metadata,
        }
    }
}

impl From<super::TaskStatusUpdateEvent> for TaskStatusUpdateEvent {
    fn from(update: super::TaskStatusUpdateEvent) -> Self {
        Self {
            task_id: update.task_id,
            context_id: update.context_id,
            status: update.status.into(),
            is_final: update.is_final,
            metadata: update.metadata,
        }
    }
}

impl From<TaskStatusUpdateEvent> for super::TaskStatusUpdateEvent {
    fn from(update: TaskStatusUpdateEvent) -> Self {
        Self {
            kind: super::StatusUpdateKind,
            task_id: update.task_id,
            context_id: update.context_id,
            status: update.status.into(),
            is_final: update.is_final,
            metadata: update.metadata,
        }
    }
}

impl From<super::TaskArtifactUpdateEvent> for TaskArtifactUpdateEvent {
    /// Unset `append` / `lastChunk` are `false` (proto3 has no unset boolean).
    fn from(update: super::TaskArtifactUpdateEvent) -> Self {
        Self {
            task_id: update.task_id,
            context_id: update.context_id,
            artifact: update.artifact.into(),
            append: update.append.unwrap_or(false),
            last_chunk: update.last_chunk.unwrap_or(false),
            metadata: update.metadata,
        }
    }
}

impl From<TaskArtifactUpdateEvent> for super::TaskArtifactUpdateEvent {
    /// `false` reads as unset.
    fn from(update: TaskArtifactUpdateEvent) -> Self {
        Self {
            kind: super::ArtifactUpdateKind,
            task_id: update.task_id,
            context_id: update.context_id,
            artifact: update.artifact.into(),
            append: update.append.then_some(true),
            last_chunk: update.last_chunk.then_some(true),
            metadata: update.metadata,
        }
    }
}

impl From<super::StreamEvent> for StreamResponse {
    fn from(event: super::StreamEvent) -> Self {
        match event {
            super::StreamEvent::Task(task) => Self::Task(task.into()),
            super::StreamEvent::Message(message) => Self::Message(message.into()),
            super::StreamEvent::StatusUpdate(update) => Self::StatusUpdate(update.into()),
            super::StreamEvent::ArtifactUpdate(update) => Self::ArtifactUpdate(update.into()),
        }
    }
}

impl From<StreamResponse> for super::StreamEvent {
    fn from(response: StreamResponse) -> Self {
        match response {
            StreamResponse::Task(task) => Self::Task(task.into()),
            StreamResponse::Message(message) => Self::Message(message.into()),
            StreamResponse::StatusUpdate(update) => Self::StatusUpdate(update.into()),
            StreamResponse::ArtifactUpdate(update) => Self::ArtifactUpdate(update.into()),
        }
    }
}

impl From<super::SendMessageResult> for SendMessageResponse {
    fn from(result: super::SendMessageResult) -> Self {
        match result {
            super::SendMessageResult::Task(task) => Self::Task(task.into()),
            super::SendMessageResult::Message(message) => Self::Message(message.into()),
        }
    }
}

impl From<SendMessageResponse> for super::SendMessageResult {
    fn from(response: SendMessageResponse) -> Self {
        match response {
            SendMessageResponse::Task(task) => Self::Task(task.into()),
            SendMessageResponse::Message(message) => Self::Message(message.into()),
        }
    }
}

impl From<super::PushNotificationConfig> for PushNotificationConfig {
    fn from(config: super::PushNotificationConfig) -> Self {
        Self {
            id: config.id.unwrap_or_default(),
            url: config.url,
            token: config.token.unwrap_or_default(),
            authentication: config.authentication.map(|authentication| AuthenticationInfo {
                schemes: authentication.schemes,
                credentials: authentication.credentials.unwrap_or_default(),
            }),
        }
    }
}

impl From<PushNotificationConfig> for super::PushNotificationConfig {
    fn from(config: PushNotificationConfig) -> Self {
        Self {
            id: none_if_empty(config.id),
            url: config.url,
            token: none_if_empty(config.token),
            authentication: config.authentication.map(|authentication| super::PushNotificationAuthenticationInfo {
                schemes: authentication.schemes,
                credentials: none_if_empty(authentication.credentials),
            }),
        }
    }
}

impl From<super::TaskPushNotificationConfig> for TaskPushNotificationConfig {
    fn from(config: super::TaskPushNotificationConfig) -> Self {
        let name = match config.push_notification_config.id.as_deref() {
            Some(id) if !id.is_empty() => format!("tasks/{}/pushNotificationConfigs/{id}", config.task_id),
            _ => format!("tasks/{}", config.task_id),
        };
        Self { name, push_notification_config: config.push_notification_config.into() }
    }
}

impl From<TaskPushNotificationConfig> for super::TaskPushNotificationConfig {
    /// The task from the `name`; the config id from the config, else from the `name`.
    fn from(config: TaskPushNotificationConfig) -> Self {
        let (task, named) = config.name_parts();
        let task_id = task.unwrap_or_default().to_owned();
        let named = named.map(str::to_owned);
        let mut push_notification_config = super::PushNotificationConfig::from(config.push_notification_config);
        if push_notification_config.id.is_none() {
            push_notification_config.id = named;
        }
        Self { task_id, push_notification_config }
    }
}

impl From<super::MessageSendConfiguration> for SendMessageConfiguration {
    /// Unset `blocking` is `true` (0.3's default), written out since proto3's default is `false`.
    fn from(configuration: super::MessageSendConfiguration) -> Self {
        Self {
            accepted_output_modes: configuration.accepted_output_modes,
            push_notification: configuration.push_notification_config.map(PushNotificationConfig::from),
            history_length: configuration.history_length.unwrap_or(0),
            blocking: configuration.blocking.unwrap_or(true),
        }
    }
}

impl From<SendMessageConfiguration> for super::MessageSendConfiguration {
    fn from(configuration: SendMessageConfiguration) -> Self {
        Self {
            accepted_output_modes: configuration.accepted_output_modes,
            blocking: Some(configuration.blocking),
            history_length: (configuration.history_length != 0).then_some(configuration.history_length),
            push_notification_config: configuration.push_notification.map(super::PushNotificationConfig::from),
        }
    }
}

impl From<super::MessageSendParams> for SendMessageRequest {
    /// A send without a configuration is written with one saying `blocking: true`: a proto3
    /// reader (the 0.3 Python SDK server) takes an absent configuration as not blocking.
    fn from(params: super::MessageSendParams) -> Self {
        Self {
            message: params.message.into(),
            configuration: Some(params.configuration.unwrap_or_default().into()),
            metadata: params.metadata,
        }
    }
}

impl From<SendMessageRequest> for super::MessageSendParams {
    fn from(request: SendMessageRequest) -> Self {
        Self {
            message: request.message.into(),
            configuration: request.configuration.map(Into::into),
            metadata: request.metadata,
        }
    }
}

impl From<Vec<super::TaskPushNotificationConfig>> for ListTaskPushNotificationConfigResponse {
    fn from(configs: Vec<super::TaskPushNotificationConfig>) -> Self {
        Self { configs: configs.into_iter().map(Into::into).collect(), next_page_token: String::new() }
    }
}
