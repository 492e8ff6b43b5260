//! A task waiting for input, resumed by a follow-up message, over real HTTP: subscribers (SSE of
//! the JSON-RPC binding, gRPC) and push receivers get one `WORKING` update for the resume, and it
//! carries no message — the agent's earlier question joins the task's history without being said
//! again (as the official SDKs do: the status message moves into the history, no event is sent).

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AccessToken, MemoryStore, RuntimeConfig, TaskRuntime, TaskStore};
use accord_engine::{Agent, Completion, Message, Outcome, Run, Skill};
use accord_grpc::pb;
use accord_grpc::pb::a2a_service_client::A2aServiceClient;
use accord_server::auth::{BearerAuthLayer, BearerTokens};
use accord_server::push::PushSettings;
use accord_server::push::guard::WebhookPolicy;
use accord_server::push::receiver::{Notification, PushReceiver};
use accord_server::{A2aConfig, AgentRouterExt, GrpcAddress, ServerConfig};
use accord_test_support::TestServer;
use accord_types::a2a::{StreamResponse, TaskState};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

const TOKEN: &str = "resume-test-caller-token-01";
const QUESTION: &str = "Please provide more input";

/// `ask` waits for input until a follow-up says `go`, then completes.
fn agent() -> Agent {
    Agent::builder("resume-test")
        .skill(Skill::builder("ask").invoke(|run: Run| async move {
            let answered = run.task().is_some_and(|task| task.history.len() > 1)
                && run.message().is_some_and(|message| message.text() == "go");
            if answered {
                Ok(Outcome::Completed(Completion::new(json!("done"))))
            } else {
                Ok(Outcome::InputRequired(Message::agent_text(QUESTION)))
            }
        }))
        .build()
        .expect("agent")
}

/// Every face and the gRPC binding on one port; push to loopback receivers, retried fast.
async fn server() -> TestServer {
    let agent = agent();
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
    let runtime = TaskRuntime::new(agent.clone(), store, RuntimeConfig::default());
    let mut config = ServerConfig::default()
        .tasks(runtime)
        .a2a(Some(A2aConfig { grpc: Some(GrpcAddress::SamePort), ..A2aConfig::default() }));
    config.push = Some(
        PushSettings::default()
            .policy(WebhookPolicy::default().allow_loopback())
            .retries(5, Duration::from_millis(50), Duration::from_millis(200))
            .timeout(Duration::from_secs(2))
            .poll(Duration::from_millis(20)),
    );
    let tokens = BearerTokens::new().with(&AccessToken::parse(TOKEN).expect("token"), "caller", Vec::<String>::new());
    TestServer::start(agent.router_with(config).layer(BearerAuthLayer::new(tokens))).await
}

fn rpc_request(s: &TestServer, method: &str, params: Value) -> reqwest::RequestBuilder {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    reqwest::Client::new()
        .post(s.url("/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .header("authorization", format!("Bearer {TOKEN}"))
        .json(&body)
}

async fn rpc(s: &TestServer, method: &str, params: Value) -> Value {
    rpc_request(s, method, params).send().await.expect("response").json().await.expect("json")
}

fn message(text: &str, task_id: Option<&str>) -> Value {
    let mut message = json!({"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}],
        "metadata": {"skillId": "ask"}});
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    json!({"message": message})
}

/// Starts `ask` and returns the id of the task, waiting with the agent's question.
async fn waiting_task(s: &TestServer) -> String {
    let sent = rpc(s, "SendMessage", message("start", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{sent}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], QUESTION, "{sent}");
    task["id"].as_str().expect("a task id").to_owned()
}

/// The SSE events of a JSON-RPC stream, to its end: each event's JSON-RPC result.
async fn sse_results(response: reqwest::Response) -> Vec<Value> {
    assert!(response.headers()["content-type"].to_str().expect("type").starts_with("text/event-stream"));
    let mut results = Vec::new();
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), body.next()).await.expect("no stall") {
        buffer.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if let Some(data) = frame.lines().find_map(|line| line.strip_prefix("data: ")) {
                let event: Value = serde_json::from_str(data).expect("json");
                results.push(event["result"].clone());
            }
        }
    }
    results
}

/// The status updates among JSON-RPC stream results: (state, text of the status message).
fn json_updates(results: &[Value]) -> Vec<(String, Option<String>)> {
    results
        .iter()
        .filter_map(|result| {
            let status = &result.get("statusUpdate")?["status"];
            let text = status["message"]["parts"][0]["text"].as_str().map(str::to_owned);
            Some((status["state"].as_str().expect("a state").to_owned(), text))
        })
        .collect()
}

fn working_then_completed() -> Vec<(String, Option<String>)> {
    vec![("TASK_STATE_WORKING".to_owned(), None), ("TASK_STATE_COMPLETED".to_owned(), None)]
}

#[tokio::test]
async fn a_subscriber_over_sse_sees_one_working_update_without_the_old_question() {
    let s = server().await;
    let task = waiting_task(&s).await;
    let subscription = rpc_request(&s, "SubscribeToTask", json!({"id": task})).send().await.expect("SubscribeToTask");
    let answered = rpc(&s, "SendMessage", message("go", Some(&task))).await;
    assert_eq!(answered["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answered}");
    // The history keeps the question, then the answer.
    let history: Vec<_> = answered["result"]["task"]["history"]
        .as_array()
        .expect("a history")
        .iter()
        .map(|message| (message["role"].clone(), message["parts"][0]["text"].clone()))
        .collect();
    let question = (json!("ROLE_AGENT"), json!(QUESTION));
    let answer = (json!("ROLE_USER"), json!("go"));
    assert!(history.windows(2).any(|pair| pair == [question.clone(), answer.clone()]), "{history:?}");

    let results = sse_results(subscription).await;
    assert!(results.first().is_some_and(|first| first.get("task").is_some()), "{results:?}");
    assert_eq!(json_updates(&results), working_then_completed(), "{results:?}");
}

#[tokio::test]
async fn a_follow_up_sent_as_a_stream_sees_one_working_update_without_the_old_question() {
    let s = server().await;
    let task = waiting_task(&s).await;
    let response = rpc_request(&s, "SendStreamingMessage", message("go", Some(&task))).send().await.expect("a stream");
    let results = sse_results(response).await;
    // The stream starts with the task as the follow-up left it: working, the question filed in
    // the history, no status message; then the result and the end.
    let snapshot = &results.first().expect("a first event")["task"];
    assert_eq!(snapshot["status"]["state"], "TASK_STATE_WORKING", "{results:?}");
    assert_eq!(snapshot["status"].get("message"), None, "{results:?}");
    assert_eq!(json_updates(&results), [("TASK_STATE_COMPLETED".to_owned(), None)], "{results:?}");
}

#[tokio::test]
async fn a_subscriber_over_grpc_sees_one_working_update_without_the_old_question() {
    let s = server().await;
    let task = waiting_task(&s).await;
    let endpoint = tonic::transport::Endpoint::from_shared(s.origin.clone()).expect("endpoint");
    let mut client = A2aServiceClient::new(endpoint.connect().await.expect("an HTTP/2 connection"));
    let mut request = tonic::Request::new(pb::SubscribeToTaskRequest { id: task.clone(), ..Default::default() });
    request.metadata_mut().insert("a2a-version", "1.0".parse().expect("metadata"));
    request.metadata_mut().insert("authorization", format!("Bearer {TOKEN}").parse().expect("metadata"));
    let mut subscription = client.subscribe_to_task(request).await.expect("SubscribeToTask").into_inner();
    let first = subscription.next().await.expect("an event").expect("ok").payload;
    assert!(matches!(first, Some(pb::stream_response::Payload::Task(ref snapshot)) if snapshot.id == task));

    let answered = rpc(&s, "SendMessage", message("go", Some(&task))).await;
    assert_eq!(answered["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answered}");
    let mut updates = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), subscription.next()).await.expect("no stall")
    {
        if let Some(pb::stream_response::Payload::StatusUpdate(update)) = event.expect("an event").payload {
            let status = update.status.expect("a status");
            let state = pb::TaskState::try_from(status.state).expect("a known state").as_str_name().to_owned();
            let text = status.message.and_then(|message| match message.parts.first()?.content.clone()? {
                pb::part::Content::Text(text) => Some(text),
                _ => None,
            });
            updates.push((state, text));
        }
    }
    assert_eq!(updates, working_then_completed());
}

#[tokio::test]
async fn a_push_receiver_gets_one_working_update_without_the_old_question() {
    let s = server().await;
    let task = waiting_task(&s).await;
    let (router, mut notifications) =
        PushReceiver::new().token("tok-resume").authorization("Bearer hook-secret").into_router();
    let hook = TestServer::start(router).await;
    let config = json!({"taskId": task, "id": "hook", "url": hook.url("/webhook"), "token": "tok-resume",
        "authentication": {"scheme": "Bearer", "credentials": "hook-secret"}});
    let created = rpc(&s, "CreateTaskPushNotificationConfig", config).await;
    assert_eq!(created["result"]["id"], "hook", "{created}");

    let answered = rpc(&s, "SendMessage", message("go", Some(&task))).await;
    assert_eq!(answered["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answered}");
    let seen = until_completed(&mut notifications).await;
    let updates: Vec<_> = seen
        .iter()
        .filter_map(|notification| match &notification.response {
            StreamResponse::StatusUpdate(update) => {
                let text = update.status.message.as_ref().and_then(|message| match message.parts.first() {
                    Some(accord_types::a2a::Part { content: accord_types::a2a::PartContent::Text(text), .. }) => {
                        Some(text.clone())
                    }
                    _ => None,
                });
                Some((format!("{:?}", update.status.state), text))
            }
            _ => None,
        })
        .collect();
    assert_eq!(updates, [("Working".to_owned(), None), ("Completed".to_owned(), None)]);
}

/// Notifications until one completes the task.
async fn until_completed(notifications: &mut mpsc::Receiver<Notification>) -> Vec<Notification> {
    let mut seen = Vec::new();
    let collect = async {
        while let Some(notification) = notifications.recv().await {
            let done = matches!(&notification.response, StreamResponse::StatusUpdate(update)
                if update.status.state == TaskState::Completed);
            seen.push(notification);
            if done {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), collect).await.expect("the task's updates arrive");
    seen
}
