//! Each face is a router of its own: mounted alone, nested under a path, or merged with others,
//! over one task service; A2A version negotiation is one layer in front of both bindings.

use std::sync::Arc;

use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_server::{Faces, ServerConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};

fn agent() -> Agent {
    Agent::builder("faces")
        .skill(
            Skill::builder("echo")
                .input_schema(json!({"type": "object"}))
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent")
}

fn faces(config: ServerConfig) -> (Faces, TaskRuntime) {
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    (Faces::new(&agent, config.tasks(runtime.clone())), runtime)
}

async fn status(server: &TestServer, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, server.url(path))
        .header("a2a-version", "1.0")
        .header("content-type", "application/json");
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn send(text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage",
           "params": {"message": {"messageId": text, "role": "ROLE_USER", "parts": [{"data": {"said": text}}]}}})
}

#[tokio::test]
async fn a_face_mounted_alone_serves_only_its_routes() {
    let (faces, _runtime) = faces(ServerConfig::default());
    let server = TestServer::start(faces.a2a_jsonrpc()).await;
    let (code, body) = status(&server, reqwest::Method::POST, "/a2a/jsonrpc", Some(send("alone"))).await;
    assert_eq!(code, 200);
    assert_eq!(body["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
    for path in ["/.well-known/agent-card.json", "/tasks", "/a2a/rest/tasks", "/entrypoints"] {
        assert_eq!(status(&server, reqwest::Method::GET, path, None).await.0, 404, "{path} is another face's");
    }

    let server = TestServer::start(faces.cards()).await;
    let (code, card) = status(&server, reqwest::Method::GET, "/.well-known/agent-card.json", None).await;
    assert_eq!(code, 200);
    assert_eq!(card["name"], "faces");
    assert_eq!(status(&server, reqwest::Method::POST, "/a2a/jsonrpc", Some(send("x"))).await.0, 404);
}

#[tokio::test]
async fn faces_nest_under_a_path_and_share_one_task_service() {
    let (faces, _runtime) = faces(ServerConfig::default());
    let app = axum::Router::new().nest("/v1", faces.a2a_rest()).merge(faces.a2a_jsonrpc()).merge(faces.lucid());
    let server = TestServer::start(app).await;
    let (_, sent) = status(&server, reqwest::Method::POST, "/a2a/jsonrpc", Some(send("nested"))).await;
    let id = sent["result"]["task"]["id"].as_str().expect("id").to_owned();
    // The same task through the nested REST binding.
    let (code, task) = status(&server, reqwest::Method::GET, &format!("/v1/a2a/rest/tasks/{id}"), None).await;
    assert_eq!(code, 200, "{task}");
    assert_eq!(task["id"], json!(id));
    assert_eq!(status(&server, reqwest::Method::GET, &format!("/a2a/rest/tasks/{id}"), None).await.0, 404);
}

#[tokio::test]
async fn turned_off_faces_are_empty_routers() {
    let (faces, _runtime) = faces(ServerConfig::default().lucid(false).jsonrpc_tasks(None).a2a(None));
    let server = TestServer::start(faces.router()).await;
    assert_eq!(status(&server, reqwest::Method::GET, "/health", None).await.0, 200);
    for path in ["/tasks", "/entrypoints", "/a2a/rest/tasks"] {
        assert_eq!(status(&server, reqwest::Method::GET, path, None).await.0, 404, "{path}");
    }
    assert_eq!(status(&server, reqwest::Method::POST, "/a2a/jsonrpc", Some(send("x"))).await.0, 404);
}

#[tokio::test]
async fn one_version_layer_answers_for_every_operation_of_both_bindings() {
    let (faces, _runtime) = faces(ServerConfig::default());
    let server = TestServer::start(faces.router()).await;
    let client = reqwest::Client::new();
    // HTTP+JSON: the version is the first check, on every operation.
    for (method, path) in [
        (reqwest::Method::GET, "/a2a/rest/tasks"),
        (reqwest::Method::GET, "/a2a/rest/tasks/any"),
        (reqwest::Method::POST, "/a2a/rest/tasks/any:cancel"),
        (reqwest::Method::POST, "/a2a/rest/message:send"),
        (reqwest::Method::GET, "/a2a/rest/extendedAgentCard"),
        (reqwest::Method::GET, "/a2a/rest/tasks/any/pushNotificationConfigs"),
        (reqwest::Method::GET, "/tenant-a/a2a/rest/tasks"),
    ] {
        let path = path.replace("/tenant-a/a2a/rest", "/a2a/rest/tenant-a");
        let response = client.request(method, server.url(&path)).header("a2a-version", "0.3").send().await.expect("r");
        assert_eq!(response.status().as_u16(), 400, "{path}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED", "{path}: {body}");
        assert!(body["error"]["message"].as_str().expect("message").contains("not supported"), "{path}: {body}");
    }
    // JSON-RPC: answered after the envelope, with the request's id (without a version the
    // request is 0.3, which this binding also speaks).
    let response = client
        .post(server.url("/a2a/jsonrpc"))
        .header("content-type", "application/json")
        .header("a2a-version", "99.0")
        .body(send("v").to_string())
        .send()
        .await
        .expect("response");
    let body: Value = response.json().await.expect("json");
    assert_eq!((body["id"].clone(), body["error"]["code"].clone()), (json!(7), json!(-32009)), "{body}");
}
