//! `sdk-echo`: an echo agent on the official Rust A2A SDK (`a2a-server-lf`, `a2a-lf`), the
//! server the load harness compares Accord with.
//!
//! ```sh
//! sdk-echo --port 0
//! ```
//!
//! Serves the card at `/.well-known/agent-card.json`, A2A v1.0 JSON-RPC at `/a2a/jsonrpc` and
//! HTTP+JSON at `/a2a/rest`, on the SDK's in-memory task store. Each message becomes a task that
//! is created, marked working, given the artifact `echo: <text>` and completed, with no pause:
//! the same work as Accord's `echo` skill. A message whose text is `{"seconds": N}` is instead
//! marked working and completed N seconds later, as Accord's `slow` skill does: the harness
//! opens its subscribers on such a task. A message whose text is `{"count": N, "interval_ms": M}`
//! streams N artifact chunks `tick 1` … `tick N` (M ms apart) before completing, as Accord's
//! `ticks` skill streams its deltas: the harness's a2a-deltas scenario. With `--no-streaming`
//! the card says it does not stream, so a client polls. Prints `sdk-echo listening on http://127.0.0.1:<port>`
//! once it accepts connections.

/// With the feature `mimalloc`, the allocator the `accord` binary has.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use a2a::{
    A2AError, AgentCapabilities, AgentCard, Artifact, Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore, StaticAgentCard};
use clap::Parser;
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use serde_json::json;

/// Command line of `sdk-echo`.
#[derive(Debug, Parser)]
#[command(name = "sdk-echo", about = "Echo agent on the official Rust A2A SDK, for the load harness.")]
struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Set TCP_NODELAY on accepted connections. Off by default, like `axum::serve` and so like
    /// `accord serve`: then a response written in several pieces (an SSE stream) waits on
    /// Nagle's algorithm and the client's delayed ACK between pieces.
    #[arg(long)]
    nodelay: bool,
    /// Say `capabilities.streaming: false` on the card: a client then sends and polls (the
    /// server still answers a stream if asked).
    #[arg(long)]
    no_streaming: bool,
}

/// The echo executor: every event of a task at once, no pause.
struct Echo;

fn status(state: TaskState) -> TaskStatus {
    TaskStatus { state, message: None, timestamp: None }
}

impl AgentExecutor for Echo {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let text = ctx.message.as_ref().and_then(|message| message.text()).unwrap_or_default().to_owned();
        let (task_id, context_id) = ctx.task_info();
        let status_event = |state| {
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                status: status(state),
                metadata: None,
            })
        };
        let mut events = Vec::with_capacity(4);
        if ctx.stored_task.is_none() {
            // The SDK wants the task itself before any update of it.
            events.push(StreamResponse::Task(Task {
                id: task_id.clone(),
                context_id: context_id.clone(),
                status: status(TaskState::Submitted),
                artifacts: None,
                history: ctx.message.clone().map(|message| vec![message]),
                metadata: None,
            }));
        }
        events.push(status_event(TaskState::Working));
        if let Some(seconds) = slow_seconds(&text) {
            // A slow task: working, then completed after the pause. The harness's memory scenario
            // opens its subscribers on one.
            let completed = status_event(TaskState::Completed);
            let end = stream::once(async move {
                tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
                Ok(completed)
            });
            return Box::pin(stream::iter(events.into_iter().map(Ok)).chain(end));
        }
        if let Some((count, interval)) = ticks(&text) {
            // Streamed text: one artifact chunk a delta (`tick 1`, `tick 2`, …), as Accord's
            // `ticks` skill emits deltas; the harness's a2a-deltas scenario reads them.
            let completed = stream::once(std::future::ready(Ok(status_event(TaskState::Completed))));
            let (chunk_task, chunk_context) = (task_id.clone(), context_id.clone());
            let chunk = move |tick: u64| {
                StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: chunk_task.clone(),
                    context_id: chunk_context.clone(),
                    artifact: Artifact {
                        artifact_id: "stream".into(),
                        name: Some("stream".into()),
                        description: None,
                        parts: vec![Part::text(format!("tick {tick}"))],
                        metadata: None,
                        extensions: None,
                    },
                    append: Some(tick > 1),
                    last_chunk: Some(tick == count),
                    metadata: None,
                })
            };
            let chunks = stream::iter(1..=count).then(move |tick| {
                let event = chunk(tick);
                async move {
                    if tick > 1 && !interval.is_zero() {
                        tokio::time::sleep(interval).await;
                    }
                    Ok(event)
                }
            });
            return Box::pin(stream::iter(events.into_iter().map(Ok)).chain(chunks).chain(completed));
        }
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
        events.push(status_event(TaskState::Completed));
        Box::pin(stream::iter(events.into_iter().map(Ok)))
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

/// The SDK's card for the server at `base`.
/// The pause a message asks for, as the Accord demo's `slow` skill reads it: a text part of
/// `{"seconds": N}`.
fn slow_seconds(text: &str) -> Option<u64> {
    serde_json::from_str::<serde_json::Value>(text).ok()?.get("seconds")?.as_u64()
}

/// The deltas a message asks for, as the Accord demo's `ticks` skill reads them: a text part of
/// `{"count": N, "interval_ms": M}` (M defaults to 100).
fn ticks(text: &str) -> Option<(u64, std::time::Duration)> {
    let input = serde_json::from_str::<serde_json::Value>(text).ok()?;
    let count = input.get("count")?.as_u64()?;
    let interval = input.get("interval_ms").and_then(serde_json::Value::as_u64).unwrap_or(100);
    Some((count, std::time::Duration::from_millis(interval)))
}

fn card(base: &str, streaming: bool) -> Result<AgentCard, serde_json::Error> {
    serde_json::from_value(json!({
        "name": "sdk-echo",
        "description": "Echo agent on the official Rust A2A SDK",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": format!("{base}/a2a/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}/a2a/rest"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ],
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "Echoes the message", "tags": ["echo"]}],
    }))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let (listener, base) = match accord_bench::listen("sdk-echo", &args.host, args.port).await {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let card = match card(&base, !args.no_streaming) {
        Ok(card) => card,
        Err(error) => {
            eprintln!("sdk-echo: the card does not parse: {error}");
            return ExitCode::FAILURE;
        }
    };
    let handler =
        Arc::new(DefaultRequestHandler::new(Echo, InMemoryTaskStore::new()).with_capabilities(AgentCapabilities {
            streaming: Some(!args.no_streaming),
            ..AgentCapabilities::default()
        }));
    let app = a2a_server::agent_card::agent_card_router(Arc::new(StaticAgentCard::new(card)))
        .nest("/a2a/jsonrpc", a2a_server::jsonrpc::jsonrpc_router(handler.clone()))
        .nest("/a2a/rest", a2a_server::rest::rest_router(handler));
    let mut out = std::io::stdout();
    let _ = writeln!(out, "sdk-echo listening on {base}");
    let _ = out.flush();
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let served = if args.nodelay {
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).with_graceful_shutdown(stop).await
    } else {
        axum::serve(listener, app).with_graceful_shutdown(stop).await
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sdk-echo: {error}");
            ExitCode::FAILURE
        }
    }
}
