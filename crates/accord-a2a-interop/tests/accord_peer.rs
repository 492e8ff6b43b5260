//! The peer checks against Accord's own server: the checks themselves are exercised without any
//! external SDK, and Accord's A2A faces pass what the official SDK servers pass.

use std::sync::Arc;

use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
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
    let server = TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime))).await;
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
