//! What cannot be converted fails with the field's JSON path; what one side writes differently is
//! normalized as the conversion documents; a failed conversion is an InvalidParams A2A error.

#[macro_use]
mod support;

use accord_grpc::{ConvertError, pb};
use accord_types::a2a::{self, A2aError, A2aErrorKind, FieldViolation};
use prost_types::value::Kind;
use serde_json::json;

fn text_part(text: &str) -> pb::Part {
    pb::Part { content: Some(pb::part::Content::Text(text.to_owned())), ..Default::default() }
}

fn pb_message(parts: Vec<pb::Part>) -> pb::Message {
    pb::Message { message_id: "m".to_owned(), role: pb::Role::User as i32, parts, ..Default::default() }
}

fn pb_status() -> pb::TaskStatus {
    pb::TaskStatus { state: pb::TaskState::Working as i32, ..Default::default() }
}

fn number(n: f64) -> prost_types::Value {
    prost_types::Value { kind: Some(Kind::NumberValue(n)) }
}

fn metadata_with(key: &str, value: prost_types::Value) -> Option<prost_types::Struct> {
    Some(prost_types::Struct { fields: [(key.to_owned(), value)].into_iter().collect() })
}

fn field<T: std::fmt::Debug>(result: Result<T, ConvertError>) -> String {
    result.expect_err("the conversion should fail").field().to_owned()
}

#[test]
fn raw_that_is_not_base64_names_the_part() {
    let request: a2a::SendMessageRequest = a2a!(json!({"message": {
        "messageId": "m",
        "role": "ROLE_USER",
        "parts": [{"text": "a"}, {"raw": "aGk="}, {"raw": "not base64!"}],
    }}));
    let error = pb::SendMessageRequest::try_from(request).expect_err("invalid base64");
    assert_eq!(error.field(), "message.parts[2].raw");
    assert!(error.reason().contains("base64"), "{error}");
    assert_eq!(error.to_string(), format!("message.parts[2].raw: {}", error.reason()));

    for bad in ["a", "QQ=", "QQ===", "Q=Q=", "aGk*"] {
        assert_eq!(field(pb::Part::try_from(a2a::Part::raw_base64(bad))), "raw", "{bad:?}");
    }
}

#[test]
fn raw_accepts_both_alphabets_with_or_without_padding() {
    // 0xfb 0xff 0xbf: "+/+/" in the standard alphabet, "-_-_" in the URL-safe one.
    for text in ["+/+/", "-_-_", "+_-/"] {
        let proto: pb::Part = a2a::Part::raw_base64(text).try_into().expect("valid base64");
        assert_eq!(proto.content, Some(pb::part::Content::Raw(vec![0xfb, 0xff, 0xbf])), "{text}");
    }
    for text in ["aGk", "aGk="] {
        let proto: pb::Part = a2a::Part::raw_base64(text).try_into().expect("valid base64");
        assert_eq!(proto.content, Some(pb::part::Content::Raw(b"hi".to_vec())), "{text}");
        // Back as standard padded base64.
        let back: a2a::Part = proto.try_into().expect("converts");
        assert_eq!(back.content, a2a::PartContent::Raw("aGk=".to_owned()));
    }
}

#[test]
fn a_oneof_with_no_member_fails() {
    let request = pb::SendMessageRequest { message: Some(pb_message(vec![pb::Part::default()])), ..Default::default() };
    let error = a2a::SendMessageRequest::try_from(request).expect_err("no content");
    assert_eq!(error.field(), "message.parts[0].content");
    assert!(error.reason().starts_with("must be set"), "{error}");

    assert_eq!(field(a2a::StreamResponse::try_from(pb::StreamResponse::default())), "payload");
    assert_eq!(field(a2a::SendMessageResponse::try_from(pb::SendMessageResponse::default())), "payload");
    assert_eq!(field(a2a::SecurityScheme::try_from(pb::SecurityScheme::default())), "scheme");
    assert_eq!(field(a2a::OAuthFlows::try_from(pb::OAuthFlows::default())), "flow");

    let card = pb::AgentCard {
        security_schemes: [
            (
                "fine".to_owned(),
                pb::SecurityScheme {
                    scheme: Some(pb::security_scheme::Scheme::MtlsSecurityScheme(Default::default())),
                },
            ),
            ("empty".to_owned(), pb::SecurityScheme::default()),
        ]
        .into_iter()
        .collect(),
        ..Default::default()
    };
    assert_eq!(field(a2a::AgentCard::try_from(card)), r#"securitySchemes["empty"].scheme"#);

    let oauth = |flows| pb::SecurityScheme {
        scheme: Some(pb::security_scheme::Scheme::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
            flows,
            ..Default::default()
        })),
    };
    let card = pb::AgentCard {
        security_schemes: [("o".to_owned(), oauth(Some(pb::OAuthFlows::default())))].into_iter().collect(),
        ..Default::default()
    };
    assert_eq!(field(a2a::AgentCard::try_from(card)), r#"securitySchemes["o"].oauth2SecurityScheme.flows.flow"#);
    let card =
        pb::AgentCard { security_schemes: [("o".to_owned(), oauth(None))].into_iter().collect(), ..Default::default() };
    assert_eq!(field(a2a::AgentCard::try_from(card)), r#"securitySchemes["o"].oauth2SecurityScheme.flows"#);
}

#[test]
fn required_messages_that_are_unset_fail() {
    let error = a2a::SendMessageRequest::try_from(pb::SendMessageRequest::default()).expect_err("no message");
    assert_eq!(error.field(), "message");
    assert_eq!(error.reason(), "is required but not set");

    let task = pb::Task { id: "t".to_owned(), ..Default::default() };
    assert_eq!(field(a2a::Task::try_from(task)), "status");
    assert_eq!(field(a2a::TaskStatusUpdateEvent::try_from(pb::TaskStatusUpdateEvent::default())), "status");
    assert_eq!(field(a2a::TaskArtifactUpdateEvent::try_from(pb::TaskArtifactUpdateEvent::default())), "artifact");

    let stream = pb::StreamResponse {
        payload: Some(pb::stream_response::Payload::StatusUpdate(pb::TaskStatusUpdateEvent::default())),
    };
    assert_eq!(field(a2a::StreamResponse::try_from(stream)), "statusUpdate.status");
    let list = pb::ListTasksResponse {
        tasks: vec![pb::Task { status: Some(pb_status()), ..Default::default() }, pb::Task::default()],
        ..Default::default()
    };
    assert_eq!(field(a2a::ListTasksResponse::try_from(list)), "tasks[1].status");
}

#[test]
fn capabilities_default_when_unset() {
    let card: a2a::AgentCard = pb::AgentCard::default().try_into().expect("capabilities have a natural default");
    assert_eq!(card.capabilities, a2a::AgentCapabilities::default());
}

#[test]
fn unknown_enum_numbers_fail() {
    let error =
        a2a::Message::try_from(pb::Message { role: 7, ..pb_message(vec![text_part("x")]) }).expect_err("role 7");
    assert_eq!(error.field(), "role");
    assert!(error.reason().contains('7'), "{error}");

    let task = pb::Task { status: Some(pb::TaskStatus { state: 42, ..pb_status() }), ..Default::default() };
    assert_eq!(field(a2a::Task::try_from(task)), "status.state");
    let request = pb::ListTasksRequest { status: 99, ..Default::default() };
    assert_eq!(field(a2a::ListTasksRequest::try_from(request)), "status");
    let history = pb::Task {
        status: Some(pb_status()),
        history: vec![pb_message(vec![text_part("x")]), pb::Message { role: -1, ..pb_message(vec![]) }],
        ..Default::default()
    };
    assert_eq!(field(a2a::Task::try_from(history)), "history[1].role");
}

#[test]
fn numbers_json_cannot_hold_and_values_without_a_kind_fail() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let artifact = pb::Artifact { metadata: metadata_with("score", number(bad)), ..Default::default() };
        assert_eq!(field(a2a::Artifact::try_from(artifact)), r#"metadata["score"]"#, "{bad}");
    }

    let list = prost_types::Value {
        kind: Some(Kind::ListValue(prost_types::ListValue { values: vec![number(1.0), number(f64::NAN)] })),
    };
    let data = prost_types::Value {
        kind: Some(Kind::StructValue(prost_types::Struct {
            fields: [("list".to_owned(), list)].into_iter().collect(),
        })),
    };
    let part = pb::Part { content: Some(pb::part::Content::Data(data)), ..Default::default() };
    let message = pb_message(vec![text_part("ok"), part]);
    assert_eq!(field(a2a::Message::try_from(message)), r#"parts[1].data["list"][1]"#);

    let request =
        pb::CancelTaskRequest { metadata: metadata_with("k", prost_types::Value { kind: None }), ..Default::default() };
    let error = a2a::CancelTaskRequest::try_from(request).expect_err("a value with no kind");
    assert_eq!(error.field(), r#"metadata["k"]"#);
    assert!(error.reason().starts_with("kind must be set"), "{error}");
    let part =
        pb::Part { content: Some(pb::part::Content::Data(prost_types::Value { kind: None })), ..Default::default() };
    assert_eq!(field(a2a::Part::try_from(part)), "data");
}

#[test]
fn invalid_timestamps_fail() {
    for text in ["yesterday", "2025-10-28T10:30:00+01:00", "2025-10-28T10:30:00", "2025-02-30T00:00:00Z", ""] {
        let task: a2a::Task = a2a!(json!({"id": "t", "status": {"state": "TASK_STATE_WORKING", "timestamp": text}}));
        assert_eq!(field(pb::Task::try_from(task)), "status.timestamp", "{text:?}");
    }
    let request: a2a::ListTasksRequest = a2a!(json!({"statusTimestampAfter": "2025-10-28"}));
    assert_eq!(field(pb::ListTasksRequest::try_from(request)), "statusTimestampAfter");

    for (seconds, nanos) in [(0, -1), (0, 1_000_000_000), (-62_135_596_801, 0), (253_402_300_800, 0), (i64::MAX, 0)] {
        let status = pb::TaskStatus { timestamp: Some(prost_types::Timestamp { seconds, nanos }), ..pb_status() };
        let event = pb::TaskStatusUpdateEvent { status: Some(status), ..Default::default() };
        assert_eq!(field(a2a::TaskStatusUpdateEvent::try_from(event)), "status.timestamp", "{seconds} {nanos}");
    }
    let request = pb::ListTasksRequest {
        status_timestamp_after: Some(prost_types::Timestamp { seconds: 0, nanos: -5 }),
        ..Default::default()
    };
    assert_eq!(field(a2a::ListTasksRequest::try_from(request)), "statusTimestampAfter");
}

#[test]
fn documented_normalizations() {
    // Some("") is written as the proto3 default and reads back as None.
    let message: a2a::Message =
        a2a!(json!({"messageId": "m", "contextId": "", "role": "ROLE_USER", "parts": [{"text": "x", "filename": ""}]}));
    let back: a2a::Message = pb::Message::try_from(message).expect("converts").try_into().expect("converts");
    assert_eq!(back.context_id, None);
    assert_eq!(back.parts[0].filename, None);

    // A false plain bool reads back as None, which means the same.
    let event: a2a::TaskArtifactUpdateEvent = a2a!(json!({
        "taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]},
        "append": false, "lastChunk": false,
    }));
    let back: a2a::TaskArtifactUpdateEvent =
        pb::TaskArtifactUpdateEvent::try_from(event).expect("converts").try_into().expect("converts");
    assert_eq!((back.append, back.last_chunk), (None, None));
    let configuration: a2a::SendMessageConfiguration = a2a!(json!({"returnImmediately": false}));
    let back: a2a::SendMessageConfiguration =
        pb::SendMessageConfiguration::try_from(configuration).expect("converts").try_into().expect("converts");
    assert_eq!(back.return_immediately, None);

    // A status filter of TASK_STATE_UNSPECIFIED is the proto3 default: no filter.
    let request: a2a::ListTasksRequest = a2a!(json!({"status": "TASK_STATE_UNSPECIFIED"}));
    let back: a2a::ListTasksRequest =
        pb::ListTasksRequest::try_from(request).expect("converts").try_into().expect("converts");
    assert_eq!(back.status, None);

    // Whole seconds are written with milliseconds, as the a2a types write their own timestamps.
    let status: a2a::TaskStatus = a2a!(json!({"state": "TASK_STATE_WORKING", "timestamp": "2025-10-28T10:30:00Z"}));
    let back: a2a::TaskStatus = pb::TaskStatus::try_from(status).expect("converts").try_into().expect("converts");
    assert_eq!(back.timestamp.as_deref(), Some("2025-10-28T10:30:00.000Z"));

    // 1.0 is a double with no fraction: it comes back as the integer 1.
    let part = a2a::Part::data(json!({"one": 1.0, "half": 0.5}));
    let back: a2a::Part = pb::Part::try_from(part).expect("converts").try_into().expect("converts");
    assert_eq!(back.content, a2a::PartContent::Data(json!({"one": 1, "half": 0.5})));

    // The card's unknown JSON fields have no proto field.
    let mut card: a2a::AgentCard = a2a!(json!({
        "name": "n", "description": "d", "version": "1", "capabilities": {"x-extra": 1},
        "supportedInterfaces": [{"url": "u", "protocolBinding": "GRPC", "protocolVersion": "1.0", "x": true}],
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "D", "tags": ["t"], "x": 1}],
        "url": "https://lucid.example.com", "protocolVersion": "0.3.0",
    }));
    assert!(!card.extra.is_empty() && !card.capabilities.extra.is_empty());
    let back: a2a::AgentCard = pb::AgentCard::try_from(card.clone()).expect("converts").try_into().expect("converts");
    card.extra.clear();
    card.capabilities.extra.clear();
    card.supported_interfaces[0].extra.clear();
    card.skills[0].extra.clear();
    assert_eq!(back, card);
}

#[test]
fn a_conversion_error_is_invalid_params_with_the_field() {
    let error = ConvertError::new("message.parts[2].raw", "is not base64");
    let a2a_error = A2aError::from(error.clone());
    assert_eq!(a2a_error.kind, A2aErrorKind::InvalidParams);
    assert_eq!(a2a_error.violations, vec![FieldViolation::new("message.parts[2].raw", "is not base64")]);
    assert!(a2a_error.message.contains("message.parts[2].raw: is not base64"), "{}", a2a_error.message);
    // The same shape as a validation failure of the JSON bindings.
    let validation = a2a::validate::ValidationError { violations: vec![error.to_violation()] };
    assert_eq!(a2a_error, A2aError::from(validation));

    let response_error = error.to_agent_response_error();
    assert_eq!(response_error.kind, A2aErrorKind::InvalidAgentResponse);
    assert_eq!(response_error.violations, a2a_error.violations);

    // Paths join as JSON paths.
    assert_eq!(ConvertError::new("", "r").within("parts[0]").field(), "parts[0]");
    assert_eq!(ConvertError::new("[\"k\"]", "r").within("metadata").field(), "metadata[\"k\"]");
    assert_eq!(ConvertError::new("raw", "r").within("parts[0]").within("message").field(), "message.parts[0].raw");
    assert_eq!(ConvertError::new("", "bare reason").to_string(), "bare reason");
}

#[test]
fn raw_decoding_accepts_exactly_what_validation_accepts() {
    use a2a::Validate;
    for text in [
        "",
        "a",
        "aA",
        "aGk",
        "aGk=",
        "aGk==",
        "aGk===",
        "QQ",
        "QQ=",
        "QQ==",
        "QR==",
        "QQ===",
        "Q===",
        "=",
        "====",
        "+/+/",
        "-_-_",
        "+_-/",
        "aGk*",
        "a Gk",
        "aGVsbG8gd29ybGQ=",
        "aGVsbG8gd29ybGQ",
        "Q=Q=",
        "ü",
    ] {
        let valid = a2a::Part::raw_base64(text).validate().is_ok();
        let converts = pb::Part::try_from(a2a::Part::raw_base64(text)).is_ok();
        assert_eq!(converts, valid, "{text:?}: converts {converts}, validates {valid}");
    }
}
