//! `accord serve --demo-prices`: a priced skill cannot be run for free through any route — Lucid
//! invoke, Lucid stream, Lucid tasks, JSON-RPC tasks, A2A JSON-RPC and A2A HTTP+JSON.

use reqwest::Client;
use serde_json::{Value, json};

mod support;
use support::Served;

const TOKEN: &str = "paid-routes-owner-token-0123456789";

/// A POST of `body` as JSON, answered with its status and body text.
async fn post(client: &Client, url: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = client.post(url).json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

/// Asserts that a route answered without running the skill: a refusal, and none of the skill's
/// output in the answer.
fn refused(route: &str, (status, body): &(u16, String), output_field: &str) {
    assert!(!body.contains(output_field), "{route} ran the skill for free: {status} {body}");
    let ok_with_error = *status == 200 && body.contains("\"error\"");
    assert!(!(200..300).contains(status) || ok_with_error, "{route} was not refused: {status} {body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_priced_skill_cannot_be_run_for_free_through_any_route() {
    let dir = std::env::temp_dir().join(format!("accord-paid-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let store = format!("sqlite://{}", dir.join("tasks.db").display());
    let served = Served::start(&["--demo-prices", "--store", &store]);
    let base = served.url.clone();
    let client = Client::new();
    let a2a = [("a2a-version", "1.0")];

    // `summarize` is priced per invoke and per task and can stream; `slow` is priced per task and
    // can be invoked and streamed too.
    for (skill, input, output_field) in [
        ("summarize", json!({"text": "Cats purr. Dogs bark. Cats nap."}), "\"summary\""),
        ("slow", json!({"seconds": 0}), "\"slept\""),
    ] {
        let invoke = post(&client, &format!("{base}/entrypoints/{skill}/invoke"), &input, &[]).await;
        assert_eq!(invoke.0, 402, "{skill} invoke: {}", invoke.1);
        refused(&format!("{skill}: Lucid invoke"), &invoke, output_field);

        let stream = post(&client, &format!("{base}/entrypoints/{skill}/stream"), &input, &[]).await;
        assert_eq!(stream.0, 402, "{skill} stream: {}", stream.1);
        refused(&format!("{skill}: Lucid stream"), &stream, output_field);

        let task = json!({"skillId": skill, "message": {"role": "user", "content": {"text": input.to_string()}}});
        let lucid_task = post(&client, &format!("{base}/tasks"), &task, &[("task-access-token", TOKEN)]).await;
        assert_eq!(lucid_task.0, 402, "{skill} task: {}", lucid_task.1);
        refused(&format!("{skill}: Lucid tasks"), &lucid_task, output_field);

        let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/send",
                         "params": {"task": {"skill": skill, "input": input}}});
        let rpc_task = post(&client, &format!("{base}/a2a/tasks"), &rpc, &[]).await;
        refused(&format!("{skill}: JSON-RPC tasks"), &rpc_task, output_field);

        let message = json!({"messageId": format!("m-{skill}"), "role": "ROLE_USER", "parts": [{"data": input}],
                             "metadata": {"skillId": skill}});
        let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                          "params": {"message": message, "configuration": {"returnImmediately": false}}});
        let a2a_rpc = post(&client, &format!("{base}/a2a/jsonrpc"), &send, &a2a).await;
        refused(&format!("{skill}: A2A JSON-RPC"), &a2a_rpc, output_field);

        let rest_body = json!({"message": message, "configuration": {"returnImmediately": false}});
        let a2a_rest = post(&client, &format!("{base}/a2a/rest/message:send"), &rest_body, &a2a).await;
        refused(&format!("{skill}: A2A HTTP+JSON"), &a2a_rest, output_field);
    }

    // The free skills stay free on the same server.
    let echo = post(&client, &format!("{base}/entrypoints/echo/stream"), &json!({"text": "hi"}), &[]).await;
    assert_eq!(echo.0, 200, "{}", echo.1);
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
