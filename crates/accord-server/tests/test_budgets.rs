//! Byte and count budgets over real HTTP, with the defaults `accord serve` and the library get:
//! what one caller may make the server keep (idempotent responses, inputs, messages, a task's
//! history, its artifacts) and how large a list's answer may be. Each refusal in each face's own
//! shape.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AnonymousAccess, MemoryStore, MemoryStoreConfig, RuntimeConfig, ServiceConfig, TaskRuntime};
use accord_engine::{Agent, Artifact, Completion, Message, Outcome, Part, Run, RunEvent, Skill};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};

const MIB: usize = 1 << 20;
const TOKEN: &str = "budget-token-0123456789";

fn text_artifact(id: &str, bytes: usize) -> Artifact {
    Artifact { artifact_id: id.into(), name: None, parts: vec![Part::Text("a".repeat(bytes))] }
}

fn agent() -> Agent {
    Agent::builder("budgets")
        .skill(
            Skill::builder("echo")
                .input_schema(
                    json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}),
                )
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        // Asks for more input, every time.
        .skill(
            Skill::builder("ask")
                .invoke(|_run: Run| async move { Ok(Outcome::InputRequired(Message::agent_text("and then?"))) }),
        )
        // Returns 17 MiB of artifacts at its end.
        .skill(Skill::builder("returns-big").invoke(|_run: Run| async move {
            let completion = Completion { artifacts: vec![text_artifact("big", 17 * MIB)], ..Completion::default() };
            Ok(Outcome::Completed(completion))
        }))
        // Emits 1 MiB artifacts as it goes, 40 of them, then completes.
        .skill(Skill::builder("emits-big").invoke(|run: Run| async move {
            for n in 0..40 {
                let artifact = text_artifact(&format!("chunk-{n}"), MIB);
                run.emit(RunEvent::Artifact { artifact, append: false, last_chunk: true }).await;
            }
            Ok(Outcome::Completed(Completion::new(json!({"emitted": 40}))))
        }))
        .build()
        .expect("agent")
}

/// A server with every default limit, a body limit raised above them (so that the task service,
/// not the body reader, is what refuses), an in-process store large enough to hold what the
/// defaults let through, and anonymous listing.
async fn server() -> (TestServer, TaskRuntime) {
    let agent = agent();
    let store = MemoryStore::new(MemoryStoreConfig { max_bytes: 1 << 30, ..MemoryStoreConfig::default() });
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(store), RuntimeConfig::default());
    let config = ServerConfig::default()
        .body_limit(8 * MIB)
        .tasks(runtime.clone())
        .task_service(ServiceConfig::default().anonymous(AnonymousAccess::ListShared));
    (TestServer::start(agent.router_with(config)).await, runtime)
}

async fn post(server: &TestServer, path: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value, Vec<u8>) {
    let mut request = reqwest::Client::new()
        .post(server.url(path))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let bytes = response.bytes().await.expect("body").to_vec();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null), bytes)
}

async fn get(server: &TestServer, path: &str) -> (u16, Value, usize) {
    let response = reqwest::Client::new()
        .get(server.url(path))
        .header("a2a-version", "1.0")
        .header("task-access-token", TOKEN)
        .send()
        .await
        .expect("response");
    let status = response.status().as_u16();
    let bytes = response.bytes().await.expect("body");
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null), bytes.len())
}

async fn rpc(server: &TestServer, path: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (status, body, _) = post(server, path, &body, &[]).await;
    assert_eq!(status, 200, "{body}");
    body
}

fn a2a_message(text: &str, skill: &str, task_id: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": text}], "metadata": {"skillId": skill}
    });
    if let Some(id) = task_id {
        message["taskId"] = json!(id);
    }
    json!({"message": message})
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("m-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The Lucid `POST /tasks` body for `input`.
fn lucid_task(skill: &str, input: &Value) -> Value {
    json!({"skillId": skill, "message": {"role": "user", "content": {"text": input.to_string()}}})
}

/// The Lucid task once it is no longer running.
async fn settled_lucid_task(server: &TestServer, id: &str) -> Value {
    for _ in 0..300 {
        let (status, task, _) = get(server, &format!("/tasks/{id}")).await;
        assert_eq!(status, 200, "{task}");
        if task["status"] != "running" {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never settled");
}

#[tokio::test]
async fn idempotent_responses_are_kept_up_to_a_byte_budget_and_never_run_twice() {
    let (server, _) = server().await;
    let text = "i".repeat(1_000_000);
    let body = json!({"input": {"text": text}});
    let key = |n: usize| format!("budget-idempotency-key-{n:04}");
    // 70 responses of about 1 MB: more than the 64 MiB kept by default.
    for n in 0..70 {
        let (status, answer, _) =
            post(&server, "/entrypoints/echo/invoke", &body, &[("idempotency-key", &key(n))]).await;
        assert_eq!(status, 200, "{}", answer["error"]);
    }
    // The latest one is replayed whole.
    let (status, answer, _) = post(&server, "/entrypoints/echo/invoke", &body, &[("idempotency-key", &key(69))]).await;
    assert_eq!(status, 200);
    assert_eq!(answer["output"]["text"].as_str().map(str::len), Some(1_000_000));
    // The oldest gave its body up: refused, not run again, with the digest of what it answered.
    let (status, answer, _) = post(&server, "/entrypoints/echo/invoke", &body, &[("idempotency-key", &key(0))]).await;
    assert_eq!(
        status,
        409,
        "the oldest response is replayed whole: {}",
        answer["output"]["text"].as_str().map_or(0, str::len)
    );
    assert_eq!(answer["error"]["code"], "idempotency_response_not_kept");
    let message = answer["error"]["message"].as_str().expect("message");
    assert!(message.contains("status 200") && message.contains("SHA-256"), "{message}");
    // A different request under that key is still a conflict.
    let other = json!({"input": {"text": "other"}});
    let (status, answer, _) = post(&server, "/entrypoints/echo/invoke", &other, &[("idempotency-key", &key(0))]).await;
    assert_eq!((status, answer["error"]["code"].clone()), (409, json!("idempotency_key_conflict")));
}

#[tokio::test]
async fn an_input_or_message_above_the_limit_is_refused_by_every_face_before_it_is_stored() {
    let (server, runtime) = server().await;
    let big = json!({"text": "x".repeat(2 * MIB)});

    let (status, body, _) = post(&server, "/tasks", &lucid_task("echo", &big), &[("task-access-token", TOKEN)]).await;
    assert_eq!((status, body["error"]["code"].clone()), (413, json!("payload_too_large")), "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("1048576")), "{body}");

    let body = rpc(&server, "/a2a/tasks", "tasks/send", json!({"task": {"skill": "echo", "input": big}})).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");

    let text = big["text"].as_str().expect("text");
    let body = rpc(&server, "/a2a/jsonrpc", "SendMessage", a2a_message(text, "echo", None)).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");

    let (status, body, _) = post(&server, "/a2a/rest/message:send", &a2a_message(text, "echo", None), &[]).await;
    assert_eq!((status, body["error"]["status"].clone()), (400, json!("INVALID_ARGUMENT")), "{body}");

    let owner = accord_engine::task::AccessToken::parse(TOKEN).expect("token").owner();
    let listed = runtime.list(&owner, &accord_engine::task::ListQuery::default()).await.expect("list");
    assert_eq!(listed.total, 0, "nothing was stored");
}

#[tokio::test]
async fn a_task_history_stops_growing_at_its_limit() {
    let (server, _) = server().await;
    let body = rpc(&server, "/a2a/jsonrpc", "SendMessage", a2a_message("start", "ask", None)).await;
    let task = &body["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{body}");
    let id = task["id"].as_str().expect("id").to_owned();
    // Each follow-up adds the agent's question and the answer: 1 + 2 × 49 = 99 of at most 100.
    let mut refused_at = None;
    for n in 0..60 {
        let body = rpc(&server, "/a2a/jsonrpc", "SendMessage", a2a_message("more", "ask", Some(&id))).await;
        if body.get("error").is_some() {
            assert_eq!(body["error"]["code"], -32602, "{body}");
            refused_at = Some(n);
            break;
        }
        assert_eq!(body["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{body}");
    }
    assert_eq!(refused_at, Some(49));
    let (status, body, _) = post(&server, "/a2a/rest/message:send", &a2a_message("more", "ask", Some(&id)), &[]).await;
    assert_eq!((status, body["error"]["status"].clone()), (400, json!("INVALID_ARGUMENT")), "{body}");
    // The task still waits, its history as it was.
    let body = rpc(&server, "/a2a/jsonrpc", "GetTask", json!({"id": id})).await;
    assert_eq!(body["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(body["result"]["history"].as_array().map(Vec::len), Some(99));
}

#[tokio::test]
async fn a_handler_whose_artifacts_go_beyond_the_limit_fails_its_task() {
    let (server, runtime) = server().await;
    let owner = accord_engine::task::AccessToken::parse(TOKEN).expect("token").owner();
    for skill in ["returns-big", "emits-big"] {
        let (status, body, _) =
            post(&server, "/tasks", &lucid_task(skill, &json!({})), &[("task-access-token", TOKEN)]).await;
        assert_eq!(status, 200, "{body}");
        let id = body["taskId"].as_str().expect("taskId").to_owned();
        let task = settled_lucid_task(&server, &id).await;
        assert_eq!(task["status"], "failed", "{skill}: {task}");
        assert_eq!(task["error"]["code"], "artifacts_too_large", "{skill}: {task}");
        let stored = runtime.get(&accord_engine::task::TaskId::new(id), &owner).await.expect("task");
        let kept: usize =
            stored.artifacts.iter().map(|artifact| serde_json::to_vec(artifact).expect("json").len()).sum();
        assert!(kept <= 16 * MIB, "{skill}: {kept} bytes of artifacts kept");
    }
}

#[tokio::test]
async fn a_list_of_large_tasks_is_bounded_in_bytes_and_its_cursor_visits_every_task() {
    let (server, _) = server().await;
    let text = "l".repeat(MIB - 100);
    let mut created = Vec::new();
    for _ in 0..12 {
        let body = rpc(&server, "/a2a/jsonrpc", "SendMessage", a2a_message(&text, "echo", None)).await;
        assert_eq!(body["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
        created.push(body["result"]["task"]["id"].as_str().expect("id").to_owned());
    }

    // Without historyLength a listed task carries no history: a list is small.
    let body = rpc(&server, "/a2a/jsonrpc", "ListTasks", json!({"pageSize": 100})).await;
    let tasks = body["result"]["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 12, "{}", body["result"]["nextPageToken"]);
    assert!(tasks.iter().all(|task| task.get("history").is_none_or(|history| history == &json!([]))));
    // A large historyLength is capped, and the page bounded: each page at most about 4 MiB.
    let (mut seen, mut pages, mut token) = (Vec::new(), 0, String::new());
    loop {
        let mut params = json!({"pageSize": 100, "historyLength": 1000, "includeArtifacts": true});
        if !token.is_empty() {
            params["pageToken"] = json!(token);
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": params});
        let (status, body, bytes) = post(&server, "/a2a/jsonrpc", &body, &[]).await;
        assert_eq!(status, 200);
        assert!(bytes.len() <= 5 * MIB, "a page of {} bytes", bytes.len());
        let result = &body["result"];
        seen.extend(
            result["tasks"].as_array().expect("tasks").iter().map(|task| task["id"].as_str().expect("id").to_owned()),
        );
        assert_eq!(result["totalSize"], 12);
        pages += 1;
        token = result["nextPageToken"].as_str().expect("token").to_owned();
        if token.is_empty() {
            break;
        }
        assert!(pages < 20, "the pages never end");
    }
    assert!(pages >= 3, "{pages} pages");
    created.reverse();
    assert_eq!(seen, created, "every task once, newest first");

    // The Lucid list too: a page stops early and says more follow; offsets visit every task.
    let input = json!({"text": text});
    for _ in 0..6 {
        let (status, body, _) =
            post(&server, "/tasks", &lucid_task("echo", &input), &[("task-access-token", TOKEN)]).await;
        assert_eq!(status, 200, "{body}");
        settled_lucid_task(&server, body["taskId"].as_str().expect("taskId")).await;
    }
    let (mut listed, mut offset) = (0, 0);
    loop {
        let (status, body, bytes) = get(&server, &format!("/tasks?limit=50&offset={offset}")).await;
        assert_eq!(status, 200, "{body}");
        assert!(bytes <= 5 * MIB, "a page of {bytes} bytes");
        let count = body["tasks"].as_array().expect("tasks").len();
        assert!(count > 0);
        listed += count;
        offset += count;
        if body["hasMore"] != true {
            break;
        }
    }
    assert_eq!(listed, 6);
    assert!(offset > 0);
}
