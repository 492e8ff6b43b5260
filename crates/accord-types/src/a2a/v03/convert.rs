//! The one conversion between the 0.3 shapes and the v1.0 types: `From` both ways for every
//! pair. 1.0 → 0.3 → 1.0 is the identity on everything 0.3 can express; what it cannot is
//! projected as follows (and listed in the docs, `docs/a2a-0.3.md`):
//!
//! - a `text` or `data` part's `filename` and `mediaType` are dropped (0.3 has them on files only);
//! - a `data` part whose value is not a JSON object becomes `{"value": <value>}`;
//! - a task without a context id gets `contextId: ""` (required in 0.3), and an empty context id
//!   reads back as none;
//! - `tenant` is dropped (0.3 has no tenants);
//! - push authentication's one `scheme` is the list `schemes: [scheme]`; of several 0.3 schemes
//!   the first is kept; an empty list (no credentials) is no authentication, and reads back as
//!   no `authentication` member;
//! - `returnImmediately: true` is `blocking: false` and the reverse; unset stays unset;
//! - a status update's `final` is true when its state is terminal or interrupted — where an
//!   Accord stream ends — and is dropped on the way back (v1.0 ends a stream by closing it).

use serde_json::{Map, Value};

use super::*;
use crate::a2a::{requests as v1r, task as v1};

impl From<v1::Part> for Part {
    fn from(part: v1::Part) -> Self {
        let metadata = part.metadata;
        let file = |body| FileContent { name: part.filename.clone(), mime_type: part.media_type.clone(), body };
        match part.content {
            v1::PartContent::Text(text) => Self::Text { text, metadata },
            v1::PartContent::Raw(bytes) => Self::File { file: file(FileBody::Bytes(bytes)), metadata },
            v1::PartContent::Url(uri) => Self::File { file: file(FileBody::Uri(uri)), metadata },
            v1::PartContent::Data(Value::Object(data)) => Self::Data { data, metadata },
            v1::PartContent::Data(other) => {
                let mut data = Map::new();
                data.insert("value".into(), other);
                Self::Data { data, metadata }
            }
        }
    }
}

impl From<Part> for v1::Part {
    fn from(part: Part) -> Self {
        match part {
            Part::Text { text, metadata } => Self { metadata, ..Self::text(text) },
            Part::Data { data, metadata } => Self { metadata, ..Self::data(Value::Object(data)) },
            Part::File { file, metadata } => {
                let content = match file.body {
                    FileBody::Bytes(bytes) => v1::PartContent::Raw(bytes),
                    FileBody::Uri(uri) => v1::PartContent::Url(uri),
                };
                Self { content, metadata, filename: file.name, media_type: file.mime_type }
            }
        }
    }
}

fn parts_to_v03(parts: Vec<v1::Part>) -> Vec<Part> {
    parts.into_iter().map(Part::from).collect()
}

fn parts_from_v03(parts: Vec<Part>) -> Vec<v1::Part> {
    parts.into_iter().map(v1::Part::from).collect()
}

impl From<v1::Message> for Message {
    fn from(message: v1::Message) -> Self {
        Self {
            kind: MessageKind,
            message_id: message.message_id,
            context_id: message.context_id,
            task_id: message.task_id,
            role: message.role,
            parts: parts_to_v03(message.parts),
            metadata: message.metadata,
            extensions: message.extensions,
            reference_task_ids: message.reference_task_ids,
        }
    }
}

impl From<Message> for v1::Message {
    fn from(message: Message) -> Self {
        Self {
            message_id: message.message_id,
            context_id: message.context_id,
            task_id: message.task_id,
            role: message.role,
            parts: parts_from_v03(message.parts),
            metadata: message.metadata,
            extensions: message.extensions,
            reference_task_ids: message.reference_task_ids,
        }
    }
}

impl From<v1::TaskStatus> for TaskStatus {
    fn from(status: v1::TaskStatus) -> Self {
        Self { state: status.state, message: status.message.map(Message::from), timestamp: status.timestamp }
    }
}

impl From<TaskStatus> for v1::TaskStatus {
    fn from(status: TaskStatus) -> Self {
        Self { state: status.state, message: status.message.map(v1::Message::from), timestamp: status.timestamp }
    }
}

impl From<v1::Artifact> for Artifact {
    fn from(artifact: v1::Artifact) -> Self {
        Self {
            artifact_id: artifact.artifact_id,
            name: artifact.name,
            description: artifact.description,
            parts: parts_to_v03(artifact.parts),
            metadata: artifact.metadata,
            extensions: artifact.extensions,
        }
    }
}

impl From<Artifact> for v1::Artifact {
    fn from(artifact: Artifact) -> Self {
        Self {
            artifact_id: artifact.artifact_id,
            name: artifact.name,
            description: artifact.description,
            parts: parts_from_v03(artifact.parts),
            metadata: artifact.metadata,
            extensions: artifact.extensions,
        }
    }
}

/// An empty context id reads as none (0.3 requires the member; v1.0 may leave it out).
fn context_from_v03(context_id: String) -> Option<String> {
    (!context_id.is_empty()).then_some(context_id)
}

impl From<v1::Task> for Task {
    fn from(task: v1::Task) -> Self {
        Self {
            kind: TaskKind,
            id: task.id,
            context_id: task.context_id.unwrap_or_default(),
            status: task.status.into(),
            artifacts: task.artifacts.into_iter().map(Artifact::from).collect(),
            history: task.history.into_iter().map(Message::from).collect(),
            metadata: task.metadata,
        }
    }
}

impl From<Task> for v1::Task {
    fn from(task: Task) -> Self {
        Self {
            id: task.id,
            context_id: context_from_v03(task.context_id),
            status: task.status.into(),
            artifacts: task.artifacts.into_iter().map(v1::Artifact::from).collect(),
            history: task.history.into_iter().map(v1::Message::from).collect(),
            metadata: task.metadata,
        }
    }
}

/// Whether a status update in `state` is the last event of an Accord stream: the task ended or
/// waits for its caller.
pub fn is_final(state: TaskState) -> bool {
    state.is_terminal() || state.is_interrupted()
}

impl From<v1::TaskStatusUpdateEvent> for TaskStatusUpdateEvent {
    fn from(update: v1::TaskStatusUpdateEvent) -> Self {
        Self {
            kind: StatusUpdateKind,
            task_id: update.task_id,
            context_id: update.context_id,
            is_final: is_final(update.status.state),
            status: update.status.into(),
            metadata: update.metadata,
        }
    }
}

impl From<TaskStatusUpdateEvent> for v1::TaskStatusUpdateEvent {
    fn from(update: TaskStatusUpdateEvent) -> Self {
        Self {
            task_id: update.task_id,
            context_id: update.context_id,
            status: update.status.into(),
            metadata: update.metadata,
        }
    }
}

impl From<v1::TaskArtifactUpdateEvent> for TaskArtifactUpdateEvent {
    fn from(update: v1::TaskArtifactUpdateEvent) -> Self {
        Self {
            kind: ArtifactUpdateKind,
            task_id: update.task_id,
            context_id: update.context_id,
            artifact: update.artifact.into(),
            append: update.append,
            last_chunk: update.last_chunk,
            metadata: update.metadata,
        }
    }
}

impl From<TaskArtifactUpdateEvent> for v1::TaskArtifactUpdateEvent {
    fn from(update: TaskArtifactUpdateEvent) -> Self {
        Self {
            task_id: update.task_id,
            context_id: update.context_id,
            artifact: update.artifact.into(),
            append: update.append,
            last_chunk: update.last_chunk,
            metadata: update.metadata,
        }
    }
}

impl From<v1::StreamResponse> for StreamEvent {
    fn from(response: v1::StreamResponse) -> Self {
        match response {
            v1::StreamResponse::Task(task) => Self::Task(task.into()),
            v1::StreamResponse::Message(message) => Self::Message(message.into()),
            v1::StreamResponse::StatusUpdate(update) => Self::StatusUpdate(update.into()),
            v1::StreamResponse::ArtifactUpdate(update) => Self::ArtifactUpdate(update.into()),
        }
    }
}

impl From<StreamEvent> for v1::StreamResponse {
    fn from(event: StreamEvent) -> Self {
        match event {
            StreamEvent::Task(task) => Self::Task(task.into()),
            StreamEvent::Message(message) => Self::Message(message.into()),
            StreamEvent::StatusUpdate(update) => Self::StatusUpdate(update.into()),
            StreamEvent::ArtifactUpdate(update) => Self::ArtifactUpdate(update.into()),
        }
    }
}

impl From<v1::SendMessageResponse> for SendMessageResult {
    fn from(response: v1::SendMessageResponse) -> Self {
        match response {
            v1::SendMessageResponse::Task(task) => Self::Task(task.into()),
            v1::SendMessageResponse::Message(message) => Self::Message(message.into()),
        }
    }
}

impl From<SendMessageResult> for v1::SendMessageResponse {
    fn from(result: SendMessageResult) -> Self {
        match result {
            SendMessageResult::Task(task) => Self::Task(task.into()),
            SendMessageResult::Message(message) => Self::Message(message.into()),
        }
    }
}

impl From<v1r::TaskPushNotificationConfig> for PushNotificationConfig {
    fn from(config: v1r::TaskPushNotificationConfig) -> Self {
        Self {
            id: config.id,
            url: config.url,
            token: config.token,
            authentication: config.authentication.map(|authentication| PushNotificationAuthenticationInfo {
                schemes: vec![authentication.scheme],
                credentials: authentication.credentials,
            }),
        }
    }
}

impl From<PushNotificationConfig> for v1r::TaskPushNotificationConfig {
    /// The config with no task: a send's inline webhook.
    fn from(config: PushNotificationConfig) -> Self {
        Self {
            tenant: None,
            id: config.id,
            task_id: None,
            url: config.url,
            token: config.token,
            authentication: config.authentication.and_then(|authentication| {
                let scheme = authentication.schemes.into_iter().next();
                match (scheme, authentication.credentials) {
                    // No scheme and nothing to present: no authentication, as 0.3 allows.
                    (None, credentials) if credentials.as_deref().is_none_or(str::is_empty) => None,
                    // Credentials without a scheme (refused when read; only a value built by
                    // hand has them) read as an empty scheme, which validation refuses by name.
                    (scheme, credentials) => {
                        Some(v1r::AuthenticationInfo { scheme: scheme.unwrap_or_default(), credentials })
                    }
                }
            }),
        }
    }
}

impl From<v1r::TaskPushNotificationConfig> for TaskPushNotificationConfig {
    fn from(mut config: v1r::TaskPushNotificationConfig) -> Self {
        let task_id = config.task_id.take().unwrap_or_default();
        Self { task_id, push_notification_config: config.into() }
    }
}

impl From<TaskPushNotificationConfig> for v1r::TaskPushNotificationConfig {
    fn from(config: TaskPushNotificationConfig) -> Self {
        let task_id = (!config.task_id.is_empty()).then_some(config.task_id);
        Self { task_id, ..config.push_notification_config.into() }
    }
}

impl TaskPushNotificationConfig {
    /// A 0.3 `set` as the 1.0 create request: a config without an id takes the task's id, as the
    /// 0.3 SDKs expect (a `get` without a config id asks for that one: [`PushConfigParams::config_id`]).
    /// The plain conversion leaves the id as it is, so that a round trip keeps it.
    pub fn into_create(self) -> v1r::TaskPushNotificationConfig {
        let mut config = v1r::TaskPushNotificationConfig::from(self);
        if config.id.as_deref().is_none_or(str::is_empty) {
            config.id.clone_from(&config.task_id);
        }
        config
    }
}

impl From<v1r::SendMessageConfiguration> for MessageSendConfiguration {
    fn from(configuration: v1r::SendMessageConfiguration) -> Self {
        Self {
            accepted_output_modes: configuration.accepted_output_modes,
            blocking: configuration.return_immediately.map(|immediately| !immediately),
            history_length: configuration.history_length,
            push_notification_config: configuration.task_push_notification_config.map(PushNotificationConfig::from),
        }
    }
}

impl From<MessageSendConfiguration> for v1r::SendMessageConfiguration {
    fn from(configuration: MessageSendConfiguration) -> Self {
        Self {
            accepted_output_modes: configuration.accepted_output_modes,
            task_push_notification_config: configuration.push_notification_config.map(Into::into),
            history_length: configuration.history_length,
            return_immediately: configuration.blocking.map(|blocking| !blocking),
        }
    }
}

impl From<v1r::SendMessageRequest> for MessageSendParams {
    fn from(request: v1r::SendMessageRequest) -> Self {
        Self {
            message: request.message.into(),
            configuration: request.configuration.map(Into::into),
            metadata: request.metadata,
        }
    }
}

impl From<MessageSendParams> for v1r::SendMessageRequest {
    fn from(params: MessageSendParams) -> Self {
        Self {
            tenant: None,
            message: params.message.into(),
            configuration: params.configuration.map(Into::into),
            metadata: params.metadata,
        }
    }
}

impl From<v1r::GetTaskRequest> for TaskQueryParams {
    fn from(request: v1r::GetTaskRequest) -> Self {
        Self { id: request.id, history_length: request.history_length, metadata: None }
    }
}

impl From<TaskQueryParams> for v1r::GetTaskRequest {
    fn from(params: TaskQueryParams) -> Self {
        Self { tenant: None, id: params.id, history_length: params.history_length }
    }
}

impl From<v1r::CancelTaskRequest> for TaskIdParams {
    fn from(request: v1r::CancelTaskRequest) -> Self {
        Self { id: request.id, metadata: request.metadata }
    }
}

impl From<TaskIdParams> for v1r::CancelTaskRequest {
    fn from(params: TaskIdParams) -> Self {
        Self { tenant: None, id: params.id, metadata: params.metadata }
    }
}

impl From<TaskIdParams> for v1r::SubscribeToTaskRequest {
    fn from(params: TaskIdParams) -> Self {
        Self { tenant: None, id: params.id }
    }
}

impl From<TaskIdParams> for v1r::ListTaskPushNotificationConfigsRequest {
    fn from(params: TaskIdParams) -> Self {
        Self { tenant: None, task_id: params.id, page_size: None, page_token: None }
    }
}

impl PushConfigParams {
    /// The config named, or — when none is — the config whose id is the task's (the id a 0.3 set
    /// without one gets).
    pub fn config_id(&self) -> String {
        self.push_notification_config_id.clone().filter(|id| !id.is_empty()).unwrap_or_else(|| self.id.clone())
    }
}

impl From<PushConfigParams> for v1r::GetTaskPushNotificationConfigRequest {
    fn from(params: PushConfigParams) -> Self {
        Self { tenant: None, id: params.config_id(), task_id: params.id }
    }
}

impl From<PushConfigParams> for v1r::DeleteTaskPushNotificationConfigRequest {
    fn from(params: PushConfigParams) -> Self {
        Self { tenant: None, id: params.config_id(), task_id: params.id }
    }
}
