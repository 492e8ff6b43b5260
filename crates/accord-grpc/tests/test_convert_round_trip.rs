//! Every a2a ⇄ pb pair round-trips: a2a → pb → a2a, through the protobuf wire encoding, and
//! pb → a2a → pb.

#[macro_use]
mod support;

use accord_grpc::pb;
use accord_types::a2a;
use serde_json::{Value, json};
use support::{round_trip_a2a, round_trip_pb};

fn metadata() -> Value {
    json!({
        "string": "héllo wörld ✓ 你好 🎉",
        "integer": 42,
        "negative": -7,
        "float": 1.5,
        "small": 1e-7,
        "largeSafe": 9_007_199_254_740_992_i64,
        "bool": true,
        "null": null,
        "list": [1, "two", [3.25, null], {"four": false}],
        "nested": {"deeper": {"deepest": []}, "empty": {}},
    })
}

fn every_part() -> Vec<Value> {
    vec![
        json!({"text": "plain text"}),
        json!({"text": ""}),
        json!({"text": "ünïcödé 😀", "metadata": {}}),
        json!({"raw": "aGVsbG8gd29ybGQ=", "filename": "hello.txt", "mediaType": "text/plain"}),
        json!({"raw": ""}),
        json!({"raw": "AP/+/Q==", "metadata": {"kind": "binary"}}),
        json!({"url": "https://example.com/report.pdf", "filename": "report.pdf", "mediaType": "application/pdf"}),
        json!({"data": metadata()}),
        json!({"data": null}),
        json!({"data": [1, 2, 3]}),
        json!({"data": "just a string"}),
        json!({"data": 12.75, "metadata": {"units": "kg"}}),
        json!({"data": false}),
    ]
}

fn message(role: &str) -> Value {
    json!({
        "messageId": "msg-1",
        "contextId": "ctx-1",
        "taskId": "task-1",
        "role": role,
        "parts": every_part(),
        "metadata": metadata(),
        "extensions": ["https://example.com/ext/a", "https://example.com/ext/b"],
        "referenceTaskIds": ["task-0"],
    })
}

fn artifact() -> Value {
    json!({
        "artifactId": "art-1",
        "name": "Result",
        "description": "What came out",
        "parts": [{"text": "done"}, {"data": {"rows": 3}}],
        "metadata": {"source": "tool"},
        "extensions": ["https://example.com/ext/a"],
    })
}

fn task() -> Value {
    json!({
        "id": "task-1",
        "contextId": "ctx-1",
        "status": {
            "state": "TASK_STATE_INPUT_REQUIRED",
            "message": message("ROLE_AGENT"),
            "timestamp": "2025-10-28T10:30:00.123Z",
        },
        "artifacts": [artifact()],
        "history": [message("ROLE_USER"), message("ROLE_AGENT")],
        "metadata": {"priority": 1},
    })
}

#[test]
fn every_part_kind() {
    for part in every_part() {
        round_trip_a2a::<a2a::Part, pb::Part>(&a2a!(part));
    }
}

#[test]
fn raw_parts_carry_the_decoded_bytes() {
    let proto: pb::Part = a2a::Part::raw_base64("AP/+/Q==").try_into().expect("converts");
    assert_eq!(proto.content, Some(pb::part::Content::Raw(vec![0x00, 0xff, 0xfe, 0xfd])));
}

#[test]
fn every_role_and_no_optional_fields() {
    for role in ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"] {
        round_trip_a2a::<a2a::Message, pb::Message>(&a2a!(message(role)));
        let bare = json!({"messageId": "m", "role": role, "parts": [{"text": "hi"}]});
        round_trip_a2a::<a2a::Message, pb::Message>(&a2a!(bare));
    }
    for role in a2a::Role::ALL {
        let proto = pb::Role::try_from(role).expect("converts");
        assert_eq!(proto as i32, role.number());
        assert_eq!(a2a::Role::try_from(proto).expect("converts"), role);
    }
}

#[test]
fn every_task_state() {
    for state in a2a::TaskState::ALL {
        let proto = pb::TaskState::try_from(state).expect("converts");
        assert_eq!(proto as i32, state.number());
        assert_eq!(proto.as_str_name(), state.as_str());
        assert_eq!(a2a::TaskState::try_from(proto).expect("converts"), state);

        let status = a2a::TaskStatus::new(state);
        let proto = round_trip_a2a::<a2a::TaskStatus, pb::TaskStatus>(&status);
        assert_eq!(proto.state, state.number());
    }
}

#[test]
fn empty_and_absent_metadata_stay_distinct() {
    let absent: a2a::Artifact = a2a!(json!({"artifactId": "a", "parts": [{"text": "x"}]}));
    let empty: a2a::Artifact = a2a!(json!({"artifactId": "a", "parts": [{"text": "x"}], "metadata": {}}));
    let absent_pb = round_trip_a2a::<a2a::Artifact, pb::Artifact>(&absent);
    let empty_pb = round_trip_a2a::<a2a::Artifact, pb::Artifact>(&empty);
    assert_eq!(absent_pb.metadata, None);
    assert_eq!(empty_pb.metadata, Some(prost_types::Struct::default()));
}

#[test]
fn nested_struct_values() {
    let part: a2a::Part = a2a!(json!({"data": metadata(), "metadata": metadata()}));
    let proto = round_trip_a2a::<a2a::Part, pb::Part>(&part);
    let Some(pb::part::Content::Data(prost_types::Value { kind: Some(prost_types::value::Kind::StructValue(data)) })) =
        proto.content
    else {
        panic!("data should be a struct value: {:?}", proto.content);
    };
    use prost_types::value::Kind;
    assert_eq!(data.fields["integer"].kind, Some(Kind::NumberValue(42.0)));
    assert_eq!(data.fields["null"].kind, Some(Kind::NullValue(0)));
    assert_eq!(data.fields["string"].kind, Some(Kind::StringValue("héllo wörld ✓ 你好 🎉".to_owned())));
    let Some(Kind::ListValue(list)) = &data.fields["list"].kind else { panic!("list should be a list value") };
    assert_eq!(list.values.len(), 4);
}

#[test]
fn artifacts_statuses_and_tasks() {
    round_trip_a2a::<a2a::Artifact, pb::Artifact>(&a2a!(artifact()));
    round_trip_a2a::<a2a::Task, pb::Task>(&a2a!(task()));
    round_trip_a2a::<a2a::Task, pb::Task>(&a2a!(json!({"id": "t", "status": {"state": "TASK_STATE_SUBMITTED"}})));
}

#[test]
fn timestamps_in_the_a2a_format() {
    for timestamp in [
        "2025-10-28T10:30:00.000Z",
        "2025-10-28T10:30:00.123Z",
        "2025-10-28T10:30:00.123456Z",
        "2025-10-28T10:30:00.123456789Z",
        "2025-10-28T10:30:00.000001Z",
        "1970-01-01T00:00:00.000Z",
        "1969-12-31T23:59:59.999Z",
        "1969-12-31T23:59:59.000000001Z",
        "2024-02-29T23:59:59.999Z",
        "0001-01-01T00:00:00.000Z",
        "9999-12-31T23:59:59.999999999Z",
    ] {
        let status: a2a::TaskStatus = a2a!(json!({"state": "TASK_STATE_WORKING", "timestamp": timestamp}));
        round_trip_a2a::<a2a::TaskStatus, pb::TaskStatus>(&status);
    }
}

#[test]
fn timestamps_carry_the_instant() {
    let status: a2a::TaskStatus =
        a2a!(json!({"state": "TASK_STATE_WORKING", "timestamp": "1969-12-31T23:59:59.500000001Z"}));
    let proto: pb::TaskStatus = status.try_into().expect("converts");
    assert_eq!(proto.timestamp, Some(prost_types::Timestamp { seconds: -1, nanos: 500_000_001 }));

    let status: a2a::TaskStatus = a2a!(json!({"state": "TASK_STATE_WORKING", "timestamp": "2025-10-28T10:30:00Z"}));
    let proto: pb::TaskStatus = status.try_into().expect("converts");
    assert_eq!(proto.timestamp, Some(prost_types::Timestamp { seconds: 1_761_647_400, nanos: 0 }));
}

#[test]
fn proto_timestamps_of_any_precision_survive() {
    for (seconds, nanos) in [
        (0, 0),
        (1_761_647_400, 1),
        (1_761_647_400, 10),
        (1_761_647_400, 1_000),
        (1_761_647_400, 5_000_000),
        (1_761_647_400, 999_999_999),
        (-1, 999_999_999),
        (-62_135_596_800, 0),
        (253_402_300_799, 999_999_999),
    ] {
        let proto = pb::TaskStatus {
            state: pb::TaskState::Completed as i32,
            message: None,
            timestamp: Some(prost_types::Timestamp { seconds, nanos }),
        };
        let status: a2a::TaskStatus = round_trip_pb(&proto);
        let text = status.timestamp.expect("a timestamp");
        assert!(a2a::time::is_rfc3339_utc(&text), "{text}");
        assert!(text.ends_with('Z'), "{text}");
    }
}

#[test]
fn streaming_events_and_stream_responses() {
    let status_update = json!({
        "taskId": "task-1",
        "contextId": "ctx-1",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "2025-10-28T10:30:00.500Z"},
        "metadata": {"step": 2},
    });
    let artifact_update = json!({
        "taskId": "task-1",
        "contextId": "ctx-1",
        "artifact": artifact(),
        "append": true,
        "lastChunk": true,
        "metadata": {},
    });
    let bare_artifact_update = json!({"taskId": "task-1", "contextId": "ctx-1", "artifact": artifact()});
    for (append, last_chunk) in [(true, false), (false, true)] {
        let mut one_flag = bare_artifact_update.clone();
        if append {
            one_flag["append"] = json!(true);
        }
        if last_chunk {
            one_flag["lastChunk"] = json!(true);
        }
        let proto = round_trip_a2a::<a2a::TaskArtifactUpdateEvent, pb::TaskArtifactUpdateEvent>(&a2a!(one_flag));
        assert_eq!((proto.append, proto.last_chunk), (append, last_chunk));
    }
    round_trip_a2a::<a2a::TaskStatusUpdateEvent, pb::TaskStatusUpdateEvent>(&a2a!(status_update.clone()));
    let proto =
        round_trip_a2a::<a2a::TaskArtifactUpdateEvent, pb::TaskArtifactUpdateEvent>(&a2a!(artifact_update.clone()));
    assert!(proto.append && proto.last_chunk);
    let proto =
        round_trip_a2a::<a2a::TaskArtifactUpdateEvent, pb::TaskArtifactUpdateEvent>(&a2a!(bare_artifact_update));
    assert!(!proto.append && !proto.last_chunk);

    for response in [
        json!({"task": task()}),
        json!({"message": message("ROLE_AGENT")}),
        json!({"statusUpdate": status_update}),
        json!({"artifactUpdate": artifact_update}),
    ] {
        round_trip_a2a::<a2a::StreamResponse, pb::StreamResponse>(&a2a!(response));
    }
    for response in [json!({"task": task()}), json!({"message": message("ROLE_AGENT")})] {
        round_trip_a2a::<a2a::SendMessageResponse, pb::SendMessageResponse>(&a2a!(response));
    }
}

fn push_config() -> Value {
    json!({
        "tenant": "acme",
        "id": "cfg-1",
        "taskId": "task-1",
        "url": "https://hooks.example.com/a2a",
        "token": "opaque-token",
        "authentication": {"scheme": "Bearer", "credentials": "secret"},
    })
}

#[test]
fn send_requests_and_their_configuration() {
    let full = json!({
        "tenant": "acme",
        "message": message("ROLE_USER"),
        "configuration": {
            "acceptedOutputModes": ["text/plain", "application/json"],
            "taskPushNotificationConfig": push_config(),
            "historyLength": 0,
            "returnImmediately": true,
        },
        "metadata": metadata(),
    });
    let proto = round_trip_a2a::<a2a::SendMessageRequest, pb::SendMessageRequest>(&a2a!(full));
    assert_eq!(proto.configuration.as_ref().and_then(|c| c.history_length), Some(0));
    round_trip_a2a::<a2a::SendMessageRequest, pb::SendMessageRequest>(&a2a!(json!({
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {},
    })));
    round_trip_a2a::<a2a::SendMessageConfiguration, pb::SendMessageConfiguration>(&a2a!(json!({})));
    round_trip_a2a::<a2a::AuthenticationInfo, pb::AuthenticationInfo>(&a2a!(json!({"scheme": "Basic"})));
    round_trip_a2a::<a2a::TaskPushNotificationConfig, pb::TaskPushNotificationConfig>(&a2a!(push_config()));
    round_trip_a2a::<a2a::TaskPushNotificationConfig, pb::TaskPushNotificationConfig>(&a2a!(
        json!({"url": "https://hooks.example.com"}),
    ));
}

#[test]
fn task_requests_and_responses() {
    round_trip_a2a::<a2a::GetTaskRequest, pb::GetTaskRequest>(&a2a!(json!({"id": "t"})));
    round_trip_a2a::<a2a::GetTaskRequest, pb::GetTaskRequest>(&a2a!(
        json!({"tenant": "acme", "id": "t", "historyLength": 0}),
    ));
    round_trip_a2a::<a2a::GetTaskRequest, pb::GetTaskRequest>(&a2a!(json!({"id": "t", "historyLength": 10})));

    round_trip_a2a::<a2a::ListTasksRequest, pb::ListTasksRequest>(&a2a!(json!({})));
    for state in a2a::TaskState::ALL.into_iter().skip(1) {
        round_trip_a2a::<a2a::ListTasksRequest, pb::ListTasksRequest>(&a2a!(json!({
            "tenant": "acme",
            "contextId": "ctx-1",
            "status": state.as_str(),
            "pageSize": 20,
            "pageToken": "next",
            "historyLength": 3,
            "statusTimestampAfter": "2025-01-01T00:00:00.000Z",
            "includeArtifacts": false,
        })));
    }
    round_trip_a2a::<a2a::ListTasksResponse, pb::ListTasksResponse>(&a2a!(json!({
        "tasks": [task(), {"id": "t2", "status": {"state": "TASK_STATE_COMPLETED"}}],
        "nextPageToken": "abc",
        "pageSize": 2,
        "totalSize": 7,
    })));
    round_trip_a2a::<a2a::ListTasksResponse, pb::ListTasksResponse>(&a2a!(json!({"tasks": [], "nextPageToken": ""})));
    round_trip_a2a::<a2a::CancelTaskRequest, pb::CancelTaskRequest>(&a2a!(
        json!({"tenant": "acme", "id": "t", "metadata": {"reason": "user"}}),
    ));
    round_trip_a2a::<a2a::CancelTaskRequest, pb::CancelTaskRequest>(&a2a!(json!({"id": "t"})));
    round_trip_a2a::<a2a::SubscribeToTaskRequest, pb::SubscribeToTaskRequest>(&a2a!(
        json!({"tenant": "acme", "id": "t"}),
    ));
    round_trip_a2a::<a2a::GetExtendedAgentCardRequest, pb::GetExtendedAgentCardRequest>(&a2a!(json!({})));
    round_trip_a2a::<a2a::GetExtendedAgentCardRequest, pb::GetExtendedAgentCardRequest>(&a2a!(
        json!({"tenant": "acme"}),
    ));
}

#[test]
fn push_notification_config_requests() {
    for ids in [json!({"taskId": "t", "id": "c"}), json!({"tenant": "acme", "taskId": "t", "id": "c"})] {
        round_trip_a2a::<a2a::GetTaskPushNotificationConfigRequest, pb::GetTaskPushNotificationConfigRequest>(&a2a!(
            ids.clone(),
        ));
        round_trip_a2a::<a2a::DeleteTaskPushNotificationConfigRequest, pb::DeleteTaskPushNotificationConfigRequest>(
            &a2a!(ids),
        );
    }
    round_trip_a2a::<a2a::ListTaskPushNotificationConfigsRequest, pb::ListTaskPushNotificationConfigsRequest>(&a2a!(
        json!({"taskId": "t"}),
    ));
    round_trip_a2a::<a2a::ListTaskPushNotificationConfigsRequest, pb::ListTaskPushNotificationConfigsRequest>(&a2a!(
        json!({"tenant": "acme", "taskId": "t", "pageSize": 5, "pageToken": "p2"}),
    ));
    round_trip_a2a::<a2a::ListTaskPushNotificationConfigsResponse, pb::ListTaskPushNotificationConfigsResponse>(&a2a!(
        json!({"configs": [push_config(), {"url": "https://b.example.com"}], "nextPageToken": "n"}),
    ));
    round_trip_a2a::<a2a::ListTaskPushNotificationConfigsResponse, pb::ListTaskPushNotificationConfigsResponse>(&a2a!(
        json!({"configs": [], "nextPageToken": ""}),
    ));
}

fn every_security_scheme() -> Value {
    json!({
        "apiKey": {"apiKeySecurityScheme": {"description": "key", "location": "header", "name": "X-API-Key"}},
        "apiKeyBare": {"apiKeySecurityScheme": {"location": "query", "name": "key"}},
        "bearer": {"httpAuthSecurityScheme": {"description": "JWT", "scheme": "Bearer", "bearerFormat": "JWT"}},
        "basic": {"httpAuthSecurityScheme": {"scheme": "Basic"}},
        "oauthCode": {"oauth2SecurityScheme": {
            "description": "code flow",
            "flows": {"authorizationCode": {
                "authorizationUrl": "https://auth.example.com/authorize",
                "tokenUrl": "https://auth.example.com/token",
                "refreshUrl": "https://auth.example.com/refresh",
                "scopes": {"read": "Read things", "write": "Write things"},
                "pkceRequired": true,
            }},
            "oauth2MetadataUrl": "https://auth.example.com/.well-known/oauth-authorization-server",
        }},
        "oauthCodeBare": {"oauth2SecurityScheme": {"flows": {"authorizationCode": {
            "authorizationUrl": "https://auth.example.com/authorize",
            "tokenUrl": "https://auth.example.com/token",
            "scopes": {},
        }}}},
        "oauthClient": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
            "tokenUrl": "https://auth.example.com/token",
            "refreshUrl": "https://auth.example.com/refresh",
            "scopes": {"admin": "Everything"},
        }}}},
        "oauthImplicit": {"oauth2SecurityScheme": {"flows": {"implicit": {
            "authorizationUrl": "https://auth.example.com/authorize",
            "refreshUrl": "https://auth.example.com/refresh",
            "scopes": {"read": "Read"},
        }}}},
        "oauthImplicitBare": {"oauth2SecurityScheme": {"flows": {"implicit": {}}}},
        "oauthPassword": {"oauth2SecurityScheme": {"flows": {"password": {
            "tokenUrl": "https://auth.example.com/token",
            "scopes": {"read": "Read"},
        }}}},
        "oauthDevice": {"oauth2SecurityScheme": {"flows": {"deviceCode": {
            "deviceAuthorizationUrl": "https://auth.example.com/device",
            "tokenUrl": "https://auth.example.com/token",
            "refreshUrl": "https://auth.example.com/refresh",
            "scopes": {"read": "Read"},
        }}}},
        "oidc": {"openIdConnectSecurityScheme": {
            "description": "OIDC",
            "openIdConnectUrl": "https://auth.example.com/.well-known/openid-configuration",
        }},
        "mtls": {"mtlsSecurityScheme": {"description": "client certificates"}},
        "mtlsBare": {"mtlsSecurityScheme": {}},
    })
}

fn full_card() -> Value {
    json!({
        "name": "Recipe Agent",
        "description": "Finds recipes — and explains them ✓",
        "supportedInterfaces": [
            {"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "agent.example.com:443", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "acme"},
        ],
        "provider": {"url": "https://example.com", "organization": "Example Org"},
        "version": "1.2.3",
        "documentationUrl": "https://agent.example.com/docs",
        "capabilities": {
            "streaming": true,
            "pushNotifications": false,
            "extensions": [
                {"uri": "https://example.com/ext/a", "description": "A", "required": true, "params": {"level": 2}},
                {"uri": "https://example.com/ext/b"},
                {},
            ],
            "extendedAgentCard": true,
        },
        "securitySchemes": every_security_scheme(),
        "securityRequirements": [
            {"schemes": {"oauthCode": {"list": ["read", "write"]}, "apiKey": {"list": []}}},
            {"schemes": {}},
        ],
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [
            {
                "id": "find-recipe",
                "name": "Find recipe",
                "description": "Finds a recipe",
                "tags": ["cooking", "recipes"],
                "examples": ["Something with leeks"],
                "inputModes": ["text/plain"],
                "outputModes": ["application/json"],
                "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
            },
            {"id": "s2", "name": "Second", "description": "Another", "tags": ["x"]},
        ],
        "signatures": [
            {"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2lnbmF0dXJl", "header": {"kid": "key-1"}},
            {"protected": "eyJhbGciOiJFZERTQSJ9", "signature": "c2ln"},
        ],
        "iconUrl": "https://agent.example.com/icon.png",
    })
}

#[test]
fn a_full_agent_card() {
    let proto = round_trip_a2a::<a2a::AgentCard, pb::AgentCard>(&a2a!(full_card()));
    assert_eq!(proto.security_schemes.len(), 14);
    assert_eq!(proto.capabilities.as_ref().and_then(|c| c.push_notifications), Some(false));
    round_trip_a2a::<a2a::AgentCard, pb::AgentCard>(&a2a!(json!({
        "name": "Minimal",
        "description": "Minimal card",
        "supportedInterfaces": [{"url": "localhost:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
        "version": "0.1.0",
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "D", "tags": ["t"]}],
    })));
}

#[test]
fn every_security_scheme_and_flow_on_its_own() {
    let Value::Object(schemes) = every_security_scheme() else { unreachable!("an object") };
    for (name, scheme) in schemes {
        let value: a2a::SecurityScheme = a2a!(scheme);
        let proto = round_trip_a2a::<a2a::SecurityScheme, pb::SecurityScheme>(&value);
        assert!(proto.scheme.is_some(), "{name}");
        if let a2a::SecurityScheme::OAuth2(oauth) = &value {
            round_trip_a2a::<a2a::OAuth2SecurityScheme, pb::OAuth2SecurityScheme>(oauth);
            round_trip_a2a::<a2a::OAuthFlows, pb::OAuthFlows>(&oauth.flows);
        }
    }
}

#[test]
fn every_card_part_on_its_own() {
    let card: a2a::AgentCard = a2a!(full_card());
    for interface in &card.supported_interfaces {
        round_trip_a2a::<a2a::AgentInterface, pb::AgentInterface>(interface);
    }
    round_trip_a2a::<a2a::AgentProvider, pb::AgentProvider>(card.provider.as_ref().expect("a provider"));
    round_trip_a2a::<a2a::AgentCapabilities, pb::AgentCapabilities>(&card.capabilities);
    for extension in &card.capabilities.extensions {
        round_trip_a2a::<a2a::AgentExtension, pb::AgentExtension>(extension);
    }
    for skill in &card.skills {
        round_trip_a2a::<a2a::AgentSkill, pb::AgentSkill>(skill);
    }
    for signature in &card.signatures {
        round_trip_a2a::<a2a::AgentCardSignature, pb::AgentCardSignature>(signature);
    }
    for requirement in &card.security_requirements {
        round_trip_a2a::<a2a::SecurityRequirement, pb::SecurityRequirement>(requirement);
        for list in requirement.schemes.values() {
            round_trip_a2a::<a2a::StringList, pb::StringList>(list);
        }
    }
}

#[test]
fn proto_values_built_directly_survive() {
    use prost_types::value::Kind;
    let number = |n: f64| prost_types::Value { kind: Some(Kind::NumberValue(n)) };
    let fields = [
        ("half", number(0.5)),
        ("whole", number(3.0)),
        ("negative", number(-12.0)),
        ("huge", number(1e300)),
        ("beyondSafe", number(2f64.powi(60))),
        ("null", prost_types::Value { kind: Some(Kind::NullValue(0)) }),
        ("empty", prost_types::Value { kind: Some(Kind::StructValue(prost_types::Struct::default())) }),
        (
            "list",
            prost_types::Value { kind: Some(Kind::ListValue(prost_types::ListValue { values: vec![number(1.0)] })) },
        ),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect();
    let proto = pb::Part {
        content: Some(pb::part::Content::Raw((0..=255).collect())),
        metadata: Some(prost_types::Struct { fields }),
        filename: "all-bytes.bin".to_owned(),
        media_type: "application/octet-stream".to_owned(),
    };
    let part: a2a::Part = round_trip_pb(&proto);
    let metadata = part.metadata.expect("metadata");
    assert_eq!(metadata["whole"], json!(3), "an integral double comes back as a JSON integer");
    assert!(metadata["whole"].is_i64());
    assert_eq!(metadata["half"], json!(0.5));
    assert!(metadata["beyondSafe"].is_f64(), "beyond 2^53 a double stays a float");

    let card = pb::AgentCard {
        name: "n".to_owned(),
        capabilities: Some(pb::AgentCapabilities::default()),
        security_schemes: [(
            "m".to_owned(),
            pb::SecurityScheme { scheme: Some(pb::security_scheme::Scheme::MtlsSecurityScheme(Default::default())) },
        )]
        .into_iter()
        .collect(),
        ..Default::default()
    };
    round_trip_pb::<pb::AgentCard, a2a::AgentCard>(&card);
}
