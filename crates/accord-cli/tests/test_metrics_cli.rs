//! `accord serve`'s metrics, logs and traces on a real process: `/metrics` after a mixed load
//! (invokes, a stream, a subscription, tasks created and cancelled, a paid invoke, a push
//! delivery, refused requests) shows every family with the counts the load made, read by a strict
//! parser of the Prometheus text format, and no label carries a token or a task id; a crashed
//! worker's task shows as a recovery; `--metrics-addr` moves `/metrics` to a listener of its own,
//! `--no-metrics` removes it; `--log-format json` writes one JSON object per line, a request's
//! line carrying its face, route, method and status and never a token.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

const ACCORD: &str = env!("CARGO_BIN_EXE_accord");
const TOKEN: &str = "metrics-test-token-0123456789";

/// `accord serve --port 0` with `args`, its stdout lines after the first kept in `extra`, its
/// stderr captured when asked.
struct Server {
    child: Child,
    url: String,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Server {
    fn start(args: &[&str], log: Option<&str>) -> Self {
        let mut command = Command::new(ACCORD);
        command.args(["serve", "--port", "0"]).args(args).stdout(Stdio::piped());
        match log {
            Some(filter) => command.env("ACCORD_LOG", filter).stderr(Stdio::piped()),
            None => command.env("ACCORD_LOG", "warn").stderr(Stdio::null()),
        };
        let mut child = command.spawn().expect("start accord serve");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = lines.next().expect("a line").expect("utf-8");
        assert!(first.contains(" agent listening on "), "{first}");
        let url = first.rsplit(' ').next().expect("url").trim_end_matches('/').to_owned();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Self { child, url, lines: rx }
    }

    /// The URL printed on the stdout line starting with `prefix`.
    fn printed(&self, prefix: &str) -> String {
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(10)).expect("the line is printed");
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.trim().to_owned();
            }
        }
    }

    /// Stops the process (SIGKILL) and returns what it wrote to stderr.
    fn stop_and_read_stderr(mut self) -> String {
        let _ = self.child.kill();
        let mut text = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut stderr, &mut text).expect("stderr");
        }
        let _ = self.child.wait();
        text
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One sample: the metric name and its labels.
type Key = (String, BTreeMap<String, String>);

/// A strict reader of the Prometheus text exposition format (version 0.0.4): every line is a
/// `# HELP`, a `# TYPE` or a sample of a declared family, names and labels are well formed, label
/// values are properly escaped, values are numbers, and no sample is given twice.
fn parse_exposition(text: &str) -> BTreeMap<Key, f64> {
    let name_ok = |name: &str| {
        let mut chars = name.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = BTreeMap::new();
    for line in text.lines().filter(|line| !line.is_empty()) {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            assert!(name_ok(name), "family name {name:?}");
            assert!(["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind), "{line}");
            assert!(types.insert(name.to_owned(), kind.to_owned()).is_none(), "family typed twice: {line}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            assert!(name_ok(rest.split(' ').next().unwrap_or("")), "{line}");
            continue;
        }
        assert!(!line.starts_with('#'), "unknown comment line: {line}");
        let (name, rest) = match line.find('{') {
            Some(open) => (&line[..open], &line[open..]),
            None => line.split_once(' ').expect("name value"),
        };
        assert!(name_ok(name), "sample name {name:?} in {line}");
        let mut labels = BTreeMap::new();
        let value_text = if let Some(body) = rest.strip_prefix('{') {
            let mut chars = body.char_indices().peekable();
            let end;
            loop {
                let (start, c) = chars.next().expect("a label or }");
                if c == '}' {
                    end = start;
                    break;
                }
                if c == ',' {
                    continue;
                }
                let eq = body[start..].find('=').expect("label=") + start;
                let label = &body[start..eq];
                assert!(name_ok(label) && !label.contains(':'), "label name {label:?} in {line}");
                while chars.peek().is_some_and(|(index, _)| *index <= eq) {
                    chars.next();
                }
                assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "quoted value in {line}");
                let mut value = String::new();
                loop {
                    match chars.next().expect("closing quote") {
                        (_, '"') => break,
                        (_, '\\') => match chars.next().expect("escape").1 {
                            'n' => value.push('\n'),
                            '\\' => value.push('\\'),
                            '"' => value.push('"'),
                            other => panic!("bad escape \\{other} in {line}"),
                        },
                        (_, c) => value.push(c),
                    }
                }
                assert!(labels.insert(label.to_owned(), value).is_none(), "label given twice in {line}");
            }
            body[end + 1..].trim_start()
        } else {
            rest.trim_start()
        };
        let value_text = value_text.split(' ').next().expect("a value");
        let value: f64 = match value_text {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            text => text.parse().unwrap_or_else(|_| panic!("value {text:?} in {line}")),
        };
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                name.strip_suffix(suffix).filter(|base| types.get(*base).is_some_and(|t| t == "histogram"))
            })
            .unwrap_or(name);
        assert!(types.contains_key(family), "sample of an undeclared family: {line}");
        assert!(samples.insert((name.to_owned(), labels), value).is_none(), "sample given twice: {line}");
    }
    samples
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn value(samples: &BTreeMap<Key, f64>, name: &str, pairs: &[(&str, &str)]) -> f64 {
    samples.get(&(name.to_owned(), labels(pairs))).copied().unwrap_or(0.0)
}

async fn scrape(url: &str) -> (String, BTreeMap<Key, f64>) {
    let response = reqwest::get(url).await.expect("scrape");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().expect("ascii").to_owned();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    let text = response.text().await.expect("text");
    let samples = parse_exposition(&text);
    (text, samples)
}

/// A webhook receiver on loopback: counts the deliveries it answered 200.
async fn webhook() -> (String, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { "ok" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, count)
}

async fn until(mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..100 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the condition never held");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_every_family_after_a_mixed_load() {
    let dir = std::env::temp_dir().join(format!("accord-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let db = format!("sqlite://{}", dir.join("tasks.db").display());
    let key = dir.join("push.key");
    let server = Server::start(
        &[
            "--store",
            &db,
            "--demo-prices",
            "--webhook-allow",
            "loopback",
            "--push-key-file",
            key.to_str().expect("utf-8"),
        ],
        None,
    );
    let base = server.url.clone();
    let metrics_url = format!("{base}/metrics");
    let client = reqwest::Client::new();

    // Three invokes, one with a body that is not JSON.
    for text in ["a", "b", "c"] {
        let response =
            client.post(format!("{base}/entrypoints/echo/invoke")).json(&json!({"input": {"text": text}})).send().await;
        assert_eq!(response.expect("invoke").status(), 200);
    }
    let response = client
        .post(format!("{base}/entrypoints/echo/invoke"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("invoke");
    assert_eq!(response.status(), 400);
    // One stream, read to its end.
    let streamed = client
        .post(format!("{base}/entrypoints/ticks/stream"))
        .json(&json!({"input": {"count": 2}}))
        .send()
        .await
        .expect("stream")
        .text()
        .await
        .expect("events");
    assert!(streamed.contains("run-end"), "{streamed}");
    // A paid invoke: refused without payment (402), then paid with a wallet.
    let wallet = accord_payments::wallet::Wallet::generate().expect("wallet");
    let paying = accord_client::Client::new().with_payments(Arc::new(wallet));
    let card = paying.fetch_card(&base).await.expect("card");
    let unpaid = accord_client::Client::new()
        .invoke(&card, "summarize", json!({"text": "Cats purr. Dogs bark."}), Default::default())
        .await;
    assert!(unpaid.is_err(), "a priced skill needs payment");
    paying
        .invoke(&card, "summarize", json!({"text": "Cats purr. Dogs bark."}), Default::default())
        .await
        .expect("paid");

    // A (paid) slow task, watched by a subscriber, then cancelled.
    let options = accord_client::SendOptions { access_token: Some(TOKEN.into()), ..Default::default() };
    let sent = paying.send_message(&card, "slow", json!({"seconds": 60}), options).await.expect("a paid task");
    let task_id = sent.access.task_id.clone();
    let subscription = client
        .get(format!("{base}/tasks/{task_id}/subscribe"))
        .header("task-access-token", TOKEN)
        .send()
        .await
        .expect("subscribe");
    assert_eq!(subscription.status(), 200);
    let (_, during) = scrape(&metrics_url).await;
    assert_eq!(value(&during, "accord_sse_subscribers", &[("face", "lucid")]), 1.0, "one subscriber open");
    assert_eq!(value(&during, "accord_task_leases_active", &[]), 1.0, "the slow task runs here");
    assert_eq!(value(&during, "accord_tasks", &[("state", "working")]), 1.0);
    let cancelled = client
        .post(format!("{base}/tasks/{task_id}/cancel"))
        .header("task-access-token", TOKEN)
        .send()
        .await
        .expect("cancel");
    assert_eq!(cancelled.status(), 200);
    let ended = subscription.text().await.expect("the subscription ends with the task");
    assert!(ended.contains("cancel"), "{ended}");
    // Someone else's token does not find the task: a 404 counted under the route template.
    let missing = client
        .get(format!("{base}/tasks/{task_id}"))
        .header("task-access-token", "another-token-0123456789")
        .send()
        .await;
    assert_eq!(missing.expect("get").status(), 404);

    // An A2A task with a webhook: delivered to the receiver.
    let (hook, deliveries) = webhook().await;
    let sent: Value = client
        .post(format!("{base}/a2a/rest/message:send"))
        .header("a2a-version", "1.0")
        .json(&json!({
            "message": {"messageId": "m-metrics", "role": "ROLE_USER", "parts": [{"text": "hi"}], "metadata": {"skillId": "echo"}},
            "configuration": {"taskPushNotificationConfig": {"url": hook, "token": "hook-token"}},
        }))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert!(sent["task"]["id"].is_string(), "{sent}");
    until(async || deliveries.load(Ordering::SeqCst) > 0).await;

    let mut samples = BTreeMap::new();
    let mut text = String::new();
    until(async || {
        (text, samples) = scrape(&metrics_url).await;
        value(&samples, "accord_sse_subscribers", &[("face", "lucid")]) == 0.0
            && value(&samples, "accord_task_leases_active", &[]) == 0.0
            && value(&samples, "accord_push_deliveries_total", &[("outcome", "delivered")]) >= 1.0
    })
    .await;

    let invoke = [("face", "lucid"), ("method", "POST"), ("route", "/entrypoints/{key}/invoke")];
    let with = |status: &'static str| {
        let mut pairs = invoke.to_vec();
        pairs.push(("status", status));
        value(&samples, "accord_http_requests_total", &pairs)
    };
    // Three echoes and the paid summarize; the refusal of a body that is not JSON; the
    // challenges of the unpaid call and of the paying client's first try.
    assert_eq!((with("200"), with("400"), with("402")), (4.0, 1.0, 2.0), "{text}");
    assert_eq!(value(&samples, "accord_http_request_duration_seconds_count", &invoke), 7.0);
    assert_eq!(
        value(&samples, "accord_http_request_duration_seconds_bucket", &[&invoke[..], &[("le", "+Inf")]].concat()),
        7.0
    );
    let create = [("face", "lucid"), ("method", "POST"), ("route", "/tasks")];
    assert_eq!(value(&samples, "accord_http_requests_total", &[&create[..], &[("status", "402")]].concat()), 1.0);
    assert_eq!(value(&samples, "accord_http_requests_total", &[&create[..], &[("status", "200")]].concat()), 1.0);
    assert_eq!(
        value(
            &samples,
            "accord_http_requests_total",
            &[("face", "lucid"), ("method", "GET"), ("route", "/tasks/{id}"), ("status", "404")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &samples,
            "accord_http_requests_total",
            &[("face", "lucid"), ("method", "POST"), ("route", "/entrypoints/{key}/stream"), ("status", "200")]
        ),
        1.0
    );
    assert!(
        value(
            &samples,
            "accord_http_requests_total",
            &[("face", "cards"), ("method", "GET"), ("route", "/.well-known/agent-card.json"), ("status", "200")]
        ) >= 1.0
    );
    // Two tasks were created (the slow one, the A2A one): both entered `submitted`; one was
    // cancelled, the other completed; the store holds them so.
    assert_eq!(value(&samples, "accord_task_transitions_total", &[("to", "submitted")]), 2.0, "{text}");
    assert_eq!(value(&samples, "accord_task_transitions_total", &[("to", "canceled")]), 1.0);
    assert_eq!(value(&samples, "accord_task_transitions_total", &[("to", "completed")]), 1.0);
    assert_eq!(value(&samples, "accord_tasks", &[("state", "canceled")]), 1.0);
    assert_eq!(value(&samples, "accord_tasks", &[("state", "completed")]), 1.0);
    assert_eq!(value(&samples, "accord_tasks", &[("state", "working")]), 0.0);
    assert!(value(&samples, "accord_store_operation_duration_seconds_count", &[("operation", "create")]) >= 2.0);
    assert!(value(&samples, "accord_store_operation_duration_seconds_count", &[("operation", "append")]) >= 2.0);
    assert!(value(&samples, "accord_store_commit_batch_size_count", &[("store", "sqlite")]) >= 2.0);
    assert!(value(&samples, "accord_store_commit_batch_size_sum", &[("store", "sqlite")]) >= 2.0);
    assert_eq!(value(&samples, "accord_task_recoveries_total", &[]), 0.0);
    assert!(text.contains("# TYPE accord_store_errors_total counter") || !text.contains("accord_store_errors_total"));
    assert_eq!(value(&samples, "accord_payments_total", &[("rail", "local"), ("outcome", "required")]), 3.0, "{text}");
    assert_eq!(value(&samples, "accord_payments_total", &[("rail", "local"), ("outcome", "settled")]), 2.0);
    assert!(value(&samples, "accord_push_deliveries_total", &[("outcome", "delivered")]) >= 1.0);
    for family in [
        "accord_http_requests_total",
        "accord_http_request_duration_seconds",
        "accord_tasks",
        "accord_task_transitions_total",
        "accord_store_operation_duration_seconds",
        "accord_store_commit_batch_size",
        "accord_task_leases_active",
        "accord_task_recoveries_total",
        "accord_sse_subscribers",
        "accord_payments_total",
        "accord_push_deliveries_total",
    ] {
        assert!(text.contains(&format!("# TYPE {family} ")), "family {family} missing:\n{text}");
    }
    // No label value is a secret or a task id.
    for (_, pairs) in samples.keys() {
        for value in pairs.values() {
            assert!(!value.contains(TOKEN) && !value.contains(&task_id) && !value.contains("hook-token"), "{value}");
        }
    }
    assert!(!text.contains(TOKEN) && !text.contains(&task_id));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A blocking A2A `SendMessage` to a short skill on the SQLite store: with the inline window (the
/// default) its task is one durable write, created already ended; with `--inline-window-ms 0` it
/// is stored first and ended by a second write. Either way the answer is the completed task, and
/// the store reads it back the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_send_to_a_short_skill_is_one_durable_write() {
    let dir = std::env::temp_dir().join(format!("accord-inline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    for (window, creates, appends) in [("5", 1.0, 0.0), ("0", 1.0, 1.0)] {
        let db = format!("sqlite://{}", dir.join(format!("tasks-{window}.db")).display());
        let server = Server::start(&["--store", &db, "--no-push", "--inline-window-ms", window], None);
        let client = reqwest::Client::new();
        let sent: Value = client
            .post(format!("{}/a2a/rest/message:send", server.url))
            .header("a2a-version", "1.0")
            .json(&json!({
                "message": {"messageId": "m-inline", "role": "ROLE_USER", "parts": [{"text": "hi"}], "metadata": {"skillId": "echo"}},
            }))
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
        let id = sent["task"]["id"].as_str().expect("an id");
        let read: Value = client
            .get(format!("{}/a2a/rest/tasks/{id}", server.url))
            .header("a2a-version", "1.0")
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        assert_eq!(read["status"], sent["task"]["status"], "{read}");
        assert_eq!(read["artifacts"], sent["task"]["artifacts"], "{read}");
        let (text, samples) = scrape(&format!("{}/metrics", server.url)).await;
        let count = |operation: &str| {
            value(&samples, "accord_store_operation_duration_seconds_count", &[("operation", operation)])
        };
        assert_eq!((count("create"), count("append")), (creates, appends), "window {window} ms: {text}");
        assert_eq!(value(&samples, "accord_task_transitions_total", &[("to", "completed")]), 1.0, "{text}");
        assert_eq!(value(&samples, "accord_tasks", &[("state", "completed")]), 1.0, "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_workers_task_shows_as_a_recovery() {
    let dir = std::env::temp_dir().join(format!("accord-metrics-recovery-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let db = format!("sqlite://{}", dir.join("tasks.db").display());
    let args = ["--store", &db, "--lease-ttl", "0.5", "--recovery-interval", "0.2", "--no-push"];
    let mut first = Server::start(&args, None);
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{}/tasks", first.url))
        .header("task-access-token", TOKEN)
        .json(&json!({"message": {"role": "user", "content": {"text": "{\"seconds\": 60}"}}, "skillId": "slow"}))
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), 200);
    let _ = first.child.kill();
    let _ = first.child.wait();
    let second = Server::start(&args, None);
    let metrics_url = format!("{}/metrics", second.url);
    until(async || value(&scrape(&metrics_url).await.1, "accord_task_recoveries_total", &[]) == 1.0).await;
    let (_, samples) = scrape(&metrics_url).await;
    assert_eq!(value(&samples, "accord_task_leases_active", &[]), 1.0, "the recovered task runs here");
    assert_eq!(value(&samples, "accord_tasks", &[("state", "working")]), 1.0);
    drop(second);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_to_their_own_listener_or_go() {
    let client = reqwest::Client::new();
    let moved = Server::start(&["--store", "memory", "--metrics-addr", "127.0.0.1:0"], None);
    let metrics_url = moved.printed("metrics: ");
    assert!(metrics_url.ends_with("/metrics") && !metrics_url.starts_with(&moved.url), "{metrics_url}");
    let on_agent = client.get(format!("{}/metrics", moved.url)).send().await.expect("agent listener");
    assert_eq!(on_agent.status(), 404, "not on the agent's listener");
    let _ = client.get(format!("{}/health", moved.url)).send().await.expect("health");
    let (_, samples) = scrape(&metrics_url).await;
    assert_eq!(
        value(
            &samples,
            "accord_http_requests_total",
            &[("face", "cards"), ("method", "GET"), ("route", "/health"), ("status", "200")]
        ),
        1.0
    );
    let metrics_base = metrics_url.trim_end_matches("/metrics");
    let health = client.get(format!("{metrics_base}/health")).send().await.expect("metrics listener");
    assert_eq!(health.status(), 404, "the metrics listener serves only /metrics");

    let off = Server::start(&["--store", "memory", "--no-metrics"], None);
    assert_eq!(client.get(format!("{}/metrics", off.url)).send().await.expect("metrics").status(), 404);

    for bad in [
        &["serve", "--no-metrics", "--metrics-addr", "127.0.0.1:0"][..],
        &["serve", "--metrics-addr", "localhost"],
        &["serve", "--log-format", "xml"],
    ] {
        let output = Command::new(ACCORD).args(bad).output().expect("run");
        assert_eq!(output.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
    #[cfg(not(feature = "otlp"))]
    {
        let output = Command::new(ACCORD)
            .args(["serve", "--port", "0", "--store", "memory", "--otlp-endpoint", "http://127.0.0.1:4318"])
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&output.stderr).contains("otlp"), "{output:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line_without_secrets() {
    let server = Server::start(
        &["--store", "memory", "--log-format", "json", "--demo-token", "demo-bearer-secret-0123456789"],
        Some("info,accord::request=debug"),
    );
    let client = reqwest::Client::new();
    let created: Value = client
        .post(format!("{}/tasks", server.url))
        .header("task-access-token", TOKEN)
        .json(&json!({"message": {"role": "user", "content": {"text": "{\"text\": \"hi\"}"}}, "skillId": "echo"}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let task_id = created["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let got = client
        .get(format!("{}/tasks/{task_id}", server.url))
        .header("task-access-token", TOKEN)
        .header("authorization", "Bearer wrong-bearer-secret-0123456789")
        .send()
        .await
        .expect("get");
    assert_eq!(got.status(), 401, "a refused bearer");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stderr = server.stop_and_read_stderr();
    let lines: Vec<Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("not one JSON object ({error}): {line}")))
        .collect();
    assert!(lines.iter().all(Value::is_object));
    let requests: Vec<&Value> = lines.iter().filter(|line| line["fields"]["message"] == "request").collect();
    let create = requests
        .iter()
        .find(|line| line["span"]["route"] == "/tasks" && line["span"]["method"] == "POST")
        .unwrap_or_else(|| panic!("a line for the create: {stderr}"));
    assert_eq!(create["span"]["face"], "lucid");
    assert_eq!(create["fields"]["status"], 200);
    assert!(create["fields"]["latency_ms"].is_number());
    let refused = requests
        .iter()
        .find(|line| line["span"]["route"] == "/tasks/{id}")
        .unwrap_or_else(|| panic!("a line for the get: {stderr}"));
    assert_eq!(refused["fields"]["status"], 401);
    for secret in [TOKEN, "demo-bearer-secret", "wrong-bearer-secret"] {
        assert!(!stderr.contains(secret), "a secret in the logs: {stderr}");
    }
}

/// With the `otlp` feature, `--otlp-endpoint` sends the spans to an OTLP/HTTP collector: here a
/// receiver on loopback that records what is POSTed to `/v1/traces`.
#[cfg(feature = "otlp")]
type Batches = Vec<(String, Vec<u8>)>;

#[cfg(feature = "otlp")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_over_otlp_http() {
    let received: Arc<std::sync::Mutex<Batches>> = Arc::default();
    let store = Arc::clone(&received);
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let content_type =
                headers.get("content-type").and_then(|value| value.to_str().ok()).unwrap_or_default().to_owned();
            store.lock().expect("lock").push((content_type, body.to_vec()));
            async { "" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let collector = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let server = Server::start(&["--store", "memory", "--otlp-endpoint", &collector], Some("info"));
    let client = reqwest::Client::new();
    let created: Value = client
        .post(format!("{}/tasks", server.url))
        .header("task-access-token", TOKEN)
        .json(&json!({"message": {"role": "user", "content": {"text": "{\"text\": \"hi\"}"}}, "skillId": "echo"}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let task_id = created["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    // The batch exporter sends within its schedule delay (5 s by default).
    until(async || {
        let batches = received.lock().expect("lock");
        let all: Vec<u8> = batches.iter().flat_map(|(_, body)| body.clone()).collect();
        let has = |needle: &[u8]| all.windows(needle.len()).any(|window| window == needle);
        has(b"task_run") && has(b"request") && has(task_id.as_bytes())
    })
    .await;
    let batches = received.lock().expect("lock").clone();
    assert!(batches.iter().all(|(content_type, _)| content_type == "application/x-protobuf"), "{batches:?}");
    let all: Vec<u8> = batches.iter().flat_map(|(_, body)| body.clone()).collect();
    let has = |needle: &[u8]| all.windows(needle.len()).any(|window| window == needle);
    assert!(has(b"accord"), "the service name");
    assert!(has(b"/tasks") && has(b"lucid"), "the request span's route and face");
    assert!(!has(TOKEN.as_bytes()), "no token in a span");
    drop(server);

    let output = Command::new(ACCORD)
        .args(["serve", "--port", "0", "--store", "memory", "--otlp-endpoint", "not a url"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--otlp-endpoint"), "{output:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_calls_are_counted_by_method_and_code() {
    use accord_grpc::pb;
    let server = Server::start(&["--store", "memory"], None);
    let base = server.url.clone();
    let endpoint = tonic::transport::Endpoint::from_shared(base.clone()).expect("endpoint");
    let mut client =
        pb::a2a_service_client::A2aServiceClient::new(endpoint.connect().await.expect("gRPC on the HTTP port"));
    for _ in 0..2 {
        let request = pb::GetTaskRequest { id: "no-such-task".into(), ..Default::default() };
        let status = client.get_task(request).await.expect_err("not found");
        assert_eq!(status.code(), tonic::Code::NotFound);
    }
    let request = pb::ListTasksRequest::default();
    client.list_tasks(request).await.expect_err("an anonymous caller cannot list on the demo agent");
    let (text, samples) = scrape(&format!("{base}/metrics")).await;
    assert!(text.contains("# TYPE accord_grpc_calls_total counter"), "{text}");
    assert_eq!(value(&samples, "accord_grpc_calls_total", &[("method", "GetTask"), ("code", "NOT_FOUND")]), 2.0);
    // The HTTP metrics name the method's route (one route per method), under the gRPC face.
    let route =
        [("face", "a2a_grpc"), ("method", "POST"), ("route", "/lf.a2a.v1.A2AService/GetTask"), ("status", "200")];
    assert_eq!(value(&samples, "accord_http_requests_total", &route), 2.0, "{text}");
}
