//! Paid tasks on the official A2A faces through the x402 extension (v0.2, standalone flow), over
//! real HTTP: an Accord server on loopback collecting through the x402 rail from the real
//! `accord-facilitator` process. Each scenario — payment required, submitted, completed; refused;
//! uncertain; asked again; another rail — ends with the task, its status message metadata and
//! the facilitator's ledger in the documented state.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AnonymousAccess, RuntimeConfig, ServiceConfig, TaskRuntime, TaskStore};
use accord_engine::{Agent, Completion, Outcome, Pricing, Run, Skill, SkillError};
use accord_payments::voucher::SCHEME;
use accord_payments::{MppRail, Wallet, X402Rail};
use accord_server::{AgentRouterExt, PaymentsConfig, ServerConfig};
use accord_store_sqlite::{SqliteStore, SqliteStoreConfig};
use accord_test_support::TestServer;
use base64::Engine as _;
use serde_json::{Value, json};

mod support;
use support::{Facilitator, Scratch, scratch};

const PRICE: &str = "1000";
const EXTENSION: &str = "https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2";

/// `work` is priced per task: it fails when asked to and otherwise completes with its input.
/// `free` is not priced.
fn agent() -> Agent {
    let pricing = Pricing { invoke: Some(PRICE.into()), task: Some(PRICE.into()), ..Pricing::default() };
    Agent::builder("paid-a2a-agent")
        .skill(
            Skill::builder("work")
                .description("Paid work")
                .pricing(pricing)
                .input_schema(json!({"type": "object", "required": ["job"]}))
                .invoke(|run: Run| async move {
                    if run.input().get("fail") == Some(&json!(true)) {
                        return Err(SkillError::new("asked_to_fail", "the input asked for a failure"));
                    }
                    Ok(Outcome::Completed(Completion::new(json!({"done": true, "input": run.input().clone()}))))
                }),
        )
        .skill(Skill::builder("free").invoke(|run: Run| async move {
            Ok(Outcome::Completed(Completion::new(json!({"free": true, "input": run.input().clone()}))))
        }))
        .build()
        .expect("agent")
}

struct Paid {
    facilitator: Facilitator,
    server: TestServer,
    wallet: Wallet,
    _dir: Scratch,
}

/// A server collecting with the x402 rail (`mpp`: with the MPP rail instead).
async fn paid(mpp: bool) -> Paid {
    let facilitator = Facilitator::spawn();
    let dir = scratch();
    let store: Arc<dyn TaskStore> =
        Arc::new(SqliteStore::open(SqliteStoreConfig::new(dir.0.join("tasks.db"))).await.expect("sqlite store"));
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), store, RuntimeConfig::default());
    let rail: Arc<dyn accord_payments::PaymentRail> = if mpp {
        Arc::new(MppRail::new("paid-agent.test", b"an-mpp-challenge-secret-of-32-bytes!").expect("mpp rail"))
    } else {
        Arc::new(
            X402Rail::new(&facilitator.url)
                .expect("rail")
                .with_scheme(SCHEME)
                .with_verify_timeout(Duration::from_millis(1500))
                .with_settle_timeout(Duration::from_millis(1500)),
        )
    };
    let payments = PaymentsConfig::new(rail, "accord-credit", "accord:local", "shop");
    payments.check(&agent).expect("prices the rail can collect");
    // Listing lets the scenarios see that nothing was reserved.
    let service = ServiceConfig::default().anonymous(AnonymousAccess::ListShared);
    let config = ServerConfig::default().tasks(runtime).payments(payments).task_service(service);
    let server = TestServer::start(agent.router_with(config)).await;
    Paid { facilitator, server, wallet: Wallet::generate().expect("wallet"), _dir: dir }
}

fn new_message(skill: &str, input: Value) -> Value {
    json!({"messageId": uuid(), "role": "ROLE_USER", "parts": [{"data": input}], "metadata": {"skillId": skill}})
}

fn follow_up(task_id: &str, metadata: Value) -> Value {
    json!({"messageId": uuid(), "role": "ROLE_USER", "taskId": task_id,
           "parts": [{"text": "Here is the payment authorization."}], "metadata": metadata})
}

fn submitted(task_id: &str, payload: &Value) -> Value {
    follow_up(task_id, json!({"x402.payment.status": "payment-submitted", "x402.payment.payload": payload}))
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("message-{}", NEXT.fetch_add(1, Ordering::SeqCst))
}

fn metadata(task: &Value) -> &Value {
    &task["status"]["message"]["metadata"]
}

impl Paid {
    /// A JSON-RPC call: the result, or the error object.
    async fn rpc(&self, method: &str, params: Value) -> Result<Value, Value> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response = reqwest::Client::new()
            .post(self.server.url("/a2a/jsonrpc"))
            .header("a2a-version", "1.0")
            .header("a2a-extensions", EXTENSION)
            .json(&body)
            .send()
            .await
            .expect("json-rpc");
        let answer: Value = response.json().await.expect("json");
        match answer.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(answer["result"].clone()),
        }
    }

    /// `SendMessage` over JSON-RPC: the task.
    async fn send(&self, message: Value) -> Value {
        let result = self.rpc("SendMessage", json!({"message": message})).await.expect("a task");
        result["task"].clone()
    }

    /// `POST /message:send` over HTTP+JSON: the status and the body.
    async fn rest_send(&self, message: Value) -> (u16, Value) {
        let response = reqwest::Client::new()
            .post(self.server.url("/a2a/rest/message:send"))
            .header("a2a-version", "1.0")
            .json(&json!({"message": message}))
            .send()
            .await
            .expect("rest");
        (response.status().as_u16(), response.json().await.expect("json"))
    }

    async fn get(&self, id: &str) -> Value {
        self.rpc("GetTask", json!({"id": id})).await.expect("task")
    }

    async fn tasks(&self) -> Vec<Value> {
        let list = self.rpc("ListTasks", json!({})).await.expect("list");
        list["tasks"].as_array().cloned().unwrap_or_default()
    }

    async fn settled(&self) -> usize {
        self.facilitator.settlements().await.len()
    }

    /// What a wallet signs for the payment request in a task's status message: the
    /// `PaymentPayload` as JSON.
    fn pay(&self, task: &Value) -> Value {
        let required = &metadata(task)["x402.payment.required"];
        let offer = serde_json::to_vec(required).expect("json");
        let headers = self.wallet.pay(402, &http::HeaderMap::new(), &offer).expect("payable").expect("an offer");
        let header = headers["payment-signature"].to_str().expect("ascii");
        let bytes = base64::engine::general_purpose::STANDARD.decode(header).expect("base64");
        serde_json::from_slice(&bytes).expect("a payment payload")
    }

    /// A task of `work` waiting for its payment.
    async fn payment_required(&self, input: Value) -> Value {
        let task = self.send(new_message("work", input)).await;
        assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{task}");
        task
    }
}

fn id_of(task: &Value) -> String {
    task["id"].as_str().expect("task id").to_owned()
}

#[tokio::test]
async fn the_card_declares_the_extension_and_free_skills_need_no_payment() {
    let paid = paid(false).await;
    let card: Value =
        reqwest::get(paid.server.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let extensions = card["capabilities"]["extensions"].as_array().cloned().unwrap_or_default();
    let x402 = extensions.iter().find(|extension| extension["uri"] == EXTENSION).expect("declared");
    assert_eq!(x402["required"], false, "free skills need no payment: {x402}");

    // A client that does not activate the extension still runs free skills.
    let response = reqwest::Client::new()
        .post(paid.server.url("/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                      "params": {"message": new_message("free", json!({"n": 1}))}}))
        .send()
        .await
        .expect("free");
    let answer: Value = response.json().await.expect("json");
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"], json!({"free": true, "input": {"n": 1}}));
    assert!(task["status"].get("message").is_none(), "no payment metadata on a free task: {task}");
    assert_eq!(paid.settled().await, 0);
}

#[tokio::test]
async fn a_paid_task_over_jsonrpc_asks_runs_after_payment_and_keeps_its_receipts() {
    let paid = paid(false).await;
    // Input is checked before any payment step.
    let bad = paid.rpc("SendMessage", json!({"message": new_message("work", json!({"no": "job"}))})).await;
    assert_eq!(bad.expect_err("invalid input")["code"], -32602);
    assert!(paid.tasks().await.is_empty(), "a bad input reserves nothing");

    // payment-required: the task waits, the skill has not run, nothing moved.
    let task = paid.payment_required(json!({"job": "original"})).await;
    let id = id_of(&task);
    let asked = metadata(&task);
    assert_eq!(asked["x402.payment.status"], "payment-required");
    let required = &asked["x402.payment.required"];
    assert_eq!(required["x402Version"], 2);
    assert!(required.get("error").is_none(), "no HTTP header to name: {required}");
    assert_eq!(required["resource"]["url"], paid.server.url("/a2a/jsonrpc"));
    assert_eq!(required["resource"]["description"], "Paid work");
    let accepts = &required["accepts"][0];
    assert_eq!(accepts["scheme"], SCHEME);
    assert_eq!(accepts["amount"], PRICE);
    assert_eq!(accepts["asset"], "accord-credit");
    assert_eq!(accepts["network"], "accord:local");
    assert_eq!(accepts["payTo"], "shop");
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    assert!(task["artifacts"].as_array().is_none_or(Vec::is_empty));
    assert_eq!(paid.settled().await, 0);

    // payment-submitted: verified, settled once, the skill runs with the original input.
    let payload = paid.pay(&task);
    let done = paid.send(submitted(&id, &payload)).await;
    assert_eq!(done["id"], id);
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["artifacts"][0]["parts"][0]["data"], json!({"done": true, "input": {"job": "original"}}));
    let outcome = metadata(&done);
    assert_eq!(outcome["x402.payment.status"], "payment-completed", "{done}");
    let receipts = outcome["x402.payment.receipts"].as_array().expect("receipts");
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0]["success"], true);
    assert_eq!(receipts[0]["network"], "accord:local");
    let transaction = receipts[0]["transaction"].as_str().expect("transaction");
    assert!(!transaction.is_empty());
    let ledger = paid.facilitator.settlements().await;
    assert_eq!(ledger.len(), 1, "exactly one settlement");
    assert_eq!(ledger[0]["transaction"], transaction);
    assert_eq!(ledger[0]["amount"], PRICE);
    assert_eq!(ledger[0]["idempotencyKey"], format!("a2a-x402-{id}"));

    // The history keeps the exchange: the request, the payment request, the payment.
    let stored = paid.get(&id).await;
    assert_eq!(metadata(&stored), outcome, "the stored task says the same");
    let history = stored["history"].as_array().expect("history");
    assert_eq!(history.len(), 3, "{stored}");
    assert_eq!(history[1]["metadata"]["x402.payment.status"], "payment-required");
    assert_eq!(history[2]["metadata"]["x402.payment.status"], "payment-submitted");

    // The payment is spent: the task has ended and takes no more messages.
    let again = paid.rpc("SendMessage", json!({"message": submitted(&id, &payload)})).await;
    assert_eq!(again.expect_err("ended")["code"], -32004);
    assert_eq!(paid.settled().await, 1);
}

#[tokio::test]
async fn a_paid_task_over_rest_and_a_payment_streamed_over_jsonrpc() {
    let paid = paid(false).await;
    let (status, asked) = paid.rest_send(new_message("work", json!({"job": "rest"}))).await;
    assert_eq!(status, 200, "{asked}");
    let task = &asked["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(metadata(task)["x402.payment.required"]["resource"]["url"], paid.server.url("/a2a/rest/message:send"));
    let (status, done) = paid.rest_send(submitted(&id_of(task), &paid.pay(task))).await;
    assert_eq!(status, 200, "{done}");
    let done = &done["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(metadata(done)["x402.payment.status"], "payment-completed");
    assert_eq!(metadata(done)["x402.payment.receipts"][0]["success"], true);
    assert_eq!(paid.settled().await, 1);

    // Asked over REST, paid by a stream over JSON-RPC: the payment request's own resource is
    // what the payment is checked against.
    let (_, asked) = paid.rest_send(new_message("work", json!({"job": "streamed"}))).await;
    let task = &asked["task"];
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage",
                      "params": {"message": submitted(&id_of(task), &paid.pay(task))}});
    let response = reqwest::Client::new()
        .post(paid.server.url("/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("stream");
    let text = response.text().await.expect("events");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str::<Value>(data.trim()).expect("event")["result"].clone())
        .collect();
    let first = &events.first().expect("the task")["task"];
    assert_eq!(first["status"]["state"], "TASK_STATE_WORKING", "{text}");
    assert_eq!(metadata(first)["x402.payment.status"], "payment-completed", "{text}");
    let last = &events.last().expect("events")["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED", "{text}");
    assert_eq!(last["status"]["message"]["metadata"]["x402.payment.status"], "payment-completed", "{text}");
    assert_eq!(last["status"]["message"]["metadata"]["x402.payment.receipts"][0]["success"], true, "{text}");
    assert_eq!(paid.settled().await, 2);
}

#[tokio::test]
async fn a_refused_payment_ends_the_task_failed_and_settles_nothing() {
    let paid = paid(false).await;
    // A forged voucher: the facilitator refuses its signature.
    let task = paid.payment_required(json!({"job": "forged"})).await;
    let mut forged = paid.pay(&task);
    forged["payload"]["voucher"]["nonce"] = json!("00000000000000000000000000000000");
    let failed = paid.send(submitted(&id_of(&task), &forged)).await;
    assert_eq!(failed["status"]["state"], "TASK_STATE_FAILED", "{failed}");
    let outcome = metadata(&failed);
    assert_eq!(outcome["x402.payment.status"], "payment-failed");
    assert_eq!(outcome["x402.payment.error"], "INVALID_SIGNATURE");
    assert_eq!(
        outcome["x402.payment.receipts"],
        json!([{"success": false, "errorReason": "invalid_signature", "transaction": "", "network": "accord:local"}])
    );
    assert!(failed["artifacts"].as_array().is_none_or(Vec::is_empty), "the skill did not run: {failed}");
    assert_eq!(paid.settled().await, 0);
    // The failure is final: the task takes no further payment.
    let retry = paid.rpc("SendMessage", json!({"message": submitted(&id_of(&task), &paid.pay(&task))})).await;
    assert_eq!(retry.expect_err("ended")["code"], -32004);

    // A payment already spent on one task is refused for another: nothing settles twice.
    let first = paid.payment_required(json!({"job": "first"})).await;
    let payload = paid.pay(&first);
    let done = paid.send(submitted(&id_of(&first), &payload)).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    let second = paid.payment_required(json!({"job": "second"})).await;
    let replayed = paid.send(submitted(&id_of(&second), &payload)).await;
    assert_eq!(replayed["status"]["state"], "TASK_STATE_FAILED", "{replayed}");
    assert_eq!(metadata(&replayed)["x402.payment.error"], "DUPLICATE_NONCE");
    assert_eq!(paid.settled().await, 1);

    // A payload that does not answer the requirements is refused before the facilitator.
    let third = paid.payment_required(json!({"job": "third"})).await;
    let mut cheaper = paid.pay(&third);
    cheaper["accepted"]["amount"] = json!("1");
    let refused = paid.send(submitted(&id_of(&third), &cheaper)).await;
    assert_eq!(refused["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(metadata(&refused)["x402.payment.error"], "INVALID_PAYMENT_REQUIREMENTS");
    assert_eq!(paid.settled().await, 1);
}

/// A fault of the facilitator at verify or settle, and where the task and the evidence end.
#[tokio::test]
async fn facilitator_faults_end_the_task_failed_with_the_evidence() {
    let paid = paid(false).await;
    let cases: [(Value, &str, &str, bool); 4] = [
        // verify fails: nothing moved.
        (json!({"verify": "error"}), "payment-failed", "PAYMENT_UNAVAILABLE", false),
        // settle times out or fails: money may have moved; the task does not run.
        (
            json!({"verify": "ok", "settle": "timeout", "holdSeconds": 5}),
            "payment-failed",
            "SETTLEMENT_UNCERTAIN",
            false,
        ),
        (json!({"settle": "error"}), "payment-failed", "SETTLEMENT_UNCERTAIN", false),
        // settled, then the facilitator failed: the same answer, and the ledger shows the money moved.
        (json!({"settle": "error_after_settle"}), "payment-failed", "SETTLEMENT_UNCERTAIN", true),
    ];
    for (faults, status, code, moved) in cases {
        paid.facilitator.faults(json!({"verify": "ok", "settle": "ok"})).await;
        let task = paid.payment_required(json!({"job": faults.to_string()})).await;
        let payload = paid.pay(&task);
        paid.facilitator.faults(faults.clone()).await;
        let before = paid.settled().await;
        let ended = paid.send(submitted(&id_of(&task), &payload)).await;
        assert_eq!(ended["status"]["state"], "TASK_STATE_FAILED", "{faults}: {ended}");
        let outcome = metadata(&ended);
        assert_eq!(outcome["x402.payment.status"], status, "{faults}: {ended}");
        assert_eq!(outcome["x402.payment.error"], code, "{faults}: {ended}");
        assert!(outcome["x402.payment.receipts"].is_array(), "{faults}: the evidence is kept: {ended}");
        assert!(ended["artifacts"].as_array().is_none_or(Vec::is_empty), "{faults}: the skill did not run");
        assert_eq!(paid.settled().await - before, usize::from(moved), "{faults}: the ledger");
        assert_eq!(metadata(&paid.get(&id_of(&task)).await), outcome, "{faults}: stored as answered");
    }
}

#[tokio::test]
async fn a_follow_up_without_a_payload_is_asked_again() {
    let paid = paid(false).await;
    let task = paid.payment_required(json!({"job": "patient"})).await;
    let id = id_of(&task);
    for metadata in [json!({}), json!({"x402.payment.status": "payment-submitted"})] {
        let again = paid.send(follow_up(&id, metadata.clone())).await;
        assert_eq!(again["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{metadata}: {again}");
        assert_eq!(again["status"]["message"], task["status"]["message"], "{metadata}: the same payment request");
        assert_eq!(again["history"], task["history"], "{metadata}: nothing recorded");
    }
    // The payment request still stands.
    let payload = paid.pay(&task);
    let done = paid.send(submitted(&id, &payload)).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(paid.settled().await, 1);

    // A payload on a new message pays for nothing: the new task asks for its own payment.
    let mut fresh = new_message("work", json!({"job": "eager"}));
    fresh["metadata"]["x402.payment.status"] = json!("payment-submitted");
    fresh["metadata"]["x402.payment.payload"] = payload;
    let asked = paid.send(fresh).await;
    assert_eq!(asked["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
    assert_eq!(metadata(&asked)["x402.payment.status"], "payment-required");
    assert_eq!(paid.settled().await, 1);
}

#[tokio::test]
async fn a_priced_skill_on_another_rail_is_refused_with_a_clear_error() {
    let paid = paid(true).await;
    let card: Value =
        reqwest::get(paid.server.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    assert!(
        card["capabilities"]["extensions"].as_array().is_none_or(|all| all.iter().all(|e| e["uri"] != EXTENSION)),
        "{card}"
    );
    let refused = paid.rpc("SendMessage", json!({"message": new_message("work", json!({"job": "mpp"}))})).await;
    let error = refused.expect_err("refused");
    assert_eq!(error["code"], -32004, "{error}");
    let message = error["message"].as_str().expect("message");
    assert!(message.contains("mpp") && message.contains("x402"), "{message}");
    assert!(paid.tasks().await.is_empty(), "nothing reserved");
    let (status, body) = paid.rest_send(new_message("work", json!({"job": "mpp"}))).await;
    assert_eq!(status, 400, "{body}");
    // Free skills run.
    let free = paid.send(new_message("free", json!({}))).await;
    assert_eq!(free["status"]["state"], "TASK_STATE_COMPLETED");
}
