//! The `accord-voucher` payment scheme: Accord's own scheme for development and tests.
//!
//! A voucher is a payer's Ed25519-signed promise to pay an amount of an asset on a network to a
//! payee, for one resource, once (its nonce), before a deadline. On the wire (inside an x402
//! `PaymentPayload.payload` or an MPP credential's `payload`) a signed voucher is the JSON object
//!
//! ```json
//! {"voucher": {"payer": "<base64url Ed25519 public key>", "payTo": "shop", "amount": "10000",
//!              "asset": "USDC", "network": "accord:local", "resource": "https://agent.example/x",
//!              "nonce": "<hex>", "validBefore": 1767225600},
//!  "signature": "<base64url 64-byte Ed25519 signature>"}
//! ```
//!
//! # Canonical bytes
//!
//! The signature covers a canonical byte string that does not depend on JSON key order: the
//! ASCII tag `accord-voucher/v1`, then for each field in the fixed order `payer`, `payTo`,
//! `amount`, `asset`, `network`, `resource`, `nonce`, `validBefore`, a line feed followed by
//! `<name>=<length>:<value>`, where `<value>` is the field's UTF-8 text (`validBefore` as a decimal
//! integer) and `<length>` its length in bytes, in decimal. For example (one voucher, line feeds
//! shown as line breaks):
//!
//! ```text
//! accord-voucher/v1
//! payer=43:<43 characters>
//! payTo=4:shop
//! amount=5:10000
//! …
//! validBefore=10:1767225600
//! ```
//!
//! There is no trailing line feed. The length prefixes make the encoding unambiguous whatever the
//! values contain.
//!
//! # Receipt ids
//!
//! A settled voucher's transaction id is deterministic: the lowercase hex SHA-256 of the canonical
//! bytes followed by the 64 raw signature bytes ([`SignedVoucher::receipt_id`]). Ed25519 signatures
//! are deterministic, so the same voucher signed by the same key always has the same id.
//!
//! # Replay
//!
//! [`SpentNonces`] remembers spent `(payer, nonce)` pairs until the voucher's `validBefore` (after
//! which the voucher is refused as expired anyway). It lives in memory, **per process**: two
//! processes (or a restarted one) do not share it, so the local rail is for development and tests,
//! not for real money.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Price;
use crate::codec::{b64url, b64url_decode, compare_amounts, hex, is_decimal};

/// The scheme name, used as the x402 `scheme` and the MPP `method`.
pub const SCHEME: &str = "accord-voucher";

/// The tag that starts the canonical bytes (a version: a new encoding gets a new tag).
pub const CANONICAL_TAG: &str = "accord-voucher/v1";

/// The longest value any voucher text field may have, in bytes.
pub const MAX_FIELD_BYTES: usize = 2048;

/// An unsigned voucher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Voucher {
    /// The payer: the base64url (unpadded) Ed25519 public key that signs the voucher.
    pub payer: String,
    /// Who is paid.
    pub pay_to: String,
    /// The amount, a decimal integer in the asset's smallest unit.
    pub amount: String,
    /// The asset.
    pub asset: String,
    /// The network (`namespace:reference`).
    pub network: String,
    /// The absolute URL of the resource paid for.
    pub resource: String,
    /// A payer-chosen unique string (the wallet uses 32 hex digits).
    pub nonce: String,
    /// Unix seconds after which the voucher is void.
    pub valid_before: u64,
}

impl Voucher {
    /// The canonical bytes the signature covers (see the module documentation).
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let valid_before = self.valid_before.to_string();
        let fields: [(&str, &str); 8] = [
            ("payer", &self.payer),
            ("payTo", &self.pay_to),
            ("amount", &self.amount),
            ("asset", &self.asset),
            ("network", &self.network),
            ("resource", &self.resource),
            ("nonce", &self.nonce),
            ("validBefore", &valid_before),
        ];
        let mut out = CANONICAL_TAG.as_bytes().to_vec();
        for (name, value) in fields {
            out.push(b'\n');
            out.extend_from_slice(name.as_bytes());
            out.push(b'=');
            out.extend_from_slice(value.len().to_string().as_bytes());
            out.push(b':');
            out.extend_from_slice(value.as_bytes());
        }
        out
    }

    /// Signs the voucher with `key`, setting `payer` to the key's public half.
    pub fn sign(mut self, key: &SigningKey) -> SignedVoucher {
        self.payer = payer_id(&key.verifying_key());
        let signature = key.sign(&self.canonical_bytes());
        SignedVoucher { voucher: self, signature: b64url(&signature.to_bytes()) }
    }
}

/// The payer id of a public key: its 32 bytes, base64url without padding.
pub fn payer_id(key: &VerifyingKey) -> String {
    b64url(key.as_bytes())
}

/// A voucher with its signature: the `payload` of an `accord-voucher` payment.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedVoucher {
    /// The voucher.
    pub voucher: Voucher,
    /// The base64url (unpadded) Ed25519 signature over [`Voucher::canonical_bytes`].
    pub signature: String,
}

impl fmt::Debug for SignedVoucher {
    // A signed voucher is a bearer credential: its signature is never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignedVoucher").field("voucher", &self.voucher).field("signature", &"<redacted>").finish()
    }
}

/// What a voucher must pay for.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The payee.
    pub pay_to: &'a str,
    /// The minimum amount.
    pub amount: &'a str,
    /// The asset.
    pub asset: &'a str,
    /// The network.
    pub network: &'a str,
    /// The resource URL.
    pub resource: &'a str,
}

impl<'a> Expected<'a> {
    /// What `price` asks for `resource`.
    pub fn from_price(price: &'a Price, resource: &'a str) -> Self {
        Self { pay_to: &price.pay_to, amount: &price.amount, asset: &price.asset, network: &price.network, resource }
    }
}

/// Why a voucher was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VoucherError {
    /// The voucher is not well formed (what is wrong, without secrets).
    Malformed(String),
    /// The signature does not verify under `payer`.
    InvalidSignature,
    /// It pays less than required.
    InsufficientAmount,
    /// It pays someone else.
    RecipientMismatch,
    /// It pays in another asset.
    AssetMismatch,
    /// It pays on another network.
    NetworkMismatch,
    /// It pays for another resource.
    ResourceMismatch,
    /// Its `validBefore` has passed.
    Expired,
    /// Its nonce was already spent.
    NonceSpent,
}

impl VoucherError {
    /// A short machine-readable reason: `invalid_payload`, `invalid_signature`,
    /// `insufficient_amount`, `recipient_mismatch`, `asset_mismatch`, `network_mismatch`,
    /// `resource_mismatch`, `expired` or `nonce_spent`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Malformed(_) => "invalid_payload",
            Self::InvalidSignature => "invalid_signature",
            Self::InsufficientAmount => "insufficient_amount",
            Self::RecipientMismatch => "recipient_mismatch",
            Self::AssetMismatch => "asset_mismatch",
            Self::NetworkMismatch => "network_mismatch",
            Self::ResourceMismatch => "resource_mismatch",
            Self::Expired => "expired",
            Self::NonceSpent => "nonce_spent",
        }
    }
}

impl fmt::Display for VoucherError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(what) => write!(f, "malformed voucher: {what}"),
            other => f.write_str(other.reason()),
        }
    }
}

impl std::error::Error for VoucherError {}

impl SignedVoucher {
    /// Reads a signed voucher from its JSON form.
    pub fn from_value(value: &Value) -> Result<Self, VoucherError> {
        serde_json::from_value(value.clone())
            .map_err(|_| VoucherError::Malformed("not an accord-voucher payload".into()))
    }

    /// The JSON form (`{"voucher": {...}, "signature": "..."}`).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    fn check_shape(&self) -> Result<(), VoucherError> {
        let voucher = &self.voucher;
        let texts = [
            ("payer", &voucher.payer),
            ("payTo", &voucher.pay_to),
            ("amount", &voucher.amount),
            ("asset", &voucher.asset),
            ("network", &voucher.network),
            ("resource", &voucher.resource),
            ("nonce", &voucher.nonce),
        ];
        for (name, value) in texts {
            if value.is_empty() || value.len() > MAX_FIELD_BYTES {
                return Err(VoucherError::Malformed(format!("{name} is empty or longer than {MAX_FIELD_BYTES} bytes")));
            }
        }
        if !is_decimal(&voucher.amount) {
            return Err(VoucherError::Malformed("amount is not a decimal integer".into()));
        }
        Ok(())
    }

    /// Checks the signature against `payer` (strict Ed25519 verification).
    pub fn verify_signature(&self) -> Result<(), VoucherError> {
        self.check_shape()?;
        let key_bytes: [u8; 32] = b64url_decode(&self.voucher.payer)
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| VoucherError::Malformed("payer is not a base64url Ed25519 public key".into()))?;
        let key = VerifyingKey::from_bytes(&key_bytes)
            .map_err(|_| VoucherError::Malformed("payer is not a valid Ed25519 public key".into()))?;
        let signature = self.signature_bytes()?;
        key.verify_strict(&self.voucher.canonical_bytes(), &Signature::from_bytes(&signature))
            .map_err(|_| VoucherError::InvalidSignature)
    }

    fn signature_bytes(&self) -> Result<[u8; 64], VoucherError> {
        b64url_decode(&self.signature)
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| VoucherError::Malformed("signature is not 64 base64url bytes".into()))
    }

    /// Full verification except the nonce: shape, signature, payee, asset, network, resource,
    /// amount (at least the expected one) and expiry (`now < validBefore`).
    pub fn verify(&self, expected: &Expected<'_>, now: u64) -> Result<(), VoucherError> {
        self.verify_signature()?;
        let voucher = &self.voucher;
        if voucher.pay_to != expected.pay_to {
            return Err(VoucherError::RecipientMismatch);
        }
        if voucher.asset != expected.asset {
            return Err(VoucherError::AssetMismatch);
        }
        if voucher.network != expected.network {
            return Err(VoucherError::NetworkMismatch);
        }
        if voucher.resource != expected.resource {
            return Err(VoucherError::ResourceMismatch);
        }
        if !is_decimal(expected.amount) || compare_amounts(&voucher.amount, expected.amount).is_lt() {
            return Err(VoucherError::InsufficientAmount);
        }
        if now >= voucher.valid_before {
            return Err(VoucherError::Expired);
        }
        Ok(())
    }

    /// The deterministic transaction id: lowercase hex SHA-256 of the canonical bytes followed by
    /// the raw signature bytes.
    pub fn receipt_id(&self) -> Result<String, VoucherError> {
        let signature = self.signature_bytes()?;
        let mut hasher = Sha256::new();
        hasher.update(self.voucher.canonical_bytes());
        hasher.update(signature);
        Ok(hex(&hasher.finalize()))
    }

    /// The key under which [`SpentNonces`] remembers this voucher: `payer` and `nonce`.
    pub fn nonce_key(&self) -> String {
        format!("{}:{}", self.voucher.payer, self.voucher.nonce)
    }
}

/// Spent nonces (and other single-use keys), remembered in memory until they expire.
///
/// Per process: nothing is persisted or shared between processes.
#[derive(Debug, Default)]
pub struct SpentNonces {
    spent: Mutex<HashMap<String, u64>>,
}

impl SpentNonces {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `key` is spent (and not yet expired at `now`).
    pub fn is_spent(&self, key: &str, now: u64) -> bool {
        let spent = self.spent.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        spent.get(key).is_some_and(|&until| until > now)
    }

    /// Atomically spends every key in `keys` (kept until `until`, Unix seconds): `false`, and
    /// nothing spent, when any of them already is. Forgets expired entries on the way.
    pub fn try_spend(&self, keys: &[String], until: u64, now: u64) -> bool {
        let mut spent = self.spent.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        spent.retain(|_, expiry| *expiry > now);
        if keys.iter().any(|key| spent.contains_key(key)) {
            return false;
        }
        for key in keys {
            spent.insert(key.clone(), until.max(now.saturating_add(1)));
        }
        true
    }

    /// How many entries are remembered (expired ones included until the next spend).
    pub fn len(&self) -> usize {
        self.spent.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_767_225_000;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn voucher() -> Voucher {
        Voucher {
            payer: String::new(),
            pay_to: "shop".into(),
            amount: "10000".into(),
            asset: "USDC".into(),
            network: "accord:local".into(),
            resource: "https://agent.example/entrypoints/echo/invoke".into(),
            nonce: "00112233445566778899aabbccddeeff".into(),
            valid_before: NOW + 60,
        }
    }

    fn price() -> Price {
        Price { amount: "10000".into(), asset: "USDC".into(), network: "accord:local".into(), pay_to: "shop".into() }
    }

    const RESOURCE: &str = "https://agent.example/entrypoints/echo/invoke";

    #[test]
    fn canonical_bytes_are_fixed() {
        let mut voucher = voucher();
        voucher.payer = "P".into();
        let text = String::from_utf8(voucher.canonical_bytes()).expect("utf-8");
        assert_eq!(
            text,
            "accord-voucher/v1\npayer=1:P\npayTo=4:shop\namount=5:10000\nasset=4:USDC\nnetwork=12:accord:local\n\
             resource=45:https://agent.example/entrypoints/echo/invoke\nnonce=32:00112233445566778899aabbccddeeff\n\
             validBefore=10:1767225060"
        );
    }

    #[test]
    fn a_signed_voucher_verifies_and_has_a_stable_receipt_id() {
        let signed = voucher().sign(&key(7));
        assert_eq!(signed.voucher.payer, payer_id(&key(7).verifying_key()));
        let price = price();
        signed.verify(&Expected::from_price(&price, RESOURCE), NOW).expect("valid");
        let id = signed.receipt_id().expect("id");
        assert_eq!(id.len(), 64);
        assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        // Same voucher, same key: the same signature and id; another key: another id.
        assert_eq!(voucher().sign(&key(7)).receipt_id().expect("id"), id);
        assert_ne!(voucher().sign(&key(8)).receipt_id().expect("id"), id);
        // The JSON form round-trips.
        let back = SignedVoucher::from_value(&signed.to_value()).expect("parse");
        assert_eq!(back, signed);
        assert!(!format!("{signed:?}").contains(&signed.signature));
    }

    #[test]
    fn tampering_with_any_field_breaks_the_signature() {
        let signed = voucher().sign(&key(7));
        let tamper: [fn(&mut Voucher); 8] = [
            |v| v.payer = payer_id(&key(9).verifying_key()),
            |v| v.pay_to = "thief".into(),
            |v| v.amount = "10001".into(),
            |v| v.asset = "USDT".into(),
            |v| v.network = "accord:other".into(),
            |v| v.resource.push('x'),
            |v| v.nonce = "ff".into(),
            |v| v.valid_before += 1,
        ];
        for (index, change) in tamper.iter().enumerate() {
            let mut forged = signed.clone();
            change(&mut forged.voucher);
            assert_eq!(forged.verify_signature(), Err(VoucherError::InvalidSignature), "field {index}");
        }
        let mut bad_signature = signed.clone();
        bad_signature.signature = voucher().sign(&key(8)).signature;
        assert_eq!(bad_signature.verify_signature(), Err(VoucherError::InvalidSignature));
        let mut garbage = signed;
        garbage.signature = "abc".into();
        assert!(matches!(garbage.verify_signature(), Err(VoucherError::Malformed(_))));
    }

    #[test]
    fn requirements_are_enforced() {
        let price = price();
        let expected = Expected::from_price(&price, RESOURCE);
        let sign = |change: fn(&mut Voucher)| {
            let mut v = voucher();
            change(&mut v);
            v.sign(&key(7))
        };
        type Case = (fn(&mut Voucher), VoucherError);
        let cases: [Case; 6] = [
            (|v| v.pay_to = "other".into(), VoucherError::RecipientMismatch),
            (|v| v.asset = "EUR".into(), VoucherError::AssetMismatch),
            (|v| v.network = "accord:other".into(), VoucherError::NetworkMismatch),
            (|v| v.resource = "https://agent.example/other".into(), VoucherError::ResourceMismatch),
            (|v| v.amount = "9999".into(), VoucherError::InsufficientAmount),
            (|v| v.valid_before = NOW, VoucherError::Expired),
        ];
        for (change, error) in cases {
            assert_eq!(sign(change).verify(&expected, NOW), Err(error.clone()), "{error}");
        }
        // Paying more than asked is fine.
        sign(|v| v.amount = "100000".into()).verify(&expected, NOW).expect("overpay");
        // Malformed amounts are refused before anything else.
        assert!(matches!(sign(|v| v.amount = "01".into()).verify(&expected, NOW), Err(VoucherError::Malformed(_))));
        assert!(matches!(sign(|v| v.nonce = String::new()).verify(&expected, NOW), Err(VoucherError::Malformed(_))));
    }

    #[test]
    fn unknown_fields_are_refused() {
        let mut value = voucher().sign(&key(7)).to_value();
        value["voucher"]["extra"] = Value::from(1);
        assert!(SignedVoucher::from_value(&value).is_err());
    }

    #[test]
    fn nonces_are_spent_once_until_they_expire() {
        let set = SpentNonces::new();
        let signed = voucher().sign(&key(7));
        let nonce = signed.nonce_key();
        assert!(!set.is_spent(&nonce, NOW));
        assert!(set.try_spend(std::slice::from_ref(&nonce), NOW + 60, NOW));
        assert!(set.is_spent(&nonce, NOW));
        assert!(!set.try_spend(std::slice::from_ref(&nonce), NOW + 60, NOW), "replay");
        // Spending several keys is all or nothing.
        assert!(!set.try_spend(&["fresh".into(), nonce.clone()], NOW + 60, NOW));
        assert!(!set.is_spent("fresh", NOW));
        // After expiry the entry is forgotten.
        assert!(!set.is_spent(&nonce, NOW + 60));
        assert!(set.try_spend(&["other".into()], NOW + 120, NOW + 61));
        assert_eq!(set.len(), 1);
    }
}
