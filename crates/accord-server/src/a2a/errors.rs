//! The A2A error conventions every binding shares: the seconds a retryable error says to wait
//! (in its `ErrorInfo` metadata and in `Retry-After`), a layer's refusal as an A2A error, and the
//! JSON-RPC error and result responses of the 1.0 and 0.3 dialects, written once.

use accord_types::a2a::{A2aError, A2aErrorKind, v03};
use accord_types::jsonrpc;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::limits::CAPACITY_RETRY_AFTER_SECS;
use crate::refusal::{Refusal, RefusalKind, set_retry_after};

/// The `ErrorInfo` metadata key that carries the seconds to wait on an A2A retryable error (for
/// clients that read the body and not the headers).
pub(crate) const RETRY_AFTER_METADATA: &str = "retryAfterSeconds";

/// `error` with the seconds to wait in its `ErrorInfo` metadata.
pub(crate) fn retryable(error: A2aError, retry_after: u64) -> A2aError {
    error.with_metadata(RETRY_AFTER_METADATA, retry_after.to_string())
}

/// The seconds an A2A error says to wait, when it is retryable.
pub(crate) fn retry_after_of(error: &A2aError) -> Option<u64> {
    if !error.kind.is_retryable() {
        return None;
    }
    Some(
        error
            .metadata
            .get(RETRY_AFTER_METADATA)
            .and_then(|seconds| seconds.parse().ok())
            .unwrap_or(CAPACITY_RETRY_AFTER_SECS),
    )
}

/// A layer's refusal as the A2A error every binding renders (the seconds to wait in its
/// metadata).
pub(crate) fn refusal_error(refusal: &Refusal) -> A2aError {
    let kind = match refusal.kind {
        RefusalKind::Unauthenticated => A2aErrorKind::Unauthenticated,
        RefusalKind::RateLimited => A2aErrorKind::RateLimited,
        RefusalKind::VersionNotSupported => A2aErrorKind::VersionNotSupported,
        RefusalKind::Busy => A2aErrorKind::Unavailable,
    };
    let error = A2aError::new(kind).with_message(refusal.message.clone());
    match refusal.retry_after {
        Some(seconds) => retryable(error, seconds),
        None => error,
    }
}

/// The dialect a JSON-RPC answer is written in: the error object's shape differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RpcDialect {
    /// A2A 1.0.
    V1_0,
    /// A2A 0.3 (`{code, message, data}` with the 0.3 codes and data).
    V0_3,
}

/// A JSON-RPC error response in `dialect`: HTTP 200, except for the unauthenticated error, which
/// the transport answers with 401 (authentication is the transport's business, spec §7). A
/// retryable error (the store full, the caller at its share or over its rate) also carries
/// `Retry-After`.
pub(crate) fn rpc_error(dialect: RpcDialect, id: Value, error: &A2aError) -> Response {
    let body = match dialect {
        RpcDialect::V1_0 => jsonrpc::Response::<Value>::failure(id, error),
        RpcDialect::V0_3 => jsonrpc::Response::<Value>::failure(id, v03::error_object(error)),
    };
    let status = if error.kind == A2aErrorKind::Unauthenticated { StatusCode::UNAUTHORIZED } else { StatusCode::OK };
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], axum::Json(body)).into_response();
    if let Some(seconds) = retry_after_of(error) {
        set_retry_after(&mut response, seconds);
    }
    response
}

/// A JSON-RPC result response (an internal error in `dialect` should the result not serialize).
/// The result is encoded once, straight into the body: its members come in the order its type
/// declares them (JSON objects are unordered; no reader may depend on it).
pub(crate) fn rpc_result(dialect: RpcDialect, id: Value, result: impl serde::Serialize) -> Response {
    let response = jsonrpc::Response::success(id, result);
    match serde_json::to_vec(&response) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(error) => {
            tracing::error!(%error, ?dialect, "A2A result does not serialize");
            rpc_error(dialect, response.id, &A2aError::new(A2aErrorKind::Internal))
        }
    }
}
