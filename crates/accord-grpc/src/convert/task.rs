//! Tasks, messages, parts, artifacts, the streaming events and the send response.

use accord_types::a2a;

use super::{
    ConvertError, convert, convert_list, convert_opt, convert_required, decode_base64, encode_base64, non_empty,
    or_empty, struct_from_pb, struct_to_pb, timestamp_from_pb, timestamp_to_pb, true_or_none, value_from_pb,
    value_to_pb,
};
use crate::pb;

// ---------------------------------------------------------------------------------------------
// Enums.

impl TryFrom<a2a::TaskState> for pb::TaskState {
    type Error = ConvertError;

    fn try_from(state: a2a::TaskState) -> Result<Self, ConvertError> {
        use a2a::TaskState as S;
        Ok(match state {
            S::Unspecified => Self::Unspecified,
            S::Submitted => Self::Submitted,
            S::Working => Self::Working,
            S::Completed => Self::Completed,
            S::Failed => Self::Failed,
            S::Canceled => Self::Canceled,
            S::InputRequired => Self::InputRequired,
            S::Rejected => Self::Rejected,
            S::AuthRequired => Self::AuthRequired,
        })
    }
}

impl TryFrom<pb::TaskState> for a2a::TaskState {
    type Error = ConvertError;

    fn try_from(state: pb::TaskState) -> Result<Self, ConvertError> {
        use pb::TaskState as S;
        Ok(match state {
            S::Unspecified => Self::Unspecified,
            S::Submitted => Self::Submitted,
            S::Working => Self::Working,
            S::Completed => Self::Completed,
            S::Failed => Self::Failed,
            S::Canceled => Self::Canceled,
            S::InputRequired => Self::InputRequired,
            S::Rejected => Self::Rejected,
            S::AuthRequired => Self::AuthRequired,
        })
    }
}

impl TryFrom<a2a::Role> for pb::Role {
    type Error = ConvertError;

    fn try_from(role: a2a::Role) -> Result<Self, ConvertError> {
        Ok(match role {
            a2a::Role::Unspecified => Self::Unspecified,
            a2a::Role::User => Self::User,
            a2a::Role::Agent => Self::Agent,
        })
    }
}

impl TryFrom<pb::Role> for a2a::Role {
    type Error = ConvertError;

    fn try_from(role: pb::Role) -> Result<Self, ConvertError> {
        Ok(match role {
            pb::Role::Unspecified => Self::Unspecified,
            pb::Role::User => Self::User,
            pb::Role::Agent => Self::Agent,
        })
    }
}

/// A `TaskState` field's number as an a2a state.
pub(crate) fn task_state_from_number(number: i32, field: &str) -> Result<a2a::TaskState, ConvertError> {
    let state = pb::TaskState::try_from(number)
        .map_err(|_| ConvertError::new(field, format!("unknown TaskState number {number}")))?;
    convert(state, field)
}

/// An a2a state as a `TaskState` field's number.
pub(crate) fn task_state_to_number(state: a2a::TaskState) -> Result<i32, ConvertError> {
    pb::TaskState::try_from(state).map(Into::into)
}

fn role_from_number(number: i32, field: &str) -> Result<a2a::Role, ConvertError> {
    let role =
        pb::Role::try_from(number).map_err(|_| ConvertError::new(field, format!("unknown Role number {number}")))?;
    convert(role, field)
}

// ---------------------------------------------------------------------------------------------
// Part, Message, Artifact.

impl TryFrom<a2a::Part> for pb::Part {
    type Error = ConvertError;

    fn try_from(part: a2a::Part) -> Result<Self, ConvertError> {
        use pb::part::Content;
        let content = match part.content {
            a2a::PartContent::Text(text) => Content::Text(text),
            a2a::PartContent::Raw(base64) => Content::Raw(decode_base64(&base64).map_err(|error| error.within("raw"))?),
            a2a::PartContent::Url(url) => Content::Url(url),
            a2a::PartContent::Data(data) => Content::Data(value_to_pb(data).map_err(|error| error.within("data"))?),
        };
        Ok(Self {
            content: Some(content),
            metadata: struct_to_pb(part.metadata, "metadata")?,
            filename: or_empty(part.filename),
            media_type: or_empty(part.media_type),
        })
    }
}

impl TryFrom<pb::Part> for a2a::Part {
    type Error = ConvertError;

    fn try_from(part: pb::Part) -> Result<Self, ConvertError> {
        use pb::part::Content;
        let content = match part.content {
            Some(Content::Text(text)) => a2a::PartContent::Text(text),
            Some(Content::Raw(bytes)) => a2a::PartContent::Raw(encode_base64(&bytes)),
            Some(Content::Url(url)) => a2a::PartContent::Url(url),
            Some(Content::Data(data)) => {
                a2a::PartContent::Data(value_from_pb(data).map_err(|error| error.within("data"))?)
            }
            None => return Err(ConvertError::new("content", "must be set: one of text, raw, url, data")),
        };
        Ok(Self {
            content,
            metadata: struct_from_pb(part.metadata, "metadata")?,
            filename: non_empty(part.filename),
            media_type: non_empty(part.media_type),
        })
    }
}

impl TryFrom<a2a::Message> for pb::Message {
    type Error = ConvertError;

    fn try_from(message: a2a::Message) -> Result<Self, ConvertError> {
        Ok(Self {
            message_id: message.message_id,
            context_id: or_empty(message.context_id),
            task_id: or_empty(message.task_id),
            role: pb::Role::try_from(message.role)?.into(),
            parts: convert_list(message.parts, "parts")?,
            metadata: struct_to_pb(message.metadata, "metadata")?,
            extensions: message.extensions,
            reference_task_ids: message.reference_task_ids,
        })
    }
}

impl TryFrom<pb::Message> for a2a::Message {
    type Error = ConvertError;

    fn try_from(message: pb::Message) -> Result<Self, ConvertError> {
        Ok(Self {
            message_id: message.message_id,
            context_id: non_empty(message.context_id),
            task_id: non_empty(message.task_id),
            role: role_from_number(message.role, "role")?,
            parts: convert_list(message.parts, "parts")?,
            metadata: struct_from_pb(message.metadata, "metadata")?,
            extensions: message.extensions,
            reference_task_ids: message.reference_task_ids,
        })
    }
}

impl TryFrom<a2a::Artifact> for pb::Artifact {
    type Error = ConvertError;

    fn try_from(artifact: a2a::Artifact) -> Result<Self, ConvertError> {
        Ok(Self {
            artifact_id: artifact.artifact_id,
            name: or_empty(artifact.name),
            description: or_empty(artifact.description),
            parts: convert_list(artifact.parts, "parts")?,
            metadata: struct_to_pb(artifact.metadata, "metadata")?,
            extensions: artifact.extensions,
        })
    }
}

impl TryFrom<pb::Artifact> for a2a::Artifact {
    type Error = ConvertError;

    fn try_from(artifact: pb::Artifact) -> Result<Self, ConvertError> {
        Ok(Self {
            artifact_id: artifact.artifact_id,
            name: non_empty(artifact.name),
            description: non_empty(artifact.description),
            parts: convert_list(artifact.parts, "parts")?,
            metadata: struct_from_pb(artifact.metadata, "metadata")?,
            extensions: artifact.extensions,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// TaskStatus, Task.

impl TryFrom<a2a::TaskStatus> for pb::TaskStatus {
    type Error = ConvertError;

    fn try_from(status: a2a::TaskStatus) -> Result<Self, ConvertError> {
        Ok(Self {
            state: task_state_to_number(status.state)?,
            message: convert_opt(status.message, "message")?,
            timestamp: timestamp_to_pb(status.timestamp, "timestamp")?,
        })
    }
}

impl TryFrom<pb::TaskStatus> for a2a::TaskStatus {
    type Error = ConvertError;

    fn try_from(status: pb::TaskStatus) -> Result<Self, ConvertError> {
        Ok(Self {
            state: task_state_from_number(status.state, "state")?,
            message: convert_opt(status.message, "message")?,
            timestamp: timestamp_from_pb(status.timestamp, "timestamp")?,
        })
    }
}

impl TryFrom<a2a::Task> for pb::Task {
    type Error = ConvertError;

    fn try_from(task: a2a::Task) -> Result<Self, ConvertError> {
        Ok(Self {
            id: task.id,
            context_id: or_empty(task.context_id),
            status: Some(convert(task.status, "status")?),
            artifacts: convert_list(task.artifacts, "artifacts")?,
            history: convert_list(task.history, "history")?,
            metadata: struct_to_pb(task.metadata, "metadata")?,
        })
    }
}

impl TryFrom<pb::Task> for a2a::Task {
    type Error = ConvertError;

    fn try_from(task: pb::Task) -> Result<Self, ConvertError> {
        Ok(Self {
            id: task.id,
            context_id: non_empty(task.context_id),
            status: convert_required(task.status, "status")?,
            artifacts: convert_list(task.artifacts, "artifacts")?,
            history: convert_list(task.history, "history")?,
            metadata: struct_from_pb(task.metadata, "metadata")?,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming events.

impl TryFrom<a2a::TaskStatusUpdateEvent> for pb::TaskStatusUpdateEvent {
    type Error = ConvertError;

    fn try_from(event: a2a::TaskStatusUpdateEvent) -> Result<Self, ConvertError> {
        Ok(Self {
            task_id: event.task_id,
            context_id: event.context_id,
            status: Some(convert(event.status, "status")?),
            metadata: struct_to_pb(event.metadata, "metadata")?,
        })
    }
}

impl TryFrom<pb::TaskStatusUpdateEvent> for a2a::TaskStatusUpdateEvent {
    type Error = ConvertError;

    fn try_from(event: pb::TaskStatusUpdateEvent) -> Result<Self, ConvertError> {
        Ok(Self {
            task_id: event.task_id,
            context_id: event.context_id,
            status: convert_required(event.status, "status")?,
            metadata: struct_from_pb(event.metadata, "metadata")?,
        })
    }
}

impl TryFrom<a2a::TaskArtifactUpdateEvent> for pb::TaskArtifactUpdateEvent {
    type Error = ConvertError;

    fn try_from(event: a2a::TaskArtifactUpdateEvent) -> Result<Self, ConvertError> {
        Ok(Self {
            task_id: event.task_id,
            context_id: event.context_id,
            artifact: Some(convert(event.artifact, "artifact")?),
            append: event.append.unwrap_or(false),
            last_chunk: event.last_chunk.unwrap_or(false),
            metadata: struct_to_pb(event.metadata, "metadata")?,
        })
    }
}

impl TryFrom<pb::TaskArtifactUpdateEvent> for a2a::TaskArtifactUpdateEvent {
    type Error = ConvertError;

    fn try_from(event: pb::TaskArtifactUpdateEvent) -> Result<Self, ConvertError> {
        Ok(Self {
            task_id: event.task_id,
            context_id: event.context_id,
            artifact: convert_required(event.artifact, "artifact")?,
            append: true_or_none(event.append),
            last_chunk: true_or_none(event.last_chunk),
            metadata: struct_from_pb(event.metadata, "metadata")?,
        })
    }
}

impl TryFrom<a2a::StreamResponse> for pb::StreamResponse {
    type Error = ConvertError;

    fn try_from(response: a2a::StreamResponse) -> Result<Self, ConvertError> {
        use pb::stream_response::Payload;
        let payload = match response {
            a2a::StreamResponse::Task(task) => Payload::Task(convert(task, "task")?),
            a2a::StreamResponse::Message(message) => Payload::Message(convert(message, "message")?),
            a2a::StreamResponse::StatusUpdate(event) => Payload::StatusUpdate(convert(event, "statusUpdate")?),
            a2a::StreamResponse::ArtifactUpdate(event) => Payload::ArtifactUpdate(convert(event, "artifactUpdate")?),
        };
        Ok(Self { payload: Some(payload) })
    }
}

impl TryFrom<pb::StreamResponse> for a2a::StreamResponse {
    type Error = ConvertError;

    fn try_from(response: pb::StreamResponse) -> Result<Self, ConvertError> {
        use pb::stream_response::Payload;
        Ok(match response.payload {
            Some(Payload::Task(task)) => Self::Task(convert(task, "task")?),
            Some(Payload::Message(message)) => Self::Message(convert(message, "message")?),
            Some(Payload::StatusUpdate(event)) => Self::StatusUpdate(convert(event, "statusUpdate")?),
            Some(Payload::ArtifactUpdate(event)) => Self::ArtifactUpdate(convert(event, "artifactUpdate")?),
            None => {
                return Err(ConvertError::new(
                    "payload",
                    "must be set: one of task, message, statusUpdate, artifactUpdate",
                ));
            }
        })
    }
}

impl TryFrom<a2a::SendMessageResponse> for pb::SendMessageResponse {
    type Error = ConvertError;

    fn try_from(response: a2a::SendMessageResponse) -> Result<Self, ConvertError> {
        use pb::send_message_response::Payload;
        let payload = match response {
            a2a::SendMessageResponse::Task(task) => Payload::Task(convert(task, "task")?),
            a2a::SendMessageResponse::Message(message) => Payload::Message(convert(message, "message")?),
        };
        Ok(Self { payload: Some(payload) })
    }
}

impl TryFrom<pb::SendMessageResponse> for a2a::SendMessageResponse {
    type Error = ConvertError;

    fn try_from(response: pb::SendMessageResponse) -> Result<Self, ConvertError> {
        use pb::send_message_response::Payload;
        Ok(match response.payload {
            Some(Payload::Task(task)) => Self::Task(convert(task, "task")?),
            Some(Payload::Message(message)) => Self::Message(convert(message, "message")?),
            None => return Err(ConvertError::new("payload", "must be set: one of task, message")),
        })
    }
}
