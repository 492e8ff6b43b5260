//! The official A2A v1.0 JSON-RPC binding over real HTTP: every error code it answers, version
//! negotiation, the task operations, and concurrent streams on one task.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AnonymousAccess, MemoryStore, RuntimeConfig, ServiceConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill, SkillError};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};

fn agent() -> Agent {
    Agent::builder("a2a-test")
        .skill(
            Skill::builder("echo")
                .input_schema(
                    json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}),
                )
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(Skill::builder("wait").invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        .skill(Skill::builder("fail").invoke(|_run: Run| async move {
            Err::<Outcome, _>(SkillError::new("upstream_down", "the upstream is down"))
        }))
        .build()
        .expect("agent")
}

async fn server() -> TestServer {
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    // These scenarios list tasks without credentials, as the conformance kit does.
    let service = ServiceConfig::default().anonymous(AnonymousAccess::ListShared);
    TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).task_service(service))).await
}

async fn post(server: &TestServer, path: &str, body: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = reqwest::Client::new().post(server.url(path)).body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

const V1: [(&str, &str); 2] = [("content-type", "application/json"), ("a2a-version", "1.0")];

async fn call(server: &TestServer, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}).to_string();
    let (status, body) = post(server, "/a2a/jsonrpc", &body, &V1).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 9);
    body
}

fn reason(body: &Value) -> Option<&str> {
    body["error"]["data"].as_array()?.iter().find_map(|detail| detail["reason"].as_str())
}

fn send(text: &str, skill: Option<&str>, configuration: Value) -> Value {
    let mut message = json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(skill) = skill {
        message["metadata"] = json!({"skillId": skill});
    }
    json!({"message": message, "configuration": configuration})
}

#[tokio::test]
async fn protocol_errors_and_version_negotiation() {
    let s = server().await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#;

    let (_, wrong_type) =
        post(&s, "/a2a/jsonrpc", "not json at all", &[("content-type", "text/plain"), ("a2a-version", "1.0")]).await;
    assert_eq!(wrong_type["error"]["code"], -32005);
    assert_eq!(reason(&wrong_type), Some("CONTENT_TYPE_NOT_SUPPORTED"));

    let (_, bad_json) = post(&s, "/a2a/jsonrpc", "{oops", &V1).await;
    assert_eq!((bad_json["error"]["code"].clone(), bad_json["id"].clone()), (json!(-32700), Value::Null));

    let (_, not_envelope) = post(&s, "/a2a/jsonrpc", r#"{"jsonrpc":"1.0","id":3,"method":"GetTask"}"#, &V1).await;
    assert_eq!((not_envelope["error"]["code"].clone(), not_envelope["id"].clone()), (json!(-32600), json!(3)));

    // A batch is refused whole, as a JSON-RPC error (HTTP 200 like every other), before the version.
    let batch = format!("[{body}, {body}]");
    for batch in [batch.as_str(), "[]"] {
        let (status, refused) = post(&s, "/a2a/jsonrpc", batch, &[("content-type", "application/json")]).await;
        assert_eq!(
            (status, refused),
            (
                200,
                json!({"jsonrpc": "2.0", "id": null, "error": {
                    "code": -32600, "message": "Request payload validation error: batch requests are not supported"
                }})
            )
        );
    }

    for version in ["99.0", "1.1", "2"] {
        let headers = [("content-type", "application/json"), ("a2a-version", version)];
        let (status, body) = post(&s, "/a2a/jsonrpc", body, &headers).await;
        assert_eq!(status, 200);
        assert_eq!(body["error"]["code"], -32009, "{version:?}");
        assert_eq!(reason(&body), Some("VERSION_NOT_SUPPORTED"));
    }
    // No version, an empty one or 0.3 is the 0.3 dialect (tests/test_a2a_v03.rs), where
    // `GetTask` is no method.
    for version in [None, Some("0.3"), Some("")] {
        let mut headers = vec![("content-type", "application/json")];
        if let Some(version) = version {
            headers.push(("a2a-version", version));
        }
        let (_, body) = post(&s, "/a2a/jsonrpc", body, &headers).await;
        assert_eq!(body["error"]["code"], -32601, "{version:?}: {body}");
    }
    let (_, by_query) = post(&s, "/a2a/jsonrpc?A2A-Version=1.0", body, &[("content-type", "application/json")]).await;
    assert_eq!(by_query["error"]["code"], -32001, "the query parameter counts as the header");
    let (_, patch) =
        post(&s, "/a2a/jsonrpc", body, &[("content-type", "application/json"), ("a2a-version", "1.0.7")]).await;
    assert_eq!(patch["error"]["code"], -32001, "patch numbers do not count");

    let unknown = call(&s, "message/send", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "a 0.3 method under A2A-Version: 1.0");
    let missing = call(&s, "SendMessage", json!({"configuration": {}})).await;
    assert_eq!(missing["error"]["code"], -32602, "message is required");
    let empty_parts =
        call(&s, "SendMessage", json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}})).await;
    assert_eq!(empty_parts["error"]["code"], -32602, "parts needs one element");
    let bad_input = call(&s, "SendMessage", send("x", Some("nosuch"), json!({}))).await;
    assert_eq!(bad_input["error"]["code"], -32602);

    let not_found = call(&s, "GetTask", json!({"id": "missing"})).await;
    assert_eq!(not_found["error"]["code"], -32001);
    assert_eq!(reason(&not_found), Some("TASK_NOT_FOUND"));
    assert_eq!(not_found["error"]["data"][0]["domain"], "a2a-protocol.org");
    assert_eq!(not_found["error"]["data"][0]["@type"], "type.googleapis.com/google.rpc.ErrorInfo");

    for method in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ] {
        let body = call(&s, method, json!({"taskId": "t", "id": "c", "url": "https://example.com/hook"})).await;
        assert_eq!(body["error"]["code"], -32001, "{method}: push is served, the task is unknown");
        assert_eq!(reason(&body), Some("TASK_NOT_FOUND"));
    }
    let extended = call(&s, "GetExtendedAgentCard", json!({})).await;
    assert_eq!(extended["error"]["code"], -32004);
    assert_eq!(reason(&extended), Some("UNSUPPORTED_OPERATION"));
}

#[tokio::test]
async fn send_get_list_cancel_and_follow_up_rules() {
    let s = server().await;
    let done = call(&s, "SendMessage", send("hello", None, json!({}))).await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(task["artifacts"][0]["artifactId"], "result");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"], json!({"text": "hello"}), "plain text became {{\"text\": …}}");
    assert!(task["status"]["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    let id = task["id"].as_str().expect("id").to_owned();
    let context = task["contextId"].as_str().expect("contextId").to_owned();

    // snake_case params are ProtoJSON too.
    let got = call(&s, "GetTask", json!({"id": id, "history_length": 0})).await;
    assert_eq!(got["result"]["id"], json!(id));
    assert!(got["result"].get("history").is_none(), "historyLength 0 omits the history");
    let with_history = call(&s, "GetTask", json!({"id": id})).await;
    assert_eq!(with_history["result"]["history"][0]["role"], "ROLE_USER");
    assert_eq!(with_history["result"]["history"][0]["messageId"], "m-1");

    let not_cancelable = call(&s, "CancelTask", json!({"id": id})).await;
    assert_eq!(not_cancelable["error"]["code"], -32002);
    assert_eq!(reason(&not_cancelable), Some("TASK_NOT_CANCELABLE"));

    let mut follow_up = send("again", None, json!({}));
    follow_up["message"]["taskId"] = json!(id);
    let refused = call(&s, "SendMessage", follow_up.clone()).await;
    assert_eq!(refused["error"]["code"], -32004, "a terminal task takes no more messages");
    follow_up["message"]["contextId"] = json!("another-context");
    assert_eq!(call(&s, "SendMessage", follow_up).await["error"]["code"], -32602);

    let data = json!({"message": {"messageId": "m-2", "role": "ROLE_USER", "contextId": context,
        "parts": [{"data": {"text": "from data"}}]}});
    let by_data = call(&s, "SendMessage", data).await;
    assert_eq!(by_data["result"]["task"]["contextId"], json!(context), "a client contextId is kept");
    assert_eq!(by_data["result"]["task"]["artifacts"][0]["parts"][0]["data"]["text"], "from data");

    let running = call(&s, "SendMessage", send("{}", Some("wait"), json!({"returnImmediately": true}))).await;
    let running_id = running["result"]["task"]["id"].as_str().expect("id").to_owned();
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
            .contains(&running["result"]["task"]["status"]["state"].as_str().unwrap_or(""))
    );
    let cancelled = call(&s, "CancelTask", json!({"id": running_id})).await;
    assert_eq!(cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED");

    let failed = call(&s, "SendMessage", send("{}", Some("fail"), json!({}))).await;
    assert_eq!(failed["result"]["task"]["status"]["state"], "TASK_STATE_FAILED");
    assert!(
        failed["result"]["task"]["status"]["message"]["parts"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("upstream_down"))
    );

    let page = call(&s, "ListTasks", json!({"pageSize": 2})).await;
    assert_eq!(page["result"]["tasks"].as_array().map(Vec::len), Some(2));
    assert_eq!(page["result"]["totalSize"], 4);
    assert_eq!(page["result"]["pageSize"], 2);
    assert!(page["result"]["tasks"][0].get("artifacts").is_none(), "artifacts only with includeArtifacts");
    let token = page["result"]["nextPageToken"].as_str().expect("token").to_owned();
    let rest = call(&s, "ListTasks", json!({"pageSize": 2, "pageToken": token, "includeArtifacts": true})).await;
    assert_eq!(rest["result"]["tasks"].as_array().map(Vec::len), Some(2));
    assert_eq!(rest["result"]["nextPageToken"], "", "nextPageToken is always present");
    let canceled_only = call(&s, "ListTasks", json!({"status": "TASK_STATE_CANCELED"})).await;
    assert_eq!(canceled_only["result"]["tasks"][0]["id"], json!(running_id));
    assert_eq!(call(&s, "ListTasks", json!({"pageSize": 0})).await["error"]["code"], -32602);
    assert_eq!(call(&s, "ListTasks", json!({"pageToken": "forged"})).await["error"]["code"], -32602);
    // statusTimestampAfter filters before paging: full pages and an exact total.
    let since = call(&s, "ListTasks", json!({"pageSize": 2, "statusTimestampAfter": "2000-01-01T00:00:00Z"})).await;
    assert_eq!(
        (since["result"]["tasks"].as_array().map(Vec::len), &since["result"]["totalSize"]),
        (Some(2), &json!(4))
    );
    let none = call(&s, "ListTasks", json!({"statusTimestampAfter": "2999-01-01T00:00:00Z"})).await;
    assert_eq!((&none["result"]["tasks"], &none["result"]["totalSize"]), (&json!([]), &json!(0)));

    // The interface URL with a trailing slash is the same endpoint.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}}).to_string();
    let (status, slashed) = post(&s, "/a2a/jsonrpc/", &body, &V1).await;
    assert_eq!((status, slashed["result"]["id"].clone()), (200, json!(id)));
}

/// Reads an SSE response to its end (or until `limit` events), returning (id, JSON-RPC result).
async fn sse_events(response: reqwest::Response, limit: usize) -> Vec<(Option<String>, Value)> {
    use futures_util::StreamExt;
    let mut events = Vec::new();
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    while events.len() < limit {
        let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), body.next()).await.expect("no stall") else {
            break;
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let id = frame.lines().find_map(|line| line.strip_prefix("id: ")).map(str::to_owned);
            if let Some(data) = frame.lines().find_map(|line| line.strip_prefix("data: ")) {
                let body: Value = serde_json::from_str(data).expect("json");
                events.push((id, body["result"].clone()));
            }
        }
    }
    events
}

async fn stream(
    s: &TestServer,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
    limit: usize,
) -> Vec<(Option<String>, Value)> {
    let body = json!({"jsonrpc": "2.0", "id": "st", "method": method, "params": params}).to_string();
    let mut request = reqwest::Client::new().post(s.url("/a2a/jsonrpc")).body(body);
    for (name, value) in V1.iter().chain(headers) {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    assert!(response.headers()["content-type"].to_str().expect("type").starts_with("text/event-stream"));
    sse_events(response, limit).await
}

fn kind(result: &Value) -> &str {
    ["task", "message", "statusUpdate", "artifactUpdate"].into_iter().find(|k| result.get(*k).is_some()).unwrap_or("?")
}

#[tokio::test]
async fn streams_start_with_the_task_and_close_at_the_end() {
    let s = server().await;
    let events = stream(&s, "SendStreamingMessage", send("hi", None, json!({})), &[], 50).await;
    let kinds: Vec<&str> = events.iter().map(|(_, result)| kind(result)).collect();
    assert_eq!(kinds.first(), Some(&"task"));
    assert_eq!(kinds.last(), Some(&"statusUpdate"));
    assert!(kinds.contains(&"artifactUpdate"), "{kinds:?}");
    assert_eq!(
        events.last().map(|(_, r)| r["statusUpdate"]["status"]["state"].clone()),
        Some(json!("TASK_STATE_COMPLETED"))
    );
    // Ids are `N` (the log sequence) or `N:k` (the k-th of several events one log entry makes);
    // every event has one and no two are equal.
    let ids: Vec<(u64, Option<u64>)> = events
        .iter()
        .filter_map(|(id, _)| {
            let id = id.as_deref()?;
            Some(match id.split_once(':') {
                Some((sequence, part)) => (sequence.parse().ok()?, Some(part.parse().ok()?)),
                None => (id.parse().ok()?, None),
            })
        })
        .collect();
    assert_eq!(ids.len(), events.len(), "every event has an SSE id: {events:?}");
    let order = |(sequence, part): (u64, Option<u64>)| (sequence, part.unwrap_or(u64::MAX));
    assert!(ids.windows(2).all(|pair| order(pair[0]) < order(pair[1])), "{ids:?}");

    // Resuming after the result artifact (which shares its log entry with the completed status)
    // sends just the completed status.
    let artifact_id = events
        .iter()
        .find(|(_, result)| {
            kind(result) == "artifactUpdate" && result["artifactUpdate"]["artifact"]["artifactId"] == "result"
        })
        .and_then(|(id, _)| id.clone())
        .expect("the result artifact's id");
    assert!(artifact_id.contains(':'), "{artifact_id}");
    let task_id = events[0].1["task"]["id"].as_str().expect("id").to_owned();
    let rest = stream(&s, "SubscribeToTask", json!({"id": task_id}), &[("last-event-id", &artifact_id)], 10).await;
    let rest_kinds: Vec<&str> = rest.iter().map(|(_, result)| kind(result)).collect();
    assert_eq!(rest_kinds, ["statusUpdate"], "{rest:?}");
    assert_eq!(rest[0].1["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");

    // Subscribing to a finished task is refused (read it with GetTask).
    let id = events[0].1["task"]["id"].as_str().expect("id").to_owned();
    let refused = call(&s, "SubscribeToTask", json!({"id": id})).await;
    assert_eq!(refused["error"]["code"], -32004);
}

#[tokio::test]
async fn concurrent_subscribers_see_the_same_events_and_one_leaving_disturbs_nobody() {
    let s = server().await;
    let running = call(&s, "SendMessage", send("{}", Some("wait"), json!({"returnImmediately": true}))).await;
    let id = running["result"]["task"]["id"].as_str().expect("id").to_owned();
    let params = json!({"id": id});
    let first = tokio::spawn({
        let url = s.origin.clone();
        let params = params.clone();
        async move { stream_at(&url, params, 50).await }
    });
    let second = tokio::spawn({
        let url = s.origin.clone();
        let params = params.clone();
        async move { stream_at(&url, params, 50).await }
    });
    // A third subscriber reads one event and hangs up.
    let third = stream(&s, "SubscribeToTask", params.clone(), &[], 1).await;
    assert_eq!(kind(&third[0].1), "task");
    tokio::time::sleep(Duration::from_millis(300)).await;
    call(&s, "CancelTask", json!({"id": id})).await;
    let first = first.await.expect("first");
    let second = second.await.expect("second");
    let strip = |events: &[(Option<String>, Value)]| -> Vec<Value> {
        events.iter().skip(1).map(|(_, result)| result.clone()).collect()
    };
    assert_eq!(strip(&first), strip(&second), "the same updates in the same order");
    assert_eq!(
        first.last().map(|(_, r)| r["statusUpdate"]["status"]["state"].clone()),
        Some(json!("TASK_STATE_CANCELED"))
    );

    // Last-Event-ID resumes after the given event without the task snapshot.
    let last_id = first.last().and_then(|(event_id, _)| event_id.clone()).expect("an id");
    let before_last: u64 = last_id.parse::<u64>().expect("number") - 1;
    let resumed = stream(&s, "SubscribeToTask", params, &[("last-event-id", &before_last.to_string())], 50).await;
    assert_eq!(resumed.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>(), vec![first.last().expect("last").1.clone()]);
}

async fn stream_at(origin: &str, params: Value, limit: usize) -> Vec<(Option<String>, Value)> {
    let body = json!({"jsonrpc": "2.0", "id": "st", "method": "SubscribeToTask", "params": params}).to_string();
    let response = reqwest::Client::new()
        .post(format!("{origin}/a2a/jsonrpc"))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(body)
        .send()
        .await
        .expect("response");
    sse_events(response, limit).await
}
