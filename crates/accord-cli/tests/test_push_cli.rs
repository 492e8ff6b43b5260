//! `accord push` by hand, as real processes: `accord serve` with loopback webhooks allowed,
//! `accord push listen` receiving, and `accord push set|get|list|delete` managing a task's
//! webhook; the listener prints the task's updates. Also: without `--webhook-allow`, a loopback
//! webhook is refused, and `--no-push` turns push off.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const ACCORD: &str = env!("CARGO_BIN_EXE_accord");

mod support;

use support::Served;

/// A child process, killed on drop.
struct Process {
    child: Child,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `accord serve` on a free port with an in-process store.
fn serve(extra: &[&str]) -> Served {
    Served::start(&[&["--store", "memory"], extra].concat())
}

/// `accord push listen` on a free port: its webhook URL and its stdout lines.
fn listen(token: &str) -> (Process, String, mpsc::Receiver<String>) {
    let mut child = Command::new(ACCORD)
        .args(["push", "listen", "--port", "0", "--token", token])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start accord push listen");
    let mut errors = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let first = errors.next().expect("a line").expect("utf-8");
    let url = first.rsplit(' ').next().expect("url").to_owned();
    std::thread::spawn(move || errors.for_each(drop));
    let (tx, rx) = mpsc::channel();
    let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (Process { child }, url, rx)
}

fn accord(args: &[&str]) -> Output {
    Command::new(ACCORD).args(args).output().expect("run accord")
}

fn json_of(output: &Output) -> Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

/// A `slow` task that runs for `seconds`, started over A2A JSON-RPC without waiting.
async fn slow_task(agent: &str, seconds: f64) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "cli-1", "role": "ROLE_USER", "parts": [{"data": {"seconds": seconds}}],
            "metadata": {"skillId": "slow"}},
        "configuration": {"returnImmediately": true},
    }});
    let answer: Value = reqwest::Client::new()
        .post(format!("{agent}a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    answer["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("a task: {answer}")).to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_set_get_list_delete_and_listen() {
    let server = serve(&["--webhook-allow", "loopback"]);
    let agent = format!("{}/", server.url);
    let (_listener, hook, lines) = listen("listen-token");
    let task = slow_task(&agent, 1.0).await;

    let set = accord(&["push", "set", &agent, &task, &hook, "--id", "by-hand", "--token", "listen-token"]);
    let set = json_of(&set);
    assert_eq!((set["id"].clone(), set["taskId"].clone()), (json!("by-hand"), json!(task)));
    assert_eq!(set["token"], "<set>", "the token is not echoed");
    let got = json_of(&accord(&["push", "get", &agent, &task, "by-hand"]));
    assert_eq!(got["url"], json!(hook));
    let listed = json_of(&accord(&["push", "list", &agent, &task]));
    assert_eq!(listed.as_array().map(Vec::len), Some(1));

    // The listener prints the task's updates until it completes.
    let mut states = Vec::new();
    while !states.iter().any(|state| state == "TASK_STATE_COMPLETED") {
        let line = lines.recv_timeout(Duration::from_secs(15)).expect("a delivery line");
        let delivery: Value = serde_json::from_str(&line).expect("a JSON line");
        assert!(delivery["deliveryId"].as_str().is_some_and(|id| id.starts_with(&task)), "{delivery}");
        if let Some(state) = delivery["response"]["statusUpdate"]["status"]["state"].as_str() {
            states.push(state.to_owned());
        }
    }
    assert_eq!(states.last().map(String::as_str), Some("TASK_STATE_COMPLETED"));

    let deleted = json_of(&accord(&["push", "delete", &agent, &task, "by-hand"]));
    assert_eq!(deleted, json!({"deleted": true}));
    let gone = accord(&["push", "get", &agent, &task, "by-hand"]);
    assert!(!gone.status.success());
    let message = String::from_utf8_lossy(&gone.stderr);
    assert!(message.contains("TaskNotFoundError"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_webhooks_need_the_allow_list_and_no_push_turns_push_off() {
    let server = serve(&[]);
    let agent = format!("{}/", server.url);
    let task = slow_task(&agent, 0.1).await;
    let refused = accord(&["push", "set", &agent, &task, "http://127.0.0.1:9/hook"]);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("refused"), "{message}");

    let off = serve(&["--no-push"]);
    let agent = format!("{}/", off.url);
    let card: Value =
        reqwest::get(format!("{agent}.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    let task = slow_task(&agent, 0.1).await;
    let unsupported = accord(&["push", "list", &agent, &task]);
    assert!(!unsupported.status.success());
    assert!(String::from_utf8_lossy(&unsupported.stderr).to_lowercase().contains("push"));
}
