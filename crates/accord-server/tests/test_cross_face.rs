//! One table of task scenarios driven through every face — the Lucid `/tasks` routes, JSON-RPC
//! tasks, A2A JSON-RPC, A2A HTTP+JSON and A2A gRPC — over real HTTP against one server, each checked against
//! the same task log in the engine. The faces only translate: the same scenario must leave the
//! same log whichever wire asked for it. Where a wire has no word for a step (the Lucid profile
//! and JSON-RPC tasks cannot send a follow-up message; JSON-RPC tasks cannot list or subscribe),
//! the table says so and that face checks what it can read instead.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AccessToken, MemoryStore, OwnerHash, RuntimeConfig, TaskId, TaskRuntime};
use accord_engine::{Agent, Completion, Message, Outcome, Run, Skill, SkillError};
use accord_grpc::pb;
use accord_grpc::pb::a2a_service_client::A2aServiceClient;
use accord_server::auth::{BearerAuthLayer, BearerTokens};
use accord_server::{A2aConfig, AgentRouterExt, GrpcAddress, ServerConfig};
use accord_test_support::TestServer;
use futures_util::StreamExt;
use serde_json::{Value, json};

const TOKEN: &str = "cross-face-token-0123456789";
const OTHER: &str = "another-callers-token-0123456789";

/// `echo` completes with its input; `ask` waits for input until a follow-up says `go`; `hold`
/// runs until cancelled.
fn agent() -> Agent {
    Agent::builder("cross-face")
        .skill(
            Skill::builder("echo")
                .input_schema(json!({"type": "object"}))
                .invoke(|run: Run| async move { Ok(Outcome::Completed(Completion::new(run.input().clone()))) }),
        )
        .skill(Skill::builder("ask").input_schema(json!({"type": "object"})).invoke(|run: Run| async move {
            let follow_up = run.task().is_some_and(|task| task.history.len() > 1);
            if follow_up && run.message().is_some_and(|message| message.text() == "go") {
                Ok(Outcome::Completed(Completion::new(json!({"asked": true}))))
            } else {
                Ok(Outcome::InputRequired(Message::agent_text("say go")))
            }
        }))
        .skill(Skill::builder("hold").input_schema(json!({"type": "object"})).invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        .build()
        .expect("agent")
}

struct Fixture {
    server: TestServer,
    runtime: TaskRuntime,
}

async fn fixture() -> Fixture {
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let tokens = BearerTokens::new()
        .with(&AccessToken::parse(TOKEN).expect("token"), "caller", Vec::<String>::new())
        .with(&AccessToken::parse(OTHER).expect("token"), "other", Vec::<String>::new());
    let router = agent.router_with(config(&runtime)).layer(BearerAuthLayer::new(tokens));
    Fixture { server: TestServer::start(router).await, runtime }
}

/// Every face, the gRPC binding included (on the HTTP port).
fn config(runtime: &TaskRuntime) -> ServerConfig {
    let a2a = A2aConfig { grpc: Some(GrpcAddress::SamePort), ..A2aConfig::default() };
    ServerConfig::default().tasks(runtime.clone()).a2a(Some(a2a))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Face {
    Lucid,
    JsonRpcTasks,
    A2aJsonRpc,
    A2aRest,
    A2aGrpc,
}

const FACES: [Face; 5] = [Face::Lucid, Face::JsonRpcTasks, Face::A2aJsonRpc, Face::A2aRest, Face::A2aGrpc];

/// The engine's state name for a face's state name.
fn normalized(face: Face, state: &str) -> String {
    match face {
        // The profile's four statuses are a view; only they can be compared.
        Face::Lucid => state.to_owned(),
        Face::JsonRpcTasks => state.to_owned(),
        Face::A2aJsonRpc | Face::A2aRest | Face::A2aGrpc => {
            state.trim_start_matches("TASK_STATE_").to_ascii_lowercase()
        }
    }
}

/// A gRPC state's name (`TASK_STATE_COMPLETED`).
fn grpc_state(status: Option<&pb::TaskStatus>) -> String {
    let state = status.expect("a status").state;
    pb::TaskState::try_from(state).expect("a known state").as_str_name().to_owned()
}

struct Caller<'a> {
    face: Face,
    server: &'a TestServer,
    token: &'a str,
}

impl Caller<'_> {
    fn http(&self) -> reqwest::Client {
        reqwest::Client::new()
    }

    fn a2a(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .header("a2a-version", "1.0")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", self.token))
    }

    /// A gRPC client on the server's port (HTTP/2 without TLS).
    async fn grpc(&self) -> A2aServiceClient<tonic::transport::Channel> {
        let endpoint = tonic::transport::Endpoint::from_shared(self.server.origin.clone()).expect("endpoint");
        A2aServiceClient::new(endpoint.connect().await.expect("gRPC connection"))
    }

    /// `message` with the metadata the A2A calls carry.
    fn grpc_request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request.metadata_mut().insert("a2a-version", "1.0".parse().expect("metadata"));
        let bearer = format!("Bearer {}", self.token).parse().expect("metadata");
        request.metadata_mut().insert("authorization", bearer);
        request
    }

    /// A `SendMessage` request from its ProtoJSON form, through the A2A wire types.
    fn grpc_send(params: Value) -> pb::SendMessageRequest {
        let request: accord_types::a2a::SendMessageRequest = serde_json::from_value(params).expect("a request");
        pb::SendMessageRequest::try_from(request).expect("converts")
    }

    async fn rpc(&self, path: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let request = self.http().post(self.server.url(path)).body(body.to_string());
        let response = self.a2a(request).send().await.expect("response");
        assert_eq!(response.status(), 200);
        response.json().await.expect("json")
    }

    /// Starts a task of `skill` with `input`; its id.
    async fn create(&self, skill: &str, input: Value) -> String {
        match self.face {
            Face::Lucid => {
                let body =
                    json!({"skillId": skill, "message": {"role": "user", "content": {"text": input.to_string()}}});
                let response = self
                    .http()
                    .post(self.server.url("/tasks"))
                    .header("task-access-token", self.token)
                    .json(&body)
                    .send()
                    .await
                    .expect("response");
                assert_eq!(response.status(), 200);
                let body: Value = response.json().await.expect("json");
                body["taskId"].as_str().expect("taskId").to_owned()
            }
            Face::JsonRpcTasks => {
                let body =
                    self.rpc("/a2a/tasks", "tasks/send", json!({"task": {"skill": skill, "input": input}})).await;
                body["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{body}")).to_owned()
            }
            Face::A2aJsonRpc | Face::A2aRest => {
                let params = json!({
                    "message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"data": input}],
                                "metadata": {"skillId": skill}},
                    "configuration": {"returnImmediately": true},
                });
                let body = if self.face == Face::A2aJsonRpc {
                    self.rpc("/a2a/jsonrpc", "SendMessage", params).await["result"].clone()
                } else {
                    let request = self.http().post(self.server.url("/a2a/rest/message:send")).body(params.to_string());
                    self.a2a(request).send().await.expect("response").json().await.expect("json")
                };
                body["task"]["id"].as_str().unwrap_or_else(|| panic!("{body}")).to_owned()
            }
            Face::A2aGrpc => {
                let params = json!({
                    "message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"data": input}],
                                "metadata": {"skillId": skill}},
                    "configuration": {"returnImmediately": true},
                });
                let request = self.grpc_request(Self::grpc_send(params));
                let response = self.grpc().await.send_message(request).await.expect("SendMessage").into_inner();
                match response.payload {
                    Some(pb::send_message_response::Payload::Task(task)) => task.id,
                    other => panic!("a task, not {other:?}"),
                }
            }
        }
    }

    /// The task's state through this face, or `None` when the face says it does not exist.
    async fn state(&self, id: &str) -> Option<String> {
        let state = match self.face {
            Face::Lucid => {
                let response = self
                    .http()
                    .get(self.server.url(&format!("/tasks/{id}")))
                    .header("task-access-token", self.token)
                    .send()
                    .await
                    .expect("response");
                if response.status() == 404 {
                    let body: Value = response.json().await.expect("json");
                    assert_eq!(body["error"]["code"], "task_not_found");
                    return None;
                }
                let body: Value = response.json().await.expect("json");
                body["status"].clone()
            }
            Face::JsonRpcTasks => {
                let body = self.rpc("/a2a/tasks", "tasks/get", json!({"taskId": id})).await;
                if body["error"]["code"] == -32002 {
                    return None;
                }
                body["result"]["status"].clone()
            }
            Face::A2aJsonRpc => {
                let body = self.rpc("/a2a/jsonrpc", "GetTask", json!({"id": id})).await;
                if body["error"]["code"] == -32001 {
                    return None;
                }
                body["result"]["status"]["state"].clone()
            }
            Face::A2aRest => {
                let request = self.http().get(self.server.url(&format!("/a2a/rest/tasks/{id}")));
                let response = self.a2a(request).send().await.expect("response");
                if response.status() == 404 {
                    return None;
                }
                let body: Value = response.json().await.expect("json");
                body["status"]["state"].clone()
            }
            Face::A2aGrpc => {
                let request = self.grpc_request(pb::GetTaskRequest { id: id.to_owned(), ..Default::default() });
                match self.grpc().await.get_task(request).await {
                    Ok(task) => Value::from(grpc_state(task.into_inner().status.as_ref())),
                    Err(status) if status.code() == tonic::Code::NotFound => return None,
                    Err(status) => panic!("GetTask: {status:?}"),
                }
            }
        };
        Some(normalized(self.face, state.as_str().expect("a state")))
    }

    /// Cancels the task through this face; the state it answers.
    async fn cancel(&self, id: &str) -> String {
        let state = match self.face {
            Face::Lucid => {
                let response = self
                    .http()
                    .post(self.server.url(&format!("/tasks/{id}/cancel")))
                    .header("task-access-token", self.token)
                    .send()
                    .await
                    .expect("response");
                let body: Value = response.json().await.expect("json");
                body["status"].clone()
            }
            Face::JsonRpcTasks => {
                self.rpc("/a2a/tasks", "tasks/cancel", json!({"taskId": id})).await["result"]["status"].clone()
            }
            Face::A2aJsonRpc => {
                self.rpc("/a2a/jsonrpc", "CancelTask", json!({"id": id})).await["result"]["status"]["state"].clone()
            }
            Face::A2aRest => {
                let request = self.http().post(self.server.url(&format!("/a2a/rest/tasks/{id}:cancel")));
                let body: Value = self.a2a(request).send().await.expect("response").json().await.expect("json");
                body["status"]["state"].clone()
            }
            Face::A2aGrpc => {
                let request = self.grpc_request(pb::CancelTaskRequest { id: id.to_owned(), ..Default::default() });
                let task = self.grpc().await.cancel_task(request).await.expect("CancelTask").into_inner();
                Value::from(grpc_state(task.status.as_ref()))
            }
        };
        normalized(self.face, state.as_str().expect("a state"))
    }

    /// Sends the follow-up `text` to a waiting task, where the wire can.
    async fn follow_up(&self, id: &str, text: &str) -> Option<String> {
        let params =
            json!({"message": {"messageId": uuid(), "role": "ROLE_USER", "taskId": id, "parts": [{"text": text}]}});
        let body = match self.face {
            Face::Lucid | Face::JsonRpcTasks => return None,
            Face::A2aJsonRpc => self.rpc("/a2a/jsonrpc", "SendMessage", params).await["result"].clone(),
            Face::A2aRest => {
                let request = self.http().post(self.server.url("/a2a/rest/message:send")).body(params.to_string());
                self.a2a(request).send().await.expect("response").json().await.expect("json")
            }
            Face::A2aGrpc => {
                let request = self.grpc_request(Self::grpc_send(params));
                let response = self.grpc().await.send_message(request).await.expect("SendMessage").into_inner();
                let Some(pb::send_message_response::Payload::Task(task)) = response.payload else { panic!("a task") };
                return Some(normalized(self.face, &grpc_state(task.status.as_ref())));
            }
        };
        Some(normalized(self.face, body["task"]["status"]["state"].as_str().unwrap_or_else(|| panic!("{body}"))))
    }

    /// Every page of the caller's tasks in `state` (the face's name), `size` at a time: the ids
    /// in order and the totals each page reported. `None` where the wire cannot list.
    async fn list_all(&self, state: &str, size: usize) -> Option<(Vec<String>, Vec<u64>)> {
        let mut ids = Vec::new();
        let mut totals = Vec::new();
        let mut cursor = String::new();
        for _ in 0..100 {
            let (page, total, next): (Vec<Value>, u64, Option<String>) = match self.face {
                Face::JsonRpcTasks => return None,
                Face::Lucid => {
                    let url = format!("/tasks?status={state}&limit={size}&offset={}", ids.len());
                    let response = self
                        .http()
                        .get(self.server.url(&url))
                        .header("task-access-token", self.token)
                        .send()
                        .await
                        .expect("response");
                    let body: Value = response.json().await.expect("json");
                    let more = body["hasMore"].as_bool().expect("hasMore");
                    let tasks = body["tasks"].as_array().expect("tasks").clone();
                    let ids = tasks.iter().map(|task| task["taskId"].clone()).collect();
                    (ids, body["total"].as_u64().expect("total"), more.then(String::new))
                }
                Face::A2aJsonRpc | Face::A2aRest => {
                    let mut params = json!({"status": state, "pageSize": size});
                    if !cursor.is_empty() {
                        params["pageToken"] = json!(cursor);
                    }
                    let body = if self.face == Face::A2aJsonRpc {
                        self.rpc("/a2a/jsonrpc", "ListTasks", params).await["result"].clone()
                    } else {
                        let mut query = format!("/a2a/rest/tasks?status={state}&pageSize={size}");
                        if !cursor.is_empty() {
                            query.push_str(&format!("&pageToken={cursor}"));
                        }
                        let request = self.http().get(self.server.url(&query));
                        self.a2a(request).send().await.expect("response").json().await.expect("json")
                    };
                    let tasks = body["tasks"].as_array().unwrap_or_else(|| panic!("{body}")).clone();
                    let next = body["nextPageToken"].as_str().expect("nextPageToken").to_owned();
                    let ids = tasks.iter().map(|task| task["id"].clone()).collect();
                    (ids, body["totalSize"].as_u64().expect("totalSize"), (!next.is_empty()).then_some(next))
                }
                Face::A2aGrpc => {
                    let status = pb::TaskState::from_str_name(state).expect("a state name") as i32;
                    let list = pb::ListTasksRequest {
                        status,
                        page_size: Some(i32::try_from(size).expect("size")),
                        page_token: cursor.clone(),
                        ..Default::default()
                    };
                    let request = self.grpc_request(list);
                    let body = self.grpc().await.list_tasks(request).await.expect("ListTasks").into_inner();
                    let ids = body.tasks.iter().map(|task| Value::from(task.id.clone())).collect();
                    let next = body.next_page_token;
                    (ids, u64::try_from(body.total_size).expect("total"), (!next.is_empty()).then_some(next))
                }
            };
            ids.extend(page.iter().map(|id| id.as_str().expect("id").to_owned()));
            totals.push(total);
            match next {
                Some(next) => cursor = next,
                None => return Some((ids, totals)),
            }
        }
        panic!("{:?}: the pages never ended", self.face);
    }

    /// The states a subscription to the task reports until it closes, the subscription started
    /// once the task waits; `then` runs once the subscription is attached. `None` where the wire
    /// cannot subscribe to an existing task.
    async fn subscribe_while<F: std::future::Future<Output = ()>>(&self, id: &str, then: F) -> Option<Vec<String>> {
        let request = match self.face {
            Face::JsonRpcTasks => return None,
            Face::A2aGrpc => return Some(self.grpc_subscribe_while(id, then).await),
            Face::Lucid => self
                .http()
                .get(self.server.url(&format!("/tasks/{id}/subscribe")))
                .header("task-access-token", self.token),
            Face::A2aJsonRpc => {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": id}});
                self.a2a(self.http().post(self.server.url("/a2a/jsonrpc")).body(body.to_string()))
            }
            Face::A2aRest => self.a2a(self.http().get(self.server.url(&format!("/a2a/rest/tasks/{id}:subscribe")))),
        };
        let response = request.send().await.expect("response");
        assert_eq!(response.status(), 200, "{:?}", self.face);
        let mut body = response.bytes_stream();
        let mut buffer = String::new();
        let mut states = Vec::new();
        let mut then = Some(Box::pin(then));
        // A hang detector, not a speed check: the stream must close by itself at the terminal state.
        while let Some(chunk) = tokio::time::timeout(Duration::from_secs(30), body.next()).await.expect("no stall") {
            buffer.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                let Some(data) = frame.lines().find_map(|line| line.strip_prefix("data: ")) else { continue };
                let event: Value = serde_json::from_str(data).expect("json");
                let event = if event.get("jsonrpc").is_some() { event["result"].clone() } else { event };
                let state = match self.face {
                    Face::Lucid => event["status"].as_str().map(str::to_owned),
                    _ => event["task"]["status"]["state"]
                        .as_str()
                        .or_else(|| event["statusUpdate"]["status"]["state"].as_str())
                        .map(|state| normalized(self.face, state)),
                };
                states.extend(state);
                if let Some(then) = then.take() {
                    then.await;
                }
            }
        }
        Some(states)
    }
}

impl Caller<'_> {
    /// [`Caller::subscribe_while`] over gRPC: the states of a `SubscribeToTask` stream.
    async fn grpc_subscribe_while<F: std::future::Future<Output = ()>>(&self, id: &str, then: F) -> Vec<String> {
        let request = self.grpc_request(pb::SubscribeToTaskRequest { id: id.to_owned(), ..Default::default() });
        let mut stream = self.grpc().await.subscribe_to_task(request).await.expect("SubscribeToTask").into_inner();
        let mut states = Vec::new();
        let mut then = Some(Box::pin(then));
        // A hang detector, not a speed check: the stream must close by itself at the terminal state.
        while let Some(event) = tokio::time::timeout(Duration::from_secs(30), stream.next()).await.expect("no stall") {
            let state = match event.expect("an event").payload {
                Some(pb::stream_response::Payload::Task(task)) => Some(grpc_state(task.status.as_ref())),
                Some(pb::stream_response::Payload::StatusUpdate(update)) => Some(grpc_state(update.status.as_ref())),
                _ => None,
            };
            states.extend(state.map(|state| normalized(self.face, &state)));
            if let Some(then) = then.take() {
                then.await;
            }
        }
        states
    }
}

fn uuid() -> String {
    TaskId::generate().to_string()
}

/// Polls the face until the task is in `state` (a hang detector bounds it).
async fn until(caller: &Caller<'_>, id: &str, state: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = caller.state(id).await.expect("the task exists");
        if now == state {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{:?}: {id} stayed {now}, wanted {state}", caller.face);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn owner() -> OwnerHash {
    AccessToken::parse(TOKEN).expect("token").owner()
}

/// The face's name of a state: the profile's four statuses for Lucid, the engine's for the rest.
fn named(face: Face, state: &str) -> String {
    match (face, state) {
        (Face::Lucid, "submitted" | "working" | "input_required") => "running".to_owned(),
        (Face::Lucid, "canceled") => "cancelled".to_owned(),
        (Face::A2aJsonRpc | Face::A2aRest | Face::A2aGrpc, "input_required") => "input_required".to_owned(),
        _ => state.to_owned(),
    }
}

#[tokio::test]
async fn create_then_complete_leaves_the_same_log_on_every_face() {
    let f = fixture().await;
    for face in FACES {
        let caller = Caller { face, server: &f.server, token: TOKEN };
        let id = caller.create("echo", json!({"n": 1})).await;
        until(&caller, &id, "completed").await;
        assert_eq!(
            accord_test_support::state_log(&f.runtime, &owner(), &id).await,
            ["Submitted", "Working", "Result"],
            "{face:?}"
        );
        let task = f.runtime.get(&TaskId::new(&id), &owner()).await.expect("task");
        assert_eq!(task.result.expect("result").output, json!({"n": 1}), "{face:?}: the input arrived unchanged");
    }
}

#[tokio::test]
async fn input_required_then_follow_up_then_complete() {
    let f = fixture().await;
    for face in FACES {
        let caller = Caller { face, server: &f.server, token: TOKEN };
        let id = caller.create("ask", json!({})).await;
        until(&caller, &id, &named(face, "input_required")).await;
        // The follow-up goes through this face when its wire has one, else through A2A: the
        // waiting task is the same task on every face.
        let resumed = match caller.follow_up(&id, "go").await {
            Some(state) => state,
            None => Caller { face: Face::A2aJsonRpc, server: &f.server, token: TOKEN }
                .follow_up(&id, "go")
                .await
                .expect("A2A follows up"),
        };
        assert_eq!(resumed, "completed", "{face:?}");
        until(&caller, &id, "completed").await;
        assert_eq!(
            accord_test_support::state_log(&f.runtime, &owner(), &id).await,
            ["Submitted", "Working", "InputRequired", "Working", "Result"],
            "{face:?}"
        );
    }
}

#[tokio::test]
async fn cancel_ends_the_task_on_every_face() {
    let f = fixture().await;
    for face in FACES {
        let caller = Caller { face, server: &f.server, token: TOKEN };
        let id = caller.create("hold", json!({})).await;
        until(&caller, &id, &named(face, "working")).await;
        assert_eq!(caller.cancel(&id).await, named(face, "canceled"), "{face:?}");
        assert_eq!(
            accord_test_support::state_log(&f.runtime, &owner(), &id).await,
            ["Submitted", "Working", "Canceled"],
            "{face:?}"
        );
    }
}

#[tokio::test]
async fn another_owners_task_reads_as_missing_on_every_face() {
    let f = fixture().await;
    let mine = Caller { face: Face::A2aJsonRpc, server: &f.server, token: TOKEN }.create("echo", json!({})).await;
    for face in FACES {
        let stranger = Caller { face, server: &f.server, token: OTHER };
        assert_eq!(stranger.state(&mine).await, None, "{face:?}");
        assert_eq!(stranger.state("no-such-task").await, None, "{face:?}");
    }
}

#[tokio::test]
async fn list_filters_and_pages_alike_on_every_face_that_lists() {
    let f = fixture().await;
    // Each face lists for its own caller, so that one face's tasks do not count on another.
    let tokens = [
        "list-lucid-token-0123456789",
        "list-rpc-token-0123456789",
        "list-a2a-token-0123456789",
        "list-rest-token-0123456789",
        "list-grpc-token-0123456789",
    ];
    for (face, token) in FACES.into_iter().zip(tokens) {
        let server = fixture_with_token(&f.runtime, token).await;
        let caller = Caller { face, server: &server, token };
        let mut completed = Vec::new();
        for n in 0..5 {
            let id = caller.create("echo", json!({"n": n})).await;
            until(&caller, &id, "completed").await;
            completed.push(id);
        }
        let held = caller.create("hold", json!({})).await;
        let filter = if face == Face::Lucid { "completed" } else { "TASK_STATE_COMPLETED" };
        match caller.list_all(filter, 2).await {
            None => assert_eq!(face, Face::JsonRpcTasks, "only JSON-RPC tasks has no list"),
            Some((ids, totals)) => {
                let newest_first: Vec<String> = completed.iter().rev().cloned().collect();
                assert_eq!(ids, newest_first, "{face:?}: every completed task once, newest first, none held");
                assert!(totals.iter().all(|total| *total == 5), "{face:?}: exact totals on every page: {totals:?}");
                assert_eq!(totals.len(), 3, "{face:?}: pages of 2");
            }
        }
        caller.cancel(&held).await;
    }
}

/// A second server on the same runtime whose bearer token `token` is known.
async fn fixture_with_token(runtime: &TaskRuntime, token: &str) -> TestServer {
    let tokens = BearerTokens::new().with(&AccessToken::parse(token).expect("token"), "lister", Vec::<String>::new());
    let router = runtime.agent().router_with(config(runtime)).layer(BearerAuthLayer::new(tokens));
    TestServer::start(router).await
}

#[tokio::test]
async fn a_subscription_stays_open_through_input_required_until_the_end() {
    let f = fixture().await;
    for face in FACES {
        let caller = Caller { face, server: &f.server, token: TOKEN };
        let id = caller.create("ask", json!({})).await;
        until(&caller, &id, &named(face, "input_required")).await;
        let follow_up = async {
            let a2a = Caller { face: Face::A2aJsonRpc, server: &f.server, token: TOKEN };
            assert_eq!(a2a.follow_up(&id, "go").await.as_deref(), Some("completed"));
        };
        match caller.subscribe_while(&id, follow_up).await {
            None => {
                assert_eq!(face, Face::JsonRpcTasks, "only JSON-RPC tasks cannot subscribe to a task");
                Caller { face: Face::A2aJsonRpc, server: &f.server, token: TOKEN }.follow_up(&id, "go").await;
            }
            Some(states) => {
                assert_eq!(states.last().map(String::as_str), Some("completed"), "{face:?}: {states:?}");
                assert!(states.contains(&named(face, "input_required")), "{face:?}: {states:?}");
            }
        }
        assert_eq!(
            accord_test_support::state_log(&f.runtime, &owner(), &id).await,
            ["Submitted", "Working", "InputRequired", "Working", "Result"],
            "{face:?}"
        );
    }
}
