//! The A2A 0.3 dialect on the JSON-RPC binding, over real HTTP: every 0.3 method, the same task
//! read through both dialects, the card's 0.3 members, and the 0.3 error shapes.

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
    Agent::builder("a2a-v03-test")
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

async fn server_with(v03: bool) -> TestServer {
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let mut config = ServerConfig::default().tasks(runtime).a2a(Some(A2aConfig { v03, ..A2aConfig::default() }));
    config.push = Some(PushSettings::default().policy(WebhookPolicy::default().allow_loopback()));
    TestServer::start(agent.router_with(config)).await
}

async fn server() -> TestServer {
    server_with(true).await
}

/// Posts a JSON-RPC body with `headers`; the status and the parsed body.
async fn post(server: &TestServer, body: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = reqwest::Client::new().post(server.url("/a2a/jsonrpc")).body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

const JSON: [(&str, &str); 1] = [("content-type", "application/json")];

/// A 0.3 call: no `A2A-Version` header, as 0.3 clients send.
async fn call03(server: &TestServer, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params}).to_string();
    let (status, body) = post(server, &body, &JSON).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "r-1", "{body}");
    body
}

async fn call10(server: &TestServer, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let (status, body) = post(server, &body, &[("content-type", "application/json"), ("a2a-version", "1.0")]).await;
    assert_eq!(status, 200, "{body}");
    body
}

fn send03(skill: &str, input: Value, configuration: Value) -> Value {
    json!({
        "message": {"kind": "message", "messageId": format!("m-{skill}"), "role": "user",
                    "parts": [{"kind": "data", "data": input}], "metadata": {"skillId": skill}},
        "configuration": configuration,
    })
}

/// The events of an SSE body: each `data:` line's JSON-RPC `result`.
async fn stream03(server: &TestServer, method: &str, params: Value) -> Vec<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params});
    let response = reqwest::Client::new().post(server.url("/a2a/jsonrpc")).json(&body).send().await.expect("response");
    assert_eq!(response.status(), 200);
    let text = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("the 0.3 stream ends after its final event")
        .expect("body");
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| {
            let envelope: Value = serde_json::from_str(data.trim()).expect("json");
            assert_eq!((envelope["jsonrpc"].clone(), envelope["id"].clone()), (json!("2.0"), json!(5)));
            envelope["result"].clone()
        })
        .collect()
}

#[tokio::test]
async fn the_same_task_is_read_through_both_dialects() {
    let s = server().await;
    // Created in 0.3, read in 1.0.
    let sent = call03(&s, "message/send", send03("echo", json!({"text": "hi"}), json!({}))).await;
    let task = &sent["result"];
    assert_eq!(task["kind"], "task", "{sent}");
    assert_eq!(task["status"]["state"], "completed");
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"kind": "data", "data": {"text": "hi"}}));
    assert_eq!(task["history"][0]["kind"], "message");
    assert_eq!(task["history"][0]["role"], "user");
    let id = task["id"].as_str().expect("id").to_owned();
    let read = call10(&s, "GetTask", json!({"id": id})).await;
    assert_eq!(read["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{read}");
    assert_eq!(read["result"]["contextId"], task["contextId"]);
    assert_eq!(read["result"]["artifacts"][0]["parts"][0], json!({"data": {"text": "hi"}}));
    assert_eq!(read["result"]["history"][0]["role"], "ROLE_USER");

    // Created in 1.0, read in 0.3 (with historyLength).
    let message = json!({"messageId": "m-10", "role": "ROLE_USER", "parts": [{"text": "{\"text\":\"yo\"}"}]});
    let sent = call10(&s, "SendMessage", json!({"message": message})).await;
    let id = sent["result"]["task"]["id"].as_str().expect("id").to_owned();
    let read = call03(&s, "tasks/get", json!({"id": id, "historyLength": 0})).await;
    assert_eq!(read["result"]["kind"], "task", "{read}");
    assert_eq!(read["result"]["id"], id.as_str());
    assert_eq!(read["result"]["status"]["state"], "completed");
    assert!(read["result"].get("history").is_none(), "historyLength 0: {read}");
    assert_eq!(read["result"]["artifacts"][0]["parts"][0]["kind"], "data");
    let full = call03(&s, "tasks/get", json!({"id": id})).await;
    assert_eq!(full["result"]["history"][0]["parts"][0], json!({"kind": "text", "text": "{\"text\":\"yo\"}"}));
}

#[tokio::test]
async fn streams_end_on_a_final_status_update() {
    let s = server().await;
    let events = stream03(&s, "message/stream", send03("echo", json!({"text": "s"}), json!({}))).await;
    assert_eq!(events.first().expect("events")["kind"], "task", "{events:?}");
    let last = events.last().expect("events");
    assert_eq!((last["kind"].clone(), last["final"].clone()), (json!("status-update"), json!(true)), "{events:?}");
    assert_eq!(last["status"]["state"], "completed");
    let artifact = events.iter().find(|event| event["kind"] == "artifact-update").expect("the result");
    assert_eq!(artifact["artifact"]["parts"][0]["kind"], "data");
    for event in &events[1..events.len() - 1] {
        if event["kind"] == "status-update" {
            assert_eq!(event["final"], false, "{event}");
        }
    }

    // Resubscribe to a running task, cancel it: the stream ends with the canceled update.
    let started = call03(&s, "message/send", send03("wait", json!({}), json!({"blocking": false}))).await;
    let id = started["result"]["id"].as_str().expect("id").to_owned();
    assert!(matches!(started["result"]["status"]["state"].as_str(), Some("submitted" | "working")), "{started}");
    let subscription = tokio::spawn({
        let url = s.url("/a2a/jsonrpc");
        let id = id.clone();
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 6, "method": "tasks/resubscribe", "params": {"id": id}});
            let response = reqwest::Client::new().post(url).json(&body).send().await.expect("response");
            response.text().await.expect("body")
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let canceled = call03(&s, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(canceled["result"]["status"]["state"], "canceled", "{canceled}");
    let text = tokio::time::timeout(Duration::from_secs(10), subscription).await.expect("ends").expect("task");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str::<Value>(data.trim()).expect("json")["result"].clone())
        .collect();
    let last = events.last().expect("events");
    assert_eq!((last["status"]["state"].clone(), last["final"].clone()), (json!("canceled"), json!(true)), "{text}");

    // A second cancel: TaskNotCancelable, in the 0.3 shape.
    let again = call03(&s, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(again["error"]["code"], -32002, "{again}");
    assert!(!again["error"]["data"].is_array(), "0.3 errors carry no ErrorInfo array: {again}");
}

#[tokio::test]
async fn push_configs_in_the_0_3_shape() {
    let s = server().await;
    let started = call03(&s, "message/send", send03("wait", json!({}), json!({"blocking": false}))).await;
    let id = started["result"]["id"].as_str().expect("id").to_owned();
    let config = json!({"url": "http://127.0.0.1:9/hook", "token": "tok",
                        "authentication": {"schemes": ["Bearer"], "credentials": "secret"}});
    let set =
        call03(&s, "tasks/pushNotificationConfig/set", json!({"taskId": id, "pushNotificationConfig": config})).await;
    assert_eq!(set["result"]["taskId"], id.as_str(), "{set}");
    assert_eq!(set["result"]["pushNotificationConfig"]["id"], id.as_str(), "no id given: the task's");
    assert_eq!(set["result"]["pushNotificationConfig"]["authentication"]["schemes"], json!(["Bearer"]));
    // Get without a config id finds it; with one too.
    let got = call03(&s, "tasks/pushNotificationConfig/get", json!({"id": id})).await;
    assert_eq!(got["result"]["pushNotificationConfig"]["url"], "http://127.0.0.1:9/hook", "{got}");
    let named = json!({"taskId": id, "pushNotificationConfig": {"id": "second", "url": "http://127.0.0.1:9/two"}});
    call03(&s, "tasks/pushNotificationConfig/set", named).await;
    let got =
        call03(&s, "tasks/pushNotificationConfig/get", json!({"id": id, "pushNotificationConfigId": "second"})).await;
    assert_eq!(got["result"]["pushNotificationConfig"]["url"], "http://127.0.0.1:9/two", "{got}");
    let list = call03(&s, "tasks/pushNotificationConfig/list", json!({"id": id})).await;
    assert_eq!(list["result"].as_array().expect("a bare array").len(), 2, "{list}");
    // The same configs through 1.0.
    let list10 = call10(&s, "ListTaskPushNotificationConfigs", json!({"taskId": id})).await;
    assert_eq!(list10["result"]["configs"].as_array().expect("configs").len(), 2, "{list10}");
    let deleted =
        call03(&s, "tasks/pushNotificationConfig/delete", json!({"id": id, "pushNotificationConfigId": "second"}))
            .await;
    assert_eq!(deleted["result"], Value::Null, "{deleted}");
    assert!(deleted.get("error").is_none(), "{deleted}");
    let list = call03(&s, "tasks/pushNotificationConfig/list", json!({"id": id})).await;
    assert_eq!(list["result"].as_array().expect("array").len(), 1);
    // An empty scheme list is no authentication (0.3 allows it): kept, read back without one.
    let no_scheme = json!({"taskId": id, "pushNotificationConfig": {"id": "open", "url": "http://127.0.0.1:9/h",
                                                                     "authentication": {"schemes": []}}});
    let no_scheme = call03(&s, "tasks/pushNotificationConfig/set", no_scheme).await;
    assert!(no_scheme.get("error").is_none(), "{no_scheme}");
    assert!(no_scheme["result"]["pushNotificationConfig"].get("authentication").is_none(), "{no_scheme}");
    let got =
        call03(&s, "tasks/pushNotificationConfig/get", json!({"id": id, "pushNotificationConfigId": "open"})).await;
    assert_eq!(got["result"]["pushNotificationConfig"]["url"], "http://127.0.0.1:9/h", "{got}");
    assert!(got["result"]["pushNotificationConfig"].get("authentication").is_none(), "{got}");
    let got10 = call10(&s, "GetTaskPushNotificationConfig", json!({"taskId": id, "id": "open"})).await;
    assert!(got10["result"].get("authentication").is_none(), "{got10}");
    // Refusals: a webhook the policy refuses, credentials without a scheme, a malformed scheme
    // list, a missing config — each in the 0.3 shape, naming the 0.3 member.
    let refused = json!({"taskId": id, "pushNotificationConfig": {"url": "http://10.0.0.1/hook"}});
    let refused = call03(&s, "tasks/pushNotificationConfig/set", refused).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["data"]["metadata"]["reason"].is_string(), "{refused}");
    let bare_credentials = json!({"taskId": id, "pushNotificationConfig": {"url": "http://127.0.0.1:9/h",
                                  "authentication": {"schemes": [], "credentials": "secret"}}});
    let bare_credentials = call03(&s, "tasks/pushNotificationConfig/set", bare_credentials).await;
    assert_eq!(bare_credentials["error"]["code"], -32602, "{bare_credentials}");
    let text = bare_credentials["error"]["message"].as_str().expect("message");
    assert!(text.contains("authentication.schemes") && !text.contains("authentication.scheme "), "{text}");
    let malformed = json!({"taskId": id, "pushNotificationConfig": {"url": "http://127.0.0.1:9/h",
                           "authentication": {"schemes": "Bearer"}}});
    let malformed = call03(&s, "tasks/pushNotificationConfig/set", malformed).await;
    assert_eq!(malformed["error"]["code"], -32602, "{malformed}");
    assert!(malformed["error"].get("data").is_none() || malformed["error"]["data"].is_object(), "{malformed}");
    let missing =
        call03(&s, "tasks/pushNotificationConfig/get", json!({"id": id, "pushNotificationConfigId": "x"})).await;
    assert!(missing["error"]["code"].is_i64(), "{missing}");
    call03(&s, "tasks/cancel", json!({"id": id})).await;
}

#[tokio::test]
async fn errors_are_written_in_the_0_3_shape() {
    let s = server().await;
    let unknown = call03(&s, "tasks/get", json!({"id": "nope"})).await;
    assert_eq!(
        unknown["error"],
        json!({"code": -32001, "message": "Task not found", "data": {"reason": "TASK_NOT_FOUND", "metadata": {"taskId": "nope"}}})
    );
    let v1_method = call03(&s, "GetTask", json!({"id": "nope"})).await;
    assert_eq!(v1_method["error"]["code"], -32601);
    assert!(v1_method["error"]["message"].as_str().expect("message").contains("A2A-Version: 1.0"), "{v1_method}");
    assert_eq!(call03(&s, "tasks/list", json!({})).await["error"]["code"], -32601);
    let no_message = call03(&s, "message/send", json!({})).await;
    assert_eq!(no_message["error"]["code"], -32602, "{no_message}");
    let bad_part = json!({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "image"}]}});
    let bad_part = call03(&s, "message/send", bad_part).await;
    assert_eq!(bad_part["error"]["code"], -32602);
    assert!(bad_part["error"]["message"].as_str().expect("message").contains("unknown part kind"), "{bad_part}");
    let no_parts =
        call03(&s, "message/send", json!({"message": {"messageId": "m", "role": "user", "parts": []}})).await;
    assert_eq!(no_parts["error"]["code"], -32602);
    assert_eq!(no_parts["error"]["data"]["fieldViolations"][0]["field"], "message.parts", "{no_parts}");
    let v1_role = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"kind": "text", "text": "x"}]}});
    assert_eq!(call03(&s, "message/send", v1_role).await["error"]["code"], -32602);
    let bad_input = call03(&s, "message/send", send03("echo", json!({"nope": 1}), json!({}))).await;
    assert_eq!(bad_input["error"]["code"], -32602, "{bad_input}");
    let card = call03(&s, "agent/getAuthenticatedExtendedCard", Value::Null).await;
    assert_eq!(card["error"]["code"], -32007, "{card}");
    assert_eq!(card["error"]["message"], "Authenticated Extended Card is not configured");

    // Before the envelope: content type and JSON, in the 0.3 shape too.
    let (status, wrong_type) = post(&s, "{}", &[("content-type", "text/plain")]).await;
    assert_eq!((status, wrong_type["error"]["code"].clone()), (200, json!(-32005)), "{wrong_type}");
    assert!(wrong_type["error"].get("data").is_none(), "{wrong_type}");
    let (_, not_json) = post(&s, "{oops", &JSON).await;
    assert_eq!((not_json["error"]["code"].clone(), not_json["id"].clone()), (json!(-32700), Value::Null));

    // Versions: 0.3 by header is 0.3; another 0.x is refused in the 0.3 shape, 2.0 in the 1.0 one.
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": "nope"}}).to_string();
    let (_, explicit) = post(&s, &body, &[("content-type", "application/json"), ("a2a-version", "0.3")]).await;
    assert_eq!(explicit["error"]["code"], -32001, "{explicit}");
    let (_, old) = post(&s, &body, &[("content-type", "application/json"), ("a2a-version", "0.2")]).await;
    assert_eq!(old["error"]["code"], -32009, "{old}");
    assert!(old["error"].get("data").is_none(), "{old}");
    let (_, future) = post(&s, &body, &[("content-type", "application/json"), ("a2a-version", "2.0")]).await;
    assert_eq!(future["error"]["code"], -32009, "{future}");
    assert_eq!(future["error"]["data"][0]["reason"], "VERSION_NOT_SUPPORTED", "{future}");
}

#[tokio::test]
async fn the_card_lists_the_0_3_interface_after_the_1_0_ones() {
    let s = server().await;
    let card: Value =
        reqwest::get(s.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
    let versions: Vec<(&str, &str)> = interfaces
        .iter()
        .filter(|interface| ["JSONRPC", "HTTP+JSON"].contains(&interface["protocolBinding"].as_str().unwrap_or("")))
        .map(|interface| {
            (interface["protocolBinding"].as_str().expect("binding"), interface["protocolVersion"].as_str().expect("v"))
        })
        .collect();
    assert_eq!(
        versions,
        [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "0.3")],
        "{card}"
    );
    let jsonrpc = s.url("/a2a/jsonrpc");
    assert_eq!(card["url"], jsonrpc.as_str());
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert_eq!(card["protocolVersion"], "0.3");
    assert_eq!(
        card["additionalInterfaces"],
        json!([{"url": jsonrpc, "transport": "JSONRPC"}, {"url": s.url("/a2a/rest"), "transport": "HTTP+JSON"}])
    );

    // Without the 0.3 dialect: no 0.3 members, and a request without a version is refused.
    let s = server_with(false).await;
    let card: Value =
        reqwest::get(s.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    for member in ["url", "preferredTransport", "protocolVersion", "additionalInterfaces"] {
        assert!(card.get(member).is_none(), "{member}: {card}");
    }
    let refused = call03(&s, "tasks/get", json!({"id": "nope"})).await;
    assert_eq!(refused["error"]["code"], -32009, "{refused}");
    assert_eq!(refused["error"]["data"][0]["reason"], "VERSION_NOT_SUPPORTED", "{refused}");
}

/// A request's raw answer: status, content type and body.
async fn raw(server: &TestServer, body: &Value, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut request = reqwest::Client::new().post(server.url("/a2a/jsonrpc")).json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let content_type =
        response.headers().get("content-type").and_then(|value| value.to_str().ok()).unwrap_or("").to_owned();
    let text =
        tokio::time::timeout(Duration::from_secs(10), response.text()).await.expect("the answer ends").expect("body");
    (status, content_type, text)
}

/// Each `data:` line of an SSE body, parsed.
fn data_events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).expect("json"))
        .collect()
}

#[tokio::test]
async fn a_streaming_method_s_error_is_the_one_event_of_a_stream() {
    let s = server().await;
    let unknown_task = json!({"message": {"kind": "message", "messageId": "m-x", "role": "user", "taskId": "nope",
                                          "parts": [{"kind": "text", "text": "more"}]}});
    let cases = [
        ("tasks/resubscribe", json!({"id": "nope"}), -32001),
        ("message/stream", unknown_task, -32001),
        ("message/stream", json!({}), -32602),
    ];
    for (method, params, code) in cases {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let (status, content_type, text) = raw(&s, &body, &[]).await;
        assert_eq!(status, 200, "{method}: {text}");
        assert!(content_type.starts_with("text/event-stream"), "{method}: {content_type} {text}");
        let events = data_events(&text);
        assert_eq!(events.len(), 1, "{method}: one event, then the end: {text}");
        assert_eq!((events[0]["jsonrpc"].clone(), events[0]["id"].clone()), (json!("2.0"), json!(7)), "{text}");
        assert_eq!(events[0]["error"]["code"], code, "{method}: {text}");
        assert!(events[0].get("result").is_none(), "{text}");
    }
    let resubscribe = json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/resubscribe", "params": {"id": "nope"}});
    let (_, _, text) = raw(&s, &resubscribe, &[]).await;
    assert_eq!(data_events(&text)[0]["error"]["message"], "Task not found", "{text}");

    // A 0.x version refused on a streaming method: in a stream too, in the 0.3 shape.
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/resubscribe", "params": {"id": "nope"}});
    let (status, content_type, text) = raw(&s, &body, &[("a2a-version", "0.2")]).await;
    assert_eq!((status, content_type.starts_with("text/event-stream")), (200, true), "{content_type} {text}");
    assert_eq!(data_events(&text)[0]["error"]["code"], -32009, "{text}");

    // A non-streaming 0.3 method keeps its JSON answer; so do 1.0's streaming methods, whose
    // official clients read a JSON error before the stream.
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/get", "params": {"id": "nope"}});
    let (_, content_type, text) = raw(&s, &body, &[]).await;
    assert!(content_type.starts_with("application/json"), "{content_type} {text}");
    let body = json!({"jsonrpc": "2.0", "id": 10, "method": "SubscribeToTask", "params": {"id": "nope"}});
    let (status, content_type, text) = raw(&s, &body, &[("a2a-version", "1.0")]).await;
    assert_eq!((status, content_type.starts_with("application/json")), (200, true), "{content_type} {text}");
    let answer: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(answer["error"]["code"], -32001, "{text}");
}
