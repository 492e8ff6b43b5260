//! `accord serve --config FILE` as a process: the minimal agent file of docs/agent-file.md (an HTTP skill and
//! a command skill) served on the official A2A face and the Lucid face; the file's `[serve]` table
//! under the command line; a bad file refused with every problem listed; and an x402 rail from
//! the file collecting through the workspace's own facilitator process, on both faces.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use axum::Json;
use axum::http::HeaderMap;
use base64::Engine as _;
use serde_json::{Value, json};

const ACCORD: &str = env!("CARGO_BIN_EXE_accord");
const TOKEN: &str = "agent-file-owner-token-0123456789";
const X402_EXTENSION: &str = "https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2";

/// The minimal file of docs/agent-file.md, as written.
const MINIMAL: &str = r#"[agent]
name = "shop"
description = "A shop's services behind A2A"

[[skill]]
id = "quote"
description = "Price quote for an item"
input_schema = { type = "object", properties = { item = { type = "string" } }, required = ["item"] }
http = { url = "http://127.0.0.1:${QUOTE_PORT}/quote" }

[[skill]]
id = "count"
description = "Counts the words of a text"
command = ["python3", "count.py"]
"#;

const COUNT_PY: &str = "import json, sys\n\
    body = json.load(sys.stdin)\n\
    print(json.dumps({'words': len(str(body.get('text', '')).split())}))\n";

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("accord-agent-file-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The headers each call of the quote backend carried, in order.
type Seen = Arc<Mutex<Vec<BTreeMap<String, String>>>>;

/// The quote service: answers `{"item", "price"}` and remembers the `accord-*` headers.
async fn quote_backend() -> (u16, Seen) {
    let seen: Seen = Arc::default();
    let recorded = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/quote",
        axum::routing::post(move |headers: HeaderMap, Json(body): Json<Value>| {
            let recorded = Arc::clone(&recorded);
            async move {
                let accord: BTreeMap<String, String> = headers
                    .iter()
                    .filter(|(name, _)| name.as_str().starts_with("accord-"))
                    .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or("").to_owned()))
                    .collect();
                recorded.lock().expect("lock").push(accord);
                Json(json!({"item": body["item"], "price": 42}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, seen)
}

/// `accord serve --config` running, killed on drop.
struct Served {
    child: Child,
    lines: Vec<String>,
    url: String,
}

impl Served {
    /// Starts `accord serve --port 0 --config <dir>/agent.toml` with `args` and `env`, and reads
    /// its summary up to the task store line.
    fn start(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Self {
        let mut child = Command::new(ACCORD)
            .args(["serve", "--port", "0", "--config", "agent.toml"])
            .args(args)
            .current_dir(dir)
            .envs(env.iter().map(|(name, value)| (*name, value.as_str())))
            .env("ACCORD_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start accord serve");
        let stdout = child.stdout.take().expect("stdout");
        let (send, receive) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        let mut lines: Vec<String> = Vec::new();
        while !lines.last().is_some_and(|line| line.starts_with("task store: ")) {
            lines.push(receive.recv_timeout(Duration::from_secs(30)).expect("the summary is printed"));
        }
        // Notes follow the store line; give them a moment.
        while let Ok(line) = receive.recv_timeout(Duration::from_millis(300)) {
            lines.push(line);
        }
        let url = lines[0].rsplit(' ').next().expect("url").trim_end_matches('/').to_owned();
        assert!(lines[0].starts_with("Accord shop agent listening on "), "{lines:?}");
        Self { child, lines, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `accord serve --config <dir>/agent.toml` expected to refuse to start: its output. A server
/// that starts after all is killed after 30 s, and its output shows it.
fn refused(dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(ACCORD)
        .args(["serve", "--port", "0", "--config", "agent.toml"])
        .current_dir(dir)
        .envs(env.iter().copied())
        .env("ACCORD_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run accord serve");
    for _ in 0..300 {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    child.wait_with_output().expect("output")
}

fn message(skill: &str, data: Value) -> Value {
    json!({"messageId": format!("m-{skill}-{}", rand_suffix()), "role": "ROLE_USER",
           "parts": [{"data": data}], "metadata": {"skillId": skill}})
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// An A2A 1.0 JSON-RPC call with the owner's token: the result, or the error object.
async fn rpc(url: &str, method: &str, params: Value, headers: &[(&str, &str)]) -> Result<Value, Value> {
    let mut request = reqwest::Client::new()
        .post(format!("{url}/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .bearer_auth(TOKEN)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let answer: Value = request.send().await.expect("json-rpc").json().await.expect("json");
    match answer.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(answer["result"].clone()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_minimal_file_serves_an_http_and_a_command_skill_on_every_face() {
    let dir = scratch("minimal");
    std::fs::write(dir.join("agent.toml"), MINIMAL).expect("agent file");
    std::fs::write(dir.join("count.py"), COUNT_PY).expect("count.py");
    let (port, seen) = quote_backend().await;
    let store = format!("sqlite://{}", dir.join("tasks.db").display());
    // The caller authenticates, so that its tasks have an owner of their own.
    let served =
        Served::start(&dir, &["--store", &store, "--bearer-token", TOKEN], &[("QUOTE_PORT", port.to_string())]);
    let url = served.url.clone();

    // The card lists both skills with the file's descriptions.
    let card: Value =
        reqwest::get(format!("{url}/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    assert_eq!(card["name"], "shop");
    let skills: Vec<&str> =
        card["skills"].as_array().expect("skills").iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(skills, ["quote", "count"]);
    assert!(!card.to_string().contains(&port.to_string()), "the backend's address is not on the card");

    // A2A SendMessage: the data part is the input; the backend's JSON answer is the artifact.
    let sent = rpc(&url, "SendMessage", json!({"message": message("quote", json!({"item": "tea"}))}), &[]).await;
    let task = &sent.expect("a task")["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"], json!({"item": "tea", "price": 42}));
    let headers = seen.lock().expect("lock").last().cloned().expect("the backend was called");
    assert_eq!(headers["accord-task-id"], task["id"].as_str().expect("id"));
    assert_eq!(headers["accord-context-id"], task["contextId"].as_str().expect("context"));
    let owner = headers["accord-owner"].clone();
    assert_eq!(owner.len(), 64, "{headers:?}");
    assert!(!headers.values().any(|value| value.contains(TOKEN)), "no token reaches the backend: {headers:?}");

    let sent = rpc(&url, "SendMessage", json!({"message": message("count", json!({"text": "one two three"}))}), &[]);
    let task = &sent.await.expect("a task")["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"], json!({"words": 3}));

    // The input schema holds before the backend is called.
    let calls = seen.lock().expect("lock").len();
    let bad = rpc(&url, "SendMessage", json!({"message": message("quote", json!({"name": "tea"}))}), &[]).await;
    assert_eq!(bad.expect_err("invalid input")["code"], -32602);
    assert_eq!(seen.lock().expect("lock").len(), calls, "an invalid input never reaches the backend");

    // Lucid: a direct invocation, and a task.
    let client = reqwest::Client::new();
    let invoked: Value = client
        .post(format!("{url}/entrypoints/quote/invoke"))
        .json(&json!({"input": {"item": "coffee"}}))
        .send()
        .await
        .expect("invoke")
        .json()
        .await
        .expect("json");
    assert_eq!(invoked["output"], json!({"item": "coffee", "price": 42}), "{invoked}");
    assert!(seen.lock().expect("lock").last().is_some_and(|headers| !headers.contains_key("accord-owner")));

    let created: Value = client
        .post(format!("{url}/tasks"))
        .header("task-access-token", TOKEN)
        .json(&json!({"skillId": "count", "message": {"role": "user", "content": {"text": "{\"text\": \"a b c d\"}"}}}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let id = created["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let mut task = Value::Null;
    for _ in 0..100 {
        task = client
            .get(format!("{url}/tasks/{id}"))
            .header("task-access-token", TOKEN)
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        if task["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(task["result"]["output"], json!({"words": 4}), "{task}");

    // The same caller is the same owner to the backend, on every task.
    rpc(&url, "SendMessage", json!({"message": message("quote", json!({"item": "milk"}))}), &[]).await.expect("task");
    assert_eq!(seen.lock().expect("lock").last().expect("called")["accord-owner"], owner);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_serve_table_sets_flags_and_the_command_line_wins() {
    let dir = scratch("serve-table");
    let store = dir.join("tasks.db");
    let minimal = MINIMAL.replace("/quote\" }", "/quote\", headers = { Authorization = \"Bearer ${QUOTE_SECRET}\" } }");
    assert_ne!(minimal, MINIMAL);
    let file =
        format!("{minimal}\n[serve]\nstore = \"memory\"\nno-landing = true\nbearer-token = \"${{SHOP_OPERATOR}}\"\n");
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    std::fs::write(dir.join("count.py"), COUNT_PY).expect("count.py");
    let store_flag = format!("sqlite://{}", store.display());
    let env = [
        ("QUOTE_PORT", "9".to_owned()),
        ("SHOP_OPERATOR", "operator-secret-0123456789".to_owned()),
        ("QUOTE_SECRET", "backend-secret-9876543210".to_owned()),
    ];
    let served = Served::start(&dir, &["--store", &store_flag], &env);
    let summary = served.lines.join("\n");
    assert!(summary.contains("task store: sqlite"), "the command line wins over the file: {summary}");
    assert!(store.exists(), "the SQLite file was made");
    assert!(!summary.contains("operator-secret"), "a secret from the file is not printed: {summary}");
    // A backend's credential is on no public document.
    for path in ["/.well-known/agent-card.json", "/openapi.json"] {
        let body = reqwest::get(format!("{}{path}", served.url)).await.expect(path).text().await.expect("text");
        assert!(body.contains("quote") && !body.contains("backend-secret"), "{path}: {body}");
    }
    let landing = reqwest::get(format!("{}/", served.url)).await.expect("landing");
    assert_eq!(landing.status(), 404, "no-landing from the file");
    // The operator token from the file is the only credential admitted on the A2A face.
    let denied = rpc(&served.url, "ListTasks", json!({}), &[]).await;
    assert!(denied.is_err(), "the file's bearer token is required: {denied:?}");
    let allowed = reqwest::Client::new()
        .post(format!("{}/a2a/jsonrpc", served.url))
        .header("a2a-version", "1.0")
        .bearer_auth("operator-secret-0123456789")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .expect("list");
    let allowed: Value = allowed.json().await.expect("json");
    assert!(allowed["result"]["tasks"].is_array(), "{allowed}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_file_stops_the_start_with_every_problem_named() {
    let dir = scratch("bad");
    let file = r#"[agent]
name = "shop"
colour = "red"

[[skill]]
id = "quote"
input_schema = { type = "nonsense" }
http = { url = "http://127.0.0.1:${NOT_SET_ANYWHERE}/quote", headers = { Authorization = "Bearer hunter2-secret" } }

[[skill]]
id = "quote"
command = ["python3", "x.py"]

[[skill]]
id = "-bad-id"
command = ["python3", "x.py"]

[[skill]]
id = "missing"
command = ["no-such-program-anywhere"]

[serve]
stroe = "memory"
"#;
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let output = refused(&dir, &[]);
    assert_eq!(output.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "agent.toml: agent.colour: unknown key",
        "skill[0].input_schema: not a valid JSON Schema",
        "NOT_SET_ANYWHERE is not set",
        "skill[1].id: skill id \"quote\" is used twice",
        "program \"no-such-program-anywhere\" is not found",
        "skill[2].id: must be",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("hunter2"), "a header value is never printed:\n{stderr}");

    // A good file whose `[serve]` table is wrong: the table's problem, named by file and key.
    std::fs::write(dir.join("count.py"), COUNT_PY).expect("count.py");
    std::fs::write(dir.join("agent.toml"), format!("{MINIMAL}\n[serve]\nstroe = \"memory\"\nport = \"x\"\n"))
        .expect("agent file");
    let output = refused(&dir, &[("QUOTE_PORT", "9")]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("agent.toml: [serve].stroe: not a setting of the server"), "{stderr}");

    let output = {
        std::fs::write(dir.join("agent.toml"), format!("{MINIMAL}\n[serve]\ngrpc-port = \"x\"\n")).expect("agent file");
        refused(&dir, &[("QUOTE_PORT", "9")])
    };
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("agent.toml: [serve]/[payments]:") && stderr.contains("--grpc-port"), "{stderr}");

    // A price that no rail collects.
    let priced =
        MINIMAL.replace("description = \"Price quote for an item\"", "description = \"Quote\"\nprice = \"10\"");
    std::fs::write(dir.join("agent.toml"), format!("{priced}\n[serve]\nstore = \"memory\"\n")).expect("agent file");
    let output = refused(&dir, &[("QUOTE_PORT", "9")]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("skill \"quote\" is priced, but no payment rail collects its price"), "{stderr}");

    // A price the rail cannot collect: x402's `upto` scheme prices invocations only.
    let upto = format!(
        "{priced}\n[serve]\nstore = \"memory\"\n\n[payments]\npay-rail = \"x402\"\nx402-facilitator = \"http://127.0.0.1:9\"\n\
         x402-scheme = \"upto\"\npay-to = \"shop\"\npay-network = \"accord:local\"\npay-asset = \"accord-credit\"\n"
    );
    std::fs::write(dir.join("agent.toml"), upto).expect("agent file");
    let output = refused(&dir, &[("QUOTE_PORT", "9")]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("x402 upto only supports invoke operations"), "{stderr}");

    // `--config` is for one agent: not with the demo's flags.
    let output = Command::new(ACCORD)
        .args(["serve", "--config", "agent.toml", "--agent", "conformance"])
        .current_dir(&dir)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be used with"));
    let missing = Command::new(ACCORD).args(["serve", "--config", "missing.toml"]).current_dir(&dir).output();
    let missing = missing.expect("run");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("missing.toml"), "{missing:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The workspace's facilitator binary, beside `accord`; built when this test runs alone.
fn facilitator_binary() -> PathBuf {
    let accord = Path::new(ACCORD);
    let binary = accord.with_file_name(format!("accord-facilitator{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "accord-facilitator", "--bin", "accord-facilitator"])
            .status()
            .expect("cargo build");
        assert!(status.success(), "building accord-facilitator");
    }
    binary
}

/// The facilitator process, killed on drop.
struct Facilitator {
    child: Child,
    url: String,
}

impl Facilitator {
    fn spawn() -> Self {
        let mut child = Command::new(facilitator_binary())
            .args(["--host", "127.0.0.1", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn accord-facilitator");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("first line");
        let url = line.trim().strip_prefix("accord-facilitator listening on ").expect("its address").to_owned();
        Self { child, url }
    }

    async fn settlements(&self) -> Vec<Value> {
        let ledger: Value =
            reqwest::get(format!("{}/ledger", self.url)).await.expect("ledger").json().await.expect("json");
        ledger["settlements"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Facilitator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The follow-up that pays `task` (input-required with an x402 offer in its status message): a
/// new wallet signs the offer, and the payload goes in the message's metadata.
fn x402_payment(task: &Value) -> Value {
    let asked = &task["status"]["message"]["metadata"];
    let wallet = accord_payments::Wallet::generate().expect("wallet");
    let required = serde_json::to_vec(&asked["x402.payment.required"]).expect("json");
    let headers = wallet.pay(402, &HeaderMap::new(), &required).expect("payable").expect("an offer");
    let header = headers["payment-signature"].to_str().expect("ascii");
    let payload: Value =
        serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(header).expect("base64"))
            .expect("json");
    json!({"messageId": format!("pay-{}", rand_suffix()), "role": "ROLE_USER", "taskId": task["id"],
        "parts": [{"text": "payment"}],
        "metadata": {"x402.payment.status": "payment-submitted", "x402.payment.payload": payload}})
}

#[tokio::test(flavor = "multi_thread")]
async fn an_x402_rail_from_the_file_collects_on_the_a2a_and_lucid_faces() {
    let facilitator = Facilitator::spawn();
    let dir = scratch("x402");
    let priced =
        MINIMAL.replace("description = \"Price quote for an item\"", "description = \"Quote\"\nprice = \"1000\"");
    let file = format!(
        "{priced}\n[serve]\nstore = \"sqlite://tasks.db\"\n\n[payments]\npay-rail = \"x402\"\n\
         x402-facilitator = \"${{FACILITATOR}}\"\nx402-scheme = \"accord-voucher\"\npay-to = \"shop\"\n\
         pay-network = \"accord:local\"\npay-asset = \"accord-credit\"\n"
    );
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    std::fs::write(dir.join("count.py"), COUNT_PY).expect("count.py");
    let (port, seen) = quote_backend().await;
    let env = [("QUOTE_PORT", port.to_string()), ("FACILITATOR", facilitator.url.clone())];
    let served = Served::start(&dir, &["--bearer-token", TOKEN], &env);
    let url = served.url.clone();
    assert!(
        served.lines.iter().any(|line| line.starts_with("payments: x402 through ") && line.contains(&facilitator.url)),
        "{:?}",
        served.lines
    );

    // A2A with the x402 extension: the task asks for payment, the skill has not run.
    let extension = [("a2a-extensions", X402_EXTENSION)];
    let sent = rpc(&url, "SendMessage", json!({"message": message("quote", json!({"item": "tea"}))}), &extension);
    let task = sent.await.expect("a task")["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{task}");
    let asked = &task["status"]["message"]["metadata"];
    assert_eq!(asked["x402.payment.status"], "payment-required", "{task}");
    let offer = &asked["x402.payment.required"]["accepts"][0];
    assert_eq!((offer["amount"].as_str(), offer["payTo"].as_str()), (Some("1000"), Some("shop")), "{offer}");
    assert!(seen.lock().expect("lock").is_empty(), "nothing runs before the payment");

    // The wallet pays; the facilitator settles once; the skill runs with the original input.
    let follow_up = x402_payment(&task);
    let done = rpc(&url, "SendMessage", json!({"message": follow_up}), &extension).await.expect("paid")["task"].clone();
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["artifacts"][0]["parts"][0]["data"], json!({"item": "tea", "price": 42}));
    assert_eq!(done["status"]["message"]["metadata"]["x402.payment.status"], "payment-completed", "{done}");
    assert_eq!(facilitator.settlements().await.len(), 1, "settled once");

    // Lucid: unpaid is 402; `accord invoke --wallet` pays through the same facilitator.
    let unpaid = reqwest::Client::new()
        .post(format!("{url}/entrypoints/quote/invoke"))
        .json(&json!({"input": {"item": "tea"}}))
        .send()
        .await
        .expect("invoke");
    assert_eq!(unpaid.status(), 402);
    let wallet_file = dir.join("wallet.json");
    let made = Command::new(ACCORD).args(["wallet", "new", "--out"]).arg(&wallet_file).output().expect("wallet");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let paid = Command::new(ACCORD)
        .args(["invoke", &url, "quote", r#"{"item":"cocoa"}"#, "--wallet"])
        .arg(&wallet_file)
        .output()
        .expect("invoke");
    assert!(paid.status.success(), "{}", String::from_utf8_lossy(&paid.stderr));
    let output: Value = serde_json::from_slice(&paid.stdout).expect("json");
    assert_eq!(output, json!({"item": "cocoa", "price": 42}));
    assert_eq!(facilitator.settlements().await.len(), 2, "the Lucid payment settled through the facilitator");
    // The free skill stays free.
    let free = rpc(&url, "SendMessage", json!({"message": message("count", json!({"text": "x y"}))}), &[]).await;
    assert_eq!(free.expect("task")["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_s_tools_are_a2a_tasks_and_a_cancel_reaches_the_server() {
    let dir = scratch("mcp");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("../accord-backends/tests/data/mcp_tools.py");
    let marker = dir.join("cancelled.jsonl");
    let file = format!(
        "[agent]\nname = \"shop\"\n\n[[mcp]]\ncommand = {{ argv = [\"python3\", {:?}], env = [\"MCP_CANCELLED_FILE\"] }}\n\
         scope = \"tools:use\"\n\n[serve]\nstore = \"sqlite://tasks.db\"\n",
        server.display().to_string()
    );
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let served =
        Served::start(&dir, &["--bearer-token", TOKEN], &[("MCP_CANCELLED_FILE", marker.display().to_string())]);
    let url = served.url.clone();

    // The tools are on the card, with their descriptions.
    let card: Value =
        reqwest::get(format!("{url}/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let skills: Vec<&str> =
        card["skills"].as_array().expect("skills").iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(skills, ["add", "echo", "slow", "fail"]);

    // The tools' scope holds on the A2A face too: an anonymous caller is refused; the operator's
    // token (`--bearer-token`) holds every scope the file names.
    let anonymous: Value = reqwest::Client::new()
        .post(format!("{url}/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                      "params": {"message": message("add", json!({"a": 2, "b": 40}))}}))
        .send()
        .await
        .expect("json-rpc")
        .json()
        .await
        .expect("json");
    assert_eq!(anonymous["error"]["code"], -32095, "{anonymous}");
    assert_eq!(anonymous["error"]["message"], "scope 'tools:use' required for skill 'add'");

    // A tool call as a task: structured content is the artifact.
    let sent = rpc(&url, "SendMessage", json!({"message": message("add", json!({"a": 2, "b": 40}))}), &[]).await;
    let task = &sent.expect("a task")["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"], json!({"sum": 42}));

    // A tool error is a failed task with the tool's text.
    let sent = rpc(&url, "SendMessage", json!({"message": message("fail", json!({}))}), &[]).await;
    let task = &sent.expect("a task")["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
    assert!(task.to_string().contains("the tool failed on purpose"), "{task}");

    // A long call, cancelled mid-run: the task ends canceled and the server hears of it.
    let params =
        json!({"message": message("slow", json!({"seconds": 30})), "configuration": {"returnImmediately": true}});
    let task = rpc(&url, "SendMessage", params, &[]).await.expect("a task")["task"].clone();
    let id = task["id"].as_str().expect("id").to_owned();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let canceled = rpc(&url, "CancelTask", json!({"id": id}), &[]).await.expect("canceled");
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
    let mut seen = String::new();
    for _ in 0..100 {
        seen = std::fs::read_to_string(&marker).unwrap_or_default();
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen.contains("the task was cancelled"), "the server got notifications/cancelled: {seen:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_that_names_no_skill_runs_the_files_default_skill() {
    let dir = scratch("default-skill");
    let file = MINIMAL.replace("description = \"A shop's services behind A2A\"\n", "default_skill = \"count\"\n");
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    std::fs::write(dir.join("count.py"), COUNT_PY).expect("count.py");
    let served = Served::start(&dir, &["--store", "memory", "--bearer-token", TOKEN], &[("QUOTE_PORT", "9".into())]);
    assert!(served.lines.iter().any(|line| line == "default skill: count"), "{:?}", served.lines);
    let unnamed = json!({"messageId": "m-unnamed", "role": "ROLE_USER", "parts": [{"data": {"text": "a b"}}]});
    let sent = rpc(&served.url, "SendMessage", json!({"message": unnamed}), &[]).await;
    let task = &sent.expect("a task")["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"], json!({"words": 2}), "the file's default, not its first");

    drop(served);
    // Without the key, the banner says the first skill is the default.
    std::fs::write(dir.join("agent.toml"), MINIMAL).expect("agent file");
    let first = Served::start(&dir, &["--store", "memory"], &[("QUOTE_PORT", "9".into())]);
    assert!(first.lines.iter().any(|line| line == "default skill: quote (the first)"), "{:?}", first.lines);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads `file`'s lines (a call log), empty when it does not exist yet.
fn calls(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file).unwrap_or_default().lines().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_sigkill_a_read_only_tool_runs_again_and_a_destructive_one_fails_interrupted() {
    let dir = scratch("interrupted");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("../accord-backends/tests/data/mcp_tools.py");
    let log = dir.join("calls.log");
    let file = format!(
        "[agent]\nname = \"shop\"\n\n[[mcp]]\ncommand = {{ argv = [\"python3\", {:?}], env = [\"MCP_CALLS_FILE\"], env_set = {{ MCP_HINT_TOOLS = \"1\" }} }}\n\n\
         [serve]\nstore = \"sqlite://tasks.db\"\n",
        server.display().to_string()
    );
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let env = [("MCP_CALLS_FILE", log.display().to_string())];
    let fast = ["--bearer-token", TOKEN, "--lease-ttl", "1", "--recovery-interval", "0.25"];
    let first = Served::start(&dir, &[&fast[..], &["--worker-id", "first"]].concat(), &env);
    let start = |skill: &str| {
        let params =
            json!({"message": message(skill, json!({"seconds": 4})), "configuration": {"returnImmediately": true}});
        let url = first.url.clone();
        async move {
            rpc(&url, "SendMessage", params, &[]).await.expect("a task")["task"]["id"].as_str().expect("id").to_owned()
        }
    };
    let peek = start("peek").await;
    let charge = start("charge").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while calls(&log).len() < 2 {
        assert!(std::time::Instant::now() < deadline, "both tools were called: {:?}", calls(&log));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The worker dies with both calls under way.
    drop(first);

    let second = Served::start(&dir, &[&fast[..], &["--worker-id", "second"]].concat(), &env);
    let ended = |id: String| {
        let url = second.url.clone();
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            loop {
                let task = rpc(&url, "GetTask", json!({"id": id}), &[]).await.expect("the task");
                let state = task["status"]["state"].as_str().unwrap_or_default().to_owned();
                if ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"].contains(&state.as_str()) {
                    return task;
                }
                assert!(std::time::Instant::now() < deadline, "the task ends after recovery: {task}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let peeked = ended(peek).await;
    assert_eq!(peeked["status"]["state"], "TASK_STATE_COMPLETED", "the read-only tool ran again: {peeked}");
    let charged = ended(charge).await;
    assert_eq!(charged["status"]["state"], "TASK_STATE_FAILED", "{charged}");
    assert!(charged.to_string().contains("interrupted"), "failed as interrupted: {charged}");
    let log = calls(&log);
    assert_eq!(log.iter().filter(|call| *call == "peek").count(), 2, "{log:?}");
    assert_eq!(log.iter().filter(|call| *call == "charge").count(), 1, "never called twice: {log:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_needs_mcp_tasks_is_left_off_the_card_with_a_warning_in_the_log() {
    let dir = scratch("task-tool");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("../accord-backends/tests/data/mcp_tools.py");
    let file = format!(
        "[agent]\nname = \"shop\"\n\n[[mcp]]\nname = \"tools\"\ncommand = {{ argv = [\"python3\", {:?}], env_set = {{ MCP_TASK_TOOL = \"1\" }} }}\n",
        server.display().to_string()
    );
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let mut child = Command::new(ACCORD)
        .args(["serve", "--port", "0", "--store", "memory", "--config", "agent.toml"])
        .current_dir(&dir)
        .env("ACCORD_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start accord serve");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = stdout.next().expect("a first line").expect("text");
    let url = first.rsplit(' ').next().expect("url").trim_end_matches('/').to_owned();
    let card: Value =
        reqwest::get(format!("{url}/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let skills: Vec<&str> =
        card["skills"].as_array().expect("skills").iter().filter_map(|skill| skill["id"].as_str()).collect();
    assert!(skills.contains(&"echo") && !skills.contains(&"render"), "{skills:?}");
    let _ = child.kill();
    let output = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Logged while the MCP server is started: before the log was installed first, it was lost.
    assert!(
        stderr.contains("tools \"render\" of mcp server 'tools' are left out: they require MCP tasks"),
        "the warning names the tool:\n{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn health_and_metrics_show_an_mcp_server_that_dies_and_comes_back_and_stay_200() {
    let dir = scratch("health");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("../accord-backends/tests/data/mcp_tools.py");
    // The server exits a second after each `initialize`: Accord brings it back each time.
    let file = format!(
        "[agent]\nname = \"shop\"\n\n[[mcp]]\nname = \"tools\"\ncommand = {{ argv = [\"python3\", {:?}], env_set = {{ MCP_EXIT_AFTER = \"1\" }} }}\n",
        server.display().to_string()
    );
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let served = Served::start(&dir, &["--store", "memory"], &[]);
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut seen_down = false;
    loop {
        let response = client.get(format!("{}/health", served.url)).send().await.expect("health");
        assert_eq!(response.status(), 200, "a tool server down does not take the agent out");
        let health: Value = response.json().await.expect("json");
        assert_eq!(health["ok"], true, "{health}");
        let tools = &health["backends"][0];
        assert_eq!(tools["name"], "tools", "{health}");
        seen_down |= tools["up"] == false;
        if tools["reconnects"].as_u64().unwrap_or(0) >= 1 && seen_down {
            assert!(tools["error"].as_str().is_some_and(|error| !error.is_empty()), "why it went down: {health}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the server's death and return show: {health}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The same in the metrics, brought up to date every few seconds.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let metrics =
            client.get(format!("{}/metrics", served.url)).send().await.expect("metrics").text().await.expect("text");
        if metrics.contains("accord_backend_up{backend=\"tools\"}")
            && metrics.contains("accord_backend_reconnects_total{backend=\"tools\"}")
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the backend's metrics appear: {metrics}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn paths_in_the_serve_table_are_relative_to_the_file_and_the_push_key_lives_beside_the_store() {
    let dir = scratch("paths");
    let elsewhere = scratch("paths-cwd");
    let file = MINIMAL.to_owned() + "\n[serve]\nstore = \"sqlite://tasks.db\"\n";
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let mut child = Command::new(ACCORD)
        .args(["serve", "--port", "0", "--config"])
        .arg(dir.join("agent.toml"))
        .current_dir(&elsewhere)
        .env("QUOTE_PORT", "9")
        .env("ACCORD_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start accord serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        let done = line.starts_with("task store: ");
        lines.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let store = format!("task store: sqlite://{} (durable)", dir.join("tasks.db").display());
    assert!(lines.contains(&store), "{lines:?}");
    let key = format!("push key: {}", dir.join("accord-push.key").display());
    assert!(lines.contains(&key), "{lines:?}");
    assert!(dir.join("tasks.db").exists() && dir.join("accord-push.key").exists());
    assert!(!elsewhere.join("tasks.db").exists() && !elsewhere.join("accord-push.key").exists());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

/// `sdk-echo` (the official Rust A2A SDK's echo agent, a binary of `accord-bench`): build it first
/// with `cargo build -p accord-bench --bin sdk-echo`; it is looked for beside `accord`.
fn sdk_echo() -> (Child, String) {
    sdk_echo_with(&[])
}

/// The echo agent with more arguments (`--no-streaming`).
fn sdk_echo_with(args: &[&str]) -> (Child, String) {
    let binary = Path::new(ACCORD).with_file_name(format!("sdk-echo{}", std::env::consts::EXE_SUFFIX));
    assert!(binary.exists(), "{} is missing: `cargo build -p accord-bench --bin sdk-echo`", binary.display());
    let mut child = Command::new(binary)
        .args(["--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sdk-echo");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the listening line");
    let base = line.trim().strip_prefix("sdk-echo listening on ").expect("the listening line").to_owned();
    (child, base)
}

/// What a webhook received: each delivery's notification token and body.
type Deliveries = Vec<(Option<String>, Value)>;

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_a2a_agent_s_skills_are_served_as_tasks_behind_accord_s_own_scopes() {
    let dir = scratch("a2a");
    let (mut echo, base) = sdk_echo();
    let file = format!(
        "[agent]\nname = \"shop\"\n\n[[a2a]]\nurl = \"{base}\"\nname = \"echo\"\nprefix = \"peer.\"\n\
         scope = \"peer:use\"\n\n[serve]\nstore = \"sqlite://tasks.db\"\n"
    );
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let served = Served::start(&dir, &["--bearer-token", TOKEN, "--webhook-allow", "loopback"], &[]);
    let url = served.url.clone();

    let card: Value =
        reqwest::get(format!("{url}/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let skills: Vec<&str> =
        card["skills"].as_array().expect("skills").iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(skills, ["peer.echo"]);
    assert_eq!(card["skills"][0]["description"], "Echoes the message");

    // Accord's scope holds in front of the remote agent: an anonymous caller is refused.
    let anonymous: Value = reqwest::Client::new()
        .post(format!("{url}/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                      "params": {"message": message("peer.echo", json!("hi"))}}))
        .send()
        .await
        .expect("json-rpc")
        .json()
        .await
        .expect("json");
    assert_eq!(anonymous["error"]["code"], -32095, "{anonymous}");

    // The operator's token: the message reaches the echo agent and its artifact comes back.
    let text = json!({"messageId": format!("m-{}", rand_suffix()), "role": "ROLE_USER",
                      "parts": [{"text": "hello"}], "metadata": {"skillId": "peer.echo"}});
    let task = rpc(&url, "SendMessage", json!({"message": text}), &[]).await.expect("a task")["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["artifactId"], "echo", "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "echo: hello", "{task}");
    let client = reqwest::Client::new();
    let health = |client: reqwest::Client| {
        let url = url.clone();
        async move {
            let response = client.get(format!("{url}/health")).send().await.expect("health");
            assert_eq!(response.status(), 200, "a remote agent down does not take the agent out");
            let health: Value = response.json().await.expect("json");
            assert_eq!(health["backends"].as_array().map(Vec::len), Some(1), "{health}");
            health["backends"][0].clone()
        }
    };
    let echo_health = health(client.clone()).await;
    assert_eq!((&echo_health["name"], &echo_health["up"]), (&json!("echo"), &json!(true)), "{echo_health}");
    assert_eq!((&echo_health["calls"], &echo_health["failures"]), (&json!(1), &json!(0)), "{echo_health}");

    // Push: Accord delivers the fronted task's updates to the caller's webhook (the remote agent
    // has no push of its own here).
    let delivered: Arc<Mutex<Deliveries>> = Arc::default();
    let kept = Arc::clone(&delivered);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::Json<Value>| {
            let token = headers.get("x-a2a-notification-token").and_then(|v| v.to_str().ok()).map(str::to_owned);
            kept.lock().expect("lock").push((token, body.0));
            async { "ok" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let hook = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let text = json!({"messageId": format!("m-{}", rand_suffix()), "role": "ROLE_USER",
                      "parts": [{"text": "pushed"}], "metadata": {"skillId": "peer.echo"}});
    let params = json!({"message": text, "configuration": {
        "returnImmediately": true, "taskPushNotificationConfig": {"url": hook, "token": "hook-token"}}});
    let task = rpc(&url, "SendMessage", params, &[]).await.expect("a task")["task"].clone();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let seen = delivered.lock().expect("lock").clone();
        let done = seen.iter().find(|(_, body)| {
            let task = body.get("task").or_else(|| body.get("statusUpdate")).unwrap_or(body);
            task["status"]["state"] == "TASK_STATE_COMPLETED"
        });
        if let Some((token, _)) = done {
            assert_eq!(token.as_deref(), Some("hook-token"));
            let all = serde_json::to_string(&seen).expect("json");
            assert!(all.contains(task["id"].as_str().expect("id")) && all.contains("echo: pushed"), "{all}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the webhook got the completed task: {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The echo agent gone, a run fails at once as unavailable, naming it; /health says so.
    let _ = echo.kill();
    let _ = echo.wait();
    let text = json!({"messageId": format!("m-{}", rand_suffix()), "role": "ROLE_USER",
                      "parts": [{"text": "again"}], "metadata": {"skillId": "peer.echo"}});
    let task = rpc(&url, "SendMessage", json!({"message": text}), &[]).await.expect("a task")["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
    let status = task["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(status.starts_with("backend_unavailable: remote A2A agent 'echo' is unreachable"), "{status}");
    let echo_health = health(client.clone()).await;
    assert_eq!(echo_health["up"], false, "{echo_health}");
    assert_eq!((&echo_health["calls"], &echo_health["failures"]), (&json!(3), &json!(1)), "{echo_health}");
    let error = echo_health["error"].as_str().unwrap_or_default();
    assert!(error.contains("refused"), "why it is down: {echo_health}");
    // The same in the metrics, brought up to date every few seconds.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let metrics = client.get(format!("{url}/metrics")).send().await.expect("metrics").text().await.expect("text");
        let line = |name: &str| metrics.lines().find(|line| line.starts_with(name)).map(str::to_owned);
        if line("accord_backend_up{backend=\"echo\"}").is_some_and(|line| line.ends_with(" 0"))
            && line("accord_backend_failures_total{backend=\"echo\"}").is_some_and(|line| line.ends_with(" 1"))
        {
            assert!(metrics.contains("accord_backend_call_duration_seconds_count{backend=\"echo\"} 3"), "{metrics}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the remote agent's metrics appear: {metrics}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_a2a_agent_s_runs_have_a_span_that_names_it() {
    let dir = scratch("a2a-span");
    let (mut echo, base) = sdk_echo();
    let file = format!("[agent]\nname = \"shop\"\n\n[[a2a]]\nurl = \"{base}\"\nname = \"echo\"\nprefix = \"peer.\"\n");
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let mut child = Command::new(ACCORD)
        .args(["serve", "--port", "0", "--store", "memory", "--config", "agent.toml", "--bearer-token", TOKEN])
        .args(["--log-format", "json"])
        .current_dir(&dir)
        .env("ACCORD_LOG", "warn,accord::task=debug,accord::backend=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start accord serve");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("the listening line");
    let url = first.trim().rsplit(' ').next().expect("url").trim_end_matches('/').to_owned();
    // The echo agent gone, the run's WARN line is logged within its span.
    let _ = echo.kill();
    let _ = echo.wait();
    let text = json!({"messageId": format!("m-{}", rand_suffix()), "role": "ROLE_USER",
                      "parts": [{"text": "hi"}], "metadata": {"skillId": "peer.echo"}});
    let task = rpc(&url, "SendMessage", json!({"message": text}), &[]).await.expect("a task")["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
    let _ = child.kill();
    let output = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["fields"]["message"] == "a call to a remote A2A agent failed")
        .unwrap_or_else(|| panic!("the failure is logged:\n{stderr}"));
    assert_eq!(line["level"], "WARN", "{line}");
    let spans = line["spans"].as_array().expect("spans");
    let names: Vec<&str> = spans.iter().filter_map(|span| span["name"].as_str()).collect();
    assert_eq!(names, ["task_run", "backend_call"], "{line}");
    let call = &spans[1];
    assert_eq!(
        (&call["backend"], &call["kind"], &call["remote_skill"]),
        (&json!("echo"), &json!("a2a"), &json!("echo"))
    );
    assert_eq!(spans[0]["task_id"], task["id"], "{line}");
    assert!(!stderr.contains(TOKEN), "no token in the log");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_priced_remote_a2a_skill_is_paid_through_a_rail_before_the_remote_agent_hears_of_it() {
    let facilitator = Facilitator::spawn();
    let dir = scratch("a2a-paid");
    let (mut echo, base) = sdk_echo();
    let file = format!(
        "[agent]\nname = \"shop\"\n\n[[a2a]]\nurl = \"{base}\"\nname = \"echo\"\nprefix = \"peer.\"\nprice = \"700\"\n\n\
         [serve]\nstore = \"sqlite://tasks.db\"\n\n[payments]\npay-rail = \"x402\"\nx402-facilitator = \"${{FACILITATOR}}\"\nx402-scheme = \"accord-voucher\"\n\
         pay-to = \"shop\"\npay-network = \"accord:local\"\npay-asset = \"accord-credit\"\n"
    );
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let served = Served::start(&dir, &[], &[("FACILITATOR", facilitator.url.clone())]);
    let url = served.url.clone();
    let peer = accord_client::a2a::A2aClient::from_card_url(&base, Default::default()).await.expect("peer client");
    let remote_tasks =
        || async { peer.list_tasks(accord_types::a2a::ListTasksRequest::default()).await.expect("ListTasks").tasks };

    // The task asks for payment; the remote agent has heard nothing.
    let extension = [("a2a-extensions", X402_EXTENSION)];
    let text = json!({"messageId": format!("m-{}", rand_suffix()), "role": "ROLE_USER",
                      "parts": [{"text": "hello"}], "metadata": {"skillId": "peer.echo"}});
    let task = rpc(&url, "SendMessage", json!({"message": text}), &extension).await.expect("a task")["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{task}");
    let asked = &task["status"]["message"]["metadata"];
    assert_eq!(asked["x402.payment.required"]["accepts"][0]["amount"], "700", "{task}");
    assert!(remote_tasks().await.is_empty(), "nothing reaches the remote agent before the payment");

    // Paid: the caller's first message (not the payment) reaches the remote agent, once.
    let follow_up = x402_payment(&task);
    let done = rpc(&url, "SendMessage", json!({"message": follow_up}), &extension).await.expect("paid")["task"].clone();
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "echo: hello", "{done}");
    assert_eq!(done["status"]["message"]["metadata"]["x402.payment.status"], "payment-completed", "{done}");
    assert_eq!(facilitator.settlements().await.len(), 1, "settled once");
    let remote = remote_tasks().await;
    assert_eq!(remote.len(), 1, "{remote:?}");
    let sent: Vec<String> =
        remote[0].history.iter().flat_map(|m| m.parts.iter().filter_map(|p| p.as_text().map(str::to_owned))).collect();
    assert!(sent.contains(&"hello".to_owned()) && !sent.iter().any(|text| text == "payment"), "{sent:?}");

    // Unpaid on the Lucid face: 402, and still nothing more at the remote agent.
    let unpaid = reqwest::Client::new()
        .post(format!("{url}/entrypoints/peer.echo/invoke"))
        .json(&json!({"input": "hi"}))
        .send()
        .await
        .expect("invoke");
    assert_eq!(unpaid.status(), 402);
    assert_eq!(remote_tasks().await.len(), 1);
    drop(served);
    let _ = echo.kill();
    let _ = echo.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_remote_a2a_agent_that_cannot_be_reached_stops_the_start_with_code_2() {
    let dir = scratch("a2a-down");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let file = format!(
        "[agent]\nname = \"shop\"\n\n[[a2a]]\nurl = \"http://127.0.0.1:{port}/?key=${{PEER_KEY}}\"\n\
         headers = {{ Authorization = \"Bearer ${{PEER_KEY}}\" }}\n"
    );
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let started = std::time::Instant::now();
    let output = refused(&dir, &[("PEER_KEY", "peer-secret-value")]);
    assert_eq!(output.status.code(), Some(2), "a usage error: {output:?}");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = format!("agent.toml: a2a[0]: remote A2A agent 'a2a[0]' at http://127.0.0.1:{port}/: unreachable: ");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("a2a[0]")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains(&line), "{stderr}");
    assert!(!stderr.contains("peer-secret-value"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_task_is_followed_again_after_a_crash_and_never_sent_twice() {
    // Subscribed to again over JSON-RPC and over HTTP+JSON; polled again when the remote agent
    // does not stream.
    for (binding, echo_args) in [("JSONRPC", &[][..]), ("HTTP+JSON", &[][..]), ("JSONRPC", &["--no-streaming"][..])] {
        followed_again_after_a_crash(binding, echo_args).await;
    }
}

async fn followed_again_after_a_crash(binding: &str, echo_args: &[&str]) {
    let dir = scratch("a2a-crash");
    let (mut echo, base) = sdk_echo_with(echo_args);
    let file = format!(
        "[agent]\nname = \"shop\"\n\n[[a2a]]\nurl = \"{base}\"\nname = \"echo\"\nprefix = \"peer.\"\n\
         binding = \"{binding}\"\n\n[serve]\nstore = \"sqlite://tasks.db\"\n"
    );
    std::fs::write(dir.join("agent.toml"), file).expect("agent file");
    let args = ["--bearer-token", TOKEN, "--lease-ttl", "1", "--recovery-interval", "0.25"];
    let served = Served::start(&dir, &args, &[]);

    // A task of 4 s at the echo agent, under way there.
    let text = json!({"messageId": format!("m-{}", rand_suffix()), "role": "ROLE_USER",
                      "parts": [{"text": "{\"seconds\": 4}"}], "metadata": {"skillId": "peer.echo"}});
    let params = json!({"message": text, "configuration": {"returnImmediately": true}});
    let task = rpc(&served.url, "SendMessage", params, &[]).await.expect("a task")["task"].clone();
    let id = task["id"].as_str().expect("id").to_owned();
    let peer = accord_client::a2a::A2aClient::from_card_url(&base, Default::default()).await.expect("peer client");
    let remote_tasks =
        || async { peer.list_tasks(accord_types::a2a::ListTasksRequest::default()).await.expect("ListTasks").tasks };
    for _ in 0..100 {
        if !remote_tasks().await.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(remote_tasks().await.len(), 1);
    // The remote task's id is saved with the task before anything of it is forwarded.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The worker dies mid-task; another starts on the same store and recovers it.
    drop(served);
    let served = Served::start(&dir, &args, &[]);
    let mut state = Value::Null;
    for _ in 0..300 {
        let task = rpc(&served.url, "GetTask", json!({"id": id}), &[]).await.expect("the task");
        state = task["status"]["state"].clone();
        if matches!(state.as_str(), Some("TASK_STATE_COMPLETED" | "TASK_STATE_FAILED" | "TASK_STATE_CANCELED")) {
            assert_eq!(state, "TASK_STATE_COMPLETED", "{binding} {echo_args:?}: {task}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, "TASK_STATE_COMPLETED", "{binding} {echo_args:?}: the task never ended");
    // Followed again, never sent again: the echo agent has one task, and it completed.
    let remote = remote_tasks().await;
    assert_eq!(remote.len(), 1, "{binding} {echo_args:?}: {remote:?}");
    assert_eq!(remote[0].status.state, accord_types::a2a::TaskState::Completed);
    drop(served);
    let _ = echo.kill();
    let _ = echo.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
