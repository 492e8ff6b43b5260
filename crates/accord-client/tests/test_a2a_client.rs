//! Accord's A2A v1.0 client against Accord's own server on loopback, over the three bindings
//! (gRPC on the HTTP port; `Last-Event-ID` only on the two HTTP ones): binding
//! choice from the real card, the task operations, streams, `Last-Event-ID` resumption (by hand
//! and automatically, through a proxy that cuts streams), and typed errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use accord_client::ClientError;
use accord_client::a2a::{
    A2aClient, A2aClientOptions, A2aEvent, A2aEventStream, Binding, parse_card, user_text_message,
};
use accord_engine::task::{AnonymousAccess, MemoryStore, RuntimeConfig, ServiceConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Message, Outcome, Run, RunEvent, Skill, SkillError};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use accord_types::a2a::{
    A2aErrorKind, DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig, TaskState,
};
use futures_util::StreamExt;
use serde_json::{Value, json};

const BINDINGS: [Binding; 2] = [Binding::JsonRpc, Binding::HttpJson];
/// Every binding, gRPC included.
const ALL_BINDINGS: [Binding; 3] = [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];
const STEPS: usize = 5;

fn agent() -> Agent {
    Agent::builder("a2a-client-test")
        .description("An agent for the A2A client tests")
        .skill(
            Skill::builder("echo")
                .description("Echoes its input")
                .tag("demo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(Skill::builder("steps").description("Says five things, then completes").tag("demo").invoke(
            |run: Run| async move {
                for step in 1..=STEPS {
                    tokio::time::sleep(Duration::from_millis(120)).await;
                    run.emit(RunEvent::Message(Message::agent_text(format!("step {step}")))).await;
                }
                Ok(Outcome::Completed(Completion::new(json!({"steps": STEPS}))))
            },
        ))
        .skill(Skill::builder("wait").description("Waits until cancelled").tag("demo").invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        .build()
        .expect("agent")
}

async fn server() -> TestServer {
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    // These scenarios list tasks without credentials, as the conformance kit does.
    let service = ServiceConfig::default().anonymous(AnonymousAccess::ListShared);
    let a2a = accord_server::A2aConfig { grpc: Some(accord_server::GrpcAddress::SamePort), ..Default::default() };
    TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).task_service(service).a2a(Some(a2a))))
        .await
}

fn options(binding: Binding) -> A2aClientOptions {
    A2aClientOptions {
        reconnect_delay: Duration::from_millis(20),
        stream_idle_timeout: Duration::from_secs(10),
        ..A2aClientOptions::with_bindings([binding.as_str()])
    }
}

async fn client(server: &TestServer, binding: Binding) -> A2aClient {
    A2aClient::from_card_url(&server.origin, options(binding)).await.expect("client")
}

fn request(text: &str, skill: &str, return_immediately: bool) -> SendMessageRequest {
    let mut message = user_text_message(text);
    message.metadata = json!({"skillId": skill}).as_object().cloned();
    let configuration = return_immediately
        .then(|| SendMessageConfiguration { return_immediately: Some(true), ..SendMessageConfiguration::default() });
    SendMessageRequest { tenant: None, message, configuration, metadata: None }
}

fn task_of(response: SendMessageResponse) -> Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("expected a task, got the message {message:?}"),
    }
}

/// Reads a stream to its end (bounded in time), failing on an error item.
async fn collect(mut stream: A2aEventStream) -> Vec<A2aEvent> {
    let mut events = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(20), stream.next()).await.expect("the stream does not stall") {
            Some(Ok(event)) => events.push(event),
            Some(Err(error)) => panic!("stream error after {} events: {error}", events.len()),
            None => return events,
        }
    }
}

fn state_of(event: &A2aEvent) -> Option<TaskState> {
    match &event.response {
        StreamResponse::Task(task) => Some(task.status.state),
        StreamResponse::StatusUpdate(update) => Some(update.status.state),
        _ => None,
    }
}

fn kind(event: &A2aEvent) -> &'static str {
    event.response.member_name()
}

/// The text of a status update's message, e.g. `step 3`.
fn status_text(event: &A2aEvent) -> Option<String> {
    match &event.response {
        StreamResponse::StatusUpdate(update) => {
            update.status.message.as_ref().and_then(|message| message.parts.first()?.as_text().map(str::to_owned))
        }
        _ => None,
    }
}

#[tokio::test]
async fn the_binding_is_chosen_from_accords_real_card() {
    let s = server().await;
    let default = A2aClient::from_card_url(&s.origin, A2aClientOptions::default()).await.expect("client");
    assert_eq!(default.binding(), Binding::JsonRpc);
    assert_eq!(default.interface().url, s.url("/a2a/jsonrpc"));
    assert_eq!(default.interface().protocol_version, "1.0");

    // The Lucid entry comes first on Accord's card; it is not a binding this client speaks.
    let raw: Value =
        reqwest::get(s.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    assert_eq!(raw["supportedInterfaces"][0]["protocolBinding"], "urn:accord:binding:lucid-http");
    let lucid_first = A2aClientOptions::with_bindings(["urn:accord:binding:lucid-http", "HTTP+JSON", "JSONRPC"]);
    let rest = A2aClient::from_card_url(&s.url("/.well-known/agent-card.json"), lucid_first).await.expect("client");
    assert_eq!((rest.binding(), rest.interface().url.as_str()), (Binding::HttpJson, s.url("/a2a/rest").as_str()));

    // gRPC, when asked for, from the card's `GRPC` interface: a host:port on the server's port.
    let grpc = A2aClient::from_card_url(&s.origin, A2aClientOptions::with_bindings(["GRPC"])).await.expect("client");
    assert_eq!((grpc.binding(), grpc.interface().url.clone()), (Binding::Grpc, format!("127.0.0.1:{}", s.addr.port())));
    let custom_only = A2aClient::from_card_url(&s.origin, A2aClientOptions::with_bindings(["urn:none"])).await;
    match custom_only {
        Err(ClientError::NoCompatibleInterface { wanted, offered }) => {
            assert_eq!(wanted, ["urn:none"]);
            assert!(offered.contains(&"JSONRPC@1.0".to_owned()), "{offered:?}");
            assert!(offered.contains(&"GRPC@1.0".to_owned()), "{offered:?}");
        }
        other => panic!("expected NoCompatibleInterface, got {other:?}"),
    }

    // A card with no compatible interface fails at once, without any network call (the URL is
    // unroutable: a connection attempt would take seconds and fail differently).
    let mut card = raw.clone();
    card["supportedInterfaces"] = json!([{"url": "http://192.0.2.1:9/", "protocolBinding": "urn:accord:binding:lucid-http", "protocolVersion": "1.0"}]);
    let card = parse_card(card).expect("card");
    let started = std::time::Instant::now();
    let error = A2aClient::from_card(card, A2aClientOptions::default()).expect_err("no interface");
    assert!(matches!(error, ClientError::NoCompatibleInterface { .. }), "{error}");
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn send_get_list_cancel_and_typed_errors_on_every_binding() {
    let s = server().await;
    for binding in ALL_BINDINGS {
        let client = client(&s, binding).await;
        assert_eq!(client.binding(), binding);

        // Blocking send: the task once completed, with its result artifact.
        let done = task_of(client.send_message(request(r#"{"n": 1}"#, "echo", false)).await.expect("send"));
        assert_eq!(done.status.state, TaskState::Completed, "{binding}");
        assert_eq!(done.artifacts.last().map(|a| a.artifact_id.as_str()), Some("result"));
        assert_eq!(
            done.artifacts.last().and_then(|a| a.parts.first()).map(|p| p.content.clone()),
            Some(accord_types::a2a::PartContent::Data(json!({"n": 1})))
        );

        let got = client.get_task(&done.id, Some(1)).await.expect("get");
        assert_eq!((got.id.as_str(), got.history.len()), (done.id.as_str(), 1));
        let no_history = client.get_task(&done.id, Some(0)).await.expect("get");
        assert!(no_history.history.is_empty());

        // returnImmediately: the task as soon as it exists; then cancel it.
        let running = task_of(client.send_message(request("{}", "wait", true)).await.expect("send"));
        assert!(matches!(running.status.state, TaskState::Submitted | TaskState::Working), "{:?}", running.status);
        let canceled = client.cancel_task(&running.id).await.expect("cancel");
        assert_eq!((canceled.id.as_str(), canceled.status.state), (running.id.as_str(), TaskState::Canceled));

        let listed = client
            .list_tasks(ListTasksRequest {
                page_size: Some(100),
                include_artifacts: Some(true),
                ..ListTasksRequest::default()
            })
            .await
            .expect("list");
        let ids: Vec<&str> = listed.tasks.iter().map(|task| task.id.as_str()).collect();
        assert!(ids.contains(&done.id.as_str()) && ids.contains(&running.id.as_str()), "{ids:?}");
        assert_eq!(listed.next_page_token, "");
        let only_canceled = client
            .list_tasks(ListTasksRequest { status: Some(TaskState::Canceled), ..ListTasksRequest::default() })
            .await
            .expect("list");
        assert!(only_canceled.tasks.iter().all(|task| task.status.state == TaskState::Canceled));
        assert!(only_canceled.tasks.iter().any(|task| task.id == running.id));
        let first_page = client
            .list_tasks(ListTasksRequest { page_size: Some(1), ..ListTasksRequest::default() })
            .await
            .expect("list");
        assert_eq!(first_page.tasks.len(), 1);
        assert!(!first_page.next_page_token.is_empty(), "more than one task: a next page");

        // Typed errors: code and reason, on both bindings.
        let missing = client.get_task("no-such-task", None).await.expect_err("not found");
        assert_eq!(missing.a2a_kind(), Some(A2aErrorKind::TaskNotFound), "{missing}");
        assert_eq!(missing.a2a_error().map(|e| e.code()), Some(-32001));
        let ended = client.cancel_task(&done.id).await.expect_err("not cancelable");
        assert_eq!(ended.a2a_kind(), Some(A2aErrorKind::TaskNotCancelable), "{ended}");
        assert_eq!(ended.a2a_error().map(|e| e.kind.reason()), Some(Some("TASK_NOT_CANCELABLE")));
        let expected_status = match binding {
            Binding::HttpJson => (Some(404), Some(400)),
            _ => (None, None),
        };
        assert_eq!((missing.status(), ended.status()), expected_status, "{binding}");
        let extended = client.get_extended_card().await.expect_err("no extended card");
        assert_eq!(extended.a2a_kind(), Some(A2aErrorKind::UnsupportedOperation));
        // The client manages a task's webhooks: create, read, list, delete.
        let created = client
            .create_push_config(TaskPushNotificationConfig {
                tenant: None,
                id: Some(format!("hook-{binding}")),
                task_id: Some(done.id.clone()),
                url: "https://example.com/hook".into(),
                token: Some("receiver-token".into()),
                authentication: None,
            })
            .await
            .expect("a push config is created");
        assert_eq!(
            (created.id.as_deref(), created.task_id.as_deref()),
            (Some(&*format!("hook-{binding}")), Some(&*done.id))
        );
        let read = client
            .get_push_config(GetTaskPushNotificationConfigRequest {
                tenant: None,
                task_id: done.id.clone(),
                id: format!("hook-{binding}"),
            })
            .await
            .expect("read back");
        assert_eq!((read.url.as_str(), read.token.as_deref()), ("https://example.com/hook", Some("receiver-token")));
        let listed = client
            .list_push_configs(ListTaskPushNotificationConfigsRequest {
                tenant: None,
                task_id: done.id.clone(),
                page_size: None,
                page_token: None,
            })
            .await
            .expect("listed");
        assert_eq!(listed.configs.len(), 1, "{binding}");
        let delete = DeleteTaskPushNotificationConfigRequest {
            tenant: None,
            task_id: done.id.clone(),
            id: format!("hook-{binding}"),
        };
        client.delete_push_config(delete.clone()).await.expect("deleted");
        client.delete_push_config(delete).await.expect("deleting again succeeds");
        let gone = client
            .get_push_config(GetTaskPushNotificationConfigRequest {
                tenant: None,
                task_id: done.id.clone(),
                id: format!("hook-{binding}"),
            })
            .await
            .expect_err("gone");
        assert_eq!(gone.a2a_kind(), Some(A2aErrorKind::TaskNotFound));
    }
}

#[tokio::test]
async fn a_streaming_send_is_in_order_and_ends_completed() {
    let s = server().await;
    for binding in ALL_BINDINGS {
        let client = client(&s, binding).await;
        let events = collect(client.send_streaming_message(request("hi", "steps", false)).await.expect("stream")).await;
        let kinds: Vec<&str> = events.iter().map(kind).collect();
        assert_eq!(kinds.first(), Some(&"task"), "{binding}: {kinds:?}");
        assert_eq!(events.last().and_then(state_of), Some(TaskState::Completed), "{binding}: {kinds:?}");
        assert!(kinds.contains(&"artifactUpdate"), "{kinds:?}");
        let steps: Vec<String> = events.iter().filter_map(status_text).collect();
        assert_eq!(steps, (1..=STEPS).map(|step| format!("step {step}")).collect::<Vec<_>>(), "in generation order");
        // Ids are `N` or `N:k` (the k-th of several events of one log entry), in order.
        let ids: Vec<(u64, u64)> = events
            .iter()
            .filter_map(|event| {
                let id = event.id.as_deref()?;
                Some(match id.split_once(':') {
                    Some((sequence, part)) => (sequence.parse().ok()?, part.parse().ok()?),
                    None => (id.parse().ok()?, u64::MAX),
                })
            })
            .collect();
        // gRPC has no event ids; the HTTP bindings keep each event's SSE id.
        let expected = if binding == Binding::Grpc { 0 } else { events.len() };
        assert_eq!(ids.len(), expected, "{binding}: every SSE event keeps its id");
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
        let task_id = events[0].task_id().expect("id").to_owned();
        assert!(events.iter().all(|event| event.task_id() == Some(task_id.as_str())));

        // A finished task cannot be subscribed to.
        let refused = client.subscribe(&task_id).await.err().expect("refused");
        assert_eq!(refused.a2a_kind(), Some(A2aErrorKind::UnsupportedOperation), "{refused}");
    }
}

#[tokio::test]
async fn subscribe_starts_with_the_current_task_and_resumes_after_the_last_event_id() {
    let s = server().await;
    for binding in BINDINGS {
        let client = client(&s, binding).await;
        let task = task_of(client.send_message(request("go", "steps", true)).await.expect("send"));
        let mut stream = client.subscribe(&task.id).await.expect("subscribe");
        let mut seen = Vec::new();
        while seen.len() < 3 {
            seen.push(stream.next().await.expect("an event").expect("not an error"));
        }
        // Hang up mid-task, then resume after the last event seen.
        drop(stream);
        let StreamResponse::Task(first) = &seen[0].response else { panic!("the first event is {}", kind(&seen[0])) };
        assert_eq!(first.id, task.id);
        let last_id = seen.last().and_then(|event| event.id.clone()).expect("an SSE id");
        let rest = collect(client.subscribe_after(&task.id, Some(&last_id)).await.expect("resume")).await;
        assert!(rest.iter().all(|event| kind(event) != "task"), "a resumed stream sends no new snapshot");
        let mut resumed = seen.clone();
        resumed.extend(rest);
        assert_eq!(resumed.last().and_then(state_of), Some(TaskState::Completed));

        // Nothing lost, nothing repeated: the same updates as one uninterrupted read of the log.
        let snapshot_id = seen[0].id.clone().expect("snapshot id");
        let reference = collect(client.subscribe_after(&task.id, Some(&snapshot_id)).await.expect("replay")).await;
        let responses = |events: &[A2aEvent]| events.iter().map(|event| event.response.clone()).collect::<Vec<_>>();
        assert_eq!(responses(&resumed[1..]), responses(&reference), "{binding}");
        let steps: Vec<String> = resumed.iter().filter_map(status_text).collect();
        assert_eq!(steps.len(), STEPS, "{steps:?}");
    }
}

/// A proxy in front of Accord's server that ends every event stream opened without
/// `Last-Event-ID` after `cut_after` events, and every resumed one after `cut_resumed_after`
/// events (when set): a connection that drops mid-task, as the client sees it. With
/// `refuse_post_subscribe`, a REST `POST …:subscribe` gets 405, as on a server that routes the
/// proto's `GET` only.
struct CuttingProxy {
    server: TestServer,
    cuts: Arc<AtomicUsize>,
    resumes: Arc<AtomicUsize>,
    get_subscribes: Arc<AtomicUsize>,
}

async fn cutting_proxy(upstream: String, cut_after: usize, cut_resumed_after: Option<usize>) -> CuttingProxy {
    proxy(upstream, cut_after, cut_resumed_after, false).await
}

async fn proxy(
    upstream: String,
    cut_after: usize,
    cut_resumed_after: Option<usize>,
    refuse_post_subscribe: bool,
) -> CuttingProxy {
    use axum::body::Body;
    use axum::extract::Request;
    use axum::response::Response;

    let cuts = Arc::new(AtomicUsize::new(0));
    let resumes = Arc::new(AtomicUsize::new(0));
    let get_subscribes = Arc::new(AtomicUsize::new(0));
    let http = reqwest::Client::new();
    let handler = {
        let (cuts, resumes, get_subscribes) = (cuts.clone(), resumes.clone(), get_subscribes.clone());
        move |request: Request| {
            let (http, upstream, cuts, resumes) = (http.clone(), upstream.clone(), cuts.clone(), resumes.clone());
            let get_subscribes = get_subscribes.clone();
            async move {
                let (parts, body) = request.into_parts();
                let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/").to_owned();
                if parts.uri.path().ends_with(":subscribe") {
                    if parts.method == axum::http::Method::POST && refuse_post_subscribe {
                        return Response::builder().status(405).body(Body::empty()).expect("response");
                    }
                    if parts.method == axum::http::Method::GET {
                        get_subscribes.fetch_add(1, Ordering::SeqCst);
                    }
                }
                let body = axum::body::to_bytes(body, 1 << 20).await.expect("body");
                let mut forward = http.request(parts.method.clone(), format!("{upstream}{path}")).body(body);
                for name in ["content-type", "a2a-version", "accept", "last-event-id"] {
                    if let Some(value) = parts.headers.get(name) {
                        forward = forward.header(name, value.clone());
                    }
                }
                let resumed = parts.headers.contains_key("last-event-id");
                if resumed {
                    resumes.fetch_add(1, Ordering::SeqCst);
                }
                let response = forward.send().await.expect("upstream");
                let status = response.status();
                let content_type = response.headers().get("content-type").cloned();
                let is_sse = content_type
                    .as_ref()
                    .and_then(|value| value.to_str().ok())
                    .is_some_and(|value| value.starts_with("text/event-stream"));
                let mut builder = Response::builder().status(status.as_u16());
                if let Some(content_type) = content_type {
                    builder = builder.header("content-type", content_type);
                }
                let cut_after = if resumed { cut_resumed_after } else { Some(cut_after) };
                let Some(cut_after) = cut_after.filter(|_| is_sse) else {
                    return builder.body(Body::from_stream(response.bytes_stream())).expect("response");
                };
                cuts.fetch_add(1, Ordering::SeqCst);
                // Pass whole frames through until `cut_after` data frames went out, then end.
                let frames = futures_util::stream::unfold(
                    (response.bytes_stream(), String::new(), 0usize),
                    move |(mut upstream, mut buffer, mut sent)| async move {
                        loop {
                            if sent >= cut_after {
                                return None;
                            }
                            if let Some(end) = buffer.find("\n\n") {
                                let frame: String = buffer.drain(..end + 2).collect();
                                if frame.lines().any(|line| line.starts_with("data:")) {
                                    sent += 1;
                                }
                                return Some((Ok::<_, std::io::Error>(frame), (upstream, buffer, sent)));
                            }
                            match upstream.next().await {
                                Some(Ok(chunk)) => buffer.push_str(&String::from_utf8_lossy(&chunk)),
                                _ => return None,
                            }
                        }
                    },
                );
                builder.body(Body::from_stream(frames)).expect("response")
            }
        }
    };
    let server = TestServer::start(axum::Router::new().fallback(handler)).await;
    CuttingProxy { server, cuts, resumes, get_subscribes }
}

/// The card of `s`, with its A2A interfaces moved to the proxy.
async fn card_via(s: &TestServer, proxy: &TestServer) -> accord_types::a2a::AgentCard {
    let text = reqwest::get(s.url("/.well-known/agent-card.json")).await.expect("card").text().await.expect("text");
    parse_card(serde_json::from_str(&text.replace(&s.origin, &proxy.origin)).expect("json")).expect("card")
}

#[tokio::test]
async fn a_dropped_stream_reconnects_with_last_event_id_and_loses_nothing() {
    let s = server().await;
    let proxy = cutting_proxy(s.origin.clone(), 3, None).await;
    let card = card_via(&s, &proxy.server).await;
    for binding in BINDINGS {
        let client = A2aClient::from_card(card.clone(), options(binding)).expect("client");
        let direct = A2aClient::from_card_url(&s.origin, options(binding)).await.expect("client");
        let (cuts, resumes) = (proxy.cuts.load(Ordering::SeqCst), proxy.resumes.load(Ordering::SeqCst));

        // A streaming send whose connection drops after three events.
        let events = collect(client.send_streaming_message(request("go", "steps", false)).await.expect("stream")).await;
        assert_eq!(proxy.cuts.load(Ordering::SeqCst), cuts + 1, "the proxy cut the stream");
        assert_eq!(proxy.resumes.load(Ordering::SeqCst), resumes + 1, "one reconnection with Last-Event-ID");
        assert_eq!(kind(&events[0]), "task");
        assert_eq!(events.iter().filter(|event| kind(event) == "task").count(), 1, "no second snapshot");
        assert_eq!(events.last().and_then(state_of), Some(TaskState::Completed), "{binding}");
        let task_id = events[0].task_id().expect("id").to_owned();
        let snapshot_id = events[0].id.clone().expect("id");
        let reference = collect(direct.subscribe_after(&task_id, Some(&snapshot_id)).await.expect("replay")).await;
        let responses = |events: &[A2aEvent]| events.iter().map(|event| event.response.clone()).collect::<Vec<_>>();
        assert_eq!(responses(&events[1..]), responses(&reference), "{binding}: nothing lost or repeated");

        // A subscription whose connection drops the same way.
        let task = task_of(direct.send_message(request("go", "steps", true)).await.expect("send"));
        let events = collect(client.subscribe(&task.id).await.expect("subscribe")).await;
        assert_eq!(proxy.resumes.load(Ordering::SeqCst), resumes + 2);
        let steps: Vec<String> = events.iter().filter_map(status_text).collect();
        assert_eq!(steps, (1..=STEPS).map(|step| format!("step {step}")).collect::<Vec<_>>(), "{binding}");
        assert_eq!(events.last().and_then(state_of), Some(TaskState::Completed));
    }
}

#[tokio::test]
async fn reconnection_gives_up_after_the_allowed_attempts() {
    let s = server().await;
    // The first connection ends after one event, every resumed one at once: no progress.
    let proxy = cutting_proxy(s.origin.clone(), 1, Some(0)).await;
    let card = card_via(&s, &proxy.server).await;
    let options = A2aClientOptions { max_reconnects: 2, ..options(Binding::JsonRpc) };
    let client = A2aClient::from_card(card, options).expect("client");
    let direct = client_direct(&s).await;
    let task = task_of(direct.send_message(request("{}", "wait", true)).await.expect("send"));
    let mut stream = client.subscribe(&task.id).await.expect("subscribe");
    let mut events = 0;
    let error = loop {
        match tokio::time::timeout(Duration::from_secs(20), stream.next()).await.expect("no stall") {
            Some(Ok(_)) => events += 1,
            Some(Err(error)) => break error,
            None => panic!("the stream ended without an error"),
        }
    };
    match error {
        ClientError::StreamInterrupted { task_id, attempts, .. } => {
            assert_eq!((task_id.as_deref(), attempts), (Some(task.id.as_str()), 2));
        }
        other => panic!("expected StreamInterrupted, got {other}"),
    }
    assert_eq!(events, 1, "the snapshot, then nothing");
    assert_eq!(proxy.resumes.load(Ordering::SeqCst), 2, "two reconnections with Last-Event-ID");
    assert!(stream.next().await.is_none(), "the stream ends after its error");
    direct.cancel_task(&task.id).await.expect("cancel");
}

async fn client_direct(s: &TestServer) -> A2aClient {
    client(s, Binding::JsonRpc).await
}

#[tokio::test]
async fn a_rest_subscribe_refused_as_post_is_retried_as_get() {
    let s = server().await;
    let proxy = proxy(s.origin.clone(), usize::MAX, None, true).await;
    let client = A2aClient::from_card(card_via(&s, &proxy.server).await, options(Binding::HttpJson)).expect("client");
    let task = task_of(client.send_message(request("go", "steps", true)).await.expect("send"));
    let events = collect(client.subscribe(&task.id).await.expect("subscribe")).await;
    assert_eq!(proxy.get_subscribes.load(Ordering::SeqCst), 1, "the GET route was used");
    assert_eq!(kind(&events[0]), "task");
    assert_eq!(events.last().and_then(state_of), Some(TaskState::Completed));
}
