//! `POST /entrypoints/{key}/invoke` over real HTTP: success, idempotency and every error row.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use accord_client::{Client, ClientError, InvokeOptions, Operation};
use accord_engine::{Agent, Completion, Message, Outcome, Run, Skill, SkillError};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use accord_test_support::probe::Probe;
use serde_json::{Value, json};

const KEY: &str = "key-0123456789-abcdefghij";

struct Fixture {
    server: TestServer,
    runs: Arc<AtomicUsize>,
    gate: Arc<Probe>,
}

fn agent(runs: Arc<AtomicUsize>, gate: Arc<Probe>) -> Agent {
    let count = Arc::clone(&runs);
    Agent::builder("invoke-test")
        .skill(
            Skill::builder("count")
                .input_schema(json!({"type": "object", "properties": {"fail": {"type": "boolean"}}}))
                .invoke(move |run: Run| {
                    let count = Arc::clone(&count);
                    async move {
                        let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                        if run.input()["fail"] == json!(true) {
                            return Err(SkillError::new("flaky", "failed on purpose"));
                        }
                        Ok(Outcome::Completed(Completion {
                            output: json!({"n": n}),
                            usage: Some(json!({"calls": 1})),
                            model: Some("counter-1".into()),
                            ..Completion::default()
                        }))
                    }
                }),
        )
        .skill(Skill::builder("gated").invoke(move |_run: Run| {
            let gate = Arc::clone(&gate);
            async move {
                gate.started();
                gate.on_cancel.notified().await;
                Ok(Outcome::Completed(Completion::new(json!({"released": true}))))
            }
        }))
        .skill(
            Skill::builder("typed")
                .input_schema(
                    json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}),
                )
                .output_schema(json!({"type": "object", "required": ["text"]}))
                .invoke(|run: Run| async move {
                    let text = run.input()["text"].as_str().unwrap_or_default().to_owned();
                    let output = if text == "bad" { json!({"nope": 1}) } else { json!({"text": text}) };
                    Ok(Outcome::Completed(Completion::new(output)))
                }),
        )
        .skill(Skill::builder("panics").invoke(|_run: Run| async move {
            if true {
                panic!("handler bug");
            }
            Ok(Outcome::Completed(Completion::default()))
        }))
        .skill(
            Skill::builder("asks")
                .invoke(|_run: Run| async move { Ok(Outcome::InputRequired(Message::agent_text("which city?"))) }),
        )
        .skill(
            Skill::builder("stream-only")
                .stream(|_run: Run| async move { Ok(Outcome::Completed(Completion::default())) }),
        )
        .build()
        .expect("agent")
}

async fn fixture_with(config: ServerConfig) -> Fixture {
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = Probe::new();
    let agent = agent(Arc::clone(&runs), Arc::clone(&gate));
    Fixture { server: TestServer::start(agent.router_with(config)).await, runs, gate }
}

async fn fixture() -> Fixture {
    fixture_with(ServerConfig::default()).await
}

async fn post(url: &str, body: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = reqwest::Client::new().post(url).header("content-type", "application/json").body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    (status, headers, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

#[tokio::test]
async fn invoke_returns_the_output_with_a_run_id() {
    let f = fixture().await;
    let (status, headers, body) = post(&f.server.url("/entrypoints/count/invoke"), r#"{"input":{}}"#, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["status"], "succeeded");
    assert_eq!(body["output"], json!({"n": 1}));
    assert_eq!(body["usage"], json!({"calls": 1}));
    assert_eq!(body["model"], "counter-1");
    let run_id = body["run_id"].as_str().expect("run_id");
    assert_eq!(run_id.len(), 36, "a UUID: {run_id}");
    // A body without `input` is the input itself; an empty body is `{}`.
    let (status, _, body) = post(&f.server.url("/entrypoints/count/invoke"), r#"{"fail":false}"#, &[]).await;
    assert_eq!((status, body["output"]["n"].clone()), (200, json!(2)));
    let (status, _, _) = post(&f.server.url("/entrypoints/count/invoke"), "", &[]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_same_idempotency_key_replays_without_running_again() {
    let f = fixture().await;
    let url = f.server.url("/entrypoints/count/invoke");
    let (status, first_headers, first) = post(&url, r#"{"input":{}}"#, &[("idempotency-key", KEY)]).await;
    assert_eq!(status, 200);
    assert!(first_headers.get("idempotency-replayed").is_none());
    let (status, headers, again) =
        post(&url, r#"{ "input" : { } }"#, &[("idempotency-key", &format!("  {KEY} "))]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["idempotency-replayed"], "true");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(again, first, "same run_id, same output");
    assert_eq!(f.runs.load(Ordering::SeqCst), 1, "the skill ran once");

    // The client sends the key too.
    let client = Client::new();
    let card = client.fetch_card(&f.server.origin).await.expect("card");
    let options = InvokeOptions { idempotency_key: Some(KEY.into()), ..InvokeOptions::default() };
    let replayed = client.invoke(&card, "count", json!({}), options).await.expect("invoke");
    assert_eq!(replayed.run_id.as_deref(), first["run_id"].as_str());
}

#[tokio::test]
async fn a_key_reused_for_another_request_or_another_caller_conflicts() {
    let f = fixture().await;
    let url = f.server.url("/entrypoints/count/invoke");
    post(&url, r#"{"input":{}}"#, &[("idempotency-key", KEY)]).await;
    let (status, _, body) = post(&url, r#"{"input":{"fail":false}}"#, &[("idempotency-key", KEY)]).await;
    assert_eq!(status, 409);
    assert_eq!(body["error"]["code"], "idempotency_key_conflict");
    let (status, _, body) =
        post(&url, r#"{"input":{}}"#, &[("idempotency-key", KEY), ("authorization", "Bearer someone-else")]).await;
    assert_eq!(status, 409, "another credential never gets the first caller's replay");
    assert_eq!(body["error"]["code"], "idempotency_key_conflict");
    // Keys are scoped per entrypoint.
    let (status, _, _) =
        post(&f.server.url("/entrypoints/typed/invoke"), r#"{"text":"x"}"#, &[("idempotency-key", KEY)]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_key_in_progress_gets_409_with_retry_after() {
    let f = fixture().await;
    let url = f.server.url("/entrypoints/gated/invoke");
    let first = tokio::spawn({
        let url = url.clone();
        async move { post(&url, "{}", &[("idempotency-key", KEY)]).await }
    });
    // Wait until the first request is inside the handler.
    tokio::time::timeout(Duration::from_secs(10), async {
        while f.gate.starts() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("first run started");
    let (status, headers, body) = post(&url, "{}", &[("idempotency-key", KEY)]).await;
    assert_eq!(status, 409);
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(body["error"]["code"], "idempotency_in_progress");
    f.gate.cancelled(); // lets the gated handler finish
    let (status, _, body) = first.await.expect("first");
    assert_eq!((status, body["output"].clone()), (200, json!({"released": true})));
}

#[tokio::test]
async fn a_failed_run_releases_its_key() {
    let f = fixture().await;
    let url = f.server.url("/entrypoints/count/invoke");
    let (status, _, body) = post(&url, r#"{"input":{"fail":true}}"#, &[("idempotency-key", KEY)]).await;
    assert_eq!(status, 500);
    assert_eq!(body, json!({"error": {"code": "flaky", "message": "failed on purpose"}}));
    let (status, headers, _) = post(&url, r#"{"input":{"fail":true}}"#, &[("idempotency-key", KEY)]).await;
    assert_eq!(status, 500, "ran again instead of replaying a failure");
    assert!(headers.get("idempotency-replayed").is_none());
    assert_eq!(f.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn idempotency_keys_must_be_20_to_256_characters() {
    let f = fixture().await;
    let url = f.server.url("/entrypoints/count/invoke");
    for key in ["short", &"k".repeat(257), "                         "] {
        let (status, _, body) = post(&url, "{}", &[("idempotency-key", key)]).await;
        assert_eq!(status, 400, "{key:?}");
        assert_eq!(body["error"]["code"], "invalid_idempotency_key");
    }
    let (status, _, _) = post(&url, "{}", &[("idempotency-key", &"k".repeat(256))]).await;
    assert_eq!(status, 200);
    assert_eq!(f.runs.load(Ordering::SeqCst), 1, "rejected keys never ran the skill");

    let client = Client::new();
    let card = client.fetch_card(&f.server.origin).await.expect("card");
    let options = InvokeOptions { idempotency_key: Some("short".into()), ..InvokeOptions::default() };
    let error = client.invoke(&card, "count", json!({}), options).await.expect_err("client refuses");
    assert!(matches!(error, ClientError::InvalidIdempotencyKey));
}

#[tokio::test]
async fn error_rows_of_the_profile() {
    let f = fixture().await;
    let url = |key: &str| f.server.url(&format!("/entrypoints/{key}/invoke"));

    let (status, _, body) = post(&url("missing"), "{}", &[]).await;
    assert_eq!((status, body), (404, json!({"error": {"code": "entrypoint_not_found"}})));

    let (status, _, body) = post(&url("stream-only"), "{}", &[]).await;
    assert_eq!((status, body), (501, json!({"error": {"code": "not_implemented"}})));

    let (status, _, body) = post(&url("typed"), "{not json", &[]).await;
    assert_eq!((status, body), (400, json!({"error": {"code": "invalid_request", "message": "Invalid JSON"}})));

    let (status, _, body) = post(&url("typed"), r#"{"input":{"text":5}}"#, &[("idempotency-key", "bad")]).await;
    assert_eq!(status, 400, "input is checked before the idempotency key");
    assert_eq!(body["error"]["code"], "invalid_input");
    let issues = body["error"]["issues"].as_array().expect("issues");
    assert_eq!(issues[0]["path"], json!(["text"]));
    assert_eq!(issues[0]["code"], "type");
    assert!(issues[0]["message"].as_str().is_some_and(|m| !m.is_empty()));

    let (status, _, body) = post(&url("typed"), r#"{"input":{}}"#, &[]).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["issues"][0]["code"], "required");

    let (status, _, body) = post(&url("typed"), r#"{"input":{"text":"bad"}}"#, &[]).await;
    assert_eq!(status, 500);
    assert_eq!(body["error"]["code"], "invalid_output");
    assert_eq!(body["error"]["issues"][0]["code"], "required");

    let (status, _, body) = post(&url("panics"), "{}", &[]).await;
    assert_eq!(status, 500);
    assert_eq!(body["error"], json!({"code": "internal_error", "message": "the skill handler panicked"}));

    let (status, _, body) = post(&url("asks"), "{}", &[]).await;
    assert_eq!((status, body), (422, json!({"error": {"code": "input_required", "message": "which city?"}})));

    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn bodies_over_the_cap_get_413() {
    let f = fixture_with(ServerConfig::default().body_limit(64)).await;
    let big = format!(r#"{{"input":{{"pad":"{}"}}}}"#, "x".repeat(100));
    let (status, _, body) = post(&f.server.url("/entrypoints/count/invoke"), &big, &[]).await;
    assert_eq!(status, 413);
    assert_eq!(body["error"]["code"], "payload_too_large");
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn client_errors_carry_the_call_the_status_and_the_body() {
    let f = fixture().await;
    let client = Client::new();
    let card = client.fetch_card(&f.server.origin).await.expect("card");
    let error = client.invoke(&card, "typed", json!({"text": 1}), InvokeOptions::default()).await.expect_err("400");
    match &error {
        ClientError::Status { operation: Operation::Invoke, status: 400, body, .. } => {
            assert_eq!(body["error"]["code"], "invalid_input");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(error.error_code(), Some("invalid_input"));
    let error = client.invoke(&card, "nope", json!({}), InvokeOptions::default()).await.expect_err("unknown");
    assert!(matches!(error, ClientError::SkillNotFound { .. }), "the client checks the card first");
}
