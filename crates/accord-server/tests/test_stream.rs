//! `POST /entrypoints/{key}/stream` over real HTTP: framing, order, failures and cancellation.

use std::sync::Arc;
use std::time::Duration;

use accord_client::{Client, ClientError, Operation, StreamEvent};
use accord_engine::{Agent, Completion, Outcome, Run, RunEvent, Skill, SkillError};
use accord_test_support::TestServer;
use accord_test_support::probe::Probe;
use accord_types::lucid::{RunStatus, StreamPayload};
use futures_util::StreamExt;
use serde_json::{Value, json};

fn agent(probe: Arc<Probe>) -> Agent {
    Agent::builder("stream-test")
        .skill(
            Skill::builder("count")
                .input_schema(json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}))
                .stream(|run: Run| async move {
                    let n = run.input()["n"].as_u64().unwrap_or(3);
                    for i in 0..n {
                        run.emit(RunEvent::Delta { delta: format!("t{i}"), mime: None, is_final: i + 1 == n }).await;
                    }
                    run.emit(RunEvent::Text { text: "line one\nline two".into(), mime: Some("text/plain".into()) })
                        .await;
                    Ok(Outcome::Completed(Completion::new(json!({"n": n}))))
                }),
        )
        .skill(Skill::builder("fails").stream(|run: Run| async move {
            run.emit(RunEvent::Delta { delta: "partial".into(), mime: None, is_final: false }).await;
            Err::<Outcome, _>(SkillError::new("upstream_down", "the upstream is down"))
        }))
        .skill(Skill::builder("waits").stream(move |run: Run| {
            let probe = Arc::clone(&probe);
            async move {
                probe.started();
                run.emit(RunEvent::Delta { delta: "waiting".into(), mime: None, is_final: false }).await;
                run.cancelled().await;
                probe.cancelled();
                Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
            }
        }))
        .skill(
            Skill::builder("invoke-only")
                .invoke(|_run: Run| async move { Ok(Outcome::Completed(Completion::default())) }),
        )
        .build()
        .expect("agent")
}

async fn collect(server: &TestServer, skill: &str, input: Value) -> Vec<StreamEvent> {
    let client = Client::new();
    let card = client.fetch_card(&server.origin).await.expect("card");
    let stream = client.stream(&card, skill, input).await.expect("stream");
    tokio::time::timeout(Duration::from_secs(10), stream.map(|event| event.expect("event")).collect())
        .await
        .expect("ends")
}

#[tokio::test]
async fn a_stream_runs_from_run_start_to_run_end_in_order() {
    let server = TestServer::agent(&agent(Probe::new())).await;
    let events = collect(&server, "count", json!({"n": 3})).await;
    let kinds: Vec<&str> = events.iter().map(|event| event.event.as_str()).collect();
    assert_eq!(kinds, ["run-start", "delta", "delta", "delta", "text", "run-end"]);
    let ids: Vec<u64> = events.iter().map(|event| event.id.as_deref().expect("id").parse().expect("number")).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
    let run_id = events[0].data["runId"].as_str().expect("runId").to_owned();
    for (index, event) in events.iter().enumerate() {
        let envelope = event.envelope().expect("envelope");
        assert_eq!(envelope.run_id, run_id);
        assert_eq!(envelope.sequence, index as u64);
        assert_eq!(envelope.payload.kind(), event.event);
        assert!(envelope.created_at.ends_with('Z') && envelope.created_at.len() == 24, "{}", envelope.created_at);
    }
    assert_eq!(events[1].data["delta"], "t0");
    assert_eq!(events[3].data["final"], true);
    assert_eq!(events[4].data["text"], "line one\nline two", "multi-line data survives the framing");
    match events[5].envelope().expect("run-end").payload {
        StreamPayload::RunEnd { status, output, error, .. } => {
            assert_eq!(status, RunStatus::Succeeded);
            assert_eq!(output, Some(json!({"n": 3})));
            assert_eq!(error, None);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn the_wire_framing_and_headers_are_the_profiles() {
    let server = TestServer::agent(&agent(Probe::new())).await;
    let response = reqwest::Client::new()
        .post(server.url("/entrypoints/count/stream"))
        .json(&json!({"input": {"n": 1}}))
        .send()
        .await
        .expect("response");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream; charset=utf-8");
    assert_eq!(response.headers()["cache-control"], "no-cache, no-transform");
    let text = response.text().await.expect("body");
    let frames: Vec<&str> = text.split("\n\n").filter(|frame| !frame.trim().is_empty()).collect();
    assert_eq!(frames.len(), 4, "{text}");
    let first: Vec<&str> = frames[0].lines().collect();
    assert_eq!(first[0], "id: 0");
    assert_eq!(first[1], "event: run-start");
    assert!(first[2].starts_with("data: {\"kind\":\"run-start\""), "{}", first[2]);
    let text_frame: Vec<&str> = frames[2].lines().collect();
    assert_eq!(text_frame[1], "event: text");
    assert_eq!(text_frame.len(), 3, "JSON data never spans lines: {text_frame:?}");
}

#[tokio::test]
async fn a_handler_error_is_an_error_event_then_a_failed_run_end() {
    let server = TestServer::agent(&agent(Probe::new())).await;
    let events = collect(&server, "fails", json!({})).await;
    let kinds: Vec<&str> = events.iter().map(|event| event.event.as_str()).collect();
    assert_eq!(kinds, ["run-start", "delta", "error", "run-end"]);
    assert_eq!(events[2].data["code"], "upstream_down");
    assert_eq!(events[2].data["message"], "the upstream is down");
    assert_eq!(events[3].data["status"], "failed");
    assert_eq!(events[3].data["error"], json!({"code": "upstream_down", "message": "the upstream is down"}));
}

#[tokio::test]
async fn dropping_the_connection_cancels_the_handler() {
    let probe = Probe::new();
    let server = TestServer::agent(&agent(Arc::clone(&probe))).await;
    let client = Client::new();
    let card = client.fetch_card(&server.origin).await.expect("card");
    let mut stream = client.stream(&card, "waits", json!({})).await.expect("stream");
    assert_eq!(stream.next().await.expect("event").expect("ok").event, "run-start");
    assert_eq!(stream.next().await.expect("event").expect("ok").data["delta"], "waiting");
    assert_eq!(probe.cancellations(), 0, "still running while connected");
    drop(stream);
    tokio::time::timeout(Duration::from_secs(10), probe.on_cancel.notified())
        .await
        .expect("the handler saw its cancellation after the client went away");
    assert_eq!(probe.cancellations(), 1);
}

#[tokio::test]
async fn stream_error_rows_of_the_profile() {
    let server = TestServer::agent(&agent(Probe::new())).await;
    let post = |key: &str, body: &str| {
        reqwest::Client::new()
            .post(server.url(&format!("/entrypoints/{key}/stream")))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
    };
    let response = post("missing", "{}").await.expect("response");
    assert_eq!(response.status(), 404);
    assert_eq!(response.json::<Value>().await.expect("json"), json!({"error": {"code": "entrypoint_not_found"}}));

    let response = post("invoke-only", "{}").await.expect("response");
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        json!({"error": {"code": "stream_not_supported", "key": "invoke-only"}})
    );

    let response = post("count", "{oops").await.expect("response");
    assert_eq!(response.status(), 400);
    assert_eq!(response.json::<Value>().await.expect("json")["error"]["code"], "invalid_request");

    let response = post("count", r#"{"input":{"n":-1}}"#).await.expect("response");
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "invalid_input");
    assert_eq!(body["error"]["issues"][0]["path"], json!(["n"]));

    // The client reports which call failed, with the status and body.
    let client = Client::new();
    let card = client.fetch_card(&server.origin).await.expect("card");
    let error = match client.stream(&card, "invoke-only", json!({})).await {
        Err(error) => error,
        Ok(_) => panic!("expected an error"),
    };
    assert!(matches!(error, ClientError::Status { operation: Operation::Stream, status: 400, .. }), "{error:?}");
    assert_eq!(error.error_code(), Some("stream_not_supported"));
}
