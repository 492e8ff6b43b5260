//! Request and response messages of the A2A operations (proto `SendMessageRequest` …
//! `ListTaskPushNotificationConfigsResponse`). Each is the JSON-RPC `params` / `result` of its
//! method and the HTTP+JSON body (path parameters aside).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::de::{i32_or_zero, null_as_default, opt_i32};
use super::task::{Message, Task, TaskState};
use super::validate::{self, FieldViolation, Validate};

/// The proto `google.protobuf.Empty` (the result of `DeleteTaskPushNotificationConfig`): `{}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Empty {}

/// How a push notification authenticates to the webhook (proto `AuthenticationInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// The HTTP authentication scheme (`Bearer`, `Basic`, …; case-insensitive). Required.
    pub scheme: String,
    /// The credentials for that scheme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// A webhook for a task's updates (proto `TaskPushNotificationConfig`); the body and result of
/// `CreateTaskPushNotificationConfig`, and `configuration.taskPushNotificationConfig` of a send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The config's id (client-chosen or server-assigned; unique per task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The task (empty when set inline in a send).
    #[serde(default, alias = "task_id", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Where notifications are POSTed. Required.
    pub url: String,
    /// A token unique to this task or session, echoed to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How to authenticate to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl Validate for TaskPushNotificationConfig {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "url", &self.url);
        if let Some(authentication) = &self.authentication {
            validate::required_str(
                out,
                &validate::field_path(path, "authentication"),
                "scheme",
                &authentication.scheme,
            );
        }
    }
}

/// Options of a send (proto `SendMessageConfiguration`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts in response parts.
    #[serde(
        default,
        alias = "accepted_output_modes",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    /// A webhook to register for the task.
    #[serde(default, alias = "task_push_notification_config", skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// At most this many recent messages in the returned task's history (0 = none; unset = no limit).
    #[serde(default, alias = "history_length", deserialize_with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Return as soon as the task exists instead of waiting for a terminal or interrupted state.
    #[serde(default, alias = "return_immediately", skip_serializing_if = "Option::is_none")]
    pub return_immediately: Option<bool>,
}

impl Validate for SendMessageConfiguration {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        if let Some(config) = &self.task_push_notification_config {
            validate::nested(out, path, "taskPushNotificationConfig", config);
        }
        validate::non_negative(out, path, "historyLength", self.history_length);
    }
}

/// `SendMessage` / `SendStreamingMessage` parameters (proto `SendMessageRequest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The message. Required.
    pub message: Message,
    /// Options of the send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Metadata of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Validate for SendMessageRequest {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::nested(out, path, "message", &self.message);
        if let Some(configuration) = &self.configuration {
            validate::nested(out, path, "configuration", configuration);
        }
    }
}

/// `GetTask` parameters (proto `GetTaskRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    pub id: String,
    /// At most this many recent messages in the history (0 = none; unset = no limit).
    #[serde(default, alias = "history_length", deserialize_with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
}

impl Validate for GetTaskRequest {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "id", &self.id);
        validate::non_negative(out, path, "historyLength", self.history_length);
    }
}

/// The smallest and largest `pageSize` of `ListTasks` (proto comment on `page_size`).
pub const LIST_TASKS_PAGE_SIZE_RANGE: std::ops::RangeInclusive<i32> = 1..=100;

/// The `pageSize` of `ListTasks` when the request sets none.
pub const LIST_TASKS_DEFAULT_PAGE_SIZE: i32 = 50;

/// `ListTasks` parameters (proto `ListTasksRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Only tasks of this context.
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// At most this many tasks (1 to 100; [`LIST_TASKS_DEFAULT_PAGE_SIZE`] when unset).
    #[serde(default, alias = "page_size", deserialize_with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of the previous page.
    #[serde(default, alias = "page_token", skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    /// At most this many recent messages in each task's history.
    #[serde(default, alias = "history_length", deserialize_with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Only tasks whose status timestamp is at or after this RFC 3339 UTC time.
    #[serde(default, alias = "status_timestamp_after", skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    /// Whether to include artifacts (default false: `artifacts` is omitted from every task).
    #[serde(default, alias = "include_artifacts", skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

impl Validate for ListTasksRequest {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        if let Some(page_size) = self.page_size
            && !LIST_TASKS_PAGE_SIZE_RANGE.contains(&page_size)
        {
            out.push(FieldViolation::new(
                validate::field_path(path, "pageSize"),
                format!("must be between 1 and 100, got {page_size}"),
            ));
        }
        validate::non_negative(out, path, "historyLength", self.history_length);
        validate::timestamp(out, path, "statusTimestampAfter", self.status_timestamp_after.as_deref());
    }
}

/// `ListTasks` result (proto `ListTasksResponse`). Every field is written, `nextPageToken`
/// included (`""` on the last page, §3.1.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The tasks of this page (may be empty). Always written; read as empty when absent: a
    /// ProtoJSON writer drops an empty repeated field (the official Rust SDK's servers do).
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// The token of the next page; `""` on the last page. Required on input too.
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
    /// The page size used.
    #[serde(default, alias = "page_size", deserialize_with = "i32_or_zero")]
    pub page_size: i32,
    /// The number of matching tasks before pagination.
    #[serde(default, alias = "total_size", deserialize_with = "i32_or_zero")]
    pub total_size: i32,
}

impl Validate for ListTasksResponse {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::each(out, path, "tasks", &self.tasks);
        validate::non_negative(out, path, "pageSize", Some(self.page_size));
        validate::non_negative(out, path, "totalSize", Some(self.total_size));
    }
}

/// `CancelTask` parameters (proto `CancelTaskRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    pub id: String,
    /// Metadata of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Validate for CancelTaskRequest {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "id", &self.id);
    }
}

/// `SubscribeToTask` parameters (proto `SubscribeToTaskRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    pub id: String,
}

impl Validate for SubscribeToTaskRequest {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "id", &self.id);
    }
}

/// `GetExtendedAgentCard` parameters (proto `GetExtendedAgentCardRequest`); absent `params` read
/// as this with no tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

impl Validate for GetExtendedAgentCardRequest {
    fn collect_violations(&self, _path: &str, _out: &mut Vec<FieldViolation>) {}
}

/// `GetTaskPushNotificationConfig` parameters (proto `GetTaskPushNotificationConfigRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPushNotificationConfigRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The config. Required.
    pub id: String,
}

impl Validate for GetTaskPushNotificationConfigRequest {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "taskId", &self.task_id);
        validate::required_str(out, path, "id", &self.id);
    }
}

/// `DeleteTaskPushNotificationConfig` parameters (proto `DeleteTaskPushNotificationConfigRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteTaskPushNotificationConfigRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The config. Required.
    pub id: String,
}

impl Validate for DeleteTaskPushNotificationConfigRequest {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "taskId", &self.task_id);
        validate::required_str(out, path, "id", &self.id);
    }
}

/// `ListTaskPushNotificationConfigs` parameters (proto `ListTaskPushNotificationConfigsRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// At most this many configs.
    #[serde(default, alias = "page_size", deserialize_with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of the previous page.
    #[serde(default, alias = "page_token", skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
}

impl Validate for ListTaskPushNotificationConfigsRequest {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::required_str(out, path, "taskId", &self.task_id);
        validate::non_negative(out, path, "pageSize", self.page_size);
    }
}

/// `ListTaskPushNotificationConfigs` result (proto `ListTaskPushNotificationConfigsResponse`).
/// Both fields are always written (`configs: []`, `nextPageToken: ""` at the end), as for
/// [`ListTasksResponse`]; both read as empty when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The configs of this page.
    #[serde(default, deserialize_with = "null_as_default")]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// The token of the next page; `""` on the last page.
    #[serde(default, alias = "next_page_token", deserialize_with = "null_as_default")]
    pub next_page_token: String,
}

impl Validate for ListTaskPushNotificationConfigsResponse {
    fn collect_violations(&self, path: &str, out: &mut Vec<FieldViolation>) {
        validate::each(out, path, "configs", &self.configs);
    }
}
