//! Bodies of the Lucid profile's task routes (`/tasks…`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The four task statuses of the Lucid profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "LucidTaskStatus")]
pub enum TaskStatus {
    /// Not finished.
    Running,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// Every status.
    pub const ALL: [Self; 4] = [Self::Running, Self::Completed, Self::Failed, Self::Cancelled];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Reads a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == text)
    }

    /// Whether the status is final.
    pub fn is_terminal(self) -> bool {
        self != Self::Running
    }
}

/// A completed task's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskResultView {
    /// The output.
    pub output: Value,
    /// Usage figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// The model used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A failed task's error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskErrorView {
    /// A stable code.
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// Structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// A task as the Lucid routes show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    /// The id.
    pub task_id: String,
    /// The status.
    pub status: TaskStatus,
    /// The context, when the task has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it last changed (ISO 8601).
    pub updated_at: String,
    /// The result, when completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TaskResultView>,
    /// The error, when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskErrorView>,
}

/// `POST /tasks` → 200: the task capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskCapability {
    /// The id.
    pub task_id: String,
    /// The token that owns it. Keep it secret.
    pub access_token: String,
    /// The status right after creation.
    pub status: TaskStatus,
}

/// `GET /tasks` → 200.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskList {
    /// This page of the owner's tasks, newest first.
    pub tasks: Vec<TaskView>,
    /// How many match in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    /// Whether more follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// The data of a task subscription event (`statusUpdate`, `resultUpdate`, `error`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskUpdate {
    /// The task.
    pub task_id: String,
    /// Its status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    /// The result, on `resultUpdate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TaskResultView>,
    /// The error, on `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskErrorView>,
}

/// `POST /tasks`: the body the Lucid task face reads (a message for one skill).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskRequest {
    /// The skill to run.
    pub skill_id: String,
    /// The message whose content becomes the skill's input.
    pub message: TaskMessage,
    /// The context the task joins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Metadata kept with the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

/// The message of a [`CreateTaskRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskMessage {
    /// `user`, `assistant` or `system`.
    pub role: TaskMessageRole,
    /// The input: `text` (read as JSON when it is JSON, else as a string), or the first of `parts`.
    pub content: TaskMessageContent,
}

/// Who speaks in a [`TaskMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskMessageRole {
    /// The caller.
    User,
    /// An assistant.
    Assistant,
    /// The system.
    System,
}

/// The content of a [`TaskMessage`]: `text` or `parts` (at least one of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskMessageContent {
    /// The input as text: JSON text is read as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Parts: the first is the input (its `text` when it has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<Value>>,
}
