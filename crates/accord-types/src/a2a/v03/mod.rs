//! The A2A 0.3 dialect's JSON-RPC wire shapes, and (in [`convert`]) the one conversion between
//! them and the v1.0 types every face and the client use.
//!
//! 0.3 differs from v1.0 in spelling, not in meaning:
//!
//! - **Discriminators.** Parts carry `kind` (`text`, `file`, `data`), and so do tasks (`task`),
//!   messages (`message`) and stream events (`status-update`, `artifact-update`). A missing
//!   `kind` is inferred from the members present; a wrong one is refused.
//! - **Enums** are lowercase kebab: states `submitted` … `input-required`, `auth-required`,
//!   `unknown`; roles `user` and `agent`. The v1.0 names are refused here.
//! - **Files** are a `file` part holding `{name, mimeType, bytes | uri}`; **data** parts hold a
//!   JSON object.
//! - **Status updates** carry `final`, true on the last event of a stream.
//! - **Push configs** nest: `{taskId, pushNotificationConfig: {id, url, token,
//!   authentication: {schemes: [..], credentials}}}`; an empty `schemes` is no authentication.
//! - **Errors** are `{code, message, data}` with the codes -32001 … -32007 (see
//!   [`error_object`]); v1.0's `ErrorInfo` array is not a 0.3 shape.
//!
//! Names are written camelCase and read camelCase or snake_case, as the 0.3 SDKs do.
//! Like the rest of [`crate::a2a`], this module owns shapes only: no I/O, no task rules.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::de::{null_as_default, opt_i32};
use super::errors::{A2aError, A2aErrorKind};
use super::jsonrpc::JsonRpcError;
use super::task::{Role, TaskState};
use super::validate::FieldViolation;

pub mod card;
pub mod convert;
pub mod proto;

/// The protocol version this dialect is, as written on a card's interface.
pub const PROTOCOL_VERSION: &str = "0.3";

/// The top-level `protocolVersion` a 0.3 card carries (the 0.3 schema's own default).
pub const CARD_PROTOCOL_VERSION: &str = "0.3.0";

/// The JSON-RPC method names of A2A 0.3.
pub mod methods {
    /// `message/send`: params `MessageSendParams`, result a `Task` or a `Message`.
    pub const MESSAGE_SEND: &str = "message/send";
    /// `message/stream`: params `MessageSendParams`, an SSE stream of events.
    pub const MESSAGE_STREAM: &str = "message/stream";
    /// `tasks/get`: params `TaskQueryParams`, result `Task`.
    pub const TASKS_GET: &str = "tasks/get";
    /// `tasks/cancel`: params `TaskIdParams`, result `Task`.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// `tasks/resubscribe`: params `TaskIdParams`, an SSE stream of events.
    pub const TASKS_RESUBSCRIBE: &str = "tasks/resubscribe";
    /// `tasks/pushNotificationConfig/set`: params and result `TaskPushNotificationConfig`.
    pub const PUSH_CONFIG_SET: &str = "tasks/pushNotificationConfig/set";
    /// `tasks/pushNotificationConfig/get`: params `GetTaskPushNotificationConfigParams`.
    pub const PUSH_CONFIG_GET: &str = "tasks/pushNotificationConfig/get";
    /// `tasks/pushNotificationConfig/list`: params `ListTaskPushNotificationConfigParams`.
    pub const PUSH_CONFIG_LIST: &str = "tasks/pushNotificationConfig/list";
    /// `tasks/pushNotificationConfig/delete`: params `DeleteTaskPushNotificationConfigParams`,
    /// result `null`.
    pub const PUSH_CONFIG_DELETE: &str = "tasks/pushNotificationConfig/delete";
    /// `agent/getAuthenticatedExtendedCard`: no params, result the card.
    pub const GET_AUTHENTICATED_EXTENDED_CARD: &str = "agent/getAuthenticatedExtendedCard";

    /// Every method.
    pub const ALL: [&str; 10] = [
        MESSAGE_SEND,
        MESSAGE_STREAM,
        TASKS_GET,
        TASKS_CANCEL,
        TASKS_RESUBSCRIBE,
        PUSH_CONFIG_SET,
        PUSH_CONFIG_GET,
        PUSH_CONFIG_LIST,
        PUSH_CONFIG_DELETE,
        GET_AUTHENTICATED_EXTENDED_CARD,
    ];
}

/// Declares a `kind` discriminator that writes one fixed string and reads only that string.
macro_rules! kind_marker {
    ($(#[$meta:meta])* $name:ident = $value:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name;

        impl $name {
            /// The string this marker stands for.
            pub const VALUE: &'static str = $value;
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let kind = String::deserialize(deserializer)?;
                if kind == $value {
                    Ok(Self)
                } else {
                    Err(de::Error::custom(format!("kind must be {:?}, found {kind:?}", $value)))
                }
            }
        }
    };
}

kind_marker!(
    /// `kind: "task"`.
    TaskKind = "task"
);
kind_marker!(
    /// `kind: "message"`.
    MessageKind = "message"
);
kind_marker!(
    /// `kind: "status-update"`.
    StatusUpdateKind = "status-update"
);
kind_marker!(
    /// `kind: "artifact-update"`.
    ArtifactUpdateKind = "artifact-update"
);

/// serde for a [`TaskState`] in its 0.3 spelling only (`input-required`, `unknown`, …).
pub mod state_name {
    use super::*;

    /// Writes the 0.3 spelling.
    pub fn serialize<S: Serializer>(state: &TaskState, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(state.v03_name())
    }

    /// Reads the 0.3 spelling.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<TaskState, D::Error> {
        let name = String::deserialize(deserializer)?;
        TaskState::ALL
            .into_iter()
            .find(|state| state.v03_name() == name)
            .ok_or_else(|| de::Error::custom(format!("unknown 0.3 task state {name:?}")))
    }
}

/// serde for a [`Role`] in its 0.3 spelling only (`user`, `agent`).
pub mod role_name {
    use super::*;

    /// Writes `user` or `agent` (an unspecified role, which no valid message has, as `user`).
    pub fn serialize<S: Serializer>(role: &Role, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(if *role == Role::Agent { "agent" } else { "user" })
    }

    /// Reads `user` or `agent`.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Role, D::Error> {
        match String::deserialize(deserializer)?.as_str() {
            "user" => Ok(Role::User),
            "agent" => Ok(Role::Agent),
            other => Err(de::Error::custom(format!("unknown 0.3 role {other:?} (expected user or agent)"))),
        }
    }
}

/// The content of a `file` part: bytes or a URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileBody {
    /// `bytes`: base64.
    Bytes(String),
    /// `uri`: where the content lives.
    Uri(String),
}

/// The `file` member of a file part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    /// The file's name.
    pub name: Option<String>,
    /// Its media type.
    pub mime_type: Option<String>,
    /// Its bytes or URI.
    pub body: FileBody,
}

/// A 0.3 part, discriminated by `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// `{"kind": "text", "text": …}`.
    Text {
        /// The text.
        text: String,
        /// Metadata of the part.
        metadata: Option<Map<String, Value>>,
    },
    /// `{"kind": "file", "file": {name, mimeType, bytes | uri}}`.
    File {
        /// The file.
        file: FileContent,
        /// Metadata of the part.
        metadata: Option<Map<String, Value>>,
    },
    /// `{"kind": "data", "data": {…}}`: a JSON object.
    Data {
        /// The object.
        data: Map<String, Value>,
        /// Metadata of the part.
        metadata: Option<Map<String, Value>>,
    },
}

impl Part {
    /// A text part with no metadata.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into(), metadata: None }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        let metadata = match self {
            Self::Text { text, metadata } => {
                map.serialize_entry("kind", "text")?;
                map.serialize_entry("text", text)?;
                metadata
            }
            Self::File { file, metadata } => {
                let mut object = Map::new();
                if let Some(name) = &file.name {
                    object.insert("name".into(), Value::String(name.clone()));
                }
                if let Some(mime_type) = &file.mime_type {
                    object.insert("mimeType".into(), Value::String(mime_type.clone()));
                }
                match &file.body {
                    FileBody::Bytes(bytes) => object.insert("bytes".into(), Value::String(bytes.clone())),
                    FileBody::Uri(uri) => object.insert("uri".into(), Value::String(uri.clone())),
                };
                map.serialize_entry("kind", "file")?;
                map.serialize_entry("file", &object)?;
                metadata
            }
            Self::Data { data, metadata } => {
                map.serialize_entry("kind", "data")?;
                map.serialize_entry("data", data)?;
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
        #[serde(rename_all = "camelCase")]
        struct FileWire {
            #[serde(default)]
            name: Option<String>,
            #[serde(default, alias = "mime_type")]
            mime_type: Option<String>,
            #[serde(default)]
            bytes: Option<String>,
            #[serde(default)]
            uri: Option<String>,
        }
        #[derive(Deserialize)]
        struct Wire {
            #[serde(default)]
            kind: Option<String>,
            #[serde(default)]
            text: Option<String>,
            #[serde(default)]
            file: Option<FileWire>,
            #[serde(default)]
            data: Option<Value>,
            #[serde(default)]
            metadata: Option<Map<String, Value>>,
        }
        let wire = Wire::deserialize(deserializer)?;
        let kind = match wire.kind.as_deref() {
            Some(kind) => kind.to_owned(),
            // Without `kind`, the one content member present names it.
            None => match (&wire.text, &wire.file, &wire.data) {
                (Some(_), None, None) => "text".into(),
                (None, Some(_), None) => "file".into(),
                (None, None, Some(_)) => "data".into(),
                _ => return Err(de::Error::custom("Part: expected kind, or exactly one of text, file, data")),
            },
        };
        let metadata = wire.metadata;
        match kind.as_str() {
            "text" => {
                let text = wire.text.ok_or_else(|| de::Error::custom("a text part needs text"))?;
                Ok(Self::Text { text, metadata })
            }
            "file" => {
                let file = wire.file.ok_or_else(|| de::Error::custom("a file part needs file"))?;
                let body = match (file.bytes, file.uri) {
                    (Some(bytes), None) => FileBody::Bytes(bytes),
                    (None, Some(uri)) => FileBody::Uri(uri),
                    _ => return Err(de::Error::custom("a file part's file needs exactly one of bytes, uri")),
                };
                Ok(Self::File { file: FileContent { name: file.name, mime_type: file.mime_type, body }, metadata })
            }
            "data" => match wire.data {
                Some(Value::Object(data)) => Ok(Self::Data { data, metadata }),
                Some(_) => Err(de::Error::custom("a data part's data must be a JSON object")),
                None => Err(de::Error::custom("a data part needs data")),
            },
            other => Err(de::Error::custom(format!("unknown part kind {other:?} (expected text, file or data)"))),
        }
    }
}

/// A 0.3 message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// `"message"`.
    #[serde(default)]
    pub kind: MessageKind,
    /// Unique id, chosen by the message's creator.
    #[serde(alias = "message_id")]
    pub message_id: String,
    /// The context the message belongs to.
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task the message belongs to.
    #[serde(default, alias = "task_id", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// `user` or `agent`.
    #[serde(with = "role_name")]
    pub role: Role,
    /// The content.
    pub parts: Vec<Part>,
    /// Metadata of the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of the extensions present in the message.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Ids of tasks this message refers to.
    #[serde(
        default,
        alias = "reference_task_ids",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
}

/// A 0.3 task status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    /// The state, in its 0.3 spelling.
    #[serde(with = "state_name")]
    pub state: TaskState,
    /// A message that goes with the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the status was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// A 0.3 artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task.
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content.
    pub parts: Vec<Part>,
    /// Metadata of the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of the extensions present in the artifact.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A 0.3 task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `"task"`.
    #[serde(default)]
    pub kind: TaskKind,
    /// The task's id.
    pub id: String,
    /// The task's context (required in 0.3).
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The current status.
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

/// A 0.3 status update, with `final`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// `"status-update"`.
    #[serde(default)]
    pub kind: StatusUpdateKind,
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The task's context.
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Whether this is the last event of the stream.
    #[serde(rename = "final")]
    pub is_final: bool,
    /// Metadata of the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A 0.3 artifact update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// `"artifact-update"`.
    #[serde(default)]
    pub kind: ArtifactUpdateKind,
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The task's context.
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The artifact or chunk.
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

/// The result of `message/send`: a task or a direct reply, told apart by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SendMessageResult {
    /// `kind: "task"`.
    Task(Task),
    /// `kind: "message"`.
    Message(Message),
}

/// One event of a 0.3 stream (`message/stream`, `tasks/resubscribe`), told apart by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StreamEvent {
    /// `kind: "task"`.
    Task(Task),
    /// `kind: "message"`.
    Message(Message),
    /// `kind: "status-update"`.
    StatusUpdate(TaskStatusUpdateEvent),
    /// `kind: "artifact-update"`.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// How a push notification authenticates to the webhook (0.3: a list of schemes). The list may
/// be empty — no authentication, as the 0.3 schema allows — but then there are no credentials
/// either: credentials without a scheme, or an empty scheme name, are refused when read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "AuthenticationFields")]
pub struct PushNotificationAuthenticationInfo {
    /// The schemes (`Bearer`, …); Accord uses the first. Empty: no authentication.
    pub schemes: Vec<String>,
    /// The credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// [`PushNotificationAuthenticationInfo`] as read, before its rule is checked.
#[derive(Deserialize)]
struct AuthenticationFields {
    schemes: Vec<String>,
    #[serde(default)]
    credentials: Option<String>,
}

impl TryFrom<AuthenticationFields> for PushNotificationAuthenticationInfo {
    type Error = String;

    fn try_from(fields: AuthenticationFields) -> Result<Self, String> {
        check_authentication(&fields.schemes, fields.credentials.as_deref())?;
        Ok(Self { schemes: fields.schemes, credentials: fields.credentials })
    }
}

/// The rule of a 0.3 push authentication, in both bindings: no empty scheme name, and no
/// credentials without a scheme to present them with.
pub(crate) fn check_authentication(schemes: &[String], credentials: Option<&str>) -> Result<(), String> {
    if schemes.iter().any(|scheme| scheme.trim().is_empty()) {
        return Err("authentication.schemes: a scheme name must not be empty".into());
    }
    if schemes.is_empty() && credentials.is_some_and(|credentials| !credentials.is_empty()) {
        return Err("authentication.credentials: credentials need a scheme in authentication.schemes".into());
    }
    Ok(())
}

/// A webhook (0.3 `PushNotificationConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushNotificationConfig {
    /// The config's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Where notifications are POSTed.
    pub url: String,
    /// A token echoed to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How to authenticate to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushNotificationAuthenticationInfo>,
}

/// A task's webhook (0.3 `TaskPushNotificationConfig`): params and result of
/// `tasks/pushNotificationConfig/set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The webhook.
    #[serde(alias = "push_notification_config")]
    pub push_notification_config: PushNotificationConfig,
}

/// Options of a send (0.3 `MessageSendConfiguration`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSendConfiguration {
    /// Media types the client accepts.
    #[serde(
        default,
        alias = "accepted_output_modes",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    /// Wait for the task to end or to need the caller (`true`, the default) or return at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    /// At most this many recent messages in the returned task's history.
    #[serde(default, alias = "history_length", deserialize_with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// A webhook to register for the task.
    #[serde(default, alias = "push_notification_config", skip_serializing_if = "Option::is_none")]
    pub push_notification_config: Option<PushNotificationConfig>,
}

/// Params of `message/send` and `message/stream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageSendParams {
    /// The message.
    pub message: Message,
    /// Options of the send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<MessageSendConfiguration>,
    /// Metadata of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// Params of `tasks/get`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskQueryParams {
    /// The task.
    pub id: String,
    /// At most this many recent messages in the history.
    #[serde(default, alias = "history_length", deserialize_with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Metadata of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// Params of `tasks/cancel`, `tasks/resubscribe` and `tasks/pushNotificationConfig/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskIdParams {
    /// The task.
    pub id: String,
    /// Metadata of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// Params of `tasks/pushNotificationConfig/get` and `…/delete`: the task and, for get, optionally
/// the config (without one: the config whose id is the task's, as a set without an id makes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigParams {
    /// The task.
    pub id: String,
    /// The config.
    #[serde(default, alias = "push_notification_config_id", skip_serializing_if = "Option::is_none")]
    pub push_notification_config_id: Option<String>,
    /// Metadata of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// The 0.3 name of an error (`TaskNotFoundError`, `AuthenticatedExtendedCardNotConfiguredError`).
pub fn error_name(kind: A2aErrorKind) -> &'static str {
    match kind {
        A2aErrorKind::ExtendedAgentCardNotConfigured => "AuthenticatedExtendedCardNotConfiguredError",
        other => other.name(),
    }
}

/// The 0.3 default message of an error (the 0.3 schema's; Accord's own errors keep theirs).
pub fn default_message(kind: A2aErrorKind) -> &'static str {
    match kind {
        A2aErrorKind::ExtendedAgentCardNotConfigured => "Authenticated Extended Card is not configured",
        other => other.default_message(),
    }
}

/// The 0.3 JSON-RPC `error` object of an error: `{code, message, data}`. The code is the same
/// number as in v1.0 (-32001 … -32007 are 0.3's own; -32008, -32009 and Accord's codes keep
/// theirs). `data`, left out when there is nothing more to say, is an object:
/// `{"reason": …, "metadata": {…}, "fieldViolations": […]}` — the facts v1.0 puts in its
/// `ErrorInfo` and `BadRequest` details, in one plain object.
pub fn error_object(error: &A2aError) -> JsonRpcError {
    let mut data = Map::new();
    if !error.metadata.is_empty() || !error.violations.is_empty() {
        if let Some(reason) = error.kind.reason() {
            data.insert("reason".into(), Value::String(reason.to_owned()));
        }
        if !error.metadata.is_empty() {
            let metadata: Map<String, Value> =
                error.metadata.iter().map(|(key, value)| (key.clone(), Value::String(value.clone()))).collect();
            data.insert("metadata".into(), Value::Object(metadata));
        }
        if !error.violations.is_empty() {
            let violations: Vec<Value> = error
                .violations
                .iter()
                .map(|violation| serde_json::json!({"field": violation.field, "description": violation.description}))
                .collect();
            data.insert("fieldViolations".into(), Value::Array(violations));
        }
    }
    JsonRpcError {
        code: i64::from(error.code()),
        message: error.message.clone(),
        data: (!data.is_empty()).then_some(Value::Object(data)),
    }
}

/// Reads a 0.3 `error` object back (client side), when its code is in the catalogue.
pub fn error_from_object(object: &JsonRpcError) -> Option<A2aError> {
    let kind = object.kind()?;
    let data = object.data.as_ref().and_then(Value::as_object);
    let metadata: BTreeMap<String, String> = data
        .and_then(|data| data.get("metadata"))
        .and_then(Value::as_object)
        .map(|metadata| {
            metadata.iter().filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned()))).collect()
        })
        .unwrap_or_default();
    let violations: Vec<FieldViolation> = data
        .and_then(|data| data.get("fieldViolations"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    Some(FieldViolation::new(item.get("field")?.as_str()?, item.get("description")?.as_str()?))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut error = A2aError::new(kind).with_message(object.message.clone()).with_violations(violations);
    error.metadata = metadata;
    Some(error)
}
