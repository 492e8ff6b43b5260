//! The `accord` binary end to end: `accord serve` in a child process, the other commands against it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

const ACCORD: &str = env!("CARGO_BIN_EXE_accord");

/// `accord serve --port 0` in a child process, killed on drop.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(extra: &[&str]) -> Self {
        let mut child = Command::new(ACCORD)
            .args(["serve", "--port", "0"])
            .args(extra)
            .env("ACCORD_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start accord serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().expect("a line").expect("utf-8");
        let url = first.rsplit(' ').next().expect("url").to_owned();
        let card_line = lines.next().expect("a line").expect("utf-8");
        assert_eq!(card_line, format!("card: {url}.well-known/agent-card.json"));
        let rpc_line = lines.next().expect("a line").expect("utf-8");
        assert!(rpc_line.starts_with(&format!("JSON-RPC tasks: {url}a2a/tasks")), "{rpc_line}");
        // Keep reading whatever else the server prints, so its stdout never closes under it.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn accord(args: &[&str]) -> Output {
    Command::new(ACCORD).args(args).output().expect("run accord")
}

fn stdout_json(output: &Output) -> Value {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout).lines().map(|line| serde_json::from_str(line).expect("JSON line")).collect()
}

#[test]
fn serve_answers_card_invoke_and_stream() {
    let served = Served::start(&[]);
    assert!(served.url.starts_with("http://127.0.0.1:") && served.url.ends_with('/'), "{}", served.url);

    let card = stdout_json(&accord(&["card", "show", &served.url]));
    let legacy = stdout_json(&accord(&["card", "show", &format!("{}.well-known/agent.json", served.url)]));
    assert_eq!(card, legacy, "both card paths serve the same card");
    assert_eq!(card["name"], "accord-demo");
    let skills: Vec<&str> =
        card["skills"].as_array().expect("skills").iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(skills, ["echo", "summarize", "slow", "ticks"]);

    let echoed = stdout_json(&accord(&["invoke", &served.url, "echo", r#"{"text":"hi"}"#]));
    assert_eq!(echoed, json!({"text": "hi"}));

    let key = "cli-test-key-000000000001";
    let first = stdout_json(&accord(&[
        "invoke",
        &served.url,
        "echo",
        r#"{"text":"once"}"#,
        "--json",
        "--idempotency-key",
        key,
    ]));
    assert_eq!(first["status"], "succeeded");
    assert_eq!(first["output"], json!({"text": "once"}));
    let again = stdout_json(&accord(&[
        "invoke",
        &served.url,
        "echo",
        r#"{"text":"once"}"#,
        "--json",
        "--idempotency-key",
        key,
    ]));
    assert_eq!(again["run_id"], first["run_id"], "a replay returns the same run");

    let summary = stdout_json(&accord(&[
        "invoke",
        &served.url,
        "summarize",
        r#"{"text":"Rust is fast. Cats sleep a lot. Rust is safe and Rust is fast.","sentences":1}"#,
    ]));
    assert_eq!(summary, json!({"summary": "Rust is safe and Rust is fast."}));

    let streamed = accord(&["stream", &served.url, "ticks", r#"{"count":3}"#, "--json"]);
    assert!(streamed.status.success());
    let events = json_lines(&streamed);
    let kinds: Vec<&str> = events.iter().filter_map(|event| event["kind"].as_str()).collect();
    assert_eq!(kinds, ["run-start", "delta", "delta", "delta", "run-end"]);
    let sequences: Vec<u64> = events.iter().filter_map(|event| event["sequence"].as_u64()).collect();
    assert_eq!(sequences, [0, 1, 2, 3, 4]);
    assert_eq!(events[4]["output"], json!({"count": 3}));

    let human = accord(&["stream", &served.url, "ticks", r#"{"count":2}"#]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        ["[0] run-start", "[1] delta: tick 1", "[2] delta: tick 2", r#"[3] run-end: succeeded {"count":2}"#]
    );
}

#[test]
fn errors_are_clear_and_exit_non_zero() {
    let served = Served::start(&[]);

    let invalid = accord(&["invoke", &served.url, "echo", r#"{"text":5}"#]);
    assert_eq!(invalid.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&invalid.stderr);
    assert!(stderr.contains("400") && stderr.contains("invalid_input"), "{stderr}");

    let unknown = accord(&["invoke", &served.url, "nope", "{}"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("\"nope\" not found"));

    let not_streaming = accord(&["stream", &served.url, "echo", r#"{"text":"x"}"#]);
    assert_eq!(not_streaming.status.code(), Some(0), "echo streams too");
    let stream_only = accord(&["invoke", &served.url, "ticks", "{}"]);
    assert_eq!(stream_only.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&stream_only.stderr).contains("not_implemented"));

    let bad_json = accord(&["invoke", &served.url, "echo", "{text"]);
    assert_eq!(bad_json.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_json.stderr).contains("not valid JSON"));

    let bad_key = accord(&["invoke", &served.url, "echo", r#"{"text":"x"}"#, "--idempotency-key", "short"]);
    assert_eq!(bad_key.status.code(), Some(2));
}

#[test]
fn an_unreachable_agent_exits_3() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    drop(listener);
    let output = accord(&["card", "show", &url]);
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("error: fetch card"));
}

#[test]
fn a_base_path_is_kept_in_the_card_and_the_calls() {
    let served = Served::start(&["--base-path", "/agents/demo/"]);
    assert!(served.url.ends_with("/agents/demo/"), "{}", served.url);
    let card = stdout_json(&accord(&["card", "show", &served.url]));
    assert_eq!(card["url"], served.url);
    let echoed = stdout_json(&accord(&["invoke", &served.url, "echo", r#"{"text":"nested"}"#]));
    assert_eq!(echoed, json!({"text": "nested"}));
}

#[test]
fn every_command_explains_itself() {
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["card", "--help"],
        vec!["card", "show", "--help"],
        vec!["invoke", "--help"],
        vec!["stream", "--help"],
        vec!["task", "--help"],
        vec!["task", "send", "--help"],
        vec!["task", "get", "--help"],
        vec!["task", "cancel", "--help"],
        vec!["task", "watch", "--help"],
        vec!["task", "list", "--help"],
        vec!["rpc", "--help"],
        vec!["rpc", "send", "--help"],
        vec!["rpc", "get", "--help"],
        vec!["rpc", "cancel", "--help"],
    ] {
        let output = accord(&args);
        assert!(output.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("Usage:"), "{args:?}: {text}");
    }
    let serve = String::from_utf8_lossy(&accord(&["serve", "--help"]).stdout).into_owned();
    for flag in ["--host", "--port", "--base-path"] {
        assert!(serve.contains(flag), "{flag}");
    }
    assert_eq!(accord(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn task_send_wait_prints_the_completed_summary() {
    let served = Served::start(&[]);
    let text = r#"{"text":"Rust is fast. Cats sleep a lot. Rust is safe and Rust is fast.","sentences":1}"#;
    let output = accord(&["task", "send", &served.url, "summarize", text, "--wait"]);
    let task = stdout_json(&output);
    assert_eq!(task["status"], "completed");
    assert_eq!(task["result"]["output"], json!({"summary": "Rust is safe and Rust is fast."}));

    let token = "cli-task-token-0123456789";
    let sent = stdout_json(&accord(&["task", "send", &served.url, "slow", r#"{"seconds":30}"#, "--token", token]));
    assert_eq!(sent["status"], "running");
    assert_eq!(sent["accessToken"], token);
    let id = sent["taskId"].as_str().expect("taskId");
    let cancelled = stdout_json(&accord(&["task", "cancel", &served.url, id, "--token", token]));
    assert_eq!(cancelled["status"], "cancelled");
    let read = stdout_json(&accord(&["task", "get", &served.url, id, "--token", token]));
    assert_eq!(read["status"], "cancelled");
    let listed = stdout_json(&accord(&["task", "list", &served.url, "--token", token, "--status", "cancelled"]));
    assert_eq!(listed["total"], 1);
    let watched = accord(&["task", "watch", &served.url, id, "--token", token]);
    let lines = String::from_utf8_lossy(&watched.stdout).into_owned();
    assert!(lines.lines().last().is_some_and(|line| line.contains("\"cancelled\"")), "{lines}");

    let wrong = accord(&["task", "get", &served.url, id, "--token", "someone-else-0123456789"]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("task_not_found"));
    let failed = accord(&["task", "send", &served.url, "summarize", r#"{"text":5}"#]);
    assert_eq!(failed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&failed.stderr).contains("invalid_input"));
}

#[test]
fn rpc_commands_talk_to_the_json_rpc_tasks_face() {
    let token = "demo-bearer-token-0123456789";
    let served = Served::start(&["--demo-token", token]);
    let endpoint = format!("{}a2a/tasks", served.url);

    let sent = stdout_json(&accord(&["rpc", "send", &endpoint, "echo", r#"{"text":"rpc"}"#, "--allow-loopback-http"]));
    assert_eq!(sent["status"], "completed");
    assert_eq!(sent["result"]["output"], json!({"text": "rpc"}));
    let id = sent["taskId"].as_str().expect("taskId");
    let read = stdout_json(&accord(&["rpc", "get", &endpoint, id, "--allow-loopback-http"]));
    assert_eq!(read, sent);
    let late = accord(&["rpc", "cancel", &endpoint, id, "--allow-loopback-http"]);
    assert_eq!(late.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&late.stderr).contains("-32003"));

    let gated = accord(&["rpc", "send", &endpoint, "slow", r#"{"seconds":0}"#, "--allow-loopback-http"]);
    assert_eq!(gated.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gated.stderr).contains("scope 'demo:slow' required for skill 'slow'"));
    let granted = stdout_json(&accord(&[
        "rpc",
        "send",
        &endpoint,
        "slow",
        r#"{"seconds":0}"#,
        "--allow-loopback-http",
        "--bearer",
        token,
    ]));
    assert_eq!(granted["status"], "completed");

    let plain = accord(&["rpc", "send", &endpoint, "echo", r#"{"text":"x"}"#]);
    assert_eq!(plain.status.code(), Some(2), "http needs an explicit opt-in");
    assert!(String::from_utf8_lossy(&plain.stderr).contains("--allow-loopback-http"));
    let not_object = accord(&["rpc", "send", &endpoint, "echo", "[1]", "--allow-loopback-http"]);
    assert_eq!(not_object.status.code(), Some(2));
}
