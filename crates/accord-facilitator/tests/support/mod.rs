//! The real `accord-facilitator` binary, started for a test and killed when dropped.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead as _, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};

use serde_json::Value;

/// The facilitator process, killed on drop.
pub struct Facilitator {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    pub url: String,
    http: reqwest::Client,
}

impl Facilitator {
    pub fn spawn() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_accord-facilitator"))
            .args(["--host", "127.0.0.1", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn accord-facilitator");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("first line");
        let url = line
            .trim()
            .strip_prefix("accord-facilitator listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Self { child, _stdout: stdout, url, http: reqwest::Client::new() }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub async fn get(&self, path: &str) -> Value {
        let response = self.http.get(format!("{}{path}", self.url)).send().await.expect("get");
        assert!(response.status().is_success(), "{path}: {}", response.status());
        response.json().await.expect("json")
    }

    pub async fn faults(&self, faults: Value) {
        let response = self.http.post(format!("{}/faults", self.url)).json(&faults).send().await.expect("post");
        assert!(response.status().is_success());
    }

    /// Waits until the facilitator holds a settle request (a `slow` or `timeout` fault).
    pub async fn until_holding_a_settle(&self) {
        for _ in 0..500 {
            if self.get("/ledger").await["holding"].as_u64().unwrap_or(0) > 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the facilitator never held a settle request");
    }

    pub async fn settlements(&self) -> Vec<Value> {
        self.get("/ledger").await["settlements"].as_array().cloned().expect("settlements")
    }
}

impl Drop for Facilitator {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A scratch directory for a test's files, removed on drop.
pub struct Scratch(pub std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh scratch directory, unique in this process.
pub fn scratch() -> Scratch {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let unique = format!("accord-paid-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    let path = std::env::temp_dir().join(unique);
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).expect("scratch dir");
    Scratch(path)
}
