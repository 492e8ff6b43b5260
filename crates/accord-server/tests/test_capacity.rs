//! Fair capacity over real HTTP: one caller at its share of the task store is refused with a
//! retryable error on every face while another still gets through; a full store is retryable
//! too (not an internal error); and the per-caller rate limit refuses the request over the rate,
//! in each face's shape with `Retry-After`, per authenticated owner and per client address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;

use accord_engine::task::{AccessToken, MemoryStore, MemoryStoreConfig, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill, SkillError};
use accord_server::auth::{AuthConfig, BearerTokens};
use accord_server::{AgentRouterExt, RateLimitConfig, ServerConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};

const ALICE: &str = "alice-bearer-token-0123456789";
const BOB: &str = "bob-bearer-token-0123456789ab";

fn agent() -> Agent {
    Agent::builder("capacity-test")
        .skill(
            Skill::builder("echo")
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(Skill::builder("wait").invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        .build()
        .expect("agent")
}

fn auth() -> AuthConfig {
    let token = |text: &str| AccessToken::parse(text).expect("token");
    AuthConfig::new().bearer(BearerTokens::new().with(&token(ALICE), "alice", ["demo"]).with(
        &token(BOB),
        "bob",
        ["demo"],
    ))
}

/// The faces over a memory store of `max_tasks`, with at most `share` unfinished tasks per owner.
fn config(max_tasks: usize, share: Option<usize>) -> ServerConfig {
    let agent = agent();
    let store = MemoryStore::new(MemoryStoreConfig { max_tasks, ..MemoryStoreConfig::default() });
    let runtime = TaskRuntime::new(agent, Arc::new(store), RuntimeConfig::default().max_active_per_owner(share));
    ServerConfig::default().tasks(runtime).auth(auth())
}

async fn server(config: ServerConfig) -> TestServer {
    TestServer::start(agent().router_with(config)).await
}

/// One HTTP answer: status, `Retry-After`, body as JSON.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

async fn post(
    client: &reqwest::Client,
    url: String,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    body: Value,
) -> Answer {
    let mut request = client.post(url).json(&body);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("a response");
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|value| value.to_str().expect("ascii").to_owned());
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON body, got {status}: {text}"));
    Answer { status, retry_after, body }
}

/// A task of `skill` started on each face in turn: the Lucid `POST /tasks` (owned by the bearer
/// token, sent as its access token too), JSON-RPC tasks `tasks/send`, A2A REST `message:send` and A2A
/// JSON-RPC `SendMessage` (all returning at once).
#[derive(Clone, Copy, Debug)]
enum Face {
    Lucid,
    JsonRpcTasks,
    A2aRest,
    A2aJsonRpc,
}

const FACES: [Face; 4] = [Face::Lucid, Face::JsonRpcTasks, Face::A2aRest, Face::A2aJsonRpc];

async fn start(server: &TestServer, client: &reqwest::Client, face: Face, token: &str, skill: &str) -> Answer {
    let a2a_message =
        json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "{}"}], "metadata": {"skillId": skill}});
    let a2a_send = json!({"message": a2a_message, "configuration": {"returnImmediately": true}});
    match face {
        Face::Lucid => {
            let body = json!({"message": {"role": "user", "content": {"text": "{}"}}, "skillId": skill});
            post(client, server.url("/tasks"), Some(token), &[("task-access-token", token)], body).await
        }
        Face::JsonRpcTasks => {
            let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/send", "params": {"task": {"skill": skill, "input": {}}}});
            post(client, server.url("/a2a/tasks"), Some(token), &[], body).await
        }
        Face::A2aRest => {
            post(client, server.url("/a2a/rest/message:send"), Some(token), &[("a2a-version", "1.0")], a2a_send).await
        }
        Face::A2aJsonRpc => {
            let body = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": a2a_send});
            post(client, server.url("/a2a/jsonrpc"), Some(token), &[("a2a-version", "1.0")], body).await
        }
    }
}

/// Whether the face answered with a task (not an error).
fn started(face: Face, answer: &Answer) -> bool {
    match face {
        Face::Lucid => answer.status == 200 && answer.body["taskId"].is_string(),
        Face::JsonRpcTasks => answer.status == 200 && answer.body["result"]["taskId"].is_string(),
        Face::A2aRest => answer.status == 200 && answer.body["task"]["id"].is_string(),
        Face::A2aJsonRpc => answer.status == 200 && answer.body["result"]["task"]["id"].is_string(),
    }
}

/// Asserts the face's retryable refusal: `status` (429 or 503) for the Lucid and REST faces and
/// HTTP 200 with a JSON-RPC error for the JSON-RPC faces, each with `Retry-After`; the Lucid
/// `lucid_code`, the JSON-RPC `code` and the `ErrorInfo`/`data` `reason`.
fn assert_refused(face: Face, answer: &Answer, status: u16, lucid_code: &str, code: i64, reason: &str) {
    let what = format!("{face:?}: {} {}", answer.status, answer.body);
    assert_eq!(answer.retry_after.as_deref(), Some("5"), "Retry-After, {what}");
    match face {
        Face::Lucid => {
            assert_eq!(answer.status, status, "{what}");
            assert_eq!(answer.body["error"]["code"], json!(lucid_code), "{what}");
        }
        Face::JsonRpcTasks => {
            assert_eq!(answer.status, 200, "{what}");
            assert_eq!(answer.body["id"], json!(7), "{what}");
            assert_eq!(answer.body["error"]["code"], json!(code), "{what}");
            assert_eq!(answer.body["error"]["data"], json!({"reason": reason, "retryAfter": 5}), "{what}");
        }
        Face::A2aRest => {
            assert_eq!(answer.status, status, "{what}");
            let error = &answer.body["error"];
            assert_eq!((error["code"].clone(), error["status"].clone()), (json!(status), json!("RESOURCE_EXHAUSTED")));
            assert_eq!(error["details"][0]["reason"], json!(reason), "{what}");
            assert_eq!(error["details"][0]["metadata"]["retryAfterSeconds"], json!("5"), "{what}");
        }
        Face::A2aJsonRpc => {
            assert_eq!(answer.status, 200, "{what}");
            assert_eq!(answer.body["error"]["code"], json!(code), "{what}");
            assert_eq!(answer.body["error"]["data"][0]["reason"], json!(reason), "{what}");
        }
    }
}

#[tokio::test]
async fn an_owner_at_its_share_is_refused_on_every_face_while_another_gets_through() {
    const SHARE: usize = 2;
    let s = server(config(1000, Some(SHARE))).await;
    let client = reqwest::Client::new();
    // Alice takes her share (on the Lucid face, her bearer token as the access token: the same
    // owner on every face); then every face refuses her more.
    for _ in 0..SHARE {
        let answer = start(&s, &client, Face::Lucid, ALICE, "wait").await;
        assert!(started(Face::Lucid, &answer), "{}", answer.body);
    }
    for face in FACES {
        let refused = start(&s, &client, face, ALICE, "wait").await;
        assert_refused(face, &refused, 429, "owner_share_exhausted", -32098, "OWNER_SHARE_EXHAUSTED");
    }
    assert_eq!(started_count(&s, &client).await, SHARE, "nothing more was stored");
    for face in FACES {
        let answer = start(&s, &client, face, BOB, "echo").await;
        assert!(started(face, &answer), "bob gets through on {face:?}: {} {}", answer.status, answer.body);
    }
}

/// How many tasks Alice has (her Lucid list).
async fn started_count(s: &TestServer, client: &reqwest::Client) -> usize {
    let list: Value = client
        .get(s.url("/tasks"))
        .header("task-access-token", ALICE)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    list["total"].as_u64().expect("total") as usize
}

#[tokio::test]
async fn a_full_store_is_a_retryable_refusal_on_every_face() {
    let s = server(config(2, None)).await;
    let client = reqwest::Client::new();
    for _ in 0..2 {
        let answer = start(&s, &client, Face::Lucid, ALICE, "wait").await;
        assert!(started(Face::Lucid, &answer), "{}", answer.body);
    }
    for face in FACES {
        let refused = start(&s, &client, face, BOB, "echo").await;
        assert_refused(face, &refused, 503, "task_capacity_exhausted", -32099, "TASK_CAPACITY_EXHAUSTED");
    }
}

/// The faces with a rate limit of 1 request a second and a burst of 3.
fn limited() -> ServerConfig {
    let rate = RateLimitConfig::per_second(NonZeroU32::MIN).burst(NonZeroU32::new(3).expect("3"));
    config(1000, None).rate_limit(Some(rate))
}

#[tokio::test]
async fn the_rate_limit_refuses_the_request_over_the_burst_on_every_face_and_lets_another_owner_through() {
    for face in FACES {
        // A fresh server per face: the limit counts every face's requests together.
        let s = server(limited()).await;
        let client = reqwest::Client::new();
        for n in 1..=3 {
            let answer = start(&s, &client, face, ALICE, "echo").await;
            assert!(started(face, &answer), "{face:?} request {n} is within the burst: {}", answer.body);
        }
        let refused = start(&s, &client, face, ALICE, "echo").await;
        let what = format!("{face:?}: {} {}", refused.status, refused.body);
        assert_eq!(refused.status, 429, "{what}");
        let wait: u64 = refused.retry_after.as_deref().expect("Retry-After").parse().expect("seconds");
        assert_eq!(wait, 1, "one request a second: {what}");
        match face {
            Face::Lucid => assert_eq!(refused.body["error"]["code"], json!("rate_limited"), "{what}"),
            Face::JsonRpcTasks => {
                assert_eq!(
                    (refused.body["id"].clone(), refused.body["error"]["code"].clone()),
                    (Value::Null, json!(-32097))
                );
                assert_eq!(refused.body["error"]["data"]["reason"], json!("RATE_LIMITED"), "{what}");
            }
            Face::A2aRest => {
                assert_eq!(refused.body["error"]["status"], json!("RESOURCE_EXHAUSTED"), "{what}");
                assert_eq!(refused.body["error"]["details"][0]["reason"], json!("RATE_LIMITED"), "{what}");
            }
            Face::A2aJsonRpc => {
                assert_eq!(refused.body["error"]["code"], json!(-32097), "{what}");
                assert_eq!(refused.body["error"]["data"][0]["reason"], json!("RATE_LIMITED"), "{what}");
            }
        }
        let answer = start(&s, &client, face, BOB, "echo").await;
        assert!(started(face, &answer), "bob has his own rate on {face:?}: {}", answer.body);
    }
}

/// Anonymous callers are counted by their address: served with the connection's address (as
/// `accord serve` is), a caller from 127.0.0.1 over its rate does not hold back one from
/// 127.0.0.2.
#[tokio::test]
async fn anonymous_callers_are_limited_per_address() {
    let app = agent().router_with(limited());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let served = tokio::spawn(async move {
        axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await.expect("serve");
    });
    let from = |host: [u8; 4]| {
        reqwest::Client::builder().local_address(IpAddr::V4(Ipv4Addr::from(host))).build().expect("client")
    };
    let send = |client: reqwest::Client| async move {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/send", "params": {"task": {"skill": "echo", "input": {}}}});
        client.post(format!("http://{address}/a2a/tasks")).json(&body).send().await.expect("response").status().as_u16()
    };
    let first = from([127, 0, 0, 1]);
    for _ in 0..3 {
        assert_eq!(send(first.clone()).await, 200);
    }
    assert_eq!(send(first.clone()).await, 429, "127.0.0.1 is over its rate");
    assert_eq!(send(from([127, 0, 0, 2])).await, 200, "127.0.0.2 has its own");
    served.abort();
}
