//! Paid entrypoints and paid tasks over real HTTP: an Accord server on loopback collecting
//! through the x402 rail from the real `accord-facilitator` process, paid by the client's wallet
//! hook. Each scenario of the paid-task contract, and a fault at each step of the facilitator
//! (verify, settle, after settle), ends with the task and the receipt in the documented state —
//! checked against the facilitator's ledger of what actually moved.

use std::sync::Arc;
use std::time::Duration;

use accord_client::{Client, ClientError, SendOptions, TaskAccess};
use accord_engine::task::{MemoryStore, RuntimeConfig, TaskRuntime, TaskStore};
use accord_engine::{Agent, Completion, Outcome, Pricing, Run, Skill, SkillError};
use accord_payments::voucher::SCHEME;
use accord_payments::{MppRail, Wallet, X402Rail};
use accord_server::{AgentRouterExt, PaymentsConfig, ServerConfig};
use accord_store_sqlite::{SqliteStore, SqliteStoreConfig};
use accord_test_support::TestServer;
use accord_types::card::AgentCard;
use accord_types::tasks::TaskStatus;
use serde_json::{Value, json};

mod support;
use support::{Facilitator, Scratch, scratch};

const PRICE: &str = "1000";
const TOKEN: &str = "paid-task-owner-token-0123456789";

/// `work` is priced for every operation: it sleeps `ms` (default 0), fails when asked to, and
/// completes with `{"done": true}`. `hold` is free and runs until cancelled.
fn agent() -> Agent {
    let pricing = Pricing {
        invoke: Some(PRICE.into()),
        stream: Some(PRICE.into()),
        task: Some(PRICE.into()),
        ..Pricing::default()
    };
    Agent::builder("paid-agent")
        .skill(Skill::builder("work").pricing(pricing).input_schema(json!({"type": "object"})).handler(
            |run: Run| async move {
                let ms = run.input().get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                if run.input().get("fail") == Some(&json!(true)) {
                    return Err(SkillError::new("asked_to_fail", "the input asked for a failure"));
                }
                Ok(Outcome::Completed(Completion::new(json!({"done": true}))))
            },
        ))
        .skill(Skill::builder("hold").input_schema(json!({"type": "object"})).invoke(|run: Run| async move {
            run.cancelled().await;
            Err::<Outcome, _>(SkillError::new("cancelled", "cancelled"))
        }))
        .build()
        .expect("agent")
}

struct Paid {
    facilitator: Facilitator,
    server: TestServer,
    runtime: TaskRuntime,
    card: AgentCard,
    wallet: Arc<Wallet>,
    _dir: Scratch,
}

struct Setup {
    max_active: Option<usize>,
    max_run: Duration,
    durable: bool,
    /// How long the rail waits for the facilitator's verify and settle answers.
    verify_timeout: Duration,
    settle_timeout: Duration,
    /// Collect with the MPP rail (`Payment` authentication, verified in process) instead of x402.
    mpp: bool,
    /// The x402 scheme (`accord-voucher`; `upto` to see an unsupported operation refused).
    scheme: &'static str,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            max_active: None,
            max_run: Duration::from_secs(30),
            durable: true,
            verify_timeout: Duration::from_millis(1500),
            settle_timeout: Duration::from_secs(5),
            mpp: false,
            scheme: SCHEME,
        }
    }
}

async fn paid(setup: Setup) -> Paid {
    let facilitator = Facilitator::spawn();
    let dir = scratch();
    let store: Arc<dyn TaskStore> = if setup.durable {
        let mut config = SqliteStoreConfig::new(dir.0.join("tasks.db"));
        config.max_active_tasks = setup.max_active;
        Arc::new(SqliteStore::open(config).await.expect("sqlite store"))
    } else {
        Arc::new(MemoryStore::default())
    };
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), store, RuntimeConfig::default().max_run(setup.max_run));
    let rail: Arc<dyn accord_payments::PaymentRail> = if setup.mpp {
        Arc::new(MppRail::new("paid-agent.test", b"an-mpp-challenge-secret-of-32-bytes!").expect("mpp rail"))
    } else {
        Arc::new(
            X402Rail::new(&facilitator.url)
                .expect("rail")
                .with_scheme(setup.scheme)
                .with_verify_timeout(setup.verify_timeout)
                .with_settle_timeout(setup.settle_timeout),
        )
    };
    let payments = PaymentsConfig::new(rail, "accord-credit", "accord:local", "shop");
    if setup.scheme == SCHEME {
        payments.check(&agent).expect("prices the rail can collect");
    } else {
        assert!(payments.check(&agent).is_err(), "the start-up check finds what the rail cannot collect");
    }
    let config = ServerConfig::default().tasks(runtime.clone()).payments(payments);
    let server = TestServer::start(agent.router_with(config)).await;
    let card = Client::new().fetch_card(&server.url("/")).await.expect("card");
    let wallet = Arc::new(Wallet::generate().expect("wallet"));
    Paid { facilitator, server, runtime, card, wallet, _dir: dir }
}

impl Paid {
    fn paying(&self) -> Client {
        Client::new().with_payments(Arc::clone(&self.wallet) as Arc<dyn accord_client::payment::PaymentHook>)
    }

    /// `POST /tasks` by hand, with a token and optional extra headers.
    async fn create(&self, skill: &str, input: Value, headers: &[(&str, String)]) -> reqwest::Response {
        let body = json!({"message": {"role": "user", "content": {"text": input.to_string()}}, "skillId": skill});
        let mut request = reqwest::Client::new().post(self.server.url("/tasks")).json(&body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request.send().await.expect("response")
    }

    /// The wallet's credential headers for the challenge this request gets first.
    async fn credential_for(&self, skill: &str, input: Value) -> Vec<(&'static str, String)> {
        let challenge = self.create(skill, input, &[("task-access-token", TOKEN.into())]).await;
        assert_eq!(challenge.status(), 402);
        let headers = challenge.headers().clone();
        let body = challenge.bytes().await.expect("body");
        let credential = self.wallet.pay(402, &headers, &body).expect("payable").expect("an offer");
        credential
            .iter()
            .map(|(name, value)| (static_name(name.as_str()), value.to_str().expect("ascii").to_owned()))
            .collect()
    }

    async fn tasks(&self) -> Vec<Value> {
        let response = reqwest::Client::new()
            .get(self.server.url("/tasks"))
            .header("task-access-token", TOKEN)
            .send()
            .await
            .expect("list");
        let body: Value = response.json().await.expect("json");
        body["tasks"].as_array().cloned().expect("tasks")
    }

    async fn settled(&self) -> usize {
        self.facilitator.settlements().await.len()
    }

    async fn task(&self, id: &str) -> Value {
        let access = TaskAccess { task_id: id.into(), access_token: TOKEN.into() };
        serde_json::to_value(Client::new().get_task(&self.card, &access).await.expect("task")).expect("json")
    }
}

/// A credential header's name, as the `'static` the request helpers take.
fn static_name(name: &str) -> &'static str {
    match name {
        "payment-signature" => "payment-signature",
        "x-payment" => "x-payment",
        "authorization" => "authorization",
        other => panic!("unexpected credential header {other}"),
    }
}

fn with_token(mut headers: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    headers.push(("task-access-token", TOKEN.into()));
    headers
}

async fn until_status(paid: &Paid, id: &str, status: &str) -> Value {
    for _ in 0..200 {
        let task = paid.task(id).await;
        if task["status"] == status {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {id} never became {status}: {}", paid.task(id).await);
}

fn receipt_of(response: &reqwest::Response) -> Option<String> {
    response.headers().get("payment-response").and_then(|value| value.to_str().ok()).map(str::to_owned)
}

#[tokio::test]
async fn the_card_advertises_prices_and_the_rail() {
    let paid = paid(Setup::default()).await;
    let card: Value =
        reqwest::get(paid.server.url("/.well-known/agent-card.json")).await.expect("card").json().await.expect("json");
    let work = &card["entrypoints"]["work"];
    assert_eq!(work["pricing"], json!({"invoke": PRICE, "stream": PRICE, "task": PRICE}));
    assert_eq!(work["payment_protocol"], "x402");
    assert_eq!(work["network"], "accord:local");
    assert!(card["entrypoints"]["hold"].get("pricing").is_none());
    assert_eq!(card["payments"].as_array().map(Vec::len), Some(1), "{card}");
    // The prices are also in Accord's skill extension, beside the schemas.
    let extension = card["capabilities"]["extensions"]
        .as_array()
        .and_then(|all| all.iter().find(|e| e["uri"] == accord_types::card::SKILL_EXTENSION))
        .expect("skill extension");
    assert_eq!(
        extension["params"]["skills"]["work"]["pricing"],
        json!({"invoke": PRICE, "stream": PRICE, "task": PRICE})
    );
    assert!(extension["params"]["skills"]["hold"].get("pricing").is_none());
    assert_eq!(paid.card.skill_pricing("work"), Some(&json!({"invoke": PRICE, "stream": PRICE, "task": PRICE})));
}

#[tokio::test]
async fn a_challenge_reserves_nothing_and_a_paid_task_runs_with_its_receipt() {
    let paid = paid(Setup::default()).await;
    // Input is checked before any payment step.
    let bad = paid.create("work", json!("not an object"), &[("task-access-token", TOKEN.into())]).await;
    assert_eq!(bad.status(), 400);
    // Without a credential: the rail's 402, and nothing reserved.
    let challenge = paid.create("work", json!({}), &[("task-access-token", TOKEN.into())]).await;
    assert_eq!(challenge.status(), 402);
    assert!(challenge.headers().contains_key("payment-required"));
    assert!(paid.tasks().await.is_empty(), "an initial challenge reserves nothing");
    // Without a caller-supplied token: 401, even with a credential.
    let credential = paid.credential_for("work", json!({})).await;
    let anonymous = paid.create("work", json!({}), &credential).await;
    assert_eq!(anonymous.status(), 401);
    assert_eq!(paid.settled().await, 0);

    // The client pays and retries once; the capability comes back running, with the receipt.
    let options = SendOptions { access_token: Some(TOKEN.into()), ..SendOptions::default() };
    let sent = paid.paying().send_message(&paid.card, "work", json!({}), options).await.expect("paid task");
    assert_eq!(sent.status, TaskStatus::Running);
    let settlement = sent.settlement.expect("settlement evidence");
    assert!(settlement.payment_response.is_some());
    assert!(settlement.payment_receipt.is_none() && settlement.x_payment_response.is_none());
    until_status(&paid, &sent.access.task_id, "completed").await;
    let ledger = paid.facilitator.settlements().await;
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0]["amount"], PRICE);
    assert_eq!(ledger[0]["idempotencyKey"], json!(sent.idempotency_key), "the caller's key reaches the settlement");
}

#[tokio::test]
async fn paid_tasks_fail_closed_on_a_process_store() {
    let paid = paid(Setup { durable: false, ..Setup::default() }).await;
    let response = paid.create("work", json!({}), &[("task-access-token", TOKEN.into())]).await;
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "durable_task_store_required");
    // Free tasks still work there.
    let free = paid.create("hold", json!({}), &[("task-access-token", TOKEN.into())]).await;
    assert_eq!(free.status(), 200);
}

#[tokio::test]
async fn a_credential_at_capacity_is_refused_before_any_receipt() {
    let paid = paid(Setup { max_active: Some(1), ..Setup::default() }).await;
    let credential = paid.credential_for("work", json!({})).await;
    let busy = paid.create("hold", json!({}), &[("task-access-token", TOKEN.into())]).await;
    assert_eq!(busy.status(), 200, "the one slot is taken");
    let refused = paid.create("work", json!({}), &with_token(credential)).await;
    assert_eq!(refused.status(), 503);
    assert!(receipt_of(&refused).is_none());
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "task_capacity_exhausted");
    assert_eq!(paid.settled().await, 0, "nothing was verified or settled");
}

#[tokio::test]
async fn a_rejected_credential_releases_the_reserved_task() {
    let paid = paid(Setup::default()).await;
    // A credential for another resource (a paid invoke) is not valid for a task.
    let response = reqwest::Client::new()
        .post(paid.server.url("/entrypoints/work/invoke"))
        .json(&json!({"input": {}}))
        .send()
        .await
        .expect("challenge");
    let headers = response.headers().clone();
    let body = response.bytes().await.expect("body");
    let wrong = paid.wallet.pay(402, &headers, &body).expect("payable").expect("offer");
    let wrong: Vec<(&'static str, String)> = wrong
        .iter()
        .map(|(name, value)| (static_name(name.as_str()), value.to_str().expect("ascii").to_owned()))
        .collect();
    let rejected = paid.create("work", json!({}), &with_token(wrong)).await;
    assert_eq!(rejected.status(), 402);
    assert!(receipt_of(&rejected).is_none());
    let tasks = paid.tasks().await;
    assert_eq!(tasks.len(), 1, "the credential-bearing request reserved a task before verification");
    assert_eq!(tasks[0]["status"], "cancelled", "and released it when the credential was refused");
    assert_eq!(paid.settled().await, 0);
}

/// A fault at each step of the facilitator, and where the task and the receipt end.
#[tokio::test]
async fn facilitator_faults_end_in_the_documented_states() {
    let paid = paid(Setup { settle_timeout: Duration::from_millis(1500), ..Setup::default() }).await;
    let cases: [(Value, u16, Option<&str>, bool, &str); 5] = [
        // verify fails or times out: nothing moved, the reservation is released.
        (json!({"verify": "error"}), 503, None, false, "cancelled"),
        (json!({"verify": "timeout", "holdSeconds": 5}), 503, None, false, "cancelled"),
        // settle times out or fails: money may have moved; the task does not run and ends failed.
        (json!({"verify": "ok", "settle": "timeout", "holdSeconds": 5}), 200, Some("failed"), false, "failed"),
        (json!({"settle": "error"}), 200, Some("failed"), false, "failed"),
        // settled, then the facilitator failed: the same answer, and the ledger shows the money moved.
        (json!({"settle": "error_after_settle"}), 200, Some("failed"), true, "failed"),
    ];
    for (index, (faults, status, capability, moved, stored)) in cases.into_iter().enumerate() {
        paid.facilitator.faults(json!({"verify": "ok", "settle": "ok"})).await;
        let credential = paid.credential_for("work", json!({"case": index})).await;
        paid.facilitator.faults(faults.clone()).await;
        let before = paid.settled().await;
        let response = paid.create("work", json!({"case": index}), &with_token(credential)).await;
        assert_eq!(response.status(), status, "{faults}");
        let body: Value = response.json().await.expect("json");
        if let Some(capability) = capability {
            assert_eq!(body["status"], capability, "{faults}: {body}");
            assert_eq!(body["accessToken"], TOKEN);
        } else {
            assert_eq!(body["error"]["code"], "authorization_failed", "{faults}: {body}");
        }
        assert_eq!(paid.settled().await - before, usize::from(moved), "{faults}: the ledger");
        let newest = paid.tasks().await.into_iter().next().expect("the reserved task");
        assert_eq!(newest["status"], stored, "{faults}: {newest}");
        if stored == "failed" {
            assert_eq!(newest["error"]["code"], "settlement_uncertain", "{newest}");
        }
    }
}

#[tokio::test]
async fn the_execution_timer_starts_only_after_settlement() {
    // The task may run 1 s; settling takes 2 s; the handler needs 0.2 s.
    let paid = paid(Setup { max_run: Duration::from_secs(1), ..Setup::default() }).await;
    let credential = paid.credential_for("work", json!({"ms": 200})).await;
    paid.facilitator.faults(json!({"settle": "slow", "holdSeconds": 2})).await;
    let response = paid.create("work", json!({"ms": 200}), &with_token(credential)).await;
    assert_eq!(response.status(), 200);
    assert!(receipt_of(&response).is_some());
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["status"], "running");
    let task = until_status(&paid, body["taskId"].as_str().expect("id"), "completed").await;
    assert_eq!(task["result"]["output"], json!({"done": true}), "no task_timeout: {task}");
}

#[tokio::test]
async fn a_cancel_during_settlement_is_reported_not_overwritten() {
    let paid = paid(Setup::default()).await;
    let credential = paid.credential_for("work", json!({})).await;
    paid.facilitator.faults(json!({"settle": "slow", "holdSeconds": 1})).await;
    let create = {
        let url = paid.server.url("/tasks");
        let headers = with_token(credential);
        tokio::spawn(async move {
            let body = json!({"message": {"role": "user", "content": {"text": "{}"}}, "skillId": "work"});
            let mut request = reqwest::Client::new().post(url).json(&body);
            for (name, value) in headers {
                request = request.header(name, value);
            }
            request.send().await.expect("response")
        })
    };
    // While the settlement is in flight the task is reserved; its owner cancels it.
    paid.facilitator.until_holding_a_settle().await;
    let id = paid.tasks().await.first().expect("the reserved task")["taskId"].as_str().expect("id").to_owned();
    let cancel = reqwest::Client::new()
        .post(paid.server.url(&format!("/tasks/{id}/cancel")))
        .header("task-access-token", TOKEN)
        .send()
        .await
        .expect("cancel");
    assert_eq!(cancel.status(), 200);
    let response = create.await.expect("create");
    assert_eq!(response.status(), 200);
    assert!(receipt_of(&response).is_some(), "the payment committed: its receipt comes back");
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["status"], "cancelled", "the stored terminal state, never a fabricated running: {body}");
    assert_eq!(paid.settled().await, 1);
}

#[tokio::test]
async fn a_store_lost_after_settlement_answers_terminalization_failed_with_the_capability() {
    let paid = paid(Setup::default()).await;
    let credential = paid.credential_for("work", json!({})).await;
    paid.facilitator.faults(json!({"settle": "slow", "holdSeconds": 1})).await;
    let url = paid.server.url("/tasks");
    let headers = with_token(credential);
    let create = tokio::spawn(async move {
        let body = json!({"message": {"role": "user", "content": {"text": "{}"}}, "skillId": "work"});
        let mut request = reqwest::Client::new().post(url).json(&body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        request.send().await.expect("response")
    });
    paid.facilitator.until_holding_a_settle().await;
    // The worker's store goes away while the settlement is in flight.
    paid.runtime.close().await;
    let response = create.await.expect("create");
    assert_eq!(response.status(), 503);
    assert!(receipt_of(&response).is_some(), "the receipt is never dropped");
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "task_terminalization_failed");
    assert_eq!(body["accessToken"], TOKEN);
    assert!(body["taskId"].is_string());
    assert_eq!(paid.settled().await, 1);
}

#[tokio::test]
async fn a_handler_failing_after_payment_keeps_the_receipt_and_the_task_ends_failed() {
    let paid = paid(Setup::default()).await;
    let options = SendOptions { access_token: Some(TOKEN.into()), ..SendOptions::default() };
    let sent = paid.paying().send_message(&paid.card, "work", json!({"fail": true}), options).await.expect("paid");
    assert_eq!(sent.status, TaskStatus::Running);
    assert!(sent.settlement.is_some());
    let task = until_status(&paid, &sent.access.task_id, "failed").await;
    assert_eq!(task["error"]["code"], "asked_to_fail");
}

#[tokio::test]
async fn a_paid_replay_goes_only_to_the_payer_who_paid() {
    for mpp in [false, true] {
        let paid = paid(Setup { mpp, ..Setup::default() }).await;
        let key = "payer-bound-idempotency-key-0123456789";
        let options = || accord_client::InvokeOptions { idempotency_key: Some(key.into()), ..Default::default() };
        let receipt = |settlement: Option<accord_client::Settlement>| {
            settlement.and_then(|settlement| settlement.payment_response.or(settlement.payment_receipt))
        };
        let (first, settlement) =
            paid.paying().invoke_with_settlement(&paid.card, "work", json!({}), options()).await.expect("paid invoke");
        let first_receipt = receipt(settlement).expect("a receipt");
        let settled = paid.settled().await;

        // The key and body again without any credential: challenged like a first call, no output.
        let bare = reqwest::Client::new()
            .post(paid.server.url("/entrypoints/work/invoke"))
            .header("idempotency-key", key)
            .json(&json!({"input": {}}))
            .send()
            .await
            .expect("response");
        assert_eq!(bare.status(), 402, "mpp={mpp}");
        assert!(bare.headers().get("idempotency-replayed").is_none());
        assert!(["payment-response", "payment-receipt"].iter().all(|name| bare.headers().get(*name).is_none()));
        let body: Value = bare.json().await.expect("json");
        assert!(body.get("output").is_none(), "{body}");

        // The same payer with a fresh credential: the record, its receipt, nothing charged again.
        let (again, settlement) =
            paid.paying().invoke_with_settlement(&paid.card, "work", json!({}), options()).await.expect("replay");
        assert_eq!(again.run_id, first.run_id, "mpp={mpp}: answered from the record");
        assert_eq!(receipt(settlement).as_deref(), Some(first_receipt.as_str()));
        assert_eq!(paid.settled().await, settled, "a replay never settles");

        // Another payer with the same key: a first call of their own, run and paid; their repeat
        // is answered from their own record.
        let other = Client::new().with_payments(Arc::new(Wallet::generate().expect("wallet")));
        let (theirs, settlement) =
            other.invoke_with_settlement(&paid.card, "work", json!({}), options()).await.expect("their call");
        assert_ne!(theirs.run_id, first.run_id, "mpp={mpp}: not the first payer's answer");
        let their_receipt = receipt(settlement).expect("their receipt");
        assert_ne!(their_receipt, first_receipt);
        let (repeat, settlement) =
            other.invoke_with_settlement(&paid.card, "work", json!({}), options()).await.expect("their replay");
        assert_eq!(repeat.run_id, theirs.run_id);
        assert_eq!(receipt(settlement), Some(their_receipt));
        if !mpp {
            assert_eq!(paid.settled().await, settled + 1, "one settlement for the other payer's call only");
        }
    }
}

#[tokio::test]
async fn paid_invoke_settles_after_the_output_and_replays_without_paying_twice() {
    let paid = paid(Setup::default()).await;
    let client = paid.paying();
    let key = "invoke-idempotency-key-0123456789";
    let options = accord_client::InvokeOptions { idempotency_key: Some(key.into()), ..Default::default() };
    let (answer, settlement) =
        client.invoke_with_settlement(&paid.card, "work", json!({}), options.clone()).await.expect("paid invoke");
    assert_eq!(answer.output, Some(json!({"done": true})));
    let first = settlement.expect("receipt").payment_response;
    assert!(first.is_some());
    assert_eq!(paid.settled().await, 1);
    // A replay with the same key is answered from the record, receipt included, and not paid again.
    let (again, replayed) =
        client.invoke_with_settlement(&paid.card, "work", json!({}), options).await.expect("replay");
    assert_eq!(again.output, Some(json!({"done": true})));
    assert_eq!(replayed.and_then(|settlement| settlement.payment_response), first);
    assert_eq!(paid.settled().await, 1, "a replay never settles again");

    // A failed run is not charged.
    let failed = client.invoke(&paid.card, "work", json!({"fail": true}), Default::default()).await;
    assert!(matches!(failed, Err(ClientError::Status { .. })), "{failed:?}");
    assert_eq!(paid.settled().await, 1);

    // A wallet with a cap below the price declines.
    let capped = Wallet::generate().expect("wallet").with_max_amount("10").expect("cap");
    let declined =
        Client::new().with_payments(Arc::new(capped)).invoke(&paid.card, "work", json!({}), Default::default()).await;
    assert!(matches!(declined, Err(ClientError::PaymentDeclined { .. })), "{declined:?}");
}

#[tokio::test]
async fn a_paid_stream_is_settled_before_it_starts() {
    use futures_util::StreamExt;
    let paid = paid(Setup::default()).await;
    let unpaid = reqwest::Client::new()
        .post(paid.server.url("/entrypoints/work/stream"))
        .json(&json!({"input": {}}))
        .send()
        .await
        .expect("challenge");
    assert_eq!(unpaid.status(), 402);
    let headers = unpaid.headers().clone();
    let body = unpaid.bytes().await.expect("body");
    let credential = paid.wallet.pay(402, &headers, &body).expect("payable").expect("offer");
    let response = reqwest::Client::new()
        .post(paid.server.url("/entrypoints/work/stream"))
        .headers(credential)
        .json(&json!({"input": {}}))
        .send()
        .await
        .expect("stream");
    assert_eq!(response.status(), 200);
    assert!(receipt_of(&response).is_some());
    assert_eq!(paid.settled().await, 1, "settled before the first event");
    let text: Vec<u8> = response.bytes_stream().map(|chunk| chunk.expect("chunk").to_vec()).concat().await;
    assert!(String::from_utf8_lossy(&text).contains("run-end"));
}

#[tokio::test]
async fn only_receipt_headers_are_copied_and_the_response_is_private() {
    let paid = paid(Setup::default()).await;
    let credential = paid.credential_for("work", json!({})).await;
    let response = paid.create("work", json!({}), &with_token(credential)).await;
    assert_eq!(response.status(), 200);
    let names: Vec<&str> = response.headers().keys().map(|name| name.as_str()).collect();
    assert!(names.contains(&"payment-response"), "{names:?}");
    for forbidden in ["payment-required", "payment-signature", "x-payment", "www-authenticate"] {
        assert!(!names.contains(&forbidden), "{forbidden} leaked: {names:?}");
    }
    assert!(response.headers()["cache-control"].to_str().expect("ascii").contains("private"));
}

#[tokio::test]
async fn the_other_faces_never_run_a_priced_task_for_free() {
    let paid = paid(Setup::default()).await;
    // The A2A faces ask for the payment through the x402 extension (see `paid_a2a.rs`).
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"data": {}}], "metadata": {"skillId": "work"}}}});
    let response = reqwest::Client::new()
        .post(paid.server.url("/a2a/jsonrpc"))
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("a2a");
    let answer: Value = response.json().await.expect("json");
    let status = &answer["result"]["task"]["status"];
    assert_eq!(status["state"], "TASK_STATE_INPUT_REQUIRED", "{answer}");
    assert_eq!(status["message"]["metadata"]["x402.payment.status"], "payment-required", "{answer}");
    // The JSON-RPC tasks face has no payment step: it refuses.
    let rpc = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/send", "params": {"skill": "work", "input": {}}});
    let answer: Value = reqwest::Client::new()
        .post(paid.server.url("/a2a/tasks"))
        .json(&rpc)
        .send()
        .await
        .expect("rpc")
        .json()
        .await
        .expect("json");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(paid.tasks().await.is_empty(), "no task of this owner");
    assert_eq!(paid.settled().await, 0);
}

#[tokio::test]
async fn the_mpp_rail_challenges_with_www_authenticate_and_answers_with_a_payment_receipt() {
    let paid = paid(Setup { mpp: true, ..Setup::default() }).await;
    let challenge = paid.create("work", json!({}), &[("task-access-token", TOKEN.into())]).await;
    assert_eq!(challenge.status(), 402);
    let offer = challenge.headers()["www-authenticate"].to_str().expect("ascii").to_owned();
    assert!(offer.starts_with("Payment "), "{offer}");
    for param in ["id=", "realm=\"paid-agent.test\"", "method=", "intent=\"charge\"", "request=", "expires="] {
        assert!(offer.contains(param), "{param} missing from {offer}");
    }
    assert!(paid.tasks().await.is_empty(), "the challenge reserved nothing");

    // The wallet answers with `Authorization: Payment …`; the task runs; the receipt comes back.
    let options = SendOptions { access_token: Some(TOKEN.into()), ..SendOptions::default() };
    let sent = paid.paying().send_message(&paid.card, "work", json!({}), options).await.expect("paid task");
    assert_eq!(sent.status, TaskStatus::Running);
    let settlement = sent.settlement.expect("evidence");
    assert!(settlement.payment_receipt.is_some(), "{settlement:?}");
    until_status(&paid, &sent.access.task_id, "completed").await;

    // A credential used once is not accepted again: the second task is refused and released.
    let headers = paid.credential_for("work", json!({})).await;
    let first = paid.create("work", json!({}), &with_token(headers.clone())).await;
    let status = first.status();
    assert_eq!(status, 200, "{:?}", first.text().await);
    let replayed = paid.create("work", json!({}), &with_token(headers)).await;
    assert_eq!(replayed.status(), 402, "a spent credential is refused");
    let newest = paid.tasks().await.into_iter().next().expect("the reserved task");
    assert_eq!(newest["status"], "cancelled");
}

#[tokio::test]
async fn an_upto_price_on_a_task_is_refused_before_any_payment_step() {
    let paid = paid(Setup { scheme: "upto", ..Setup::default() }).await;
    let response = paid.create("work", json!({}), &[("task-access-token", TOKEN.into())]).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "payment_capability_unsupported", "{body}");
    assert!(paid.tasks().await.is_empty());
    // An invocation can be priced with upto: it is challenged.
    let invoke = reqwest::Client::new()
        .post(paid.server.url("/entrypoints/work/invoke"))
        .json(&json!({"input": {}}))
        .send()
        .await
        .expect("invoke");
    assert_eq!(invoke.status(), 402);
}
