//! The A2A v1.0 wire types against JSON shaped like the specification's: ProtoJSON names,
//! enums, oneofs, presence, required fields, the card's preserved extras, and the error bodies.

use accord_types::a2a::errors::{A2aError, A2aErrorKind, ErrorMapping, GrpcCode, RestErrorBody};
use accord_types::a2a::jsonrpc::{JsonRpcRequest, JsonRpcResponse, methods};
use accord_types::a2a::time::{format_unix_millis, is_rfc3339_utc, parse_rfc3339_utc};
use accord_types::a2a::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Decodes `input` as `T` and encodes it again.
fn reencode<T: Serialize + DeserializeOwned>(input: &Value) -> Value {
    let typed: T = serde_json::from_value(input.clone()).unwrap_or_else(|error| panic!("decode {input}: {error}"));
    serde_json::to_value(&typed).expect("encode")
}

/// Asserts that `input` survives a decode/encode round trip unchanged.
fn assert_round_trip<T: Serialize + DeserializeOwned>(input: Value) {
    assert_eq!(reencode::<T>(&input), input);
}

fn decode_error<T: DeserializeOwned + std::fmt::Debug>(input: Value) -> String {
    serde_json::from_value::<T>(input).expect_err("must not decode").to_string()
}

fn violation_fields<T: Validate>(value: &T) -> Vec<String> {
    value.validate().expect_err("must be invalid").violations.into_iter().map(|violation| violation.field).collect()
}

fn user_message() -> Value {
    json!({
        "messageId": "msg-1",
        "contextId": "ctx-1",
        "taskId": "task-1",
        "role": "ROLE_USER",
        "parts": [{"text": "What is the weather today?"}],
        "metadata": {"skillId": "echo"},
        "extensions": ["https://example.com/ext/geo/v1"],
        "referenceTaskIds": ["task-0"]
    })
}

fn task_json() -> Value {
    json!({
        "id": "task-1",
        "contextId": "ctx-1",
        "status": {
            "state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"messageId": "m-2", "role": "ROLE_AGENT", "parts": [{"text": "Where to?"}]},
            "timestamp": "2025-10-28T10:30:00.000Z"
        },
        "artifacts": [{
            "artifactId": "art-1",
            "name": "Weather Report",
            "description": "today",
            "parts": [{"text": "Sunny"}, {"data": {"key": "value", "count": 42}}],
            "metadata": {"source": "model"},
            "extensions": ["https://example.com/ext/cite/v1"]
        }],
        "history": [user_message()],
        "metadata": {"owner": "someone"}
    })
}

// ---------------------------------------------------------------------------------------------
// Messages, parts, enums
// ---------------------------------------------------------------------------------------------

#[test]
fn message_round_trips_in_camel_case() {
    assert_round_trip::<Message>(user_message());
    let message: Message = serde_json::from_value(user_message()).expect("message");
    assert_eq!(message.role, Role::User);
    assert_eq!(message.parts[0].as_text(), Some("What is the weather today?"));
    assert!(message.validate().is_ok());
}

#[test]
fn message_accepts_proto_snake_case_names_and_writes_camel_case() {
    let snake = json!({
        "message_id": "msg-1", "context_id": "ctx-1", "task_id": "task-1", "role": "ROLE_USER",
        "parts": [{"raw": "aGVsbG8=", "filename": "a.txt", "media_type": "text/plain"}],
        "reference_task_ids": ["task-0"]
    });
    assert_eq!(
        reencode::<Message>(&snake),
        json!({
            "messageId": "msg-1", "contextId": "ctx-1", "taskId": "task-1", "role": "ROLE_USER",
            "parts": [{"raw": "aGVsbG8=", "filename": "a.txt", "mediaType": "text/plain"}],
            "referenceTaskIds": ["task-0"]
        })
    );
}

#[test]
fn roles_accept_v03_spellings_and_numbers_and_always_emit_v1_names() {
    for (input, expected) in [
        (json!("user"), "ROLE_USER"),
        (json!("agent"), "ROLE_AGENT"),
        (json!("ROLE_AGENT"), "ROLE_AGENT"),
        (json!(1), "ROLE_USER"),
        (json!(2), "ROLE_AGENT"),
    ] {
        let role: Role = serde_json::from_value(input.clone()).expect("role");
        assert_eq!(serde_json::to_value(role).expect("json"), json!(expected), "{input}");
    }
    assert!(serde_json::from_value::<Role>(json!("assistant")).is_err());
    assert!(serde_json::from_value::<Role>(json!(7)).is_err());
    assert_eq!("user".parse::<Role>(), Ok(Role::User));
}

#[test]
fn task_states_accept_every_v03_spelling_and_always_emit_v1_names() {
    let pairs = [
        ("submitted", "TASK_STATE_SUBMITTED"),
        ("working", "TASK_STATE_WORKING"),
        ("input-required", "TASK_STATE_INPUT_REQUIRED"),
        ("completed", "TASK_STATE_COMPLETED"),
        ("canceled", "TASK_STATE_CANCELED"),
        ("failed", "TASK_STATE_FAILED"),
        ("rejected", "TASK_STATE_REJECTED"),
        ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
        ("unknown", "TASK_STATE_UNSPECIFIED"),
    ];
    for (v03, v1) in pairs {
        let from_v03: TaskState = serde_json::from_value(json!(v03)).expect(v03);
        let from_v1: TaskState = serde_json::from_value(json!(v1)).expect(v1);
        assert_eq!(from_v03, from_v1);
        assert_eq!(serde_json::to_value(from_v03).expect("json"), json!(v1));
        assert_eq!(from_v03.v03_name(), v03);
    }
    for state in TaskState::ALL {
        assert_eq!(serde_json::from_value::<TaskState>(json!(state.number())).expect("number"), state);
    }
    assert!(serde_json::from_value::<TaskState>(json!("running")).is_err());
    assert!(serde_json::from_value::<TaskState>(json!("TASK_STATE_DONE")).is_err());
    assert!(TaskState::Rejected.is_terminal() && !TaskState::Rejected.is_interrupted());
    assert!(TaskState::AuthRequired.is_interrupted() && !TaskState::Working.is_terminal());
}

#[test]
fn part_members_round_trip_with_their_common_fields_and_no_kind() {
    assert_round_trip::<Part>(json!({"text": "hi", "metadata": {"lang": "en"}}));
    assert_round_trip::<Part>(json!({"raw": "aGVsbG8=", "filename": "output.txt", "mediaType": "text/plain"}));
    assert_round_trip::<Part>(
        json!({"url": "https://example.com/output.txt", "filename": "output.txt", "mediaType": "text/plain"}),
    );
    assert_round_trip::<Part>(json!({"data": {"key": "value", "count": 42}}));
    assert_round_trip::<Part>(json!({"data": [1, "two", null]}));
    assert_round_trip::<Part>(json!({"data": null}));

    let built = Part::url("https://example.com/output.txt").with_filename("output.txt").with_media_type("text/plain");
    assert_eq!(
        serde_json::to_value(&built).expect("json"),
        json!({"url": "https://example.com/output.txt", "filename": "output.txt", "mediaType": "text/plain"})
    );
}

#[test]
fn part_ignores_a_v03_kind_and_writes_none() {
    assert_eq!(reencode::<Part>(&json!({"kind": "text", "text": "hi"})), json!({"text": "hi"}));
    assert_eq!(reencode::<Part>(&json!({"kind": "data", "data": {"a": 1}})), json!({"data": {"a": 1}}));
}

#[test]
fn part_rejects_zero_or_several_content_members() {
    let none = decode_error::<Part>(json!({"filename": "a.txt", "mediaType": "text/plain"}));
    assert!(none.contains("expected exactly one of text, raw, url, data, found none"), "{none}");
    let two = decode_error::<Part>(json!({"text": "a", "url": "https://x"}));
    assert!(two.contains("found several: text, url"), "{two}");
    let data_null_and_text = decode_error::<Part>(json!({"text": "a", "data": null}));
    assert!(data_null_and_text.contains("found several: text, data"), "{data_null_and_text}");
    // A null string member is "not set" in ProtoJSON, so this is a data part.
    assert_eq!(reencode::<Part>(&json!({"text": null, "data": 1})), json!({"data": 1}));
    assert!(serde_json::from_value::<Part>(json!({"text": 5})).is_err());
}

#[test]
fn message_required_fields_are_enforced_on_input() {
    for missing in ["messageId", "role", "parts"] {
        let mut message = user_message();
        message.as_object_mut().expect("object").remove(missing);
        let error = decode_error::<Message>(message);
        assert!(error.contains(&format!("missing field `{missing}`")), "{missing}: {error}");
    }
}

#[test]
fn message_validation_names_every_bad_field() {
    let message: Message = serde_json::from_value(json!({
        "messageId": "", "role": "ROLE_UNSPECIFIED", "parts": []
    }))
    .expect("decodes");
    assert_eq!(violation_fields(&message), ["messageId", "role", "parts"]);

    let request: SendMessageRequest = serde_json::from_value(json!({
        "message": {"messageId": "m", "role": "user", "parts": [{"text": "ok"}, {"raw": "not base64!"}]},
        "configuration": {"historyLength": -1}
    }))
    .expect("decodes");
    let error = request.validate().expect_err("invalid");
    assert_eq!(
        error.violations.iter().map(|violation| violation.field.as_str()).collect::<Vec<_>>(),
        ["message.parts[1].raw", "configuration.historyLength"]
    );
    assert_eq!(
        error.to_string(),
        "message.parts[1].raw: must be base64-encoded bytes; configuration.historyLength: must be zero or more, got -1"
    );
}

#[test]
fn raw_parts_accept_standard_and_url_safe_base64_with_or_without_padding() {
    for raw in ["", "aGVsbG8=", "aGVsbG8", "aGk=", "aGk", "-_-_", "+/+/"] {
        assert!(Part::raw_base64(raw).validate().is_ok(), "{raw}");
    }
    for raw in ["a", "aGVsbG8==", "aG=k", "a b c d", "aGVsbG8==="] {
        assert!(Part::raw_base64(raw).validate().is_err(), "{raw}");
    }
}

// ---------------------------------------------------------------------------------------------
// Tasks, artifacts, events, oneofs
// ---------------------------------------------------------------------------------------------

#[test]
fn task_round_trips_and_validates() {
    assert_round_trip::<Task>(task_json());
    let task: Task = serde_json::from_value(task_json()).expect("task");
    assert_eq!(task.status.state, TaskState::InputRequired);
    assert!(task.validate().is_ok());
}

#[test]
fn task_ignores_unknown_fields_and_reads_a_v03_shape() {
    let v03 = json!({
        "kind": "task", "id": "t", "contextId": "c",
        "status": {"state": "completed", "timestamp": "2024-03-15T10:15:00Z"},
        "somethingNew": {"x": 1},
        "artifacts": null
    });
    assert_eq!(
        reencode::<Task>(&v03),
        json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2024-03-15T10:15:00Z"}})
    );
}

#[test]
fn task_required_fields_are_enforced() {
    assert!(decode_error::<Task>(json!({"id": "t"})).contains("missing field `status`"));
    assert!(decode_error::<Task>(json!({"status": {"state": "working"}})).contains("missing field `id`"));
    assert!(decode_error::<Task>(json!({"id": "t", "status": {}})).contains("missing field `state`"));
    assert!(decode_error::<Artifact>(json!({"artifactId": "a"})).contains("missing field `parts`"));
    assert!(decode_error::<Artifact>(json!({"parts": []})).contains("missing field `artifactId`"));
}

#[test]
fn task_validation_checks_nested_artifacts_and_timestamps() {
    let task: Task = serde_json::from_value(json!({
        "id": "t",
        "status": {"state": "working", "timestamp": "2025-10-28T10:30:00+02:00"},
        "artifacts": [{"artifactId": "", "parts": []}],
        "history": [{"messageId": "m", "role": "user", "parts": [{"raw": "%%%"}]}]
    }))
    .expect("decodes");
    assert_eq!(
        violation_fields(&task),
        ["status.timestamp", "artifacts[0].artifactId", "artifacts[0].parts", "history[0].parts[0].raw"]
    );
}

#[test]
fn status_and_artifact_update_events_round_trip() {
    assert_round_trip::<TaskStatusUpdateEvent>(json!({
        "taskId": "t", "contextId": "c",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "2025-10-28T10:30:00.000Z"},
        "metadata": {"k": "v"}
    }));
    assert_round_trip::<TaskArtifactUpdateEvent>(json!({
        "taskId": "t", "contextId": "c",
        "artifact": {"artifactId": "a", "parts": [{"text": "chunk-1 "}]},
        "append": true, "lastChunk": false
    }));
    // Presence of the plain bools is kept as received: absent stays absent.
    assert_round_trip::<TaskArtifactUpdateEvent>(json!({
        "taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}
    }));
    assert_eq!(
        reencode::<TaskArtifactUpdateEvent>(&json!({
            "task_id": "t", "context_id": "c", "artifact": {"artifact_id": "a", "parts": [{"text": "x"}]},
            "last_chunk": true
        })),
        json!({"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "lastChunk": true})
    );
    assert!(
        decode_error::<TaskStatusUpdateEvent>(json!({"taskId": "t", "status": {"state": "working"}}))
            .contains("missing field `contextId`")
    );
}

#[test]
fn stream_responses_are_keyed_by_member_name() {
    let status_update =
        json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
    assert_round_trip::<StreamResponse>(status_update.clone());
    assert_round_trip::<StreamResponse>(json!({"task": task_json()}));
    assert_round_trip::<StreamResponse>(json!({"message": user_message()}));
    assert_round_trip::<StreamResponse>(json!({"artifactUpdate": {
        "taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "append": true
    }}));

    let snake = json!({"status_update": {"task_id": "t", "context_id": "c", "status": {"state": "completed"}}});
    assert_eq!(reencode::<StreamResponse>(&snake), status_update);
    let event: StreamResponse = serde_json::from_value(snake).expect("event");
    assert_eq!(event.member_name(), "statusUpdate");

    let with_unknown = json!({"task": task_json(), "kind": "task"});
    assert_eq!(reencode::<StreamResponse>(&with_unknown), json!({"task": task_json()}));
}

#[test]
fn stream_and_send_responses_reject_zero_or_several_members() {
    let none = decode_error::<StreamResponse>(json!({}));
    assert!(
        none.contains("StreamResponse: expected exactly one of task, message, statusUpdate, artifactUpdate"),
        "{none}"
    );
    let two = decode_error::<SendMessageResponse>(json!({"task": task_json(), "message": user_message()}));
    assert!(two.contains("found several: task, message"), "{two}");
    let null_member = decode_error::<SendMessageResponse>(json!({"task": null}));
    assert!(null_member.contains("found none"), "{null_member}");
}

#[test]
fn send_message_response_round_trips_either_member() {
    assert_round_trip::<SendMessageResponse>(json!({"task": task_json()}));
    assert_round_trip::<SendMessageResponse>(json!({"message": {
        "messageId": "m", "contextId": "c", "role": "ROLE_AGENT", "parts": [{"text": "Direct message response"}]
    }}));
    let response = SendMessageResponse::Message(Message::new("m", Role::Agent, vec![Part::text("hi")]));
    assert_eq!(
        serde_json::to_value(&response).expect("json"),
        json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}})
    );
}

// ---------------------------------------------------------------------------------------------
// Requests and responses
// ---------------------------------------------------------------------------------------------

#[test]
fn send_message_request_round_trips_with_configuration() {
    assert_round_trip::<SendMessageRequest>(json!({
        "tenant": "acme",
        "message": user_message(),
        "configuration": {
            "acceptedOutputModes": ["text/plain"],
            "taskPushNotificationConfig": {
                "id": "tck-push-1", "url": "http://localhost:9000/webhook", "token": "tok",
                "authentication": {"scheme": "Bearer", "credentials": "secret"}
            },
            "historyLength": 0,
            "returnImmediately": false
        },
        "metadata": {"trace": "1"}
    }));
}

#[test]
fn send_message_request_accepts_snake_case_configuration() {
    let snake = json!({
        "message": {"message_id": "m", "role": "user", "parts": [{"text": "hi"}]},
        "configuration": {
            "accepted_output_modes": ["text/plain"],
            "task_push_notification_config": {"url": "http://localhost/webhook", "task_id": "t"},
            "history_length": "3",
            "return_immediately": true
        }
    });
    let request: SendMessageRequest = serde_json::from_value(snake).expect("request");
    let configuration = request.configuration.expect("configuration");
    assert_eq!(configuration.history_length, Some(3));
    assert_eq!(configuration.return_immediately, Some(true));
    assert_eq!(configuration.task_push_notification_config.and_then(|config| config.task_id).as_deref(), Some("t"));
    assert!(decode_error::<SendMessageRequest>(json!({"configuration": {}})).contains("missing field `message`"));
}

#[test]
fn get_task_request_reads_the_conformance_kits_snake_case_params() {
    let request: GetTaskRequest = serde_json::from_value(json!({"id": "t", "history_length": 10})).expect("request");
    assert_eq!(request.history_length, Some(10));
    assert_eq!(serde_json::to_value(&request).expect("json"), json!({"id": "t", "historyLength": 10}));
    // Presence: an explicit 0 is kept and means "no history".
    assert_round_trip::<GetTaskRequest>(json!({"id": "t", "historyLength": 0}));
    assert_round_trip::<GetTaskRequest>(json!({"id": "t"}));
    assert!(decode_error::<GetTaskRequest>(json!({"historyLength": 1})).contains("missing field `id`"));
    assert!(decode_error::<GetTaskRequest>(json!({"id": "t", "historyLength": 1.5})).contains("not a 32-bit integer"));
    assert!(
        decode_error::<GetTaskRequest>(json!({"id": "t", "historyLength": 3_000_000_000u64})).contains("out of range")
    );
}

#[test]
fn list_tasks_request_reads_snake_case_and_v03_status_and_validates_ranges() {
    let request: ListTasksRequest = serde_json::from_value(json!({
        "context_id": "c", "status": "working", "page_size": 10, "page_token": "p2", "history_length": 2,
        "status_timestamp_after": "2025-01-01T00:00:00Z", "include_artifacts": true, "tenant": "acme"
    }))
    .expect("request");
    assert_eq!(
        serde_json::to_value(&request).expect("json"),
        json!({
            "tenant": "acme", "contextId": "c", "status": "TASK_STATE_WORKING", "pageSize": 10, "pageToken": "p2",
            "historyLength": 2, "statusTimestampAfter": "2025-01-01T00:00:00Z", "includeArtifacts": true
        })
    );
    assert!(request.validate().is_ok());
    assert_round_trip::<ListTasksRequest>(json!({}));

    let bad: ListTasksRequest = serde_json::from_value(json!({
        "pageSize": 150, "historyLength": -5, "statusTimestampAfter": "yesterday"
    }))
    .expect("decodes");
    assert_eq!(violation_fields(&bad), ["pageSize", "historyLength", "statusTimestampAfter"]);
    let zero: ListTasksRequest = serde_json::from_value(json!({"pageSize": 0})).expect("decodes");
    assert_eq!(violation_fields(&zero), ["pageSize"]);
}

#[test]
fn list_tasks_response_always_writes_next_page_token() {
    let last_page =
        ListTasksResponse { tasks: Vec::new(), next_page_token: String::new(), page_size: 50, total_size: 0 };
    assert_eq!(
        serde_json::to_value(&last_page).expect("json"),
        json!({"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0})
    );
    assert_round_trip::<ListTasksResponse>(json!({
        "tasks": [{"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}],
        "nextPageToken": "cursor-2", "pageSize": 1, "totalSize": 5
    }));
    // Required on input; a ProtoJSON writer may drop zero-valued ints and an empty list (the
    // official Rust SDK's servers answer an empty page without `tasks`), so those default.
    assert!(decode_error::<ListTasksResponse>(json!({"tasks": []})).contains("missing field `nextPageToken`"));
    let empty: ListTasksResponse = serde_json::from_value(json!({"nextPageToken": ""})).expect("an empty page");
    assert!(empty.tasks.is_empty());
    let sparse: ListTasksResponse =
        serde_json::from_value(json!({"tasks": [], "next_page_token": ""})).expect("response");
    assert_eq!((sparse.page_size, sparse.total_size), (0, 0));
    assert!(sparse.validate().is_ok());
}

#[test]
fn cancel_subscribe_and_extended_card_requests() {
    assert_round_trip::<CancelTaskRequest>(json!({"tenant": "acme", "id": "t", "metadata": {"why": "user"}}));
    assert_round_trip::<SubscribeToTaskRequest>(json!({"id": "t"}));
    assert_round_trip::<GetExtendedAgentCardRequest>(json!({}));
    assert_round_trip::<GetExtendedAgentCardRequest>(json!({"tenant": "acme"}));
    assert!(decode_error::<CancelTaskRequest>(json!({})).contains("missing field `id`"));
    let empty_id: SubscribeToTaskRequest = serde_json::from_value(json!({"id": ""})).expect("decodes");
    assert_eq!(violation_fields(&empty_id), ["id"]);
    assert_eq!(serde_json::to_value(Empty {}).expect("json"), json!({}));
}

#[test]
fn push_notification_configs_and_their_requests() {
    assert_round_trip::<TaskPushNotificationConfig>(json!({
        "tenant": "acme", "id": "cfg-1", "taskId": "t", "url": "https://client.example.com/webhook",
        "token": "tok", "authentication": {"scheme": "Bearer", "credentials": "jwt"}
    }));
    assert_round_trip::<TaskPushNotificationConfig>(json!({"url": "https://client.example.com/webhook"}));
    assert!(decode_error::<TaskPushNotificationConfig>(json!({"id": "cfg"})).contains("missing field `url`"));
    let no_scheme: TaskPushNotificationConfig =
        serde_json::from_value(json!({"url": "https://x", "authentication": {"scheme": ""}})).expect("decodes");
    assert_eq!(violation_fields(&no_scheme), ["authentication.scheme"]);

    let get: GetTaskPushNotificationConfigRequest =
        serde_json::from_value(json!({"task_id": "t", "id": "cfg"})).expect("get");
    assert_eq!(serde_json::to_value(&get).expect("json"), json!({"taskId": "t", "id": "cfg"}));
    assert_round_trip::<DeleteTaskPushNotificationConfigRequest>(json!({"tenant": "a", "taskId": "t", "id": "cfg"}));
    assert!(decode_error::<DeleteTaskPushNotificationConfigRequest>(json!({"id": "cfg"})).contains("taskId"));
    let list: ListTaskPushNotificationConfigsRequest =
        serde_json::from_value(json!({"task_id": "t", "page_size": 5, "page_token": "p"})).expect("list");
    assert_eq!(serde_json::to_value(&list).expect("json"), json!({"taskId": "t", "pageSize": 5, "pageToken": "p"}));

    assert_eq!(
        serde_json::to_value(ListTaskPushNotificationConfigsResponse::default()).expect("json"),
        json!({"configs": [], "nextPageToken": ""})
    );
    assert_round_trip::<ListTaskPushNotificationConfigsResponse>(json!({
        "configs": [{"id": "cfg", "taskId": "t", "url": "https://x"}], "nextPageToken": "n"
    }));
    let empty: ListTaskPushNotificationConfigsResponse = serde_json::from_value(json!({})).expect("empty");
    assert!(empty.configs.is_empty() && empty.next_page_token.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Agent card
// ---------------------------------------------------------------------------------------------

fn card_json() -> Value {
    json!({
        "name": "Recipe Agent",
        "description": "Agent that helps users with recipes and cooking.",
        "supportedInterfaces": [
            {"url": "https://agent.example.com/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "https://agent.example.com/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0",
             "tenant": "acme"}
        ],
        "provider": {"url": "https://example.com", "organization": "Example"},
        "version": "1.0.0",
        "documentationUrl": "https://example.com/docs",
        "capabilities": {
            "streaming": true,
            "pushNotifications": false,
            "extensions": [{"uri": "https://example.com/ext/geo/v1", "description": "geo", "required": false,
                            "params": {"precision": 3}}],
            "extendedAgentCard": true
        },
        "securitySchemes": {
            "apiKey": {"apiKeySecurityScheme": {"description": "key", "location": "header", "name": "X-API-Key"}},
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
            "oauth": {"oauth2SecurityScheme": {
                "flows": {"authorizationCode": {
                    "authorizationUrl": "https://auth.example.com/authorize", "tokenUrl": "https://auth.example.com/token",
                    "refreshUrl": "https://auth.example.com/refresh", "scopes": {"read": "Read access"},
                    "pkceRequired": true
                }},
                "oauth2MetadataUrl": "https://auth.example.com/.well-known/oauth-authorization-server"
            }},
            "machines": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
                "tokenUrl": "https://auth.example.com/token", "scopes": {}
            }}}},
            "devices": {"oauth2SecurityScheme": {"flows": {"deviceCode": {
                "deviceAuthorizationUrl": "https://auth.example.com/device", "tokenUrl": "https://auth.example.com/token",
                "scopes": {"read": "Read"}
            }}}},
            "oidc": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://auth.example.com/.well-known/openid-configuration"}},
            "mtls": {"mtlsSecurityScheme": {"description": "client certificates"}}
        },
        "securityRequirements": [{"schemes": {"oauth": {"list": ["read"]}}}, {"schemes": {"mtls": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "recipes", "name": "Recipes", "description": "Finds recipes", "tags": ["cooking"],
            "examples": ["A vegan lasagna"], "inputModes": ["text/plain"], "outputModes": ["application/json"],
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}]
        }],
        "signatures": [{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2lnbmF0dXJl", "header": {"kid": "key-1"}}],
        "iconUrl": "https://example.com/icon.png"
    })
}

#[test]
fn agent_card_round_trips_every_field_and_scheme() {
    assert_round_trip::<AgentCard>(card_json());
    let card: AgentCard = serde_json::from_value(card_json()).expect("card");
    assert!(card.validate().is_ok(), "{:?}", card.validate());
    assert_eq!(card.interface(card::PROTOCOL_BINDING_HTTP_JSON).and_then(|i| i.tenant.as_deref()), Some("acme"));
    assert_eq!(card.capabilities.push_notifications, Some(false));
    assert!(matches!(card.security_schemes.get("oidc"), Some(SecurityScheme::OpenIdConnect(_))));
    assert!(matches!(
        card.security_schemes.get("devices"),
        Some(SecurityScheme::OAuth2(OAuth2SecurityScheme { flows: OAuthFlows::DeviceCode(_), .. }))
    ));
    assert_eq!(card.skill("recipes").map(|skill| skill.tags.clone()), Some(vec!["cooking".to_owned()]));
}

#[test]
fn agent_card_keeps_unknown_fields_at_every_level() {
    let mut input = card_json();
    input["url"] = json!("https://agent.example.com/");
    input["protocolVersion"] = json!("1.0");
    input["entrypoints"] = json!({"echo": {"streaming": true, "input_schema": {"type": "object"}}});
    input["capabilities"]["stateTransitionHistory"] = json!(true);
    input["supportedInterfaces"][0]["x-lucid"] = json!({"order": 1});
    input["skills"][0]["streaming"] = json!(true);
    input["skills"][0]["x_input_schema"] = json!({"type": "object"});
    assert_round_trip::<AgentCard>(input.clone());

    let card: AgentCard = serde_json::from_value(input).expect("card");
    assert_eq!(card.extra.get("url"), Some(&json!("https://agent.example.com/")));
    assert!(card.extra.contains_key("entrypoints") && card.extra.contains_key("protocolVersion"));
    assert_eq!(card.capabilities.extra.get("stateTransitionHistory"), Some(&json!(true)));
    assert_eq!(card.skills[0].extra.get("x_input_schema"), Some(&json!({"type": "object"})));
}

#[test]
fn agent_card_optional_flags_keep_presence() {
    let mut input = card_json();
    input["capabilities"] = json!({"streaming": false});
    assert_round_trip::<AgentCard>(input.clone());
    input["capabilities"] = json!({});
    assert_round_trip::<AgentCard>(input);
}

#[test]
fn agent_card_accepts_snake_case_and_writes_camel_case() {
    let snake = json!({
        "name": "n", "description": "d", "version": "1",
        "supported_interfaces": [{"url": "u", "protocol_binding": "JSONRPC", "protocol_version": "1.0"}],
        "capabilities": {"push_notifications": true, "extended_agent_card": false},
        "default_input_modes": ["text/plain"], "default_output_modes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "s", "tags": ["t"], "input_modes": ["text/plain"]}],
        "security_schemes": {"k": {"api_key_security_scheme": {"location": "query", "name": "key"}}},
        "documentation_url": "https://d", "icon_url": "https://i"
    });
    assert_eq!(
        reencode::<AgentCard>(&snake),
        json!({
            "name": "n", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"pushNotifications": true, "extendedAgentCard": false},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "s", "description": "s", "tags": ["t"], "inputModes": ["text/plain"]}],
            "securitySchemes": {"k": {"apiKeySecurityScheme": {"location": "query", "name": "key"}}},
            "documentationUrl": "https://d", "iconUrl": "https://i"
        })
    );
}

#[test]
fn agent_card_required_fields_are_enforced() {
    for missing in
        ["name", "description", "supportedInterfaces", "version", "capabilities", "defaultInputModes", "skills"]
    {
        let mut card = card_json();
        card.as_object_mut().expect("object").remove(missing);
        let error = decode_error::<AgentCard>(card);
        assert!(error.contains(&format!("missing field `{missing}`")), "{missing}: {error}");
    }
    let mut no_binding = card_json();
    no_binding["supportedInterfaces"][0].as_object_mut().expect("object").remove("protocolBinding");
    assert!(decode_error::<AgentCard>(no_binding).contains("protocolBinding"));
    let mut no_tags = card_json();
    no_tags["skills"][0].as_object_mut().expect("object").remove("tags");
    assert!(decode_error::<AgentCard>(no_tags).contains("tags"));
}

#[test]
fn agent_card_validation_requires_non_empty_arrays_and_strings() {
    let card: AgentCard = serde_json::from_value(json!({
        "name": "n", "description": "", "version": "1", "supportedInterfaces": [], "capabilities": {},
        "defaultInputModes": [], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "s", "tags": []}],
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": ""}}},
        "signatures": [{"protected": "", "signature": "x"}]
    }))
    .expect("decodes");
    assert_eq!(
        violation_fields(&card),
        [
            "description",
            "supportedInterfaces",
            "securitySchemes[\"bearer\"].httpAuthSecurityScheme.scheme",
            "defaultInputModes",
            "skills[0].tags",
            "signatures[0].protected"
        ]
    );
}

#[test]
fn security_scheme_and_oauth_flows_are_oneofs() {
    let two = decode_error::<SecurityScheme>(json!({
        "mtlsSecurityScheme": {}, "httpAuthSecurityScheme": {"scheme": "Bearer"}
    }));
    assert!(two.contains("found several: httpAuthSecurityScheme, mtlsSecurityScheme"), "{two}");
    let none = decode_error::<OAuthFlows>(json!({}));
    assert!(none.contains("OAuthFlows: expected exactly one of"), "{none}");
    let snake: SecurityScheme = serde_json::from_value(json!({"oauth2_security_scheme": {
        "flows": {"client_credentials": {"token_url": "https://t"}}, "oauth2_metadata_url": "https://m"
    }}))
    .expect("scheme");
    assert_eq!(
        serde_json::to_value(&snake).expect("json"),
        json!({"oauth2SecurityScheme": {
            "flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {}}}, "oauth2MetadataUrl": "https://m"
        }})
    );
    assert_round_trip::<OAuthFlows>(json!({"implicit": {"authorizationUrl": "https://a"}}));
    assert_round_trip::<OAuthFlows>(json!({"password": {"tokenUrl": "https://t", "scopes": {"r": "read"}}}));
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

#[test]
fn error_catalogue_matches_the_specification_table() {
    use A2aErrorKind::*;
    use GrpcCode::*;
    // kind, code, reason, (gRPC, HTTP) in v1.0.1, (gRPC, HTTP) in v1.0.0
    let table = [
        (TaskNotFound, -32001, "TASK_NOT_FOUND", (NotFound, 404), (NotFound, 404)),
        (TaskNotCancelable, -32002, "TASK_NOT_CANCELABLE", (FailedPrecondition, 400), (FailedPrecondition, 409)),
        (
            PushNotificationNotSupported,
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            (FailedPrecondition, 400),
            (Unimplemented, 400),
        ),
        (UnsupportedOperation, -32004, "UNSUPPORTED_OPERATION", (FailedPrecondition, 400), (Unimplemented, 400)),
        (ContentTypeNotSupported, -32005, "CONTENT_TYPE_NOT_SUPPORTED", (InvalidArgument, 400), (InvalidArgument, 415)),
        (InvalidAgentResponse, -32006, "INVALID_AGENT_RESPONSE", (GrpcCode::Internal, 500), (GrpcCode::Internal, 502)),
        (
            ExtendedAgentCardNotConfigured,
            -32007,
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            (FailedPrecondition, 400),
            (FailedPrecondition, 400),
        ),
        (
            ExtensionSupportRequired,
            -32008,
            "EXTENSION_SUPPORT_REQUIRED",
            (FailedPrecondition, 400),
            (FailedPrecondition, 400),
        ),
        (VersionNotSupported, -32009, "VERSION_NOT_SUPPORTED", (FailedPrecondition, 400), (Unimplemented, 400)),
    ];
    for (kind, code, reason, v1_0_1, v1_0_0) in table {
        assert_eq!(kind.code(), code, "{kind}");
        assert_eq!(kind.reason(), Some(reason), "{kind}");
        assert_eq!(A2aErrorKind::from_code(code), Some(kind));
        assert_eq!(A2aErrorKind::from_reason(reason), Some(kind));
        assert!(kind.is_a2a_error());
        assert_eq!((kind.grpc_status(ErrorMapping::V1_0_1), kind.http_status(ErrorMapping::V1_0_1)), v1_0_1, "{kind}");
        assert_eq!((kind.grpc_status(ErrorMapping::V1_0_0), kind.http_status(ErrorMapping::V1_0_0)), v1_0_0, "{kind}");
    }
    assert_eq!(ErrorMapping::default(), ErrorMapping::V1_0_1);

    let standard = [
        (JsonParse, -32700, "Invalid JSON payload"),
        (InvalidRequest, -32600, "Request payload validation error"),
        (MethodNotFound, -32601, "Method not found"),
        (InvalidParams, -32602, "Invalid parameters"),
        (A2aErrorKind::Internal, -32603, "Internal error"),
    ];
    for (kind, code, message) in standard {
        assert_eq!((kind.code(), kind.default_message(), kind.reason()), (code, message, None));
        assert!(!kind.is_a2a_error());
    }
    let unauthenticated = A2aErrorKind::Unauthenticated;
    assert_eq!((unauthenticated.code(), unauthenticated.reason()), (-32000, Some("UNAUTHENTICATED")));
    assert!(!unauthenticated.is_a2a_error(), "not one of the specification's codes");
    for mapping in [ErrorMapping::V1_0_0, ErrorMapping::V1_0_1] {
        assert_eq!(
            (unauthenticated.grpc_status(mapping), unauthenticated.http_status(mapping)),
            (GrpcCode::Unauthenticated, 401)
        );
    }
    assert_eq!(A2aErrorKind::from_code(-32000), Some(unauthenticated));
    let exhausted = [
        (A2aErrorKind::TaskCapacityExhausted, -32099, "TASK_CAPACITY_EXHAUSTED", GrpcCode::ResourceExhausted, 503),
        (A2aErrorKind::OwnerShareExhausted, -32098, "OWNER_SHARE_EXHAUSTED", GrpcCode::ResourceExhausted, 429),
        (A2aErrorKind::RateLimited, -32097, "RATE_LIMITED", GrpcCode::ResourceExhausted, 429),
        (A2aErrorKind::Unavailable, -32096, "UNAVAILABLE", GrpcCode::Unavailable, 503),
    ];
    for (kind, code, reason, grpc, http) in exhausted {
        assert_eq!((kind.code(), kind.reason()), (code, Some(reason)));
        assert_eq!((A2aErrorKind::from_code(code), A2aErrorKind::from_reason(reason)), (Some(kind), Some(kind)));
        assert!(!kind.is_a2a_error(), "not one of the specification's codes");
        assert!(kind.is_retryable());
        for mapping in [ErrorMapping::V1_0_0, ErrorMapping::V1_0_1] {
            assert_eq!((kind.grpc_status(mapping), kind.http_status(mapping)), (grpc, http));
        }
    }
    let denied = A2aErrorKind::PermissionDenied;
    assert_eq!((denied.code(), denied.reason()), (-32095, Some("PERMISSION_DENIED")));
    assert_eq!(
        (A2aErrorKind::from_code(-32095), A2aErrorKind::from_reason("PERMISSION_DENIED")),
        (Some(denied), Some(denied))
    );
    assert!(!denied.is_a2a_error() && !denied.is_retryable());
    for mapping in [ErrorMapping::V1_0_0, ErrorMapping::V1_0_1] {
        assert_eq!((denied.grpc_status(mapping), denied.http_status(mapping)), (GrpcCode::PermissionDenied, 403));
    }
    assert_eq!(A2aErrorKind::ALL.len(), 20);
    assert_eq!(GrpcCode::from_name("FAILED_PRECONDITION").map(GrpcCode::number), Some(9));
}

#[test]
fn jsonrpc_error_object_carries_error_info_in_data() {
    let error = A2aError::task_not_found("task-123");
    assert_eq!(
        serde_json::to_value(error.to_jsonrpc_error()).expect("json"),
        json!({
            "code": -32001,
            "message": "Task not found",
            "data": [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org",
                "metadata": {"taskId": "task-123"}
            }]
        })
    );
    let response = JsonRpcResponse::<Value>::failure(json!(7), &A2aError::new(A2aErrorKind::VersionNotSupported));
    assert_eq!(
        serde_json::to_value(&response).expect("json"),
        json!({"jsonrpc": "2.0", "id": 7, "error": {
            "code": -32009, "message": "Protocol version is not supported",
            "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "VERSION_NOT_SUPPORTED",
                      "domain": "a2a-protocol.org", "metadata": {}}]
        }})
    );
    let standard = A2aError::new(A2aErrorKind::MethodNotFound);
    assert_eq!(
        serde_json::to_value(standard.to_jsonrpc_error()).expect("json"),
        json!({"code": -32601, "message": "Method not found"})
    );
}

#[test]
fn rest_error_body_follows_the_selected_mapping() {
    let error = A2aError::new(A2aErrorKind::TaskNotCancelable).with_message("Task t is completed");
    let error_info = json!({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_CANCELABLE",
        "domain": "a2a-protocol.org", "metadata": {}
    });
    assert_eq!(error.http_status(ErrorMapping::V1_0_1), 400);
    assert_eq!(
        serde_json::to_value(error.to_rest_body(ErrorMapping::V1_0_1)).expect("json"),
        json!({"error": {"code": 400, "status": "FAILED_PRECONDITION", "message": "Task t is completed",
                         "details": [error_info.clone()]}})
    );
    assert_eq!(error.http_status(ErrorMapping::V1_0_0), 409);
    assert_eq!(
        serde_json::to_value(error.to_rest_body(ErrorMapping::V1_0_0)).expect("json"),
        json!({"error": {"code": 409, "status": "FAILED_PRECONDITION", "message": "Task t is completed",
                         "details": [error_info]}})
    );
    let content_type = A2aError::new(A2aErrorKind::ContentTypeNotSupported).to_rest_body(ErrorMapping::V1_0_0);
    assert_eq!((content_type.error.code, content_type.error.status.as_str()), (415, "INVALID_ARGUMENT"));
    let internal = A2aError::new(A2aErrorKind::Internal).to_rest_body(ErrorMapping::V1_0_1);
    assert_eq!(
        serde_json::to_value(internal).expect("json"),
        json!({"error": {"code": 500, "status": "INTERNAL", "message": "Internal error"}})
    );
}

#[test]
fn validation_errors_become_invalid_params_with_a_bad_request_detail() {
    let request: SendMessageRequest =
        serde_json::from_value(json!({"message": {"messageId": "m", "role": "user", "parts": []}})).expect("decodes");
    let error = A2aError::from(request.validate().expect_err("invalid"));
    assert_eq!(error.kind, A2aErrorKind::InvalidParams);
    assert_eq!(
        serde_json::to_value(error.to_jsonrpc_error()).expect("json"),
        json!({
            "code": -32602,
            "message": "Invalid parameters: message.parts: is required and must contain at least one element",
            "data": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [
                {"field": "message.parts", "description": "is required and must contain at least one element"}
            ]}]
        })
    );
    assert_eq!(error.to_rest_body(ErrorMapping::V1_0_0).error.code, 400);
}

#[test]
fn error_bodies_read_back_on_the_client_side() {
    let sent = A2aError::task_not_found("t-9").with_message("no such task");
    let over_jsonrpc: JsonRpcResponse = serde_json::from_value(
        serde_json::to_value(JsonRpcResponse::<Value>::failure(json!("req-1"), &sent)).expect("json"),
    )
    .expect("response");
    let object = over_jsonrpc.into_result().expect_err("an error");
    assert_eq!(object.kind(), Some(A2aErrorKind::TaskNotFound));
    assert_eq!(A2aError::from_jsonrpc_error(&object), Some(sent.clone()));

    let body: RestErrorBody =
        serde_json::from_value(serde_json::to_value(sent.to_rest_body(ErrorMapping::V1_0_1)).expect("json"))
            .expect("body");
    assert_eq!(A2aError::from_rest_body(&body), Some(sent));

    let foreign: RestErrorBody = serde_json::from_value(json!({"error": {
        "code": 503, "status": "UNAVAILABLE", "message": "later",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]
    }}))
    .expect("body");
    assert_eq!(A2aError::from_rest_body(&foreign), None);
    assert_eq!(
        serde_json::to_value(&foreign).expect("json")["error"]["details"][0]["retryDelay"],
        json!("1s"),
        "unknown details survive"
    );
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC envelope
// ---------------------------------------------------------------------------------------------

#[test]
fn jsonrpc_request_parses_and_decodes_snake_case_params() {
    let body = br#"{"jsonrpc":"2.0","id":"r1","method":"GetTask","params":{"id":"t","history_length":10}}"#;
    let request = JsonRpcRequest::parse(body).expect("request");
    assert_eq!(request.method, methods::GET_TASK);
    assert_eq!(request.response_id(), json!("r1"));
    let params: GetTaskRequest = request.params_validated().expect("params");
    assert_eq!(params.history_length, Some(10));

    let no_params = JsonRpcRequest::parse(br#"{"jsonrpc":"2.0","id":3,"method":"GetExtendedAgentCard"}"#).expect("ok");
    assert_eq!(no_params.params_as::<GetExtendedAgentCardRequest>(), Ok(GetExtendedAgentCardRequest::default()));
    assert!(methods::ALL.contains(&no_params.method.as_str()));

    let notification = JsonRpcRequest::parse(br#"{"jsonrpc":"2.0","method":"SendMessage"}"#).expect("ok");
    assert!(notification.is_notification());
    let null_id = JsonRpcRequest::parse(br#"{"jsonrpc":"2.0","id":null,"method":"SendMessage"}"#).expect("ok");
    assert!(!null_id.is_notification());
    assert_eq!(
        serde_json::to_value(&null_id).expect("json"),
        json!({"jsonrpc": "2.0", "id": null, "method": "SendMessage"})
    );
}

#[test]
fn jsonrpc_request_errors_carry_the_right_code_and_id() {
    let not_json = JsonRpcRequest::parse(b"hello, text/plain").expect_err("not JSON");
    assert_eq!((not_json.id.clone(), not_json.error.code()), (Value::Null, -32700));
    assert_eq!(
        serde_json::to_value(JsonRpcResponse::<Value>::failure(not_json.id, &not_json.error)).expect("json"),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Invalid JSON payload"}})
    );
    for (body, id) in [
        (r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#, Value::Null),
        (r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#, json!(1)),
        (r#"{"id":"a","method":"GetTask"}"#, json!("a")),
        (r#"{"jsonrpc":"2.0","id":2,"method":7}"#, json!(2)),
        (r#"{"jsonrpc":"2.0","id":{"x":1},"method":"GetTask"}"#, Value::Null),
        (r#"{"jsonrpc":"2.0","id":3,"method":"GetTask","params":"t"}"#, json!(3)),
    ] {
        let error = JsonRpcRequest::parse(body.as_bytes()).expect_err(body);
        assert_eq!((error.id, error.error.code()), (id, -32600), "{body}");
    }

    let request = JsonRpcRequest::new(5, methods::SEND_MESSAGE, json!({"message": {"messageId": "m", "role": "user"}}));
    let error = request.params_as::<SendMessageRequest>().expect_err("missing parts");
    assert_eq!(error.code(), -32602);
    assert!(error.message.contains("missing field `parts`"), "{}", error.message);
    let invalid = JsonRpcRequest::new(6, methods::LIST_TASKS, json!({"page_size": 1000}));
    let error = invalid.params_validated::<ListTasksRequest>().expect_err("out of range");
    assert_eq!(error.violations[0].field, "pageSize");
}

#[test]
fn jsonrpc_responses_wrap_typed_results() {
    let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus::new(TaskState::Working),
        metadata: None,
    });
    let response = JsonRpcResponse::success(json!(1), event.clone());
    let wire = json!({"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {
        "taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}
    }}});
    assert_eq!(serde_json::to_value(&response).expect("json"), wire);
    let read: JsonRpcResponse<StreamResponse> = serde_json::from_value(wire).expect("response");
    assert_eq!(read.into_result(), Ok(event));

    let deleted = JsonRpcResponse::success(json!("x"), Empty {});
    assert_eq!(serde_json::to_value(&deleted).expect("json"), json!({"jsonrpc": "2.0", "id": "x", "result": {}}));
}

// ---------------------------------------------------------------------------------------------
// Timestamps
// ---------------------------------------------------------------------------------------------

#[test]
fn timestamps_are_rfc3339_utc_with_milliseconds() {
    assert_eq!(format_unix_millis(1_761_647_400_000), "2025-10-28T10:30:00.000Z");
    assert_eq!(parse_rfc3339_utc("2025-10-28T10:30:00.000Z"), Ok(1_761_647_400_000));
    assert!(is_rfc3339_utc("2023-10-27T10:00:00Z"));
    assert!(!is_rfc3339_utc("2023-10-27T10:00:00+01:00"));
    assert!(!is_rfc3339_utc("2023-10-27"));
}
