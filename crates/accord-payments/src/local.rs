//! [`LocalRail`]: the development and test rail. It speaks x402 v2 with the `accord-voucher`
//! scheme and verifies and settles in process, with no facilitator.
//!
//! - Challenge: exactly the x402 challenge (see [`crate::x402`]): header `PAYMENT-REQUIRED`, and a
//!   body that is the Lucid fallback shape plus `resource` and `accepts`.
//! - Credential: `PAYMENT-SIGNATURE` (or legacy `X-PAYMENT`), whose `payload` is a
//!   [`SignedVoucher`].
//! - `verify` checks the voucher (signature, payee, asset, network, resource, amount, expiry, and
//!   that its nonce is not spent yet). Nothing is reserved: two admissions of one voucher can
//!   exist, and the first to `finalize` wins; the other is `Rejected` with `nonce_spent`.
//! - `finalize` spends the nonce and returns `PAYMENT-RESPONSE` (and `X-PAYMENT-RESPONSE` for a
//!   legacy credential): base64 JSON `SettleResponse` whose `transaction` is the voucher's
//!   deterministic [receipt id](SignedVoucher::receipt_id).
//!
//! Spent nonces are kept in memory, per process ([`SpentNonces`]).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use http::HeaderMap;
use serde_json::{Value, json};

use crate::codec::now_unix;
use crate::state::{Admitted, Settle};
use crate::voucher::{Expected, SCHEME, SignedVoucher, SpentNonces, VoucherError};
use crate::x402::{
    PaymentRequirements, SettleResponse, X402_VERSION, accepted_credential, has_x402_credential, rejection,
    settlement_receipt, x402_challenge,
};
use crate::{Admission, Challenge, Operation, PaymentError, PaymentRail, PaymentRequest, Price, Receipt};

/// The default `maxTimeoutSeconds` (also the longest a wallet makes its vouchers valid for).
pub const DEFAULT_MAX_TIMEOUT_SECONDS: u64 = 300;

/// The local development rail.
#[derive(Debug, Clone)]
pub struct LocalRail {
    spent: Arc<SpentNonces>,
    max_timeout_seconds: u64,
}

impl Default for LocalRail {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalRail {
    /// A rail with its own spent-nonce set.
    pub fn new() -> Self {
        Self { spent: Arc::new(SpentNonces::new()), max_timeout_seconds: DEFAULT_MAX_TIMEOUT_SECONDS }
    }

    /// Shares a spent-nonce set (several rails, one process).
    pub fn with_spent(mut self, spent: Arc<SpentNonces>) -> Self {
        self.spent = spent;
        self
    }

    /// Sets `maxTimeoutSeconds` of the requirements.
    pub fn with_max_timeout_seconds(mut self, seconds: u64) -> Self {
        self.max_timeout_seconds = seconds;
        self
    }

    /// The spent-nonce set.
    pub fn spent(&self) -> &Arc<SpentNonces> {
        &self.spent
    }

    /// The requirements for `price`.
    pub fn requirements(&self, price: &Price) -> PaymentRequirements {
        PaymentRequirements {
            scheme: SCHEME.into(),
            network: price.network.clone(),
            amount: price.amount.clone(),
            asset: price.asset.clone(),
            pay_to: price.pay_to.clone(),
            max_timeout_seconds: self.max_timeout_seconds,
            extra: None,
        }
    }
}

#[async_trait]
impl PaymentRail for LocalRail {
    fn protocol(&self) -> &'static str {
        "local"
    }

    fn card_entry(&self) -> Value {
        json!({"protocol": "local", "x402Version": X402_VERSION, "scheme": SCHEME})
    }

    fn supports(&self, _operation: Operation, price: &Price) -> Result<(), String> {
        price.validate()
    }

    fn has_credential(&self, headers: &HeaderMap) -> bool {
        has_x402_credential(headers)
    }

    fn challenge(&self, request: &PaymentRequest<'_>) -> Challenge {
        x402_challenge(&self.requirements(request.price), request, None)
    }

    async fn verify(&self, request: &PaymentRequest<'_>) -> Result<Box<dyn Admission>, PaymentError> {
        let requirements = self.requirements(request.price);
        let reject = |reason: &str| rejection(&requirements, request, reason);
        let (credential, legacy) = accepted_credential(&requirements, request)?;
        let voucher = SignedVoucher::from_value(credential.payload()).map_err(|error| reject(error.reason()))?;
        let now = now_unix();
        voucher
            .verify(&Expected::from_price(request.price, request.resource), now)
            .map_err(|error| reject(error.reason()))?;
        if self.spent.is_spent(&voucher.nonce_key(), now) {
            return Err(reject(VoucherError::NonceSpent.reason()));
        }
        let transaction = voucher.receipt_id().map_err(|error| reject(error.reason()))?;
        Ok(Box::new(Admitted::new(LocalAdmission {
            spent: self.spent.clone(),
            transaction,
            network: request.price.network.clone(),
            voucher,
            legacy,
            challenge: x402_challenge(&requirements, request, Some("settlement_failed")),
        })))
    }
}

/// A verified voucher, settled in process.
struct LocalAdmission {
    spent: Arc<SpentNonces>,
    voucher: SignedVoucher,
    transaction: String,
    network: String,
    legacy: bool,
    challenge: Challenge,
}

impl fmt::Debug for LocalAdmission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalAdmission")
            .field("payer", &self.voucher.voucher.payer)
            .field("transaction", &self.transaction)
            .field("legacy", &self.legacy)
            .finish_non_exhaustive()
    }
}

impl LocalAdmission {
    fn rejected(&self, reason: &str) -> PaymentError {
        let mut challenge = self.challenge.clone();
        challenge.body["error"]["reason"] = Value::from(reason);
        PaymentError::Rejected { reason: reason.to_string(), challenge }
    }
}

#[async_trait]
impl Settle for LocalAdmission {
    async fn settle(&self) -> Result<Receipt, PaymentError> {
        let now = now_unix();
        if now >= self.voucher.voucher.valid_before {
            return Err(self.rejected(VoucherError::Expired.reason()));
        }
        if !self.spent.try_spend(&[self.voucher.nonce_key()], self.voucher.voucher.valid_before, now) {
            return Err(self.rejected(VoucherError::NonceSpent.reason()));
        }
        let answer = SettleResponse {
            success: true,
            error_reason: None,
            payer: Some(self.voucher.voucher.payer.clone()),
            transaction: self.transaction.clone(),
            network: self.network.clone(),
        };
        Ok(settlement_receipt(&answer, self.legacy))
    }

    fn challenge(&self) -> &Challenge {
        &self.challenge
    }

    fn payer(&self) -> Option<&str> {
        Some(&self.voucher.voucher.payer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::b64_json_decode;
    use crate::wallet::Wallet;
    use crate::x402::{PAYMENT_REQUIRED, PAYMENT_RESPONSE, PAYMENT_SIGNATURE, X_PAYMENT, X_PAYMENT_RESPONSE};

    const RESOURCE: &str = "https://agent.example/tasks";

    fn price(amount: &str) -> Price {
        Price { amount: amount.into(), asset: "USDC".into(), network: "accord:local".into(), pay_to: "shop".into() }
    }

    fn request<'a>(price: &'a Price, headers: &'a HeaderMap) -> PaymentRequest<'a> {
        PaymentRequest {
            resource: RESOURCE,
            operation: Operation::Task,
            price,
            description: None,
            headers,
            idempotency_key: Some("key-0123456789abcdefghij"),
        }
    }

    /// The wallet's answer to the rail's challenge, as request headers.
    fn pay(rail: &LocalRail, wallet: &Wallet, price: &Price) -> HeaderMap {
        let empty = HeaderMap::new();
        let challenge = rail.challenge(&request(price, &empty));
        let body = serde_json::to_vec(&challenge.body).expect("json");
        wallet.pay(402, &challenge.headers, &body).expect("pay").expect("payable")
    }

    #[tokio::test]
    async fn a_voucher_is_verified_settled_once_and_receipted() {
        let rail = LocalRail::new();
        let wallet = Wallet::generate().expect("wallet");
        let price = price("10000");
        assert!(!rail.has_credential(&HeaderMap::new()));
        let headers = pay(&rail, &wallet, &price);
        assert!(rail.has_credential(&headers));
        assert!(headers.contains_key(PAYMENT_SIGNATURE));

        let mut admission = rail.verify(&request(&price, &headers)).await.expect("valid");
        assert_eq!(admission.payer(), Some(wallet.payer_id().as_str()));
        assert!(!admission.is_committed());
        let receipt = admission.finalize().await.expect("settled");
        assert!(admission.is_committed());
        let settle = b64_json_decode(receipt.headers[PAYMENT_RESPONSE].to_str().expect("ascii")).expect("json");
        assert_eq!(settle["success"], true);
        assert_eq!(settle["network"], "accord:local");
        assert_eq!(settle["payer"], wallet.payer_id());
        let transaction = settle["transaction"].as_str().expect("transaction").to_string();
        assert_eq!(transaction.len(), 64);
        assert!(!receipt.headers.contains_key(X_PAYMENT_RESPONSE));
        // A second finalize returns the same receipt; abort after settling changes nothing.
        assert_eq!(admission.finalize().await.expect("again"), receipt);
        admission.abort().await;
        assert!(admission.is_committed());

        // The same credential again: refused as spent, with a fresh challenge naming the reason.
        match rail.verify(&request(&price, &headers)).await.expect_err("replay") {
            PaymentError::Rejected { reason, challenge } => {
                assert_eq!(reason, "nonce_spent");
                assert_eq!(challenge.body["error"]["reason"], "nonce_spent");
                let header = challenge.headers[PAYMENT_REQUIRED].to_str().expect("ascii");
                assert_eq!(b64_json_decode(header).expect("json")["error"], "nonce_spent");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn two_admissions_of_one_voucher_settle_once() {
        let rail = LocalRail::new();
        let wallet = Wallet::generate().expect("wallet");
        let price = price("5");
        let headers = pay(&rail, &wallet, &price);
        let mut first = rail.verify(&request(&price, &headers)).await.expect("first");
        let mut second = rail.verify(&request(&price, &headers)).await.expect("second");
        first.finalize().await.expect("settled");
        let error = second.finalize().await.expect_err("double spend");
        assert!(matches!(&error, PaymentError::Rejected { reason, .. } if reason == "nonce_spent"), "{error:?}");
        assert!(!second.is_committed());
        // The failed outcome is remembered.
        assert_eq!(second.finalize().await.expect_err("again"), error);
    }

    #[tokio::test]
    async fn an_aborted_admission_spends_nothing() {
        let rail = LocalRail::new();
        let wallet = Wallet::generate().expect("wallet");
        let price = price("5");
        let headers = pay(&rail, &wallet, &price);
        let mut admission = rail.verify(&request(&price, &headers)).await.expect("valid");
        admission.abort().await;
        admission.abort().await;
        assert!(!admission.is_committed());
        assert!(rail.spent().is_empty());
        assert!(matches!(admission.finalize().await, Err(PaymentError::Rejected { .. })));
        assert!(rail.spent().is_empty());
        // The voucher is still good for a new admission.
        let mut again = rail.verify(&request(&price, &headers)).await.expect("still valid");
        again.finalize().await.expect("settled");
    }

    #[tokio::test]
    async fn wrong_price_resource_or_signature_is_rejected() {
        let rail = LocalRail::new();
        let wallet = Wallet::generate().expect("wallet");
        let paid = price("10");
        let headers = pay(&rail, &wallet, &paid);
        // The price went up: the echoed requirements no longer match.
        let dearer = price("11");
        let error = rail.verify(&request(&dearer, &headers)).await.expect_err("dearer");
        assert!(matches!(&error, PaymentError::Rejected { reason, .. } if reason == "invalid_payment_requirements"));
        // Another resource.
        let mut other = request(&paid, &headers);
        other.resource = "https://agent.example/elsewhere";
        let error = rail.verify(&other).await.expect_err("elsewhere");
        assert!(matches!(&error, PaymentError::Rejected { reason, .. } if reason == "resource_mismatch"));
        // A forged amount inside the voucher.
        let raw = headers[PAYMENT_SIGNATURE].to_str().expect("ascii");
        let mut payload = b64_json_decode(raw).expect("json");
        payload["payload"]["voucher"]["amount"] = Value::from("1000");
        let mut forged = HeaderMap::new();
        forged.insert(PAYMENT_SIGNATURE, crate::codec::b64_json_header(&payload));
        let error = rail.verify(&request(&paid, &forged)).await.expect_err("forged");
        assert!(matches!(&error, PaymentError::Rejected { reason, .. } if reason == "invalid_signature"));
        // Not a voucher at all.
        payload["payload"] = json!({"signature": "0x00"});
        forged.insert(PAYMENT_SIGNATURE, crate::codec::b64_json_header(&payload));
        let error = rail.verify(&request(&paid, &forged)).await.expect_err("not a voucher");
        assert!(matches!(&error, PaymentError::Rejected { reason, .. } if reason == "invalid_payload"));
    }

    #[tokio::test]
    async fn legacy_v1_credentials_get_legacy_receipts() {
        let rail = LocalRail::new();
        let wallet = Wallet::generate().expect("wallet");
        let price = price("7");
        let v1_body = json!({
            "x402Version": 1,
            "error": "X-PAYMENT header is required",
            "accepts": [{
                "scheme": SCHEME, "network": "accord:local", "maxAmountRequired": "7", "resource": RESOURCE,
                "description": "", "mimeType": "application/json", "payTo": "shop", "maxTimeoutSeconds": 60,
                "asset": "USDC"
            }]
        });
        let headers = wallet
            .pay(402, &HeaderMap::new(), &serde_json::to_vec(&v1_body).expect("json"))
            .expect("pay")
            .expect("payable");
        assert!(headers.contains_key(X_PAYMENT));
        assert!(rail.has_credential(&headers));
        let mut admission = rail.verify(&request(&price, &headers)).await.expect("valid");
        let receipt = admission.finalize().await.expect("settled");
        assert_eq!(receipt.headers[X_PAYMENT_RESPONSE], receipt.headers[PAYMENT_RESPONSE]);
    }

    #[test]
    fn only_malformed_prices_are_refused() {
        let rail = LocalRail::new();
        for operation in [Operation::Invoke, Operation::Stream, Operation::Task] {
            assert!(rail.supports(operation, &price("0")).is_ok());
        }
        assert!(rail.supports(Operation::Task, &price("-3")).is_err());
        assert_eq!(rail.protocol(), "local");
        assert_eq!(rail.card_entry()["scheme"], SCHEME);
    }
}
