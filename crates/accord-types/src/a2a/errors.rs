//! The A2A error catalogue and its projections onto the wire (spec §3.3.2, §5.4, §9.5, §11.6).
//!
//! [`A2aErrorKind`] is the catalogue: the nine A2A errors (-32001 … -32009) and the five standard
//! JSON-RPC errors, each with its JSON-RPC code, `google.rpc.ErrorInfo` reason, gRPC status and
//! HTTP status. The gRPC and HTTP columns changed between v1.0.0 (which the public conformance kit
//! pins) and v1.0.1; [`ErrorMapping`] picks one. [`A2aError`] is one occurrence (kind, message,
//! ErrorInfo metadata, field violations); it renders as a JSON-RPC `error` object
//! ([`A2aError::to_jsonrpc_error`]) or a REST `google.rpc.Status` body ([`A2aError::to_rest_body`]).
//! Nothing here decides *when* an error happens; that is the faces' and the engine's business.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::jsonrpc::JsonRpcError;
use super::validate::{FieldViolation, ValidationError};

/// The `domain` of every A2A `ErrorInfo`.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// The `@type` of a `google.rpc.ErrorInfo` detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// The `@type` of a `google.rpc.BadRequest` detail.
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

/// Which edition's gRPC/HTTP columns of the error table to use (§5.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ErrorMapping {
    /// A2A v1.0.1 (the current specification; what `a2a-sdk` 1.3 does). The default.
    #[default]
    V1_0_1,
    /// A2A v1.0.0, which the public conformance kit checks ("TCK mode"): 409 for
    /// TaskNotCancelable, 415 for ContentTypeNotSupported, 502 for InvalidAgentResponse, and
    /// `UNIMPLEMENTED` for PushNotificationNotSupported, UnsupportedOperation and
    /// VersionNotSupported.
    V1_0_0,
}

/// A gRPC status code (`google.rpc.Code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrpcCode {
    /// 0.
    Ok,
    /// 1.
    Cancelled,
    /// 2.
    Unknown,
    /// 3.
    InvalidArgument,
    /// 4.
    DeadlineExceeded,
    /// 5.
    NotFound,
    /// 6.
    AlreadyExists,
    /// 7.
    PermissionDenied,
    /// 8.
    ResourceExhausted,
    /// 9.
    FailedPrecondition,
    /// 10.
    Aborted,
    /// 11.
    OutOfRange,
    /// 12.
    Unimplemented,
    /// 13.
    Internal,
    /// 14.
    Unavailable,
    /// 15.
    DataLoss,
    /// 16.
    Unauthenticated,
}

impl GrpcCode {
    /// Every code, in number order.
    pub const ALL: [Self; 17] = [
        Self::Ok,
        Self::Cancelled,
        Self::Unknown,
        Self::InvalidArgument,
        Self::DeadlineExceeded,
        Self::NotFound,
        Self::AlreadyExists,
        Self::PermissionDenied,
        Self::ResourceExhausted,
        Self::FailedPrecondition,
        Self::Aborted,
        Self::OutOfRange,
        Self::Unimplemented,
        Self::Internal,
        Self::Unavailable,
        Self::DataLoss,
        Self::Unauthenticated,
    ];

    /// The name, as written in a REST `google.rpc.Status` body's `status`, e.g. `NOT_FOUND`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::Cancelled => "CANCELLED",
            Self::Unknown => "UNKNOWN",
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Self::NotFound => "NOT_FOUND",
            Self::AlreadyExists => "ALREADY_EXISTS",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Self::FailedPrecondition => "FAILED_PRECONDITION",
            Self::Aborted => "ABORTED",
            Self::OutOfRange => "OUT_OF_RANGE",
            Self::Unimplemented => "UNIMPLEMENTED",
            Self::Internal => "INTERNAL",
            Self::Unavailable => "UNAVAILABLE",
            Self::DataLoss => "DATA_LOSS",
            Self::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The number, as carried in gRPC's `grpc-status`.
    pub fn number(self) -> i32 {
        match self {
            Self::Ok => 0,
            Self::Cancelled => 1,
            Self::Unknown => 2,
            Self::InvalidArgument => 3,
            Self::DeadlineExceeded => 4,
            Self::NotFound => 5,
            Self::AlreadyExists => 6,
            Self::PermissionDenied => 7,
            Self::ResourceExhausted => 8,
            Self::FailedPrecondition => 9,
            Self::Aborted => 10,
            Self::OutOfRange => 11,
            Self::Unimplemented => 12,
            Self::Internal => 13,
            Self::Unavailable => 14,
            Self::DataLoss => 15,
            Self::Unauthenticated => 16,
        }
    }

    /// The code named `name` (`NOT_FOUND`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|code| code.name() == name)
    }
}

impl fmt::Display for GrpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error catalogue: every error the A2A bindings name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum A2aErrorKind {
    /// -32001: the task does not exist or the caller may not see it.
    TaskNotFound,
    /// -32002: the task cannot be canceled (it is terminal).
    TaskNotCancelable,
    /// -32003: the agent does not serve push notifications.
    PushNotificationNotSupported,
    /// -32004: the operation is not supported (streaming off, message to a terminal task, …).
    UnsupportedOperation,
    /// -32005: a media type of the request is not supported (also a wrong `Content-Type`).
    ContentTypeNotSupported,
    /// -32006: the agent produced an invalid response.
    InvalidAgentResponse,
    /// -32007: the extended card is declared but not configured.
    ExtendedAgentCardNotConfigured,
    /// -32008: a required extension was not activated by the client.
    ExtensionSupportRequired,
    /// -32009: the requested `A2A-Version` is not supported.
    VersionNotSupported,
    /// -32700: the body is not JSON.
    JsonParse,
    /// -32600: the body is not a valid JSON-RPC request.
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: the parameters are invalid.
    InvalidParams,
    /// -32603: an internal error.
    Internal,
    /// -32000: the caller presented credentials that are not valid, or presented none where they
    /// are required. The specification names no JSON-RPC code for it (authentication belongs to
    /// the transport: HTTP 401 with `WWW-Authenticate`, §3.3.2 and §7); Accord uses the first code
    /// of JSON-RPC's implementation-defined server-error range that A2A leaves free, with the
    /// `ErrorInfo` reason `UNAUTHENTICATED`, gRPC `UNAUTHENTICATED` and HTTP 401 on every binding.
    Unauthenticated,
    /// -32095: the caller may not do this — it lacks the scope a skill requires. Not in the
    /// specification, which names the category (authorization: HTTP 403, gRPC
    /// `PERMISSION_DENIED`, §3.3.2) but no JSON-RPC code; Accord takes one from the far end of the
    /// implementation-defined range, like the resource errors below, with the `ErrorInfo` reason
    /// `PERMISSION_DENIED`. Not retryable without other credentials.
    PermissionDenied,
    /// -32099: the agent's task store holds as many unfinished tasks as it may; retry later
    /// (`Retry-After`). Like the two below, not in the specification, which has no error for an
    /// exhausted resource: Accord takes codes from the far end of the implementation-defined
    /// server-error range (-32099 down), away from the A2A errors that grow from -32001, with
    /// gRPC `RESOURCE_EXHAUSTED` and an `ErrorInfo` reason of its own. HTTP 503.
    TaskCapacityExhausted,
    /// -32098: the caller holds as many unfinished tasks as one caller may (its share of the
    /// store); other callers still get through. Retry when one of its tasks ends. HTTP 429.
    OwnerShareExhausted,
    /// -32097: the caller sent more requests than its rate limit allows; retry after
    /// `Retry-After`. HTTP 429.
    RateLimited,
    /// -32096: the agent's task store could not be reached or written (a database outage, a full
    /// disk): nothing the caller did; retry after `Retry-After`. gRPC `UNAVAILABLE`, HTTP 503.
    Unavailable,
}

impl A2aErrorKind {
    /// Every kind: the A2A errors by code, then the JSON-RPC standard errors.
    pub const ALL: [Self; 20] = [
        Self::TaskNotFound,
        Self::TaskNotCancelable,
        Self::PushNotificationNotSupported,
        Self::UnsupportedOperation,
        Self::ContentTypeNotSupported,
        Self::InvalidAgentResponse,
        Self::ExtendedAgentCardNotConfigured,
        Self::ExtensionSupportRequired,
        Self::VersionNotSupported,
        Self::JsonParse,
        Self::InvalidRequest,
        Self::MethodNotFound,
        Self::InvalidParams,
        Self::Internal,
        Self::Unauthenticated,
        Self::PermissionDenied,
        Self::TaskCapacityExhausted,
        Self::OwnerShareExhausted,
        Self::RateLimited,
        Self::Unavailable,
    ];

    /// The JSON-RPC error code.
    pub fn code(self) -> i32 {
        match self {
            Self::TaskNotFound => -32001,
            Self::TaskNotCancelable => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation => -32004,
            Self::ContentTypeNotSupported => -32005,
            Self::InvalidAgentResponse => -32006,
            Self::ExtendedAgentCardNotConfigured => -32007,
            Self::ExtensionSupportRequired => -32008,
            Self::VersionNotSupported => -32009,
            Self::JsonParse => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::Internal => -32603,
            Self::Unauthenticated => -32000,
            Self::PermissionDenied => -32095,
            Self::TaskCapacityExhausted => -32099,
            Self::OwnerShareExhausted => -32098,
            Self::RateLimited => -32097,
            Self::Unavailable => -32096,
        }
    }

    /// The kind with JSON-RPC code `code`.
    pub fn from_code(code: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.code() == code)
    }

    /// The specification's error name, e.g. `TaskNotFoundError`.
    pub fn name(self) -> &'static str {
        match self {
            Self::TaskNotFound => "TaskNotFoundError",
            Self::TaskNotCancelable => "TaskNotCancelableError",
            Self::PushNotificationNotSupported => "PushNotificationNotSupportedError",
            Self::UnsupportedOperation => "UnsupportedOperationError",
            Self::ContentTypeNotSupported => "ContentTypeNotSupportedError",
            Self::InvalidAgentResponse => "InvalidAgentResponseError",
            Self::ExtendedAgentCardNotConfigured => "ExtendedAgentCardNotConfiguredError",
            Self::ExtensionSupportRequired => "ExtensionSupportRequiredError",
            Self::VersionNotSupported => "VersionNotSupportedError",
            Self::JsonParse => "JSONParseError",
            Self::InvalidRequest => "InvalidRequestError",
            Self::MethodNotFound => "MethodNotFoundError",
            Self::InvalidParams => "InvalidParamsError",
            Self::Internal => "InternalError",
            Self::Unauthenticated => "UnauthenticatedError",
            Self::PermissionDenied => "PermissionDeniedError",
            Self::TaskCapacityExhausted => "TaskCapacityExhaustedError",
            Self::OwnerShareExhausted => "OwnerShareExhaustedError",
            Self::RateLimited => "RateLimitedError",
            Self::Unavailable => "UnavailableError",
        }
    }

    /// The message used when an occurrence does not give its own. The JSON-RPC standard ones are
    /// those of spec §9.5.
    pub fn default_message(self) -> &'static str {
        match self {
            Self::TaskNotFound => "Task not found",
            Self::TaskNotCancelable => "Task cannot be canceled",
            Self::PushNotificationNotSupported => "Push Notification is not supported",
            Self::UnsupportedOperation => "This operation is not supported",
            Self::ContentTypeNotSupported => "Incompatible content types",
            Self::InvalidAgentResponse => "Invalid agent response",
            Self::ExtendedAgentCardNotConfigured => "Extended agent card is not configured",
            Self::ExtensionSupportRequired => "A required extension was not activated",
            Self::VersionNotSupported => "Protocol version is not supported",
            Self::JsonParse => "Invalid JSON payload",
            Self::InvalidRequest => "Request payload validation error",
            Self::MethodNotFound => "Method not found",
            Self::InvalidParams => "Invalid parameters",
            Self::Internal => "Internal error",
            Self::Unauthenticated => "Authentication required",
            Self::PermissionDenied => "The caller may not do this",
            Self::TaskCapacityExhausted => "The agent cannot take more tasks now; retry later",
            Self::OwnerShareExhausted => "This caller has as many unfinished tasks as it may; retry when one ends",
            Self::RateLimited => "Too many requests; retry later",
            Self::Unavailable => "The agent's task store is unavailable; retry later",
        }
    }

    /// Whether this is one of the A2A errors (-32001 … -32009) rather than a JSON-RPC standard one
    /// or one of Accord's own.
    pub fn is_a2a_error(self) -> bool {
        (-32009..=-32001).contains(&self.code())
    }

    /// Whether a caller should retry the same request later (after `Retry-After`): the
    /// resource-exhausted errors.
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::TaskCapacityExhausted | Self::OwnerShareExhausted | Self::RateLimited | Self::Unavailable)
    }

    /// The `ErrorInfo` reason (the error's name in UPPER_SNAKE without `Error`), for A2A errors
    /// and [`A2aErrorKind::Unauthenticated`]. The JSON-RPC standard errors have no A2A reason.
    pub fn reason(self) -> Option<&'static str> {
        Some(match self {
            Self::TaskNotFound => "TASK_NOT_FOUND",
            Self::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            Self::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            Self::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            Self::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            Self::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            Self::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            Self::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::TaskCapacityExhausted => "TASK_CAPACITY_EXHAUSTED",
            Self::OwnerShareExhausted => "OWNER_SHARE_EXHAUSTED",
            Self::RateLimited => "RATE_LIMITED",
            Self::Unavailable => "UNAVAILABLE",
            Self::JsonParse | Self::InvalidRequest | Self::MethodNotFound | Self::InvalidParams | Self::Internal => {
                return None;
            }
        })
    }

    /// The A2A error with `ErrorInfo` reason `reason`.
    pub fn from_reason(reason: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.reason() == Some(reason))
    }

    /// The gRPC status, also written as `status` in a REST error body.
    pub fn grpc_status(self, mapping: ErrorMapping) -> GrpcCode {
        use ErrorMapping::V1_0_0;
        match (self, mapping) {
            (Self::PushNotificationNotSupported | Self::UnsupportedOperation | Self::VersionNotSupported, V1_0_0) => {
                GrpcCode::Unimplemented
            }
            (Self::TaskNotFound | Self::MethodNotFound, _) => GrpcCode::NotFound,
            (
                Self::TaskNotCancelable
                | Self::PushNotificationNotSupported
                | Self::UnsupportedOperation
                | Self::ExtendedAgentCardNotConfigured
                | Self::ExtensionSupportRequired
                | Self::VersionNotSupported,
                _,
            ) => GrpcCode::FailedPrecondition,
            (Self::ContentTypeNotSupported | Self::JsonParse | Self::InvalidRequest | Self::InvalidParams, _) => {
                GrpcCode::InvalidArgument
            }
            (Self::InvalidAgentResponse | Self::Internal, _) => GrpcCode::Internal,
            (Self::Unauthenticated, _) => GrpcCode::Unauthenticated,
            (Self::PermissionDenied, _) => GrpcCode::PermissionDenied,
            (Self::TaskCapacityExhausted | Self::OwnerShareExhausted | Self::RateLimited, _) => {
                GrpcCode::ResourceExhausted
            }
            (Self::Unavailable, _) => GrpcCode::Unavailable,
        }
    }

    /// The HTTP status of the REST binding.
    pub fn http_status(self, mapping: ErrorMapping) -> u16 {
        use ErrorMapping::V1_0_0;
        match (self, mapping) {
            (Self::TaskNotCancelable, V1_0_0) => 409,
            (Self::ContentTypeNotSupported, V1_0_0) => 415,
            (Self::InvalidAgentResponse, V1_0_0) => 502,
            (Self::TaskNotFound | Self::MethodNotFound, _) => 404,
            (Self::InvalidAgentResponse | Self::Internal, _) => 500,
            (Self::Unauthenticated, _) => 401,
            (Self::PermissionDenied, _) => 403,
            (Self::TaskCapacityExhausted | Self::Unavailable, _) => 503,
            (Self::OwnerShareExhausted | Self::RateLimited, _) => 429,
            (
                Self::TaskNotCancelable
                | Self::ContentTypeNotSupported
                | Self::PushNotificationNotSupported
                | Self::UnsupportedOperation
                | Self::ExtendedAgentCardNotConfigured
                | Self::ExtensionSupportRequired
                | Self::VersionNotSupported
                | Self::JsonParse
                | Self::InvalidRequest
                | Self::InvalidParams,
                _,
            ) => 400,
        }
    }
}

impl fmt::Display for A2aErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `google.rpc.ErrorInfo`: why an error happened, machine-readably.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorInfo {
    /// UPPER_SNAKE reason, e.g. `TASK_NOT_FOUND`.
    pub reason: String,
    /// `a2a-protocol.org` for A2A errors.
    pub domain: String,
    /// Context, e.g. `{"taskId": "…"}`; always written, `{}` when empty.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// A `google.rpc.BadRequest`: the fields that made a request invalid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BadRequest {
    /// The invalid fields.
    #[serde(default, alias = "field_violations")]
    pub field_violations: Vec<FieldViolation>,
}

/// One entry of JSON-RPC `error.data` or REST `error.details`: a `google.protobuf.Any` in JSON,
/// its type named by `@type`.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorDetail {
    /// `type.googleapis.com/google.rpc.ErrorInfo`.
    ErrorInfo(ErrorInfo),
    /// `type.googleapis.com/google.rpc.BadRequest`.
    BadRequest(BadRequest),
    /// Any other detail, kept as received (`@type` included).
    Other(Map<String, Value>),
}

impl Serialize for ErrorDetail {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::ErrorInfo(info) => {
                let mut map = serializer.serialize_map(Some(4))?;
                map.serialize_entry("@type", ERROR_INFO_TYPE)?;
                map.serialize_entry("reason", &info.reason)?;
                map.serialize_entry("domain", &info.domain)?;
                map.serialize_entry("metadata", &info.metadata)?;
                map.end()
            }
            Self::BadRequest(bad_request) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("@type", BAD_REQUEST_TYPE)?;
                map.serialize_entry("fieldViolations", &bad_request.field_violations)?;
                map.end()
            }
            Self::Other(fields) => fields.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ErrorDetail {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fn parse<T: DeserializeOwned, E: de::Error>(fields: Map<String, Value>) -> Result<T, E> {
            serde_json::from_value(Value::Object(fields)).map_err(E::custom)
        }
        let fields = Map::<String, Value>::deserialize(deserializer)?;
        match fields.get("@type").and_then(Value::as_str) {
            Some(ERROR_INFO_TYPE) => parse(fields).map(Self::ErrorInfo),
            Some(BAD_REQUEST_TYPE) => parse(fields).map(Self::BadRequest),
            _ => Ok(Self::Other(fields)),
        }
    }
}

/// A REST error body (§11.6, AIP-193): `{"error": {code, status, message, details}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RestErrorBody {
    /// The status.
    pub error: RpcStatus,
}

/// A `google.rpc.Status` as the REST binding writes it: `code` is the HTTP status and `status`
/// the gRPC code's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RpcStatus {
    /// The HTTP status.
    pub code: u16,
    /// The gRPC status name, e.g. `NOT_FOUND`.
    pub status: String,
    /// A human-readable message.
    pub message: String,
    /// `ErrorInfo`, `BadRequest`, … (omitted when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<ErrorDetail>,
}

impl RpcStatus {
    /// The first `ErrorInfo` among the details.
    pub fn error_info(&self) -> Option<&ErrorInfo> {
        first_error_info(&self.details)
    }
}

fn first_error_info(details: &[ErrorDetail]) -> Option<&ErrorInfo> {
    details.iter().find_map(|detail| match detail {
        ErrorDetail::ErrorInfo(info) => Some(info),
        _ => None,
    })
}

fn field_violations(details: &[ErrorDetail]) -> Vec<FieldViolation> {
    details
        .iter()
        .filter_map(|detail| match detail {
            ErrorDetail::BadRequest(bad_request) => Some(bad_request.field_violations.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// One occurrence of an error from the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aError {
    /// Which error.
    pub kind: A2aErrorKind,
    /// The human-readable message ([`A2aErrorKind::default_message`] unless set).
    pub message: String,
    /// Context for the `ErrorInfo` (`taskId`, …).
    pub metadata: BTreeMap<String, String>,
    /// The invalid fields, written as a `google.rpc.BadRequest` detail when any.
    pub violations: Vec<FieldViolation>,
}

impl A2aError {
    /// An error of `kind` with its default message.
    pub fn new(kind: A2aErrorKind) -> Self {
        Self { kind, message: kind.default_message().to_owned(), metadata: BTreeMap::new(), violations: Vec::new() }
    }

    /// A [`A2aErrorKind::TaskNotFound`] naming the task in its metadata (`taskId`).
    pub fn task_not_found(task_id: &str) -> Self {
        Self::new(A2aErrorKind::TaskNotFound).with_metadata("taskId", task_id)
    }

    /// Replaces the message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Adds an `ErrorInfo` metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Adds field violations.
    pub fn with_violations(mut self, violations: impl IntoIterator<Item = FieldViolation>) -> Self {
        self.violations.extend(violations);
        self
    }

    /// The JSON-RPC code.
    pub fn code(&self) -> i32 {
        self.kind.code()
    }

    /// The `ErrorInfo`, for A2A errors (JSON-RPC standard errors have no A2A reason).
    pub fn error_info(&self) -> Option<ErrorInfo> {
        self.kind.reason().map(|reason| ErrorInfo {
            reason: reason.to_owned(),
            domain: ERROR_DOMAIN.to_owned(),
            metadata: self.metadata.clone(),
        })
    }

    /// The details written on every binding: the `ErrorInfo` (A2A errors), then a `BadRequest`
    /// (when there are violations).
    pub fn details(&self) -> Vec<ErrorDetail> {
        let mut details: Vec<ErrorDetail> = self.error_info().map(ErrorDetail::ErrorInfo).into_iter().collect();
        if !self.violations.is_empty() {
            details.push(ErrorDetail::BadRequest(BadRequest { field_violations: self.violations.clone() }));
        }
        details
    }

    /// The JSON-RPC `error` object: `{code, message, data: [details…]}`, `data` left out when there
    /// are no details.
    pub fn to_jsonrpc_error(&self) -> JsonRpcError {
        let details = self.details();
        let data = if details.is_empty() {
            None
        } else {
            // Serializing these types into a `Value` cannot fail: every map key is a string.
            Some(Value::Array(details.iter().filter_map(|detail| serde_json::to_value(detail).ok()).collect()))
        };
        JsonRpcError { code: i64::from(self.code()), message: self.message.clone(), data }
    }

    /// The HTTP status of the REST binding.
    pub fn http_status(&self, mapping: ErrorMapping) -> u16 {
        self.kind.http_status(mapping)
    }

    /// The gRPC status.
    pub fn grpc_status(&self, mapping: ErrorMapping) -> GrpcCode {
        self.kind.grpc_status(mapping)
    }

    /// The REST error body: `{"error": {code: <HTTP status>, status: <gRPC name>, message, details}}`.
    pub fn to_rest_body(&self, mapping: ErrorMapping) -> RestErrorBody {
        RestErrorBody {
            error: RpcStatus {
                code: self.http_status(mapping),
                status: self.grpc_status(mapping).name().to_owned(),
                message: self.message.clone(),
                details: self.details(),
            },
        }
    }

    /// Reads a JSON-RPC `error` object back (client side), when its code is in the catalogue.
    pub fn from_jsonrpc_error(error: &JsonRpcError) -> Option<Self> {
        let kind = error.kind()?;
        let details: Vec<ErrorDetail> = match &error.data {
            Some(Value::Array(items)) => {
                items.iter().filter_map(|item| serde_json::from_value(item.clone()).ok()).collect()
            }
            _ => Vec::new(),
        };
        Some(Self::from_parts(kind, &error.message, &details))
    }

    /// Reads a REST error body back (client side) by its `ErrorInfo` reason; `None` when it has
    /// no A2A reason (the HTTP status alone is ambiguous: 400 stands for several errors).
    pub fn from_rest_body(body: &RestErrorBody) -> Option<Self> {
        let kind = body.error.error_info().and_then(|info| A2aErrorKind::from_reason(&info.reason))?;
        Some(Self::from_parts(kind, &body.error.message, &body.error.details))
    }

    fn from_parts(kind: A2aErrorKind, message: &str, details: &[ErrorDetail]) -> Self {
        Self {
            kind,
            message: message.to_owned(),
            metadata: first_error_info(details).map(|info| info.metadata.clone()).unwrap_or_default(),
            violations: field_violations(details),
        }
    }
}

impl From<A2aErrorKind> for A2aError {
    fn from(kind: A2aErrorKind) -> Self {
        Self::new(kind)
    }
}

impl From<ValidationError> for A2aError {
    fn from(error: ValidationError) -> Self {
        Self::new(A2aErrorKind::InvalidParams)
            .with_message(format!("{}: {error}", A2aErrorKind::InvalidParams.default_message()))
            .with_violations(error.violations)
    }
}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.kind.name(), self.kind.code(), self.message)
    }
}

impl std::error::Error for A2aError {}
