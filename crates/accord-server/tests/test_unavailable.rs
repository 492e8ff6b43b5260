//! A task store that fails is the server's trouble, not the caller's: every face answers a
//! retryable "unavailable" with `Retry-After`, never an internal error (A2A REST 500 `INTERNAL`,
//! JSON-RPC -32603), over real HTTP.

use std::sync::Arc;

use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime, TaskStore};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};

async fn closed_store_server() -> TestServer {
    let agent = Agent::builder("unavailable")
        .skill(
            Skill::builder("echo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent");
    let store = Arc::new(MemoryStore::default());
    let runtime = TaskRuntime::new(agent.clone(), Arc::clone(&store) as Arc<dyn TaskStore>, RuntimeConfig::default());
    let server = TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime))).await;
    // The store goes away under the server (a database outage, a full disk, a shutdown).
    store.close().await;
    server
}

fn send() -> Value {
    json!({"message": {"messageId": "u-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
}

async fn post(s: &TestServer, path: &str, body: Value) -> (u16, Option<String>, Value) {
    let response = reqwest::Client::new()
        .post(s.url(path))
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("response");
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (status, retry_after, response.json().await.expect("json"))
}

#[tokio::test]
async fn a_failing_store_is_a_retryable_unavailable_on_every_face() {
    let s = closed_store_server().await;

    let (status, retry_after, body) = post(&s, "/a2a/rest/message:send", send()).await;
    assert_eq!((status, body["error"]["status"].clone()), (503, json!("UNAVAILABLE")), "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "UNAVAILABLE");
    assert!(retry_after.is_some(), "REST carries Retry-After");

    let rpc = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": send()});
    let (status, retry_after, body) = post(&s, "/a2a/jsonrpc", rpc).await;
    assert_eq!((status, body["error"]["code"].clone()), (200, json!(-32096)), "{body}");
    assert_eq!(body["error"]["data"][0]["reason"], "UNAVAILABLE");
    assert!(retry_after.is_some(), "JSON-RPC carries Retry-After as a header");

    let tasks = json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/send", "params": {"task": {"skill": "echo", "input": {"text": "hi"}}}});
    let (_, _, body) = post(&s, "/a2a/tasks", tasks).await;
    assert_eq!(body["error"]["code"], -32096, "{body}");
    assert_eq!(body["error"]["data"]["reason"], "UNAVAILABLE");
}
