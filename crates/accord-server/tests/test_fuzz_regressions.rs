//! Inputs the fuzz targets in `fuzz/` found (docs/fuzzing.md), replayed against a real server
//! over real HTTP: each one once broke a request, and must now get an ordinary answer.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AnonymousAccess, MemoryStore, RuntimeConfig, ServiceConfig, TaskRuntime};
use accord_engine::{Agent, Outcome, Run, Skill, SkillError};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use futures_util::StreamExt;
use serde_json::{Value, json};

/// The input of the demo agent's `summarize`.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct SummarizeInput {
    text: String,
    #[schemars(range(min = 1, max = 100))]
    sentences: Option<u32>,
}

async fn server() -> TestServer {
    let agent = Agent::builder("fuzz-regressions")
        .skill(
            Skill::builder("summarize").typed(|input: SummarizeInput, _run| async move { Ok::<_, SkillError>(input) }),
        )
        .skill(Skill::builder("wait").invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        .build()
        .expect("agent");
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let service = ServiceConfig::default().anonymous(AnonymousAccess::ListShared);
    TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).task_service(service))).await
}

fn rpc(s: &TestServer, method: &str, params: Value) -> reqwest::RequestBuilder {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    reqwest::Client::new()
        .post(s.url("/a2a/jsonrpc"))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(body)
}

/// Reads SSE frames until `done` says so; a transport error or the stream ending first fails.
async fn read_until(response: reqwest::Response, done: impl Fn(&Value) -> bool) -> Vec<(Option<String>, Value)> {
    let mut events = Vec::new();
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next()).await.expect("the stream stalled");
        let chunk = chunk.expect("the stream ended early").expect("the connection failed mid-stream");
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let id = frame.lines().find_map(|line| line.strip_prefix("id: ")).map(str::to_owned);
            if let Some(data) = frame.lines().find_map(|line| line.strip_prefix("data: ")) {
                let result = serde_json::from_str::<Value>(data).expect("json")["result"].clone();
                let finished = done(&result);
                events.push((id, result));
                if finished {
                    return events;
                }
            }
        }
    }
}

/// `sse_events` found `Last-Event-ID: N:18446744073709551615`: the part index plus one overflowed
/// when the entry was replayed, which panicked the stream (debug builds) or replayed the whole
/// entry again (release builds). Skipping "all events of entry N" is what it means.
#[tokio::test]
async fn a_last_event_id_with_the_largest_part_resumes_after_that_entry() {
    let s = server().await;
    let message =
        json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "x"}], "metadata": {"skillId": "wait"}});
    let sent: Value = rpc(&s, "SendMessage", json!({"message": message, "configuration": {"returnImmediately": true}}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let task_id = sent["result"]["task"]["id"].as_str().expect("task id").to_owned();

    // The snapshot's id names the newest log entry; resume "after its last part" of it.
    let first = rpc(&s, "SubscribeToTask", json!({"id": task_id})).send().await.expect("subscribe");
    let snapshot = read_until(first, |_| true).await;
    let sequence = snapshot[0].0.clone().expect("the snapshot has an id");
    let last_event_id = format!("{sequence}:{}", usize::MAX);

    let resumed = rpc(&s, "SubscribeToTask", json!({"id": task_id}))
        .header("last-event-id", &last_event_id)
        .send()
        .await
        .expect("subscribe with Last-Event-ID");
    assert_eq!(resumed.status(), 200);
    let cancel = {
        let s_url = s.url("/a2a/jsonrpc");
        let task_id = task_id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let body = json!({"jsonrpc": "2.0", "id": 2, "method": "CancelTask", "params": {"id": task_id}});
            reqwest::Client::new()
                .post(s_url)
                .header("content-type", "application/json")
                .header("a2a-version", "1.0")
                .body(body.to_string())
                .send()
                .await
                .expect("cancel")
        })
    };
    let events = read_until(resumed, |result| result["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED").await;
    cancel.await.expect("cancel task");
    // Nothing of the entry already seen comes again: only what happened after it.
    assert!(
        events.iter().all(|(id, _)| id.as_deref() != Some(sequence.as_str())),
        "entry {sequence} was replayed: {events:?}"
    );
}

/// `lucid_body` found `{"text": "a", "sentences": 2.0}`: `2.0` is an integer to the JSON Schema
/// derived from `Option<u32>`, but not to serde, so the input passed validation and failed inside
/// the skill as a 500. A client mistake is a 400 `invalid_input`, on every face.
#[tokio::test]
async fn an_input_the_schema_admits_but_the_skill_type_cannot_read_is_a_400() {
    let s = server().await;
    let client = reqwest::Client::new();
    let invoke = client
        .post(s.url("/entrypoints/summarize/invoke"))
        .header("content-type", "application/json")
        .body(r#"{"input": {"text": "a", "sentences": 2.0}}"#)
        .send()
        .await
        .expect("invoke");
    assert_eq!(invoke.status(), 400);
    let body: Value = invoke.json().await.expect("json");
    assert_eq!(body["error"]["code"], "invalid_input", "{body}");

    let message = json!({"messageId": "m-2", "role": "ROLE_USER", "parts": [{"data": {"text": "a", "sentences": 2.0}}],
        "metadata": {"skillId": "summarize"}});
    let answer: Value =
        rpc(&s, "SendMessage", json!({"message": message})).send().await.expect("send").json().await.expect("json");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");

    // The same skill still takes what its type reads.
    let fine = client
        .post(s.url("/entrypoints/summarize/invoke"))
        .header("content-type", "application/json")
        .body(r#"{"input": {"text": "a", "sentences": 2}}"#)
        .send()
        .await
        .expect("invoke");
    assert_eq!(fine.status(), 200);
}
