//! Accord's A2A client falling back to 0.3, against Accord's own server on loopback: a card that
//! offers only 0.3 (the server with 1.0 turned off), and a card that offers 1.0 on a peer that
//! answers `VersionNotSupported`. Every call the client has, over both bindings, through the 0.3
//! conversion; and what 0.3 cannot do.

use std::sync::Arc;
use std::time::Duration;

use accord_client::ClientError;
use accord_client::a2a::{A2aClient, A2aClientOptions, Binding, ProtocolVersion, user_text_message};
use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill, SkillError};
use accord_server::push::PushSettings;
use accord_server::push::guard::WebhookPolicy;
use accord_server::{A2aConfig, AgentRouterExt, Faces, ServerConfig};
use accord_test_support::TestServer;
use accord_types::a2a::{
    A2aErrorKind, AuthenticationInfo, DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig, TaskState,
};
use futures_util::StreamExt;
use serde_json::json;

const BINDINGS: [Binding; 2] = [Binding::JsonRpc, Binding::HttpJson];

fn agent() -> Agent {
    Agent::builder("a2a-client-v03-test")
        .description("An agent for the 0.3 fallback tests")
        .skill(
            Skill::builder("echo")
                .description("Echoes its input")
                .tag("demo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(Skill::builder("wait").description("Waits until cancelled").tag("demo").invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        .build()
        .expect("agent")
}

fn config(runtime: TaskRuntime, a2a: A2aConfig) -> ServerConfig {
    let mut config = ServerConfig::default().tasks(runtime).a2a(Some(a2a));
    config.push = Some(PushSettings::default().policy(WebhookPolicy::default().allow_loopback()));
    config
}

fn runtime(agent: &Agent) -> TaskRuntime {
    TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default())
}

/// A 0.3-only agent: 1.0 off, so its card lists only 0.3 interfaces.
async fn v03_only() -> TestServer {
    let agent = agent();
    TestServer::start(agent.router_with(config(runtime(&agent), A2aConfig { v10: false, ..A2aConfig::default() })))
        .await
}

/// A peer whose card offers 1.0 (and 0.3) but whose endpoints refuse 1.0 with
/// `VersionNotSupported`: the card of a full agent, the A2A routes of a 0.3-only one.
async fn refusing_1_0() -> TestServer {
    let agent = agent();
    let runtime = runtime(&agent);
    let full = Faces::new(&agent, config(runtime.clone(), A2aConfig::default()));
    let old = Faces::new(&agent, config(runtime, A2aConfig { v10: false, ..A2aConfig::default() }));
    TestServer::start(full.cards().merge(old.a2a_jsonrpc()).merge(old.a2a_rest())).await
}

fn options(binding: Binding) -> A2aClientOptions {
    A2aClientOptions {
        reconnect_delay: Duration::from_millis(20),
        stream_idle_timeout: Duration::from_secs(10),
        ..A2aClientOptions::with_bindings([binding.as_str()])
    }
}

fn request(skill: &str, input: serde_json::Value, return_immediately: bool) -> SendMessageRequest {
    let mut message = user_text_message(input.to_string());
    message.metadata = json!({"skillId": skill}).as_object().cloned();
    let configuration = return_immediately
        .then(|| SendMessageConfiguration { return_immediately: Some(true), ..SendMessageConfiguration::default() });
    SendMessageRequest { tenant: None, message, configuration, metadata: None }
}

fn task(response: SendMessageResponse) -> Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("a message, not a task: {message:?}"),
    }
}

/// Every call of the client, against a peer it speaks 0.3 to.
async fn every_call(client: &A2aClient, binding: Binding) {
    let sent = task(client.send_message(request("echo", json!({"text": "hi 0.3"}), false)).await.expect("send"));
    assert_eq!(sent.status.state, TaskState::Completed, "{binding}");
    assert_eq!(sent.artifacts[0].parts[0].content, accord_types::a2a::PartContent::Data(json!({"text": "hi 0.3"})));

    let got = client.get_task(&sent.id, Some(0)).await.expect("get");
    assert_eq!((got.id.as_str(), got.status.state), (sent.id.as_str(), TaskState::Completed));
    assert!(got.history.is_empty(), "historyLength 0 over 0.3 {binding}");

    let mut events =
        client.send_streaming_message(request("echo", json!({"text": "streamed"}), false)).await.expect("stream");
    let mut seen = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), events.next()).await.expect("an event") {
        seen.push(event.expect("event").response);
    }
    assert!(matches!(seen.first(), Some(StreamResponse::Task(_))), "{binding}: {seen:?}");
    assert!(
        matches!(seen.last(), Some(StreamResponse::StatusUpdate(update)) if update.status.state == TaskState::Completed),
        "{binding}: {seen:?}"
    );

    let waiting = task(client.send_message(request("wait", json!({}), true)).await.expect("non-blocking send"));
    assert!(!waiting.status.state.is_terminal(), "{binding}: returnImmediately is blocking: false");
    let mut subscription = client.subscribe(&waiting.id).await.expect("subscribe");
    let first = tokio::time::timeout(Duration::from_secs(10), subscription.next()).await.expect("an event");
    assert_eq!(first.expect("an event").expect("event").task_id(), Some(waiting.id.as_str()));

    let config = TaskPushNotificationConfig {
        tenant: None,
        id: Some("hook-1".into()),
        task_id: Some(waiting.id.clone()),
        url: "http://127.0.0.1:9/hook".into(),
        token: Some("tok".into()),
        authentication: Some(AuthenticationInfo { scheme: "Bearer".into(), credentials: Some("cred".into()) }),
    };
    let saved = client.create_push_config(config).await.expect("create push config");
    assert_eq!((saved.id.as_deref(), saved.task_id.as_deref()), (Some("hook-1"), Some(waiting.id.as_str())));
    assert_eq!(saved.authentication.as_ref().map(|a| a.scheme.as_str()), Some("Bearer"));
    let read = client
        .get_push_config(GetTaskPushNotificationConfigRequest {
            tenant: None,
            id: "hook-1".into(),
            task_id: waiting.id.clone(),
        })
        .await
        .expect("get push config");
    assert_eq!(read.url, "http://127.0.0.1:9/hook");
    let listed = client
        .list_push_configs(ListTaskPushNotificationConfigsRequest {
            tenant: None,
            task_id: waiting.id.clone(),
            page_size: None,
            page_token: None,
        })
        .await
        .expect("list push configs");
    assert_eq!(listed.configs.len(), 1);
    client
        .delete_push_config(DeleteTaskPushNotificationConfigRequest {
            tenant: None,
            id: "hook-1".into(),
            task_id: waiting.id.clone(),
        })
        .await
        .expect("delete push config");

    let canceled = client.cancel_task(&waiting.id).await.expect("cancel");
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // The subscription ends with the canceled update (0.3 ends at `final`).
    let mut last = None;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), subscription.next()).await.expect("events") {
        last = Some(event.expect("event").response);
    }
    assert!(
        matches!(&last, Some(StreamResponse::StatusUpdate(update)) if update.status.state == TaskState::Canceled),
        "{binding}: {last:?}"
    );

    // Failure modes, typed through the 0.3 error shapes.
    let again = client.cancel_task(&waiting.id).await.expect_err("an ended task");
    assert_eq!(again.a2a_kind(), Some(A2aErrorKind::TaskNotCancelable), "{binding}: {again}");
    let missing = client.get_task("no-such-task", None).await.expect_err("no such task");
    assert_eq!(missing.a2a_kind(), Some(A2aErrorKind::TaskNotFound), "{binding}: {missing}");
    let invalid = client
        .send_message(SendMessageRequest {
            tenant: None,
            message: accord_types::a2a::Message { parts: vec![], ..user_text_message("x") },
            configuration: None,
            metadata: None,
        })
        .await
        .expect_err("no parts");
    assert_eq!(invalid.a2a_kind(), Some(A2aErrorKind::InvalidParams), "{binding}: {invalid}");
    let list = client.list_tasks(ListTasksRequest::default()).await.expect_err("0.3 has no ListTasks");
    assert_eq!(list.a2a_kind(), Some(A2aErrorKind::UnsupportedOperation), "{binding}: {list}");
    let card = client.get_extended_card().await.expect_err("no extended card");
    assert_eq!(card.a2a_kind(), Some(A2aErrorKind::ExtendedAgentCardNotConfigured), "{binding}: {card}");
}

#[tokio::test]
async fn a_card_offering_only_0_3_binds_to_0_3() {
    let server = v03_only().await;
    for binding in BINDINGS {
        let client = A2aClient::from_card_url(&server.origin, options(binding)).await.expect("client");
        assert_eq!(client.protocol_version(), ProtocolVersion::V0_3, "{binding}");
        assert_eq!(client.binding(), binding);
        assert_eq!(client.interface().protocol_version, "0.3");
        every_call(&client, binding).await;
    }
}

#[tokio::test]
async fn a_peer_refusing_1_0_is_spoken_to_in_0_3() {
    let server = refusing_1_0().await;
    for binding in BINDINGS {
        let client = A2aClient::from_card_url(&server.origin, options(binding)).await.expect("client");
        assert_eq!(client.protocol_version(), ProtocolVersion::V1_0, "{binding}: the card offers 1.0");
        // The first call is refused in 1.0 and made again in 0.3; the client stays on 0.3.
        let sent = task(client.send_message(request("echo", json!({"text": "retry"}), false)).await.expect("send"));
        assert_eq!(sent.status.state, TaskState::Completed);
        assert_eq!(client.protocol_version(), ProtocolVersion::V0_3, "{binding}");
        assert_eq!(client.interface().protocol_version, "0.3");
        every_call(&client, binding).await;
    }
    // A stream opened first falls back too.
    let client = A2aClient::from_card_url(&server.origin, options(Binding::JsonRpc)).await.expect("client");
    let mut events = client.send_streaming_message(request("echo", json!({"text": "s"}), false)).await.expect("stream");
    assert!(events.next().await.expect("an event").is_ok());
    assert_eq!(client.protocol_version(), ProtocolVersion::V0_3);
}

#[tokio::test]
async fn a_1_0_peer_keeps_1_0_and_no_fallback_hides_other_errors() {
    let agent = agent();
    let server = TestServer::start(agent.router_with(config(runtime(&agent), A2aConfig::default()))).await;
    let client = A2aClient::from_card_url(&server.origin, options(Binding::HttpJson)).await.expect("client");
    assert_eq!(client.protocol_version(), ProtocolVersion::V1_0);
    let missing = client.get_task("no-such-task", None).await.expect_err("no such task");
    assert_eq!(missing.a2a_kind(), Some(A2aErrorKind::TaskNotFound));
    assert_eq!(client.protocol_version(), ProtocolVersion::V1_0, "only VersionNotSupported falls back");
    let listed = client.list_tasks(ListTasksRequest::default()).await;
    assert!(
        !matches!(listed, Err(ClientError::A2a { ref error, .. }) if error.kind == A2aErrorKind::UnsupportedOperation)
    );

    // A card with neither 1.0 nor 0.3: no client.
    let card = accord_client::a2a::parse_card(json!({
        "name": "p", "description": "p", "version": "1", "capabilities": {},
        "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
        "supportedInterfaces": [{"url": "http://127.0.0.1:9/", "protocolBinding": "JSONRPC", "protocolVersion": "0.2"}]
    }))
    .expect("card");
    let refused = A2aClient::from_card(card, A2aClientOptions::default()).expect_err("nothing it speaks");
    assert!(matches!(refused, ClientError::NoCompatibleInterface { .. }), "{refused}");
}

#[test]
fn a_0_3_card_reads_as_0_3_interfaces() {
    let card = accord_client::a2a::parse_card(json!({
        "protocolVersion": "0.3.0", "name": "old", "description": "a 0.3 agent", "version": "1",
        "url": "http://127.0.0.1:9/rpc", "preferredTransport": "JSONRPC",
        "additionalInterfaces": [{"url": "http://127.0.0.1:9/rpc", "transport": "JSONRPC"},
                                 {"url": "http://127.0.0.1:9/rest", "transport": "HTTP+JSON"}],
        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "echo", "tags": []}],
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}, "security": [{"bearer": []}]
    }))
    .expect("a 0.3 card reads");
    let listed: Vec<(&str, &str, &str)> = card
        .supported_interfaces
        .iter()
        .map(|i| (i.url.as_str(), i.protocol_binding.as_str(), i.protocol_version.as_str()))
        .collect();
    assert_eq!(listed, [("http://127.0.0.1:9/rpc", "JSONRPC", "0.3"), ("http://127.0.0.1:9/rest", "HTTP+JSON", "0.3")]);
    let client = A2aClient::from_card(card, A2aClientOptions::with_bindings(["HTTP+JSON"])).expect("client");
    assert_eq!((client.binding(), client.protocol_version()), (Binding::HttpJson, ProtocolVersion::V0_3));
}
