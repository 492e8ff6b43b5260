//! The optional parts follow their cargo features, over real HTTP on loopback: with `grpc` the
//! gRPC binding is routed and the card lists it; without, a server configured for it neither routes
//! nor lists it. With `prometheus`, `/metrics` renders the recorder; without, it is not served.
//! `scripts/test` runs this file with the default features and without any.

#![allow(clippy::unwrap_used)]

use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Skill, SkillError};
use accord_server::{A2aConfig, Faces, GrpcAddress, ServerConfig};
use serde_json::Value;

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

async fn served() -> String {
    let agent = Agent::builder("features-agent")
        .skill(Skill::builder("echo").typed(|input: Echo, _run| async move { Ok::<_, SkillError>(input) }))
        .build()
        .unwrap();
    let runtime =
        TaskRuntime::new(agent.clone(), std::sync::Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let a2a = A2aConfig { grpc: Some(GrpcAddress::SamePort), ..A2aConfig::default() };
    let config = ServerConfig::default().tasks(runtime).a2a(Some(a2a)).metrics(true);
    let app = Faces::new(&agent, config).router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

#[tokio::test]
async fn the_grpc_binding_is_routed_and_listed_only_with_its_feature() {
    let base = served().await;
    let client = reqwest::Client::new();
    let card: Value =
        client.get(format!("{base}/.well-known/agent-card.json")).send().await.unwrap().json().await.unwrap();
    let bindings: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|interface| interface["protocolBinding"].as_str())
        .collect();
    assert!(bindings.contains(&"JSONRPC"), "{bindings:?}");
    assert_eq!(bindings.contains(&"GRPC"), cfg!(feature = "grpc"), "{bindings:?}");

    // Not a gRPC request: the binding answers 415 where it is routed; nothing answers otherwise.
    let status = client
        .post(format!("{base}/lf.a2a.v1.A2AService/SendMessage"))
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(status, if cfg!(feature = "grpc") { 415 } else { 404 });
}

#[tokio::test]
async fn metrics_are_served_only_with_the_prometheus_feature() {
    let base = served().await;
    let response = reqwest::get(format!("{base}/metrics")).await.unwrap();
    if cfg!(feature = "prometheus") {
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap();
        assert!(text.contains("# TYPE accord_tasks gauge"), "{text}");
    } else {
        assert_eq!(response.status(), 404);
    }
}
