//! The JSON-RPC tasks face over real HTTP: every branch of the checks, scopes, the built-in
//! engine handler, streaming, and the same task seen through the Lucid face.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AccessToken, MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Artifact, Completion, Message, Outcome, Part, Run, RunEvent, Skill, SkillError};
use accord_server::auth::{BearerAuthLayer, BearerTokens};
use accord_server::jsonrpc_tasks::{RpcContext, RpcError, TaskSpec, TaskStatus, TaskView, TasksEndpoint, TasksHandler};
use accord_server::{AgentRouterExt, JsonRpcTasksConfig, ServerConfig};
use accord_test_support::TestServer;
use async_trait::async_trait;
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789";

fn agent() -> Agent {
    Agent::builder("rpc-test")
        .skill(
            Skill::builder("echo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(
            Skill::builder("secret")
                .scope("demo:secret")
                .invoke(|_run: Run| async move { Ok(Outcome::Completed(Completion::new(json!({"secret": 42})))) }),
        )
        .skill(Skill::builder("wait").invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        // Says something, files a document with a file part, then completes.
        .skill(Skill::builder("report").invoke(|run: Run| async move {
            let mut said = Message::agent_text("drafting");
            said.message_id = Some("m-1".into());
            said.metadata = Some(json!({"step": 1}).as_object().cloned().expect("object"));
            run.emit(RunEvent::Message(said)).await;
            let file = Part::File {
                name: Some("r.txt".into()),
                mime: Some("text/plain".into()),
                bytes_base64: None,
                uri: Some("https://files.example/r.txt".into()),
            };
            let artifact = Artifact {
                artifact_id: "doc".into(),
                name: Some("report".into()),
                parts: vec![Part::Text("part one".into()), Part::Data(json!({"n": 1})), file],
            };
            run.emit(RunEvent::Artifact { artifact, append: true, last_chunk: false }).await;
            Ok(Outcome::Completed(Completion::new(json!({"done": true}))))
        }))
        .skill(
            Skill::builder("typed")
                .input_schema(json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}))
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent")
}

fn tokens() -> BearerTokens {
    BearerTokens::new().with(&AccessToken::parse(ALICE).expect("token"), "alice", ["demo:secret"]).with(
        &AccessToken::parse(BOB).expect("token"),
        "bob",
        Vec::<String>::new(),
    )
}

/// A handler that echoes what it got, or fails as the skill asks.
struct Custom;

#[async_trait]
impl TasksHandler for Custom {
    async fn send(&self, task: TaskSpec, context: RpcContext) -> Result<TaskView, RpcError> {
        match task.skill.as_str() {
            "explode" => Err(RpcError::new(RpcError::INTERNAL_ERROR, "")),
            "gone" => Err(RpcError::new(RpcError::TASK_NOT_CANCELABLE, "too late").with_data(json!({"why": "done"}))),
            skill => {
                // The dialect's status words are free-form, and a handler may answer members of its own.
                let mut view = TaskView::new("t-1", TaskStatus::Other("queued".into()));
                view.extra.insert("skill".into(), json!(skill));
                view.extra.insert("subject".into(), json!(context.principal.map(|p| p.subject)));
                Ok(view)
            }
        }
    }
    async fn get(&self, task_id: String, _context: RpcContext) -> Result<TaskView, RpcError> {
        Ok(TaskView::new(task_id, TaskStatus::Completed))
    }
    async fn cancel(&self, task_id: String, _context: RpcContext) -> Result<TaskView, RpcError> {
        Ok(TaskView::new(task_id, TaskStatus::Canceled))
    }
}

struct Fixture {
    server: TestServer,
}

async fn fixture() -> Fixture {
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let jsonrpc = JsonRpcTasksConfig::default();
    let custom = TasksEndpoint::new(Custom).max_bytes(256).router();
    let app = agent
        .router_with(ServerConfig::default().tasks(runtime).jsonrpc_tasks(Some(jsonrpc)))
        .nest("/custom/rpc", custom)
        .layer(BearerAuthLayer::new(tokens()));
    Fixture { server: TestServer::start(app).await }
}

async fn call(
    f: &Fixture,
    path: &str,
    body: &str,
    content_type: Option<&str>,
    bearer: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = reqwest::Client::new().post(f.server.url(path)).body(body.to_owned());
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    (status, headers, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

async fn rpc(f: &Fixture, path: &str, method: &str, params: Value, bearer: Option<&str>) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let (status, _, body) = call(f, path, &body, Some("application/json"), bearer).await;
    assert_eq!(status, 200, "{body}");
    body
}

const JSON: Option<&str> = Some("application/json");

#[tokio::test]
async fn protocol_errors_in_order() {
    let f = fixture().await;
    let response = reqwest::Client::new().get(f.server.url("/a2a/tasks")).send().await.expect("response");
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "method must be POST"}})
    );

    for content_type in [Some("text/plain"), None] {
        let (status, _, body) =
            call(&f, "/a2a/tasks", r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get"}"#, content_type, None).await;
        assert_eq!(status, 415);
        assert_eq!(body["error"], json!({"code": -32600, "message": "Content-Type must be application/json"}));
        assert_eq!(body["id"], Value::Null);
    }

    let big = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tasks/send","params":{{"pad":"{}"}}}}"#, "x".repeat(400));
    let (status, _, body) = call(&f, "/custom/rpc", &big, JSON, None).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], -32700);
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("exceeded 256 bytes")), "{body}");

    let (status, _, body) = call(&f, "/a2a/tasks", "{nope", JSON, None).await;
    assert_eq!(
        (status, body),
        (400, json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "invalid JSON body"}}))
    );

    let envelope = "expected JSON-RPC 2.0 envelope { jsonrpc, id?, method, params? }";
    let (status, _, body) =
        call(&f, "/a2a/tasks", r#"{"jsonrpc":"1.0","id":7,"method":"tasks/get"}"#, JSON, None).await;
    assert_eq!(
        (status, body),
        (400, json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": envelope}}))
    );
    let (status, _, body) = call(&f, "/a2a/tasks", r#"{"jsonrpc":"2.0","method":5}"#, JSON, None).await;
    assert_eq!(
        (status, body),
        (400, json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": envelope}})),
        "no id, no id member"
    );
    let (status, _, body) = call(&f, "/a2a/tasks", "[]", JSON, None).await;
    assert_eq!((status, body["error"]["code"].clone()), (400, json!(-32600)));

    let (status, _, body) =
        call(&f, "/a2a/tasks", r#"{"jsonrpc":"2.0","id":"abc","method":"tasks/list"}"#, JSON, None).await;
    assert_eq!(status, 200);
    assert_eq!(body["id"], "abc", "the id is echoed as received");
    assert_eq!(
        body["error"],
        json!({"code": -32601, "message": "method 'tasks/list' not in [tasks/send, tasks/get, tasks/cancel, tasks/sendSubscribe]"})
    );
    // A request without an id is answered with id null.
    let (_, _, body) = call(&f, "/a2a/tasks", r#"{"jsonrpc":"2.0","method":"nope"}"#, JSON, None).await;
    assert_eq!(body["id"], Value::Null);
}

#[tokio::test]
async fn hostile_skills_and_task_ids_are_invalid_params() {
    let f = fixture().await;
    for task in [
        json!({"skill": "../etc/passwd"}),
        json!({"skill": "1abc"}),
        json!({"skill": "a".repeat(65)}),
        json!({}),
        json!(null),
        json!([1]),
    ] {
        let body = rpc(&f, "/a2a/tasks", "tasks/send", json!({"task": task}), None).await;
        assert_eq!(body["error"]["code"], -32602, "{task}");
    }
    let body = rpc(&f, "/a2a/tasks", "tasks/send", json!({"task": {"skill": "echo", "input": [1]}}), None).await;
    assert_eq!(body["error"]["message"], "tasks/send: params.task.input must be a non-null object");
    for task_id in [json!("a/b"), json!("x".repeat(65)), json!(""), json!(5)] {
        let body = rpc(&f, "/a2a/tasks", "tasks/get", json!({"taskId": task_id}), None).await;
        assert_eq!(
            body["error"],
            json!({"code": -32602, "message": "tasks/get: params.taskId must match /^[A-Za-z0-9_-]{1,64}$/"})
        );
    }
    let body = rpc(&f, "/a2a/tasks", "tasks/cancel", json!("not an object"), None).await;
    assert_eq!(body["error"]["code"], -32602);
}

#[tokio::test]
async fn the_engine_gates_scoped_skills_by_their_own_key() {
    let f = fixture().await;
    let denied = json!({"code": -32001, "message": "scope 'demo:secret' required for skill 'secret'"});
    let send = json!({"task": {"skill": "secret"}});
    assert_eq!(rpc(&f, "/a2a/tasks", "tasks/send", send.clone(), None).await["error"], denied, "no principal");
    assert_eq!(
        rpc(&f, "/a2a/tasks", "tasks/send", send.clone(), Some(BOB)).await["error"],
        denied,
        "without the scope"
    );
    assert_eq!(
        rpc(&f, "/a2a/tasks", "tasks/send", send.clone(), Some("unknown-token-0123456789")).await["error"],
        denied
    );
    let granted = rpc(&f, "/a2a/tasks", "tasks/send", send, Some(ALICE)).await;
    assert_eq!(granted["result"]["status"], "completed");
    assert_eq!(granted["result"]["result"]["output"], json!({"secret": 42}));
    let open = rpc(&f, "/a2a/tasks", "tasks/send", json!({"task": {"skill": "echo", "input": {"a": 1}}}), None).await;
    assert_eq!(open["result"]["result"]["output"], json!({"a": 1}), "an un-gated skill needs no principal");
    // Skill names that are special elsewhere are not special here.
    for skill in ["constructor", "toString", "__proto__"] {
        let body = rpc(&f, "/custom/rpc", "tasks/send", json!({"task": {"skill": skill}}), None).await;
        if skill == "__proto__" {
            assert_eq!(body["error"]["code"], -32602, "not a valid skill name");
        } else {
            assert_eq!(body["result"]["skill"], skill);
        }
    }
    // A handler of one's own decides for itself: the skill's scope is the engine's.
    let custom = rpc(&f, "/custom/rpc", "tasks/send", json!({"task": {"skill": "secret"}}), None).await;
    assert_eq!(custom["result"]["skill"], "secret");
}

#[tokio::test]
async fn handler_errors_and_code_pass_through() {
    let f = fixture().await;
    let body = rpc(&f, "/custom/rpc", "tasks/send", json!({"task": {"skill": "explode"}}), None).await;
    assert_eq!(body["error"], json!({"code": -32603, "message": "handler error"}));
    let body = rpc(&f, "/custom/rpc", "tasks/send", json!({"task": {"skill": "gone"}}), None).await;
    assert_eq!(body["error"], json!({"code": -32003, "message": "too late", "data": {"why": "done"}}));
    let body = rpc(&f, "/custom/rpc", "tasks/send", json!({"task": {"skill": "plain"}}), Some(ALICE)).await;
    assert_eq!(body["result"], json!({"taskId": "t-1", "status": "queued", "skill": "plain", "subject": "alice"}));
}

#[tokio::test]
async fn the_engine_handler_runs_reads_and_cancels_tasks() {
    let f = fixture().await;
    let done =
        rpc(&f, "/a2a/tasks", "tasks/send", json!({"task": {"skill": "echo", "input": {"x": 1}}}), Some(BOB)).await;
    let id = done["result"]["taskId"].as_str().expect("taskId").to_owned();
    assert_eq!(done["result"]["status"], "completed");
    let read = rpc(&f, "/a2a/tasks", "tasks/get", json!({"taskId": id}), Some(BOB)).await;
    assert_eq!(read["result"], done["result"]);
    let other = rpc(&f, "/a2a/tasks", "tasks/get", json!({"taskId": id}), Some(ALICE)).await;
    assert_eq!(other["error"], json!({"code": -32002, "message": "task not found"}), "another owner");
    let late = rpc(&f, "/a2a/tasks", "tasks/cancel", json!({"taskId": id}), Some(BOB)).await;
    assert_eq!(late["error"], json!({"code": -32003, "message": "task is not cancelable"}));
    let unknown = rpc(&f, "/a2a/tasks", "tasks/get", json!({"taskId": "missing"}), None).await;
    assert_eq!(unknown["error"]["code"], -32002);

    let running = rpc(&f, "/a2a/tasks", "tasks/send", json!({"task": {"skill": "wait"}}), Some(BOB)).await;
    assert_eq!(running["result"]["status"], "working");
    let id = running["result"]["taskId"].as_str().expect("id");
    let cancelled = rpc(&f, "/a2a/tasks", "tasks/cancel", json!({"taskId": id}), Some(BOB)).await;
    assert_eq!(cancelled["result"]["status"], "canceled");

    let invalid =
        rpc(&f, "/a2a/tasks", "tasks/send", json!({"task": {"skill": "typed", "input": {"n": "x"}}}), None).await;
    assert_eq!(invalid["error"]["code"], -32602);
    assert_eq!(invalid["error"]["data"]["issues"][0]["path"], json!(["n"]));
    let unknown = rpc(&f, "/a2a/tasks", "tasks/send", json!({"task": {"skill": "nosuch"}}), None).await;
    assert_eq!(unknown["error"], json!({"code": -32602, "message": "Skill \"nosuch\" not found"}));
}

#[tokio::test]
async fn the_same_token_sees_the_same_tasks_on_both_faces() {
    let f = fixture().await;
    let sent =
        rpc(&f, "/a2a/tasks", "tasks/send", json!({"task": {"skill": "echo", "input": {"via": "rpc"}}}), Some(ALICE))
            .await;
    let id = sent["result"]["taskId"].as_str().expect("id");
    let lucid: Value = reqwest::Client::new()
        .get(f.server.url(&format!("/tasks/{id}")))
        .header("task-access-token", ALICE)
        .send()
        .await
        .expect("response")
        .json()
        .await
        .expect("json");
    assert_eq!(lucid["status"], "completed");
    assert_eq!(lucid["result"]["output"], json!({"via": "rpc"}));

    let created: Value = reqwest::Client::new()
        .post(f.server.url("/tasks"))
        .header("task-access-token", ALICE)
        .json(&json!({"message": {"role": "user", "content": {"text": "{\"via\":\"lucid\"}"}}, "skillId": "echo"}))
        .send()
        .await
        .expect("response")
        .json()
        .await
        .expect("json");
    let id = created["taskId"].as_str().expect("id");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let read = rpc(&f, "/a2a/tasks", "tasks/get", json!({"taskId": id}), Some(ALICE)).await;
    assert_eq!(read["result"]["result"]["output"], json!({"via": "lucid"}));
}

#[tokio::test]
async fn send_subscribe_streams_json_rpc_responses_until_the_end() {
    let f = fixture().await;
    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": "tasks/sendSubscribe", "params": {"task": {"skill": "echo", "input": {"k": 1}}}});
    let response = reqwest::Client::new().post(f.server.url("/a2a/tasks")).json(&body).send().await.expect("response");
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().expect("type").starts_with("text/event-stream"));
    let text = tokio::time::timeout(Duration::from_secs(10), response.text()).await.expect("ends").expect("body");
    let responses: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).expect("json"))
        .collect();
    assert!(responses.iter().all(|response| response["jsonrpc"] == "2.0" && response["id"] == "s1"));
    let events: Vec<&str> = responses.iter().filter_map(|response| response["result"]["event"].as_str()).collect();
    assert_eq!(events.first(), Some(&"status"));
    assert_eq!(events.last(), Some(&"result"));
    assert_eq!(responses.last().map(|r| r["result"]["result"]["output"].clone()), Some(json!({"k": 1})));
    let sequences: Vec<u64> = responses.iter().filter_map(|r| r["result"]["sequence"].as_u64()).collect();
    assert!(sequences.windows(2).all(|pair| pair[0] < pair[1]), "{sequences:?}");
}

/// The `data:` lines of a `tasks/sendSubscribe` of `skill`, with the task's id replaced by `T`.
async fn stream_data(f: &Fixture, skill: &str) -> Vec<String> {
    let body =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/sendSubscribe", "params": {"task": {"skill": skill}}});
    let response = reqwest::Client::new().post(f.server.url("/a2a/tasks")).json(&body).send().await.expect("response");
    let text = tokio::time::timeout(Duration::from_secs(10), response.text()).await.expect("ends").expect("body");
    let data: Vec<&str> = text.lines().filter_map(|line| line.strip_prefix("data: ")).collect();
    let first: Value = serde_json::from_str(data.first().expect("an event")).expect("json");
    let task_id = first["result"]["taskId"].as_str().expect("taskId").to_owned();
    data.iter().map(|line| line.replace(&task_id, "T")).collect()
}

#[tokio::test]
async fn send_subscribe_writes_each_kind_of_update_in_its_wire_shape() {
    let f = fixture().await;
    let data = stream_data(&f, "report").await;
    // Members in name order, as this face has always written them.
    let message = r#"{"jsonrpc":"2.0","id":7,"result":{"event":"message","message":{"message_id":"m-1","metadata":{"step":1},"parts":[{"text":"drafting"}],"role":"agent"},"sequence":"#;
    let artifact = r#"{"jsonrpc":"2.0","id":7,"result":{"append":true,"artifact":{"artifact_id":"doc","name":"report","parts":[{"text":"part one"},{"data":{"n":1}},{"file":{"mime":"text/plain","name":"r.txt","uri":"https://files.example/r.txt"}}]},"event":"artifact","lastChunk":false,"sequence":"#;
    let result = r#"{"jsonrpc":"2.0","id":7,"result":{"event":"result","result":{"output":{"done":true}},"sequence":"#;
    for (prefix, suffix) in [(message, r#","taskId":"T"}}"#), (artifact, r#","taskId":"T"}}"#)] {
        let line = data.iter().find(|line| line.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix} in {data:#?}"));
        assert!(line.ends_with(suffix), "{line}");
    }
    let last = data.last().expect("events");
    assert!(last.starts_with(result) && last.ends_with(r#","status":"completed","taskId":"T"}}"#), "{last}");
    let first = data.first().expect("events");
    assert!(first.starts_with(r#"{"jsonrpc":"2.0","id":7,"result":{"event":"status","sequence":"#), "{first}");
    assert!(first.ends_with(r#","status":"submitted","taskId":"T"}}"#), "{first}");
}

#[tokio::test]
async fn the_card_lists_the_face_without_confusing_lucid_clients() {
    let f = fixture().await;
    let card = accord_client::Client::new().fetch_card(&f.server.origin).await.expect("card");
    let bindings: Vec<&str> = card.supported_interfaces.iter().map(|i| i.protocol_binding.as_str()).collect();
    // The A2A 0.3 interfaces follow the 1.0 ones (docs/a2a-0.3.md).
    assert_eq!(
        bindings,
        [
            "urn:accord:binding:lucid-http",
            "JSONRPC",
            "HTTP+JSON",
            "JSONRPC",
            "HTTP+JSON",
            "urn:accord:binding:jsonrpc-tasks"
        ]
    );
    assert_eq!(card.supported_interfaces[1].url, format!("{}/a2a/jsonrpc", f.server.origin));
    assert_eq!(card.supported_interfaces[2].url, format!("{}/a2a/rest", f.server.origin));
    assert_eq!(card.supported_interfaces[3].url, format!("{}/a2a/jsonrpc", f.server.origin));
    assert_eq!(card.supported_interfaces[3].protocol_version.as_deref(), Some("0.3"));
    assert_eq!(card.supported_interfaces[4].url, format!("{}/a2a/rest", f.server.origin));
    assert_eq!(card.supported_interfaces[4].protocol_version.as_deref(), Some("0.3"));
    assert_eq!(card.supported_interfaces[5].url, format!("{}/a2a/tasks", f.server.origin));
    assert_eq!(card.http_base_url(), Some(format!("{}/", f.server.origin).as_str()));
}

#[tokio::test]
async fn the_client_sends_gets_and_cancels_and_types_its_errors() {
    use accord_client::rpc::{RpcOptions, RpcTask};
    use accord_client::{Client, ClientError, Operation};

    let f = fixture().await;
    let client = Client::new();
    let url = f.server.url("/a2a/tasks");
    let loopback = RpcOptions { allow_loopback_http: true, ..RpcOptions::default() };
    let mut alice = loopback.clone();
    alice.headers.insert("authorization", format!("Bearer {ALICE}").parse().expect("header"));

    let task = RpcTask { skill: "echo".into(), input: Some(json!({"q": 1}).as_object().cloned().expect("object")) };
    let sent = client.tasks_send(&url, task, alice.clone()).await.expect("send");
    assert_eq!(sent.status, TaskStatus::Completed);
    let id = sent.task_id.as_str();
    let read = client.tasks_get(&url, id, alice.clone()).await.expect("get");
    assert_eq!(read.result.as_ref().map(|result| &result["output"]), Some(&json!({"q": 1})));
    assert_eq!(read, sent, "the same view from send and get");
    match client.tasks_cancel(&url, id, alice.clone()).await {
        Err(ClientError::JsonRpc { operation, error }) => {
            assert_eq!((operation, error.code), (Operation::CancelTask, -32003));
        }
        other => panic!("expected -32003, got {other:?}"),
    }
    match client.tasks_send(&url, RpcTask { skill: "secret".into(), input: None }, loopback.clone()).await {
        Err(ClientError::JsonRpc { operation, error }) => {
            assert_eq!((operation, error.code), (Operation::SendTask, -32001));
            assert!(error.message.contains("demo:secret"));
        }
        other => panic!("expected -32001, got {other:?}"),
    }
    assert!(matches!(
        client.tasks_send(&url, RpcTask { skill: "1bad".into(), input: None }, loopback.clone()).await,
        Err(ClientError::InvalidSkill { .. })
    ));
    assert!(matches!(client.tasks_get(&url, "a/b", loopback.clone()).await, Err(ClientError::InvalidTaskId { .. })));
    // Plain http is refused before connecting: to a non-loopback host always, to loopback unless allowed.
    let refused = client.tasks_get("http://192.0.2.1/a2a/tasks", "abc", loopback.clone()).await;
    assert!(matches!(refused, Err(ClientError::InvalidUrl { .. })), "{refused:?}");
    let refused = client.tasks_get(&url, "abc", RpcOptions::default()).await;
    assert!(matches!(refused, Err(ClientError::InvalidUrl { .. })), "{refused:?}");
    // A non-2xx status and a non-JSON-RPC body are typed too.
    let status = client.tasks_get(&f.server.url("/nowhere"), "abc", loopback.clone()).await;
    assert!(matches!(status, Err(ClientError::Status { status: 404, .. })), "{status:?}");
    let not_rpc = client.tasks_get(&f.server.url("/health"), "abc", loopback).await;
    assert!(
        matches!(not_rpc, Err(ClientError::Status { status: 405, .. }) | Err(ClientError::InvalidResponse { .. })),
        "{not_rpc:?}"
    );
}

#[tokio::test]
async fn a_batch_is_refused_whole_as_not_an_envelope() {
    let f = fixture().await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "t"}},
        {"jsonrpc": "2.0", "method": "tasks/send", "params": {"task": {"skill": "echo"}}}
    ])
    .to_string();
    for path in ["/a2a/tasks", "/custom/rpc"] {
        for body in [batch.as_str(), "[]"] {
            let (status, _, body) = call(&f, path, body, JSON, None).await;
            assert_eq!(
                (status, body),
                (
                    400,
                    json!({"jsonrpc": "2.0", "id": null,
                           "error": {"code": -32600, "message": "batch requests are not supported"}})
                ),
                "{path}"
            );
        }
    }
}

#[tokio::test]
async fn any_id_is_echoed_and_params_are_judged_by_the_method() {
    let f = fixture().await;
    let body = r#"{"jsonrpc":"2.0","id":{"k":[1]},"method":"tasks/get","params":{"taskId":"t"}}"#;
    let (status, _, body) = call(&f, "/custom/rpc", body, JSON, None).await;
    assert_eq!((status, body["id"].clone(), body["result"]["taskId"].clone()), (200, json!({"k": [1]}), json!("t")));
    let body = r#"{"jsonrpc":"2.0","id":true,"method":"tasks/get","params":null}"#;
    let (status, _, body) = call(&f, "/custom/rpc", body, JSON, None).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"jsonrpc": "2.0", "id": true,
                     "error": {"code": -32602, "message": "tasks/get: params must be an object"}})
        )
    );
    let (status, _, body) = call(&f, "/custom/rpc", "5", JSON, None).await;
    assert_eq!((status, body.get("id"), body["error"]["code"].clone()), (400, None, json!(-32600)));
}

/// One HTTP/1.1 exchange on a fresh connection, read until the server closes it.
async fn raw_http(addr: std::net::SocketAddr, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    socket.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut answer))
        .await
        .expect("the server answers and closes")
        .expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn beyond_the_in_flight_cap_the_face_answers_busy_as_a_json_rpc_error_and_runs_nothing() {
    use accord_server::serve::{ConnectionLimits, Server};
    use std::future::IntoFuture;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let agent = Agent::builder("busy-test")
        .skill(Skill::builder("count").invoke(move |_run: Run| {
            let counted = Arc::clone(&counted);
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(Outcome::Completed(Completion::new(json!({"counted": true}))))
            }
        }))
        .build()
        .expect("agent");
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let (entered, release) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Notify::new()));
    let (held, freed) = (Arc::clone(&entered), Arc::clone(&release));
    // The one request in flight the server allows: held until the test releases it.
    let hold = axum::routing::get(move || async move {
        held.notify_one();
        freed.notified().await;
        "released"
    });
    let config = ServerConfig::default().tasks(runtime).jsonrpc_tasks(Some(JsonRpcTasksConfig::default()));
    let app = agent.router_with(config).route("/hold", hold);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let limits = ConnectionLimits { max_in_flight: 1, ..ConnectionLimits::default() };
    let serving = tokio::spawn(Server::new(listener, app).limits(limits).into_future());
    let holder = tokio::spawn(raw_http(addr, "GET /hold HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
    entered.notified().await;

    let send = r#"{"jsonrpc":"2.0","id":1,"method":"tasks/send","params":{"task":{"skill":"count"}}}"#;
    let post = format!(
        "POST /a2a/tasks HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{send}",
        send.len()
    );
    // 503 with `Retry-After`, the face's JSON-RPC error with `id: null` (its body was not read, so
    // the HTTP/1.1 connection closes), -32096 with the reason and the wait in `data`.
    let answer = raw_http(addr, &post).await;
    let lower = answer.to_ascii_lowercase();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(lower.contains("\r\nretry-after: 1\r\n") && lower.contains("\r\nconnection: close\r\n"), "{answer}");
    assert!(lower.contains("\r\ncontent-type: application/json\r\n"), "{answer}");
    let (_, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let body: Value = serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {answer}"));
    let message = body["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(!message.is_empty(), "{body}");
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": RpcError::UNAVAILABLE, "message": message,
               "data": {"reason": "UNAVAILABLE", "retryAfter": 1}}})
    );

    release.notify_one();
    assert!(holder.await.expect("holder").contains("released"));
    // Served now: the skill runs once, for this request alone (the refused one started no task).
    let answer = raw_http(addr, &post.replacen("\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "the slot is free again: {answer}");
    let (_, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let body: Value = serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {answer}"));
    assert_eq!(body["result"]["status"], "completed", "{body}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the refused request ran its skill");
    serving.abort();
}
