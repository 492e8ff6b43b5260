//! `accord serve`'s capacity and rate flags, on a real process: `--max-active-per-owner` refuses
//! one caller's task beyond its share while another's still runs, and `--rate-limit` with
//! `--rate-burst` refuses the request over the burst (the card routes stay open).

mod support;

use serde_json::{Value, json};
use support::Served;

const ALICE: &str = "alice-task-token-0123456789";
const BOB: &str = "bob-task-token-0123456789abc";

async fn send_slow(client: &reqwest::Client, served: &Served, token: &str) -> (u16, Option<String>, Value) {
    let body = json!({"message": {"role": "user", "content": {"text": "{\"seconds\": 60}"}}, "skillId": "slow"});
    let response = client
        .post(format!("{}/tasks", served.url))
        .header("task-access-token", token)
        .json(&body)
        .send()
        .await
        .expect("response");
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|value| value.to_str().expect("ascii").to_owned());
    (status, retry_after, response.json().await.expect("json"))
}

#[tokio::test]
async fn max_active_per_owner_holds_one_caller_to_its_share() {
    let served = Served::start(&["--store", "memory", "--max-active-per-owner", "1"]);
    let client = reqwest::Client::new();
    let (status, _, body) = send_slow(&client, &served, ALICE).await;
    assert_eq!(status, 200, "{body}");
    let (status, retry_after, body) = send_slow(&client, &served, ALICE).await;
    assert_eq!(
        (status, retry_after.as_deref(), body["error"]["code"].clone()),
        (429, Some("5"), json!("owner_share_exhausted"))
    );
    let (status, _, body) = send_slow(&client, &served, BOB).await;
    assert_eq!(status, 200, "another caller still gets through: {body}");
}

#[tokio::test]
async fn rate_limit_refuses_the_request_over_the_burst() {
    let served = Served::start(&["--store", "memory", "--rate-limit", "1/s", "--rate-burst", "2"]);
    let client = reqwest::Client::new();
    let invoke = || async {
        let response = client
            .post(format!("{}/entrypoints/echo/invoke", served.url))
            .json(&json!({"input": {"text": "hi"}}))
            .send()
            .await
            .expect("response");
        let retry_after = response.headers().get("retry-after").map(|value| value.to_str().expect("ascii").to_owned());
        (response.status().as_u16(), retry_after)
    };
    assert_eq!(invoke().await.0, 200);
    assert_eq!(invoke().await.0, 200);
    assert_eq!(invoke().await, (429, Some("1".to_owned())), "the third within the second is over the burst");
    let health = client.get(format!("{}/health", served.url)).send().await.expect("health");
    assert_eq!(health.status().as_u16(), 200, "the card routes are not limited");
}
