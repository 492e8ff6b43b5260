//! Payment rails for Accord's paid entrypoints and tasks.
//!
//! A [`PaymentRail`] is one way of being paid (x402 through a facilitator, MPP's `Payment`
//! authentication scheme, the local development rail). The server's payment gate drives a rail
//! through a fixed sequence, and the contract below is what makes that sequence safe:
//!
//! 1. [`PaymentRail::supports`] — can this operation be priced on this rail at all? (Refused before
//!    anything else: `400 payment_capability_unsupported`.)
//! 2. [`PaymentRail::has_credential`] — does the request carry a credential for this rail? A
//!    request without one gets [`PaymentRail::challenge`] (a `402`) and reserves nothing.
//! 3. [`PaymentRail::verify`] — checks the credential against the price. No money moves. Yields an
//!    [`Admission`], or a [`PaymentError`]: `Rejected` (answer the rail's `402` again, with the
//!    reason) or `Unavailable` (the rail could not decide: `503`).
//! 4. [`Admission::finalize`] — settles: after it returns `Ok`, the payment is irreversible and the
//!    [`Receipt`] must reach the caller. Called by the gate only once the work is durably reserved
//!    (for tasks) or has succeeded (for invoke); never twice.
//! 5. [`Admission::abort`] — releases an admission that will not be finalized (the gate calls it
//!    on every failure before commit). Idempotent; a no-op after a successful `finalize`.
//! 6. [`Admission::is_committed`] — whether money has moved *or may have moved*: `true` after a
//!    successful `finalize`, and also after a `finalize` whose outcome is unknown (a timeout or a
//!    lost response from the settling party). The gate treats a committed admission's failures as
//!    "after commit": it never reports the work as not started, and returns whatever receipt it has.
//!
//! Rails never see task ids, tokens or stores; the gate owns those. Secrets (credentials, wallet
//! keys) never appear in `Debug` output, errors or logs.
//!
//! # Rails and helpers
//!
//! - [`LocalRail`] (`local`): x402 v2 headers with Accord's own `accord-voucher` scheme
//!   ([`voucher`]), verified and settled in process. For development and tests.
//! - [`X402Rail`] (`x402`): an x402 facilitator client (`POST /verify`, `POST /settle`).
//! - [`MppRail`] (`mpp`): the `Payment` HTTP authentication scheme, method `accord-voucher`,
//!   intent `charge`.
//! - [`Wallet`]: pays `accord-voucher` offers of any of the three (client side).

#![forbid(unsafe_code)]

mod codec;
pub mod local;
pub mod mpp;
mod state;
pub mod voucher;
pub mod wallet;
pub mod x402;

pub use local::LocalRail;
pub use mpp::MppRail;
pub use voucher::{SignedVoucher, SpentNonces, Voucher, VoucherError};
pub use wallet::{Wallet, WalletError};
pub use x402::X402Rail;

use std::fmt;

use async_trait::async_trait;
use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The response headers that carry settlement evidence — the only payment headers the gate ever
/// copies onto a response (lowercase, as `http` names them).
pub const RECEIPT_HEADERS: [&str; 3] = ["payment-receipt", "payment-response", "x-payment-response"];

/// What is being paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// A direct invocation (`POST /entrypoints/:key/invoke`).
    Invoke,
    /// A stream (`POST /entrypoints/:key/stream`).
    Stream,
    /// A task (`POST /tasks`).
    Task,
}

impl Operation {
    /// `invoke`, `stream` or `task`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invoke => "invoke",
            Self::Stream => "stream",
            Self::Task => "task",
        }
    }
}

/// A price: an amount of an asset on a network, paid to an address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    /// The amount in the asset's smallest unit, as a decimal integer string (`"10000"`).
    pub amount: String,
    /// The asset (a token address or a currency code).
    pub asset: String,
    /// The network (CAIP-2 style, `namespace:reference`, e.g. `eip155:8453` or `accord:local`).
    pub network: String,
    /// Who is paid.
    pub pay_to: String,
}

impl Price {
    /// Checks the price is well formed: a non-empty decimal amount without sign or leading zeros
    /// (`"0"` allowed), and non-empty asset, network (with a `:`) and payee.
    pub fn validate(&self) -> Result<(), String> {
        let amount = &self.amount;
        let digits = !amount.is_empty() && amount.bytes().all(|byte| byte.is_ascii_digit());
        if !digits || (amount.len() > 1 && amount.starts_with('0')) {
            return Err(format!("price amount {amount:?} is not a decimal integer in the asset's smallest unit"));
        }
        if self.asset.trim().is_empty() {
            return Err("price asset is empty".into());
        }
        if !self.network.contains(':') || self.network.starts_with(':') || self.network.ends_with(':') {
            return Err(format!("price network {:?} is not of the form namespace:reference", self.network));
        }
        if self.pay_to.trim().is_empty() {
            return Err("price payTo is empty".into());
        }
        Ok(())
    }
}

/// What a rail is asked about one request.
#[derive(Debug, Clone, Copy)]
pub struct PaymentRequest<'a> {
    /// The absolute URL of the paid resource (what a challenge names as its resource).
    pub resource: &'a str,
    /// What is being paid for.
    pub operation: Operation,
    /// The price.
    pub price: &'a Price,
    /// A human description of the resource, for challenges.
    pub description: Option<&'a str>,
    /// The request's headers (the credential is read from here).
    pub headers: &'a HeaderMap,
    /// The caller's idempotency key, when it sent one: rails pass it to the settling party so a
    /// retried settlement is not charged twice.
    pub idempotency_key: Option<&'a str>,
}

/// A `402 Payment Required` answer: the headers and the JSON body a rail wants sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Challenge {
    /// Headers (`PAYMENT-REQUIRED`, `WWW-Authenticate`, …).
    pub headers: HeaderMap,
    /// The body.
    pub body: Value,
}

/// Settlement evidence: the receipt headers to copy onto the response (only names in
/// [`RECEIPT_HEADERS`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Receipt {
    /// The headers.
    pub headers: HeaderMap,
}

impl Receipt {
    /// A receipt with these headers, keeping only the names in [`RECEIPT_HEADERS`].
    pub fn new(headers: HeaderMap) -> Self {
        let mut kept = HeaderMap::new();
        for (name, value) in &headers {
            if RECEIPT_HEADERS.contains(&name.as_str()) {
                kept.append(name.clone(), value.clone());
            }
        }
        Self { headers: kept }
    }

    /// Whether there is any evidence at all.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }
}

/// Why a rail refused or failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PaymentError {
    /// The credential is not acceptable (bad signature, too little, expired, replayed, wrong
    /// payee, settlement refused before anything moved…): answer with this challenge (`402`).
    Rejected {
        /// A short machine-readable reason (`invalid_signature`, `insufficient_amount`, …).
        reason: String,
        /// The `402` to send, carrying the reason.
        challenge: Challenge,
    },
    /// The rail could not decide (its facilitator is down, timed out before anything moved, or
    /// answered nonsense): `503`. Nothing moved.
    Unavailable {
        /// What went wrong, safe to show (no secrets).
        message: String,
    },
    /// Settlement was attempted and its outcome is unknown, or it failed after money may have
    /// moved. The admission reports itself committed; the gate answers "after commit".
    Uncertain {
        /// What went wrong, safe to show.
        message: String,
        /// Whatever evidence exists (may be empty).
        receipt: Receipt,
    },
}

impl fmt::Display for PaymentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rejected { reason, .. } => write!(f, "payment rejected: {reason}"),
            Self::Unavailable { message } => write!(f, "payment rail unavailable: {message}"),
            Self::Uncertain { message, .. } => write!(f, "payment settlement uncertain: {message}"),
        }
    }
}

impl std::error::Error for PaymentError {}

/// A verified credential, not yet settled. See the crate documentation for the contract.
#[async_trait]
pub trait Admission: Send + Sync + fmt::Debug {
    /// Settles the payment. `Ok` means irreversible, with the receipt to return. `Err(Rejected |
    /// Unavailable)` means nothing moved (the admission is not committed); `Err(Uncertain)` means it
    /// may have (the admission is committed). Never called twice by the gate; a second call
    /// returns the first outcome's receipt or error without settling again.
    async fn finalize(&mut self) -> Result<Receipt, PaymentError>;

    /// Releases the admission without settling. Idempotent; nothing happens after a successful
    /// `finalize`.
    async fn abort(&mut self);

    /// Whether money has moved or may have (see the crate documentation).
    fn is_committed(&self) -> bool;

    /// Who pays, as the rail identifies them (an address, a key id), when known.
    fn payer(&self) -> Option<&str>;
}

/// One way of being paid. See the crate documentation for the order the gate calls these in.
#[async_trait]
pub trait PaymentRail: Send + Sync + fmt::Debug + 'static {
    /// The protocol name as the card's `payment_protocol` says it: `x402`, `mpp` or `local`.
    fn protocol(&self) -> &'static str;

    /// The card's `payments[]` entry for this rail (method, network, facilitator, …).
    fn card_entry(&self) -> Value;

    /// Whether `operation` can be paid with `price` on this rail; `Err` says why not (answered
    /// `400 payment_capability_unsupported` before any other payment step). Also used at build
    /// time to validate advertised prices.
    fn supports(&self, operation: Operation, price: &Price) -> Result<(), String>;

    /// Whether the request carries a credential for this rail (cheap; no verification).
    fn has_credential(&self, headers: &HeaderMap) -> bool;

    /// The `402` for a request without a (valid) credential.
    fn challenge(&self, request: &PaymentRequest<'_>) -> Challenge;

    /// Verifies the request's credential against the price. No money moves.
    async fn verify(&self, request: &PaymentRequest<'_>) -> Result<Box<dyn Admission>, PaymentError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(amount: &str) -> Price {
        Price { amount: amount.into(), asset: "USDC".into(), network: "accord:local".into(), pay_to: "shop".into() }
    }

    #[test]
    fn prices_are_checked() {
        assert!(price("0").validate().is_ok());
        assert!(price("10000").validate().is_ok());
        for bad in ["", "-1", "01", "1.5", "1e3", " 1"] {
            assert!(price(bad).validate().is_err(), "{bad:?}");
        }
        let mut wrong = price("1");
        wrong.network = "local".into();
        assert!(wrong.validate().is_err());
        wrong.network = "accord:local".into();
        wrong.pay_to = " ".into();
        assert!(wrong.validate().is_err());
    }

    #[test]
    fn receipts_keep_only_receipt_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("payment-response", "abc".parse().expect("value"));
        headers.insert("payment-required", "challenge".parse().expect("value"));
        headers.insert("set-cookie", "x=1".parse().expect("value"));
        let receipt = Receipt::new(headers);
        assert_eq!(receipt.headers.len(), 1);
        assert_eq!(receipt.headers["payment-response"], "abc");
        assert!(Receipt::default().is_empty());
    }
}
