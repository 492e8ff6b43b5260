//! `my-agent` as a process, as an operator runs it: a SQLite store, gRPC on a port of its own,
//! `/metrics` on a private listener; driven over all three A2A bindings, killed and started
//! again on the same store (the tasks are still there), stopped with SIGTERM; and the mistakes
//! an operator can make, each refused with its message and exit code.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use accord::client::a2a::{A2aClient, A2aClientOptions, Binding, new_message_id};
use accord::types::a2a::{Message, Part, Role, SendMessageRequest, SendMessageResponse, TaskState};
use serde_json::{Value, json};

const MY_AGENT: &str = env!("CARGO_BIN_EXE_my-agent");

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("my-agent-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// `my-agent` running, killed on drop.
struct Agent {
    child: Child,
    lines: Vec<String>,
}

impl Agent {
    /// Starts `my-agent` in `dir` with `args` and reads its summary up to the line starting
    /// with `last`.
    fn start(dir: &Path, args: &[&str], last: &str) -> Self {
        let mut child = Command::new(MY_AGENT)
            .args(args)
            .current_dir(dir)
            .env("ACCORD_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start my-agent");
        let stdout = child.stdout.take().expect("stdout");
        let (send, receive) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        let mut lines = Vec::new();
        while !lines.last().is_some_and(|line: &String| line.starts_with(last)) {
            lines.push(receive.recv_timeout(Duration::from_secs(30)).expect("the summary is printed"));
        }
        Self { child, lines }
    }

    /// The rest of the line starting with `prefix`.
    fn printed(&self, prefix: &str) -> &str {
        self.lines
            .iter()
            .find_map(|line| line.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {:?}", self.lines))
    }

    /// The base URL, ending with `/`.
    fn url(&self) -> String {
        self.printed("Accord my-agent agent listening on ").to_owned()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill").args([&format!("-{name}"), &self.child.id().to_string()]).status();
        assert!(status.expect("kill").success());
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn reverse_request(text: &str) -> SendMessageRequest {
    let mut message = Message::new(new_message_id(), Role::User, vec![Part::data(json!({"text": text}))]);
    message.metadata = json!({"skillId": "reverse"}).as_object().cloned();
    SendMessageRequest { tenant: None, message, configuration: None, metadata: None }
}

async fn client(url: &str, binding: Binding) -> A2aClient {
    let client =
        A2aClient::from_card_url(url, A2aClientOptions::with_bindings([binding.as_str()])).await.expect("card");
    assert_eq!(client.binding(), binding);
    client
}

/// The output of a completed `reverse` task: its artifact's data part.
fn output_of(response: SendMessageResponse) -> (String, Value) {
    let SendMessageResponse::Task(task) = response else { panic!("a task: {response:?}") };
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let data = task.artifacts.iter().flat_map(|artifact| &artifact.parts).find_map(|part| match &part.content {
        accord::types::a2a::PartContent::Data(data) => Some(data.clone()),
        _ => None,
    });
    (task.id, data.expect("a data artifact"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_agent_serves_every_binding_on_a_durable_store_with_private_metrics() {
    let dir = scratch("bindings");
    let store = format!("sqlite://{}", dir.join("tasks.db").display());
    let args = ["--port", "0", "--store", &store, "--grpc-port", "0", "--metrics-addr", "127.0.0.1:0"];
    let agent = Agent::start(&dir, &args, "metrics: ");
    let url = agent.url();
    assert!(agent.printed("task store: ").ends_with("(durable)"), "{:?}", agent.lines);
    // The summary names the listener with its scheme; the card lists it as host:port.
    let grpc =
        agent.printed("A2A v1.0 gRPC: ").split(' ').next().expect("a URL").trim_start_matches("http://").to_owned();
    assert_ne!(grpc, url.trim_start_matches("http://").trim_end_matches('/'), "gRPC has a port of its own");

    let mut done = Vec::new();
    for (binding, text) in [(Binding::JsonRpc, "abc"), (Binding::HttpJson, "héllo"), (Binding::Grpc, "grpc")] {
        let client = client(&url, binding).await;
        if binding == Binding::Grpc {
            assert_eq!(client.interface().url, grpc, "the card lists the gRPC listener");
        }
        let (id, output) = output_of(client.send_message(reverse_request(text)).await.expect("send"));
        let reversed: String = text.chars().rev().collect();
        assert_eq!(output, json!({"reversed": reversed, "characters": text.chars().count()}), "{binding}");
        let task = client.get_task(&id, None).await.expect("get");
        assert_eq!(task.status.state, TaskState::Completed);
        // A wrong input is the caller's mistake, in the binding's own error shape.
        let mut wrong = reverse_request("x");
        wrong.message.parts = vec![Part::data(json!({"txt": 1}))];
        let refused = client.send_message(wrong).await.expect_err("refused");
        let invalid = match binding {
            Binding::HttpJson => {
                refused.to_string().contains("HTTP 400") && refused.to_string().contains("INVALID_ARGUMENT")
            }
            _ => refused.a2a_kind() == Some(accord::types::a2a::A2aErrorKind::InvalidParams),
        };
        assert!(invalid && refused.to_string().contains("is a required property"), "{binding}: {refused}");
        done.push(id);
    }

    // The private metrics listener counts every binding; the agent's own listener has no /metrics.
    let http = reqwest::Client::new();
    let metrics = http.get(agent.printed("metrics: ")).send().await.expect("metrics").text().await.expect("text");
    assert!(metrics.contains("accord_http_requests_total"), "{metrics}");
    assert!(metrics.contains("accord_grpc_calls_total{method=\"SendMessage\",code=\"OK\"}"), "{metrics}");
    let on_agent = http.get(format!("{url}metrics")).send().await.expect("answer");
    assert_eq!(on_agent.status(), 404);

    // Killed and started again on the same file: the tasks are still there.
    drop(agent);
    let again = Agent::start(&dir, &args, "metrics: ");
    let client = client(&again.url(), Binding::JsonRpc).await;
    for id in &done {
        let task = client.get_task(id, None).await.expect("the task survived");
        assert_eq!(task.status.state, TaskState::Completed);
    }
    assert!(dir.join("accord-push.key").exists(), "the durable store's push key is kept beside it");

    // SIGTERM stops it gracefully, with success.
    let mut again = again;
    again.signal("TERM");
    let status = wait_for_exit(&mut again.child, Duration::from_secs(15)).expect("stops on SIGTERM");
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(dir);
}

fn wait_for_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn run_expecting_failure(dir: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(MY_AGENT).args(args).current_dir(dir).output().expect("run my-agent");
    (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn an_operators_mistakes_stop_the_start_with_their_reason() {
    let dir = scratch("mistakes");
    let (code, stderr) = run_expecting_failure(&dir, &["--store", "mysql://db"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unknown store"), "{stderr}");

    let (code, stderr) = run_expecting_failure(&dir, &["--port", "0", "--store", "memory", "--sync", "full"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("--sync"), "{stderr}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("address").port().to_string();
    let (code, stderr) = run_expecting_failure(&dir, &["--port", &port, "--store", "memory"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")), "{stderr}");

    let (code, stderr) = run_expecting_failure(&dir, &["--port", "0", "--bearer-token", "short"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("--bearer-token") && !stderr.contains("short\""), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}
