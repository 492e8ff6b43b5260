//! The A2A client's error: what failed, with the peer's A2A error when it sent one.

use accord_types::a2a::{A2aError, A2aErrorKind, JsonRpcError};
use reqwest::Url;

use crate::http::BodyError;

/// Why an A2A call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum A2aClientError {
    /// The request did not get an answer (connection refused, reset, timed out, …).
    Transport {
        /// The URL asked.
        url: String,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The request did not get an answer within the configured timeout.
    Timeout {
        /// The URL asked.
        url: String,
    },
    /// The HTTP client could not be built.
    HttpClient(reqwest::Error),
    /// A gRPC call did not get an answer from the peer (connection refused, reset, the stream
    /// broken): the status was made by the client's transport, not sent by the peer.
    GrpcTransport {
        /// The interface's endpoint.
        url: String,
        /// The status the transport reported.
        status: tonic::Status,
    },
    /// The peer answered with an HTTP error status and a body that is not an A2A error.
    Status {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The body, as text (cut at 64 KiB).
        body: String,
    },
    /// The peer answered with an A2A error: a JSON-RPC error object whose code is in the
    /// catalogue, a REST `google.rpc.Status` body with an A2A `ErrorInfo` reason, or a gRPC
    /// status.
    A2a {
        /// The HTTP status, for the HTTP+JSON binding (JSON-RPC errors come with 200; gRPC
        /// errors have none).
        http_status: Option<u16>,
        /// The error: kind (code, reason), message and `ErrorInfo` metadata.
        error: A2aError,
    },
    /// The peer answered with a JSON-RPC error whose code is not in the A2A catalogue.
    JsonRpc {
        /// The error object as received.
        error: JsonRpcError,
    },
    /// The answer could not be read: not JSON, not the expected shape, a JSON-RPC response with
    /// another id, too large, not an event stream when one was expected.
    InvalidResponse {
        /// The URL asked.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// The agent card could not be fetched as JSON or is not an A2A v1.0 card.
    InvalidCard {
        /// Where it came from (empty for a card given as a value).
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// A URL (the card's, or an interface's) cannot be used.
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The card lists no interface with a binding the caller accepts and this client speaks.
    NoCompatibleInterface {
        /// The bindings asked for, in order.
        wanted: Vec<String>,
        /// What the card offers, as `binding@version`.
        offered: Vec<String>,
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
}

impl A2aClientError {
    /// The A2A error kind, for [`A2aClientError::A2a`].
    pub fn kind(&self) -> Option<A2aErrorKind> {
        self.a2a_error().map(|error| error.kind)
    }

    /// The A2A error, for [`A2aClientError::A2a`].
    pub fn a2a_error(&self) -> Option<&A2aError> {
        match self {
            Self::A2a { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The HTTP status that came with the error, when any.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            Self::A2a { http_status, .. } => *http_status,
            _ => None,
        }
    }

    /// A request to `url` that got no answer.
    pub(crate) fn transport(url: &Url, source: reqwest::Error) -> Self {
        Self::Transport { url: url.to_string(), source }
    }

    /// A body from `url` that could not be read.
    pub(crate) fn body(url: &Url, error: BodyError) -> Self {
        match error {
            BodyError::TooLarge(limit) => {
                Self::InvalidResponse { url: url.to_string(), reason: format!("the response exceeds {limit} bytes") }
            }
            BodyError::Transport(source) => Self::transport(url, source),
        }
    }

    /// Whether a stream may try again after this error (the connection failed or stalled).
    pub(crate) fn is_retryable(&self) -> bool {
        matches!(self, Self::Transport { .. } | Self::Timeout { .. } | Self::GrpcTransport { .. })
    }
}

impl std::fmt::Display for A2aClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport { url, source } => write!(f, "request to {url} failed: {source}"),
            Self::Timeout { url } => write!(f, "request to {url} timed out"),
            Self::HttpClient(source) => write!(f, "the HTTP client could not be built: {source}"),
            Self::GrpcTransport { url, status } => {
                write!(f, "gRPC call to {url} failed: {} ({:?})", status.message(), status.code())
            }
            Self::Status { url, status, body } => write!(f, "{url} answered HTTP {status}: {body}"),
            Self::A2a { http_status: Some(status), error } => write!(f, "{error} (HTTP {status})"),
            Self::A2a { http_status: None, error } => write!(f, "{error}"),
            Self::JsonRpc { error } => write!(f, "{error}"),
            Self::InvalidResponse { url, reason } => write!(f, "unreadable answer from {url}: {reason}"),
            Self::InvalidCard { url, reason } if url.is_empty() => write!(f, "invalid agent card: {reason}"),
            Self::InvalidCard { url, reason } => write!(f, "invalid agent card at {url}: {reason}"),
            Self::InvalidUrl { url, reason } => write!(f, "invalid URL {url:?}: {reason}"),
            Self::NoCompatibleInterface { wanted, offered } => write!(
                f,
                "the card offers no compatible interface: wanted one of [{}] at A2A 1.x, offered [{}]",
                wanted.join(", "),
                offered.join(", ")
            ),
            Self::StreamInterrupted { task_id, last_event_id, attempts, reason } => write!(
                f,
                "the stream of task {} dropped after event {} and {attempts} reconnection(s) failed: {reason}",
                task_id.as_deref().unwrap_or("?"),
                last_event_id.as_deref().unwrap_or("-"),
            ),
        }
    }
}

impl std::error::Error for A2aClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Transport { source, .. } | Self::HttpClient(source) => Some(source),
            Self::GrpcTransport { status, .. } => Some(status),
            Self::A2a { error, .. } => Some(error),
            Self::JsonRpc { error } => Some(error),
            _ => None,
        }
    }
}
