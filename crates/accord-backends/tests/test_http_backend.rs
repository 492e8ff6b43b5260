//! The HTTP backend against a real HTTP server in the test: an agent built from an agent file,
//! run through the engine as a face would run it (invoke, stream, tasks).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use accord_backends::AgentFile;
use accord_engine::task::{
    AccessToken, Caller, MemoryStore, MemoryStoreConfig, RuntimeConfig, SendInput, SendRequest, ServiceConfig,
    TaskRuntime, TaskService, Wait,
};
use accord_engine::{Agent, EndStatus, Message, Part, Role, RunError, RunEvent, TaskState};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const TOKEN: &str = "tok-5ecret-5ecret-5ecret";

/// The headers a backend received, as JSON (only Accord's and the authorization).
fn seen_headers(headers: &HeaderMap) -> Value {
    let mut seen = serde_json::Map::new();
    for (name, value) in headers {
        if name.as_str().starts_with("accord-") || name == header::AUTHORIZATION || name == header::CONTENT_TYPE {
            seen.insert(name.as_str().to_owned(), json!(value.to_str().unwrap_or("?")));
        }
    }
    Value::Object(seen)
}

fn ndjson(lines: Vec<String>) -> Response {
    let stream = futures_util::stream::iter(lines.into_iter().map(Ok::<_, std::io::Error>));
    ([(header::CONTENT_TYPE, "application/x-ndjson")], Body::from_stream(stream)).into_response()
}

#[derive(Default)]
struct Load {
    now: AtomicUsize,
    most: AtomicUsize,
}

fn backend(load: Arc<Load>) -> Router {
    Router::new()
        .route(
            "/quote",
            post(|headers: HeaderMap, body: axum::Json<Value>| async move {
                axum::Json(json!({"price": 42, "item": body.0["item"], "headers": seen_headers(&headers)}))
            }),
        )
        .route(
            "/ndjson",
            post(|| async {
                ndjson(vec![
                    "{\"delta\": \"Hel\"}\n".into(),
                    "{\"delta\": \"lo\", \"mime\": \"text/plain\"}\n\n".into(),
                    "{\"output\": {\"text\": \"Hello\"}, \"usage\": {\"calls\": 1}}\n".into(),
                ])
            }),
        )
        .route(
            "/sse",
            post(|| async {
                let body = ": hello\n\nevent: delta\ndata: {\"delta\": \"a\"}\n\ndata: {\"delta\":\ndata: \"b\"}\n\ndata: {\"output\": \"ab\"}\n\n";
                ([(header::CONTENT_TYPE, "text/event-stream")], body)
            }),
        )
        .route(
            "/ask",
            post(|headers: HeaderMap, body: axum::Json<Value>| async move {
                let body = body.0;
                match body.get("history") {
                    None => axum::Json(json!({"input_required": {"message": "What size?"}})),
                    Some(history) => {
                        let answer = history.as_array().and_then(|h| h.last()).cloned().unwrap_or(Value::Null);
                        axum::Json(json!({
                            "item": body["input"]["item"],
                            "size": answer["parts"][0]["text"],
                            "turns": history.as_array().map_or(0, Vec::len),
                            "roles": history.as_array().map(|h| h.iter().map(|m| m["role"].clone()).collect::<Vec<_>>()),
                            "follow_up": headers.get("accord-follow-up").map(|v| v.to_str().unwrap_or("?")),
                        }))
                    }
                }
            }),
        )
        .route(
            "/missing",
            post(|| async { (StatusCode::NOT_FOUND, axum::Json(json!({"error": {"message": "no such item"}}))) }),
        )
        .route(
            "/invalid",
            post(|| async {
                (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(json!({"error": {"message": "size XXL is not made"}})))
            }),
        )
        .route(
            "/boom",
            post(|| async {
                (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({"error": "stack trace with internal detail"})))
            }),
        )
        .route("/unauthorized", post(|| async { StatusCode::UNAUTHORIZED }))
        .route(
            "/slow",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(20)).await;
                axum::Json(json!({}))
            }),
        )
        .route(
            "/slow-stream",
            post(|| async {
                let first = futures_util::stream::iter([Ok::<_, std::io::Error>("{\"delta\": \"a\"}\n".to_owned())]);
                let stall = futures_util::stream::once(async {
                    tokio::time::sleep(Duration::from_secs(20)).await;
                    Ok("{\"output\": 1}\n".to_owned())
                });
                ([(header::CONTENT_TYPE, "application/x-ndjson")], Body::from_stream(first.chain(stall)))
            }),
        )
        .route(
            "/report",
            post(|| async {
                axum::Json(json!({
                    "output": {"pages": 1},
                    "files": [
                        {"name": "report.txt", "mime": "text/plain", "bytes_base64": "aGVsbG8="},
                        {"name": "big.pdf", "mime": "application/pdf", "uri": "https://files.example/big.pdf"},
                    ],
                }))
            }),
        )
        .route(
            "/report-stream",
            post(|| async {
                ndjson(vec![
                    "{\"delta\": \"drawing\"}\n".into(),
                    "{\"file\": {\"name\": \"chart.png\", \"mime\": \"image/png\", \"bytes_base64\": \"iVBORw==\"}}\n".into(),
                    "{\"output\": {\"charts\": 1}, \"files\": [{\"name\": \"data.csv\", \"mime\": \"text/csv\", \"bytes_base64\": \"YSxi\"}]}\n".into(),
                ])
            }),
        )
        .route(
            "/bad-file",
            post(|| async { axum::Json(json!({"output": 1, "files": [{"name": "x.pdf", "mimeType": "application/pdf", "bytes": "eA=="}]})) }),
        )
        .route("/bad-file-stream", post(|| async { ndjson(vec!["{\"file\": {\"name\": \"x\"}}\n".into()]) }))
        .route("/garbage", post(|| async { ([(header::CONTENT_TYPE, "text/html")], "<html>oops</html>") }))
        .route(
            "/unterminated",
            post(|| async { ndjson(vec!["{\"delta\": \"a\"}\n".into()]) }),
        )
        .route(
            "/huge",
            post(|| async {
                // Far more than any cap: 1 GiB of one JSON string, never finished.
                let chunk = "x".repeat(64 << 10);
                let stream = futures_util::stream::iter(0..16_384).map(move |_| Ok::<_, std::io::Error>(chunk.clone()));
                let start = futures_util::stream::iter([Ok::<_, std::io::Error>("\"".to_owned())]);
                ([(header::CONTENT_TYPE, "application/json")], Body::from_stream(start.chain(stream)))
            }),
        )
        .route(
            "/huge-stream",
            post(|| async {
                let line = format!("{{\"delta\": \"{}\"}}\n", "y".repeat(1000));
                let stream = futures_util::stream::iter(0..1_000_000).map(move |_| Ok::<_, std::io::Error>(line.clone()));
                ([(header::CONTENT_TYPE, "application/x-ndjson")], Body::from_stream(stream))
            }),
        )
        .route(
            "/held",
            post(move || {
                let load = Arc::clone(&load);
                async move {
                    let now = load.now.fetch_add(1, Ordering::SeqCst) + 1;
                    load.most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    load.now.fetch_sub(1, Ordering::SeqCst);
                    axum::Json(json!({"ok": true}))
                }
            }),
        )
}

async fn serve(router: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}

/// An agent with one HTTP skill per `(id, path, extra options)`, from an agent file whose URLs
/// use `${PORT}` and whose headers use `${SHOP_TOKEN}`.
fn agent(port: u16, skills: &[(&str, &str, &str)]) -> (AgentFile, Agent) {
    let mut text = String::from("[agent]\nname = \"http-test\"\n");
    for (id, path, extra) in skills {
        text.push_str(&format!(
            "\n[[skill]]\nid = \"{id}\"\nhttp = {{ url = \"http://127.0.0.1:${{PORT}}{path}\"{extra} }}\n"
        ));
    }
    let env: HashMap<&str, String> = HashMap::from([("PORT", port.to_string()), ("SHOP_TOKEN", TOKEN.to_owned())]);
    let file = AgentFile::parse_with_env(&text, "http-test.toml", ".", &|name| env.get(name).cloned())
        .unwrap_or_else(|errors| panic!("{errors}"));
    let agent = file.build_agent().expect("agent");
    (file, agent)
}

async fn invoke(agent: &Agent, skill: &str, input: Value) -> Result<Value, RunError> {
    let valid = agent.skill(skill).expect("skill").validate_input(input).expect("valid input");
    agent.invoke(valid).await.map(|invocation| invocation.completion.output)
}

fn failure(result: Result<Value, RunError>) -> accord_engine::SkillError {
    match result {
        Err(RunError::Failed(error)) => error,
        other => panic!("expected a failed run, got {other:?}"),
    }
}

#[tokio::test]
async fn a_json_answer_is_the_output_and_accord_headers_are_sent() {
    let port = serve(backend(Arc::default())).await.port();
    let (_, agent) = agent(port, &[("quote", "/quote", ", headers = { Authorization = \"Bearer ${SHOP_TOKEN}\" }")]);
    let output = invoke(&agent, "quote", json!({"item": "shirt"})).await.expect("output");
    assert_eq!(output["price"], 42);
    assert_eq!(output["item"], "shirt");
    let headers = &output["headers"];
    assert_eq!(headers["accord-skill"], "quote");
    assert_eq!(headers["content-type"], "application/json");
    assert!(headers["accord-run-id"].as_str().is_some_and(|id| !id.is_empty()));
    assert_eq!(headers["authorization"], format!("Bearer {TOKEN}"));
    // A direct invocation is no task.
    assert!(headers.get("accord-task-id").is_none());
    assert!(headers.get("accord-owner").is_none());
}

#[tokio::test]
async fn a_task_sends_its_ids_and_never_its_access_token() {
    let port = serve(backend(Arc::default())).await.port();
    let (_, agent) = agent(port, &[("quote", "/quote", "")]);
    let service = service(agent);
    let token = AccessToken::generate();
    let caller = Caller::owner(token.owner());
    let message = Message::new(Role::User, vec![Part::Data(json!({"item": "hat"}))]);
    let request = SendRequest::new(caller, SendInput::FromMessage).skill("quote").message(message).new_context();
    let task = service.send(request, Wait::Settled(Duration::from_secs(10))).await.expect("task");
    assert_eq!(task.state, TaskState::Completed, "{task:?}");
    let output = task.result.expect("result").output;
    let headers = &output["headers"];
    assert_eq!(headers["accord-task-id"], task.id.as_str());
    assert_eq!(headers["accord-context-id"].as_str(), task.context_id.as_deref());
    assert_eq!(headers["accord-run-id"], task.id.as_str());
    // The owner as a pseudonym: stable for the caller, neither its token nor the stored hash.
    assert_eq!(headers["accord-owner"], token.owner().pseudonym());
    assert_eq!(headers["accord-owner"].as_str().map(str::len), Some(64));
    assert_ne!(headers["accord-owner"], token.owner().to_hex());
    assert!(!output.to_string().contains(token.expose()), "{output}");
}

fn service(agent: Agent) -> TaskService {
    let store = Arc::new(MemoryStore::new(MemoryStoreConfig::default()));
    TaskService::new(TaskRuntime::new(agent, store, RuntimeConfig::default()), ServiceConfig::default())
}

async fn streamed(agent: &Agent, skill: &str) -> (Vec<RunEvent>, accord_engine::RunEnd) {
    let valid = agent.skill(skill).expect("skill").validate_input(json!({})).expect("valid");
    let frames: Vec<_> = agent.stream(valid).expect("stream").collect().await;
    let mut events: Vec<RunEvent> = frames.into_iter().map(|frame| frame.event).collect();
    match events.pop() {
        Some(RunEvent::End(end)) => (events, *end),
        other => panic!("the stream did not end: {other:?}"),
    }
}

fn deltas(events: &[RunEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            RunEvent::Delta { delta, .. } => Some(delta.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn ndjson_and_sse_answers_stream_deltas_then_the_output() {
    let port = serve(backend(Arc::default())).await.port();
    let (_, agent) = agent(port, &[("nd", "/ndjson", ""), ("sse", "/sse", "")]);

    let (events, end) = streamed(&agent, "nd").await;
    assert_eq!(deltas(&events), ["Hel", "lo"]);
    assert!(
        events.iter().any(|event| matches!(event, RunEvent::Delta { mime: Some(mime), .. } if mime == "text/plain"))
    );
    assert_eq!(end.status, EndStatus::Succeeded);
    let completion = end.completion.expect("completion");
    assert_eq!(completion.output, json!({"text": "Hello"}));
    assert_eq!(completion.usage, Some(json!({"calls": 1})));

    let (events, end) = streamed(&agent, "sse").await;
    assert_eq!(deltas(&events), ["a", "b"]);
    assert_eq!(end.completion.expect("completion").output, json!("ab"));

    // Invoked rather than streamed, the same backend gives the output alone.
    assert_eq!(invoke(&agent, "nd", json!({})).await.expect("output"), json!({"text": "Hello"}));
}

#[tokio::test]
async fn an_input_required_answer_pauses_the_task_and_the_follow_up_brings_the_history() {
    let port = serve(backend(Arc::default())).await.port();
    let (_, agent) = agent(port, &[("ask", "/ask", "")]);
    let service = service(agent);
    let caller = Caller::owner(AccessToken::generate().owner());
    let first = Message::new(Role::User, vec![Part::Data(json!({"item": "shirt"}))]);
    let request = SendRequest::new(caller.clone(), SendInput::FromMessage).skill("ask").message(first);
    let task = service.send(request, Wait::Settled(Duration::from_secs(10))).await.expect("task");
    assert_eq!(task.state, TaskState::InputRequired, "{task:?}");
    assert_eq!(task.status_message.as_ref().map(Message::text).as_deref(), Some("What size?"));

    let answer = Message::new(Role::User, vec![Part::Text("XL".into())]);
    let request = SendRequest::new(caller, SendInput::FromMessage).follow_up(task.id.clone()).message(answer);
    let task = service.send(request, Wait::Settled(Duration::from_secs(10))).await.expect("follow-up");
    assert_eq!(task.state, TaskState::Completed, "{task:?}");
    let output = task.result.expect("result").output;
    // The envelope: the task's original input, and its history (the caller's first message, the
    // agent's question, the caller's answer).
    assert_eq!(output["item"], "shirt");
    assert_eq!(output["size"], "XL");
    assert_eq!(output["turns"], 3);
    assert_eq!(output["roles"], json!(["user", "agent", "user"]));
    assert_eq!(output["follow_up"], "true");

    // Invoked directly, the question is an incomplete run, not a failure.
    match invoke(&service.agent().clone(), "ask", json!({"item": "x"})).await {
        Err(RunError::Incomplete { status: EndStatus::InputRequired, message }) => {
            assert_eq!(message.map(|m| m.text()).as_deref(), Some("What size?"));
        }
        other => panic!("expected input required, got {other:?}"),
    }
}

#[tokio::test]
async fn a_4xx_rejects_the_run_and_a_5xx_fails_it() {
    let port = serve(backend(Arc::default())).await.port();
    let (_, agent) = agent(port, &[("invalid", "/invalid", ""), ("boom", "/boom", "")]);
    match invoke(&agent, "invalid", json!({})).await {
        Err(RunError::Incomplete { status: EndStatus::Rejected, message }) => {
            assert_eq!(message.map(|m| m.text()).as_deref(), Some("size XXL is not made"));
        }
        other => panic!("expected a rejected run, got {other:?}"),
    }
    let error = failure(invoke(&agent, "boom", json!({})).await);
    assert_eq!(error.code, "backend_error");
    assert!(error.message.contains("500"), "{error}");
    // The backend's own error body stays with the backend.
    assert!(!error.message.contains("internal detail"), "{error}");

    // As tasks: rejected and failed.
    let service = service(agent);
    let caller = Caller::owner(AccessToken::generate().owner());
    for (skill, state) in [("invalid", TaskState::Rejected), ("boom", TaskState::Failed)] {
        let request = SendRequest::new(caller.clone(), SendInput::Candidates(vec![json!({})])).skill(skill);
        let task = service.send(request, Wait::Settled(Duration::from_secs(10))).await.expect("task");
        assert_eq!(task.state, state, "{task:?}");
    }
}

#[tokio::test]
async fn a_404_from_a_fixed_url_is_the_files_mistake_not_the_callers() {
    let port = serve(backend(Arc::default())).await.port();
    // `/missing` answers 404 with a reason; `/nowhere` is no route at all.
    let (_, agent) = agent(port, &[("missing", "/missing", ""), ("nowhere", "/nowhere?key=${SHOP_TOKEN}", "")]);
    for (skill, path) in [("missing", "/missing"), ("nowhere", "/nowhere")] {
        let error = failure(invoke(&agent, skill, json!({})).await);
        assert_eq!(error.code, "backend_misconfigured", "{error}");
        assert_eq!(
            error.message,
            "the backend has no endpoint for this skill's POST request (HTTP 404 Not Found): the agent file's URL or method is wrong"
        );
        // The file's URL is not shown to the caller: its path, too, may hold an expanded secret.
        assert!(!error.message.contains(TOKEN) && !error.message.contains(path));
    }
    // A task fails (the agent's fault), it is not rejected (the caller's).
    let service = service(agent);
    let caller = Caller::owner(AccessToken::generate().owner());
    let request = SendRequest::new(caller, SendInput::Candidates(vec![json!({})])).skill("nowhere");
    let task = service.send(request, Wait::Settled(Duration::from_secs(10))).await.expect("task");
    assert_eq!(task.state, TaskState::Failed, "{task:?}");
}

/// A small REST service, as json-server serves one: `/items` (GET with filters, POST) and
/// `/items/{id}` (GET, PUT, DELETE; no POST). Each answer says how the request arrived.
fn rest() -> Router {
    use axum::extract::{OriginalUri, Path, RawQuery, State};
    use axum::routing::get;
    type Items = Arc<std::sync::Mutex<std::collections::BTreeMap<String, Value>>>;
    let items: Items = Arc::default();
    items.lock().expect("items").insert("1".into(), json!({"id": "1", "title": "lamp"}));
    items.lock().expect("items").insert("a/b c".into(), json!({"id": "a/b c", "title": "odd"}));
    let one = |items: &Items, id: &str| items.lock().expect("items").get(id).cloned();
    Router::new()
        .route(
            "/items",
            get(|headers: HeaderMap, RawQuery(query): RawQuery| async move {
                axum::Json(json!({"query": query, "content_type": seen_headers(&headers)["content-type"]}))
            }),
        )
        .route(
            "/items/{id}",
            get(move |State(items): State<Items>, Path(id): Path<String>, OriginalUri(uri): OriginalUri| async move {
                match one(&items, &id) {
                    Some(item) => axum::Json(json!({"item": item, "uri": uri.to_string()})).into_response(),
                    None => (StatusCode::NOT_FOUND, axum::Json(json!({}))).into_response(),
                }
            })
            .put(|State(items): State<Items>, Path(id): Path<String>, body: axum::Json<Value>| async move {
                let mut item = body.0;
                item["id"] = json!(id);
                items.lock().expect("items").insert(id, item.clone());
                axum::Json(item)
            })
            .delete(
                |State(items): State<Items>, Path(id): Path<String>, RawQuery(query): RawQuery| async move {
                    match items.lock().expect("items").remove(&id) {
                        Some(item) => axum::Json(json!({"deleted": item, "query": query})).into_response(),
                        None => (StatusCode::NOT_FOUND, "").into_response(),
                    }
                },
            ),
        )
        .with_state(items)
}

fn rejection(result: Result<Value, RunError>) -> String {
    match result {
        Err(RunError::Incomplete { status: EndStatus::Rejected, message }) => {
            message.map(|m| m.text()).unwrap_or_default()
        }
        other => panic!("expected a rejected run, got {other:?}"),
    }
}

#[tokio::test]
async fn get_fills_the_path_template_and_sends_the_rest_as_the_query() {
    let port = serve(rest()).await.port();
    let (file, agent) = agent(
        port,
        &[("item", "/items/{id}", ", method = \"GET\""), ("search", "/items?fixed=1", ", method = \"get\"")],
    );
    match file.skills()[0].backend() {
        accord_backends::Backend::Http(config) => {
            assert_eq!(config.endpoint(), format!("http://127.0.0.1:{port}/items/{{id}}"));
            assert_eq!(config.path_variables(), ["id"]);
        }
        other => panic!("{other:?}"),
    }
    let output = invoke(&agent, "item", json!({"id": "1"})).await.expect("item");
    assert_eq!(output, json!({"item": {"id": "1", "title": "lamp"}, "uri": "/items/1"}));
    // A number fills it as its text; `/` and a space stay inside the one segment.
    assert_eq!(invoke(&agent, "item", json!({"id": 1})).await.expect("item")["item"]["title"], "lamp");
    let output = invoke(&agent, "item", json!({"id": "a/b c"})).await.expect("item");
    assert_eq!(output["uri"], "/items/a%2Fb%20c");
    assert_eq!(output["item"]["title"], "odd");

    // The query: scalars as text, arrays as repeated keys, objects as JSON, null left out; the
    // URL's own query kept first. No body, so no content type.
    let output = invoke(
        &agent,
        "search",
        json!({"tag": ["home", "red"], "limit": 2, "sold": false, "where": {"a": 1}, "none": null, "q": "a&b"}),
    )
    .await
    .expect("search");
    assert_eq!(output["query"], "fixed=1&limit=2&q=a%26b&sold=false&tag=home&tag=red&where=%7B%22a%22%3A1%7D");
    assert_eq!(output["content_type"], Value::Null);
}

#[tokio::test]
async fn put_and_delete_fill_the_path_and_a_missing_resource_is_the_callers() {
    let port = serve(rest()).await.port();
    let (_, agent) = agent(
        port,
        &[
            ("put", "/items/{id}", ", method = \"PUT\""),
            ("delete", "/items/{id}", ", method = \"DELETE\""),
            ("get", "/items/{id}", ", method = \"GET\""),
            ("post-one", "/items/{id}", ""),
        ],
    );
    // PUT: the fields the path did not take are the JSON body.
    let output = invoke(&agent, "put", json!({"id": "7", "title": "vase", "tags": ["x"]})).await.expect("put");
    assert_eq!(output, json!({"id": "7", "title": "vase", "tags": ["x"]}));
    assert_eq!(invoke(&agent, "get", json!({"id": "7"})).await.expect("get")["item"]["title"], "vase");
    // DELETE: the rest is the query.
    let output = invoke(&agent, "delete", json!({"id": "7", "reason": "sold"})).await.expect("delete");
    assert_eq!(output, json!({"deleted": {"id": "7", "title": "vase", "tags": ["x"]}, "query": "reason=sold"}));
    // Gone now: a 404 on a templated URL is the caller's, rejected, naming the resource.
    assert_eq!(
        rejection(invoke(&agent, "get", json!({"id": "7"})).await),
        "no resource with id \"7\" (HTTP 404 Not Found)"
    );
    assert_eq!(
        rejection(invoke(&agent, "delete", json!({"id": "7"})).await),
        "no resource with id \"7\" (HTTP 404 Not Found)"
    );
    // A method the resource does not take is the file's mistake, templated or not.
    let error = failure(invoke(&agent, "post-one", json!({"id": "1"})).await);
    assert_eq!(error.code, "backend_misconfigured", "{error}");
    assert!(error.message.contains("POST request (HTTP 405 Method Not Allowed)"), "{error}");
}

#[tokio::test]
async fn an_input_that_cannot_fill_the_path_is_rejected_before_any_request() {
    let port = serve(rest()).await.port();
    let (_, agent) = agent(port, &[("get", "/items/{id}", ", method = \"GET\"")]);
    for (input, reason) in [
        (json!({}), "the input has no `id`, which the URL's path needs"),
        (json!({"id": null}), "the input has no `id`, which the URL's path needs"),
        (json!({"id": {"n": 1}}), "`id` must be a string, a number or a boolean to stand in the URL's path"),
        (json!({"id": [1]}), "`id` must be a string, a number or a boolean to stand in the URL's path"),
        (json!({"id": ".."}), "`id` must not be empty, `.` or `..` (it stands in the URL's path)"),
        (json!({"id": ""}), "`id` must not be empty, `.` or `..` (it stands in the URL's path)"),
    ] {
        assert_eq!(rejection(invoke(&agent, "get", input.clone()).await), reason, "{input}");
    }
}

/// json-server (npm), when `ACCORD_JSON_SERVER` names its program (`…/node_modules/.bin/json-server`):
/// an existing REST service behind skills, unchanged.
#[tokio::test]
async fn json_server_behind_get_put_delete_and_post_skills() {
    let Ok(program) = std::env::var("ACCORD_JSON_SERVER") else {
        eprintln!("skipped: set ACCORD_JSON_SERVER to json-server's program (npm install json-server@0.17.4)");
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("db.json"),
        r#"{"items": [{"id": 1, "title": "lamp", "tag": "home"}, {"id": 2, "title": "mug", "tag": "kitchen"}]}"#,
    )
    .expect("db");
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let mut server = tokio::process::Command::new(&program)
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--quiet", "db.json"])
        .current_dir(dir.path())
        .kill_on_drop(true)
        .spawn()
        .expect("json-server starts");
    let started = std::time::Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "json-server did not listen");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, agent) = agent(
        port,
        &[
            ("get", "/items/{id}", ", method = \"GET\""),
            ("find", "/items", ", method = \"GET\""),
            ("create", "/items", ""),
            ("replace", "/items/{id}", ", method = \"PUT\""),
            ("remove", "/items/{id}", ", method = \"DELETE\""),
            ("typo", "/itemz/{id}", ", method = \"GET\""),
            ("wrong", "/nothing", ", method = \"GET\""),
        ],
    );
    assert_eq!(
        invoke(&agent, "get", json!({"id": 1})).await.expect("get"),
        json!({"id": 1, "title": "lamp", "tag": "home"})
    );
    let found = invoke(&agent, "find", json!({"tag": ["kitchen", "none"]})).await.expect("find");
    assert_eq!(found, json!([{"id": 2, "title": "mug", "tag": "kitchen"}]));
    let created = invoke(&agent, "create", json!({"title": "vase"})).await.expect("create");
    assert_eq!(created["title"], "vase");
    let id = created["id"].clone();
    let replaced = invoke(&agent, "replace", json!({"id": id, "title": "big vase"})).await.expect("put");
    assert_eq!(replaced, json!({"id": id, "title": "big vase"}));
    invoke(&agent, "remove", json!({"id": id})).await.expect("delete");
    assert_eq!(
        rejection(invoke(&agent, "get", json!({"id": id})).await),
        format!("no resource with id {id} (HTTP 404 Not Found)")
    );
    // json-server answers an unknown route 404: fixed, the file's mistake; templated, the caller's
    // (a server cannot tell a wrong collection from a missing item).
    assert_eq!(failure(invoke(&agent, "wrong", json!({})).await).code, "backend_misconfigured");
    assert_eq!(rejection(invoke(&agent, "typo", json!({"id": 1})).await), "no resource with id 1 (HTTP 404 Not Found)");
    let _ = server.kill().await;
}

#[tokio::test]
async fn a_timeout_a_refused_connection_garbage_and_an_endless_stream_fail_the_run() {
    let port = serve(backend(Arc::default())).await.port();
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("address").port()
    };
    let (_, agent) = agent(
        port,
        &[
            ("slow", "/slow", ", timeout = 0.3"),
            ("slow-stream", "/slow-stream", ", timeout = 0.3"),
            ("garbage", "/garbage", ""),
            ("unterminated", "/unterminated", ""),
        ],
    );
    let error = failure(invoke(&agent, "slow", json!({})).await);
    assert_eq!((error.code.as_str(), error.retryable), ("backend_timeout", Some(true)), "{error}");
    // A stream times out between events.
    let error = failure(invoke(&agent, "slow-stream", json!({})).await);
    assert_eq!(error.code, "backend_timeout", "{error}");
    assert_eq!(failure(invoke(&agent, "garbage", json!({})).await).code, "backend_invalid_answer");
    let error = failure(invoke(&agent, "unterminated", json!({})).await);
    assert_eq!(error.code, "backend_invalid_answer");
    assert!(error.message.contains("without an `output`"), "{error}");

    let (_, agent) = self::agent(closed, &[("refused", "/x?key=${SHOP_TOKEN}", "")]);
    let error = failure(invoke(&agent, "refused", json!({})).await);
    assert_eq!((error.code.as_str(), error.retryable), ("backend_unavailable", Some(true)), "{error}");
    assert!(!error.message.contains(TOKEN) && !error.message.contains("127.0.0.1"), "{error}");
}

#[tokio::test]
async fn an_answer_beyond_the_cap_fails_without_being_read_whole() {
    let port = serve(backend(Arc::default())).await.port();
    let (_, agent) = agent(
        port,
        &[
            ("huge", "/huge", ", max_answer_bytes = 65536"),
            ("huge-stream", "/huge-stream", ", max_answer_bytes = 65536"),
        ],
    );
    let started = std::time::Instant::now();
    let error = failure(invoke(&agent, "huge", json!({})).await);
    assert_eq!(error.code, "backend_answer_too_large", "{error}");
    let (events, end) = streamed(&agent, "huge-stream").await;
    assert_eq!(end.status, EndStatus::Failed);
    assert_eq!(end.error.expect("error").code, "backend_answer_too_large");
    // 64 KiB of 1 KiB deltas: the run stopped at the cap, not at the end of a 1 GB stream.
    assert!(deltas(&events).len() < 70, "{}", events.len());
    // Not a timing claim: reading 1 GiB through the default cap would take far longer than this
    // generous bound on a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test]
async fn the_default_cap_is_16_mib() {
    let port = serve(backend(Arc::default())).await.port();
    let (file, agent) = agent(port, &[("huge", "/huge", "")]);
    match file.skills()[0].backend() {
        accord_backends::Backend::Http(config) => assert!(format!("{config:?}").contains("16777216")),
        other => panic!("{other:?}"),
    }
    assert_eq!(failure(invoke(&agent, "huge", json!({})).await).code, "backend_answer_too_large");
}

#[tokio::test]
async fn cancelling_the_run_closes_the_connection_to_the_backend() {
    // A raw server: it tells when a request arrived and when its connection closed.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (arrived_tx, arrived) = tokio::sync::oneshot::channel();
    let (closed_tx, closed) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let mut buffer = [0u8; 4096];
        let _ = socket.read(&mut buffer).await;
        let _ = arrived_tx.send(());
        // Never answers; reads until the client goes away.
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = closed_tx.send(());
        let _ = socket.shutdown().await;
    });
    let (_, agent) = agent(port, &[("hang", "/hang", ", timeout = 60")]);
    let valid = agent.skill("hang").expect("skill").validate_input(json!({})).expect("valid");
    let stream = agent.stream(valid).expect("stream");
    tokio::time::timeout(Duration::from_secs(10), arrived).await.expect("request arrived").expect("arrived");
    drop(stream); // the caller goes away: the run is cancelled
    tokio::time::timeout(Duration::from_secs(10), closed).await.expect("connection closed").expect("closed");
}

#[tokio::test]
async fn the_concurrency_limit_holds_runs_back() {
    let load = Arc::new(Load::default());
    let port = serve(backend(Arc::clone(&load))).await.port();
    let (_, agent) = agent(port, &[("held", "/held", ", concurrency = 2")]);
    let runs = (0..6).map(|_| invoke(&agent, "held", json!({})));
    for result in futures_util::future::join_all(runs).await {
        assert_eq!(result.expect("output"), json!({"ok": true}));
    }
    assert_eq!(load.most.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_configured_secret_never_shows_in_errors_or_debug_output() {
    let port = serve(backend(Arc::default())).await.port();
    let (file, agent) = agent(
        port,
        &[
            ("unauthorized", "/unauthorized", ", headers = { Authorization = \"Bearer ${SHOP_TOKEN}\" }"),
            ("boom", "/boom?key=${SHOP_TOKEN}", ", headers = { X-Api-Key = \"${SHOP_TOKEN}\" }"),
        ],
    );
    let error = failure(invoke(&agent, "unauthorized", json!({})).await);
    assert_eq!(error.code, "backend_unauthorized");
    let boom = failure(invoke(&agent, "boom", json!({})).await);
    for shown in [
        format!("{error:?} {error}"),
        format!("{boom:?} {boom}"),
        format!("{file:?}"),
        format!("{agent:?}"),
        format!("{:?}", file.skills()),
    ] {
        assert!(!shown.contains(TOKEN), "{shown}");
    }
    assert!(format!("{file:?}").contains("authorization"), "header names still show");

    // A file that cannot load does not repeat the secret either.
    let text = "[agent]\nname = \"x\"\n[[skill]]\nid = \"a\"\nhttp = { url = \"http://h/${SHOP_TOKEN}\", headers = { X = \"${SHOP_TOKEN}\\u0001\" } }\n";
    let errors = AgentFile::parse_with_env(text, "x.toml", ".", &|_| Some(TOKEN.to_owned())).expect_err("bad header");
    assert!(!errors.to_string().contains(TOKEN) && !format!("{errors:?}").contains(TOKEN), "{errors}");
    assert!(errors.to_string().contains("skill[0].http.headers.X"), "{errors}");
}

fn file(name: &str, mime: &str, bytes: Option<&str>, uri: Option<&str>) -> Part {
    Part::File {
        name: Some(name.into()),
        mime: Some(mime.into()),
        bytes_base64: bytes.map(str::to_owned),
        uri: uri.map(str::to_owned),
    }
}

#[tokio::test]
async fn an_answer_with_files_gives_file_artifacts() {
    let port = serve(backend(Arc::default())).await.port();
    let (_, agent) = agent(port, &[("report", "/report", ""), ("report-stream", "/report-stream", "")]);
    let valid = agent.skill("report").expect("skill").validate_input(json!({})).expect("valid");
    let completion = agent.invoke(valid).await.expect("report").completion;
    assert_eq!(completion.output, json!({"pages": 1}));
    let parts: Vec<&Part> = completion.artifacts.iter().flat_map(|artifact| &artifact.parts).collect();
    assert_eq!(
        parts,
        [
            &file("report.txt", "text/plain", Some("aGVsbG8="), None),
            &file("big.pdf", "application/pdf", None, Some("https://files.example/big.pdf")),
        ]
    );

    // A stream's `file` event is an artifact as it comes; the end's files follow.
    let (events, end) = streamed(&agent, "report-stream").await;
    let streamed_files: Vec<&Part> = events
        .iter()
        .filter_map(|event| match event {
            RunEvent::Artifact { artifact, .. } => Some(&artifact.parts[0]),
            _ => None,
        })
        .collect();
    assert_eq!(streamed_files, [&file("chart.png", "image/png", Some("iVBORw=="), None)]);
    let completion = end.completion.expect("completion");
    assert_eq!(completion.output, json!({"charts": 1}));
    assert_eq!(completion.artifacts[0].parts, [file("data.csv", "text/csv", Some("YSxi"), None)]);

    // As a task: the files are the task's artifacts (what the A2A faces show as file parts),
    // each its own, numbered; the streamed text is the task's `stream` artifact.
    let service = service(agent);
    let caller = Caller::owner(AccessToken::generate().owner());
    let request = SendRequest::new(caller, SendInput::Candidates(vec![json!({})])).skill("report-stream");
    let task = service.send(request, Wait::Settled(Duration::from_secs(10))).await.expect("task");
    assert_eq!(task.state, TaskState::Completed, "{task:?}");
    let artifacts: Vec<(&str, Option<&str>)> =
        task.artifacts.iter().map(|a| (a.artifact_id.as_str(), a.name.as_deref())).collect();
    assert_eq!(artifacts, [("stream", Some("stream")), ("file-1", Some("chart.png")), ("file-2", Some("data.csv"))]);
}

#[tokio::test]
async fn a_malformed_file_fails_the_run_saying_what_is_wrong() {
    let port = serve(backend(Arc::default())).await.port();
    let (_, agent) = agent(port, &[("bad-file", "/bad-file", ""), ("bad-file-stream", "/bad-file-stream", "")]);
    let error = failure(invoke(&agent, "bad-file", json!({})).await);
    assert_eq!(error.code, "backend_invalid_answer");
    assert!(error.message.starts_with("`files[0]` has an unknown key `"), "{error}");
    assert!(error.message.ends_with("(a file has `name`, `mime`, and `bytes_base64` or `uri`)"), "{error}");
    let error = failure(invoke(&agent, "bad-file-stream", json!({})).await);
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("backend_invalid_answer", "`file` has neither `bytes_base64` nor `uri`: give one")
    );
}

#[tokio::test]
async fn a_resumed_task_behind_a_template_gets_the_envelope_of_the_fields_the_path_left() {
    use axum::extract::Path;
    use axum::routing::put;
    let router = Router::new().route(
        "/orders/{item}",
        put(|Path(item): Path<String>, body: axum::Json<Value>| async move {
            let body = body.0;
            match body.get("history") {
                None => axum::Json(json!({"input_required": {"message": format!("What size of {item}?")}})),
                Some(history) => axum::Json(json!({
                    "item": item,
                    "input": body["input"],
                    "size": history.as_array().and_then(|h| h.last()).map(|m| m["parts"][0]["text"].clone()),
                })),
            }
        }),
    );
    let port = serve(router).await.port();
    let (_, agent) = agent(port, &[("order", "/orders/{item}", ", method = \"PUT\"")]);
    let service = service(agent);
    let caller = Caller::owner(AccessToken::generate().owner());
    let first = Message::new(Role::User, vec![Part::Data(json!({"item": "shirt", "colour": "red"}))]);
    let request = SendRequest::new(caller.clone(), SendInput::FromMessage).skill("order").message(first);
    let task = service.send(request, Wait::Settled(Duration::from_secs(10))).await.expect("task");
    assert_eq!(task.status_message.as_ref().map(Message::text).as_deref(), Some("What size of shirt?"));
    let answer = Message::new(Role::User, vec![Part::Text("XL".into())]);
    let request = SendRequest::new(caller, SendInput::FromMessage).follow_up(task.id.clone()).message(answer);
    let task = service.send(request, Wait::Settled(Duration::from_secs(10))).await.expect("follow-up");
    assert_eq!(task.state, TaskState::Completed, "{task:?}");
    assert_eq!(task.result.expect("result").output, json!({"item": "shirt", "input": {"colour": "red"}, "size": "XL"}));
}
