//! The MCP backend against a real MCP server process on stdio (`tests/data/mcp_tools.py`), through
//! the official Rust MCP SDK: its tools become skills with their schemas; results, structured
//! results, progress and tool errors map onto runs; a cancelled run cancels the call on the
//! server, saying whether the task was cancelled or the server is stopping; and a bad tool, a
//! missing tool or a server that does not start stops the build with its reason.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use accord_backends::AgentFile;
use accord_engine::task::{AccessToken, MemoryStore, Reservation, RuntimeConfig, TaskEventKind, TaskRuntime};
use accord_engine::{Agent, RunError, RunEvent};
use futures_util::StreamExt;
use serde_json::{Value, json};

fn server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp_tools.py")
}

fn env(extra: &[(&'static str, String)]) -> HashMap<&'static str, String> {
    let mut env = HashMap::from([("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()))]);
    env.extend(extra.iter().cloned());
    env
}

/// The agent of an agent file holding `mcp` (an `[[mcp]]` entry), with `extra` variables.
async fn build(mcp: &str, extra: &[(&'static str, String)]) -> Result<(Agent, Vec<String>), String> {
    let text = format!("[agent]\nname = \"mcp-test\"\n{mcp}");
    let env = env(extra);
    let file = AgentFile::parse_with_env(&text, "mcp-test.toml", ".", &|name| env.get(name).cloned())
        .map_err(|errors| errors.to_string())?;
    file.build().await.map_err(|errors| errors.to_string())
}

fn stdio(options: &str) -> String {
    format!(
        "[[mcp]]\ncommand = {{ argv = [\"python3\", {:?}], env = [\"MCP_BAD_TOOL\", \"MCP_CANCELLED_FILE\", \"MCP_TASK_TOOL\", \"MCP_EXIT_AFTER\"] }}\n{options}",
        server().display().to_string()
    )
}

async fn invoke(agent: &Agent, skill: &str, input: Value) -> Result<Value, RunError> {
    let valid = agent.skill(skill).expect("skill").validate_input(input).expect("valid input");
    agent.invoke(valid).await.map(|invocation| invocation.completion.output)
}

#[tokio::test]
async fn every_tool_is_a_skill_with_its_schema_and_its_answer_is_the_output() {
    let (agent, tools) = build(&stdio("prefix = \"t.\"\n"), &[]).await.expect("agent");
    assert_eq!(tools, ["t.add", "t.echo", "t.slow", "t.fail"]);
    let add = agent.skill("t.add").expect("add");
    assert_eq!(add.description(), Some("Adds two numbers"));
    // The tool's inputSchema is the skill's: a bad input never reaches the server.
    assert!(add.validate_input(json!({"a": 1})).is_err());
    // Structured content is the output; text content is {"text": ...}.
    assert_eq!(invoke(&agent, "t.add", json!({"a": 2, "b": 3})).await.expect("sum"), json!({"sum": 5}));
    assert_eq!(invoke(&agent, "t.echo", json!({"text": "hello"})).await.expect("echo"), json!({"text": "hello"}));
    // Runs share one session: several at once.
    let runs = (0..5).map(|n| invoke(&agent, "t.add", json!({"a": n, "b": 1})));
    let sums: Vec<Value> = futures_util::future::join_all(runs).await.into_iter().map(|r| r.expect("sum")).collect();
    assert_eq!(sums, (0..5).map(|n| json!({"sum": n + 1})).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_tool_error_fails_the_run_with_its_text() {
    let (agent, _) = build(&stdio(""), &[]).await.expect("agent");
    match invoke(&agent, "fail", json!({})).await {
        Err(RunError::Failed(error)) => {
            assert_eq!(error.code, "tool_error");
            assert!(error.message.contains("the tool failed on purpose"), "{error:?}");
        }
        other => panic!("expected a failed run, got {other:?}"),
    }
}

#[tokio::test]
async fn progress_notifications_are_working_updates_with_their_words() {
    let (agent, _) = build(&stdio(""), &[]).await.expect("agent");
    let valid = agent.skill("slow").expect("slow").validate_input(json!({"seconds": 0.3})).expect("valid");
    let frames: Vec<_> = agent.stream(valid).expect("stream").collect().await;
    let deltas: Vec<String> = frames
        .iter()
        .filter_map(|frame| match &frame.event {
            RunEvent::Status { state: accord_engine::TaskState::Working, message: Some(message) } => {
                Some(message.text())
            }
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["step 1 of 3", "step 2 of 3", "step 3 of 3"]);
    match frames.last().map(|frame| &frame.event) {
        Some(RunEvent::End(end)) => {
            assert_eq!(end.completion.as_ref().map(|c| c.output.clone()), Some(json!({"text": "done"})))
        }
        other => panic!("expected the end, got {other:?}"),
    }
}

/// An agent on the test server, which appends each `notifications/cancelled` it receives to the
/// returned file (in the returned directory, removed when it is dropped).
async fn recording_cancellations() -> (tempfile::TempDir, PathBuf, Agent) {
    let dir = tempfile::tempdir().expect("dir");
    let marker = dir.path().join("cancelled.jsonl");
    let extra = [("MCP_CANCELLED_FILE", marker.display().to_string())];
    let (agent, _) = build(&stdio(""), &extra).await.expect("agent");
    (dir, marker, agent)
}

#[tokio::test]
async fn a_cancelled_run_cancels_the_call_on_the_server() {
    let (_dir, marker, agent) = recording_cancellations().await;
    let valid = agent.skill("slow").expect("slow").validate_input(json!({"seconds": 30})).expect("valid");
    let mut stream = agent.stream(valid).expect("stream");
    // Wait for the first progress, then drop the stream: the run is cancelled.
    while let Some(frame) = stream.next().await {
        if matches!(frame.event, RunEvent::Status { .. }) {
            break;
        }
    }
    drop(stream);
    let notice = first_cancellation(&marker).await;
    assert_eq!(notice["reason"], "the task was cancelled", "{notice}");
    assert!(notice["requestId"].is_number() || notice["requestId"].is_string(), "{notice}");
    // The session goes on serving.
    assert_eq!(invoke(&agent, "add", json!({"a": 1, "b": 1})).await.expect("sum"), json!({"sum": 2}));
}

/// The first `notifications/cancelled` the server recorded in `marker` (waiting up to 5 s for it).
async fn first_cancellation(marker: &Path) -> Value {
    let mut seen = String::new();
    for _ in 0..100 {
        seen = std::fs::read_to_string(marker).unwrap_or_default();
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    serde_json::from_str(seen.lines().next().expect("a cancellation")).expect("json")
}

#[tokio::test]
async fn a_task_stopped_by_the_server_shutting_down_tells_the_server_it_stops() {
    let (_dir, marker, agent) = recording_cancellations().await;
    let runtime = TaskRuntime::new(agent, Arc::new(MemoryStore::default()), RuntimeConfig::default());
    let owner = AccessToken::generate().owner();
    let valid = runtime.agent().skill("slow").expect("slow").validate_input(json!({"seconds": 30})).expect("valid");
    let task = runtime.start(Reservation::new(owner, valid)).await.expect("started");
    // Wait for the tool's first progress (the call is on the server), then shut the runtime down.
    let mut events = runtime.events(&task.id, &owner, 0).await.expect("events");
    let progress = async {
        while let Some(event) = events.next().await {
            if matches!(event.expect("an event").kind, TaskEventKind::Status { message: Some(_), .. }) {
                return;
            }
        }
        panic!("the task ended without progress");
    };
    tokio::time::timeout(Duration::from_secs(10), progress).await.expect("progress");
    runtime.close().await;
    let notice = first_cancellation(&marker).await;
    assert_eq!(notice["reason"], "the server is stopping", "{notice}");
}

#[tokio::test]
async fn a_timeout_fails_the_run_and_cancels_the_call() {
    let (agent, _) = build(&stdio("timeout = 0.3\n"), &[]).await.expect("agent");
    match invoke(&agent, "slow", json!({"seconds": 5})).await {
        Err(RunError::Failed(error)) => {
            assert_eq!((error.code.as_str(), error.retryable), ("backend_timeout", Some(true)))
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_tools_and_dead_servers_stop_the_build_with_their_reasons() {
    // A tool whose name is no skill key is left out (with a warning); the others are served.
    let (_, tools) = build(&stdio(""), &[("MCP_BAD_TOOL", "1".into())]).await.expect("the bad tool left out");
    assert_eq!(tools, ["add", "echo", "slow", "fail"]);
    // Named in `tools`, it is an error.
    let bad = build(&stdio("tools = [\"add\", \"bad name!\"]\n"), &[("MCP_BAD_TOOL", "1".into())])
        .await
        .expect_err("bad tool name asked for");
    assert!(bad.contains("mcp-test.toml: mcp[0].tools: tool \"bad name!\" gives the skill key"), "{bad}");
    assert!(bad.ends_with("(remove it from `tools`)"), "{bad}");
    // Leaving the bad tool out with `tools` builds.
    let (_, tools) =
        build(&stdio("tools = [\"add\", \"echo\"]\n"), &[("MCP_BAD_TOOL", "1".into())]).await.expect("only two");
    assert_eq!(tools, ["add", "echo"]);
    let missing = build(&stdio("tools = [\"add\", \"nope\"]\n"), &[]).await.expect_err("missing tool");
    assert!(missing.contains("mcp[0].tools: the server has no tool \"nope\""), "{missing}");
    let clash = format!("{}[[skill]]\nid = \"add\"\ncommand = [\"python3\", \"x.py\"]\n", stdio(""));
    let clash = build(&clash, &[]).await.expect_err("key clash");
    assert!(clash.contains("which another skill has"), "{clash}");
    let dead = build("[[mcp]]\ncommand = [\"python3\", \"-c\", \"import sys; sys.exit(3)\"]\n", &[]).await;
    assert!(dead.expect_err("dead server").contains("mcp[0]: mcp server 'mcp[0]' did not initialize"));
    let nowhere = build("[[mcp]]\nhttp = { url = \"http://127.0.0.1:9/mcp\" }\ntimeout = 2\n", &[]).await;
    assert!(nowhere.expect_err("no server").contains("mcp[0]: mcp server 'mcp[0]' at http://127.0.0.1:9/mcp"));
    let neither = build("[[mcp]]\nprefix = \"x\"\n", &[]).await.expect_err("no server");
    assert!(neither.contains("mcp[0]: no server"), "{neither}");
}

// ---- servers that fail and come back ----------------------------------------------------------

/// The Python that has the official MCP SDK (`mcp` 1.30), from `MCP_PYTHON`; `None` (and a line
/// saying why the test is skipped) when it is not set.
fn mcp_python(test: &str) -> Option<String> {
    match std::env::var("MCP_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ => {
            println!("SKIP {test}: set MCP_PYTHON to a Python with the MCP SDK (pip install mcp==1.30.0)");
            None
        }
    }
}

fn fastmcp() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp_fastmcp.py")
}

/// The agent and its MCP servers.
async fn build_servers(mcp: &str, extra: &[(&'static str, String)]) -> Result<accord_backends::BuiltAgent, String> {
    let text = format!("[agent]\nname = \"mcp-test\"\n{mcp}");
    let env = env(extra);
    let file = AgentFile::parse_with_env(&text, "mcp-test.toml", ".", &|name| env.get(name).cloned())
        .map_err(|errors| errors.to_string())?;
    file.build_with_servers().await.map_err(|errors| errors.to_string())
}

async fn invoke_completion(agent: &Agent, skill: &str, input: Value) -> Result<accord_engine::Completion, RunError> {
    let valid = agent.skill(skill).expect("skill").validate_input(input).expect("valid input");
    agent.invoke(valid).await.map(|invocation| invocation.completion)
}

fn failed_code(result: Result<Value, RunError>) -> (String, Option<bool>, String) {
    match result {
        Err(RunError::Failed(error)) => (error.code, error.retryable, error.message),
        other => panic!("expected a failed run, got {other:?}"),
    }
}

fn kill(pid: u32) {
    let status = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().expect("kill");
    assert!(status.success(), "kill -9 {pid}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// A FastMCP server on streamable HTTP on `port`, killed when dropped.
struct HttpServer(std::process::Child);

impl HttpServer {
    async fn start(python: &str, port: u16) -> Self {
        let mut child = std::process::Command::new(python)
            .arg(fastmcp())
            .args(["--http", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("python");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Self(child);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the FastMCP server did not listen on {port}");
    }

    fn stop(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Bounds a test that used to hang: failing beats waiting forever.
async fn within<T>(seconds: u64, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(seconds), future).await.unwrap_or_else(|_| panic!("{what} hung"))
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_fails_the_start_within_its_timeout() {
    for argv in ["[\"sleep\", \"3600\"]", "[\"cat\"]"] {
        let started = std::time::Instant::now();
        let mcp = format!("[[mcp]]\nname = \"mute\"\ncommand = {argv}\nstartup_timeout = 1\n");
        let error = within(20, argv, build(&mcp, &[])).await.expect_err("no answer");
        assert!(started.elapsed() < Duration::from_secs(5), "{argv}: {:?}", started.elapsed());
        assert!(error.starts_with("mcp-test.toml: mcp[0]: mcp server 'mute' "), "{argv}: {error}");
        assert_eq!(error.lines().count(), 1, "{error}");
        assert!(!error.contains("Some(") && !error.contains("Error"), "{error}");
        if argv.contains("sleep") {
            assert!(error.ends_with("did not answer initialize within 1 s"), "{error}");
        }
    }
}

#[tokio::test]
async fn an_http_url_of_a_plain_json_service_is_a_clear_error_not_a_hang() {
    let app = axum::Router::new().fallback(|| async { axum::Json(json!({"status": "ok"})) });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let started = std::time::Instant::now();
    let mcp = format!("[[mcp]]\nname = \"plain\"\nhttp = {{ url = \"{url}\" }}\nstartup_timeout = 3\n");
    let error = within(20, "a plain JSON service", build(&mcp, &[])).await.expect_err("not MCP");
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    assert_eq!(
        error,
        format!(
            "mcp-test.toml: mcp[0]: mcp server 'plain' at {url} did not initialize: the endpoint answered with something that is not an MCP (JSON-RPC) message"
        )
    );
    assert!(!error.contains("Some(") && !error.contains("Error"), "{error}");
    // Nothing listening: the cause is said.
    let port = free_port();
    let mcp = format!("[[mcp]]\nhttp = {{ url = \"http://127.0.0.1:{port}/mcp\" }}\nstartup_timeout = 3\n");
    let error = within(20, "nobody listening", build(&mcp, &[])).await.expect_err("refused");
    assert!(error.ends_with("did not initialize: connection refused"), "{error}");
}

#[tokio::test]
async fn a_killed_stdio_server_is_restarted_and_calls_succeed_again() {
    let built = within(20, "build", build_servers(&stdio("name = \"tools\"\n"), &[])).await.expect("agent");
    let (agent, server) = (&built.agent, &built.mcp_servers[0]);
    assert_eq!(invoke(agent, "add", json!({"a": 1, "b": 2})).await.expect("sum"), json!({"sum": 3}));
    let status = server.status();
    assert!(status.up && status.last_error.is_none() && status.reconnects == 0, "{status:?}");
    let first = server.pid().await.expect("a pid");
    kill(first);
    // Noticed at once, without a call.
    let mut down = server.status();
    for _ in 0..100 {
        if !down.up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        down = server.status();
    }
    assert!(!down.up, "{down:?}");
    assert_eq!(down.last_error.as_deref(), Some("the server process exited (killed by signal 9)"), "{down:?}");
    // Restarted in the background (after 0.5 s), without waiting for a call.
    let mut back = server.status();
    for _ in 0..250 {
        if back.up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        back = server.status();
    }
    assert!(back.up && back.reconnects == 1, "{back:?}");
    assert_eq!(back.last_error, down.last_error, "the last error is kept");
    let sum = within(20, "a call after the kill", invoke(agent, "add", json!({"a": 2, "b": 2}))).await;
    assert_eq!(sum.expect("sum after restart"), json!({"sum": 4}));
    let back = server.status();
    assert!(back.up && back.reconnects == 1, "{back:?}");
    assert_ne!(server.pid().await, Some(first));
    assert_eq!((back.calls, back.failures), (2, 0), "{back:?}");
}

#[tokio::test]
async fn a_call_in_flight_when_the_stdio_server_dies_fails_at_once_and_retryable() {
    let built = within(20, "build", build_servers(&stdio("timeout = 60\n"), &[])).await.expect("agent");
    let (agent, server) = (built.agent.clone(), built.mcp_servers[0].clone());
    let pid = server.pid().await.expect("a pid");
    let call = tokio::spawn(async move { invoke(&agent, "slow", json!({"seconds": 30})).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let killed = std::time::Instant::now();
    kill(pid);
    let result = within(10, "the call in flight", call).await.expect("join");
    assert!(killed.elapsed() < Duration::from_secs(3), "{:?}", killed.elapsed());
    let (code, retryable, message) = failed_code(result);
    assert_eq!((code.as_str(), retryable), ("backend_unavailable", Some(true)), "{message}");
    assert!(message.starts_with("mcp server 'mcp[0]' "), "{message}");
    assert!(message.ends_with("the server process exited (killed by signal 9)"), "{message}");
    assert_eq!(server.status().failures, 1);
}

#[tokio::test]
async fn a_streamable_http_server_restarted_on_the_same_port_is_reconnected() {
    let Some(python) = mcp_python("a_streamable_http_server_restarted_on_the_same_port_is_reconnected") else {
        return;
    };
    let port = free_port();
    let first = HttpServer::start(&python, port).await;
    let mcp = format!("[[mcp]]\nname = \"web\"\nhttp = {{ url = \"http://127.0.0.1:{port}/mcp\" }}\ntimeout = 30\n");
    let built = within(30, "build", build_servers(&mcp, &[])).await.expect("agent");
    let (agent, server) = (&built.agent, &built.mcp_servers[0]);
    assert_eq!(invoke(agent, "add", json!({"a": 1, "b": 2})).await.expect("sum"), json!({"sum": 3}));
    first.stop();
    let _second = HttpServer::start(&python, port).await;
    let sum = within(20, "the call after the restart", invoke(agent, "add", json!({"a": 2, "b": 3}))).await;
    assert_eq!(sum.expect("the next call succeeds"), json!({"sum": 5}));
    assert!(server.status().up, "{:?}", server.status());
}

#[tokio::test]
async fn a_streamable_http_server_that_dies_fails_calls_fast_in_flight_and_after() {
    let Some(python) = mcp_python("a_streamable_http_server_that_dies_fails_calls_fast_in_flight_and_after") else {
        return;
    };
    let port = free_port();
    let running = HttpServer::start(&python, port).await;
    let mcp = format!("[[mcp]]\nname = \"web\"\nhttp = {{ url = \"http://127.0.0.1:{port}/mcp\" }}\ntimeout = 60\n");
    let built = within(30, "build", build_servers(&mcp, &[])).await.expect("agent");
    let (agent, server) = (built.agent.clone(), built.mcp_servers[0].clone());
    let caller = agent.clone();
    let call = tokio::spawn(async move { invoke(&caller, "nap", json!({"seconds": 30})).await });
    tokio::time::sleep(Duration::from_millis(700)).await;
    let killed = std::time::Instant::now();
    running.stop();
    let result = within(30, "the call in flight", call).await.expect("join");
    assert!(killed.elapsed() < Duration::from_secs(5), "in flight: {:?}", killed.elapsed());
    let (code, retryable, message) = failed_code(result);
    assert_eq!((code.as_str(), retryable), ("backend_unavailable", Some(true)), "{message}");
    // Down, and nobody there: the next call fails fast too, with the cause.
    let started = std::time::Instant::now();
    let (code, _, message) =
        failed_code(within(30, "a call while down", invoke(&agent, "add", json!({"a": 1, "b": 1}))).await);
    assert!(started.elapsed() < Duration::from_secs(5), "while down: {:?}", started.elapsed());
    assert_eq!(code, "backend_unavailable", "{message}");
    assert!(message.contains("connection refused"), "{message}");
    let status = server.status();
    assert!(!status.up && status.last_error.is_some() && status.failures == 2, "{status:?}");
}

#[tokio::test]
async fn accord_introduces_itself_as_accord_with_its_version() {
    let Some(python) = mcp_python("accord_introduces_itself_as_accord_with_its_version") else { return };
    let mcp = format!("[[mcp]]\ncommand = [{python:?}, {:?}]\n", fastmcp().display().to_string());
    let built = within(30, "build", build_servers(&mcp, &[])).await.expect("agent");
    let said = invoke(&built.agent, "whoami", json!({})).await.expect("whoami");
    let info: Value = serde_json::from_str(said["text"].as_str().expect("text")).expect("json");
    assert_eq!(info, json!({"name": "accord", "version": env!("CARGO_PKG_VERSION")}));
}

#[tokio::test]
async fn an_image_from_a_tool_is_a_file_part_beside_its_text() {
    let Some(python) = mcp_python("an_image_from_a_tool_is_a_file_part_beside_its_text") else { return };
    let mcp = format!("[[mcp]]\ncommand = [{python:?}, {:?}]\n", fastmcp().display().to_string());
    let built = within(30, "build", build_servers(&mcp, &[])).await.expect("agent");
    let done = invoke_completion(&built.agent, "picture", json!({})).await.expect("picture");
    assert_eq!(done.output, json!({"text": "a picture"}));
    assert_eq!(done.artifacts.len(), 1);
    assert_eq!(done.artifacts[0].artifact_id, "content");
    assert_eq!(
        done.artifacts[0].parts,
        [accord_engine::Part::File {
            name: None,
            mime: Some("image/png".into()),
            bytes_base64: Some("iVBORw0KGgoAAAANSUhEUg==".into()),
            uri: None,
        }]
    );
}

#[tokio::test]
async fn a_tool_that_requires_mcp_tasks_is_left_out_of_the_card() {
    let extra = [("MCP_TASK_TOOL", "1".to_owned())];
    let (agent, tools) = within(20, "build", build(&stdio(""), &extra)).await.expect("agent");
    assert_eq!(tools, ["add", "echo", "slow", "fail"]);
    assert!(agent.skill("render").is_err());
    // Asked for by name, it is an error that says why.
    let named = within(20, "build", build(&stdio("tools = [\"add\", \"render\"]\n"), &extra)).await;
    let named = named.expect_err("a task tool asked for");
    assert_eq!(
        named,
        "mcp-test.toml: mcp[0].tools: tool \"render\" requires MCP tasks (execution.taskSupport \"required\"), which Accord does not support as a client (remove it from `tools`)"
    );
}

#[tokio::test]
async fn a_server_in_a_crash_loop_is_restarted_ever_more_slowly() {
    // It dies 0.2 s after each start: restarts come after 0.5 s, 1 s, 2 s, 4 s, … not every 0.5 s.
    let extra = [("MCP_EXIT_AFTER", "0.2".to_owned())];
    let built = within(20, "build", build_servers(&stdio(""), &extra)).await.expect("agent");
    let server = &built.mcp_servers[0];
    tokio::time::sleep(Duration::from_secs(6)).await;
    let status = server.status();
    // Without the backoff it would have come back 6 times or more by now (every 0.5 s + start).
    assert!((2..=3).contains(&status.reconnects), "{status:?}");
    assert_eq!(status.last_error.as_deref(), Some("the server process exited (exit code 1)"), "{status:?}");
}

// ---- tools that require MCP tasks, over streamable HTTP ---------------------------------------

/// How the test endpoint answers a request: one JSON body, or an SSE stream of one event.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Json,
    Sse,
}

/// A streamable HTTP MCP endpoint in the test, answering in `answer`'s shape. Its `tools/list`
/// has two pages: `plain` and `render` (`taskSupport: "required"`), then `maybe`
/// (`taskSupport: "optional"`); `maybe` answers `called maybe`. A request without the session id
/// it gave is refused with 400.
async fn task_tools_endpoint(answer: Answer) -> String {
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::IntoResponse;

    async fn post(answer: Answer, headers: HeaderMap, body: axum::Json<Value>) -> axum::response::Response {
        let request = body.0;
        let method = request["method"].as_str().unwrap_or_default().to_owned();
        let Some(id) = request.get("id").cloned() else { return StatusCode::ACCEPTED.into_response() };
        let session = headers.get("mcp-session-id").and_then(|value| value.to_str().ok());
        if method != "initialize" && session != Some("task-tools-session") {
            return (StatusCode::BAD_REQUEST, "no valid session id").into_response();
        }
        let tool = |name: &str, support: Option<&str>| {
            let mut tool = json!({"name": name, "description": name, "inputSchema": {"type": "object"}});
            if let Some(support) = support {
                tool["execution"] = json!({"taskSupport": support});
            }
            tool
        };
        let result = match method.as_str() {
            "initialize" => json!({
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "task-tools", "version": "1.0.0"}
            }),
            "tools/list" if request["params"]["cursor"] == "2" => json!({"tools": [tool("maybe", Some("optional"))]}),
            "tools/list" => {
                json!({"tools": [tool("plain", None), tool("render", Some("required"))], "nextCursor": "2"})
            }
            "tools/call" => {
                let text = format!("called {}", request["params"]["name"].as_str().unwrap_or_default());
                json!({"content": [{"type": "text", "text": text}]})
            }
            _ => {
                let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "unknown method"}});
                return axum::Json(error).into_response();
            }
        };
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
        let mut response = match answer {
            Answer::Json => axum::Json(message).into_response(),
            Answer::Sse => {
                ([(header::CONTENT_TYPE, "text/event-stream")], format!("event: message\ndata: {message}\n\n"))
                    .into_response()
            }
        };
        response.headers_mut().insert("mcp-session-id", "task-tools-session".parse().expect("header"));
        response
    }

    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |headers, body| post(answer, headers, body))
            .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
            .delete(|| async { StatusCode::OK }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn a_tool_that_requires_mcp_tasks_over_streamable_http_is_left_out_of_the_card() {
    for answer in [Answer::Json, Answer::Sse] {
        let url = task_tools_endpoint(answer).await;
        let mcp = format!("[[mcp]]\nname = \"web\"\nhttp = {{ url = \"{url}\" }}\n");
        let built =
            within(20, "build", build_servers(&mcp, &[])).await.unwrap_or_else(|error| panic!("{answer:?}: {error}"));
        assert_eq!(built.mcp_servers[0].tools_requiring_tasks(), ["render"], "{answer:?}");
        let agent = &built.agent;
        assert!(agent.skill("render").is_err(), "{answer:?}: a required-task tool is published");
        // A tool whose tasks are optional is an ordinary tool: published, and it answers.
        assert_eq!(invoke(agent, "maybe", json!({})).await.expect("maybe"), json!({"text": "called maybe"}));
        assert_eq!(invoke(agent, "plain", json!({})).await.expect("plain"), json!({"text": "called plain"}));
        let named = format!("{mcp}tools = [\"plain\", \"render\"]\n");
        let named = within(20, "build", build(&named, &[])).await.expect_err("a task tool asked for");
        assert!(named.contains("tool \"render\" requires MCP tasks"), "{answer:?}: {named}");
    }
}
