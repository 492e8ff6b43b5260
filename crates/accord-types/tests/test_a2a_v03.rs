//! The A2A 0.3 shapes and their conversion to and from v1.0: round trips over generated values,
//! the wire spelling of each shape, the projections of what 0.3 cannot express, and refusals.
//!
//! The generator is a small seeded one (SplitMix64) rather than `proptest`, which the workspace
//! does not otherwise use: it would add a dozen crates to every build for one test file. Each
//! case is reproducible from its seed, which a failing assertion prints.

use accord_types::a2a::v03::{self, StreamEvent};
use accord_types::a2a::{self, A2aError, A2aErrorKind, FieldViolation, PartContent, Role, TaskState};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// SplitMix64: a tiny, well-known generator; enough to vary shapes, not for anything secret.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self) -> bool {
        self.below(2) == 0
    }

    fn text(&mut self) -> String {
        const ALPHABET: [&str; 12] = ["a", "Z", "7", " ", "-", "é", "漢", "\"", "\\", "\n", "🙂", "x"];
        let length = 1 + self.below(12);
        (0..length).map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize]).collect()
    }

    fn maybe_text(&mut self) -> Option<String> {
        self.chance().then(|| self.text())
    }

    fn texts(&mut self) -> Vec<String> {
        (0..self.below(3)).map(|_| self.text()).collect()
    }

    fn value(&mut self, depth: u32) -> Value {
        match self.below(if depth == 0 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance()),
            2 => json!(self.below(1_000_000)),
            3 => Value::String(self.text()),
            4 => Value::Array((0..self.below(3)).map(|_| self.value(depth - 1)).collect()),
            _ => Value::Object(self.object(depth - 1)),
        }
    }

    fn object(&mut self, depth: u32) -> Map<String, Value> {
        (0..self.below(3)).map(|_| (self.text(), self.value(depth))).collect()
    }

    fn metadata(&mut self) -> Option<Map<String, Value>> {
        self.chance().then(|| self.object(2))
    }

    /// A part 0.3 can express: text and data without file members, data an object.
    fn part(&mut self) -> a2a::Part {
        let base64 = ["aGk=", "", "AAEC", "3q2+7w=="];
        let content = match self.below(4) {
            0 => PartContent::Text(self.text()),
            1 => PartContent::Raw(base64[self.below(4) as usize].to_owned()),
            2 => PartContent::Url(format!("https://files.example/{}", self.below(100))),
            _ => PartContent::Data(Value::Object(self.object(2))),
        };
        let file = matches!(content, PartContent::Raw(_) | PartContent::Url(_));
        a2a::Part {
            content,
            metadata: self.metadata(),
            filename: if file { self.maybe_text() } else { None },
            media_type: if file { self.maybe_text() } else { None },
        }
    }

    fn parts(&mut self) -> Vec<a2a::Part> {
        (0..1 + self.below(3)).map(|_| self.part()).collect()
    }

    fn message(&mut self) -> a2a::Message {
        a2a::Message {
            message_id: self.text(),
            context_id: self.maybe_text(),
            task_id: self.maybe_text(),
            role: if self.chance() { Role::User } else { Role::Agent },
            parts: self.parts(),
            metadata: self.metadata(),
            extensions: self.texts(),
            reference_task_ids: self.texts(),
        }
    }

    fn state(&mut self) -> TaskState {
        TaskState::ALL[self.below(TaskState::ALL.len() as u64) as usize]
    }

    fn status(&mut self) -> a2a::TaskStatus {
        a2a::TaskStatus {
            state: self.state(),
            message: self.chance().then(|| self.message()),
            timestamp: self.chance().then(|| "2025-10-28T10:30:00.000Z".to_owned()),
        }
    }

    fn artifact(&mut self) -> a2a::Artifact {
        a2a::Artifact {
            artifact_id: self.text(),
            name: self.maybe_text(),
            description: self.maybe_text(),
            parts: self.parts(),
            metadata: self.metadata(),
            extensions: self.texts(),
        }
    }

    fn task(&mut self) -> a2a::Task {
        a2a::Task {
            id: self.text(),
            context_id: Some(self.text()),
            status: self.status(),
            artifacts: (0..self.below(3)).map(|_| self.artifact()).collect(),
            history: (0..self.below(3)).map(|_| self.message()).collect(),
            metadata: self.metadata(),
        }
    }

    fn stream_response(&mut self) -> a2a::StreamResponse {
        match self.below(4) {
            0 => a2a::StreamResponse::Task(self.task()),
            1 => a2a::StreamResponse::Message(self.message()),
            2 => a2a::StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
                task_id: self.text(),
                context_id: self.text(),
                status: self.status(),
                metadata: self.metadata(),
            }),
            _ => a2a::StreamResponse::ArtifactUpdate(a2a::TaskArtifactUpdateEvent {
                task_id: self.text(),
                context_id: self.text(),
                artifact: self.artifact(),
                append: self.chance().then(|| self.chance()),
                last_chunk: self.chance().then(|| self.chance()),
                metadata: self.metadata(),
            }),
        }
    }

    fn push_config(&mut self, task_id: Option<String>) -> a2a::TaskPushNotificationConfig {
        a2a::TaskPushNotificationConfig {
            tenant: None,
            id: self.maybe_text(),
            task_id,
            url: format!("https://hooks.example/{}", self.below(100)),
            token: self.maybe_text(),
            authentication: self.chance().then(|| a2a::AuthenticationInfo {
                scheme: if self.chance() { "Bearer".into() } else { "Basic".into() },
                credentials: self.maybe_text(),
            }),
        }
    }

    fn send_request(&mut self) -> a2a::SendMessageRequest {
        let configuration = self.chance().then(|| a2a::SendMessageConfiguration {
            accepted_output_modes: self.texts(),
            task_push_notification_config: self.chance().then(|| self.push_config(None)),
            history_length: self.chance().then(|| self.below(20) as i32),
            return_immediately: self.chance().then(|| self.chance()),
        });
        a2a::SendMessageRequest { tenant: None, message: self.message(), configuration, metadata: self.metadata() }
    }
}

const CASES: u64 = 400;

/// `value` → 0.3 → JSON text → 0.3 → back, which must be `value` again.
fn round_trip<V, W>(seed: u64, value: V)
where
    V: Clone + PartialEq + std::fmt::Debug + From<W>,
    W: From<V> + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + Clone,
{
    let wire = W::from(value.clone());
    let text = serde_json::to_string(&wire).expect("serializes");
    let read: W = serde_json::from_str(&text).unwrap_or_else(|error| panic!("seed {seed}: {error}: {text}"));
    assert_eq!(read, wire, "seed {seed}: the 0.3 JSON reads back: {text}");
    assert_eq!(V::from(read), value, "seed {seed}: 1.0 → 0.3 → 1.0: {text}");
}

#[test]
fn every_shape_round_trips_through_0_3() {
    for seed in 0..CASES {
        let mut g = Gen(seed);
        round_trip::<a2a::Part, v03::Part>(seed, g.part());
        round_trip::<a2a::Message, v03::Message>(seed, g.message());
        round_trip::<a2a::Task, v03::Task>(seed, g.task());
        round_trip::<a2a::StreamResponse, v03::StreamEvent>(seed, g.stream_response());
        let response = if g.chance() {
            a2a::SendMessageResponse::Task(g.task())
        } else {
            a2a::SendMessageResponse::Message(g.message())
        };
        round_trip::<a2a::SendMessageResponse, v03::SendMessageResult>(seed, response);
        round_trip::<a2a::SendMessageRequest, v03::MessageSendParams>(seed, g.send_request());
        let task_id = Some(g.text());
        round_trip::<a2a::TaskPushNotificationConfig, v03::TaskPushNotificationConfig>(seed, g.push_config(task_id));
        let get = a2a::GetTaskRequest { tenant: None, id: g.text(), history_length: g.chance().then_some(3) };
        round_trip::<a2a::GetTaskRequest, v03::TaskQueryParams>(seed, get);
        let cancel = a2a::CancelTaskRequest { tenant: None, id: g.text(), metadata: g.metadata() };
        round_trip::<a2a::CancelTaskRequest, v03::TaskIdParams>(seed, cancel);
    }
}

/// Every object in a 0.3 value that needs a `kind` has the right one, and states and roles are
/// spelled the 0.3 way.
fn check_spelling(value: &Value, seed: u64) {
    match value {
        Value::Object(object) => {
            if object.contains_key("messageId") && object.contains_key("parts") {
                assert_eq!(object["kind"], "message", "seed {seed}: {value}");
                assert!(matches!(object["role"].as_str(), Some("user" | "agent")), "seed {seed}: {value}");
            }
            if let Some(state) = object.get("state").and_then(Value::as_str) {
                assert!(!state.starts_with("TASK_STATE_"), "seed {seed}: {state}");
            }
            if object.contains_key("status") && object.contains_key("id") {
                assert_eq!(object["kind"], "task", "seed {seed}: {value}");
            }
            for item in object.values() {
                check_spelling(item, seed);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| check_spelling(item, seed)),
        _ => {}
    }
}

#[test]
fn the_0_3_wire_has_kinds_and_kebab_states() {
    for seed in 0..CASES {
        let mut g = Gen(seed);
        let event = serde_json::to_value(StreamEvent::from(g.stream_response())).expect("json");
        check_spelling(&event, seed);
        let kind = event["kind"].as_str().expect("every event has a kind");
        assert!(["task", "message", "status-update", "artifact-update"].contains(&kind), "seed {seed}: {kind}");
        if kind == "status-update" {
            let state: TaskState = event["status"]["state"].as_str().expect("state").parse().expect("a state");
            assert_eq!(event["final"], state.is_terminal() || state.is_interrupted(), "seed {seed}: {event}");
        }
    }
    let part = |part: a2a::Part| serde_json::to_value(v03::Part::from(part)).expect("json");
    assert_eq!(part(a2a::Part::text("hi")), json!({"kind": "text", "text": "hi"}));
    assert_eq!(
        part(a2a::Part::raw_base64("aGk=").with_filename("a.txt").with_media_type("text/plain")),
        json!({"kind": "file", "file": {"name": "a.txt", "mimeType": "text/plain", "bytes": "aGk="}})
    );
    assert_eq!(
        part(a2a::Part::url("https://x.example/f")),
        json!({"kind": "file", "file": {"uri": "https://x.example/f"}})
    );
    assert_eq!(part(a2a::Part::data(json!({"a": 1}))), json!({"kind": "data", "data": {"a": 1}}));
    let config = a2a::TaskPushNotificationConfig {
        tenant: None,
        id: Some("c".into()),
        task_id: Some("t".into()),
        url: "https://hooks.example/".into(),
        token: None,
        authentication: Some(a2a::AuthenticationInfo { scheme: "Bearer".into(), credentials: Some("s".into()) }),
    };
    assert_eq!(
        serde_json::to_value(v03::TaskPushNotificationConfig::from(config)).expect("json"),
        json!({"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "https://hooks.example/",
               "authentication": {"schemes": ["Bearer"], "credentials": "s"}}})
    );
}

#[test]
fn what_0_3_cannot_express_is_projected() {
    // A data part that is not an object is wrapped.
    let wrapped = v03::Part::from(a2a::Part::data(json!([1, 2])));
    assert_eq!(serde_json::to_value(&wrapped).expect("json"), json!({"kind": "data", "data": {"value": [1, 2]}}));
    // Text parts lose file members.
    let text = a2a::Part::text("hi").with_filename("n").with_media_type("text/plain");
    assert_eq!(a2a::Part::from(v03::Part::from(text)), a2a::Part::text("hi"));
    // A task without context gets "" and reads back without one.
    let task = a2a::Task {
        id: "t".into(),
        context_id: None,
        status: a2a::TaskStatus::new(TaskState::Working),
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
    };
    let wire = v03::Task::from(task.clone());
    assert_eq!(wire.context_id, "");
    assert_eq!(a2a::Task::from(wire), task);
    // The tenant is dropped; blocking is the inverse of returnImmediately.
    let mut request = Gen(7).send_request();
    request.tenant = Some("acme".into());
    request.configuration =
        Some(a2a::SendMessageConfiguration { return_immediately: Some(true), ..Default::default() });
    let params = v03::MessageSendParams::from(request.clone());
    assert_eq!(params.configuration.as_ref().and_then(|c| c.blocking), Some(false));
    assert_eq!(a2a::SendMessageRequest::from(params).tenant, None);
    // Of several 0.3 schemes the first is kept.
    let config: v03::PushNotificationConfig = serde_json::from_value(
        json!({"url": "https://h.example/", "authentication": {"schemes": ["Basic", "Bearer"]}}),
    )
    .expect("config");
    assert_eq!(a2a::TaskPushNotificationConfig::from(config).authentication.expect("auth").scheme, "Basic");
}

#[test]
fn the_0_3_readers_accept_what_0_3_clients_send_and_refuse_the_rest() {
    // Snake case and a missing `kind` (inferred from the member) are read.
    let message: v03::Message = serde_json::from_value(json!({
        "message_id": "m", "role": "user", "parts": [{"text": "hi"}, {"kind": "data", "data": {}}],
        "context_id": "c"
    }))
    .expect("a 0.3 message");
    assert_eq!((message.context_id.as_deref(), message.parts.len()), (Some("c"), 2));
    let task: v03::Task = serde_json::from_value(json!({
        "kind": "task", "id": "t", "contextId": "c", "status": {"state": "input-required"}, "artifacts": null
    }))
    .expect("a 0.3 task");
    assert_eq!(task.status.state, TaskState::InputRequired);

    let refused = |value: Value| serde_json::from_value::<v03::Message>(value).expect_err("refused").to_string();
    let base = |part: Value| json!({"messageId": "m", "role": "user", "parts": [part]});
    assert!(refused(base(json!({"kind": "image", "text": "x"}))).contains("unknown part kind"));
    assert!(refused(base(json!({"kind": "data", "data": [1]}))).contains("JSON object"));
    assert!(
        refused(base(json!({"kind": "file", "file": {"bytes": "aGk=", "uri": "https://x"}}))).contains("exactly one")
    );
    assert!(refused(base(json!({"text": "x", "data": {}}))).contains("exactly one of text, file, data"));
    assert!(refused(json!({"messageId": "m", "role": "ROLE_USER", "parts": []})).contains("unknown 0.3 role"));
    assert!(refused(json!({"kind": "task", "messageId": "m", "role": "user", "parts": []})).contains("kind must be"));
    let v1_state = json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}});
    assert!(serde_json::from_value::<v03::Task>(v1_state).is_err(), "v1.0 state names are not 0.3");
}

#[test]
fn errors_use_the_0_3_codes_and_shape_and_read_back() {
    let not_found = A2aError::task_not_found("t-1");
    let object = v03::error_object(&not_found);
    assert_eq!(
        serde_json::to_value(&object).expect("json"),
        json!({"code": -32001, "message": "Task not found", "data": {"reason": "TASK_NOT_FOUND", "metadata": {"taskId": "t-1"}}})
    );
    assert_eq!(v03::error_from_object(&object), Some(not_found));
    let invalid = A2aError::new(A2aErrorKind::InvalidParams)
        .with_message("bad")
        .with_violations([FieldViolation::new("message.parts", "must have at least one element")]);
    assert_eq!(v03::error_from_object(&v03::error_object(&invalid)), Some(invalid));
    let plain = v03::error_object(&A2aError::new(A2aErrorKind::TaskNotCancelable));
    assert_eq!(
        serde_json::to_value(&plain).expect("json"),
        json!({"code": -32002, "message": "Task cannot be canceled"})
    );
    for kind in A2aErrorKind::ALL {
        let error = A2aError::new(kind);
        assert_eq!(v03::error_from_object(&v03::error_object(&error)), Some(error), "{kind}");
    }
    assert_eq!(
        v03::default_message(A2aErrorKind::ExtendedAgentCardNotConfigured),
        "Authenticated Extended Card is not configured"
    );
    assert_eq!(
        v03::error_name(A2aErrorKind::ExtendedAgentCardNotConfigured),
        "AuthenticatedExtendedCardNotConfiguredError"
    );
}

// ---- The 0.3 HTTP+JSON bodies: the ProtoJSON of the 0.3 proto (`v03::proto`). ----

use accord_types::a2a::v03::proto;

/// What the 0.3 proto cannot express, projected as [`proto`]'s conversion does: a message's
/// `referenceTaskIds` are dropped; unset and `false` booleans are one; an empty name or
/// description is none.
fn for_proto_message(mut message: a2a::Message) -> a2a::Message {
    message.reference_task_ids.clear();
    message.context_id = message.context_id.filter(|id| !id.is_empty());
    message.task_id = message.task_id.filter(|id| !id.is_empty());
    message
}

fn for_proto_artifact(mut artifact: a2a::Artifact) -> a2a::Artifact {
    artifact.name = artifact.name.filter(|name| !name.is_empty());
    artifact.description = artifact.description.filter(|description| !description.is_empty());
    artifact
}

fn for_proto_task(mut task: a2a::Task) -> a2a::Task {
    task.status.message = task.status.message.map(for_proto_message);
    task.history = task.history.into_iter().map(for_proto_message).collect();
    task.artifacts = task.artifacts.into_iter().map(for_proto_artifact).collect();
    task
}

fn for_proto_stream(response: a2a::StreamResponse) -> a2a::StreamResponse {
    match response {
        a2a::StreamResponse::Task(task) => a2a::StreamResponse::Task(for_proto_task(task)),
        a2a::StreamResponse::Message(message) => a2a::StreamResponse::Message(for_proto_message(message)),
        a2a::StreamResponse::StatusUpdate(mut update) => {
            update.status.message = update.status.message.map(for_proto_message);
            a2a::StreamResponse::StatusUpdate(update)
        }
        a2a::StreamResponse::ArtifactUpdate(mut update) => {
            update.append = update.append.filter(|append| *append);
            update.last_chunk = update.last_chunk.filter(|last| *last);
            update.artifact = for_proto_artifact(update.artifact);
            a2a::StreamResponse::ArtifactUpdate(update)
        }
    }
}

/// A send as the proto carries it: `blocking` always written (unset is 0.3's default, `true`),
/// `historyLength: 0` unset, an empty token none.
fn for_proto_send(mut request: a2a::SendMessageRequest) -> a2a::SendMessageRequest {
    request.message = for_proto_message(request.message);
    // Written with a configuration always: an unset one says `blocking: true`.
    if request.configuration.is_none() {
        request.configuration = Some(a2a::SendMessageConfiguration::default());
    }
    if let Some(configuration) = request.configuration.as_mut() {
        configuration.return_immediately = Some(configuration.return_immediately.unwrap_or(false));
        configuration.history_length = configuration.history_length.filter(|length| *length != 0);
        if let Some(config) = configuration.task_push_notification_config.as_mut() {
            config.id = config.id.take().filter(|id| !id.is_empty());
            config.token = config.token.take().filter(|token| !token.is_empty());
            if let Some(authentication) = config.authentication.as_mut() {
                authentication.credentials = authentication.credentials.take().filter(|c| !c.is_empty());
            }
        }
    }
    request
}

/// `value` (1.0) → 0.3 → proto → JSON text → proto → 0.3 → 1.0, which must be `expected`; the
/// proto value must also read back unchanged from its text.
fn proto_round_trip<V, W, P>(seed: u64, value: V, expected: V)
where
    V: Clone + PartialEq + std::fmt::Debug + From<W>,
    W: From<V> + From<P>,
    P: From<W> + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let wire = P::from(W::from(value));
    let text = serde_json::to_string(&wire).expect("serializes");
    let read: P = serde_json::from_str(&text).unwrap_or_else(|error| panic!("seed {seed}: {error}: {text}"));
    assert_eq!(read, wire, "seed {seed}: the proto JSON reads back: {text}");
    assert_eq!(V::from(W::from(read)), expected, "seed {seed}: 1.0 → 0.3 proto → 1.0: {text}");
}

#[test]
fn every_shape_round_trips_through_the_0_3_proto_json() {
    for seed in 0..CASES {
        let mut g = Gen(seed);
        let message = g.message();
        proto_round_trip::<_, v03::Message, proto::Message>(seed, message.clone(), for_proto_message(message));
        let task = g.task();
        proto_round_trip::<_, v03::Task, proto::Task>(seed, task.clone(), for_proto_task(task));
        let event = g.stream_response();
        proto_round_trip::<_, v03::StreamEvent, proto::StreamResponse>(seed, event.clone(), for_proto_stream(event));
        let response = if g.chance() {
            a2a::SendMessageResponse::Task(g.task())
        } else {
            a2a::SendMessageResponse::Message(g.message())
        };
        let expected = match response.clone() {
            a2a::SendMessageResponse::Task(task) => a2a::SendMessageResponse::Task(for_proto_task(task)),
            a2a::SendMessageResponse::Message(message) => a2a::SendMessageResponse::Message(for_proto_message(message)),
        };
        proto_round_trip::<_, v03::SendMessageResult, proto::SendMessageResponse>(seed, response, expected);
        let send = g.send_request();
        proto_round_trip::<_, v03::MessageSendParams, proto::SendMessageRequest>(
            seed,
            send.clone(),
            for_proto_send(send),
        );
        // A config with an id names it in `name`; one with a task and id round-trips.
        let task_id = g.text().replace('/', "-");
        let mut config = g.push_config(Some(task_id));
        config.id = Some(g.text().replace('/', "-"));
        config.token = config.token.filter(|token| !token.is_empty());
        proto_round_trip::<_, v03::TaskPushNotificationConfig, proto::TaskPushNotificationConfig>(
            seed,
            config.clone(),
            config,
        );
    }
}

#[test]
fn the_0_3_proto_json_is_spelled_as_the_proto() {
    let task = a2a::Task {
        id: "t1".into(),
        context_id: Some("c1".into()),
        status: a2a::TaskStatus { state: TaskState::Canceled, message: None, timestamp: None },
        artifacts: vec![],
        history: vec![a2a::Message {
            message_id: "m1".into(),
            context_id: None,
            task_id: None,
            role: Role::User,
            parts: vec![
                a2a::Part::text("hi"),
                a2a::Part {
                    content: PartContent::Url("https://f.example/a".into()),
                    metadata: None,
                    filename: Some("a.txt".into()),
                    media_type: Some("text/plain".into()),
                },
                a2a::Part::data(json!({"k": 1})),
            ],
            metadata: None,
            extensions: vec![],
            reference_task_ids: vec!["r1".into()],
        }],
        metadata: None,
    };
    let written = serde_json::to_value(proto::Task::from(v03::Task::from(task))).expect("json");
    assert_eq!(
        written,
        json!({"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_CANCELLED"},
               "history": [{"messageId": "m1", "role": "ROLE_USER", "content": [
                   {"text": "hi"},
                   {"file": {"fileWithUri": "https://f.example/a", "mimeType": "text/plain", "name": "a.txt"}},
                   {"data": {"data": {"k": 1}}}]}]})
    );
    let update = proto::StreamResponse::from(v03::StreamEvent::from(a2a::StreamResponse::StatusUpdate(
        a2a::TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: a2a::TaskStatus { state: TaskState::InputRequired, message: None, timestamp: None },
            metadata: None,
        },
    )));
    assert_eq!(
        serde_json::to_value(update).expect("json"),
        json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}, "final": true}})
    );
}

#[test]
fn the_0_3_proto_readers_accept_proto_names_and_refuse_the_rest() {
    // Proto field names, enum numbers and the `msg` / `update` / `request` spellings.
    let read: proto::SendMessageRequest = serde_json::from_value(json!({
        "request": {"message_id": "m", "role": 1, "content": [{"text": "x"}], "context_id": "c"},
        "configuration": {"accepted_output_modes": ["text/plain"], "history_length": "3"}
    }))
    .expect("proto names");
    let params = v03::MessageSendParams::from(read);
    assert_eq!(params.message.role, Role::User);
    assert_eq!(params.message.context_id.as_deref(), Some("c"));
    let configuration = params.configuration.expect("configuration");
    assert_eq!((configuration.blocking, configuration.history_length), (Some(false), Some(3)));
    let response: proto::SendMessageResponse =
        serde_json::from_value(json!({"msg": {"messageId": "m", "role": "ROLE_AGENT", "content": []}})).expect("msg");
    assert!(matches!(response, proto::SendMessageResponse::Message(_)));
    let status: proto::TaskStatus =
        serde_json::from_value(json!({"state": 5, "update": {"messageId": "m", "role": "ROLE_AGENT"}}))
            .expect("status");
    assert_eq!(status.state, TaskState::Canceled);
    assert!(status.message.is_some());
    let (task, config) = proto::name_parts("tasks/t-1/pushNotificationConfigs/c-1");
    assert_eq!((task, config), (Some("t-1"), Some("c-1")));
    assert_eq!(proto::name_parts("tasks/t-2"), (Some("t-2"), None));
    assert_eq!(proto::name_parts("nonsense"), (None, None));

    for (bad, why) in [
        (json!({"message": {"messageId": "m", "role": "user", "content": []}}), "0.3 JSON-RPC role"),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"kind": "text", "text": "x", "data": {}}]}}),
            "two cases",
        ),
        (json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{}]}}), "no case"),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"file": {"fileWithUri": "u", "fileWithBytes": "AA=="}}]}}),
            "two file bodies",
        ),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"data": {"data": [1]}}]}}),
            "data not an object",
        ),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": []}, "configuration": {"blocking": "yes"}}),
            "blocking not a bool",
        ),
    ] {
        assert!(serde_json::from_value::<proto::SendMessageRequest>(bad.clone()).is_err(), "{why}: {bad}");
    }
    for bad in [json!({"state": "TASK_STATE_CANCELED"}), json!({"state": "working"}), json!({"state": 42})] {
        assert!(serde_json::from_value::<proto::TaskStatus>(bad.clone()).is_err(), "{bad}");
    }
    assert!(serde_json::from_value::<proto::StreamResponse>(json!({"task": {}, "message": {}})).is_err());
}
