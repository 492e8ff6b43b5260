//! [`Wallet`]: an `accord-voucher` payer for development, tests and demos.
//!
//! A wallet holds one Ed25519 key. [`Wallet::pay`] reads a `402` answer and returns the headers
//! to retry with, picking the first offer it can pay, in this order:
//!
//! 1. x402 v2: the `PAYMENT-REQUIRED` header (or, when it is missing, a JSON body with
//!    `x402Version: 2`), an `accepts[]` entry with scheme `accord-voucher` → `PAYMENT-SIGNATURE`
//!    (base64 JSON `PaymentPayload` echoing `resource`, the chosen entry as `accepted`, and
//!    `extensions`; `payload` is the [`SignedVoucher`]).
//! 2. x402 v1: a JSON body with `x402Version: 1` and an `accepts[]` entry with scheme
//!    `accord-voucher` (`maxAmountRequired`) → `X-PAYMENT` (base64 JSON
//!    `{x402Version: 1, scheme, network, payload}`).
//! 3. MPP: a `WWW-Authenticate: Payment` challenge with method `accord-voucher` and intent
//!    `charge` → `Authorization: Payment <credential>` (or `Payment-Authorization` when the
//!    challenge's `header` parameter says so); see [`crate::mpp`].
//!
//! The voucher's `validBefore` is now plus the offer's `maxTimeoutSeconds` (x402) or the
//! challenge's `expires` (MPP), at most [`MAX_VOUCHER_LIFETIME`] seconds ahead.
//!
//! # Key file
//!
//! [`Wallet::save`] writes a JSON file readable by its owner only (mode `0600` on Unix):
//! `{"kind": "accord-voucher-wallet", "version": 1, "payer": "<base64url public key>",
//! "secretKey": "<base64url 32-byte Ed25519 secret>"}`. The key is zeroized when the wallet is
//! dropped, and `Debug` shows only the payer id.

use std::fmt;
use std::io::Write as _;
use std::path::Path;

use ed25519_dalek::SigningKey;
use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use zeroize::{Zeroize, Zeroizing};

use crate::codec::{
    b64_json_decode, b64_json_header, b64url, b64url_decode, compare_amounts, is_decimal, now_unix, parse_rfc3339,
    random_hex16,
};
use crate::mpp::{self, AuthChallenge};
use crate::voucher::{SCHEME, SignedVoucher, Voucher, payer_id};
use crate::x402::{PAYMENT_REQUIRED, PAYMENT_SIGNATURE, PaymentPayload, PaymentRequired, X_PAYMENT};

/// The `kind` of a wallet file.
pub const WALLET_KIND: &str = "accord-voucher-wallet";
/// The `version` of a wallet file.
pub const WALLET_VERSION: u32 = 1;
/// The longest a wallet makes a voucher valid for, in seconds.
pub const MAX_VOUCHER_LIFETIME: u64 = 3600;

/// Why a wallet could not do something.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WalletError {
    /// Reading or writing the key file failed.
    Io(String),
    /// The key file is not a wallet file.
    Format(String),
    /// The operating system's random source failed.
    Randomness,
    /// The cheapest payable offer costs more than the spending cap.
    OverCap {
        /// What the offer costs.
        amount: String,
        /// The cap.
        max: String,
    },
    /// The spending cap is not a decimal integer.
    InvalidCap(String),
}

impl fmt::Display for WalletError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(message) => write!(f, "wallet file: {message}"),
            Self::Format(message) => write!(f, "not a wallet file: {message}"),
            Self::Randomness => f.write_str("the operating system's random source failed"),
            Self::OverCap { amount, max } => write!(f, "the price {amount} exceeds this wallet's cap of {max}"),
            Self::InvalidCap(cap) => write!(f, "spending cap {cap:?} is not a decimal integer"),
        }
    }
}

impl std::error::Error for WalletError {}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WalletFile {
    kind: String,
    version: u32,
    #[serde(default)]
    payer: Option<String>,
    secret_key: String,
}

impl Drop for WalletFile {
    fn drop(&mut self) {
        self.secret_key.zeroize();
    }
}

/// An `accord-voucher` payer.
pub struct Wallet {
    // `SigningKey` zeroizes itself on drop (ed25519-dalek's `zeroize` feature).
    key: SigningKey,
    max_amount: Option<String>,
}

impl fmt::Debug for Wallet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wallet")
            .field("payer", &self.payer_id())
            .field("max_amount", &self.max_amount)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// One offer the wallet can pay.
enum Offer {
    V2 { required: PaymentRequired, index: usize },
    V1 { requirements: Value },
    Mpp { challenge: AuthChallenge, request: Value },
}

impl Wallet {
    /// A wallet with a fresh random key and no spending cap.
    pub fn generate() -> Result<Self, WalletError> {
        let mut secret = Zeroizing::new([0u8; 32]);
        getrandom::fill(secret.as_mut_slice()).map_err(|_| WalletError::Randomness)?;
        Ok(Self::from_secret(&secret))
    }

    /// A wallet with this 32-byte Ed25519 secret (deterministic test wallets).
    pub fn from_secret(secret: &[u8; 32]) -> Self {
        Self { key: SigningKey::from_bytes(secret), max_amount: None }
    }

    /// Loads a wallet file written by [`Wallet::save`].
    pub fn load(path: &Path) -> Result<Self, WalletError> {
        let text =
            Zeroizing::new(std::fs::read_to_string(path).map_err(|error| WalletError::Io(error.kind().to_string()))?);
        let file: WalletFile =
            serde_json::from_str(&text).map_err(|_| WalletError::Format("not wallet JSON".into()))?;
        if file.kind != WALLET_KIND || file.version != WALLET_VERSION {
            return Err(WalletError::Format(format!(
                "unsupported kind or version ({:?}, {})",
                file.kind, file.version
            )));
        }
        let secret = Zeroizing::new(
            b64url_decode(&file.secret_key)
                .and_then(|bytes| <[u8; 32]>::try_from(bytes.as_slice()).ok())
                .ok_or_else(|| WalletError::Format("secretKey is not 32 base64url bytes".into()))?,
        );
        let wallet = Self::from_secret(&secret);
        if file.payer.as_ref().is_some_and(|payer| *payer != wallet.payer_id()) {
            return Err(WalletError::Format("payer does not match secretKey".into()));
        }
        Ok(wallet)
    }

    /// Writes the wallet file (mode `0600` on Unix), replacing any file at `path`. The spending
    /// cap is not saved.
    pub fn save(&self, path: &Path) -> Result<(), WalletError> {
        let secret = Zeroizing::new(self.key.to_bytes());
        let file = WalletFile {
            kind: WALLET_KIND.into(),
            version: WALLET_VERSION,
            payer: Some(self.payer_id()),
            secret_key: b64url(secret.as_slice()),
        };
        let text =
            Zeroizing::new(serde_json::to_vec_pretty(&file).map_err(|_| WalletError::Format("encoding".into()))?);
        let io = |error: std::io::Error| WalletError::Io(error.kind().to_string());
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut handle = options.open(path).map_err(io)?;
        #[cfg(unix)]
        {
            // An existing file keeps its mode on open: narrow it before writing the secret.
            use std::os::unix::fs::PermissionsExt as _;
            handle.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        }
        handle.write_all(&text).map_err(io)?;
        handle.sync_all().map_err(io)
    }

    /// The payer id: the base64url public key.
    pub fn payer_id(&self) -> String {
        payer_id(&self.key.verifying_key())
    }

    /// Caps what one payment may cost (in the asset's smallest unit, any asset).
    pub fn with_max_amount(mut self, max: impl Into<String>) -> Result<Self, WalletError> {
        let max = max.into();
        if !is_decimal(&max) {
            return Err(WalletError::InvalidCap(max));
        }
        self.max_amount = Some(max);
        Ok(self)
    }

    /// The spending cap.
    pub fn max_amount(&self) -> Option<&str> {
        self.max_amount.as_deref()
    }

    /// Signs `voucher` (its `payer` is set to this wallet).
    pub fn sign(&self, voucher: Voucher) -> SignedVoucher {
        voucher.sign(&self.key)
    }

    /// Answers a `402`: the headers to retry with, `None` when nothing is payable (or `status`
    /// is not 402), [`WalletError::OverCap`] when every payable offer costs more than the cap.
    pub fn pay(&self, status: u16, headers: &HeaderMap, body: &[u8]) -> Result<Option<HeaderMap>, WalletError> {
        if status != 402 {
            return Ok(None);
        }
        let mut over_cap = None;
        for offer in offers(headers, body) {
            let amount = match &offer {
                Offer::V2 { required, index } => required.accepts[*index].amount.clone(),
                Offer::V1 { requirements } => text(requirements, "maxAmountRequired"),
                Offer::Mpp { request, .. } => text(request, "amount"),
            };
            if !is_decimal(&amount) {
                continue;
            }
            if let Some(max) = &self.max_amount
                && compare_amounts(&amount, max).is_gt()
            {
                over_cap.get_or_insert(WalletError::OverCap { amount, max: max.clone() });
                continue;
            }
            if let Some(headers) = self.answer(offer)? {
                return Ok(Some(headers));
            }
        }
        match over_cap {
            Some(error) => Err(error),
            None => Ok(None),
        }
    }

    fn answer(&self, offer: Offer) -> Result<Option<HeaderMap>, WalletError> {
        let now = now_unix();
        let nonce = random_hex16().map_err(|_| WalletError::Randomness)?;
        let lifetime = |seconds: u64| now + seconds.clamp(1, MAX_VOUCHER_LIFETIME);
        let mut headers = HeaderMap::new();
        match offer {
            Offer::V2 { required, index } => {
                let accepted = required.accepts[index].clone();
                let signed = self.sign(Voucher {
                    payer: String::new(),
                    pay_to: accepted.pay_to.clone(),
                    amount: accepted.amount.clone(),
                    asset: accepted.asset.clone(),
                    network: accepted.network.clone(),
                    resource: required.resource.url.clone(),
                    nonce,
                    valid_before: lifetime(accepted.max_timeout_seconds),
                });
                let payload = PaymentPayload {
                    x402_version: 2,
                    resource: Some(required.resource),
                    accepted,
                    payload: signed.to_value(),
                    extensions: required.extensions,
                };
                headers.insert(PAYMENT_SIGNATURE, b64_json_header(&payload));
            }
            Offer::V1 { requirements } => {
                let signed = self.sign(Voucher {
                    payer: String::new(),
                    pay_to: text(&requirements, "payTo"),
                    amount: text(&requirements, "maxAmountRequired"),
                    asset: text(&requirements, "asset"),
                    network: text(&requirements, "network"),
                    resource: text(&requirements, "resource"),
                    nonce,
                    valid_before: lifetime(requirements["maxTimeoutSeconds"].as_u64().unwrap_or(60)),
                });
                let payload = json!({
                    "x402Version": 1,
                    "scheme": SCHEME,
                    "network": requirements["network"],
                    "payload": signed.to_value(),
                });
                headers.insert(X_PAYMENT, b64_json_header(&payload));
            }
            Offer::Mpp { challenge, request } => {
                let details = &request["methodDetails"];
                let expires = challenge.param("expires").and_then(parse_rfc3339);
                let valid_before = match expires {
                    Some(expires) if expires > now => expires.min(now + MAX_VOUCHER_LIFETIME),
                    _ => lifetime(300),
                };
                let signed = self.sign(Voucher {
                    payer: String::new(),
                    pay_to: text(&request, "recipient"),
                    amount: text(&request, "amount"),
                    asset: text(&request, "currency"),
                    network: text(details, "network"),
                    resource: text(details, "resource"),
                    nonce,
                    valid_before,
                });
                let (name, value) = mpp::credential_header(&challenge, signed.to_value());
                let Some(value) = value else { return Ok(None) };
                headers.insert(name, value);
            }
        }
        Ok(Some(headers))
    }
}

fn text(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Every `accord-voucher` offer in a `402`, in preference order.
fn offers(headers: &HeaderMap, body: &[u8]) -> Vec<Offer> {
    let mut found = Vec::new();
    let header = headers
        .get(PAYMENT_REQUIRED)
        .and_then(|value| value.to_str().ok())
        .and_then(b64_json_decode)
        .and_then(|json| serde_json::from_value::<PaymentRequired>(json).ok())
        .filter(|required| required.x402_version == 2);
    let body: Option<Value> = serde_json::from_slice(body).ok();
    let version = body.as_ref().and_then(|body| body.get("x402Version")).and_then(Value::as_u64);
    let v2 = header.or_else(|| {
        // The body's `error` may be Accord's fallback object rather than the specification's
        // string: read the rest as a PaymentRequired.
        let mut body = body.clone().filter(|_| version == Some(2))?;
        body.as_object_mut()?.remove("error");
        serde_json::from_value::<PaymentRequired>(body).ok()
    });
    if let Some(required) = v2 {
        for index in 0..required.accepts.len() {
            if required.accepts[index].scheme == SCHEME {
                found.push(Offer::V2 { required: required.clone(), index });
            }
        }
    }
    if version == Some(1) {
        let accepts = body.as_ref().and_then(|body| body["accepts"].as_array().cloned()).unwrap_or_default();
        for requirements in accepts {
            if requirements["scheme"] == SCHEME {
                found.push(Offer::V1 { requirements });
            }
        }
    }
    for challenge in mpp::parse_www_authenticate(headers) {
        if challenge.scheme.eq_ignore_ascii_case("payment")
            && challenge.param("method") == Some(mpp::METHOD)
            && challenge.param("intent") == Some(mpp::INTENT)
            && challenge.param("id").is_some_and(|id| !id.is_empty())
            && let Some(request) = challenge.param("request").and_then(mpp::decode_json_param)
        {
            found.push(Offer::Mpp { challenge, request });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2_challenge(amount: &str, scheme: &str) -> HeaderMap {
        let required = json!({
            "x402Version": 2,
            "resource": {"url": "https://agent.example/x"},
            "accepts": [
                {"scheme": "exact", "network": "eip155:8453", "amount": "1", "asset": "0xabc", "payTo": "0xdef", "maxTimeoutSeconds": 60},
                {"scheme": scheme, "network": "accord:local", "amount": amount, "asset": "USDC", "payTo": "shop", "maxTimeoutSeconds": 30}
            ],
            "extensions": {"demo": {"info": {}, "schema": {}}}
        });
        let mut headers = HeaderMap::new();
        headers.insert(PAYMENT_REQUIRED, b64_json_header(&required));
        headers
    }

    #[test]
    fn pays_the_accord_voucher_offer_of_an_x402_challenge() {
        let wallet = Wallet::from_secret(&[3; 32]);
        let paid = wallet.pay(402, &v2_challenge("25", SCHEME), b"").expect("pay").expect("payable");
        let payload = b64_json_decode(paid[PAYMENT_SIGNATURE].to_str().expect("ascii")).expect("json");
        assert_eq!(payload["x402Version"], 2);
        assert_eq!(payload["accepted"]["scheme"], SCHEME);
        assert_eq!(payload["accepted"]["amount"], "25");
        assert_eq!(payload["resource"]["url"], "https://agent.example/x");
        assert_eq!(payload["extensions"]["demo"], json!({"info": {}, "schema": {}}));
        let signed = SignedVoucher::from_value(&payload["payload"]).expect("voucher");
        signed.verify_signature().expect("signed");
        assert_eq!(signed.voucher.payer, wallet.payer_id());
        assert_eq!(signed.voucher.resource, "https://agent.example/x");
        let lifetime = signed.voucher.valid_before - now_unix();
        assert!((29..=30).contains(&lifetime), "{lifetime}");
        // Two payments never share a nonce.
        let again = wallet.pay(402, &v2_challenge("25", SCHEME), b"").expect("pay").expect("payable");
        assert_ne!(again[PAYMENT_SIGNATURE], paid[PAYMENT_SIGNATURE]);
    }

    #[test]
    fn nothing_payable_is_none_and_over_the_cap_is_an_error() {
        let wallet = Wallet::from_secret(&[3; 32]).with_max_amount("100").expect("cap");
        assert_eq!(wallet.pay(402, &v2_challenge("25", "exact"), b"").expect("pay"), None);
        assert_eq!(wallet.pay(200, &v2_challenge("25", SCHEME), b"").expect("pay"), None);
        assert_eq!(wallet.pay(402, &HeaderMap::new(), b"not json").expect("pay"), None);
        assert!(wallet.pay(402, &v2_challenge("100", SCHEME), b"").expect("pay").is_some());
        assert_eq!(
            wallet.pay(402, &v2_challenge("101", SCHEME), b""),
            Err(WalletError::OverCap { amount: "101".into(), max: "100".into() })
        );
        assert!(matches!(Wallet::from_secret(&[3; 32]).with_max_amount("1e3"), Err(WalletError::InvalidCap(_))));
    }

    #[test]
    fn reads_the_body_when_the_header_is_missing() {
        let wallet = Wallet::from_secret(&[4; 32]);
        // Accord's fallback body: `error` is an object.
        let body = json!({
            "x402Version": 2,
            "error": {"code": "payment_required", "price": "5", "network": "accord:local", "payTo": "shop"},
            "resource": {"url": "https://agent.example/y"},
            "accepts": [{"scheme": SCHEME, "network": "accord:local", "amount": "5", "asset": "USDC", "payTo": "shop", "maxTimeoutSeconds": 10}]
        });
        let paid = wallet
            .pay(402, &HeaderMap::new(), &serde_json::to_vec(&body).expect("json"))
            .expect("pay")
            .expect("payable");
        let payload = b64_json_decode(paid[PAYMENT_SIGNATURE].to_str().expect("ascii")).expect("json");
        assert_eq!(payload["payload"]["voucher"]["resource"], "https://agent.example/y");
    }

    #[test]
    fn legacy_v1_challenges_get_x_payment() {
        let wallet = Wallet::from_secret(&[5; 32]);
        let body = json!({
            "x402Version": 1,
            "error": "X-PAYMENT header is required",
            "accepts": [{"scheme": SCHEME, "network": "accord:local", "maxAmountRequired": "9",
                         "resource": "https://agent.example/z", "description": "", "mimeType": "",
                         "payTo": "shop", "maxTimeoutSeconds": 60, "asset": "USDC"}]
        });
        let paid = wallet
            .pay(402, &HeaderMap::new(), &serde_json::to_vec(&body).expect("json"))
            .expect("pay")
            .expect("payable");
        let payload = b64_json_decode(paid[X_PAYMENT].to_str().expect("ascii")).expect("json");
        assert_eq!(payload["x402Version"], 1);
        assert_eq!(payload["scheme"], SCHEME);
        assert_eq!(payload["network"], "accord:local");
        let signed = SignedVoucher::from_value(&payload["payload"]).expect("voucher");
        assert_eq!(signed.voucher.amount, "9");
        assert_eq!(signed.voucher.resource, "https://agent.example/z");
        signed.verify_signature().expect("signed");
        let capped = Wallet::from_secret(&[5; 32]).with_max_amount("8").expect("cap");
        assert!(matches!(
            capped.pay(402, &HeaderMap::new(), &serde_json::to_vec(&body).expect("json")),
            Err(WalletError::OverCap { .. })
        ));
    }

    #[test]
    fn key_files_round_trip_privately() {
        let directory = std::env::temp_dir().join(format!("accord-wallet-test-{}", std::process::id()));
        std::fs::create_dir_all(&directory).expect("dir");
        let path = directory.join("wallet.json");
        let wallet = Wallet::generate().expect("wallet");
        wallet.save(&path).expect("save");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).expect("metadata").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let json: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(json["kind"], WALLET_KIND);
        assert_eq!(json["version"], WALLET_VERSION);
        assert_eq!(json["payer"], wallet.payer_id());
        let loaded = Wallet::load(&path).expect("load");
        assert_eq!(loaded.payer_id(), wallet.payer_id());
        // Debug never shows the secret.
        let secret = json["secretKey"].as_str().expect("secret").to_string();
        assert!(!format!("{loaded:?}").contains(&secret));
        assert!(format!("{loaded:?}").contains(&wallet.payer_id()));
        // A tampered payer or kind is refused.
        let mut tampered = json.clone();
        tampered["payer"] = Value::from(Wallet::from_secret(&[1; 32]).payer_id());
        std::fs::write(&path, tampered.to_string()).expect("write");
        assert!(matches!(Wallet::load(&path), Err(WalletError::Format(_))));
        let mut wrong_kind = json;
        wrong_kind["kind"] = Value::from("something-else");
        std::fs::write(&path, wrong_kind.to_string()).expect("write");
        assert!(matches!(Wallet::load(&path), Err(WalletError::Format(_))));
        assert!(matches!(Wallet::load(&directory.join("missing.json")), Err(WalletError::Io(_))));
        std::fs::remove_dir_all(&directory).expect("cleanup");
    }

    #[test]
    fn the_key_zeroizes_on_drop() {
        fn zeroizes_on_drop<T: zeroize::ZeroizeOnDrop>() {}
        zeroizes_on_drop::<SigningKey>();
    }
}
