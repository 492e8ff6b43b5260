//! The A2A 0.3 dialect on the HTTP+JSON binding, over real HTTP: the `/v1/…` routes with the 0.3
//! proto's ProtoJSON, the same task read through 0.3 REST, 0.3 JSON-RPC and 1.0 REST, streams
//! ending at `final`, push configs, the card's 0.3 REST interface, and the 0.3 REST errors.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill, SkillError};
use accord_server::push::PushSettings;
use accord_server::push::guard::WebhookPolicy;
use accord_server::{A2aConfig, AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};

fn agent() -> Agent {
    Agent::builder("a2a-v03-rest-test")
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
        .build()
        .expect("agent")
}

async fn server_with(a2a: A2aConfig) -> TestServer {
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let mut config = ServerConfig::default().tasks(runtime).a2a(Some(a2a));
    config.push = Some(PushSettings::default().policy(WebhookPolicy::default().allow_loopback()));
    TestServer::start(agent.router_with(config)).await
}

async fn server() -> TestServer {
    server_with(A2aConfig::default()).await
}

struct Answer {
    status: u16,
    body: Value,
}

/// A request to the REST binding at `path` (relative to `/a2a/rest`) with `headers`.
async fn rest(server: &TestServer, method: &str, path: &str, body: Option<Value>, headers: &[(&str, &str)]) -> Answer {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = reqwest::Client::new().request(method, server.url(&format!("/a2a/rest{path}")));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::String(text)) }
}

/// A 0.3 REST request: no `A2A-Version`, as the 0.3 SDKs send it.
async fn rest03(server: &TestServer, method: &str, path: &str, body: Option<Value>) -> Answer {
    rest(server, method, path, body, &[]).await
}

/// A 0.3 REST send body (proto `SendMessageRequest`).
fn send(skill: &str, input: Value, blocking: Option<bool>) -> Value {
    let mut body = json!({
        "message": {"messageId": format!("m-{skill}"), "role": "ROLE_USER",
                    "content": [{"data": {"data": input}}], "metadata": {"skillId": skill}},
    });
    if let Some(blocking) = blocking {
        body["configuration"] = json!({"blocking": blocking});
    }
    body
}

/// The `data:` events of a 0.3 REST stream (each a bare proto `StreamResponse`).
async fn events(server: &TestServer, method: &str, path: &str, body: Option<Value>) -> Vec<Value> {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = reqwest::Client::new().request(method, server.url(&format!("/a2a/rest{path}")));
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().await.expect("response");
    let status = response.status();
    if status != 200 {
        panic!("{path}: {status} {}", response.text().await.unwrap_or_default());
    }
    assert!(
        response.headers()["content-type"].to_str().expect("type").starts_with("text/event-stream"),
        "an event stream"
    );
    let text = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("the 0.3 stream ends after its final event")
        .expect("body");
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).expect("json"))
        .collect()
}

#[tokio::test]
async fn a_task_made_over_0_3_rest_is_the_same_task_in_every_dialect() {
    let s = server().await;
    let sent = rest03(&s, "POST", "/v1/message:send", Some(send("echo", json!({"text": "hi"}), Some(true)))).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let task = &sent.body["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{}", sent.body);
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"data": {"data": {"text": "hi"}}}));
    assert_eq!(task["history"][0]["role"], "ROLE_USER");
    assert!(task["history"][0]["content"].is_array(), "a 0.3 proto message's parts are `content`");
    assert!(task.get("kind").is_none(), "no `kind` in the proto JSON");
    let id = task["id"].as_str().expect("id").to_owned();

    // The same task through 0.3 REST, 1.0 REST and 0.3 JSON-RPC.
    let read = rest03(&s, "GET", &format!("/v1/tasks/{id}?historyLength=1"), None).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["id"], id);
    assert_eq!(read.body["contextId"], task["contextId"]);
    let v10 = rest(&s, "GET", &format!("/tasks/{id}"), None, &[("a2a-version", "1.0")]).await;
    assert_eq!(v10.body["status"]["state"], "TASK_STATE_COMPLETED", "{}", v10.body);
    assert_eq!(v10.body["contextId"], task["contextId"]);
    let rpc = reqwest::Client::new()
        .post(s.url("/a2a/jsonrpc"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": id}}))
        .send()
        .await
        .expect("response")
        .json::<Value>()
        .await
        .expect("json");
    assert_eq!(rpc["result"]["status"]["state"], "completed", "{rpc}");
    assert_eq!(rpc["result"]["kind"], "task");

    // A task made in 1.0 is read over 0.3 REST; a canceled one is spelled with two Ls.
    let message =
        json!({"messageId": "m-10", "role": "ROLE_USER", "parts": [{"data": {}}], "metadata": {"skillId": "wait"}});
    let made = rest(
        &s,
        "POST",
        "/message:send",
        Some(json!({"message": message, "configuration": {"returnImmediately": true}})),
        &[("a2a-version", "1.0")],
    )
    .await;
    let waiting = made.body["task"]["id"].as_str().expect("a 1.0 task").to_owned();
    let canceled = rest03(&s, "POST", &format!("/v1/tasks/{waiting}:cancel"), None).await;
    assert_eq!(canceled.status, 200, "{}", canceled.body);
    assert_eq!(canceled.body["status"]["state"], "TASK_STATE_CANCELLED");
    let again = rest03(&s, "POST", &format!("/v1/tasks/{waiting}:cancel"), Some(json!({"name": "tasks/x"}))).await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(again.body["code"], -32002, "the 0.3 error object: {}", again.body);
    assert!(again.body["message"].is_string());
}

#[tokio::test]
async fn a_configuration_without_blocking_returns_at_once() {
    let s = server().await;
    // Proto3: a configuration whose `blocking` is absent is not blocking.
    let sent = rest03(&s, "POST", "/v1/message:send", Some(send("wait", json!({}), Some(false)))).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let state = sent.body["task"]["status"]["state"].as_str().expect("state").to_owned();
    assert!(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"].contains(&state.as_str()), "{state}");
    let id = sent.body["task"]["id"].as_str().expect("id").to_owned();
    let canceled = rest03(&s, "POST", &format!("/v1/tasks/{id}:cancel"), None).await;
    assert_eq!(canceled.body["status"]["state"], "TASK_STATE_CANCELLED", "{}", canceled.body);
}

#[tokio::test]
async fn streams_are_proto_stream_responses_ending_at_final() {
    let s = server().await;
    let streamed = events(&s, "POST", "/v1/message:stream", Some(send("echo", json!({"text": "yo"}), None))).await;
    assert!(!streamed.is_empty());
    for event in &streamed {
        let cases: Vec<&String> = event.as_object().expect("object").keys().collect();
        assert_eq!(cases.len(), 1, "one oneof case per event: {event}");
        assert!(["task", "message", "statusUpdate", "artifactUpdate"].contains(&cases[0].as_str()), "{event}");
    }
    let last = streamed.last().expect("an event");
    assert_eq!(last["statusUpdate"]["final"], true, "{last}");
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    let artifact = streamed.iter().find_map(|event| event.get("artifactUpdate")).expect("an artifact update");
    assert_eq!(artifact["artifact"]["parts"][0], json!({"data": {"data": {"text": "yo"}}}));
    let id = last["statusUpdate"]["taskId"].as_str().expect("task id").to_owned();

    // An ended task cannot be subscribed to: the service's rule, in the 0.3 shape.
    let ended = rest03(&s, "GET", &format!("/v1/tasks/{id}:subscribe"), None).await;
    assert_eq!((ended.status, ended.body["code"].clone()), (501, json!(-32004)), "{}", ended.body);

    // A running task: subscribed (GET, as the SDKs send it; POST too), then canceled; each
    // subscription ends with the final canceled update.
    let sent = rest03(&s, "POST", "/v1/message:send", Some(send("wait", json!({}), Some(false)))).await;
    let waiting = sent.body["task"]["id"].as_str().expect("id").to_owned();
    let get = tokio::spawn({
        let url = s.url("");
        let path = format!("/v1/tasks/{waiting}:subscribe");
        async move { events_at(&url, "GET", &path).await }
    });
    let post = tokio::spawn({
        let url = s.url("");
        let path = format!("/v1/tasks/{waiting}:subscribe");
        async move { events_at(&url, "POST", &path).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let canceled = rest03(&s, "POST", &format!("/v1/tasks/{waiting}:cancel"), None).await;
    assert_eq!(canceled.status, 200, "{}", canceled.body);
    for subscription in [get, post] {
        let seen = subscription.await.expect("subscription");
        let last = seen.last().expect("events");
        assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELLED", "{seen:?}");
        assert_eq!(last["statusUpdate"]["final"], true);
    }
}

/// The `data:` events of a stream at `origin` + `/a2a/rest` + `path`, without a body.
async fn events_at(origin: &str, method: &str, path: &str) -> Vec<Value> {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let response =
        reqwest::Client::new().request(method, format!("{origin}/a2a/rest{path}")).send().await.expect("response");
    assert_eq!(response.status(), 200);
    let text = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("the 0.3 stream ends after its final event")
        .expect("body");
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).expect("json"))
        .collect()
}

#[tokio::test]
async fn push_configs_over_0_3_rest() {
    let s = server().await;
    let sent = rest03(&s, "POST", "/v1/message:send", Some(send("wait", json!({}), Some(false)))).await;
    let id = sent.body["task"]["id"].as_str().expect("id").to_owned();
    let hook = "http://127.0.0.1:9/hook";
    // The Python SDK's shape: a create request.
    let created = rest03(
        &s,
        "POST",
        &format!("/v1/tasks/{id}/pushNotificationConfigs"),
        Some(json!({"parent": format!("tasks/{id}"), "configId": "c1",
                    "config": {"name": format!("tasks/{id}/pushNotificationConfigs/c1"),
                               "pushNotificationConfig": {"url": hook, "token": "t0k",
                                   "authentication": {"schemes": ["Bearer"], "credentials": "cred"}}}})),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.body["name"], format!("tasks/{id}/pushNotificationConfigs/c1"));
    assert_eq!(created.body["pushNotificationConfig"]["id"], "c1");
    assert_eq!(created.body["pushNotificationConfig"]["authentication"]["schemes"], json!(["Bearer"]));
    // The JS SDK's shape: the config itself, without an id: the task's id.
    let bare = rest03(
        &s,
        "POST",
        &format!("/v1/tasks/{id}/pushNotificationConfigs"),
        Some(json!({"name": format!("tasks/{id}"), "pushNotificationConfig": {"url": hook}})),
    )
    .await;
    assert_eq!(bare.status, 200, "{}", bare.body);
    assert_eq!(bare.body["pushNotificationConfig"]["id"], id);

    let got = rest03(&s, "GET", &format!("/v1/tasks/{id}/pushNotificationConfigs/c1"), None).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.body["pushNotificationConfig"]["url"], hook);
    let listed = rest03(&s, "GET", &format!("/v1/tasks/{id}/pushNotificationConfigs"), None).await;
    assert_eq!(listed.body["configs"].as_array().map(Vec::len), Some(2), "{}", listed.body);
    let deleted = rest03(&s, "DELETE", &format!("/v1/tasks/{id}/pushNotificationConfigs/c1"), None).await;
    assert_eq!((deleted.status, deleted.body.clone()), (200, json!({})));
    let gone = rest03(&s, "GET", &format!("/v1/tasks/{id}/pushNotificationConfigs/c1"), None).await;
    assert_eq!(gone.status, 404, "{}", gone.body);

    // A body naming another task, and a webhook the policy refuses.
    let other = rest03(
        &s,
        "POST",
        &format!("/v1/tasks/{id}/pushNotificationConfigs"),
        Some(json!({"parent": "tasks/someone-else", "config": {"pushNotificationConfig": {"url": hook}}})),
    )
    .await;
    assert_eq!(other.status, 400, "{}", other.body);
    assert_eq!(other.body["code"], -32602);
    let private = rest03(
        &s,
        "POST",
        &format!("/v1/tasks/{id}/pushNotificationConfigs"),
        Some(json!({"pushNotificationConfig": {"url": "ftp://example.com/hook"}})),
    )
    .await;
    assert!(private.status >= 400 && private.status < 500, "{}", private.body);
    assert!(private.body["code"].is_i64(), "{}", private.body);

    // `authentication: {}` (no schemes: what the 0.3 SDKs send for an empty list) is no
    // authentication; credentials without a scheme are refused in the 0.3 shape.
    let open = rest03(
        &s,
        "POST",
        &format!("/v1/tasks/{id}/pushNotificationConfigs"),
        Some(json!({"parent": format!("tasks/{id}"), "configId": "open",
                    "config": {"pushNotificationConfig": {"url": hook, "authentication": {}}}})),
    )
    .await;
    assert_eq!(open.status, 200, "{}", open.body);
    assert!(open.body["pushNotificationConfig"].get("authentication").is_none(), "{}", open.body);
    let got = rest03(&s, "GET", &format!("/v1/tasks/{id}/pushNotificationConfigs/open"), None).await;
    assert_eq!(got.body["pushNotificationConfig"]["url"], hook, "{}", got.body);
    assert!(got.body["pushNotificationConfig"].get("authentication").is_none(), "{}", got.body);
    let bare_credentials = rest03(
        &s,
        "POST",
        &format!("/v1/tasks/{id}/pushNotificationConfigs"),
        Some(json!({"pushNotificationConfig": {"url": hook, "authentication": {"credentials": "secret"}}})),
    )
    .await;
    assert_eq!((bare_credentials.status, bare_credentials.body["code"].clone()), (400, json!(-32602)));
    let text = bare_credentials.body["message"].as_str().expect("message");
    assert!(text.contains("authentication.schemes"), "{text}");
    rest03(&s, "POST", &format!("/v1/tasks/{id}:cancel"), None).await;
}

#[tokio::test]
async fn a_stream_refused_before_its_first_event_is_an_error_status() {
    // As the official 0.3 REST servers answer, and as the 0.3 SDKs' REST clients read it
    // (`message:stream` and the JS client's `:subscribe` check the status first).
    let s = server().await;
    let mut follow_up = send("echo", json!({"text": "more"}), None);
    follow_up["message"]["taskId"] = json!("nope");
    let stream = rest03(&s, "POST", "/v1/message:stream", Some(follow_up)).await;
    assert_eq!((stream.status, stream.body["code"].clone()), (404, json!(-32001)), "{}", stream.body);
    let subscribe = rest03(&s, "POST", "/v1/tasks/nope:subscribe", None).await;
    assert_eq!((subscribe.status, subscribe.body["code"].clone()), (404, json!(-32001)), "{}", subscribe.body);
}

#[tokio::test]
async fn errors_are_0_3_error_objects_with_http_statuses() {
    let s = server().await;
    let missing = rest03(&s, "GET", "/v1/tasks/no-such-task", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["code"], -32001, "{}", missing.body);
    assert!(missing.body.get("error").is_none(), "not the 1.0 google.rpc.Status shape");

    let not_json = rest(&s, "POST", "/v1/message:send", None, &[("content-type", "text/plain")]).await;
    assert_eq!(not_json.status, 415, "{}", not_json.body);
    assert_eq!(not_json.body["code"], -32005);

    for (body, needle) in [
        (json!({"message": {"messageId": "m", "role": "user", "content": [{"text": "x"}]}}), "role"),
        (json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "x", "data": {}}]}}), "Part"),
        (json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"file": {"name": "f"}}]}}), "file"),
        (json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": []}}), "parts"),
        (json!({"message": {"messageId": "m", "role": "ROLE_UNSPECIFIED", "content": [{"text": "x"}]}}), "role"),
    ] {
        let refused = rest03(&s, "POST", "/v1/message:send", Some(body.clone())).await;
        assert_eq!(refused.status, 400, "{body}: {}", refused.body);
        assert_eq!(refused.body["code"], -32602, "{body}: {}", refused.body);
        let said = refused.body.to_string();
        assert!(said.contains(needle), "{body}: {said} names {needle}");
    }
    let history = rest03(&s, "GET", "/v1/tasks/x?historyLength=lots", None).await;
    assert_eq!((history.status, history.body["code"].clone()), (400, json!(-32602)));

    // Another 0.x version is refused in the 0.3 shape.
    let old = rest(&s, "GET", "/v1/tasks/x", None, &[("a2a-version", "0.2")]).await;
    assert_eq!(old.status, 400, "{}", old.body);
    assert_eq!(old.body["code"], -32009);

    // No extended card: -32007.
    let card = rest03(&s, "GET", "/v1/card", None).await;
    assert_eq!((card.status, card.body["code"].clone()), (404, json!(-32007)), "{}", card.body);
}

#[tokio::test]
async fn a_1_0_request_to_a_v1_path_is_the_1_0_binding_for_the_tenant_v1() {
    let s = server().await;
    let body = json!({"message": {"messageId": "m-t", "role": "ROLE_USER", "parts": [{"data": {"text": "t"}}],
                                  "metadata": {"skillId": "echo"}}});
    let sent = rest(&s, "POST", "/v1/message:send", Some(body), &[("a2a-version", "1.0")]).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert_eq!(sent.body["task"]["status"]["state"], "TASK_STATE_COMPLETED", "the 1.0 shape: {}", sent.body);
    let id = sent.body["task"]["id"].as_str().expect("id");
    // Scoped to the tenant `v1`: the same tenant reads it, 1.0 style.
    let read = rest(&s, "GET", &format!("/v1/tasks/{id}"), None, &[("a2a-version", "1.0")]).await;
    assert_eq!(read.body["status"]["state"], "TASK_STATE_COMPLETED", "{}", read.body);
    // A 1.0 path with no 0.3 twin (`/{tenant}/tasks`) is still found under the tenant `v1`.
    let listed = rest(&s, "GET", "/v1/tasks", None, &[("a2a-version", "1.0")]).await;
    assert!(listed.status != 404 && listed.status != 405, "{} {}", listed.status, listed.body);
    let card = rest(&s, "GET", "/v1/card", None, &[("a2a-version", "1.0")]).await;
    assert_eq!(card.status, 404);
    assert!(card.body["error"].is_object(), "the 1.0 error shape: {}", card.body);
    // The 1.0 routes still refuse a request without a version.
    let bare = rest03(&s, "GET", &format!("/tasks/{id}"), None).await;
    assert_eq!(bare.status, 400, "{}", bare.body);
    assert_eq!(bare.body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED", "{}", bare.body);
}

#[tokio::test]
async fn the_card_lists_the_0_3_rest_interface() {
    let s = server().await;
    let card: Value =
        reqwest::get(s.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let rest_url = s.url("/a2a/rest");
    assert!(
        card["additionalInterfaces"]
            .as_array()
            .expect("additionalInterfaces")
            .contains(&json!({"url": rest_url, "transport": "HTTP+JSON"})),
        "{card}"
    );
    let entries = card["supportedInterfaces"].as_array().expect("interfaces");
    assert!(entries.iter().any(|entry| entry["protocolBinding"] == "HTTP+JSON"
        && entry["protocolVersion"] == "0.3"
        && entry["url"] == rest_url.as_str()));
    let first_rest = entries.iter().find(|entry| entry["protocolBinding"] == "HTTP+JSON").expect("a REST entry");
    assert_eq!(first_rest["protocolVersion"], "1.0", "a 1.0 client meets the 1.0 entry first");

    // Without the 0.3 dialect: no 0.3 routes and no 0.3 entries.
    let plain = server_with(A2aConfig { v03: false, ..A2aConfig::default() }).await;
    let refused = rest03(&plain, "GET", "/v1/tasks/x", None).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED", "{}", refused.body);
}

#[tokio::test]
async fn a_0_3_only_agent_refuses_1_0() {
    let s = server_with(A2aConfig { v10: false, ..A2aConfig::default() }).await;
    let card: Value =
        reqwest::get(s.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let versions: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter(|entry| ["JSONRPC", "HTTP+JSON"].contains(&entry["protocolBinding"].as_str().unwrap_or_default()))
        .filter_map(|entry| entry["protocolVersion"].as_str())
        .collect();
    assert_eq!(versions, ["0.3", "0.3"], "{card}");
    let v10 = rest(&s, "GET", "/tasks/x", None, &[("a2a-version", "1.0")]).await;
    assert_eq!(v10.status, 400);
    assert_eq!(v10.body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED", "{}", v10.body);
    let rpc = reqwest::Client::new()
        .post(s.url("/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}))
        .send()
        .await
        .expect("response")
        .json::<Value>()
        .await
        .expect("json");
    assert_eq!(rpc["error"]["code"], -32009, "{rpc}");
    let sent = rest03(&s, "POST", "/v1/message:send", Some(send("echo", json!({"text": "hi"}), Some(true)))).await;
    assert_eq!(sent.body["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{}", sent.body);
}
