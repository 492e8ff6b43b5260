//! The peer checks against Accord's own server: the checks themselves are exercised without any
//! external SDK, and Accord's A2A faces pass what the official SDK servers pass.

use std::sync::Arc;

use accord_engine::task::{AnonymousAccess, MemoryStore, RuntimeConfig, ServiceConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;

#[tokio::test]
async fn every_check_passes_against_accord_on_both_bindings() {
    let agent = Agent::builder("accord-peer")
        .description("Echoes its input")
        .skill(
            Skill::builder("echo")
                .description("Echoes its input")
                .tag("echo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent");
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    // The peer checks list tasks without credentials, as they do against the official SDK servers.
    let service = ServiceConfig::default().anonymous(AnonymousAccess::ListShared);
    let server =
        TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).task_service(service))).await;
    let mut lines = Vec::new();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let checks = accord_a2a_interop::check_peer(&server.origin, binding).await;
        assert!(checks.len() >= 10, "{checks:?}");
        lines.extend(checks.iter().map(|check| format!("{} ({})", check.line(), check.detail)));
    }
    eprintln!("{}", lines.join("\n"));
    let failures: Vec<&String> = lines.iter().filter(|line| !line.starts_with("PASS")).collect();
    assert!(failures.is_empty(), "{}", lines.join("\n"));
}

/// The official Rust SDK's card type reads Accord's card, the skill extension included.
#[tokio::test]
async fn the_official_rust_sdk_reads_accords_card() {
    let agent = Agent::builder("accord-peer")
        .skill(
            Skill::builder("echo")
                .input_schema(serde_json::json!({"type": "object"}))
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent");
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    for config in [ServerConfig::default(), ServerConfig::default().lucid(false)] {
        let server = TestServer::start(agent.router_with(config.tasks(runtime.clone()))).await;
        let body = reqwest::get(server.url("/.well-known/agent-card.json")).await.expect("card");
        let card: a2a::AgentCard = body.json().await.expect("an SDK card");
        let bindings: Vec<&str> =
            card.supported_interfaces.iter().map(|interface| interface.protocol_binding.as_str()).collect();
        assert!(bindings.contains(&"JSONRPC") && bindings.contains(&"HTTP+JSON"), "{bindings:?}");
        let extensions = card.capabilities.extensions.unwrap_or_default();
        let skills = extensions
            .iter()
            .find(|extension| extension.uri == accord_types::card::SKILL_EXTENSION)
            .and_then(|extension| extension.params.as_ref()?.get("skills").cloned())
            .expect("the skill extension");
        assert_eq!(skills["echo"]["inputSchema"], serde_json::json!({"type": "object"}));
    }
    runtime.close().await;
}
