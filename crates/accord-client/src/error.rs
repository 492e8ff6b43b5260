//! The client's errors: which call failed, and what the agent answered.

use serde_json::Value;

/// The client call an error came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// [`crate::Client::fetch_card`].
    FetchCard,
    /// [`crate::Client::invoke`].
    Invoke,
    /// [`crate::Client::stream`].
    Stream,
    /// [`crate::Client::send_message`].
    SendMessage,
    /// [`crate::Client::get_task`].
    GetTask,
    /// [`crate::Client::list_tasks`].
    ListTasks,
    /// [`crate::Client::cancel_task`].
    CancelTask,
    /// [`crate::Client::subscribe_task`].
    SubscribeTask,
    /// [`crate::Client::fetch_verified_card`] and [`crate::Client::fetch_signed_envelope`].
    FetchSignedCard,
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::FetchCard => "fetch card",
            Self::Invoke => "invoke",
            Self::Stream => "stream",
            Self::SendMessage => "send message",
            Self::GetTask => "get task",
            Self::ListTasks => "list tasks",
            Self::CancelTask => "cancel task",
            Self::SubscribeTask => "subscribe to task",
            Self::FetchSignedCard => "fetch signed card",
        })
    }
}

/// Why a client call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The request did not get an answer (connection refused, reset, timed out, …).
    Transport {
        /// The call.
        operation: Operation,
        /// The URL asked.
        url: String,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The agent answered with an error status.
    Status {
        /// The call.
        operation: Operation,
        /// The HTTP status.
        status: u16,
        /// The body: JSON when it parses, else the text as a JSON string.
        body: Value,
    },
    /// The agent asked for payment and the client's payment hook declined to pay (the reason is
    /// the hook's, e.g. a price over the wallet's cap).
    PaymentDeclined {
        /// The call.
        operation: Operation,
        /// Why.
        reason: String,
    },
    /// The agent's answer could not be read.
    Decode {
        /// The call.
        operation: Operation,
        /// What was wrong.
        reason: String,
    },
    /// No card was found at the URL or any of the well-known places under it.
    CardNotFound {
        /// The URL given.
        base: String,
    },
    /// The card does not list the skill.
    SkillNotFound {
        /// The skill asked for.
        skill: String,
    },
    /// The card lists no HTTP interface and no `url`.
    NoHttpInterface,
    /// The idempotency key is not 20 to 256 characters after trimming.
    InvalidIdempotencyKey,
    /// A task access token is not 20 to 256 characters after trimming.
    InvalidAccessToken,
    /// A task did not end within the time allowed.
    WaitTimeout {
        /// The task.
        task_id: String,
        /// How long it was waited for, in milliseconds.
        waited_ms: u128,
    },
    /// A URL could not be used.
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
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
}

impl ClientError {
    /// The Lucid error code of a [`ClientError::Status`] (`invalid_input`, …), when the body has one.
    pub fn error_code(&self) -> Option<&str> {
        match self {
            Self::Status { body, .. } => body.pointer("/error/code").and_then(Value::as_str),
            _ => None,
        }
    }

    /// Why a signed card was refused, for a [`ClientError::SignedCardRejected`].
    pub fn reject_reason(&self) -> Option<accord_card::RejectReason> {
        match self {
            Self::SignedCardRejected { reason, .. } => Some(*reason),
            _ => None,
        }
    }

    /// The HTTP status of a [`ClientError::Status`].
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport { operation, url, source } => write!(f, "{operation}: request to {url} failed: {source}"),
            Self::PaymentDeclined { operation, reason } => write!(f, "{operation}: payment declined: {reason}"),
            Self::Status { operation, status, body } => {
                write!(f, "{operation}: the agent answered {status}")?;
                match body.pointer("/error") {
                    Some(error) => write!(f, ": {error}"),
                    None => Ok(()),
                }
            }
            Self::Decode { operation, reason } => write!(f, "{operation}: unreadable answer: {reason}"),
            Self::CardNotFound { base } => write!(f, "no agent card found at {base} or its well-known paths"),
            Self::SkillNotFound { skill } => write!(f, "skill {skill:?} not found in the agent card"),
            Self::NoHttpInterface => f.write_str("the agent card has no HTTP interface URL"),
            Self::InvalidIdempotencyKey => f.write_str("idempotency key must contain 20 to 256 characters"),
            Self::InvalidAccessToken => f.write_str("task access token must contain 20 to 256 characters"),
            Self::WaitTimeout { task_id, waited_ms } => {
                write!(f, "Task {task_id} did not complete within {waited_ms}ms")
            }
            Self::InvalidUrl { url, reason } => write!(f, "invalid URL {url:?}: {reason}"),
            Self::SignedCardNotFound { base } => {
                write!(f, "no signed agent card found at {base} or its well-known paths")
            }
            Self::SignedCardRejected { url, reason } => write!(f, "the signed card at {url} was refused: {reason}"),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Transport { source, .. } => Some(source),
            _ => None,
        }
    }
}
