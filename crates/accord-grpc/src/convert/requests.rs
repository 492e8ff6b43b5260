//! The requests and responses of the A2A operations, and push notification configs.

use accord_types::a2a;

use super::task::{task_state_from_number, task_state_to_number};
use super::{
    ConvertError, convert_list, convert_opt, convert_required, non_empty, or_empty, struct_from_pb, struct_to_pb,
    timestamp_from_pb, timestamp_to_pb, true_or_none,
};
use crate::pb;

impl TryFrom<a2a::AuthenticationInfo> for pb::AuthenticationInfo {
    type Error = ConvertError;

    fn try_from(info: a2a::AuthenticationInfo) -> Result<Self, ConvertError> {
        Ok(Self { scheme: info.scheme, credentials: or_empty(info.credentials) })
    }
}

impl TryFrom<pb::AuthenticationInfo> for a2a::AuthenticationInfo {
    type Error = ConvertError;

    fn try_from(info: pb::AuthenticationInfo) -> Result<Self, ConvertError> {
        Ok(Self { scheme: info.scheme, credentials: non_empty(info.credentials) })
    }
}

impl TryFrom<a2a::TaskPushNotificationConfig> for pb::TaskPushNotificationConfig {
    type Error = ConvertError;

    fn try_from(config: a2a::TaskPushNotificationConfig) -> Result<Self, ConvertError> {
        Ok(Self {
            tenant: or_empty(config.tenant),
            id: or_empty(config.id),
            task_id: or_empty(config.task_id),
            url: config.url,
            token: or_empty(config.token),
            authentication: convert_opt(config.authentication, "authentication")?,
        })
    }
}

impl TryFrom<pb::TaskPushNotificationConfig> for a2a::TaskPushNotificationConfig {
    type Error = ConvertError;

    fn try_from(config: pb::TaskPushNotificationConfig) -> Result<Self, ConvertError> {
        Ok(Self {
            tenant: non_empty(config.tenant),
            id: non_empty(config.id),
            task_id: non_empty(config.task_id),
            url: config.url,
            token: non_empty(config.token),
            authentication: convert_opt(config.authentication, "authentication")?,
        })
    }
}

impl TryFrom<a2a::SendMessageConfiguration> for pb::SendMessageConfiguration {
    type Error = ConvertError;

    fn try_from(configuration: a2a::SendMessageConfiguration) -> Result<Self, ConvertError> {
        Ok(Self {
            accepted_output_modes: configuration.accepted_output_modes,
            task_push_notification_config: convert_opt(
                configuration.task_push_notification_config,
                "taskPushNotificationConfig",
            )?,
            history_length: configuration.history_length,
            return_immediately: configuration.return_immediately.unwrap_or(false),
        })
    }
}

impl TryFrom<pb::SendMessageConfiguration> for a2a::SendMessageConfiguration {
    type Error = ConvertError;

    fn try_from(configuration: pb::SendMessageConfiguration) -> Result<Self, ConvertError> {
        Ok(Self {
            accepted_output_modes: configuration.accepted_output_modes,
            task_push_notification_config: convert_opt(
                configuration.task_push_notification_config,
                "taskPushNotificationConfig",
            )?,
            history_length: configuration.history_length,
            return_immediately: true_or_none(configuration.return_immediately),
        })
    }
}

impl TryFrom<a2a::SendMessageRequest> for pb::SendMessageRequest {
    type Error = ConvertError;

    fn try_from(request: a2a::SendMessageRequest) -> Result<Self, ConvertError> {
        Ok(Self {
            tenant: or_empty(request.tenant),
            message: Some(super::convert(request.message, "message")?),
            configuration: convert_opt(request.configuration, "configuration")?,
            metadata: struct_to_pb(request.metadata, "metadata")?,
        })
    }
}

impl TryFrom<pb::SendMessageRequest> for a2a::SendMessageRequest {
    type Error = ConvertError;

    fn try_from(request: pb::SendMessageRequest) -> Result<Self, ConvertError> {
        Ok(Self {
            tenant: non_empty(request.tenant),
            message: convert_required(request.message, "message")?,
            configuration: convert_opt(request.configuration, "configuration")?,
            metadata: struct_from_pb(request.metadata, "metadata")?,
        })
    }
}

impl TryFrom<a2a::GetTaskRequest> for pb::GetTaskRequest {
    type Error = ConvertError;

    fn try_from(request: a2a::GetTaskRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: or_empty(request.tenant), id: request.id, history_length: request.history_length })
    }
}

impl TryFrom<pb::GetTaskRequest> for a2a::GetTaskRequest {
    type Error = ConvertError;

    fn try_from(request: pb::GetTaskRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: non_empty(request.tenant), id: request.id, history_length: request.history_length })
    }
}

impl TryFrom<a2a::ListTasksRequest> for pb::ListTasksRequest {
    type Error = ConvertError;

    fn try_from(request: a2a::ListTasksRequest) -> Result<Self, ConvertError> {
        Ok(Self {
            tenant: or_empty(request.tenant),
            context_id: or_empty(request.context_id),
            status: request.status.map(task_state_to_number).transpose()?.unwrap_or_default(),
            page_size: request.page_size,
            page_token: or_empty(request.page_token),
            history_length: request.history_length,
            status_timestamp_after: timestamp_to_pb(request.status_timestamp_after, "statusTimestampAfter")?,
            include_artifacts: request.include_artifacts,
        })
    }
}

impl TryFrom<pb::ListTasksRequest> for a2a::ListTasksRequest {
    type Error = ConvertError;

    fn try_from(request: pb::ListTasksRequest) -> Result<Self, ConvertError> {
        // A plain enum field: 0 (TASK_STATE_UNSPECIFIED) is "no filter".
        let status = match request.status {
            0 => None,
            number => Some(task_state_from_number(number, "status")?),
        };
        Ok(Self {
            tenant: non_empty(request.tenant),
            context_id: non_empty(request.context_id),
            status,
            page_size: request.page_size,
            page_token: non_empty(request.page_token),
            history_length: request.history_length,
            status_timestamp_after: timestamp_from_pb(request.status_timestamp_after, "statusTimestampAfter")?,
            include_artifacts: request.include_artifacts,
        })
    }
}

impl TryFrom<a2a::ListTasksResponse> for pb::ListTasksResponse {
    type Error = ConvertError;

    fn try_from(response: a2a::ListTasksResponse) -> Result<Self, ConvertError> {
        Ok(Self {
            tasks: convert_list(response.tasks, "tasks")?,
            next_page_token: response.next_page_token,
            page_size: response.page_size,
            total_size: response.total_size,
        })
    }
}

impl TryFrom<pb::ListTasksResponse> for a2a::ListTasksResponse {
    type Error = ConvertError;

    fn try_from(response: pb::ListTasksResponse) -> Result<Self, ConvertError> {
        Ok(Self {
            tasks: convert_list(response.tasks, "tasks")?,
            next_page_token: response.next_page_token,
            page_size: response.page_size,
            total_size: response.total_size,
        })
    }
}

impl TryFrom<a2a::CancelTaskRequest> for pb::CancelTaskRequest {
    type Error = ConvertError;

    fn try_from(request: a2a::CancelTaskRequest) -> Result<Self, ConvertError> {
        Ok(Self {
            tenant: or_empty(request.tenant),
            id: request.id,
            metadata: struct_to_pb(request.metadata, "metadata")?,
        })
    }
}

impl TryFrom<pb::CancelTaskRequest> for a2a::CancelTaskRequest {
    type Error = ConvertError;

    fn try_from(request: pb::CancelTaskRequest) -> Result<Self, ConvertError> {
        Ok(Self {
            tenant: non_empty(request.tenant),
            id: request.id,
            metadata: struct_from_pb(request.metadata, "metadata")?,
        })
    }
}

impl TryFrom<a2a::SubscribeToTaskRequest> for pb::SubscribeToTaskRequest {
    type Error = ConvertError;

    fn try_from(request: a2a::SubscribeToTaskRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: or_empty(request.tenant), id: request.id })
    }
}

impl TryFrom<pb::SubscribeToTaskRequest> for a2a::SubscribeToTaskRequest {
    type Error = ConvertError;

    fn try_from(request: pb::SubscribeToTaskRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: non_empty(request.tenant), id: request.id })
    }
}

impl TryFrom<a2a::GetTaskPushNotificationConfigRequest> for pb::GetTaskPushNotificationConfigRequest {
    type Error = ConvertError;

    fn try_from(request: a2a::GetTaskPushNotificationConfigRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: or_empty(request.tenant), task_id: request.task_id, id: request.id })
    }
}

impl TryFrom<pb::GetTaskPushNotificationConfigRequest> for a2a::GetTaskPushNotificationConfigRequest {
    type Error = ConvertError;

    fn try_from(request: pb::GetTaskPushNotificationConfigRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: non_empty(request.tenant), task_id: request.task_id, id: request.id })
    }
}

impl TryFrom<a2a::DeleteTaskPushNotificationConfigRequest> for pb::DeleteTaskPushNotificationConfigRequest {
    type Error = ConvertError;

    fn try_from(request: a2a::DeleteTaskPushNotificationConfigRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: or_empty(request.tenant), task_id: request.task_id, id: request.id })
    }
}

impl TryFrom<pb::DeleteTaskPushNotificationConfigRequest> for a2a::DeleteTaskPushNotificationConfigRequest {
    type Error = ConvertError;

    fn try_from(request: pb::DeleteTaskPushNotificationConfigRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: non_empty(request.tenant), task_id: request.task_id, id: request.id })
    }
}

impl TryFrom<a2a::ListTaskPushNotificationConfigsRequest> for pb::ListTaskPushNotificationConfigsRequest {
    type Error = ConvertError;

    fn try_from(request: a2a::ListTaskPushNotificationConfigsRequest) -> Result<Self, ConvertError> {
        Ok(Self {
            tenant: or_empty(request.tenant),
            task_id: request.task_id,
            page_size: request.page_size.unwrap_or(0),
            page_token: or_empty(request.page_token),
        })
    }
}

impl TryFrom<pb::ListTaskPushNotificationConfigsRequest> for a2a::ListTaskPushNotificationConfigsRequest {
    type Error = ConvertError;

    fn try_from(request: pb::ListTaskPushNotificationConfigsRequest) -> Result<Self, ConvertError> {
        Ok(Self {
            tenant: non_empty(request.tenant),
            task_id: request.task_id,
            // A plain int32: 0 is unset.
            page_size: (request.page_size != 0).then_some(request.page_size),
            page_token: non_empty(request.page_token),
        })
    }
}

impl TryFrom<a2a::ListTaskPushNotificationConfigsResponse> for pb::ListTaskPushNotificationConfigsResponse {
    type Error = ConvertError;

    fn try_from(response: a2a::ListTaskPushNotificationConfigsResponse) -> Result<Self, ConvertError> {
        Ok(Self { configs: convert_list(response.configs, "configs")?, next_page_token: response.next_page_token })
    }
}

impl TryFrom<pb::ListTaskPushNotificationConfigsResponse> for a2a::ListTaskPushNotificationConfigsResponse {
    type Error = ConvertError;

    fn try_from(response: pb::ListTaskPushNotificationConfigsResponse) -> Result<Self, ConvertError> {
        Ok(Self { configs: convert_list(response.configs, "configs")?, next_page_token: response.next_page_token })
    }
}

impl TryFrom<a2a::GetExtendedAgentCardRequest> for pb::GetExtendedAgentCardRequest {
    type Error = ConvertError;

    fn try_from(request: a2a::GetExtendedAgentCardRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: or_empty(request.tenant) })
    }
}

impl TryFrom<pb::GetExtendedAgentCardRequest> for a2a::GetExtendedAgentCardRequest {
    type Error = ConvertError;

    fn try_from(request: pb::GetExtendedAgentCardRequest) -> Result<Self, ConvertError> {
        Ok(Self { tenant: non_empty(request.tenant) })
    }
}
