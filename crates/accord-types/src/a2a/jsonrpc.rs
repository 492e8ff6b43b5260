//! The JSON-RPC 2.0 envelope of the A2A JSON-RPC binding (spec §9): the v1.0 method names, and
//! the shared envelope of [`crate::jsonrpc`] seen through A2A errors.
//!
//! The response, outcome and error-object types are the shared ones under their A2A names;
//! [`JsonRpcRequest`] wraps the shared [`Request`] so that reading one answers with an
//! [`A2aError`] (its catalogue messages) and its params decode into A2A request messages.

use std::fmt;
use std::ops::{Deref, DerefMut};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::errors::{A2aError, A2aErrorKind};
use super::validate::Validate;
pub use crate::jsonrpc::{
    ErrorObject as JsonRpcError, Outcome as JsonRpcOutcome, Response as JsonRpcResponse, VERSION as JSONRPC_VERSION,
};
use crate::jsonrpc::{ErrorObject, ParseError, ParseErrorKind, Request};

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

/// A JSON-RPC 2.0 request: the shared [`Request`] (its fields and methods are reachable through
/// it), read with A2A errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct JsonRpcRequest(pub Request);

/// Why a body is not a JSON-RPC request, with the id to answer with (`null` when unknown).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestParseError {
    /// The id of the request when it could be read, else `null`.
    pub id: Value,
    /// [`A2aErrorKind::JsonParse`] or [`A2aErrorKind::InvalidRequest`].
    pub error: A2aError,
}

impl From<ParseError> for RequestParseError {
    fn from(error: ParseError) -> Self {
        let a2a = match error.kind {
            ParseErrorKind::NotJson => A2aError::new(A2aErrorKind::JsonParse),
            kind => A2aError::new(A2aErrorKind::InvalidRequest).with_message(format!(
                "{}: {}",
                A2aErrorKind::InvalidRequest.default_message(),
                kind.reason()
            )),
        };
        Self { id: error.response_id(), error: a2a }
    }
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
        Self(Request::new(id, method, params))
    }

    /// Reads a request body with the checks of [`Request::parse`]: not JSON → -32700; a batch or
    /// JSON that is not a single request object with `jsonrpc: "2.0"`, a string `method`, an id
    /// that is a string, number or null, and object or array `params` when present → -32600.
    pub fn parse(body: &[u8]) -> Result<Self, RequestParseError> {
        Request::parse(body).map(Self).map_err(RequestParseError::from)
    }

    /// Reads a request already parsed as JSON, with the checks of [`JsonRpcRequest::parse`].
    pub fn from_value(value: Value) -> Result<Self, RequestParseError> {
        Request::from_value(value).map(Self).map_err(RequestParseError::from)
    }

    /// The shared request.
    pub fn into_inner(self) -> Request {
        self.0
    }

    /// Decodes the params as `T`; absent params read as `{}`. Failure → -32602 naming the problem.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, A2aError> {
        // Read in place: the params are not copied first.
        let empty = Value::Object(serde_json::Map::new());
        T::deserialize(self.params.as_ref().unwrap_or(&empty)).map_err(|error| {
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

impl Deref for JsonRpcRequest {
    type Target = Request;

    fn deref(&self) -> &Request {
        &self.0
    }
}

impl DerefMut for JsonRpcRequest {
    fn deref_mut(&mut self) -> &mut Request {
        &mut self.0
    }
}

impl From<Request> for JsonRpcRequest {
    fn from(request: Request) -> Self {
        Self(request)
    }
}

impl From<&A2aError> for ErrorObject {
    /// The A2A rendering, [`A2aError::to_jsonrpc_error`]: `data` holds the `ErrorInfo`.
    fn from(error: &A2aError) -> Self {
        error.to_jsonrpc_error()
    }
}

impl ErrorObject {
    /// The A2A catalogue entry of this code, if any (A2A binding).
    pub fn kind(&self) -> Option<A2aErrorKind> {
        i32::try_from(self.code).ok().and_then(A2aErrorKind::from_code)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jsonrpc;

    #[test]
    fn the_catalogue_uses_the_standard_codes() {
        for (kind, code) in [
            (A2aErrorKind::JsonParse, jsonrpc::PARSE_ERROR),
            (A2aErrorKind::InvalidRequest, jsonrpc::INVALID_REQUEST),
            (A2aErrorKind::MethodNotFound, jsonrpc::METHOD_NOT_FOUND),
            (A2aErrorKind::InvalidParams, jsonrpc::INVALID_PARAMS),
            (A2aErrorKind::Internal, jsonrpc::INTERNAL_ERROR),
        ] {
            assert_eq!(i64::from(kind.code()), code, "{kind}");
            assert_eq!(JsonRpcError::new(code, "x").kind(), Some(kind));
        }
        assert_eq!(JsonRpcError::new(i64::from(i32::MAX) + 1, "x").kind(), None);
    }

    #[test]
    fn a_batch_is_an_invalid_request_answered_with_id_null() {
        let error = JsonRpcRequest::parse(br#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#).expect_err("batch");
        assert_eq!((error.id.clone(), error.error.kind), (Value::Null, A2aErrorKind::InvalidRequest));
        assert_eq!(error.error.message, "Request payload validation error: batch requests are not supported");
        assert_eq!(
            serde_json::to_value(JsonRpcResponse::<Value>::failure(error.id, &error.error)).expect("json"),
            json!({"jsonrpc": "2.0", "id": null,
                   "error": {"code": -32600, "message": "Request payload validation error: batch requests are not supported"}})
        );
    }

    #[test]
    fn the_wrapper_reads_and_writes_as_the_shared_request() {
        let request = JsonRpcRequest::new("r", methods::GET_TASK, json!({"id": "t"}));
        let wire = serde_json::to_value(&request).expect("json");
        assert_eq!(wire, serde_json::to_value(&request.0).expect("json"));
        assert_eq!(serde_json::from_value::<JsonRpcRequest>(wire).expect("serde"), request);
        assert_eq!((request.method.as_str(), request.response_id()), (methods::GET_TASK, json!("r")));
    }
}
