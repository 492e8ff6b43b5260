//! A2A errors as gRPC statuses with `google.rpc.Status` details, and back.

use accord_grpc::status::{from_status, to_status};
use accord_types::a2a::errors::{ERROR_DOMAIN, ERROR_INFO_TYPE};
use accord_types::a2a::{A2aError, A2aErrorKind, ErrorMapping, FieldViolation};
use prost::Message as _;
use tonic::Code;

const MAPPINGS: [ErrorMapping; 2] = [ErrorMapping::V1_0_1, ErrorMapping::V1_0_0];

/// What a status without an A2A `ErrorInfo` reads as, by code (documented on `from_status`).
fn kind_by_code(code: Code) -> A2aErrorKind {
    match code {
        Code::Unauthenticated => A2aErrorKind::Unauthenticated,
        Code::ResourceExhausted => A2aErrorKind::RateLimited,
        Code::Unavailable => A2aErrorKind::Unavailable,
        Code::InvalidArgument => A2aErrorKind::InvalidParams,
        Code::NotFound => A2aErrorKind::TaskNotFound,
        Code::Unimplemented => A2aErrorKind::MethodNotFound,
        _ => A2aErrorKind::Internal,
    }
}

#[test]
fn every_kind_round_trips_under_both_mappings() {
    for mapping in MAPPINGS {
        for kind in A2aErrorKind::ALL {
            let error = A2aError::new(kind)
                .with_message(format!("{kind} happened — détails ✓"))
                .with_metadata("taskId", "task-1");
            let status = to_status(&error, mapping);
            assert_eq!(status.code(), Code::from_i32(kind.grpc_status(mapping).number()), "{kind} {mapping:?}");
            assert_eq!(status.message(), error.message);

            let back = from_status(&status);
            assert_eq!(back.message, error.message, "{kind}");
            if kind.reason().is_some() {
                assert_eq!(back.kind, kind, "{mapping:?}");
                assert_eq!(back.metadata, error.metadata, "{kind}");
            } else {
                // The JSON-RPC standard errors have no A2A reason, so no ErrorInfo: the code decides.
                assert_eq!(back.kind, kind_by_code(status.code()), "{kind}");
                assert!(back.metadata.is_empty(), "{kind}");
            }
            assert!(back.violations.is_empty());
        }
    }
}

#[test]
fn the_reason_less_kinds_that_keep_their_identity() {
    for kind in [A2aErrorKind::InvalidParams, A2aErrorKind::Internal] {
        for mapping in MAPPINGS {
            assert_eq!(from_status(&to_status(&A2aError::new(kind), mapping)).kind, kind);
        }
    }
}

#[test]
fn field_violations_travel_as_bad_request() {
    let violations = vec![
        FieldViolation::new("message.parts[0].raw", "must be base64-encoded bytes"),
        FieldViolation::new("configuration.historyLength", "must be zero or more, got -1"),
    ];
    for kind in [A2aErrorKind::InvalidParams, A2aErrorKind::ContentTypeNotSupported] {
        let error = A2aError::new(kind).with_violations(violations.clone());
        let back = from_status(&to_status(&error, ErrorMapping::default()));
        assert_eq!(back, error);
    }
}

#[test]
fn the_details_are_a_google_rpc_status_with_an_a2a_error_info() {
    let error = A2aError::task_not_found("task-9").with_violations([FieldViolation::new("id", "unknown")]);
    let status = to_status(&error, ErrorMapping::V1_0_0);
    let decoded = tonic_types::Status::decode(status.details()).expect("the details are a google.rpc.Status");
    assert_eq!(decoded.code, Code::NotFound as i32);
    assert_eq!(decoded.message, error.message);
    assert_eq!(decoded.details.len(), 2);
    assert_eq!(decoded.details[0].type_url, ERROR_INFO_TYPE);
    let info = tonic_types::pb::ErrorInfo::decode(decoded.details[0].value.as_slice()).expect("an ErrorInfo");
    assert_eq!(info.domain, ERROR_DOMAIN);
    assert_eq!(info.reason, "TASK_NOT_FOUND");
    assert_eq!(info.metadata.get("taskId").map(String::as_str), Some("task-9"));
    assert_eq!(decoded.details[1].type_url, "type.googleapis.com/google.rpc.BadRequest");
}

#[test]
fn the_status_survives_the_trailers() {
    let error = A2aError::new(A2aErrorKind::ExtensionSupportRequired)
        .with_message("activate https://example.com/ext")
        .with_metadata("extension", "https://example.com/ext");
    let status = to_status(&error, ErrorMapping::V1_0_1);
    let mut trailers = tonic::codegen::http::HeaderMap::new();
    status.add_header(&mut trailers).expect("the status fits in headers");
    assert!(trailers.contains_key("grpc-status-details-bin"));
    let received = tonic::Status::from_header_map(&trailers).expect("a status in the trailers");
    assert_eq!(received.code(), Code::FailedPrecondition);
    assert_eq!(from_status(&received), error);
}

#[test]
fn a_plain_status_maps_by_code() {
    for code in [
        Code::Unauthenticated,
        Code::ResourceExhausted,
        Code::Unavailable,
        Code::InvalidArgument,
        Code::NotFound,
        Code::Unimplemented,
        Code::Internal,
        Code::Unknown,
        Code::FailedPrecondition,
        Code::DataLoss,
        Code::Ok,
    ] {
        let error = from_status(&tonic::Status::new(code, "from the peer"));
        assert_eq!(error.kind, kind_by_code(code), "{code:?}");
        assert_eq!(error.message, "from the peer");
        assert!(error.metadata.is_empty() && error.violations.is_empty());
    }
    // No message: the kind's own.
    let error = from_status(&tonic::Status::new(Code::Unavailable, ""));
    assert_eq!(error.message, A2aErrorKind::Unavailable.default_message());
}

#[test]
fn only_an_a2a_domain_reason_decides_the_kind() {
    use tonic_types::{ErrorDetails, StatusExt};
    let foreign = tonic::Status::with_error_details(
        Code::NotFound,
        "no such bucket",
        ErrorDetails::with_error_info(
            "TASK_NOT_CANCELABLE",
            "storage.example.com",
            [("bucket".to_owned(), "b".to_owned())],
        ),
    );
    let error = from_status(&foreign);
    assert_eq!(error.kind, A2aErrorKind::TaskNotFound, "by code, not by a foreign reason");
    assert_eq!(error.metadata.get("bucket").map(String::as_str), Some("b"));

    let unknown_reason = tonic::Status::with_error_details(
        Code::FailedPrecondition,
        "newer error",
        ErrorDetails::with_error_info("SOMETHING_NEW", ERROR_DOMAIN, std::collections::HashMap::new()),
    );
    assert_eq!(from_status(&unknown_reason).kind, A2aErrorKind::Internal);

    // The reason wins over the code.
    let by_reason = tonic::Status::with_error_details(
        Code::Unimplemented,
        "push is off",
        ErrorDetails::with_error_info(
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ERROR_DOMAIN,
            std::collections::HashMap::new(),
        ),
    );
    assert_eq!(from_status(&by_reason).kind, A2aErrorKind::PushNotificationNotSupported);
}

#[test]
fn undecodable_details_are_ignored() {
    let status = tonic::Status::with_details(Code::Unauthenticated, "who are you", vec![0xff, 0x00, 0x13].into());
    let error = from_status(&status);
    assert_eq!(error.kind, A2aErrorKind::Unauthenticated);
    assert_eq!(error.message, "who are you");
}
