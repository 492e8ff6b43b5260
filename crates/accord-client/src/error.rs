//! The crate's one error: which call failed, and why — with the peer's answer when it sent one.
//!
//! Every client of the crate (the Lucid [`crate::Client`], the A2A [`crate::a2a::A2aClient`], the
//! JSON-RPC tasks calls in [`crate::rpc`]) fails with [`ClientError`]. Its variants are the kinds:
//! the peer could not be reached, it answered with an error (an HTTP status, an A2A error, a
//! JSON-RPC error), its answer could not be read, or the caller's input was refused before
//! anything was sent. A call that made a request says which call it was ([`Operation`]).

use accord_types::a2a::{A2aError, A2aErrorKind};
use accord_types::jsonrpc::ErrorObject;
use accord_types::tasks::TaskStatus;
use reqwest::Url;
use serde_json::Value;

use crate::http::BodyError;
use crate::payment::Settlement;

/// The client call an error came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// Fetching an agent card ([`crate::Client::fetch_card`], [`crate::a2a::fetch_card`]).
    FetchCard,
    /// [`crate::Client::fetch_verified_card`] and [`crate::Client::fetch_signed_envelope`].
    FetchSignedCard,
    /// [`crate::Client::invoke`].
    Invoke,
    /// [`crate::Client::stream`].
    Stream,
    /// Sending a message: Lucid `POST /tasks`, A2A `SendMessage`.
    SendMessage,
    /// A2A `SendStreamingMessage`.
    SendStreamingMessage,
    /// JSON-RPC tasks `tasks/send`.
    SendTask,
    /// Reading a task: Lucid `GET /tasks/{id}`, A2A `GetTask`, JSON-RPC tasks `tasks/get`.
    GetTask,
    /// Listing tasks: Lucid `GET /tasks`, A2A `ListTasks`.
    ListTasks,
    /// Cancelling a task: Lucid, A2A `CancelTask`, JSON-RPC tasks `tasks/cancel`.
    CancelTask,
    /// Following a task's events: Lucid, A2A `SubscribeToTask`.
    SubscribeTask,
    /// A2A `GetExtendedAgentCard`.
    GetExtendedCard,
    /// A2A `CreateTaskPushNotificationConfig`.
    CreatePushConfig,
    /// A2A `GetTaskPushNotificationConfig`.
    GetPushConfig,
    /// A2A `ListTaskPushNotificationConfigs`.
    ListPushConfigs,
    /// A2A `DeleteTaskPushNotificationConfig`.
    DeletePushConfig,
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::FetchCard => "fetch card",
            Self::FetchSignedCard => "fetch signed card",
            Self::Invoke => "invoke",
            Self::Stream => "stream",
            Self::SendMessage => "send message",
            Self::SendStreamingMessage => "send streaming message",
            Self::SendTask => "send task",
            Self::GetTask => "get task",
            Self::ListTasks => "list tasks",
            Self::CancelTask => "cancel task",
            Self::SubscribeTask => "subscribe to task",
            Self::GetExtendedCard => "get extended card",
            Self::CreatePushConfig => "create push config",
            Self::GetPushConfig => "get push config",
            Self::ListPushConfigs => "list push configs",
            Self::DeletePushConfig => "delete push config",
        })
    }
}

/// Why a client call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    // The peer was not reached.
    /// The request did not get an answer (connection refused, reset, …).
    Transport {
        /// The call.
        operation: Operation,
        /// The URL asked.
        url: String,
        /// The transport error.
        source: reqwest::Error,
        /// Why the server refused the TLS handshake, when the client learned it only by trying
        /// the handshake again ([`crate::TlsConfig::refusal`]): a TLS 1.3 server refuses a
        /// client certificate after the request may already have been handed to the connection.
        handshake: Option<String>,
    },
    /// The request did not get an answer within the configured timeout.
    Timeout {
        /// The call.
        operation: Operation,
        /// The URL asked.
        url: String,
    },
    /// A gRPC call did not get an answer from the peer (connection refused, reset, the stream
    /// broken): the status was made by the client's transport, not sent by the peer.
    #[cfg(feature = "grpc")]
    GrpcTransport {
        /// The call.
        operation: Operation,
        /// The interface's endpoint.
        url: String,
        /// The status the transport reported.
        status: Box<tonic::Status>,
        /// Why the server refused the TLS handshake, learned by trying it again (see
        /// [`ClientError::Transport`]'s field of the same name).
        handshake: Option<String>,
    },
    /// The HTTP client could not be built.
    HttpClient(reqwest::Error),
    /// A TLS file ([`crate::TlsOptions`]) cannot be used: missing, not PEM, a key that does not
    /// match its certificate. Nothing was sent.
    TlsConfig {
        /// The file.
        path: String,
        /// What is wrong with it (never its contents).
        reason: String,
    },

    // The peer answered with an error.
    /// The peer answered with an HTTP error status and a body that is no A2A or JSON-RPC error.
    Status {
        /// The call.
        operation: Operation,
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The body: JSON when it parses, else the text (cut at 64 KiB) as a JSON string.
        body: Value,
    },
    /// The peer answered with an A2A error: a JSON-RPC error object whose code is in the
    /// catalogue, a REST `google.rpc.Status` body with an A2A `ErrorInfo` reason, or a gRPC
    /// status.
    A2a {
        /// The call.
        operation: Operation,
        /// The HTTP status, for the HTTP+JSON binding (JSON-RPC errors come with 200; gRPC
        /// errors have none).
        http_status: Option<u16>,
        /// The error: kind (code, reason), message and `ErrorInfo` metadata.
        error: A2aError,
    },
    /// The peer answered with a JSON-RPC error that is not an A2A error: a JSON-RPC tasks error
    /// (`-32001` scope required, `-32002` not found, …), or an A2A peer's code outside the
    /// catalogue.
    JsonRpc {
        /// The call.
        operation: Operation,
        /// The error object as received.
        error: ErrorObject,
    },
    /// The agent asked for payment and the client's payment hook declined to pay (the reason is
    /// the hook's, e.g. a price over the wallet's cap).
    PaymentDeclined {
        /// The call.
        operation: Operation,
        /// Why.
        reason: String,
    },
    /// A Lucid task creation failed: everything needed to reconcile (the keys that were sent,
    /// and whatever the server said).
    TaskNotCreated(Box<TaskCreationFailure>),

    // The peer's answer could not be used.
    /// The answer could not be read: not JSON, not the expected shape, a JSON-RPC response with
    /// another id, too large, not an event stream when one was expected.
    InvalidResponse {
        /// The call.
        operation: Operation,
        /// The URL asked (empty when the request itself could not be encoded).
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// No card was found at the URL or any of the well-known places under it.
    CardNotFound {
        /// The URL given.
        base: String,
    },
    /// The agent card could not be read as JSON, or is not an A2A card.
    InvalidCard {
        /// Where it came from (empty for a card given as a value).
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// No signed card envelope was found at the URL or any of the well-known places under it.
    SignedCardNotFound {
        /// The URL given.
        base: String,
    },
    /// The signed card was fetched and refused: it is not signed by the pinned key, names
    /// another issuer, has expired, …
    SignedCardRejected {
        /// Where the envelope was fetched from.
        url: String,
        /// Why it was refused.
        reason: accord_card::RejectReason,
    },
    /// The card lists no A2A interface with a binding the caller accepts and this client speaks.
    NoCompatibleInterface {
        /// The bindings asked for, in order.
        wanted: Vec<String>,
        /// What the card offers, as `binding@version`.
        offered: Vec<String>,
    },
    /// The card lists no HTTP interface and no `url` (Lucid).
    NoHttpInterface,
    /// The card does not list the skill.
    SkillNotFound {
        /// The skill asked for.
        skill: String,
    },
    /// A task did not end within the time allowed.
    WaitTimeout {
        /// The task.
        task_id: String,
        /// How long it was waited for, in milliseconds.
        waited_ms: u128,
    },
    /// A stream dropped before the task settled, and reconnecting did not bring it back.
    StreamInterrupted {
        /// The task being followed, when known.
        task_id: Option<String>,
        /// The last SSE id received, when any.
        last_event_id: Option<String>,
        /// How many reconnections were attempted.
        attempts: u32,
        /// The last reason (the transport error or why the connection ended).
        reason: String,
    },

    // The caller's input was refused before anything was sent.
    /// A URL (a card's, an interface's, a peer's) cannot be used.
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The idempotency key is not 20 to 256 characters after trimming.
    InvalidIdempotencyKey,
    /// A task access token is not 20 to 256 characters after trimming.
    InvalidAccessToken,
    /// A JSON-RPC tasks skill key does not match the dialect's pattern
    /// ([`accord_types::tasks_rpc::SKILL_PATTERN`]).
    InvalidSkill {
        /// The key as given.
        skill: String,
    },
    /// A JSON-RPC tasks task id does not match the dialect's pattern
    /// ([`accord_types::tasks_rpc::TASK_ID_PATTERN`]).
    InvalidTaskId {
        /// The id as given.
        task_id: String,
    },
}

impl ClientError {
    /// The call the error came from, for an error that a request produced.
    pub fn operation(&self) -> Option<Operation> {
        match self {
            Self::Transport { operation, .. }
            | Self::Timeout { operation, .. }
            | Self::Status { operation, .. }
            | Self::A2a { operation, .. }
            | Self::JsonRpc { operation, .. }
            | Self::PaymentDeclined { operation, .. }
            | Self::InvalidResponse { operation, .. } => Some(*operation),
            #[cfg(feature = "grpc")]
            Self::GrpcTransport { operation, .. } => Some(*operation),
            Self::TaskNotCreated(_) => Some(Operation::SendMessage),
            _ => None,
        }
    }

    /// The HTTP status that came with the error, when any.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            Self::A2a { http_status, .. } => *http_status,
            Self::TaskNotCreated(failure) => failure.status,
            _ => None,
        }
    }

    /// The Lucid error code (`invalid_input`, …), when the agent's error body has one.
    pub fn error_code(&self) -> Option<&str> {
        let body = match self {
            Self::Status { body, .. } => body,
            Self::TaskNotCreated(failure) => failure.body.as_ref()?,
            _ => return None,
        };
        body.pointer("/error/code").and_then(Value::as_str)
    }

    /// The A2A error, for [`ClientError::A2a`].
    pub fn a2a_error(&self) -> Option<&A2aError> {
        match self {
            Self::A2a { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The A2A error kind, for [`ClientError::A2a`].
    pub fn a2a_kind(&self) -> Option<A2aErrorKind> {
        self.a2a_error().map(|error| error.kind)
    }

    /// Why a signed card was refused, for [`ClientError::SignedCardRejected`].
    pub fn reject_reason(&self) -> Option<accord_card::RejectReason> {
        match self {
            Self::SignedCardRejected { reason, .. } => Some(*reason),
            _ => None,
        }
    }

    /// What a failed Lucid task creation left to reconcile, for [`ClientError::TaskNotCreated`].
    pub fn task_creation(&self) -> Option<&TaskCreationFailure> {
        match self {
            Self::TaskNotCreated(failure) => Some(failure),
            _ => None,
        }
    }

    /// Whether the peer was not reached (or did not answer in time): the request may or may not
    /// have been acted on.
    pub fn is_unreachable(&self) -> bool {
        match self {
            Self::Transport { .. } | Self::Timeout { .. } => true,
            #[cfg(feature = "grpc")]
            Self::GrpcTransport { .. } => true,
            Self::TaskNotCreated(failure) => failure.cause.as_deref().is_some_and(Self::is_unreachable),
            _ => false,
        }
    }

    /// A request to `url` that got no answer.
    pub(crate) fn transport(operation: Operation, url: &Url, source: reqwest::Error) -> Self {
        if source.is_timeout() {
            return Self::Timeout { operation, url: url.to_string() };
        }
        Self::Transport { operation, url: url.to_string(), source, handshake: None }
    }

    /// Why a TLS handshake failed, in words, when that is why the peer was not reached: the cause
    /// found along the transport error's source chain ([`crate::tls_failure`]), else the one a
    /// second handshake found.
    pub fn tls_cause(&self) -> Option<String> {
        match self {
            Self::Transport { source, handshake, .. } => {
                handshake.clone().or_else(|| crate::handshake::tls_failure(source))
            }
            #[cfg(feature = "grpc")]
            Self::GrpcTransport { status, handshake, .. } => {
                handshake.clone().or_else(|| crate::handshake::tls_failure(status.as_ref()))
            }
            Self::TaskNotCreated(failure) => failure.cause.as_deref().and_then(Self::tls_cause),
            _ => None,
        }
    }

    /// A body from `url` that could not be read.
    pub(crate) fn body(operation: Operation, url: &Url, error: BodyError) -> Self {
        match error {
            BodyError::TooLarge(limit) => Self::InvalidResponse {
                operation,
                url: url.to_string(),
                reason: format!("the response exceeds {limit} bytes"),
            },
            BodyError::Transport(source) => Self::transport(operation, url, source),
        }
    }

    /// An answer from `url` with an error status: the body as JSON when it parses, else as text
    /// (cut at 64 KiB).
    pub(crate) fn status_body(operation: Operation, url: &Url, status: u16, body: &[u8]) -> Self {
        Site::new(operation, url).status(status, body)
    }

    /// An answer from `url` that could not be read.
    pub(crate) fn invalid(operation: Operation, url: impl ToString, reason: impl Into<String>) -> Self {
        Self::InvalidResponse { operation, url: url.to_string(), reason: reason.into() }
    }

    /// Whether a stream may try again after this error (the connection failed or stalled).
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            Self::Transport { .. } | Self::Timeout { .. } => true,
            #[cfg(feature = "grpc")]
            Self::GrpcTransport { .. } => true,
            _ => false,
        }
    }
}

/// What a failed task creation left to reconcile ([`ClientError::TaskNotCreated`]): the keys that
/// were sent, and whatever the server said.
#[derive(Debug)]
#[non_exhaustive]
pub struct TaskCreationFailure {
    /// What went wrong (the message).
    pub message: String,
    /// The access token that was sent: list with it to find a task that may have been created.
    pub access_token: String,
    /// The idempotency key that was sent.
    pub idempotency_key: String,
    /// The HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// The response body, when it could be read (JSON, or the text as a JSON string).
    pub body: Option<Value>,
    /// The task id, when the body carried one.
    pub task_id: Option<String>,
    /// The task status, when the body carried a valid one.
    pub task_status: Option<TaskStatus>,
    /// Payment evidence from the response headers.
    pub settlement: Option<Settlement>,
    /// The underlying error: no answer, a declined payment, an unreadable answer.
    pub cause: Option<Box<ClientError>>,
}

impl std::fmt::Display for TaskCreationFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(code) = self.body.as_ref().and_then(|body| body.pointer("/error/code")).and_then(Value::as_str) {
            write!(f, " ({code})")?;
        }
        Ok(())
    }
}

/// Where a request went — the call and the URL — for the errors its answer may bring.
#[derive(Debug, Clone)]
pub(crate) struct Site {
    pub(crate) operation: Operation,
    pub(crate) url: String,
}

impl Site {
    pub(crate) fn new(operation: Operation, url: impl ToString) -> Self {
        Self { operation, url: url.to_string() }
    }

    /// An answer that could not be read.
    pub(crate) fn invalid(&self, reason: impl Into<String>) -> ClientError {
        ClientError::InvalidResponse { operation: self.operation, url: self.url.clone(), reason: reason.into() }
    }

    /// An error status whose body is no error of the dialect.
    pub(crate) fn status(&self, status: u16, body: &[u8]) -> ClientError {
        let body = serde_json::from_slice(body).unwrap_or_else(|_| Value::String(crate::http::excerpt(body)));
        ClientError::Status { operation: self.operation, url: self.url.clone(), status, body }
    }

    /// An A2A error, with the HTTP status it came with (HTTP+JSON).
    pub(crate) fn a2a(&self, http_status: Option<u16>, error: A2aError) -> ClientError {
        ClientError::A2a { operation: self.operation, http_status, error }
    }

    /// A JSON-RPC error object: an A2A error when its code is in the catalogue.
    pub(crate) fn rpc(&self, error: ErrorObject) -> ClientError {
        match A2aError::from_jsonrpc_error(&error) {
            Some(a2a) => self.a2a(None, a2a),
            None => ClientError::JsonRpc { operation: self.operation, error },
        }
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport { operation, url, source, .. } => {
                write!(f, "{operation}: request to {url} failed: {source}")?;
                match self.tls_cause() {
                    Some(cause) => write!(f, ": TLS: {cause}"),
                    None => Ok(()),
                }
            }
            Self::Timeout { operation, url } => write!(f, "{operation}: request to {url} timed out"),
            #[cfg(feature = "grpc")]
            Self::GrpcTransport { operation, url, status, .. } => {
                write!(f, "{operation}: gRPC call to {url} failed: {} ({:?})", status.message(), status.code())?;
                match self.tls_cause() {
                    Some(cause) => write!(f, ": TLS: {cause}"),
                    None => Ok(()),
                }
            }
            Self::HttpClient(source) => write!(f, "the HTTP client could not be built: {source}"),
            Self::TlsConfig { path, reason } => write!(f, "TLS setting: {path} {reason}"),
            Self::Status { operation, url, status, body } => {
                write!(f, "{operation}: {url} answered HTTP {status}")?;
                match body {
                    Value::String(text) if !text.is_empty() => write!(f, ": {text}"),
                    Value::Object(object) => match object.get("error") {
                        Some(error) => write!(f, ": {error}"),
                        None => write!(f, ": {body}"),
                    },
                    _ => Ok(()),
                }
            }
            Self::A2a { operation, http_status: Some(status), error } => {
                write!(f, "{operation}: {error} (HTTP {status})")
            }
            Self::A2a { operation, http_status: None, error } => write!(f, "{operation}: {error}"),
            Self::JsonRpc { operation, error } => write!(f, "{operation}: {} ({})", error.message, error.code),
            Self::PaymentDeclined { operation, reason } => write!(f, "{operation}: payment declined: {reason}"),
            Self::TaskNotCreated(failure) => write!(f, "{failure}"),
            Self::InvalidResponse { operation, url, reason } if url.is_empty() => {
                write!(f, "{operation}: unreadable answer: {reason}")
            }
            Self::InvalidResponse { operation, url, reason } => {
                write!(f, "{operation}: unreadable answer from {url}: {reason}")
            }
            Self::CardNotFound { base } => write!(f, "no agent card found at {base} or its well-known paths"),
            Self::InvalidCard { url, reason } if url.is_empty() => write!(f, "invalid agent card: {reason}"),
            Self::InvalidCard { url, reason } => write!(f, "invalid agent card at {url}: {reason}"),
            Self::SignedCardNotFound { base } => {
                write!(f, "no signed agent card found at {base} or its well-known paths")
            }
            Self::SignedCardRejected { url, reason } => write!(f, "the signed card at {url} was refused: {reason}"),
            Self::NoCompatibleInterface { wanted, offered } => write!(
                f,
                "the card offers no compatible interface: wanted one of [{}] at A2A 1.x, offered [{}]",
                wanted.join(", "),
                offered.join(", ")
            ),
            Self::NoHttpInterface => f.write_str("the agent card has no HTTP interface URL"),
            Self::SkillNotFound { skill } => write!(f, "skill {skill:?} not found in the agent card"),
            Self::WaitTimeout { task_id, waited_ms } => {
                write!(f, "Task {task_id} did not complete within {waited_ms}ms")
            }
            Self::StreamInterrupted { task_id, last_event_id, attempts, reason } => write!(
                f,
                "the stream of task {} dropped after event {} and {attempts} reconnection(s) failed: {reason}",
                task_id.as_deref().unwrap_or("?"),
                last_event_id.as_deref().unwrap_or("-"),
            ),
            Self::InvalidUrl { url, reason } => write!(f, "invalid URL {url:?}: {reason}"),
            Self::InvalidIdempotencyKey => f.write_str("idempotency key must contain 20 to 256 characters"),
            Self::InvalidAccessToken => f.write_str("task access token must contain 20 to 256 characters"),
            Self::InvalidSkill { skill } => {
                write!(f, "skill {skill:?} must match {}", accord_types::tasks_rpc::SKILL_PATTERN)
            }
            Self::InvalidTaskId { task_id } => {
                write!(f, "task id {task_id:?} must match {}", accord_types::tasks_rpc::TASK_ID_PATTERN)
            }
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Transport { source, .. } | Self::HttpClient(source) => Some(source),
            #[cfg(feature = "grpc")]
            Self::GrpcTransport { status, .. } => Some(status.as_ref()),
            Self::A2a { error, .. } => Some(error),
            Self::JsonRpc { error, .. } => Some(error),
            Self::TaskNotCreated(failure) => {
                failure.cause.as_deref().map(|cause| cause as &(dyn std::error::Error + 'static))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accord_types::a2a::A2aErrorKind;

    #[test]
    fn an_error_says_its_call_status_and_kind() {
        let site = Site::new(Operation::CancelTask, "https://peer.example/a2a");
        let refused = site.a2a(Some(409), A2aError::new(A2aErrorKind::TaskNotCancelable));
        assert_eq!(refused.operation(), Some(Operation::CancelTask));
        assert_eq!((refused.status(), refused.a2a_kind()), (Some(409), Some(A2aErrorKind::TaskNotCancelable)));
        assert!(!refused.is_unreachable());

        let status = site.status(502, b"<html>bad gateway</html>");
        assert_eq!((status.operation(), status.status()), (Some(Operation::CancelTask), Some(502)));
        assert!(status.to_string().starts_with("cancel task: https://peer.example/a2a answered HTTP 502"), "{status}");

        let timeout = ClientError::Timeout { operation: Operation::GetTask, url: "u".into() };
        assert!(timeout.is_unreachable() && timeout.is_retryable());
        assert_eq!(ClientError::InvalidAccessToken.operation(), None);

        let lucid = Site::new(Operation::Invoke, "u").status(400, br#"{"error":{"code":"invalid_input"}}"#);
        assert_eq!(lucid.error_code(), Some("invalid_input"));
    }
}
