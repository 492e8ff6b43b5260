//! What an agent author's skill can do through the official A2A faces, over real HTTP: ask for
//! input and be resumed by a follow-up, answer with a direct Message, close with a status message;
//! and the `tenant` scoping and the switchable REST error mapping.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AnonymousAccess, MemoryStore, RuntimeConfig, ServiceConfig, TaskRuntime};
use accord_engine::{Agent, Completion, Message, Outcome, Part, Role, Run, Skill, SkillError};
use accord_server::{A2aConfig, AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use accord_types::a2a::ErrorMapping;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// `ask`: asks for a name until the message it answers carries one, then greets it and closes
/// with a status message. `reply`: answers with a direct message. `hold`: runs until released.
fn agent(release: Arc<Notify>) -> Agent {
    Agent::builder("executor-test")
        .skill(Skill::builder("ask").input_schema(json!({"type": "object"})).invoke(|run: Run| async move {
            let said = run.message().map(Message::text).unwrap_or_default();
            match said.strip_prefix("name: ") {
                Some(name) => Ok(Outcome::Completed(
                    Completion::new(json!({"greeting": format!("hello {name}")}))
                        .with_message(Message::agent_text("done")),
                )),
                None => Ok(Outcome::InputRequired(Message::agent_text("what is your name?"))),
            }
        }))
        .skill(Skill::builder("form").input_schema(json!({"type": "object"})).invoke(|run: Run| async move {
            if run.message().is_some_and(|message| message.parts.iter().any(|part| matches!(part, Part::Data(_)))) {
                return Ok(Outcome::Completed(Completion::new(json!({"filled": true}))));
            }
            // A question with structure: every part and the id must reach the caller unchanged.
            Ok(Outcome::InputRequired(Message {
                message_id: Some("question-1".into()),
                role: Role::Agent,
                parts: vec![Part::Text("fill the form".into()), Part::Data(json!({"fields": ["name", "age"]}))],
                metadata: Some(serde_json::Map::from_iter([("form".to_owned(), json!("v1"))])),
            }))
        }))
        .skill(Skill::builder("reply").input_schema(json!({"type": "object"})).invoke(|run: Run| async move {
            let said = run.message().map(Message::text).unwrap_or_default();
            Ok(Outcome::Reply(Message::agent_text(format!("you said: {said}"))))
        }))
        .skill(Skill::builder("hold").input_schema(json!({"type": "object"})).invoke(move |run: Run| {
            let release = Arc::clone(&release);
            async move {
                tokio::select! {
                    () = release.notified() => Ok(Outcome::Completed(Completion::new(Value::Null))),
                    () = run.cancelled() => Err(SkillError::new("cancelled", "cancelled")),
                }
            }
        }))
        .build()
        .expect("agent")
}

async fn server_with(mapping: ErrorMapping) -> (TestServer, Arc<Notify>) {
    let release = Arc::new(Notify::new());
    let agent = agent(Arc::clone(&release));
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let a2a = A2aConfig { default_skill: Some("ask".into()), error_mapping: mapping, ..A2aConfig::default() };
    // These scenarios list tasks without credentials, as the conformance kit does.
    let service = ServiceConfig::default().anonymous(AnonymousAccess::ListShared);
    let config = ServerConfig::default().tasks(runtime).a2a(Some(a2a)).task_service(service);
    (TestServer::start(agent.router_with(config)).await, release)
}

const V1: [(&str, &str); 2] = [("content-type", "application/json"), ("a2a-version", "1.0")];

async fn http(server: &TestServer, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, server.url(path));
    for (name, value) in V1 {
        request = request.header(name, value);
    }
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let response = request.send().await.expect("response");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

async fn get(server: &TestServer, path: &str) -> (u16, Value) {
    http(server, reqwest::Method::GET, path, None).await
}

async fn call(server: &TestServer, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (status, body) = http(server, reqwest::Method::POST, "/a2a/jsonrpc", Some(body)).await;
    assert_eq!(status, 200, "{body}");
    body
}

fn message(id: &str, text: &str, skill: Option<&str>, task_id: Option<&str>) -> Value {
    let mut message = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(skill) = skill {
        message["metadata"] = json!({"skillId": skill});
    }
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    message
}

fn texts(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .map(|messages| messages.iter().filter_map(|m| m["parts"][0]["text"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_follow_up_resumes_a_task_waiting_for_input() {
    let (s, _release) = server_with(ErrorMapping::V1_0_1).await;
    let first = call(&s, "SendMessage", json!({"message": message("m-1", "hi", None, None)})).await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{first}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "what is your name?");
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    let (id, context) = (task["id"].as_str().expect("id").to_owned(), task["contextId"].clone());

    // A follow-up naming another context is refused; nothing changes.
    let mut elsewhere = message("m-2", "name: Ada", None, Some(&id));
    elsewhere["contextId"] = json!("another-context");
    assert_eq!(call(&s, "SendMessage", json!({"message": elsewhere})).await["error"]["code"], -32602);

    // The same messageId may come again (the conformance kit reuses ids): it is not deduplicated.
    let answered =
        call(&s, "SendMessage", json!({"message": message("m-1", "name: Ada", None, Some(&id)), "configuration": {}}))
            .await;
    let done = &answered["result"]["task"];
    assert_eq!(done["id"], json!(id));
    assert_eq!(done["contextId"], context);
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{answered}");
    assert_eq!(done["status"]["message"]["parts"][0]["text"], "done", "the closing message is the status message");
    let result = done["artifacts"].as_array().expect("artifacts").iter().find(|a| a["artifactId"] == "result");
    assert_eq!(result.expect("the result artifact")["parts"][0]["data"], json!({"greeting": "hello Ada"}));
    assert_eq!(texts(&done["history"]), ["hi", "what is your name?", "name: Ada"]);

    // An ended task takes no more messages.
    let late = call(&s, "SendMessage", json!({"message": message("m-3", "name: Bob", None, Some(&id))})).await;
    assert_eq!(late["error"]["code"], -32004, "{late}");
    // Nor does another caller's or an unknown task.
    let unknown = call(&s, "SendMessage", json!({"message": message("m-4", "x", None, Some("nope"))})).await;
    assert_eq!(unknown["error"]["code"], -32001);
}

#[tokio::test]
async fn a_running_task_refuses_a_follow_up() {
    let (s, release) = server_with(ErrorMapping::V1_0_1).await;
    let params =
        json!({"message": message("m-1", "wait", Some("hold"), None), "configuration": {"returnImmediately": true}});
    let created = call(&s, "SendMessage", params).await;
    let id = created["result"]["task"]["id"].as_str().expect("id").to_owned();
    let refused = call(&s, "SendMessage", json!({"message": message("m-2", "more", None, Some(&id))})).await;
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    assert!(refused["error"]["message"].as_str().expect("message").contains("running"), "{refused}");
    release.notify_one();
}

#[tokio::test]
async fn streams_close_at_input_required_and_a_streamed_follow_up_finishes_the_task() {
    let (s, _release) = server_with(ErrorMapping::V1_0_1).await;
    let first = sse(&s, json!({"message": message("m-1", "hi", None, None)})).await;
    assert_eq!(kind(&first[0]), "task");
    let last = first.last().expect("events");
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{first:?}");
    let id = first[0]["task"]["id"].as_str().expect("id").to_owned();

    let second = sse(&s, json!({"message": message("m-2", "name: Lin", None, Some(&id))})).await;
    assert_eq!(kind(&second[0]), "task");
    assert_eq!(second[0]["task"]["id"], json!(id));
    assert_ne!(second[0]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "the snapshot is after the resume");
    let states: Vec<&str> =
        second.iter().filter_map(|event| event["statusUpdate"]["status"]["state"].as_str()).collect();
    assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{second:?}");
    assert!(
        !states.contains(&"TASK_STATE_INPUT_REQUIRED"),
        "the resumed stream does not replay the earlier wait: {second:?}"
    );
}

#[tokio::test]
async fn a_direct_reply_is_a_message_on_both_bindings() {
    let (s, _release) = server_with(ErrorMapping::V1_0_1).await;
    let replied = call(&s, "SendMessage", json!({"message": message("m-1", "ping", Some("reply"), None)})).await;
    let reply = &replied["result"]["message"];
    assert!(replied["result"].get("task").is_none(), "{replied}");
    assert_eq!(reply["role"], "ROLE_AGENT");
    assert_eq!(reply["parts"][0]["text"], "you said: ping");
    assert!(reply["contextId"].is_string());

    // The exchange is still on record, completed, with the reply as its closing message and no
    // result artifact.
    let task_id = reply["taskId"].as_str().expect("the reply names its task");
    let task = call(&s, "GetTask", json!({"id": task_id})).await;
    assert_eq!(task["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["result"]["status"]["message"]["parts"][0]["text"], "you said: ping");
    assert!(task["result"].get("artifacts").is_none(), "{task}");

    let body = json!({"message": message("m-2", "pong", Some("reply"), None)});
    let (status, rest) = http(&s, reqwest::Method::POST, "/a2a/rest/message:send", Some(body)).await;
    assert_eq!(status, 200);
    assert_eq!(rest["message"]["parts"][0]["text"], "you said: pong", "{rest}");

    // With returnImmediately the caller asked for the task, and gets it.
    let params =
        json!({"message": message("m-3", "x", Some("reply"), None), "configuration": {"returnImmediately": true}});
    assert!(call(&s, "SendMessage", params).await["result"]["task"]["id"].is_string());
}

#[tokio::test]
async fn a_tenant_scopes_the_callers_tasks() {
    let (s, _release) = server_with(ErrorMapping::V1_0_1).await;
    let body = json!({"message": message("m-1", "name: Ada", None, None)});
    let (status, created) = http(&s, reqwest::Method::POST, "/a2a/rest/acme/message:send", Some(body)).await;
    assert_eq!(status, 200, "{created}");
    let id = created["task"]["id"].as_str().expect("id").to_owned();

    assert_eq!(get(&s, &format!("/a2a/rest/acme/tasks/{id}")).await.0, 200);
    assert_eq!(get(&s, &format!("/a2a/rest/tasks/{id}")).await.0, 404, "not without the tenant");
    assert_eq!(get(&s, &format!("/a2a/rest/globex/tasks/{id}")).await.0, 404, "not under another tenant");
    let (_, listed) = get(&s, "/a2a/rest/acme/tasks").await;
    assert_eq!(listed["tasks"].as_array().map(Vec::len), Some(1));
    let (_, untenanted) = get(&s, "/a2a/rest/tasks").await;
    assert_eq!(untenanted["tasks"].as_array().map(Vec::len), Some(0));

    // JSON-RPC carries the tenant in the params.
    assert_eq!(call(&s, "GetTask", json!({"id": id, "tenant": "acme"})).await["result"]["id"], json!(id));
    assert_eq!(call(&s, "GetTask", json!({"id": id})).await["error"]["code"], -32001);
    assert_eq!(call(&s, "GetTask", json!({"id": id, "tenant": "globex"})).await["error"]["code"], -32001);

    // A body that names another tenant than its path is refused.
    let body = json!({"message": message("m-2", "x", None, None), "tenant": "globex"});
    let (status, refused) = http(&s, reqwest::Method::POST, "/a2a/rest/acme/message:send", Some(body)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["status"], "INVALID_ARGUMENT");
}

#[tokio::test]
async fn the_rest_error_mapping_is_switchable() {
    for (mapping, expected) in [(ErrorMapping::V1_0_1, 400), (ErrorMapping::V1_0_0, 409)] {
        let (s, _release) = server_with(mapping).await;
        let (_, created) = http(
            &s,
            reqwest::Method::POST,
            "/a2a/rest/message:send",
            Some(json!({"message": message("m-1", "name: Ada", None, None)})),
        )
        .await;
        let id = created["task"]["id"].as_str().expect("id").to_owned();
        let path = format!("/a2a/rest/tasks/{id}:cancel");
        let (status, body) = http(&s, reqwest::Method::POST, &path, None).await;
        assert_eq!(status, expected, "{mapping:?}: {body}");
        assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_CANCELABLE");
        // Content-type errors: 415 in v1.0.0, 400 in v1.0.1.
        let response = reqwest::Client::new()
            .post(s.url("/a2a/rest/message:send"))
            .header("a2a-version", "1.0")
            .header("content-type", "text/plain")
            .body("hello")
            .send()
            .await
            .expect("response");
        let wanted = if mapping == ErrorMapping::V1_0_0 { 415 } else { 400 };
        assert_eq!(response.status().as_u16(), wanted, "{mapping:?}");
    }
}

fn kind(result: &Value) -> &str {
    ["task", "message", "statusUpdate", "artifactUpdate"].into_iter().find(|k| result.get(*k).is_some()).unwrap_or("?")
}

/// `SendStreamingMessage` over JSON-RPC, read to the end of the stream.
async fn sse(server: &TestServer, params: Value) -> Vec<Value> {
    use futures_util::StreamExt;
    let body = json!({"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage", "params": params});
    let mut request = reqwest::Client::new().post(server.url("/a2a/jsonrpc")).body(body.to_string());
    for (name, value) in V1 {
        request = request.header(name, value);
    }
    let response = request.send().await.expect("response");
    let mut events = Vec::new();
    let mut buffer = String::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("no stall") {
        buffer.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if let Some(data) = frame.lines().find_map(|line| line.strip_prefix("data: ")) {
                let body: Value = serde_json::from_str(data).expect("json");
                events.push(body["result"].clone());
            }
        }
    }
    events
}

#[tokio::test]
async fn required_extensions_must_be_activated_on_both_bindings() {
    use accord_types::a2a::AgentExtension;
    let release = Arc::new(Notify::new());
    let agent = agent(release);
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let extension = |uri: &str, required: bool| AgentExtension {
        uri: Some(uri.into()),
        description: Some(format!("the {uri} extension")),
        required: Some(required),
        params: None,
    };
    let a2a = A2aConfig {
        default_skill: Some("ask".into()),
        extensions: vec![extension("urn:test:required", true), extension("urn:test:optional", false)],
        ..A2aConfig::default()
    };
    let s = TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).a2a(Some(a2a)))).await;

    let card: Value =
        reqwest::get(s.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let declared = card["capabilities"]["extensions"].as_array().cloned().unwrap_or_default();
    assert_eq!(declared.len(), 3, "the configured two, then Accord's skill extension: {card}");
    assert_eq!(declared[0]["uri"], "urn:test:required");
    assert_eq!(declared[0]["required"], true);
    assert_eq!(declared[1]["uri"], "urn:test:optional");
    assert_eq!(declared[2]["uri"], accord_types::card::SKILL_EXTENSION);

    let send = |extensions: Option<&'static str>, version: &'static str, rest: bool| {
        let url = if rest { s.url("/a2a/rest/message:send") } else { s.url("/a2a/jsonrpc") };
        let message = message("m-1", "name: Ada", None, None);
        let body = if rest {
            json!({"message": message})
        } else {
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}})
        };
        let mut request =
            reqwest::Client::new().post(url).header("content-type", "application/json").header("a2a-version", version);
        if let Some(extensions) = extensions {
            request = request.header("a2a-extensions", extensions);
        }
        async move {
            let response = request.body(body.to_string()).send().await.expect("response");
            let status = response.status().as_u16();
            let echoed =
                response.headers().get("a2a-extensions").map(|value| value.to_str().expect("ascii").to_owned());
            (status, echoed, response.json::<Value>().await.expect("json"))
        }
    };

    // Not activated: refused on both bindings, with the reason and the extension named.
    let (_, _, body) = send(None, "1.0", false).await;
    assert_eq!(body["error"]["code"], -32008, "{body}");
    assert_eq!(body["error"]["data"][0]["reason"], "EXTENSION_SUPPORT_REQUIRED");
    assert_eq!(body["error"]["data"][0]["metadata"]["extension"], "urn:test:required");
    let (status, _, body) = send(Some("urn:test:optional"), "1.0", true).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "EXTENSION_SUPPORT_REQUIRED");

    // The version is checked first.
    let (_, _, body) = send(None, "99.0", false).await;
    assert_eq!(body["error"]["code"], -32009, "{body}");

    // Activated (with an unknown URI among them, which is ignored): served, and the activated
    // ones echoed in the agent's order.
    for rest in [false, true] {
        let (status, echoed, body) =
            send(Some("urn:test:unknown, urn:test:optional,urn:test:required"), "1.0", rest).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(echoed.as_deref(), Some("urn:test:required, urn:test:optional"), "rest: {rest}");
        let task = if rest { &body["task"] } else { &body["result"]["task"] };
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
    }
}

#[tokio::test]
async fn an_inline_push_config_to_a_refused_target_is_refused_not_ignored() {
    let (s, _release) = server_with(ErrorMapping::V1_0_1).await;
    let configuration = json!({"taskPushNotificationConfig": {"url": "https://10.0.0.7/hook", "id": "hook-1"}});
    let answer = call(
        &s,
        "SendMessage",
        json!({"message": message("m-1", "name: Ada", None, None), "configuration": configuration}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let body = json!({"message": message("m-2", "name: Ada", None, None), "configuration": configuration});
    let (status, rest) = http(&s, reqwest::Method::POST, "/a2a/rest/message:send", Some(body)).await;
    assert_eq!((status, rest["error"]["status"].clone()), (400, json!("INVALID_ARGUMENT")), "{rest}");
    let (_, listed) = get(&s, "/a2a/rest/tasks").await;
    assert_eq!(listed["tasks"].as_array().map(Vec::len), Some(0), "no task was created");
}

/// Reads an SSE response to its end: each event's JSON-RPC `result` (or the bare body on the REST
/// binding). The first event is also sent to `first`, so a test can act once the stream is attached.
async fn read_events(response: reqwest::Response, first: tokio::sync::oneshot::Sender<Value>) -> Vec<Value> {
    use futures_util::StreamExt;
    let mut first = Some(first);
    let mut events = Vec::new();
    let mut buffer = String::new();
    let mut stream = response.bytes_stream();
    // A hang detector, not a speed check: the stream must end by itself once the task has ended.
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(30), stream.next()).await.expect("no stall") {
        buffer.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if let Some(data) = frame.lines().find_map(|line| line.strip_prefix("data: ")) {
                let body: Value = serde_json::from_str(data).expect("json");
                let event = if body.get("jsonrpc").is_some() { body["result"].clone() } else { body };
                if let Some(first) = first.take() {
                    let _ = first.send(event.clone());
                }
                events.push(event);
            }
        }
    }
    events
}

fn states(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| {
            event["statusUpdate"]["status"]["state"].as_str().or_else(|| event["task"]["status"]["state"].as_str())
        })
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_subscriber_stays_open_through_input_required_until_the_follow_up_ends_the_task() {
    let (s, _release) = server_with(ErrorMapping::V1_0_1).await;
    for binding in ["jsonrpc", "rest"] {
        let first = call(&s, "SendMessage", json!({"message": message("m-1", "hi", None, None)})).await;
        let id = first["result"]["task"]["id"].as_str().expect("id").to_owned();
        assert_eq!(first["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");

        let request = match binding {
            "jsonrpc" => {
                let body = json!({"jsonrpc": "2.0", "id": "sub", "method": "SubscribeToTask", "params": {"id": id}});
                reqwest::Client::new().post(s.url("/a2a/jsonrpc")).body(body.to_string())
            }
            _ => reqwest::Client::new().get(s.url(&format!("/a2a/rest/tasks/{id}:subscribe"))),
        };
        let request = V1.iter().fold(request, |request, (name, value)| request.header(*name, *value));
        let response = request.send().await.expect("response");
        assert_eq!(response.status().as_u16(), 200, "{binding}");
        let (attached, snapshot) = tokio::sync::oneshot::channel();
        let watcher = tokio::spawn(read_events(response, attached));
        let snapshot = snapshot.await.expect("the snapshot");
        assert_eq!(snapshot["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{binding}: {snapshot}");

        let answered = call(&s, "SendMessage", json!({"message": message("m-2", "name: Ada", None, Some(&id))})).await;
        assert_eq!(answered["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answered}");

        let events = watcher.await.expect("watcher");
        let seen = states(&events);
        assert_eq!(seen.first().map(String::as_str), Some("TASK_STATE_INPUT_REQUIRED"), "{binding}: {seen:?}");
        assert!(seen.iter().any(|state| state == "TASK_STATE_WORKING"), "{binding}: the resume is seen: {seen:?}");
        assert_eq!(seen.last().map(String::as_str), Some("TASK_STATE_COMPLETED"), "{binding}: {seen:?}");
    }
}

#[tokio::test]
async fn an_interrupting_message_reaches_the_caller_whole() {
    let (s, _release) = server_with(ErrorMapping::V1_0_1).await;
    let asked = call(&s, "SendMessage", json!({"message": message("m-1", "start", Some("form"), None)})).await;
    let task = &asked["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let question = &task["status"]["message"];
    assert_eq!(question["messageId"], "question-1", "the agent's message id is kept: {question}");
    assert_eq!(question["role"], "ROLE_AGENT");
    assert_eq!(question["parts"][0]["text"], "fill the form");
    assert_eq!(question["parts"][1]["data"], json!({"fields": ["name", "age"]}), "data parts survive: {question}");
    assert_eq!(question["metadata"], json!({"form": "v1"}), "metadata survives: {question}");

    // The same message is on the REST binding and, once answered, in the history.
    let id = task["id"].as_str().expect("id").to_owned();
    let (status, rest) = get(&s, &format!("/a2a/rest/tasks/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(rest["status"]["message"], *question);
    let mut answer = message("m-2", "here", None, Some(&id));
    answer["parts"] = json!([{"data": {"name": "Ada", "age": 36}}]);
    let done = call(&s, "SendMessage", json!({"message": answer})).await;
    assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let history = &done["result"]["task"]["history"];
    assert_eq!(history[1]["messageId"], "question-1", "{history}");
    assert_eq!(history[1]["parts"][1]["data"], json!({"fields": ["name", "age"]}));
}

#[tokio::test]
async fn anonymous_callers_may_not_list_tasks_unless_the_server_allows_it() {
    // By default anonymous callers (one owner per address) may not list.
    let agent = agent(Arc::new(Notify::new()));
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let a2a = A2aConfig { default_skill: Some("ask".into()), ..A2aConfig::default() };
    let s = TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime).a2a(Some(a2a)))).await;
    let sent = call(&s, "SendMessage", json!({"message": message("m-1", "hi", None, None)})).await;
    let id = sent["result"]["task"]["id"].as_str().expect("id").to_owned();
    let refused = call(&s, "ListTasks", json!({})).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused["error"]["message"].as_str().expect("message").contains("anonymous"), "{refused}");
    let (status, rest) = get(&s, "/a2a/rest/tasks").await;
    assert_eq!(status, 400, "{rest}");
    // The id it holds still works.
    assert_eq!(call(&s, "GetTask", json!({"id": id})).await["result"]["id"], json!(id));

    // A server that allows it lists the shared anonymous owner's tasks.
    let (open, _release) = server_with(ErrorMapping::V1_0_1).await;
    call(&open, "SendMessage", json!({"message": message("m-1", "hi", None, None)})).await;
    let listed = call(&open, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"].as_array().map(Vec::len), Some(1), "{listed}");
}
