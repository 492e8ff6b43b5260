//! Request framing and content types on every face, over raw TCP and real HTTP: a body that
//! breaks off or is badly framed is a 400 (not a 413 "too large"), a body over the cap is still
//! refused as too large, and every route that takes a JSON body refuses other content types (a
//! web page can send `text/plain` and forms to any origin without a CORS preflight).

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Run, Skill};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "requests-owner-token-0123456789";
const LIMIT: usize = 4096;

fn agent() -> Agent {
    Agent::builder("requests")
        .skill(
            Skill::builder("echo")
                .handler(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(Skill::builder("wait").invoke(|run: Run| async move {
            run.cancelled().await;
            Ok(Outcome::Completed(Completion::new(json!({}))))
        }))
        .build()
        .expect("agent")
}

async fn server() -> TestServer {
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).body_limit(LIMIT))).await
}

/// A face's route that takes a JSON body, with a valid body and the headers it needs.
struct Route {
    face: &'static str,
    path: &'static str,
    headers: &'static [(&'static str, &'static str)],
    body: Value,
}

fn message() -> Value {
    json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": {"text": "hi"}}], "metadata": {"skillId": "echo"}})
}

fn routes() -> Vec<Route> {
    vec![
        Route { face: "lucid", path: "/entrypoints/echo/invoke", headers: &[], body: json!({"input": {"text": "hi"}}) },
        Route { face: "lucid", path: "/entrypoints/echo/stream", headers: &[], body: json!({"input": {"text": "hi"}}) },
        Route {
            face: "lucid",
            path: "/tasks",
            headers: &[("task-access-token", TOKEN)],
            body: json!({"skillId": "echo", "message": {"role": "user", "content": {"text": "{\"text\":\"hi\"}"}}}),
        },
        Route {
            face: "jsonrpc-tasks",
            path: "/a2a/tasks",
            headers: &[],
            body: json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/send",
                         "params": {"task": {"skill": "echo", "input": {"text": "hi"}}}}),
        },
        Route {
            face: "a2a-jsonrpc",
            path: "/a2a/jsonrpc",
            headers: &[("a2a-version", "1.0")],
            body: json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message()}}),
        },
        Route {
            face: "a2a-rest",
            path: "/a2a/rest/message:send",
            headers: &[("a2a-version", "1.0")],
            body: json!({"message": message()}),
        },
    ]
}

/// Writes `head` (request line and headers, without the blank line) and `body` to a fresh
/// connection, half-closes it, and reads the answer: status and JSON body.
async fn raw(server: &TestServer, head: &str, body: &[u8]) -> (u16, Value) {
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let request = format!("{head}Host: {}\r\nConnection: close\r\n\r\n", server.addr);
    stream.write_all(request.as_bytes()).await.expect("head");
    stream.write_all(body).await.expect("body");
    stream.shutdown().await.expect("half-close");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("the server answers and closes")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.get(9..12).and_then(|code| code.parse().ok()).unwrap_or_else(|| panic!("no status: {answer}"));
    let (_, rest) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head: {answer}"));
    let json = match (rest.find('{'), rest.rfind('}')) {
        (Some(start), Some(end)) => serde_json::from_str(&rest[start..=end]).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (status, json)
}

fn head(route: &Route, framing: &str) -> String {
    let mut head = format!("POST {} HTTP/1.1\r\nContent-Type: application/json\r\n{framing}", route.path);
    for (name, value) in route.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head
}

/// The answer is a refusal in the face's own shape, for a client mistake (`code` is the A2A
/// JSON-RPC code or the REST status where they differ), and says nothing of a size.
fn assert_framing_refusal(route: &Route, case: &str, (status, body): &(u16, Value)) {
    let context = format!("{} {} ({case}): {status} {body}", route.face, route.path);
    assert_eq!(*status, 400, "{context}");
    let message = match route.face {
        "lucid" => {
            assert_eq!(body["error"]["code"], "invalid_request", "{context}");
            &body["error"]["message"]
        }
        "jsonrpc-tasks" => {
            assert_eq!(body["error"]["code"], -32700, "{context}");
            &body["error"]["message"]
        }
        "a2a-jsonrpc" => {
            assert_eq!(body["error"]["code"], -32600, "{context}");
            &body["error"]["message"]
        }
        _ => {
            assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{context}");
            &body["error"]["message"]
        }
    };
    let message = message.as_str().unwrap_or_else(|| panic!("a message: {context}"));
    assert!(message.contains("declared length") && !message.contains("exceed"), "{context}");
}

#[tokio::test]
async fn a_body_that_breaks_off_or_is_badly_chunked_is_a_bad_request_on_every_face() {
    let server = server().await;
    for route in routes() {
        let body = route.body.to_string();
        // Content-Length promises more than is sent, then the client half-closes.
        let truncated = raw(&server, &head(&route, "Content-Length: 100\r\n"), &body.as_bytes()[..10]).await;
        assert_framing_refusal(&route, "truncated", &truncated);
        // A chunk size that is not hexadecimal.
        let chunked = format!("zz\r\n{body}\r\n0\r\n\r\n");
        let bad_chunk = raw(&server, &head(&route, "Transfer-Encoding: chunked\r\n"), chunked.as_bytes()).await;
        assert_framing_refusal(&route, "bad chunk size", &bad_chunk);
        // Well-framed, the same body is served.
        let whole = raw(&server, &head(&route, &format!("Content-Length: {}\r\n", body.len())), body.as_bytes()).await;
        let served = (200..300).contains(&whole.0) && whole.1.get("error").is_none();
        assert!(served, "{} {}: {whole:?}", route.face, route.path);
    }
}

#[tokio::test]
async fn a_body_over_the_cap_is_still_refused_as_too_large() {
    let server = server().await;
    let large = vec![b' '; LIMIT + 1];
    for route in routes() {
        // Declared too large: refused without reading; sent chunked: refused once past the cap.
        for framing in [format!("Content-Length: {}\r\n", large.len()), "Transfer-Encoding: chunked\r\n".to_owned()] {
            let body = if framing.starts_with("Transfer") {
                format!("{:x}\r\n{}\r\n0\r\n\r\n", large.len(), String::from_utf8_lossy(&large)).into_bytes()
            } else {
                large.clone()
            };
            let (status, body) = raw(&server, &head(&route, &framing), &body).await;
            let context = format!("{} {} ({framing:?}): {status} {body}", route.face, route.path);
            let message = body["error"]["message"].as_str().unwrap_or_default();
            match route.face {
                "lucid" => {
                    assert_eq!((status, &body["error"]["code"]), (413, &json!("payload_too_large")), "{context}")
                }
                // The signed-cards profile answers 400 -32700 "request body exceeded".
                "jsonrpc-tasks" => assert_eq!((status, &body["error"]["code"]), (400, &json!(-32700)), "{context}"),
                "a2a-jsonrpc" => assert_eq!(status, 413, "{context}"),
                _ => assert_eq!((status, &body["error"]["status"]), (400, &json!("INVALID_ARGUMENT")), "{context}"),
            }
            assert!(message.contains("exceed") && message.contains(&LIMIT.to_string()), "{context}");
        }
    }
}

/// A POST with `content_type` (none: no header) and `body`, answered with status and JSON.
async fn post(server: &TestServer, route: &Route, content_type: Option<&str>, body: String) -> (u16, Value) {
    let mut request = reqwest::Client::new().post(server.url(route.path)).body(body);
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    for (name, value) in route.headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn json_routes_refuse_bodies_that_are_not_json_typed() {
    let server = server().await;
    for route in routes() {
        let body = route.body.to_string();
        for content_type in [
            Some("text/plain"),
            Some("text/plain; charset=application/json"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            None,
        ] {
            let (status, answer) = post(&server, &route, content_type, body.clone()).await;
            let context = format!("{} {} ({content_type:?}): {status} {answer}", route.face, route.path);
            // Each face in its own shape: A2A JSON-RPC errors travel in a 200, and the v1.0.1 REST
            // mapping (the default) answers an unsupported content type with 400.
            match route.face {
                "lucid" => {
                    assert_eq!((status, &answer["error"]["code"]), (415, &json!("unsupported_media_type")), "{context}")
                }
                "jsonrpc-tasks" => assert_eq!((status, &answer["error"]["code"]), (415, &json!(-32600)), "{context}"),
                "a2a-jsonrpc" => assert_eq!((status, &answer["error"]["code"]), (200, &json!(-32005)), "{context}"),
                _ => {
                    assert_eq!(status, 400, "{context}");
                    assert!(answer.to_string().contains("CONTENT_TYPE_NOT_SUPPORTED"), "{context}");
                }
            }
        }
        for content_type in ["application/json", "application/json; charset=utf-8", "application/a2a+json"] {
            let (status, answer) = post(&server, &route, Some(content_type), body.clone()).await;
            let served = (200..300).contains(&status) && answer.get("error").is_none();
            assert!(served, "{} {content_type}: {status} {answer}", route.path);
        }
    }
}

#[tokio::test]
async fn routes_without_a_body_still_need_no_content_type() {
    let server = server().await;
    let client = reqwest::Client::new();
    // A bare POST to an entrypoint is the input `{}`.
    let bare = client.post(server.url("/entrypoints/echo/invoke")).send().await.expect("invoke");
    assert_eq!(bare.status(), 200);
    let output: Value = bare.json().await.expect("json");
    assert_eq!(output["output"], json!({}), "{output}");

    // A task cancelled with a bodiless POST.
    let created: Value = client
        .post(server.url("/tasks"))
        .header("task-access-token", TOKEN)
        .json(&json!({"skillId": "wait", "message": {"role": "user", "content": {"text": "{}"}}}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("capability");
    let id = created["taskId"].as_str().expect("task id");
    let cancel = client
        .post(server.url(&format!("/tasks/{id}/cancel")))
        .header("task-access-token", TOKEN)
        .send()
        .await
        .expect("cancel");
    assert_eq!(cancel.status(), 200);
    let cancelled: Value = cancel.json().await.expect("json");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
}
