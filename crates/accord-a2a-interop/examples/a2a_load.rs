//! Side-by-side load: blocking A2A `SendMessage` over JSON-RPC against Accord and against the
//! official Rust SDK server (`a2a-server-lf`), each serving an echo agent in this process on
//! loopback, each driven the same way by the same load generator.
//!
//! ```sh
//! cargo run --release -p accord-a2a-interop --example a2a_load -- [SECONDS] [CONCURRENCY...]
//! ```
//!
//! Defaults: 5 seconds per run, concurrency 1, 8 and 32. For each server and concurrency it prints
//! completed requests per second and the median and 99th-percentile latency. Every answer is
//! checked (a completed task), so a fast wrong answer does not count. Accord runs on its
//! in-process store here, like the SDK's in-memory store: this compares the protocol faces, not
//! durability.

use std::sync::Arc;
use std::time::{Duration, Instant};

use accord_engine::task::{MemoryStore, MemoryStoreConfig, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_server::{AgentRouterExt, ServerConfig};
use serde_json::{Value, json};

#[path = "../tests/support/rust_peer.rs"]
mod rust_peer;

/// Accord's echo agent on `127.0.0.1:<ephemeral>`; returns its base URL.
async fn start_accord() -> String {
    let agent = Agent::builder("accord-echo")
        .skill(
            Skill::builder("echo")
                .input_schema(json!({"type": "object"}))
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent");
    // Big enough that the in-process store never refuses during a run.
    let store = MemoryStore::new(MemoryStoreConfig { max_tasks: 1_000_000, ..MemoryStoreConfig::default() });
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(store), RuntimeConfig::default());
    let app = agent.router_with(ServerConfig::default().tasks(runtime));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    base
}

/// One run: `concurrency` workers send for `duration`; returns (requests per second, p50, p99).
async fn run(url: &str, concurrency: usize, duration: Duration) -> (f64, Duration, Duration) {
    let http = reqwest::Client::builder().pool_max_idle_per_host(concurrency).build().expect("client");
    let started = Instant::now();
    let deadline = started + duration;
    let mut workers = Vec::new();
    for worker in 0..concurrency {
        let (http, url) = (http.clone(), url.to_owned());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut sequence = 0u64;
            while Instant::now() < deadline {
                sequence += 1;
                let body = json!({"jsonrpc": "2.0", "id": sequence, "method": "SendMessage", "params": {"message": {
                    "messageId": format!("load-{worker}-{sequence}"), "role": "ROLE_USER",
                    "parts": [{"text": "{\"n\": 1}"}]}}});
                let sent = Instant::now();
                let response = http
                    .post(&url)
                    .header("a2a-version", "1.0")
                    .header("content-type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await
                    .expect("response");
                let answer: Value = response.json().await.expect("json");
                let state = answer.pointer("/result/task/status/state").and_then(Value::as_str);
                assert_eq!(state, Some("TASK_STATE_COMPLETED"), "{answer}");
                latencies.push(sent.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.expect("worker"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let at = |fraction: f64| latencies[((latencies.len() as f64 - 1.0) * fraction) as usize];
    (latencies.len() as f64 / elapsed, at(0.5), at(0.99))
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|text| text.parse().ok()).unwrap_or(5);
    let mut levels: Vec<usize> = args.filter_map(|text| text.parse().ok()).collect();
    if levels.is_empty() {
        levels = vec![1, 8, 32];
    }
    let accord = format!("{}/a2a/jsonrpc", start_accord().await);
    let sdk = format!("{}/a2a/jsonrpc", rust_peer::start_peer(Duration::ZERO).await);
    println!("| server | in flight | requests/s | p50 | p99 |");
    println!("|---|---|---|---|---|");
    for &concurrency in &levels {
        for (name, url) in [("Accord", &accord), ("a2a-server-lf", &sdk)] {
            // A short warm-up, then the measured run.
            let _ = run(url, concurrency, Duration::from_millis(300)).await;
            let (rate, p50, p99) = run(url, concurrency, Duration::from_secs(seconds)).await;
            println!("| {name} | {concurrency} | {rate:.0} | {p50:.2?} | {p99:.2?} |");
        }
    }
}
