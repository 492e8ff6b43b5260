//! Accord's A2A client over gRPC against the official Rust SDK's gRPC server (`a2a-grpc`), in
//! process on loopback: an agent on `a2a-server-lf` whose card lists only a `GRPC` interface
//! (`host:port`), every check of [`accord_a2a_interop::check_peer`], then the gRPC specifics —
//! event order, subscribing to a running task, metadata and tenant, errors and the message size.

use std::sync::Arc;
use std::time::Duration;

use a2a::{
    A2AError, AgentCapabilities, AgentCard, Artifact, Part, StreamResponse as SdkStreamResponse, Task as SdkTask,
    TaskArtifactUpdateEvent, TaskState as SdkTaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_pb::proto::a2a_service_server::A2aServiceServer;
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore, StaticAgentCard};
use accord_client::ClientError;
use accord_client::a2a::{
    A2aClient, A2aClientOptions, A2aEvent, Binding, MAX_RESPONSE_BYTES, ProtocolVersion, user_text_message,
};
use accord_types::a2a::{
    A2aErrorKind, ListTasksRequest, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    Task, TaskState,
};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use serde_json::json;

/// The bearer token the peer requires (as `authorization` metadata).
const TOKEN: &str = "Bearer grpc-peer-token";

/// The tenant of the card's gRPC interface.
const TENANT: &str = "acme";

/// The echo agent: `wait …` works until canceled; `big N` answers with an artifact of N bytes;
/// any other text becomes `echo: <text>`. Every event is preceded by `pause`. The artifact is
/// named after the request's tenant.
struct Agent {
    pause: Duration,
}

fn status(state: SdkTaskState) -> TaskStatus {
    TaskStatus { state, message: None, timestamp: None }
}

impl AgentExecutor for Agent {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<SdkStreamResponse, A2AError>> {
        let text = ctx.message.as_ref().and_then(|message| message.text()).unwrap_or_default().to_owned();
        let (task_id, context_id) = ctx.task_info();
        let tenant = ctx.tenant.clone().unwrap_or_else(|| "no-tenant".into());
        let mut events = Vec::new();
        if ctx.stored_task.is_none() {
            events.push(SdkStreamResponse::Task(SdkTask {
                id: task_id.clone(),
                context_id: context_id.clone(),
                status: status(SdkTaskState::Submitted),
                artifacts: None,
                history: ctx.message.clone().map(|message| vec![message]),
                metadata: None,
            }));
        }
        let update = |state| {
            SdkStreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                status: status(state),
                metadata: None,
            })
        };
        events.push(update(SdkTaskState::Working));
        let waits = text.starts_with("wait");
        let body = match text.strip_prefix("big ").and_then(|size| size.parse::<usize>().ok()) {
            Some(size) => "x".repeat(size),
            None => format!("echo: {text}"),
        };
        events.push(SdkStreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: task_id.clone(),
            context_id: context_id.clone(),
            artifact: Artifact {
                artifact_id: "echo".into(),
                name: Some(tenant),
                description: None,
                parts: vec![Part::text(body)],
                metadata: None,
                extensions: None,
            },
            append: None,
            last_chunk: Some(true),
            metadata: None,
        }));
        if !waits {
            events.push(update(SdkTaskState::Completed));
        }
        let pause = self.pause;
        let events = stream::iter(events).then(move |event| async move {
            tokio::time::sleep(pause).await;
            Ok(event)
        });
        if waits {
            // Works until canceled: the stream stays open without a terminal state.
            Box::pin(events.chain(stream::pending()))
        } else {
            Box::pin(events)
        }
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<SdkStreamResponse, A2AError>> {
        let (task_id, context_id) = ctx.task_info();
        Box::pin(stream::iter([Ok(SdkStreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id,
            context_id,
            status: status(SdkTaskState::Canceled),
            metadata: None,
        }))]))
    }
}

struct Peer {
    /// The base URL of the card (HTTP).
    base: String,
    /// The gRPC interface, `127.0.0.1:<port>`.
    grpc: String,
}

/// Serves the agent's gRPC service on one loopback port and its card (listing only the gRPC
/// interface) over HTTP on another. When `secured`, the interface has tenant [`TENANT`] and the
/// handler requires the `authorization` metadata [`TOKEN`] and `a2a-version: 1.0`.
async fn start_peer(pause: Duration, secured: bool) -> Peer {
    let grpc_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let grpc = grpc_listener.local_addr().expect("address").to_string();
    let card_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", card_listener.local_addr().expect("address"));
    let card: AgentCard = serde_json::from_value(json!({
        "name": "a2a-rust-grpc-peer",
        "description": "Echo agent on the official Rust SDK's gRPC binding",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": grpc, "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": secured.then_some(TENANT)},
        ],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "Echoes the message", "tags": ["echo"]}],
    }))
    .expect("an SDK card");
    let authorizer = move |params: &a2a_server::ServiceParams, _task: Option<&str>| {
        let has = |key: &str, value: &str| params.get(key).is_some_and(|values| values.iter().any(|v| v == value));
        if !secured || (has("authorization", TOKEN) && has("a2a-version", "1.0")) {
            Ok(())
        } else {
            Err(A2AError::unsupported_operation(format!("refused: metadata {params:?}")))
        }
    };
    let handler = Arc::new(
        DefaultRequestHandler::new(Agent { pause }, InMemoryTaskStore::new())
            .with_capabilities(AgentCapabilities { streaming: Some(true), ..AgentCapabilities::default() })
            .with_authorizer(authorizer),
    );
    let service = A2aServiceServer::new(a2a_grpc::GrpcHandler::new(handler));
    tokio::spawn(async move {
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(grpc_listener);
        let _ = tonic::transport::Server::builder().add_service(service).serve_with_incoming(incoming).await;
    });
    let app = a2a_server::agent_card::agent_card_router(Arc::new(StaticAgentCard::new(card)));
    tokio::spawn(async move {
        let _ = axum::serve(card_listener, app).await;
    });
    Peer { base, grpc }
}

fn options() -> A2aClientOptions {
    let mut options = A2aClientOptions::with_bindings(["GRPC"]);
    options.headers.insert("authorization", TOKEN.parse().expect("header"));
    options.request_timeout = Duration::from_secs(30);
    options
}

async fn client(peer: &Peer) -> A2aClient {
    let client = A2aClient::from_card_url(&peer.base, options()).await.expect("client");
    assert_eq!((client.binding(), client.protocol_version()), (Binding::Grpc, ProtocolVersion::V1_0));
    assert_eq!(client.interface().url, peer.grpc);
    client
}

fn request(text: &str, return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        tenant: None,
        message: user_text_message(text),
        configuration: return_immediately.then(|| SendMessageConfiguration {
            return_immediately: Some(true),
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

async fn send_task(client: &A2aClient, text: &str, return_immediately: bool) -> Task {
    match client.send_message(request(text, return_immediately)).await.expect("send") {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("a message where a task was expected: {message:?}"),
    }
}

fn artifact_text(task: &Task) -> Option<&str> {
    task.artifacts.first().and_then(|artifact| artifact.parts.first()).and_then(|part| part.as_text())
}

/// A short description of an event, for order checks.
fn shape(event: &A2aEvent) -> String {
    assert_eq!(event.id, None, "gRPC events have no id");
    match &event.response {
        StreamResponse::Task(task) => format!("task:{}", task.status.state),
        StreamResponse::Message(_) => "message".into(),
        StreamResponse::StatusUpdate(update) => format!("status:{}", update.status.state),
        StreamResponse::ArtifactUpdate(update) => format!("artifact:{}", update.artifact.artifact_id),
    }
}

async fn collect(events: accord_client::a2a::A2aEventStream) -> Vec<A2aEvent> {
    tokio::time::timeout(Duration::from_secs(20), events.map(|event| event.expect("event")).collect::<Vec<_>>())
        .await
        .expect("the stream ends")
}

#[tokio::test]
async fn every_check_passes_against_the_official_rust_sdk_over_grpc() {
    // `check_peer` sends no token: this peer has no authorizer.
    let peer = start_peer(Duration::from_millis(100), false).await;
    let checks = accord_a2a_interop::check_peer(&peer.base, "GRPC").await;
    let lines: Vec<String> = checks.iter().map(|check| format!("{} ({})", check.line(), check.detail)).collect();
    eprintln!("{}", lines.join("\n"));
    assert!(checks.len() >= 10, "{lines:?}");
    assert!(checks.iter().all(|check| check.passed && check.binding == "GRPC"), "{}", lines.join("\n"));
}

#[tokio::test]
async fn send_get_list_and_cancel_over_grpc_with_metadata_and_tenant() {
    let peer = start_peer(Duration::from_millis(20), true).await;
    let client = client(&peer).await;

    let task = send_task(&client, "hello", false).await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(artifact_text(&task), Some("echo: hello"));
    assert_eq!(task.artifacts[0].name.as_deref(), Some(TENANT), "the interface's tenant reached the agent");

    let got = client.get_task(&task.id, None).await.expect("get");
    assert_eq!((got.id.as_str(), got.status.state), (task.id.as_str(), TaskState::Completed));
    assert_eq!(artifact_text(&got), Some("echo: hello"));

    let listed = client.list_tasks(ListTasksRequest { page_size: Some(50), ..ListTasksRequest::default() }).await;
    let listed = listed.expect("list");
    assert!(listed.tasks.iter().any(|listed| listed.id == task.id), "{:?}", listed.tasks);

    let waiting = send_task(&client, "wait for me", true).await;
    assert!(!waiting.status.state.is_terminal(), "{}", waiting.status.state);
    let canceled = client.cancel_task(&waiting.id).await.expect("cancel");
    assert_eq!((canceled.id.as_str(), canceled.status.state), (waiting.id.as_str(), TaskState::Canceled));
    let again = client.get_task(&waiting.id, None).await.expect("get");
    assert_eq!(again.status.state, TaskState::Canceled);

    let done = client.cancel_task(&task.id).await.expect_err("a completed task");
    assert_eq!(done.a2a_kind(), Some(A2aErrorKind::TaskNotCancelable), "{done}");

    // Without the token, the peer's authorizer refuses: the metadata is what carried it.
    let card = client.card().clone();
    let anonymous = A2aClient::from_card(card, A2aClientOptions::with_bindings(["GRPC"])).expect("client");
    let refused = anonymous.get_task(&task.id, None).await.expect_err("no token");
    assert_eq!(refused.a2a_kind(), Some(A2aErrorKind::UnsupportedOperation), "{refused}");
}

#[tokio::test]
async fn streams_arrive_in_order_and_subscriptions_follow_a_running_task() {
    let peer = start_peer(Duration::from_millis(150), true).await;
    let client = client(&peer).await;

    let events = collect(client.send_streaming_message(request("stream me", false)).await.expect("stream")).await;
    let shapes: Vec<String> = events.iter().map(shape).collect();
    let expected =
        ["task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact:echo", "status:TASK_STATE_COMPLETED"];
    assert_eq!(shapes, expected.map(String::from).to_vec(), "{shapes:?}");
    let task_id = events[0].task_id().expect("task id").to_owned();
    assert!(events.iter().all(|event| event.task_id() == Some(task_id.as_str())));
    let StreamResponse::ArtifactUpdate(update) = &events[2].response else { panic!("an artifact") };
    assert_eq!(update.artifact.parts[0].as_text(), Some("echo: stream me"));

    // A task that works until canceled: subscribe while it runs, cancel, see it end.
    let waiting = send_task(&client, "wait", true).await;
    let mut subscription = client.subscribe(&waiting.id).await.expect("subscribe");
    let first = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a first event")
        .expect("an item")
        .expect("an event");
    assert_eq!(first.task_id(), Some(waiting.id.as_str()));
    let canceler = client.clone();
    let id = waiting.id.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        canceler.cancel_task(&id).await.expect("cancel");
    });
    let rest = collect(subscription).await;
    let last = rest.last().map(shape).unwrap_or_else(|| shape(&first));
    assert!(last.ends_with("TASK_STATE_CANCELED"), "{last}: {:?}", rest.iter().map(shape).collect::<Vec<_>>());

    // Subscribing to a finished task: the SDK refuses (the task is terminal) or sends its snapshot.
    match client.subscribe(&task_id).await {
        Ok(events) => {
            let events = collect(events).await;
            assert!(events.last().map(shape).is_some_and(|last| last.ends_with("TASK_STATE_COMPLETED")));
        }
        Err(error) => assert_eq!(error.a2a_kind(), Some(A2aErrorKind::UnsupportedOperation), "{error}"),
    }
}

#[tokio::test]
async fn errors_and_message_sizes_over_grpc() {
    let peer = start_peer(Duration::from_millis(1), true).await;
    let client = client(&peer).await;

    let missing = client.get_task("no-such-task", None).await.expect_err("not found");
    assert_eq!(missing.a2a_kind(), Some(A2aErrorKind::TaskNotFound), "{missing}");
    assert_eq!(missing.status(), None);
    let missing = client.subscribe("no-such-task").await.err().expect("not found");
    assert_eq!(missing.a2a_kind(), Some(A2aErrorKind::TaskNotFound), "{missing}");

    // Over gRPC's default 4 MiB and under the client's limit: read.
    let five_mib = 5 * 1024 * 1024;
    let big = send_task(&client, &format!("big {five_mib}"), false).await;
    assert_eq!(artifact_text(&big).map(str::len), Some(five_mib));
    // Over the client's limit: refused as an unreadable answer, not a peer error.
    let too_big = client.send_message(request(&format!("big {}", MAX_RESPONSE_BYTES + 1024), false)).await;
    match too_big {
        Err(ClientError::InvalidResponse { reason, .. }) => assert!(reason.contains("exceeds"), "{reason}"),
        other => panic!("an oversized answer must be refused: {other:?}"),
    }
    let mut events = client
        .send_streaming_message(request(&format!("big {}", MAX_RESPONSE_BYTES + 1024), false))
        .await
        .expect("stream");
    let mut failure = None;
    while let Some(item) = tokio::time::timeout(Duration::from_secs(20), events.next()).await.expect("item") {
        if let Err(error) = item {
            failure = Some(error);
        }
    }
    assert!(matches!(failure, Some(ClientError::InvalidResponse { .. })), "{failure:?}");

    // Nothing listens: a transport error, after no more than the connect attempt.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = closed.local_addr().expect("address").to_string();
    drop(closed);
    let mut card = client.card().clone();
    card.supported_interfaces[0].url = format!("http://{address}");
    let nowhere = A2aClient::from_card(card, options()).expect("client");
    let error = nowhere.get_task("x", None).await.expect_err("no server");
    assert!(matches!(error, ClientError::GrpcTransport { .. }), "{error:?}");

    // A card whose gRPC URL has a path is refused before any call.
    let mut card = client.card().clone();
    card.supported_interfaces[0].url = format!("http://{}/a2a", peer.grpc);
    let error = A2aClient::from_card(card, options()).expect_err("a path");
    assert!(matches!(error, ClientError::InvalidUrl { .. }), "{error}");
}

/// A TCP proxy to `upstream` whose open connections can be cut (new ones are still accepted).
struct Proxy {
    address: String,
    connections: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(upstream: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let connections: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let open = Arc::clone(&connections);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let connection = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                open.lock().expect("lock").push(connection);
            }
        });
        Self { address, connections }
    }

    /// Drops every open connection.
    fn cut(&self) {
        for connection in self.connections.lock().expect("lock").drain(..) {
            connection.abort();
        }
    }
}

#[tokio::test]
async fn a_dropped_grpc_stream_resubscribes_and_ends_with_the_task() {
    let peer = start_peer(Duration::from_millis(400), true).await;
    let proxy = Proxy::start(peer.grpc.clone()).await;
    let mut card = client(&peer).await.card().clone();
    card.supported_interfaces[0].url = proxy.address.clone();
    let client =
        A2aClient::from_card(card, A2aClientOptions { reconnect_delay: Duration::from_millis(50), ..options() })
            .expect("client");

    let mut events = client.send_streaming_message(request("survive a cut", false)).await.expect("stream");
    let first = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("a first event")
        .expect("an item")
        .expect("an event");
    assert_eq!(shape(&first), "task:TASK_STATE_SUBMITTED");
    proxy.cut();
    let rest = collect(events).await;
    let shapes: Vec<String> = rest.iter().map(shape).collect();
    // The resubscription starts with the task's snapshot, then the updates still to come.
    assert!(shapes.first().is_some_and(|shape| shape.starts_with("task:")), "{shapes:?}");
    assert_eq!(shapes.last().map(String::as_str), Some("status:TASK_STATE_COMPLETED"), "{shapes:?}");
    assert!(rest.iter().all(|event| event.task_id() == first.task_id()), "{shapes:?}");
    let task = client.get_task(first.task_id().expect("id"), None).await.expect("get");
    assert_eq!(artifact_text(&task), Some("echo: survive a cut"));

    // With reconnection off, the cut ends the stream with `StreamInterrupted`.
    let mut card = client.card().clone();
    card.supported_interfaces[0].url = proxy.address.clone();
    let client = A2aClient::from_card(card, A2aClientOptions { max_reconnects: 0, ..options() }).expect("client");
    let mut events = client.send_streaming_message(request("no second chance", false)).await.expect("stream");
    let first = events.next().await.expect("an item").expect("an event");
    assert_eq!(shape(&first), "task:TASK_STATE_SUBMITTED");
    proxy.cut();
    let last = tokio::time::timeout(Duration::from_secs(10), events.next()).await.expect("an item").expect("an item");
    assert!(matches!(last, Err(ClientError::StreamInterrupted { attempts: 0, .. })), "{last:?}");
}
