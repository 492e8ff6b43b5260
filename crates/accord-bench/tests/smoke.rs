//! The harness end to end, briefly: `sdk-echo` as its own process on a free port, the load
//! generator driven against it for a second per scenario; every answer must check.

use std::process::Stdio;
use std::time::Duration;

use accord_bench::load::{self, Config, Scenario, Target};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Starts `sdk-echo --port 0`; returns the child (killed on drop) and its base URL.
async fn start_sdk_echo() -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_sdk-echo"))
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("sdk-echo starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("sdk-echo prints its address in time")
        .expect("stdout readable")
        .expect("a line");
    let url = line.strip_prefix("sdk-echo listening on ").expect("the ready line").trim().to_owned();
    (child, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_echo_answers_every_checked_request() {
    let (_child, url) = start_sdk_echo().await;
    let target = Target::discover(&url).await.expect("the card");
    assert!(target.jsonrpc_path.is_some(), "the card lists JSON-RPC");
    for scenario in [Scenario::A2aSend, Scenario::A2aStream] {
        let config = Config {
            scenario,
            connections: 4,
            duration: Duration::from_secs(1),
            warmup: Duration::from_millis(200),
            timeout: Duration::from_secs(10),
            server_pid: None,
            ..Config::default()
        };
        let report = load::run(target.clone(), &config).await;
        assert!(report.ok > 0, "{}: no checked answer: {}", scenario.name(), report.human());
        assert_eq!(report.all_errors(), 0, "{}: {}", scenario.name(), report.human());
        assert!(report.latency.p50_us > 0 && report.latency.p50_us <= report.latency.p99_us);
        if scenario == Scenario::A2aStream {
            assert!(report.events >= report.ok * 2, "a stream carries several events: {}", report.human());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_routes_are_counted_as_errors() {
    // The SDK server has no Lucid routes: every request is an error, never throughput.
    let (_child, url) = start_sdk_echo().await;
    let target = Target::discover(&url).await.expect("the card");
    let config = Config {
        scenario: Scenario::LucidInvoke,
        connections: 2,
        duration: Duration::from_millis(300),
        warmup: Duration::ZERO,
        ..Config::default()
    };
    let report = load::run(target, &config).await;
    assert_eq!(report.ok, 0);
    assert!(report.errors > 0);
    assert!(report.error_kinds.contains_key("HTTP 404"), "{}", report.human());
}
