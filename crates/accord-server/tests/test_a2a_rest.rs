//! The official A2A v1.0 HTTP+JSON binding over real HTTP: routes, `google.rpc.Status` errors
//! with their HTTP statuses, version negotiation, streams.

use std::sync::Arc;

use accord_engine::task::{AnonymousAccess, MemoryStore, RuntimeConfig, ServiceConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill, SkillError};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};

async fn server() -> TestServer {
    let agent = Agent::builder("rest-test")
        .skill(
            Skill::builder("echo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(Skill::builder("wait").invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        .build()
        .expect("agent");
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    // These scenarios list tasks without credentials, as the conformance kit does.
    let service = ServiceConfig::default().anonymous(AnonymousAccess::ListShared);
    TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).task_service(service))).await
}

async fn request(
    s: &TestServer,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    version: Option<&str>,
) -> (u16, String, Value) {
    let mut request = reqwest::Client::new().request(method, s.url(&format!("/a2a/rest{path}")));
    if let Some(version) = version {
        request = request.header("a2a-version", version);
    }
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let text = response.text().await.expect("body");
    (status, content_type, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn reason(body: &Value) -> Option<&str> {
    body["error"]["details"].as_array()?.iter().find_map(|detail| detail["reason"].as_str())
}

fn message(text: &str, skill: Option<&str>, configuration: Value) -> Value {
    let mut message = json!({"messageId": "r-1", "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(skill) = skill {
        message["metadata"] = json!({"skillId": skill});
    }
    json!({"message": message, "configuration": configuration})
}

const V1: Option<&str> = Some("1.0");

#[tokio::test]
async fn operations_and_error_statuses() {
    let s = server().await;
    use reqwest::Method;

    let (status, content_type, sent) =
        request(&s, Method::POST, "/message:send", Some(message("hi", None, json!({}))), V1).await;
    assert_eq!(status, 200, "{sent}");
    assert!(content_type.contains("application/json"));
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let id = task["id"].as_str().expect("id").to_owned();

    let (status, _, got) = request(&s, Method::GET, &format!("/tasks/{id}?historyLength=1"), None, V1).await;
    assert_eq!((status, got["id"].clone()), (200, json!(id)));
    assert_eq!(got["history"].as_array().map(Vec::len), Some(1));

    let (status, _, list) = request(&s, Method::GET, "/tasks?pageSize=10&includeArtifacts=true", None, V1).await;
    assert_eq!(status, 200);
    assert_eq!(list["tasks"][0]["artifacts"][0]["artifactId"], "result");
    assert_eq!(list["nextPageToken"], "");

    let (status, _, body) = request(&s, Method::POST, &format!("/tasks/{id}:cancel"), None, V1).await;
    assert_eq!(
        (status, body["error"]["status"].clone(), reason(&body)),
        (400, json!("FAILED_PRECONDITION"), Some("TASK_NOT_CANCELABLE"))
    );
    assert_eq!(body["error"]["code"], 400);

    let (status, _, body) = request(&s, Method::GET, "/tasks/missing", None, V1).await;
    assert_eq!((status, reason(&body)), (404, Some("TASK_NOT_FOUND")));
    assert_eq!(body["error"]["details"][0]["@type"], "type.googleapis.com/google.rpc.ErrorInfo");

    let (status, _, body) = request(&s, Method::GET, "/tasks/missing", None, Some("99.0")).await;
    assert_eq!((status, reason(&body)), (400, Some("VERSION_NOT_SUPPORTED")));
    let (status, _, body) = request(&s, Method::GET, "/tasks/missing", None, None).await;
    assert_eq!((status, reason(&body)), (400, Some("VERSION_NOT_SUPPORTED")), "no version means 0.3");

    let response = reqwest::Client::new()
        .post(s.url("/a2a/rest/message:send"))
        .header("a2a-version", "1.0")
        .header("content-type", "text/plain")
        .body("hi")
        .send()
        .await
        .expect("response");
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("json");
    assert_eq!((status, reason(&body)), (400, Some("CONTENT_TYPE_NOT_SUPPORTED")));

    let (status, _, body) =
        request(&s, Method::POST, "/message:send", Some(json!({"message": {"role": "ROLE_USER"}})), V1).await;
    assert_eq!((status, body["error"]["status"].clone()), (400, json!("INVALID_ARGUMENT")));

    let (status, _, body) = request(&s, Method::GET, &format!("/tasks/{id}/pushNotificationConfigs"), None, V1).await;
    assert_eq!((status, body), (200, json!({"configs": [], "nextPageToken": ""})));
    let (status, _, body) = request(&s, Method::GET, "/tasks/missing/pushNotificationConfigs", None, V1).await;
    assert_eq!((status, reason(&body)), (404, Some("TASK_NOT_FOUND")));
    let (status, _, body) = request(&s, Method::GET, "/extendedAgentCard", None, V1).await;
    assert_eq!((status, reason(&body)), (400, Some("UNSUPPORTED_OPERATION")));

    // A running task: cancel, and subscribe (GET and POST both route) to a running one.
    let (_, _, running) = request(
        &s,
        Method::POST,
        "/message:send",
        Some(message("{}", Some("wait"), json!({"returnImmediately": true}))),
        V1,
    )
    .await;
    let running_id = running["task"]["id"].as_str().expect("id").to_owned();
    let (status, _, cancelled) = request(&s, Method::POST, &format!("/tasks/{running_id}:cancel"), None, V1).await;
    assert_eq!((status, cancelled["status"]["state"].clone()), (200, json!("TASK_STATE_CANCELED")));
    for method in [Method::GET, Method::POST] {
        let (status, _, body) = request(&s, method, &format!("/tasks/{running_id}:subscribe"), None, V1).await;
        assert_eq!(
            (status, reason(&body)),
            (400, Some("UNSUPPORTED_OPERATION")),
            "a finished task cannot be subscribed to"
        );
    }
}

#[tokio::test]
async fn a_stream_is_bare_stream_responses() {
    let s = server().await;
    let response = reqwest::Client::new()
        .post(s.url("/a2a/rest/message:stream"))
        .header("a2a-version", "1.0")
        .header("content-type", "application/json")
        .body(message("streamed", None, json!({})).to_string())
        .send()
        .await
        .expect("response");
    assert!(response.headers()["content-type"].to_str().expect("type").starts_with("text/event-stream"));
    let text = response.text().await.expect("body");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("json"))
        .collect();
    assert!(events[0].get("task").is_some(), "{events:?}");
    assert!(events.iter().all(|event| event.get("jsonrpc").is_none()), "no JSON-RPC envelope on REST");
    assert_eq!(
        events.last().map(|e| e["statusUpdate"]["status"]["state"].clone()),
        Some(json!("TASK_STATE_COMPLETED"))
    );
}
