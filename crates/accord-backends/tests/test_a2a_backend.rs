//! `[[a2a]]` end to end, over loopback: an Accord agent built from an agent file fronts a remote
//! A2A agent — the official Rust SDK's echo agent (`sdk-echo`, a process of its own), or a small
//! A2A peer served by the test where a behaviour the echo agent lacks is needed (asking for
//! input, answering something that is not A2A) — and a caller speaks to Accord with Accord's A2A
//! client.
//!
//! `sdk-echo` is a binary of `accord-bench`: build it first (`cargo build -p accord-bench --bin
//! sdk-echo`); these tests look for it beside their own binary's directory.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use accord_backends::{AgentFile, BuiltAgent};
use accord_client::a2a::{A2aClient, A2aClientOptions, A2aEvent, user_text_message};
use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime};
use accord_server::{AgentRouterExt, ServerConfig};
use accord_test_support::TestServer;
use accord_types::a2a::{
    ListTasksRequest, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse, Task,
    TaskState,
};
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

// ---- the official SDK's echo agent, as a process ---------------------------------------------

/// `sdk-echo` running on a free loopback port; killed when dropped.
struct SdkEcho {
    child: Child,
    base: String,
}

fn sdk_echo_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test> → target/<profile>/sdk-echo
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("the target directory");
    let binary = dir.join(format!("sdk-echo{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} is missing: build it first with `cargo build -p accord-bench --bin sdk-echo`",
        binary.display()
    );
    binary
}

impl SdkEcho {
    async fn start() -> Self {
        Self::start_on(0).await
    }

    /// On `port` (0: a free one).
    async fn start_on(port: u16) -> Self {
        let mut child = Command::new(sdk_echo_binary())
            .args(["--port", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("sdk-echo starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("sdk-echo says where it listens")
            .expect("stdout")
            .expect("a line");
        let base = line.strip_prefix("sdk-echo listening on ").expect("the listening line").trim().to_owned();
        Self { child, base }
    }

    /// A client of the echo agent itself, to see what Accord did there.
    async fn client(&self) -> A2aClient {
        A2aClient::from_card_url(&self.base, A2aClientOptions::default()).await.expect("a client of sdk-echo")
    }

    async fn kill(&mut self) {
        self.child.kill().await.expect("sdk-echo is killed");
    }
}

// ---- the Accord agent in front -----------------------------------------------------------------

/// The agent of `toml` (an agent file; `${PEER_KEY}` is `peer-secret`), served on loopback.
struct Front {
    server: TestServer,
    built: BuiltAgent,
}

async fn build(toml: &str) -> Result<BuiltAgent, String> {
    let env = |name: &str| (name == "PEER_KEY").then(|| "peer-secret".to_owned());
    let file = AgentFile::parse_with_env(toml, "front.toml", ".", &env).map_err(|errors| errors.to_string())?;
    file.build_with_servers().await.map_err(|errors| errors.to_string())
}

async fn front(toml: &str) -> Front {
    front_on(toml, Arc::new(MemoryStore::default())).await
}

/// The agent of `toml`, its tasks in `store`.
async fn front_on(toml: &str, store: Arc<MemoryStore>) -> Front {
    let built = build(toml).await.expect("the front agent builds");
    let agent = built.agent.clone();
    let runtime = TaskRuntime::new(agent.clone(), store, RuntimeConfig::default());
    let server = TestServer::start(agent.router_with(ServerConfig::default().tasks(runtime))).await;
    Front { server, built }
}

impl Front {
    /// A caller of the front agent, with credentials of its own that must stay in Accord.
    async fn client(&self) -> A2aClient {
        let mut options = A2aClientOptions::with_bindings(["JSONRPC"]);
        options.headers.insert("authorization", "Bearer caller-secret".parse().expect("header"));
        A2aClient::from_card_url(&self.server.origin, options).await.expect("a client of the front agent")
    }
}

fn agent_file(url: &str, extra: &str) -> String {
    format!(
        "[agent]\nname = \"front\"\n\n[[a2a]]\nurl = \"{url}\"\nname = \"peer\"\nprefix = \"peer.\"\nheaders = {{ X-Peer-Key = \"${{PEER_KEY}}\" }}\n{extra}\n"
    )
}

fn request(text: &str, skill: &str, return_immediately: bool) -> SendMessageRequest {
    let mut message = user_text_message(text);
    message.metadata = json!({"skillId": skill}).as_object().cloned();
    let configuration = return_immediately
        .then(|| SendMessageConfiguration { return_immediately: Some(true), ..SendMessageConfiguration::default() });
    SendMessageRequest { tenant: None, message, configuration, metadata: None }
}

fn task_of(response: SendMessageResponse) -> Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("expected a task, got the message {message:?}"),
    }
}

/// The text of every part of every artifact of `task`, by artifact id.
fn artifact_texts(task: &Task) -> HashMap<String, String> {
    task.artifacts
        .iter()
        .map(|artifact| {
            let text: String = artifact.parts.iter().filter_map(|part| part.as_text()).collect();
            (artifact.artifact_id.clone(), text)
        })
        .collect()
}

fn status_text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|message| message.parts.iter().filter_map(|part| part.as_text()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

/// Reads the task until `done` says so (within 20 s).
async fn wait_for(client: &A2aClient, id: &str, done: impl Fn(&Task) -> bool) -> Task {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let task = client.get_task(id, None).await.expect("GetTask");
        if done(&task) {
            return task;
        }
        assert!(tokio::time::Instant::now() < deadline, "the task stays {}: {task:?}", task.status.state);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---- against the official Rust SDK's echo agent ------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn the_remote_card_becomes_local_skills_with_the_prefix() {
    let echo = SdkEcho::start().await;
    let front = front(&agent_file(&echo.base, "")).await;
    assert_eq!(front.built.tool_keys, ["peer.echo"]);
    assert_eq!(front.built.a2a_agents[0].interface(), "JSONRPC@1.0");
    let card = front.client().await.card().clone();
    let skill = card.skills.iter().find(|skill| skill.id == "peer.echo").expect("the remote skill, prefixed");
    assert_eq!(skill.description, "Echoes the message");
    assert_eq!(skill.tags, ["echo"]);
    assert_eq!(skill.name, "echo");
    // The echo agent's skill names no media types: its card's defaults stand for them.
    assert_eq!(skill.input_modes, ["text/plain"]);
    assert_eq!(skill.output_modes, ["text/plain"]);

    // The card's own URL works as well as the base URL, and `binding` picks the interface.
    let card_url = format!("{}/.well-known/agent-card.json", echo.base);
    let built = build(&agent_file(&card_url, "binding = \"HTTP+JSON\"")).await.expect("built from the card URL");
    assert_eq!(built.a2a_agents[0].interface(), "HTTP+JSON@1.0");

    // `skills` keeps a subset; a skill the remote agent lacks stops the start, naming it.
    let error = build(&agent_file(&echo.base, "skills = [\"echo\", \"translate\"]")).await.expect_err("no translate");
    assert_eq!(
        error,
        "front.toml: a2a[0].skills: remote A2A agent 'peer' has no skill \"translate\" (its skills: echo)"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_reaches_the_remote_agent_and_its_answer_comes_back() {
    let echo = SdkEcho::start().await;
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let front = front(&agent_file(&echo.base, &format!("binding = \"{binding}\""))).await;
        let client = front.client().await;
        let task = task_of(client.send_message(request("hello", "peer.echo", false)).await.expect("SendMessage"));
        assert_eq!(task.status.state, TaskState::Completed, "over {binding}: {task:?}");
        let artifacts = artifact_texts(&task);
        assert_eq!(artifacts.get("echo").map(String::as_str), Some("echo: hello"), "over {binding}: {task:?}");
        assert!(!artifacts.contains_key("result"), "the remote artifacts are the answer: {task:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lucid_invocation_gets_the_remote_answer_as_its_output() {
    let echo = SdkEcho::start().await;
    let front = front(&agent_file(&echo.base, "")).await;
    let invoked: Value = reqwest::Client::new()
        .post(format!("{}/entrypoints/peer.echo/invoke", front.server.origin))
        .json(&json!({"input": "hi"}))
        .send()
        .await
        .expect("invoke")
        .json()
        .await
        .expect("json");
    assert_eq!(invoked["output"], "echo: hi", "{invoked}");
}

#[tokio::test(flavor = "multi_thread")]
async fn streamed_chunks_pass_through_as_they_come() {
    let echo = SdkEcho::start().await;
    let front = front(&agent_file(&echo.base, "")).await;
    let client = front.client().await;
    let mut stream = client
        .send_streaming_message(request(r#"{"count": 3, "interval_ms": 300}"#, "peer.echo", false))
        .await
        .expect("SendStreamingMessage");
    let mut chunks = Vec::new();
    let mut states = Vec::new();
    let started = tokio::time::Instant::now();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(20), stream.next()).await.expect("no stall") {
        let A2aEvent { response, .. } = event.expect("an event");
        match response {
            StreamResponse::ArtifactUpdate(update) => {
                let text: String = update.artifact.parts.iter().filter_map(|part| part.as_text()).collect();
                chunks.push((
                    text,
                    update.append.unwrap_or(false),
                    update.last_chunk.unwrap_or(false),
                    started.elapsed(),
                ));
            }
            StreamResponse::StatusUpdate(update) => states.push(update.status.state),
            StreamResponse::Task(task) => states.push(task.status.state),
            StreamResponse::Message(message) => panic!("unexpected message {message:?}"),
        }
    }
    let texts: Vec<(&str, bool, bool)> =
        chunks.iter().map(|(text, append, last, _)| (text.as_str(), *append, *last)).collect();
    assert_eq!(texts, [("tick 1", false, false), ("tick 2", true, false), ("tick 3", true, true)]);
    // Each chunk came when the remote agent made it, not all at the end.
    assert!(chunks[2].3 - chunks[0].3 >= Duration::from_millis(400), "chunks arrived at once: {chunks:?}");
    assert_eq!(states.last(), Some(&TaskState::Completed), "{states:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_reaches_the_remote_task() {
    let echo = SdkEcho::start().await;
    let front = front(&agent_file(&echo.base, "")).await;
    let client = front.client().await;
    let task =
        task_of(client.send_message(request(r#"{"seconds": 30}"#, "peer.echo", true)).await.expect("SendMessage"));
    let peer = echo.client().await;
    // The remote task exists and works.
    let remote = {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let listed = peer.list_tasks(ListTasksRequest::default()).await.expect("ListTasks on sdk-echo");
            if let Some(remote) = listed.tasks.into_iter().find(|task| task.status.state == TaskState::Working) {
                break remote;
            }
            assert!(tokio::time::Instant::now() < deadline, "no remote task works");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let cancelled = client.cancel_task(&task.id).await.expect("CancelTask");
    assert_eq!(cancelled.status.state, TaskState::Canceled);
    let remote = wait_for(&peer, &remote.id, |task| task.status.state.is_terminal()).await;
    assert_eq!(remote.status.state, TaskState::Canceled, "the remote task: {remote:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_remote_agent_going_down_fails_the_run_as_unavailable() {
    let mut echo = SdkEcho::start().await;
    let front = front(&agent_file(&echo.base, "")).await;
    let client = front.client().await;
    let task =
        task_of(client.send_message(request(r#"{"seconds": 60}"#, "peer.echo", true)).await.expect("SendMessage"));
    wait_for(&client, &task.id, |task| task.status.state == TaskState::Working).await;
    echo.kill().await;
    let killed = tokio::time::Instant::now();
    let failed = wait_for(&client, &task.id, |task| task.status.state.is_terminal()).await;
    assert_eq!(failed.status.state, TaskState::Failed, "{failed:?}");
    let text = status_text(&failed);
    assert!(text.starts_with("backend_unavailable: "), "{text}");
    assert!(text.contains("'peer'") && !text.contains("127.0.0.1"), "names the agent, not its URL: {text}");
    // Within the stream's few reconnections, not after the task's 60 s.
    assert!(killed.elapsed() < Duration::from_secs(10), "{:?}", killed.elapsed());

    // A new run fails at once too.
    let task = task_of(client.send_message(request("again", "peer.echo", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(status_text(&task).starts_with("backend_unavailable: "), "{}", status_text(&task));
    // Its status says it is down, and why, and counts both runs as failed for its sake.
    let status = front.built.a2a_agents[0].status();
    assert_eq!((status.up, status.calls, status.failures, status.reconnects), (false, 2, 2, 0), "{status:?}");
    assert!(status.last_error.as_deref().is_some_and(|error| error.contains("refused")), "{status:?}");

    // Back on the same port, the next run reaches it, and the status says it came back.
    let port = url::Url::parse(&echo.base).expect("url").port().expect("port");
    let _back = SdkEcho::start_on(port).await;
    let task = task_of(client.send_message(request("back", "peer.echo", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let status = front.built.a2a_agents[0].status();
    assert_eq!((status.up, status.calls, status.failures, status.reconnects), (true, 3, 2, 1), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_agent_stops_the_start_with_one_line() {
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let url = format!("http://user:pw@127.0.0.1:{port}/agent?key=s3cret");
    let error = build(&agent_file(&url, "")).await.expect_err("unreachable");
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.starts_with(&format!(
            "front.toml: a2a[0]: remote A2A agent 'peer' at http://127.0.0.1:{port}/agent: unreachable: "
        )),
        "{error}"
    );
    for secret in ["pw", "s3cret", "peer-secret"] {
        assert!(!error.contains(secret), "{error}");
    }
}

// ---- against a small A2A peer of the test's own ----------------------------------------------

/// What the peer received: each JSON-RPC request's headers and body.
#[derive(Clone, Default)]
struct Peer {
    base: Arc<Mutex<String>>,
    received: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    tasks: Arc<Mutex<HashMap<String, Value>>>,
}

/// A JSON-RPC A2A 1.0 peer without streaming: skill `size` asks "What size?" and completes with
/// the answer; skill `bad` answers something that is not A2A.
async fn peer() -> (TestServer, Peer) {
    let peer = Peer::default();
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", get(card))
        .route("/rpc", post(rpc))
        .with_state(peer.clone());
    let server = TestServer::start(app).await;
    *peer.base.lock().expect("lock") = server.origin.clone();
    (server, peer)
}

async fn card(State(peer): State<Peer>) -> Json<Value> {
    let base = peer.base.lock().expect("lock").clone();
    Json(json!({
        "name": "peer", "description": "A test peer", "version": "2.4.0",
        "provider": {"organization": "Peer Works", "url": "https://peer.example"},
        "supportedInterfaces": [{"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [
            {"id": "size", "name": "Size", "description": "Sells a shirt of the size asked", "tags": ["shop"],
             "examples": ["a shirt"], "inputModes": ["text/plain"], "outputModes": ["text/plain", "application/json"]},
            {"id": "bad", "name": "Bad", "description": "Answers nonsense", "tags": ["broken"]},
            {"id": "greet", "name": "Greet", "description": "Answers with a message", "tags": ["chat"]},
            {"id": "refuse", "name": "Refuse", "description": "Rejects every request", "tags": ["broken"]},
            {"id": "broken", "name": "Broken", "description": "Fails every task", "tags": ["broken"]},
            {"id": "login", "name": "Login", "description": "Needs the caller signed in", "tags": ["shop"]},
            {"id": "odd", "name": "Odd", "description": "Answers a state A2A does not have", "tags": ["broken"]},
            {"id": "astray", "name": "Astray", "description": "Reports on another task", "tags": ["broken"]},
        ],
    }))
}

async fn rpc(State(peer): State<Peer>, headers: HeaderMap, Json(body): Json<Value>) -> Json<Value> {
    peer.received.lock().expect("lock").push((headers, body.clone()));
    let id = body["id"].clone();
    let params = &body["params"];
    let result = match body["method"].as_str() {
        Some("SendMessage") => {
            let message = &params["message"];
            let text = message["parts"][0]["text"].as_str().unwrap_or_default().to_owned();
            if message["metadata"]["skillId"] == "bad" {
                return Json(json!({"jsonrpc": "2.0", "id": id, "result": {"nonsense": true}}));
            }
            // `odd` answers a state A2A does not have; `astray` starts remote-3, whose reads
            // report on another task.
            if message["metadata"]["skillId"] == "odd" {
                let task = json!({"id": "remote-4", "contextId": "c", "status": {"state": "TASK_STATE_DANCING"}});
                return Json(json!({"jsonrpc": "2.0", "id": id, "result": {"task": task}}));
            }
            if message["metadata"]["skillId"] == "astray" {
                let task = json!({"id": "remote-3", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}});
                return Json(json!({"jsonrpc": "2.0", "id": id, "result": {"task": task}}));
            }
            // `greet` answers with a message, no task.
            if message["metadata"]["skillId"] == "greet" {
                let reply =
                    json!({"messageId": "reply-1", "role": "ROLE_AGENT", "parts": [{"text": format!("hi, {text}")}]});
                return Json(json!({"jsonrpc": "2.0", "id": id, "result": {"message": reply}}));
            }
            // `refuse` and `broken` end at once: rejected, failed, each with the agent's words.
            let ended = match message["metadata"]["skillId"].as_str() {
                Some("refuse") => Some(("TASK_STATE_REJECTED", "no shirts for you")),
                Some("broken") => Some(("TASK_STATE_FAILED", "out of cloth")),
                Some("login") => Some(("TASK_STATE_AUTH_REQUIRED", "sign in to the shop first")),
                _ => None,
            };
            if let Some((state, words)) = ended {
                let task = json!({"id": "remote-2", "contextId": "remote-ctx-2", "status": {"state": state,
                    "message": {"messageId": "end-2", "role": "ROLE_AGENT", "parts": [{"text": words}]}}});
                return Json(json!({"jsonrpc": "2.0", "id": id, "result": {"task": task}}));
            }
            if let Some(task_id) = message["taskId"].as_str()
                && !peer.tasks.lock().expect("lock").contains_key(task_id)
            {
                let error = json!({"code": -32001, "message": "task not found"});
                return Json(json!({"jsonrpc": "2.0", "id": id, "error": error}));
            }
            let task = match message["taskId"].as_str() {
                None => json!({
                    "id": "remote-1", "contextId": "remote-ctx",
                    "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {
                        "messageId": "ask-1", "role": "ROLE_AGENT", "parts": [{"text": "What size?"}]}},
                }),
                Some(task_id) => json!({
                    "id": task_id, "contextId": message["contextId"],
                    "status": {"state": "TASK_STATE_WORKING"},
                    "artifacts": [{"artifactId": "order", "parts": [{"text": format!("one shirt, size {text}")}]}],
                }),
            };
            peer.tasks.lock().expect("lock").insert(task["id"].as_str().unwrap_or_default().to_owned(), task.clone());
            json!({"task": task})
        }
        Some("GetTask") => {
            let id_asked = params["id"].as_str().unwrap_or_default();
            if id_asked == "remote-3" {
                let other = json!({"id": "remote-9", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}});
                return Json(json!({"jsonrpc": "2.0", "id": id, "result": other}));
            }
            let mut tasks = peer.tasks.lock().expect("lock");
            let Some(task) = tasks.get_mut(id_asked) else {
                return Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32001, "message": "no such task"}}));
            };
            // A working task completes on its next read.
            if task["status"]["state"] == "TASK_STATE_WORKING" {
                task["status"] = json!({"state": "TASK_STATE_COMPLETED"});
            }
            task.clone()
        }
        Some("CancelTask") => {
            let id_asked = params["id"].as_str().unwrap_or_default();
            let mut tasks = peer.tasks.lock().expect("lock");
            let Some(task) = tasks.get_mut(id_asked) else {
                return Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32001, "message": "no such task"}}));
            };
            task["status"] = json!({"state": "TASK_STATE_CANCELED"});
            task.clone()
        }
        _ => return Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}})),
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

#[tokio::test(flavor = "multi_thread")]
async fn input_required_pauses_the_task_and_the_follow_up_reaches_the_remote_task() {
    let (server, peer) = peer().await;
    let front = front(&agent_file(&server.origin, "skills = [\"size\"]")).await;
    assert_eq!(front.built.tool_keys, ["peer.size"], "only the skills named");
    let client = front.client().await;
    let skill = &client.card().skills[0];
    assert_eq!((skill.id.as_str(), skill.name.as_str()), ("peer.size", "Size"));
    assert_eq!(skill.examples, ["a shirt"]);
    assert_eq!(skill.input_modes, ["text/plain"]);
    assert_eq!(skill.output_modes, ["text/plain", "application/json"]);
    let task = task_of(client.send_message(request("a shirt", "peer.size", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::InputRequired, "{task:?}");
    assert_eq!(status_text(&task), "What size?");

    let mut answer = user_text_message("XL");
    answer.task_id = Some(task.id.clone());
    answer.context_id = task.context_id.clone();
    let follow_up = SendMessageRequest { tenant: None, message: answer, configuration: None, metadata: None };
    let done = task_of(client.send_message(follow_up).await.expect("the follow-up"));
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(artifact_texts(&done).get("order").map(String::as_str), Some("one shirt, size XL"));

    let received = peer.received.lock().expect("lock").clone();
    let sends: Vec<&Value> =
        received.iter().map(|(_, body)| body).filter(|body| body["method"] == "SendMessage").collect();
    assert_eq!(sends.len(), 2, "{sends:?}");
    // The caller's message as it is, the remote skill named, a new remote task first…
    assert_eq!(sends[0]["params"]["message"]["parts"][0]["text"], "a shirt");
    assert_eq!(sends[0]["params"]["message"]["metadata"]["skillId"], "size");
    assert!(sends[0]["params"]["message"].get("taskId").is_none(), "{:?}", sends[0]);
    // …then the follow-up to the remote task, in its context.
    assert_eq!(sends[1]["params"]["message"]["parts"][0]["text"], "XL");
    assert_eq!(sends[1]["params"]["message"]["taskId"], "remote-1");
    assert_eq!(sends[1]["params"]["message"]["contextId"], "remote-ctx");
    // The configured header reaches the peer; the caller's credentials never do.
    for (headers, body) in &received {
        assert_eq!(headers.get("x-peer-key").and_then(|value| value.to_str().ok()), Some("peer-secret"));
        let all = format!("{headers:?} {body}");
        assert!(!all.contains("caller-secret"), "the caller's token was forwarded: {all}");
    }
}

/// A task of the peer's `size` skill, in front of the peer: waiting for input ("What size?").
struct Waiting {
    _server: TestServer,
    peer: Peer,
    front: Front,
    client: A2aClient,
    task: Task,
}

async fn waiting() -> Waiting {
    let (server, peer) = peer().await;
    let front = front(&agent_file(&server.origin, "skills = [\"size\"]")).await;
    let client = front.client().await;
    let task = task_of(client.send_message(request("a shirt", "peer.size", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::InputRequired, "{task:?}");
    Waiting { _server: server, peer, front, client, task }
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_task_that_waits_for_input_cancels_its_remote_task() {
    let Waiting { _server, peer, front, client, task } = waiting().await;
    // No run is in progress: the engine tells the skill, which cancels the remote task it saved.
    let cancelled = client.cancel_task(&task.id).await.expect("CancelTask");
    assert_eq!(cancelled.status.state, TaskState::Canceled);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let state = peer.tasks.lock().expect("lock").get("remote-1").map(|task| task["status"]["state"].clone());
        if state == Some(json!("TASK_STATE_CANCELED")) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the remote task was not cancelled: {state:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let received = peer.received.lock().expect("lock").clone();
    let cancels: Vec<&Value> =
        received.iter().map(|(_, body)| body).filter(|body| body["method"] == "CancelTask").collect();
    assert_eq!(cancels.len(), 1, "{cancels:?}");
    assert_eq!(cancels[0]["params"]["id"], "remote-1");
    // A task that ended is not cancelled again, and nothing more reaches the remote agent.
    assert!(client.cancel_task(&task.id).await.is_err());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = peer.received.lock().expect("lock").iter().filter(|(_, body)| body["method"] == "CancelTask").count();
    assert_eq!(after, 1);
    // The status of the remote agent counts the run, without a failure.
    let status = front.built.a2a_agents[0].status();
    assert_eq!((status.name.as_str(), status.up, status.calls, status.failures), ("peer", true, 1, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_of_one_remote_agent_and_no_name_fronts_it_as_a_whole() {
    let (server, _peer) = peer().await;
    // No [agent] at all: the remote card's name, description, version, provider and skills.
    let only = format!("[[a2a]]\nurl = \"{}\"\nskills = [\"size\", \"greet\"]\n", server.origin);
    let file = AgentFile::parse(&only, "front.toml", ".").expect("a file of one [[a2a]] alone");
    assert!(file.fronts_remote_agent());
    let whole = front(&only).await;
    let card = whole.client().await.card().clone();
    assert_eq!(
        (card.name.as_str(), card.description.as_str(), card.version.as_str()),
        ("peer", "A test peer", "2.4.0")
    );
    let provider = card.provider.expect("the remote provider");
    assert_eq!((provider.organization.as_str(), provider.url.as_str()), ("Peer Works", "https://peer.example"));
    let skills: Vec<&str> = card.skills.iter().map(|skill| skill.id.as_str()).collect();
    assert_eq!(skills, ["size", "greet"]);
    // What [agent] sets stays the file's.
    let ours = format!("[agent]\ndescription = \"Our front\"\nversion = \"9\"\n\n{only}");
    let ours = front(&ours).await;
    let card = ours.client().await.card().clone();
    assert_eq!((card.name.as_str(), card.description.as_str(), card.version.as_str()), ("peer", "Our front", "9"));
    let named = format!("[agent]\nname = \"shop\"\n\n{only}");
    assert!(!AgentFile::parse(&named, "front.toml", ".").expect("named").fronts_remote_agent());
    let named_front = front(&named).await;
    let card = named_front.client().await.card().clone();
    assert_eq!((card.name.as_str(), card.description.as_str()), ("shop", "shop"), "a named file is its own agent");
    // Two remote agents, or one beside skills of the file's own: the file names the agent.
    let two = format!("{only}\n[[a2a]]\nurl = \"{}\"\nprefix = \"b.\"\n", server.origin);
    let error = AgentFile::parse(&format!("[agent]\n{two}"), "front.toml", ".").expect_err("no name").to_string();
    assert!(error.contains("agent.name: missing"), "{error}");
    let error = AgentFile::parse(&two, "front.toml", ".").expect_err("no agent").to_string();
    assert!(error.contains("agent: missing"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_task_the_remote_agent_lost_fails_the_run_retryably() {
    let Waiting { _server, peer, front: _front, client, task } = waiting().await;
    // The remote agent restarts and forgets its tasks (as the SDKs' in-memory stores do).
    peer.tasks.lock().expect("lock").clear();
    let mut answer = user_text_message("XL");
    answer.task_id = Some(task.id.clone());
    let follow_up = SendMessageRequest { tenant: None, message: answer, configuration: None, metadata: None };
    let failed = task_of(client.send_message(follow_up).await.expect("the follow-up"));
    assert_eq!(failed.status.state, TaskState::Failed, "{failed:?}");
    let text = status_text(&failed);
    assert!(
        text.starts_with("backend_task_lost: remote A2A agent 'peer' no longer knows the task (did it restart?)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follow_up_after_a_restart_reaches_the_same_remote_task() {
    let (server, peer) = peer().await;
    let store = Arc::new(MemoryStore::default());
    let toml = agent_file(&server.origin, "skills = [\"size\"]");
    let first = front_on(&toml, Arc::clone(&store)).await;
    let task =
        task_of(first.client().await.send_message(request("a shirt", "peer.size", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::InputRequired, "{task:?}");
    drop(first);

    // Another Accord on the same store, with a new client of the remote agent: the remote task
    // comes from what the first run saved with the task.
    let second = front_on(&toml, store).await;
    let mut answer = user_text_message("M");
    answer.task_id = Some(task.id.clone());
    let follow_up = SendMessageRequest { tenant: None, message: answer, configuration: None, metadata: None };
    let done = task_of(second.client().await.send_message(follow_up).await.expect("the follow-up"));
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(artifact_texts(&done).get("order").map(String::as_str), Some("one shirt, size M"));
    let received = peer.received.lock().expect("lock").clone();
    let last = received.iter().rev().map(|(_, body)| body).find(|body| body["method"] == "SendMessage");
    assert_eq!(last.map(|body| body["params"]["message"]["taskId"].clone()), Some(json!("remote-1")));
    // The saved state is the engine's, never the caller's: the task shows no trace of it.
    let shown = serde_json::to_string(&done).expect("json");
    assert!(!shown.contains("remoteTask") && !shown.contains("remote-1"), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_s_tasks_of_one_context_share_one_remote_context() {
    let (server, peer) = peer().await;
    let front = front(&agent_file(&server.origin, "")).await;
    let client = front.client().await;
    for (text, context) in [("one", "conversation-1"), ("two", "conversation-1"), ("three", "conversation-2")] {
        let mut message = user_text_message(text);
        message.context_id = Some(context.to_owned());
        message.metadata = Some(serde_json::from_value(json!({"skillId": "peer.greet"})).expect("metadata"));
        let request = SendMessageRequest { tenant: None, message, configuration: None, metadata: None };
        client.send_message(request).await.expect("SendMessage");
    }
    let received = peer.received.lock().expect("lock").clone();
    let contexts: Vec<String> = received
        .iter()
        .map(|(_, body)| body)
        .filter(|body| body["method"] == "SendMessage")
        .map(|body| body["params"]["message"]["contextId"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(contexts.len(), 3, "{contexts:?}");
    assert_eq!(contexts[0], contexts[1], "one conversation, one remote context");
    assert_ne!(contexts[0], contexts[2], "another conversation, another remote context");
    for context in &contexts {
        assert_eq!(context.len(), 36, "a UUID: {context}");
        assert!(!context.contains("conversation"), "Accord's context id stays in Accord: {context}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_rejection_failure_and_auth_request_reach_the_caller() {
    let (server, _peer) = peer().await;
    let front = front(&agent_file(&server.origin, "")).await;
    let client = front.client().await;
    let task = task_of(client.send_message(request("XXL", "peer.refuse", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::Rejected, "{task:?}");
    assert_eq!(status_text(&task), "rejected: no shirts for you");
    let task = task_of(client.send_message(request("XL", "peer.broken", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    assert_eq!(status_text(&task), "backend_error: remote A2A agent 'peer' failed the task: out of cloth");
    let task = task_of(client.send_message(request("XL", "peer.login", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::AuthRequired, "the task pauses: {task:?}");
    assert_eq!(status_text(&task), "sign in to the shop first");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_message_instead_of_a_task_is_a_direct_reply() {
    let (server, _peer) = peer().await;
    let front = front(&agent_file(&server.origin, "")).await;
    let client = front.client().await;
    match client.send_message(request("Ann", "peer.greet", false)).await.expect("SendMessage") {
        SendMessageResponse::Message(reply) => {
            assert_eq!(reply.parts[0].as_text(), Some("hi, Ann"), "{reply:?}");
        }
        SendMessageResponse::Task(task) => panic!("expected the remote agent's message, got {task:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_that_is_not_a2a_fails_the_run_as_an_invalid_answer() {
    let (server, _peer) = peer().await;
    let front = front(&agent_file(&server.origin, "")).await;
    let client = front.client().await;
    let task = task_of(client.send_message(request("anything", "peer.bad", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    let text = status_text(&task);
    assert!(
        text.starts_with("backend_invalid_answer: remote A2A agent 'peer' answered something that is not A2A"),
        "{text}"
    );
    // A failure for the remote agent's sake, which answered all the same: up, one failure.
    let status = front.built.a2a_agents[0].status();
    assert_eq!((status.up, status.calls, status.failures), (true, 1, 1), "{status:?}");
    // A remote task that fails is the remote agent's own answer, not a failure of it.
    let task = task_of(client.send_message(request("XL", "peer.broken", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    let status = front.built.a2a_agents[0].status();
    assert_eq!((status.calls, status.failures), (2, 1), "{status:?}");
    // A state A2A does not have, and a read that reports on another task: invalid answers too,
    // and the server goes on serving.
    let task = task_of(client.send_message(request("x", "peer.odd", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    let text = status_text(&task);
    assert!(
        text.starts_with("backend_invalid_answer: remote A2A agent 'peer' answered something that is not A2A"),
        "{text}"
    );
    let task = task_of(client.send_message(request("x", "peer.astray", false)).await.expect("SendMessage"));
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    let text = status_text(&task);
    assert_eq!(
        text,
        "backend_invalid_answer: remote A2A agent 'peer' sent an event of another task than the one it started"
    );
    let status = front.built.a2a_agents[0].status();
    assert_eq!((status.up, status.calls, status.failures), (true, 4, 3), "{status:?}");
}

// ---- reading `[[a2a]]` --------------------------------------------------------------------------

#[test]
fn a_bad_a2a_entry_is_named_before_anything_is_reached() {
    let text = r#"
[agent]
name = "front"

[[a2a]]
prefix = "-x"

[[a2a]]
url = "ftp://peer.example/"
binding = ["JSONRPC", "SOAP"]
timeout = 0
skills = "echo"
header = { A = "b" }
"#;
    let errors = AgentFile::parse(text, "front.toml", ".").expect_err("bad entries").to_string();
    let expected = [
        "front.toml: a2a[0]: no agent: give `url` (the remote agent's base URL or its card's URL)",
        "front.toml: a2a[0].prefix: must be characters of [A-Za-z0-9._-], starting with a letter or digit, and shorter than 128 (each remote skill's key is the prefix followed by the skill's id)",
        "front.toml: a2a[1].url: not an http:// or https:// URL with a host",
        "front.toml: a2a[1].skills: expected an array of strings, found a string",
        "front.toml: a2a[1].binding: \"SOAP\" is not a binding Accord speaks (JSONRPC, HTTP+JSON or GRPC)",
        "front.toml: a2a[1].timeout: expected a positive number of seconds",
        "front.toml: a2a[1].header: unknown key (known here: url, headers, prefix, skills, binding, name, timeout, price, scope, safe_to_repeat)",
    ];
    let lines: Vec<&str> = errors.lines().collect();
    for want in expected {
        assert!(lines.contains(&want), "missing {want:?} in:\n{errors}");
    }
    assert_eq!(lines.len(), expected.len(), "{errors}");

    // A file of remote agents alone is an agent; it is built by `build`, which reaches them.
    let only = "[agent]\nname = \"front\"\n[[a2a]]\nurl = \"http://127.0.0.1:9/\"\n";
    let file = AgentFile::parse(only, "front.toml", ".").expect("a file of [[a2a]] alone");
    let secret = "[agent]\nname = \"front\"\n[[a2a]]\nurl = \"http://u:pw@127.0.0.1:9/?k=s3cret\"\nheaders = { Authorization = \"Bearer t0ken\" }\n";
    let shown = format!("{:?}", AgentFile::parse(secret, "front.toml", ".").expect("parsed"));
    for hidden in ["pw", "s3cret", "t0ken"] {
        assert!(!shown.contains(hidden), "{shown}");
    }
    assert!(shown.contains("authorization"), "headers show by name: {shown}");
    let error = file.build_agent().expect_err("needs build").to_string();
    assert_eq!(error, "front.toml: a2a: remote A2A agents are reached by AgentFile::build (async)");
}

// ---- against the official Python SDK (a2a-sdk 1.3.0) ---------------------------------------------

/// The Python SDK's echo agent (`scripts/interop/a2a_python_server.py`) on a free port, with a
/// pause of `pause_ms` before each step of a task and gRPC listed on its card; killed when
/// dropped. Its venv is the one `scripts/interop-a2a-peers` installs into `target/interop/venv`.
struct PythonPeer {
    _child: Child,
    base: String,
}

impl PythonPeer {
    async fn start(pause_ms: u64) -> Self {
        let exe = std::env::current_exe().expect("the test binary's path");
        // target/<profile>/deps/<test> → target/interop/venv
        let target = exe.ancestors().nth(3).expect("the target directory");
        let python = target.join("interop/venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/interop-a2a-peers once to install a2a-sdk and uvicorn",
            python.display()
        );
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/a2a_python_server.py");
        let mut child = Command::new(python)
            .arg(script)
            .env("A2A_PEER_PAUSE_MS", pause_ms.to_string())
            .env("A2A_PEER_GRPC", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the Python peer starts");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the Python peer says where it listens")
            .expect("stdout")
            .expect("a line");
        let base = line.strip_prefix("a2a-python-peer listening on ").expect("the listening line").trim().to_owned();
        Self { _child: child, base }
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the official Python a2a-sdk: scripts/interop-a2a-peers installs it into target/interop/venv"]
async fn the_official_python_sdk_agent_is_fronted_on_every_binding_and_cancelled() {
    let peer = PythonPeer::start(50).await;
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let front = front(&agent_file(&peer.base, &format!("binding = \"{binding}\""))).await;
        assert_eq!(front.built.a2a_agents[0].interface(), format!("{binding}@1.0"));
        assert_eq!(front.built.tool_keys, ["peer.echo"]);
        let client = front.client().await;
        let task = task_of(client.send_message(request("hello", "peer.echo", false)).await.expect("SendMessage"));
        assert_eq!(task.status.state, TaskState::Completed, "over {binding}: {task:?}");
        let texts: Vec<String> = artifact_texts(&task).into_values().collect();
        assert_eq!(texts, ["echo: hello"], "over {binding}: {task:?}");
    }

    // Two tasks of one conversation are two tasks of one context at the Python agent.
    let conversation = front(&agent_file(&peer.base, "")).await;
    let client = conversation.client().await;
    let remote_client = A2aClient::from_card_url(&peer.base, A2aClientOptions::default()).await.expect("client");
    let before: Vec<String> = remote_client
        .list_tasks(ListTasksRequest::default())
        .await
        .expect("ListTasks")
        .tasks
        .into_iter()
        .map(|task| task.id)
        .collect();
    for text in ["first", "second"] {
        let mut request = request(text, "peer.echo", false);
        request.message.context_id = Some("one-conversation".into());
        let task = task_of(client.send_message(request).await.expect("SendMessage"));
        assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    }
    let listed = remote_client.list_tasks(ListTasksRequest::default()).await.expect("ListTasks").tasks;
    let new: Vec<_> = listed.iter().filter(|task| !before.contains(&task.id)).collect();
    assert_eq!(new.len(), 2, "{listed:?}");
    assert_eq!(new[0].context_id, new[1].context_id, "{new:?}");
    let shared = new[0].context_id.clone();
    assert!(listed.iter().filter(|task| task.context_id == shared).count() == 2, "{listed:?}");

    // A cancel reaches the Python agent's task (each step waits 3 s there).
    let slow = PythonPeer::start(3000).await;
    let front = front(&agent_file(&slow.base, "")).await;
    let client = front.client().await;
    let task = task_of(client.send_message(request("slowly", "peer.echo", true)).await.expect("SendMessage"));
    let remote_client = A2aClient::from_card_url(&slow.base, A2aClientOptions::default()).await.expect("client");
    let remote = {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let listed = remote_client.list_tasks(ListTasksRequest::default()).await.expect("ListTasks");
            if let Some(remote) = listed.tasks.into_iter().next() {
                break remote;
            }
            assert!(tokio::time::Instant::now() < deadline, "no remote task");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let cancelled = client.cancel_task(&task.id).await.expect("CancelTask");
    assert_eq!(cancelled.status.state, TaskState::Canceled);
    let remote = wait_for(&remote_client, &remote.id, |task| task.status.state.is_terminal()).await;
    assert_eq!(remote.status.state, TaskState::Canceled, "the Python agent's task: {remote:?}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the official Python a2a-sdk 0.3: scripts/interop-a2a-03 installs it into target/interop-03/venv"]
async fn an_a2a_0_3_agent_of_the_official_python_sdk_is_fronted_in_its_dialect() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = exe.ancestors().nth(3).expect("the target directory");
    let python = target.join("interop-03/venv/bin/python");
    assert!(python.exists(), "{} is missing: run scripts/interop-a2a-03 once to install a2a-sdk 0.3", python.display());
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/a2a03_python_server.py");
    let mut child = Command::new(python)
        .args([script.as_os_str(), "0".as_ref()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the 0.3 peer starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the 0.3 peer says where it listens")
        .expect("stdout")
        .expect("a line");
    let base = line.strip_prefix("a2a03-python-peer listening on ").expect("the listening line").trim().to_owned();
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let front = front(&agent_file(&base, &format!("binding = \"{binding}\""))).await;
        assert_eq!(front.built.a2a_agents[0].interface(), format!("{binding}@0.3"));
        let client = front.client().await;
        let task = task_of(client.send_message(request("hello", "peer.echo", false)).await.expect("SendMessage"));
        assert_eq!(task.status.state, TaskState::Completed, "over {binding}: {task:?}");
        let texts: Vec<String> = artifact_texts(&task).into_values().collect();
        assert_eq!(texts, ["echo: hello"], "over {binding}: {task:?}");
    }
}
