//! `axum-floor`: the HTTP floor of the load harness — a bare axum server that answers a blocking
//! A2A JSON-RPC `SendMessage` with a completed echo task, and does nothing else.
//!
//! ```sh
//! axum-floor --port 0
//! ```
//!
//! It answers `SubscribeToTask` with an event stream that carries one event (a working task of
//! the id asked for) and then stays open without another: the floor of what one subscriber holds
//! in a server on hyper and axum (the harness's memory scenario).
//!
//! No task is stored, no event is kept, nothing is authenticated, counted or traced: the request
//! is parsed into a JSON value and the answer built from it. What an A2A server spends per request
//! beyond this server's figure is the work of being an A2A server; this figure itself is hyper,
//! axum, serde_json and the kernel. It serves a card at `/.well-known/agent-card.json` naming
//! `/a2a/jsonrpc`, so the load generator finds it as it finds the others, and prints
//! `axum-floor listening on http://127.0.0.1:<port>` once it accepts connections.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Json;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Parser;
use futures_util::StreamExt;
use serde_json::{Value, json};

/// Command line of `axum-floor`.
#[derive(Debug, Parser)]
#[command(name = "axum-floor", about = "Bare axum JSON-RPC echo: the HTTP floor of the load harness.")]
struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
}

/// The answer to one JSON-RPC request: a completed task whose artifact echoes the message's
/// first text part, or a JSON-RPC error for anything that is not a `SendMessage`.
fn answer(request: &Value, number: u64) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let message = request.pointer("/params/message");
    let text = message.and_then(|message| message.pointer("/parts/0/text")).and_then(Value::as_str);
    match (request.get("method").and_then(Value::as_str), text) {
        (Some("SendMessage"), Some(text)) => json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {"task": {
                "id": format!("task-{number}"),
                "contextId": format!("context-{number}"),
                "status": {"state": "TASK_STATE_COMPLETED"},
                "artifacts": [{"artifactId": "echo", "name": "echo", "parts": [{"text": format!("echo: {text}")}]}],
                "history": [message],
            }},
        }),
        _ => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
    }
}

/// The first event of a `SubscribeToTask` stream (a working task of the id asked for), or `None`
/// for any other request.
fn subscription(request: &Value) -> Option<Value> {
    if request.get("method").and_then(Value::as_str) != Some("SubscribeToTask") {
        return None;
    }
    let id = request.pointer("/params/id").and_then(Value::as_str)?;
    Some(json!({
        "jsonrpc": "2.0",
        "id": request.get("id").cloned().unwrap_or(Value::Null),
        "result": {"task": {"id": id, "contextId": format!("context-{id}"), "status": {"state": "TASK_STATE_WORKING"}}},
    }))
}

/// An event stream of `first` that then stays open.
fn subscribe(first: Value) -> Response {
    let event = Event::default().data(first.to_string());
    let events = futures_util::stream::once(async move { Ok::<_, std::convert::Infallible>(event) })
        .chain(futures_util::stream::pending());
    Sse::new(events).into_response()
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let (listener, base) = match accord_bench::listen("axum-floor", &args.host, args.port).await {
        Ok(bound) => bound,
        Err(code) => return code,
    };
    let card = json!({
        "name": "axum-floor",
        "description": "Bare axum JSON-RPC echo",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": format!("{base}/a2a/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "Echoes the message", "tags": ["echo"]}],
    });
    let counter = Arc::new(AtomicU64::new(0));
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", get(move || async move { Json(card) }))
        .route(
            "/a2a/jsonrpc",
            post(|State(counter): State<Arc<AtomicU64>>, Json(request): Json<Value>| async move {
                match subscription(&request) {
                    Some(first) => subscribe(first),
                    None => Json(answer(&request, counter.fetch_add(1, Ordering::Relaxed))).into_response(),
                }
            }),
        )
        .with_state(counter);
    let mut out = std::io::stdout();
    let _ = writeln!(out, "axum-floor listening on {base}");
    let _ = out.flush();
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match axum::serve(listener, app).with_graceful_shutdown(stop).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("axum-floor: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_is_answered_with_a_completed_echo_and_anything_else_with_an_error() {
        let send = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage",
            "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
        let answer_ = answer(&send, 3);
        assert_eq!(answer_["id"], 7);
        assert_eq!(answer_["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(answer_["result"]["task"]["artifacts"][0]["parts"][0]["text"], "echo: hi");
        let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": "t-1"}});
        let first = subscription(&subscribe).expect("a subscription");
        assert_eq!((first["id"].clone(), first["result"]["task"]["id"].clone()), (json!(2), json!("t-1")));
        assert!(subscription(&send).is_none());
        let other = answer(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}), 0);
        assert_eq!(other["error"]["code"], -32601);
    }
}
