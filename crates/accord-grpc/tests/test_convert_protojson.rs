//! The converted a2a value serializes as the ProtoJSON of the proto value it came from: parts (the
//! oneof key, base64 `bytes`), timestamps, enums by name, and false plain bools left out.

use accord_grpc::pb;
use accord_types::a2a;
use base64::Engine as _;
use serde_json::{Value, json};

macro_rules! to_json {
    ($value:expr $(,)?) => {
        serde_json::to_value($value).expect("a2a values serialize")
    };
}

/// ProtoJSON of a part, by hand from its fields (only the kinds used below).
fn part_protojson(part: &pb::Part) -> Value {
    let mut object = serde_json::Map::new();
    match part.content.as_ref().expect("content") {
        pb::part::Content::Text(text) => object.insert("text".into(), json!(text)),
        pb::part::Content::Raw(bytes) => {
            object.insert("raw".into(), json!(base64::engine::general_purpose::STANDARD.encode(bytes)))
        }
        pb::part::Content::Url(url) => object.insert("url".into(), json!(url)),
        pb::part::Content::Data(_) => unreachable!("not used here"),
    };
    if !part.filename.is_empty() {
        object.insert("filename".into(), json!(part.filename));
    }
    if !part.media_type.is_empty() {
        object.insert("mediaType".into(), json!(part.media_type));
    }
    Value::Object(object)
}

#[test]
fn parts_serialize_as_their_protojson() {
    let parts = [
        pb::Part { content: Some(pb::part::Content::Text("hi ✓".into())), ..Default::default() },
        pb::Part {
            content: Some(pb::part::Content::Raw(vec![0xfb, 0xff, 0x00, 0x01])),
            filename: "blob.bin".into(),
            media_type: "application/octet-stream".into(),
            ..Default::default()
        },
        pb::Part { content: Some(pb::part::Content::Url("https://x.example/f".into())), ..Default::default() },
    ];
    for part in parts {
        let value: a2a::Part = part.clone().try_into().expect("converts");
        assert_eq!(to_json!(&value), part_protojson(&part));
    }
}

#[test]
fn statuses_serialize_with_enum_names_and_rfc3339_timestamps() {
    for (state, seconds, nanos, text) in [
        (pb::TaskState::Working, 1_761_647_400, 123_000_000, "2025-10-28T10:30:00.123Z"),
        (pb::TaskState::InputRequired, 1_761_647_400, 123_456_000, "2025-10-28T10:30:00.123456Z"),
        (pb::TaskState::AuthRequired, 0, 1, "1970-01-01T00:00:00.000000001Z"),
        (pb::TaskState::Unspecified, -1, 500_000_000, "1969-12-31T23:59:59.500Z"),
    ] {
        let status = pb::TaskStatus {
            state: state as i32,
            message: None,
            timestamp: Some(prost_types::Timestamp { seconds, nanos }),
        };
        let value: a2a::TaskStatus = status.try_into().expect("converts");
        assert_eq!(to_json!(&value), json!({"state": state.as_str_name(), "timestamp": text}));
    }
}

#[test]
fn messages_and_events_serialize_as_their_protojson() {
    let message = pb::Message {
        message_id: "m-1".into(),
        context_id: "c-1".into(),
        task_id: String::new(),
        role: pb::Role::Agent as i32,
        parts: vec![pb::Part { content: Some(pb::part::Content::Text("ok".into())), ..Default::default() }],
        metadata: None,
        extensions: vec![],
        reference_task_ids: vec!["t-0".into()],
    };
    let value: a2a::Message = message.try_into().expect("converts");
    assert_eq!(
        to_json!(&value),
        json!({"messageId": "m-1", "contextId": "c-1", "role": "ROLE_AGENT", "parts": [{"text": "ok"}], "referenceTaskIds": ["t-0"]})
    );

    // Plain bools: false is left out of ProtoJSON, true written.
    let event = pb::StreamResponse {
        payload: Some(pb::stream_response::Payload::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            artifact: Some(pb::Artifact {
                artifact_id: "a".into(),
                parts: vec![pb::Part { content: Some(pb::part::Content::Text("x".into())), ..Default::default() }],
                ..Default::default()
            }),
            append: false,
            last_chunk: true,
            metadata: Some(prost_types::Struct::default()),
        })),
    };
    let value: a2a::StreamResponse = event.try_into().expect("converts");
    assert_eq!(
        to_json!(&value),
        json!({"artifactUpdate": {
            "taskId": "t", "contextId": "c",
            "artifact": {"artifactId": "a", "parts": [{"text": "x"}]},
            "lastChunk": true,
            "metadata": {},
        }})
    );
}
