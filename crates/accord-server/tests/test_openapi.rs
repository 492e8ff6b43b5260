//! `GET /openapi.json` over real HTTP: served as JSON, listing exactly the served routes (every
//! documented path answers on a real server), following the configuration, and describing real
//! answers (each validated against the document's own schemas).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AccessToken, MemoryStore, RuntimeConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Outcome, Pricing, Run, RunEvent, Skill, SkillError};
use accord_server::auth::{AuthConfig, BearerTokens};
use accord_server::{A2aConfig, Faces, ServerConfig};
use accord_test_support::TestServer;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Person {
    name: String,
}

/// A nested type: its schema has `$defs`, which the document must hoist.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    person: Person,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Greeting {
    message: String,
}

fn agent() -> Agent {
    Agent::builder("openapi-agent")
        .description("An agent for the OpenAPI tests")
        .skill(Skill::builder("greet").typed(|input: Greet, _run| async move {
            Ok::<_, SkillError>(Greeting { message: format!("Hello, {}!", input.person.name) })
        }))
        .skill(
            Skill::builder("ticks")
                .input_schema(json!({"type": "object", "properties": {"count": {"type": "integer"}}}))
                .stream(|run: Run| async move {
                    let count = run.input()["count"].as_u64().unwrap_or(2);
                    for i in 0..count {
                        run.emit(RunEvent::Delta { delta: format!("t{i}"), mime: None, is_final: i + 1 == count })
                            .await;
                    }
                    Ok(Outcome::Completed(Completion::new(json!({"count": count}))))
                }),
        )
        .skill(
            Skill::builder("paid")
                .input_schema(json!({"type": "object"}))
                .pricing(Pricing { invoke: Some("1000".into()), task: Some("1000".into()), ..Pricing::default() })
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .build()
        .expect("agent")
}

fn with_tasks(agent: &Agent, config: ServerConfig) -> ServerConfig {
    config.tasks(TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default()))
}

async fn serve(config: ServerConfig) -> TestServer {
    let agent = agent();
    TestServer::start(Faces::new(&agent, config).router()).await
}

async fn document(server: &TestServer) -> Value {
    let response = reqwest::get(server.url("/openapi.json")).await.expect("GET /openapi.json");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().expect("type").to_owned();
    assert!(content_type.starts_with("application/json"), "{content_type}");
    response.json().await.expect("JSON")
}

fn paths(document: &Value) -> BTreeSet<String> {
    document["paths"].as_object().expect("paths").keys().cloned().collect()
}

/// The operations of the document: `(method, path)`.
fn operations(document: &Value) -> Vec<(String, String)> {
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            operations.push((method.clone(), path.clone()));
        }
    }
    operations
}

/// A validator for `schema`, a schema of `document` (its `$ref`s point into the document).
fn validator(document: &Value, schema: &Value) -> jsonschema::Validator {
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [schema],
        "components": document["components"],
    });
    jsonschema::validator_for(&root).expect("the schema compiles")
}

/// Checks `instance` against the schema of `(method, path)`'s answer `status` (or `default`).
fn check_answer(document: &Value, method: &str, path: &str, status: u16, instance: &Value) {
    let responses = &document["paths"][path][method]["responses"];
    let response = responses.get(status.to_string()).or_else(|| responses.get("default"));
    let response = response.unwrap_or_else(|| panic!("{method} {path}: no answer {status} documented"));
    let schema = &response["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "{method} {path} {status}: no JSON schema");
    let validator = validator(document, schema);
    let errors: Vec<String> = validator.iter_errors(instance).map(|error| error.to_string()).collect();
    assert!(errors.is_empty(), "{method} {path} {status}: {instance} does not match: {errors:?}");
}

/// Checks one server-sent event's data against the documented event schema.
fn check_event(document: &Value, method: &str, path: &str, data: &Value) {
    let schema = &document["paths"][path][method]["responses"]["200"]["content"]["text/event-stream"]["x-event-data"];
    assert!(schema.is_object(), "{method} {path}: no event schema");
    let errors: Vec<String> = validator(document, schema).iter_errors(data).map(|error| error.to_string()).collect();
    assert!(errors.is_empty(), "{method} {path}: event {data} does not match: {errors:?}");
}

/// Checks a request body against the documented request schema (so what the tests send is what
/// the document says to send).
fn check_request(document: &Value, method: &str, path: &str, body: &Value) {
    let schema = &document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "{method} {path}: no request schema");
    let errors: Vec<String> = validator(document, schema).iter_errors(body).map(|error| error.to_string()).collect();
    assert!(errors.is_empty(), "{method} {path}: request {body} does not match: {errors:?}");
}

struct Answer {
    status: u16,
    body: Value,
    events: Vec<Value>,
}

async fn call(server: &TestServer, method: &str, path: &str, token: Option<&str>, body: Option<&Value>) -> Answer {
    let method = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).expect("method");
    let mut request = reqwest::Client::new()
        .request(method, server.url(path))
        .header("a2a-version", "1.0")
        .timeout(Duration::from_secs(10));
    if let Some(token) = token {
        request = request.header("task-access-token", token);
    }
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let is_sse =
        response.headers().get("content-type").is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    let text = response.text().await.expect("body");
    if is_sse {
        let events = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| serde_json::from_str(data.trim()).expect("event data is JSON"))
            .collect();
        return Answer { status, body: Value::Null, events };
    }
    Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::String(text)), events: Vec::new() }
}

#[tokio::test]
async fn the_document_lists_exactly_the_served_routes() {
    let agent = agent();
    let server = TestServer::start(Faces::new(&agent, with_tasks(&agent, ServerConfig::default())).router()).await;
    let document = document(&server).await;
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(document["info"]["title"], "openapi-agent");
    assert_eq!(document["servers"][0]["url"], json!(server.url("")));

    let expected: BTreeSet<String> = [
        "/.well-known/agent-card.json",
        "/.well-known/agent.json",
        "/health",
        "/openapi.json",
        "/entrypoints",
        "/entrypoints/greet/invoke",
        "/entrypoints/greet/stream",
        "/entrypoints/paid/invoke",
        "/entrypoints/ticks/stream",
        "/tasks",
        "/tasks/{id}",
        "/tasks/{id}/cancel",
        "/tasks/{id}/subscribe",
        "/a2a/tasks",
        "/a2a/jsonrpc",
        "/a2a/jsonrpc/",
        "/",
        "/favicon.svg",
        "/assets/{name}",
    ]
    .into_iter()
    .map(String::from)
    .chain(
        [
            "/message:send",
            "/message:stream",
            "/tasks",
            "/tasks/{task}",
            "/tasks/{task}:cancel",
            "/tasks/{task}:subscribe",
            "/tasks/{task}/pushNotificationConfigs",
            "/tasks/{task}/pushNotificationConfigs/{config}",
            "/extendedAgentCard",
        ]
        .into_iter()
        .flat_map(|path| [format!("/a2a/rest{path}"), format!("/a2a/rest/{{tenant}}{path}")]),
    )
    .chain(
        // The A2A 0.3 REST routes (on by default).
        [
            "/v1/message:send",
            "/v1/message:stream",
            "/v1/tasks/{task}",
            "/v1/tasks/{task}:cancel",
            "/v1/tasks/{task}:subscribe",
            "/v1/tasks/{task}/pushNotificationConfigs",
            "/v1/tasks/{task}/pushNotificationConfigs/{config}",
            "/v1/card",
        ]
        .into_iter()
        .map(|path| format!("/a2a/rest{path}")),
    )
    .collect();
    assert_eq!(paths(&document), expected);

    // A real task, so that the task paths are asked about something that exists.
    let created = call(
        &server,
        "post",
        "/tasks",
        Some("openapi-test-token-0123456789"),
        Some(&json!({"skillId": "greet", "message": {"role": "user", "content": {"text": "{\"person\":{\"name\":\"Ada\"}}"}}})),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let task = created.body["taskId"].as_str().expect("taskId").to_owned();
    // The landing page's script, by the name the page links it under.
    let page = call(&server, "get", "/", None, None).await;
    let page = page.body.as_str().expect("the page is HTML");
    let script = page
        .split("/assets/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page links its assets")
        .to_owned();

    // Every documented operation answers: never 405, and a 404 only in the face's own error shape
    // (a missing route would be axum's empty 404).
    for (method, path) in operations(&document) {
        let concrete = path
            .replace("{id}", &task)
            .replace("{task}", &task)
            .replace("{tenant}", "acme")
            .replace("{config}", "none")
            .replace("{name}", &script);
        let body = (method == "post" || method == "delete").then(|| json!({}));
        let answer = call(&server, &method, &concrete, Some("openapi-test-token-0123456789"), body.as_ref()).await;
        assert_ne!(answer.status, 405, "{method} {path}");
        if answer.status == 404 {
            assert!(answer.body.get("error").is_some(), "{method} {path} answered a bare 404: {}", answer.body);
        }
    }
    // And a route that is not documented is not served.
    assert_eq!(call(&server, "get", "/a2a/rest/nothing/here/at/all", None, None).await.status, 404);
}

#[tokio::test]
async fn the_document_follows_the_configuration() {
    let agent = agent();
    // Without tasks: no task routes, no A2A faces.
    let server = serve(ServerConfig::default()).await;
    let document = document(&server).await;
    let listed = paths(&document);
    assert!(listed.contains("/entrypoints/greet/invoke"));
    assert!(!listed.iter().any(|path| path.starts_with("/tasks") || path.starts_with("/a2a")), "{listed:?}");
    // Only the skills that invoke have an invoke path (`ticks` only streams; a typed skill does
    // both), only those that stream a stream path.
    assert!(!listed.contains("/entrypoints/ticks/invoke") && listed.contains("/entrypoints/greet/stream"));
    assert!(!listed.contains("/entrypoints/paid/stream"));
    // A priced operation documents its 402.
    assert!(document["paths"]["/entrypoints/paid/invoke"]["post"]["responses"]["402"].is_object());
    assert!(document["paths"]["/entrypoints/greet/invoke"]["post"]["responses"]["402"].is_null());
    // The skill's schema, its `$defs` hoisted into the components.
    let input = &document["components"]["schemas"]["greet.input"];
    assert_eq!(input["properties"]["person"]["$ref"], "#/components/schemas/greet.input.Person", "{input}");
    assert!(document["components"]["schemas"]["greet.input.Person"].is_object());
    assert!(document.get("security").is_none() && document["components"].get("securitySchemes").is_none());

    // Lucid off, the A2A REST binding moved, JSON-RPC tasks off.
    let config = with_tasks(&agent, ServerConfig::default())
        .lucid(false)
        .jsonrpc_tasks(None)
        .a2a(Some(A2aConfig { rest_path: "/v1".into(), ..A2aConfig::default() }));
    let server = TestServer::start(Faces::new(&agent, config).router()).await;
    let listed = paths(&document_of(&server).await);
    assert!(!listed.iter().any(|path| path.starts_with("/entrypoints") || path.starts_with("/a2a/tasks")));
    assert!(!listed.contains("/tasks"), "the Lucid task routes are off: {listed:?}");
    assert!(listed.contains("/v1/message:send") && listed.contains("/v1/{tenant}/tasks/{task}:cancel"), "{listed:?}");

    // Bearer tokens: the schemes, and any one of them (or none) per operation.
    let token = AccessToken::parse("operator-token-0123456789").expect("token");
    let config =
        ServerConfig::default().auth(AuthConfig::new().bearer(BearerTokens::new().with(&token, "ops", ["demo"])));
    let server = serve(config).await;
    let document = document_of(&server).await;
    let schemes = &document["components"]["securitySchemes"];
    assert_eq!(schemes.as_object().map(|schemes| schemes.len()), Some(1), "{schemes}");
    let (name, scheme) = schemes.as_object().and_then(|schemes| schemes.iter().next()).expect("a scheme");
    assert_eq!(scheme["type"], "http");
    assert_eq!(scheme["scheme"], "bearer");
    assert_eq!(document["security"], json!([{}, {name.as_str(): []}]));
    assert!(!document.to_string().contains("operator-token-0123456789"), "the token is never in the document");
    // The card routes are public.
    assert_eq!(document["paths"]["/.well-known/agent-card.json"]["get"]["security"], json!([]));

    // Turned off: not served, and not listed.
    let server = serve(ServerConfig::default().openapi(false)).await;
    assert_eq!(reqwest::get(server.url("/openapi.json")).await.expect("response").status(), 404);

    // Nested under a base path: the paths stay relative, the server URL carries the base.
    let app = axum::Router::new().nest("/agents/one", Faces::new(&agent, ServerConfig::default()).router());
    let server = TestServer::start(app).await;
    let response = reqwest::get(server.url("/agents/one/openapi.json")).await.expect("response");
    let document: Value = response.json().await.expect("JSON");
    assert_eq!(document["servers"][0]["url"], json!(server.url("/agents/one")));
    assert!(paths(&document).contains("/entrypoints"));
}

async fn document_of(server: &TestServer) -> Value {
    document(server).await
}

#[tokio::test]
async fn real_answers_match_the_documented_schemas() {
    let agent = agent();
    let server = TestServer::start(Faces::new(&agent, with_tasks(&agent, ServerConfig::default())).router()).await;
    let document = document(&server).await;
    let token = "openapi-test-token-0123456789";

    // Lucid: invoke, its errors, a stream's events.
    let body = json!({"input": {"person": {"name": "Ada"}}});
    check_request(&document, "post", "/entrypoints/greet/invoke", &body);
    let answer = call(&server, "post", "/entrypoints/greet/invoke", None, Some(&body)).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body["output"]["message"], "Hello, Ada!");
    check_answer(&document, "post", "/entrypoints/greet/invoke", 200, &answer.body);
    // The documented output schema is the skill's: an answer without `message` would not match.
    let mut wrong = answer.body.clone();
    wrong["output"] = json!({"greeting": 1});
    let schema = &document["paths"]["/entrypoints/greet/invoke"]["post"]["responses"]["200"]["content"]["application/json"]
        ["schema"];
    assert!(!validator(&document, schema).is_valid(&wrong), "the output schema is the skill's own");
    let invalid =
        call(&server, "post", "/entrypoints/greet/invoke", None, Some(&json!({"input": {"person": 3}}))).await;
    assert_eq!(invalid.status, 400);
    check_answer(&document, "post", "/entrypoints/greet/invoke", 400, &invalid.body);
    let unpaid = call(&server, "post", "/entrypoints/paid/invoke", None, Some(&json!({"input": {}}))).await;
    check_answer(&document, "post", "/entrypoints/paid/invoke", unpaid.status, &unpaid.body);
    let streamed =
        call(&server, "post", "/entrypoints/ticks/stream", None, Some(&json!({"input": {"count": 2}}))).await;
    assert_eq!(streamed.status, 200);
    assert!(streamed.events.len() >= 4, "run-start, deltas, run-end: {:?}", streamed.events);
    for event in &streamed.events {
        check_event(&document, "post", "/entrypoints/ticks/stream", event);
    }
    for (method, path) in [("get", "/health"), ("get", "/entrypoints"), ("get", "/.well-known/agent-card.json")] {
        let answer = call(&server, method, path, None, None).await;
        check_answer(&document, method, path, answer.status, &answer.body);
    }

    // Lucid tasks.
    let create =
        json!({"skillId": "greet", "message": {"role": "user", "content": {"text": "{\"person\":{\"name\":\"Bo\"}}"}}});
    check_request(&document, "post", "/tasks", &create);
    let created = call(&server, "post", "/tasks", Some(token), Some(&create)).await;
    check_answer(&document, "post", "/tasks", created.status, &created.body);
    let id = created.body["taskId"].as_str().expect("taskId").to_owned();
    let read = call(&server, "get", &format!("/tasks/{id}"), Some(token), None).await;
    check_answer(&document, "get", "/tasks/{id}", read.status, &read.body);
    let listed = call(&server, "get", "/tasks?limit=5", Some(token), None).await;
    assert_eq!(listed.status, 200);
    check_answer(&document, "get", "/tasks", listed.status, &listed.body);
    let cancelled = call(&server, "post", &format!("/tasks/{id}/cancel"), Some(token), None).await;
    check_answer(&document, "post", "/tasks/{id}/cancel", cancelled.status, &cancelled.body);
    let missing = call(&server, "get", "/tasks/no-such-task", Some(token), None).await;
    assert_eq!(missing.status, 404);
    check_answer(&document, "get", "/tasks/{id}", 404, &missing.body);
    let updates = call(&server, "get", &format!("/tasks/{id}/subscribe"), Some(token), None).await;
    assert!(!updates.events.is_empty());
    for event in &updates.events {
        check_event(&document, "get", "/tasks/{id}/subscribe", event);
    }

    // A2A HTTP+JSON: send, read, list, stream, errors.
    let send = json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": {"person": {"name": "Cy"}}}],
                                 "metadata": {"skillId": "greet"}}});
    check_request(&document, "post", "/a2a/rest/message:send", &send);
    let sent = call(&server, "post", "/a2a/rest/message:send", None, Some(&send)).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    check_answer(&document, "post", "/a2a/rest/message:send", 200, &sent.body);
    let task_id = sent.body["task"]["id"].as_str().expect("task id").to_owned();
    let task = call(&server, "get", &format!("/a2a/rest/tasks/{task_id}"), None, None).await;
    assert_eq!(task.status, 200);
    check_answer(&document, "get", "/a2a/rest/tasks/{task}", 200, &task.body);
    let listed = call(&server, "get", "/a2a/rest/tasks?pageSize=5", None, None).await;
    check_answer(&document, "get", "/a2a/rest/tasks", listed.status, &listed.body);
    let missing = call(&server, "get", "/a2a/rest/tasks/no-such-task", None, None).await;
    assert_eq!(missing.status, 404);
    check_answer(&document, "get", "/a2a/rest/tasks/{task}", 404, &missing.body);
    let cancel = call(&server, "post", &format!("/a2a/rest/tasks/{task_id}:cancel"), None, None).await;
    check_answer(&document, "post", "/a2a/rest/tasks/{task}:cancel", cancel.status, &cancel.body);
    let bad = call(&server, "post", "/a2a/rest/message:send", None, Some(&json!({"message": {"parts": []}}))).await;
    assert_eq!(bad.status, 400);
    check_answer(&document, "post", "/a2a/rest/message:send", 400, &bad.body);
    let mut stream = send.clone();
    stream["message"]["messageId"] = json!("m-2");
    let streamed = call(&server, "post", "/a2a/rest/message:stream", None, Some(&stream)).await;
    assert_eq!(streamed.status, 200);
    assert!(!streamed.events.is_empty());
    for event in &streamed.events {
        check_event(&document, "post", "/a2a/rest/message:stream", event);
    }

    // The JSON-RPC endpoints: one documented envelope each.
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}});
    check_request(&document, "post", "/a2a/jsonrpc", &rpc);
    let answered = call(&server, "post", "/a2a/jsonrpc", None, Some(&rpc)).await;
    assert_eq!(answered.body["result"]["id"], json!(task_id));
    check_answer(&document, "post", "/a2a/jsonrpc", 200, &answered.body);
    let unknown =
        call(&server, "post", "/a2a/jsonrpc", None, Some(&json!({"jsonrpc": "2.0", "id": 2, "method": "Nope"}))).await;
    check_answer(&document, "post", "/a2a/jsonrpc", 200, &unknown.body);
    let rpc = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": "no-such-task"}});
    check_request(&document, "post", "/a2a/tasks", &rpc);
    let answered = call(&server, "post", "/a2a/tasks", None, Some(&rpc)).await;
    assert!(answered.body["error"].is_object(), "{}", answered.body);
    check_answer(&document, "post", "/a2a/tasks", answered.status, &answered.body);
}

#[tokio::test]
async fn the_schemas_reject_what_the_server_rejects() {
    let agent = agent();
    let server = TestServer::start(Faces::new(&agent, with_tasks(&agent, ServerConfig::default())).router()).await;
    let document = document(&server).await;
    assert!(document["components"]["schemas"]["Part"].is_object());
    // A part with no content member, or two, is refused by the server and by the schema.
    let part = |value: Value| validator(&document, &json!({"$ref": "#/components/schemas/Part"})).is_valid(&value);
    assert!(part(json!({"text": "hi"})));
    assert!(!part(json!({"metadata": {}})));
    assert!(!part(json!({"text": "hi", "url": "https://example.com"})));
    // The invoke body needs its `input` to match the skill's input.
    let schema =
        &document["paths"]["/entrypoints/greet/invoke"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    assert!(validator(&document, schema).is_valid(&json!({"input": {"person": {"name": "A"}}})));
    assert!(!validator(&document, schema).is_valid(&json!({"input": {"person": {}}})));
}

/// The specification's JSON Schema bundle (the one the card is validated against).
const A2A_SCHEMA: &str = include_str!("../../accord-cli/tests/data/a2a-v1.0.0.schema.json");

/// The members a schema of the document allows: its properties, or its `oneOf` branches' together.
fn members(document: &Value, schema: &Value) -> BTreeSet<String> {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        return members(document, &document["components"]["schemas"][name]);
    }
    let mut members: BTreeSet<String> =
        schema["properties"].as_object().map(|properties| properties.keys().cloned().collect()).unwrap_or_default();
    for branch in schema["oneOf"].as_array().into_iter().flatten() {
        members.extend(self::members(document, branch));
    }
    members
}

#[tokio::test]
async fn the_a2a_schemas_have_the_specifications_members() {
    let agent = agent();
    let server = TestServer::start(Faces::new(&agent, with_tasks(&agent, ServerConfig::default())).router()).await;
    let document = document(&server).await;
    let specification: Value = serde_json::from_str(A2A_SCHEMA).expect("the specification's schema");
    let definitions = specification["$defs"].as_object().or_else(|| specification["definitions"].as_object());
    let mut compared = Vec::new();
    for (title, definition) in definitions.expect("definitions") {
        let name = title.replace(' ', "");
        // The card served is Accord's, the union of the three dialects' cards (docs/behaviour.md).
        if name.starts_with("Agent") || document["components"]["schemas"].get(&name).is_none() {
            continue;
        }
        let ours = members(&document, &document["components"]["schemas"][&name]);
        let theirs: BTreeSet<String> = definition["properties"]
            .as_object()
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default();
        assert_eq!(ours, theirs, "{name}: the members differ from the specification's");
        compared.push(name);
    }
    for name in ["Task", "Message", "Part", "Artifact", "StreamResponse", "SendMessageRequest", "ListTasksResponse"] {
        assert!(compared.iter().any(|compared| compared == name), "{name} was not compared: {compared:?}");
    }
}
