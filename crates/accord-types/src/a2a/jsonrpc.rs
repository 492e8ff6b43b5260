//! The JSON-RPC 2.0 envelope of the A2A JSON-RPC binding (spec §9): requests, responses, error
//! objects, and the v1.0 method names.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::de::present_value;
use super::errors::{A2aError, A2aErrorKind};
use super::validate::Validate;

/// The `jsonrpc` member of every request and response.
pub const JSONRPC_VERSION: &str = "2.0";

/// The JSON-RPC method names of A2A v1.0 (equal to the gRPC RPC names).
pub mod methods {
    /// `SendMessage`: params `SendMessageRequest`, result `SendMessageResponse`.
    pub const SEND_MESSAGE: &str = "SendMessage";
    /// `SendStreamingMessage`: params `SendMessageRequest`, an SSE stream of `StreamResponse`.
    pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
    /// `GetTask`: params `GetTaskRequest`, result `Task`.
    pub const GET_TASK: &str = "GetTask";
    /// `ListTasks`: params `ListTasksRequest`, result `ListTasksResponse`.
    pub const LIST_TASKS: &str = "ListTasks";
    /// `CancelTask`: params `CancelTaskRequest`, result `Task`.
    pub const CANCEL_TASK: &str = "CancelTask";
    /// `SubscribeToTask`: params `SubscribeToTaskRequest`, an SSE stream of `StreamResponse`.
    pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
    /// `CreateTaskPushNotificationConfig`: params and result `TaskPushNotificationConfig`.
    pub const CREATE_TASK_PUSH_NOTIFICATION_CONFIG: &str = "CreateTaskPushNotificationConfig";
    /// `GetTaskPushNotificationConfig`: params `GetTaskPushNotificationConfigRequest`.
    pub const GET_TASK_PUSH_NOTIFICATION_CONFIG: &str = "GetTaskPushNotificationConfig";
    /// `ListTaskPushNotificationConfigs`: params `ListTaskPushNotificationConfigsRequest`.
    pub const LIST_TASK_PUSH_NOTIFICATION_CONFIGS: &str = "ListTaskPushNotificationConfigs";
    /// `DeleteTaskPushNotificationConfig`: params `DeleteTaskPushNotificationConfigRequest`, result `{}`.
    pub const DELETE_TASK_PUSH_NOTIFICATION_CONFIG: &str = "DeleteTaskPushNotificationConfig";
    /// `GetExtendedAgentCard`: params `GetExtendedAgentCardRequest` (or none), result `AgentCard`.
    pub const GET_EXTENDED_AGENT_CARD: &str = "GetExtendedAgentCard";

    /// Every method.
    pub const ALL: [&str; 11] = [
        SEND_MESSAGE,
        SEND_STREAMING_MESSAGE,
        GET_TASK,
        LIST_TASKS,
        CANCEL_TASK,
        SUBSCRIBE_TO_TASK,
        CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
        GET_TASK_PUSH_NOTIFICATION_CONFIG,
        LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
        DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
        GET_EXTENDED_AGENT_CARD,
    ];
}

/// A JSON-RPC 2.0 request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The id: a string, a number or `null`; `None` when absent (a notification).
    #[serde(default, deserialize_with = "present_value", skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The method, e.g. `SendMessage`.
    pub method: String,
    /// The parameters: the ProtoJSON request message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// Why a body is not a JSON-RPC request, with the id to answer with (`null` when unknown).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestParseError {
    /// The id of the request when it could be read, else `null`.
    pub id: Value,
    /// [`A2aErrorKind::JsonParse`] or [`A2aErrorKind::InvalidRequest`].
    pub error: A2aError,
}

impl fmt::Display for RequestParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for RequestParseError {}

impl JsonRpcRequest {
    /// A request with an id.
    pub fn new(id: impl Into<Value>, method: impl Into<String>, params: Value) -> Self {
        Self { jsonrpc: JSONRPC_VERSION.to_owned(), id: Some(id.into()), method: method.into(), params: Some(params) }
    }

    /// Reads a request body: not JSON → -32700; JSON that is not a single request object with
    /// `jsonrpc: "2.0"`, a string `method`, an id that is a string, number or null, and object or
    /// array `params` when present → -32600.
    pub fn parse(body: &[u8]) -> Result<Self, RequestParseError> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|_| RequestParseError { id: Value::Null, error: A2aError::new(A2aErrorKind::JsonParse) })?;
        Self::from_value(value)
    }

    /// Reads a request already parsed as JSON, with the checks of [`JsonRpcRequest::parse`].
    pub fn from_value(value: Value) -> Result<Self, RequestParseError> {
        let invalid = |id: Value, why: &str| RequestParseError {
            id,
            error: A2aError::new(A2aErrorKind::InvalidRequest)
                .with_message(format!("{}: {why}", A2aErrorKind::InvalidRequest.default_message())),
        };
        let Value::Object(mut object) = value else {
            return Err(invalid(Value::Null, "the body must be a JSON-RPC request object"));
        };
        let id = object.remove("id");
        let response_id = match &id {
            Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id.clone(),
            Some(_) => return Err(invalid(Value::Null, "id must be a string, a number or null")),
            None => Value::Null,
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some(JSONRPC_VERSION) {
            return Err(invalid(response_id, "jsonrpc must be \"2.0\""));
        }
        let Some(Value::String(method)) = object.remove("method") else {
            return Err(invalid(response_id, "method must be a string"));
        };
        let params = match object.remove("params") {
            None | Some(Value::Null) => None,
            Some(params @ (Value::Object(_) | Value::Array(_))) => Some(params),
            Some(_) => return Err(invalid(response_id, "params must be an object or an array")),
        };
        Ok(Self { jsonrpc: JSONRPC_VERSION.to_owned(), id, method, params })
    }

    /// Whether the request has no id (a notification, which gets no response).
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// The id to answer with (`null` for a notification).
    pub fn response_id(&self) -> Value {
        self.id.clone().unwrap_or(Value::Null)
    }

    /// Decodes the params as `T`; absent params read as `{}`. Failure → -32602 naming the problem.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, A2aError> {
        let params = self.params.clone().unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        serde_json::from_value(params).map_err(|error| {
            A2aError::new(A2aErrorKind::InvalidParams)
                .with_message(format!("{}: {error}", A2aErrorKind::InvalidParams.default_message()))
        })
    }

    /// Decodes the params as `T` and validates them; either failure → -32602.
    pub fn params_validated<T: DeserializeOwned + Validate>(&self) -> Result<T, A2aError> {
        let params: T = self.params_as()?;
        params.validate()?;
        Ok(params)
    }
}

/// A JSON-RPC error object: `{code, message, data?}`. Build one for an A2A error with
/// [`A2aError::to_jsonrpc_error`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    /// The error code.
    pub code: i32,
    /// A short description.
    pub message: String,
    /// Details; for A2A errors, an array holding a `google.rpc.ErrorInfo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl JsonRpcError {
    /// The catalogue entry of this code, if any.
    pub fn kind(&self) -> Option<A2aErrorKind> {
        A2aErrorKind::from_code(self.code)
    }
}

impl fmt::Display for JsonRpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for JsonRpcError {}

/// The outcome of a call: exactly one of `result` and `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JsonRpcOutcome<T> {
    /// `result`: the method's result.
    Result(T),
    /// `error`: why it failed.
    Error(JsonRpcError),
}

/// A JSON-RPC 2.0 response, `{"jsonrpc":"2.0","id":…,"result":…}` or `{…,"error":{…}}`. `T` is the
/// result type (a [`serde_json::Value`] by default; `StreamResponse` for a stream's events).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse<T = Value> {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The request's id (`null` when it could not be read).
    #[serde(default)]
    pub id: Value,
    /// The result or the error.
    #[serde(flatten)]
    pub outcome: JsonRpcOutcome<T>,
}

impl<T> JsonRpcResponse<T> {
    /// A success.
    pub fn success(id: Value, result: T) -> Self {
        Self { jsonrpc: JSONRPC_VERSION.to_owned(), id, outcome: JsonRpcOutcome::Result(result) }
    }

    /// A failure carrying `error` (with its `ErrorInfo` in `data` for A2A errors).
    pub fn failure(id: Value, error: &A2aError) -> Self {
        Self { jsonrpc: JSONRPC_VERSION.to_owned(), id, outcome: JsonRpcOutcome::Error(error.to_jsonrpc_error()) }
    }

    /// The result, or the error object.
    pub fn into_result(self) -> Result<T, JsonRpcError> {
        match self.outcome {
            JsonRpcOutcome::Result(result) => Ok(result),
            JsonRpcOutcome::Error(error) => Err(error),
        }
    }
}
