//! Push notifications end to end over real HTTP: the four push operations on both A2A bindings,
//! the inline config of a send, deliveries received by a real local receiver (with the
//! configured `Authorization` and token checked there), retries, dead letters, the SSRF guard at
//! config time, owner isolation, and a server without push.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use accord_engine::task::{
    AccessToken, MemoryStore, OwnerHash, RuntimeConfig, TaskEventKind, TaskId, TaskRuntime, TaskStore,
};
use accord_engine::{Agent, Completion, Message, Outcome, Run, Skill};
use accord_server::auth::{BearerAuthLayer, BearerTokens};
use accord_server::push::PushSettings;
use accord_server::push::guard::WebhookPolicy;
use accord_server::push::receiver::{Notification, PushReceiver};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use accord_types::a2a::StreamResponse;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const ALICE: &str = "alice-push-test-token-0001";
const BOB: &str = "bob-push-test-token-00000002";

fn agent() -> Agent {
    Agent::builder("push-test")
        .skill(Skill::builder("echo").invoke(|run: Run| async move {
            run.emit(accord_engine::RunEvent::Message(Message::agent_text("working on it"))).await;
            Ok(Outcome::Completed(Completion::new(run.input().clone())))
        }))
        // Asks once, completes on the follow-up.
        .skill(Skill::builder("ask").invoke(|run: Run| async move {
            let answered = run.message().is_some_and(|message| {
                message.parts.iter().any(|part| matches!(part, accord_engine::Part::Text(text) if text == "answer"))
            });
            if answered {
                Ok(Outcome::Completed(Completion::new(json!("thanks"))))
            } else {
                Ok(Outcome::InputRequired(Message::agent_text("more, please")))
            }
        }))
        .build()
        .expect("agent")
}

struct Agency {
    server: TestServer,
    store: Arc<MemoryStore>,
}

/// A server whose push settings allow loopback and retry fast.
async fn agency(push: Option<PushSettings>) -> Agency {
    let agent = agent();
    let store = Arc::new(MemoryStore::default());
    let runtime = TaskRuntime::new(agent.clone(), Arc::clone(&store) as Arc<dyn TaskStore>, RuntimeConfig::default());
    let mut config = ServerConfig::default().tasks(runtime);
    config.push = push;
    let tokens = BearerTokens::new()
        .with(&AccessToken::parse(ALICE).expect("token"), "alice", Vec::<String>::new())
        .with(&AccessToken::parse(BOB).expect("token"), "bob", Vec::<String>::new());
    let server = TestServer::start(agent.router_with(config).layer(BearerAuthLayer::new(tokens))).await;
    Agency { server, store }
}

fn fast_push() -> PushSettings {
    PushSettings::default()
        .policy(WebhookPolicy::default().allow_loopback())
        .retries(5, Duration::from_millis(50), Duration::from_millis(200))
        .timeout(Duration::from_secs(2))
        .poll(Duration::from_millis(20))
}

/// A real receiver checking the token and `Authorization` value.
async fn receiver(token: &str, authorization: &str) -> (TestServer, mpsc::Receiver<Notification>) {
    let (router, notifications) = PushReceiver::new().token(token).authorization(authorization).into_router();
    (TestServer::start(router).await, notifications)
}

async fn rpc(s: &TestServer, token: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = reqwest::Client::new()
        .post(s.url("/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .header("authorization", format!("Bearer {token}"))
        .json(&body)
        .send()
        .await
        .expect("response");
    response.json().await.expect("json")
}

async fn rest(s: &TestServer, token: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, s.url(&format!("/a2a/rest{path}")))
        .header("a2a-version", "1.0")
        .header("authorization", format!("Bearer {token}"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn send(text: &str, configuration: Value) -> Value {
    json!({
        "message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": configuration,
    })
}

fn reason(error: &Value) -> Option<&str> {
    let details = error["data"].as_array().or_else(|| error["error"]["details"].as_array())?;
    details.iter().find_map(|detail| detail["reason"].as_str())
}

/// Notifications until one ends the task (a completed status).
async fn until_completed(notifications: &mut mpsc::Receiver<Notification>) -> Vec<Notification> {
    let mut seen = Vec::new();
    let collect = async {
        while let Some(notification) = notifications.recv().await {
            let done = matches!(&notification.response, StreamResponse::StatusUpdate(update)
                if update.status.state == accord_types::a2a::TaskState::Completed);
            seen.push(notification);
            if done {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), collect).await.expect("the task's updates arrive");
    seen
}

fn states(notifications: &[Notification]) -> Vec<String> {
    notifications
        .iter()
        .filter_map(|notification| match &notification.response {
            StreamResponse::StatusUpdate(update) => Some(format!("{:?}", update.status.state)),
            StreamResponse::ArtifactUpdate(update) => Some(format!("artifact:{}", update.artifact.artifact_id)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_inline_config_receives_every_update_with_its_credentials() {
    let a = agency(Some(fast_push())).await;
    let (hook, mut notifications) = receiver("tok-inline", "Bearer hook-secret").await;
    let configuration = json!({"taskPushNotificationConfig": {
        "url": hook.url("/webhook"), "token": "tok-inline",
        "authentication": {"scheme": "Bearer", "credentials": "hook-secret"},
    }});
    let answer = rpc(&a.server, ALICE, "SendMessage", send("hello", configuration)).await;
    let task_id = answer["result"]["task"]["id"].as_str().expect("a task").to_owned();
    let seen = until_completed(&mut notifications).await;
    assert_eq!(
        states(&seen),
        ["Submitted", "Working", "Working", "artifact:result", "Completed"],
        "every update, in order (the agent's message is a working status)"
    );
    let mut ids: Vec<_> = seen.iter().map(|n| n.delivery_id.clone().expect("a delivery id")).collect();
    assert!(ids.iter().all(|id| id.starts_with(&format!("{task_id}:"))), "{ids:?}");
    ids.dedup();
    assert_eq!(ids.len(), seen.len(), "one id per update");
    assert!(seen.iter().all(|n| n.attempt == Some(1)));
}

#[tokio::test]
async fn the_push_operations_work_on_both_bindings() {
    let a = agency(Some(fast_push())).await;
    let (rpc_hook, mut rpc_notifications) = receiver("tok-rpc", "Basic dXNlcjpwdw==").await;
    let (rest_hook, mut rest_notifications) = receiver("tok-rest", "Bearer rest-secret").await;
    let mut ask = send("question", json!({}));
    ask["message"]["metadata"] = json!({"skillId": "ask"});
    let sent = rpc(&a.server, ALICE, "SendMessage", ask).await;
    assert_eq!(sent["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{sent}");
    let task = sent["result"]["task"]["id"].as_str().expect("task").to_owned();

    // JSON-RPC: create (with a client-chosen id), get; REST: create, list, page.
    let config = json!({"taskId": task, "id": "rpc-hook", "url": rpc_hook.url("/webhook"), "token": "tok-rpc",
        "authentication": {"scheme": "Basic", "credentials": "dXNlcjpwdw=="}});
    let created = rpc(&a.server, ALICE, "CreateTaskPushNotificationConfig", config).await;
    assert_eq!(created["result"]["id"], "rpc-hook", "{created}");
    assert_eq!(created["result"]["taskId"], json!(task));
    let got = rpc(&a.server, ALICE, "GetTaskPushNotificationConfig", json!({"taskId": task, "id": "rpc-hook"})).await;
    assert_eq!(got["result"]["url"], json!(rpc_hook.url("/webhook")));
    assert_eq!(got["result"]["authentication"]["scheme"], "Basic");

    let rest_config = json!({"url": rest_hook.url("/webhook"), "id": "rest-hook", "token": "tok-rest",
        "authentication": {"scheme": "Bearer", "credentials": "rest-secret"}});
    let path = format!("/tasks/{task}/pushNotificationConfigs");
    let (status, created) = rest(&a.server, ALICE, reqwest::Method::POST, &path, Some(rest_config)).await;
    assert_eq!((status, created["id"].clone(), created["taskId"].clone()), (200, json!("rest-hook"), json!(task)));
    let (status, list) = rest(&a.server, ALICE, reqwest::Method::GET, &path, None).await;
    assert_eq!(status, 200);
    let ids: Vec<_> = list["configs"].as_array().expect("configs").iter().map(|c| c["id"].clone()).collect();
    assert_eq!(ids, [json!("rest-hook"), json!("rpc-hook")]);
    assert_eq!(list["nextPageToken"], "");
    let (status, page) = rest(&a.server, ALICE, reqwest::Method::GET, &format!("{path}?pageSize=1"), None).await;
    assert_eq!((status, page["configs"].as_array().map(Vec::len)), (200, Some(1)));
    assert_eq!(page["nextPageToken"], "rest-hook");
    let rest_page = json!({"taskId": task, "pageToken": "rest-hook"});
    let listed = rpc(&a.server, ALICE, "ListTaskPushNotificationConfigs", rest_page).await;
    assert_eq!(listed["result"]["configs"][0]["id"], "rpc-hook", "{listed}");
    assert_eq!(listed["result"]["configs"].as_array().map(Vec::len), Some(1));

    // The follow-up's updates reach both webhooks, each with its own credentials (the receivers
    // refuse anything else with 401, which would hold the updates back).
    let mut follow_up = send("answer", json!({}));
    follow_up["message"]["taskId"] = json!(task);
    let answered = rpc(&a.server, ALICE, "SendMessage", follow_up).await;
    assert_eq!(answered["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answered}");
    for notifications in [&mut rpc_notifications, &mut rest_notifications] {
        let seen = until_completed(notifications).await;
        assert_eq!(states(&seen).first().map(String::as_str), Some("Working"), "from the follow-up on");
        assert_eq!(states(&seen).last().map(String::as_str), Some("Completed"));
    }

    let (status, deleted) = rest(&a.server, ALICE, reqwest::Method::DELETE, &format!("{path}/rest-hook"), None).await;
    assert_eq!((status, deleted), (200, json!({})));
    let again =
        rpc(&a.server, ALICE, "DeleteTaskPushNotificationConfig", json!({"taskId": task, "id": "rest-hook"})).await;
    assert_eq!(again["result"], json!({}), "delete is idempotent");
    let gone = rpc(&a.server, ALICE, "GetTaskPushNotificationConfig", json!({"taskId": task, "id": "rest-hook"})).await;
    assert_eq!(reason(&gone["error"]), Some("TASK_NOT_FOUND"), "{gone}");
    let (status, _) = rest(&a.server, ALICE, reqwest::Method::GET, &format!("{path}/rest-hook"), None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn another_owner_sees_neither_the_task_nor_its_configs() {
    let a = agency(Some(fast_push())).await;
    let sent = rpc(&a.server, ALICE, "SendMessage", send("mine", json!({}))).await;
    let task = sent["result"]["task"]["id"].as_str().expect("task").to_owned();
    let config = json!({"taskId": task, "id": "h", "url": "https://hooks.example.com/x"});
    assert_eq!(rpc(&a.server, ALICE, "CreateTaskPushNotificationConfig", config.clone()).await["result"]["id"], "h");
    for (method, params) in [
        ("CreateTaskPushNotificationConfig", config),
        ("GetTaskPushNotificationConfig", json!({"taskId": task, "id": "h"})),
        ("ListTaskPushNotificationConfigs", json!({"taskId": task})),
        ("DeleteTaskPushNotificationConfig", json!({"taskId": task, "id": "h"})),
    ] {
        let answer = rpc(&a.server, BOB, method, params).await;
        assert_eq!(reason(&answer["error"]), Some("TASK_NOT_FOUND"), "{method}: {answer}");
    }
    let (status, _) =
        rest(&a.server, BOB, reqwest::Method::GET, &format!("/tasks/{task}/pushNotificationConfigs/h"), None).await;
    assert_eq!(status, 404);
    let still = rpc(&a.server, ALICE, "GetTaskPushNotificationConfig", json!({"taskId": task, "id": "h"})).await;
    assert_eq!(still["result"]["id"], "h", "bob's delete changed nothing");
}

#[tokio::test]
async fn refused_webhook_targets_are_answered_before_anything_is_stored() {
    let a = agency(Some(PushSettings::default())).await;
    let sent = rpc(&a.server, ALICE, "SendMessage", send("x", json!({}))).await;
    let task = sent["result"]["task"]["id"].as_str().expect("task").to_owned();
    for url in [
        "http://hooks.example.com/plain-http",
        "https://127.0.0.1/loopback",
        "https://10.1.2.3/private",
        "https://169.254.169.254/latest/meta-data",
        "https://[::ffff:10.0.0.1]/mapped",
        "https://[fd00::1]/ula",
        "not a url",
    ] {
        let answer =
            rpc(&a.server, ALICE, "CreateTaskPushNotificationConfig", json!({"taskId": task, "url": url})).await;
        assert_eq!(answer["error"]["code"], -32602, "{url}: {answer}");
        let (status, body) = rest(
            &a.server,
            ALICE,
            reqwest::Method::POST,
            &format!("/tasks/{task}/pushNotificationConfigs"),
            Some(json!({"url": url})),
        )
        .await;
        assert_eq!(status, 400, "{url}: {body}");
    }
    // Inline on a send: refused before the task starts.
    let inline = json!({"taskPushNotificationConfig": {"url": "https://192.168.1.1/hook"}});
    let answer = rpc(&a.server, ALICE, "SendMessage", send("y", inline)).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let listed = rpc(&a.server, ALICE, "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
    assert_eq!(listed["result"]["configs"], json!([]));
    let list = rpc(&a.server, ALICE, "ListTasks", json!({})).await;
    assert_eq!(list["result"]["totalSize"], 1, "the refused send started no task: {list}");
}

/// A receiver that fails its first `failures` requests with 503, then accepts.
async fn flaky(failures: usize) -> (TestServer, Arc<AtomicUsize>, mpsc::UnboundedReceiver<(HeaderMap, Value)>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::unbounded_channel();
    let counted = Arc::clone(&calls);
    let router = axum::Router::new().route(
        "/webhook",
        axum::routing::post(move |headers: HeaderMap, body: axum::Json<Value>| {
            let counted = Arc::clone(&counted);
            let tx = tx.clone();
            async move {
                let call = counted.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send((headers, body.0));
                if call < failures { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK }
            }
        }),
    );
    (TestServer::start(router).await, calls, rx)
}

#[tokio::test]
async fn a_receiver_that_fails_three_times_gets_the_update_on_the_fourth_attempt() {
    let a = agency(Some(fast_push())).await;
    let (hook, _calls, mut requests) = flaky(3).await;
    let configuration = json!({"taskPushNotificationConfig": {"url": hook.url("/webhook"), "id": "flaky"}});
    rpc(&a.server, ALICE, "SendMessage", send("now", configuration)).await;
    let mut attempts = Vec::new();
    let read = async {
        while let Some((headers, body)) = requests.recv().await {
            let id = headers["x-a2a-delivery-id"].to_str().expect("id").to_owned();
            let attempt = headers["x-a2a-delivery-attempt"].to_str().expect("attempt").to_owned();
            attempts.push((id, attempt, body));
            if attempts.len() == 5 {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.expect("the retries and the next update arrive");
    let first_id = attempts[0].0.clone();
    assert_eq!(
        attempts[..4].iter().map(|(id, attempt, _)| (id.clone(), attempt.clone())).collect::<Vec<_>>(),
        (1..=4).map(|n| (first_id.clone(), n.to_string())).collect::<Vec<_>>(),
        "the same update, same delivery id, attempts 1 to 4"
    );
    assert_eq!(attempts[0].2["statusUpdate"]["status"]["state"], "TASK_STATE_SUBMITTED");
    assert_ne!(attempts[4].0, first_id, "then the next update, in order");
    assert_eq!(attempts[4].1, "1");
}

#[tokio::test]
async fn an_update_given_up_on_is_a_dead_letter_in_the_task_log() {
    let settings = fast_push().retries(2, Duration::from_millis(20), Duration::from_millis(20));
    let a = agency(Some(settings)).await;
    let (hook, calls, _requests) = flaky(usize::MAX).await;
    let configuration = json!({"taskPushNotificationConfig": {"url": hook.url("/webhook"), "id": "down"}});
    let sent = rpc(&a.server, ALICE, "SendMessage", send("lost", configuration)).await;
    let task = TaskId::new(sent["result"]["task"]["id"].as_str().expect("task"));
    let owner: OwnerHash = AccessToken::parse(ALICE).expect("token").owner();
    let log = async {
        loop {
            let log = a.store.events_since(&task, &owner, 0).await.expect("log").expect("task");
            let dead: Vec<_> = log
                .iter()
                .filter_map(|event| match &event.kind {
                    TaskEventKind::PushDeadLetter { config_id, sequence, attempts, reason } => {
                        Some((config_id.clone(), *sequence, *attempts, reason.clone()))
                    }
                    _ => None,
                })
                .collect();
            let updates =
                log.iter().filter(|event| !matches!(event.kind, TaskEventKind::PushDeadLetter { .. })).count();
            if dead.len() >= updates - 1 {
                return dead;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let dead = tokio::time::timeout(Duration::from_secs(10), log).await.expect("dead letters are logged");
    assert_eq!(dead[0].0, "down");
    assert_eq!(dead[0].1, 1, "the first update was given up on first");
    assert_eq!(dead[0].2, 2, "after two attempts");
    assert!(dead[0].3.contains("503"), "{}", dead[0].3);
    assert!(!dead[0].3.contains("127.0.0.1"), "the reason names no URL: {}", dead[0].3);
    assert!(calls.load(Ordering::SeqCst) >= 2 * dead.len());
    let task_now = rpc(&a.server, ALICE, "GetTask", json!({"id": task.to_string()})).await;
    assert_eq!(task_now["result"]["status"]["state"], "TASK_STATE_COMPLETED", "the task is unchanged");
}

#[tokio::test]
async fn without_push_the_operations_are_unsupported_and_the_card_says_so() {
    let a = agency(None).await;
    let card: Value =
        reqwest::get(a.server.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    let answer = rpc(&a.server, ALICE, "ListTaskPushNotificationConfigs", json!({"taskId": "any"})).await;
    assert_eq!(reason(&answer["error"]), Some("PUSH_NOTIFICATION_NOT_SUPPORTED"));
    let inline = json!({"taskPushNotificationConfig": {"url": "https://hooks.example.com/x"}});
    let answer = rpc(&a.server, ALICE, "SendMessage", send("z", inline)).await;
    assert_eq!(reason(&answer["error"]), Some("PUSH_NOTIFICATION_NOT_SUPPORTED"));

    let on = agency(Some(PushSettings::default())).await;
    let card: Value =
        reqwest::get(on.server.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    assert_eq!(card["capabilities"]["pushNotifications"], true);
}
