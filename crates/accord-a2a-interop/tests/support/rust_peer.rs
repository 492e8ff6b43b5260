//! An echo agent on the official Rust SDK (`a2a-server-lf`), served in process on loopback: the
//! peer of the interop test.

use std::sync::Arc;

use a2a::{
    A2AError, AgentCapabilities, AgentCard, Artifact, Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore, StaticAgentCard};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use serde_json::json;

/// Creates the task, marks it working, adds the artifact `echo: <text>`, completes it, pausing
/// `pause` before each event.
pub(crate) struct Echo {
    pub(crate) pause: std::time::Duration,
}

fn status(state: TaskState) -> TaskStatus {
    TaskStatus { state, message: None, timestamp: None }
}

impl AgentExecutor for Echo {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let text = ctx.message.as_ref().and_then(|message| message.text()).unwrap_or_default().to_owned();
        let (task_id, context_id) = ctx.task_info();
        let mut events = Vec::new();
        if ctx.stored_task.is_none() {
            events.push(StreamResponse::Task(Task {
                id: task_id.clone(),
                context_id: context_id.clone(),
                status: status(TaskState::Submitted),
                artifacts: None,
                history: ctx.message.clone().map(|message| vec![message]),
                metadata: None,
            }));
        }
        let update = |state| {
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                status: status(state),
                metadata: None,
            })
        };
        events.push(update(TaskState::Working));
        events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: task_id.clone(),
            context_id: context_id.clone(),
            artifact: Artifact {
                artifact_id: "echo".into(),
                name: Some("echo".into()),
                description: None,
                parts: vec![Part::text(format!("echo: {text}"))],
                metadata: None,
                extensions: None,
            },
            append: None,
            last_chunk: Some(true),
            metadata: None,
        }));
        events.push(update(TaskState::Completed));
        // A short pause between events keeps a task alive long enough for a subscription or a
        // cancellation sent right after a `returnImmediately` send to find it running.
        let pause = self.pause;
        Box::pin(stream::iter(events).then(move |event| async move {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            Ok(event)
        }))
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let (task_id, context_id) = ctx.task_info();
        Box::pin(stream::iter([Ok(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id,
            context_id,
            status: status(TaskState::Canceled),
            metadata: None,
        }))]))
    }
}

/// Serves the echo agent (pausing `pause` before each event) on `127.0.0.1:<ephemeral>`; returns
/// its base URL.
pub(crate) async fn start_peer(pause: std::time::Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let card: AgentCard = serde_json::from_value(json!({
        "name": "a2a-rust-peer",
        "description": "Echo agent on the official Rust SDK",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": format!("{base}/a2a/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}/a2a/rest"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "Echoes the message", "tags": ["echo"]}],
    }))
    .expect("an SDK card");
    let handler = Arc::new(
        DefaultRequestHandler::new(Echo { pause }, InMemoryTaskStore::new())
            .with_capabilities(AgentCapabilities { streaming: Some(true), ..AgentCapabilities::default() }),
    );
    let app = a2a_server::agent_card::agent_card_router(Arc::new(StaticAgentCard::new(card)))
        .nest("/a2a/jsonrpc", a2a_server::jsonrpc::jsonrpc_router(handler.clone()))
        .nest("/a2a/rest", a2a_server::rest::rest_router(handler));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    base
}
