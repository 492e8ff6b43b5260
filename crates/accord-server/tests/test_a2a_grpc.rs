//! The official A2A v1.0 gRPC binding over real HTTP/2 on a loopback port: every RPC, the
//! service parameters in metadata, tenants, and each error of the catalogue the binding can
//! answer, as a `google.rpc.Status` with its gRPC code and an `ErrorInfo`.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{
    AccessToken, AnonymousAccess, MemoryStore, MemoryStoreConfig, RuntimeConfig, ServiceConfig, TaskRuntime, TaskStore,
};
use accord_engine::{Agent, Completion, Message, Outcome, Run, Skill, SkillError};
use accord_grpc::pb;
use accord_grpc::pb::a2a_service_client::A2aServiceClient;
use accord_server::auth::{AuthConfig, BearerTokens};
use accord_server::{A2aConfig, AgentRouterExt, GrpcAddress, RateLimitConfig, ServerConfig};
use accord_test_support::TestServer;
use accord_types::a2a::{AgentExtension, ErrorMapping};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tonic::{Code, Status};
use tonic_types::StatusExt;
use tower::Service;

const TOKEN: &str = "grpc-caller-token-0123456789";

/// `echo` completes with its input; `ask` waits for input until a follow-up says `go`; `wait`
/// runs until cancelled; `ticks` reports progress twice before completing.
fn agent() -> Agent {
    Agent::builder("grpc-test")
        .skill(
            Skill::builder("echo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(Skill::builder("ask").invoke(|run: Run| async move {
            let follow_up = run.task().is_some_and(|task| task.history.len() > 1);
            if follow_up && run.message().is_some_and(|message| message.text() == "go") {
                Ok(Outcome::Completed(Completion::new(json!({"asked": true}))))
            } else {
                Ok(Outcome::InputRequired(Message::agent_text("say go")))
            }
        }))
        .skill(Skill::builder("wait").invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        .build()
        .expect("agent")
}

fn a2a(mapping: ErrorMapping) -> A2aConfig {
    A2aConfig { grpc: Some(GrpcAddress::SamePort), error_mapping: mapping, ..A2aConfig::default() }
}

fn runtime(store: Arc<dyn TaskStore>, config: RuntimeConfig) -> TaskRuntime {
    TaskRuntime::new(agent(), store, config)
}

/// A server of every face, the gRPC binding on the HTTP port, anonymous callers allowed to list.
fn config(runtime: TaskRuntime, mapping: ErrorMapping) -> ServerConfig {
    ServerConfig::default()
        .tasks(runtime)
        .a2a(Some(a2a(mapping)))
        .task_service(ServiceConfig::default().anonymous(AnonymousAccess::ListShared))
}

async fn server(config: ServerConfig) -> TestServer {
    TestServer::start(agent().router_with(config)).await
}

async fn default_server() -> TestServer {
    let runtime = runtime(Arc::new(MemoryStore::default()), RuntimeConfig::default());
    server(config(runtime, ErrorMapping::V1_0_1)).await
}

async fn client(s: &TestServer) -> A2aServiceClient<tonic::transport::Channel> {
    let endpoint = tonic::transport::Endpoint::from_shared(s.origin.clone()).expect("endpoint");
    A2aServiceClient::new(endpoint.connect().await.expect("an HTTP/2 connection"))
}

/// `message` with `a2a-version: 1.0` and the given extra metadata.
fn request<T>(message: T, metadata: &[(&'static str, &str)]) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert("a2a-version", "1.0".parse().expect("metadata"));
    for (name, value) in metadata {
        request.metadata_mut().insert(*name, value.parse().expect("metadata"));
    }
    request
}

fn struct_of(value: Value) -> prost_types::Struct {
    let Value::Object(map) = value else { panic!("an object") };
    let fields = map.into_iter().map(|(key, value)| (key, value_of(value))).collect();
    prost_types::Struct { fields }
}

fn value_of(value: Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match value {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().expect("a number")),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(items) => {
            Kind::ListValue(prost_types::ListValue { values: items.into_iter().map(value_of).collect() })
        }
        object @ Value::Object(_) => Kind::StructValue(struct_of(object)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// A user message of `skill` with a text part.
fn message(text: &str, skill: &str) -> pb::Message {
    pb::Message {
        message_id: format!("m-{text}"),
        role: pb::Role::User as i32,
        parts: vec![pb::Part { content: Some(pb::part::Content::Text(text.into())), ..Default::default() }],
        metadata: Some(struct_of(json!({"skillId": skill}))),
        ..Default::default()
    }
}

fn send(text: &str, skill: &str, return_immediately: bool) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(message(text, skill)),
        configuration: Some(pb::SendMessageConfiguration { return_immediately, ..Default::default() }),
        ..Default::default()
    }
}

fn task_of(response: pb::SendMessageResponse) -> pb::Task {
    match response.payload {
        Some(pb::send_message_response::Payload::Task(task)) => task,
        other => panic!("a task, not {other:?}"),
    }
}

fn state(task: &pb::Task) -> pb::TaskState {
    pb::TaskState::try_from(task.status.as_ref().expect("status").state).expect("a known state")
}

/// The status's `ErrorInfo`: its reason, after checking its domain.
fn reason(status: &Status) -> String {
    let info = status.get_details_error_info().unwrap_or_else(|| panic!("an ErrorInfo detail in {status:?}"));
    assert_eq!(info.domain, "a2a-protocol.org", "{status:?}");
    info.reason
}

#[track_caller]
fn assert_error(result: Result<impl std::fmt::Debug, Status>, code: Code, expected_reason: &str) -> Status {
    let status = result.expect_err("an error");
    assert_eq!((status.code(), reason(&status).as_str()), (code, expected_reason), "{status:?}");
    status
}

#[tokio::test]
async fn every_operation_answers_over_grpc() {
    let s = default_server().await;
    let mut c = client(&s).await;

    // A blocking send: the completed task with its result artifact.
    let sent = c.send_message(request(send(r#"{"n":1}"#, "echo", false), &[])).await.expect("SendMessage");
    let task = task_of(sent.into_inner());
    assert_eq!(state(&task), pb::TaskState::Completed);
    assert_eq!(task.artifacts[0].artifact_id, "result");
    assert!(!task.context_id.is_empty());
    let Some(pb::part::Content::Data(data)) = &task.artifacts[0].parts[0].content else { panic!("a data part") };
    assert_eq!(data, &value_of(json!({"n": 1})));

    let got = c
        .get_task(request(
            pb::GetTaskRequest { id: task.id.clone(), history_length: Some(1), ..Default::default() },
            &[],
        ))
        .await
        .expect("GetTask")
        .into_inner();
    assert_eq!((got.id.as_str(), got.history.len()), (task.id.as_str(), 1));

    let listed = c
        .list_tasks(request(
            pb::ListTasksRequest { page_size: Some(10), include_artifacts: Some(true), ..Default::default() },
            &[],
        ))
        .await
        .expect("ListTasks")
        .into_inner();
    assert_eq!(listed.tasks[0].id, task.id);
    assert_eq!(listed.tasks[0].artifacts[0].artifact_id, "result");
    assert_eq!((listed.next_page_token.as_str(), listed.total_size), ("", 1));

    // A running task is cancelled.
    let running = task_of(c.send_message(request(send("{}", "wait", true), &[])).await.expect("send").into_inner());
    let cancelled = c
        .cancel_task(request(pb::CancelTaskRequest { id: running.id.clone(), ..Default::default() }, &[]))
        .await
        .expect("CancelTask")
        .into_inner();
    assert_eq!(state(&cancelled), pb::TaskState::Canceled);

    // The stream: the task first, then its updates, the result artifact, completed; then it closes.
    let mut stream = c
        .send_streaming_message(request(send(r#"{"n":2}"#, "echo", false), &[]))
        .await
        .expect("SendStreamingMessage")
        .into_inner();
    let mut kinds = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(30), stream.next()).await.expect("no stall") {
        kinds.push(match event.expect("an event").payload.expect("a payload") {
            pb::stream_response::Payload::Task(_) => "task".to_owned(),
            pb::stream_response::Payload::StatusUpdate(update) => {
                let state = update.status.expect("status").state;
                pb::TaskState::try_from(state).expect("state").as_str_name().to_owned()
            }
            pb::stream_response::Payload::ArtifactUpdate(update) => {
                format!("artifact {}", update.artifact.expect("artifact").artifact_id)
            }
            pb::stream_response::Payload::Message(_) => "message".to_owned(),
        });
    }
    assert_eq!(kinds.first().map(String::as_str), Some("task"), "{kinds:?}");
    assert_eq!(&kinds[kinds.len() - 2..], ["artifact result", "TASK_STATE_COMPLETED"], "{kinds:?}");

    // A subscription to a waiting task stays open until the follow-up completes it.
    let waiting = task_of(c.send_message(request(send("{}", "ask", false), &[])).await.expect("send").into_inner());
    assert_eq!(state(&waiting), pb::TaskState::InputRequired);
    let mut subscription = c
        .subscribe_to_task(request(pb::SubscribeToTaskRequest { id: waiting.id.clone(), ..Default::default() }, &[]))
        .await
        .expect("SubscribeToTask")
        .into_inner();
    let first = subscription.next().await.expect("an event").expect("ok").payload;
    assert!(matches!(first, Some(pb::stream_response::Payload::Task(ref task)) if task.id == waiting.id));
    let mut follow_up = message("go", "ask");
    follow_up.task_id = waiting.id.clone();
    let follow_up = pb::SendMessageRequest { message: Some(follow_up), ..Default::default() };
    let resumed = task_of(c.send_message(request(follow_up, &[])).await.expect("follow-up").into_inner());
    assert_eq!(state(&resumed), pb::TaskState::Completed);
    let mut last = None;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(30), subscription.next()).await.expect("no stall")
    {
        if let Some(pb::stream_response::Payload::StatusUpdate(update)) = event.expect("an event").payload {
            last = Some(update.status.expect("status").state);
        }
    }
    assert_eq!(last, Some(pb::TaskState::Completed as i32), "the subscription ends with the task");

    // Push configurations: create, get, list, delete.
    let config = pb::TaskPushNotificationConfig {
        task_id: waiting.id.clone(),
        id: "hook-1".into(),
        url: "https://hooks.example/a2a".into(),
        token: "opaque".into(),
        ..Default::default()
    };
    let created = c.create_task_push_notification_config(request(config, &[])).await.expect("create").into_inner();
    assert_eq!((created.id.as_str(), created.task_id.as_str()), ("hook-1", waiting.id.as_str()));
    let read = pb::GetTaskPushNotificationConfigRequest {
        task_id: waiting.id.clone(),
        id: "hook-1".into(),
        ..Default::default()
    };
    let got = c.get_task_push_notification_config(request(read, &[])).await.expect("get").into_inner();
    assert_eq!(got.url, "https://hooks.example/a2a");
    let list = pb::ListTaskPushNotificationConfigsRequest { task_id: waiting.id.clone(), ..Default::default() };
    let listed = c.list_task_push_notification_configs(request(list.clone(), &[])).await.expect("list").into_inner();
    assert_eq!(listed.configs.len(), 1);
    let delete = pb::DeleteTaskPushNotificationConfigRequest {
        task_id: waiting.id.clone(),
        id: "hook-1".into(),
        ..Default::default()
    };
    c.delete_task_push_notification_config(request(delete, &[])).await.expect("delete");
    let listed = c.list_task_push_notification_configs(request(list, &[])).await.expect("list").into_inner();
    assert!(listed.configs.is_empty());
}

#[tokio::test]
async fn a_tenant_scopes_the_caller_and_a_missing_version_is_1_0() {
    let s = default_server().await;
    let mut c = client(&s).await;
    let mut in_tenant = send("{}", "echo", false);
    in_tenant.tenant = "team-a".into();
    let task = task_of(c.send_message(request(in_tenant, &[])).await.expect("send").into_inner());
    let get = |tenant: &str| pb::GetTaskRequest { id: task.id.clone(), tenant: tenant.into(), ..Default::default() };
    c.get_task(request(get("team-a"), &[])).await.expect("the tenant reads its task");
    assert_error(c.get_task(request(get(""), &[])).await, Code::NotFound, "TASK_NOT_FOUND");
    assert_error(c.get_task(request(get("team-b"), &[])).await, Code::NotFound, "TASK_NOT_FOUND");
    // This service is the 1.0 one: without a2a-version, a request is read as 1.0.
    c.get_task(tonic::Request::new(get("team-a"))).await.expect("no a2a-version: 1.0");
}

#[tokio::test]
async fn the_card_lists_the_grpc_interface_on_the_server_port() {
    let s = default_server().await;
    let card: Value =
        reqwest::get(s.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let grpc: Vec<&Value> = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter(|interface| interface["protocolBinding"] == "GRPC")
        .collect();
    assert_eq!(grpc.len(), 1, "{card}");
    assert_eq!(grpc[0]["url"], format!("127.0.0.1:{}", s.addr.port()));
    assert_eq!(grpc[0]["protocolVersion"], "1.0");

    // Without the setting, neither the card nor the router has the binding.
    let runtime = runtime(Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let plain = server(ServerConfig::default().tasks(runtime)).await;
    let card: Value =
        reqwest::get(plain.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    assert!(!card.to_string().contains("\"GRPC\""), "{card}");
    let refused = client(&plain).await.get_task(request(pb::GetTaskRequest::default(), &[])).await;
    assert_eq!(refused.expect_err("no route").code(), Code::Unimplemented);
}

#[tokio::test]
async fn the_a2a_errors_are_statuses_with_error_info() {
    let s = default_server().await;
    let mut c = client(&s).await;
    let done = task_of(c.send_message(request(send("{}", "echo", false), &[])).await.expect("send").into_inner());

    // TaskNotFound.
    let missing = pb::GetTaskRequest { id: "no-such-task".into(), ..Default::default() };
    let status = assert_error(c.get_task(request(missing, &[])).await, Code::NotFound, "TASK_NOT_FOUND");
    assert!(!status.message().is_empty());
    // TaskNotCancelable.
    let cancel = pb::CancelTaskRequest { id: done.id.clone(), ..Default::default() };
    assert_error(c.cancel_task(request(cancel, &[])).await, Code::FailedPrecondition, "TASK_NOT_CANCELABLE");
    // UnsupportedOperation: a finished task cannot be subscribed to, nor sent a message.
    let subscribe = pb::SubscribeToTaskRequest { id: done.id.clone(), ..Default::default() };
    assert_error(
        c.subscribe_to_task(request(subscribe, &[])).await.map(|_| ()),
        Code::FailedPrecondition,
        "UNSUPPORTED_OPERATION",
    );
    let mut late = message("more", "echo");
    late.task_id = done.id.clone();
    let late = pb::SendMessageRequest { message: Some(late), ..Default::default() };
    assert_error(c.send_message(request(late, &[])).await, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");
    // UnsupportedOperation: no extended card is declared.
    assert_error(
        c.get_extended_agent_card(request(pb::GetExtendedAgentCardRequest::default(), &[])).await,
        Code::FailedPrecondition,
        "UNSUPPORTED_OPERATION",
    );
    // VersionNotSupported: another version, 0.3 included (its gRPC service is another one).
    for version in ["99.0", "0.3"] {
        let get = pb::GetTaskRequest { id: done.id.clone(), ..Default::default() };
        let mut call = tonic::Request::new(get);
        call.metadata_mut().insert("a2a-version", version.parse().expect("metadata"));
        assert_error(c.get_task(call).await, Code::FailedPrecondition, "VERSION_NOT_SUPPORTED");
    }
    // InvalidParams: a message without parts, named in a BadRequest.
    let mut empty = message("x", "echo");
    empty.parts.clear();
    let empty = pb::SendMessageRequest { message: Some(empty), ..Default::default() };
    let status = c.send_message(request(empty, &[])).await.expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let violations = status.get_details_bad_request().expect("a BadRequest detail").field_violations;
    assert!(violations.iter().any(|violation| violation.field == "message.parts"), "{violations:?}");
    // InvalidParams: what the proto can carry but A2A cannot: a part without content.
    let mut hollow = message("x", "echo");
    hollow.parts[0].content = None;
    let hollow = pb::SendMessageRequest { message: Some(hollow), ..Default::default() };
    assert_eq!(c.send_message(request(hollow, &[])).await.expect_err("refused").code(), Code::InvalidArgument);
    // InvalidParams: a skill the agent does not have.
    let unknown = pb::SendMessageRequest { message: Some(message("{}", "no-such-skill")), ..Default::default() };
    assert_eq!(c.send_message(request(unknown, &[])).await.expect_err("refused").code(), Code::InvalidArgument);
    // A missing task's push configs: TaskNotFound.
    let list = pb::ListTaskPushNotificationConfigsRequest { task_id: "no-such-task".into(), ..Default::default() };
    assert_error(c.list_task_push_notification_configs(request(list, &[])).await, Code::NotFound, "TASK_NOT_FOUND");
}

#[tokio::test]
async fn the_v1_0_0_mapping_answers_unimplemented_where_that_edition_did() {
    let runtime = runtime(Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let mut config = config(runtime, ErrorMapping::V1_0_0);
    config.push = None;
    let s = server(config).await;
    let mut c = client(&s).await;
    let done = task_of(c.send_message(request(send("{}", "echo", false), &[])).await.expect("send").into_inner());
    // PushNotificationNotSupported: this server sends none.
    let push = pb::TaskPushNotificationConfig {
        task_id: done.id.clone(),
        url: "https://hooks.example/a2a".into(),
        ..Default::default()
    };
    assert_error(
        c.create_task_push_notification_config(request(push, &[])).await,
        Code::Unimplemented,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    );
    let mut call = tonic::Request::new(pb::GetTaskRequest { id: done.id.clone(), ..Default::default() });
    call.metadata_mut().insert("a2a-version", "99.0".parse().expect("metadata"));
    assert_error(c.get_task(call).await, Code::Unimplemented, "VERSION_NOT_SUPPORTED");
    let cancel = pb::CancelTaskRequest { id: done.id.clone(), ..Default::default() };
    assert_error(c.cancel_task(request(cancel, &[])).await, Code::FailedPrecondition, "TASK_NOT_CANCELABLE");
}

#[tokio::test]
async fn push_not_supported_is_failed_precondition_in_v1_0_1() {
    let runtime = runtime(Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let mut config = config(runtime, ErrorMapping::V1_0_1);
    config.push = None;
    let s = server(config).await;
    let mut c = client(&s).await;
    let get = pb::GetTaskPushNotificationConfigRequest { task_id: "t".into(), id: "c".into(), ..Default::default() };
    assert_error(
        c.get_task_push_notification_config(request(get, &[])).await,
        Code::FailedPrecondition,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    );
}

#[tokio::test]
async fn a_required_extension_must_be_activated_in_metadata_and_is_echoed() {
    let extension = |uri: &str, required: bool| AgentExtension {
        uri: Some(uri.into()),
        description: None,
        required: Some(required),
        params: None,
    };
    let runtime = runtime(Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let a2a = A2aConfig {
        extensions: vec![extension("urn:test:required", true), extension("urn:test:optional", false)],
        ..a2a(ErrorMapping::V1_0_1)
    };
    let s = server(ServerConfig::default().tasks(runtime).a2a(Some(a2a))).await;
    let mut c = client(&s).await;
    let status = assert_error(
        c.send_message(request(send("{}", "echo", false), &[])).await,
        Code::FailedPrecondition,
        "EXTENSION_SUPPORT_REQUIRED",
    );
    let info = status.get_details_error_info().expect("ErrorInfo");
    assert_eq!(info.metadata.get("extension").map(String::as_str), Some("urn:test:required"));
    let activated = [("a2a-extensions", "urn:test:optional, urn:test:required, urn:test:unknown")];
    let answer = c.send_message(request(send("{}", "echo", false), &activated)).await.expect("activated");
    let echoed = answer.metadata().get("a2a-extensions").expect("echoed").to_str().expect("ascii").to_owned();
    assert_eq!(echoed, "urn:test:required, urn:test:optional");
}

#[tokio::test]
async fn credentials_come_from_metadata_and_a_refused_one_is_unauthenticated() {
    let token = AccessToken::parse(TOKEN).expect("token");
    let auth = AuthConfig::new().bearer(BearerTokens::new().with(&token, "caller", Vec::<String>::new()));
    let runtime = runtime(Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let s = server(config(runtime, ErrorMapping::V1_0_1).auth(auth)).await;
    let mut c = client(&s).await;
    let bearer = format!("Bearer {TOKEN}");
    let mine = task_of(
        c.send_message(request(send("{}", "echo", false), &[("authorization", &bearer)]))
            .await
            .expect("send")
            .into_inner(),
    );
    let get = pb::GetTaskRequest { id: mine.id.clone(), ..Default::default() };
    c.get_task(request(get.clone(), &[("authorization", &bearer)])).await.expect("the owner reads it");
    // Anonymous: another owner, to whom the task does not exist.
    assert_error(c.get_task(request(get.clone(), &[])).await, Code::NotFound, "TASK_NOT_FOUND");
    // A refused credential: UNAUTHENTICATED, never a hint of the task.
    let status = assert_error(
        c.get_task(request(get, &[("authorization", "Bearer not-a-known-token-0123456789")])).await,
        Code::Unauthenticated,
        "UNAUTHENTICATED",
    );
    assert!(!status.message().contains(&mine.id));
}

#[tokio::test]
async fn capacity_share_rate_and_an_unavailable_store_are_retryable_statuses() {
    // TaskCapacityExhausted: a store of one task, which waits.
    let store = MemoryStore::new(MemoryStoreConfig { max_tasks: 1, ..MemoryStoreConfig::default() });
    let s = server(config(runtime(Arc::new(store), RuntimeConfig::default()), ErrorMapping::V1_0_1)).await;
    let mut c = client(&s).await;
    c.send_message(request(send("{}", "wait", true), &[])).await.expect("the first task");
    let status = assert_error(
        c.send_message(request(send("{}", "echo", true), &[])).await,
        Code::ResourceExhausted,
        "TASK_CAPACITY_EXHAUSTED",
    );
    assert!(status.metadata().get("retry-after").is_some(), "{status:?}");

    // OwnerShareExhausted: one unfinished task per owner.
    let config_share = RuntimeConfig::default().max_active_per_owner(Some(1));
    let s = server(config(runtime(Arc::new(MemoryStore::default()), config_share), ErrorMapping::V1_0_1)).await;
    let mut c = client(&s).await;
    c.send_message(request(send("{}", "wait", true), &[])).await.expect("the first task");
    assert_error(
        c.send_message(request(send("{}", "echo", true), &[])).await,
        Code::ResourceExhausted,
        "OWNER_SHARE_EXHAUSTED",
    );

    // RateLimited: a burst of 3 a second.
    let rate = RateLimitConfig::per_second(NonZeroU32::MIN).burst(NonZeroU32::new(3).expect("3"));
    let runtime_rate = runtime(Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let s = server(config(runtime_rate, ErrorMapping::V1_0_1).rate_limit(Some(rate))).await;
    let mut c = client(&s).await;
    for _ in 0..3 {
        c.send_message(request(send("{}", "echo", true), &[])).await.expect("within the burst");
    }
    let status = assert_error(
        c.send_message(request(send("{}", "echo", true), &[])).await,
        Code::ResourceExhausted,
        "RATE_LIMITED",
    );
    assert_eq!(status.metadata().get("retry-after").and_then(|value| value.to_str().ok()), Some("1"));

    // Unavailable: the store goes away under the server.
    let store = Arc::new(MemoryStore::default());
    let s = server(config(
        runtime(Arc::clone(&store) as Arc<dyn TaskStore>, RuntimeConfig::default()),
        ErrorMapping::V1_0_1,
    ))
    .await;
    store.close().await;
    let mut c = client(&s).await;
    let status = c.send_message(request(send("{}", "echo", false), &[])).await.expect_err("refused");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.metadata().get("retry-after").is_some(), "{status:?}");
}

#[tokio::test]
async fn an_unknown_method_is_unimplemented_and_a_non_grpc_content_type_is_refused() {
    let s = default_server().await;
    // A method the service does not have: gRPC's UNIMPLEMENTED.
    let mut grpc = tonic::client::Grpc::new(
        tonic::transport::Endpoint::from_shared(s.origin.clone()).expect("endpoint").connect().await.expect("connect"),
    );
    grpc.ready().await.expect("ready");
    let path = http::uri::PathAndQuery::from_static("/lf.a2a.v1.A2AService/NoSuchMethod");
    let codec = tonic_prost::ProstCodec::<pb::GetTaskRequest, pb::Task>::default();
    let status =
        grpc.unary(request(pb::GetTaskRequest::default(), &[]), path, codec).await.expect_err("no such method");
    assert_eq!(status.code(), Code::Unimplemented);

    // A message over the body limit (1 MiB) is refused before it is decoded.
    let mut c = client(&s).await;
    let huge = send(&"x".repeat(2 * 1024 * 1024), "echo", false);
    let status = c.send_message(request(huge, &[])).await.expect_err("too large");
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");

    // gRPC with another codec than protobuf: ContentTypeNotSupported, as a status.
    let mut channel =
        tonic::transport::Endpoint::from_shared(s.origin.clone()).expect("endpoint").connect().await.expect("connect");
    let call = http::Request::builder()
        .method("POST")
        .uri(s.url("/lf.a2a.v1.A2AService/GetTask"))
        .header("content-type", "application/grpc+json")
        .header("te", "trailers")
        .body(tonic::body::Body::empty())
        .expect("request");
    let response = tower::ServiceExt::ready(&mut channel).await.expect("ready").call(call).await.expect("response");
    assert_eq!(response.status(), 200);
    let status = Status::from_header_map(response.headers()).expect("a trailers-only status");
    assert_eq!((status.code(), reason(&status).as_str()), (Code::InvalidArgument, "CONTENT_TYPE_NOT_SUPPORTED"));
    // Not gRPC at all: HTTP 415, as the gRPC protocol says.
    let response = reqwest::Client::new()
        .post(s.url("/lf.a2a.v1.A2AService/GetTask"))
        .header("content-type", "application/json")
        .body(r#"{"id":"x"}"#)
        .send()
        .await
        .expect("response");
    assert_eq!(response.status(), 415);
}

#[tokio::test]
async fn the_extended_card_is_served_to_an_authenticated_caller_with_this_servers_urls() {
    let token = AccessToken::parse(TOKEN).expect("token");
    let operator = accord_types::card::AgentSkill {
        id: "admin".into(),
        name: "admin".into(),
        description: Some("Operator tools.".into()),
        input_modes: vec!["application/json".into()],
        output_modes: vec!["application/json".into()],
        tags: vec!["admin".into()],
        extra: serde_json::Map::new(),
    };
    let auth = AuthConfig::new()
        .bearer(BearerTokens::new().with(&token, "caller", Vec::<String>::new()))
        .extended_card(vec![operator]);
    let runtime = runtime(Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let s = server(config(runtime, ErrorMapping::V1_0_1).auth(auth)).await;
    let mut c = client(&s).await;
    let bearer = format!("Bearer {TOKEN}");
    let card = c
        .get_extended_agent_card(request(pb::GetExtendedAgentCardRequest::default(), &[("authorization", &bearer)]))
        .await
        .expect("the extended card")
        .into_inner();
    assert!(card.skills.iter().any(|skill| skill.id == "admin"), "{:?}", card.skills);
    let grpc = card.supported_interfaces.iter().find(|interface| interface.protocol_binding == "GRPC");
    assert_eq!(grpc.map(|interface| interface.url.clone()), Some(format!("127.0.0.1:{}", s.addr.port())));
    let jsonrpc = card.supported_interfaces.iter().find(|interface| interface.protocol_binding == "JSONRPC");
    assert_eq!(jsonrpc.map(|interface| interface.url.clone()), Some(s.url("/a2a/jsonrpc")));
    // Anonymous: the extended card needs credentials.
    let anonymous = c.get_extended_agent_card(request(pb::GetExtendedAgentCardRequest::default(), &[])).await;
    assert_error(anonymous, Code::Unauthenticated, "UNAUTHENTICATED");
}

/// One HTTP/1.1 exchange on a fresh connection, read until the server closes it.
async fn raw_http(addr: std::net::SocketAddr, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    socket.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut answer))
        .await
        .expect("the server answers and closes")
        .expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

/// The JSON body of a raw HTTP/1.1 answer (not chunked: the refusals have a length).
fn body_of(answer: &str) -> Value {
    let (_, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {answer}"))
}

#[tokio::test]
async fn beyond_the_in_flight_cap_each_face_answers_busy_in_its_own_shape() {
    use accord_server::serve::{ConnectionLimits, Server};
    use std::future::IntoFuture;
    let runtime = runtime(Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let (entered, release) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Notify::new()));
    let (held, freed) = (Arc::clone(&entered), Arc::clone(&release));
    // The one request in flight the server allows: held until the test releases it.
    let hold = axum::routing::get(move || async move {
        held.notify_one();
        freed.notified().await;
        "released"
    });
    let app = agent().router_with(config(runtime, ErrorMapping::V1_0_1)).route("/hold", hold);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let limits = ConnectionLimits { max_in_flight: 1, ..ConnectionLimits::default() };
    let serving = tokio::spawn(Server::new(listener, app).limits(limits).into_future());
    let holder = tokio::spawn(raw_http(addr, "GET /hold HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
    entered.notified().await;

    // gRPC: an UNAVAILABLE status (trailers-only), with the A2A error's ErrorInfo.
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).expect("endpoint");
    let mut grpc = A2aServiceClient::new(endpoint.connect().await.expect("an HTTP/2 connection"));
    let get = pb::GetTaskRequest { id: "nope".into(), ..Default::default() };
    assert_error(grpc.get_task(request(get, &[])).await, Code::Unavailable, "UNAVAILABLE");

    // A2A JSON-RPC: 503 with the JSON-RPC error (-32096) and `Retry-After`; its body was not read,
    // so the HTTP/1.1 connection closes.
    let rpc = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}"#;
    let answer = raw_http(
        addr,
        &format!(
            "POST /a2a/jsonrpc HTTP/1.1\r\nHost: t\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{rpc}",
            rpc.len()
        ),
    )
    .await;
    let lower = answer.to_ascii_lowercase();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(lower.contains("\r\nretry-after: 1\r\n") && lower.contains("\r\nconnection: close\r\n"), "{answer}");
    let body = body_of(&answer);
    assert_eq!((body["jsonrpc"].clone(), body["error"]["code"].clone()), (json!("2.0"), json!(-32096)), "{body}");

    // A2A HTTP+JSON: 503 with the REST error body.
    let answer =
        raw_http(addr, "GET /a2a/rest/tasks/nope HTTP/1.1\r\nHost: t\r\nA2A-Version: 1.0\r\nConnection: close\r\n\r\n")
            .await;
    assert!(
        answer.starts_with("HTTP/1.1 503") && answer.to_ascii_lowercase().contains("\r\nretry-after: 1\r\n"),
        "{answer}"
    );
    assert_eq!(body_of(&answer)["error"]["status"], "UNAVAILABLE", "{answer}");

    // Lucid: 503 `server_busy`.
    let answer = raw_http(
        addr,
        "POST /entrypoints/echo/invoke HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 503") && answer.to_ascii_lowercase().contains("\r\nretry-after: 1\r\n"),
        "{answer}"
    );
    assert_eq!(body_of(&answer)["error"]["code"], "server_busy", "{answer}");

    // A route no face renders (the card): a bare 503 with `Retry-After`.
    let answer =
        raw_http(addr, "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").await;
    let lower = answer.to_ascii_lowercase();
    assert!(answer.starts_with("HTTP/1.1 503") && lower.contains("\r\nretry-after: 1\r\n"), "{answer}");
    assert!(lower.contains("text/plain") && !answer.contains("supportedInterfaces"), "{answer}");

    release.notify_one();
    assert!(holder.await.expect("holder").contains("released"));
    let answer =
        raw_http(addr, "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "the slot is free again: {answer}");
    serving.abort();
}
