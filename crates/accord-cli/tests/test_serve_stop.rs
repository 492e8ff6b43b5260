//! How `accord serve` stops and how many clients it holds, as a real process: SIGTERM drains
//! (`/health` answers 503, requests in flight finish, streams end cleanly, running tasks give up
//! their leases, exit 0), a second signal stops at once, and thousands of silent or slow sockets
//! do not starve the other clients.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// `accord serve` as a process, killed on drop.
struct Server {
    child: Child,
    addr: String,
    banner: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_accord"))
            .args(["serve", "--port", "0"])
            .args(args)
            .env("ACCORD_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start accord serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().expect("a line").expect("utf-8");
        assert!(first.contains(" agent listening on http://"), "{first}");
        let addr = first.rsplit("http://").next().expect("url").trim_end_matches('/').to_owned();
        let mut banner = vec![first];
        for line in lines.by_ref() {
            let line = line.expect("utf-8");
            let done = line.starts_with("task store:");
            banner.push(line);
            if done {
                break;
            }
        }
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, addr, banner }
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill").args([&format!("-{name}"), &self.child.id().to_string()]).status();
        assert!(status.expect("kill").success());
    }

    /// Waits up to `within` for the process to exit.
    fn exited_within(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// A line of `/proc/<pid>/<file>` starting with `prefix`.
    fn proc_line(&self, file: &str, prefix: &str) -> String {
        let text = std::fs::read_to_string(format!("/proc/{}/{file}", self.child.id())).expect("proc file");
        text.lines().find(|line| line.starts_with(prefix)).expect("the line").to_owned()
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("accord-stop-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Sends one HTTP/1.1 request with `Connection: close` and reads everything until the server
/// closes: the raw response, or why there was none.
fn exchange(addr: &str, request: &str, wait: Duration) -> Result<String, String> {
    let mut socket = TcpStream::connect(addr).map_err(|error| format!("connect: {error}"))?;
    socket.set_read_timeout(Some(wait)).expect("read timeout");
    socket.write_all(request.as_bytes()).map_err(|error| format!("write: {error}"))?;
    let mut response = Vec::new();
    socket.read_to_end(&mut response).map_err(|error| format!("read: {error}"))?;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

fn post(path: &str, body: &Value) -> String {
    let body = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

const HEALTH: &str = "GET /health HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";

fn status_line(response: &str) -> &str {
    response.lines().next().unwrap_or_default()
}

fn send_message(skill: &str, data: Value, return_immediately: bool) -> String {
    post(
        "/a2a/jsonrpc",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": format!("m-{skill}-{}", nanos()), "role": "ROLE_USER",
                        "parts": [{"data": data}], "metadata": {"skillId": skill}},
            "configuration": {"returnImmediately": return_immediately}}}),
    )
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// The JSON body of a `Connection: close` response.
fn json_body(response: &str) -> Value {
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|error| panic!("a JSON body ({error}): {response}"))
}

fn task_state(addr: &str, id: &str) -> String {
    let response = exchange(
        addr,
        &post("/a2a/jsonrpc", &json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id}})),
        Duration::from_secs(10),
    )
    .expect("GetTask");
    json_body(&response)["result"]["status"]["state"].as_str().unwrap_or_default().to_owned()
}

fn sqlite(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("tasks.db").display())
}

#[test]
fn sigterm_drains_requests_streams_and_tasks_then_exits_zero() {
    let dir = scratch("drain");
    let store = sqlite(&dir);
    let args = ["--store", &store, "--shutdown-delay", "3", "--shutdown-grace", "20", "--lease-ttl", "120"];
    let mut server = Server::start(&args);
    let addr = server.addr.clone();

    // A task running in the background: it will be handed back at the stop.
    let started = exchange(&addr, &send_message("slow", json!({"seconds": 8}), true), Duration::from_secs(10))
        .expect("SendMessage");
    let task_id = json_body(&started)["result"]["task"]["id"].as_str().expect("a task id").to_owned();

    // A blocking invoke of 3 s, in flight when the signal comes.
    let slow_addr = addr.clone();
    let slow = std::thread::spawn(move || {
        exchange(
            &slow_addr,
            &post("/entrypoints/slow/invoke", &json!({"input": {"seconds": 3}})),
            Duration::from_secs(30),
        )
    });
    // An event stream that would last 100 s.
    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
    stream.write_all(post("/entrypoints/ticks/stream", &json!({"input": {"count": 1000}})).as_bytes()).expect("write");
    let mut head = [0; 512];
    let n = stream.read(&mut head).expect("the stream starts");
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head[..n]));
    std::thread::sleep(Duration::from_millis(500));

    server.signal("TERM");
    // During --shutdown-delay: still serving, but /health tells a load balancer to stop sending.
    // (The signal is handled asynchronously: ask until it has been.)
    let asked = Instant::now();
    let mut draining = exchange(&addr, HEALTH, Duration::from_secs(5)).expect("/health while draining");
    while status_line(&draining).starts_with("HTTP/1.1 200") && asked.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        draining = exchange(&addr, HEALTH, Duration::from_secs(5)).expect("/health while draining");
    }
    assert!(status_line(&draining).starts_with("HTTP/1.1 503"), "{draining}");
    assert_eq!(json_body(&draining)["ok"], json!(false), "{draining}");

    // The stream ends cleanly (the last chunk is the terminator), not cut.
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("the stream ends without an error");
    let rest = String::from_utf8_lossy(&rest);
    assert!(rest.ends_with("0\r\n\r\n"), "a clean end of the chunked stream: {rest:?}");

    // The invoke in flight finishes with its answer.
    let answered = slow.join().expect("thread").expect("the in-flight invoke is answered");
    assert!(status_line(&answered).starts_with("HTTP/1.1 200"), "{answered}");
    assert!(answered.contains("slept"), "{answered}");

    let status = server.exited_within(Duration::from_secs(15)).expect("the server exits within the grace period");
    assert_eq!(status.code(), Some(0), "a drained stop exits 0");
    assert!(TcpStream::connect(&addr).is_err(), "the listener is closed");

    // The running task gave up its lease: a new worker on the same store takes it over at its
    // first recovery pass, not after the 120 s lease.
    let again = Server::start(&["--store", &store, "--recovery-interval", "1", "--lease-ttl", "120"]);
    assert_eq!(task_state(&again.addr, &task_id), "TASK_STATE_WORKING", "the stop interrupted the 8 s task");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut state = String::new();
    while Instant::now() < deadline {
        state = task_state(&again.addr, &task_id);
        if state == "TASK_STATE_COMPLETED" {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(state, "TASK_STATE_COMPLETED", "the handed-back task was taken over and finished");
    drop(again);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_signal_stops_at_once() {
    let mut server = Server::start(&["--store", "memory", "--shutdown-grace", "60"]);
    let addr = server.addr.clone();
    let slow = std::thread::spawn(move || {
        exchange(&addr, &post("/entrypoints/slow/invoke", &json!({"input": {"seconds": 50}})), Duration::from_secs(90))
    });
    std::thread::sleep(Duration::from_millis(500));
    server.signal("TERM");
    std::thread::sleep(Duration::from_millis(500));
    assert!(server.exited_within(Duration::ZERO).is_none(), "the first signal waits for the request in flight");
    server.signal("INT");
    let status = server.exited_within(Duration::from_secs(10)).expect("the second signal stops at once");
    assert_eq!(status.code(), Some(0));
    let cut = slow.join().expect("thread");
    assert!(!cut.as_deref().unwrap_or_default().starts_with("HTTP/1.1 200"), "the request was cut: {cut:?}");
}

/// How many descriptors this test process may still open.
fn own_descriptor_room() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").expect("/proc/self/limits");
    let line = limits.lines().find(|line| line.starts_with("Max open files")).expect("the line");
    let soft: usize = line.split_whitespace().nth(3).and_then(|soft| soft.parse().ok()).unwrap_or(1024);
    soft.saturating_sub(100)
}

#[test]
fn silent_and_slow_sockets_by_the_thousand_do_not_starve_other_clients() {
    let mut server = Server::start(&["--store", "memory"]);
    // The soft descriptor limit was raised to the hard one, and the cap follows it.
    let limits = server.proc_line("limits", "Max open files");
    let fields: Vec<&str> = limits.split_whitespace().collect();
    assert_eq!(fields[3], fields[4], "soft limit raised to the hard limit: {limits}");
    let cap_line = server.banner.iter().find(|line| line.starts_with("connections: up to ")).expect("the cap").clone();
    assert!(cap_line.contains(&format!("(file descriptors: {})", fields[3])), "{cap_line}");

    // 2,000 sockets that never send a byte and 200 that send half a request head, or as many as
    // this process may open.
    let room = own_descriptor_room();
    let silent_count = 2000.min(room * 10 / 11);
    let slow_count = 200.min(room - silent_count);
    let mut held = Vec::with_capacity(silent_count + slow_count);
    for _ in 0..silent_count {
        held.push(TcpStream::connect(&server.addr).expect("connect"));
    }
    for _ in 0..slow_count {
        let mut socket = TcpStream::connect(&server.addr).expect("connect");
        socket.write_all(b"GET /health HTTP/1.1\r\nHo").expect("write");
        held.push(socket);
    }
    std::thread::sleep(Duration::from_millis(500));

    // Another client is still served at once: the bound is far below every timeout (5 s for the
    // first byte, 10 s for a head), so only a server with room answers within it.
    let quick = Duration::from_secs(2);
    let health = exchange(&server.addr, HEALTH, quick).expect("/health beside the held sockets");
    assert!(status_line(&health).starts_with("HTTP/1.1 200"), "{health}");
    let sent = exchange(&server.addr, &send_message("echo", json!({"text": "hi"}), false), quick)
        .expect("SendMessage beside the held sockets");
    assert!(status_line(&sent).starts_with("HTTP/1.1 200"), "{sent}");
    assert_eq!(json_body(&sent)["result"]["task"]["status"]["state"], json!("TASK_STATE_COMPLETED"), "{sent}");

    // Memory stays bounded while they are held.
    let rss = server.proc_line("status", "VmRSS:");
    let kib: u64 = rss.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS in kB");
    assert!(kib < 200 * 1024, "RSS with {} held sockets: {rss}", held.len());

    // The silent sockets are closed after the first-byte timeout, the slow ones after the head
    // timeout.
    let mut probe = [0; 16];
    let first = &mut held[0];
    first.set_read_timeout(Some(Duration::from_secs(20))).expect("read timeout");
    let read = first.read(&mut probe);
    let closed = match &read {
        Ok(0) => true,
        Err(error) => error.kind() == std::io::ErrorKind::ConnectionReset,
        Ok(_) => false,
    };
    assert!(closed, "a silent socket is closed by the server: {read:?}");
    drop(held);
    server.signal("TERM");
    assert_eq!(server.exited_within(Duration::from_secs(20)).and_then(|status| status.code()), Some(0));
}
