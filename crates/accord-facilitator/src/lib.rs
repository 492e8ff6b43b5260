//! A loopback x402 facilitator for Accord's tests and demos.
//!
//! It verifies and settles `accord-voucher` payments (the scheme of
//! [`accord_payments::voucher`]) with the x402 v2 facilitator interface (`x402-specification-v2`,
//! section 7), and accepts x402 v1 payloads too:
//!
//! - `GET /supported` → `{"kinds": [{"x402Version": 2, "scheme": "accord-voucher", "network"}…],
//!   "extensions": [], "signers": {}}` (one kind per configured network, and the same for
//!   version 1).
//! - `POST /verify` with `{"x402Version", "paymentPayload", "paymentRequirements"}` →
//!   `VerifyResponse` `{"isValid", "invalidReason"?, "payer"?}`. A voucher whose nonce was already
//!   settled is invalid (`nonce_spent`).
//! - `POST /settle` (same body; an `Idempotency-Key` header is recorded) → `SettleResponse`
//!   `{"success", "errorReason"?, "payer"?, "transaction", "network"}`. Settlement is idempotent
//!   per payload: the same signed voucher settles once and every later settle of it answers the
//!   same transaction. Another voucher with an already settled `(payer, nonce)` gets
//!   `success: false` with `nonce_spent`. Refusals are `200` answers with `success: false` (or
//!   `isValid: false`); a body that is not a facilitator request gets `400` with the same shapes.
//! - `GET /ledger` → `{"settlements": [{"transaction", "payer", "payTo", "amount", "asset",
//!   "network", "resource", "nonce", "x402Version", "idempotencyKey"?}…], "holding": n}`: what
//!   moved, in order, and how many settle requests a `timeout` or `slow` fault is holding now.
//! - `GET /faults`, `POST /faults` with `{"verify"?: "ok"|"error"|"timeout", "settle"?:
//!   "ok"|"error"|"timeout"|"error_after_settle"|"slow", "holdSeconds"?: n}` → the faults now in
//!   force (`slow` holds a settle for `holdSeconds`, then settles normally).
//!   `error` answers `500` without settling; `timeout` holds the request for `holdSeconds`
//!   (default 60) without settling, then answers `500`; `error_after_settle` records the
//!   settlement in the ledger, then answers `500`.
//!
//! State lives in memory: a restarted facilitator has an empty ledger.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use accord_payments::voucher::{Expected, SCHEME, SignedVoucher};
use accord_payments::x402::{
    FacilitatorRequest, PaymentPayload, PaymentPayloadV1, PaymentRequirements, PaymentRequirementsV1, SettleResponse,
    SupportedKind, SupportedResponse, VerifyResponse,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The default time a `timeout` fault holds a request.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(60);

/// What `/verify` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyFault {
    /// Verify normally.
    #[default]
    Ok,
    /// Answer `500`.
    Error,
    /// Hold the request, then answer `500`.
    Timeout,
}

/// What `/settle` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettleFault {
    /// Settle normally.
    #[default]
    Ok,
    /// Answer `500` without settling.
    Error,
    /// Hold the request without settling, then answer `500`.
    Timeout,
    /// Settle (the ledger records it), then answer `500`.
    ErrorAfterSettle,
    /// Hold the request for the hold time, then settle normally (a slow but successful settle).
    Slow,
}

/// The faults in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Faults {
    /// `/verify`.
    pub verify: VerifyFault,
    /// `/settle`.
    pub settle: SettleFault,
    /// How long a `timeout` fault holds a request, in seconds.
    pub hold_seconds: u64,
}

/// A change of faults (`POST /faults`): absent fields stay as they are.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultsUpdate {
    /// `/verify`.
    pub verify: Option<VerifyFault>,
    /// `/settle`.
    pub settle: Option<SettleFault>,
    /// How long a `timeout` fault holds a request, in seconds.
    pub hold_seconds: Option<u64>,
}

/// One settlement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settlement {
    /// The transaction id (the voucher's receipt id).
    pub transaction: String,
    /// Who paid.
    pub payer: String,
    /// Who was paid.
    pub pay_to: String,
    /// How much.
    pub amount: String,
    /// In what.
    pub asset: String,
    /// On which network.
    pub network: String,
    /// For what.
    pub resource: String,
    /// The voucher nonce.
    pub nonce: String,
    /// The x402 version of the payload.
    pub x402_version: u32,
    /// The `Idempotency-Key` of the settle request that moved the money.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// Configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The networks accepted (CAIP-2).
    pub networks: Vec<String>,
    /// How long `timeout` faults hold requests, until changed through `/faults`.
    pub hold: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self { networks: vec!["accord:local".into()], hold: DEFAULT_HOLD }
    }
}

#[derive(Debug, Default)]
struct Ledger {
    settlements: Vec<Settlement>,
    by_transaction: HashMap<String, SettleResponse>,
    nonces: HashMap<String, String>,
}

#[derive(Debug)]
struct Shared {
    networks: Vec<String>,
    faults: Mutex<Faults>,
    ledger: Mutex<Ledger>,
    /// Settle requests being held by a `timeout` or `slow` fault right now.
    holding: std::sync::atomic::AtomicUsize,
}

/// Counts a held settle request while it lives.
struct Holding<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Holding<'a> {
    fn new(counter: &'a std::sync::atomic::AtomicUsize) -> Self {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(counter)
    }
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Shared {
    fn faults(&self) -> Faults {
        *self.faults.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The facilitator's routes.
pub fn app(config: Config) -> Router {
    let shared = Arc::new(Shared {
        networks: config.networks,
        faults: Mutex::new(Faults {
            verify: VerifyFault::Ok,
            settle: SettleFault::Ok,
            hold_seconds: config.hold.as_secs(),
        }),
        ledger: Mutex::new(Ledger::default()),
        holding: std::sync::atomic::AtomicUsize::new(0),
    });
    Router::new()
        .route("/supported", get(supported))
        .route("/verify", post(verify))
        .route("/settle", post(settle))
        .route("/ledger", get(ledger))
        .route("/faults", get(faults).post(set_faults))
        .with_state(shared)
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_secs()).unwrap_or(0)
}

async fn supported(State(shared): State<Arc<Shared>>) -> Response {
    let kinds = [2, 1]
        .into_iter()
        .flat_map(|version| {
            shared.networks.iter().map(move |network| SupportedKind {
                x402_version: version,
                scheme: SCHEME.into(),
                network: network.clone(),
                extra: None,
            })
        })
        .collect();
    axum::Json(SupportedResponse { kinds, extensions: Vec::new(), signers: serde_json::Map::new() }).into_response()
}

async fn ledger(State(shared): State<Arc<Shared>>) -> Response {
    let holding = shared.holding.load(std::sync::atomic::Ordering::SeqCst);
    axum::Json(json!({"settlements": shared.ledger().settlements, "holding": holding})).into_response()
}

async fn faults(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.faults()).into_response()
}

async fn set_faults(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let Ok(update) = serde_json::from_slice::<FaultsUpdate>(&body) else {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "expected {verify?, settle?, holdSeconds?}"})))
            .into_response();
    };
    let mut faults = shared.faults.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(verify) = update.verify {
        faults.verify = verify;
    }
    if let Some(settle) = update.settle {
        faults.settle = settle;
    }
    if let Some(hold) = update.hold_seconds {
        faults.hold_seconds = hold;
    }
    axum::Json(*faults).into_response()
}

fn injected(what: &str) -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({"error": format!("injected fault: {what}")}))).into_response()
}

/// A payment, checked for shape, with what it must pay.
struct Payment {
    voucher: SignedVoucher,
    version: u32,
    pay_to: String,
    amount: String,
    asset: String,
    network: String,
    resource: String,
}

/// Reads a facilitator request: the voucher and the requirements it must meet.
fn read(shared: &Shared, body: &[u8]) -> Result<Payment, String> {
    let request: FacilitatorRequest = serde_json::from_slice(body).map_err(|_| "invalid_payload".to_string())?;
    let payment = match request.x402_version {
        2 => {
            let payload: PaymentPayload =
                serde_json::from_value(request.payment_payload).map_err(|_| "invalid_payload".to_string())?;
            let requirements: PaymentRequirements = serde_json::from_value(request.payment_requirements)
                .map_err(|_| "invalid_payment_requirements".to_string())?;
            if payload.accepted.scheme != SCHEME || requirements.scheme != SCHEME {
                return Err("unsupported_scheme".into());
            }
            let accepted = &payload.accepted;
            if accepted.network != requirements.network
                || accepted.amount != requirements.amount
                || accepted.asset != requirements.asset
                || accepted.pay_to != requirements.pay_to
            {
                return Err("invalid_payment_requirements".into());
            }
            let resource = payload.resource.as_ref().map(|info| info.url.clone()).ok_or("invalid_payload")?;
            Payment {
                voucher: SignedVoucher::from_value(&payload.payload).map_err(|error| error.reason().to_string())?,
                version: 2,
                pay_to: requirements.pay_to,
                amount: requirements.amount,
                asset: requirements.asset,
                network: requirements.network,
                resource,
            }
        }
        1 => {
            let payload: PaymentPayloadV1 =
                serde_json::from_value(request.payment_payload).map_err(|_| "invalid_payload".to_string())?;
            let requirements: PaymentRequirementsV1 = serde_json::from_value(request.payment_requirements)
                .map_err(|_| "invalid_payment_requirements".to_string())?;
            if payload.scheme != SCHEME || requirements.scheme != SCHEME {
                return Err("unsupported_scheme".into());
            }
            if payload.network != requirements.network {
                return Err("invalid_network".into());
            }
            Payment {
                voucher: SignedVoucher::from_value(&payload.payload).map_err(|error| error.reason().to_string())?,
                version: 1,
                pay_to: requirements.pay_to,
                amount: requirements.max_amount_required,
                asset: requirements.asset,
                network: requirements.network,
                resource: requirements.resource,
            }
        }
        _ => return Err("invalid_x402_version".into()),
    };
    if !shared.networks.contains(&payment.network) {
        return Err("invalid_network".into());
    }
    Ok(payment)
}

impl Payment {
    /// Signature, payee, asset, network, resource, amount and expiry.
    fn check(&self) -> Result<(), String> {
        let expected = Expected {
            pay_to: &self.pay_to,
            amount: &self.amount,
            asset: &self.asset,
            network: &self.network,
            resource: &self.resource,
        };
        self.voucher.verify(&expected, now_unix()).map_err(|error| error.reason().to_string())
    }
}

fn invalid(status: StatusCode, reason: &str, payer: Option<String>) -> Response {
    let answer = VerifyResponse { is_valid: false, invalid_reason: Some(reason.to_string()), payer };
    (status, axum::Json(answer)).into_response()
}

async fn verify(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let faults = shared.faults();
    match faults.verify {
        VerifyFault::Ok => {}
        VerifyFault::Error => return injected("verify error"),
        VerifyFault::Timeout => {
            tokio::time::sleep(Duration::from_secs(faults.hold_seconds)).await;
            return injected("verify timeout");
        }
    }
    let payment = match read(&shared, &body) {
        Ok(payment) => payment,
        Err(reason) if reason == "invalid_payload" => return invalid(StatusCode::BAD_REQUEST, &reason, None),
        Err(reason) => return invalid(StatusCode::OK, &reason, None),
    };
    let payer = Some(payment.voucher.voucher.payer.clone());
    if let Err(reason) = payment.check() {
        return invalid(StatusCode::OK, &reason, payer);
    }
    if shared.ledger().nonces.contains_key(&payment.voucher.nonce_key()) {
        return invalid(StatusCode::OK, "nonce_spent", payer);
    }
    axum::Json(VerifyResponse { is_valid: true, invalid_reason: None, payer }).into_response()
}

fn refused(reason: &str, payer: Option<String>, network: &str) -> SettleResponse {
    SettleResponse {
        success: false,
        error_reason: Some(reason.to_string()),
        payer,
        transaction: String::new(),
        network: network.to_string(),
    }
}

/// Settles once per payload; the answer to send.
fn settle_payment(shared: &Shared, body: &[u8], key: Option<String>) -> (StatusCode, SettleResponse) {
    let payment = match read(shared, body) {
        Ok(payment) => payment,
        Err(reason) if reason == "invalid_payload" => return (StatusCode::BAD_REQUEST, refused(&reason, None, "")),
        Err(reason) => return (StatusCode::OK, refused(&reason, None, "")),
    };
    let payer = Some(payment.voucher.voucher.payer.clone());
    let Ok(transaction) = payment.voucher.receipt_id() else {
        return (StatusCode::OK, refused("invalid_payload", payer, &payment.network));
    };
    let mut ledger = shared.ledger();
    if let Some(done) = ledger.by_transaction.get(&transaction) {
        return (StatusCode::OK, done.clone());
    }
    if let Err(reason) = payment.check() {
        return (StatusCode::OK, refused(&reason, payer, &payment.network));
    }
    let nonce_key = payment.voucher.nonce_key();
    if ledger.nonces.contains_key(&nonce_key) {
        return (StatusCode::OK, refused("nonce_spent", payer, &payment.network));
    }
    let voucher = &payment.voucher.voucher;
    let answer = SettleResponse {
        success: true,
        error_reason: None,
        payer: payer.clone(),
        transaction: transaction.clone(),
        network: payment.network.clone(),
    };
    ledger.settlements.push(Settlement {
        transaction: transaction.clone(),
        payer: voucher.payer.clone(),
        pay_to: voucher.pay_to.clone(),
        amount: voucher.amount.clone(),
        asset: voucher.asset.clone(),
        network: voucher.network.clone(),
        resource: voucher.resource.clone(),
        nonce: voucher.nonce.clone(),
        x402_version: payment.version,
        idempotency_key: key,
    });
    ledger.nonces.insert(nonce_key, transaction.clone());
    ledger.by_transaction.insert(transaction, answer.clone());
    (StatusCode::OK, answer)
}

async fn settle(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let key = headers.get("idempotency-key").and_then(|value| value.to_str().ok()).map(str::to_string);
    let faults = shared.faults();
    match faults.settle {
        SettleFault::Ok => {
            let (status, answer) = settle_payment(&shared, &body, key);
            (status, axum::Json(answer)).into_response()
        }
        SettleFault::Error => injected("settle error"),
        SettleFault::Timeout => {
            let _holding = Holding::new(&shared.holding);
            tokio::time::sleep(Duration::from_secs(faults.hold_seconds)).await;
            injected("settle timeout")
        }
        SettleFault::ErrorAfterSettle => {
            let _settled = settle_payment(&shared, &body, key);
            injected("error after settle")
        }
        SettleFault::Slow => {
            let holding = Holding::new(&shared.holding);
            tokio::time::sleep(Duration::from_secs(faults.hold_seconds)).await;
            drop(holding);
            let (status, answer) = settle_payment(&shared, &body, key);
            (status, axum::Json(answer)).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_names_are_the_documented_ones() {
        let update: FaultsUpdate =
            serde_json::from_value(json!({"verify": "timeout", "settle": "error_after_settle", "holdSeconds": 2}))
                .expect("update");
        assert_eq!(update.verify, Some(VerifyFault::Timeout));
        assert_eq!(update.settle, Some(SettleFault::ErrorAfterSettle));
        assert_eq!(update.hold_seconds, Some(2));
        assert!(serde_json::from_value::<FaultsUpdate>(json!({"settle": "explode"})).is_err());
        assert!(serde_json::from_value::<FaultsUpdate>(json!({"verfy": "ok"})).is_err());
    }

    #[test]
    fn requests_that_are_not_accord_vouchers_are_refused() {
        let shared = Shared {
            networks: vec!["accord:local".into()],
            faults: Mutex::new(Faults { verify: VerifyFault::Ok, settle: SettleFault::Ok, hold_seconds: 1 }),
            ledger: Mutex::new(Ledger::default()),
            holding: std::sync::atomic::AtomicUsize::new(0),
        };
        assert_eq!(read(&shared, b"{}").err().as_deref(), Some("invalid_payload"));
        let requirements = json!({"scheme": "exact", "network": "accord:local", "amount": "1", "asset": "USDC",
                                  "payTo": "shop", "maxTimeoutSeconds": 5});
        let body = json!({"x402Version": 2,
                          "paymentPayload": {"x402Version": 2, "accepted": requirements, "payload": {}},
                          "paymentRequirements": requirements});
        assert_eq!(read(&shared, body.to_string().as_bytes()).err().as_deref(), Some("unsupported_scheme"));
        let body = json!({"x402Version": 3, "paymentPayload": {}, "paymentRequirements": {}});
        assert_eq!(read(&shared, body.to_string().as_bytes()).err().as_deref(), Some("invalid_x402_version"));
        let (status, answer) = settle_payment(&shared, b"nonsense", None);
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(!answer.success);
        assert!(shared.ledger().settlements.is_empty());
    }
}
