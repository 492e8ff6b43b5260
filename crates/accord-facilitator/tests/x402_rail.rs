//! `X402Rail` against the real `accord-facilitator` binary over loopback HTTP: every outcome of
//! verify and settle, including injected faults, checked against the facilitator's ledger.

use std::time::{Duration, Instant};

use accord_payments::voucher::{SCHEME, SignedVoucher, Voucher};
use accord_payments::x402::{PAYMENT_REQUIRED, PAYMENT_RESPONSE, PAYMENT_SIGNATURE, X_PAYMENT, X_PAYMENT_RESPONSE};
use accord_payments::{Admission, Operation, PaymentError, PaymentRail, PaymentRequest, Price, Wallet, X402Rail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

mod support;
use support::Facilitator;

const RESOURCE: &str = "https://agent.example/tasks";
const KEY: &str = "idem-0123456789abcdefghij";

fn price() -> Price {
    Price { amount: "2500".into(), asset: "USDC".into(), network: "accord:local".into(), pay_to: "shop".into() }
}

fn request<'a>(price: &'a Price, headers: &'a HeaderMap) -> PaymentRequest<'a> {
    PaymentRequest {
        resource: RESOURCE,
        operation: Operation::Task,
        price,
        description: Some("A paid task"),
        headers,
        idempotency_key: Some(KEY),
    }
}

fn rail(facilitator: &Facilitator) -> X402Rail {
    X402Rail::new(&facilitator.url).expect("rail").with_scheme(SCHEME)
}

/// The wallet's credential for the rail's challenge.
fn pay(rail: &X402Rail, wallet: &Wallet, price: &Price) -> HeaderMap {
    let empty = HeaderMap::new();
    let challenge = rail.challenge(&request(price, &empty));
    assert!(challenge.headers.contains_key(PAYMENT_REQUIRED));
    let body = serde_json::to_vec(&challenge.body).expect("json");
    wallet.pay(402, &challenge.headers, &body).expect("pay").expect("payable")
}

fn decode(value: &HeaderValue) -> Value {
    serde_json::from_slice(&STANDARD.decode(value.as_bytes()).expect("base64")).expect("json")
}

fn voucher_of(headers: &HeaderMap) -> SignedVoucher {
    SignedVoucher::from_value(&decode(&headers[PAYMENT_SIGNATURE])["payload"]).expect("voucher")
}

/// A `PAYMENT-SIGNATURE` credential for a voucher signed by hand.
fn credential(rail: &X402Rail, price: &Price, signed: &SignedVoucher) -> HeaderMap {
    let payload = json!({
        "x402Version": 2,
        "resource": {"url": RESOURCE},
        "accepted": rail.requirements(price),
        "payload": signed.to_value(),
    });
    let mut headers = HeaderMap::new();
    let value = STANDARD.encode(serde_json::to_vec(&payload).expect("json"));
    headers.insert(PAYMENT_SIGNATURE, HeaderValue::from_str(&value).expect("header"));
    headers
}

async fn verified(rail: &X402Rail, price: &Price, headers: &HeaderMap) -> Box<dyn Admission> {
    rail.verify(&request(price, headers)).await.expect("verified")
}

#[tokio::test]
async fn a_valid_payment_settles_once_with_a_receipt() {
    let facilitator = Facilitator::spawn();
    let supported = facilitator.get("/supported").await;
    assert!(
        supported["kinds"]
            .as_array()
            .expect("kinds")
            .contains(&json!({"x402Version": 2, "scheme": SCHEME, "network": "accord:local"}))
    );
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let headers = pay(&rail, &wallet, &price);
    let voucher = voucher_of(&headers);

    let mut admission = verified(&rail, &price, &headers).await;
    assert_eq!(admission.payer(), Some(wallet.payer_id().as_str()));
    assert!(!admission.is_committed());
    assert!(facilitator.settlements().await.is_empty(), "verify moves no money");

    let receipt = admission.finalize().await.expect("settled");
    assert!(admission.is_committed());
    assert!(!receipt.headers.contains_key(X_PAYMENT_RESPONSE));
    let settle = decode(&receipt.headers[PAYMENT_RESPONSE]);
    let transaction = voucher.receipt_id().expect("id");
    assert_eq!(
        settle,
        json!({"success": true, "payer": wallet.payer_id(), "transaction": transaction, "network": "accord:local"})
    );
    let ledger = facilitator.settlements().await;
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0]["transaction"], transaction);
    assert_eq!(ledger[0]["amount"], "2500");
    assert_eq!(ledger[0]["resource"], RESOURCE);
    assert_eq!(ledger[0]["idempotencyKey"], KEY);

    // A second finalize answers the first receipt without settling again.
    assert_eq!(admission.finalize().await.expect("again"), receipt);
    // The spent voucher no longer verifies.
    match rail.verify(&request(&price, &headers)).await.expect_err("replay") {
        PaymentError::Rejected { reason, .. } => assert_eq!(reason, "nonce_spent"),
        other => panic!("{other:?}"),
    }
    assert_eq!(facilitator.settlements().await.len(), 1);
}

#[tokio::test]
async fn settling_the_same_payload_twice_moves_money_once() {
    let facilitator = Facilitator::spawn();
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let headers = pay(&rail, &wallet, &price);
    let mut first = verified(&rail, &price, &headers).await;
    let mut second = verified(&rail, &price, &headers).await;
    let one = first.finalize().await.expect("first");
    let two = second.finalize().await.expect("second");
    assert_eq!(decode(&one.headers[PAYMENT_RESPONSE]), decode(&two.headers[PAYMENT_RESPONSE]));
    assert_eq!(facilitator.settlements().await.len(), 1);
}

#[tokio::test]
async fn another_voucher_with_a_settled_nonce_is_refused_at_settlement() {
    let facilitator = Facilitator::spawn();
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let voucher = |amount: &str| Voucher {
        payer: String::new(),
        pay_to: "shop".into(),
        amount: amount.into(),
        asset: "USDC".into(),
        network: "accord:local".into(),
        resource: RESOURCE.into(),
        nonce: "shared-nonce".into(),
        valid_before: accord_now() + 120,
    };
    let first = credential(&rail, &price, &wallet.sign(voucher("2500")));
    let second = credential(&rail, &price, &wallet.sign(voucher("3000")));
    let mut a = verified(&rail, &price, &first).await;
    let mut b = verified(&rail, &price, &second).await;
    a.finalize().await.expect("first settles");
    match b.finalize().await.expect_err("same nonce") {
        PaymentError::Rejected { reason, challenge } => {
            assert_eq!(reason, "nonce_spent");
            assert_eq!(challenge.body["error"]["reason"], "nonce_spent");
        }
        other => panic!("{other:?}"),
    }
    assert!(!b.is_committed(), "success:false moved nothing");
    let ledger = facilitator.settlements().await;
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0]["amount"], "2500");
}

fn accord_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs()
}

#[tokio::test]
async fn an_invalid_signature_is_rejected_with_a_fresh_challenge() {
    let facilitator = Facilitator::spawn();
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let mut forged = voucher_of(&pay(&rail, &wallet, &price));
    forged.voucher.amount = "999999".into();
    let headers = credential(&rail, &price, &forged);
    match rail.verify(&request(&price, &headers)).await.expect_err("forged") {
        PaymentError::Rejected { reason, challenge } => {
            assert_eq!(reason, "invalid_signature");
            assert_eq!(decode(&challenge.headers[PAYMENT_REQUIRED])["error"], "invalid_signature");
            assert_eq!(challenge.body["error"]["code"], "payment_required");
        }
        other => panic!("{other:?}"),
    }
    // An expired voucher is refused by the facilitator too.
    let mut stale = voucher_of(&pay(&rail, &wallet, &price)).voucher;
    stale.valid_before = accord_now() - 1;
    let headers = credential(&rail, &price, &wallet.sign(stale));
    match rail.verify(&request(&price, &headers)).await.expect_err("expired") {
        PaymentError::Rejected { reason, .. } => assert_eq!(reason, "expired"),
        other => panic!("{other:?}"),
    }
    assert!(facilitator.settlements().await.is_empty());
}

#[tokio::test]
async fn verify_faults_make_the_rail_unavailable() {
    let facilitator = Facilitator::spawn();
    let rail = rail(&facilitator).with_verify_timeout(Duration::from_millis(800));
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let headers = pay(&rail, &wallet, &price);

    facilitator.faults(json!({"verify": "error"})).await;
    let error = rail.verify(&request(&price, &headers)).await.expect_err("500");
    assert!(matches!(error, PaymentError::Unavailable { .. }), "{error:?}");

    facilitator.faults(json!({"verify": "timeout"})).await;
    let started = Instant::now();
    let error = rail.verify(&request(&price, &headers)).await.expect_err("timeout");
    assert!(matches!(error, PaymentError::Unavailable { .. }), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "the rail's own timeout fired");

    // Back to normal, the same credential verifies: nothing was spent.
    facilitator.faults(json!({"verify": "ok"})).await;
    verified(&rail, &price, &headers).await;
    assert!(facilitator.settlements().await.is_empty());
}

#[tokio::test]
async fn an_unreachable_facilitator_is_unavailable() {
    let mut facilitator = Facilitator::spawn();
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let headers = pay(&rail, &wallet, &price);
    facilitator.kill();
    let error = rail.verify(&request(&price, &headers)).await.expect_err("down");
    assert!(matches!(error, PaymentError::Unavailable { .. }), "{error:?}");
}

#[tokio::test]
async fn a_settle_error_is_uncertain_and_committed() {
    let facilitator = Facilitator::spawn();
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let mut admission = verified(&rail, &price, &pay(&rail, &wallet, &price)).await;
    facilitator.faults(json!({"settle": "error"})).await;
    match admission.finalize().await.expect_err("500") {
        PaymentError::Uncertain { receipt, .. } => assert!(receipt.is_empty()),
        other => panic!("{other:?}"),
    }
    assert!(admission.is_committed());
    // Abort after an uncertain settlement changes nothing; finalize answers the same error.
    admission.abort().await;
    assert!(admission.is_committed());
    assert!(matches!(admission.finalize().await, Err(PaymentError::Uncertain { .. })));
    assert!(facilitator.settlements().await.is_empty(), "the injected error settled nothing");
}

#[tokio::test]
async fn a_settle_timeout_is_uncertain_and_committed() {
    let facilitator = Facilitator::spawn();
    let rail = rail(&facilitator).with_settle_timeout(Duration::from_millis(800));
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let mut admission = verified(&rail, &price, &pay(&rail, &wallet, &price)).await;
    facilitator.faults(json!({"settle": "timeout"})).await;
    let started = Instant::now();
    match admission.finalize().await.expect_err("timeout") {
        PaymentError::Uncertain { receipt, .. } => assert!(receipt.is_empty()),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(admission.is_committed());
    assert!(facilitator.settlements().await.is_empty());
}

#[tokio::test]
async fn an_error_after_settlement_is_uncertain_and_the_money_moved() {
    let facilitator = Facilitator::spawn();
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let headers = pay(&rail, &wallet, &price);
    let mut admission = verified(&rail, &price, &headers).await;
    facilitator.faults(json!({"settle": "error_after_settle"})).await;
    assert!(matches!(admission.finalize().await, Err(PaymentError::Uncertain { .. })));
    assert!(admission.is_committed());
    let ledger = facilitator.settlements().await;
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0]["transaction"], voucher_of(&headers).receipt_id().expect("id"));

    // The money moved: the voucher is spent at the facilitator.
    facilitator.faults(json!({"settle": "ok"})).await;
    match rail.verify(&request(&price, &headers)).await.expect_err("spent") {
        PaymentError::Rejected { reason, .. } => assert_eq!(reason, "nonce_spent"),
        other => panic!("{other:?}"),
    }
    assert_eq!(facilitator.settlements().await.len(), 1);
}

#[tokio::test]
async fn a_refused_settle_connection_is_unavailable_and_not_committed() {
    let mut facilitator = Facilitator::spawn();
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let mut admission = verified(&rail, &price, &pay(&rail, &wallet, &price)).await;
    facilitator.kill();
    let error = admission.finalize().await.expect_err("refused");
    assert!(matches!(error, PaymentError::Unavailable { .. }), "{error:?}");
    assert!(!admission.is_committed());
}

#[tokio::test]
async fn a_connection_lost_during_settlement_is_uncertain() {
    let mut facilitator = Facilitator::spawn();
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let mut admission = verified(&rail, &price, &pay(&rail, &wallet, &price)).await;
    facilitator.faults(json!({"settle": "timeout"})).await;
    let settling = tokio::spawn(async move {
        let outcome = admission.finalize().await;
        (outcome, admission.is_committed())
    });
    // The request is held by the facilitator; killing it drops the connection after sending.
    tokio::time::sleep(Duration::from_millis(700)).await;
    facilitator.kill();
    let (outcome, committed) =
        tokio::time::timeout(Duration::from_secs(20), settling).await.expect("done").expect("task");
    assert!(matches!(outcome, Err(PaymentError::Uncertain { .. })), "{outcome:?}");
    assert!(committed);
}

#[tokio::test]
async fn legacy_x_payment_credentials_settle_with_legacy_receipts() {
    let facilitator = Facilitator::spawn();
    let rail = rail(&facilitator);
    let wallet = Wallet::generate().expect("wallet");
    let price = price();
    let v1 = json!({
        "x402Version": 1,
        "error": "X-PAYMENT header is required",
        "accepts": [{"scheme": SCHEME, "network": "accord:local", "maxAmountRequired": "2500", "resource": RESOURCE,
                     "description": "A paid task", "mimeType": "application/json", "payTo": "shop",
                     "maxTimeoutSeconds": 60, "asset": "USDC"}]
    });
    let headers =
        wallet.pay(402, &HeaderMap::new(), &serde_json::to_vec(&v1).expect("json")).expect("pay").expect("payable");
    assert!(headers.contains_key(X_PAYMENT));
    let mut admission = verified(&rail, &price, &headers).await;
    let receipt = admission.finalize().await.expect("settled");
    assert_eq!(receipt.headers[X_PAYMENT_RESPONSE], receipt.headers[PAYMENT_RESPONSE]);
    let ledger = facilitator.settlements().await;
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0]["x402Version"], 1);
}
