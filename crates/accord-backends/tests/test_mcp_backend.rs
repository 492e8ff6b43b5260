//! The MCP backend against a real MCP server process on stdio (`tests/data/mcp_tools.py`), through
//! the official Rust MCP SDK: its tools become skills with their schemas; results, structured
//! results, progress and tool errors map onto runs; a cancelled run cancels the call on the
//! server; and a bad tool, a missing tool or a server that does not start stops the build with
//! its reason.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use accord_backends::AgentFile;
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
        "[[mcp]]\ncommand = {{ argv = [\"python3\", {:?}], env = [\"MCP_BAD_TOOL\", \"MCP_CANCELLED_FILE\"] }}\n{options}",
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
async fn progress_notifications_are_deltas_of_a_stream() {
    let (agent, _) = build(&stdio(""), &[]).await.expect("agent");
    let valid = agent.skill("slow").expect("slow").validate_input(json!({"seconds": 0.3})).expect("valid");
    let frames: Vec<_> = agent.stream(valid).expect("stream").collect().await;
    let deltas: Vec<String> = frames
        .iter()
        .filter_map(|frame| match &frame.event {
            RunEvent::Delta { delta, .. } => Some(delta.clone()),
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

#[tokio::test]
async fn a_cancelled_run_cancels_the_call_on_the_server() {
    let dir = tempfile::tempdir().expect("dir");
    let marker = dir.path().join("cancelled.jsonl");
    let extra = [("MCP_CANCELLED_FILE", marker.display().to_string())];
    let (agent, _) = build(&stdio(""), &extra).await.expect("agent");
    let valid = agent.skill("slow").expect("slow").validate_input(json!({"seconds": 30})).expect("valid");
    let mut stream = agent.stream(valid).expect("stream");
    // Wait for the first progress, then drop the stream: the run is cancelled.
    while let Some(frame) = stream.next().await {
        if matches!(frame.event, RunEvent::Delta { .. }) {
            break;
        }
    }
    drop(stream);
    let mut seen = String::new();
    for _ in 0..100 {
        seen = std::fs::read_to_string(&marker).unwrap_or_default();
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let notice: Value = serde_json::from_str(seen.lines().next().expect("a cancellation")).expect("json");
    assert_eq!(notice["reason"], "the task was cancelled", "{notice}");
    assert!(notice["requestId"].is_number() || notice["requestId"].is_string(), "{notice}");
    // The session goes on serving.
    assert_eq!(invoke(&agent, "add", json!({"a": 1, "b": 1})).await.expect("sum"), json!({"sum": 2}));
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
    let bad = build(&stdio(""), &[("MCP_BAD_TOOL", "1".into())]).await.expect_err("bad tool name");
    assert!(bad.contains("mcp-test.toml: mcp[0]: tool \"bad name!\" gives the skill key"), "{bad}");
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
    assert!(dead.expect_err("dead server").contains("mcp[0]: the MCP server did not initialize"));
    let nowhere = build("[[mcp]]\nhttp = { url = \"http://127.0.0.1:9/mcp\" }\ntimeout = 2\n", &[]).await;
    assert!(nowhere.expect_err("no server").contains("mcp[0]: the MCP server at http://127.0.0.1:9/mcp"));
    let neither = build("[[mcp]]\nprefix = \"x\"\n", &[]).await.expect_err("no server");
    assert!(neither.contains("mcp[0]: no server"), "{neither}");
}
