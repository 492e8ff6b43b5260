//! Who may call `accord serve`, as a real process: anonymous callers get a share each per client
//! address (a trusted proxy's `X-Forwarded-For` names the address), `--require-auth` refuses
//! anonymous callers on every face, and `--no-streaming` turns streaming off on the card and on
//! every streaming method of every face.

mod support;

use std::net::IpAddr;

use serde_json::{Value, json};
use support::Served;

const TOKEN: &str = "operator-token-0123456789abcdef";

fn client_from(address: &str) -> reqwest::Client {
    let address: IpAddr = address.parse().expect("an address");
    reqwest::Client::builder().local_address(address).build().expect("client")
}

/// An A2A 1.0 JSON-RPC call: the HTTP status and the body.
async fn rpc(
    client: &reqwest::Client,
    served: &Served,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut request = client
        .post(format!("{}/a2a/jsonrpc", served.url))
        .header("a2a-version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn slow_task() -> Value {
    json!({"message": {"messageId": format!("m-{}", nanos()), "role": "ROLE_USER",
                       "parts": [{"data": {"seconds": 60}}], "metadata": {"skillId": "slow"}},
           "configuration": {"returnImmediately": true}})
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

#[tokio::test]
async fn anonymous_callers_get_a_share_each_per_address() {
    let served = Served::start(&["--store", "memory", "--max-active-per-owner", "2", "--trusted-proxy", "127.0.0.3"]);
    let a = client_from("127.0.0.1");
    let b = client_from("127.0.0.2");
    let proxy = client_from("127.0.0.3");

    let mut from_a = Vec::new();
    for _ in 0..2 {
        let (status, body) = rpc(&a, &served, "SendMessage", slow_task(), &[]).await;
        assert_eq!(status, 200, "{body}");
        from_a.push(body["result"]["task"]["id"].as_str().expect("a task").to_owned());
    }
    let (_, refused) = rpc(&a, &served, "SendMessage", slow_task(), &[]).await;
    assert_eq!(refused["error"]["code"], json!(-32098), "address A's share is full: {refused}");
    // A header from an untrusted peer changes nothing.
    let (_, spoofed) = rpc(&a, &served, "SendMessage", slow_task(), &[("x-forwarded-for", "198.51.100.1")]).await;
    assert_eq!(spoofed["error"]["code"], json!(-32098), "X-Forwarded-For from an untrusted peer: {spoofed}");

    // Another address has a share of its own.
    let (status, body) = rpc(&b, &served, "SendMessage", slow_task(), &[]).await;
    assert_eq!(status, 200, "address B is not locked out by A: {body}");
    assert!(body["result"]["task"]["id"].is_string(), "{body}");
    // So has a client behind the trusted proxy, by the address the proxy names.
    let (status, body) = rpc(&proxy, &served, "SendMessage", slow_task(), &[("x-forwarded-for", "198.51.100.1")]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["task"]["id"].is_string(), "behind the trusted proxy: {body}");

    // An anonymous caller's tasks are its address's: another address does not find them.
    let (_, mine) = rpc(&a, &served, "GetTask", json!({"id": from_a[0]}), &[]).await;
    assert_eq!(mine["result"]["id"], json!(from_a[0]), "{mine}");
    let (_, theirs) = rpc(&b, &served, "GetTask", json!({"id": from_a[0]}), &[]).await;
    assert_eq!(theirs["error"]["code"], json!(-32001), "{theirs}");

    // Cancelling one of A's tasks frees a place in A's share.
    let (_, canceled) = rpc(&a, &served, "CancelTask", json!({"id": from_a[0]}), &[]).await;
    assert_eq!(canceled["result"]["status"]["state"], json!("TASK_STATE_CANCELED"), "{canceled}");
    let (status, body) = rpc(&a, &served, "SendMessage", slow_task(), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["task"]["id"].is_string(), "a freed place is A's again: {body}");
}

#[tokio::test]
async fn require_auth_refuses_anonymous_callers_on_every_face_and_keeps_the_card_open() {
    let served = Served::start(&["--store", "memory", "--bearer-token", TOKEN, "--require-auth"]);
    let client = reqwest::Client::new();
    let echo = json!({"message": {"messageId": "m-echo", "role": "ROLE_USER", "parts": [{"data": {"text": "hi"}}],
                                  "metadata": {"skillId": "echo"}}});

    let (status, body) = rpc(&client, &served, "SendMessage", echo.clone(), &[]).await;
    assert_eq!(status, 401, "{body}");
    assert!(body["error"]["code"].is_i64(), "a JSON-RPC error: {body}");
    let rest = client
        .post(format!("{}/a2a/rest/message:send", served.url))
        .header("a2a-version", "1.0")
        .json(&echo)
        .send()
        .await
        .expect("rest");
    assert_eq!(rest.status().as_u16(), 401);
    assert!(rest.headers().get("www-authenticate").is_some(), "a challenge names the scheme");
    let lucid =
        client.post(format!("{}/entrypoints/echo/invoke", served.url)).json(&json!({"input": {"text": "hi"}})).send();
    let lucid = lucid.await.expect("lucid");
    assert_eq!(lucid.status().as_u16(), 401);
    let lucid: Value = lucid.json().await.expect("json");
    assert_eq!(lucid["error"]["code"], json!("unauthenticated"), "{lucid}");

    let (status, body) =
        rpc(&client, &served, "SendMessage", echo, &[("authorization", &format!("Bearer {TOKEN}"))]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["task"]["status"]["state"], json!("TASK_STATE_COMPLETED"), "{body}");
    let card = client.get(format!("{}/.well-known/agent-card.json", served.url)).send().await.expect("card");
    assert_eq!(card.status().as_u16(), 200, "the card stays open");
    let health = client.get(format!("{}/health", served.url)).send().await.expect("health");
    assert_eq!(health.status().as_u16(), 200, "/health stays open");
}

#[test]
fn require_auth_without_a_scheme_is_an_operator_mistake() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_accord"))
        .args(["serve", "--port", "0", "--store", "memory", "--require-auth"])
        .output()
        .expect("run accord serve");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--require-auth needs a credential scheme"), "{stderr}");
}

#[tokio::test]
async fn no_streaming_turns_streaming_off_on_the_card_and_every_streaming_method() {
    let served = Served::start(&["--store", "memory", "--no-streaming"]);
    let client = reqwest::Client::new();
    let card: Value = client
        .get(format!("{}/.well-known/agent-card.json", served.url))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    assert_eq!(card["capabilities"]["streaming"], json!(false), "{card}");

    let ticks = json!({"message": {"messageId": "m-ticks", "role": "ROLE_USER", "parts": [{"data": {"count": 2}}],
                                   "metadata": {"skillId": "ticks"}}});
    let (status, body) = rpc(&client, &served, "SendStreamingMessage", ticks.clone(), &[]).await;
    assert_eq!((status, body["error"]["code"].clone()), (200, json!(-32004)), "{body}");
    let (_, sent) = rpc(&client, &served, "SendMessage", slow_task(), &[]).await;
    let id = sent["result"]["task"]["id"].as_str().expect("a blocking send still works").to_owned();
    let (_, body) = rpc(&client, &served, "SubscribeToTask", json!({"id": id}), &[]).await;
    assert_eq!(body["error"]["code"], json!(-32004), "{body}");

    let lucid = client
        .post(format!("{}/entrypoints/ticks/stream", served.url))
        .json(&json!({"input": {"count": 2}}))
        .send()
        .await
        .expect("lucid stream");
    assert_eq!(lucid.status().as_u16(), 400);
    let lucid: Value = lucid.json().await.expect("json");
    assert_eq!(lucid["error"]["code"], json!("stream_not_supported"), "{lucid}");
    // The Lucid task subscription is a stream too.
    let created = client
        .post(format!("{}/tasks", served.url))
        .header("task-access-token", TOKEN)
        .json(&json!({"message": {"role": "user", "content": {"text": "{\"seconds\": 60}"}}, "skillId": "slow"}))
        .send()
        .await
        .expect("lucid task");
    assert_eq!(created.status().as_u16(), 200);
    let created: Value = created.json().await.expect("json");
    let task_id = created["taskId"].as_str().expect("a task id").to_owned();
    let subscribe = client
        .get(format!("{}/tasks/{task_id}/subscribe", served.url))
        .header("task-access-token", TOKEN)
        .send()
        .await
        .expect("lucid subscribe");
    assert_eq!(subscribe.status().as_u16(), 400);
    let subscribe: Value = subscribe.json().await.expect("json");
    assert_eq!(subscribe["error"]["code"], json!("stream_not_supported"), "{subscribe}");
    // The JSON-RPC tasks face's stream too, before any task starts.
    let tasks_rpc: Value = client
        .post(format!("{}/a2a/tasks", served.url))
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/sendSubscribe",
                      "params": {"task": {"skill": "ticks", "input": {"count": 2}}}}))
        .send()
        .await
        .expect("tasks/sendSubscribe")
        .json()
        .await
        .expect("json");
    assert_eq!(tasks_rpc["error"]["code"], json!(-32601), "{tasks_rpc}");
    let entrypoints: Value =
        client.get(format!("{}/entrypoints", served.url)).send().await.expect("list").json().await.expect("json");
    let ticks = entrypoints["items"].as_array().expect("items").iter().find(|item| item["key"] == "ticks").cloned();
    assert_eq!(ticks.expect("ticks")["streaming"], json!(false), "{entrypoints}");
}
