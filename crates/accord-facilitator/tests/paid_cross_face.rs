//! The paid row of the cross-face table (`accord-server/tests/test_cross_face.rs` has the
//! rest): one priced skill paid and settled through every face that can pay — the Lucid `/tasks`
//! route (an HTTP 402 challenge and a credential header) and both official A2A bindings (the x402
//! extension: the task waits for its payment, a follow-up pays) — against the real facilitator
//! process. Each face settles exactly once and leaves the task log the engine's paid start
//! writes; the JSON-RPC tasks face has no payment step and refuses the priced skill.

use std::sync::Arc;
use std::time::Duration;

use accord_engine::task::{AccessToken, OwnerHash, RuntimeConfig, TaskId, TaskRuntime, TaskStore};
use accord_engine::{Agent, Completion, Outcome, Pricing, Run, Skill};
use accord_payments::voucher::SCHEME;
use accord_payments::{Wallet, X402Rail};
use accord_server::auth::{BearerAuthLayer, BearerTokens};
use accord_server::{AgentRouterExt, PaymentsConfig, ServerConfig};
use accord_store_sqlite::{SqliteStore, SqliteStoreConfig};
use accord_test_support::TestServer;
use base64::Engine as _;
use serde_json::{Value, json};

mod support;
use support::{Facilitator, Scratch, scratch};

const TOKEN: &str = "paid-cross-face-token-0123456789";
const PRICE: &str = "700";

fn agent() -> Agent {
    let pricing = Pricing { invoke: Some(PRICE.into()), task: Some(PRICE.into()), ..Pricing::default() };
    Agent::builder("paid-cross-face")
        .skill(Skill::builder("work").description("Paid work").pricing(pricing).invoke(|run: Run| async move {
            Ok(Outcome::Completed(Completion::new(json!({"done": run.input().clone()}))))
        }))
        .build()
        .expect("agent")
}

struct Fixture {
    facilitator: Facilitator,
    server: TestServer,
    runtime: TaskRuntime,
    wallet: Wallet,
    _dir: Scratch,
}

async fn fixture() -> Fixture {
    let facilitator = Facilitator::spawn();
    let dir = scratch();
    let store: Arc<dyn TaskStore> =
        Arc::new(SqliteStore::open(SqliteStoreConfig::new(dir.0.join("tasks.db"))).await.expect("sqlite store"));
    let agent = agent();
    let runtime = TaskRuntime::new(agent.clone(), store, RuntimeConfig::default());
    let rail = X402Rail::new(&facilitator.url)
        .expect("rail")
        .with_scheme(SCHEME)
        .with_verify_timeout(Duration::from_secs(5))
        .with_settle_timeout(Duration::from_secs(5));
    let payments = PaymentsConfig::new(Arc::new(rail), "accord-credit", "accord:local", "shop");
    let tokens = BearerTokens::new().with(&AccessToken::parse(TOKEN).expect("token"), "payer", Vec::<String>::new());
    let config = ServerConfig::default().tasks(runtime.clone()).payments(payments);
    let server = TestServer::start(agent.router_with(config).layer(BearerAuthLayer::new(tokens))).await;
    Fixture { facilitator, server, runtime, wallet: Wallet::generate().expect("wallet"), _dir: dir }
}

fn owner() -> OwnerHash {
    AccessToken::parse(TOKEN).expect("token").owner()
}

impl Fixture {
    /// `POST /tasks`: the challenge, then the wallet's credential; the task id.
    async fn pay_lucid(&self) -> String {
        let create = |headers: Vec<(String, String)>| {
            let body =
                json!({"skillId": "work", "message": {"role": "user", "content": {"text": "{\"face\":\"lucid\"}"}}});
            let mut request =
                reqwest::Client::new().post(self.server.url("/tasks")).header("task-access-token", TOKEN).json(&body);
            for (name, value) in headers {
                request = request.header(name, value);
            }
            request.send()
        };
        let challenge = create(Vec::new()).await.expect("challenge");
        assert_eq!(challenge.status(), 402);
        let headers = challenge.headers().clone();
        let body = challenge.bytes().await.expect("body");
        let credential = self.wallet.pay(402, &headers, &body).expect("payable").expect("an offer");
        let credential = credential
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_str().expect("ascii").to_owned()))
            .collect();
        let paid = create(credential).await.expect("paid");
        assert_eq!(paid.status(), 200);
        assert!(paid.headers().contains_key("payment-response"), "the receipt comes back");
        let body: Value = paid.json().await.expect("json");
        body["taskId"].as_str().expect("taskId").to_owned()
    }

    /// The x402 extension over an A2A binding: payment required, then submitted; the task id.
    async fn pay_a2a(&self, rest: bool) -> String {
        let send = |message: Value| async move {
            let request = if rest {
                reqwest::Client::new()
                    .post(self.server.url("/a2a/rest/message:send"))
                    .json(&json!({"message": message}))
            } else {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}});
                reqwest::Client::new().post(self.server.url("/a2a/jsonrpc")).json(&body)
            };
            let answer: Value = request
                .header("a2a-version", "1.0")
                .header("authorization", format!("Bearer {TOKEN}"))
                .send()
                .await
                .expect("send")
                .json()
                .await
                .expect("json");
            if rest { answer["task"].clone() } else { answer["result"]["task"].clone() }
        };
        let asked = send(json!({"messageId": format!("ask-{rest}"), "role": "ROLE_USER",
                                "parts": [{"data": {"face": if rest { "rest" } else { "jsonrpc" }}}],
                                "metadata": {"skillId": "work"}}))
        .await;
        assert_eq!(asked["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
        let id = asked["id"].as_str().expect("id").to_owned();
        let required = &asked["status"]["message"]["metadata"]["x402.payment.required"];
        let offer = serde_json::to_vec(required).expect("json");
        let headers = self.wallet.pay(402, &http::HeaderMap::new(), &offer).expect("payable").expect("an offer");
        let signature = headers["payment-signature"].to_str().expect("ascii");
        let payload: Value =
            serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(signature).expect("base64"))
                .expect("payload");
        let done = send(json!({"messageId": format!("pay-{rest}"), "role": "ROLE_USER", "taskId": id,
                               "parts": [{"text": "paid"}],
                               "metadata": {"x402.payment.status": "payment-submitted", "x402.payment.payload": payload}}))
        .await;
        assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
        assert_eq!(done["status"]["message"]["metadata"]["x402.payment.status"], "payment-completed");
        id
    }
}

#[tokio::test]
async fn a_priced_skill_is_paid_and_settled_once_through_every_face_that_pays() {
    let f = fixture().await;
    let lucid = f.pay_lucid().await;
    assert_eq!(f.facilitator.settlements().await.len(), 1);
    assert_eq!(
        accord_test_support::state_log(&f.runtime, &owner(), &lucid).await,
        ["Submitted", "Working", "Result"],
        "the Lucid paid start"
    );

    let mut paid = vec![(lucid.clone(), "lucid")];
    for rest in [false, true] {
        let id = f.pay_a2a(rest).await;
        paid.push((id.clone(), if rest { "rest" } else { "jsonrpc" }));
        // The x402 extension's task waits for its payment inside the task; the paying follow-up
        // takes the turn (working), then the same prepared claim, verify, renew, settle, activate
        // sequence runs, and the activation records the settlement's evidence (working, with the
        // receipts) before the skill runs.
        assert_eq!(
            accord_test_support::state_log(&f.runtime, &owner(), &id).await,
            ["Submitted", "InputRequired", "Working", "Working", "Result"],
            "A2A (rest: {rest})"
        );
    }
    let ledger = f.facilitator.settlements().await;
    assert_eq!(ledger.len(), 3, "one settlement per paid task: {ledger:?}");
    assert!(ledger.iter().all(|settlement| settlement["amount"] == PRICE), "{ledger:?}");

    // Every task ran with its own input, whichever face asked.
    for (id, face) in paid {
        let task = f.runtime.get(&TaskId::new(&id), &owner()).await.expect("task");
        assert_eq!(task.result.expect("result").output, json!({"done": {"face": face}}));
    }

    // The JSON-RPC tasks face has no payment step: the priced skill is refused, nothing reserved.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/send", "params": {"task": {"skill": "work"}}});
    let refused: Value = reqwest::Client::new()
        .post(f.server.url("/a2a/tasks"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .json(&body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(f.facilitator.settlements().await.len(), 3);
}
