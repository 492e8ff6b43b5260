//! A2A errors as gRPC statuses (spec §10.6) and back.
//!
//! On the wire an error is a `google.rpc.Status` in the `grpc-status-details-bin` trailer, which
//! is what the official SDKs read: the gRPC code of the error table ([`A2aErrorKind::grpc_status`]
//! under an [`ErrorMapping`]), the message, a `google.rpc.ErrorInfo` (reason, domain
//! `a2a-protocol.org`, metadata) for every error that has an A2A reason, and a
//! `google.rpc.BadRequest` when the error names invalid fields. The catalogue and its tables live
//! in [`accord_types::a2a::errors`]; this module only encodes and decodes.

use std::collections::HashMap;

use accord_types::a2a::errors::ERROR_DOMAIN;
use accord_types::a2a::{A2aError, A2aErrorKind, ErrorMapping, FieldViolation};
use tonic::Code;
use tonic_types::{ErrorDetails, StatusExt};

/// `error` as a gRPC status under `mapping`: code `error.grpc_status(mapping)`, the error's
/// message, and the details `ErrorInfo` (when the kind has an A2A reason) and `BadRequest` (when
/// the error has field violations), encoded as a `google.rpc.Status`.
pub fn to_status(error: &A2aError, mapping: ErrorMapping) -> tonic::Status {
    let code = Code::from_i32(error.grpc_status(mapping).number());
    let mut details = ErrorDetails::new();
    if let Some(info) = error.error_info() {
        details.set_error_info(info.reason, info.domain, info.metadata.into_iter().collect::<HashMap<_, _>>());
    }
    if !error.violations.is_empty() {
        let violations: Vec<tonic_types::FieldViolation> = error
            .violations
            .iter()
            .map(|violation| tonic_types::FieldViolation::new(violation.field.clone(), violation.description.clone()))
            .collect();
        details.set_bad_request(violations);
    }
    tonic::Status::with_error_details(code, error.message.clone(), details)
}

/// The A2A error a gRPC status stands for (client side).
///
/// The kind comes from the `ErrorInfo` reason when its domain is `a2a-protocol.org` and the
/// reason is in the catalogue. Otherwise it comes from the code alone, where the code has one
/// sensible reading:
///
/// | code | kind |
/// |---|---|
/// | `UNAUTHENTICATED` | [`A2aErrorKind::Unauthenticated`] |
/// | `PERMISSION_DENIED` | [`A2aErrorKind::PermissionDenied`] |
/// | `RESOURCE_EXHAUSTED` | [`A2aErrorKind::RateLimited`] (the generic "slow down") |
/// | `UNAVAILABLE` | [`A2aErrorKind::Unavailable`] |
/// | `INVALID_ARGUMENT` | [`A2aErrorKind::InvalidParams`] |
/// | `NOT_FOUND` | [`A2aErrorKind::TaskNotFound`]: the only A2A error with that code (a JSON-RPC "method not found" has no gRPC twin, as gRPC itself answers an unknown method with `UNIMPLEMENTED`) |
/// | `UNIMPLEMENTED` | [`A2aErrorKind::MethodNotFound`]: without an `ErrorInfo` it is gRPC's own answer to a method the server does not serve (the v1.0.0 table's `UNIMPLEMENTED` errors always carry their reason) |
/// | anything else | [`A2aErrorKind::Internal`] |
///
/// The message is kept (the kind's default when the status has none), and so are the `ErrorInfo`
/// metadata (whatever its domain) and the `BadRequest` field violations. Details that do not
/// decode are ignored, as if absent.
pub fn from_status(status: &tonic::Status) -> A2aError {
    let details = status.get_error_details();
    let info = details.error_info();
    let kind = info
        .filter(|info| info.domain == ERROR_DOMAIN)
        .and_then(|info| A2aErrorKind::from_reason(&info.reason))
        .unwrap_or_else(|| kind_from_code(status.code()));
    let mut error = A2aError::new(kind);
    if !status.message().is_empty() {
        error.message = status.message().to_owned();
    }
    if let Some(info) = info {
        error.metadata = info.metadata.iter().map(|(key, value)| (key.clone(), value.clone())).collect();
    }
    if let Some(bad_request) = details.bad_request() {
        error.violations = bad_request
            .field_violations
            .iter()
            .map(|violation| FieldViolation::new(violation.field.clone(), violation.description.clone()))
            .collect();
    }
    error
}

fn kind_from_code(code: Code) -> A2aErrorKind {
    match code {
        Code::Unauthenticated => A2aErrorKind::Unauthenticated,
        Code::PermissionDenied => A2aErrorKind::PermissionDenied,
        Code::ResourceExhausted => A2aErrorKind::RateLimited,
        Code::Unavailable => A2aErrorKind::Unavailable,
        Code::InvalidArgument => A2aErrorKind::InvalidParams,
        Code::NotFound => A2aErrorKind::TaskNotFound,
        Code::Unimplemented => A2aErrorKind::MethodNotFound,
        _ => A2aErrorKind::Internal,
    }
}
