//! The Lucid `/tasks` routes over real HTTP, with the crate's own client.

use std::sync::Arc;
use std::time::Duration;

use accord_client::{Client, ClientError, ListOptions, SendOptions, TaskAccess};
use accord_engine::task::{MemoryStore, MemoryStoreConfig, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill, SkillError};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use accord_test_support::probe::Probe;
use accord_types::card::AgentCard;
use accord_types::tasks::TaskStatus;
use futures_util::StreamExt;
use serde_json::{Value, json};

const TOKEN: &str = "owner-token-0123456789";
const OTHER: &str = "other-token-0123456789";

fn agent(probe: Arc<Probe>) -> Agent {
    Agent::builder("tasks-test")
        .skill(
            Skill::builder("echo")
                .input_schema(
                    json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}),
                )
                .invoke(|run: Run| async move {
                    Ok(Outcome::Completed(Completion {
                        model: Some("m1".into()),
                        ..Completion::new(run.input().clone())
                    }))
                }),
        )
        .skill(Skill::builder("fail").invoke(|_run: Run| async move {
            Err::<Outcome, _>(SkillError::new("upstream_down", "the upstream is down"))
        }))
        .skill(Skill::builder("wait").invoke(move |run: Run| {
            let probe = Arc::clone(&probe);
            async move {
                probe.started();
                run.cancelled().await;
                probe.cancelled();
                Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
            }
        }))
        .skill(
            Skill::builder("stream-only")
                .stream(|_run: Run| async move { Ok(Outcome::Completed(Completion::default())) }),
        )
        .build()
        .expect("agent")
}

struct Fixture {
    server: TestServer,
    probe: Arc<Probe>,
    card: AgentCard,
    client: Client,
}

async fn fixture_with(store: MemoryStoreConfig, runtime: RuntimeConfig) -> Fixture {
    let probe = Probe::new();
    let agent = agent(Arc::clone(&probe));
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::new(store)), runtime);
    let server = TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime))).await;
    let client = Client::new();
    let card = client.fetch_card(&server.origin).await.expect("card");
    Fixture { server, probe, card, client }
}

async fn fixture() -> Fixture {
    fixture_with(MemoryStoreConfig::default(), RuntimeConfig::default()).await
}

async fn request(
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, bytes::Bytes) {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(token) = token {
        request = request.header("task-access-token", token);
    }
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_owned());
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.expect("body"))
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("JSON body")
}

fn send_body(skill: &str, text: &str) -> String {
    json!({"message": {"role": "user", "content": {"text": text}}, "skillId": skill}).to_string()
}

async fn create(f: &Fixture, skill: &str, text: &str, token: Option<&str>) -> Value {
    let (status, _, body) =
        request(reqwest::Method::POST, &f.server.url("/tasks"), token, Some(&send_body(skill, text))).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    json_of(&body)
}

async fn wait_terminal(f: &Fixture, id: &str, token: &str) -> Value {
    let access = TaskAccess { task_id: id.to_owned(), access_token: token.to_owned() };
    let task = f.client.wait_for_task(&f.card, &access, Duration::from_secs(10)).await.expect("ends");
    serde_json::to_value(task).expect("json")
}

#[tokio::test]
async fn a_task_runs_to_completion_and_is_read_with_its_token() {
    let f = fixture().await;
    let created = create(&f, "echo", r#"{"text":"hi"}"#, Some(TOKEN)).await;
    assert_eq!(created["accessToken"], TOKEN);
    assert_eq!(created["status"], "running");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    assert_eq!(id.len(), 36);
    let task = wait_terminal(&f, &id, TOKEN).await;
    assert_eq!(task["status"], "completed");
    assert_eq!(task["result"], json!({"output": {"text": "hi"}, "model": "m1"}));
    assert!(task.get("error").is_none() && task.get("contextId").is_none());
    assert!(task["createdAt"].as_str().expect("createdAt").ends_with('Z'));

    let (status, _, body) =
        request(reqwest::Method::GET, &f.server.url(&format!("/tasks/{id}")), Some(TOKEN), None).await;
    assert_eq!((status, json_of(&body)), (200, task));

    // The card lists the task faces beside the Lucid profile (the A2A 0.3 interfaces after the 1.0
    // ones: docs/a2a-0.3.md).
    let bindings: Vec<&str> = f.card.supported_interfaces.iter().map(|i| i.protocol_binding.as_str()).collect();
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
}

#[tokio::test]
async fn free_tasks_get_a_generated_token() {
    let f = fixture().await;
    let created = create(&f, "echo", r#"{"text":"x"}"#, None).await;
    let token = created["accessToken"].as_str().expect("token");
    assert!(token.len() >= 32, "{token}");
    let id = created["taskId"].as_str().expect("id");
    assert_eq!(wait_terminal(&f, id, token).await["status"], "completed");
}

#[tokio::test]
async fn a_failed_task_carries_its_error() {
    let f = fixture().await;
    let created = create(&f, "fail", "{}", Some(TOKEN)).await;
    let task = wait_terminal(&f, created["taskId"].as_str().expect("id"), TOKEN).await;
    assert_eq!(task["status"], "failed");
    assert_eq!(task["error"], json!({"code": "upstream_down", "message": "the upstream is down"}));
    assert!(task.get("result").is_none());
}

#[tokio::test]
async fn token_rules_401_400_and_404() {
    let f = fixture().await;
    let created = create(&f, "echo", r#"{"text":"x"}"#, Some(TOKEN)).await;
    let id = created["taskId"].as_str().expect("id").to_owned();
    let routes = [
        (reqwest::Method::GET, format!("/tasks/{id}")),
        (reqwest::Method::GET, "/tasks".to_owned()),
        (reqwest::Method::POST, format!("/tasks/{id}/cancel")),
        (reqwest::Method::GET, format!("/tasks/{id}/subscribe")),
    ];
    let expected = json!({"error": {"code": "task_access_required",
        "message": "Task-Access-Token must contain 20 to 256 characters"}});
    for (method, path) in &routes {
        let (status, _, body) = request(method.clone(), &f.server.url(path), None, None).await;
        assert_eq!((status, json_of(&body)), (401, expected.clone()), "{method} {path} without a token");
        let (status, _, body) = request(method.clone(), &f.server.url(path), Some("short"), None).await;
        assert_eq!((status, json_of(&body)), (400, expected.clone()), "{method} {path} with a short token");
    }
    let (status, _, body) = request(
        reqwest::Method::POST,
        &f.server.url("/tasks"),
        Some("short"),
        Some(&send_body("echo", r#"{"text":"x"}"#)),
    )
    .await;
    assert_eq!((status, json_of(&body)), (400, expected));

    // Another owner sees nothing: 404 for the task, an empty list.
    for (method, path) in &routes[2..] {
        let (status, _, body) = request(method.clone(), &f.server.url(path), Some(OTHER), None).await;
        assert_eq!(status, 404, "{method} {path}");
        assert_eq!(json_of(&body)["error"]["code"], "task_not_found");
    }
    let (status, _, body) = request(reqwest::Method::GET, &f.server.url("/tasks"), Some(OTHER), None).await;
    assert_eq!((status, json_of(&body)), (200, json!({"tasks": [], "total": 0, "hasMore": false})));
}

#[tokio::test]
async fn a_wrong_token_and_an_unknown_id_answer_byte_for_byte_the_same() {
    let f = fixture().await;
    let created = create(&f, "echo", r#"{"text":"x"}"#, Some(TOKEN)).await;
    let id = created["taskId"].as_str().expect("id").to_owned();
    wait_terminal(&f, &id, TOKEN).await;
    // The same id asked of a server where the task exists (wrong token) and of one where it does not.
    let empty = fixture().await;
    for path in [format!("/tasks/{id}"), format!("/tasks/{id}/cancel"), format!("/tasks/{id}/subscribe")] {
        let method = if path.ends_with("cancel") { reqwest::Method::POST } else { reqwest::Method::GET };
        let (status_a, mut headers_a, body_a) = request(method.clone(), &f.server.url(&path), Some(OTHER), None).await;
        let (status_b, mut headers_b, body_b) = request(method, &empty.server.url(&path), Some(OTHER), None).await;
        headers_a.remove("date");
        headers_b.remove("date");
        assert_eq!(status_a, 404);
        assert_eq!((status_a, headers_a, body_a), (status_b, headers_b, body_b), "{path}");
    }
}

#[tokio::test]
async fn create_checks_the_body_in_the_profiles_order() {
    let f = fixture().await;
    let post = |body: String| {
        let url = f.server.url("/tasks");
        async move { request(reqwest::Method::POST, &url, Some(TOKEN), Some(&body)).await }
    };
    let (status, _, body) = post("{oops".into()).await;
    assert_eq!(
        (status, json_of(&body)),
        (400, json!({"error": {"code": "invalid_request", "message": "Invalid JSON"}}))
    );
    let invalid_body = json!({"error": {"code": "invalid_request", "message": "Invalid request body"}});
    for bad in [
        json!({"message": {"role": "user", "content": {"text": "x"}}}),
        json!({"skillId": " ", "message": {"role": "user", "content": {"text": "x"}}}),
        json!({"skillId": "echo", "message": {"role": "robot", "content": {"text": "x"}}}),
        json!({"skillId": "echo", "message": {"role": "user", "content": {"data": 1}}}),
        json!({"skillId": "echo", "message": {"role": "user", "content": {"text": "x"}}, "contextId": 5}),
        json!({"skillId": "echo", "message": {"role": "user", "content": {"text": "x"}}, "metadata": []}),
        json!([]),
    ] {
        let (status, _, body) = post(bad.to_string()).await;
        assert_eq!((status, json_of(&body)), (400, invalid_body.clone()), "{bad}");
    }
    let (status, _, body) = post(send_body("nope", "{}")).await;
    assert_eq!(
        (status, json_of(&body)),
        (404, json!({"error": {"code": "skill_not_found", "message": "Skill \"nope\" not found"}}))
    );
    let (status, _, body) = post(send_body("stream-only", "{}")).await;
    assert_eq!(
        (status, json_of(&body)),
        (501, json!({"error": {"code": "not_implemented", "message": "Skill \"stream-only\" has no handler"}}))
    );
    let (status, _, body) = post(send_body("echo", r#"{"text":5}"#)).await;
    assert_eq!(status, 400);
    assert_eq!(json_of(&body)["error"]["code"], "invalid_input");
    assert_eq!(json_of(&body)["error"]["issues"][0]["path"], json!(["text"]));
    // Plain text that is not JSON is the input string itself (and fails this object schema).
    let (status, _, body) = post(send_body("echo", "not json")).await;
    assert_eq!((status, json_of(&body)["error"]["code"].clone()), (400, json!("invalid_input")));
    // Parts: the first part's text.
    let parts =
        json!({"skillId": "echo", "message": {"role": "user", "content": {"parts": [{"text": "{\"text\":\"p\"}"}]}}});
    let (status, _, body) = post(parts.to_string()).await;
    assert_eq!(status, 200);
    let task = wait_terminal(&f, json_of(&body)["taskId"].as_str().expect("id"), TOKEN).await;
    assert_eq!(task["result"]["output"], json!({"text": "p"}));
}

#[tokio::test]
async fn cancel_running_then_not_running_then_unknown() {
    let f = fixture().await;
    let created = create(&f, "wait", "{}", Some(TOKEN)).await;
    let id = created["taskId"].as_str().expect("id").to_owned();
    tokio::time::timeout(Duration::from_secs(10), async {
        while f.probe.starts() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the handler started");
    let cancel_url = f.server.url(&format!("/tasks/{id}/cancel"));
    let (status, _, body) = request(reqwest::Method::POST, &cancel_url, Some(TOKEN), None).await;
    assert_eq!(status, 200);
    assert_eq!(json_of(&body)["status"], "cancelled");
    tokio::time::timeout(Duration::from_secs(10), f.probe.on_cancel.notified()).await.expect("handler saw the cancel");
    // The handler's late answer does not overwrite the cancellation.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(wait_terminal(&f, &id, TOKEN).await["status"], "cancelled");

    let (status, _, body) = request(reqwest::Method::POST, &cancel_url, Some(TOKEN), None).await;
    assert_eq!(
        (status, json_of(&body)),
        (400, json!({"error": {"code": "invalid_state", "message": format!("Task \"{id}\" is not running")}}))
    );
    let (status, _, body) =
        request(reqwest::Method::POST, &f.server.url("/tasks/missing/cancel"), Some(TOKEN), None).await;
    assert_eq!(
        (status, json_of(&body)),
        (404, json!({"error": {"code": "task_not_found", "message": "Task \"missing\" not found"}}))
    );
}

#[tokio::test]
async fn capacity_holds_only_active_tasks_then_refuses() {
    let f = fixture_with(MemoryStoreConfig { max_tasks: 2, ..MemoryStoreConfig::default() }, RuntimeConfig::default())
        .await;
    let done = create(&f, "echo", r#"{"text":"a"}"#, Some(TOKEN)).await;
    wait_terminal(&f, done["taskId"].as_str().expect("id"), TOKEN).await;
    create(&f, "wait", "{}", Some(TOKEN)).await;
    // Full: the terminal task is evicted for a new one.
    create(&f, "wait", "{}", Some(TOKEN)).await;
    let (status, _, body) = request(
        reqwest::Method::GET,
        &f.server.url(done["taskId"].as_str().map(|id| format!("/tasks/{id}")).as_deref().expect("id")),
        Some(TOKEN),
        None,
    )
    .await;
    assert_eq!((status, json_of(&body)["error"]["code"].clone()), (404, json!("task_not_found")), "evicted");
    // Full of active tasks: refused.
    let (status, _, body) = request(
        reqwest::Method::POST,
        &f.server.url("/tasks"),
        Some(TOKEN),
        Some(&send_body("echo", r#"{"text":"b"}"#)),
    )
    .await;
    assert_eq!(
        (status, json_of(&body)),
        (
            503,
            json!({"error": {"code": "task_capacity_exhausted", "message": "Task capacity (2) is exhausted by active tasks"}})
        )
    );
}

#[tokio::test]
async fn a_task_past_max_run_fails_with_task_timeout_and_its_handler_is_cancelled() {
    let f =
        fixture_with(MemoryStoreConfig::default(), RuntimeConfig::default().max_run(Duration::from_millis(200))).await;
    let created = create(&f, "wait", "{}", Some(TOKEN)).await;
    let task = wait_terminal(&f, created["taskId"].as_str().expect("id"), TOKEN).await;
    assert_eq!(task["status"], "failed");
    assert_eq!(task["error"], json!({"code": "task_timeout", "message": "Task exceeded its 200ms execution limit"}));
    tokio::time::timeout(Duration::from_secs(10), f.probe.on_cancel.notified()).await.expect("handler cancelled");
}

#[tokio::test]
async fn list_filters_pages_and_validates() {
    let f = fixture().await;
    let mut ids = Vec::new();
    for (skill, context) in [("echo", "c1"), ("fail", "c1"), ("echo", "c2"), ("echo", "c2")] {
        let body = json!({"message": {"role": "user", "content": {"text": "{\"text\":\"x\"}"}}, "skillId": skill, "contextId": context});
        let (status, _, body) =
            request(reqwest::Method::POST, &f.server.url("/tasks"), Some(TOKEN), Some(&body.to_string())).await;
        assert_eq!(status, 200);
        let id = json_of(&body)["taskId"].as_str().expect("id").to_owned();
        wait_terminal(&f, &id, TOKEN).await;
        ids.push(id);
        // Distinct creation times keep the order unambiguous.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let list = |options: ListOptions| {
        let f = &f;
        async move { f.client.list_tasks(&f.card, TOKEN, &options).await.expect("list") }
    };
    let all = list(ListOptions::default()).await;
    assert_eq!(all.total, Some(4));
    let listed: Vec<&str> = all.tasks.iter().map(|task| task.task_id.as_str()).collect();
    assert_eq!(listed, [ids[3].as_str(), &ids[2], &ids[1], &ids[0]], "newest first");

    let c1 = list(ListOptions { context_id: Some("c1".into()), ..ListOptions::default() }).await;
    assert_eq!(c1.tasks.len(), 2);
    assert!(c1.tasks.iter().all(|task| task.context_id.as_deref() == Some("c1")));
    let failed = list(ListOptions { status: vec![TaskStatus::Failed], ..ListOptions::default() }).await;
    assert_eq!(failed.tasks.len(), 1);
    assert_eq!(failed.tasks[0].task_id, ids[1]);
    let both =
        list(ListOptions { status: vec![TaskStatus::Failed, TaskStatus::Completed], ..ListOptions::default() }).await;
    assert_eq!(both.total, Some(4));
    let page = list(ListOptions { limit: Some(2), offset: Some(1), ..ListOptions::default() }).await;
    let paged: Vec<&str> = page.tasks.iter().map(|task| task.task_id.as_str()).collect();
    assert_eq!(paged, [ids[2].as_str(), &ids[1]]);
    assert_eq!((page.total, page.has_more), (Some(4), Some(true)));
    let last = list(ListOptions { limit: Some(2), offset: Some(2), ..ListOptions::default() }).await;
    assert_eq!(last.has_more, Some(false));

    let paging = "limit must be an integer from 0 to 1000 and offset must be a non-negative integer";
    for query in ["limit=1001", "limit=-1", "limit=abc", "offset=-2", "offset=1.5"] {
        let (status, _, body) =
            request(reqwest::Method::GET, &f.server.url(&format!("/tasks?{query}")), Some(TOKEN), None).await;
        assert_eq!(
            (status, json_of(&body)),
            (400, json!({"error": {"code": "invalid_request", "message": paging}})),
            "{query}"
        );
    }
    let (status, _, body) =
        request(reqwest::Method::GET, &f.server.url("/tasks?status=running,done"), Some(TOKEN), None).await;
    assert_eq!(
        (status, json_of(&body)),
        (400, json!({"error": {"code": "invalid_request", "message": "status contains an unsupported task state"}}))
    );
    let (status, _, body) = request(reqwest::Method::GET, &f.server.url("/tasks?limit=0"), Some(TOKEN), None).await;
    assert_eq!((status, json_of(&body)["tasks"].clone(), json_of(&body)["total"].clone()), (200, json!([]), json!(4)));
}

async fn updates(f: &Fixture, id: &str, after: Option<&str>) -> Vec<(String, String, Value)> {
    let access = TaskAccess { task_id: id.to_owned(), access_token: TOKEN.to_owned() };
    let stream = f.client.subscribe_task(&f.card, &access, after).await.expect("subscribe");
    let events: Vec<_> =
        tokio::time::timeout(Duration::from_secs(10), stream.collect()).await.expect("the stream ends");
    events
        .into_iter()
        .map(|event| {
            let event = event.expect("event");
            (event.id.unwrap_or_default(), event.event, serde_json::to_value(event.data).expect("json"))
        })
        .collect()
}

#[tokio::test]
async fn subscriptions_report_completed_failed_and_cancelled_tasks_then_close() {
    let f = fixture().await;
    let done = create(&f, "echo", r#"{"text":"s"}"#, Some(TOKEN)).await;
    let id = done["taskId"].as_str().expect("id");
    wait_terminal(&f, id, TOKEN).await;
    let events = updates(&f, id, None).await;
    let names: Vec<&str> = events.iter().map(|(_, name, _)| name.as_str()).collect();
    assert_eq!(names, ["statusUpdate", "resultUpdate"], "submitted and working are both `running`: sent once");
    assert_eq!(events[0].2, json!({"taskId": id, "status": "running"}));
    assert_eq!(
        events[1].2,
        json!({"taskId": id, "status": "completed", "result": {"output": {"text": "s"}, "model": "m1"}})
    );

    let failed = create(&f, "fail", "{}", Some(TOKEN)).await;
    let id = failed["taskId"].as_str().expect("id");
    wait_terminal(&f, id, TOKEN).await;
    let events = updates(&f, id, None).await;
    assert_eq!(
        events.last().map(|(_, name, data)| (name.as_str(), data["status"].clone())),
        Some(("error", json!("failed")))
    );
    assert_eq!(events.last().map(|(_, _, data)| data["error"]["code"].clone()), Some(json!("upstream_down")));

    // Live: subscribe to a running task, then cancel it.
    let running = create(&f, "wait", "{}", Some(TOKEN)).await;
    let id = running["taskId"].as_str().expect("id").to_owned();
    let access = TaskAccess { task_id: id.clone(), access_token: TOKEN.to_owned() };
    let mut stream = f.client.subscribe_task(&f.card, &access, None).await.expect("subscribe");
    let first = stream.next().await.expect("event").expect("ok");
    assert_eq!((first.event.as_str(), first.data.status), ("statusUpdate", Some(TaskStatus::Running)));
    f.client.cancel_task(&f.card, &access).await.expect("cancel");
    let mut rest = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("no stall") {
        rest.push(event.expect("event"));
    }
    let last = rest.last().expect("a final update");
    assert_eq!((last.event.as_str(), last.data.status), ("statusUpdate", Some(TaskStatus::Cancelled)));

    // Resuming after the first event starts after it and ends with the same final update.
    let all = updates(&f, &id, None).await;
    let first_id: u64 = all[0].0.parse().expect("numeric id");
    let resumed = updates(&f, &id, Some(&all[0].0)).await;
    assert!(resumed.iter().all(|(event_id, _, _)| event_id.parse::<u64>().expect("numeric id") > first_id));
    assert_eq!(resumed.last(), all.last());
}

#[tokio::test]
async fn the_client_keeps_both_keys_when_creation_fails() {
    let f = fixture().await;
    let options = SendOptions {
        access_token: Some(TOKEN.into()),
        idempotency_key: Some("idem-key-0123456789-abc".into()),
        ..SendOptions::default()
    };
    let error = f.client.send_message(&f.card, "echo", json!({"text": 5}), options.clone()).await.expect_err("400");
    assert_eq!((error.status(), error.error_code()), (Some(400), Some("invalid_input")), "{error}");
    let error = error.task_creation().expect("a task creation failure");
    assert_eq!(error.access_token, TOKEN);
    assert_eq!(error.idempotency_key, "idem-key-0123456789-abc");
    assert_eq!(error.status, Some(400));
    assert_eq!(error.body.as_ref().and_then(|body| body.pointer("/error/code")).cloned(), Some(json!("invalid_input")));

    let sent =
        f.client.send_message(&f.card, "echo", json!({"text": "ok"}), SendOptions::default()).await.expect("sent");
    assert_eq!(sent.status, TaskStatus::Running);
    assert!(sent.access.access_token.len() >= 20 && sent.idempotency_key.len() >= 20);
    assert!(!format!("{:?}", sent.access).contains(&sent.access.access_token), "the token never prints");
    let task = f.client.wait_for_task(&f.card, &sent.access, Duration::from_secs(10)).await.expect("done");
    assert_eq!(task.result.map(|result| result.output), Some(json!({"text": "ok"})));

    let origin = f.server.origin.clone();
    let card = f.card.clone();
    f.server.stop().await;
    let error = Client::new().send_message(&card, "echo", json!({"text": "x"}), options).await.expect_err("down");
    assert!(error.is_unreachable(), "{error:?} at {origin}");
    let failure = error.task_creation().expect("a task creation failure");
    assert_eq!((failure.access_token.as_str(), failure.status), (TOKEN, None));
    assert!(matches!(failure.cause.as_deref(), Some(ClientError::Transport { .. })), "{error:?} at {origin}");
}

#[tokio::test]
async fn without_a_runtime_no_task_routes_exist() {
    let agent = agent(Probe::new());
    let server = TestServer::start(agent.router()).await;
    let (status, _, _) =
        request(reqwest::Method::POST, &server.url("/tasks"), Some(TOKEN), Some(&send_body("echo", "{}"))).await;
    assert_eq!(status, 404);
    let card: Value =
        reqwest::get(server.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    assert!(card["capabilities"].get("stateTransitionHistory").is_none(), "{card}");
    let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
    assert_eq!(interfaces.len(), 1, "only the Lucid profile, without task faces: {card}");
}
